"""A stage's outputs are one unit (gcpc.io.stage_outputs): replaced together, recorded in a manifest that every
reader checks, and a killed run leaves the previous outputs whole and its temporaries cleaned by the next run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gcpc.io import MANIFEST, iter_jsonl, stage_outputs, verify_output, write_json, write_jsonl

SRC = Path(__file__).resolve().parents[1] / "src"


def _write_run(out: Path, run: int, n: int = 50) -> None:
    with stage_outputs(out) as staged:
        write_jsonl(staged / "tasks.jsonl", [{"run": run, "i": i} for i in range(n)])
        write_jsonl(staged / "trajectories.jsonl", [{"run": run, "i": i} for i in range(n)])
        write_json(staged / "population.json", {"run": run})


def test_outputs_are_replaced_together_and_recorded_in_a_manifest(tmp_path):
    out = tmp_path / "ingest"
    _write_run(out, 1)
    (out / "kept-by-hand.txt").write_text("not written by the stage")
    _write_run(out, 2)
    manifest = json.loads((out / MANIFEST).read_text())["files"]
    assert sorted(manifest) == ["population.json", "tasks.jsonl", "trajectories.jsonl"]
    assert manifest["trajectories.jsonl"]["rows"] == 50
    assert {r["run"] for r in iter_jsonl(out / "tasks.jsonl")} == {r["run"] for r in iter_jsonl(out / "trajectories.jsonl")} == {2}
    assert (out / "kept-by-hand.txt").read_text() == "not written by the stage"  # carried over, not lost
    assert [p.name for p in tmp_path.iterdir()] == ["ingest"]  # no temporary folder left
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o777 & ~umask  # as mkdir makes it, not private


def test_an_error_inside_the_stage_leaves_the_previous_outputs(tmp_path):
    out = tmp_path / "ingest"
    _write_run(out, 1)
    with pytest.raises(RuntimeError), stage_outputs(out) as staged:
        write_jsonl(staged / "tasks.jsonl", [{"run": 2}])
        raise RuntimeError("the stage failed half-way")
    assert {r["run"] for r in iter_jsonl(out / "tasks.jsonl")} == {1}
    assert [p.name for p in tmp_path.iterdir()] == ["ingest"]


@pytest.mark.parametrize("cut", ["line-boundary", "replaced-line"])
def test_a_file_cut_or_changed_after_it_was_written_stops_its_reader_naming_it(tmp_path, cut):
    out = tmp_path / "ingest"
    _write_run(out, 1)
    path = out / "trajectories.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    if cut == "line-boundary":
        path.write_bytes(b"".join(lines[:40]))  # 40 of 50 whole lines: every line is valid JSON
        match = r"trajectories.jsonl: holds 40 rows .* the stage wrote 50 rows"
    else:
        path.write_bytes(b"".join(lines[:-1]) + lines[-1].replace(b'"run":1', b'"run":7'))
        match = r"trajectories.jsonl: its content hash differs"
    with pytest.raises(ValueError, match=match):
        list(iter_jsonl(path))
    with pytest.raises(ValueError, match=match):
        verify_output(path)
    assert len(list(iter_jsonl(out / "tasks.jsonl"))) == 50  # the other files still read


def test_judging_a_truncated_trajectories_file_stops_before_any_request(tmp_path, monkeypatch):
    """The judge stage checks trajectories.jsonl whole before judging ("40/40 judged" was the silent result)."""
    from gcpc.judging import stage

    out = tmp_path / "ingest"
    with stage_outputs(out) as staged:
        write_jsonl(staged / "tasks.jsonl", [])
        write_jsonl(staged / "trajectories.jsonl", [{"x": i} for i in range(50)])
    path = out / "trajectories.jsonl"
    path.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:40]))
    monkeypatch.setattr(stage, "arm_spec", lambda params, name: type("A", (), {"kind": "gcpc"})())
    monkeypatch.setattr(stage, "ARM_KINDS", {"gcpc": type("K", (), {"reads": (), "uses_model": False})()})
    asked = []
    monkeypatch.setattr(stage, "_judge_to_file", lambda *a, **k: asked.append(a))
    with pytest.raises(ValueError, match=r"ingest/trajectories.jsonl: holds 40 rows .* wrote 50 rows"):
        stage.judge_stage({"judge": {}}, "gcpc", out, tmp_path / "synth", tmp_path / "judge")
    assert asked == []


_KILLED_WRITER = """
import sys, time
from pathlib import Path
from gcpc.io import stage_outputs, write_jsonl
with stage_outputs(Path(sys.argv[1])) as staged:
    write_jsonl(staged / "tasks.jsonl", [{"run": 2}] * 10)
    with open(staged / "trajectories.jsonl", "w") as fh:
        fh.write('{"run": 2}\\n' * 1000)
        fh.flush()
        print("writing", flush=True)
        time.sleep(60)
"""


def test_a_stage_killed_mid_write_leaves_the_previous_outputs_and_the_next_run_cleans_up(tmp_path):
    out = tmp_path / "ingest"
    _write_run(out, 1)
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_WRITER, str(out)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "writing"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    stale = [p.name for p in tmp_path.iterdir() if p.name != "ingest"]
    assert len(stale) == 1 and stale[0].startswith(f".ingest.{proc.pid}.")  # the killed run's folder
    for name in ("tasks.jsonl", "trajectories.jsonl"):
        assert {r["run"] for r in iter_jsonl(out / name)} == {1}  # whole, from one run, checked by the manifest
    _write_run(out, 3)
    assert [p.name for p in tmp_path.iterdir()] == ["ingest"]  # the stale temporary is gone
    assert {r["run"] for r in iter_jsonl(out / "trajectories.jsonl")} == {3}


def test_a_stage_writing_in_place_records_its_outputs_when_done(tmp_path):
    """Synthesis and judging append a resumable call log in their folder: their manifest names the other files,
    is removed when the stage starts and written when it is done."""
    from gcpc.io import forget_outputs, record_outputs

    out = tmp_path / "judge"
    out.mkdir()
    write_jsonl(out / "judgments.jsonl", [{"i": i} for i in range(10)])
    (out / "llm_calls.jsonl").write_text('{"call": 1}\n')
    record_outputs(out, ["judgments.jsonl"])
    with (out / "llm_calls.jsonl").open("a") as fh:  # a later, killed run appended a call: never checked
        fh.write('{"call": 2}\n')
    assert len(list(iter_jsonl(out / "llm_calls.jsonl"))) == 2
    path = out / "judgments.jsonl"
    path.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:7]))
    with pytest.raises(ValueError, match=r"judgments.jsonl: holds 7 rows .* wrote 10 rows"):
        list(iter_jsonl(path))
    forget_outputs(out)  # the stage starts again: nothing to check until it records what it wrote
    assert len(list(iter_jsonl(path))) == 7
