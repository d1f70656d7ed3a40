"""The whole-command price (gcpc.analysis.cost, issue 36 item 1) against what the stages send.

Every LLM stage runs against a local fake OpenAI server (tests/fakeservers), which reports usage as
(characters of the system and user messages) // 4; the estimate, counting with the same chars/4 rule, must be
within 5 % of the input tokens the server saw in every stage, with the same number of calls (the judge answers Yes
citing a number of the log, so the controls perturb it and judge the perturbed logs). Output tokens are
assumptions per response type (the fake's replies are not a model's), so they are not compared. TICK's questions
come from its stored question calls here (before them, `max_questions` are assumed: `fresh`).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from fakeservers import FakeOpenAI, default_responder
from fakeservers.base import ITEM_LINE
from fakeservers.openai_server import _text
from judge_corpus import ingest_and_freeze

import gcpc.llm.tokens as llm_tokens
from gcpc.analysis.controls import controls
from gcpc.analysis.cost import command_estimate, print_estimate
from gcpc.analysis.rejudge import rejudge
from gcpc.corpus.models import Task
from gcpc.io import read_models
from gcpc.judging.stage import judge_stage
from gcpc.synthesis.audit import AuditSettings, run_audit
from gcpc.synthesis.generate import SynthesisSettings
from gcpc.synthesis.models import Checklist
from gcpc.synthesis.stage import synthesize_all

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-test-COST-3636"
ARMS = ("gcpc", "gcpc_gate", "generic", "holistic", "tick")
BLOCK = re.compile(r"^\[(\d+)\] (TOOL_OUTPUT|FILE_CONTENT)[^\n]*:\n(.*?)(?=^\[\d+\] [A-Z_]+|\Z)", re.M | re.S)
NUMBER = re.compile(r"(?<![\w.])\d{2,}(?![\w.])")


def llm(server: FakeOpenAI, model: str) -> dict[str, Any]:
    return {"provider": "openai", "model": model, "temperature": 1.0, "seed": 0, "max_tokens": 2048, "concurrency": 4,
            "timeout_s": 10, "base_url": server.url + "/v1", "max_attempts": 3,
            "retry": {"max_retries": 2, "backoff_base_s": 0.01, "backoff_max_s": 0.02},
            "prices": {"input_per_mtok": 1.0, "output_per_mtok": 4.0, "cache_read_per_mtok": 0.1}, "min_cacheable_tokens": 256}


def responder_for(tasks: list[Task]):
    """The default fake answers, but a checklist whose item quotes its task's instruction (so every gate passes at the
    first attempt) and an audit that finds no requirement (a valid answer for every scheme)."""
    def respond(ctx) -> str:
        if ctx.schema_name == "GeneratedChecklist":
            task = next(t for t in tasks if t.instruction.strip() and t.instruction.strip()[:60] in ctx.user)
            quote = re.split(r"[.\n]", task.instruction.strip())[0].strip()
            return json.dumps({"items": [{"text": f"The agent does this: {quote}", "quote": quote, "route": "judge",
                                          "test_refs": []}]})
        if ctx.schema_name is None:  # the fake names no CategoryAudit schema: the audit is the one request it cannot name
            return json.dumps({"requirements": []})
        if ctx.schema_name == "ChecklistJudgment":  # Yes, citing a number the log shows: the controls then perturb it
            cited = next(({"event_index": int(m.group(1)), "quote": n.group(0)} for m in BLOCK.finditer(ctx.user)
                          if (n := NUMBER.search(m.group(3)))), None)
            if cited is not None:
                return json.dumps({"verdicts": [{"item_id": i, "label": "Yes", "evidence": [cited], "reason": "fake"}
                                                for i in ITEM_LINE.findall(ctx.system + "\n" + ctx.user)]})
        return default_responder(ctx)
    return respond


def chars4(text: str) -> int:
    return math.ceil(len(text) / 4)


def seen_tokens(server: FakeOpenAI, since: int) -> tuple[int, int]:
    """(model calls, input tokens as the server reported them) since request number `since`."""
    calls = tokens = 0
    for r in server.requests[since:]:
        if not r["route"].endswith("/chat/completions"):
            continue
        msgs = r["body"].get("messages", [])
        system = "\n".join(_text(m.get("content")) for m in msgs if m.get("role") in ("system", "developer"))
        user = "\n".join(_text(m.get("content")) for m in msgs if m.get("role") == "user")
        calls += 1
        tokens += max(1, (len(system) + len(user)) // 4)
    return calls, tokens


def test_whole_command_estimate_is_within_5_percent_of_every_stage(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    processed = tmp_path / "processed"
    ingest, synth, judge_root = processed / "ingest", processed / "synthesize", processed / "judge"
    ingest_and_freeze(ingest, synth)
    tasks = read_models(ingest / "tasks.jsonl", Task)
    settings = SynthesisSettings.from_params({"prompts_dir": str(ROOT / "prompts"), "max_regenerations": 3})
    audit = AuditSettings.from_params({"prompts_dir": str(ROOT / "prompts")})
    measured: dict[str, tuple[int, int]] = {}
    with FakeOpenAI(responder=responder_for(tasks)) as server:
        gen, judge, swap = llm(server, "gpt-fake-gen"), llm(server, "gpt-fake-judge"), llm(server, "gpt-fake-swap")
        params = {"generator": gen, "judge": judge, "judging": {"max_event_chars": 4000, "layout": str(ROOT / "prompts/judging/layout")},
                  "synthesis": {"prompts_dir": str(ROOT / "prompts"), "max_regenerations": 3},
                  "scoring": {}, "arm": {},
                  "analysis": {"primary_arm": "gcpc",
                               "rejudge": {"arm": "gcpc", "passes": 3, "sample": {"size": 7, "rule": "stratified", "seed": 0},
                                           "swap_judge": swap},
                               "controls": {"arms": ["gcpc"], "max_items": 500, "seed": 0, "scope": "all_events"}}}
        for name in ARMS:
            spec = json.loads(json.dumps((__import__("yaml").safe_load((ROOT / "params.yaml").read_text()))["arm"][name]))
            spec["template"] = str(ROOT / spec["template"])
            params["arm"][name] = spec

        def stage(name: str, fn) -> None:
            before = len(server.requests)
            fn()
            calls, tokens = seen_tokens(server, before)
            old = measured.get(name, (0, 0))
            measured[name] = (old[0] + calls, old[1] + tokens)

        stage("synthesize", lambda: synthesize_all(tasks, gen, settings, synth, progress=False))
        checklists = read_models(synth / "checklists.jsonl", Checklist)
        assert all(c.status == "frozen" and c.attempts == 1 for c in checklists)  # no regeneration: first attempts only
        stage("audit", lambda: run_audit(tasks, checklists, gen, audit, processed / "audit", progress=False))
        for name in ARMS:
            stage("judge", lambda name=name: judge_stage(params, name, ingest, synth, judge_root / name, progress=False))
        stage("rejudge+swap", lambda: rejudge(params, ingest, synth, judge_root, processed / "rejudge", progress=False))
        stage("controls", lambda: controls(params, ingest, synth, judge_root, processed / "controls", progress=False))

    monkeypatch.setattr(llm_tokens, "count_tokens", chars4)  # the fake server's rule, not cl100k
    monkeypatch.setattr(llm_tokens, "_counted", {})
    est = command_estimate(params, ingest, synth, judge_root, processed, count_stored=False)
    s = est["stages"]
    got = {"synthesize": (s["synthesize"]["parts"]["first attempts"]["requests"], s["synthesize"]["parts"]["first attempts"]["input_tokens"]),
           "audit": (s["audit"]["total"]["requests"], s["audit"]["total"]["input_tokens"]),
           "judge": (s["judge"]["total"]["requests"], s["judge"]["total"]["input_tokens"]),
           "rejudge+swap": (s["rejudge"]["total"]["requests"] + s["swap"]["total"]["requests"],
                            s["rejudge"]["total"]["input_tokens"] + s["swap"]["total"]["input_tokens"]),
           "controls": (s["controls"]["total"]["requests"], s["controls"]["total"]["input_tokens"])}
    for name, (calls, tokens) in measured.items():
        print(f"{name}: {calls} calls, {tokens} input tokens seen by the server; estimate {got[name][0]} requests, "
              f"{got[name][1]} tokens ({got[name][1] / tokens:.4f})")
        assert calls > 0, name
        assert got[name][0] == calls, (name, got[name], measured[name])
        assert got[name][1] == pytest.approx(tokens, rel=0.05), (name, got[name], measured[name])
    # the bound: regenerations add up to max_regenerations - 1 attempts per task, never fewer tokens than the first
    regen = s["synthesize"]["parts"]["regenerations (bound)"]
    assert regen["requests"] == 2 * len(tasks) and regen["input_tokens"] > 2 * got["synthesize"][1]
    assert s["rejudge"]["sample"]["n_selected"] == 7 and s["rejudge"]["parts"]["pass 2"]["requests"] == 7
    # the controls' evidence replacements were priced from the judgments, one request per perturbed Yes item
    assert s["controls"]["parts"]["gcpc: evidence replacement"]["requests"] > 10
    assert est["total"]["cost"]["sync"] > 0
    # before the question calls (fresh), TICK's questions are assumed: max_questions per task, not the fake's two
    from gcpc.judging.tick_arm import LIMITS

    before = command_estimate(params, ingest, synth, judge_root, processed, fresh=True)["stages"]["judge"]["parts"]["tick"]
    n_traj, n_tasks = est["trajectories"], len(tasks)
    assert before["requests"] == n_tasks + n_traj * LIMITS["max_questions"] != s["judge"]["parts"]["tick"]["requests"]

    # the same estimate counting stored calls: every call the run made is in a call store, so nothing is left to pay
    # but the regeneration bound (never sent: every first attempt passed) and the controls' perturbations (none here)
    stored = command_estimate(params, ingest, synth, judge_root, processed)
    for name in ("audit", "judge", "rejudge", "swap", "controls"):
        t = stored["stages"][name]["total"]
        assert t["stored"] == t["requests_in_all"] and t["requests"] == 0 and t["cost"]["sync"] == 0, name
    assert stored["stages"]["synthesize"]["parts"]["first attempts"]["stored"] == len(tasks)
    print_estimate(stored)
