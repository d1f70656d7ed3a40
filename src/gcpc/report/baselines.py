"""Report sections for the baselines a skeptic asks for first: item-level validity (a headline, before
RQ1) and each arm beside the outcome-blind floors (in RQ1). Kept apart from build.py so the report's
main assembly stays one readable function; numbers come from floors.json / item_validity.json only."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from gcpc.analysis import floors, item_validity


def _load(analyze_dir: Path, name: str, stage: str) -> dict:
    path = analyze_dir / f"{name}.json"
    if not path.exists():
        raise FileNotFoundError(f"{path}: not found (run the {stage} stage first)")
    return json.loads(path.read_text(encoding="utf-8"))


def validity_section(analyze_dir: Path, fig_dir: Path, embed: Callable[[Path, str], str]) -> list[str]:
    result = _load(analyze_dir, "item_validity", "item_validity")
    return ["## Item-level validity: do item labels agree with the verifier's own tests?", "",
            "The measurement an outcome-blind floor cannot fake: decided labels of assertion-route items against the "
            "per-test results of the tests they reference (definitions: docs/floors.md).", "",
            *item_validity.report_lines(result), "", embed(fig_dir, "item_validity.md"), ""]


def floors_section(analyze_dir: Path, fig_dir: Path, embed: Callable[[Path, str], str]) -> list[str]:
    result = _load(analyze_dir, "floors", "floors")
    return ["### Beside the outcome-blind floors", "",
            "Does any arm know more than the log's exit codes, length or last lines? Each arm's plain score against the "
            "best floor (no model, same judge-visible log) on the same trajectories:", "",
            *floors.report_lines(result), "", embed(fig_dir, "rq1_floors.md"), ""]
