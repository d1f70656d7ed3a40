"""`python -m gcpc.corpus.inspect PATH`: what gcpc reads from one task, trial or log file.

PATH may be a Harbor task folder (prints its metadata, provenance and verifier test ids), a
Harbor or Terminal-Bench 1 trial folder (prints the trajectory's metadata, outcome, notes and
the judge-visible rendering of its events), a single agent log (`claude-code.txt`, a session
`.jsonl`, `trajectory.json`, `agent.log`, `post-agent.txt`, a SWE-agent `.traj`, a mini-swe-agent
`.traj.json`), a SWE-bench instances file (prints each task's test ids), or an Inspect AI eval log
(`.eval`, eval-log `.json`: every sample's trajectory; needs the `inspect` extra).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from gcpc.corpus.atif import parse_atif_file
from gcpc.corpus.claude_code import parse_log
from gcpc.corpus.harbor import read_task, read_trial
from gcpc.corpus.inspect_log import is_inspect_log
from gcpc.corpus.models import Event, Exclusion, Task, Trajectory
from gcpc.corpus.render import DEFAULT_MAX_CHARS, render_log
from gcpc.corpus.swe_bench import parse_log_file
from gcpc.corpus.swe_bench import read_tasks as read_swe_tasks
from gcpc.corpus.tb1_logs import parse_commands, read_session
from gcpc.corpus.terminal_bench1 import RUN_NAME, TRIAL_NAME, TrialFolder, _batch_at, _load_json
from gcpc.corpus.terminal_bench1 import read_trial as read_tb1_trial


def _task_text(task: Task) -> str:
    lines = [f"task {task.benchmark}/{task.task_id}  ({task.source_path})"]
    lines.append("metadata: " + json.dumps(task.metadata, ensure_ascii=False, sort_keys=True))
    if task.provenance:
        lines.append("provenance: " + json.dumps(task.provenance, ensure_ascii=False, sort_keys=True))
    lines.append(f"instruction ({len(task.instruction)} chars):")
    lines.append(task.instruction.rstrip())
    lines.append(f"tests ({len(task.tests)}):")
    lines += [f"  {t.id}" for t in task.tests]
    return "\n".join(lines) + "\n"


def _trajectory_text(traj: Trajectory, max_chars: int | None) -> str:
    meta = traj.model_dump(mode="json", exclude={"events"})
    lines = [json.dumps(meta, ensure_ascii=False, sort_keys=True, indent=2), ""]
    lines.append(f"events ({len(traj.events)}):")
    return "\n".join(lines) + "\n" + render_log(traj.events, max_chars)


def _events_text(events: list[Event], header: dict[str, Any], max_chars: int | None) -> str:
    return (json.dumps(header, ensure_ascii=False, sort_keys=True, indent=2) + f"\n\nevents ({len(events)}):\n"
            + render_log(events, max_chars))


def _tb1_folder(path: Path) -> TrialFolder:
    """A Terminal-Bench 1 trial folder with its batch (nearest run-level results.json above it) and run
    (the nearest folder above named like a leaderboard run, else the folder above the batch)."""
    m = TRIAL_NAME.match(path.name)
    batch = None
    for parent in path.parents:
        batch = _batch_at(parent, parent.name, [], parent.as_posix())
        if batch is not None:
            break
    run_path = next((p for p in path.parents if RUN_NAME.match(p.name)), None)
    if run_path is None:
        run_path = batch.path.parent if batch is not None else path.parent.parent
    tf = TrialFolder(path=path, run=run_path.name, run_path=run_path, rel=path.relative_to(run_path).as_posix(),
                     task_from_name=m.group("task") if m else path.parent.name, batch=batch)
    tf.files = sorted(p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file())
    data, why = _load_json(path / "results.json", "results.json")
    tf.result, tf.result_why = (data, why) if isinstance(data, dict) or data is None else (None, "not an object")
    return tf


def inspect_path(path: Path, max_chars: int | None = DEFAULT_MAX_CHARS) -> str:
    """The text `inspect` prints for PATH; ValueError when PATH is nothing gcpc can read."""
    path = Path(path)
    if path.is_dir():
        if (path / "instruction.md").is_file():
            return _task_text(read_task(path, "harbor", root=path.parent))
        if TRIAL_NAME.match(path.name) and ((path / "results.json").is_file() or (path / "commands.txt").is_file()):
            item = read_tb1_trial(_tb1_folder(path), None, root=[path.parent])
        elif (path / "config.json").is_file() or (path / "result.json").is_file():
            item = read_trial(path, "harbor", None, root=path.parent)
        else:
            raise ValueError(f"{path}: not a task folder (instruction.md) or a trial folder "
                             "(config.json/result.json, or a Terminal-Bench 1 <task>.<k>-of-<n> folder)")
        if isinstance(item, Exclusion):
            return f"excluded: {item.path}: {item.reason}\n"
        return _trajectory_text(item, max_chars)
    if not path.is_file():
        raise ValueError(f"{path}: no such file or folder")
    name = path.name
    if name.endswith((".traj", ".traj.json")):
        log = parse_log_file(path, path.as_posix())
        return _events_text(log.events, {"format": log.log_format, "exit_status": log.info.get("exit_status"),
                                         **({"notes": log.notes} if log.notes else {})}, max_chars)
    if name == "trajectory.json":
        events, meta, _ = parse_atif_file(path)
        return _events_text(events, {"format": "atif", **meta}, max_chars)
    if name in ("agent.log", "post-agent.txt"):
        trial = path.parent.parent
        typed = []
        if (trial / "commands.txt").is_file():
            typed, _ = parse_commands((trial / "commands.txt").read_text(encoding="utf-8", errors="replace"),
                                      (trial / "commands.txt").as_posix())
        session, _ = read_session(path, path.as_posix(), typed)
        return _events_text(session.events, {"format": "tb1", "notes": session.notes}, max_chars)
    if is_inspect_log(path):  # an Inspect AI eval log: every sample, as `format: inspect` reads it
        from gcpc.corpus.inspect_log import read_corpus as read_inspect

        _, trajectories, excluded, notes = read_inspect({"benchmark": "inspect", "trials_dirs": [name]}, path.parent,
                                                        [path.parent])
        return ("".join(_trajectory_text(t, max_chars) + "\n" for t in trajectories)
                + "".join(f"excluded: {e.path}: {e.reason}\n" for e in excluded) + "".join(f"note: {n}\n" for n in notes))
    if path.suffix in (".jsonl", ".json"):
        first = path.read_text(encoding="utf-8", errors="replace").lstrip()[:100_000]
        if '"instance_id"' in first.split("\n", 1)[0] or (first.startswith("[") and '"instance_id"' in first):
            return "".join(_task_text(t) for t in read_swe_tasks(path, "swe-bench", root=[path.parent]))
    events = parse_log(path)
    return _events_text(events, {"format": "claude-code"}, max_chars)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gcpc.corpus.inspect", description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--max-chars", type=int, default=DEFAULT_MAX_CHARS,
                        help="per-event cut of the rendering (0: no cut); default %(default)s")
    from gcpc.params import parse_args

    args = parse_args(parser, argv, overrides=False)
    try:
        text = inspect_path(args.path, args.max_chars or None)
    except (ValueError, OSError) as exc:
        print(f"inspect: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
