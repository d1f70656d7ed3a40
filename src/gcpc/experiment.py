"""What defines an experiment, derived and checked when params.yaml is composed (not when a stage runs).

`dvc exp run -S arm=generic` must not fail an hour later because `analysis.primary_arm` still
names an arm that was not judged. conf/ therefore derives the analysed arms from the arm set
through OmegaConf resolvers registered here, and the `experiment` section of conf/config.yaml
calls `check_*` so that a composed config naming an arm outside the set, a data config missing a
required key, or an unknown key (`+judge.api_key=...`) fails during composition, before DVC
writes anything. DVC loads the resolvers through the Hydra plugin in hydra_plugins/ (its
`plugins_path` is the repository root); `compose` below (`python -m gcpc.experiment`) registers them itself.

The same functions are called by the stages on a hand-edited params.yaml.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gcpc.corpus.data_config import check_data
from gcpc.corpus.data_config import plain as _plain
from gcpc.errors import ConfigError


def arm_set(arms: Any) -> dict[str, dict[str, Any]]:
    arms = _plain(arms)
    if not isinstance(arms, Mapping) or not arms:
        raise ConfigError("arm: the arm set is empty; choose one with -S arm=<conf/arm/NAME> (e.g. arm=all)")
    return {str(k): dict(v or {}) for k, v in arms.items()}


def derive_primary_arm(arms: Any) -> str:
    """The arm whose numbers are the headline: the paper's GCPC (a checklist arm without the evidence
    gate) when the set has one, else the first checklist arm, else the first arm of the set."""
    spec = arm_set(arms)
    checklist = [k for k, v in spec.items() if v.get("kind") == "checklist"]
    for k in checklist:
        if not spec[k].get("evidence_gate", False):
            return k
    return checklist[0] if checklist else next(iter(spec))


REPLY_ONLY_KEYS = ("evidence_gate", "requests_of")
"""Arm settings that do not shape a request (the evidence gate downgrades verdicts after the call)."""


def check_requests_of(spec: Mapping[str, Mapping[str, Any]]) -> None:
    """An arm's `requests_of: OTHER` says it sends OTHER's requests (its call store is then OTHER's, stored
    once): when OTHER is in the set, the two must be configured the same but for `REPLY_ONLY_KEYS`."""
    for name, cfg in spec.items():
        other = cfg.get("requests_of")
        if not other or other == name or other not in spec:
            continue
        mine = {k: v for k, v in cfg.items() if k not in REPLY_ONLY_KEYS}
        theirs = {k: v for k, v in spec[other].items() if k not in REPLY_ONLY_KEYS}
        if mine != theirs:
            diff = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
            raise ConfigError(f"arm.{name}.requests_of = {other!r}, but the two arms differ in {', '.join(diff)}, which "
                              f"shapes requests; remove requests_of from arm {name} or configure both alike")


def check_arms(arms: Any, primary: Any, rejudge_arm: Any, controls_arms: Any) -> str:
    """Every analysed arm must be in the arm set; returns the arm set as one readable value ("gcpc+generic")."""
    spec = arm_set(arms)
    check_requests_of(spec)
    named = [("analysis.primary_arm", primary), ("analysis.rejudge.arm", rejudge_arm)]
    named += [("analysis.controls.arms", a) for a in (_plain(controls_arms) or [])]
    bad = [f"{key} = {value!r}" for key, value in named if str(value) not in spec]
    if bad:
        raise ConfigError(f"{'; '.join(bad)}: not in the arm set `arm` ({', '.join(spec)}). Leave these keys unset to "
                          "derive them from the arm set, or add the arm, e.g. -S arm=all")
    return arm_set_name(spec)


def _arm_files(conf_arm: Path) -> dict[str, set[str]]:
    """conf/arm/NAME.yaml -> the arm ids it selects (a file of arms, or a `defaults` list of other arm files)."""
    import yaml

    raw: dict[str, dict[str, Any]] = {}
    for path in sorted(conf_arm.glob("*.yaml")):
        try:
            raw[path.stem] = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError):
            continue

    def ids(name: str, seen: frozenset[str] = frozenset()) -> set[str]:
        doc = raw.get(name)
        if doc is None or name in seen:
            return set()
        out = {str(k) for k in doc if k != "defaults"}
        for d in doc.get("defaults") or []:
            if isinstance(d, str) and d != "_self_":
                out |= ids(d, seen | {name})
        return out

    return {name: ids(name) for name in raw}


def arm_set_name(arms: Any, conf_arm: Path | None = None) -> str:
    """The arm set as one short `dvc exp show` value: the conf/arm config that selects exactly these arms
    (`all`, `gcpc_both`), else the arm ids joined by `+` (`gcpc+floor_exit0`)."""
    spec = arm_set(arms)
    folder = conf_arm or next((p for p in (Path("conf/arm"), Path(__file__).resolve().parents[2] / "conf" / "arm")
                               if p.is_dir()), None)
    if folder is not None:
        for name, ids in _arm_files(folder).items():
            if ids == set(spec):
                return name
    return "+".join(spec)


def model_label(cfg: Any, where: str = "llm") -> str:
    """The model id of an llm config, with its mode when not sync (`gcpc-heuristic-v1 (replay)`), after checking
    the config as the stages will (unknown or secret-like keys refused). Short, for a `dvc exp show` column; the
    provider is the `judge.provider` / `generator.provider` parameter."""
    from gcpc.llm.settings import LLMSettings

    cfg = _plain(cfg) or {}
    try:
        LLMSettings.from_cfg(dict(cfg), where=where)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    mode = "replay" if cfg.get("provider") == "replay" else cfg.get("mode")
    label = str(cfg.get("model"))
    return f"{label} ({mode})" if mode not in (None, "", "sync") else label


def check_params(params: Mapping[str, Any], *, source: str = "params.yaml") -> None:
    """The composition-time checks, for a params file that did not come through composition."""
    analysis = params.get("analysis") or {}
    spec = arm_set(params.get("arm"))
    primary = analysis.get("primary_arm") or derive_primary_arm(spec)
    rejudge = (analysis.get("rejudge") or {}).get("arm") or primary
    controls = (analysis.get("controls") or {}).get("arms") or [primary]
    try:
        check_arms(spec, primary, rejudge, controls)
        check_data(params.get("data"))
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None


def _as_list(value: Any) -> list[Any]:
    value = _plain(value)
    return list(value) if isinstance(value, Sequence) and not isinstance(value, str) else [value]


RESOLVERS = {
    "gcpc_primary_arm": derive_primary_arm,
    "gcpc_arm_set": check_arms,
    "gcpc_data": check_data,
    "gcpc_model": model_label,
    "gcpc_list": _as_list,
}


def register_resolvers() -> None:
    """Register the resolvers conf/ uses (idempotent)."""
    from omegaconf import OmegaConf

    for name, fn in RESOLVERS.items():
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, fn)


def check_data_folders(data: Mapping[str, Any], root: Path | None = None) -> list[str]:
    """Every folder and file a data config names exists (what ingest checks first, for `python -m gcpc.experiment`
    to say before a run); returns the corpus roots. FileNotFoundError names the key and the path searched."""
    from gcpc.corpus.ingest import corpora_from_params, corpus_root_of

    base = Path.cwd() if root is None else root
    return [str(corpus_root_of(cfg, base)) for cfg in corpora_from_params(dict(_plain(data)))]


def compose(output: str | Path = "params.yaml", overrides: list[str] | None = None, conf_dir: str | Path = "conf") -> None:
    """Write params.yaml from conf/ exactly as `dvc exp run` does (DVC's own Hydra composition)."""
    from dvc.utils.hydra import compose_and_dump

    register_resolvers()  # DVC loads them through hydra_plugins/; a long-lived process may have scanned plugins already
    conf = Path(conf_dir).resolve()
    compose_and_dump(Path(output), str(conf), None, "config", str(conf.parent), list(overrides or []))


def main(argv: list[str] | None = None) -> None:
    """`python -m gcpc.experiment [overrides] [--output params.yaml]`: compose, then check the data folders."""
    import argparse

    from gcpc.params import load_params

    parser = argparse.ArgumentParser(prog="python -m gcpc.experiment",
                                     description="Compose params.yaml from conf/ (what `dvc exp run` does before a run).")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. llm@judge=replay")
    parser.add_argument("--output", default="params.yaml")
    ns = parser.parse_args(argv)
    compose(ns.output, ns.overrides)
    # pre-flight: a typo'd folder fails here, not seconds into ingest (FileNotFoundError: one line, exit 2)
    print(f"{ns.output}: composed; data folders found: {', '.join(check_data_folders(load_params(ns.output)['data']))}")


if __name__ == "__main__":
    main()
