"""Reply validation: one compiled validator per schema, and jsonschema without its optional IRI-format
checker (whose import built 39 Earley grammars, seconds per judge stage; issue 29's profile)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gcpc.llm.schemas import _validator, checklist_judgment_schema, schema_errors, tick_answer_schema

ROOT = Path(__file__).resolve().parents[1]


def test_errors_are_those_of_a_fresh_validator():
    import jsonschema

    schema = checklist_judgment_schema(["i01", "i02"])
    bad = {"verdicts": [{"item_id": "i03", "label": "Maybe", "evidence": [], "reason": "x" * 700}]}
    fresh = jsonschema.Draft202012Validator(schema)
    assert len(schema_errors(bad, schema, limit=50)) == len(list(fresh.iter_errors(bad))) >= 3
    assert schema_errors({"reasoning": "ok", "verdict": "YES"}, tick_answer_schema()) == []
    assert _validator.cache_info().currsize >= 2
    before = _validator.cache_info().hits
    schema_errors({"reasoning": "ok", "verdict": "NO"}, dict(reversed(list(tick_answer_schema().items()))))
    assert _validator.cache_info().hits == before + 1  # the same schema in another key order: compiled once


def test_validation_does_not_import_the_iri_grammar_but_it_stays_importable():
    code = ("import sys\n"
            "from gcpc.llm.schemas import schema_errors, tick_answer_schema\n"
            "assert schema_errors({'reasoning': 'r', 'verdict': 'MAYBE'}, tick_answer_schema())\n"
            "assert 'rfc3987_syntax' not in sys.modules  # not imported, and no blocking entry left behind\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
