"""Hostile and malformed corpora (made by tests/malformed/make_variants.py and, for issue 39's kinds,
tests/malformed/issue39.py): ingest never crashes or hangs, never reads outside the corpus, and names the file of
every bad item (the corpus fuzz suite of issues 25 and 39: at least 250 variants over the four formats, each
corpus ingested in a forked child under TIME_LIMIT_S and MEMORY_LIMIT_BYTES; unreadable files and folders are
read as a user that is not root).

Each variant spoils one item (a trial, a task, an instance) of a Harbor, a Terminal-Bench 1 or a
SWE-bench corpus. Expected per variant: `excluded` (an exclusion for that item whose path or
reason names the file), `noted` (the item is kept and a note or its outcome reason names the
file), or `shown` (kept; the odd record is a visible system event whose source is the file).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import pytest
from malformed.make_variants import CONFIGS, SECRET_MARKER, Variant, make_corpora, make_permission_corpora

from gcpc.corpus import guard
from gcpc.corpus.consistency import CONTRADICTION_NOTE
from gcpc.corpus.ingest import IngestResult, ingest, write_outputs
from gcpc.io import iter_jsonl, write_jsonl

REPO = Path(__file__).resolve().parents[1]


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
            if not os.path.isabs(os.fsdecode(args[0]) if isinstance(args[0], bytes) else os.fspath(args[0])):
                seen.append(f"opened by relative name: {os.fspath(args[0])!r}")  # whatever the working folder holds
                return
            real = os.path.realpath(args[0])
            if not (real == corpus or real.startswith(corpus + os.sep)) and not guard._is_system(real):
                seen.append(real)

    sys.addaudithook(hook)
    return seen, state


def check_variant(v: Variant, res: IngestResult) -> str | None:
    """None when the variant's item was handled as expected; else what was accepted silently instead."""
    excl = [e for e in res.exclusions if e.path == v.item]
    texts = [n for n in res.notes] + [e.reason for e in res.exclusions]
    kept = [t for t in res.trajectories if t.source_path == v.item]
    kept_tasks = [t for t in res.tasks if t.source_path == v.item]
    for t in res.trajectories:
        texts += list(t.notes) + [t.outcome.reason or ""]
    if v.kind == "excluded":
        ok = any(v.names in f"{e.path} {e.reason}" for e in excl) and not kept and not kept_tasks
    elif v.kind == "noted":
        ok = not excl and any(v.names in t for t in texts)
    elif v.kind == "kept":  # and, for a trajectory, not noted as contradicting its own tests
        ok = not excl and bool(kept or kept_tasks) and not any(CONTRADICTION_NOTE in n for t in kept for n in t.notes)
    else:
        ok = bool(kept) and any(e.kind.value == "system" and e.source and e.source.path == v.names for e in kept[0].events)
    if ok and v.outcome is not None:
        ok = bool(kept) and kept[0].outcome.status == v.outcome
    if ok:
        return None
    return (f"{v.corpus}/{v.name} ({v.kind}): {[e.reason for e in excl] or 'no exclusion'}; "
            f"kept as {[t.outcome.status for t in kept] or [t.task_id for t in kept_tasks] or 'nothing'}")


def fuzz_table(rows: dict[str, list[int]]) -> str:
    """The closing-note table: variants, crashes, silent acceptances and reads outside the corpus per kind (and, for
    rows of five, answers paid twice: the family modules' table, `test_every_family_module_...`)."""
    paid = any(len(row) > 4 for row in rows.values())
    lines = ["| variant kind | variants | crashes or hangs | silent acceptances | reads outside the corpus |"
             + (" paid twice |" if paid else ""), "|---|---:|---:|---:|---:|" + ("---:|" if paid else "")]
    rows = {k: [*row, 0][:5] if paid else row for k, row in rows.items()}
    total = [0] * (5 if paid else 4)
    for family, row in sorted(rows.items()):
        lines.append(f"| {family} | " + " | ".join(map(str, row)) + " |")
        total = [a + b for a, b in zip(total, row)]
    lines.append("| **all** | " + " | ".join(f"**{n}**" for n in total) + " |")
    return "\n".join(lines)


def _family(v: Variant) -> str:
    return v.family or f"{v.corpus} {v.name.split('-')[0]} (earlier suite)"


TIME_LIMIT_S = 120
"""Seconds one corpus's ingest (all its variants) may take; past it the child is killed and counted as a hang."""
MEMORY_LIMIT_BYTES = 3 * 1024**3
"""Address space the child that ingests one corpus may add to what it inherited (RLIMIT_AS): a variant that makes the
reader hold a sparse multi-gigabyte file fails the corpus with MemoryError instead of taking the machine. Added to
the forked child's own virtual size, since a child of a long pytest run inherits several GiB of mappings (whole-suite
runs hit MemoryError at once on a fixed 3 GiB)."""


def _virtual_size() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def _ingest_child(conn, cfg: dict, dest: Path, out: Path) -> None:
    import resource

    limit = _virtual_size() + MEMORY_LIMIT_BYTES
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    outside_reads, state = _reads_outside(dest)
    os.chdir(dest / str(cfg.get("root") or "."))  # a file opened by relative name would then pass the guard: seen here
    try:
        state["on"] = True  # the ingest reads the corpus; writing the outputs reads what it wrote
        try:
            result = ingest(cfg, dest)
        finally:
            state["on"] = False
        write_outputs(result, out)
        conn.send(("ok", result, list(outside_reads)))
    except BaseException as exc:  # noqa: BLE001 - reported as a crash of every variant of the corpus
        conn.send(("crash", f"{type(exc).__name__}: {str(exc)[:500]}", list(outside_reads)))
    finally:
        conn.close()


def ingest_limited(cfg: dict, dest: Path, out: Path) -> tuple[IngestResult | None, str | None, list[str]]:
    """`ingest(cfg, dest)` and its outputs written to `out`, in a forked child under TIME_LIMIT_S and
    MEMORY_LIMIT_BYTES: (result, None, reads outside the corpus) or (None, why it crashed or hung, reads)."""
    import multiprocessing as mp

    import pandas  # noqa: F401 - imported once here, not in every child (3 s each under load)
    import pyarrow.parquet  # noqa: F401

    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_ingest_child, args=(child, cfg, dest, out))
    proc.start()
    child.close()
    try:
        if not parent.poll(TIME_LIMIT_S):
            proc.kill()
            return None, f"hung: no result within {TIME_LIMIT_S} s", []
        status, payload, reads = parent.recv()
    except EOFError:
        proc.join(5)
        return None, f"crashed: the child exited with {proc.exitcode} (killed for memory?)", []
    finally:
        proc.join(10)
        if proc.is_alive():
            proc.kill()
    return (payload, None, reads) if status == "ok" else (None, f"crashed: {payload}", reads)


def run_fuzz(dest: Path, made: list[Variant], configs: dict, out: Path) -> tuple[dict[str, list[int]], list[str], list[str]]:
    """Ingest every corpus (each under a time and memory limit) and write its outputs; per variant kind
    [variants, crashes or hangs, silent acceptances, reads outside the corpus]."""
    outside_reads: list[str] = []
    rows: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    problems: list[str] = []
    results: dict[str, IngestResult | None] = {}
    for name, cfg in configs.items():
        results[name], why, reads = ingest_limited(cfg, dest, out / name)
        outside_reads += reads
        if why:
            problems.append(f"{name}: {why}")
    for v in made:
        row = rows[_family(v)]
        row[0] += 1
        res = results[v.corpus]
        if res is None:
            row[1] += 1
            continue
        problem = check_variant(v, res)
        if problem:
            row[2] += 1
            problems.append(problem)
    for read in outside_reads:
        rows["(any)"][3] += 1
        problems.append(f"read outside the corpus: {read}")
    return rows, problems, [str(r) for r in outside_reads]


def test_at_least_250_variants_over_four_formats_ingest_without_a_crash_and_every_bad_item_is_named(variants, tmp_path, capsys):
    dest, made = variants
    assert {v.corpus for v in made} == set(CONFIGS)
    rows, problems, outside = run_fuzz(dest, made, CONFIGS, tmp_path)
    with capsys.disabled():
        print(f"\ncorpus fuzz suite ({len(made)} variants, permission variants in the next test):\n{fuzz_table(rows)}")
    assert not problems, "\n".join(problems)
    formats = {str(CONFIGS[v.corpus].get("format") or "harbor") for v in made}
    if "inspect39" in CONFIGS:  # the optional extra `inspect` is installed
        assert formats == {"harbor", "terminal-bench-1", "swe-bench", "inspect"}
    assert len(made) >= 250  # and the permission variants, read as a user that is not root
    # the valid items are still read: one bad item never aborts the corpus
    tasks = {json.loads(line)["task_id"] for line in (tmp_path / "harbor" / "tasks.jsonl").read_text().splitlines()}
    assert {"t-ok", "t-parametrize-bomb", "t-m-instruction-bom", "t-m-toml-bom"} <= tasks
    trajectories = [json.loads(line) for line in (tmp_path / "harbor" / "trajectories.jsonl").read_text().splitlines()]
    assert any(t["trial"] == "t-ok__good" for t in trajectories)
    swe = [json.loads(line) for line in (tmp_path / "swe" / "trajectories.jsonl").read_text().splitlines()]
    assert any(t["task_id"] == "ok-1" for t in swe)
    # a folder link back up is one exclusion, not a walk 40 links deep
    for name in ("harbor", "tb1"):
        reasons = [json.loads(line)["reason"] for line in (tmp_path / name / "exclusions.jsonl").read_text().splitlines()]
        assert sum("folder link loop" in r for r in reasons) == 1, name
        assert not any("zz-loop/" in r for r in reasons), name
    # nothing from outside reaches any output; no byte-order mark and no absolute path of this machine either
    machine = {os.fspath(dest).encode(), os.path.realpath(dest).encode()}
    for path in tmp_path.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert SECRET_MARKER.encode() not in data, path
            assert b"root:x:0:0" not in data, path
            assert "\ufeff".encode() not in data, path
            assert not any(m in data for m in machine), (path, [m for m in machine if m in data])


def _as_nobody() -> list[str] | None:
    """The command prefix that runs a process as `nobody`, or None when this process cannot switch users."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    return [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]


_PERMISSION_WORKER = """
import json, os, sys
sys.path.insert(0, sys.argv[3])
from pathlib import Path
from test_corpus_hostile import run_fuzz, fuzz_table
from malformed.make_variants import PERMISSION_CONFIGS, Variant
made = [Variant(**v) for v in json.loads(Path(sys.argv[2]).read_text())]
rows, problems, outside = run_fuzz(Path(sys.argv[1]), made, PERMISSION_CONFIGS, Path(sys.argv[1]) / "out")
machine = {sys.argv[1].encode(), os.path.realpath(sys.argv[1]).encode()}
for path in sorted((Path(sys.argv[1]) / "out").rglob("*")):
    if path.is_file() and any(m in path.read_bytes() for m in machine):
        problems.append(f"{path}: holds an absolute path of this machine")
print(json.dumps({"rows": rows, "problems": problems, "uid": os.geteuid()}))
"""


def test_unreadable_files_and_folders_are_named_exclusions_when_read_as_a_user_that_is_not_root(variants, capsys):
    """A trial, job or task folder (Harbor and Terminal-Bench 1) or a file that cannot be read (mode 000) is an
    exclusion or a note naming it; the ingest goes on. Run as `nobody` (root reads everything)."""
    prefix = _as_nobody()
    if prefix is None:
        pytest.skip("running as root and setpriv is not installed: cannot read as a user that is not root")
    probe = subprocess.run([*prefix, sys.executable, "-c", "import test_corpus_hostile, gcpc"], capture_output=True,
                           env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), str(REPO / "src")]),
                                "PYTHONDONTWRITEBYTECODE": "1"}, cwd="/", timeout=120)
    if probe.returncode != 0:  # e.g. a clone inside a `mktemp -d` folder (mode 700): the test code is unreadable to nobody
        pytest.skip(f"the repository at {REPO} is not readable by the unprivileged user, so its code cannot run as that user")
    dest = Path(tempfile.mkdtemp(prefix="gcpc-perm-"))
    try:
        dest.chmod(0o755)
        made = make_permission_corpora(dest)
        (dest / "out").mkdir()
        (dest / "out").chmod(0o777)
        spec = dest / "variants.json"
        spec.write_text(json.dumps([v.__dict__ for v in made]))
        spec.chmod(0o644)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), str(REPO / "src")]),
               "PYTHONDONTWRITEBYTECODE": "1", "HOME": str(dest)}
        proc = subprocess.run([*prefix, sys.executable, "-c", _PERMISSION_WORKER, str(dest), str(spec), str(REPO / "tests")],
                              capture_output=True, text=True, env=env, cwd=dest, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        report = json.loads(proc.stdout.strip().splitlines()[-1])
        assert report["uid"] != 0
        with capsys.disabled():
            print(f"\npermission variants (read as uid {report['uid']}):\n{fuzz_table(report['rows'])}")
        assert not report["problems"], "\n".join(report["problems"])
        assert sum(r[0] for r in report["rows"].values()) == len(made) >= 10
    finally:
        for p in sorted(dest.rglob("*"), key=lambda p: len(p.parts)):
            try:
                if not p.is_symlink():
                    p.chmod(0o755)
            except OSError:
                pass
        shutil.rmtree(dest, ignore_errors=True)


@pytest.mark.parametrize("root", ["/", "..", "~"])
def test_a_corpus_root_that_would_widen_the_boundary_is_refused(tmp_path, root):
    (tmp_path / "repo").mkdir()
    cfg = {"name": "wide", "benchmark": "b", "root": os.path.expanduser(root), "tasks_dir": "."}
    with pytest.raises(ValueError, match="corpus config 'wide': root .* resolves to"):
        ingest(cfg, tmp_path / "repo")


def test_the_bytecode_cache_counts_as_the_installation(tmp_path, monkeypatch):
    """With PYTHONPYCACHEPREFIX (the test suite sets one), an import inside the ingest reads its compiled code from
    that folder: the guard lets it through like the installation, instead of counting a refusal per module."""
    prefix = tmp_path / "pycache"
    prefix.mkdir()
    monkeypatch.setattr(sys, "pycache_prefix", str(prefix))
    dirs = guard._system_dirs()
    assert os.path.realpath(prefix) in dirs and os.path.realpath(tmp_path) not in dirs


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
    with pytest.raises(ValueError, match=r"tasks/evil;rm -rf ~;\$\(id\): task folder name .* is not an id"):
        ingest({**CONFIGS["harbor"], "strict": True}, dest)  # the first task folder in order
    evil = dest / "harbor" / "tasks" / "evil;rm -rf ~;$(id)"
    evil.rename(evil.with_name("_evil"))  # a name the task reader skips
    try:
        with pytest.raises(guard.OutsideCorpus, match="t-instruction-link-outside/instruction.md"):
            ingest({**CONFIGS["harbor"], "strict": True}, dest)
    finally:
        evil.with_name("_evil").rename(evil)  # the module's corpora as they were (later tests read them)


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


def family_modules() -> list[str]:
    """Every module of tests/malformed with a `fuzz_families(tmp) -> {family: [tried, crashes, silent, outside, paid
    twice]}`: a session adding attacks adds a module there, and the table below holds its families (no shared lines
    to edit)."""
    import importlib
    import pkgutil

    names = sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).resolve().parent / "malformed")]))
    return [n for n in names if hasattr(importlib.import_module(f"malformed.{n}"), "fuzz_families")]


def test_every_family_module_holds_with_zero_crashes_silent_outside_and_paid_twice(tmp_path, capsys):
    """The fuzz suite's families in tests/malformed modules (issue 47's: config values, batch end states, the four
    corpus cases; other sessions' modules join by defining `fuzz_families`): the summary table, all zeros."""
    import importlib

    modules = family_modules()
    assert {"issue47_batch", "issue47_config", "issue47_corpus"} <= set(modules)
    rows: dict[str, list[int]] = {}
    problems: list[str] = []
    for name in modules:
        fn = importlib.import_module(f"malformed.{name}").fuzz_families
        got = fn(tmp_path / name)
        assert not set(got) & set(rows), f"{name}: a family name used twice"
        rows.update(got)
        problems += [f"{name}: {p}" for p in getattr(fn, "problems", [])]
    with capsys.disabled():
        print(f"\nfuzz families of tests/malformed ({', '.join(modules)}):\n{fuzz_table(rows)}")
    bad = {family: row for family, row in rows.items() if any(row[1:])}
    assert not bad, f"{bad}\n" + "\n".join(problems)
    assert sum(row[0] for row in rows.values()) >= 100
