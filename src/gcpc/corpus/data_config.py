"""The keys a data config (conf/data/NAME.yaml) must have, checked before a run.

In corpus, not in gcpc.experiment (which calls it during composition), so the data-config writer
`gcpc.corpus.new_config` checks what it writes without importing the composition checks above it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gcpc.errors import ConfigError

DATA_REQUIRED = ("name", "root")
"""Keys every data config has; one corpus (or each of `corpora`) also needs CORPUS_REQUIRED."""
CORPUS_REQUIRED = ("benchmark", "tasks_dir", "trials_dirs")
FORMAT_DEFAULTS = {"terminal-bench-1": {"benchmark"}, "swe-bench": {"benchmark", "tasks_dir"}, "inspect": {"tasks_dir"}}
"""Keys a corpus format supplies itself (swe-bench reads `tasks_file` instead of `tasks_dir`; inspect reads its
tasks from the logs in `trials_dirs`)."""
"""Keys a corpus format supplies itself (swe-bench reads `tasks_file` instead of `tasks_dir`)."""
DATA_KEYS_DOC = {
    "name": "short name of the study population; names outputs and report headings",
    "root": "folder holding the corpus (a DVC dependency; annotations and pairs files are read under it)",
    "benchmark": "benchmark id recorded on every task and trajectory (e.g. skillsbench, terminal-bench-2)",
    "tasks_dir": "folder of task folders (instruction.md, task.toml, tests/)",
    "trials_dirs": "list of job folders holding trial folders ([] for tasks only)",
}


def plain(node: Any) -> Any:
    """OmegaConf nodes (what a resolver receives) as plain Python containers."""
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf

        if isinstance(node, DictConfig | ListConfig):
            return OmegaConf.to_container(node, resolve=True)
    except ImportError:  # pragma: no cover - omegaconf is a dependency
        pass
    return node


def _corpus_missing(c: Mapping[str, Any], prefix: str) -> list[str]:
    have = FORMAT_DEFAULTS.get(str(c.get("format") or "harbor"), set())
    if c.get("tasks_file"):
        have = have | {"tasks_dir"}
    return [f"{prefix}{k}" for k in CORPUS_REQUIRED
            if k not in have and (c.get(k) is None or (k != "trials_dirs" and c.get(k) in ("", [])))]


def check_data(data: Any, *, where: str = "data") -> str:
    """A data config has every required key (each missing one named); returns its name."""
    data = plain(data)
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: must be a mapping (a conf/data/NAME.yaml); got {type(data).__name__}")
    missing = [k for k in DATA_REQUIRED if data.get(k) in (None, "")]
    corpora = data.get("corpora")
    if corpora is None:
        missing += _corpus_missing(data, "")
        listed = [data]
    else:
        items = list(corpora.items()) if isinstance(corpora, Mapping) else list(enumerate(corpora))
        for i, c in items:
            missing += _corpus_missing(c or {}, f"corpora[{i}].")
        listed = [c or {} for _, c in items]
    if missing:
        doc = "; ".join(f"{k}: {DATA_KEYS_DOC[k.split('.')[-1]]}" for k in missing if k.split(".")[-1] in DATA_KEYS_DOC)
        raise ConfigError(f"{where}: missing required key(s) {', '.join(f'{where}.{k}' for k in missing)} ({doc}). "
                          "`python -m gcpc.corpus.new_config NAME PATH` writes a complete data config")
    from gcpc.corpus import population

    try:
        population.check(data.get("population"), where=f"{where}.population")
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    for c in listed:
        if isinstance(c.get("trials_dirs"), str):
            raise ConfigError(f"{where}.trials_dirs: must be a list of folders, got the string {c['trials_dirs']!r}")
    return str(data["name"])
