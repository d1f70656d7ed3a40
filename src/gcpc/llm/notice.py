"""The words every output of the heuristic provider carries: the report's and the audit site's notice."""

from __future__ import annotations

NOT_AN_LLM = ("Some results below come from the offline `heuristic` provider (deterministic rules, model "
              "`gcpc-heuristic-v1`; docs/heuristic-provider.md). They exercise the pipeline; they are not findings "
              "about LLM judges. Reliability and judge-swap numbers of a deterministic provider are perfect by construction.")


def mentions_heuristic(identities: list[str]) -> bool:
    """Whether any 'provider/model' of a run is the heuristic provider's."""
    return any("heuristic" in who for who in identities)


NOT_AN_LLM_PROVIDERS = ("heuristic", "instant")
"""gcpc's offline providers: deterministic rules (heuristic) and a fixed-answer stand-in (instant), not language models."""
NOT_AN_LLM_MARK = "not an LLM"


def not_an_llm(identity: str) -> bool:
    """Whether a 'provider/model' identity is one of gcpc's offline providers (not a language model)."""
    return identity.split("/", 1)[0] in NOT_AN_LLM_PROVIDERS or "heuristic" in identity


def marked(identity: str) -> str:
    """The identity as a figure names it: 'heuristic/gcpc-heuristic-v1 (not an LLM)' for an offline provider."""
    return f"{identity} ({NOT_AN_LLM_MARK})" if identity and not_an_llm(identity) else identity
