"""The offline heuristic judge behind Inspect's model API: `--model-role grader=gcpc/heuristic`.

Inspect's models answer chat messages; gcpc's heuristic provider answers a gcpc `LLMRequest` from its
structured inputs (it is rules, not a language model). gcpc's Inspect scorer therefore registers each
request here (`expect`) before it asks its judge, and marks its prompt with the request key in the
last message's metadata; this model API answers a marked prompt with `HeuristicProvider`, exactly
as the pipeline's judge stage would. Anything else (a prompt not from gcpc's scorer in this process)
is refused with the reason. Needs the optional extra `inspect`.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import ChatMessage, GenerateConfig, ModelAPI, ModelOutput, modelapi
from inspect_ai.tool import ToolChoice, ToolInfo

from gcpc.llm.base import LLMRequest
from gcpc.llm.heuristic import HeuristicProvider

REQUEST_KEY = "gcpc_request_key"
"""Metadata key of the message that carries the gcpc request key."""
MODEL = "heuristic"

_EXPECTED: dict[str, LLMRequest] = {}


def expect(request: LLMRequest) -> str:
    """Make `request` answerable by `gcpc/heuristic` in this process; returns its key."""
    _EXPECTED[request.key] = request
    return request.key


def request_of(messages: list[ChatMessage]) -> LLMRequest:
    key = next(((m.metadata or {}).get(REQUEST_KEY) for m in reversed(messages) if (m.metadata or {}).get(REQUEST_KEY)),
               None)
    if key is None:
        raise ValueError("gcpc/heuristic answers only the judge prompts of gcpc's Inspect scorer (no gcpc request key in "
                         "the messages); it is a rule-based stand-in, not a language model")
    if key not in _EXPECTED:
        raise ValueError(f"gcpc/heuristic: request {key} was not registered by gcpc's scorer in this process")
    return _EXPECTED[key]


@modelapi(name="gcpc")
class GcpcHeuristicAPI(ModelAPI):
    """`gcpc/heuristic`: answers gcpc scorer requests with the heuristic provider (deterministic, no network)."""

    def __init__(self, model_name: str, base_url: str | None = None, api_key: str | None = None,
                 config: GenerateConfig = GenerateConfig(), **model_args: Any) -> None:
        super().__init__(model_name, base_url, api_key, [], config)
        if model_name != MODEL:
            raise ValueError(f"gcpc model API: unknown model {model_name!r} (only gcpc/{MODEL})")
        self._provider = HeuristicProvider()

    async def generate(self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice,
                       config: GenerateConfig) -> ModelOutput:
        raw = self._provider.complete(request_of(input))
        return ModelOutput.from_content(model=f"gcpc/{MODEL}", content=raw.text)

    def max_connections(self) -> int:
        return 1
