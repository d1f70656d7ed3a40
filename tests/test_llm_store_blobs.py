"""Content-addressed blobs in the call store: a long input is stored once, records refer to it."""

from __future__ import annotations

import json

from gcpc.llm.base import CallRecord
from gcpc.llm.store import BLOB_MIN_CHARS, CallStore, blobs_path, read_call_records, read_records

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
    texts = [json.loads(line)["text"] for line in blobs_path(path).read_text().splitlines()]
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
