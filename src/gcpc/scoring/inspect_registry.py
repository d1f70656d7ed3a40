"""What Inspect AI loads from gcpc (entry point `inspect_ai` in pyproject.toml): the `gcpc/gcpc` scorer and the
`gcpc` model API (`gcpc/heuristic`, the offline heuristic judge). Needs the optional extra `inspect`."""

from gcpc.llm.inspect_model import GcpcHeuristicAPI
from gcpc.scoring.inspect_scorer import gcpc

__all__ = ["GcpcHeuristicAPI", "gcpc"]
