"""The synthesize stage: re-runs make no call and change no byte; rule edits re-run it under DVC."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from gcpc.corpus.models import Task, VerifierTest
from gcpc.io import read_models
from gcpc.llm.heuristic import HeuristicProvider
from gcpc.synthesis.audit import AuditSettings
from gcpc.synthesis.generate import SynthesisSettings
from gcpc.synthesis.models import Checklist
from gcpc.synthesis.stage import synthesize_all

ROOT = Path(__file__).resolve().parents[1]
HEURISTIC = {"provider": "heuristic", "model": "gcpc-heuristic-v1", "temperature": 0.0, "seed": 0}
OUTPUTS = ("checklists.jsonl", "attempts.jsonl", "llm_calls.jsonl")


def _task(task_id: str, instruction: str, tests: list[VerifierTest]) -> Task:
    return Task(benchmark="demo", task_id=task_id, instruction=instruction, tests=tests, source_path=f"tasks/{task_id}")


TASKS = [
    _task("sales", """Summarise the sales data.

1. Read `/root/sales.csv` and compute the total of the `amount` column.
2. Count the rows whose `region` is "north".
3. Save both numbers to `/root/summary.json` with keys `total_amount` and `north_rows`.
4. The file must be valid JSON.
""", [VerifierTest(id="test_outputs.py::test_summary", file="test_outputs.py", name="test_summary",
                   source='def test_summary():\n    assert json.load(open("/root/summary.json"))["north_rows"] == 3')]),
    # states only two requirements: keeps its two-item checklist (item count is observed, not gated)
    _task("tiny", "Create `/app/hello.txt` containing `hi`. Do not install anything.", []),
    # states no requirement at all: an empty checklist, unusable, reported and never padded
    _task("blank", "# Notes\n\nBackground only.", []),
    _task("config", """Configure the web service.

- Set `port` to 8080 in `/etc/app/config.yaml`.
- Set `workers` to 4.
- Enable gzip compression for responses.
- Restart the service and make sure it answers on `http://localhost:8080/health`.
""", [VerifierTest(id="test_outputs.py::test_health", file="test_outputs.py", name="test_health",
                   source='def test_health():\n    assert requests.get("http://localhost:8080/health").ok')]),
]


@pytest.fixture
def count_calls(monkeypatch):
    calls: list[str] = []
    original = HeuristicProvider.complete

    def counting(self, request):
        calls.append(request.key)
        return original(self, request)

    monkeypatch.setattr(HeuristicProvider, "complete", counting)
    return calls


def _bytes(out: Path) -> dict[str, bytes]:
    return {name: (out / name).read_bytes() for name in OUTPUTS}


def test_rerun_makes_no_call_and_is_byte_identical(tmp_path, count_calls):
    out = tmp_path / "synthesize"
    first = synthesize_all(TASKS, HEURISTIC, SynthesisSettings(prompts_dir=ROOT / "prompts"), out, progress=False)
    n_first = len(count_calls)
    assert n_first >= len(TASKS)
    before = _bytes(out)
    second = synthesize_all(TASKS, HEURISTIC, SynthesisSettings(prompts_dir=ROOT / "prompts"), out, progress=False)
    assert len(count_calls) == n_first, "a re-run with unchanged rules, prompts and inputs must make no provider call"
    assert _bytes(out) == before
    assert [c.checklist_hash for c in first] == [c.checklist_hash for c in second]
    statuses = {c.task_id: c.status for c in first}
    assert statuses == {"blank": "failed", "config": "frozen", "sales": "frozen", "tiny": "frozen"}
    tiny = next(c for c in first if c.task_id == "tiny")
    assert len(tiny.items) == 2 and tiny.attempts == 1
    blank = next(c for c in first if c.task_id == "blank")
    assert blank.items == [] and blank.failure.startswith("no items after 3 generation attempt(s)") and blank.attempts == 3


def test_frozen_checklists_carry_provenance_and_hash(tmp_path):
    out = tmp_path / "synthesize"
    settings = SynthesisSettings(prompts_dir=ROOT / "prompts")
    synthesize_all(TASKS, HEURISTIC, settings, out, progress=False)
    stored = read_models(out / "checklists.jsonl", Checklist)
    sales = next(c for c in stored if c.task_id == "sales")
    assert sales.provenance.provider == "heuristic" and sales.provenance.model == "gcpc-heuristic-v1"
    assert sales.provenance.prompt_hash == settings.template().hash
    assert sales.provenance.rules_hash == settings.rules_hash()
    assert sales.provenance.request_key
    assert sales.checklist_hash == sales.with_hash().checklist_hash != ""
    for item in sales.items:
        assert item.item_id and item.text and item.quote and item.route
        assert "category" not in item.model_dump()  # categories are the audit's, never the generator's
    assert any(i.route == "assertion" and i.test_refs == ["test_outputs.py::test_summary"] for i in sales.items)


def test_editing_one_rule_file_changes_every_checklist(tmp_path, count_calls):
    prompts = tmp_path / "prompts"
    shutil.copytree(ROOT / "prompts", prompts)
    out = tmp_path / "synthesize"
    before = synthesize_all(TASKS, HEURISTIC, SynthesisSettings(prompts_dir=prompts), out, progress=False)
    n_before = len(count_calls)
    rule = prompts / "rules" / "provenance.md"
    rule.write_text(rule.read_text(encoding="utf-8") + "\nA quote never spans two list items.\n", encoding="utf-8")
    after = synthesize_all(TASKS, HEURISTIC, SynthesisSettings(prompts_dir=prompts), out, progress=False)
    assert len(count_calls) > n_before, "changed rules must reach the generator as new requests"
    for b, a in zip(before, after, strict=True):
        assert a.provenance.rules_hash != b.provenance.rules_hash
        assert a.provenance.prompt_hash != b.provenance.prompt_hash
        assert a.checklist_hash != b.checklist_hash


# --- dvc.yaml declares what the stages read --------------------------------------------------


def _stage(name: str) -> dict | None:
    from gcpc.paths import pipeline_yaml

    return pipeline_yaml(ROOT)["stages"].get(name)  # dvc.yaml and pipelines/*/dvc.yaml


def _covered(path: Path, deps: list[str]) -> bool:
    rel = path.resolve().relative_to(ROOT).as_posix()
    return any(rel == d.rstrip("/") or rel.startswith(d.rstrip("/") + "/") for d in deps)


def test_dvc_synthesize_stage_declares_every_file_the_template_loads():
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    settings = SynthesisSettings.from_params(params.get("synthesis", {}))
    files = [ROOT / p for p in settings.template_files()]
    assert len(files) == 3 and all(f.is_file() for f in files)
    assert not any("categor" in f.name or "schemes" in f.parts for f in files)  # the scheme does not reach synthesis
    stage = _stage("synthesize")
    missing = [f.relative_to(ROOT).as_posix() for f in files if not _covered(f, stage["deps"])]
    assert not missing, f"dvc.yaml synthesize stage does not declare {missing}"
    declared = set(stage["params"])
    assert "generator" in declared
    needed = {"synthesis.prompts_dir", "synthesis.max_regenerations"}
    assert "synthesis" in declared or needed <= declared, f"synthesize stage params miss {needed - declared}"


def test_dvc_stages_after_synthesize_depend_on_its_checklists():
    """Changed checklists (a rule edit changes every checklist hash) re-run everything that reads them."""
    outs = [next(iter(o)) if isinstance(o, dict) else o for o in _stage("synthesize")["outs"]]
    assert "data/processed/synthesize" in outs
    for name in ("validate", "judge"):
        stage = _stage(name)
        deps = stage["do"]["deps"] if "do" in stage else stage["deps"]
        assert any(d.startswith("data/processed/synthesize") for d in deps), name


def test_dvc_audit_stage_declares_its_prompts():
    """(The transfer table reads ../shared/data, so it runs by hand and is not a dvc.yaml stage.)"""
    stage = _stage("audit")
    files = [ROOT / p for p in AuditSettings().template_files()]
    missing = [f.relative_to(ROOT).as_posix() for f in files if not _covered(f, stage["deps"])]
    assert not missing, f"dvc.yaml audit stage does not declare {missing}"


def test_settings_from_params_validate_the_limits():
    s = SynthesisSettings.from_params({"max_regenerations": 3})
    assert s.max_regenerations == 3
    # the former item-count limits are gone; a config that still sets one is told so, not ignored
    with pytest.raises(ValueError, match="synthesis.min_items, synthesis.max_items no longer exist"):
        SynthesisSettings.from_params({"min_items": 4, "max_items": 15})
    with pytest.raises(ValueError, match="max_regenerations"):
        SynthesisSettings.from_params({"max_regenerations": 0})
