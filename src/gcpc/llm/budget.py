"""Failure budget: a stage goes on past single failed requests, but not past many.

A refused or unanswerable request is recorded and its unit excluded with the reason, so one bad
request never blocks a stage. When the failed share exceeds the configured `failure_budget`
(default 5 %) something systematic is wrong (a prompt over the context window everywhere, a
schema the model cannot follow), and the stage exits non-zero naming the most common error and
one request key that shows it, after its outputs and call records are written.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence


class FailureBudgetExceeded(RuntimeError):
    """More requests failed than the stage's failure budget allows."""


def _shape(error: str) -> str:
    """An error with its request-specific numbers and ids blanked, so alike errors count together."""
    return re.sub(r"\b[0-9a-f]{12,}\b|\d+", "#", error)[:240]


def check_failure_budget(failures: Sequence[tuple[str | None, str | None]], total: int, budget: float, *, stage: str) -> str:
    """`failures`: (request key, error) per failed unit, of `total` units that made requests.
    Returns a one-line summary; raises FailureBudgetExceeded when the failed share is over `budget`."""
    n = len(failures)
    summary = f"{stage}: {n}/{total} requests failed (budget {budget:.0%})"
    if not n:
        return summary
    shapes = Counter(_shape(err or "unknown error") for _, err in failures)
    shape, count = sorted(shapes.items(), key=lambda kv: (-kv[1], kv[0]))[0]
    key, error = next((k, e) for k, e in failures if _shape(e or "unknown error") == shape)
    detail = f"most common error ({count} of {n}): {error or 'unknown error'} - e.g. request {key or '(none)'}"
    if total and n / total > budget:
        raise FailureBudgetExceeded(f"{summary}: over budget; {detail}")
    return f"{summary}; {detail}"
