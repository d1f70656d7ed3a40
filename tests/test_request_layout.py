"""The judging layout (prompts/judging/layout): one system block, the log with the cache marker, then the
arm's part; so every arm, TICK question and pass of a trajectory share one cached prefix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gcpc.corpus.render import render_log
from gcpc.judging.spec import ArmSpec
from gcpc.judging.stage import judge_arm
from gcpc.llm.base import LLMRequest, Message, cached_prefix
from gcpc.llm.estimate import RecordingClient, cache_identity, price_arms, summarize
from gcpc.llm.prompts import LayoutTemplate
from gcpc.llm.providers.anthropic_provider import AnthropicProvider
from gcpc.llm.providers.openai_provider import OpenAIProvider
from gcpc.llm.settings import LLMSettings
from tests.test_judging_arms import CHECKLIST, EVENTS, MAX_CHARS, TASK, params_with, single_arm_configs, trajectory

ROOT = Path(__file__).resolve().parents[1]
MODEL_ARMS = ("gcpc", "gcpc_gate", "generic", "holistic", "tick", "tick_adapted")
PRICES = {"input_per_mtok": 1.0, "output_per_mtok": 5.0, "cache_write_per_mtok": 1.25, "cache_read_per_mtok": 0.1,
          "batch_discount": 0.5}


def requests_of(arm_name: str, llm: dict | None = None, traj=None) -> list[LLMRequest]:
    params = params_with(single_arm_configs(), llm)
    arm = ArmSpec.from_params(arm_name, params["arm"][arm_name], params["judging"])
    client = RecordingClient(max_questions=3)
    judge_arm(arm, [traj or trajectory(EVENTS)], llm_cfg=params["judge"], client=client,  # type: ignore[arg-type]
              checklists={("bench", "totals"): CHECKLIST}, tasks={("bench", "totals"): TASK})
    return [r for r in client.requests if r.purpose.startswith("judgment:")]


def test_every_model_arm_sends_the_same_cached_prefix_ending_with_the_log():
    log = render_log(EVENTS, max_chars=MAX_CHARS)
    prefixes = {}
    for name in MODEL_ARMS:
        reqs = requests_of(name)
        assert reqs, name
        for r in reqs:
            prefix = cached_prefix(r.messages)
            assert [m.role for m in prefix] == ["system", "user"], name
            assert prefix[-1].cache_prefix and prefix[-1].content.endswith(log.strip()), name
            after = r.messages[len(prefix):]
            assert len(after) == 1 and not after[0].cache_prefix, name
            # the arm's rules and its (per-request) reply schema come after the log, never before it
            assert json.dumps(r.json_schema, sort_keys=True) in after[0].content, name
            assert json.dumps(r.json_schema, sort_keys=True) not in "".join(m.content for m in prefix), name
            prefixes[(name, r.key)] = tuple(m.model_dump_json() for m in prefix)
    assert len(set(prefixes.values())) == 1, "every arm and TICK question must share one cached prefix"


def test_checklist_and_question_follow_the_log():
    gcpc = requests_of("gcpc")[0].messages[-1].content
    assert "[i01] Save their sum" in gcpc
    for q, r in enumerate(requests_of("tick"), 1):
        assert r.messages[-1].content.rstrip().endswith(f"({q})"), "the TICK question is the last thing sent"


def test_layout_hash_covers_the_layout_files(tmp_path):
    layout = tmp_path / "layout"
    layout.mkdir()
    for name in ("system.md", "log.jinja"):
        (layout / name).write_text((ROOT / "prompts/judging/layout" / name).read_text())
    a = LayoutTemplate(ROOT / "prompts/judging/gcpc.jinja", layout).hash
    (layout / "system.md").write_text("Another role.\n")
    assert LayoutTemplate(ROOT / "prompts/judging/gcpc.jinja", layout).hash != a


def test_layout_errors_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="system.md"):
        LayoutTemplate(ROOT / "prompts/judging/gcpc.jinja", tmp_path)
    two_part = tmp_path / "old.jinja"
    two_part.write_text("rules\n===\n{{ log }}\n")
    with pytest.raises(ValueError, match="old.jinja"):
        LayoutTemplate(two_part, ROOT / "prompts/judging/layout")
    with pytest.raises(TypeError, match="log"):
        LayoutTemplate(ROOT / "prompts/judging/holistic.jinja", ROOT / "prompts/judging/layout").render({}, instruction="x")


def wire_settings(provider: str) -> LLMSettings:
    return LLMSettings.from_cfg({"provider": provider, "model": "m", "max_tokens": 100, "prompt_cache_key": provider == "openai",
                                 "api_key_env": "GCPC_TEST_KEY"}, where="test")


def test_anthropic_payload_one_user_turn_with_the_breakpoint_on_the_log(monkeypatch):
    monkeypatch.setenv("GCPC_TEST_KEY", "k")
    request = requests_of("gcpc", {"provider": "anthropic", "model": "m", "max_tokens": 100})[0]
    body = AnthropicProvider(wire_settings("anthropic")).payload(request)
    assert [b.get("cache_control") for b in body["system"]] == [None]
    assert [t["role"] for t in body["messages"]] == ["user"]
    blocks = body["messages"][0]["content"]
    assert [b["text"] for b in blocks] == [m.content for m in request.messages[1:]]
    assert [("cache_control" in b) for b in blocks] == [True, False]


def test_openai_payload_merges_the_user_turn_and_keys_the_cache_on_system_and_log(monkeypatch):
    monkeypatch.setenv("GCPC_TEST_KEY", "k")
    llm = {"provider": "openai", "model": "m", "max_tokens": 100}
    provider = OpenAIProvider(wire_settings("openai"))
    bodies = [provider.payload(r) for name in ("gcpc", "holistic", "tick") for r in requests_of(name, llm)]
    for body in bodies:
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
        assert body["messages"][1]["content"].startswith("## Execution log\n")
    assert len({b["prompt_cache_key"] for b in bodies}) == 1


def synthetic(prefix: str, rest: str, schema: dict, mode: str | None) -> LLMRequest:
    return LLMRequest(purpose="judgment:x", provider="anthropic", model="m", output_schema="HolisticJudgment",
                      json_schema=schema, sampling={"structured_output": mode} if mode else {}, template_hash="t",
                      messages=[Message(role="system", content="role"), Message(role="user", content=prefix, cache_prefix=True),
                                Message(role="user", content=rest)])


@pytest.mark.parametrize("mode, shared", [("prompt", True), (None, False), ("json_schema", False)])
def test_estimate_shares_a_log_across_arms_unless_a_native_schema_splits_the_cache(mode, shared):
    log = "line of log output\n" * 400
    a = [synthetic(log, "arm a part", {"title": "A"}, mode)]
    b = [synthetic(log, f"arm b question {n}", {"title": "B"}, mode) for n in range(3)]
    distinct: dict = {}
    arms = {"a": summarize(a, distinct), "b": summarize(b, distinct), "a_again": summarize(a, distinct)}
    assert len(distinct) == 4, "an arm that sends another arm's request adds no call"
    cfg = {"prices": PRICES, "min_cacheable_tokens": 100}
    out = price_arms(arms, distinct, cfg)
    p = distinct[arms["a"][0]].prefix_tokens
    if shared:
        assert len({cache_identity(r) for r in a + b}) == 1
        # one write and three reads of the prefix, split evenly over the four requests
        assert out["a"]["cache_write_tokens"] == round(p / 4) and out["a"]["cache_read_tokens"] == round(3 * p / 4)
        assert out["b"]["cache_write_tokens"] == round(3 * p / 4)
    else:
        assert cache_identity(a[0]) != cache_identity(b[0])
        assert out["a"]["cache_write_tokens"] == p and out["a"]["cache_read_tokens"] == 0
        assert (out["b"]["cache_write_tokens"], out["b"]["cache_read_tokens"]) == (p, 2 * p)  # one write, two reads
    assert out["a_again"] == out["a"]
    a_cost = out["a"]["cost"]
    tin, tout = out["a"]["input_tokens"], out["a"]["output_tokens"]
    w, r = out["a"]["cache_write_tokens"], out["a"]["cache_read_tokens"]
    expect = ((tin - w - r) * 1.0 + w * 1.25 + r * 0.1 + tout * 5.0) / 1e6 / 2
    assert a_cost["batch_cached"] == pytest.approx(expect, rel=1e-3)
