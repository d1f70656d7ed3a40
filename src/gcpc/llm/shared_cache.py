"""One call cache shared by every workspace, experiment and queued worker: nothing is paid for twice.

A stage's `llm_calls.jsonl` lives in the DVC workspace, and `dvc exp run` (temporary workspaces,
queued workers) or a failed stage's cleanup can throw it away. This cache lives outside the
workspace and is content-addressed by the request key: before any call the client looks here,
and after a request reaches its final outcome (an answer, or a recorded refusal) its attempts are
stored here. A hit is copied into the stage's own call store, which stays the versioned record of
what the stage used, so outputs are byte-identical whether an answer came from the provider or
from here.

Layout: `<dir>/<key[:2]>/<key>.jsonl`, the request's attempts as call-store lines (redacted like
the store). Each entry is written to a unique temporary file and renamed into place, so any
number of concurrent writers is safe: a reader sees a whole entry or none, and two writers of the
same key write the same answer. Only paid providers use it (anthropic, openai); the heuristic and
replay providers cost nothing and are never cached here.

Location: `cache_dir` in the llm config, else `$GCPC_CACHE_DIR`, else `$XDG_CACHE_HOME/gcpc/calls`
(`~/.cache/gcpc/calls`). The value `off` disables the cache.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from gcpc.io import canonical_json
from gcpc.llm.base import CallRecord
from gcpc.llm.secrets import redact

PAID_PROVIDERS = ("anthropic", "openai")
OFF = "off"


def default_dir(configured: str | None = None) -> Path | None:
    """Where the shared cache is, or None when it is switched off."""
    value = configured or os.environ.get("GCPC_CACHE_DIR")
    if value:
        return None if value.strip().lower() == OFF else Path(value).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gcpc" / "calls"


class SharedCache:
    def __init__(self, root: str | Path):
        self.root = Path(root)

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
        try:
            records = [CallRecord.model_validate(json.loads(line)) for line in data.split("\n") if line.strip()]
        except ValueError:
            return None
        if not records or any(r.key != key for r in records):
            return None
        return records

    def put(self, key: str, records: list[CallRecord]) -> None:
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = "".join(redact(canonical_json(r)) + "\n" for r in records)
        fd, tmp = tempfile.mkstemp(prefix=f".{key[:12]}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
