"""Independent parts of one stage, computed side by side in forked processes (Linux, more than one core).

An analysis stage loads its inputs once and then computes parts that read them but not each other
(RQ5's reliability, judge swap and pair diagnosis; the RQ1 figures). A child forked after loading
already holds the inputs, so only its result travels back, pickled through a pipe. The parent
computes one part itself while the children run, and returns the results in the order given: the
same values as computed one after the other in one process (the parts are pure; tests compare
both). `GCPC_ANALYSIS_WORKERS=1` computes every part in this process; elsewhere than Linux, or on
one core, that is the default.

Not `multiprocessing.Pool` (what `gcpc.corpus.parallel.map_ordered` uses for ingest's thousands of
like items): a handful of unlike parts, closures over the loaded inputs; the parent takes a part
itself instead of idling; and a child that dies, or an exception that does not unpickle, is an error
here where a Pool waits for the lost result forever (tests/test_parallel.py has both cases).
"""

from __future__ import annotations

import os
import pickle
import sys
import traceback
from collections.abc import Callable
from typing import Any

WORKERS_ENV = "GCPC_ANALYSIS_WORKERS"


def worker_count() -> int:
    """Processes to use at once: GCPC_ANALYSIS_WORKERS, else one per CPU as for ingest
    (`gcpc.corpus.parallel.default_workers`); 1 where fork is unavailable."""
    if sys.platform != "linux" or not hasattr(os, "fork"):
        return 1
    raw = os.environ.get(WORKERS_ENV, "").strip()
    if raw:
        try:
            n = int(raw)
        except ValueError:
            raise ValueError(f"{WORKERS_ENV}={raw!r}: expected a whole number of processes") from None
        if n < 1:
            raise ValueError(f"{WORKERS_ENV}={raw!r}: at least 1 process")
        return n
    from gcpc.corpus.parallel import default_workers

    return default_workers()


def _fork() -> int:
    """os.fork, flushing stdout and stderr first (nothing buffered is written twice).

    Python 3.12+ warns on every fork of a process with threads; these processes have Arrow's
    thread pools (Parquet reads), which Arrow re-creates in a forked child, and a child here only
    computes, writes one pipe or file and leaves with os._exit, so that warning is silenced here."""
    import warnings

    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*use of fork\(\) may lead to deadlocks", category=DeprecationWarning)
        return os.fork()


class PartFailed(RuntimeError):
    """A part's process ended without a result, or raised an exception that does not pickle."""


class _Child:
    def __init__(self, name: str, part: Callable[[], Any]):
        read_end, write_end = os.pipe()
        pid = _fork()
        if pid == 0:
            os.close(read_end)
            code = 0
            try:
                payload = pickle.dumps(("ok", part()), protocol=pickle.HIGHEST_PROTOCOL)
            except BaseException as exc:  # noqa: BLE001 - reported to the parent, which raises it
                code = 1
                text = f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"
                try:
                    pickled = pickle.dumps(exc)
                except Exception:  # an exception that does not pickle: its text only
                    pickled = None
                payload = pickle.dumps(("error", pickled, text))
            try:
                with os.fdopen(write_end, "wb") as fh:
                    fh.write(payload)
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)  # no atexit handlers or parent cleanup in the child
        os.close(write_end)
        self.name, self.pid, self.read_end = name, pid, read_end

    def result(self) -> Any:
        with os.fdopen(self.read_end, "rb") as fh:
            payload = fh.read()
        _, status = os.waitpid(self.pid, 0)
        if not payload:
            raise PartFailed(f"part '{self.name}': its process ended without a result (wait status {status})")
        message = pickle.loads(payload)
        if message[0] == "error":
            _, pickled, text = message
            try:
                exc = pickle.loads(pickled) if pickled is not None else None
            except Exception:  # pickles but does not unpickle (e.g. required constructor arguments)
                exc = None
            if not isinstance(exc, BaseException):
                raise PartFailed(f"part '{self.name}' failed in its process:\n{text}")
            exc.add_note(f"(raised in the process computing part '{self.name}':\n{text.rstrip()})")
            raise exc  # the part's own exception, as if computed here
        return message[1]


def run_parts(parts: dict[str, Callable[[], Any]], workers: int | None = None) -> dict[str, Any]:
    """{name: part()} for every part, at most `workers` processes at once (this one included)."""
    n = worker_count() if workers is None else max(1, int(workers))
    names = list(parts)
    if n == 1 or len(names) < 2:
        return {name: parts[name]() for name in names}
    results: dict[str, Any] = {}
    children: list[_Child] = []
    queue = list(names)
    try:
        while queue or children:
            while queue and len(children) < n - 1:
                name = queue.pop(0)
                children.append(_Child(name, parts[name]))
            if queue:  # this process takes the next part itself, then collects the children already done
                name = queue.pop(0)
                results[name] = parts[name]()
                done = _finished(children)
            else:
                done = [children[0]]
            for child in done:
                children.remove(child)
                results[child.name] = child.result()
    finally:
        for child in children:  # an error above: leave no process behind
            try:
                os.kill(child.pid, 9)
                os.waitpid(child.pid, 0)
                os.close(child.read_end)
            except OSError:
                pass
    return {name: results[name] for name in names}


def _finished(children: list[_Child]) -> list[_Child]:
    """Children whose pipe is readable: writing their result, or ended."""
    import select

    if not children:
        return []
    readable, _, _ = select.select([c.read_end for c in children], [], [], 0)
    return [c for c in children if c.read_end in readable]
