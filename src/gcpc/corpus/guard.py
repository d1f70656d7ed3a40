"""Hostile corpora: nothing outside the corpus is read, and one bad item never aborts the rest.

Corpora are third-party data; a trial folder can hold a symlink to `/etc/passwd` or `~/.ssh`, and
whatever a reader reads may become judge-visible events sent to a paid provider. Two lines of
defence, both active only inside `confined(...)` (the ingest of one corpus):

* readers ask `outside_links(folder)` before reading a trial or task folder and exclude it, naming
  the link and its target, when a link inside it resolves outside the corpus;
* an audit hook (`sys.addaudithook`) refuses any read of a file, and any directory listing, whose
  resolved path lies outside the corpus roots (the Python installation and its bytecode cache excepted, for imports):
  the read raises `OutsideCorpus` (a `PermissionError` naming the path), which the readers turn
  into a per-trial or per-task exclusion like any unreadable file. Every refusal is counted on the
  boundary (`Boundary.refused`), so tests can assert that none happened unrefused.

`read_guarded` runs one reader call and turns any exception into an exclusion reason naming the
item (the `strict` corpus switch re-raises instead).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


class OutsideCorpus(PermissionError):
    """A read that would leave the corpus (a symlink, or a path, resolving outside every corpus root)."""


def _system_dirs() -> tuple[str, ...]:
    """The Python installation, the import path and the bytecode cache: what an import inside the ingest reads.
    With PYTHONPYCACHEPREFIX set, a module's compiled code is read from that folder, not beside its source;
    refusing it would not stop the import (importlib compiles the source instead) but would count a refusal
    for every module first imported inside the ingest."""
    dirs = {sys.prefix, sys.base_prefix, sys.exec_prefix, str(Path(__file__).resolve().parents[2])}
    dirs.update(p for p in sys.path if p and os.path.isdir(p))
    if sys.pycache_prefix:
        dirs.add(sys.pycache_prefix)
    return tuple(sorted({os.path.realpath(d) for d in dirs}))


@dataclass
class Boundary:
    roots: tuple[str, ...]
    refused: list[str] = field(default_factory=list)
    """Reads and listings refused by the audit hook ('path -> resolved target')."""
    _dirs: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    """realpath of every folder resolved so far (`realpath`), for the life of the boundary."""

    def __post_init__(self) -> None:
        self._prefixes = tuple(r.rstrip(os.sep) + os.sep for r in self.roots)

    def inside(self, path: str | os.PathLike[str]) -> bool:
        return self.inside_real(self.realpath(path))

    def inside_real(self, real: str) -> bool:
        """`inside` for a path already resolved (no second `realpath`)."""
        return real in self.roots or real.startswith(self._prefixes)

    def realpath(self, path: str | os.PathLike[str]) -> str:
        """`os.path.realpath(path)`, with the folders above the last component resolved once per boundary.

        The audit hook resolves every file opened and every folder listed; `os.path.realpath` checks each
        component of the path with one `lstat` (twelve for a trial's agent log), and was a fifth of the
        ingest's time. Here only the last component is checked (is it a link?) and its folder's real path
        comes from the cache, so the result is the same as long as no folder of the corpus is replaced by a
        link while the corpus is read (the corpus is read as it was when its folders were first seen)."""
        path = os.fspath(path)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        head, tail = os.path.split(path)
        if not head or tail in ("", ".", "..") or not os.path.isabs(head):
            return os.path.realpath(path)
        real_head = self._dirs.get(head)
        if real_head is None:
            real_head = self._dirs[head] = os.path.realpath(head)
        try:
            is_link = stat.S_ISLNK(os.lstat(path).st_mode)
        except OSError:
            is_link = False  # as realpath (not strict): a missing component is kept as written
        if is_link:
            return os.path.realpath(path)
        return os.path.join(real_head, tail)


_active: ContextVar[Boundary | None] = ContextVar("gcpc_corpus_boundary", default=None)
_hook_installed = False
_system: tuple[str, ...] = ()
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def _is_system(real: str) -> bool:
    return any(real == d or real.startswith(d.rstrip(os.sep) + os.sep) for d in _system)


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if event not in ("open", "os.listdir", "os.scandir"):
        return
    boundary = _active.get()
    if boundary is None or not args:
        return
    path = args[0]
    if isinstance(path, int) or path is None:
        return
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if event == "open":
        mode, flags = (args[1] if len(args) > 1 else None), (args[2] if len(args) > 2 else 0)
        if (isinstance(mode, str) and any(c in mode for c in "wax+")) or (isinstance(flags, int) and flags & _WRITE_FLAGS):
            return  # writes are not reads of the corpus
    try:
        real = boundary.realpath(path)
    except (TypeError, ValueError):
        return
    if boundary.inside_real(real) or _is_system(real):
        return
    boundary.refused.append(f"{os.fspath(path)} -> {real}")
    raise OutsideCorpus(f"{os.fspath(path)}: refused, resolves outside the corpus root ({real})")


@contextmanager
def confined(roots: Sequence[str | os.PathLike[str]]) -> Iterator[Boundary]:
    """Within the block, reads outside `roots` (after resolving links) raise OutsideCorpus."""
    global _hook_installed, _system
    if not _hook_installed:
        _system = _system_dirs()
        sys.addaudithook(_hook)
        _hook_installed = True
    boundary = Boundary(tuple(sorted({os.path.realpath(r) for r in roots})))
    token = _active.set(boundary)
    try:
        yield boundary
    finally:
        _active.reset(token)


def outside_links(folder: Path, *, display: Callable[[Path], str] = lambda p: p.as_posix()) -> list[str]:
    """Links at or below `folder` that resolve outside the active boundary: 'link -> target' (empty without one)."""
    boundary = _active.get()
    if boundary is None:
        return []
    found = []
    candidates = [folder] if folder.is_symlink() else _links_below(os.fspath(folder))
    for p in sorted(candidates):
        if not boundary.inside(p):
            found.append(f"{display(p)} -> {os.path.realpath(p)}")
    return found


def _links_below(top: str) -> list[Path]:
    """The links at any depth below folder `top` (not followed): what `os.walk(top, followlinks=False)` with
    errors ignored lists and `Path.is_symlink` accepts, from each listing's entry types (no `lstat` per name;
    the walk was 5 % of a Terminal-Bench 1 ingest). Listing the same folders, so the audit hook sees the same."""
    out: list[Path] = []
    try:
        with os.scandir(top) as it:
            entries = list(it)
    except OSError:  # as os.walk's ignored onerror (a refused listing is still counted by the hook)
        return out
    for entry in entries:
        try:
            is_link = entry.is_symlink()
        except OSError:  # as Path.is_symlink
            is_link = False
        if is_link:
            out.append(Path(entry.path))
            continue
        try:
            is_dir = entry.is_dir()
        except OSError:  # as os.walk: not a folder
            is_dir = False
        if is_dir:
            out += _links_below(entry.path)
    return out


def allowed(path: Path) -> bool:
    """False for a path that resolves outside the active boundary (always True without one)."""
    boundary = _active.get()
    return boundary is None or boundary.inside(path)


def describe(exc: BaseException) -> str:
    """An exception as an exclusion reason: its message (which names the file), else its type."""
    if isinstance(exc, RecursionError):
        return "nested too deeply to parse (depth limit)"
    if isinstance(exc, MemoryError):
        return "too large to parse (out of memory)"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def read_guarded(fn: Callable[[], T], *, what: str, strict: bool = False) -> tuple[T | None, str | None]:
    """(result, None), or (None, '<what>: <why>') when the reader raised; strict re-raises."""
    try:
        return fn(), None
    except Exception as exc:  # noqa: BLE001 - any reader failure becomes a named exclusion
        if strict:
            raise
        return None, f"{what}: {describe(exc)}"
