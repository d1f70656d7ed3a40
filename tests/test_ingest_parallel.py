"""Ingest speed-ups change no output: the fast terminal replay equals the reference one, and trials
read in worker processes give the same bytes as one process (fixture, hostile and shared corpora)."""

from __future__ import annotations

import io
import os
import random
from pathlib import Path

import pytest
from malformed.make_variants import CONFIGS, make_corpora

from gcpc.corpus import guard, parallel, terminal
from gcpc.corpus.ingest import ingest, write_outputs

REPO = Path(__file__).resolve().parents[1]
TB1_FIXTURE = {"name": "tb1-fixture", "format": "terminal-bench-1", "root": "tests/fixtures/terminal_bench_1",
               "trials_dirs": ["runs"], "condition": "without_skills"}
SHARED_TB1 = REPO.parent / "shared" / "data" / "terminal-bench-1" / "runs"
OUTPUTS = ("tasks.jsonl", "trajectories.jsonl", "exclusions.jsonl", "population.json", "population.md")

PIECES = [b"a", b"bc", b"  ", b"xyz" * 5, b"\r", b"\x08", b"\x1b[2K", b"\x1b[K", b"\x1b[1K", b"\x1b[A", b"\x1b[2A",
          b"\x1b[B", b"\x1b[3C", b"\x1b[2D", b"\x1b[5G", b"\x1b[32m", b"\x1b[0m", b"\x1b]0;t\x07", b"\x1b]0;a\rb",
          b"\x1bP x\x1b\\", b"\x1b", b"\x1b(", b"\x1b[", b"\t", b"\x07", "\u00e9".encode(), "\u280b".encode(),
          b"\r\x1b[2K", b"\x0f", b"\xff", b"\x1b[?25l", b"\x1b[1;31m", b"\x1b[H", b"\x1b[J",
          b"\n", b"\r\n", b"\r\n", b"\n"]


def _random_stream(seed: int) -> bytes:
    rnd = random.Random(seed)
    return b"".join(rnd.choice(PIECES) for _ in range(rnd.randint(1, 400)))


def _replay(fn, data: bytes) -> tuple[list[terminal.LogLine], int]:
    counter = terminal.Counter()
    return list(fn(data, counter)), counter.invalid_utf8


@pytest.mark.parametrize("screen_rows", [terminal.SCREEN_ROWS, 2])
def test_fast_stream_replay_equals_the_reference_on_random_streams(monkeypatch, screen_rows):
    # every escape, control character, cursor move and invalid byte the emulator knows, in random order
    monkeypatch.setattr(terminal, "SCREEN_ROWS", screen_rows)
    for seed in range(1500):
        data = _random_stream(seed)
        assert _replay(terminal.iter_stream, data) == _replay(terminal.iter_stream_reference, data), (seed, data)


@pytest.mark.parametrize("block", [1, 7, 64])
def test_fast_stream_replay_is_the_same_across_block_boundaries(monkeypatch, block):
    # the replay decodes and splits the stream a block at a time; lines and runs of simple lines cut by a
    # block boundary (and lines longer than a block) replay as in one piece
    monkeypatch.setattr(terminal, "STREAM_BLOCK", block)
    monkeypatch.setattr(terminal, "SCREEN_ROWS", 3)
    pieces = PIECES + [b"plain line\r\n"] * 10 + [b"x" * 100 + b"\r\n"]
    for seed in range(400):
        rnd = random.Random(seed)
        data = b"".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 300)))
        counter = terminal.Counter()
        streamed = list(terminal.iter_stream(io.BytesIO(data), counter)), counter.invalid_utf8
        assert streamed == _replay(terminal.iter_stream_reference, data), (seed, data)


def test_fast_stream_replay_equals_the_reference_on_spinners_and_progress_bars():
    esc = "\x1b"
    spinner = "".join(f"{esc}[32m{c}{esc}[0m Waiting for the LM to respond...\r{esc}[2K" for c in "\u280b\u2819\u2839")
    raw = (f"{esc}[?25l{spinner}THOUGHT: go\r\n" + "0% [Working]\r     \rGet:1 http://x\r\n" * 3
           + f"row\r\n{spinner}{esc}[1A{esc}[2Kredrawn\r\n{esc}]0;title\r{esc}[2K\x07kept\r\n")
    data = raw.encode()
    assert _replay(terminal.iter_stream, data) == _replay(terminal.iter_stream_reference, data)


PANE_PIECES = [b"a", b"bc", b" ", b"x" * 79, b"y" * 80, b"z" * 158, b"w" * 159, b"v" * 160, b"u" * 161,
               "\u2500".encode() * 160, "\u2500".encode() * 159, "\u4e2d".encode(), "\u4e2d".encode() * 79,
               "\u4e2d".encode() * 80, "e\u0301".encode(), "\u00e9".encode() * 159, b"\xff", b"\r", b"\t",
               b"\n", b"\r\n", b"\n", b"\n"]


def test_fast_pane_unwrap_equals_the_reference_on_random_panes():
    # full rows, rows one column short, wide characters, combining marks, box rules, invalid bytes, CRLF
    for seed in range(1500):
        rnd = random.Random(seed)
        data = b"".join(rnd.choice(PANE_PIECES) for _ in range(rnd.randint(1, 60)))
        for width in (160, 80):
            fast, ref = terminal.Counter(), terminal.Counter()
            assert (list(terminal.iter_pane(data, fast, width)), fast.invalid_utf8) == \
                   (list(terminal.iter_pane_reference(data, ref, width)), ref.invalid_utf8), (seed, width, data)


@pytest.mark.parametrize("block", [1, 7, 64])
def test_fast_pane_unwrap_is_the_same_across_block_boundaries(monkeypatch, block):
    # the unwrap decodes and splits the capture a block at a time (as a stream from a file, too); wrapped rows,
    # lines and multi-byte characters cut by a block boundary (and lines longer than a block) join as in one piece
    monkeypatch.setattr(terminal, "STREAM_BLOCK", block)
    for seed in range(300):
        rnd = random.Random(seed)
        data = b"".join(rnd.choice(PANE_PIECES) for _ in range(rnd.randint(0, 40)))
        fast, ref = terminal.Counter(), terminal.Counter()
        assert (list(terminal.iter_pane(io.BytesIO(data), fast, 80)), fast.invalid_utf8) == \
               (list(terminal.iter_pane_reference(data, ref, 80)), ref.invalid_utf8), (seed, data)


def test_display_path_is_the_relative_path_relpath_gives(tmp_path, monkeypatch):
    from gcpc.corpus.harbor import display_path

    def reference(path, root):
        roots = [root] if isinstance(root, (str, Path)) else list(root)
        target = os.path.abspath(path)
        for r in roots:
            base = os.path.abspath(r)
            if target == base or target.startswith(base.rstrip(os.sep) + os.sep):
                return Path(os.path.relpath(target, base)).as_posix()
        return Path(os.path.relpath(target, os.path.abspath(roots[-1]))).as_posix()

    monkeypatch.chdir(tmp_path)
    cases = [("/a/b/c", "/a"), ("/a/b/c", "/a/"), ("/a", "/a"), ("/a/b/../c//d/./e", "/a"), ("/x/y", "/"),
             ("/ab/c", "/a"), ("rel/x", "."), ("rel/x", "rel"), ("../d/x", ["../d", "."]), ("/q", ["/a", "/b"]),
             ("/a/b", [Path("/a/b"), Path("/a")])]
    for path, root in cases:
        assert display_path(Path(path), root) == reference(Path(path), root), (path, root)


def test_map_ordered_uses_processes_and_keeps_the_input_order(monkeypatch):
    monkeypatch.setattr(parallel, "MIN_ITEMS_PER_WORKER", 1)
    out = parallel.map_ordered(_pid_and_square, list(range(40)), workers=2)
    assert [sq for _, sq in out] == [i * i for i in range(40)]
    assert os.getpid() not in {pid for pid, _ in out}
    with pytest.raises(ZeroDivisionError):
        parallel.map_ordered(_inverse, [3, 2, 1, 0, 5], workers=2)


def _pid_and_square(i: int) -> tuple[int, int]:
    return os.getpid(), i * i


def _inverse(i: int) -> float:
    return 1 / i


def test_workers_setting_is_checked():
    assert parallel.resolve_workers(None) == parallel.resolve_workers("auto") == parallel.default_workers()
    assert 1 <= parallel.default_workers() <= parallel.MAX_WORKERS
    assert parallel.resolve_workers(3) == 3
    for bad in (-1, "two", 1.5, True):
        with pytest.raises(ValueError, match="ingest.workers"):
            parallel.resolve_workers(bad)


def _written(result, folder: Path) -> dict[str, bytes]:
    write_outputs(result, folder)
    return {name: (folder / name).read_bytes() for name in OUTPUTS}


def test_fixture_ingest_in_workers_writes_the_same_bytes(monkeypatch, tmp_path):
    monkeypatch.setattr(parallel, "MIN_ITEMS_PER_WORKER", 1)
    serial = _written(ingest(TB1_FIXTURE, REPO, workers=1), tmp_path / "serial")
    assert _written(ingest(TB1_FIXTURE, REPO, workers=3), tmp_path / "workers") == serial


def test_hostile_corpus_in_workers_gives_the_same_exclusions(monkeypatch, tmp_path):
    dest = tmp_path / "variants"
    dest.mkdir()
    make_corpora(dest)
    monkeypatch.setattr(parallel, "MIN_ITEMS_PER_WORKER", 1)
    serial = _written(ingest(CONFIGS["tb1"], dest, workers=1), tmp_path / "serial")
    assert b"link outside the corpus root" in serial["exclusions.jsonl"]
    assert _written(ingest(CONFIGS["tb1"], dest, workers=2), tmp_path / "workers") == serial


def test_reads_refused_in_a_worker_are_counted_on_the_parent_boundary(monkeypatch, tmp_path):
    inside, outside = tmp_path / "corpus", tmp_path / "outside"
    inside.mkdir()
    outside.mkdir()
    files = [outside / f"f{i}.txt" for i in range(4)] + [inside / "ok.txt"]
    for f in files:
        f.write_text("x")
    monkeypatch.setattr(parallel, "MIN_ITEMS_PER_WORKER", 1)
    with guard.confined([inside]) as boundary:
        out = parallel.map_ordered(_try_read, [str(f) for f in files], workers=2)
    assert out == ["refused"] * 4 + ["x"]
    assert len(boundary.refused) == 4 and all("outside" in r for r in boundary.refused)


def _try_read(path: str) -> str:
    try:
        return Path(path).read_text()
    except guard.OutsideCorpus:
        return "refused"


@pytest.mark.slow
@pytest.mark.skipif(not SHARED_TB1.is_dir(), reason="../shared/data/terminal-bench-1 not present (not in CI)")
def test_shared_terminal_bench_1_in_workers_writes_the_same_bytes(tmp_path):
    cfg = {"name": "terminal-bench-1", "format": "terminal-bench-1", "root": "../shared/data/terminal-bench-1",
           "tasks_dir": "runs", "trials_dirs": ["runs"], "condition": "without_skills"}
    serial = _written(ingest(cfg, REPO, workers=1), tmp_path / "serial")
    assert _written(ingest(cfg, REPO, workers=2), tmp_path / "workers") == serial


def test_dedupe_takes_the_fingerprints_hashed_where_the_trials_were_read(monkeypatch, tmp_path):
    # Terminal-Bench 1 trials are fingerprinted in the process that read them; the parent's dedupe hashes no log
    # again (and gives the same bytes); outside an ingest call nothing is remembered
    from gcpc.corpus import ingest as ingest_module

    monkeypatch.setattr(parallel, "MIN_ITEMS_PER_WORKER", 1)
    expected = _written(ingest(TB1_FIXTURE, REPO, workers=1), tmp_path / "hashed_in_parent")
    real = ingest_module.log_fingerprint

    def not_again(t):
        raise AssertionError(f"{t.trajectory_id} hashed again in dedupe")

    monkeypatch.setattr(ingest_module, "log_fingerprint", not_again)
    for workers in (1, 2):
        assert _written(ingest(TB1_FIXTURE, REPO, workers=workers), tmp_path / f"remembered{workers}") == expected
    monkeypatch.setattr(ingest_module, "log_fingerprint", real)
    t = ingest(TB1_FIXTURE, REPO).trajectories[0]
    ingest_module.remember_fingerprint(t, "not the fingerprint")
    assert ingest_module._known_fingerprints.get() is None
    assert ingest_module.dedupe([t, t.model_copy(update={"trajectory_id": t.trajectory_id + "-copy"})])[1][0].duplicate_of == t.trajectory_id
