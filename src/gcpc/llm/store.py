"""Line-oriented, DVC-tracked record of every LLM attempt; doubles as the resume cache.

Records are appended and flushed as they arrive, so an interrupted stage loses nothing and a
re-run answers finished requests from the file. When a stage completes, `compact` rewrites the
file with exactly the records of the requests that stage used, sorted, so outputs are byte-stable.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from gcpc.io import canonical_json, iter_jsonl
from gcpc.llm.base import CallRecord


class CallStore:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._records: dict[str, list[CallRecord]] = defaultdict(list)
        if self.path.exists():
            for i, rec in enumerate(iter_jsonl(self.path), 1):
                try:
                    record = CallRecord.model_validate(rec)
                except Exception as exc:
                    raise ValueError(f"{self.path}: record {i} is not a valid call record: {exc}") from exc
                self._records[record.key].append(record)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.path.open("a", encoding="utf-8", newline="\n")

    def finished(self, key: str) -> CallRecord | None:
        """The successful record for a request, if one was already made."""
        for record in self._records.get(key, []):
            if record.ok:
                return record
        return None

    def attempts(self, key: str) -> list[CallRecord]:
        return list(self._records.get(key, []))

    def append(self, record: CallRecord) -> None:
        self._records[record.key].append(record)
        self._fh.write(canonical_json(record) + "\n")
        self._fh.flush()

    def compact(self, keys: set[str]) -> None:
        """Keep exactly the attempts of the requests this run used, in a stable order."""
        self._fh.close()
        kept = sorted(
            (r for k in keys for r in self._records.get(k, [])),
            key=lambda r: (r.key, r.attempt),
        )
        tmp = self.path.with_suffix(".tmp")
        with tmp.open("w", encoding="utf-8", newline="\n") as fh:
            for record in kept:
                fh.write(canonical_json(record) + "\n")
        tmp.replace(self.path)
        self._fh = self.path.open("a", encoding="utf-8", newline="\n")

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> CallStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
