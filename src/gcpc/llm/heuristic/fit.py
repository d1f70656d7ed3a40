"""The heuristic provider's answer, fitted to the JSON schema its request carries.

The rules in this package build answers from the request's inputs and know nothing of the limits
a request's schema sets (`gcpc.llm.schemas`: how long a TICK question or a reason may be, how many
evidence entries). A real provider is held to that schema (constrained decoding, or the client's
validation); so is this one: every string over its `maxLength` is shortened at a word boundary and
ends in "…", every array over its `maxItems` keeps its first entries, every number outside
`minimum` / `maximum` is clamped. Nothing else changes, so an answer that already fits (every
answer on the demo corpus) is returned as it was. What the fit cannot repair (a missing field,
too few entries) is left for the client's schema check to report as invalid output.
"""

from __future__ import annotations

from typing import Any

ELLIPSIS = "…"


def shorten(text: str, limit: int) -> str:
    """`text` in at most `limit` characters: cut at the last space of the allowed length (when that
    keeps at least half of it), trailing space removed, "…" added."""
    if len(text) <= limit:
        return text
    if limit <= 1:
        return text[:limit]
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space >= (limit - 1) // 2:
        cut = cut[:space]
    return cut.rstrip() + ELLIPSIS


def fit_to_schema(value: Any, schema: dict[str, Any] | None) -> Any:
    """`value` with every bound of `schema` (maxLength, maxItems, minimum, maximum) applied, recursively."""
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        return {k: fit_to_schema(v, props.get(k)) for k, v in value.items()}
    if isinstance(value, list):
        top = schema.get("maxItems")
        kept = value if top is None else value[: int(top)]
        return [fit_to_schema(v, schema.get("items")) for v in kept]
    if isinstance(value, str):
        top = schema.get("maxLength")
        return value if top is None else shorten(value, int(top))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        lo, hi = schema.get("minimum"), schema.get("maximum")
        if lo is not None and value < lo:
            return lo
        if hi is not None and value > hi:
            return hi
    return value
