"""Reading trials in worker processes, with results in input order.

Trials are independent (one folder in, one Trajectory or Exclusion out), so ingest can spread them
over processes. Results come back in the order of the inputs (`Pool.imap`), so the written outputs
are byte-identical for every worker count, 1 included. Workers read inside the same corpus
boundary as the parent (`guard.confined`), and reads they refuse are added to the parent's
boundary, so the hostile-corpus checks see them as if read in one process.
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from gcpc.corpus import guard

T = TypeVar("T")
R = TypeVar("R")

MAX_WORKERS = 8
"""Default cap: beyond this the parent (unpickling, de-duplication, writing) is the limit."""
MIN_ITEMS_PER_WORKER = 32
"""Fewer items than this per worker: starting processes costs more than it saves (the demo's 20 trials)."""


def default_workers() -> int:
    """Worker processes when none are configured: the CPUs this process may use, at most MAX_WORKERS."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_WORKERS))


def resolve_workers(value: Any, where: str = "ingest.workers") -> int:
    """`null`/`auto`/0 -> `default_workers()`; a positive integer as given; anything else is an error."""
    if value is None or value == "auto" or value == 0:
        return default_workers()
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{where}: must be a positive integer, 0 or 'auto' (one per CPU, at most {MAX_WORKERS}), "
                         f"got {value!r}")
    return value


_fn: Callable[[Any], Any] | None = None


def _init(fn: Callable[[Any], Any], roots: Sequence[str] | None) -> None:
    global _fn
    _fn = fn
    if roots is not None:
        guard.confined(roots).__enter__()  # for the life of the worker process


def _call(item: Any) -> tuple[Any, list[str]]:
    assert _fn is not None
    boundary = guard._active.get()
    before = len(boundary.refused) if boundary is not None else 0
    out = _fn(item)
    return out, (boundary.refused[before:] if boundary is not None else [])


@contextmanager
def few_full_collections() -> Iterator[None]:
    """Within the block the garbage collector runs no full (oldest-generation) collection, restored after.

    Reading a corpus allocates millions of small objects and keeps most of them (the results), so
    each full collection walks everything read so far and frees almost nothing: 9 of them were 0.6 s
    of a 10 s single-process ingest of the shared TB1 set. Young objects are still collected."""
    old = gc.get_threshold()
    gc.set_threshold(old[0], old[1], max(old[2], 100_000))
    try:
        yield
    finally:
        gc.set_threshold(*old)


def map_ordered(fn: Callable[[T], R], items: Sequence[T], workers: int = 1,
                min_items: int | None = None) -> list[R]:
    """`[fn(x) for x in items]`, computed in up to `workers` processes (fewer for few items: at least
    `min_items` per worker, default `MIN_ITEMS_PER_WORKER`; a caller whose items are large, such as whole
    runs, passes 1).

    `fn` must be picklable (a module-level function or a `functools.partial` of one) where the
    platform cannot fork. An exception in `fn` is raised here, as in the serial loop."""
    with few_full_collections():  # inherited by forked workers
        return _map_ordered(fn, items, workers, MIN_ITEMS_PER_WORKER if min_items is None else min_items)


def _map_ordered(fn: Callable[[T], R], items: Sequence[T], workers: int, min_items: int) -> list[R]:
    n = min(workers, len(items) // max(1, min_items))
    if n <= 1:
        return [fn(x) for x in items]
    boundary = guard._active.get()
    method = "fork" if "fork" in mp.get_all_start_methods() else None
    ctx = mp.get_context(method)
    out: list[R] = []
    chunk = max(1, min(16, len(items) // (n * 16)))
    with ctx.Pool(n, initializer=_init, initargs=(fn, boundary.roots if boundary is not None else None)) as pool:
        for result, refused in pool.imap(_call, items, chunksize=chunk):
            if boundary is not None:
                boundary.refused.extend(refused)
            out.append(result)
    return out
