"""Issue 30, item 4: a judge view fitted in the server's own tokens. With `tokenize_endpoint` the rendered view is
counted by the server's tokenizer (llama-cpp-python's /extras/tokenize, llama-server's and vLLM's /tokenize),
each distinct text once, against the whole window less the answer; without it, cl100k and `context_margin`."""

from __future__ import annotations

import socket

import pytest

from fakeservers import FakeOpenAI
from gcpc.corpus.models import Event, EventKind, SourceRef
from gcpc.judging.spec import fit_view
from gcpc.llm.base import Message
from gcpc.llm.settings import LLMSettings
from gcpc.llm.tokens import TEMPLATE_TOKENS_PER_MESSAGE, ServerTokenCounter, count_tokens, server_token_counter


def _events(sizes: list[int]) -> list[Event]:
    return [Event(index=n, kind=EventKind.TOOL_OUTPUT, text=(f"out{n} " * size)[:size], tool="Bash",
                  source=SourceRef(path="log", line=n + 1)) for n, size in enumerate(sizes)]


def _render(log: str) -> list[Message]:
    return [Message(role="system", content="You judge."), Message(role="user", content=log)]


@pytest.mark.parametrize("kind", ["llama-cpp-python", "llama-server", "vllm"])
def test_each_server_kind_is_asked_on_its_route_and_each_text_once(kind):
    with FakeOpenAI() as server:
        counter = ServerTokenCounter(server.url + "/v1", kind, "m")
        assert counter.count("abcdefg") == 3 and counter.count("abcdefg") == 3 and counter.count("ab") == 1
        assert server.route_calls.get("tokenize") == 2  # the repeated text was not sent again
        assert counter.url.endswith("/extras/tokenize" if kind == "llama-cpp-python" else "/tokenize")


def test_view_is_fitted_in_the_servers_tokens_without_the_margin():
    events = _events([300, 3000, 3900])
    with FakeOpenAI() as server:
        cfg = {"provider": "openai", "model": "m", "base_url": server.url + "/v1", "tokenize_endpoint": "llama-cpp-python",
               "context_window": 2000, "context_margin": 0.25, "max_tokens": 200}
        log, _, messages, cut = fit_view(events, 4000, cfg, _render)
        asked = server.route_calls["tokenize"]
        assert cut is not None and cut["tokens_after"] <= 2000 - 200 < cut["tokens_before"]
        # the fake tokenizer: a token per 3 characters, plus the template's per message; no margin
        expected = sum(-(-len(m.content) // 3) + TEMPLATE_TOKENS_PER_MESSAGE for m in messages)
        assert cut["tokens_after"] == expected
        # the largest per-event cut that fits: one character more would not
        bigger = fit_view(events, cut["event_cap_chars"] + 1, dict(cfg, context_window=None), _render)[2]
        assert sum(-(-len(m.content) // 3) + TEMPLATE_TOKENS_PER_MESSAGE for m in bigger) > 2000 - 200
        # the same view again: every text is in the counter's memo, nothing is asked
        assert fit_view(events, 4000, cfg, _render)[0] == log and server.route_calls["tokenize"] == asked
    # without the endpoint: cl100k counts against the window less the margin
    plain = {k: v for k, v in cfg.items() if k != "tokenize_endpoint"}
    _, _, msgs, cut_plain = fit_view(events, 4000, plain, _render)
    assert cut_plain["tokens_after"] == sum(count_tokens(m.content) for m in msgs) <= int(2000 * 0.75) - 200


def test_unreachable_tokenizer_names_the_setting():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = {"provider": "openai", "model": "m", "base_url": f"http://127.0.0.1:{port}/v1", "tokenize_endpoint": "llama-server",
           "context_window": 500, "max_tokens": 100, "timeout_s": 5}
    with pytest.raises(RuntimeError, match="tokenize_endpoint 'llama-server'.*failed"):
        fit_view(_events([3000]), 4000, cfg, _render)


def test_setting_is_validated():
    assert LLMSettings.from_cfg({"provider": "openai", "model": "m", "tokenize_endpoint": "vllm"}).tokenize_endpoint == "vllm"
    with pytest.raises(ValueError, match="tokenize_endpoint"):
        LLMSettings.from_cfg({"provider": "openai", "model": "m", "tokenize_endpoint": "sglang"})
    assert server_token_counter({"provider": "openai"}) is None
    with pytest.raises(ValueError, match="needs base_url"):
        server_token_counter({"tokenize_endpoint": "vllm"})
