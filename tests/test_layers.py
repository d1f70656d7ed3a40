"""The package's layers (DEVELOPERS.md, pyproject's [tool.importlinter]): imports only point down, no cycles.

import-linter reads every import of src/gcpc, lazy ones inside functions included, and follows
chains through other modules, so an upward import anywhere fails here with its file and line.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def lint_imports(cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    if not Path(exe).exists():
        pytest.skip("lint-imports not installed (the `test` extra has import-linter)")
    return subprocess.run([exe, "--no-cache"], cwd=cwd, capture_output=True, text=True, timeout=300, env=env)


def test_packages_import_only_downward_and_without_cycles():
    run = lint_imports(ROOT)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "Contracts: 3 kept, 0 broken." in run.stdout


def _copy_package(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "src" / "gcpc", tmp_path / "gcpc", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")


def test_an_upward_import_breaks_the_contract(tmp_path):
    """The same contracts over a copy of the package with one upward import added (corpus -> report)."""
    _copy_package(tmp_path)
    models = tmp_path / "gcpc" / "corpus" / "models.py"
    models.write_text(models.read_text(encoding="utf-8") + textwrap.dedent("""

        def _upward():
            from gcpc.report import build  # noqa: F401
        """), encoding="utf-8")
    run = lint_imports(tmp_path, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})  # the copy, not src/
    assert run.returncode != 0, run.stdout[-3000:]
    assert "gcpc.corpus.models -> gcpc.report.build" in run.stdout


def test_params_importing_experiment_breaks_the_contract(tmp_path):
    """gcpc.params sits below gcpc.experiment; the import it once had (inside `compose`) is refused with no exception."""
    _copy_package(tmp_path)
    params = tmp_path / "gcpc" / "params.py"
    params.write_text(params.read_text(encoding="utf-8") + textwrap.dedent("""

        def _compose():
            from gcpc.experiment import register_resolvers  # noqa: F401
        """), encoding="utf-8")
    run = lint_imports(tmp_path, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert run.returncode != 0, run.stdout[-3000:]
    assert "the stage-parameter helpers do not import the experiment definition" in " ".join(run.stdout.split())
    assert "gcpc.params -> gcpc.experiment" in run.stdout
