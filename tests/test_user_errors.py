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
    (("gcpc.experiment", "arm=foo"), "Could not find 'arm/foo' Available options in 'arm':"),
    (("gcpc.experiment", "+judge.api_kee=1"), "judge: invalid llm settings (api_kee: Extra inputs are not permitted)"),
    (("gcpc.experiment", "~data.trials_dirs"), "missing required key(s) data.trials_dirs"),
    (("gcpc.experiment", "data.tasks_dir=taks"), "tasks_dir entry 'taks' not found"),
])
def test_user_error_is_one_line_and_exit_2(tmp_path, args, expected):
    out = ("--output", str(tmp_path / "params.yaml")) if args[0] == "gcpc.experiment" else ()
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
    r = run("gcpc.experiment", "--output", str(tmp_path / "params.yaml"))
    assert r.returncode == 0, r.stderr
    assert "data folders found: " in r.stdout and str(ROOT / "data" / "demo") in r.stdout


@pytest.fixture(scope="module")
def exp_project(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A git + DVC repository with this checkout's conf/, hydra_plugins/ and .dvc/config (Hydra composition on), one
    trivial stage, and conf/data/broken.yaml: the demo data config without `trials_dirs`."""
    import shutil

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    dest = tmp_path_factory.mktemp("exp") / "project"
    for rel in ("conf", "hydra_plugins"):
        shutil.copytree(ROOT / rel, dest / rel, ignore=shutil.ignore_patterns("__pycache__"))
    (dest / ".dvc").mkdir()
    for rel in (".dvc/config", ".dvc/.gitignore", "params.yaml"):
        shutil.copy2(ROOT / rel, dest / rel)
    demo = (ROOT / "conf" / "data" / "demo.yaml").read_text(encoding="utf-8")
    (dest / "conf" / "data" / "broken.yaml").write_text(demo.split("trials_dirs:")[0].replace("name: demo", "name: broken"))
    (dest / "dvc.yaml").write_text("stages:\n  noop:\n    cmd: python -c pass\n    params: [arm]\n")
    env = {k: v for k, v in os.environ.items() if k != "GCPC_DEBUG"}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t", DVC_NO_ANALYTICS="1")
    for args in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "project"]):
        subprocess.run(args, cwd=dest, env=env, check=True, capture_output=True)
    return dest, env


@pytest.mark.parametrize(("override", "expected"), [
    ("arm=foo", "Could not find 'arm/foo' Available options in 'arm': all "),
    ("data=nosuch", "Could not find 'data/nosuch' Available options in 'data': "),
    ("judge.concurency=8", "Could not override 'judge.concurency'. To append to your config use +judge.concurency=8"),
    ("judging.max_event_char=8", "did you mean judging.max_event_chars?"),
    ("data=broken", "data: missing required key(s) data.trials_dirs (trials_dirs: "),
])
def test_dvc_exp_run_reports_a_bad_config_as_one_line(exp_project, override, expected):
    """`dvc exp run -S` composes conf/ inside DVC, which reports exceptions it does not know as "unexpected error"
    over many lines; hydra_plugins/gcpc_resolvers makes it one line, exit 2, and params.yaml stays as it was."""
    root, env = exp_project
    before = (root / "params.yaml").read_bytes()
    r = subprocess.run(["dvc", "exp", "run", "-S", override], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    lines = (r.stdout + r.stderr).strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stdout + r.stderr
    assert lines[0].startswith("ERROR: ") and expected in lines[0] and "GCPC_DEBUG=1" in lines[0], lines[0]
    assert "unexpected error" not in lines[0] and (root / "params.yaml").read_bytes() == before
    if override == "arm=foo":
        d = subprocess.run(["dvc", "exp", "run", "-S", override], cwd=root, env=env | {"GCPC_DEBUG": "1"},
                           capture_output=True, text=True, timeout=300)
        assert d.returncode == 2 and "Traceback (most recent call last)" in d.stderr and "MissingConfigException" in d.stderr
        assert d.stderr.strip().splitlines()[-1] == lines[0]


def test_outside_composition_dvc_reports_as_before():
    """install_in_dvc leaves any exception not raised inside DVC's composition to DVC's own reporting."""
    import types

    from gcpc.errors import ConfigError, install_in_dvc

    seen: list[BaseException] = []
    fake = types.SimpleNamespace(_log_exceptions=lambda exc: seen.append(exc), logger=None)
    sys.modules["dvc.cli"], saved = fake, sys.modules.get("dvc.cli")  # type: ignore[assignment]
    try:
        install_in_dvc()
        install_in_dvc()  # wraps once
        assert fake._log_exceptions(ConfigError("x")) is None and fake._log_exceptions(ValueError("y")) is None
    finally:
        if saved is None:
            del sys.modules["dvc.cli"]
        else:
            sys.modules["dvc.cli"] = saved
    assert [str(e) for e in seen] == ["x", "y"]  # a user error raised elsewhere too
