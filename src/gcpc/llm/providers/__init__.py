"""Real model providers behind the `Provider` interface (imported lazily: the SDKs load only when used)."""

from __future__ import annotations

from gcpc.llm.settings import LLMSettings


def make_remote(settings: LLMSettings):  # noqa: ANN201 - AnthropicProvider | OpenAIProvider
    if settings.provider == "anthropic":
        from gcpc.llm.providers.anthropic_provider import AnthropicProvider

        return AnthropicProvider(settings)
    if settings.provider == "openai":
        from gcpc.llm.providers.openai_provider import OpenAIProvider

        return OpenAIProvider(settings)
    raise ValueError(f"not a remote provider: {settings.provider}")
