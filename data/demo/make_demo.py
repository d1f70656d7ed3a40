#!/usr/bin/env python3
"""Write the GCPC demo corpus (tasks + Harbor trials) under data/demo/, from the data in data/demo/content/.

Everything this script writes was invented for the GCPC project: six small tasks in the
SkillsBench / Harbor task layout and 50 illustrative Claude Code trials in the Harbor
trial layout (config.json, result.json, agent/claude-code.txt in Claude Code
``--output-format stream-json``, verifier/ctrf.json, verifier/test-stdout.txt). The
agent logs are written by hand-made scenarios, they are NOT real agent runs.

What the demo says is data: content/<task>_task.json holds each task's scenarios (the agent's
steps and texts, the command outputs, how each test fails in each variant), content/trials.json
the trial plan (which failure each task/condition/model cell gets, pairings, models, job folders),
and the other files in content/ the long texts (tests, skills, scripts, inputs) that the JSON names
as {"file": NAME} (with "format": {...}, filled in with str.format). This script only renders them
in the native formats: the stream-json log, pytest's console output and CTRF, Harbor's result.json.

Deterministic: stdlib only, fixed seeds, fixed timestamps, no network. Running it twice
gives byte-identical files. It removes and rewrites only ``tasks``, ``jobs`` and ``roles.json``
under the output folder (default: data/demo; tests/test_demo_generator.py writes to a temporary one).

Usage:  python data/demo/make_demo.py [--out DIR]
"""

from __future__ import annotations

import argparse
import ast
import difflib
import hashlib
import json
import random
import shutil
import string
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
CONTENT = HERE / "content"


def content(name: str) -> str:
    with open(CONTENT / name, encoding="utf-8", newline="") as f:
        return f.read()


def resolve(x):
    """JSON from content/ with every {"file": NAME[, "format": {...}]} replaced by that file's text."""
    if isinstance(x, dict):
        if "file" in x and set(x) <= {"file", "format"}:
            text = content(x["file"])
            return text.format(**x["format"]) if "format" in x else text
        return {k: resolve(v) for k, v in x.items()}
    if isinstance(x, list):
        return [resolve(v) for v in x]
    return x


PLAN = resolve(json.loads(content("trials.json")))
SEED = PLAN["seed"]
B62 = string.ascii_letters + string.digits
JOBS = PLAN["jobs"]  # Harbor job folders (condition is encoded by job folder and task source, as in SkillsBench)
TASKS_ROOT, TRIALS_ROOT = PLAN["tasks_root"], PLAN["trials_root"]
MODELS = PLAN["models"]  # key: [config model_name, model id inside API messages, $/Mtok in, out, cache read, cache write]
CC_TOOLS, CC_SLASH = PLAN["claude_code_tools"], PLAN["claude_code_slash_commands"]
READ_REMINDER = content("read_reminder.txt")
TODO_OK = PLAN["todo_ok"]

class Rng(random.Random):
    def b62(self, n: int) -> str:
        return "".join(self.choice(B62) for _ in range(n))

    def uuid4(self) -> str:
        return str(uuid.UUID(int=self.getrandbits(128), version=4))

    def addr(self) -> str:
        return "0x7f" + "".join(self.choice("0123456789abcdef") for _ in range(9)) + "0"


def pretty(obj) -> str:
    """Harbor / CTRF style without trailing newline (2-space indent instead of the originals' 4, to save space)."""
    return json.dumps(obj, indent=2, ensure_ascii=False)


def jline(obj) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def numbered(text: str, start: int = 1) -> str:
    return "\n".join(f"{i:>6}\u2192{line}" for i, line in enumerate(text.split("\n"), start))


# --------------------------------------------------------------------------------------
# Claude Code stream-json log
# --------------------------------------------------------------------------------------


class StreamLog:
    """Builds a Claude Code ``--output-format stream-json`` log, one JSON object per line."""

    def __init__(self, rng: Rng, model_key: str, skills: list[str], cwd: str = "/root"):
        self.rng = rng
        self.model_name, self.api_model, *self.prices = MODELS[model_key]
        self.session = rng.uuid4()
        self.lines: list[dict] = []
        self.ctx = 17800 + rng.randint(0, 2500)
        self.turns = 0
        self.msgs: list[dict] = []
        self.todos: list[dict] = []
        self.api_ms = 0
        self.lines.append({
            "type": "system", "subtype": "init", "cwd": cwd, "session_id": self.session,
            "tools": CC_TOOLS, "mcp_servers": [], "model": self.model_name,
            "permissionMode": "default", "slash_commands": skills + CC_SLASH,
            "apiKeySource": "none", "claude_code_version": "2.1.19", "output_style": "default",
            "agents": ["Bash", "general-purpose", "statusline-setup", "Explore", "Plan"],
            "skills": skills, "plugins": [], "uuid": rng.uuid4(),
        })

    # -- assistant side -----------------------------------------------------------------
    def _assistant(self, blocks: list[dict], out_tokens: int) -> None:
        r = self.rng
        created = r.randint(120, 900)
        usage = {
            "input_tokens": r.choice([1, 3, 4, 6, 13]),
            "cache_creation_input_tokens": created,
            "cache_read_input_tokens": self.ctx,
            "cache_creation": {"ephemeral_5m_input_tokens": created, "ephemeral_1h_input_tokens": 0},
            "output_tokens": out_tokens,
        }
        self.ctx += created
        self.msgs.append(usage)
        self.turns += 1
        self.api_ms += r.randint(1800, 9000) + out_tokens * 12
        mid = "msg_vrtx_01" + r.b62(22)
        for b in blocks:
            self.lines.append({
                "type": "assistant",
                "message": {
                    "model": self.api_model, "id": mid, "type": "message", "role": "assistant",
                    "content": [b], "stop_reason": None, "stop_sequence": None, "usage": usage,
                    "context_management": None,
                },
                "parent_tool_use_id": None, "session_id": self.session, "uuid": r.uuid4(),
            })

    def say(self, text: str) -> None:
        self._assistant([{"type": "text", "text": text}], max(8, len(text) // 4))

    def _call(self, name: str, inp: dict, content: str, result, is_error: bool, text: str | None,
              bash_flag: bool = False) -> None:
        r = self.rng
        tid = "toolu_vrtx_01" + r.b62(22)
        blocks = [{"type": "text", "text": text}] if text else []
        blocks.append({"type": "tool_use", "id": tid, "name": name, "input": inp})
        self._assistant(blocks, max(20, len(jline(inp)) // 3 + (len(text) // 4 if text else 0)))
        if is_error:
            block = {"type": "tool_result", "content": content, "is_error": True, "tool_use_id": tid}
        else:
            block = {"tool_use_id": tid, "type": "tool_result", "content": content}
            if bash_flag:
                block["is_error"] = False
        self.lines.append({
            "type": "user", "message": {"role": "user", "content": [block]},
            "parent_tool_use_id": None, "session_id": self.session, "uuid": r.uuid4(),
            "tool_use_result": result,
        })

    # -- tools ----------------------------------------------------------------------------
    def bash(self, command: str, description: str, out: str = "", code: int = 0, text: str | None = None) -> None:
        if code == -1:  # Claude Code's own 2-minute Bash timeout
            content = f"Command timed out after 2m 0s\n{out}"
            self._call("Bash", {"command": command, "description": description}, content,
                       "Error: " + content, True, text)
        elif code == 0:
            self._call("Bash", {"command": command, "description": description}, out,
                       {"stdout": out, "stderr": "", "interrupted": False, "isImage": False},
                       False, text, bash_flag=True)
        else:
            content = f"Exit code {code}\n{out}"
            self._call("Bash", {"command": command, "description": description}, content,
                       "Error: " + content, True, text)

    def read(self, path: str, content: str | None, text: str | None = None) -> None:
        if content is None:
            msg = "File does not exist."
            self._call("Read", {"file_path": path}, f"<tool_use_error>{msg}</tool_use_error>",
                       f"Error: {msg}", True, text)
            return
        shown = content[:-1] if content.endswith("\n") else content
        n = len(shown.split("\n"))
        self._call("Read", {"file_path": path}, numbered(content) + READ_REMINDER,
                   {"type": "text", "file": {"filePath": path, "content": shown, "numLines": n,
                                             "startLine": 1, "totalLines": n}},
                   False, text)

    def write(self, path: str, content: str, text: str | None = None) -> None:
        self._call("Write", {"file_path": path, "content": content},
                   f"File created successfully at: {path}",
                   {"type": "create", "filePath": path, "content": content, "structuredPatch": [],
                    "originalFile": None},
                   False, text)

    def edit(self, path: str, original: str, old: str, new: str, text: str | None = None) -> str:
        assert original.count(old) == 1, (path, old)
        updated = original.replace(old, new)
        a, b = original.split("\n"), updated.split("\n")
        hunks = []
        for g in difflib.SequenceMatcher(None, a, b).get_grouped_opcodes(4):
            i1, i2, j1, j2 = g[0][1], g[-1][2], g[0][3], g[-1][4]
            lines = []
            for tag, x1, x2, y1, y2 in g:
                if tag == "equal":
                    lines += [" " + s for s in a[x1:x2]]
                else:
                    lines += ["-" + s for s in a[x1:x2]] + ["+" + s for s in b[y1:y2]]
            hunks.append({"oldStart": i1 + 1, "oldLines": i2 - i1, "newStart": j1 + 1,
                          "newLines": j2 - j1, "lines": lines})
        first = hunks[0]["newStart"]
        lo = max(1, first - 1)
        hi = min(len(b), hunks[-1]["newStart"] + hunks[-1]["newLines"] - 1)
        snippet = "\n".join(f"{i:>6}\u2192{b[i - 1]}" for i in range(lo, hi + 1))
        content = (f"The file {path} has been updated. Here's the result of running `cat -n` on a "
                   f"snippet of the edited file:\n{snippet}")
        self._call("Edit", {"replace_all": False, "file_path": path, "old_string": old, "new_string": new},
                   content,
                   {"filePath": path, "oldString": old, "newString": new, "originalFile": original,
                    "structuredPatch": hunks, "userModified": False, "replaceAll": False},
                   False, text)
        return updated

    def todo(self, items: list[tuple[str, str, str]], text: str | None = None) -> None:
        new = [{"content": c, "status": s, "activeForm": a} for c, a, s in items]
        self._call("TodoWrite", {"todos": new}, TODO_OK, {"oldTodos": self.todos, "newTodos": new}, False, text)
        self.todos = new

    def skill(self, name: str, body: str, args: str | None = None, text: str | None = None) -> None:
        r = self.rng
        tid = "toolu_vrtx_01" + r.b62(22)
        inp = {"skill": name} if args is None else {"skill": name, "args": args}
        blocks = [{"type": "text", "text": text}] if text else []
        blocks.append({"type": "tool_use", "id": tid, "name": "Skill", "input": inp})
        self._assistant(blocks, 30)
        self.lines.append({
            "type": "user",
            "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": tid, "content": f"Launching skill: {name}"}]},
            "parent_tool_use_id": None, "session_id": self.session, "uuid": r.uuid4(),
            "tool_use_result": {"success": True, "commandName": name},
        })
        synthetic = f"Base directory for this skill: /logs/agent/sessions/skills/{name}\n\n{body}"
        if args:
            synthetic += f"\n\nARGUMENTS: {args}"
        self.lines.append({
            "type": "user", "message": {"role": "user", "content": [{"type": "text", "text": synthetic}]},
            "parent_tool_use_id": None, "session_id": self.session, "uuid": r.uuid4(), "isSynthetic": True,
        })

    def dangling(self, name: str, inp: dict, text: str | None = None) -> None:
        """A tool call whose result never arrives (the harness killed the agent)."""
        blocks = [{"type": "text", "text": text}] if text else []
        blocks.append({"type": "tool_use", "id": "toolu_vrtx_01" + self.rng.b62(22), "name": name, "input": inp})
        self._assistant(blocks, 40)

    def finish(self, text: str, final_line: bool = True) -> None:
        self.say(text)
        if not final_line:
            return
        r = self.rng
        p_in, p_out, p_read, p_write = self.prices
        tot = {k: sum(m[k] for m in self.msgs) for k in
               ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")}
        main_cost = (tot["input_tokens"] * p_in + tot["output_tokens"] * p_out
                     + tot["cache_read_input_tokens"] * p_read + tot["cache_creation_input_tokens"] * p_write) / 1e6
        h_in, h_out = r.randint(600, 1400), r.randint(40, 120)
        helper_cost = (h_in * 1.0 + h_out * 5.0) / 1e6
        model_usage = {
            self.model_name: {
                "inputTokens": tot["input_tokens"], "outputTokens": tot["output_tokens"],
                "cacheReadInputTokens": tot["cache_read_input_tokens"],
                "cacheCreationInputTokens": tot["cache_creation_input_tokens"], "webSearchRequests": 0,
                "costUSD": round(main_cost, 6), "contextWindow": 200000, "maxOutputTokens": 64000,
            }
        }
        if self.model_name != MODELS["haiku"][0]:
            model_usage["claude-haiku-4-5@20251001"] = {
                "inputTokens": h_in, "outputTokens": h_out, "cacheReadInputTokens": 0,
                "cacheCreationInputTokens": 0, "webSearchRequests": 0, "costUSD": round(helper_cost, 6),
                "contextWindow": 200000, "maxOutputTokens": 64000,
            }
        else:
            helper_cost = 0.0
        self.lines.append({
            "type": "result", "subtype": "success", "is_error": False,
            "duration_ms": self.api_ms + r.randint(2000, 15000), "duration_api_ms": self.api_ms,
            "num_turns": self.turns, "result": text, "session_id": self.session,
            "total_cost_usd": round(main_cost + helper_cost, 6),
            "usage": {
                **tot, "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
                "service_tier": "standard",
                "cache_creation": {"ephemeral_1h_input_tokens": 0,
                                   "ephemeral_5m_input_tokens": tot["cache_creation_input_tokens"]},
            },
            "modelUsage": model_usage, "permission_denials": [], "uuid": r.uuid4(),
        })

    def text(self) -> str:
        return "".join(jline(x) + "\n" for x in self.lines)


# --------------------------------------------------------------------------------------
# pytest / CTRF rendering
# --------------------------------------------------------------------------------------

TW = 80


def sep(ch: str, title: str | None = None) -> str:
    if not title:
        return ch * (TW // len(ch))
    n = max((TW - len(title) - 2) // (2 * len(ch)), 1)
    line = f"{ch * n} {title} {ch * n}"
    if len(line) + len(ch.rstrip()) <= TW:
        line += ch.rstrip()
    return line


class TestSource:
    """Parsed tests/test_outputs.py: function sources for tracebacks, and the test inventory."""

    def __init__(self, text: str):
        self.lines = text.split("\n")
        self.nodes: dict[tuple[str | None, str], ast.FunctionDef] = {}
        for node in ast.parse(text).body:
            if isinstance(node, ast.FunctionDef):
                self.nodes[(None, node.name)] = node
            elif isinstance(node, ast.ClassDef):
                for m in node.body:
                    if isinstance(m, ast.FunctionDef):
                        self.nodes[(node.name, m.name)] = m

    def tests(self) -> list[tuple[str | None, str]]:
        return [k for k in self.nodes if k[1].startswith("test_")]

    def block(self, cls: str | None, name: str) -> tuple[int, list[str]]:
        node = self.nodes[(cls, name)]
        start = min([node.lineno] + [d.lineno for d in node.decorator_list])
        raw = self.lines[start - 1:node.end_lineno]
        ind = len(raw[0]) - len(raw[0].lstrip())
        return start, [ln[ind:] for ln in raw]

    def locate(self, cls: str | None, name: str, sub: str) -> tuple[int, int, list[str]]:
        start, lines = self.block(cls, name)
        for i, ln in enumerate(lines):
            if sub in ln:
                return start + i, i, lines
        raise KeyError(f"{cls}.{name}: {sub!r} not found")


def frame(src: TestSource, cls, name, sub, args, e_lines=None, caret: str | None = None) -> tuple[str, int]:
    """One long-format traceback entry. Returns (text, lineno)."""
    lineno, idx, lines = src.locate(cls, name, sub)
    out = []
    if args:
        cur = ""
        for n, v in args:
            ns = f"{n} = {v}"
            if cur and len(ns) + len(cur) + 2 > TW:
                out.append(cur)
                cur = ns
            else:
                cur = f"{cur}, {ns}" if cur else ns
        out.append(cur)
        out.append("")
    for i, ln in enumerate(lines[: idx + 1]):
        out.append((">   " if i == idx else "    ") + ln)
    fail = lines[idx]
    indent = len(fail) - len(fail.lstrip())
    if caret:
        pos = fail.index(caret)
        out.append(" " * (4 + pos) + "^" * len(caret))
    for e in e_lines or []:
        out.append("E" + " " * (3 + indent) + e)
    return "\n".join(out), lineno


@dataclass
class Fail:
    """How one test case fails. ``line`` locates the failing line inside the test function."""

    line: str
    e: list[str]
    exc: str = "AssertionError"
    helper: tuple[str, str, list[tuple[str, str]]] | None = None  # (helper func, failing line, args)
    caret: str | None = None  # expression underlined in the test frame when the error is in a helper


def render_trace(src: TestSource, cls, name, args, f: Fail, tb: str = "long") -> str:
    if tb == "line":  # pytest --tb=line: one "path:line: message" line per failure
        if f.helper is not None:
            lineno = src.locate(None, f.helper[0], f.helper[1])[0]
        else:
            lineno = src.locate(cls, name, f.line)[0]
        return f"/tests/test_outputs.py:{lineno}: {f.e[0]}"
    if tb == "short":  # pytest --tb=short: one "path:line: in func" entry per frame, stripped source line
        out = []
        if f.helper is not None:
            lineno, idx, lines = src.locate(cls, name, f.line)
            out += [f"/tests/test_outputs.py:{lineno}: in {name}", "    " + lines[idx].strip()]
            hname, hline, _ = f.helper
            lineno, idx, lines = src.locate(None, hname, hline)
            out += [f"/tests/test_outputs.py:{lineno}: in {hname}", "    " + lines[idx].strip()]
        else:
            lineno, idx, lines = src.locate(cls, name, f.line)
            out += [f"/tests/test_outputs.py:{lineno}: in {name}", "    " + lines[idx].strip()]
        out += ["E   " + e for e in f.e]
        return "\n".join(out)
    if f.helper is None:
        body, lineno = frame(src, cls, name, f.line, args, f.e)
        return f"{body}\n\n/tests/test_outputs.py:{lineno}: {f.exc}"
    top, l1 = frame(src, cls, name, f.line, args, None, caret=f.caret)
    hname, hline, hargs = f.helper
    low, l2 = frame(src, None, hname, hline, hargs, f.e)
    return (f"{top}\n\n/tests/test_outputs.py:{l1}: \n{sep('_ ')}\n\n{low}\n\n"
            f"/tests/test_outputs.py:{l2}: {f.exc}")


@dataclass
class Case:
    cls: str | None
    func: str
    param_names: str | None = None  # as written in the decorator, e.g. "month"
    params: list[tuple[str, list[tuple[str, str]], str]] | None = None  # (id, [(arg, repr)], value repr)
    needs: list[tuple[str, str, str, str]] = field(default_factory=list)  # (path, line, helper, helper line)
    exists: tuple[str, str] | None = None  # (path, assert line) for plain existence tests

    def base_id(self) -> str:
        return f"test_outputs.py::{self.cls}::{self.func}" if self.cls else f"test_outputs.py::{self.func}"

    def case_ids(self) -> list[str | None]:
        return [p[0] for p in self.params] if self.params else [None]


def missing_fail(case: Case, missing: set[str], src: TestSource) -> Fail | None:
    if case.exists and case.exists[0] in missing:
        p = case.exists[0]
        return Fail(case.exists[1], [
            f"AssertionError: {p} was not created", "assert False",
            " +  where False = exists()",
            f" +    where exists = PosixPath('{p}').exists",
            f" +      where PosixPath('{p}') = Path('{p}')",
        ])
    for path, line, helper, hline in case.needs:
        if path in missing and helper is None:
            return Fail(line, [f"FileNotFoundError: [Errno 2] No such file or directory: '{path}'"],
                        exc="FileNotFoundError")
        if path in missing:
            hnode = src.nodes[(None, helper)]
            hargs = [(hnode.args.args[0].arg, repr(path))] if hnode.args.args else []
            return Fail(line, [f"FileNotFoundError: [Errno 2] No such file or directory: '{path}'"],
                        exc="FileNotFoundError", helper=(helper, hline, hargs), caret=line)
    return None


def run_verifier(task: "Task", rng: Rng, fails: dict, missing: set[str], t0: float):
    """Returns (ctrf dict, stdout text, n_passed_cases, n_cases)."""
    src = task.src
    results = []  # (case, case_id, args, Fail|None)
    for case in task.cases:
        for cid in case.case_ids():
            args = []
            if case.cls:
                args.append(("self", f"<test_outputs.{case.cls} object at {rng.addr()}>"))
            if case.params:
                args += next(p[1] for p in case.params if p[0] == cid)
            f = missing_fail(case, missing, src)
            if f is None:
                spec = fails.get(case.func)
                if isinstance(spec, dict):
                    f = spec.get(cid)
                elif spec is not None:
                    f = spec
            results.append((case, cid, args, f))
    # ---- CTRF (parametrized cases collapse into one entry per test function, like pytest-json-ctrf 0.3.5)
    tests = []
    t = t0 + rng.uniform(0.02, 0.06)
    start_all = t0
    traces = {}
    for case in task.cases:
        rows = [x for x in results if x[0] is case]
        start = t
        for _, cid, args, f in rows:
            t += rng.uniform(0.0004, 0.006)
            if f is not None:
                traces[(case.func, cid)] = render_trace(src, case.cls, case.func, args, f, task.tb)
        stop = t
        t += rng.uniform(0.0001, 0.0008)
        failed = [x for x in rows if x[3] is not None]
        entry = {"name": case.base_id(), "status": "failed" if failed else "passed"}
        if rows[-1][3] is not None:
            entry["raw_status"] = "call_failed"
        entry.update({"duration": stop - start - rng.uniform(0.0, 0.0003), "start": start, "stop": stop,
                      "retries": len(rows) - 1, "file_path": "test_outputs.py"})
        if case.params:
            vals = "[" + ", ".join(p[2] for p in case.params) + "]"
            entry["tags"] = [f"parametrize::{case.param_names}::{vals}"]
        if failed:
            last = failed[-1]
            entry["trace"] = traces[(case.func, last[1])].strip()
            entry["message"] = ("The test failed in the call phase due to an assertion error"
                                if last[3].exc == "AssertionError" else "The test failed in the call phase")
        tests.append(entry)
    n_fail = sum(1 for e in tests if e["status"] == "failed")
    ctrf = {"results": {
        "tool": {"name": "pytest", "version": "8.4.1"},
        "summary": {"tests": len(tests), "passed": len(tests) - n_fail, "failed": n_fail, "skipped": 0,
                    "pending": 0, "other": 0, "start": start_all, "stop": t},
        "tests": tests,
    }}
    # ---- pytest console
    out = ([task.setup_noise] if task.setup_noise else []) + [sep("=", "test session starts")]
    verbose = task.verbose
    if verbose:
        out += ["platform linux -- Python 3.12.3, pytest-8.4.1, pluggy-1.6.0 -- /usr/bin/python3",
                "cachedir: .pytest_cache"]
    else:
        out += ["platform linux -- Python 3.12.3, pytest-8.4.1, pluggy-1.6.0"]
    out += ["rootdir: /tests", "plugins: json-ctrf-0.3.5"]
    n = len(results)
    out.append(f"collecting ... collected {n} items" if verbose else f"collected {n} items")
    out.append("")

    def node(case, cid):
        return f"../tests/{case.base_id()}" + (f"[{cid}]" if cid is not None else "")

    def with_progress(line, k):
        prog = f"[{k * 100 // n:>3}%]"
        if len(line) + 1 + len(prog) <= TW:
            return line + " " * (TW - len(line) - len(prog)) + prog
        return f"{line} {prog}"

    if verbose:
        for k, (case, cid, _, f) in enumerate(results, 1):
            out.append(with_progress(f"{node(case, cid)} {'FAILED' if f else 'PASSED'}", k))
    else:
        dots = "".join("F" if f else "." for _, _, _, f in results)
        out.append(with_progress(f"../tests/test_outputs.py {dots}", n))
    out.append("")
    failed_rows = [x for x in results if x[3] is not None]
    if failed_rows:
        out.append(sep("=", "FAILURES"))
        for case, cid, args, f in failed_rows:
            title = (f"{case.cls}." if case.cls else "") + case.func + (f"[{cid}]" if cid is not None else "")
            if task.tb != "line":
                out.append(sep("_", title))
            if task.tb == "long":
                out.append("")
            out.append(traces[(case.func, cid)])
    passed_rows = [x for x in results if x[3] is None]
    if passed_rows:
        out.append(sep("=", "PASSES"))
    out.append(sep("=", "short test summary info"))
    for case, cid, _, f in passed_rows:
        out.append(f"PASSED {node(case, cid)}")
    for case, cid, _, f in failed_rows:
        line = f"FAILED {node(case, cid)}"
        msg = f.e[0]
        avail = TW - len(line) - len(" - ")
        if avail >= len(msg):
            line += f" - {msg}"
        elif avail > 6:
            line += f" - {msg[:avail - 3]}..."
        out.append(line)
    secs = rng.uniform(0.04, 0.35)
    parts = ([f"{len(failed_rows)} failed"] if failed_rows else []) + (
        [f"{len(passed_rows)} passed"] if passed_rows else [])
    out.append(sep("=", f"{', '.join(parts)} in {secs:.2f}s"))
    return ctrf, "\n".join(out) + "\n", len(passed_rows), n



# --------------------------------------------------------------------------------------
# Tasks, read from content/<name>_task.json
# --------------------------------------------------------------------------------------


@dataclass
class Variant:
    """One way an agent run goes. ``replace`` edits the correct script into this variant's script."""

    replace: list = field(default_factory=list)
    run_out: str = ""
    contents: dict[str, str] = field(default_factory=dict)  # output path -> file text written
    show: list[str] = field(default_factory=list)  # output paths the agent displays afterwards
    extra_show: list[tuple] = field(default_factory=list)  # further display steps
    final: str = ""
    fails: dict = field(default_factory=dict)  # test func -> Fail | {case id: Fail}
    missing: set[str] = field(default_factory=set)  # output files never written
    before_run: list[tuple] = field(default_factory=list)  # extra steps between writing and running
    pre: list[tuple] = field(default_factory=list)  # extra steps before the main file is written
    run_cmd: str | None = None  # overrides the task's run command
    note: str = ""  # assistant text before the script is written


@dataclass
class Task:
    """One task's files and scenarios; the fields are the keys of content/<name>_task.json."""

    id: str
    domain: str
    instruction: str
    toml: str
    tests_py: str
    cases: list[Case]
    skill_name: str
    skill_md: str
    verbose: bool
    setup_noise: str
    test_sh: str
    todos: list
    explore: list[tuple]
    script_path: str
    script: str
    run_cmd: str
    outputs: list[str]
    variants: dict[str, Variant]
    hiccup: dict
    crash: dict
    idle_text: str
    claims_text: str
    intro: str
    skill_args: str | None = None
    injection_step: list | None = None  # [exploration step index, the output line the injected lines follow]
    partial: Variant | None = None
    timeout: dict | None = None
    write_texts: list[str] | None = None  # phrases used when the main file is written
    heredoc: bool = True  # whether the compact heredoc style fits this task
    tb: str = "long"  # pytest traceback style used by this task's test.sh
    inputs: dict[str, str] = field(default_factory=dict)  # input files of the (not shipped) environment
    run_desc: str = "Run the script"

    def __post_init__(self):
        self.src = TestSource(self.tests_py)
        found = set(self.src.tests())
        declared = {(c.cls, c.func) for c in self.cases}
        assert found == declared, (self.id, found ^ declared)


def fails_of(d: dict) -> dict:
    """{test func: Fail fields, or {"per_case": {case id: Fail fields}}} -> Fail objects."""
    return {k: {c: Fail(**f) for c, f in v["per_case"].items()} if "per_case" in v else Fail(**v) for k, v in d.items()}


def steps_of(d: dict, *keys: str) -> dict:
    """Scenario steps are tuples (kind, ...), as run_steps and build_log slice them."""
    return d | {k: [tuple(st) for st in d[k]] for k in keys if k in d}


def variant_of(d: dict) -> Variant:
    d = steps_of(d, "pre", "before_run", "extra_show")
    return Variant(**d | {"fails": fails_of(d.get("fails", {})), "missing": set(d.get("missing", []))})


def load_task(name: str) -> Task:
    d = steps_of(resolve(json.loads(content(f"{name}_task.json"))), "explore")
    d["cases"] = [Case(**c) for c in d["cases"]]
    d["variants"] = {k: variant_of(v) for k, v in d["variants"].items()}
    d["partial"] = variant_of(d["partial"]) if d["partial"] else None
    d["hiccup"] = steps_of(d["hiccup"], "steps")
    d["crash"] = steps_of(d["crash"], "steps") | ({"fails": fails_of(d["crash"]["fails"])} if "fails" in d["crash"] else {})
    if "missing" in d["crash"]:
        d["crash"]["missing"] = set(d["crash"]["missing"])
    if d["timeout"]:
        d["timeout"] = steps_of(d["timeout"], "steps")
    return Task(**d)


def ALL_TASKS() -> list[Task]:
    return [load_task(name) for name in PLAN["tasks"]]


# --------------------------------------------------------------------------------------
# Scenario steps
# --------------------------------------------------------------------------------------


def B(cmd, desc, out="", code=0, text=None):
    return ("bash", cmd, desc, out, code, text)


def RD(path, content, text=None):
    return ("read", path, content, text)


def WR(path, content, text=None):
    return ("write", path, content, text)


def sed_expr(old: str, new: str) -> str:
    """GNU sed substitution replacing the single-line ``old`` by ``new`` (which may span lines)."""
    old, new = old.rstrip("\n"), new.rstrip("\n")
    assert "\n" not in old and "'" not in old + new
    pat = "".join("\\" + c if c in "\\.*[]^$|" else c for c in old)
    rpl = "".join("\\" + c if c in "\\&|" else c for c in new).replace("\n", "\\n")
    return f"s|{pat}|{rpl}|"



def apply(text: str, replace: list[tuple[str, str]]) -> str:
    for old, new in replace:
        assert text.count(old) == 1, (old, text.count(old))
        text = text.replace(old, new)
    return text


def cat_output(paths: list[str], contents: dict[str, str]) -> str:
    out = ""
    for k, p in enumerate(paths):
        if k:
            out += "\n"
        out += contents[p]
    return out.rstrip("\n")


def run_steps(log: StreamLog, steps: list[tuple], fs: dict[str, str]) -> None:
    for st in steps:
        kind = st[0]
        if kind == "bash":
            _, cmd, desc, out, code, text = st
            log.bash(cmd, desc, out, code, text)
        elif kind == "read":
            _, path, content, text = st
            log.read(path, content, text)
        elif kind == "write":
            _, path, content, text = st
            log.write(path, content, text)
            fs[path] = content
        elif kind == "edit":
            _, path, old, new, text = st
            fs[path] = log.edit(path, fs[path], old, new, text)
        elif kind == "say":
            log.say(st[1])
        elif kind == "dangle":
            log.dangling(st[1], st[2], st[3])
        else:
            raise ValueError(kind)



WRITE_LINES = PLAN["write_lines"]
INJECTED_LINES = PLAN["injected_lines"]


@dataclass
class Spec:
    task: Task
    cond: str  # with | without
    model: str  # sonnet | haiku
    kind: str  # ok | wrong | near | skip | crash | idle | claims | injection | partial | timeout
    todo: bool = False
    use_skill: bool = False
    hiccup: bool = False
    verify: str = "cat"  # cat | read
    style: str = "write"  # write: Write tool + separate runs | heredoc: one Bash call writes, runs and shows
    explore: bool = True  # False: the agent goes straight to the script (formats are given in the instruction)
    trial: str = ""



OPENERS = PLAN["openers"]  # real runs never repeat word for word (build_log)
_opener_index = iter(range(10**6))


def build_log(spec: Spec, rng: Rng) -> StreamLog:
    task = spec.task
    skills = [task.skill_name] if spec.cond == "with" else []
    log = StreamLog(rng, spec.model, skills)
    fs: dict[str, str] = {}
    if spec.kind not in ("idle", "claims"):
        # Real runs never repeat word for word; without this, two trials with the same story
        # would render identically and the ingest stage would (correctly) collapse them.
        log.say(OPENERS[next(_opener_index) % len(OPENERS)])
    if spec.kind == "idle":
        log.finish(task.idle_text)
        return log
    if spec.kind == "claims":
        log.todo([(c, a, "pending") for c, a in task.todos],
                 text="I'll plan the work with a todo list first.")
        log.todo([(c, a, "completed") for c, a in task.todos])
        log.finish(task.claims_text)
        return log
    todos = task.todos
    if spec.todo:
        log.todo([(c, a, "in_progress" if i == 0 else "pending") for i, (c, a) in enumerate(todos)],
                 text="Let me set up a todo list to track the requirements.")
    if spec.use_skill:
        body = task.skill_md.split("---\n", 2)[2].lstrip("\n")
        log.skill(task.skill_name, body, task.skill_args,
                  text=rng.choice([f"The `{task.skill_name}` skill looks relevant here; let me load it first.", None]))
    explore = list(task.explore) if spec.explore else []
    if spec.kind == "injection":
        i, marker = task.injection_step
        st = explore[i]
        assert st[0] == "bash" and marker in st[3]
        out = st[3].replace(marker, marker + "\n" + "\n".join(INJECTED_LINES), 1)
        explore[i] = st[:3] + (out,) + st[4:]
    for k, st in enumerate(explore):
        if k == 0 and st[-1] is None and (spec.kind in ("crash", "timeout") or rng.random() < 0.2):
            st = st[:-1] + (task.intro,)
        run_steps(log, [st], fs)

    if spec.kind == "timeout":
        run_steps(log, task.timeout["steps"], fs)
        return log  # killed by the harness: no final message, no result line

    if spec.kind == "crash":
        cr = task.crash
        path = cr.get("path", task.script_path)
        if spec.style == "heredoc":
            # Same story, but the agent writes the file with a shell heredoc and patches it with sed.
            prefix, pending_text = f"cat > {path} <<'EOF'\n{cr['script']}EOF\n", cr.get("text")
            for st in cr["steps"]:
                if st[0] == "edit":
                    prefix, pending_text = f"sed -i '{sed_expr(st[2], st[3])}' {path} && ", st[4]
                elif st[0] == "bash" and path in st[1] and prefix:
                    run_steps(log, [B(prefix + st[1], st[2], st[3], st[4], pending_text or st[5])], fs)
                    prefix, pending_text = "", None
                else:
                    run_steps(log, [st], fs)
        else:
            run_steps(log, [WR(path, cr["script"], cr.get("text"))], fs)
            run_steps(log, cr["steps"], fs)
        log.finish(cr["final"])
        return log

    vkey = {"injection": "wrong"}.get(spec.kind, spec.kind)
    v = task.partial if spec.kind == "partial" else task.variants[vkey]
    script = apply(task.script, v.replace)
    run_steps(log, v.pre, fs)
    if v.note:
        log.say(v.note)
    write_lines = task.write_texts or WRITE_LINES
    shown = [p for p in task.outputs if p in v.contents and p in v.show]
    if spec.style == "heredoc":
        def heredoc(text):
            return f"cat > {task.script_path} <<'EOF'\n{text}EOF\n{task.run_cmd}"
        tail_cmd = (" && cat " + " && echo && cat ".join(shown)) if shown else ""
        tail_out = ("\n" + cat_output(shown, v.contents)) if shown else ""
        if spec.hiccup:
            hc = task.hiccup
            err = next(st for st in hc["steps"] if st[0] == "bash")
            fix = next(st for st in hc["steps"] if st[0] == "edit")
            run_steps(log, [B(heredoc(apply(script, hc["replace"])), "Write and run the script", err[3], err[4],
                              rng.choice(write_lines + [None] * 6))], fs)
            run_steps(log, [B(heredoc(script) + tail_cmd, "Rewrite the script, run it and show the outputs",
                              v.run_out + tail_out, 0, fix[4])], fs)
        else:
            run_steps(log, [B(heredoc(script) + tail_cmd, "Write the script, run it and show the outputs",
                              v.run_out + tail_out, 0, rng.choice(write_lines + [None] * 6))], fs)
        run_steps(log, v.extra_show, fs)
        log.finish(v.final)
        return log
    if spec.hiccup:
        hc = task.hiccup
        buggy = apply(script, hc["replace"])
        run_steps(log, [WR(task.script_path, buggy, rng.choice(write_lines + [None] * 6))], fs)
        run_steps(log, hc["steps"], fs)
        assert fs[task.script_path] == script, f"{task.id}: hiccup fix does not restore the script"
    else:
        run_steps(log, [WR(task.script_path, script, rng.choice(write_lines + [None] * 6))], fs)
    run_steps(log, v.before_run, fs)
    run_steps(log, [B(v.run_cmd or task.run_cmd, task.run_desc, v.run_out)], fs)
    if shown:
        if spec.verify == "read":
            for k, p in enumerate(shown):
                run_steps(log, [RD(p, v.contents[p], rng.choice(["Let me verify the output.", None]) if k == 0 else None)], fs)
        else:
            run_steps(log, [B("cat " + " && echo && cat ".join(shown), "Show the generated output files",
                              cat_output(shown, v.contents),
                              text=rng.choice(["Let me check the output files.", None, None, None, None, None]))], fs)
    run_steps(log, v.extra_show, fs)
    log.finish(v.final)
    return log


# --------------------------------------------------------------------------------------
# Trials: plan (content/trials.json), assembly, validation
# --------------------------------------------------------------------------------------

# FAIL kind per (task, condition, model); every (task, condition, model) cell also has one PASS.
FAIL_PLAN = {t: {(c, m): k for c, m, k in cells} for t, cells in PLAN["fail_plan"].items()}
# How the two with-skills trials of a (task, model) are paired with the two without-skills trials:
# "same" = PASS<->PASS and FAIL<->FAIL, "cross" = with PASS<->without FAIL and with FAIL<->without PASS.
PAIRING = {(t, m): how for t, m, how in PLAN["pairing"]}
EXTRAS = PLAN["extras"]  # (task, condition, model, kind)
BASE_TIME = datetime.fromisoformat(PLAN["base_time"])
EPOCH = datetime(1970, 1, 1)


def iso(dt: datetime) -> str:
    return dt.isoformat()


def task_checksum(task: Task) -> str:
    import hashlib
    h = hashlib.sha256()
    for name, text in sorted(task_files(task).items()):
        h.update(name.encode() + b"\0" + text.encode("utf-8"))
    return h.hexdigest()


def task_files(task: Task) -> dict[str, str]:
    return {
        "instruction.md": task.instruction,
        "task.toml": task.toml,
        "tests/test.sh": task.test_sh,
        "tests/test_outputs.py": task.tests_py,
        f"environment/skills/{task.skill_name}/SKILL.md": task.skill_md,
    }


def trial_config(task: Task, spec: Spec) -> dict:
    job = JOBS[spec.cond]
    return {
        "task": {"path": f"{TASKS_ROOT}/{task.id}", "git_url": None, "git_commit_id": None,
                 "overwrite": False, "download_dir": None, "source": job["source"]},
        "trial_name": spec.trial,
        "trials_dir": f"{TRIALS_ROOT}/{job['folder']}",
        "timeout_multiplier": 1.0,
        "agent": {"name": "claude-code", "import_path": None, "model_name": MODELS[spec.model][0],
                  "override_timeout_sec": None, "override_setup_timeout_sec": None, "max_timeout_sec": None,
                  "kwargs": {"version": "2.1.19"}},
        "environment": {"type": "docker", "import_path": None, "force_build": False, "delete": True,
                        "override_cpus": None, "override_memory_mb": None, "override_storage_mb": None,
                        "override_gpus": None, "kwargs": {}},
        "verifier": {"override_timeout_sec": None, "max_timeout_sec": None, "disable": False},
        "job_id": job["job_id"],
    }


def write_trial(root: Path, spec: Spec, rng: Rng, start: datetime) -> dict:
    task = spec.task
    job = JOBS[spec.cond]
    tdir = root / "jobs" / job["folder"] / spec.trial
    log = build_log(spec, rng)
    cfg = trial_config(task, spec)
    env_s = start + timedelta(microseconds=rng.randint(500, 1500))
    env_f = env_s + timedelta(seconds=rng.uniform(4, 9))
    ag_s = env_f + timedelta(microseconds=rng.randint(10, 60))
    ag_setup_f = ag_s + timedelta(seconds=rng.uniform(30, 50))
    ex_s = ag_setup_f + timedelta(microseconds=rng.randint(20, 80))
    result_line = log.lines[-1] if log.lines[-1]["type"] == "result" else None
    if spec.kind == "timeout":
        ex_f = ex_s + timedelta(seconds=task.timeout["agent_timeout"])
    else:
        ex_f = ex_s + timedelta(milliseconds=(result_line["duration_ms"] if result_line else rng.randint(9000, 30000)))
    files: dict[str, str] = {"agent/claude-code.txt": log.text()}
    exception = None
    verifier_result = None
    vtimes = None
    outcome = None
    if spec.kind == "timeout":
        exception = {
            "exception_type": "AgentTimeoutError",
            "exception_message": f"Agent execution timed out after {task.timeout['agent_timeout']:.1f} seconds",
            "exception_traceback": content("harbor_timeout_traceback.txt").format(
                seconds=f"{task.timeout['agent_timeout']:.1f}"),
            "occurred_at": iso(ex_f + timedelta(microseconds=rng.randint(100, 900))),
        }
        finished = ex_f + timedelta(seconds=rng.uniform(1, 3))
        outcome = "other"
    else:
        v_s = ex_f + timedelta(microseconds=rng.randint(100, 500))
        if spec.kind == "crash" and "missing" in task.crash:
            fails, missing = task.crash.get("fails", {}), task.crash["missing"]
        elif spec.kind in ("crash", "idle", "claims"):
            fails, missing = {}, set(task.outputs)
        else:
            vkey = {"injection": "wrong"}.get(spec.kind, spec.kind)
            v = task.partial if spec.kind == "partial" else task.variants[vkey]
            fails, missing = v.fails, v.missing
        t0 = (v_s - EPOCH).total_seconds() + rng.uniform(4, 8)
        ctrf, stdout, n_pass, n = run_verifier(task, rng, fails, missing, t0)
        summ = ctrf["results"]["summary"]
        if spec.kind == "partial":
            reward = round(summ["passed"] / summ["tests"], 3)
            stdout += ("======================================\n"
                       f"TEST SUMMARY: {summ['passed']} / {summ['tests']} tests passed\n"
                       f"REWARD SCORE: {reward}\n"
                       "======================================\n")
            outcome = "other"
        else:
            reward = 1.0 if summ["failed"] == 0 else 0.0
            outcome = "PASS" if reward == 1.0 else "FAIL"
            assert (spec.kind == "ok") == (outcome == "PASS"), (task.id, spec.kind, summ)
        verifier_result = {"rewards": {"reward": reward}}
        v_f = v_s + timedelta(seconds=rng.uniform(5, 14))
        vtimes = {"started_at": iso(v_s), "finished_at": iso(v_f)}
        files["verifier/ctrf.json"] = pretty(ctrf)
        files["verifier/test-stdout.txt"] = stdout
        finished = v_f + timedelta(seconds=rng.uniform(12, 25))
    result = {
        "id": rng.uuid4(), "task_name": task.id, "trial_name": spec.trial,
        "trial_uri": f"file://{TRIALS_ROOT}/{job['folder']}/{spec.trial}",
        "task_id": {"path": f"{TASKS_ROOT}/{task.id}"}, "source": job["source"],
        "task_checksum": task_checksum(task), "config": cfg,
        "agent_info": {"name": "claude-code", "version": "2.1.19", "model_info": None},
        "agent_result": {"n_input_tokens": None, "n_cache_tokens": None, "n_output_tokens": None,
                         "cost_usd": None, "rollout_details": None, "metadata": None},
        "verifier_result": verifier_result, "exception_info": exception,
        "started_at": iso(start), "finished_at": iso(finished),
        "environment_setup": {"started_at": iso(env_s), "finished_at": iso(env_f)},
        "agent_setup": {"started_at": iso(ag_s), "finished_at": iso(ag_setup_f)},
        "agent_execution": {"started_at": iso(ex_s), "finished_at": iso(ex_f)},
        "verifier": vtimes,
    }
    files["config.json"] = pretty(cfg)
    files["result.json"] = pretty(result)
    for name, text in files.items():
        p = tdir / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8", newline="\n")
    return {"path": f"jobs/{job['folder']}/{spec.trial}", "task": task.id, "condition": spec.cond,
            "model": MODELS[spec.model][0], "kind": spec.kind, "outcome": outcome, "_end": finished}


def make_specs(tasks: list[Task]) -> tuple[list[Spec], list[tuple[int, int]]]:
    """All trial specs (48 binary + extras) and the matched pairs as index pairs into that list."""
    prng = Rng(SEED + 100)
    specs: list[Spec] = []
    pairs = []
    names = set()

    def name(task_id):
        while True:
            t = f"{task_id}__{prng.b62(7)}"
            if t not in names:
                names.add(t)
                return t

    for task in tasks:
        for model in ("sonnet", "haiku"):
            idx = {}
            for cond in ("with", "without"):
                for outcome in ("PASS", "FAIL"):
                    kind = "ok" if outcome == "PASS" else FAIL_PLAN[task.id][(cond, model)]
                    s = Spec(task, cond, model, kind)
                    if kind in ("ok", "wrong", "near", "skip", "injection"):
                        s.todo = prng.random() < 0.06
                        s.verify = "read" if prng.random() < 0.15 else "cat"
                    if kind == "ok":
                        s.hiccup = prng.random() < 0.22
                    if kind in ("ok", "wrong", "near", "skip", "injection", "crash") and task.heredoc:
                        s.style = "heredoc" if prng.random() < 0.78 else "write"
                        if s.style == "heredoc" and kind in ("ok", "wrong", "near", "skip"):
                            s.explore = prng.random() < 0.45
                    if cond == "with" and kind not in ("idle", "claims"):
                        s.use_skill = prng.random() < 0.35
                    idx[(cond, outcome)] = len(specs)
                    specs.append(s)
            if PAIRING[(task.id, model)] == "same":
                pairs += [(idx[("with", "PASS")], idx[("without", "PASS")]),
                          (idx[("with", "FAIL")], idx[("without", "FAIL")])]
            else:
                pairs += [(idx[("with", "PASS")], idx[("without", "FAIL")]),
                          (idx[("with", "FAIL")], idx[("without", "PASS")])]
    by_id = {t.id: t for t in tasks}
    for tid, cond, model, kind in EXTRAS:
        s = Spec(by_id[tid], cond, model, kind)
        s.use_skill = cond == "with"
        specs.append(s)
    order = list(range(len(specs)))
    prng.shuffle(order)  # launch order inside a job is not grouped by task
    for i in order:
        specs[i].trial = name(specs[i].task.id)
    return specs, pairs


def build(root: Path) -> dict:
    global _opener_index
    _opener_index = iter(range(10**6))  # each build starts from the first opener
    tasks = ALL_TASKS()
    for sub in ("tasks", "jobs"):
        shutil.rmtree(root / sub, ignore_errors=True)
    for task in tasks:
        for name, text in task_files(task).items():
            p = root / "tasks" / task.id / name
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8", newline="\n")
            if name.endswith("test.sh"):
                p.chmod(0o755)
    specs, pairs = make_specs(tasks)
    rng = Rng(SEED + 200)
    infos = []
    clock = {"with": BASE_TIME, "without": BASE_TIME + timedelta(hours=5, minutes=17, seconds=3.5)}
    order = sorted(range(len(specs)), key=lambda i: (specs[i].cond != "with", specs[i].trial))
    info_by_idx = {}
    for i in order:
        s = specs[i]
        start = clock[s.cond]
        info = write_trial(root, s, Rng(rng.getrandbits(64)), start)
        clock[s.cond] = start + timedelta(seconds=rng.uniform(40, 160))
        info_by_idx[i] = info
    infos = [info_by_idx[i] for i in range(len(specs))]
    _assert_distinct_logs(root)
    for x in infos:
        x.pop("_end")
    role = {}
    for x in infos:
        role.setdefault(x["kind"], []).append(x["path"])
    roles = {
        "idle": role["idle"][0],
        "claims_without_evidence": role["claims"][0],
        "prompt_injection": {"trial": role["injection"][0], "injected_lines": INJECTED_LINES},
        "partial_reward": role["partial"][0],
        "exception": role["timeout"][0],
        "matched_pairs": [[infos[a]["path"], infos[b]["path"]] for a, b in pairs],
        "trials": sorted(infos, key=lambda x: x["path"]),
    }
    (root / "roles.json").write_text(roles_text(roles), encoding="utf-8")
    return roles


def _assert_distinct_logs(root: Path) -> None:
    """Every trial's log content (ids and timings aside) must differ from every other trial's of the same task."""
    seen: dict[tuple[str, str], Path] = {}
    for log_path in sorted(root.glob("jobs/*/*/agent/claude-code.txt")):
        content = []
        for line in log_path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            msg = rec.get("message") or {}
            content.append(json.dumps(msg.get("content"), sort_keys=True))
        task_id = log_path.parents[1].name.split("__")[0]
        key = (task_id, hashlib.sha256("\n".join(content).encode()).hexdigest())
        if key in seen:
            raise SystemExit(f"demo generator produced identical logs: {seen[key]} and {log_path}")
        seen[key] = log_path


def roles_text(roles: dict) -> str:
    """Indented JSON with one line per list element (keeps the file small and diff-friendly)."""
    parts = []
    for k, v in roles.items():
        if isinstance(v, list):
            inner = ",\n".join("    " + json.dumps(x, ensure_ascii=False) for x in v)
            parts.append(f'  "{k}": [\n{inner}\n  ]')
        else:
            parts.append(f'  "{k}": ' + json.dumps(v, ensure_ascii=False))
    return "{\n" + ",\n".join(parts) + "\n}\n"



if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="Write the demo corpus (tasks/, jobs/, roles.json) from data/demo/content/.")
    ap.add_argument("--out", type=Path, default=HERE, help="output folder (default: data/demo)")
    out = ap.parse_args().out.resolve()
    roles = build(out)
    binary = [t for t in roles["trials"] if t["outcome"] in ("PASS", "FAIL")]
    print(f"wrote {len(roles['trials'])} trials ({len(binary)} binary) and "
          f"{len({t['task'] for t in roles['trials']})} tasks under {out}")
