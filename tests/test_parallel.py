"""gcpc.analysis.parallel and the forked PNG in save_figure: side by side gives what one process gives.

The strongest check is the last: every analysis stage on a small synthetic corpus (bench_analysis's)
with one process and with two, every output byte compared."""

from __future__ import annotations

import hashlib
import importlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import yaml

from gcpc.analysis import parallel
from gcpc.analysis.parallel import PartFailed, run_parts

ROOT = Path(__file__).resolve().parents[1]
FORK = sys.platform == "linux" and hasattr(os, "fork")
needs_fork = pytest.mark.skipif(not FORK, reason="forked parts need os.fork on Linux; elsewhere every part runs in-process")


def _parts() -> dict:
    rng = np.random.default_rng(0)
    data = rng.normal(size=(200, 50))
    return {"sum": lambda: data.sum(axis=0), "dict": lambda: {"b": 1, "a": [1.5, None, "x"]},
            "none": lambda: None, "big": lambda: np.arange(300_000, dtype=float) / 7.0, "pid": lambda: "same"}


@needs_fork
@pytest.mark.parametrize("workers", [2, 3, 8])
def test_results_equal_one_process_and_keep_the_order(workers):
    one = run_parts(_parts(), workers=1)
    many = run_parts(_parts(), workers=workers)
    assert list(many) == list(_parts())
    for k in one:
        if isinstance(one[k], np.ndarray):
            assert np.array_equal(one[k], many[k]) and one[k].dtype == many[k].dtype, k
        else:
            assert one[k] == many[k], k


@needs_fork
def test_parts_run_in_other_processes():
    pids = run_parts({f"p{i}": os.getpid for i in range(4)}, workers=2)
    assert len(set(pids.values())) >= 2  # the parent takes some parts, children the others
    assert os.getpid() in pids.values()


@needs_fork
def test_a_failing_part_raises_its_own_exception_with_the_childs_traceback():
    def bad():
        raise ValueError("annotations.jsonl:3: field 'rating' is not a number")

    with pytest.raises(ValueError, match="field 'rating'") as info:
        run_parts({"bad": bad, "ok": lambda: 1, "ok2": lambda: 2}, workers=2)
    assert any("part 'bad'" in note for note in getattr(info.value, "__notes__", []))


@needs_fork
def test_an_exception_that_does_not_pickle_becomes_part_failed():
    class Local(Exception):  # defined in a function: pickle cannot find it
        pass

    def bad():
        raise Local("no pickle")

    with pytest.raises(PartFailed, match="no pickle"):
        run_parts({"bad": bad, "ok": lambda: 1}, workers=2)


class TwoArgs(Exception):
    def __init__(self, a, b):  # pickles, but unpickling calls TwoArgs(message) and fails
        super().__init__(f"{a} and {b}")


@needs_fork
def test_an_exception_that_does_not_unpickle_becomes_part_failed_with_its_text():
    def bad():
        raise TwoArgs("left", "right")

    with pytest.raises(PartFailed, match="TwoArgs: left and right"):
        run_parts({"bad": bad, "ok": lambda: 1}, workers=2)


@needs_fork
def test_a_child_that_dies_without_a_result_is_an_error():
    with pytest.raises(PartFailed, match="ended without a result"):
        run_parts({"dies": lambda: os._exit(3), "ok": lambda: 1}, workers=2)


def test_worker_count_from_the_environment(monkeypatch):
    monkeypatch.setenv(parallel.WORKERS_ENV, "1")
    assert parallel.worker_count() == 1
    for bad in ("zero", "0", "-2"):
        monkeypatch.setenv(parallel.WORKERS_ENV, bad)
        with pytest.raises(ValueError, match=parallel.WORKERS_ENV):
            parallel.worker_count()
    monkeypatch.setenv(parallel.WORKERS_ENV, "1")
    calls = []
    assert run_parts({"a": lambda: calls.append("a") or 1, "b": lambda: calls.append("b") or 2}) == {"a": 1, "b": 2}
    assert calls == ["a", "b"]  # in this process, in order


@needs_fork
def test_output_buffered_before_a_fork_is_written_once(tmp_path):
    script = textwrap.dedent("""
        import sys
        from gcpc.analysis.parallel import run_parts
        sys.stdout.write("before\\n")  # buffered (stdout is a pipe), not yet flushed at the fork
        run_parts({"a": lambda: print("in a"), "b": lambda: print("in b"), "c": lambda: print("in c")}, workers=2)
        print("after")
    """)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env).stdout
    assert out.count("before") == 1 and out.count("after") == 1
    assert sorted(line for line in out.splitlines() if line.startswith("in ")) == ["in a", "in b", "in c"]


@needs_fork
def test_forked_png_gives_the_same_bytes_and_reports_a_failure(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    from gcpc.analysis import figures

    def fig():
        f = Figure(figsize=(3, 2))
        ax = f.subplots()
        ax.plot([0, 1, 2], [1, 0, 2])
        ax.set_title("Δ AUC ≥ 0")
        return f

    monkeypatch.setenv(parallel.WORKERS_ENV, "1")
    seq = [p.read_bytes() for p in figures.save_figure(fig(), tmp_path / "seq")]
    monkeypatch.setenv(parallel.WORKERS_ENV, "2")
    forked = [p.read_bytes() for p in figures.save_figure(fig(), tmp_path / "fork")]
    assert seq == forked

    broken = fig()
    real = broken.savefig

    def savefig(path, **kw):
        if kw.get("format") == "png":
            raise OSError("disk full")
        return real(path, **kw)

    broken.savefig = savefig  # the child inherits it with the figure
    with pytest.raises(RuntimeError, match=r"broken\.png: drawing the PNG failed[\s\S]*disk full"):
        figures.save_figure(broken, tmp_path / "broken")
    assert not (tmp_path / "broken.png").exists()
    assert not list(tmp_path.glob(".broken.png.*"))  # no temporary left behind


STAGES = [("gcpc.analysis.__main__"), ("gcpc.report.__main__"), ("gcpc.analysis.rq2"), ("gcpc.analysis.rq3"),
          ("gcpc.analysis.rq4"), ("gcpc.analysis.rq5"), ("gcpc.analysis.item_validity"), ("gcpc.analysis.floors")]


def _run_stages(work: Path) -> dict[str, str]:
    cwd, argv = Path.cwd(), sys.argv
    os.chdir(work)
    try:
        for module in STAGES:
            sys.argv = [module]
            assert importlib.import_module(module).main() in (0, None), module
    finally:
        os.chdir(cwd)
        sys.argv = argv
    return {str(p.relative_to(work)): hashlib.sha256(p.read_bytes()).hexdigest()
            for d in ("data/processed/analyze", "figures", "metrics") for p in sorted((work / d).rglob("*")) if p.is_file()}


@needs_fork
def test_every_analysis_stage_writes_the_same_bytes_with_one_and_two_processes(tmp_path, monkeypatch):
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import bench_analysis
    finally:
        sys.path.remove(str(ROOT / "bench"))
    digests = {}
    for workers in ("1", "2"):
        work = tmp_path / f"w{workers}"
        work.mkdir()
        bench_analysis.synthesize(600, 0, work)
        params = {"data": {"name": "bench", "root": "data/bench"}, "judge": {"provider": "synthetic", "model": "bench-v1"},
                  "scoring": {"pass_propagation": True, "endpoint": True},
                  "analysis": {"bootstrap": {"n_resamples": 200, "seed": 0, "ci": 0.95}, "rq3": {"ambiguous": "order"}}}
        (work / "params.yaml").write_text(yaml.safe_dump(params))
        monkeypatch.setenv(parallel.WORKERS_ENV, workers)
        digests[workers] = _run_stages(work)
    assert len(digests["1"]) > 30
    assert digests["1"] == digests["2"]
