"""Stage parameters come from params.yaml, which DVC composes from conf/ (Hydra) on `dvc exp run`.

Stages never call Hydra themselves: a `@hydra.main` stage would ignore `dvc exp run -S`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import yaml


def load_params(path: str | Path = "params.yaml") -> dict[str, Any]:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: params file not found (run from the repository root)")
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: top level must be a mapping")
    return data


def section(params: dict[str, Any], dotted: str, *, source: str = "params.yaml") -> Any:
    node: Any = params
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(f"{source}: missing required key '{dotted}'")
        node = node[part]
    return node


def stage_args(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--params", default="params.yaml", help="composed parameters (default: params.yaml)")
    return parser.parse_known_args()[0]
