"""The judge request the provider tests send, in a module of its own: worker processes that the tests start
import it without importing a test module (test_llm_providers.py pulls in pytest and the anthropic SDK, seconds
of start-up per worker that an openai worker never uses)."""

from __future__ import annotations

from gcpc.llm import LLMRequest, Message
from gcpc.llm.schemas import ChecklistJudgment


def judge_req(name: str, n: int = 0, sampling: dict | None = None) -> LLMRequest:
    return LLMRequest(
        purpose="judgment:test", provider=name, model="m-1",
        messages=[Message(role="system", content="Rules.\n## Checklist\n- [i01] wrote out.txt\n- [i02] ran tests", cache_prefix=True),
                  Message(role="user", content=f"## Execution log\n[0] TOOL_OUTPUT trajectory {n}")],
        output_schema="ChecklistJudgment", json_schema=ChecklistJudgment.model_json_schema(),
        sampling=sampling if sampling is not None else ({"max_tokens": 256, "temperature": 0.0} | ({"seed": 0} if name == "openai" else {})),
        template_hash="t")
