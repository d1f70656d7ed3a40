"""Checklist synthesis: instruction + verifier in, gated and frozen checklist out.

The generator sees the task instruction and the verifier tests and nothing else; no trajectory,
outcome or reference solution can reach `synthesize_checklist` (its signature admits none).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gcpc.corpus.models import VerifierTest
from gcpc.io import sha256_text
from gcpc.llm import LLMClient, LLMRequest, request_identity, sampling_params
from gcpc.llm.prompts import PromptTemplate
from gcpc.llm.schemas import GeneratedChecklist
from gcpc.synthesis.gates import GateResult, check_items, failed_gate_kinds, resolve_test_ref
from gcpc.synthesis.models import ChecklistItem, Provenance, SynthesisAttempt

RULE_FILES = {
    "item_contract": "item_contract.md",
    "provenance": "provenance.md",
    "categories": "categories.md",
}


@dataclass(frozen=True)
class SynthesisSettings:
    min_items: int = 4
    max_items: int = 15
    max_regenerations: int = 3
    prompts_dir: Path = Path("prompts")

    @classmethod
    def from_params(cls, cfg: dict[str, Any]) -> SynthesisSettings:
        return cls(
            min_items=int(cfg.get("min_items", 4)),
            max_items=int(cfg.get("max_items", 15)),
            max_regenerations=int(cfg.get("max_regenerations", 3)),
            prompts_dir=Path(cfg.get("prompts_dir", "prompts")),
        )

    def template(self) -> PromptTemplate:
        rules = {name: self.prompts_dir / "rules" / fname for name, fname in RULE_FILES.items()}
        return PromptTemplate(self.prompts_dir / "synthesis" / "generator.jinja", rules)

    def rules_hash(self) -> str:
        texts = [(self.prompts_dir / "rules" / f).read_text(encoding="utf-8") for f in sorted(RULE_FILES.values())]
        return sha256_text("\n\x00\n".join(texts))


@dataclass
class SynthesisOutcome:
    items: list[ChecklistItem] | None
    attempts: list[SynthesisAttempt] = field(default_factory=list)
    provenance: Provenance | None = None
    failure: str | None = None


def build_request(
    instruction: str,
    tests: Sequence[VerifierTest],
    *,
    llm_cfg: dict[str, Any],
    settings: SynthesisSettings,
    template: PromptTemplate,
    previous: Sequence[GateResult] = (),
    previous_kinds: Sequence[str] = (),
) -> LLMRequest:
    test_view = [{"id": t.id, "source": t.source} for t in tests]
    limits = {"min_items": settings.min_items, "max_items": settings.max_items}
    messages = template.render(
        GeneratedChecklist,
        instruction=instruction,
        tests=test_view,
        previous_rejections=list(previous_kinds),
        rejection_messages=[g.message for g in previous if not g.passed],
        **limits,
    )
    provider, model = request_identity(llm_cfg)
    return LLMRequest(
        purpose="checklist",
        provider=provider,
        model=model,
        messages=messages,
        output_schema="GeneratedChecklist",
        json_schema=GeneratedChecklist.model_json_schema(),
        sampling=sampling_params(llm_cfg),
        template_hash=template.hash,
        inputs={"instruction": instruction, "tests": test_view, "limits": limits, "previous_rejections": list(previous_kinds)},
    )


def synthesize_checklist(
    instruction: str,
    tests: Sequence[VerifierTest],
    *,
    client: LLMClient,
    llm_cfg: dict[str, Any],
    settings: SynthesisSettings,
    label: tuple[str, str] = ("", ""),
) -> SynthesisOutcome:
    """Generate, gate, and regenerate until every gate passes or the attempt budget is spent."""
    template = settings.template()
    provider, model = request_identity(llm_cfg)
    provenance = Provenance(provider=provider, model=model, prompt_hash=template.hash, rules_hash=settings.rules_hash())
    outcome = SynthesisOutcome(items=None, provenance=provenance)
    previous: list[GateResult] = []
    kinds: list[str] = []
    for attempt in range(1, settings.max_regenerations + 1):
        request = build_request(instruction, tests, llm_cfg=llm_cfg, settings=settings, template=template,
                                previous=previous, previous_kinds=kinds)
        result = client.run_one(request, GeneratedChecklist)
        raw = [r.response_text for r in client.store.attempts(result.key)]
        gates: list[GateResult] = []
        if result.ok and result.parsed is not None:
            parsed = GeneratedChecklist.model_validate(result.parsed)
            gates = check_items(parsed.items, instruction, tests, min_items=settings.min_items, max_items=settings.max_items)
        accepted = result.ok and all(g.passed for g in gates)
        outcome.attempts.append(SynthesisAttempt(
            benchmark=label[0], task_id=label[1], attempt=attempt, request_key=result.key, prompt_hash=template.hash,
            previous_rejections=kinds, call_attempts=result.attempts, raw_responses=raw, parsed=result.parsed,
            error=result.error, gate_results=gates, accepted=accepted,
        ))
        if accepted:
            outcome.items = [
                ChecklistItem(item_id=f"i{i:02d}", text=it.text, quote=it.quote, route=it.route,
                              test_refs=[resolve_test_ref(r, tests) or r for r in it.test_refs], category=it.category)
                for i, it in enumerate(parsed.items, 1)
            ]
            return outcome
        if not result.ok:
            outcome.failure = f"no valid response after {result.attempts} call attempt(s): {result.error}"
            return outcome
        previous = gates
        # Feedback accumulates: a regeneration must not reintroduce what an earlier attempt was rejected for.
        kinds = sorted(set(kinds) | set(failed_gate_kinds(gates, len(parsed.items), settings.min_items)))
    outcome.failure = f"gates still failing after {settings.max_regenerations} generation attempt(s): {', '.join(kinds)}"
    return outcome
