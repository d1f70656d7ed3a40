"""`python -m gcpc.corpus.new_config NAME PATH`: write a complete conf/data/NAME.yaml for a folder of
Harbor tasks and job (trial) folders, or of Inspect AI eval logs, after checking that the folder holds them.

    python -m gcpc.corpus.new_config mybench ../my-runs            # finds tasks/ and job folders below PATH
    python -m gcpc.corpus.new_config mybench ../my-runs --benchmark skillsbench --tasks-dir ../my-runs/tasks
    dvc exp run -S data=mybench

A folder without task folders that holds Inspect logs (`*.eval`, eval-log `*.json`) gets a
`format: inspect` config listing the folders of logs. Task folders are the folders holding an `instruction.md`; trial folders are recognised as the
ingest stage recognises them (gcpc.corpus.harbor.is_trial_folder), and `trials_dirs` lists the
folders directly above them (the job folders). Every required key (gcpc.corpus.data_config.DATA_KEYS_DOC)
is written and checked; the file is refused when PATH holds no task, and an existing config is
never overwritten without --force. A folder of tasks without any trial folder (`new_config x mydata/tasks`) gets
its config (checklists can be synthesized) with a warning that nothing will be scored. `root` is written relative to the repository root, the other
paths relative to `root`, as the ingest stage resolves them.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import yaml

from gcpc.corpus.harbor import find_trial_folders
from gcpc.corpus.data_config import DATA_KEYS_DOC, check_data


def _rel(path: Path, base: Path) -> str:
    return Path(os.path.relpath(path.resolve(), base.resolve())).as_posix()


def find_task_dirs(root: Path, max_depth: int = 4) -> list[Path]:
    """Folders below `root` whose children are task folders (hold instruction.md), shallowest first."""
    found: set[Path] = set()
    for dirpath, dirnames, filenames in os.walk(root):
        depth = len(Path(dirpath).relative_to(root).parts)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".")) if depth < max_depth else []
        if "instruction.md" in filenames and Path(dirpath) != root:
            found.add(Path(dirpath).parent)
            dirnames[:] = []
    return sorted(found, key=lambda p: (len(p.parts), str(p)))


def build_config(name: str, path: Path, *, benchmark: str | None = None, tasks_dir: Path | None = None,
                 trials_dirs: list[Path] | None = None, repo: Path = Path(".")) -> dict[str, Any]:
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: not a folder")
    if tasks_dir is None and trials_dirs is None and not find_task_dirs(path):
        logs = inspect_logs(path)
        if logs:
            return inspect_config(name, path, logs, benchmark=benchmark, repo=repo)
    if tasks_dir is None:
        candidates = find_task_dirs(path)
        if not candidates:
            raise ValueError(f"{path}: no task folder (a folder holding instruction.md) found below it; pass --tasks-dir")
        if len(candidates) > 1:
            raise ValueError(f"{path}: task folders in several places ({', '.join(_rel(c, repo) for c in candidates)}); "
                             "pass --tasks-dir")
        tasks_dir = candidates[0]
    n_tasks = sum((d / "instruction.md").is_file() for d in tasks_dir.iterdir() if d.is_dir()) if tasks_dir.is_dir() else 0
    if n_tasks == 0:
        raise ValueError(f"{tasks_dir}: holds no task folder (instruction.md)")
    if trials_dirs is None:
        trials = [t for t in find_trial_folders(path) if tasks_dir not in t.parents]
        trials_dirs = sorted({t.parent for t in trials})
    n_trials = sum(len(find_trial_folders(d)) for d in trials_dirs)
    cfg = {
        "name": name,
        "root": _rel(path, repo),
        "benchmark": benchmark or name,
        # every other path of a data config resolves against its root (gcpc.corpus.ingest.corpus_root_of)
        "tasks_dir": _rel(tasks_dir, path),
        "trials_dirs": [_rel(d, path) for d in trials_dirs],
    }
    check_data(cfg, where=f"conf/data/{name}.yaml")
    return cfg | {"_found": {"tasks": n_tasks, "trials": n_trials}}


def inspect_logs(path: Path) -> list[Path]:
    """Inspect AI eval logs below `path` (`*.eval`, eval-log `*.json`), found without needing inspect_ai."""
    from gcpc.corpus.inspect_log import find_logs

    return find_logs(path)


def inspect_config(name: str, path: Path, logs: list[Path], *, benchmark: str | None, repo: Path) -> dict[str, Any]:
    """A `format: inspect` config: `trials_dirs` lists the folders holding the logs (relative to `root`)."""
    folders = sorted({p.parent for p in logs})
    cfg = {
        "name": name,
        "format": "inspect",
        "root": _rel(path, repo),
        "benchmark": benchmark or name,
        "trials_dirs": [_rel(d, path) for d in folders],
        # sample scorer taken as the official outcome (null: the sample's only score), a threshold for numeric
        # scores, the score metadata key with per-test results, sample metadata keys with test ids / test source
        "outcome_scorer": None,
        "pass_threshold": None,
        "test_results_key": None,
        "test_ids_keys": [],
        "verifier_source_keys": [],
    }
    check_data(cfg, where=f"conf/data/{name}.yaml")
    return cfg | {"_found": {"tasks": 0, "trials": 0, "logs": len(logs)}}


def render(cfg: dict[str, Any]) -> str:
    found = cfg["_found"]
    body = {k: v for k, v in cfg.items() if k != "_found"}
    what = (f"{found['logs']} Inspect AI logs; tasks and trajectories are their samples" if "logs" in found
            else f"{found['tasks']} tasks, {found['trials']} trial folders")
    lines = [f"# Written by `python -m gcpc.corpus.new_config` ({what}).",
             "# Required keys:"] + [f"#   {k}: {doc}" for k, doc in DATA_KEYS_DOC.items()]
    lines += ["# Optional: format (harbor | terminal-bench-1 | swe-bench | inspect), condition, corpora (several corpora).",
              f"# Use it with: dvc exp run -S data={cfg['name']}"]
    return "\n".join(lines) + "\n" + yaml.safe_dump(body, sort_keys=False, allow_unicode=True)


def main(argv: list[str] | None = None) -> int:
    from gcpc.params import parse_args

    parser = argparse.ArgumentParser(prog="python -m gcpc.corpus.new_config", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name", help="config name (conf/data/NAME.yaml) and default benchmark id")
    parser.add_argument("path", type=Path, help="folder holding the task folders and job folders")
    parser.add_argument("--benchmark", help="benchmark id recorded on tasks and trajectories (default: NAME)")
    parser.add_argument("--tasks-dir", type=Path, help="the folder of task folders (default: found below PATH)")
    parser.add_argument("--trials-dir", type=Path, action="append", help="a job folder (repeatable; default: found)")
    parser.add_argument("--conf", type=Path, default=Path("conf/data"), help="where to write (default: conf/data)")
    parser.add_argument("--force", action="store_true", help="overwrite an existing config")
    args = parse_args(parser, argv, overrides=False)
    args.trial_dir_given = bool(args.trials_dir)
    if not args.name.replace("-", "").replace("_", "").isalnum():
        print(f"new_config: NAME {args.name!r} must be letters, digits, '-' or '_'", file=sys.stderr)
        return 2
    out = args.conf / f"{args.name}.yaml"
    if out.exists() and not args.force:
        print(f"new_config: {out} exists (use --force to overwrite)", file=sys.stderr)
        return 2
    try:
        cfg = build_config(args.name, args.path, benchmark=args.benchmark, tasks_dir=args.tasks_dir,
                           trials_dirs=args.trials_dir)
    except (ValueError, FileNotFoundError) as exc:
        print(f"new_config: {exc}", file=sys.stderr)
        return 2
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(cfg), encoding="utf-8")
    found = cfg["_found"]
    what = (f"{found['logs']} Inspect AI log(s) in {len(cfg['trials_dirs'])} folder(s)" if "logs" in found else
            f"{found['tasks']} tasks, {found['trials']} trial folders in {len(cfg['trials_dirs'])} job folder(s)")
    print(f"new_config: {out}: {what}; run it with `dvc exp run -S data={args.name}`", flush=True)
    if "logs" not in found and found["trials"] == 0:
        print(f"new_config: warning: no trial (job) folder found {'in the --trials-dir folders' if args.trial_dir_given else f'below {args.path}'}: "
              f"{out} lists tasks only, so no trajectory will be scored (checklists only); point PATH at the folder "
              "holding tasks/ AND the job folders, or pass --trials-dir JOB_FOLDER", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
