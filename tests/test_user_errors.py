"""Known user errors on the command line: one line (what, where, what to do), exit 2; GCPC_DEBUG=1 keeps the traceback.

Each case of issue 28 runs as a user runs it (`python -m ...` from the repository root); the composed
params go to a temporary file, so params.yaml is never touched.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str, debug: bool = False) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "GCPC_DEBUG"} | ({"GCPC_DEBUG": "1"} if debug else {})
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.parametrize(("args", "expected"), [
    (("gcpc.judging", "foo"), "params.yaml: arm 'foo' is not configured (configured: "),
    (("gcpc.params", "arm=foo"), "Could not find 'arm/foo' Available options in 'arm':"),
    (("gcpc.params", "+judge.api_kee=1"), "judge: invalid llm settings (api_kee: Extra inputs are not permitted)"),
    (("gcpc.params", "~data.trials_dirs"), "missing required key(s) data.trials_dirs"),
    (("gcpc.params", "data.tasks_dir=taks"), "tasks_dir entry 'taks' not found"),
])
def test_user_error_is_one_line_and_exit_2(tmp_path, args, expected):
    out = ("--output", str(tmp_path / "params.yaml")) if args[0] == "gcpc.params" else ()
    r = run(*args, *out)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], r.stderr
    assert "GCPC_DEBUG=1" in lines[0] and "Traceback" not in r.stderr


def test_debug_shows_the_traceback_and_a_bug_keeps_it():
    r = run("gcpc.judging", "foo", debug=True)
    assert r.returncode == 1 and "Traceback (most recent call last)" in r.stderr and "ParamsError" in r.stderr
    from gcpc.errors import ParamsError, is_user_error, one_line

    assert not is_user_error(ValueError("a bug")) and not is_user_error(KeyError("x"))
    assert is_user_error(ParamsError("p")) and isinstance(ParamsError("p"), KeyError) and one_line(ParamsError("a\nb")) == "a b"


def test_preflight_names_the_data_folders(tmp_path):
    r = run("gcpc.params", "--output", str(tmp_path / "params.yaml"))
    assert r.returncode == 0, r.stderr
    assert "data folders found: " in r.stdout and str(ROOT / "data" / "demo") in r.stdout
