"""Checklist arms (GCPC and its variants): one judge call per (trajectory, checklist).

The judge sees the rendered log and the checklist; never the outcome, the verifier's output or
the run's metadata. `render_log` is the one rendering every arm shares.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from gcpc.corpus.models import Event, Trajectory
from gcpc.corpus.render import render_log, truncate_middle
from gcpc.judging.evidence import gate_verdicts
from gcpc.judging.models import Judgment
from gcpc.llm import LLMClient, LLMRequest, request_identity, sampling_params
from gcpc.llm.prompts import PromptTemplate
from gcpc.llm.schemas import ChecklistJudgment
from gcpc.synthesis.models import Checklist


def visible_events(events: Sequence[Event], max_chars: int) -> list[dict[str, Any]]:
    """The events exactly as the rendered log shows them (same truncation), for rule-based judges."""
    return [{"index": e.index, "kind": e.kind.value, "tool": e.tool, "is_error": e.is_error,
             "text": truncate_middle(e.text, max_chars)} for e in events]


@dataclass(frozen=True)
class ArmSpec:
    name: str
    kind: str
    template: Path
    evidence_gate: bool = True
    max_event_chars: int = 4000

    @classmethod
    def from_params(cls, name: str, cfg: dict[str, Any], judging: dict[str, Any]) -> ArmSpec:
        for key in ("kind", "template"):
            if key not in cfg:
                raise KeyError(f"params.yaml: arm '{name}' is missing '{key}'")
        return cls(name=name, kind=cfg["kind"], template=Path(cfg["template"]),
                   evidence_gate=bool(cfg.get("evidence_gate", True)),
                   max_event_chars=int(judging.get("max_event_chars", 4000)))


def build_request(events: Sequence[Event], checklist: Checklist, *, arm: ArmSpec, llm_cfg: dict[str, Any], template: PromptTemplate) -> LLMRequest:
    items = [{"item_id": i.item_id, "text": i.text} for i in checklist.items]
    messages = template.render(ChecklistJudgment, items=items, log=render_log(events, max_chars=arm.max_event_chars))
    provider, model = request_identity(llm_cfg)
    return LLMRequest(
        purpose=f"judgment:{arm.name}",
        provider=provider,
        model=model,
        messages=messages,
        output_schema="ChecklistJudgment",
        json_schema=ChecklistJudgment.model_json_schema(),
        sampling=sampling_params(llm_cfg),
        template_hash=template.hash,
        inputs={"items": items, "events": visible_events(events, arm.max_event_chars)},
    )


def check_one_verdict_per_item(parsed: BaseModel, request: LLMRequest) -> None:
    """Reject (and so retry) a judgment that skips, repeats or invents item ids."""
    assert isinstance(parsed, ChecklistJudgment)
    expected = [i["item_id"] for i in request.inputs["items"]]
    got = [v.item_id for v in parsed.verdicts]
    if sorted(got) != sorted(expected):
        missing = sorted(set(expected) - set(got))
        extra = sorted(set(got) - set(expected))
        dup = sorted({g for g in got if got.count(g) > 1})
        raise ValueError(f"verdicts must cover each item exactly once (missing {missing}, unknown {extra}, repeated {dup})")


def judge_checklist_arm(
    trajectories: Sequence[Trajectory],
    checklists: dict[tuple[str, str], Checklist],
    *,
    arm: ArmSpec,
    llm_cfg: dict[str, Any],
    client: LLMClient,
) -> list[Judgment]:
    template = PromptTemplate(arm.template)
    provider, model = request_identity(llm_cfg)
    out: list[Judgment] = []
    pending: list[tuple[Trajectory, Checklist, LLMRequest]] = []
    for traj in trajectories:
        cl = checklists.get((traj.benchmark, traj.task_id))
        common = dict(trajectory_id=traj.trajectory_id, benchmark=traj.benchmark, task_id=traj.task_id, arm=arm.name,
                      provider=provider, model=model, evidence_gate=arm.evidence_gate)
        if cl is None or cl.status != "frozen":
            why = "no checklist for this task" if cl is None else f"checklist not frozen: {cl.failure}"
            out.append(Judgment(**common, checklist_hash=cl.checklist_hash if cl else "", request_key=None, status="skipped", error=why))
            continue
        pending.append((traj, cl, build_request(traj.events, cl, arm=arm, llm_cfg=llm_cfg, template=template)))
    results = client.run([p[2] for p in pending], ChecklistJudgment, check=check_one_verdict_per_item, desc=f"judge {arm.name}")
    for (traj, cl, request), result in zip(pending, results, strict=True):
        common = dict(trajectory_id=traj.trajectory_id, benchmark=traj.benchmark, task_id=traj.task_id, arm=arm.name,
                      provider=provider, model=model, evidence_gate=arm.evidence_gate, checklist_hash=cl.checklist_hash,
                      request_key=result.key)
        if not result.ok or result.parsed is None:
            out.append(Judgment(**common, status="failed", error=result.error))
            continue
        parsed = ChecklistJudgment.model_validate(result.parsed)
        order = {i.item_id: n for n, i in enumerate(cl.items)}
        verdicts = sorted(parsed.verdicts, key=lambda v: order[v.item_id])
        labels = gate_verdicts(verdicts, traj.events, routes={i.item_id: i.route for i in cl.items},
                               test_refs={i.item_id: i.test_refs for i in cl.items}, enabled=arm.evidence_gate)
        out.append(Judgment(**common, status="ok", labels=labels))
    return sorted(out, key=lambda j: j.trajectory_id)
