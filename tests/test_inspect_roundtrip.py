"""Round trip on real Inspect AI logs (issue 27, §3): the README's "Inspect AI" commands in a fresh copy of the
repository, then the same per-sample GCPC from the pipeline (`dvc exp run -S data=<inspect config>`), from
`inspect score --scorer gcpc/gcpc`, and from `Task(scorer=[official, gcpc(...)])` inside a new eval.

The log is generated here, offline, with the real library (tests/inspect_support.py: scripted mockllm
agent, bash tool, local sandbox). The judge is the heuristic on both sides (`gcpc/heuristic` behind
Inspect's model API answers exactly what the pipeline's heuristic provider answers), so equal judge
answers must give equal numbers: one implementation of prompts, schemas, evidence rules and metrics.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from demo_outputs import fresh_clone
from inspect_support import need_inspect, offline_tiktoken

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- inspect-commands -->\n```bash\n(.*?)```\n<!-- /inspect-commands -->", text, re.S)
    assert block, "README.md: the <!-- inspect-commands --> block is missing"
    return [line for line in block.group(1).splitlines() if line.strip() and not line.startswith("#")]


def test_readme_block_has_the_three_commands():
    cmds = readme_commands()
    assert len(cmds) == 3
    assert "inspect_support.py" in cmds[0] and "dvc exp run" in cmds[1] and "inspect score" in cmds[2]
    assert "--scorer gcpc/gcpc" in cmds[2]


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    need_inspect()
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    dest = tmp_path_factory.mktemp("inspect") / "gcpc"
    env = fresh_clone(ROOT, dest)
    env["TIKTOKEN_CACHE_DIR"] = str(offline_tiktoken(tmp_path_factory.mktemp("tiktoken")).parent)
    for cmd in readme_commands():
        proc = subprocess.run(["bash", "-c", cmd], cwd=dest, env=env, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, f"{cmd}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return dest, env


def _same(a, b) -> bool:
    if a is None or (isinstance(a, float) and math.isnan(a)):
        return b is None or (isinstance(b, float) and math.isnan(b))
    return b is not None and not (isinstance(b, float) and math.isnan(b)) and abs(float(a) - float(b)) < 1e-12


def _pipeline(root: Path) -> pd.DataFrame:
    m = pd.read_csv(root / "data" / "processed" / "finalize" / "metrics.csv")
    return m[m["arm"] == "gcpc"].set_index("task_id")


def test_pipeline_and_inspect_score_agree(repo):
    from inspect_ai.log import read_eval_log

    root, _ = repo
    pipeline = _pipeline(root)
    assert len(pipeline) == 4 and set(pipeline["outcome"]) == {"PASS", "FAIL"}
    log = read_eval_log(str(root / "data" / "inspect-rescored.eval"))  # validates the re-scored log
    assert log.status == "success" and len(log.samples) == 4
    assert {s.name for s in log.results.scores} >= {"file_check", "gcpc_plain", "gcpc_outcome", "perfect",
                                                    "evidence_coverage"}
    decided = 0
    for sample in log.samples:
        row = pipeline.loc[str(sample.id)]
        score = sample.scores["gcpc"]
        meta = score.metadata
        if row["zero_evidence"]:
            assert meta["status"] == "zero_evidence" and math.isnan(score.value)  # Inspect's unscored sentinel
            continue
        decided += 1
        assert meta["status"] == "ok"
        assert _same(row["gcpc_plain"], score.value["gcpc_plain"]), sample.id
        assert _same(row["gcpc_outcome"], score.value["gcpc_outcome"]), sample.id  # --action append: official score seen
        assert _same(row["evidence_coverage"], score.value["evidence_coverage"]), sample.id
        assert meta["outcome"] == row["outcome"]
        assert meta["checklist_hash"] == row["checklist_hash"]
        assert {lab["item_id"] for lab in meta["labels"]} and all(lab["reason"] for lab in meta["labels"])
        assert meta["replies"][-1]["error"] is None
    assert decided >= 2
    # both routes asked the same heuristic the same question: the judgments carry the same labels
    judged = pd.read_json(root / "data" / "processed" / "judge" / "gcpc" / "judgments.jsonl", lines=True)
    for _, j in judged.iterrows():
        sample = next(s for s in log.samples if str(s.id) == j["task_id"])
        assert [(lab["item_id"], lab["label"]) for lab in j["labels"]] == \
            [(lab["item_id"], lab["label"]) for lab in sample.scores["gcpc"].metadata.get("labels", [])] or \
            sample.scores["gcpc"].metadata["status"] != "ok"


def test_gcpc_as_a_task_scorer_agrees(repo, tmp_path):
    """`Task(scorer=[official, gcpc(...)])` in a fresh eval: the official score comes first, so gcpc_outcome is set."""
    from inspect_ai import eval as inspect_eval
    from inspect_support import make_task, scripted_agent

    from gcpc.scoring.inspect_scorer import gcpc

    root, env = repo
    os.environ["TIKTOKEN_CACHE_DIR"] = env["TIKTOKEN_CACHE_DIR"]
    task = make_task()
    task.scorer = [*task.scorer, gcpc(checklists=str(root / "data" / "processed" / "synthesize" / "checklists.jsonl"),
                                      params=str(root / "params.yaml"))]
    [log] = inspect_eval(task, model=scripted_agent(), model_roles={"grader": "gcpc/heuristic"}, log_dir=str(tmp_path),
                         display="none", max_samples=1)
    assert log.status == "success", log.error
    pipeline = _pipeline(root)
    for sample in log.samples:
        row = pipeline.loc[str(sample.id)]
        value = sample.scores["gcpc"].value
        if row["zero_evidence"]:
            assert isinstance(value, float) and math.isnan(value)
        else:
            assert _same(row["gcpc_plain"], value["gcpc_plain"]) and _same(row["gcpc_outcome"], value["gcpc_outcome"])


def test_scorer_refuses_what_it_cannot_score(repo, tmp_path):
    from gcpc.scoring.inspect_scorer import gcpc

    root, _ = repo
    with pytest.raises(FileNotFoundError, match="checklists file"):
        gcpc(checklists=str(tmp_path / "none.jsonl"), params=str(root / "params.yaml"))
    with pytest.raises(ValueError, match="kind 'holistic'"):
        gcpc(checklists=str(root / "data" / "processed" / "synthesize" / "checklists.jsonl"),
             params=str(ROOT / "params.yaml"), arm="holistic")  # the clone's params.yaml now holds arm=gcpc only
    with pytest.raises(KeyError, match="arm 'tick' is not in"):
        gcpc(checklists=str(root / "data" / "processed" / "synthesize" / "checklists.jsonl"),
             params=str(root / "params.yaml"), arm="tick")
