"""bench/bench_scale.py: the synthetic corpus is read by the real ingest without exclusions, with
the drawn log sizes; the stage list is dvc.yaml's; and (slow) the whole bench at a tiny n."""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

import pytest
import yaml

from gcpc.paths import pipeline_yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import bench_scale  # noqa: E402


def test_fallback_sizes_follow_the_quantile_table():
    sizes = bench_scale.draw_sizes(4000, random.Random(0), None)
    q = bench_scale.FALLBACK_QUANTILES
    assert min(sizes) >= q[0] and max(sizes) <= q[-1]
    s = sorted(sizes)
    median = s[len(s) // 2]
    assert q[9] <= median <= q[11]  # the table's 45th-55th percentile
    assert bench_scale.draw_sizes(50, random.Random(3), None) == bench_scale.draw_sizes(50, random.Random(3), None)


def test_synthetic_corpus_is_ingested_whole_with_the_drawn_sizes(tmp_path):
    from gcpc.corpus.ingest import corpora_from_params, ingest, merge_results

    empirical = [400, 5000, 60_000, 250_000]
    n = 14
    info = bench_scale.write_corpus(n, 0, tmp_path / "data" / "bench", empirical)
    data = bench_scale.bench_params("data/bench")["data"]
    result = merge_results([ingest(cfg, tmp_path) for cfg in corpora_from_params(data)])
    assert result.exclusions == []
    assert len(result.tasks) == info["tasks"] == 250
    assert len(result.trajectories) == n
    assert {t.benchmark for t in result.trajectories} == {b for b, _ in bench_scale.BENCHES}
    assert {t.condition for t in result.trajectories} == {"with_skills", "without_skills"}
    statuses = [t.outcome.status for t in result.trajectories]
    assert sum(info["outcomes"].values()) == n and all(statuses.count(k) == v for k, v in info["outcomes"].items())
    raw = [t.size.raw_bytes for t in result.trajectories]
    assert sum(raw) == info["agent_log_bytes"]
    # each log is its drawn size, except below the minimal log (init, one message, result)
    drawn = bench_scale.draw_sizes(n, _rng_after_tasks(), empirical)
    by_id = {t.trial: t.size.raw_bytes for t in result.trajectories}
    assert len(by_id) == n
    for size in raw:
        assert size < 2_000 or min(abs(size - d) for d in drawn) < 1_000
    assert all(len(t.events) >= 3 for t in result.trajectories)
    assert all(t.test_results for t in result.trajectories)


def _rng_after_tasks() -> random.Random:
    """The generator's state when it draws the sizes (after the per-task difficulties)."""
    rng = random.Random(0)
    for _ in range(sum(k for _, k in bench_scale.BENCHES)):
        rng.random()
    return rng


def test_stage_list_is_dvc_yaml_with_judge_per_arm():
    dvc = pipeline_yaml(ROOT)
    arms = list(yaml.safe_load((ROOT / "params.yaml").read_text())["arm"])
    stages = bench_scale.pipeline_stages(dvc, arms)
    names = [s[0] for s in stages]
    expected = {k for k in dvc["stages"] if k not in bench_scale.NOT_RUN and k != "judge"} | {f"judge@{a}" for a in arms}
    assert set(names) == expected and len(names) == len(expected)
    assert names[0] == "ingest" and names.index("finalize") > max(names.index(f"judge@{a}") for a in arms)
    assert names.index("rejudge") < names.index("rq3") and names.index("controls") < names.index("rq4")
    assert dict((s[0], s[2]) for s in stages)["judge@gcpc"] == ["data/processed/judge/gcpc"]


def test_stage_order_follows_dvcs_own_graph():
    """Every edge of DVC's stage graph (what `dvc dag` draws) is respected: a stage runs after what it reads."""
    from dvc.repo import Repo

    dvc = pipeline_yaml(ROOT)
    arms = list(yaml.safe_load((ROOT / "params.yaml").read_text())["arm"])
    names = [s[0] for s in bench_scale.pipeline_stages(dvc, arms)]
    with Repo(str(ROOT)) as repo:
        edges = [(a.name, b.name) for a, b in repo.index.graph.edges()]
    assert edges
    checked = 0
    for stage, upstream in edges:
        if stage in names and upstream in names:
            assert names.index(upstream) < names.index(stage), (stage, upstream)
            checked += 1
    assert checked >= len(names) - 1
    assert names.index("report") > max(names.index(n) for n in ("analyze", "rq2", "rq3", "rq4", "rq5", "headline"))


def test_a_stage_outside_any_map_lands_after_what_it_reads():
    """A new stage (listed first) that reads rq5's output runs after rq5, not in file order."""
    dvc = pipeline_yaml(ROOT)
    stages = {"late": {"cmd": "python -m gcpc.late", "deps": ["data/processed/analyze/rq5.json"], "outs": ["x.json"]}}
    stages.update(dvc["stages"])
    names = [s[0] for s in bench_scale.pipeline_stages({"stages": stages}, ["gcpc"])]
    assert names.index("late") > names.index("rq5")
    cyc = {"a": {"cmd": "a", "deps": ["b.out"], "outs": ["a.out"]}, "b": {"cmd": "b", "deps": ["a.out"], "outs": ["b.out"]}}
    with pytest.raises(ValueError, match="cycle"):
        bench_scale.pipeline_stages({"stages": cyc}, [])


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("GCPC_BENCH_TESTS") != "1",
                    reason="opt-in (GCPC_BENCH_TESTS=1): ~5 min of child stages; tests/test_pipeline_e2e.py runs every stage in CI")
def test_whole_bench_at_tiny_n(tmp_path):
    """Every stage runs (about 5 minutes on 2 shared cores: ~27 child processes)."""
    out = tmp_path / "scale.json"
    result = bench_scale.run(12, 0, keep=tmp_path / "work", quiet=True)
    out.write_text(json.dumps(result))
    dvc = pipeline_yaml(ROOT)
    assert set(result["stages"]) == {s[0] for s in bench_scale.pipeline_stages(dvc, result["arms"])}
    for name, st in result["stages"].items():
        assert st["rc"] == 0 and st["wall_s"] > 0 and st["peak_rss_bytes"] > 10 * 2**20, name
        assert st["peak_tree_rss_sampled_bytes"] >= st["peak_rss_bytes"]
    assert result["ingest_population"]["n_trajectories"] == 12
    for stage in ("ingest", "synthesize", "judge@gcpc", "judge@tick", "finalize", "analyze"):
        assert result["stages"][stage]["output_bytes"] > 0, stage
    assert result["meets_target"] and result["peak_memory_bytes"] < bench_scale.TARGET_BYTES


def test_scaling_is_a_line_through_two_runs():
    def res(n, wall, peak, out):
        return {"n_trajectories": n, "stages": {
            "judge@gcpc": {"wall_s": wall, "cpu_s": wall, "peak_tree_rss_sampled_bytes": peak, "output_bytes": out},
            "ingest": {"wall_s": 5.0, "cpu_s": 5.0, "peak_tree_rss_sampled_bytes": 100, "output_bytes": 10}}}
    s = bench_scale.scaling(res(100, 10.0, 1_000, 50), res(300, 30.0, 3_000, 150), target_n=1_000)
    row = s["stages"]["judge@gcpc"]
    assert row["wall_s"]["linear_at_1000"] == 100.0 and row["peak_tree_rss_sampled_bytes"]["linear_at_1000"] == 10_000
    assert row["output_bytes"]["per_trajectory"] == 0.5
    assert s["estimated_peak_memory_stage"] == "judge@gcpc" and s["estimated_total_cpu_s"] == 105.0
    with pytest.raises(ValueError):
        bench_scale.scaling(res(100, 1, 1, 1), res(100, 1, 1, 1))
