"""Category audit: does the five-category scheme cover what tasks ask for, and does the checklist?

For every task and every scheme, one LLM request (through the same LLMClient and call store as
everything else; response schema `CategoryAudit`) lists the requirements the instruction states,
maps each to a category of the scheme or `none`, and names the checklist items that check it.

  * scheme coverage = requirements mapped to some category / requirements (pooled over tasks);
  * item coverage   = requirements some frozen checklist item checks / requirements of frozen tasks.

Falsification controls run the identical audit with other schemes (prompts/audit/schemes/): a
reduced scheme (definitions removed: coverage must drop), an irrelevant scheme (another domain:
coverage must collapse) and a name-permuted scheme (names shuffled, definitions kept: coverage must
hold if categories are assigned by definition). For a control, agreement with the full scheme is
reported over the requirements the full scheme covers (matched per task by quote), both by name
(the control answers the same category name) and by definition (the control's category has the
same definition text as the full scheme's category).

`python -m gcpc.synthesis.audit` audits the pipeline's corpus (ingest + synthesize outputs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from gcpc.corpus.models import Task
from gcpc.io import write_json, write_jsonl, write_text
from gcpc.llm import LLMClient, LLMRequest, llm_session, request_identity, sampling_params
from gcpc.llm.prompts import PromptTemplate
from gcpc.llm.schemas import category_audit_schema, fit_schema_limits
from gcpc.llm.settings import prompt_schema
from gcpc.synthesis.audit_schema import NONE, CategoryAudit
from gcpc.synthesis.gates import normalize_ws, quote_in_instruction
from gcpc.synthesis.models import Checklist
from gcpc.synthesis.scheme import CategoryScheme, read_scheme

AUDIT_TEMPLATE = "audit/audit.jinja"
DEFAULT_SCHEMES = {
    "full": "audit/schemes/full.md",
    "reduced": "audit/schemes/reduced.md",
    "irrelevant": "audit/schemes/irrelevant.md",
    "permuted": "audit/schemes/permuted.md",
}
"""Scheme name -> file under prompts_dir. 'full' is the paper's five-category scheme and the reference;
synthesis never sees any of them (categories are assigned here only)."""


@dataclass(frozen=True)
class AuditSettings:
    prompts_dir: Path = Path("prompts")
    schemes: tuple[tuple[str, str], ...] = tuple(DEFAULT_SCHEMES.items())

    @classmethod
    def from_params(cls, synthesis_cfg: dict[str, Any]) -> AuditSettings:
        cfg = synthesis_cfg.get("audit", {}) or {}
        schemes = cfg.get("schemes", DEFAULT_SCHEMES)
        if "full" not in schemes:
            raise ValueError("params.yaml: synthesis.audit.schemes needs a 'full' scheme (the reference)")
        return cls(prompts_dir=Path(synthesis_cfg.get("prompts_dir", "prompts")), schemes=tuple(schemes.items()))

    def scheme_path(self, name: str) -> Path:
        return self.prompts_dir / dict(self.schemes)[name]

    def template_files(self) -> list[Path]:
        """Every file the audit prompts are rendered from (deps of the audit stage)."""
        return [self.prompts_dir / AUDIT_TEMPLATE, *(self.prompts_dir / p for _, p in self.schemes)]

    def load(self) -> list[tuple[CategoryScheme, PromptTemplate]]:
        out = []
        for name, rel in self.schemes:
            path = self.prompts_dir / rel
            out.append((read_scheme(path, name=name), PromptTemplate(self.prompts_dir / AUDIT_TEMPLATE, {"scheme": path})))
        return out


def audit_request_schema(item_ids: Sequence[str], scheme: CategoryScheme, llm_cfg: dict[str, Any]) -> dict[str, Any]:
    """The audit request's JSON schema: bounded and narrowed to this checklist's ids and this scheme's names
    (`category_audit_schema`, fitted to `schema_limits`) where the config sizes `max_tokens` from the schema
    (the compatible-server configs); otherwise the response model's own, as the paper's configs always sent."""
    if llm_cfg.get("max_tokens_from_schema"):
        return fit_schema_limits(category_audit_schema(item_ids, [*scheme.names, NONE]), llm_cfg.get("schema_limits"))
    return CategoryAudit.model_json_schema()


def build_audit_request(instruction: str, items: Sequence[dict[str, str]], scheme: CategoryScheme,
                        template: PromptTemplate, llm_cfg: dict[str, Any]) -> LLMRequest:
    provider, model = request_identity(llm_cfg)
    schema = audit_request_schema([i["item_id"] for i in items], scheme, llm_cfg)
    return LLMRequest(
        purpose=f"category_audit:{scheme.name}",
        provider=provider,
        model=model,
        messages=template.render(prompt_schema(llm_cfg, schema), instruction=instruction, items=list(items)),
        output_schema="CategoryAudit",
        json_schema=schema,
        sampling=sampling_params(llm_cfg, schema),
        template_hash=template.hash,
        inputs={"instruction": instruction, "items": list(items), "scheme": scheme.as_input()},
    )


def audit_check(scheme: CategoryScheme, instruction: str, item_ids: set[str]):
    """Response validation beyond the schema; a violation makes the client ask again (and is logged)."""
    allowed = set(scheme.names) | {NONE}

    def check(parsed: BaseModel, _request: LLMRequest) -> None:
        assert isinstance(parsed, CategoryAudit)
        for i, req in enumerate(parsed.requirements):
            if req.category not in allowed:
                raise ValueError(f"requirement {i}: category '{req.category}' is not in scheme {scheme.name} ({', '.join(sorted(allowed))})")
            if not quote_in_instruction(req.quote, instruction):
                raise ValueError(f"requirement {i}: quote is not verbatim in the instruction: {req.quote[:80]!r}")
            unknown = [x for x in req.item_ids if x not in item_ids]
            if unknown:
                raise ValueError(f"requirement {i}: unknown checklist item id(s) {', '.join(unknown)}")
    return check


class TaskAudit(BaseModel):
    scheme: str
    benchmark: str
    task_id: str
    checklist_status: str
    request_key: str
    ok: bool
    error: str | None = None
    requirements: list[dict[str, Any]]


def audit_tasks(tasks: Sequence[Task], checklists: Sequence[Checklist], llm_cfg: dict[str, Any], settings: AuditSettings,
                client: LLMClient) -> list[TaskAudit]:
    """Every (scheme, task) request goes out through `client.run` at once, so the audit runs concurrently
    (and in batch mode) like judging, with a progress bar; each request keeps its own task-specific check."""
    by_task = {(c.benchmark, c.task_id): c for c in checklists}
    planned: list[tuple[Any, Task, Checklist | None, LLMRequest]] = []
    checks: dict[str, Any] = {}
    for scheme, template in settings.load():
        for task in sorted(tasks, key=lambda t: (t.benchmark, t.task_id)):
            cl = by_task.get((task.benchmark, task.task_id))
            frozen = cl is not None and cl.status == "frozen"
            items = [{"item_id": i.item_id, "text": i.text, "quote": i.quote} for i in (cl.items if frozen and cl else [])]
            request = build_audit_request(task.instruction, items, scheme, template, llm_cfg)
            checks[request.key] = audit_check(scheme, task.instruction, {i["item_id"] for i in items})
            planned.append((scheme, task, cl, request))

    def check(parsed: BaseModel, request: LLMRequest) -> None:
        checks[request.key](parsed, request)

    results = client.run([p[3] for p in planned], CategoryAudit, check, desc="audit") if planned else []
    out: list[TaskAudit] = []
    for (scheme, task, cl, _), result in zip(planned, results, strict=True):
        reqs = CategoryAudit.model_validate(result.parsed).model_dump(mode="json")["requirements"] if result.ok else []
        out.append(TaskAudit(scheme=scheme.name, benchmark=task.benchmark, task_id=task.task_id,
                             checklist_status=cl.status if cl else "missing", request_key=result.key,
                             ok=result.ok, error=result.error, requirements=reqs))
    return out


def _share(a: int, b: int) -> float:
    return a / b if b else 0.0


def coverage_summary(audits: Sequence[TaskAudit], settings: AuditSettings) -> dict[str, Any]:
    schemes = {name: read_scheme(settings.scheme_path(name), name=name) for name, _ in settings.schemes}
    full_def = {c.name: c.definition for c in schemes["full"].categories}
    full_by_key = {(a.benchmark, a.task_id, normalize_ws(r["quote"])): r["category"]
                   for a in audits if a.scheme == "full" for r in a.requirements}
    out: dict[str, Any] = {}
    for name, _ in settings.schemes:
        rows = [a for a in audits if a.scheme == name]
        reqs = [(a, r) for a in rows for r in a.requirements]
        assigned = [r for _, r in reqs if r["category"] != NONE]
        frozen_reqs = [r for a, r in reqs if a.checklist_status == "frozen"]
        definitions = {c.name: c.definition for c in schemes[name].categories}
        entry: dict[str, Any] = {
            "scheme_file": settings.scheme_path(name).as_posix(),
            "categories": schemes[name].names,
            "n_tasks": len(rows),
            "n_tasks_audit_failed": sum(not a.ok for a in rows),
            "n_tasks_without_requirements": sum(a.ok and not a.requirements for a in rows),
            "n_requirements": len(reqs),
            "n_covered_by_scheme": len(assigned),
            "coverage": _share(len(assigned), len(reqs)),
            "by_category": {c: sum(r["category"] == c for r in assigned) for c in schemes[name].names},
            "n_requirements_frozen_tasks": len(frozen_reqs),
            "n_covered_by_items": sum(bool(r["item_ids"]) for r in frozen_reqs),
            "item_coverage": _share(sum(bool(r["item_ids"]) for r in frozen_reqs), len(frozen_reqs)),
        }
        if name != "full":
            # over the requirements the full scheme covered, matched by task and quote
            matched = [(full_by_key[(a.benchmark, a.task_id, normalize_ws(r["quote"]))], r["category"]) for a, r in reqs
                       if full_by_key.get((a.benchmark, a.task_id, normalize_ws(r["quote"])), NONE) != NONE]
            by_name = sum(f == c for f, c in matched)
            by_def = sum(c != NONE and definitions.get(c) == full_def.get(f) for f, c in matched)
            entry["n_matched_to_full"] = len(matched)
            entry["agreement_with_full_by_name"] = _share(by_name, len(matched))
            entry["agreement_with_full_by_definition"] = _share(by_def, len(matched))
        out[name] = entry
    return out


def run_audit(tasks: Sequence[Task], checklists: Sequence[Checklist], llm_cfg: dict[str, Any], settings: AuditSettings,
              out_dir: Path, *, progress: bool = True) -> dict[str, Any]:
    """Audit every task under every scheme; write audit.jsonl, coverage.json and llm_calls.jsonl to out_dir."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with llm_session(llm_cfg, out_dir / "llm_calls.jsonl", progress=progress) as client:
        audits = audit_tasks(tasks, checklists, llm_cfg, settings, client)
    provider, model = request_identity(llm_cfg)
    summary = {"provider": provider, "model": model, "schemes": coverage_summary(audits, settings)}
    write_jsonl(out_dir / "audit.jsonl", sorted(audits, key=lambda a: (a.scheme, a.benchmark, a.task_id)))
    write_json(out_dir / "coverage.json", summary)
    return summary


def coverage_markdown(summaries: dict[str, dict[str, Any]]) -> str:
    """One table; `summaries` maps a benchmark label to run_audit's summary."""
    lines = ["| benchmark | provider / model | scheme | categories | requirements | covered by scheme | coverage | "
             "covered by items | agreement with full (name / definition) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for label, s in summaries.items():
        for name, e in s["schemes"].items():
            agree = (f"{e['agreement_with_full_by_name']:.1%} / {e['agreement_with_full_by_definition']:.1%}"
                     if "agreement_with_full_by_name" in e else "reference")
            lines.append(f"| {label} | {s['provider']} / {s['model']} | {name} | {len(e['categories'])} | {e['n_requirements']} | "
                         f"{e['n_covered_by_scheme']} | {e['coverage']:.1%} | {e['item_coverage']:.1%} | {agree} |")
    return "\n".join(lines) + "\n"


def coverage_latex(summaries: dict[str, dict[str, Any]]) -> str:
    lines = [r"\begin{tabular}{llrrrr}", r"\toprule",
             r"Benchmark & Scheme & Requirements & Coverage & Item coverage & Agreement (def.) \\", r"\midrule"]
    for label, s in summaries.items():
        for name, e in s["schemes"].items():
            agree = f"{100 * e['agreement_with_full_by_definition']:.1f}\\%" if "agreement_with_full_by_definition" in e else "--"
            lines.append(f"{_tex(label)} & {_tex(name)} & {e['n_requirements']} & {100 * e['coverage']:.1f}\\% & "
                         f"{100 * e['item_coverage']:.1f}\\% & {agree} \\\\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def _tex(text: str) -> str:
    return text.replace("\\", r"\textbackslash{}").replace("&", r"\&").replace("%", r"\%").replace("_", r"\_").replace("#", r"\#")


def main() -> None:
    from gcpc import paths
    from gcpc.io import read_models
    from gcpc.llm.cli import llm_stage_args, load_llm_params, stage_errors

    params = load_llm_params(llm_stage_args("`python -m gcpc.synthesis.audit`: category audit of the pipeline's checklists"))
    out_dir = paths.PROCESSED / "audit"
    settings = AuditSettings.from_params(params.get("synthesis", {}))
    with stage_errors():
        summary = run_audit(read_models(paths.INGEST / "tasks.jsonl", Task),
                            read_models(paths.SYNTHESIZE / "checklists.jsonl", Checklist),
                            params["generator"], settings, out_dir)
    write_text(out_dir / "coverage.md", "# Category audit\n\n" + coverage_markdown({params.get("data", {}).get("name", "corpus"): summary}))
    write_json(paths.METRICS / "audit.json", {name: {"coverage": e["coverage"], "item_coverage": e["item_coverage"]}
                                             for name, e in summary["schemes"].items()})
    print("audit: " + ", ".join(f"{n} {e['coverage']:.1%}" for n, e in summary["schemes"].items()) + f" -> {out_dir}")


if __name__ == "__main__":
    main()
