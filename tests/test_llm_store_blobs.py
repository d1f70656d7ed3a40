"""Content-addressed blobs in the call store: a long input is stored once, records refer to it."""

from __future__ import annotations

import gzip
import json

from gcpc.llm.base import CallRecord
from gcpc.llm.store import (BLOB_MIN_CHARS, CallStore, blobs_path, iter_records, packed_blobs_path, read_call_records,
                             read_records)

LOG = "[0] TOOL_OUTPUT (bash):\n" + "line of output\n" * 200


def record(key: str, question: str, log: str = LOG) -> CallRecord:
    request = {"purpose": "judgment:tick", "messages": [{"role": "user", "content": log + question}],
               "inputs": {"question": question, "events": [{"index": 0, "text": log}]}}
    return CallRecord(key=key, attempt=1, purpose="judgment:tick", provider="heuristic", model="m", request=request,
                      response_text="{}", parsed={}, ok=True)


def test_long_strings_stored_once_and_resolved(tmp_path):
    path = tmp_path / "llm_calls.jsonl"
    with CallStore(path) as store:
        for n in range(8):  # eight TICK questions over one log
            store.append(record(f"k{n}", f"Q{n}?"))
    blob_lines = blobs_path(path).read_text().splitlines()
    # the shared event text once, plus one message per question (log + question differ)
    assert len(blob_lines) == 1 + 8
    assert path.read_text().count("line of output") == 0
    assert sum(line.count("line of output") for line in blob_lines) == 200 * 9
    again = CallStore(path)
    assert again.finished("k3").request == record("k3", "Q3?").request
    again.close()
    assert [r["request"] for r in read_call_records(path)] == [record(f"k{n}", f"Q{n}?").request for n in range(8)]


def test_read_records_resolves_blobs(tmp_path):
    # usage summaries read call files through read_records: they must see full requests, not references
    path = tmp_path / "llm_calls.jsonl"
    with CallStore(path) as store:
        store.append(record("a", "Q?"))
    assert "$blob" in path.read_text()
    assert [r.request for r in read_records(path)] == [record("a", "Q?").request]


def test_compact_keeps_only_used_blobs(tmp_path):
    path = tmp_path / "llm_calls.jsonl"
    store = CallStore(path)
    store.append(record("a", "?", log="x" * BLOB_MIN_CHARS))
    store.append(record("b", "?", log="y" * BLOB_MIN_CHARS))
    store.compact({"b"})
    store.close()
    assert not blobs_path(path).exists()  # packed: the plain file goes
    texts = [json.loads(line)["text"] for line in gzip.decompress(packed_blobs_path(path).read_bytes()).decode().splitlines()]
    assert all("x" * 100 not in t for t in texts) and any("y" * 100 in t for t in texts)
    assert CallStore(path).finished("b").request["inputs"]["events"][0]["text"] == "y" * BLOB_MIN_CHARS


def test_missing_blob_is_an_error_naming_the_file(tmp_path):
    path = tmp_path / "llm_calls.jsonl"
    with CallStore(path) as store:
        store.append(record("a", "?"))
    blobs_path(path).write_text("")
    try:
        CallStore(path)
    except ValueError as exc:
        assert str(path) in str(exc) and "blob" in str(exc)
    else:
        raise AssertionError("a record referring to a missing blob must not load")


def test_packed_blobs_are_deterministic_and_the_plain_lines_gzipped(tmp_path):
    """compact packs the plain blob lines, byte for byte, into a gzip file with no name or time."""
    outs = []
    for run in ("one", "two"):
        path = tmp_path / run / "llm_calls.jsonl"
        with CallStore(path) as store:
            for n in range(3):
                store.append(record(f"k{n}", f"Q{n}?"))
            plain = blobs_path(path).read_bytes()
            store.compact({"k0", "k1", "k2"})
        outs.append(packed_blobs_path(path).read_bytes())
        assert gzip.decompress(outs[-1]) == b"".join(sorted(plain.splitlines(keepends=True)))
    assert outs[0] == outs[1] and outs[0][4:8] == b"\0\0\0\0"  # mtime 0


def test_resume_after_compact_reads_packed_and_plain_blobs(tmp_path):
    """A re-run after a compacted run: old texts come from the packed file, new ones go to the plain file."""
    path = tmp_path / "llm_calls.jsonl"
    with CallStore(path) as store:
        store.append(record("a", "Qa?"))
        store.compact({"a"})
    with CallStore(path) as store:
        assert store.finished("a").request == record("a", "Qa?").request
        store.append(record("b", "Qb?", log=LOG + "more\n"))
        assert blobs_path(path).exists() and packed_blobs_path(path).exists()
    # killed before compact: both files are read
    assert [r["request"] for r in read_call_records(path)] == [record("a", "Qa?").request,
                                                              record("b", "Qb?", log=LOG + "more\n").request]
    with CallStore(path) as store:
        store.compact({"b"})
    assert not blobs_path(path).exists()
    assert [r.key for r in iter_records(path)] == ["b"]
    assert CallStore(path).finished("b").request == record("b", "Qb?", log=LOG + "more\n").request


def test_store_holds_an_index_not_the_records(tmp_path):
    """Attempts are read back from the file on demand: the store keeps offsets and outcomes only."""
    path = tmp_path / "llm_calls.jsonl"
    with CallStore(path) as store:
        store.append(record("a", "?"))
        store.append(record("b", "?").model_copy(update={"ok": False, "parsed": None, "error": "invalid output: x"}))
    store = CallStore(path)
    assert not any(isinstance(v, CallRecord) for v in vars(store).values())
    (b,) = store.outcomes("b")
    assert (b.attempt, b.ok, b.error) == (1, False, "invalid output: x")
    assert store.attempts("b")[0].request == record("b", "?").request and store.finished("b") is None
    store.close()


def test_corrupt_packed_blob_file_is_an_error_naming_it(tmp_path):
    path = tmp_path / "llm_calls.jsonl"
    with CallStore(path) as store:
        store.append(record("a", "?"))
        store.compact({"a"})
    packed = packed_blobs_path(path)
    packed.write_bytes(packed.read_bytes()[:-12])
    try:
        CallStore(path)
    except ValueError as exc:
        assert str(packed) in str(exc)
    else:
        raise AssertionError("a truncated packed blob file must not load")
