"""Acceptance on the demo corpus with the heuristic provider, through the library functions the stages call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from gcpc.corpus.ingest import ingest, write_outputs
from gcpc.corpus.models import EVIDENCE_KINDS, EventKind, Trajectory
from gcpc.experiment import register_resolvers
from gcpc.io import read_models
from gcpc.judging.models import Judgment
from gcpc.judging.stage import arm_spec, judge_arm
from gcpc.judging.stage import run as judge_run
from gcpc.llm import make_client
from gcpc.llm.heuristic.judge import anchors_of
from gcpc.llm.heuristic.tokens import concrete_tokens
from gcpc.scoring.finalize import run as finalize_run
from gcpc.synthesis.generate import SynthesisSettings
from gcpc.synthesis.stage import synthesize_all

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo"
ALL_ARMS = ("gcpc", "gcpc_gate", "generic", "tick", "tick_adapted", "holistic", "floor_exit0", "floor_steps", "floor_log_length",
            "floor_clean_tail")


def composed_arms(choice: str = "all") -> dict:
    """The `arm` group as `dvc exp run -S arm=<choice>` composes it (Hydra, from conf/)."""
    register_resolvers()  # what hydra_plugins/gcpc_resolvers does inside `dvc exp run`
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base=None):
        return OmegaConf.to_container(compose(config_name="config", overrides=[f"arm={choice}"]).arm)


@pytest.fixture(scope="module")
def params() -> dict:
    """params.yaml with every arm of conf/arm/all.yaml (templates made absolute)."""
    base = yaml.safe_load((ROOT / "params.yaml").read_text())
    arms = {k: v | {"template": str(ROOT / v["template"])} for k, v in composed_arms("all").items()}
    return base | {"arm": arms, "scoring": base.get("scoring", {}) | {"per_test_propagation": True}}


@pytest.fixture(scope="module")
def roles() -> dict:
    return json.loads((DEMO / "roles.json").read_text())


@pytest.fixture(scope="module")
def built(tmp_path_factory, params):
    out = tmp_path_factory.mktemp("pipeline")
    data = dict(params["data"])
    result = ingest(data, ROOT)
    write_outputs(result, out / "ingest")
    settings = SynthesisSettings.from_params(params["synthesis"] | {"prompts_dir": str(ROOT / "prompts")})
    checklists = synthesize_all(result.tasks, params["generator"], settings, out / "synthesize", progress=False)
    judgments = {arm: judge_run(params, arm, out / "ingest", out / "synthesize", out / "judge" / arm, progress=False)
                 for arm in params["arm"]}
    metrics = finalize_run(params, out / "ingest", out / "judge", out / "finalize", out / "finalize.json")
    return {"out": out, "result": result, "checklists": {c.task_id: c for c in checklists}, "metrics": metrics,
            "params": params, "trajectories": {t.trajectory_id: t for t in result.trajectories}, "judgments": judgments}


def _traj(built, rel: str) -> Trajectory:
    matches = [t for t in built["trajectories"].values() if t.trajectory_id.endswith(rel.split("jobs/", 1)[-1])]
    assert len(matches) == 1, f"role trajectory {rel} not found among ingested trajectories"
    return matches[0]


def test_corpus_shape(built):
    result = built["result"]
    assert len(result.tasks) >= 6
    binary = [t for t in result.trajectories if t.outcome.status in ("PASS", "FAIL")]
    assert len(binary) >= 48
    for task in result.tasks:
        outcomes = {t.outcome.status for t in binary if t.task_id == task.task_id}
        assert outcomes == {"PASS", "FAIL"}, task.task_id
    assert {t.condition for t in binary} >= {"with_skills", "without_skills"}
    assert sum(p.stat().st_size for p in DEMO.rglob("*") if p.is_file()) < 2_000_000


def test_non_binary_trials_are_listed_not_dropped(built):
    others = [t for t in built["result"].trajectories if t.outcome.status == "other"]
    assert others and all(t.outcome.reason for t in others)


def test_every_item_quotes_its_instruction_verbatim(built):
    tasks = {t.task_id: t for t in built["result"].tasks}
    checklists = built["checklists"]
    assert all(c.status == "frozen" for c in checklists.values()), [c.failure for c in checklists.values() if c.failure]
    for task_id, cl in checklists.items():
        instruction = " ".join(tasks[task_id].instruction.split())
        for item in cl.items:
            assert " ".join(item.quote.split()) in instruction, (task_id, item.item_id)
        assert cl.provenance.provider == "heuristic"


def test_all_yaml_composes_every_arm(params):
    assert tuple(params["arm"]) == ALL_ARMS
    singles = sorted(p.stem for p in (ROOT / "conf" / "arm").glob("*.yaml") if p.stem not in ("all", "gcpc_both", "floors"))
    assert sorted(params["arm"]) == singles


def test_every_arm_scores_every_trajectory(built):
    n = len(built["trajectories"])
    metrics = built["metrics"]
    for arm in ALL_ARMS:
        judgments = built["judgments"][arm]
        assert len(judgments) == n and all(j.status == "ok" for j in judgments), \
            [(j.trajectory_id, j.error) for j in judgments if j.status != "ok"]
        rows = metrics[metrics["arm"] == arm]
        assert sorted(rows["trajectory_id"]) == sorted(built["trajectories"])
        # a score, or (checklist-like arms only) the zero-evidence flag that says why there is none
        assert (rows["gcpc_plain"].notna() | rows["zero_evidence"].astype(bool)).all(), arm
        binary = rows[rows["outcome"].isin(["PASS", "FAIL"])]
        if arm != "holistic" and not arm.startswith("floor_"):
            assert binary["gcpc_outcome"].notna().all() and binary["gcpc_per_test"].notna().all(), arm
    kinds = metrics.groupby("arm")["arm_kind"].first().to_dict()
    assert kinds == {"gcpc": "checklist", "gcpc_gate": "checklist", "generic": "generic", "tick": "tick",
                     "tick_adapted": "tick", "holistic": "holistic", "floor_exit0": "floor", "floor_steps": "floor",
                     "floor_log_length": "floor", "floor_clean_tail": "floor"}


def test_tick_judges_each_question_in_its_own_call(built):
    for arm in ("tick", "tick_adapted"):
        judgments = built["judgments"][arm]
        # one generation call per task, shared by the task's trajectories
        per_task = {}
        for j in judgments:
            per_task.setdefault(j.task_id, set()).add((j.request_key, j.checklist_hash))
        assert all(len(v) == 1 for v in per_task.values()), per_task
        for j in judgments:
            assert 2 <= len(j.labels) <= 8
            keys = [lab.request_key for lab in j.labels]
            assert None not in keys and len(set(keys)) == len(keys) and j.request_key not in keys  # one call per question
            assert all(lab.label in ("Yes", "No") and lab.text for lab in j.labels)
    # same questions and labels under the heuristic (it reads inputs, not wording); different requests
    for a, b in zip(built["judgments"]["tick"], built["judgments"]["tick_adapted"], strict=True):
        assert [(x.text, x.label) for x in a.labels] == [(y.text, y.label) for y in b.labels]
        assert a.request_key != b.request_key


def test_idle_trajectory_has_plain_zero_or_zero_evidence(built, roles):
    traj = _traj(built, roles["idle"])
    for arm in ("gcpc", "gcpc_gate"):
        row = built["metrics"].query("trajectory_id == @traj.trajectory_id and arm == @arm").iloc[0]
        assert bool(row["zero_evidence"]) or row["gcpc_plain"] == 0.0, arm
    # the baselines give an idle run nothing either: no Yes anywhere, holistic 0
    for arm in ALL_ARMS:
        j = next(j for j in built["judgments"][arm] if j.trajectory_id == traj.trajectory_id)
        assert not any(lab.label == "Yes" for lab in j.labels), arm
    assert next(j for j in built["judgments"]["holistic"] if j.trajectory_id == traj.trajectory_id).score == 0


def test_claims_without_evidence_earn_no_yes(built, roles):
    traj = _traj(built, roles["claims_without_evidence"])
    judgments = read_models(built["out"] / "judge" / "gcpc" / "judgments.jsonl", Judgment)
    judgment = next(j for j in judgments if j.trajectory_id == traj.trajectory_id)
    items = {i.item_id: i for i in built["checklists"][traj.task_id].items}
    evidence_text = "\n".join(e.text for e in traj.events if e.kind in EVIDENCE_KINDS).lower()
    claimed_only = [iid for iid, it in items.items()
                    if concrete_tokens(it.text) and not any(tok.lower() in evidence_text for tok in concrete_tokens(it.text))]
    assert claimed_only, "the demo's claims-only trajectory should claim items it never shows"
    for lab in judgment.labels:
        if lab.item_id in claimed_only:
            assert lab.label != "Yes", lab


def _judge_pair(built, name: str, traj: Trajectory, twin: Trajectory) -> tuple[Judgment, Judgment]:
    params = built["params"]
    arm = arm_spec(params, name)
    checklists = {(c.benchmark, c.task_id): c for c in built["checklists"].values()}
    tasks = {(t.benchmark, t.task_id): t for t in built["result"].tasks}
    client = make_client(params["judge"], built["out"] / f"twin_{name}_{twin.trajectory_id.rsplit('#', 1)[-1]}.jsonl", progress=False)
    try:
        original, other = judge_arm(arm, [traj, twin], llm_cfg=params["judge"], client=client, checklists=checklists, tasks=tasks)
    finally:
        client.store.close()
    assert original.status == other.status == "ok", (original.error, other.error)
    return original, other


def _verdicts(j: Judgment) -> list[tuple[str, str]] | float | None:
    return j.score if j.kind == "holistic" else [(lab.item_id, lab.label) for lab in j.labels]


def test_claims_without_tool_evidence_earn_no_yes_in_any_arm(built, roles):
    """Every arm, on the claims-only run: silencing the agent's own words changes no verdict (so no
    Yes rests on a claim), no TICK question whose anchors are never displayed is YES, and every Yes
    of a gated arm cites a tool output or file content."""
    traj = _traj(built, roles["claims_without_evidence"])
    assert any(e.kind == EventKind.AGENT_MESSAGE and "Created" in e.text for e in traj.events)
    silent = [e.model_copy(update={"text": ""}) if e.kind == EventKind.AGENT_MESSAGE else e for e in traj.events]
    twin = traj.model_copy(update={"events": silent, "trajectory_id": traj.trajectory_id + "#silent"})
    evidence_text = "\n".join(e.text for e in traj.events if e.kind in EVIDENCE_KINDS).lower()
    by_index = {e.index: e for e in traj.events}
    for name in ALL_ARMS:
        original, silenced = _judge_pair(built, name, traj, twin)
        assert _verdicts(original) == _verdicts(silenced), name
        for lab in original.labels:
            if lab.label == "Yes" and original.evidence_gate:
                assert lab.evidence and all(by_index[e.event_index].kind in EVIDENCE_KINDS for e in lab.evidence), (name, lab)
            if original.kind == "tick" and lab.label == "Yes":
                assert any(a.lower() in evidence_text for a in anchors_of(lab.text)), (name, lab)
    holistic = next(j for j in built["judgments"]["holistic"] if j.trajectory_id == traj.trajectory_id)
    assert holistic.score is not None and holistic.score <= 2, holistic.rationale


def test_injected_text_changes_no_verdict_in_any_arm(built, roles):
    spec = roles["prompt_injection"]
    traj = _traj(built, spec["trial"])
    injected = [line.strip() for line in spec["injected_lines"]]
    assert any(inj in e.text for e in traj.events for inj in injected), "injected text not found in the log"
    twin_events = [e.model_copy(update={"text": "\n".join(l for l in e.text.split("\n") if l.strip() not in injected)})
                   for e in traj.events]
    twin = traj.model_copy(update={"events": twin_events, "trajectory_id": traj.trajectory_id + "#twin"})
    for name in ALL_ARMS:
        original, clean = _judge_pair(built, name, traj, twin)
        assert _verdicts(original) == _verdicts(clean), name
        assert original.labels or original.score is not None, f"the injection trajectory must be judged by {name}"


def test_pass_trajectories_score_higher_on_average(built):
    m = built["metrics"].query("arm == 'gcpc' and outcome in ['PASS', 'FAIL']")
    means = m.fillna({"gcpc_plain": 0.0}).groupby("outcome")["gcpc_plain"].mean()
    assert means["PASS"] > means["FAIL"]


def test_replay_regenerates_every_arm_byte_identically(built, tmp_path):
    """The judge stage of every arm, rerun through the replay provider on the recorded calls: same bytes."""
    import shutil

    replay = yaml.safe_load((ROOT / "conf" / "llm" / "replay.yaml").read_text())
    params = built["params"] | {"judge": replay}
    for arm in ALL_ARMS:
        recorded = built["out"] / "judge" / arm
        again = tmp_path / arm
        shutil.copytree(recorded, again)
        (again / "judgments.jsonl").unlink()
        judge_run(params, arm, built["out"] / "ingest", built["out"] / "synthesize", again, progress=False)
        assert (again / "judgments.jsonl").read_bytes() == (recorded / "judgments.jsonl").read_bytes(), arm
        assert (again / "llm_calls.jsonl").read_bytes() == (recorded / "llm_calls.jsonl").read_bytes(), arm


def test_judging_in_small_chunks_gives_the_same_bytes(built, tmp_path, monkeypatch):
    """The judge stage streams trajectories in chunks; chunks of 7, or of ~50 KB of input lines (TICK's question
    generation shared by chunks, answered from the call store), write the same judgments and call store as one pass."""
    from gcpc.judging import stage
    from gcpc.llm.store import packed_blobs_path

    monkeypatch.setattr(stage, "CHUNK_BYTES", 50_000)
    for arm, chunk in (("gcpc", 7), ("tick", 7), ("tick_adapted", None), ("floor_steps", 7)):
        recorded = built["out"] / "judge" / arm
        again = tmp_path / arm
        judge_run(built["params"], arm, built["out"] / "ingest", built["out"] / "synthesize", again, progress=False, chunk=chunk)
        for name in ("judgments.jsonl", "llm_calls.jsonl"):
            assert (again / name).read_bytes() == (recorded / name).read_bytes(), (arm, name)
        if arm != "floor_steps":
            assert packed_blobs_path(again / "llm_calls.jsonl").read_bytes() == packed_blobs_path(recorded / "llm_calls.jsonl").read_bytes()
