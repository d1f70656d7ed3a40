"""Category audit: schemes are rule files; the heuristic assigns by definition text, never by name;
the falsification controls behave as their definitions imply; the audit is an ordinary LLM request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gcpc.corpus.models import Task
from gcpc.llm.base import RawResponse
from gcpc.llm.client import LLMClient
from gcpc.llm.heuristic import HeuristicProvider
from gcpc.llm.heuristic.audit import audit_requirements
from gcpc.llm.heuristic.synthesize import assign_category, cue_index, stem
from gcpc.llm.store import CallStore
from gcpc.synthesis.audit import AuditSettings, audit_tasks, coverage_markdown, run_audit
from gcpc.synthesis.models import Checklist, ChecklistItem, Provenance
from gcpc.synthesis.scheme import parse_scheme, read_scheme

ROOT = Path(__file__).resolve().parents[1]
PROMPTS = ROOT / "prompts"
HEURISTIC = {"provider": "heuristic", "model": "gcpc-heuristic-v1", "temperature": 0.0, "seed": 0}
SCHEMES = {name: read_scheme(PROMPTS / rel, name=name) for name, rel in AuditSettings().schemes}

INSTRUCTION = """# Quarterly report

1. Read `/data/q3.csv` and parse the `date` column.
2. Calculate the average order value per region.
3. Write the report to `/out/report.md` with one table per region.
4. Verify that every region total matches the ledger within 0.01.
5. Do not modify `/data/q3.csv`.
"""


def _defs(name: str) -> list[tuple[str, str]]:
    return [(c.name, c.definition) for c in SCHEMES[name].categories]


# --- the scheme files ---------------------------------------------------------------------


def test_full_scheme_is_the_five_categories_and_belongs_to_the_audit():
    scheme = read_scheme(PROMPTS / "audit" / "schemes" / "full.md")
    assert scheme.names == ["comprehension", "acquisition", "computation", "construction", "validation"]
    assert not (PROMPTS / "rules" / "categories.md").exists()  # not among the generator's rules


def test_scheme_files_are_checked():
    with pytest.raises(ValueError, match="no category definitions"):
        parse_scheme("just prose", source="x.md")
    with pytest.raises(ValueError, match="more than once"):
        parse_scheme("- **a**: one.\n- **a**: two.\n", source="x.md")


def test_control_schemes_are_what_they_claim():
    full = _defs("full")
    full_defs = [d for _, d in full]
    # reduced: a strict subset of the definitions, copied unchanged, order kept
    reduced = _defs("reduced")
    assert 0 < len(reduced) < len(full)
    assert [pair for pair in full if pair in reduced] == reduced
    # permuted: the same definitions in the same order; every name moved to another definition
    permuted = _defs("permuted")
    assert [d for _, d in permuted] == full_defs
    assert sorted(n for n, _ in permuted) == sorted(n for n, _ in full)
    assert all(pn != fn for (pn, _), (fn, _) in zip(permuted, full, strict=True))
    # irrelevant: no definition, no name and no cue stem in common with the full scheme
    irrelevant = _defs("irrelevant")
    assert not {n for n, _ in irrelevant} & {n for n, _ in full}
    assert not set(cue_index([{"name": n, "definition": d} for n, d in irrelevant])) & set(
        cue_index([{"name": n, "definition": d} for n, d in full]))


# --- the heuristic audit ------------------------------------------------------------------


def _audit(scheme: str, instruction: str = INSTRUCTION, items=()) -> list[dict]:
    return audit_requirements({"instruction": instruction, "items": list(items), "scheme": SCHEMES[scheme].as_input()})["requirements"]


def test_stem_examples():
    assert stem("compute") == stem("computing") == stem("computation") == stem("computed")
    assert stem("verify") == stem("verified") == stem("verification") == stem("verifying")
    assert stem("parse") == stem("parsing") == stem("parses")
    assert stem("formatting") == "format"
    assert stem("ready") != stem("read")


def test_full_scheme_assigns_each_requirement_by_its_earliest_cue():
    reqs = _audit("full")
    assert [r["quote"][:10] for r in reqs] == ["Read `/dat", "Calculate ", "Write the ", "Verify tha", "Do not mod"]
    assert [r["category"] for r in reqs] == ["acquisition", "computation", "construction", "validation", "comprehension"]
    assert all("occurs in the definition" in r["reason"] for r in reqs)


def test_cues_come_from_definitions_not_names():
    scheme = [{"name": "alpha", "definition": "reading files"}, {"name": "computation", "definition": "baking bread"}]
    index = cue_index(scheme)
    assert assign_category("Read the input file", index) == ("alpha", "read")
    assert assign_category("Compute the total", index) == (None, None)  # the name 'computation' is no cue


def test_reduced_scheme_loses_what_only_removed_definitions_covered():
    full, reduced = _audit("full"), _audit("reduced")
    kept = {n for n, _ in _defs("reduced")}
    for f, r in zip(full, reduced, strict=True):
        assert f["quote"] == r["quote"]
        if f["category"] in kept:
            assert r["category"] == f["category"]  # the earliest cue still belongs to the same definition
    lost = [r for r in reduced if r["category"] == "none"]
    assert lost and all(f["category"] not in kept for f, r in zip(full, reduced, strict=True) if r["category"] == "none")


def test_irrelevant_scheme_covers_nothing_here():
    assert [r["category"] for r in _audit("irrelevant")] == ["none"] * 5


def test_permuted_scheme_keeps_coverage_under_the_permuted_names():
    rename = {fn: pn for (fn, _), (pn, _) in zip(_defs("full"), _defs("permuted"), strict=True)}
    full, permuted = _audit("full"), _audit("permuted")
    assert [rename[f["category"]] for f in full] == [p["category"] for p in permuted]


def test_items_cover_requirements_by_overlapping_quotes():
    items = [{"item_id": "i01", "text": "x", "quote": "Calculate the average order value per region."},
             {"item_id": "i02", "text": "y", "quote": "Do not modify"}]
    reqs = _audit("full", items=items)
    assert [r["item_ids"] for r in reqs] == [[], ["i01"], [], [], ["i02"]]


# --- the audit as an LLM request ----------------------------------------------------------


def _checklist(task_id: str, items: list[ChecklistItem], status: str = "frozen") -> Checklist:
    return Checklist(benchmark="demo", task_id=task_id, status=status, items=items, attempts=1, first_attempt_valid=True,
                     provenance=Provenance(provider="heuristic", model="gcpc-heuristic-v1", prompt_hash="p", rules_hash="r")).with_hash()


TASKS = [Task(benchmark="demo", task_id="report", instruction=INSTRUCTION, source_path="tasks/report"),
         Task(benchmark="demo", task_id="other", instruction="Bake nothing. Print `ok` to stdout and exit with status 0.",
              source_path="tasks/other")]
CHECKLISTS = [_checklist("report", [ChecklistItem(item_id="i01", text="t", quote="Calculate the average order value per region.",
                                                  route="generated")]),
              _checklist("other", [], status="failed")]


def test_run_audit_summarises_every_scheme_and_reruns_without_calls(tmp_path, monkeypatch):
    calls = []
    original = HeuristicProvider.complete
    monkeypatch.setattr(HeuristicProvider, "complete", lambda self, r: calls.append(r.purpose) or original(self, r))
    settings = AuditSettings(prompts_dir=PROMPTS)
    summary = run_audit(TASKS, CHECKLISTS, HEURISTIC, settings, tmp_path, progress=False)
    assert sorted(set(calls)) == [f"category_audit:{n}" for n in sorted(SCHEMES)]
    assert len(calls) == len(TASKS) * len(SCHEMES)
    s = summary["schemes"]
    assert s["full"]["n_requirements"] == s["permuted"]["n_requirements"] >= 6
    assert s["full"]["coverage"] == s["permuted"]["coverage"] > s["reduced"]["coverage"] > s["irrelevant"]["coverage"]
    assert s["permuted"]["agreement_with_full_by_definition"] == 1.0 and s["permuted"]["agreement_with_full_by_name"] == 0.0
    assert s["irrelevant"]["coverage"] == 0.0
    # item coverage counts only tasks with a frozen checklist: 'report' has 5 requirements, one covered
    assert (s["full"]["n_requirements_frozen_tasks"], s["full"]["n_covered_by_items"]) == (5, 1)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    n = len(calls)
    run_audit(TASKS, CHECKLISTS, HEURISTIC, settings, tmp_path, progress=False)
    assert len(calls) == n
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    assert "| demo | heuristic / gcpc-heuristic-v1 | permuted |" in coverage_markdown({"demo": summary})


class WrongCategory:
    name = "scripted"

    def complete(self, request):
        return RawResponse(text=json.dumps({"requirements": [
            {"quote": "Do not modify `/data/q3.csv`.", "category": "cooking", "item_ids": []}]}))


def test_audit_answers_outside_the_scheme_are_rejected_and_logged(tmp_path):
    client = LLMClient(WrongCategory(), CallStore(tmp_path / "calls.jsonl"), max_attempts=2, progress=False)
    try:
        audits = audit_tasks(TASKS[:1], CHECKLISTS, {"provider": "scripted", "model": "m"},
                             AuditSettings(prompts_dir=PROMPTS, schemes=(("full", "audit/schemes/full.md"),)), client)
        attempts = client.store.attempts(audits[0].request_key)
    finally:
        client.store.close()
    assert len(audits) == 1 and not audits[0].ok and audits[0].requirements == []
    assert "category 'cooking' is not in scheme full" in audits[0].error
    assert len(attempts) == 2
    with pytest.raises(ValueError, match="call store is closed"):
        client.store.attempts(audits[0].request_key)
