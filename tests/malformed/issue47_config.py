"""Issue 47, item 4: data-config values of the wrong type or outside their words, tried as a user would write them.

Each variant is the `data` section of params.yaml (a Harbor corpus whose one trials folder may be `/etc`, or a path
above the corpus root) with one bad value. Expected: the ingest stage (`gcpc.corpus.ingest.run`) refuses it with
one `ConfigError` line naming the config file and the field, before it opens or lists any file (an audit hook
records every open and listing while it runs). A value that got through, or another exception, is counted.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ConfigVariant:
    name: str
    over: dict[str, Any]
    field: str  # what the error must name


BAD_BOOLEANS = [("string false", "false"), ("string no", "no"), ("string true", "true"), ("list", ["/etc"]),
                ("mapping", {"path": "/etc"}), ("int 2", 2), ("int 1", 1), ("int 0", 0), ("empty string", ""),
                ("float", 1.0)]
BAD_ACTIONS = [("false", False), ("0", 0), ("true", True), ("1", 1), ("empty string", ""), ("capitalised", "Note"),
               ("upper case", "EXCLUDE"), ("list", ["note"]), ("mapping", {"note": True}), ("other word", "drop")]
UNKNOWN_KEYS = ["on_contradictions", "allow_outside", "reward_keys", "trial_dirs", "task_dir", "Format",
                "allow_outside_roots", "rewardkey"]
BAD_REWARD_KEYS = [("int", 1), ("list", ["reward"]), ("mapping", {"k": 1}), ("true", True), ("empty string", "")]
NO_REWARD_FILE = [("terminal-bench-1", {"format": "terminal-bench-1"}), ("swe-bench", {"format": "swe-bench",
                  "tasks_file": "instances.jsonl"}), ("inspect", {"format": "inspect"})]
BAD_STRICT = [("string false", "false"), ("string yes", "yes"), ("int 1", 1)]
BAD_RENDER = [("string", "100"), ("true", True), ("negative", -5), ("zero", 0)]


def variants() -> list[ConfigVariant]:
    out = [ConfigVariant(f"allow_outside_root {n}", {"allow_outside_root": v, "trials_dirs": ["/etc"]}, "allow_outside_root")
           for n, v in BAD_BOOLEANS]
    out += [ConfigVariant(f"allow_outside_root {n}, a path above the root", {"allow_outside_root": v, "tasks_dir": "../outside"},
                          "allow_outside_root") for n, v in BAD_BOOLEANS[:5]]
    out += [ConfigVariant(f"on_contradiction {n}", {"on_contradiction": v}, "on_contradiction") for n, v in BAD_ACTIONS]
    out += [ConfigVariant(f"unknown key {k}", {k: "exclude"}, k) for k in UNKNOWN_KEYS]
    out += [ConfigVariant(f"reward_key {n}", {"reward_key": v}, "reward_key") for n, v in BAD_REWARD_KEYS]
    out += [ConfigVariant(f"reward_key with format {n}", {"reward_key": "score", **o}, "reward_key") for n, o in NO_REWARD_FILE]
    out += [ConfigVariant(f"strict {n}", {"strict": v}, "strict") for n, v in BAD_STRICT]
    out += [ConfigVariant(f"render_max_chars {n}", {"render_max_chars": v}, "render_max_chars") for n, v in BAD_RENDER]
    out += [ConfigVariant(f"corpora[0] {v.name}", {"corpora": [{"benchmark": "b", "tasks_dir": "tasks", "trials_dirs": ["jobs"],
                                                                **v.over}]}, f"corpora[0].{v.field}")
            for v in out[:: 4]]
    return out


def make_corpus(tmp: Path) -> Path:
    """A small Harbor corpus (one task, no trials) under tmp/repo/corpus, a secret file beside it."""
    corpus = tmp / "repo" / "corpus"
    (corpus / "tasks" / "t1").mkdir(parents=True)
    (corpus / "tasks" / "t1" / "instruction.md").write_text("Write hello.\n")
    (corpus / "jobs").mkdir()
    (tmp / "repo" / "outside").mkdir()
    (tmp / "repo" / "outside" / "secret.txt").write_text("secret\n")
    return tmp / "repo"


_WATCH: dict[str, Any] = {"on": False, "seen": []}


def _hook(event: str, args: tuple) -> None:
    if _WATCH["on"] and event in ("open", "os.listdir", "os.scandir") and args and isinstance(args[0], (str, bytes, os.PathLike)):
        path = os.fsdecode(args[0]) if isinstance(args[0], bytes) else os.fspath(args[0])
        cache = sys.pycache_prefix  # bytecode written or read there by an import (PYTHONPYCACHEPREFIX; tests/conftest.py)
        if not path.startswith(sys.prefix) and not path.startswith(sys.base_prefix) and "site-packages" not in path \
                and not path.endswith((".py", ".pyc", ".so")) and not (cache and path.startswith(cache)):
            _WATCH["seen"].append(f"{event} {path}")


def try_variant(v: ConfigVariant, repo: Path) -> tuple[str, str]:
    """('refused' | 'silent' | 'crash', what happened); files opened before the refusal make it 'outside'."""
    from gcpc.corpus.ingest import run
    from gcpc.errors import ConfigError

    if not _WATCH.get("installed"):
        sys.addaudithook(_hook)
        _WATCH["installed"] = True
    data = {"name": "hostile", "root": "corpus", "benchmark": "b", "tasks_dir": "tasks", "trials_dirs": ["jobs"],
            "out_dir": "out", **v.over}
    if "corpora" in v.over:
        data = {"name": "hostile", "root": "corpus", "out_dir": "out", "corpora": v.over["corpora"]}
    _WATCH["seen"] = []
    _WATCH["on"] = True
    try:
        run(data, repo, workers=1)
    except ConfigError as exc:
        message = str(exc)
        named = all(part in message for part in v.field.split("."))
        if "\n" in message or "params.yaml data (conf/data/hostile.yaml)" not in message or not named:
            return "silent", f"refused without naming the file and {v.field}: {message}"
        if _WATCH["seen"]:
            return "outside", f"opened before refusing: {_WATCH['seen'][:3]}"
        return "refused", message
    except Exception as exc:  # noqa: BLE001 - any other exception is a traceback for the user
        return "crash", f"{type(exc).__name__}: {exc}"
    finally:
        _WATCH["on"] = False
    return "silent", "accepted"


def fuzz_families(tmp: Path) -> dict[str, list[int]]:
    """Rows of the hostile suite's summary table: [tried, crashes, silent, outside, paid twice]."""
    repo = make_corpus(tmp)
    row = [0, 0, 0, 0, 0]
    for v in variants():
        verdict, _ = try_variant(v, repo)
        row[0] += 1
        row[1] += verdict == "crash"
        row[2] += verdict == "silent"
        row[3] += verdict == "outside"
    return {"config values in a data config (issue 47)": row}
