"""Issue 38, problem 1: GCPC scores exported where Harbor shows them, into a copy of the job (gcpc.report.harbor_export).

Harbor's published field types (harbor.models.verifier.result.VerifierResult, 0.13.x): `rewards: dict[str, float | int]`;
`verifier/reward.json` is parsed into it. Harbor itself needs Python >= 3.12, so the same type is declared here
(`HarborVerifierResult`, strict: no bool-as-int, no string-as-number) and every written file is checked against it,
plus the JSON text itself (no lists, nulls, NaN). On 1da41f9 the module did not exist.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
from pydantic import BaseModel, ConfigDict, StrictFloat, StrictInt

from gcpc.report.harbor_export import SIDE_FILE, ExportError, export, main

ROOT = Path(__file__).resolve().parents[1]
DEMO_JOB = ROOT / "data" / "demo" / "jobs" / "without-claude-code"
OTHER_TRIAL = ROOT / "tests" / "fixtures" / "harbor_atif" / "jobs" / "atif-job" / "count-words__A1b2C3d"


class HarborVerifierResult(BaseModel):
    """Harbor's VerifierResult.rewards as published (dict[str, float | int]), strict."""

    model_config = ConfigDict(extra="allow")
    rewards: dict[str, StrictFloat | StrictInt] | None = None


def harbor_valid(obj: object, where: str) -> dict:
    assert isinstance(obj, dict) and obj, where
    HarborVerifierResult.model_validate({"rewards": obj})
    for key, value in obj.items():
        assert isinstance(key, str) and type(value) in (int, float) and math.isfinite(value), (where, key, value)
    return obj


def tree_digest(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture()
def run(tmp_path):
    """A Harbor job of four trials (three of the demo's, one the gcpc run never saw), and the run's outputs."""
    job = tmp_path / "jobs" / "myjob"
    trials = sorted(p.name for p in DEMO_JOB.iterdir() if p.is_dir())[:3]
    for name in trials:
        shutil.copytree(DEMO_JOB / name, job / name)
    shutil.copytree(OTHER_TRIAL, job / OTHER_TRIAL.name)
    (job / trials[0] / "verifier" / "reward.json").write_text('{"reward": 1.0}\n', encoding="utf-8")  # Harbor's own
    scored, zero, no_outcome = trials
    with (tmp_path / "trajectories.jsonl").open("w", encoding="utf-8") as fh:
        for name in trials:
            fh.write(json.dumps({"trajectory_id": f"demo/myjob/{name}", "benchmark": "demo",
                                 "source_path": f"jobs/myjob/{name}", "events": []}) + "\n")
    base = {"arm_kind": "checklist", "zero_evidence": False, "zero_evidence_reason": None, "holistic_score": math.nan}
    rows = [
        base | {"trajectory_id": f"demo/myjob/{scored}", "arm": "gcpc", "gcpc_plain": 0.75, "gcpc_outcome": 0.8,
                "perfect": False, "evidence_coverage": 1.0},
        base | {"trajectory_id": f"demo/myjob/{scored}", "arm": "floor_steps", "arm_kind": "floor", "gcpc_plain": 0.25,
                "gcpc_outcome": math.nan, "perfect": None, "evidence_coverage": math.nan},
        base | {"trajectory_id": f"demo/myjob/{zero}", "arm": "gcpc", "gcpc_plain": math.nan, "gcpc_outcome": 0.0,
                "perfect": True, "evidence_coverage": 0.0, "zero_evidence": True,
                "zero_evidence_reason": "every item Abstain"},
        base | {"trajectory_id": f"demo/myjob/{zero}", "arm": "floor_steps", "arm_kind": "floor", "gcpc_plain": 0.5,
                "gcpc_outcome": math.nan, "perfect": None, "evidence_coverage": math.nan},
        base | {"trajectory_id": f"demo/myjob/{no_outcome}", "arm": "gcpc", "gcpc_plain": 1.0, "gcpc_outcome": math.nan,
                "perfect": True, "evidence_coverage": 0.5},
        base | {"trajectory_id": f"demo/myjob/{no_outcome}", "arm": "floor_steps", "arm_kind": "floor",
                "gcpc_plain": 0.0, "gcpc_outcome": math.nan, "perfect": None, "evidence_coverage": math.nan},
    ]
    pd.DataFrame(rows).to_parquet(tmp_path / "metrics.parquet")
    return {"job": job, "out": tmp_path / "export" / "myjob", "metrics": tmp_path / "metrics.parquet",
            "trajectories": tmp_path / "trajectories.jsonl", "scored": scored, "zero": zero, "no_outcome": no_outcome}


def _export(run):
    return export(run["job"], run["out"], run["metrics"], run["trajectories"])


def test_every_written_file_has_harbors_field_types_and_the_official_reward_unchanged(run):
    before = tree_digest(run["job"])
    originals = {t: json.loads((run["job"] / t / "result.json").read_text()) for t in (run["scored"], run["zero"], run["no_outcome"])}
    side = _export(run)
    assert tree_digest(run["job"]) == before  # the user's job is only read
    assert side["counts"] == {"trials": 4, "exported": 3, "skipped": 1, "omitted_scores": 5}
    for trial, original in originals.items():
        reward_text = (run["out"] / trial / "verifier" / "reward.json").read_text(encoding="utf-8")
        assert "null" not in reward_text and "NaN" not in reward_text and "[" not in reward_text
        reward = harbor_valid(json.loads(reward_text), f"{trial}/verifier/reward.json")
        result = json.loads((run["out"] / trial / "result.json").read_text(encoding="utf-8"))
        HarborVerifierResult.model_validate(result["verifier_result"])
        assert result["verifier_result"]["rewards"] == reward  # result.json's rewards match reward.json
        official = original["verifier_result"]["rewards"]
        assert list(reward)[:len(official)] == list(official) and all(reward[k] == v for k, v in official.items())
        # nothing else in result.json changed
        result["verifier_result"]["rewards"] = official
        assert result == original
    scored = json.loads((run["out"] / run["scored"] / "verifier" / "reward.json").read_text())
    assert scored == {"reward": 1.0, "floor_steps/gcpc_plain": 0.25, "gcpc/evidence_coverage": 1.0,
                      "gcpc/gcpc_outcome": 0.8, "gcpc/gcpc_plain": 0.75, "gcpc/perfect": 0.0}


def test_zero_evidence_scores_are_left_out_with_the_reason_never_0(run):
    side = _export(run)
    zero = json.loads((run["out"] / run["zero"] / "verifier" / "reward.json").read_text())
    assert not any(k.startswith("gcpc/") for k in zero) and zero["floor_steps/gcpc_plain"] == 0.5
    entry = next(t for t in side["trials"] if t["trial"] == run["zero"])
    assert {o["key"] for o in entry["omitted"]} == {"gcpc/gcpc_plain", "gcpc/gcpc_outcome", "gcpc/perfect",
                                                    "gcpc/evidence_coverage"}
    assert all("zero evidence" in o["reason"] for o in entry["omitted"])
    no_outcome = json.loads((run["out"] / run["no_outcome"] / "verifier" / "reward.json").read_text())
    assert "gcpc/gcpc_outcome" not in no_outcome and no_outcome["gcpc/gcpc_plain"] == 1.0
    assert json.loads((run["out"] / SIDE_FILE).read_text()) == side
    skipped = next(t for t in side["trials"] if t["trial"] == OTHER_TRIAL.name)
    assert "not scored by this gcpc run" in skipped["skipped"]
    assert tree_digest(run["out"] / OTHER_TRIAL.name) == tree_digest(run["job"] / OTHER_TRIAL.name)


def test_refuses_to_write_into_the_job_or_over_a_folder(run):
    with pytest.raises(ExportError, match="inside the job"):
        export(run["job"], run["job"] / "copy", run["metrics"], run["trajectories"])
    run["out"].mkdir(parents=True)
    with pytest.raises(ExportError, match="already exists"):
        _export(run)
    with pytest.raises(ExportError, match="arm\\(s\\) nope not in"):
        export(run["job"], run["out"].parent / "other", run["metrics"], run["trajectories"], arms=["nope"])


def test_output_is_deterministic_and_the_command_prints_one_line(run, capsys):
    assert main([str(run["job"]), str(run["out"]), "--metrics", str(run["metrics"]),
                 "--trajectories", str(run["trajectories"])]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("harbor export: 3 of 4 trials written") and "\n" not in line
    again = run["out"].parent / "again"
    export(run["job"], again, run["metrics"], run["trajectories"])
    assert tree_digest(again) == tree_digest(run["out"])
    assert main([str(run["job"]), str(run["job"] / "x"), "--metrics", str(run["metrics"]),
                 "--trajectories", str(run["trajectories"])]) == 1


def test_on_the_demo_pipelines_outputs(tmp_path):
    metrics = ROOT / "data" / "processed" / "finalize" / "metrics.parquet"
    trajectories = ROOT / "data" / "processed" / "ingest" / "trajectories.jsonl"
    if not (metrics.is_file() and trajectories.is_file()):
        pytest.skip("the demo pipeline's outputs are not checked out (run `dvc repro` or `dvc checkout`)")
    side = export(DEMO_JOB, tmp_path / "job", metrics, trajectories)
    assert side["counts"]["exported"] == side["counts"]["trials"] > 0
    for t in side["trials"]:
        harbor_valid(json.loads((tmp_path / "job" / t["trial"] / "verifier" / "reward.json").read_text()), t["trial"])
