"""Trajectory metadata without the events: `trajectory_meta.parquet`, written by ingest beside trajectories.jsonl.

The analyses that need only who, what and how it ended (RQ2 resolving annotated trial paths, RQ3
pairing with/without-skills trials) read this table instead of trajectories.jsonl, whose events are
gigabytes at the paper's scale; and they do not re-run when only the events' rendering changes.
One row per trajectory, in trajectory-id order, every column a string (missing: null).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

META_KEYS = ("trajectory_id", "benchmark", "task_id", "harness", "model", "condition", "source", "trial", "source_path")
META_COLUMNS = (*META_KEYS, "outcome")
"""The columns: the trajectory's identifying fields, and `outcome` = its official outcome status."""

FILE_NAME = "trajectory_meta.parquet"


def meta_row(trajectory: Any) -> dict[str, str | None]:
    """The table row of a Trajectory (or of its JSON dict, as trajectories.jsonl holds it)."""
    rec = trajectory if isinstance(trajectory, dict) else trajectory.model_dump(mode="json", exclude={"events"})
    row: dict[str, str | None] = {k: (None if rec.get(k) is None else str(rec[k])) for k in META_KEYS}
    status = (rec.get("outcome") or {}).get("status")
    row["outcome"] = None if status is None else str(status)
    return row


def write_trajectory_meta(path: str | Path, trajectories: Iterable[Any]) -> int:
    """Write the table (rows sorted by trajectory id); returns the number of rows. Byte-deterministic."""
    import pyarrow as pa

    from gcpc.io import write_parquet

    rows = sorted((meta_row(t) for t in trajectories), key=lambda r: r["trajectory_id"] or "")
    table = pa.table({c: pa.array([r[c] for r in rows], type=pa.string()) for c in META_COLUMNS})
    write_parquet(path, table, compression="zstd")
    return len(rows)


def read_trajectory_meta_table(path: str | Path) -> Any:
    """The table as a DataFrame (columns META_COLUMNS); a missing column is an error naming the file."""
    import pandas as pd

    from gcpc.io import verify_output

    frame = pd.read_parquet(verify_output(path))  # checked against the ingest's stage manifest
    missing = [c for c in META_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: column(s) {', '.join(missing)} missing; re-run the ingest stage")
    return frame[list(META_COLUMNS)]
