"""Pipeline outputs up to finalize on the demo corpus, built in a temporary working directory.

Shared by the audit-viewer and annotation-app tests: the same library calls the ingest,
synthesize, judge and finalize stages make (heuristic provider, every arm of conf/arm/all.yaml).
Not a test module (no test_ prefix); tests import it like tests/fakeservers.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def judge_through_finalize(params: dict) -> None:
    """In the cwd (a demo work folder holding params.yaml): ingest, synthesize, every arm of `params`, finalize."""
    from gcpc.corpus.ingest import ingest, write_outputs
    from gcpc.judging.stage import run as judge_run
    from gcpc.scoring.finalize import run as finalize_run
    from gcpc.synthesis.generate import SynthesisSettings
    from gcpc.synthesis.stage import synthesize_all

    out = Path("data/processed")
    result = ingest(dict(params["data"]), Path.cwd())
    write_outputs(result, out / "ingest")
    synthesize_all(result.tasks, params["generator"], SynthesisSettings.from_params(params["synthesis"]), out / "synthesize",
                   progress=False)
    for arm in params["arm"]:
        judge_run(params, arm, out / "ingest", out / "synthesize", out / "judge" / arm, progress=False)
    finalize_run(params, out / "ingest", out / "judge", out / "finalize", Path("metrics/finalize.json"))


def build_demo_outputs(work: Path) -> dict:
    """Write data/processed/{ingest,synthesize,judge/<arm>,finalize} and params.yaml under `work`; returns params.

    Runs with cwd = `work` (stages use relative paths) and restores the cwd afterwards.
    """
    (work / "data").mkdir(exist_ok=True)
    if not (work / "data" / "demo").exists():
        os.symlink(ROOT / "data" / "demo", work / "data" / "demo")
    if not (work / "prompts").exists():
        os.symlink(ROOT / "prompts", work / "prompts")
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    params["analysis"]["bootstrap"]["n_resamples"] = 200
    cwd = Path.cwd()
    os.chdir(work)
    try:
        (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
        judge_through_finalize(params)
    finally:
        os.chdir(cwd)
    return params


def git_files(root: Path) -> list[str]:
    """The files a clone of `root` would hold, plus untracked ones git does not ignore."""
    import subprocess

    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=root,
                         capture_output=True, text=True, check=True).stdout
    return [f for f in out.split("\0") if f]


def fresh_clone(root: Path, dest: Path, *, with_outputs: bool = False) -> dict[str, str]:
    """A git repository at `dest` holding what a clone of `root` holds, without pipeline outputs and locks (a fresh
    clone before its first `dvc repro`), or with them (`with_outputs`: exactly what a clone of the commit holds);
    returns the environment to run its commands in (this venv first on PATH)."""
    import os
    import shutil
    import subprocess
    import sys

    for rel in git_files(root):
        src = root / rel
        output = rel.startswith(("data/processed/", "metrics/", "figures/")) or Path(rel).name == "dvc.lock"
        if src.is_file() and (with_outputs or not output):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    for args in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "clone"]):
        proc = subprocess.run(args, cwd=dest, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, f"{' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return env
