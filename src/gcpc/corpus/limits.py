"""Every bound on what a corpus reader accepts, in one place (issue 39; docs/corpus-rules.md lists them).

A corpus is third-party data: a sparse multi-gigabyte `results.json`, a FIFO where a report should be, a
zipped log whose sample inflates a thousandfold or a 5,000-digit integer must cost one item (excluded or
noted, naming the file), never the whole ingest (a `MemoryError`, a hang, a traceback). The readers go
through `read_bounded` (files read whole) or `check_file` (files streamed in pieces), and JSON read for
outcomes or tests through `gcpc.io.loads_trusted`, whose integer limit is `MAX_INT_DIGITS`.

* `MAX_BYTES`: bytes per file kind. A file over its kind's limit is refused before a byte is read.
* only regular files are read: a FIFO, a socket or a device is refused (opened without blocking, checked
  with `fstat` on the open descriptor, so a FIFO never hangs the reader and a swap between check and read
  is seen).
* `MAX_INFLATE_BYTES` / `MAX_INFLATE_RATIO`: an entry of a zipped log (Inspect `.eval`) whose uncompressed
  size is over either is refused before it is inflated.
* `MAX_INT_DIGITS`: digits of an integer in JSON (Python's own limit, 4,300, raises `ValueError` deep in
  the parser); `MAX_DEPTH`: nesting of JSON (deeper is a `RecursionError`, reported as such).
* `MAX_TEST_RESULTS` / `MAX_TEST_ID_CHARS`: per-test results of one trial and the length of one test id.
"""

from __future__ import annotations

import os
import stat
from gcpc.io import MAX_JSON_INT_DIGITS

MB = 1_000_000

MAX_BYTES: dict[str, int] = {
    "json": 64 * MB,  # result.json, config.json, verifier/ctrf.json, results.json, report.json, reward.json
    "instances": 1_000 * MB,  # a SWE-bench instances file (the Verified set is ~10 MB)
    "agent_log": 2_000 * MB,  # an agent log streamed in pieces (Claude Code, TB1 sessions, panes, casts)
    "traj": 500 * MB,  # a SWE-agent / mini-swe-agent trajectory, parsed whole
    "task_file": 10 * MB,  # instruction.md, task.toml, a test file parsed for its tests
    "verifier_file": MB,  # a verifier file kept as text (tests/)
    "reward": MB,  # verifier/reward.txt
    "commands": 100 * MB,  # TB1 commands.txt
    "inspect_log": 5_000 * MB,  # an Inspect `.eval` (zip, read entry by entry) or `.json` log
}
"""Bytes per file kind (1 MB = 1,000,000 bytes)."""

MAX_INFLATE_BYTES = 1_000 * MB
"""Uncompressed size of one entry of a zipped log."""
MAX_INFLATE_RATIO = 200
"""Uncompressed / compressed size of one entry of a zipped log (a sample of ordinary JSON compresses 5-20x)."""
MAX_INT_DIGITS = MAX_JSON_INT_DIGITS
"""Digits of one integer in JSON read for outcomes or tests (a reward, a count, a status code): 100, applied by
`gcpc.io.loads_trusted` (the top-level io module, below the corpus layer, holds the number)."""
MAX_DEPTH = 500
"""Nesting depth of JSON and of a parsed test file (deeper: excluded as 'nested too deeply')."""
MAX_TEST_RESULTS = 10_000
"""Per-test results of one trial (the largest real task has a few hundred tests); more: the results are not used."""
MAX_TEST_ID_CHARS = 1_000
"""Characters of one test id (the longest real parametrized id is under 300)."""
MAX_TESTS_NAMED = 5
"""Ids quoted in one note (the rest are counted)."""


class LimitExceeded(ValueError):
    """A file over its kind's limit, or not a regular file; the message names the file and the limit."""


def _kind_limit(kind: str) -> int:
    if kind not in MAX_BYTES:
        raise KeyError(f"no byte limit for file kind {kind!r} (gcpc.corpus.limits.MAX_BYTES)")
    return MAX_BYTES[kind]


def check_file(path: str | os.PathLike[str], kind: str, label: str | None = None) -> int:
    """The size of a regular file within its kind's limit; else LimitExceeded naming `label` (default: the path).
    `stat` follows links (the boundary's audit hook has checked where they lead when the file is opened)."""
    where = label or os.fspath(path)
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise LimitExceeded(f"{where}: not a regular file ({_file_type(st.st_mode)}); refused")
    limit = _kind_limit(kind)
    if st.st_size > limit:
        raise LimitExceeded(f"{where}: {st.st_size} bytes, over the {limit}-byte limit for a {kind} file; refused")
    return st.st_size


def read_bounded(path: str | os.PathLike[str], kind: str, label: str | None = None) -> bytes:
    """The bytes of a regular file of at most its kind's limit, else LimitExceeded (OSError as usual).

    Opened non-blocking (a FIFO opened for reading would wait for a writer), then checked on the descriptor,
    and read to at most limit + 1 bytes (a file that grows while read is still refused)."""
    where = label or os.fspath(path)
    limit = _kind_limit(kind)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise LimitExceeded(f"{where}: not a regular file ({_file_type(st.st_mode)}); refused")
        if st.st_size > limit:
            raise LimitExceeded(f"{where}: {st.st_size} bytes, over the {limit}-byte limit for a {kind} file; refused")
        with os.fdopen(fd, "rb", closefd=True) as fh:
            fd = -1
            data = fh.read(limit + 1)
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > limit:
        raise LimitExceeded(f"{where}: over the {limit}-byte limit for a {kind} file (grew while read); refused")
    return data


def is_regular(path: str | os.PathLike[str]) -> bool:
    """A regular file (after links); False for FIFOs, sockets, devices, folders and missing paths."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _file_type(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


def read_text_bounded(path: str | os.PathLike[str], kind: str, label: str | None = None) -> str:
    """`read_bounded` as `Path.read_text(encoding="utf-8")` gives it: UTF-8 (UnicodeDecodeError as usual), with
    universal newlines (CRLF and lone CR read as LF)."""
    return read_bounded(path, kind, label).decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
