"""read_trajectory_meta parses each trajectories.jsonl line around its events; it must equal a whole parse."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from gcpc.analysis.common import read_trajectory_meta
from gcpc.corpus.meta import META_KEYS
from gcpc.corpus.models import Event, EventKind, Outcome, SourceRef, Trajectory
from gcpc.io import write_jsonl

ROOT = Path(__file__).resolve().parents[1]


def whole_parse(path: Path) -> pd.DataFrame:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            rec = json.loads(line)
            rows.append({**{k: rec.get(k) for k in META_KEYS}, "outcome": rec["outcome"]["status"]})
    return pd.DataFrame(rows, columns=[*META_KEYS, "outcome"])


def traj(tid: str, texts: list[str], **over) -> Trajectory:
    events = [Event(index=i, kind=EventKind.TOOL_OUTPUT, text=t, source=SourceRef(path="log.txt", line=i + 1))
              for i, t in enumerate(texts)]
    fields = dict(trajectory_id=tid, benchmark="b", task_id="t", harness="h", model="m", condition="with_skills",
                  source="run", trial=tid, outcome=Outcome(status="FAIL"), test_results={"events": "passed"},
                  events=events, source_path=f"runs/{tid}", notes=['],"harness":"fake"', ',"events":['])
    return Trajectory(**(fields | over))


def test_markers_inside_strings_keys_and_empty_events(tmp_path):
    hostile = ['],"harness":"evil"', ',"events":[{"kind":"x"}]', '\\"],"harness":\\"', "plain"]
    rows = [traj("a", hostile), traj("b", []), traj("c", ["x"], harness='p],"harness":"q', source_path='s],"harness":')]
    path = tmp_path / "trajectories.jsonl"
    write_jsonl(path, rows)
    got = read_trajectory_meta(path)
    pd.testing.assert_frame_equal(got, whole_parse(path))
    assert got["harness"].tolist() == ["h", "h", 'p],"harness":"q'] and got["source_path"].iloc[2] == 's],"harness":'
    # the canonical layout is what the fast path reads: the marker is in every line
    from gcpc.analysis.common import _AFTER_EVENTS

    assert _AFTER_EVENTS == b'],"harness":' and all(_AFTER_EVENTS in line for line in path.read_bytes().splitlines())


def test_other_layouts_are_parsed_whole(tmp_path):
    path = tmp_path / "trajectories.jsonl"
    rec = json.loads(traj("a", ["x"]).model_dump_json())
    # keys in another order and pretty separators: the markers are absent, the line is parsed whole
    path.write_text(json.dumps(dict(reversed(list(rec.items())))) + "\n", encoding="utf-8")
    pd.testing.assert_frame_equal(read_trajectory_meta(path), whole_parse(path))


def test_bad_lines_name_the_file_and_line(tmp_path):
    path = tmp_path / "trajectories.jsonl"
    path.write_text(traj("a", ["x"]).model_dump_json() + "\n{not json\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"trajectories.jsonl:2: invalid JSON"):
        read_trajectory_meta(path)
    path.write_text(traj("a", ["x"]).model_dump_json(), encoding="utf-8")
    with pytest.raises(ValueError, match=r":1: truncated file"):
        read_trajectory_meta(path)


def test_equal_to_a_whole_parse_on_the_demo_ingest(tmp_path):
    import yaml

    from gcpc.corpus.ingest import ingest, write_outputs

    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    write_outputs(ingest(dict(params["data"]), ROOT), tmp_path)
    path = tmp_path / "trajectories.jsonl"
    got = read_trajectory_meta(path)
    assert len(got) >= 40
    pd.testing.assert_frame_equal(got, whole_parse(path))


def test_the_ingest_meta_table_equals_the_parse_and_is_read_first(tmp_path):
    """trajectory_meta.parquet (written by ingest) holds what read_trajectory_meta parses, and the
    analyses read it instead of trajectories.jsonl when it is there."""
    from gcpc.analysis.common import load_trajectory_meta
    from gcpc.corpus.meta import read_trajectory_meta_table, write_trajectory_meta

    rows = [traj("b", ["x"], source="ünïcode ✓"), traj("a", [], condition="without_skills"),
            traj("c", ["y"], outcome=Outcome(status="other"))]
    jsonl, table = tmp_path / "trajectories.jsonl", tmp_path / "trajectory_meta.parquet"
    write_jsonl(jsonl, sorted(rows, key=lambda t: t.trajectory_id))
    assert write_trajectory_meta(table, rows) == 3
    pd.testing.assert_frame_equal(read_trajectory_meta_table(table), read_trajectory_meta(jsonl))
    first = table.read_bytes()
    write_trajectory_meta(table, list(reversed(rows)))
    assert table.read_bytes() == first  # sorted by id, byte-deterministic

    jsonl.write_text("{not json\n", encoding="utf-8")  # the table is read, the JSONL never opened
    assert load_trajectory_meta(table, jsonl)["trajectory_id"].tolist() == ["a", "b", "c"]
    table.unlink()
    with pytest.raises(ValueError, match="invalid JSON"):  # no table (older ingest outputs): the JSONL is parsed
        load_trajectory_meta(table, jsonl)


def test_a_meta_table_without_a_column_names_the_file(tmp_path):
    from gcpc.corpus.meta import read_trajectory_meta_table

    path = tmp_path / "trajectory_meta.parquet"
    pd.DataFrame({"trajectory_id": ["a"], "benchmark": ["b"]}).to_parquet(path)
    with pytest.raises(ValueError, match=r"trajectory_meta.parquet: column\(s\) task_id, .* missing"):
        read_trajectory_meta_table(path)
