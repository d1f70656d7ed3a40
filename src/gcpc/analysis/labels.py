"""Arm × score labels in words for figures and plots ("GCPC (log only)", "GCPC + official outcome",
"Holistic 0–10"), instead of internal ids such as `holistic:gcpc_plain`.

The word comes from the arm's kind (the arm registry, not its id); when two arms of the figure
share a word (e.g. `gcpc` and the gated `gcpc_gate`), every one but the primary arm carries its
id in brackets so the reader can still tell them apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

KIND_WORDS = {"checklist": "GCPC", "generic": "Generic", "tick": "TICK", "holistic": "Holistic 0–10"}
SCORE_WORDS = {"gcpc_plain": "(log only)", "gcpc_outcome": "+ official outcome", "gcpc_per_test": "+ per-test results"}


class Labeler:
    def __init__(self, kinds: Mapping[str, str], primary: str | None = None):
        self.kinds = {str(k): str(v) for k, v in kinds.items()}
        self.primary = primary
        by_word: dict[str, list[str]] = {}
        for arm in self.kinds:
            by_word.setdefault(self._word(arm), []).append(arm)
        self._shared = {a for arms in by_word.values() if len(arms) > 1 for a in arms}

    def _word(self, arm: str) -> str:
        base = arm.split(":", 1)[0]
        return KIND_WORDS.get(self.kinds.get(base, self.kinds.get(arm, "")), base)

    def arm(self, arm: str) -> str:
        base, _, variant = arm.partition(":")
        word = self._word(base)
        if base in self._shared and base != self.primary:
            word += f" [{base}]"
        return f"{word} ({variant})" if variant else word

    def __call__(self, arm: str, score: str) -> str:
        base = arm.split(":", 1)[0]
        if self.kinds.get(base) == "holistic" and score == "gcpc_plain":
            return self.arm(arm)  # the 0-10 score rescaled; log only by construction
        return f"{self.arm(arm)} {SCORE_WORDS.get(score, score)}"

    def method(self, label: str) -> str:
        """`arm:score` (as rq1 writes deltas) in words."""
        arm, _, score = label.rpartition(":")
        return self(arm, score) if arm else label


def labeler_for(kinds: Mapping[str, str] | None, arms: Iterable[str], primary: str | None = None) -> Labeler:
    """A labeler; arms missing from `kinds` (older results) are labelled by their id."""
    kinds = dict(kinds or {})
    return Labeler({a: kinds.get(a.split(":", 1)[0], "") for a in arms} | kinds, primary)
