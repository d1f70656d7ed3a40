"""Line-oriented, DVC-tracked record of every LLM attempt; doubles as the resume cache.

Records are appended and flushed as they arrive, so an interrupted stage loses nothing and a
re-run answers finished requests from the file. When a stage completes, `compact` rewrites the
file with exactly the records of the requests that stage used, sorted, so outputs are byte-stable.

A process killed in the middle of an append can leave a last line without its newline; on
opening, such a torn tail is cut off (that attempt is simply made again). Every line passes
through `secrets.redact` before it is written, so no API key can reach the file.

Large inputs are stored once per store, content-addressed: in a record's `request`, every string
of at least `BLOB_MIN_CHARS` characters (the rendered log in `messages`, long event texts in
`inputs.events`) is written as `{"$blob": sha256}`, and the response schema and the event list as
`{"$blob_json": sha256}` (their canonical JSON), and its text once to `<name>.blobs.jsonl`
beside the call file (one `{"hash", "text"}` line per distinct text; written before the record
that refers to it, compacted with it). Reading resolves the references, so callers see full records.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import defaultdict
from pathlib import Path

from gcpc.io import canonical_json, sha256_text
from gcpc.llm.base import CallRecord
from gcpc.llm.secrets import redact


REFUSED = "refused: "
"""Error prefix of an attempt the provider refused (see `RequestRefused`): the request's final outcome."""


def is_refusal(record: CallRecord) -> bool:
    return not record.ok and (record.error or "").startswith(REFUSED)


BLOB_MIN_CHARS = 256
BLOB_REF = "$blob"
JSON_BLOB_REF = "$blob_json"
JSON_BLOB_KEYS = ("json_schema", "events")
"""Values stored whole as one JSON blob: the response schema, and the judge-visible events (the same for
every question and pass over one trajectory)."""


def blobs_path(path: Path) -> Path:
    return path.with_name(path.stem + ".blobs.jsonl")


def _externalize(value: object, blobs: dict[str, str]) -> object:
    """`value` with every long string replaced by a blob reference (texts collected in `blobs`)."""
    if isinstance(value, str):
        if len(value) < BLOB_MIN_CHARS:
            return value
        text = redact(value)
        digest = sha256_text(text)
        blobs[digest] = text
        return {BLOB_REF: digest}
    if isinstance(value, dict):
        return {k: _externalize_json(v, blobs) if k in JSON_BLOB_KEYS else _externalize(v, blobs) for k, v in value.items()}
    if isinstance(value, list):
        return [_externalize(v, blobs) for v in value]
    return value


def _externalize_json(value: object, blobs: dict[str, str]) -> object:
    """A value shared by many requests (`JSON_BLOB_KEYS`) as one blob of its canonical JSON."""
    text = redact(canonical_json(value))
    if len(text) < BLOB_MIN_CHARS:
        return value
    digest = sha256_text(text)
    blobs[digest] = text
    return {JSON_BLOB_REF: digest}


def _resolve(value: object, blobs: dict[str, str], where: str) -> object:
    if isinstance(value, dict):
        if len(value) == 1 and (BLOB_REF in value or JSON_BLOB_REF in value):
            digest = value.get(BLOB_REF) or value[JSON_BLOB_REF]
            if digest not in blobs:
                raise ValueError(f"{where}: refers to blob {digest} that is not in the blob file")
            return blobs[digest] if BLOB_REF in value else json.loads(blobs[digest])
        return {k: _resolve(v, blobs, where) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, blobs, where) for v in value]
    return value


def _split(record: CallRecord) -> tuple[str, dict[str, str]]:
    """(the record's line with its request's long strings as references, the referenced texts)."""
    blobs: dict[str, str] = {}
    data = record.model_dump(mode="json")
    data["request"] = _externalize(data["request"], blobs)
    return redact(canonical_json(data)) + "\n", blobs


def _blob_line(digest: str, text: str) -> str:
    return canonical_json({"hash": digest, "text": text}) + "\n"


def _line(record: CallRecord) -> str:
    return _split(record)[0]


def read_records(path: str | Path) -> list[CallRecord]:
    """Every record of a call file, read only, blob references resolved (usage summaries and checks;
    no torn-tail repair)."""
    path = Path(path)
    if not path.exists():
        return []
    out = []
    for i, data in enumerate(read_call_records(path), 1):
        try:
            out.append(CallRecord.model_validate(data))
        except Exception as exc:
            raise ValueError(f"{path}: record {i} is not a valid call record: {exc}") from exc
    return out


class CallStore:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._records: dict[str, list[CallRecord]] = defaultdict(list)
        self._blobs: dict[str, str] = {}
        self.blobs_path = blobs_path(self.path)
        if self.blobs_path.exists():
            self._load_blobs()
        if self.path.exists():
            self._load()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._bh = self.blobs_path.open("a", encoding="utf-8", newline="\n")
        self._fh = self.path.open("a", encoding="utf-8", newline="\n")

    def _load_blobs(self) -> None:
        data = self.blobs_path.read_bytes()
        lines = data.split(b"\n")
        torn = lines.pop() if lines else b""
        if torn.strip():  # a blob line cut short: its record was never written after it
            with self.blobs_path.open("r+b") as fh:
                fh.truncate(len(data) - len(torn))
        for i, raw in enumerate(lines, 1):
            if not raw.strip():
                continue
            try:
                entry = json.loads(raw)
                self._blobs[entry["hash"]] = entry["text"]
            except Exception as exc:
                raise ValueError(f"{self.blobs_path}: line {i} is not a blob record ({{hash, text}}): {exc}") from exc

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
                data = json.loads(raw)
                data["request"] = _resolve(data.get("request", {}), self._blobs, f"{self.path}: record {i}")
                record = CallRecord.model_validate(data)
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
        line, blobs = _split(record)
        fresh = [(d, t) for d, t in sorted(blobs.items()) if d not in self._blobs]
        if fresh:  # texts first: a record never refers to a blob that is not on disk
            self._bh.write("".join(_blob_line(d, t) for d, t in fresh))
            self._bh.flush()
            self._blobs.update(fresh)
        self._fh.write(line)
        self._fh.flush()

    def compact(self, keys: set[str]) -> None:
        """Keep exactly the attempts of the requests this run used, in a stable order."""
        self._fh.close()
        self._bh.close()
        kept = sorted(
            (r for k in keys for r in self._records.get(k, [])),
            key=lambda r: (r.key, r.attempt),
        )
        lines: list[str] = []
        used: dict[str, str] = {}
        for record in kept:
            line, blobs = _split(record)
            lines.append(line)
            used.update(blobs)
        # blobs first (a record never refers to a missing blob); unique temporary names: two
        # processes on one workspace never write the same file
        self._replace(self.blobs_path, [_blob_line(d, used[d]) for d in sorted(used)])
        self._replace(self.path, lines)
        self._blobs = used
        self._bh = self.blobs_path.open("a", encoding="utf-8", newline="\n")
        self._fh = self.path.open("a", encoding="utf-8", newline="\n")

    @staticmethod
    def _replace(path: Path, lines: list[str]) -> None:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.writelines(lines)
        os.replace(tmp, path)

    def close(self) -> None:
        self._fh.close()
        self._bh.close()

    def __enter__(self) -> CallStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_call_records(path: str | Path) -> list[dict]:
    """A call file's records as plain dicts, blob references resolved (what the file means, for readers outside CallStore)."""
    path = Path(path)
    bp = blobs_path(path)
    blobs: dict[str, str] = {}
    if bp.exists():
        for raw in bp.read_text(encoding="utf-8").split("\n"):
            if raw.strip():
                entry = json.loads(raw)
                blobs[entry["hash"]] = entry["text"]
    out = []
    for i, raw in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        if raw.strip():
            try:
                data = json.loads(raw)
            except ValueError as exc:
                raise ValueError(f"{path}: record {i} is not a valid call record: {exc}") from exc
            data["request"] = _resolve(data.get("request", {}), blobs, f"{path}: record {i}")
            out.append(data)
    return out
