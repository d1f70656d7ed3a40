"""Sweeps through `dvc exp run` in a temporary clone, on a two-task subset of the demo (`data=mini`).

* every single-arm set and two mixed sets (`gcpc_both`, `all`) run to completion as one queued
  sweep, each with its analysed arm derived from its arm set;
* the README's `dvc exp run` commands (the block between the `tested-commands` markers) run as
  written, with `-S data=mini` added so the suite stays small;
* a two-judge sweep (the offline heuristic and an OpenAI-compatible fake server on 127.0.0.1) is
  readable: the README's `dvc exp show` command fits 200 columns and shows judge, arm set, plain
  AUC per arm and cost; the headline token totals equal the sums over every llm_calls*.jsonl.

The subset is written with `python -m gcpc.corpus.new_config`, as a user would add their own data.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
pytestmark = pytest.mark.slow
# Each queued experiment re-runs the whole pipeline (about 40 s alone, minutes on a loaded machine), so the
# sweeps below cost far more than CI's budget: they run when asked, `GCPC_SWEEP_TESTS=1 python -m pytest tests/test_sweeps.py`.
sweeps = pytest.mark.skipif(os.environ.get("GCPC_SWEEP_TESTS") != "1",
                            reason="queued-sweep tests take 10-30 min; set GCPC_SWEEP_TESTS=1 to run them")

MINI_TASKS = ("beam-deflection-units", "inventory-yaml-to-csv")
DVC = str(Path(sys.executable).parent / "dvc")


def _run(args: list[str], cwd: Path, env: dict[str, str], ok: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)
    if ok:
        assert proc.returncode == 0, f"{' '.join(args)} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc


def _git_files(root: Path) -> list[str]:
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=root,
                         capture_output=True, text=True, check=True).stdout
    return [f for f in out.split("\0") if f]


def make_clone(dest: Path) -> tuple[Path, dict[str, str]]:
    """The repository without outputs, plus data/mini (two demo tasks with their trials) and conf/data/mini.yaml."""
    for rel in _git_files(ROOT):
        src = ROOT / rel
        if src.is_file() and not rel.startswith(("data/processed/", "metrics/", "figures/")) and rel != "dvc.lock":
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    demo, mini = ROOT / "data" / "demo", dest / "data" / "mini"
    for task in MINI_TASKS:
        shutil.copytree(demo / "tasks" / task, mini / "tasks" / task)
        for trial in sorted((demo / "jobs").glob(f"*/{task}__*")):
            shutil.copytree(trial, mini / "jobs" / trial.parent.name / trial.name)
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    env = {k: v for k, v in env.items() if not k.endswith("_API_KEY")}
    _run([sys.executable, "-m", "gcpc.corpus.new_config", "mini", "data/mini", "--benchmark", "skillsbench"], dest, env)
    for args in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "clone"]):
        _run(args, dest, env)
    return dest, env


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    return make_clone(tmp_path_factory.mktemp("sweep") / "gcpc")


def _exps(root: Path, env: dict[str, str]) -> list[dict]:
    """(name, params.yaml, metrics/headline.json) of every experiment `dvc exp show --json` lists."""
    shown = json.loads(_run([DVC, "exp", "show", "--json"], root, env).stdout)
    out = []
    for commit in shown:
        ranges = [(None, commit)] + [(r, e) for r in commit.get("experiments") or [] for e in r.get("revs") or []]
        for rng, exp in ranges:
            data = exp.get("data") or {}
            state = ((rng or {}).get("executor") or {}).get("state") if rng is not None else "baseline"
            out.append({"name": exp.get("name") or (rng or {}).get("name") or exp.get("rev"), "state": state,
                        "params": ((data.get("params") or {}).get("params.yaml") or {}).get("data") or {},
                        "headline": ((data.get("metrics") or {}).get("metrics/headline.json") or {}).get("data")})
    return out


@sweeps
def test_every_single_arm_set_and_two_mixed_sets_run_as_one_queued_sweep(clone):
    root, env = clone
    arm_sets = sorted(p.stem for p in (root / "conf" / "arm").glob("*.yaml"))
    assert {"gcpc", "gcpc_gate", "generic", "tick", "tick_adapted", "holistic", "gcpc_both", "all"} <= set(arm_sets)
    _run([DVC, "exp", "run", "--queue", "-S", "data=mini", "-S", f"arm={','.join(arm_sets)}"], root, env)
    _run([DVC, "exp", "run", "--run-all"], root, env, ok=False)
    exps = [e for e in _exps(root, env) if e["params"].get("experiment", {}).get("data") == "mini"]
    by_set = {tuple(e["params"]["arm"]): e for e in exps if e["state"] in ("success", None) and e["headline"]}
    assert len(by_set) == len(arm_sets), f"experiments that finished: {sorted(by_set)}"
    for arms, e in by_set.items():
        h, a = e["headline"], e["params"]["analysis"]
        assert h is not None, f"arm set {arms}: no headline metrics"
        assert a["primary_arm"] in arms and a["rejudge"]["arm"] in arms and set(a["controls"]["arms"]) <= set(arms)
        assert e["params"]["experiment"]["arms"] == "+".join(arms)
        assert h["primary_arm"] == a["primary_arm"] and set(h["auc"]) <= set(arms) and h["auc"], arms
        assert h["n"]["judged"] > 0 and h["usage"]["calls"] > 0
    # the paper's GCPC is the derived primary arm whenever the set has it, else the first checklist arm
    assert by_set[("gcpc",)]["params"]["analysis"]["primary_arm"] == "gcpc"
    assert by_set[("gcpc_gate",)]["params"]["analysis"]["primary_arm"] == "gcpc_gate"
    assert by_set[("gcpc", "gcpc_gate")]["params"]["analysis"]["primary_arm"] == "gcpc"


def test_an_arm_outside_the_set_fails_at_composition_naming_both_keys(clone):
    root, env = clone
    before = (root / "params.yaml").read_bytes()
    proc = _run([DVC, "exp", "run", "-S", "data=mini", "-S", "arm=generic", "-S", "analysis.primary_arm=gcpc"], root, env, ok=False)
    assert proc.returncode != 0
    assert "analysis.primary_arm = 'gcpc'" in proc.stderr + proc.stdout and "arm set `arm` (generic)" in proc.stderr + proc.stdout
    proc = _run([DVC, "exp", "run", "-S", "+judge.api_key=sk-never-written"], root, env, ok=False)
    assert proc.returncode != 0 and "api_key" in proc.stderr + proc.stdout
    assert (root / "params.yaml").read_bytes() == before  # refused before anything was written


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- tested-commands -->\s*```bash\n(.*?)```\s*<!-- /tested-commands -->", text, re.S)
    assert block, "README.md: the block between <!-- tested-commands --> markers is missing"
    cmds = []
    for line in block.group(1).splitlines():
        line = line.split("  #", 1)[0].strip()
        if line:
            cmds += [c.strip() for c in line.split("&&")]
    return cmds


@sweeps
def test_readme_experiment_commands_run_to_completion(clone):
    root, env = clone
    cmds = readme_commands()
    assert any("--queue" in c for c in cmds) and any("llm@judge=replay" in c for c in cmds)
    earlier = {e["name"] for e in _exps(root, env)}
    _run([DVC, "exp", "run", "-S", "data=mini", "-n", "recorded"], root, env)  # replay needs a recorded run
    for cmd in cmds:
        args = shlex.split(cmd)
        assert args[0] == "dvc", cmd
        if args[1:3] == ["exp", "run"] and "--run-all" not in args:
            args += ["-S", "data=mini"]
        proc = _run([DVC, *args[1:]], root, env, ok=False)
        assert proc.returncode == 0, f"README command failed: {cmd}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    failed = [e["name"] for e in _exps(root, env) if e["state"] == "failed" and e["name"] not in earlier]
    assert not failed, f"failed experiments: {failed}"


def _calls_totals(folder: Path) -> dict[str, int]:
    from gcpc.llm.store import read_records

    totals = {"calls": 0, "input_tokens": 0, "output_tokens": 0, "cached_tokens": 0}
    for path in sorted(folder.rglob("llm_calls*.jsonl")):
        for r in read_records(path):
            totals["calls"] += 1
            totals["input_tokens"] += int(r.usage.get("input_tokens", 0))
            totals["output_tokens"] += int(r.usage.get("output_tokens", 0))
            totals["cached_tokens"] += int(r.usage.get("cache_read_input_tokens", 0))
    return totals


@sweeps
def test_two_judge_sweep_is_readable_and_counts_every_token(tmp_path):
    from fakeservers import FakeOpenAI

    root, env = make_clone(tmp_path / "gcpc")
    with FakeOpenAI() as server:
        judge = ["-S", "data=mini", "-S", "arm=gcpc_both", "-S", f"++judge.base_url={server.url}/v1",
                 "-S", "++judge.prices={input_per_mtok:0.15,output_per_mtok:0.6}"]
        # the fake-server run in the workspace: its call files are on disk to be summed
        _run([DVC, "exp", "run", *judge, "-S", "llm@judge=openai-compatible", "-n", "fake-judge"], root, env)
        headline = json.loads((root / "metrics" / "headline.json").read_text())
        totals = _calls_totals(root / "data" / "processed")
        assert totals["calls"] > 0 and totals["input_tokens"] > 0 and server.model_calls > 0
        for key, value in totals.items():
            assert headline["usage"][key] == value, key
        assert headline["usage"]["cost"] > 0
        usage_md = (root / "data" / "processed" / "headline" / "usage.md").read_text()
        assert "judge@gcpc" in usage_md and "## LLM usage and cost" in (root / "figures" / "report.md").read_text()
        # the same two judges as a queued sweep in Hydra's grammar
        _run([DVC, "exp", "run", "--queue", *judge, "-S", "llm@judge=heuristic,openai-compatible"], root, env)
        _run([DVC, "exp", "run", "--run-all"], root, env)
    show = next(c for c in readme_commands_show() if c.startswith("dvc exp show"))
    wide = dict(env, COLUMNS="200")
    out = _run([DVC, *shlex.split(show)[1:]], root, wide).stdout
    judged = {}
    for e in _exps(root, env):
        if e["name"] not in ("workspace", "fake-judge") and e["headline"] and e["params"].get("experiment", {}).get("judge"):
            judged.setdefault(e["params"]["experiment"]["judge"], e["name"])
    assert len(judged) == 2, judged
    diff = _run([DVC, "exp", "diff", *judged.values()], root, wide).stdout
    if os.environ.get("GCPC_EXP_SHOW_OUT"):  # to paste the README's example output
        Path(os.environ["GCPC_EXP_SHOW_OUT"]).write_text(f"$ {show}\n{out}\n$ dvc exp diff A B\n{diff}")
    width = max(len(line) for line in out.splitlines())
    assert width <= 200, f"{show} is {width} columns wide:\n{out}"
    for needle in ("experiment.judge", "experiment.arms", "auc.gcpc", "auc.gcpc_gate", "usage.cost",
                   "heuristic/gcpc-heuristic-v1", "openai/Qwen/Qwen3-8B", "gcpc+gcpc_gate"):
        assert needle in out, f"{needle!r} not shown by {show}:\n{out}"


def readme_commands_show() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- exp-show -->\s*```bash\n(.*?)```", text, re.S)
    assert block, "README.md: the `dvc exp show` block after <!-- exp-show --> is missing"
    return [line.strip() for line in block.group(1).splitlines() if line.strip().startswith("dvc ")]
