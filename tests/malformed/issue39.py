"""The variant kinds of issue 39 (docs/corpus-rules.md): outcomes that contradict their own tests, several rewards,
test ids taken on faith, borrowed reports, files that never end (FIFOs, sparse multi-gigabyte files, a zipped sample
that inflates a thousandfold, 5,000-digit integers) and reads that leave the corpus, over the four formats
(Harbor, Terminal-Bench 1, SWE-bench, Inspect). `make(dest, outside, variants)` writes the corpora and appends their
variants; `CONFIGS` are their corpus configs (merged into make_variants.CONFIGS)."""

from __future__ import annotations

import json
import os
import shutil
import zipfile
from pathlib import Path
from typing import Any

BIG_INT = "9" * 5000
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "inspect" / "file_tasks.eval"
CONTRA = "outcome contradicts per-test results"


def _sparse(path: Path, size: int) -> None:
    """A file of `size` bytes that holds none on disk (what `truncate` of a multi-gigabyte file costs)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        path.unlink()
    with open(path, "wb") as fh:
        fh.truncate(size)


def _fifo(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        path.unlink()
    os.mkfifo(path)


def _ctrf(*tests: tuple[str, str]) -> str:
    return json.dumps({"results": {"tests": [{"name": n, "status": s} for n, s in tests]}})


def _result(rewards: Any, name: str, task: str = "t-ok") -> str:
    return json.dumps({"task_name": task, "trial_name": f"{task}__{name}", "verifier_result": {"rewards": rewards},
                       "exception_info": None})


# --- Harbor ------------------------------------------------------------------------------------


def _harbor(root: Path, outside: Path, V: Any, add: Any) -> None:
    from malformed.make_variants import _task, _trial

    _task(root, "t-ok")
    _trial(root, "good")
    rel = lambda p: p.relative_to(root).as_posix()  # noqa: E731
    ok, fail, skip = ("test_outputs.py::test_exists", "passed"), ("test_outputs.py::test_exists", "failed"), \
        ("test_outputs.py::test_exists", "skipped")
    value_ok = ("test_outputs.py::test_value", "passed")

    def trial(name: str, kind: str, names: str, family: str, outcome: str | None = None, **kw: Any) -> Path:
        folder = _trial(root, name, **kw)
        add(V("harbor39", name, rel(folder), names.replace("{t}", rel(folder)), kind, family=family, outcome=outcome))
        return folder

    fam = "harbor outcome vs tests"
    trial("c-pass-all-failed", "noted", "{t}: " + CONTRA, fam, "PASS", ctrf=_ctrf(fail, ("test_outputs.py::test_value", "failed")))
    trial("c-fail-all-passed", "noted", "{t}: " + CONTRA, fam, "FAIL", result=_result({"reward": 0.0}, "c-fail-all-passed"),
          ctrf=_ctrf(ok, value_ok))
    trial("c-pass-empty-ctrf", "noted", "{t}: " + CONTRA, fam, "PASS", ctrf=_ctrf())
    trial("c-pass-all-skipped", "noted", "{t}: " + CONTRA, fam, "PASS", ctrf=_ctrf(skip))
    trial("c-pass-one-failed", "noted", "{t}: " + CONTRA, fam, "PASS", ctrf=_ctrf(ok, ("test_outputs.py::test_value", "failed")))
    trial("c-pass-error-status", "noted", "{t}: " + CONTRA, fam, "PASS", ctrf=json.dumps(
        {"results": {"tests": [{"name": "test_outputs.py::test_exists", "status": "failed", "message": "error"}]}}))
    trial("c-consistent-pass", "kept", "", fam, "PASS", ctrf=_ctrf(ok, value_ok))
    trial("c-consistent-fail", "kept", "", fam, "FAIL", result=_result({"reward": 0.0}, "c-consistent-fail"),
          ctrf=_ctrf(ok, ("test_outputs.py::test_value", "failed")))
    fam = "harbor rewards"
    trial("r-two-keys", "noted", "{t}/result.json: several reward keys", fam, "PASS",
          result=_result({"reward": 1.0, "accuracy": 0.0}, "r-two-keys"))
    trial("r-other-key-only", "noted", "no 'reward' reward in verifier_result.rewards", fam, "other",
          result=_result({"accuracy": 1.0}, "r-other-key-only"))
    f = trial("r-reward-txt-contradicts", "noted", "{t}/verifier/reward.txt: reward file contradicts result.json", fam, "PASS")
    (f / "verifier" / "reward.txt").write_text("0\n")
    f = trial("r-reward-json-contradicts", "noted", "{t}/verifier/reward.json: reward file contradicts result.json", fam, "PASS")
    (f / "verifier" / "reward.json").write_text('{"reward": 0.0}')
    f = trial("r-reward-txt-garbage", "noted", "{t}/verifier/reward.txt: unreadable", fam, "PASS")
    (f / "verifier" / "reward.txt").write_text("one\n")
    f = trial("r-reward-txt-fifo", "noted", "{t}/verifier/reward.txt: unreadable", fam, "PASS")
    _fifo(f / "verifier" / "reward.txt")
    f = trial("r-reward-txt-sparse", "noted", "{t}/verifier/reward.txt: unreadable", fam, "PASS")
    _sparse(f / "verifier" / "reward.txt", 50_000_000)
    f = trial("r-reward-txt-agrees", "kept", "", fam, "PASS")
    (f / "verifier" / "reward.txt").write_text("1\n")
    fam = "harbor test ids"
    trial("i-duplicate-names", "noted", "{t}/verifier/ctrf.json: 1 test name(s) listed more than once", fam, "PASS",
          ctrf=_ctrf(ok, fail))
    trial("i-unknown-id", "noted", "{t}: 1 test ids not among the task's verifier tests", fam, "PASS",
          ctrf=_ctrf(ok, ("test_outputs.py::test_nope", "passed")))
    for name, bad, why in (("i-empty-id", "", "empty"), ("i-nul-id", "test_outputs.py::test_\x00x", "holds control"),
                           ("i-long-id", "t" * 100_000, "100000 characters"),
                           ("i-confusable-id", "test_outputs.py::ｔｅｓｔ_exists", "not in normal form"),
                           ("i-invisible-id", "test_outputs.py::test_\u200bexists", "holds control")):
        trial(name, "noted", f"{{t}}: per-test result id {bad[:80]!r} left out ({why}", fam, "PASS",
              ctrf=_ctrf(ok, (bad, "passed")))
    trial("i-50k-extra-tests", "noted", "{t}: 50001 per-test results, over the limit", fam, "PASS",
          ctrf=_ctrf(ok, *((f"test_outputs.py::test_extra_{i}", "passed") for i in range(50_000))))
    trial("i-2k-unknown-tests", "noted", "{t}: 2000 test ids not among the task's verifier tests", fam, "PASS",
          ctrf=_ctrf(ok, *((f"test_outputs.py::test_extra_{i}", "passed") for i in range(2_000))))
    fam = "harbor files that never end"
    for file in ("result.json", "config.json", "verifier/ctrf.json"):
        stem = file.split("/")[-1].split(".")[0]
        for how in ("fifo", "sparse", "bigint"):
            name = f"e-{stem}-{how}"
            outcome = "other" if file == "result.json" else "PASS"
            f = trial(name, "noted", f"{{t}}/{file}", fam, outcome)
            if how == "fifo":
                _fifo(f / file)
            elif how == "sparse":
                _sparse(f / file, 3_000_000_000)
            else:
                doc = json.loads((f / file).read_text())
                doc["big"] = json.loads("1")  # placeholder replaced below (json.dumps cannot write the literal)
                (f / file).write_text(json.dumps(doc).replace('"big": 1', f'"big": {BIG_INT}'))
    for name, make, file in (("e-log-fifo", _fifo, "agent/claude-code.txt"),
                             ("e-log-sparse", lambda p: _sparse(p, 3_000_000_000), "agent/claude-code.txt")):
        f = trial(name, "excluded", f"{{t}}/{file}", fam)
        make(f / file)
    for name, make in (("e-atif-fifo", _fifo), ("e-atif-sparse", lambda p: _sparse(p, 3_000_000_000))):
        f = trial(name, "excluded", "{t}/agent/trajectory.json", fam)
        (f / "agent" / "claude-code.txt").unlink()
        make(f / "agent" / "trajectory.json")

    def task(task_id: str, file: str, kind: str = "excluded", family: str = "harbor task files that never end",
             **kw: Any) -> Path:
        folder = _task(root, task_id, **kw)
        add(V("harbor39", task_id, rel(folder), f"{rel(folder)}/{file}", kind, family=family))
        return folder

    f = task("t-instruction-fifo", "instruction.md")
    _fifo(f / "instruction.md")
    f = task("t-instruction-sparse", "instruction.md")
    _sparse(f / "instruction.md", 3_000_000_000)
    f = task("t-toml-fifo", "task.toml")
    _fifo(f / "task.toml")
    f = task("t-toml-sparse", "task.toml")
    _sparse(f / "task.toml", 3_000_000_000)
    f = task("t-test-fifo", "tests/test_fifo.py", kind="noted")
    _fifo(f / "tests" / "test_fifo.py")
    f = task("t-verifier-sparse", "tests/data.bin", kind="noted")
    _sparse(f / "tests" / "data.bin", 3_000_000_000)
    f = task("t-test-sparse", "tests/test_outputs.py")
    _sparse(f / "tests" / "test_outputs.py", 3_000_000_000)
    # an over-long integer literal: Python's parser would re-open 'test_outputs.py' relative to the working folder
    task("t-test-long-int-literal", "tests/test_outputs.py", family="harbor reads outside the corpus",
         test_file=f"def test_x():\n    assert 1 == {BIG_INT}\n")


def _harbor_config_corpora(dest: Path, outside: Path, V: Any, add: Any) -> dict[str, dict[str, Any]]:
    """Corpora whose config names a link leading outside the root: refused with a note, the rest read."""
    from malformed.make_variants import _task, _trial

    configs: dict[str, dict[str, Any]] = {}
    # the tasks folder a link to '/': not walked
    root = dest / "cfg-tasks-root"
    (root / "jobs").mkdir(parents=True)
    os.symlink("/", root / "tasks")
    _trial(root, "good")
    configs["cfg-tasks-root"] = {"name": "cfg-tasks-root", "benchmark": "skillsbench", "root": "cfg-tasks-root",
                                 "tasks_dir": "tasks", "trials_dirs": ["jobs"]}
    add(V("cfg-tasks-root", "cfg-tasks-dir-link-to-root", "tasks", "tasks: link outside the corpus root", "noted",
          family="config links leaving the root"))
    # the jobs folder a link to a folder outside the corpus (holding a trial with the secret)
    root = dest / "cfg-jobs-outside"
    _task(root, "t-ok")
    (root / "kept").mkdir()
    _trial(root / "kept", "good")
    ext = outside / "jobs-elsewhere"
    _trial(ext, "secret")
    (ext / "jobs" / "j" / "t-ok__secret" / "agent" / "claude-code.txt").write_text(
        json.dumps({"type": "user", "message": {"content": "OUTSIDE-THE-CORPUS-7f3a"}}) + "\n")
    os.symlink(ext / "jobs", root / "jobs")
    configs["cfg-jobs-outside"] = {"name": "cfg-jobs-outside", "benchmark": "skillsbench", "root": "cfg-jobs-outside",
                                   "tasks_dir": "tasks", "trials_dirs": ["jobs", "kept/jobs"]}
    add(V("cfg-jobs-outside", "cfg-trials-dir-link-outside", "jobs", "jobs: link outside the corpus root", "noted",
          family="config links leaving the root"))
    # a job folder that is a link to a folder of the corpus without trials
    root = dest / "cfg-empty-link"
    _task(root, "t-ok")
    _trial(root, "good")
    (root / "empty").mkdir()
    os.symlink(root / "empty", root / "jobs" / "linked-job")
    configs["cfg-empty-link"] = {"name": "cfg-empty-link", "benchmark": "skillsbench", "root": "cfg-empty-link",
                                 "tasks_dir": "tasks", "trials_dirs": ["jobs"]}
    add(V("cfg-empty-link", "cfg-linked-job-without-trials", "jobs/linked-job", "jobs/linked-job", "excluded",
          family="config links leaving the root"))
    return configs


# --- Terminal-Bench 1 --------------------------------------------------------------------------


def _tb1(root: Path, outside: Path, V: Any, add: Any) -> None:
    from malformed.make_variants import _tb1_trial

    rel = lambda p: p.relative_to(root).as_posix()  # noqa: E731
    _tb1_trial(root, "hello", 1)
    k = [1]

    def trial(name: str, kind: str, names: str, family: str, outcome: str | None = None, **kw: Any) -> Path:
        k[0] += 1
        folder = _tb1_trial(root, "hello", k[0], **kw)
        add(V("tb139", name, rel(folder), names.replace("{t}", rel(folder)), kind, family=family, outcome=outcome))
        return folder

    def res(resolved: Any, pr: Any, extra: str = "") -> str:
        text = json.dumps({"task_id": "hello", "instruction": "Do hello: write out.txt.", "is_resolved": resolved,
                           "parser_results": pr, "failure_mode": "unset", "n": 0})
        return text.replace('"n": 0', f'"n": {extra}') if extra else text

    fam = "tb1 outcome vs tests"
    trial("tb1-c-resolved-all-failed", "noted", "{t}: " + CONTRA, fam, "PASS", results=res(True, {"test_a": "failed"}))
    trial("tb1-c-resolved-one-failed", "noted", "{t}: " + CONTRA, fam, "PASS",
          results=res(True, {"test_a": "passed", "test_b": "failed"}))
    trial("tb1-c-unresolved-all-passed", "noted", "{t}: " + CONTRA, fam, "FAIL",
          results=res(False, {"test_a": "passed", "test_b": "passed"}))
    trial("tb1-c-resolved-no-tests", "noted", "{t}: " + CONTRA, fam, "PASS", results=res(True, {}))
    trial("tb1-c-consistent", "kept", "", fam, "PASS", results=res(True, {"test_a": "passed"}))
    fam = "tb1 test ids"
    for name, bad, why in (("tb1-i-nul", "test_\x00a", "control"), ("tb1-i-long", "test_" + "a" * 100_000, "limit"),
                           ("tb1-i-confusable", "ｔｅｓｔ_a", "normal form"), ("tb1-i-empty", " ", "empty")):
        trial(name, "noted", "{t}: per-test result id", fam, "PASS", results=res(True, {"test_a": "passed", bad: "passed"}))
    trial("tb1-i-50k", "noted", "{t}: 50001 per-test results, over the limit", fam, "PASS",
          results=res(True, {"test_a": "passed", **{f"test_x{i}": "passed" for i in range(50_000)}}))
    fam = "tb1 files that never end"
    trial("tb1-e-results-bigint", "noted", "{t}/results.json", fam, "other", results=res(True, {"test_a": "passed"}, BIG_INT))
    f = trial("tb1-e-results-fifo", "noted", "{t}/results.json", fam, "other")
    _fifo(f / "results.json")
    f = trial("tb1-e-results-sparse", "noted", "{t}/results.json", fam, "other")
    _sparse(f / "results.json", 3_000_000_000)
    f = trial("tb1-e-pane-fifo", "excluded", "{t}/panes/post-agent.txt", fam)
    _fifo(f / "panes" / "post-agent.txt")
    f = trial("tb1-e-pane-sparse", "excluded", "{t}/panes/post-agent.txt", fam)
    _sparse(f / "panes" / "post-agent.txt", 3_000_000_000)
    f = trial("tb1-e-agent-log-fifo", "excluded", "{t}/sessions/agent.log", fam)
    _fifo(f / "sessions" / "agent.log")
    f = trial("tb1-e-agent-log-sparse", "excluded", "{t}/sessions/agent.log", fam)
    _sparse(f / "sessions" / "agent.log", 3_000_000_000)
    f = trial("tb1-e-commands-fifo", "noted", "{t}/commands.txt", fam)
    _fifo(f / "commands.txt")
    f = trial("tb1-e-commands-sparse", "noted", "{t}/commands.txt", fam)
    _sparse(f / "commands.txt", 3_000_000_000)
    # run-level files: each in a run of its own
    valid = res(True, {"test_a": "passed"})
    for name, kind, names, make in (
            ("tb1-run-verdict-differs", "noted", "run-level results.json contradicts the trial's",
             lambda run: (run / "results.json").write_text(json.dumps(
                 {"results": [{"trial_name": "hello.1-of-1", "task_id": "hello", "is_resolved": False}]}))),
            ("tb1-run-results-bigint", "noted", "results.json", lambda run: (run / "results.json").write_text(
                '{"results": [], "n": ' + BIG_INT + "}")),
            ("tb1-run-results-fifo", "noted", "results.json", lambda run: _fifo(run / "results.json")),
            ("tb1-run-results-sparse", "noted", "results.json", lambda run: _sparse(run / "results.json", 3_000_000_000)),
            ("tb1-run-metadata-link-passwd", "noted", "run_metadata.json",
             lambda run: ((run / "run_metadata.json").unlink(), os.symlink(
                 "/etc/passwd" if Path("/etc/passwd").is_file() else outside / "secret.txt", run / "run_metadata.json"))),
            ("tb1-run-metadata-fifo", "noted", "run_metadata.json",
             lambda run: _fifo(run / "run_metadata.json"))):
        run = root / "runs" / f"20250104_agent_{name}"
        folder = run / "hello" / "hello.1-of-1"
        (folder / "panes").mkdir(parents=True)
        (folder / "results.json").write_text(valid)
        (folder / "panes" / "post-agent.txt").write_text(f"root@box:/app# echo {name}\n{name}\n")
        (run / "run_metadata.json").write_text(json.dumps({"agent_name": "agent", "model_name": name}))
        (run / "results.json").write_text(json.dumps({"results": [{"trial_name": "hello.1-of-1", "task_id": "hello",
                                                                   "is_resolved": True}]}))
        make(run)
        names = f"{rel(folder)}: {names}" if names.startswith("run-level") else f"{rel(run)}/{names}"
        add(V("tb139", name, rel(folder), names, kind, family="tb1 run-level files", outcome="PASS"))


# --- SWE-bench -----------------------------------------------------------------------------------


def _swe(root: Path, outside: Path, V: Any, add: Any) -> None:
    from malformed.make_variants import _instance, _traj, _w

    rel = lambda p: p.relative_to(root).as_posix()  # noqa: E731
    f2p, p2p = "tests/test_x.py::test_a", "tests/test_x.py::test_b"

    def inst(iid: str) -> dict[str, Any]:
        return {**_instance(iid), "PASS_TO_PASS": json.dumps([p2p])}

    def report(resolved: Any, f2p_ok: list[str], f2p_bad: list[str], p2p_ok: list[str], p2p_bad: list[str],
               extra: dict[str, Any] | None = None) -> dict[str, Any]:
        return {"patch_is_None": False, "patch_exists": True, "patch_successfully_applied": True, "resolved": resolved,
                "tests_status": {"FAIL_TO_PASS": {"success": f2p_ok, "failure": f2p_bad},
                                 "PASS_TO_PASS": {"success": p2p_ok, "failure": p2p_bad}, **(extra or {})}}

    good = report(True, [f2p], [], [p2p], [])
    cases: list[tuple[str, str, str, Any, str | None]] = [
        # (instance, kind, names, report (dict, callable on the report path, or None), outcome)
        ("ok-1", "kept", "", good, "PASS"),
        ("c-resolved-f2p-failing", "noted", CONTRA, report(True, [], [f2p], [p2p], []), "PASS"),
        ("c-resolved-p2p-failing", "noted", CONTRA, report(True, [f2p], [], [], [p2p]), "PASS"),
        ("c-unresolved-all-passing", "noted", CONTRA, report(False, [f2p], [], [p2p], []), "FAIL"),
        ("c-both-passed-and-failed", "noted", "test listed as both passed and failed",
         report(True, [f2p], [f2p], [p2p], []), "PASS"),
        ("c-fail-to-fail-ignored", "kept", "", report(True, [f2p], [], [p2p], [],
                                                      {"FAIL_TO_FAIL": {"success": [], "failure": ["tests/test_y.py::t"]}}),
         "PASS"),
        ("b-report-names-other", "noted", "report names another instance", "names-other", "other"),
        ("b-report-link-to-other", "noted", "report names another instance", "link-other", "other"),
        ("b-report-other-tests", "noted", "report names another instance",
         report(True, ["tests/other.py::test_z"], [], [], []), "other"),
        ("e-report-fifo", "noted", "report.json", "fifo", "other"),
        ("e-report-sparse", "noted", "report.json", "sparse", "other"),
        ("e-report-bigint", "noted", "report.json", "bigint", "other"),
        ("e-traj-fifo", "excluded", "traj", good, None),
        ("e-traj-sparse", "excluded", "traj", good, None),
        ("e-traj-bigint", "excluded", "traj", good, None),
        ("e-mini-traj-fifo", "excluded", "traj", good, None),
        ("i-report-nul-id", "noted", "per-test result id", report(True, [f2p, "tests/x.py::\x00"], [], [p2p], []), "PASS"),
        ("i-report-unknown-id", "noted", "test ids not among the task's verifier tests",
         report(True, [f2p, "tests/x.py::test_unknown"], [], [p2p], []), "PASS"),
    ]
    rows = [json.dumps(inst(c[0])) for c in cases]
    rows.append('{"instance_id": "e-instance-bigint", "problem_statement": "x", "n": ' + BIG_INT + "}")
    _w(root / "instances.jsonl", "\n".join(rows) + "\n")
    add(V("swe39", "e-instance-bigint", f"instances.jsonl:{len(rows)}", "instances.jsonl", "excluded",
          family="swe files that never end"))
    for iid, kind, names, rep, outcome in cases:
        path = root / "trajectories" / "run" / iid / (f"{iid}.traj.json" if iid.startswith("e-mini") else f"{iid}.traj")
        _w(path, _traj([{"thought": iid, "action": "ls", "observation": "x.py", "response": "ls"}]))
        rpath = root / "reports" / iid / "report.json"
        rpath.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(rep, dict):
            rpath.write_text(json.dumps(rep))
        elif rep == "names-other":
            rpath.write_text(json.dumps({"ok-1": good}))
        elif rep == "link-other":
            os.symlink(root / "reports" / "ok-1" / "report.json", rpath)
        elif rep == "fifo":
            _fifo(rpath)
        elif rep == "sparse":
            _sparse(rpath, 3_000_000_000)
        elif rep == "bigint":
            rpath.write_text(json.dumps(good).replace('"resolved": true', f'"resolved": true, "n": {BIG_INT}'))
        if iid in ("e-traj-fifo", "e-mini-traj-fifo"):
            _fifo(path)
        elif iid == "e-traj-sparse":
            _sparse(path, 3_000_000_000)
        elif iid == "e-traj-bigint":
            path.write_text(_traj().replace('"submitted"', '"submitted", "n": ' + BIG_INT))
        if iid == "ok-1":
            continue
        family = {"c": "swe outcome vs tests", "b": "swe borrowed reports", "e": "swe files that never end",
                  "i": "swe test ids"}[iid[0]]
        where = rel(path) if names == "traj" else (f"{rel(rpath)}" if names == "report.json" else names)
        add(V("swe39", iid, rel(path), where, kind, family=family, outcome=outcome))


def _swe_config_corpora(dest: Path, V: Any, add: Any) -> dict[str, dict[str, Any]]:
    """Instances files that are a FIFO or a sparse multi-gigabyte file: one exclusion, no traceback."""
    from malformed.make_variants import _instance, _traj, _w

    configs = {}
    for name, make in (("cfg-instances-fifo", _fifo), ("cfg-instances-sparse", lambda p: _sparse(p, 3_000_000_000))):
        root = dest / name
        _w(root / "trajectories" / "run" / "a-1" / "a-1.traj", _traj())
        make(root / "instances.jsonl")
        configs[name] = {"name": name, "format": "swe-bench", "root": name, "tasks_file": "instances.jsonl",
                         "trials_dirs": ["trajectories/run"]}
        add(V(name, name, "instances.jsonl", "instances.jsonl", "excluded", family="swe files that never end"))
    # the reports folder a link to a folder outside the corpus: refused with a note, trajectories kept (no report)
    root = dest / "cfg-reports-outside"
    _w(root / "instances.jsonl", json.dumps(_instance("a-1")) + "\n")
    _w(root / "trajectories" / "run" / "a-1" / "a-1.traj", _traj())
    _w(dest / "outside" / "reports" / "a-1" / "report.json", json.dumps({"a-1": {"resolved": True}}))
    os.symlink(dest / "outside" / "reports", root / "reports")
    configs["cfg-reports-outside"] = {"name": "cfg-reports-outside", "format": "swe-bench", "root": "cfg-reports-outside",
                                      "tasks_file": "instances.jsonl", "trials_dirs": ["trajectories/run"],
                                      "reports_dirs": ["reports"]}
    add(V("cfg-reports-outside", "cfg-reports-dir-link-outside", "reports", "reports: link outside the corpus root",
          "noted", family="config links leaving the root"))
    return configs


# --- Inspect -------------------------------------------------------------------------------------


def _rewrite(src: Path, dest: Path, change: Any) -> None:
    """Copy an Inspect `.eval` log with `change(entries)` applied to {name: bytes} (written deflated)."""
    import inspect_ai._util.zipfile  # noqa: F401 - zstd support in zipfile (Inspect writes zstd entries)

    with zipfile.ZipFile(src) as z:
        entries = {i.filename: z.read(i.filename) for i in z.infolist()}
    entries = change(entries) or entries
    dest.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(dest, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, data in entries.items():
            z.writestr(name, data)


def _sample(entries: dict[str, bytes], name: str = "greeting") -> dict[str, Any]:
    return json.loads(entries[f"samples/{name}_epoch_1.json"])


def _put(entries: dict[str, bytes], doc: dict[str, Any], name: str = "greeting") -> None:
    entries[f"samples/{name}_epoch_1.json"] = json.dumps(doc).encode()


def _header_ids(entries: dict[str, bytes], ids: list[str]) -> None:
    for key in ("header.json", "_journal/start.json"):
        if key in entries:
            doc = json.loads(entries[key])
            target = doc["eval"] if "eval" in doc else doc
            target["dataset"]["sample_ids"] = ids
            target["dataset"]["samples"] = len(ids)
            entries[key] = json.dumps(doc).encode()


def _inspect(root: Path, V: Any, add: Any) -> None:
    logs = root / "logs"
    logs.mkdir(parents=True)
    shutil.copy(FIXTURE, logs / "ok.eval")

    def variant(name: str, change: Any, kind: str, names: str, item: str, family: str, outcome: str | None = None) -> None:
        def tagged(entries: dict[str, bytes]) -> None:  # each log its own (identical logs are de-duplicated)
            change(entries)
            for key in [k for k in entries if k.startswith("samples/")]:
                doc = json.loads(entries[key])
                if isinstance(doc["messages"][1].get("content"), str):
                    doc["messages"][1]["content"] += f" ({name})"
                entries[key] = json.dumps(doc).encode()

        _rewrite(FIXTURE, logs / f"{name}.eval", tagged)
        add(V("inspect39", name, item.replace("{log}", f"logs/{name}.eval"), names.replace("{log}", f"logs/{name}.eval"),
              kind, family=family, outcome=outcome))

    def with_sample(fn: Any, name: str = "greeting") -> Any:
        def change(entries: dict[str, bytes]) -> None:
            doc = _sample(entries, name)
            fn(doc)
            _put(entries, doc, name)
        return change

    def scores(value: str, tests: dict[str, str]) -> Any:
        def fn(doc: dict[str, Any]) -> None:
            doc["scores"]["file_check"]["value"] = value
            doc["scores"]["file_check"]["metadata"] = {"tests": tests}
        return fn

    fam = "inspect outcome vs tests"
    variant("c-correct-test-failed", with_sample(scores("C", {"test_greeting_file": "failed"})), "noted",
            "{log}#greeting/epoch1: " + CONTRA, "{log}#greeting/epoch1", fam, "PASS")
    variant("c-incorrect-tests-passed", with_sample(scores("I", {"test_greeting_file": "passed"})), "noted",
            "{log}#greeting/epoch1: " + CONTRA, "{log}#greeting/epoch1", fam, "FAIL")
    variant("c-correct-test-skipped", with_sample(scores("C", {"test_greeting_file": "skipped"})), "noted",
            "{log}#greeting/epoch1: " + CONTRA, "{log}#greeting/epoch1", fam, "PASS")
    fam = "inspect test ids"
    variant("i-unknown-test", with_sample(scores("C", {"test_greeting_file": "passed", "test_other": "passed"})), "noted",
            "test ids not among the task's verifier tests", "{log}#greeting/epoch1", fam, "PASS")
    variant("i-nul-test", with_sample(scores("C", {"test_greeting_file": "passed", "test_\x00": "passed"})), "noted",
            "per-test result id", "{log}#greeting/epoch1", fam, "PASS")
    variant("i-long-test", with_sample(scores("C", {"test_greeting_file": "passed", "t" * 100_000: "passed"})), "noted",
            "per-test result id", "{log}#greeting/epoch1", fam, "PASS")
    fam = "inspect ids"

    def traversal(entries: dict[str, bytes]) -> None:
        doc = _sample(entries)
        doc["id"] = "../../etc/passwd"
        del entries["samples/greeting_epoch_1.json"]
        entries["samples/../../etc/passwd_epoch_1.json"] = json.dumps(doc).encode()
        _header_ids(entries, ["../../etc/passwd", "numbers", "marker", "script"])

    variant("id-traversal", traversal, "excluded", "sample id", "{log}#../../etc/passwd/epoch1", fam)
    variant("id-epoch-negative", with_sample(lambda d: d.update(epoch=-1)), "excluded", "epoch -1",
            "{log}#greeting/epoch-1", fam)
    variant("id-epoch-zero", with_sample(lambda d: d.update(epoch=0)), "excluded", "epoch 0",
            "{log}#greeting/epoch0", fam)
    variant("id-duplicate", lambda e: _header_ids(e, ["greeting", "greeting", "numbers", "marker", "script"]), "excluded",
            "duplicate sample", "{log}#greeting/epoch1 (copy 2)", fam)

    def unresolved(doc: dict[str, Any]) -> None:
        doc["messages"][1]["content"] = "attachment://0123456789abcdef0123456789abcdef"

    variant("attachment-unresolved", with_sample(unresolved), "noted", "unresolved attachment://", "{log}#greeting/epoch1",
            "inspect attachments", "PASS")
    fam = "inspect files that never end"

    def bomb(doc: dict[str, Any]) -> None:
        doc["store"] = {"padding": " " * 20_000_000}

    variant("e-sample-inflates", with_sample(bomb), "excluded", "inflates to", "{log}", fam)
    (logs / "e-fifo.eval").unlink(missing_ok=True)
    _fifo(logs / "e-fifo.eval")
    add(V("inspect39", "e-fifo", "logs/e-fifo.eval", "not a regular file", family=fam))
    _sparse(logs / "e-sparse.eval", 6_000_000_000)
    add(V("inspect39", "e-sparse", "logs/e-sparse.eval", "over the", family=fam))
    (logs / "e-not-zip.eval").write_bytes(b"PK\x03\x04 not a zip")
    add(V("inspect39", "e-not-zip", "logs/e-not-zip.eval", "logs/e-not-zip.eval", family=fam))


INSPECT_CFG = {"name": "inspect39", "format": "inspect", "benchmark": "file-tasks", "root": "inspect39",
               "trials_dirs": ["logs"], "test_ids_keys": ["tests"], "verifier_source_keys": ["check"],
               "test_results_key": "tests"}


def make(dest: Path, outside: Path, variants: list[Any], V: Any) -> dict[str, dict[str, Any]]:
    """Write the issue-39 corpora under `dest`, append their variants; returns their corpus configs."""
    add = variants.append
    _harbor(dest / "harbor39", outside, V, add)
    _tb1(dest / "tb139", outside, V, add)
    _swe(dest / "swe39", outside, V, add)
    configs = {
        "harbor39": {"name": "harbor39", "benchmark": "skillsbench", "root": "harbor39", "tasks_dir": "tasks",
                     "trials_dirs": ["jobs"]},
        "tb139": {"name": "tb139", "format": "terminal-bench-1", "root": "tb139", "trials_dirs": ["runs"]},
        "swe39": {"name": "swe39", "format": "swe-bench", "root": "swe39", "tasks_file": "instances.jsonl",
                  "trials_dirs": ["trajectories/run"], "reports_dirs": ["reports"]},
    }
    configs.update(_harbor_config_corpora(dest, outside, V, add))
    configs.update(_swe_config_corpora(dest, V, add))
    try:
        import inspect_ai  # noqa: F401
    except ImportError:  # the optional extra: its variants are left out (the test says so)
        return configs
    _inspect(dest / "inspect39", V, add)
    configs["inspect39"] = INSPECT_CFG
    return configs
