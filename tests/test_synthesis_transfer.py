"""Transfer table (Table 4): library function and outputs; on the real benchmarks when present."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gcpc.io import stable_floats
from gcpc.llm.heuristic import HeuristicProvider
from gcpc.llm.heuristic.synthesize import requirement_units
from gcpc.synthesis.audit import AuditSettings
from gcpc.synthesis.generate import SynthesisSettings
from gcpc.synthesis.transfer import BenchmarkSpec, read_benchmark, table_latex, table_markdown, transfer_table, write_outputs

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
HEURISTIC = {"provider": "heuristic", "model": "gcpc-heuristic-v1", "temperature": 0.0, "seed": 0}

TASKS = {
    "csv-report": ("""Summarise `/data/sales.csv`.

1. Read `/data/sales.csv` and compute the total of the `amount` column.
2. Count the rows whose `region` is "north".
3. Save both numbers to `/out/summary.json` with keys `total` and `north`.
4. The file must be valid JSON.
""", 'def test_summary():\n    assert json.load(open("/out/summary.json"))["north"] == 3\n'),
    # one stated requirement: a one-item checklist (the item count is observed, not gated)
    "too-short": ("Create `/app/hello.txt` containing `hi`.\n", 'def test_hello():\n    assert open("/app/hello.txt").read() == "hi"\n'),
    # no stated requirement at all: not synthesizable, reported, never padded
    "no-requirement": ("# Background\n\nNothing to see here.\n", 'def test_nothing():\n    assert True\n'),
    "web-config": ("""Configure the service.

- Set `port` to 8080 in `/etc/app/config.yaml`.
- Set `workers` to 4 in the same file.
- Enable gzip compression for responses.
- Make sure the service answers on `http://localhost:8080/health`.
""", 'def test_health():\n    assert requests.get("http://localhost:8080/health").ok\n'),
}


@pytest.fixture
def corpus(tmp_path) -> Path:
    for name, (instruction, test_src) in TASKS.items():
        folder = tmp_path / "bench" / "tasks" / name
        (folder / "tests").mkdir(parents=True)
        (folder / "instruction.md").write_text(instruction, encoding="utf-8")
        (folder / "tests" / "test_outputs.py").write_text(test_src, encoding="utf-8")
    return tmp_path


def _specs(root: Path) -> list[BenchmarkSpec]:
    return [BenchmarkSpec("mini", "Mini bench", "harbor", str(root / "bench"), "tasks"),
            BenchmarkSpec("absent", "Absent bench", "harbor", str(root / "nowhere"), "tasks"),
            BenchmarkSpec("odd", "Odd bench", "no-such-reader", str(root / "bench"), "tasks")]


def test_transfer_table_rows_outputs_and_rerun(corpus, tmp_path, monkeypatch):
    calls = []
    original = HeuristicProvider.complete
    monkeypatch.setattr(HeuristicProvider, "complete", lambda self, r: calls.append(r.key) or original(self, r))
    out, figs = tmp_path / "out", tmp_path / "figures"
    settings, audit = SynthesisSettings(prompts_dir=ROOT / "prompts"), AuditSettings(prompts_dir=ROOT / "prompts")
    result = transfer_table(_specs(corpus), HEURISTIC, settings, audit, out, repo=Path("/"))
    write_outputs(result, out, figs)
    mini, absent, odd = result["benchmarks"]
    assert (mini["n_tasks"], mini["n_frozen"], mini["failed_tasks"].keys()) == (4, 3, {"no-requirement"})
    assert mini["empty_tasks"] == ["no-requirement"]
    ipt = mini["items_per_task"]
    assert (ipt["min"], ipt["max"], ipt["n_below_paper_min"], ipt["n_above_paper_max"]) == (1, 4, 1, 0)
    assert ipt["per_task"]["mini/too-short"] == 1 and ipt["paper"] == {"min": 4, "median": 8, "max": 15}
    assert mini["n_items"] == sum(mini["route_counts"].values()) == sum(
        h["items"] * h["tasks"] for h in mini["items_per_task"]["histogram"])
    assert mini["item_validity_first_attempt"] == 1.0 and mini["recheck_failures"] == []
    assert mini["task_validity_after_regeneration"] == pytest.approx(3 / 4)
    assert set(mini["audit"]["schemes"]) == {"full", "reduced", "irrelevant", "permuted"}
    assert not absent["available"] and "not found" in absent["reason"]
    assert not odd["available"] and "no task reader 'no-such-reader'" in odd["reason"]
    md = (figs / "table4_transfer.md").read_text(encoding="utf-8")
    assert "| Mini bench | 4 | 3 |" in md and "Absent bench: not available" in md and "no-requirement" in md
    assert "the paper reports 4–15 items, median 8" in md and "| 1–4 (median 4) | 1 / 0 |" in md
    assert "\\begin{tabular}" in (figs / "table4_transfer.tex").read_text(encoding="utf-8")
    # written through the one float formatter (gcpc.io.stable_floats, 12 significant digits)
    assert json.loads((out / "transfer.json").read_text(encoding="utf-8")) == json.loads(json.dumps(stable_floats(result)))
    assert (figs / "category_audit.md").is_file() and (figs / "category_audit.tex").is_file()
    files = sorted(p for p in [*out.rglob("*"), *figs.rglob("*")] if p.is_file())
    before = {p: p.read_bytes() for p in files}
    n = len(calls)
    again = transfer_table(_specs(corpus), HEURISTIC, settings, audit, out, repo=Path("/"))
    write_outputs(again, out, figs)
    assert len(calls) == n, "a re-run with unchanged rules, prompts and tasks makes no call"
    assert {p: p.read_bytes() for p in files} == before
    assert table_markdown(again) == md and table_latex(again) == table_latex(result)


@pytest.mark.skipif(not (DATA / "skillsbench" / "tasks").is_dir(), reason=f"real data not available at {DATA}")
def test_real_benchmarks_every_frozen_item_passes_every_gate(tmp_path):
    specs = [BenchmarkSpec("skillsbench", "SkillsBench v1.1", "harbor", str(DATA), "skillsbench/tasks"),
             BenchmarkSpec("terminal-bench-2", "Terminal-Bench 2.0", "harbor", str(DATA), "terminal-bench-2/tasks")]
    result = transfer_table(specs, HEURISTIC, SynthesisSettings(prompts_dir=ROOT / "prompts"), None, tmp_path, repo=Path("/"))
    sb, tb2 = result["benchmarks"]
    assert (sb["n_tasks"], tb2["n_tasks"]) == (87, 89)
    for row in (sb, tb2):
        assert row["recheck_failures"] == [], row["recheck_failures"][:5]
        assert 1 <= row["items_per_task"]["min"]
        assert row["n_frozen"] + row["n_failed"] == row["n_tasks"]
        # a task that cannot be synthesized is reported with the gate that stopped it
        assert all(why.startswith("no items") or "[quote_verbatim]" in why or "[assertion_ref]" in why
                   or "[no_test_restatement]" in why for why in row["failed_tasks"].values())
    # every Terminal-Bench 2.0 task that states a requirement gets a checklist, however short (issue 10)
    tasks, _ = read_benchmark(specs[1], Path("/"))
    stated = {t.task_id for t in tasks if requirement_units(t.instruction)}
    assert tb2["n_frozen"] == len(stated) == 89 and not tb2["failed_tasks"]
    assert tb2["items_per_task"]["n_below_paper_min"] > 0  # short checklists are kept, not dropped


@pytest.mark.skipif(not (DATA / "terminal-bench-1" / "runs").is_dir(), reason=f"Terminal-Bench 1 runs not available at {DATA}")
def test_terminal_bench_1_through_its_corpus_reader(tmp_path):
    spec = BenchmarkSpec("terminal-bench-1", "Terminal-Bench 1", "terminal-bench-1", str(DATA), "terminal-bench-1/runs")
    row = transfer_table([spec], HEURISTIC, SynthesisSettings(prompts_dir=ROOT / "prompts"), None, tmp_path, repo=Path("/"))["benchmarks"][0]
    assert row["available"], row.get("reason")
    assert row["n_tasks"] == 80  # data README: terminal-bench-core 0.1.1 has 80 tasks
    assert row["recheck_failures"] == []
    # test names without verifier source: references are checked against names only
    assert row["n_tasks_without_verifier_source"] >= 1
    # every task that states a requirement gets a checklist (the old minimum of 4 items dropped 29 of 80)
    tasks, _ = read_benchmark(spec, Path("/"))
    assert row["n_frozen"] == sum(bool(requirement_units(t.instruction)) for t in tasks) == 80
    assert row["items_per_task"]["min"] >= 1 and row["items_per_task"]["n_below_paper_min"] > 0


def test_swe_bench_row_is_a_seeded_sample(tmp_path):
    """The SWE-bench reader takes an instances file; `sample` synthesizes a seeded sample, said in the notes."""
    from gcpc.synthesis.transfer import sample_tasks

    fixture = str(ROOT / "tests/fixtures/swe_bench_mini")
    spec = BenchmarkSpec.from_cfg({"name": "swe-bench-verified", "label": "SWE-bench Verified", "reader": "swe-bench",
                                   "root": fixture, "tasks_dir": "instances.jsonl", "sample": 2, "seed": 3}, 0)
    tasks, why = read_benchmark(spec, Path("/"))
    assert why is None and [t.task_id for t in tasks] == ["demo__calc-101", "demo__fmt-3", "demo__strutil-7"]
    picked = sample_tasks(tasks, 2, 3)
    assert picked == sample_tasks(list(reversed(tasks)), 2, 3) and len(picked) == 2  # by id, not by reading order
    assert sample_tasks(tasks, None, 3) == tasks == sample_tasks(tasks, 99, 3)
    result = transfer_table([spec], HEURISTIC, SynthesisSettings(prompts_dir=ROOT / "prompts"), None, tmp_path / "out",
                            repo=Path("/"))
    (row,) = result["benchmarks"]
    assert row["n_tasks"] == 2 and row["sample"] == {"n": 2, "of": 3, "seed": 3}
    assert "SWE-bench Verified: a seeded sample of 2 of its 3 tasks (seed 3" in table_markdown(result)
    with pytest.raises(ValueError, match=r"transfer.benchmarks\[0\].sample must be a positive integer"):
        BenchmarkSpec.from_cfg({"name": "x", "reader": "swe-bench", "tasks_dir": "i.jsonl", "sample": 0}, 0)
    missing = BenchmarkSpec("s", "S", "swe-bench", fixture, "nope.jsonl")
    assert read_benchmark(missing, Path("/")) == (None, f"tasks file {fixture}/nope.jsonl not found")
