"""Issue 38, problem 2: gcpc's Inspect scorer marks a sample it cannot score in Inspect's own convention.

On a real log made offline (tests/inspect_support.py: four samples of a scripted agent, Inspect's bash tool in the
local sandbox), `inspect_ai.score` runs `gcpc(...)` with a scripted grader (mockllm) that answers every item
Abstain except on one sample. Three samples are zero-evidence (every item Abstain) and one has no checklist at
all, so Inspect must count them in `unscored_samples` and no metric may average them: on 1da41f9 every value was
None inside a dict, which Inspect counts as scored (`scored_samples=4, unscored_samples=0`).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from inspect_support import need_inspect

ROOT = Path(__file__).resolve().parents[1]
BENCHMARK = "inspect-unscored"
ITEMS = ("c1", "c2")
SCORED = "greeting"  # the one sample the grader decides (c1 Yes, c2 No: GCPC plain 0.5)
ZERO_EVIDENCE = ("numbers", "marker", "script")


def _checklists(path: Path) -> Path:
    from gcpc.io import write_jsonl
    from gcpc.synthesis.models import Checklist, ChecklistItem, Provenance

    prov = Provenance(provider="test", model="hand-written", prompt_hash="-", rules_hash="-")
    books = []
    for task in (SCORED, *ZERO_EVIDENCE[:2]):  # "script" has no checklist: unscored for another reason
        items = [ChecklistItem(item_id=i, text=f"{task}: requirement {i}", quote="file", route="judge") for i in ITEMS]
        books.append(Checklist(benchmark=BENCHMARK, task_id=task, status="frozen", items=items, provenance=prov,
                               attempts=1, first_attempt_valid=True).with_hash())
    write_jsonl(path, books)
    return path


def _grader():
    """mockllm: Yes / No on the greeting sample's judge prompt, every item Abstain on any other."""
    from inspect_ai.model import ModelOutput, get_model

    def answer(messages, tools, tool_choice, config):  # noqa: ANN001, ANN202
        prompt = "\n".join(m.text for m in messages)
        ids = [i for i in ITEMS if re.search(rf"\b{i}\b", prompt)]
        assert ids == list(ITEMS), prompt[-2000:]
        decided = f"{SCORED}: requirement" in prompt
        labels = {"c1": "Yes", "c2": "No"} if decided else dict.fromkeys(ITEMS, "Abstain")
        reply = {"verdicts": [{"item_id": i, "label": labels[i], "evidence": [], "reason": f"scripted {labels[i]}"}
                              for i in ITEMS]}
        return ModelOutput.from_content("mockllm/model", json.dumps(reply))

    return get_model("mockllm/model", custom_outputs=answer)


@pytest.fixture(scope="module")
def rescored(tmp_path_factory):
    need_inspect()
    from inspect_ai import score
    from inspect_ai.log import read_eval_log
    from inspect_support import make_logs

    from gcpc.scoring.inspect_scorer import gcpc

    tmp = tmp_path_factory.mktemp("unscored")
    log = read_eval_log(str(make_logs(tmp / "logs", tmp / "tiktoken")))
    checklists = _checklists(tmp / "checklists.jsonl")
    return score(log, scorers=[gcpc(checklists=str(checklists), params=str(ROOT / "params.yaml"))],
                 model_roles={"grader": _grader()}, action="append", display="none")


def test_unscored_samples_use_inspects_convention(rescored):
    samples = {str(s.id): s.scores["gcpc"] for s in rescored.samples}
    assert set(samples) == {SCORED, *ZERO_EVIDENCE}
    for sid in ZERO_EVIDENCE:
        score = samples[sid]
        assert isinstance(score.value, float) and math.isnan(score.value), (sid, score.value)
        assert score.reason and score.metadata["status"] in ("zero_evidence", "unscored")
    assert samples["numbers"].metadata["status"] == "zero_evidence" and "zero evidence" in samples["numbers"].reason
    assert samples["script"].metadata["status"] == "unscored" and "no checklist" in samples["script"].reason
    ok = samples[SCORED]
    assert ok.metadata["status"] == "ok" and ok.value["gcpc_plain"] == 0.5 and ok.value["perfect"] == 0.0


def test_inspect_counts_them_unscored_and_no_metric_averages_them(rescored):
    results = {s.name: s for s in rescored.results.scores if s.scorer == "gcpc"}
    assert set(results) == {"gcpc_plain", "gcpc_outcome", "perfect", "evidence_coverage"}
    for name, r in results.items():
        assert r.unscored_samples >= 3, (name, r.scored_samples, r.unscored_samples)
    assert (results["gcpc_plain"].scored_samples, results["gcpc_plain"].unscored_samples) == (1, 3)
    mean = {name: next(m.value for k, m in r.metrics.items() if k.endswith("scored_mean")) for name, r in results.items()}
    assert mean["gcpc_plain"] == 0.5  # the decided sample only, never (0.5+0+0+0)/4
    assert mean["perfect"] == 0.0
    # the official scorer's own results are untouched
    official = next(s for s in rescored.results.scores if s.name == "file_check")
    assert official.scored_samples == 4 and official.unscored_samples == 0
