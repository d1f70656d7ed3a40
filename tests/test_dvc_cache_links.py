"""Outputs are stored once: the repository's DVC config links outputs to the cache (hardlink or symlink;
copy only where neither works), and a persisted output (the judge call stores, appended to on resume)
is unprotected by DVC before its stage runs again, so appending never writes into the cache.

Runs DVC on a two-stage toy project that uses this repository's own `.dvc/config` (seconds). Its outputs
are folders, as every stage output of the pipeline is: with `reflink` first in `cache.type`, DVC 3.67
copied each file of a folder output into the cache on ext4 (a file output was linked), so the pipeline's
outputs were stored twice while a file-output toy passed (issue 29)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DVC = [sys.executable, "-m", "dvc"]


def _run(args: list[str], cwd: Path) -> str:
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_repository_links_outputs_to_the_cache():
    from dvc.config import Config

    cfg = Config(dvc_dir=str(ROOT / ".dvc"), validate=True)
    types = cfg["cache"]["type"]
    assert types == ["hardlink", "symlink", "copy"]


def _linked(out: Path, cache: Path) -> bool:
    st = out.lstat()
    if out.is_symlink():
        return Path(os.path.realpath(out)).is_relative_to(cache.resolve())
    return st.st_nlink >= 2 or any(p.stat().st_ino == st.st_ino for p in cache.rglob("*") if p.is_file())


@pytest.mark.skipif(shutil.which("git") is None, reason="git is needed for a DVC project")
def test_outputs_are_links_and_a_persisted_output_is_unprotected_before_its_stage(tmp_path):
    proj = tmp_path / "p"
    proj.mkdir()
    _run(["git", "init", "-q"], proj)
    _run([*DVC, "init", "-q"], proj)
    shutil.copy(ROOT / ".dvc" / "config", proj / ".dvc" / "config")
    (proj / "in.txt").write_text("input\n")
    # `store` appends a line to a persisted output, as a resumed judge stage appends to its call store
    (proj / "dvc.yaml").write_text(
        "stages:\n"
        "  make:\n"
        "    cmd: python -c \"import pathlib; pathlib.Path('o').mkdir(exist_ok=True); "
        "pathlib.Path('o/out.txt').write_text(open('in.txt').read() * 1000)\"\n"
        "    deps: [in.txt]\n"
        "    outs: [o]\n"
        "  store:\n"
        "    cmd: python -c \"import pathlib; pathlib.Path('s').mkdir(exist_ok=True); "
        "open('s/calls.txt', 'a').write(open('in.txt').read())\"\n"
        "    deps: [in.txt]\n"
        "    outs:\n"
        "      - s:\n"
        "          persist: true\n")
    _run([*DVC, "repro", "-q"], proj)
    cache = proj / ".dvc" / "cache"
    first = (proj / "s" / "calls.txt").read_text()
    cached_before = {p: p.read_bytes() for p in cache.rglob("*") if p.is_file()}
    assert _linked(proj / "o" / "out.txt", cache) or _only_copies_work(tmp_path)
    assert _linked(proj / "s" / "calls.txt", cache) or _only_copies_work(tmp_path)
    (proj / "in.txt").write_text("changed\n")
    _run([*DVC, "repro", "-q"], proj)
    assert (proj / "s" / "calls.txt").read_text() == first + "changed\n"
    for p, data in cached_before.items():  # the append went to an unprotected copy, not into the cache
        assert p.read_bytes() == data, f"{p} changed in the cache"


def _only_copies_work(tmp: Path) -> bool:
    """True when this file system refuses both hard and symbolic links (DVC then copies, by design)."""
    a = tmp / "link-probe"
    a.write_text("x")
    for make in (os.link, os.symlink):
        try:
            make(a, tmp / f"link-probe-{make.__name__}")
            return False
        except OSError:
            continue
    return True


def test_a_call_store_run_by_hand_appends_to_a_copy_not_through_the_cache_link(tmp_path):
    """A judge stage run by hand (no DVC to unprotect its persisted call store) must not append into the
    cache object its hardlinked or symlinked store shares (gcpc.io.own_file)."""
    from gcpc.llm.base import CallRecord
    from gcpc.llm.store import CallStore

    out = tmp_path / "judge"
    store = CallStore(out / "llm_calls.jsonl")
    store.append(CallRecord(key="k1", attempt=1, purpose="judgment:x", provider="heuristic", model="m",
                            request={"messages": [{"role": "user", "content": "q" * 600}]}, ok=True,
                            response_text="{}", parsed={}))
    store.close()
    cache = tmp_path / "cache"
    cache.mkdir()
    for i, f in enumerate(sorted(p for p in out.iterdir() if p.is_file())):
        target = cache / f"obj{i}"
        os.link(f, target) if i % 2 == 0 else (shutil.copy(f, target), f.unlink(), f.symlink_to(target))
    before = {p.name: p.read_bytes() for p in cache.iterdir()}
    store = CallStore(out / "llm_calls.jsonl")
    store.append(CallRecord(key="k2", attempt=1, purpose="judgment:x", provider="heuristic", model="m",
                            request={"messages": [{"role": "user", "content": "r" * 600}]}, ok=True,
                            response_text="{}", parsed={}))
    store.close()
    assert {p.name: p.read_bytes() for p in cache.iterdir()} == before
    assert {r.key for r in CallStore(out / "llm_calls.jsonl").records()} == {"k1", "k2"}
