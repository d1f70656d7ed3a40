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


def compose(output: str | Path = "params.yaml", overrides: list[str] | None = None, conf_dir: str | Path = "conf") -> None:
    """Write params.yaml from conf/ exactly as `dvc exp run` does (DVC's own Hydra composition)."""
    from dvc.utils.hydra import compose_and_dump

    conf = Path(conf_dir).resolve()
    compose_and_dump(Path(output), str(conf), None, "config", str(conf.parent), list(overrides or []))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Compose params.yaml from conf/ (what `dvc exp run` does before a run).")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. llm@judge=replay")
    parser.add_argument("--output", default="params.yaml")
    ns = parser.parse_args()
    compose(ns.output, ns.overrides)
