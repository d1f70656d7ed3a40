"""The words every output of the heuristic provider carries: the report's and the audit site's notice."""

from __future__ import annotations

NOT_AN_LLM = ("Some results below come from the offline `heuristic` provider (deterministic rules, model "
              "`gcpc-heuristic-v1`; docs/heuristic-provider.md). They exercise the pipeline; they are not findings "
              "about LLM judges. Reliability and judge-swap numbers of a deterministic provider are perfect by construction.")


def mentions_heuristic(identities: list[str]) -> bool:
    """Whether any 'provider/model' of a run is the heuristic provider's."""
    return any("heuristic" in who for who in identities)
