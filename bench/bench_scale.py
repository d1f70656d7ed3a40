"""Benchmark: the whole pipeline at the paper's corpus scale (20,818 trajectories) on one machine.

    python bench/bench_scale.py [--n 20818] [--out bench/results/scale.json] [--keep DIR]

Writes, in a temporary directory laid out like the repository, a synthetic corpus in the native
Harbor format the ingest stage reads (task folders with instruction.md, task.toml and a pytest
verifier; trial folders with config.json, result.json, a Claude Code stream-json agent log and
verifier/ctrf.json): 250 tasks over three benchmark names (87 SkillsBench, 89 Terminal-Bench 2.0,
74 Terminal-Bench 1, as in the paper), trials with and without skills, three models, and per-trial
agent-log sizes drawn (seeded, with replacement) from the sizes of the agent logs in
../shared/data (every Terminal-Bench 1 trial's log file as ingest picks it, and every SkillsBench
claude-code.txt); without the shared data, from the fixed quantile table FALLBACK_QUANTILES
(measured on the same files), interpolated in log space. Which one was used is in the results.

Then it runs the DVC stages' own commands (taken from the dvc.yaml files, in their dependency order) each in a child
process, with params.yaml = the repository's params.yaml (arm=all)
with `data` replaced by the synthetic corpus: ingest, synthesize, audit, validate, every judge arm,
finalize, rejudge, controls, the analyses (analyze, floors, item_validity, figures, rq2-rq5),
headline and report. Not run: audit_viewer (one HTML page per trajectory; not a paper-scale
target). Per stage: wall seconds, peak RSS (the child's own, from wait4, and the sampled sum over
its process tree, which covers worker processes), bytes of the stage's DVC outputs and bytes per
trajectory. The generator is the heuristic provider (it reads only the 250 tasks); the judge and
swap judge are the `instant` benchmark provider (gcpc.llm.instant: constant-time hash-seeded
replies through the real client path, LLMClient.run with call-store and blob writes), because the
heuristic judge takes about a second per trajectory and arm here (`--judge heuristic` measures it).
Target (issue 12): completes at 20,818 trajectories with every stage's
peak memory under 24 GiB.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shlex
import shutil
import string
import subprocess
import sys
import tempfile
import threading
import time
from itertools import accumulate
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
TARGET_BYTES = 24 * 1024**3  # issue 12: under 24 GiB at 20,818 trajectories
PAPER_N = 20818
BENCHES = (("skillsbench", 87), ("terminal-bench-2", 89), ("terminal-bench-1", 74))
MODELS = ("claude-opus-4-5", "claude-sonnet-4-5", "claude-haiku-4-5")
JOBS = (("withskills-claude-code", "tasks"), ("without-claude-code", "tasks-no-skills"))
NOT_RUN = {"audit_viewer": "one HTML page per trajectory (20,818 pages); not a paper-scale target"}

# Agent-log sizes in bytes at the 0th, 5th, ..., 100th percentile (21 values), then the 99th:
# the 1,054 agent logs of ../shared/data (1,042 Terminal-Bench 1 trials: sessions/agent.log, else
# panes/post-agent.txt; 12 SkillsBench claude-code.txt), measured 2026-12-01. Used when the shared
# data are absent. A third of the TB1 logs are ~450-byte empty pane captures.
FALLBACK_QUANTILES = (403, 454, 454, 454, 458, 458, 458, 494, 24400, 30156, 33523, 36600, 39298, 42122,
                      45006, 53600, 110887, 176278, 288645, 379109, 995304)


# ---------------------------------------------------------------- log sizes


def shared_log_sizes(shared: Path = SHARED) -> list[int] | None:
    """Sizes of the agent logs ingest reads in the shared data, or None when they are absent."""
    tb1 = shared / "terminal-bench-1" / "runs"
    sb = shared / "skillsbench" / "trajectories"
    if not tb1.is_dir() and not sb.is_dir():
        return None
    sizes = []
    if tb1.is_dir():
        for res in sorted(tb1.rglob("results.json")):
            for name in ("sessions/agent.log", "panes/post-agent.txt"):
                f = res.parent / name
                if f.is_file():
                    sizes.append(f.stat().st_size)
                    break
    if sb.is_dir():
        sizes += [p.stat().st_size for p in sorted(sb.rglob("claude-code.txt"))]
    return sorted(sizes) or None


def draw_sizes(n: int, rng: random.Random, empirical: list[int] | None) -> list[int]:
    """n log sizes: resampled from the empirical sizes, else inverse-CDF of the fixed quantiles."""
    if empirical:
        return [rng.choice(empirical) for _ in range(n)]
    import math

    q = FALLBACK_QUANTILES
    out = []
    for _ in range(n):
        u = rng.random() * (len(q) - 1)
        i = min(int(u), len(q) - 2)
        f = u - i
        out.append(int(math.exp((1 - f) * math.log(q[i]) + f * math.log(q[i + 1]))))
    return out


# ---------------------------------------------------------------- corpus

_WORDS = ("alpha", "beam", "cache", "delta", "event", "flux", "grid", "heap", "index", "joint", "kernel", "ledger",
          "matrix", "node", "orbit", "parser", "query", "relay", "sensor", "table", "unit", "vector", "widget", "yield")
_KINDS = (("csv", "summary"), ("json", "report"), ("txt", "log"), ("md", "notes"), ("yaml", "config"))


def _task_spec(bench: str, i: int) -> dict[str, Any]:
    a, b = _WORDS[i % len(_WORDS)], _WORDS[(i * 7 + 3) % len(_WORDS)]
    ext, what = _KINDS[i % len(_KINDS)]
    tid = f"{a}-{b}-{what}-{i:03d}"
    return {"bench": bench, "id": tid, "input": f"/root/data/{a}_{b}.csv", "output": f"/root/output/{what}_{i:03d}.{ext}",
            "column": b, "rows": 20 + (i * 13) % 180, "key": f"total_{a}", "value": 100 + (i * 37) % 900}


def write_task(folder: Path, t: dict[str, Any]) -> int:
    """Task folder: instruction, task.toml, and a pytest verifier with checkable assertions."""
    (folder / "tests").mkdir(parents=True)
    instr = (f"The file `{t['input']}` holds {t['rows']} rows with a `{t['column']}` column. Produce a {t['output'].rsplit('.', 1)[1]} "
             f"{t['output'].rsplit('/', 1)[1].split('_')[0]} from it.\n\nYou need to:\n"
             f"1. Read `{t['input']}` and skip rows whose `{t['column']}` is empty.\n"
             f"2. Write the result to `{t['output']}`.\n"
             f"3. The result must contain exactly {t['rows']} data rows.\n"
             f"4. Include the key `{t['key']}` with the sum of the `{t['column']}` column ({t['value']} for this data).\n"
             f"5. Sort the rows by `{t['column']}` in descending order.\n"
             f"6. Do not modify `{t['input']}`.\n")
    tests = (f'"""Verifier for {t["id"]}."""\n\nfrom pathlib import Path\n\nOUT = "{t["output"]}"\nINPUT = "{t["input"]}"\n\n\n'
             f"def _rows():\n    return Path(OUT).read_text().splitlines()[1:]\n\n\n"
             f"def test_output_exists():\n    assert Path(OUT).exists(), f\"{{OUT}} was not created\"\n\n\n"
             f"def test_row_count():\n    assert len(_rows()) == {t['rows']}, \"expected {t['rows']} rows\"\n\n\n"
             f"def test_total_key():\n    assert \"{t['key']}\" in Path(OUT).read_text()\n\n\n"
             f"def test_total_value():\n    assert \"{t['value']}\" in Path(OUT).read_text(), \"wrong {t['key']}\"\n\n\n"
             f"def test_sorted_descending():\n    vals = [float(r.split(',')[-1]) for r in _rows()]\n    assert vals == sorted(vals, reverse=True)\n\n\n"
             f"def test_input_unchanged():\n    assert Path(INPUT).stat().st_size > 0\n")
    files = {"instruction.md": instr, "tests/test_outputs.py": tests,
             "tests/test.sh": "#!/bin/bash\npytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA -v\n",
             "task.toml": (f'version = "1.0"\n\n[metadata]\nauthor_email = "bench@example.org"\ndifficulty = "medium"\n'
                           f'category = "data-processing"\ntags = ["{t["column"]}", "synthetic"]\n\n[verifier]\ntimeout_sec = 600.0\n\n'
                           f"[agent]\ntimeout_sec = 900.0\n")}
    size = 0
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
        size += len(text.encode())
    return size


TESTS = ("test_output_exists", "test_row_count", "test_total_key", "test_total_value", "test_sorted_descending",
         "test_input_unchanged")
_PIP = ("Collecting pandas", "  Downloading pandas-2.2.3-cp312-cp312-manylinux_2_17_x86_64.whl (12.7 MB)",
        "     ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 12.7/12.7 MB 48.1 MB/s eta 0:00:00",
        "Requirement already satisfied: numpy>=1.26.0 in /usr/lib/python3/dist-packages (from pandas) (1.26.4)",
        "Installing collected packages: tzdata, pandas")
PIP_LINES = "".join(_PIP[j % len(_PIP)] + "\n" for j in range(12))  # one in ten logs starts with install output


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False) + "\n"


def _base_lines(seed: int, chars: int = 65536) -> str:
    """~64 KB of output lines with placeholders (COL, KEY, VAL, ROW), built once per corpus."""
    rng = random.Random(seed)
    lines, size = [], 0
    while size < chars:
        r = rng.randrange(10**6)
        s = (f"COL_{r % 997},{r % 89},{(r * 7) % 1000 / 10:.1f}" if r % 5 else
             ("KEY,VAL" if r % 2 else f"Traceback: ValueError at row ROW{r % 100}"))
        lines.append(s)
        size += len(s) + 1
    return "\n".join(lines) + "\n"


class OutputPool:
    """Tool-output text for one task and outcome: the corpus's base lines with the task's column, key
    and value filled in (a FAIL run shows a wrong value); each tool output is a slice starting at a
    line, so 20,818 logs cost string slicing, not line generation."""

    def __init__(self, t: dict[str, Any], passed: bool, base: str):
        text = (base.replace("COL", t["column"]).replace("KEY", t["key"])
                .replace("VAL", str(t["value"] if passed else t["value"] + 1)).replace("ROW", ""))
        self.starts = [0, *accumulate(len(line) + 1 for line in text.split("\n")[:-2])]
        self.text = text + text  # a slice may run past the end

    def take(self, rng: random.Random, n: int) -> str:
        start = self.starts[rng.randrange(len(self.starts))]
        return self.text[start:start + min(n, len(self.text) // 2)].rstrip("\n") or "ok"


def agent_log(t: dict[str, Any], size: int, passed: bool, rng: random.Random, session: str, model: str, pool: OutputPool) -> str:
    """A Claude Code stream-json log of about ``size`` bytes (at least init, one message, result).

    Turns of text / Bash call / tool output; the output lines are templated from the task (its file,
    column, key and value; error lines), so the judge view has the task's material to quote."""
    def assistant(block: dict[str, Any]) -> str:
        return _line({"type": "assistant", "message": {"role": "assistant", "model": model, "content": [block]}, "session_id": session})

    lines = [_line({"type": "system", "subtype": "init", "cwd": "/root", "session_id": session, "tools": ["Bash", "Read", "Write"],
                    "model": model})]
    final = (f"Done: wrote {t['output']} with {t['rows']} rows and {t['key']} = {t['value']}; all checks pass." if passed else
             f"I could not finish: {t['output']} is incomplete ({t['key']} missing).")
    tail = _line({"type": "result", "subtype": "success", "is_error": not passed, "num_turns": 1, "result": final, "session_id": session})
    lines.append(assistant({"type": "text", "text": f"Let me look at {t['input']} first."}))
    used = sum(map(len, lines)) + len(tail)
    k = 0
    while used < size:
        k += 1
        call_id = f"toolu_{session[:8]}_{k:04d}"
        cmd = (f"python3 /root/solve.py --step {k} && head -n 40 {t['output']}" if k % 3 else f"wc -l {t['input']} && ls -la /root/output")
        call = assistant({"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": cmd}})
        want = max(60, min(size - used - len(call) - 160, int(200 * 40 ** rng.random())))
        text = pool.take(rng, want)
        if k == 1 and rng.random() < 0.1:
            text = PIP_LINES + text
        result = _line({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call_id, "content": text, "is_error": (not passed and k % 4 == 0)}]},
            "session_id": session})
        note = assistant({"type": "text", "text": f"Step {k}: checked {t['output']} against the {t['column']} column."})
        lines += [call, result, note]
        used += len(call) + len(result) + len(note)
    lines.append(tail)
    return "".join(lines)


def _code(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(7))


def write_corpus(n: int, seed: int, base: Path, empirical: list[int] | None) -> dict[str, Any]:
    """The synthetic corpus under ``base`` (one Harbor corpus folder per benchmark); returns its sizes."""
    rng = random.Random(seed)
    per_bench = [[_task_spec(b, i) for i in range(k)] for b, k in BENCHES]
    # interleaved over the benchmarks, so that every benchmark has trials at any n
    tasks = [ts[i] for i in range(max(map(len, per_bench))) for ts in per_bench if i < len(ts)]
    difficulty = [rng.random() for _ in tasks]
    task_bytes = 0
    for t in tasks:
        task_bytes += write_task(base / t["bench"] / "tasks" / t["id"], t)
    sizes = draw_sizes(n, rng, empirical)
    pools: dict[tuple[int, bool], OutputPool] = {}
    base_lines = _base_lines(seed)
    log_bytes = trial_bytes = 0
    counts = {"PASS": 0, "FAIL": 0, "other": 0}
    for k in range(n):
        ti = k % len(tasks)
        t = tasks[ti]
        rep = k // len(tasks)
        job, source = JOBS[(ti + rep) % 2]
        model = MODELS[(rep // 2) % 3]
        trial = f"{t['id']}__{_code(rng)}"
        folder = base / t["bench"] / "jobs" / job / trial
        (folder / "agent").mkdir(parents=True)
        (folder / "verifier").mkdir()
        u = rng.random()
        status = "other" if u < 0.04 else ("PASS" if u < 0.04 + 0.96 * (0.2 + 0.6 * difficulty[ti]) * (1.1 if source == "tasks" else 0.9)
                                           else "FAIL")
        counts[status] += 1
        passed = status == "PASS"
        session = f"{k:08x}-{_code(rng)}"
        if (ti, passed) not in pools:
            pools[(ti, passed)] = OutputPool(t, passed, base_lines)
        log = agent_log(t, sizes[k], passed, rng, session, model, pools[(ti, passed)]).encode()
        (folder / "agent" / "claude-code.txt").write_bytes(log)
        log_bytes += len(log)
        cfg = {"task": {"path": f"/srv/bench/tasks/{t['id']}", "source": source}, "trial_name": trial,
               "trials_dir": f"/srv/bench/jobs/{job}", "agent": {"name": "claude-code", "model_name": model}}
        result = {"task_name": t["id"], "trial_name": trial, "source": source, "config": cfg,
                  "verifier_result": None if status == "other" else {"rewards": {"reward": 1.0 if passed else 0.0}},
                  "exception_info": ({"exception_type": "AgentTimeoutError", "exception_message": "agent timed out"}
                                     if status == "other" else None)}
        ctrf = {"results": {"tool": {"name": "pytest"}, "tests": [
            {"name": f"test_outputs.py::{name}", "status": "passed" if passed or rng.random() < 0.4 else "failed"} for name in TESTS]}}
        for name, obj in (("config.json", cfg), ("result.json", result), ("verifier/ctrf.json", ctrf)):
            text = json.dumps(obj, indent=1).encode()
            (folder / name).write_bytes(text)
            trial_bytes += len(text)
    return {"tasks": len(tasks), "trials": n, "outcomes": counts, "agent_log_bytes": log_bytes,
            "agent_log_bytes_mean": round(log_bytes / max(n, 1)), "task_bytes": task_bytes, "trial_metadata_bytes": trial_bytes}


# ---------------------------------------------------------------- stages


def pipeline_stages(dvc: dict[str, Any], arms: list[str]) -> list[tuple[str, list[str], list[str]]]:
    """(name, argv, outs) in the pipeline's dependency order, judge expanded per arm; audit_viewer left out (NOT_RUN).

    The order is DVC's own graph (what `dvc dag` draws): a stage runs after every stage whose out is one of its
    deps, inside one or a folder holding one, ties broken by file order (dvc.yaml, then pipelines/*/dvc.yaml). No hand-kept map:
    a stage added to any of the files lands after what it reads (a stage outside a map once ran `report` before
    the analyses it reads)."""
    out: list[tuple[str, list[str], list[str], list[str]]] = []
    for name, st in dvc["stages"].items():
        if name in NOT_RUN:
            continue
        if "foreach" in st:
            for key in arms:
                do = st["do"]
                cmd = do["cmd"].replace("${key}", key)
                outs = [_path(o).replace("${key}", key) for o in do.get("outs", []) + do.get("metrics", [])]
                deps = [_path(d).replace("${key}", key) for d in do.get("deps", [])]
                out.append((f"{name}@{key}", shlex.split(cmd), outs, deps))
        else:
            outs = [_path(o) for o in st.get("outs", []) + st.get("metrics", []) + st.get("plots", [])]
            out.append((name, shlex.split(st["cmd"]), outs, [_path(d) for d in st.get("deps", [])]))
    return [(n, argv, outs) for n, argv, outs, _ in _topological(out)]


def _path(entry: Any) -> str:
    return entry if isinstance(entry, str) else next(iter(entry))


def _topological(stages: list[tuple[str, list[str], list[str], list[str]]]) -> list[tuple[str, list[str], list[str], list[str]]]:
    """Kahn's algorithm over dep -> out edges (a dep equal to an out, inside an out folder, or a folder holding an out), stable in input order."""
    def produces(out: str, dep: str) -> bool:
        out, dep = out.rstrip("/"), dep.rstrip("/")
        return dep == out or dep.startswith(out + "/") or out.startswith(dep + "/")

    before: dict[int, set[int]] = {i: set() for i in range(len(stages))}
    for i, (_, _, _, deps) in enumerate(stages):
        for j, (_, _, outs, _) in enumerate(stages):
            if i != j and any(produces(o, d) for o in outs for d in deps):
                before[i].add(j)
    done: list[int] = []
    left = list(range(len(stages)))
    while left:
        ready = [i for i in left if before[i] <= set(done)]
        if not ready:
            raise ValueError("the dvc.yaml files have a dependency cycle among: " + ", ".join(stages[i][0] for i in left))
        done.append(ready[0])
        left.remove(ready[0])
    return [stages[i] for i in done]


def _tree_rss(pid: int) -> int:
    """Sum of VmRSS (bytes) over ``pid`` and its descendants, from /proc."""
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
                    break
            for task in Path(f"/proc/{p}/task").iterdir():
                stack += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return total


def _bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.is_dir() else 0


def run_stage(argv: list[str], cwd: Path, log: Path) -> dict[str, Any]:
    """One stage in a child process: wall time, the child's peak RSS (wait4) and the tree's sampled peak."""
    argv = [sys.executable if a == "python" else a for a in argv]
    with log.open("wb") as fh:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT)
        peak = [0]
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.2):
                peak[0] = max(peak[0], _tree_rss(proc.pid))

        th = threading.Thread(target=sample, daemon=True)
        th.start()
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        done.set()
        th.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
    maxrss = ru.ru_maxrss * 1024  # kilobytes on Linux
    return {"wall_s": round(wall, 2), "cpu_s": round(ru.ru_utime + ru.ru_stime, 2), "peak_rss_bytes": maxrss,
            "peak_tree_rss_sampled_bytes": max(peak[0], maxrss), "rc": proc.returncode}


def bench_params(base_rel: str, judge: str = "instant") -> dict[str, Any]:
    """The repository's params.yaml with `data` = the synthetic corpus (one corpus per benchmark) and,
    for judge 'instant', the instant benchmark provider as judge and swap judge (gcpc.llm.instant)."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    if judge != "heuristic":
        cfg = yaml.safe_load((ROOT / "conf" / "llm" / f"{judge}.yaml").read_text(encoding="utf-8"))
        params["judge"] = dict(cfg)
        params["analysis"]["rejudge"]["swap_judge"] = dict(cfg, model=f"{cfg['model']}-swap")
    params["data"] = {"name": "bench-scale", "root": base_rel, "corpora": [
        {"name": b, "root": f"{base_rel}/{b}", "benchmark": b, "tasks_dir": "tasks", "trials_dirs": ["jobs"]} for b, _ in BENCHES]}
    return params


def _loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


STATE = "bench_state.json"
"""In the --keep folder: the corpus built and every stage measured so far, written after each step, so an
interrupted run (a stage failed, the machine went away) resumes with --resume where it stopped."""


def run(n: int, seed: int, keep: Path | None = None, quiet: bool = False, judge: str = "instant",
        only: list[str] | None = None, resume: bool = False) -> dict[str, Any]:
    from gcpc.paths import pipeline_yaml

    dvc = pipeline_yaml(ROOT)  # dvc.yaml and pipelines/*/dvc.yaml
    tmp = None
    state: dict[str, Any] | None = None
    if keep is None:
        tmp = tempfile.TemporaryDirectory(prefix="gcpc-scale-")
        work = Path(tmp.name)
    else:
        work = keep
        if resume and (work / STATE).exists():
            state = json.loads((work / STATE).read_text(encoding="utf-8"))
            if state["n"] != n or state["seed"] != seed or state["judge"] != judge:
                raise SystemExit(f"--resume: {work / STATE} is a run with n={state['n']}, seed={state['seed']}, "
                                 f"judge={state['judge']}, not this one")
        else:
            if work.exists():
                shutil.rmtree(work)
            work.mkdir(parents=True)
    try:
        for folder in ("prompts", "conf"):  # stages read prompts/ and (the estimate) conf/llm/
            shutil.rmtree(work / folder, ignore_errors=True)
            shutil.copytree(ROOT / folder, work / folder)
        if state is None:
            load_before = _loadavg()
            empirical = shared_log_sizes()
            t0 = time.perf_counter()
            corpus = write_corpus(n, seed, work / "data" / "bench", empirical)
            corpus["build_s"] = round(time.perf_counter() - t0, 2)
            corpus["size_distribution"] = (f"resampled from the {len(empirical)} agent logs in ../shared/data" if empirical
                                           else "fixed quantile table FALLBACK_QUANTILES (shared data absent)")
            stages: dict[str, Any] = {}
            (work / "logs").mkdir()
        else:
            load_before, corpus, stages = state["loadavg_before"], state["corpus"], state["stages"]
        params = bench_params("data/bench", judge)
        (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
        arms = list(params["arm"])

        def save() -> None:
            if keep is not None:
                (work / STATE).write_text(json.dumps({"n": n, "seed": seed, "judge": judge, "loadavg_before": load_before,
                                                      "corpus": corpus, "stages": stages}, indent=1), encoding="utf-8")

        save()
        planned = pipeline_stages(dvc, arms)
        unknown = sorted(set(only or ()) - {name for name, _, _ in planned})
        if unknown:
            raise SystemExit(f"--stages: no such stage: {', '.join(unknown)}")
        for name, argv, outs in planned:
            if (only is not None and name not in only) or name in stages:  # resumed: measured already
                continue
            res = run_stage(argv, work, work / "logs" / f"{name.replace('@', '_')}.log")
            res["output_bytes"] = sum(_bytes(work / o) for o in outs)
            res["output_bytes_per_trajectory"] = round(res["output_bytes"] / max(n, 1), 1)
            res["loadavg_after"] = _loadavg()
            stages[name] = res
            if res["rc"] == 0:
                save()
            if not quiet:
                print(f"{name:24s} {res['wall_s']:8.1f} s  peak {res['peak_tree_rss_sampled_bytes'] / 2**20:8.0f} MiB  "
                      f"out {res['output_bytes'] / 2**20:9.1f} MiB  load {res['loadavg_after']}", flush=True)
            if res["rc"] != 0:
                tail = (work / "logs" / f"{name.replace('@', '_')}.log").read_text(errors="replace")[-3000:]
                raise SystemExit(f"stage {name} failed with exit code {res['rc']}:\n{tail}")
        ingest_summary = {}
        pop = work / "data" / "processed" / "ingest" / "population.json"
        if pop.exists():
            p = json.loads(pop.read_text())
            ingest_summary = {k: p[k] for k in ("n_trajectories", "n_tasks", "n_excluded") if k in p}
        processed = _bytes(work / "data" / "processed")
    finally:
        if tmp is not None:
            tmp.cleanup()
    peak = max(s["peak_tree_rss_sampled_bytes"] for s in stages.values())
    return {
        "benchmark": "whole pipeline on a synthetic corpus at the paper's scale",
        "command": f"python bench/bench_scale.py --n {n}" + (f" --seed {seed}" if seed else "") + (
            f" --judge {judge}" if judge != "instant" else "") + (f" --stages {' '.join(only)}" if only else "")
            + (" --resume" if state is not None else ""),
        "n_trajectories": n, "seed": seed, "corpus": corpus, "ingest_population": ingest_summary,
        "judge": {"provider": params["judge"]["provider"], "model": params["judge"]["model"]},
        "generator": {"provider": params["generator"]["provider"], "model": params["generator"]["model"]}, "arms": arms,
        "stages": stages, "not_run": NOT_RUN,
        "total_wall_s": round(sum(s["wall_s"] for s in stages.values()), 1),
        "peak_memory_bytes": peak, "peak_memory_stage": max(stages, key=lambda k: stages[k]["peak_tree_rss_sampled_bytes"]),
        "processed_bytes": processed, "processed_bytes_per_trajectory": round(processed / max(n, 1), 1),
        "processed_over_agent_logs": round(processed / max(corpus["agent_log_bytes"], 1), 3),
        "target_peak_bytes": TARGET_BYTES, "meets_target": peak < TARGET_BYTES,
        "loadavg_before": load_before, "loadavg_after": _loadavg(),
        "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpu_count": os.cpu_count()},
    }


def scaling(small: dict[str, Any], large: dict[str, Any], target_n: int = PAPER_N) -> dict[str, Any]:
    """Per stage, a straight line through two runs (wall, peak memory, output bytes vs n), read at target_n.

    For a run that could not be made at the paper's scale: an estimate, labelled as one; stages
    whose cost grows faster than linearly in n are underestimated by it."""
    n1, n2 = small["n_trajectories"], large["n_trajectories"]
    if n1 == n2:
        raise ValueError("scaling needs two runs at different n")
    out: dict[str, Any] = {}
    for name, b in large["stages"].items():
        a = small["stages"].get(name)
        if a is None:
            continue
        row: dict[str, Any] = {}
        for key in ("wall_s", "cpu_s", "peak_tree_rss_sampled_bytes", "output_bytes"):
            slope = (b[key] - a[key]) / (n2 - n1)
            row[key] = {f"n{n1}": a[key], f"n{n2}": b[key], "per_trajectory": round(slope, 4),
                        f"linear_at_{target_n}": round(b[key] + slope * (target_n - n2), 1)}
        out[name] = row
    est_peak = max(r["peak_tree_rss_sampled_bytes"][f"linear_at_{target_n}"] for r in out.values())
    return {"from": [n1, n2], "target_n": target_n, "stages": out,
            # CPU seconds, not wall: wall time on a shared machine follows the load, which differs between runs
            "estimated_total_cpu_s": round(sum(r["cpu_s"][f"linear_at_{target_n}"] for r in out.values()), 1),
            "estimated_peak_memory_bytes": est_peak,
            "estimated_peak_memory_stage": max(out, key=lambda k: out[k]["peak_tree_rss_sampled_bytes"][f"linear_at_{target_n}"]),
            "estimated_meets_target": est_peak < TARGET_BYTES,
            "note": ("linear extrapolation through two measured runs, not a measurement; wall_s lines are unreliable "
                     "when the machine's load differed between the runs (see loadavg), cpu_s and memory less so"),
            "loadavg": {f"n{n1}": small.get("loadavg_after"), f"n{n2}": large.get("loadavg_after")}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=PAPER_N, help="trajectories (default: the paper's 20,818)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "scale.json")
    parser.add_argument("--judge", choices=("instant", "heuristic"), default="instant",
                        help="judge provider (heuristic: about a second per trajectory and arm here)")
    parser.add_argument("--scaling", nargs=2, type=Path, metavar=("SMALL", "LARGE"),
                        help="no run: add a per-stage linear extrapolation to --n from two result files to LARGE, written to --out")
    parser.add_argument("--keep", type=Path, default=None, help="build in this folder (emptied first) and keep it")
    parser.add_argument("--resume", action="store_true", help=f"with --keep: continue the run recorded in its {STATE} "
                        "(the corpus and the stages measured are kept; the rest run)")
    parser.add_argument("--stages", nargs="+", default=None,
                        help="only these stages, still in the pipeline's order (the test suite's smoke run: the first "
                             "few); the default and every result meant for bench/results runs them all")
    args = parser.parse_args()
    if args.scaling:
        small, large = (json.loads(p.read_text(encoding="utf-8")) for p in args.scaling)
        large["scaling"] = scaling(small, large, args.n)
        large["scaling"]["command"] = (f"python bench/bench_scale.py --n {args.n} --scaling "
                                       f"{args.scaling[0].name} {args.scaling[1].name}")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(large, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        print(json.dumps({k: v for k, v in large["scaling"].items() if k != "stages"}, indent=2))
        return 0
    if args.resume and args.keep is None:
        parser.error("--resume needs --keep")
    result = run(args.n, args.seed, args.keep, judge=args.judge, only=args.stages, resume=args.resume)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(json.dumps({k: result[k] for k in ("total_wall_s", "peak_memory_bytes", "peak_memory_stage", "meets_target")}, indent=2))
    print(f"-> {args.out}" + ("" if result["meets_target"] else "  (target not met)"))
    return 0  # a missed memory target is a result (meets_target in the file), not a failure to measure


if __name__ == "__main__":
    raise SystemExit(main())
