"""SWE-bench (Verified) instances and SWE-agent `.traj` trajectories -> Tasks, Trajectories.

Tasks come from the public instance format (the Hugging Face dataset rows, as a JSON list or
JSON Lines): `instance_id`, `repo`, `base_commit`, `problem_statement`, `FAIL_TO_PASS`,
`PASS_TO_PASS` (JSON-encoded lists of test ids in the dataset, plain lists in some exports),
`version`, `created_at`, `environment_setup_commit`, `test_patch`, `patch`, `hints_text`.
The instruction is the problem statement; the test ids are FAIL_TO_PASS then PASS_TO_PASS; the
verifier source is the test patch. The reference solution (`patch`) and the hints are never kept.

Trajectories are SWE-agent `<instance_id>.traj` files (one JSON object: `trajectory` steps with
`thought`, `action`, `observation`; `history` messages; `info` with `exit_status`,
`submission`, `model_stats`; `replay_config`) or mini-swe-agent `<instance_id>.traj.json` files
(`"trajectory_format": "mini-swe-agent-1"`, the SWE-bench bash-only leaderboard's format; read by
`gcpc.corpus.mini_swe_agent`). Each `trials_dirs` entry is one run (its folder name is the
trajectory's source; several runs of the same instances, e.g. two models, are several entries);
the matching `reports_dirs` entry (same position) holds the SWE-bench harness's per-instance
`report.json` files, found recursively: either {instance_id: {resolved, tests_status}} or, as the
harness writes it under `logs/<instance_id>/`, the entry itself (the instance is the folder name). `resolved` true is PASS, false FAIL; a missing report, or a patch that was
empty or did not apply, is 'other' with the reason. The harness's `test_output.txt` (the
verifier's own output) is never read.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gcpc.corpus.consistency import BORROWED_NOTE, BOTH_NOTE
from gcpc.corpus.guard import describe, outside_links, read_guarded
from gcpc.corpus.harbor import display_path
from gcpc.corpus.limits import read_bounded
from gcpc.corpus.jsonpos import Span, load_with_spans, top_level_array_spans
from gcpc.corpus.mini_swe_agent import is_mini_traj, model_of, read_traj
from gcpc.corpus.models import Event, EventKind, Exclusion, Outcome, SourceRef, Task, Trajectory, VerifierTest
from gcpc.corpus.size import log_size
from gcpc.io import DuplicateKey, loads_trusted

NEVER_KEPT = frozenset({"patch", "hints_text"})
"""Instance fields that would reveal the solution: dropped on reading."""
TEXT_FIELDS = frozenset({"problem_statement", "test_patch", "FAIL_TO_PASS", "PASS_TO_PASS"})
FILE_VIEW_COMMANDS = re.compile(r"^(open|goto|scroll_up|scroll_down|str_replace_editor view|view)\b")
"""SWE-agent commands whose observation is the content of a file (its file viewer)."""


# --- tasks ----------------------------------------------------------------------------------


def _test_list(value: Any, label: str, field: str) -> list[str]:
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError as exc:
            raise ValueError(f"{label}: field {field} is not a JSON list ({exc.msg})") from exc
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{label}: field {field} is not a list of test ids")
    return value


def _verifier_test(test_id: str) -> VerifierTest:
    """pytest node ids (`path::Class::test[param]`) and Django-style ids (`test_x (module.Class)`)."""
    if "::" in test_id:
        parts = test_id.split("::")
        return VerifierTest(id=test_id, file=parts[0], name=parts[-1].split("[", 1)[0],
                            cls="::".join(parts[1:-1]) or None, source="")
    m = re.match(r"^(\S+) \((.+)\)$", test_id)
    if m:
        return VerifierTest(id=test_id, file="", name=m.group(1), cls=m.group(2), source="")
    return VerifierTest(id=test_id, file="", name=test_id, cls=None, source="")


def _read_instances(path: Path, label: str) -> list[tuple[int, dict[str, Any]]]:
    try:
        data = read_bounded(path, "instances", label)
    except OSError as exc:  # its message would hold the absolute path; the file is named
        raise ValueError(f"{label}: unreadable ({exc.strerror or type(exc).__name__})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{label}: not UTF-8 ({exc.reason} at byte {exc.start})") from exc
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            rows = loads_trusted(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise ValueError(f"{label}: invalid JSON ({exc.msg}, line {exc.lineno})") from exc
        return [(i + 1, r) for i, r in enumerate(rows)]
    out: list[tuple[int, dict[str, Any]]] = []
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            out.append((lineno, loads_trusted(line)))
        except (json.JSONDecodeError, DuplicateKey) as exc:
            out.append((lineno, ValueError(f"{label}:{lineno}: malformed JSON line ({getattr(exc, 'msg', exc)})")))
        except RecursionError:
            out.append((lineno, ValueError(f"{label}:{lineno}: JSON nested too deeply")))
    return out


def read_tasks(path: Path, benchmark: str, *, root: Sequence[Path], exclusions: list[Exclusion] | None = None) -> list[Task]:
    """Every instance of a SWE-bench instances file, sorted by instance id. With `exclusions`, a bad
    instance is excluded with the reason (naming the file and line) instead of raising."""
    label = display_path(path, root)
    if not os.path.lexists(path):
        raise FileNotFoundError(f"{label}: SWE-bench instances file not found")
    tasks: dict[str, Task] = {}
    try:
        rows = _read_instances(path, label)
    except ValueError as exc:  # the whole file: no task can be read (every trajectory is then an unknown task)
        if exclusions is None:
            raise
        exclusions.append(Exclusion(path=label, reason=f"unreadable tasks file: {exc}", benchmark=benchmark))
        return []
    for where, row in rows:
        at = f"{label}:{where}"
        try:
            if isinstance(row, ValueError):
                raise row
            if not isinstance(row, dict):
                raise ValueError(f"{at}: instance is not a JSON object")
            for key in ("instance_id", "problem_statement"):
                if not isinstance(row.get(key), str) or not row[key].strip():
                    raise ValueError(f"{at}: field {key} is missing or empty")
            f2p = _test_list(row.get("FAIL_TO_PASS", []), at, "FAIL_TO_PASS")
            p2p = _test_list(row.get("PASS_TO_PASS", []), at, "PASS_TO_PASS")
            failing = set(f2p)  # the verifier's declared groups (the dataset's spec, not a run's result)
            tests = [_verifier_test(t).model_copy(update={"role": "fail_to_pass" if t in failing else "pass_to_pass"})
                     for t in dict.fromkeys(f2p + p2p)]
            metadata: dict[str, Any] = {k: v for k, v in row.items()
                                        if k not in NEVER_KEPT | TEXT_FIELDS | {"instance_id"}
                                        and (v is None or isinstance(v, (str, int, float, bool)))}
            metadata["fail_to_pass"] = f2p
            metadata["pass_to_pass"] = p2p
            test_patch = row.get("test_patch")
            task_id = row["instance_id"]
            if task_id in tasks:
                raise ValueError(f"{at}: instance_id {task_id!r} appears twice")
            tasks[task_id] = Task(
                benchmark=benchmark,
                task_id=task_id,
                instruction=row["problem_statement"],
                metadata=metadata,
                tests=tests,
                verifier_files={"test_patch.diff": test_patch} if isinstance(test_patch, str) and test_patch else {},
                source_path=at,
                provenance={
                    "instruction": "problem_statement",
                    "tests": f"FAIL_TO_PASS ({len(f2p)}) then PASS_TO_PASS ({len(p2p)})",
                    "verifier_source": "test_patch (a diff of the repository's test files)"
                    if isinstance(test_patch, str) and test_patch else "absent",
                    "not_kept": "patch (the reference solution) and hints_text",
                },
            )
        except ValueError as exc:
            if exclusions is None:
                raise
            exclusions.append(Exclusion(path=at, reason=f"unreadable task: {exc}", benchmark=benchmark,
                                        task_id=row.get("instance_id") if isinstance(row, dict) and
                                        isinstance(row.get("instance_id"), str) else None))
    return [tasks[k] for k in sorted(tasks)]


# --- SWE-agent trajectories -----------------------------------------------------------------


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_text(v.get("text") if isinstance(v, dict) and "text" in v else v) for v in value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _ref(label: str, span: Span | None) -> SourceRef:
    if span is None:
        return SourceRef(path=label, line=1)
    return SourceRef(path=label, line=span.line, end_line=span.end_line, byte_start=span.byte_start,
                     byte_end=span.byte_end)


def parse_traj(doc: Any, label: str, steps_spans: list[Span] | None = None,
               history_spans: list[Span] | None = None) -> tuple[list[Event], dict[str, Any]]:
    """Events of one SWE-agent `.traj` document and its `info` block."""
    if not isinstance(doc, dict):
        raise ValueError(f"{label}: .traj root is not a JSON object")
    steps = doc.get("trajectory")
    if not isinstance(steps, list):
        raise ValueError(f"{label}: field 'trajectory' is missing or not a list")
    history = doc.get("history") if isinstance(doc.get("history"), list) else []
    info = doc.get("info") if isinstance(doc.get("info"), dict) else {}
    if steps_spans is not None and len(steps_spans) != len(steps):
        steps_spans = None
    if history_spans is not None and len(history_spans) != len(history):
        history_spans = None
    events: list[Event] = []

    def add(kind: EventKind, text: str, span: Span | None, tool: str | None = None, is_error: bool = False) -> None:
        events.append(Event(index=len(events), kind=kind, text=text, tool=tool, is_error=is_error,
                            source=_ref(label, span)))

    # the prompts: history messages before the first agent response
    seen_user = False
    for i, msg in enumerate(history):
        if not isinstance(msg, dict) or msg.get("role") == "assistant":
            break
        span = history_spans[i] if history_spans else None
        content = _text(msg.get("content"))
        if msg.get("is_demo"):
            add(EventKind.SYSTEM, "[demonstration]\n" + content, span)
        elif msg.get("role") == "system":
            add(EventKind.SYSTEM, "[system prompt]\n" + content, span)
        else:
            add(EventKind.SYSTEM, ("[user message]\n" if seen_user else "[task prompt]\n") + content, span)
            seen_user = True
    for i, step in enumerate(steps):
        span = steps_spans[i] if steps_spans else None
        if not isinstance(step, dict):
            add(EventKind.SYSTEM, f"[non-object step {i + 1}] {step!r}", span)
            continue
        thought = _text(step.get("thought") if step.get("thought") is not None else step.get("response"))
        if thought.strip():
            add(EventKind.AGENT_MESSAGE, thought.strip("\n"), span)
        action = _text(step.get("action")).strip("\n")
        tool = action.split(None, 1)[0] if action.strip() else None
        if action.strip():
            add(EventKind.TOOL_CALL, action, span, tool=tool)
        if "observation" in step and step.get("observation") is not None:
            obs = _text(step.get("observation"))
            kind = EventKind.FILE_CONTENT if tool and FILE_VIEW_COMMANDS.match(action) else EventKind.TOOL_OUTPUT
            add(kind, obs, span, tool=tool)
    if info.get("exit_status") is not None:
        add(EventKind.SYSTEM, f"[agent exit] exit_status={info.get('exit_status')}", None)
    return events, info


def parse_traj_file(path: Path, label: str) -> tuple[list[Event], dict[str, Any], dict[str, Any], bytes]:
    data = read_bounded(path, "traj", label)
    doc, step_spans, pos = load_with_spans(data, label, "trajectory")
    hist = top_level_array_spans(pos.text, "history") if isinstance(doc, dict) else None
    history_spans = [pos.span(a, b) for a, b in hist] if hist is not None else None
    events, info = parse_traj(doc, label, step_spans, history_spans)
    return events, info, doc, data


MINI_SUFFIX = ".traj.json"


def _instance_of(path: Path) -> str:
    return path.name[: -len(MINI_SUFFIX)] if path.name.endswith(MINI_SUFFIX) else path.name[: -len(".traj")]


@dataclass
class ParsedLog:
    events: list[Event]
    info: dict[str, Any]
    raw: bytes
    log_format: str
    harness: str
    model: str | None
    notes: list[str]


def parse_log_file(path: Path, label: str) -> ParsedLog:
    """A SWE-agent `.traj` or a mini-swe-agent `.traj.json`, by name (and, for `.traj.json`, its trajectory_format)."""
    if not path.name.endswith(MINI_SUFFIX):
        events, info, doc, raw = parse_traj_file(path, label)
        return ParsedLog(events, info, raw, "swe-agent-traj", "swe-agent", _model_of(doc), [])
    raw = read_bounded(path, "traj", label)
    doc, spans, _ = load_with_spans(raw, label, "messages")
    if not is_mini_traj(doc):
        fmt = doc.get("trajectory_format") if isinstance(doc, dict) else None
        raise ValueError(f"{label}: field trajectory_format is {fmt!r}, not 'mini-swe-agent-1'")
    traj = read_traj(doc, label, spans)
    notes = list(traj.notes)
    iid = doc.get("instance_id")
    if isinstance(iid, str) and iid != _instance_of(path):
        notes.append(f"{label}: field instance_id is {iid!r}; the file name's instance is used")
    return ParsedLog(traj.events, traj.info, raw, "mini-swe-agent-traj", "mini-swe-agent", model_of(traj.info), notes)


def _model_of(doc: dict[str, Any]) -> str | None:
    cfg = doc.get("replay_config")
    if isinstance(cfg, str):
        try:
            cfg = json.loads(cfg)
        except json.JSONDecodeError:
            cfg = None
    if isinstance(cfg, dict):
        model = (cfg.get("agent") or {}).get("model") if isinstance(cfg.get("agent"), dict) else None
        if isinstance(model, dict) and model.get("name"):
            return str(model["name"])
    return None


# --- outcomes -------------------------------------------------------------------------------


def read_reports(reports_dir: Path, root: Sequence[Path], notes: list[str], known: set[str] | None = None,
                 ) -> dict[str, tuple[dict[str, Any], str]]:
    """instance_id -> (report entry, file label) from every report.json below a folder. A report in the folder of
    one instance (`known`: the instance ids; None: any folder) that is another instance's (it names another
    instance, or is a link to another instance's report) is not used: its entry says why (BORROWED_KEY)."""
    out: dict[str, tuple[dict[str, Any], str]] = {}
    if not reports_dir.is_dir():
        raise FileNotFoundError(f"{display_path(reports_dir, root)}: SWE-bench reports folder not found")
    borrowed: dict[str, str] = {}
    for path in sorted(reports_dir.rglob("report.json")):
        label = display_path(path, root)
        try:  # a leading BOM accepted; a duplicated key refused; a FIFO or an oversized file refused (limits)
            data = loads_trusted(read_bounded(path, "json", label))
        except (ValueError, OSError, RecursionError) as exc:
            notes.append(f"{label}: unreadable evaluation report ({describe(exc)}); ignored")
            continue
        if not isinstance(data, dict):
            notes.append(f"{label}: evaluation report is not a JSON object; ignored")
            continue
        folder = path.parent.name
        real_folder = Path(os.path.realpath(path)).parent.name
        own_folder = folder != reports_dir.name and (known is None or folder in known)
        if own_folder and path.is_symlink() and real_folder != folder:  # a link to another instance's report
            borrowed[folder] = (f"{label}: {BORROWED_NOTE}: a link to the report of {real_folder!r}; "
                                f"not used for {folder!r}")
            continue
        if "resolved" in data or "tests_status" in data:  # one instance's report, in a folder named after it
            data = {folder: data}
        for iid, entry in data.items():
            if not isinstance(entry, dict):
                continue
            if own_folder and iid != folder and folder in data:
                continue  # a report of several instances in its own folder: only that folder's entry is this one's
            if own_folder and iid != folder and len(data) == 1:  # copied from another instance
                borrowed[folder] = (f"{label}: {BORROWED_NOTE}: it is the report of {iid!r}; not used for {folder!r}")
                continue
            if iid in out and out[iid][1] != label:
                notes.append(f"{label}: a second evaluation report for {iid!r} (first {out[iid][1]}); the first is used")
                continue
            out[iid] = (entry, label)
    for iid, why in borrowed.items():
        if iid not in out:
            out[iid] = ({BORROWED_KEY: why}, why.split(":", 1)[0])
    return out


BORROWED_KEY = "__gcpc_borrowed__"
"""Marks a report entry that was not used because it belongs to another instance (the outcome is 'other')."""


def borrowed_by_tests(entry: dict[str, Any] | None, task: Task | None, label: str | None) -> str | None:
    """Why a report holds another instance's tests (none of its decisive tests is this instance's), or None."""
    if entry is None or task is None or not task.tests or BORROWED_KEY in entry:
        return None
    reported = set(test_results_of(entry))
    listed = {t.id for t in task.tests}
    if reported and not reported & listed:
        return (f"{label}: {BORROWED_NOTE}: none of its {len(reported)} tests is among {task.task_id}'s "
                f"FAIL_TO_PASS / PASS_TO_PASS ({len(listed)}); not used")
    return None


def outcome_of(entry: dict[str, Any] | None, label: str | None) -> Outcome:
    if entry is None:
        return Outcome(status="other", reason="no evaluation report for this instance")
    if BORROWED_KEY in entry:
        return Outcome(status="other", reason=str(entry[BORROWED_KEY]))
    if entry.get("patch_is_None") or entry.get("patch_exists") is False:
        return Outcome(status="other", reason=f"{label}: empty patch (patch_is_None / patch_exists false)",
                       raw=f"resolved={json.dumps(entry.get('resolved'))}")
    if entry.get("patch_successfully_applied") is False:
        return Outcome(status="other", reason=f"{label}: the patch did not apply",
                       raw=f"resolved={json.dumps(entry.get('resolved'))}")
    resolved = entry.get("resolved")
    if resolved is True:
        return Outcome(status="PASS", reward=1.0, raw="resolved=true")
    if resolved is False:
        return Outcome(status="FAIL", reward=0.0, raw="resolved=false")
    return Outcome(status="other", reason=f"{label}: field 'resolved' is {resolved!r}",
                   raw=f"resolved={json.dumps(resolved)}")


def test_results_of(entry: dict[str, Any] | None, both: list[str] | None = None) -> dict[str, str]:
    """{test id: passed/failed} over every tests_status group; a test listed as both success and failure is
    failed, and added to `both` (never decided by the order of the lists)."""
    status = (entry or {}).get("tests_status")
    out: dict[str, str] = {}
    if not isinstance(status, dict):
        return out
    for group in status.values():
        if not isinstance(group, dict):
            continue
        for key, value in (("success", "passed"), ("failure", "failed")):
            listed = group.get(key) or []
            for t in listed if isinstance(listed, list) else []:
                if not isinstance(t, (str, int, float)) or isinstance(t, bool):
                    continue
                t = str(t)
                if t in out and out[t] != value and both is not None:
                    both.append(t)
                out[t] = "failed" if "failed" in (value, out.get(t)) else value
    return dict(sorted(out.items()))


# --- corpus ---------------------------------------------------------------------------------


def read_corpus(cfg: dict[str, Any], root: Path, roots: Sequence[Path]) -> tuple[list[Task], list[Trajectory],
                                                                                    list[Exclusion], list[str]]:
    benchmark = str(cfg.get("benchmark") or "swe-bench-verified")
    tasks_file = cfg.get("tasks_file") or cfg.get("tasks_dir")
    if not tasks_file and (cfg.get("_refused_tasks_file") or cfg.get("_refused_tasks_dir")):
        return [], [], [], []  # the tasks file is a link leading outside the corpus root (noted by the ingest)
    if not tasks_file:
        raise KeyError(f"corpus config {cfg.get('name', '?')!r}: missing required key 'tasks_file'")
    exclusions: list[Exclusion] = []
    tasks = read_tasks(root / tasks_file, benchmark, root=roots, exclusions=None if cfg.get("strict") else exclusions)
    by_id = {t.task_id: t for t in tasks}
    notes: list[str] = []
    trials_dirs = cfg.get("trials_dirs") or []
    trials_dirs = [trials_dirs] if isinstance(trials_dirs, str) else list(trials_dirs)
    reports_dirs = cfg.get("reports_dirs") or []
    reports_dirs = [reports_dirs] if isinstance(reports_dirs, str) else list(reports_dirs)
    if reports_dirs and len(reports_dirs) != len(trials_dirs):
        raise ValueError(f"corpus config {cfg.get('name', '?')!r}: reports_dirs must list one folder per "
                         f"trials_dirs entry ({len(trials_dirs)}), got {len(reports_dirs)}")
    condition = str(cfg.get("condition") or "unknown")
    max_chars = cfg.get("render_max_chars")
    trajectories: list[Trajectory] = []
    for i, d in enumerate(trials_dirs):
        if d is None:  # a link leading outside the corpus root (noted by gcpc.corpus.ingest.linked_outside)
            continue
        run_dir = root / d
        if not run_dir.is_dir():
            raise FileNotFoundError(f"{display_path(run_dir, roots)}: trajectories folder not found")
        run = run_dir.name
        reports = read_reports(root / reports_dirs[i], roots, notes, set(by_id)) if reports_dirs and reports_dirs[i] else {}
        for path in sorted([*run_dir.rglob("*.traj"), *run_dir.rglob("*" + MINI_SUFFIX)]):
            label = display_path(path, roots)
            iid = _instance_of(path)
            base = {"benchmark": benchmark, "source": run, "task_id": iid}
            if iid not in by_id:
                exclusions.append(Exclusion(path=label, reason=f"unknown task: '{iid}' is not in {tasks_file}",
                                            **base))
                continue
            links = outside_links(path, display=lambda p: display_path(p, roots))
            if links:
                exclusions.append(Exclusion(path=label, reason=f"link outside the corpus root: {'; '.join(links)}", **base))
                continue
            try:
                log = parse_log_file(path, label)
            except ValueError as exc:
                exclusions.append(Exclusion(path=label, reason=f"unreadable agent log: {exc}", **base))
                continue
            except Exception as exc:  # noqa: BLE001 - one bad file never aborts the corpus
                if cfg.get("strict"):
                    raise
                exclusions.append(Exclusion(path=label, reason=f"unreadable agent log: {label}: {describe(exc)}", **base))
                continue
            entry, report_label = reports.get(iid, (None, None))
            own: list[str] = []
            why_borrowed = borrowed_by_tests(entry, by_id.get(iid), report_label)
            if why_borrowed:
                entry = {BORROWED_KEY: why_borrowed}
            if entry is not None and BORROWED_KEY in entry:
                own.append(str(entry[BORROWED_KEY]))
            both: list[str] = []
            test_results = test_results_of(entry, both)
            if both:
                own.append(f"{report_label}: {BOTH_NOTE}: {len(both)} test(s) ({', '.join(repr(t[:80]) for t in both[:5])}); "
                           f"each counted as failed")
            kwargs = {} if max_chars is None else {"max_chars": max_chars}
            exit_status = log.info.get("exit_status")
            trajectory, why = read_guarded(lambda: Trajectory(
                trajectory_id=f"{benchmark}/{run}/{iid}",
                benchmark=benchmark,
                task_id=iid,
                harness=str(cfg.get("harness") or log.harness),
                model=str(cfg.get("model") or log.model or "unknown"),
                condition=condition,
                source=run,
                trial=iid,
                outcome=outcome_of(entry, report_label),
                test_results=test_results,
                events=log.events,
                source_path=label,
                log_format=log.log_format,
                log_files=[label],
                size=log_size([log.raw], log.events, **kwargs),
                notes=([f"{label}: exit_status={exit_status}"] if exit_status else []) + log.notes + own,
            ), what=f"unreadable trajectory: {label}", strict=bool(cfg.get("strict")))
            if trajectory is None:
                exclusions.append(Exclusion(path=label, reason=str(why), **base))
            else:
                trajectories.append(trajectory)
    return tasks, trajectories, exclusions, notes
