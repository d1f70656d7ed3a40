"""What a fresh `dvc repro` leaves different from what git holds (issue 24): CI's output check.

tests/test_pipeline_e2e.py runs `dvc repro` in a clean copy of the repository (every file git tracks,
committed outputs and locks included, committed as a fresh repository, the way a clone looks); then
`dvc status` must report no changed stage and `git status --porcelain` must be empty, so every committed
figure, metric and dvc.lock hash is what this code, these params and the locked environment produce.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

FIX = ("run `dvc repro` in the locked environment (uv sync --frozen --extra test) and commit dvc.lock, "
       "pipelines/*/dvc.lock, figures/ and metrics/ (docs/reproducibility.md)")


def git(work: Path, *args: str) -> str:
    run = subprocess.run(["git", "-c", "user.name=gcpc-ci", "-c", "user.email=ci@gcpc.invalid", "-c", "commit.gpgsign=false",
                          *args], cwd=work, capture_output=True, text=True, check=True)
    return run.stdout


def output_problems(work: Path, env: dict[str, str], *, repro: bool = True) -> list[str]:
    """'<check>: <what>' for each difference: a failed `dvc repro`, a stage `dvc status` reports changed
    (with what changed), a path `git status --porcelain` lists (with its status letters)."""
    dvc = [sys.executable, "-m", "dvc"]
    if repro:
        run = subprocess.run([*dvc, "repro", "-q"], cwd=work, env=env, capture_output=True, text=True, timeout=1800)
        if run.returncode:
            return [f"dvc repro failed ({run.returncode}): {(run.stderr or run.stdout).strip()[-1500:]}"]
    problems = []
    run = subprocess.run([*dvc, "status", "--json"], cwd=work, env=env, capture_output=True, text=True, timeout=600)
    if run.returncode:
        problems.append(f"dvc status failed ({run.returncode}): {run.stderr.strip()[-1000:]}")
    else:
        for stage, changes in sorted(json.loads(run.stdout or "{}").items()):
            problems.append(f"dvc status: {stage}: {json.dumps(changes, sort_keys=True)}")
    porcelain = git(work, "status", "--porcelain", "--untracked-files=all")
    problems += [f"git status: {line}" for line in porcelain.splitlines() if line.strip()]
    return problems
