"""Write corpora of malformed and hostile variants: `python tests/malformed/make_variants.py DEST`.

Three corpora under DEST, each a copy of a small valid corpus plus one bad item per variant:

* `harbor/`  (tasks/, jobs/j/<task>__<variant>/): Harbor trials and task folders,
* `tb1/`     (runs/20250101_agent_model/<task>/<trial>/): Terminal-Bench 1 trials,
* `swe/`     (instances.jsonl, trajectories/run/<id>/<id>.traj, reports/): SWE-bench.

Every variant names the item it spoils (`item`, a path relative to the corpus folder) and the file
the reader must name when it excludes the item or notes the problem (`names`). Links to files
outside the corpus point at `DEST/outside/secret.txt`, which holds `SECRET_MARKER`: no output may
ever contain it. The list is in `VARIANTS` after `make_corpora(DEST)` runs.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

if __name__ == "__main__":  # run as a script: the `malformed` package is tests/malformed
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from malformed import issue39  # noqa: E402

SECRET_MARKER = "OUTSIDE-THE-CORPUS-7f3a"
DEEP = 3000  # nesting depth of the deeply nested JSON variants


@dataclass(frozen=True)
class Variant:
    corpus: str  # harbor | tb1 | swe
    name: str
    item: str  # trial / task folder or file, relative to the corpus folder
    names: str  # the file the exclusion or note must name, relative to the corpus folder
    kind: str = "excluded"
    """excluded: the item is an exclusion naming the file; noted: kept, with a note or outcome reason naming the
    file; shown: kept, and the odd record is a visible system event whose source is the file; kept: read as if
    the oddity were absent (a byte-order mark, a cut at a line boundary), with no exclusion."""
    family: str = ""
    """What is spoiled, for the fuzz table (default: the corpus and the first word of the name)."""
    outcome: str | None = None
    """For a kept item: the official outcome it must have (a duplicated key must never flip it)."""


VARIANTS: list[Variant] = []


def _w(path: Path, data: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")


def _deep(n: int = DEEP) -> str:
    return "[" * n + "]" * n


# --- Harbor ------------------------------------------------------------------------------------

TEST_FILE = ("import pytest\n\n\ndef test_exists():\n    pass\n\n\n"
             "@pytest.mark.parametrize('v', [1, 2])\ndef test_value(v):\n    pass\n")


def _task(root: Path, task_id: str, instruction: str | bytes = "Write /root/out.txt containing 42.\n",
          toml: str | None = 'version = "1.0"\n[metadata]\ndifficulty = "easy"\n', test_file: str | bytes = TEST_FILE) -> Path:
    folder = root / "tasks" / task_id
    _w(folder / "instruction.md", instruction)
    if toml is not None:
        _w(folder / "task.toml", toml)
    _w(folder / "tests" / "test_outputs.py", test_file)
    _w(folder / "tests" / "test.sh", "pytest /tests/test_outputs.py\n")
    return folder


def _stream(answer: str = "42") -> str:
    records = [
        {"type": "system", "subtype": "init", "cwd": "/root", "tools": ["Bash"]},
        {"type": "assistant", "message": {"content": [
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": f"echo {answer} > /root/out.txt"}}]}},
        {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": f"wrote {answer}"}]}},
        {"type": "result", "subtype": "success", "is_error": False, "result": "Done."},
    ]
    return "\n".join(json.dumps(r) for r in records) + "\n"


def _trial(root: Path, name: str, *, task: str = "t-ok", log: str | bytes | None = None, config: str | None = None,
           result: str | None = None, ctrf: str | None = None) -> Path:
    folder = root / "jobs" / "j" / f"{task}__{name}"
    cfg = {"task": {"path": f"/x/tasks/{task}", "source": "tasks"}, "trial_name": folder.name,
           "agent": {"name": "claude-code", "model_name": "claude-test"}}
    _w(folder / "config.json", config if config is not None else json.dumps(cfg))
    res = {"task_name": task, "trial_name": folder.name, "config": cfg, "verifier_result": {"rewards": {"reward": 1.0}},
           "exception_info": None}
    _w(folder / "result.json", result if result is not None else json.dumps(res))
    if log is not None or not (folder / "agent").exists():
        _w(folder / "agent" / "claude-code.txt", log if log is not None else _stream(name))
    _w(folder / "verifier" / "ctrf.json", ctrf if ctrf is not None else json.dumps(
        {"results": {"tests": [{"name": "test_outputs.py::test_exists", "status": "passed"}]}}))
    return folder


def _harbor(root: Path, outside: Path) -> None:
    _task(root, "t-ok")
    _trial(root, "good")
    rel = lambda p: p.relative_to(root).as_posix()  # noqa: E731

    def trial(name: str, kind: str = "excluded", file: str = "agent/claude-code.txt", **kw) -> Path:
        folder = _trial(root, name, **kw)
        VARIANTS.append(Variant("harbor", name, rel(folder), f"{rel(folder)}/{file}" if file else rel(folder), kind))
        return folder

    lines = _stream().splitlines()
    trial("log-truncated", log="\n".join(lines[:2]) + "\n" + lines[2][:30] + "\n")
    trial("log-not-utf8", log=lines[0].encode() + b"\n" + b'{"type":"user","x":"caf\xe9"}\n')
    trial("log-empty", log="")
    trial("log-nested-deep", log=lines[0] + "\n" + _deep() + "\n")
    trial("log-type-list", kind="shown", log=lines[0] + '\n{"type": []}\n' + "\n".join(lines[1:]) + "\n")
    trial("log-type-number", kind="shown", log=lines[0] + '\n{"type": 5}\n' + "\n".join(lines[1:]) + "\n")
    trial("log-message-string", kind="shown", log=lines[0] + '\n{"type": "assistant", "message": "hi"}\n')
    trial("log-content-number", kind="shown", log=lines[0] + '\n{"type": "assistant", "message": {"content": 5}}\n')
    trial("log-tool-result-dict", kind="shown", log=lines[0] + "\n" + json.dumps({"type": "user", "message": {"content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": {"weird": True}}]}}) + "\n")
    trial("log-tool-input-list", kind="shown", log=lines[0] + "\n" + json.dumps({"type": "assistant", "message": {"content": [
        {"type": "tool_use", "id": "t1", "name": "Bash", "input": []}]}}) + "\n")
    trial("log-top-level-array", kind="shown", log=lines[0] + "\n[1, 2]\n")
    trial("log-top-level-string", kind="shown", log=lines[0] + '\n"hello"\n')
    trial("log-nul-bytes", log=lines[0].encode() + b"\n\x00\x00\x00\n")
    trial("log-content-block-string", kind="shown", log=lines[0] + "\n" + json.dumps(
        {"type": "assistant", "message": {"content": ["just a string"]}}) + "\n")
    trial("result-not-object", kind="noted", file="result.json", result="[]")
    trial("result-nested-deep", kind="noted", file="result.json", result=_deep())
    trial("result-not-utf8", kind="noted", file="result.json", result=None).joinpath("result.json").write_bytes(b'{"x": "\xff"}')
    trial("config-agent-list", kind="noted", file="config.json", config=json.dumps(
        {"task": {"path": "/x/tasks/t-ok"}, "trial_name": "t-ok__config-agent-list", "agent": ["claude-code"]}))
    trial("config-nested-deep", kind="noted", file="config.json", config=_deep())
    f = trial("ctrf-missing-on-pass", kind="noted", file="verifier/ctrf.json")
    (f / "verifier" / "ctrf.json").unlink()
    trial("ctrf-tests-not-list", kind="noted", file="verifier/ctrf.json", ctrf='{"results": {"tests": 5}}')
    trial("ctrf-nested-deep", kind="noted", file="verifier/ctrf.json", ctrf=_deep())
    trial("ctrf-not-utf8", kind="noted", file="verifier/ctrf.json", ctrf=None).joinpath("verifier", "ctrf.json").write_bytes(b"\xff\xfe")
    # a task name that tries to leave the folder: the folder decides the task, the mismatch is noted
    res = {"task_name": "../../etc", "trial_name": "x", "verifier_result": {"rewards": {"reward": 0.0}}}
    trial("task-name-traversal", kind="noted", file="", result=json.dumps(res))
    # links out of the corpus
    f = trial("link-log-outside")
    (f / "agent" / "claude-code.txt").unlink()
    os.symlink(outside / "secret.jsonl", f / "agent" / "claude-code.txt")
    f = trial("link-ctrf-outside", file="verifier/ctrf.json")
    (f / "verifier" / "ctrf.json").unlink()
    os.symlink(outside / "ctrf.json", f / "verifier" / "ctrf.json")
    f = trial("link-agent-dir-outside", file="agent")
    shutil.rmtree(f / "agent")
    os.symlink(outside / "agent", f / "agent")
    link = root / "jobs" / "j" / "t-ok__link-trial-outside"
    os.symlink(outside / "trial", link)
    VARIANTS.append(Variant("harbor", "link-trial-outside", rel(link), rel(link)))
    # ATIF and session transcripts
    f = trial("atif-not-object", file="agent/trajectory.json")
    (f / "agent" / "claude-code.txt").unlink()
    _w(f / "agent" / "trajectory.json", "[]")
    f = trial("atif-steps-not-list", file="agent/trajectory.json")
    (f / "agent" / "claude-code.txt").unlink()
    _w(f / "agent" / "trajectory.json", json.dumps({"schema_version": "ATIF-v1.2", "steps": 5}))
    f = trial("atif-nested-deep", file="agent/trajectory.json")
    (f / "agent" / "claude-code.txt").unlink()
    _w(f / "agent" / "trajectory.json", '{"steps": ' + _deep() + "}")
    f = trial("session-bad-line", file="agent/sessions/projects/p/s.jsonl")
    (f / "agent" / "claude-code.txt").unlink()
    _w(f / "agent" / "sessions" / "projects" / "p" / "s.jsonl", '{"type": "user", "message": {"content": "hi"}}\n{"type": [}\n')
    # tasks
    def task(task_id: str, file: str, kind: str = "excluded", **kw) -> Path:
        folder = _task(root, task_id, **kw)
        VARIANTS.append(Variant("harbor", task_id, rel(folder), f"{rel(folder)}/{file}", kind))
        return folder

    task("t-instruction-not-utf8", "instruction.md", instruction=b"Write caf\xe9.\n")
    f = task("t-instruction-missing", "instruction.md")
    (f / "instruction.md").unlink()
    task("t-toml-invalid", "task.toml", toml="version = [\n")
    task("t-toml-metadata-not-table", "task.toml", toml='metadata = "x"\n')
    f = task("t-instruction-link-outside", "instruction.md")
    (f / "instruction.md").unlink()
    os.symlink(outside / "secret.txt", f / "instruction.md")
    f = task("t-test-link-outside", "tests/test_secret.py", kind="excluded")
    os.symlink(outside / "test_secret.py", f / "tests" / "test_secret.py")
    bomb = "import pytest\n\n" + "".join(f"@pytest.mark.parametrize('a{i}', list(range(10)))\n" for i in range(6)) + \
        "def test_bomb(" + ", ".join(f"a{i}" for i in range(6)) + "):\n    pass\n"
    task("t-parametrize-bomb", "tests/test_outputs.py", kind="noted", test_file=bomb)
    task("t-test-syntax-error", "tests/test_outputs.py", test_file="def test_x(:\n")
    task("t-test-not-utf8", "tests/test_outputs.py", test_file=b"def test_x():\n    s = '\xff'\n")
    task("t-test-nested-expression", "tests/test_outputs.py",
         test_file="def test_x():\n    assert " + "(" * 2000 + "1" + ")" * 2000 + "\n")


# --- Terminal-Bench 1 --------------------------------------------------------------------------

PANE = "root@box:/app# echo hi > out.txt\nroot@box:/app# cat out.txt\nhi\nroot@box:/app# \n"


def _tb1_trial(root: Path, task: str, k: int, *, results: str | bytes | None = None, pane: str | bytes | None = None,
               no_pane: bool = False) -> Path:
    run = root / "runs" / "20250101_agent_model-x"
    folder = run / task / f"{task}.{k}-of-9"
    res = {"task_id": task, "trial_name": folder.name, "instruction": f"Do {task}: write out.txt.", "is_resolved": True,
           "parser_results": {"test_out": "passed"}, "failure_mode": "unset"}
    _w(folder / "results.json", results if results is not None else json.dumps(res))
    _w(folder / "commands.txt", "echo hi > out.txt\ncat out.txt\n")
    if not no_pane:  # each trial's own pane (identical logs would be de-duplicated)
        _w(folder / "panes" / "post-agent.txt", pane if pane is not None else PANE.replace("hi", f"hi {k}"))
    _w(run / "run_metadata.json", json.dumps({"agent_name": "agent", "model_name": "model-x"}))
    return folder


def _tb1(root: Path, outside: Path) -> None:
    _tb1_trial(root, "hello", 1)
    rel = lambda p: p.relative_to(root).as_posix()  # noqa: E731

    def trial(name: str, k: int, file: str, kind: str = "excluded", task: str = "hello", **kw) -> Path:
        folder = _tb1_trial(root, task, k, **kw)
        VARIANTS.append(Variant("tb1", name, rel(folder), f"{rel(folder)}/{file}" if file else rel(folder), kind))
        return folder

    res = {"task_id": "../../etc", "instruction": "Do hello: write out.txt.", "is_resolved": False, "parser_results": {}}
    trial("tb1-task-id-traversal", 2, "results.json", kind="noted", results=json.dumps(res))
    f = trial("tb1-pane-link-outside", 3, "panes/post-agent.txt")
    (f / "panes" / "post-agent.txt").unlink()
    os.symlink("/etc/passwd" if Path("/etc/passwd").is_file() else outside / "secret.txt", f / "panes" / "post-agent.txt")
    trial("tb1-results-nested-deep", 4, "results.json", kind="noted", results=_deep())
    trial("tb1-results-not-object", 5, "results.json", kind="noted", results="[1]")
    trial("tb1-results-not-utf8", 6, "results.json", kind="noted", results=b'{"task_id": "\xff"}')
    trial("tb1-pane-not-utf8", 7, "panes/post-agent.txt", kind="noted", pane=b"root@box:/app# echo \xff\xfe\n")
    trial("tb1-no-log", 8, "", no_pane=True)
    res = {"task_id": "hello", "instruction": "Do hello.", "is_resolved": "yes", "parser_results": {"t": 5}}
    trial("tb1-results-wrong-types", 9, "results.json", kind="noted", results=json.dumps(res))


# --- SWE-bench -----------------------------------------------------------------------------------


def _instance(iid: str) -> dict:
    return {"repo": "demo/x", "instance_id": iid, "base_commit": "0" * 40, "patch": "", "test_patch": "",
            "problem_statement": f"Fix {iid}.", "hints_text": "", "FAIL_TO_PASS": '["tests/test_x.py::test_a"]',
            "PASS_TO_PASS": "[]"}


def _traj(steps: object = None) -> str:
    steps = steps if steps is not None else [{"thought": "look", "action": "ls", "observation": "x.py", "response": "ls"}]
    return json.dumps({"environment": "swe_main", "trajectory": steps, "history": [], "info": {"exit_status": "submitted"}})


def _swe(root: Path, outside: Path) -> None:
    ids = ["ok-1", "traj-not-json", "traj-nested-deep", "traj-steps-not-list", "traj-step-not-object", "traj-link-outside",
           "traj-empty", "traj-not-utf8"]
    extra = ["report-duplicate-key", "report-bom"]  # after the bad rows (whose line numbers the variants name)
    rows = [json.dumps(_instance(i)) for i in ids]
    rows.append("[1, 2]")  # line 10: an instance that is not an object
    rows.append(json.dumps({**_instance("bad-tests"), "FAIL_TO_PASS": "not json ["}))
    rows += [json.dumps(_instance(i)) for i in extra]
    _w(root / "instances.jsonl", "\n".join(rows) + "\n")
    VARIANTS.append(Variant("swe", "instance-not-object", "instances.jsonl:9", "instances.jsonl"))
    VARIANTS.append(Variant("swe", "instance-bad-tests", "instances.jsonl:10", "instances.jsonl"))
    rel = lambda p: p.relative_to(root).as_posix()  # noqa: E731
    body = {"ok-1": _traj(), "traj-not-json": "{not json", "traj-nested-deep": '{"trajectory": ' + _deep() + "}",
            "traj-steps-not-list": _traj(5), "traj-step-not-object": _traj(["x", 5]), "traj-empty": "",
            "traj-not-utf8": b'{"trajectory": "\xff"}', "report-duplicate-key": _traj(), "report-bom": _traj()}
    for iid in ids + extra:
        path = root / "trajectories" / "run" / iid / f"{iid}.traj"
        if iid == "traj-link-outside":
            path.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(outside / "secret.txt", path)
        else:
            _w(path, body[iid])
        if iid.startswith("report-"):  # its own log (identical logs are de-duplicated)
            _w(path, _traj([{"thought": iid, "action": "ls", "observation": "x.py", "response": "ls"}]))
        elif iid != "ok-1":
            VARIANTS.append(Variant("swe", iid, rel(path), rel(path), "shown" if iid == "traj-step-not-object" else "excluded"))
    _w(root / "reports" / "ok-1" / "report.json", json.dumps({"ok-1": {"resolved": True}}))
    _w(root / "reports" / "traj-not-json" / "report.json", _deep())
    VARIANTS.append(Variant("swe", "report-nested-deep", "reports/traj-not-json/report.json",
                            "reports/traj-not-json/report.json", "noted"))
    # a duplicated key in an evaluation report (resolved false, then true): never read last-wins
    _w(root / "reports" / "report-duplicate-key" / "report.json",
       '{"report-duplicate-key": {"resolved": false, "resolved": true}}')
    VARIANTS.append(Variant("swe", "report-duplicate-key", "trajectories/run/report-duplicate-key/report-duplicate-key.traj",
                            "reports/report-duplicate-key/report.json", "noted", family="swe duplicate key", outcome="other"))
    _w(root / "reports" / "report-bom" / "report.json", BOM + json.dumps({"report-bom": {"resolved": True}}).encode())
    VARIANTS.append(Variant("swe", "report-bom", "trajectories/run/report-bom/report-bom.traj",
                            "reports/report-bom/report.json", "kept", family="swe report BOM", outcome="PASS"))


# --- the kinds of issue 25: a matrix of spoilt files, ids, permissions, loops ----------------------------

BOM = b"\xef\xbb\xbf"


def _mutations(valid: bytes) -> dict[str, bytes]:
    """One spoilt copy of a valid JSON document per kind."""
    return {"bom": BOM + valid, "truncated": valid[: len(valid) // 2], "empty": b"", "nul": valid[:5] + b"\x00\x00" + valid[5:],
            "not-utf8": valid[:-1] + b"\xff}", "string": b'"hello"', "number": b"5", "deep": _deep().encode(),
            "list": b"[]", "whitespace": b"  \n\t\n"}


def _harbor_matrix(root: Path) -> None:
    """Every trusted Harbor JSON file (result.json, config.json, verifier/ctrf.json) spoilt every way, and a
    duplicated key in each (which would decide the outcome or the tests: the trial is excluded)."""
    rel = lambda p: p.relative_to(root).as_posix()  # noqa: E731
    for file in ("result.json", "config.json", "verifier/ctrf.json"):
        stem = file.split("/")[-1].split(".")[0]
        for kind, spoil in _mutations(b"{}").items():
            name = f"m-{stem}-{kind}"
            folder = _trial(root, name)
            valid = (folder / file).read_bytes()
            (folder / file).write_bytes(_mutations(valid)[kind])
            expect = "kept" if kind == "bom" else "noted"
            outcome = "PASS" if kind == "bom" or file != "result.json" else None
            if file == "config.json" and kind not in ("bom",):
                # config.json is only read for names the result.json repeats: noted, outcome unchanged
                outcome = "PASS"
            VARIANTS.append(Variant("harbor", name, rel(folder), f"{rel(folder)}/{file}", expect,
                                    family=f"harbor {file} {'BOM' if kind == 'bom' else 'spoilt'}", outcome=outcome))
        name = f"m-{stem}-duplicate-key"
        folder = _trial(root, name)
        text = (folder / file).read_text()
        if file == "result.json":  # FAIL first, PASS last: last-wins would flip the outcome
            text = text[:-1] + ', "verifier_result": {"rewards": {"reward": 1.0}}}'
            text = text.replace('"verifier_result": {"rewards": {"reward": 1.0}}, "exception_info"',
                                '"verifier_result": {"rewards": {"reward": 0.0}}, "exception_info"')
        elif file == "config.json":
            text = text[:-1] + ', "agent": {"name": "other", "model_name": "other"}}'
        else:
            text = text[:-1] + ', "results": {"tests": [{"name": "test_outputs.py::test_exists", "status": "failed"}]}}'
        (folder / file).write_text(text)
        VARIANTS.append(Variant("harbor", name, rel(folder), f"{rel(folder)}/{file}", family="harbor duplicate key"))
    lines = _stream().splitlines()
    for name, log, kind in (("m-log-bom", BOM + _stream("m-log-bom").encode(), "kept"),
                            ("m-log-line-boundary-cut", ("\n".join(_stream("cut").splitlines()[:3]) + "\n").encode(), "kept"),
                            ("m-log-whitespace", b"\n  \n\t\n", "excluded"),
                            ("m-log-crlf", _stream("m-log-crlf").replace("\n", "\r\n").encode(), "kept"),
                            ("m-log-lone-surrogate", (lines[0] + "\n" + json.dumps({"type": "assistant", "message": {
                                "content": [{"type": "text", "text": "bad \\ud800 half"}]}}).replace("\\\\ud800", "\\ud800")
                                + "\n").encode(), "noted")):
        folder = _trial(root, name, log=log)
        VARIANTS.append(Variant("harbor", name, rel(folder), f"{rel(folder)}/agent/claude-code.txt", kind,
                                family="harbor agent log", outcome="PASS" if kind == "kept" else None))
    # ids: in files (trial_name) and in folder names (task, trial, job); the file or folder is named
    for name, trial_name in (("m-id-trial-name-list", ["a", "b"]), ("m-id-trial-name-traversal", "../../x"),
                             ("m-id-trial-name-number", 5), ("m-id-trial-name-shell", "x;rm -rf ~;$(id)"),
                             ("m-id-trial-name-slash", "a/b")):
        folder = _trial(root, name)
        for file in ("config.json", "result.json"):
            doc = json.loads((folder / file).read_text())
            doc["trial_name"] = trial_name
            if "config" in doc:
                doc["config"]["trial_name"] = trial_name
            (folder / file).write_text(json.dumps(doc))
        VARIANTS.append(Variant("harbor", name, rel(folder), f"{rel(folder)}/config.json", family="harbor ids"))
    evil = "evil;rm -rf ~;$(id)"
    f = _task(root, evil)
    VARIANTS.append(Variant("harbor", "m-id-task-folder-shell", rel(f), rel(f), family="harbor ids"))
    for name, job in (("m-id-job-space", "job with space"), ("m-id-job-not-utf8", os.fsdecode(b"j\xff\xfe"))):
        folder = root / "jobs" / job / "t-ok__x1"
        _w(folder / "config.json", json.dumps({"task": {"path": "/x/tasks/t-ok"}, "trial_name": "t-ok__x1"}))
        _w(folder / "result.json", json.dumps({"task_name": "t-ok", "verifier_result": {"rewards": {"reward": 1.0}}}))
        _w(folder / "agent" / "claude-code.txt", _stream(name))
        VARIANTS.append(Variant("harbor", name, os.fsencode(rel(folder)).decode("utf-8", "backslashreplace"),
                                os.fsencode(rel(folder)).decode("utf-8", "backslashreplace"), family="harbor ids"))
    folder = root / "jobs" / os.fsdecode(b"group-\xff") / "j2" / "t-ok__nested"
    _w(folder / "config.json", json.dumps({"task": {"path": "/x/tasks/t-ok"}, "trial_name": "t-ok__nested"}))
    _w(folder / "result.json", json.dumps({"task_name": "t-ok", "verifier_result": {"rewards": {"reward": 1.0}}}))
    _w(folder / "agent" / "claude-code.txt", _stream("nested"))
    shown = os.fsencode(rel(folder)).decode("utf-8", "backslashreplace")
    VARIANTS.append(Variant("harbor", "m-id-group-folder-not-utf8", shown, shown, family="harbor ids"))
    folder = _trial(root, os.fsdecode(b"sales-csv-summary__\xff\xfe"))
    shown = os.fsencode(rel(folder)).decode("utf-8", "backslashreplace")
    VARIANTS.append(Variant("harbor", "m-id-trial-folder-not-utf8", shown, shown, family="harbor ids"))
    f = _task(root, os.fsdecode(b"t-\xff"))
    shown = os.fsencode(rel(f)).decode("utf-8", "backslashreplace")
    VARIANTS.append(Variant("harbor", "m-id-task-folder-not-utf8", shown, shown, family="harbor ids"))
    # task files
    def task(task_id: str, file: str, kind: str = "excluded", **kw) -> Path:
        folder = _task(root, task_id, **kw)
        VARIANTS.append(Variant("harbor", task_id, rel(folder), f"{rel(folder)}/{file}", kind, family="harbor task files"))
        return folder

    task("t-m-instruction-nul", "instruction.md", instruction=b"Write \x00\x00 out.txt.\n")
    task("t-m-instruction-empty", "instruction.md", instruction="")
    task("t-m-instruction-whitespace", "instruction.md", instruction=" \n\t\n")
    task("t-m-instruction-bom", "instruction.md", kind="kept", instruction=BOM + b"Write out.txt.\n")
    task("t-m-instruction-crlf", "instruction.md", kind="kept", instruction="Write\r\nout.txt.\r\n")
    task("t-m-toml-bom", "task.toml", kind="kept", toml='\ufeffversion = "1.0"\n')
    task("t-m-toml-duplicate-key", "task.toml", toml='version = "1.0"\nversion = "2.0"\n')
    task("t-m-toml-nul", "task.toml", toml='version = "1\x00"\n')
    task("t-m-test-bom", "tests/test_outputs.py", kind="kept", test_file=BOM + TEST_FILE.encode())
    task("t-m-test-nul", "tests/test_outputs.py", test_file=b"def test_x():\n    pass\n\x00\n")
    # a folder link leading back up: a loop, reported once and not followed
    loop = root / "jobs" / "j" / "zz-loop"
    os.symlink("..", loop)
    VARIANTS.append(Variant("harbor", "m-link-loop", rel(loop), rel(loop), family="harbor link loop"))


def _tb1_matrix(root: Path, outside: Path, agent_log: bytes | None) -> None:
    """Per-trial and run-level results.json spoilt every way, agent logs cut or with NUL bytes, bad ids."""
    rel = lambda p: p.relative_to(root).as_posix()  # noqa: E731
    valid = json.dumps({"task_id": "hello", "trial_name": "x", "instruction": "Do hello: write out.txt.", "is_resolved": True,
                        "parser_results": {"test_out": "passed"}, "failure_mode": "unset"}).encode()
    k = 20
    for kind, data in _mutations(valid).items():
        folder = _tb1_trial(root, "hello", k, results=data)
        VARIANTS.append(Variant("tb1", f"tb1-m-results-{kind}", rel(folder), f"{rel(folder)}/results.json",
                                "kept" if kind == "bom" else "noted", family=f"tb1 results.json {'BOM' if kind == 'bom' else 'spoilt'}",
                                outcome="PASS" if kind == "bom" else None))
        k += 1
    dup = valid[:-1] + b', "is_resolved": false}'
    folder = _tb1_trial(root, "hello", k, results=dup)
    VARIANTS.append(Variant("tb1", "tb1-m-results-duplicate-key", rel(folder), f"{rel(folder)}/results.json", family="tb1 duplicate key"))
    k += 1
    for name, pr in (("tb1-m-parser-results-list", []), ("tb1-m-parser-results-string", "passed")):
        doc = json.loads(valid)
        doc["parser_results"] = pr
        folder = _tb1_trial(root, "hello", k, results=json.dumps(doc))
        VARIANTS.append(Variant("tb1", name, rel(folder), f"{rel(folder)}/results.json", "noted", family="tb1 results fields"))
        k += 1
    if agent_log is not None:
        for name, data, kind in (("tb1-m-agent-log-cut", agent_log[: len(agent_log) // 2], "noted"),
                                 ("tb1-m-agent-log-nul", agent_log.replace(b"clear", b"cl\x00\x00ear"), "noted"),
                                 ("tb1-m-agent-log-not-utf8", agent_log.replace(b"clear", b"cl\xff\xfeear"), "noted")):
            folder = _tb1_trial(root, "hello", k)
            _w(folder / "sessions" / "agent.log", data)
            VARIANTS.append(Variant("tb1", name, rel(folder), f"{rel(folder)}/sessions/agent.log", kind, family="tb1 agent log"))
            k += 1
    # run-level results.json: each in a run of its own; every trial is kept, the file is noted
    for kind, data in {**{k2: v for k2, v in _mutations(b'{"results": []}').items() if k2 not in ("bom",)},
                       "dict": b'{"n": 1}', "results-dict": b'{"results": {}}',
                       "duplicate-key": b'{"results": [], "results": []}'}.items():
        run = root / "runs" / f"20250102_agent_model-{kind}"
        folder = run / "hello" / "hello.1-of-1"
        _w(folder / "results.json", valid)
        _w(folder / "panes" / "post-agent.txt", PANE.replace("hi", f"hi {kind}"))
        _w(run / "results.json", data)
        _w(run / "run_metadata.json", json.dumps({"agent_name": "agent", "model_name": f"model-{kind}"}))
        VARIANTS.append(Variant("tb1", f"tb1-m-run-results-{kind}", rel(folder), f"{rel(run)}/results.json", "noted",
                                family="tb1 run-level results.json"))
    # ids: a task folder and a trial folder name that are not ids
    evil = "evil;rm -rf ~;$(id)"
    run = root / "runs" / "20250101_agent_model-x"
    folder = run / evil / f"{evil}.1-of-1"
    _w(folder / "results.json", json.dumps({"task_id": evil, "instruction": "Do evil.", "is_resolved": True, "parser_results": {}}))
    _w(folder / "panes" / "post-agent.txt", PANE.replace("hi", "hi evil"))
    VARIANTS.append(Variant("tb1", "tb1-m-id-task-shell", rel(folder), rel(folder), family="tb1 ids"))
    folder = run / "hello" / os.fsdecode(b"hello.1-of-9.\xff")
    _w(folder / "results.json", valid)
    _w(folder / "panes" / "post-agent.txt", PANE.replace("hi", "hi bytes"))
    shown = os.fsencode(rel(folder)).decode("utf-8", "backslashreplace")
    VARIANTS.append(Variant("tb1", "tb1-m-id-trial-not-utf8", shown, shown, family="tb1 ids"))
    batch_run = root / "runs" / "20250103_agent_model-b"
    folder = batch_run / os.fsdecode(b"batch-\xff") / "hello" / "hello.1-of-1.b"
    _w(folder / "results.json", valid)
    _w(folder / "panes" / "post-agent.txt", PANE.replace("hi", "hi batch"))
    shown = os.fsencode(rel(folder)).decode("utf-8", "backslashreplace")
    VARIANTS.append(Variant("tb1", "tb1-m-id-batch-not-utf8", shown, shown, family="tb1 ids"))
    loop = run / "zz-loop"
    os.symlink("..", loop)
    VARIANTS.append(Variant("tb1", "tb1-m-link-loop", rel(loop), rel(loop), family="tb1 link loop"))


PERMISSION_CONFIGS = {
    "perm-harbor": {"name": "perm-harbor", "benchmark": "skillsbench", "root": "perm-harbor", "tasks_dir": "tasks",
                    "trials_dirs": ["jobs"]},
    "perm-tb1": {"name": "perm-tb1", "format": "terminal-bench-1", "root": "perm-tb1", "trials_dirs": ["runs"]},
    "perm-swe": {"name": "perm-swe", "format": "swe-bench", "root": "perm-swe", "tasks_file": "instances.jsonl",
                 "trials_dirs": ["trajectories/run"]},
}
"""Corpora whose variants are unreadable files and folders (mode 000): they are read as a user that is not root."""


def make_permission_corpora(dest: str | Path) -> list[Variant]:
    """Unreadable trial, job and task folders and files; returns their variants (modes set last)."""
    dest = Path(dest)
    made: list[Variant] = []
    h = dest / "perm-harbor"
    _task(h, "t-ok")
    _trial(h, "good")
    _task(h, "t-unreadable-task")
    locked: list[Path] = [h / "tasks" / "t-unreadable-task"]
    made.append(Variant("perm-harbor", "perm-task-folder", "tasks/t-unreadable-task", "tasks/t-unreadable-task",
                        family="permissions (harbor)"))
    f = _task(h, "t-unreadable-instruction")
    locked.append(f / "instruction.md")
    made.append(Variant("perm-harbor", "perm-instruction", "tasks/t-unreadable-instruction",
                        "tasks/t-unreadable-instruction/instruction.md", family="permissions (harbor)"))
    for name, target in (("perm-trial-folder", ""), ("perm-agent-log", "agent/claude-code.txt"),
                         ("perm-agent-folder", "agent")):
        f = _trial(h, name)
        locked.append(f / target if target else f)
        rel = f.relative_to(h).as_posix()
        made.append(Variant("perm-harbor", name, rel, rel, family="permissions (harbor)"))
    for name, target in (("perm-result", "result.json"), ("perm-ctrf", "verifier/ctrf.json")):
        f = _trial(h, name)
        locked.append(f / target)
        rel = f.relative_to(h).as_posix()
        made.append(Variant("perm-harbor", name, rel, f"{rel}/{target}", "noted", family="permissions (harbor)"))
    f = _task(h, "t-unreadable-tests")
    locked.append(f / "tests")
    made.append(Variant("perm-harbor", "perm-tests-folder", "tasks/t-unreadable-tests", "tasks/t-unreadable-tests/tests",
                        family="permissions (harbor)"))
    job = h / "jobs" / "locked-job"
    _w(job / "t-ok__inside" / "result.json", "{}")
    locked.append(job)
    made.append(Variant("perm-harbor", "perm-job-folder", "jobs/locked-job", "jobs/locked-job", family="permissions (harbor)"))
    t = dest / "perm-tb1"
    _tb1_trial(t, "hello", 1)
    run = "runs/20250101_agent_model-x"
    _tb1_trial(t, "locked-task", 1)
    locked.append(t / run / "locked-task")
    made.append(Variant("perm-tb1", "perm-tb1-task-folder", f"{run}/locked-task", f"{run}/locked-task",
                        family="permissions (tb1)"))
    for k, (name, target, kind) in enumerate((("perm-tb1-trial-folder", "", "excluded"),
                                              ("perm-tb1-pane", "panes/post-agent.txt", "excluded"),
                                              ("perm-tb1-results", "results.json", "noted")), start=2):
        f = _tb1_trial(t, "hello", k)
        locked.append(f / target if target else f)
        rel = f.relative_to(t).as_posix()
        made.append(Variant("perm-tb1", name, rel, f"{rel}/{target}" if target else rel, kind, family="permissions (tb1)"))
    s = dest / "perm-swe"
    _w(s / "instances.jsonl", json.dumps(_instance("a-1")) + "\n")
    _w(s / "trajectories" / "run" / "a-1" / "a-1.traj", _traj())
    locked.append(s / "instances.jsonl")
    made.append(Variant("perm-swe", "perm-swe-instances", "instances.jsonl", "instances.jsonl", family="permissions (swe)"))
    for p in sorted(locked, key=lambda p: -len(p.parts)):  # deepest first: a locked folder hides what is below
        p.chmod(0)
    return made


CONFIGS = {  # paths other than `root` resolve against `root` (gcpc.corpus.ingest.corpus_root_of)
    "harbor": {"name": "harbor-variants", "benchmark": "skillsbench", "root": "harbor", "tasks_dir": "tasks",
               "trials_dirs": ["jobs"]},
    "tb1": {"name": "tb1-variants", "format": "terminal-bench-1", "root": "tb1", "trials_dirs": ["runs"]},
    "swe": {"name": "swe-variants", "format": "swe-bench", "root": "swe", "tasks_file": "instances.jsonl",
            "trials_dirs": ["trajectories/run"], "reports_dirs": ["reports"]},
}
"""Corpus configs for `gcpc.corpus.ingest.ingest(cfg, DEST)`."""


def make_corpora(dest: str | Path) -> list[Variant]:
    dest = Path(dest)
    VARIANTS.clear()
    outside = dest / "outside"
    _w(outside / "secret.txt", f"root:x:0:0:{SECRET_MARKER}:/root:/bin/bash\n")
    _w(outside / "secret.jsonl", json.dumps({"type": "user", "message": {"content": SECRET_MARKER}}) + "\n")
    _w(outside / "ctrf.json", json.dumps({"results": {"tests": [{"name": SECRET_MARKER, "status": "passed"}]}}))
    _w(outside / "agent" / "claude-code.txt", json.dumps({"type": "user", "message": {"content": SECRET_MARKER}}) + "\n")
    _w(outside / "trial" / "config.json", json.dumps({"task": {"path": "/x/tasks/t-ok"}, "trial_name": SECRET_MARKER}))
    _w(outside / "trial" / "agent" / "claude-code.txt", json.dumps({"type": "user", "message": {"content": SECRET_MARKER}}) + "\n")
    _w(outside / "test_secret.py", f"def test_{SECRET_MARKER.replace('-', '_')}():\n    pass\n")
    _harbor(dest / "harbor", outside)
    _tb1(dest / "tb1", outside)
    _swe(dest / "swe", outside)
    _harbor_matrix(dest / "harbor")
    log = Path(__file__).resolve().parents[1] / "fixtures" / "terminal_bench_1" / "runs" / "20250101_swe-agent-mini_model-x" / \
        "batch-1" / "hello-world" / "hello-world.1-of-1.batch-1" / "sessions" / "agent.log"
    _tb1_matrix(dest / "tb1", outside, log.read_bytes() if log.is_file() else None)
    CONFIGS.update(issue39.make(dest, outside, VARIANTS, Variant))  # the kinds of issue 39, four formats
    return list(VARIANTS)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/malformed/make_variants.py DEST")
    made = make_corpora(sys.argv[1])
    print(f"{len(made)} variants in {sys.argv[1]} ({', '.join(f'{c}: {sum(v.corpus == c for v in made)}' for c in CONFIGS)})")
