"""Issue 38, problems 4, 5, 7, 8, 9: what a newcomer's second hour runs into (README, configs, report).

Each test here failed on 1da41f9. Cheap checks (no pipeline run) except where stated.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from gcpc.params import load_params

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


# --- problem 7: the Transfer table only where the report's data is the transfer sets ------------------------

def test_transfer_table_is_left_out_of_a_report_on_other_data():
    from gcpc.report.build import transfer_applies

    params = load_params(ROOT / "params.yaml")  # the demo
    shown, why = transfer_applies(params)
    assert not shown and "not on this report's data (`demo`" in why and "SkillsBench v1.1" in why
    own = params | {"data": {"name": "mydata", "benchmark": "mydata", "root": "data/mine"}}
    assert transfer_applies(own)[0] is False
    real = params | {"data": {"name": "skillsbench", "benchmark": "skillsbench"}}
    assert transfer_applies(real) == (True, "")
    both = params | {"data": {"name": "shared-all", "corpora": [{"benchmark": "skillsbench"},
                                                               {"benchmark": "terminal-bench-2"}]}}
    assert transfer_applies(both)[0] is True
    mixed = params | {"data": {"name": "m", "corpora": [{"benchmark": "skillsbench"}, {"benchmark": "mine"}]}}
    assert transfer_applies(mixed)[0] is False


def test_report_stage_declares_what_transfer_applies_reads():
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    declared = stages["report"]["params"]
    assert "data" in declared and "transfer.benchmarks" in declared


# --- problem 8: the demo corpus named as the demo ------------------------------------------------------------

def test_the_demo_corpus_is_labelled_demo_not_skillsbench():
    demo = yaml.safe_load((ROOT / "conf" / "data" / "demo.yaml").read_text(encoding="utf-8"))
    assert demo["benchmark"] == "demo"
    assert load_params(ROOT / "params.yaml")["data"]["benchmark"] == "demo"
    smoke = yaml.safe_load((ROOT / "conf" / "data" / "smoke.yaml").read_text(encoding="utf-8"))
    assert all(t.startswith("demo/") for t in smoke["population"]["trajectories"])
    text = (ROOT / "data" / "demo" / "make_annotations.py").read_text(encoding="utf-8")
    assert re.search(r'^BENCHMARK = "demo"', text, re.M)
    # no document shows a demo trajectory id under the SkillsBench label
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        body = doc.read_text(encoding="utf-8")
        assert not re.search(r"skillsbench/(with|without)(skills)?-claude-code/[a-z-]+__", body), doc
