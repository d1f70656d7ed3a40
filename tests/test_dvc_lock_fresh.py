"""The committed dvc.lock files record the current code, params and committed inputs: every stage's
source, prompt, params.yaml, demo-corpus and committed-figure dependency hashes as its lock entry says.

A stale lock (a source edited after the last `dvc repro`) makes README command 1 re-run stages and
leave `git status` dirty on a clean clone; CI runs only the tests, so this is where it is caught."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from dvc.repo import Repo

ROOT = Path(__file__).resolve().parents[1]
CODE = ("src/", "prompts/", "params.yaml", "data/demo", "figures/")  # the deps git holds (the rest are outputs)
FIX = "run `dvc repro`, then commit dvc.lock and pipelines/*/dvc.lock"


def stale_code_deps(root: Path) -> list[str]:
    """'<stage>: <dep> (<status>)' for each code or params dependency that differs from its lock entry."""
    repo = Repo(str(root))
    try:
        out = []
        for stage in repo.index.stages:
            for dep in stage.deps:
                path = str(dep.def_path)
                if path.startswith(CODE):
                    status = dep.status()
                    if status:
                        where = Path(stage.path).resolve().relative_to(root.resolve())
                        out.append(f"{where}:{stage.name}: {path} ({status})")
        return out
    finally:
        repo.close()


def test_committed_locks_match_the_code_and_params():
    stale = stale_code_deps(ROOT)
    assert not stale, f"{len(stale)} stale lock entries ({FIX}):\n" + "\n".join(stale[:20])


def test_an_edited_source_or_param_is_reported(tmp_path):
    work = tmp_path / "repo"
    work.mkdir()
    for name in ("dvc.yaml", "dvc.lock", "params.yaml", "pipelines", "src", "prompts", ".dvc", "data/demo", "figures"):
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, work / name, ignore=shutil.ignore_patterns("__pycache__", "tmp", "cache"))  # not .dvc's cache
        else:
            shutil.copy2(src, work / name)
    subprocess.run(["git", "init", "-q", str(work)], check=True)  # DVC wants its repository inside git
    assert stale_code_deps(work) == []
    with (work / "src/gcpc/analysis/floors.py").open("a", encoding="utf-8") as fh:
        fh.write("\n# edited\n")
    params = (work / "params.yaml").read_text(encoding="utf-8")
    assert "  n_resamples: 2000\n" in params
    (work / "params.yaml").write_text(params.replace("  n_resamples: 2000\n", "  n_resamples: 1999\n", 1), encoding="utf-8")
    stale = stale_code_deps(work)
    assert any(s.startswith("pipelines/analysis/dvc.yaml:floors: src/gcpc/analysis/floors.py") for s in stale), stale
    assert any("params.yaml" in s and "floors" in s for s in stale), stale
