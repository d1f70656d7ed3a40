"""`python -m gcpc.report.harbor_export JOB OUT`: GCPC scores into a COPY of a Harbor job, where Harbor shows them.

Harbor (0.13.1 and later) reads a trial's `verifier/reward.json` (a flat JSON object of numbers) into
`result.json`'s `verifier_result.rewards` (`dict[str, float | int]`) and shows every key in its job views.
This command copies the job folder JOB to OUT (OUT must not exist; the user's job is only read) and, in the
copy, for every trial that the gcpc run scored:

* `verifier/reward.json` = the official reward(s) exactly as `result.json` recorded them (same keys, same
  values, first) plus one flat numeric key per arm and score: `<arm>/<score>`, e.g. `gcpc/gcpc_outcome`,
  `gcpc_gate/gcpc_plain`, `holistic/holistic_score` (`perfect` as 1 / 0);
* `result.json`: `verifier_result.rewards` set to the same object; nothing else in the file changes.

A score that does not exist is left out, never written as 0 or null: a zero-evidence judgment (every item
Abstain; for a holistic or floor arm, an action-free log: unscored, paper §4) leaves out all of that arm's scores, and a score undefined for the trajectory
(`gcpc_outcome` without a PASS/FAIL outcome, a floor arm's `perfect`) is left out too. Every omission, and
every trial left unchanged (not in the gcpc run, no official reward), is listed with its reason in the side
file `OUT/gcpc_harbor_export.json`. A trial's `verifier/reward.txt`, if any, is kept as it is (it holds the
official reward; Harbor prefers it over reward.json only when it re-runs a verifier). The job's own
`result.json` (its aggregate stats) is not rewritten.

Trials are matched to the gcpc run's trajectories by their folder: the last two parts of an ingested
trajectory's `source_path` are (job folder name, trial folder name). Scores come from the finalize stage's
`metrics.parquet`.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from gcpc.io import iter_jsonl, loads_trusted, stable_float, verify_output, write_json, write_text

METRICS = Path("data/processed/finalize/metrics.parquet")
TRAJECTORIES = Path("data/processed/ingest/trajectories.jsonl")
SIDE_FILE = "gcpc_harbor_export.json"
SCORES = ("gcpc_plain", "gcpc_outcome", "perfect", "evidence_coverage", "holistic_score")
"""The per-arm scores exported: of finalize's metrics, those the arm's kind defines (KIND_SCORES)."""
_CHECKLIST_SCORES = ("gcpc_plain", "gcpc_outcome", "perfect", "evidence_coverage")
KIND_SCORES = {"checklist": _CHECKLIST_SCORES, "generic": _CHECKLIST_SCORES, "tick": _CHECKLIST_SCORES,
               "holistic": ("gcpc_plain", "perfect", "holistic_score"), "floor": ("gcpc_plain",)}
"""Scores per arm kind (finalize's column arm_kind); an arm of another kind exports every one of SCORES it has."""
ZERO_EVIDENCE = "zero evidence ({why}): the arm's scores are unscored (paper §4), not 0"
UNDEFINED = "not defined for this trajectory and arm (e.g. gcpc_outcome without a PASS/FAIL outcome)"


class ExportError(ValueError):
    """Input the export cannot use; the message names the file and field."""


def is_reward_number(value: Any) -> bool:
    """A value Harbor's `verifier_result.rewards` (dict[str, float | int]) holds: a finite int or float, not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_rewards(obj: Any, where: str) -> None:
    """Harbor's published field type for reward.json / verifier_result.rewards: a flat object of numbers."""
    if not isinstance(obj, dict) or not obj:
        raise ExportError(f"{where}: not a non-empty JSON object of numbers")
    for key, value in obj.items():
        if not isinstance(key, str) or not is_reward_number(value):
            raise ExportError(f"{where}: key {key!r} holds {value!r}, not a finite number (no lists, nulls or booleans)")


def _score_value(value: Any) -> float | None:
    if value is None or isinstance(value, str):
        return None
    if isinstance(value, (bool,)) or type(value).__name__ == "bool_":
        return 1.0 if bool(value) else 0.0
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return stable_float(x) if math.isfinite(x) else None


def _scores(row: pd.Series) -> tuple[str, ...]:
    return tuple(s for s in KIND_SCORES.get(str(row.get("arm_kind")), SCORES) if s in row.index)


def arm_rewards(rows: pd.DataFrame, arms: Sequence[str]) -> tuple[dict[str, float], list[dict[str, str]]]:
    """(flat numeric keys `<arm>/<score>`, omitted keys with their reasons) for one trajectory's metrics rows."""
    written: dict[str, float] = {}
    omitted: list[dict[str, str]] = []
    by_arm = {str(r["arm"]): r for _, r in rows.iterrows()}
    for arm in arms:
        row = by_arm.get(arm)
        if row is None:
            omitted.append({"key": f"{arm}/*", "reason": "the arm has no metrics row for this trajectory"})
            continue
        if bool(row.get("zero_evidence")):
            extra = row.get("zero_evidence_reason")
            why = extra.removeprefix("zero evidence: ") if isinstance(extra, str) and extra else "every item Abstain"
            reason = ZERO_EVIDENCE.format(why=why)
            omitted.extend({"key": f"{arm}/{s}", "reason": reason} for s in _scores(row))
            continue
        for score in _scores(row):
            value = _score_value(row[score])
            if value is None:
                omitted.append({"key": f"{arm}/{score}", "reason": UNDEFINED})
            else:
                written[f"{arm}/{score}"] = value
    return written, omitted


def _indent(text: str) -> int:
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" ")
        if stripped:
            return len(line) - len(stripped)
    return 2


def _dump(obj: Any, indent: int) -> str:
    return json.dumps(obj, indent=indent, ensure_ascii=False) + "\n"


def trial_folders(job: Path) -> list[Path]:
    """The trial folders of a Harbor job: its subfolders holding a result.json."""
    return sorted(p for p in job.iterdir() if p.is_dir() and not p.is_symlink() and (p / "result.json").is_file())


def trajectory_index(trajectories: Path, job_name: str, benchmark: str | None) -> dict[str, list[str]]:
    """trial folder name -> trajectory ids of the gcpc run whose source_path ends in <job_name>/<trial>."""
    verify_output(trajectories)
    index: dict[str, list[str]] = {}
    for n, rec in enumerate(iter_jsonl(trajectories), 1):
        path = rec.get("source_path")
        if not isinstance(path, str) or not isinstance(rec.get("trajectory_id"), str):
            raise ExportError(f"{trajectories}: record {n}: field source_path or trajectory_id missing")
        if benchmark is not None and rec.get("benchmark") != benchmark:
            continue
        parts = Path(path).parts
        if len(parts) >= 2 and parts[-2] == job_name:
            index.setdefault(parts[-1], []).append(rec["trajectory_id"])
    return index


def export(job: Path, out: Path, metrics_path: Path = METRICS, trajectories: Path = TRAJECTORIES,
           arms: Iterable[str] | None = None, benchmark: str | None = None) -> dict[str, Any]:
    """Copy `job` to `out` and write GCPC rewards into the copy (module docstring); returns the side file's content."""
    job, out = Path(job), Path(out)
    if not job.is_dir():
        raise ExportError(f"{job}: Harbor job folder not found")
    if out.exists() or out.is_symlink():
        raise ExportError(f"{out}: already exists; the export writes a fresh copy of the job (choose a new folder)")
    src, dst = job.resolve(), out.resolve()
    if dst == src or src in dst.parents or dst in src.parents:
        raise ExportError(f"{out}: inside the job {job} (or the job inside it); the user's job is never written")
    verify_output(metrics_path)
    metrics = pd.read_parquet(metrics_path)
    for col in ("trajectory_id", "arm", "zero_evidence"):
        if col not in metrics.columns:
            raise ExportError(f"{metrics_path}: column {col!r} missing (the finalize stage's metrics.parquet)")
    known_arms = sorted(set(metrics["arm"].astype(str)))
    chosen = list(arms) if arms is not None else known_arms
    unknown = [a for a in chosen if a not in known_arms]
    if unknown:
        raise ExportError(f"{metrics_path}: arm(s) {', '.join(unknown)} not in its column 'arm' ({', '.join(known_arms)})")
    index = trajectory_index(Path(trajectories), job.name, benchmark)
    by_traj = {tid: rows for tid, rows in metrics.groupby("trajectory_id", sort=True)}

    shutil.copytree(job, out, symlinks=True)
    trials: list[dict[str, Any]] = []
    for folder in trial_folders(out):
        rel = folder.name
        entry: dict[str, Any] = {"trial": rel}
        ids = index.get(rel, [])
        if len(ids) > 1:
            raise ExportError(f"{trajectories}: trial {job.name}/{rel} matches {len(ids)} trajectories "
                              f"({', '.join(sorted(ids))}); pass --benchmark")
        result_path = folder / "result.json"
        text = result_path.read_text(encoding="utf-8")
        try:
            result = loads_trusted(text)
        except ValueError as exc:
            raise ExportError(f"{job / rel / 'result.json'}: not valid JSON ({exc})") from None
        verifier = result.get("verifier_result") if isinstance(result, dict) else None
        official = verifier.get("rewards") if isinstance(verifier, dict) else None
        if not ids or ids[0] not in by_traj:
            entry["skipped"] = "not scored by this gcpc run (no trajectory of it in " + (
                f"{trajectories}" if not ids else f"{metrics_path}") + "); left unchanged"
            trials.append(entry)
            continue
        entry["trajectory_id"] = ids[0]
        if not isinstance(official, dict) or not official:
            entry["skipped"] = "result.json has no verifier_result.rewards (the verifier did not run); left unchanged"
            trials.append(entry)
            continue
        try:
            check_rewards(official, f"{job / rel / 'result.json'}: verifier_result.rewards")
        except ExportError as exc:
            entry["skipped"] = f"{exc}; left unchanged"
            trials.append(entry)
            continue
        gcpc, omitted = arm_rewards(by_traj[ids[0]], chosen)
        clash = sorted(set(gcpc) & set(official))
        if clash:
            raise ExportError(f"{job / rel / 'result.json'}: verifier_result.rewards already has key(s) "
                              f"{', '.join(clash)}: already exported? export from the original job")
        rewards = {**official, **dict(sorted(gcpc.items()))}
        check_rewards(rewards, f"{out / rel / 'verifier' / 'reward.json'}")
        (folder / "verifier").mkdir(exist_ok=True)
        write_text(folder / "verifier" / "reward.json", _dump(rewards, 2))
        verifier["rewards"] = rewards
        write_text(result_path, _dump(result, _indent(text)))
        entry |= {"official_keys": list(official), "written": sorted(gcpc), "omitted": omitted}
        trials.append(entry)
    side = {"job": job.name, "metrics": str(metrics_path), "trajectories": str(trajectories), "arms": chosen,
            "key_format": "<arm>/<score>; the official reward keys unchanged and first", "scores": list(SCORES),
            "trials": trials,
            "counts": {"trials": len(trials), "exported": sum("written" in t for t in trials),
                       "skipped": sum("skipped" in t for t in trials),
                       "omitted_scores": sum(len(t.get("omitted", [])) for t in trials)}}
    write_json(out / SIDE_FILE, side)
    return side


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("job", type=Path, help="a Harbor job folder (its trial folders hold result.json); only read")
    parser.add_argument("out", type=Path, help="where the copy is written (must not exist)")
    parser.add_argument("--metrics", type=Path, default=METRICS, help=f"finalize's metrics (default: {METRICS})")
    parser.add_argument("--trajectories", type=Path, default=TRAJECTORIES,
                        help=f"the ingest stage's trajectories, to match trials (default: {TRAJECTORIES})")
    parser.add_argument("--arms", help="comma-separated arms to export (default: every arm in the metrics)")
    parser.add_argument("--benchmark", help="only trajectories of this benchmark (when several corpora share names)")
    args = parser.parse_args(argv)
    try:
        side = export(args.job, args.out, args.metrics, args.trajectories,
                      args.arms.split(",") if args.arms else None, args.benchmark)
    except (ExportError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    c = side["counts"]
    print(f"harbor export: {c['exported']} of {c['trials']} trials written to {args.out} ({c['skipped']} left unchanged, "
          f"{c['omitted_scores']} scores left out with their reasons in {args.out / SIDE_FILE})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
