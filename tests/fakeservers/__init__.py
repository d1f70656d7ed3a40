"""Local fake LLM servers (Anthropic Messages + Batches, OpenAI Chat Completions + Files + Batches).

They run on 127.0.0.1 and are driven by the real `anthropic` and `openai` SDKs in the tests and
in bench/bench_llm_throughput.py. `python tests/fakeservers --provider openai --latency 0.2`
serves one from the command line (it prints its base URL).
"""

from fakeservers.anthropic_server import FakeAnthropic
from fakeservers.base import Ctx, Fault, FakeLLMServer, default_responder
from fakeservers.openai_server import FakeOpenAI

SERVERS = {"anthropic": FakeAnthropic, "openai": FakeOpenAI}

__all__ = ["FakeAnthropic", "FakeOpenAI", "FakeLLMServer", "Fault", "Ctx", "default_responder", "SERVERS"]
