"""Human annotations for RQ2: reading, validating and resolving them (format in docs/annotations.md).

One record per line (JSONL) or per row (CSV), distinguished by `question`:

* `Q1`, `Q1b`  progress rating 0-10 of one trajectory by one annotator  (trajectory, annotator, rating)
* `Q2`         pairwise preference within one task                     (task_id, annotator, a, b, preferred)
* `Q3`         one checklist criterion labelled for one trajectory      (trajectory, annotator, item_id, label)

plus at most one header record `{"meta": {...}}` (JSONL only) describing the study; a file written
for demonstration says `"illustrative": true` there. Trajectories are referred to by their
trajectory id or by their trial folder path relative to the data root (the ingest `source_path`).
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

PROGRESS = ("Q1", "Q1b")
PREFERENCE = "Q2"
CRITERION = "Q3"
QUESTIONS = (*PROGRESS, PREFERENCE, CRITERION)
PREFERRED = ("a", "b", "tie")
CRITERION_LABELS = ("Yes", "No", "Abstain")
RATING_RANGE = (0.0, 10.0)
CSV_COLUMNS = ("question", "annotator", "trajectory", "rating", "task_id", "a", "b", "preferred", "item_id", "label",
               "checklist_hash")


@dataclass
class Annotations:
    """Validated annotation records as frames (trajectory references still unresolved)."""

    path: str
    meta: dict[str, Any] = field(default_factory=dict)
    progress: pd.DataFrame = field(default_factory=pd.DataFrame)   # question, trajectory, annotator, rating, line
    preferences: pd.DataFrame = field(default_factory=pd.DataFrame)  # task_id, annotator, a, b, preferred, line
    criteria: pd.DataFrame = field(default_factory=pd.DataFrame)    # trajectory, annotator, item_id, label, checklist_hash, line

    @property
    def illustrative(self) -> bool:
        return bool(self.meta.get("illustrative", False))

    @property
    def n_records(self) -> int:
        return len(self.progress) + len(self.preferences) + len(self.criteria)


def _err(path: Path, line: int, msg: str) -> ValueError:
    return ValueError(f"{path}:{line}: {msg}")


def _text(rec: dict[str, Any], key: str, path: Path, line: int) -> str:
    val = rec.get(key)
    if val is None or (isinstance(val, float) and math.isnan(val)) or str(val).strip() == "":
        raise _err(path, line, f"field '{key}' is required for question {rec.get('question')!r}")
    return str(val).strip()


def _records(path: Path) -> list[tuple[int, dict[str, Any]]]:
    if path.suffix.lower() == ".csv":
        with path.open(encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh)
            unknown = [c for c in (reader.fieldnames or []) if c not in CSV_COLUMNS]
            if unknown:
                raise ValueError(f"{path}: unknown column(s) {unknown} (known: {', '.join(CSV_COLUMNS)})")
            return [(i, {k: v for k, v in row.items() if v not in (None, "")}) for i, row in enumerate(reader, 2)]
    if path.suffix.lower() not in (".jsonl", ".ndjson"):
        raise ValueError(f"{path}: annotation files are .jsonl or .csv")
    out = []
    with path.open(encoding="utf-8") as fh:
        for i, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise _err(path, i, f"invalid JSON ({exc.msg})") from exc
            if not isinstance(rec, dict):
                raise _err(path, i, "each line must be a JSON object")
            out.append((i, rec))
    return out


def read_annotations(path: str | Path) -> Annotations:
    """Read and validate an annotation file; every problem names the file, line and field."""
    path = Path(path)
    meta: dict[str, Any] = {}
    seen_meta = False
    progress, prefs, crits = [], [], []
    for line, rec in _records(path):
        if "meta" in rec:
            if seen_meta:
                raise _err(path, line, "more than one meta record")
            seen_meta = True
            if set(rec) != {"meta"} or not isinstance(rec["meta"], dict):
                raise _err(path, line, "a meta record is {\"meta\": {...}} and nothing else")
            meta = rec["meta"]
            continue
        q = rec.get("question")
        if q not in QUESTIONS:
            raise _err(path, line, f"field 'question' must be one of {', '.join(QUESTIONS)}, got {q!r}")
        annotator = _text(rec, "annotator", path, line)
        if q in PROGRESS:
            raw = rec.get("rating")
            try:
                rating = float(raw)
            except (TypeError, ValueError):
                raise _err(path, line, f"field 'rating' must be a number from 0 to 10, got {raw!r}") from None
            if not (RATING_RANGE[0] <= rating <= RATING_RANGE[1]):
                raise _err(path, line, f"field 'rating' must be within 0-10, got {rating:g}")
            progress.append({"question": q, "trajectory": _text(rec, "trajectory", path, line), "annotator": annotator,
                             "rating": rating, "line": line})
        elif q == PREFERENCE:
            a, b = _text(rec, "a", path, line), _text(rec, "b", path, line)
            if a == b:
                raise _err(path, line, "fields 'a' and 'b' name the same trajectory")
            preferred = _text(rec, "preferred", path, line)
            if preferred not in PREFERRED:
                raise _err(path, line, f"field 'preferred' must be 'a', 'b' or 'tie', got {preferred!r}")
            prefs.append({"task_id": _text(rec, "task_id", path, line), "annotator": annotator, "a": a, "b": b,
                          "preferred": preferred, "line": line})
        else:
            label = _text(rec, "label", path, line)
            if label not in CRITERION_LABELS:
                raise _err(path, line, f"field 'label' must be one of {', '.join(CRITERION_LABELS)}, got {label!r}")
            h = rec.get("checklist_hash")
            crits.append({"trajectory": _text(rec, "trajectory", path, line), "annotator": annotator,
                          "item_id": _text(rec, "item_id", path, line), "label": label,
                          "checklist_hash": str(h) if h not in (None, "") else None, "line": line})
    ann = Annotations(
        path=str(path), meta=meta,
        progress=pd.DataFrame(progress, columns=["question", "trajectory", "annotator", "rating", "line"]),
        preferences=pd.DataFrame(prefs, columns=["task_id", "annotator", "a", "b", "preferred", "line"]),
        criteria=pd.DataFrame(crits, columns=["trajectory", "annotator", "item_id", "label", "checklist_hash", "line"]),
    )
    for frame, keys, what in ((ann.progress, ["question", "trajectory", "annotator"], "rating"),
                              (ann.criteria, ["trajectory", "item_id", "annotator"], "label")):
        dup = frame.duplicated(keys, keep="first")
        if dup.any():
            r = frame[dup].iloc[0]
            raise _err(path, int(r["line"]), f"second {what} for the same ({', '.join(keys)}): "
                                             f"{', '.join(str(r[k]) for k in keys)}")
    return ann


class TrajectoryResolver:
    """Maps a reference (trajectory id, or trial path relative to the data root) to a trajectory id."""

    def __init__(self, trajectory_ids: list[str], source_paths: dict[str, str] | None = None):
        self.ids = set(trajectory_ids)
        self.by_path: dict[str, str] = {}
        self.by_suffix: dict[str, list[str]] = {}
        for path, tid in (source_paths or {}).items():
            if tid not in self.ids:
                continue
            norm = path.strip("/")
            self.by_path[norm] = tid
            parts = norm.split("/")
            for i in range(len(parts)):
                self.by_suffix.setdefault("/".join(parts[i:]), []).append(tid)

    def resolve(self, ref: str) -> tuple[str | None, str | None]:
        """(trajectory id, None) or (None, reason)."""
        if ref in self.ids:
            return ref, None
        norm = ref.strip("/")
        if norm in self.by_path:
            return self.by_path[norm], None
        hits = sorted(set(self.by_suffix.get(norm, [])))
        if len(hits) == 1:
            return hits[0], None
        if len(hits) > 1:
            return None, f"ambiguous trajectory reference '{ref}' ({len(hits)} matches)"
        return None, f"trajectory '{ref}' is not in the scored population"
