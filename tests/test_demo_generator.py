"""The committed demo corpus is exactly what data/demo/make_demo.py writes from data/demo/content/.

The generator only renders; what the demo says (scenarios, outputs, test failures, texts) is data in
content/. A hand edit of a trial, or a content change not regenerated, fails here, as does a content
file nothing reads any more, or a scenario whose logged outputs its own script does not produce.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo"


def _files(root: Path) -> dict[str, Path]:
    found = [p for sub in ("tasks", "jobs") for p in (root / sub).rglob("*") if p.is_file()]
    return {p.relative_to(root).as_posix(): p for p in found + [root / "roles.json"]}


def test_generator_writes_the_committed_demo_byte_for_byte(tmp_path):
    r = subprocess.run([sys.executable, str(DEMO / "make_demo.py"), "--out", str(tmp_path)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "wrote 50 trials (48 binary) and 6 tasks" in r.stdout
    made, committed = _files(tmp_path), _files(DEMO)
    assert sorted(made) == sorted(committed)
    differ = [rel for rel in made if made[rel].read_bytes() != committed[rel].read_bytes()]
    assert not differ, f"{len(differ)} files differ from the generator's, e.g. {differ[:3]}"
    modes = {rel: (made[rel].stat().st_mode & 0o111) != 0 for rel in made}
    assert {rel for rel, x in modes.items() if x} == {rel for rel in made if rel.endswith("/tests/test.sh")}


def test_every_content_file_is_read_by_the_generator():
    code = (DEMO / "make_demo.py").read_text(encoding="utf-8")
    named = set(re.findall(r'content\("([^"]+)"\)', code)) | {f"{t}_task.json" for t in
                                                              json.loads((DEMO / "content" / "trials.json").read_text())["tasks"]}

    def refs(x) -> set[str]:
        if isinstance(x, dict):
            return ({x["file"]} if isinstance(x.get("file"), str) else set()) | set().union(*map(refs, x.values()))
        return set().union(*map(refs, x)) if isinstance(x, list) else set()

    for name in sorted(named):
        if name.endswith(".json"):
            named |= refs(json.loads((DEMO / "content" / name).read_text(encoding="utf-8")))
    on_disk = {p.name for p in (DEMO / "content").iterdir()}
    assert on_disk == named, f"unread: {sorted(on_disk - named)}; missing: {sorted(named - on_disk)}"


def _make_demo():
    """data/demo/make_demo.py as a module (a script, not a package module; its dataclasses need sys.modules)."""
    import importlib.util

    if "make_demo" not in sys.modules:
        spec = importlib.util.spec_from_file_location("make_demo", DEMO / "make_demo.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules["make_demo"] = mod
        spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return sys.modules["make_demo"]


def _script_variants() -> list[tuple[str, str]]:
    tasks = json.loads((DEMO / "content" / "trials.json").read_text(encoding="utf-8"))["tasks"]
    out = []
    for name in tasks:
        d = json.loads((DEMO / "content" / f"{name}_task.json").read_text(encoding="utf-8"))
        if d["script_path"].endswith(".py"):
            out += [(name, v) for v in d["variants"]] + ([(name, "partial")] if d.get("partial") else [])
    return out


@pytest.mark.parametrize(("task_name", "variant"), _script_variants())
def test_each_scenario_script_prints_its_logged_output_and_gets_its_recorded_test_results(tmp_path, task_name, variant):
    """The outputs in content/ are data now, not computed: each variant's script, run on the task's inputs,
    prints the logged run output and writes the displayed files, and the task's real test_outputs.py on
    those files fails exactly the tests the trial records (paths under /root/ moved into tmp_path)."""
    m = _make_demo()
    task = m.load_task(task_name)
    v = task.partial if variant == "partial" else task.variants[variant]

    def here(text: str) -> str:
        return text.replace("/root/", f"{tmp_path}/root/")

    for path, text in task.inputs.items():
        Path(here(path)).parent.mkdir(parents=True, exist_ok=True)
        Path(here(path)).write_bytes(text.encode("utf-8"))
    script = Path(here(task.script_path))
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(here(m.apply(task.script, v.replace)), encoding="utf-8")
    run = subprocess.run(here(v.run_cmd or task.run_cmd), shell=True, cwd=tmp_path, capture_output=True, text=True,
                         timeout=120, env={"PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin"})
    assert run.returncode == 0 and run.stdout.rstrip("\n") == here(v.run_out).rstrip("\n"), run.stderr
    for path, text in v.contents.items():  # shown as displayed: a CRLF file is logged with LF
        written = Path(here(path)).read_bytes().decode("utf-8").replace("\r\n", "\n")
        assert written.rstrip("\n") == text.replace("\r\n", "\n").rstrip("\n"), path
    assert not any(Path(here(p)).exists() for p in v.missing)

    tests = tmp_path / "tests" / "test_outputs.py"
    tests.parent.mkdir()
    tests.write_text(here(task.tests_py), encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "--tb=no", "-p", "no:cacheprovider", str(tests)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120,
                       env=os.environ | {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})  # plain pytest: seconds less per run
    got = {(x[1] or None, x[2], x[3] or None): x[0] == "FAILED" for x in
           re.findall(r"^(PASSED|FAILED) \S*test_outputs\.py::(?:(\w+)::)?(\w+)(?:\[([^\]]+)\])?", r.stdout, re.M)}
    expected = {}
    for case in task.cases:
        for cid in case.case_ids():
            fail = m.missing_fail(case, v.missing, task.src)
            spec = v.fails.get(case.func)
            if fail is None and spec is not None:
                fail = spec.get(cid) if isinstance(spec, dict) else spec
            expected[(case.cls, case.func, cid)] = fail is not None
    assert got == expected, r.stdout[-2000:]
