"""Line-oriented, DVC-tracked record of every LLM attempt; doubles as the resume cache.

Records are appended and flushed as they arrive, so an interrupted stage loses nothing and a
re-run answers finished requests from the file. When a stage completes, `compact` rewrites the
file with exactly the records of the requests that stage used, sorted, so outputs are byte-stable.

A process killed in the middle of an append can leave a last line without its newline; on
opening, such a torn tail is cut off (that attempt is simply made again). Every line passes
through `secrets.redact` before it is written, so no API key can reach the file.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import defaultdict
from pathlib import Path

from gcpc.io import canonical_json
from gcpc.llm.base import CallRecord
from gcpc.llm.secrets import redact


REFUSED = "refused: "
"""Error prefix of an attempt the provider refused (see `RequestRefused`): the request's final outcome."""


def is_refusal(record: CallRecord) -> bool:
    return not record.ok and (record.error or "").startswith(REFUSED)


def _line(record: CallRecord) -> str:
    return redact(canonical_json(record)) + "\n"


def read_records(path: str | Path) -> list[CallRecord]:
    """Every record of a call file, read only (usage summaries and checks; no torn-tail repair)."""
    path = Path(path)
    if not path.exists():
        return []
    out = []
    for i, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip():
            continue
        try:
            out.append(CallRecord.model_validate(json.loads(raw)))
        except Exception as exc:
            raise ValueError(f"{path}: record {i} is not a valid call record: {exc}") from exc
    return out


class CallStore:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._records: dict[str, list[CallRecord]] = defaultdict(list)
        if self.path.exists():
            self._load()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.path.open("a", encoding="utf-8", newline="\n")

    def _load(self) -> None:
        data = self.path.read_bytes()
        lines = data.split(b"\n")
        torn = lines.pop() if lines else b""  # text after the last newline: empty unless an append was cut short
        if torn.strip():
            try:
                json.loads(torn)
                lines.append(torn)  # a complete record that only lacks its newline
                with self.path.open("ab") as fh:
                    fh.write(b"\n")
            except ValueError:
                with self.path.open("r+b") as fh:  # drop the torn tail; that attempt will be made again
                    fh.truncate(len(data) - len(torn))
        for i, raw in enumerate(lines, 1):
            if not raw.strip():
                continue
            try:
                record = CallRecord.model_validate(json.loads(raw))
            except Exception as exc:
                raise ValueError(f"{self.path}: record {i} is not a valid call record: {exc}") from exc
            self._records[record.key].append(record)

    def finished(self, key: str) -> CallRecord | None:
        """The successful record for a request, if one was already made."""
        for record in self._records.get(key, []):
            if record.ok:
                return record
        return None

    def refusal(self, key: str) -> CallRecord | None:
        """The provider's recorded refusal of a request (its last attempt), if it has no answer."""
        records = self._records.get(key, [])
        if records and not any(r.ok for r in records) and is_refusal(records[-1]):
            return records[-1]
        return None

    def adopt(self, records: list[CallRecord]) -> list[CallRecord]:
        """Copy a request's attempts from the shared cache into this store (numbered after any held here)."""
        if not records:
            return []
        held = self._records.get(records[0].key, [])
        if held:
            # this store already tried the request: keep its attempts and add the final one after them
            records = [records[-1].model_copy(update={"attempt": max(r.attempt for r in held) + 1})]
        for record in records:
            self.append(record)
        return records

    def attempts(self, key: str) -> list[CallRecord]:
        return list(self._records.get(key, []))

    def records(self) -> list[CallRecord]:
        """Every record held, in (key, attempt) order."""
        return sorted((r for rs in self._records.values() for r in rs), key=lambda r: (r.key, r.attempt))

    def append(self, record: CallRecord) -> None:
        self._records[record.key].append(record)
        self._fh.write(_line(record))
        self._fh.flush()

    def compact(self, keys: set[str]) -> None:
        """Keep exactly the attempts of the requests this run used, in a stable order."""
        self._fh.close()
        kept = sorted(
            (r for k in keys for r in self._records.get(k, [])),
            key=lambda r: (r.key, r.attempt),
        )
        # a unique temporary name: two processes on one workspace never write the same file
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            for record in kept:
                fh.write(_line(record))
        os.replace(tmp, self.path)
        self._fh = self.path.open("a", encoding="utf-8", newline="\n")

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> CallStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
