"""Acceptance on the demo corpus with the heuristic provider, through the library functions the stages call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gcpc.corpus.ingest import ingest, write_outputs
from gcpc.corpus.models import EVIDENCE_KINDS, Trajectory
from gcpc.io import read_models
from gcpc.judging.checklist_arm import ArmSpec, judge_checklist_arm
from gcpc.judging.models import Judgment
from gcpc.judging.stage import run as judge_run
from gcpc.llm import make_client
from gcpc.llm.heuristic.tokens import concrete_tokens
from gcpc.scoring.finalize import run as finalize_run
from gcpc.synthesis.generate import SynthesisSettings
from gcpc.synthesis.stage import synthesize_all

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo"


@pytest.fixture(scope="module")
def params() -> dict:
    return yaml.safe_load((ROOT / "params.yaml").read_text())


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
    arm_params = params | {"arm": {k: v | {"template": str(ROOT / v["template"])} for k, v in params["arm"].items()}}
    for arm in arm_params["arm"]:
        judge_run(arm_params, arm, out / "ingest", out / "synthesize", out / "judge" / arm, progress=False)
    metrics = finalize_run(arm_params, out / "ingest", out / "judge", out / "finalize", out / "finalize.json")
    return {"out": out, "result": result, "checklists": {c.task_id: c for c in checklists}, "metrics": metrics,
            "params": arm_params, "trajectories": {t.trajectory_id: t for t in result.trajectories}}


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


def test_idle_trajectory_has_plain_zero_or_zero_evidence(built, roles):
    traj = _traj(built, roles["idle"])
    row = built["metrics"].query("trajectory_id == @traj.trajectory_id and arm == 'gcpc'").iloc[0]
    assert bool(row["zero_evidence"]) or row["gcpc_plain"] == 0.0


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


def test_injected_text_changes_no_verdict(built, roles):
    spec = roles["prompt_injection"]
    traj = _traj(built, spec["trial"])
    injected = [line.strip() for line in spec["injected_lines"]]
    assert any(inj in e.text for e in traj.events for inj in injected), "injected text not found in the log"
    twin_events = [e.model_copy(update={"text": "\n".join(l for l in e.text.split("\n") if l.strip() not in injected)})
                   for e in traj.events]
    twin = traj.model_copy(update={"events": twin_events, "trajectory_id": traj.trajectory_id + "#twin"})
    params = built["params"]
    checklists = {(c.benchmark, c.task_id): c for c in built["checklists"].values()}
    for name, cfg in params["arm"].items():
        arm = ArmSpec.from_params(name, cfg, params["judging"])
        client = make_client(params["judge"], built["out"] / f"twin_{name}.jsonl", progress=False)
        original, clean = judge_checklist_arm([traj, twin], checklists, arm=arm, llm_cfg=params["judge"], client=client)
        client.store.close()
        assert [(l.item_id, l.label) for l in original.labels] == [(l.item_id, l.label) for l in clean.labels]
        assert original.labels, "the injection trajectory must be judged"


def test_pass_trajectories_score_higher_on_average(built):
    m = built["metrics"].query("arm == 'gcpc' and outcome in ['PASS', 'FAIL']")
    means = m.fillna({"gcpc_plain": 0.0}).groupby("outcome")["gcpc_plain"].mean()
    assert means["PASS"] > means["FAIL"]
