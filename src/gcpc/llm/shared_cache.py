"""One call cache shared by every workspace, experiment and queued worker: nothing is paid for twice.

A stage's `llm_calls.jsonl` lives in the DVC workspace, and `dvc exp run` (temporary workspaces,
queued workers) or a failed stage's cleanup can throw it away. This cache lives outside the
workspace and is content-addressed by the request key: before any call the client looks here,
and after a request reaches its final outcome (an answer, or a recorded refusal) its attempts are
stored here. A hit is copied into the stage's own call store, which stays the versioned record of
what the stage used, so outputs are byte-identical whether an answer came from the provider or
from here; the store lists the attempts it took from here beside the call file (`store.adopted_path`),
so the stage's usage reports them apart and never as calls it sent (`gcpc.llm.usage`).

Layout: `<dir>/<key[:2]>/<key>.jsonl`, the request's attempts as call-store lines (redacted like
the store). Each entry is written to a unique temporary file and linked into place, so any
number of concurrent writers is safe: a reader sees a whole entry or none, and the first writer of a
key wins (a later writer gets the held entry back and uses it: one key, one answer). An entry is a
request's settled outcome: an answer, a recorded refusal, or `max_attempts` answers that all failed
validation. Only paid providers use it (anthropic, openai); the heuristic and
replay providers cost nothing and are never cached here.

In-flight claims: two processes missing the same key at once (queued experiments run with
`dvc exp run --run-all -j 2`) would both pay for it. So before calling the provider a worker
claims the key: `<dir>/<key[:2]>/<key>.claim`, held with an exclusive `flock` for as long as the
call (and its retries) runs. A worker that finds a key claimed works on other keys and then waits
for the holder's answer to appear here. A claim is released when the outcome is stored (or the
attempts are used up). A killed worker's claim goes with it (the kernel drops the lock at once);
a holder that stops refreshing its claim (a frozen process, a lock lost on a network file system)
is stale after `CLAIM_STALE_S` seconds and the waiter asks itself.

Location: `cache_dir` in the llm config, else `$GCPC_CACHE_DIR`, else `$XDG_CACHE_HOME/gcpc/calls`
(`~/.cache/gcpc/calls`). The value `off` disables the cache; an `s3://bucket/prefix` URL puts it on an
S3-compatible object store shared by a lab's machines (`remote_cache.py`, docs/team.md).
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import threading
import time
import weakref
from pathlib import Path

from gcpc.io import canonical_json
from gcpc.llm.base import CallRecord
from gcpc.llm.secrets import redact

PAID_PROVIDERS = ("anthropic", "openai")
OFF = "off"
CLAIM_STALE_S = 60.0
"""A claim whose holder has not refreshed it for this long is given up on (its holder is frozen or gone)."""


def default_dir(configured: str | None = None) -> Path | None:
    """Where the shared cache is, or None when it is switched off."""
    value = configured or os.environ.get("GCPC_CACHE_DIR")
    if value:
        return None if value.strip().lower() == OFF else Path(value).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gcpc" / "calls"



def parse_entry(text: str, key: str) -> list[CallRecord] | None:
    """A stored entry's attempts (one JSON line each), or None when it is damaged or holds another key's records:
    a miss, replaced by a whole entry later. Shared by the disk and object-store caches."""
    try:
        records = [CallRecord.model_validate(json.loads(line)) for line in text.split("\n") if line.strip()]
    except ValueError:
        return None
    if not records or any(r.key != key for r in records):
        return None
    return records

class SharedCache:
    def __init__(self, root: str | Path, *, stale_s: float = CLAIM_STALE_S):
        self.root = Path(root)
        self.stale_s = stale_s
        self._held: dict[str, int] = {}  # key -> fd of its locked claim file
        self._lock = threading.Lock()
        self._beat: threading.Thread | None = None
        _CACHES.add(self)

    def _forked(self) -> None:
        """In a forked child: the parent's claims (and heartbeat thread) stay the parent's."""
        self._held, self._lock, self._beat = {}, threading.Lock(), None

    def path(self, key: str) -> Path:
        if len(key) < 8 or not all(c in "0123456789abcdef" for c in key):
            raise ValueError(f"shared cache: {key!r} is not a request key")
        return self.root / key[:2] / f"{key}.jsonl"

    def has(self, key: str) -> bool:
        return self.path(key).is_file()

    def get(self, key: str) -> list[CallRecord] | None:
        """The attempts stored for a request, or None. A damaged entry is a miss (and is replaced later)."""
        path = self.path(key)
        try:
            data = path.read_text(encoding="utf-8")
        except (FileNotFoundError, NotADirectoryError):
            return None
        return parse_entry(data, key)

    def put(self, key: str, records: list[CallRecord], *, replace: bool = False) -> list[CallRecord]:
        """Store a request's settled attempts unless its key is settled already; the entry that holds (the
        first writer's: one key, one answer). `replace` (an explicit re-ask, `retry_refused`) overwrites."""
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = "".join(redact(canonical_json(r)) + "\n" for r in records)
        fd, tmp = tempfile.mkstemp(prefix=f".{key[:12]}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            if not replace:
                try:
                    os.link(tmp, path)  # atomic, and fails when the key is settled already
                    return records
                except FileExistsError:
                    held = self.get(key)
                    if held is not None:
                        return held
                    # a damaged entry: replaced by a whole one below
            os.replace(tmp, path)
            return records
        finally:
            Path(tmp).unlink(missing_ok=True)

    # ---- unsettled tries (a worker killed part-way through a request's tries) ---------------------
    def tries_path(self, key: str) -> Path:
        return self.path(key).with_name(f"{key}.tries.jsonl")

    def tries(self, key: str) -> list[CallRecord] | None:
        """The invalid tries the last holder of the key's claim made without settling it, or None."""
        try:
            data = self.tries_path(key).read_text(encoding="utf-8")
            records = [CallRecord.model_validate(json.loads(line)) for line in data.split("\n") if line.strip()]
        except (FileNotFoundError, NotADirectoryError, ValueError):
            return None
        return [r for r in records if r.key == key] or None

    def put_tries(self, key: str, records: list[CallRecord]) -> None:
        """Written by the claim's holder only (one writer), replaced whole."""
        path = self.tries_path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{key[:12]}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
                fh.write("".join(redact(canonical_json(r)) + "\n" for r in records))
            os.replace(tmp, path)
        finally:
            Path(tmp).unlink(missing_ok=True)

    def drop_tries(self, key: str) -> None:
        self.tries_path(key).unlink(missing_ok=True)

    # ---- in-flight claims ---------------------------------------------------------------------
    def claim_path(self, key: str) -> Path:
        return self.path(key).with_suffix(".claim")

    def claim(self, key: str) -> bool:
        """True when this process now holds the key's claim (and so pays for the request); False when
        another live worker holds it. Holding it already counts as True."""
        with self._lock:
            if key in self._held:
                return True
        path = self.claim_path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return False
            try:
                same = os.fstat(fd).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if not same:  # the holder released (and removed) it between our open and lock: take the new one
                os.close(fd)
                continue
            os.utime(fd)
            with self._lock:
                self._held[key] = fd
                if self._beat is None:
                    self._beat = threading.Thread(target=self._heartbeat, name="gcpc-claims", daemon=True)
                    self._beat.start()
            return True

    def release(self, key: str) -> None:
        """Give the claim up (after the outcome is stored, or the attempts are used up); no-op when not held."""
        with self._lock:
            fd = self._held.pop(key, None)
        if fd is None:
            return
        try:
            self.claim_path(key).unlink(missing_ok=True)  # removed while still locked: see `claim`
        finally:
            os.close(fd)

    def claim_age(self, key: str) -> float | None:
        """Seconds since another worker's claim on `key` was last refreshed; None when there is no claim file."""
        try:
            return max(0.0, time.time() - self.claim_path(key).stat().st_mtime)
        except FileNotFoundError:
            return None

    def stale(self, key: str) -> bool:
        age = self.claim_age(key)
        return age is not None and age > self.stale_s

    def _heartbeat(self) -> None:
        """Refresh the claims this process holds, so waiters can tell a working holder from a frozen one."""
        while True:
            time.sleep(max(0.05, self.stale_s / 6))
            with self._lock:
                fds = list(self._held.values())
            for fd in fds:
                try:
                    os.utime(fd)
                except OSError:
                    pass  # released meanwhile


_CACHES: weakref.WeakSet[SharedCache] = weakref.WeakSet()
os.register_at_fork(after_in_child=lambda: [c._forked() for c in list(_CACHES)])
