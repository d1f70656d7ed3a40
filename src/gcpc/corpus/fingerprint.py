"""A trajectory's identity for de-duplication, computable where the trajectory is read.

Its own module (not in ingest) so the format readers that compute it in their worker processes
(terminal_bench1) import it without importing ingest, which imports them.
"""

from __future__ import annotations

import hashlib
from contextvars import ContextVar

from gcpc.corpus.models import Trajectory
from gcpc.corpus.render import iter_rendered

HASH_PIECE = 1_000_000


def log_fingerprint(trajectory: Trajectory) -> str:
    """Identity for de-duplication: the task plus the full (untruncated) judge-visible log
    (hashed in pieces: the same digest as hashing the whole text, without building it)."""
    h = hashlib.sha256(f"{trajectory.benchmark}\n{trajectory.task_id}\n".encode())
    for piece in iter_rendered(trajectory.events, None):
        for k in range(0, len(piece), HASH_PIECE):  # a whole-log event is not encoded in one copy
            h.update(piece[k:k + HASH_PIECE].encode("utf-8"))
    return h.hexdigest()


_known_fingerprints: ContextVar[dict[int, tuple[Trajectory, str]] | None] = ContextVar(
    "gcpc_known_fingerprints", default=None)
"""While `ingest` reads a corpus: `log_fingerprint`s already computed where a trajectory was read (a worker
process), by object; `dedupe` takes them instead of hashing every log again in the parent, serially."""


def remember_fingerprint(trajectory: Trajectory, fingerprint: str) -> None:
    """Record `log_fingerprint(trajectory)` for this `ingest` call's `dedupe` (nothing outside one)."""
    known = _known_fingerprints.get()
    if known is not None:
        known[id(trajectory)] = (trajectory, fingerprint)
