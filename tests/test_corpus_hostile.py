"""Hostile and malformed corpora (made by tests/malformed/make_variants.py): ingest never crashes,
never reads outside the corpus, and names the file of every bad item.

Each variant spoils one item (a trial, a task, an instance) of a Harbor, a Terminal-Bench 1 or a
SWE-bench corpus. Expected per variant: `excluded` (an exclusion for that item whose path or
reason names the file), `noted` (the item is kept and a note or its outcome reason names the
file), or `shown` (kept; the odd record is a visible system event whose source is the file).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from malformed.make_variants import CONFIGS, SECRET_MARKER, make_corpora

from gcpc.corpus import guard
from gcpc.corpus.ingest import ingest, write_outputs
from gcpc.io import iter_jsonl, write_jsonl


@pytest.fixture(scope="module")
def variants(tmp_path_factory):
    dest = tmp_path_factory.mktemp("variants")
    return dest, make_corpora(dest)


def _reads_outside(dest: Path):
    """An audit hook after the guard's: it sees only the opens the guard let through."""
    with guard.confined([dest]):
        pass  # installs the guard's hook first
    seen: list[str] = []
    state = {"on": False}
    corpus = os.path.realpath(dest)

    def hook(event, args):
        if state["on"] and event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
            mode = args[1] if len(args) > 1 else None
            if isinstance(mode, str) and any(c in mode for c in "wax+"):
                return
            real = os.path.realpath(args[0])
            if not (real == corpus or real.startswith(corpus + os.sep)) and not guard._is_system(real):
                seen.append(real)

    sys.addaudithook(hook)
    return seen, state


def test_at_least_40_variants_ingest_without_a_crash_and_every_bad_item_is_named(variants, tmp_path):
    dest, made = variants
    assert len(made) >= 40 and {v.corpus for v in made} == set(CONFIGS)
    outside_reads, state = _reads_outside(dest)
    state["on"] = True
    try:
        results = {name: ingest(cfg, dest) for name, cfg in CONFIGS.items()}  # 0 crashes
    finally:
        state["on"] = False
    assert outside_reads == [], f"read outside the corpus: {outside_reads}"
    problems = []
    for v in made:
        res = results[v.corpus]
        excl = [e for e in res.exclusions if e.path == v.item]
        texts = [n for n in res.notes] + [e.reason for e in res.exclusions]
        kept = [t for t in res.trajectories if t.source_path == v.item]
        for t in res.trajectories:
            texts += list(t.notes) + [t.outcome.reason or ""]
        if v.kind == "excluded":
            ok = any(v.names in f"{e.path} {e.reason}" for e in excl)
        elif v.kind == "noted":
            ok = not excl and any(v.names in t for t in texts)
        else:
            ok = bool(kept) and any(e.kind.value == "system" and e.source and e.source.path == v.names for e in kept[0].events)
        if not ok:
            problems.append(f"{v.corpus}/{v.name} ({v.kind}): {[e.reason for e in excl] or 'no exclusion'}")
    assert not problems, "\n".join(problems)
    # the valid items are still read: one bad item never aborts the corpus
    assert {t.task_id for t in results["harbor"].tasks} == {"t-ok", "t-parametrize-bomb"}
    assert any(t.trial == "t-ok__good" for t in results["harbor"].trajectories)
    assert any(t.task_id == "ok-1" for t in results["swe"].trajectories)
    # nothing from outside reaches any output
    for name, res in results.items():
        write_outputs(res, tmp_path / name)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET_MARKER.encode() not in path.read_bytes(), path
            assert b"root:x:0:0" not in path.read_bytes(), path


def test_links_leaving_the_corpus_are_refused_even_past_the_folder_checks(variants):
    dest, _ = variants
    secret = dest / "outside" / "secret.txt"
    with guard.confined([dest / "harbor"]) as boundary:
        with pytest.raises(guard.OutsideCorpus, match="outside the corpus root"):
            (dest / "harbor" / "tasks" / "t-instruction-link-outside" / "instruction.md").read_text()
        with pytest.raises(guard.OutsideCorpus):
            secret.read_bytes()
        with pytest.raises(guard.OutsideCorpus):
            os.listdir(dest / "outside")
        assert (dest / "harbor" / "tasks" / "t-ok" / "instruction.md").read_text().startswith("Write")
    assert len(boundary.refused) == 3
    assert secret.read_text().startswith("root:")  # outside `confined` nothing is refused


def test_strict_switch_stops_at_the_first_bad_item(variants):
    dest, _ = variants
    with pytest.raises(guard.OutsideCorpus, match="t-instruction-link-outside/instruction.md"):
        ingest({**CONFIGS["harbor"], "strict": True}, dest)


def test_task_ids_inside_files_never_move_a_trial(variants):
    dest, _ = variants
    res = ingest(CONFIGS["tb1"], dest)
    assert {t.task_id for t in res.tasks} == {"hello"}
    assert {t.task_id for t in res.trajectories} == {"hello"}
    assert any("'../../etc' differs from the folder's task 'hello'" in n for n in res.notes)


def test_a_truncated_jsonl_file_is_an_error_not_a_prefix(tmp_path):
    path = tmp_path / "trajectories.jsonl"
    write_jsonl(path, [{"n": i} for i in range(50)])
    assert len(list(iter_jsonl(path))) == 50
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # what a kill mid-write used to leave
    with pytest.raises(ValueError, match=r"trajectories.jsonl:\d+: truncated file"):
        list(iter_jsonl(path))


def test_outputs_are_written_atomically_with_unique_temporary_names(tmp_path, monkeypatch):
    import gcpc.io as gio

    target = tmp_path / "out.jsonl"
    write_jsonl(target, [{"a": 1}])

    def boom():
        yield {"a": 2}
        raise RuntimeError("killed mid-write")

    with pytest.raises(RuntimeError):
        gio.write_jsonl(target, boom())
    assert target.read_text() == '{"a":1}\n'  # the old file is intact, not a prefix of the new one
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]  # no temporary left behind


def test_the_boundarys_cached_realpath_is_os_realpath(tmp_path, monkeypatch):
    """`Boundary.realpath` (folders resolved once) gives what `os.path.realpath` gives: links to files,
    to folders and chains of links, '..' after a link, missing names, relative paths, trailing separators."""
    (tmp_path / "corpus" / "a" / "b").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("x")
    (tmp_path / "corpus" / "a" / "b" / "f.txt").write_text("f")
    (tmp_path / "corpus" / "a" / "to_outside").symlink_to(tmp_path / "outside")
    (tmp_path / "corpus" / "a" / "to_secret").symlink_to(tmp_path / "outside" / "secret.txt")
    (tmp_path / "corpus" / "a" / "chain").symlink_to("to_secret")
    (tmp_path / "corpus" / "dirlink").symlink_to(tmp_path / "corpus" / "a" / "b")
    c = tmp_path / "corpus"
    paths = [c / "a" / "b" / "f.txt", c / "a" / "to_outside" / "secret.txt", c / "a" / "to_secret",
             c / "a" / "chain", c / "dirlink" / "f.txt", c / "dirlink" / ".." / "to_secret",
             c / "a" / "b" / "missing" / "deeper.txt", c / "a" / "b" / "..", c / "a" / ".", f"{c}/a/b/",
             f"{c}//a//b//f.txt", os.fsencode(c / "a" / "chain")]
    monkeypatch.chdir(c / "a")
    paths += ["b/f.txt", "to_secret", "dirlink/f.txt", ".", "chain"]
    b = guard.Boundary((os.path.realpath(c),))
    for _ in range(2):  # the second round reads the folder cache
        for p in paths:
            expected = os.path.realpath(os.fsdecode(p) if isinstance(p, bytes) else p)
            assert b.realpath(p) == expected, p
            assert b.inside(p) == (expected == os.path.realpath(c) or expected.startswith(os.path.realpath(c) + os.sep))
    assert not b.inside(c / "a" / "chain") and b.inside(c / "dirlink" / "f.txt")


def _links_by_os_walk(folder: Path) -> list[Path]:
    """The reference for `guard._links_below`: the os.walk + Path.is_symlink loop it replaced."""
    found = []
    for base, dirs, files in os.walk(folder, followlinks=False, onerror=lambda e: None):
        for name in dirs + files:
            p = Path(base) / name
            if p.is_symlink():
                found.append(p)
    return sorted(found)


def test_links_below_a_folder_are_what_os_walk_finds(tmp_path):
    """`outside_links` lists a trial folder's links from its listings' entry types; the same links as walking it
    with os.walk and asking each name `is_symlink`: links to files, folders (not descended), missing targets,
    chains, links inside nested and inside unreadable folders, a folder reached only through a link."""
    t = tmp_path / "trial"
    (t / "a" / "b" / "c").mkdir(parents=True)
    (t / "empty").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "inner_link").symlink_to("/etc")
    (t / "f.txt").write_text("f")
    (t / "a" / "b" / "c" / "g.txt").write_text("g")
    (t / "to_file").symlink_to(t / "f.txt")
    (t / "a" / "to_dir").symlink_to(tmp_path / "outside")  # not descended: inner_link is not listed
    (t / "a" / "b" / "broken").symlink_to(tmp_path / "missing")
    (t / "a" / "b" / "c" / "chain").symlink_to("../broken")
    (t / "a" / "b" / "self").symlink_to(t / "a")
    expected = _links_by_os_walk(t)
    assert len(expected) == 5
    assert sorted(guard._links_below(os.fspath(t))) == expected
    assert guard._links_below(os.fspath(tmp_path / "missing")) == _links_by_os_walk(tmp_path / "missing") == []
    assert guard._links_below(os.fspath(t / "f.txt")) == _links_by_os_walk(t / "f.txt") == []
    if os.geteuid() != 0:  # root lists unreadable folders anyway
        (t / "a" / "b").chmod(0)
        try:
            assert sorted(guard._links_below(os.fspath(t))) == _links_by_os_walk(t)
        finally:
            (t / "a" / "b").chmod(0o755)
    with guard.confined([tmp_path / "trial"]):
        assert guard.outside_links(t) == [f"{p.as_posix()} -> {os.path.realpath(p)}"
                                          for p in (t / "a" / "b" / "broken", t / "a" / "b" / "c" / "chain",
                                                    t / "a" / "to_dir")]
