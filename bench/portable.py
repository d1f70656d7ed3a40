"""What a benchmark records in its result: the command line, written so that anyone can rerun it, the load
average, and the result file itself (`write_result`).

An argument that is an absolute path inside the repository is written relative to it; one outside
(a scratch folder, another clone, a temporary output) is replaced by a placeholder named after its
option (`--workdir /tmp/x` -> `--workdir WORKDIR`, `--out /tmp/r.json` -> `--out OUT`): that folder
is the machine's, not the benchmark's (tests/test_no_machine_paths.py scans the committed results).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _placeholder(option: str | None) -> str:
    if not option:
        return "PATH"
    return option.lstrip("-").split("=", 1)[0].replace("-", "_").upper() or "PATH"


def portable_arg(arg: str, option: str | None = None, root: Path = ROOT) -> str:
    """``arg`` as it may be written in a committed result (see the module docstring)."""
    if "=" in arg and arg.startswith("--"):
        name, value = arg.split("=", 1)
        return f"{name}={portable_arg(value, name, root)}"
    if not os.path.isabs(arg):
        return arg
    path = Path(os.path.normpath(arg))
    try:
        return path.relative_to(root.resolve()).as_posix() or "."
    except ValueError:
        return _placeholder(option)


def command_line(script: str, argv: Sequence[str], root: Path = ROOT) -> str:
    """`python SCRIPT ARGS` with every absolute path made portable; ``script`` is relative to the repository."""
    out: list[str] = []
    previous: str | None = None
    for arg in argv:
        out.append(portable_arg(arg, previous if previous and previous.startswith("-") else None, root))
        previous = arg
    return " ".join(["python", script, *out])


def load_average() -> list[float]:
    """The 1-, 5- and 15-minute load averages, rounded: every result says how busy the machine was."""
    return [round(x, 2) for x in os.getloadavg()]


def write_result(out: Path, result: dict[str, Any]) -> None:
    """`result` as sorted, indented JSON at `out` (its folder made), and the one line naming it, flagged when
    `result["meets_target"]` is false."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"-> {out}" + ("" if result["meets_target"] else "  (target not met)"))
