"""Checklist arms: one judge call per trajectory labels every item Yes / No / Abstain with evidence.

* kind `checklist` (GCPC): the items are the task's frozen checklist; the judge sees the items and
  the rendered log.
* kind `generic`: the items are the arm's fixed, task-agnostic questions (conf/arm/generic.yaml);
  since they do not restate the task, the judge also sees the task instruction.

Both use the ChecklistJudgment schema and the evidence gate (on unless the arm turns it off).
The judge never sees the outcome, the verifier's output or the run's metadata: `judge_view`
(over `render_log`) is the only view of a trajectory.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from gcpc.corpus.models import Event, Trajectory
from gcpc.io import content_hash
from gcpc.judging.evidence import gate_verdicts
from gcpc.judging.models import ItemLabel, Judgment
from gcpc.judging.spec import ArmInputs, ArmSpec, LogTooLong, fit_view, judge_view, task_key, visible_events
from gcpc.judging.view import input_cuts
from gcpc.llm import LLMClient, LLMRequest, request_identity, sampling_params
from gcpc.llm.prompts import PromptTemplate
from gcpc.llm.settings import prompt_schema
from gcpc.llm.schemas import ChecklistJudgment, checklist_judgment_schema
from gcpc.synthesis.models import Checklist

__all__ = ["ArmSpec", "build_request", "make_request", "build_generic_request", "check_one_verdict_per_item", "judge_checklist_arm",
           "judge_generic_arm", "judgment_fields", "visible_events", "label_items", "checklist_items"]


def judgment_fields(traj: Trajectory, arm: ArmSpec, llm_cfg: dict[str, Any], *, evidence_gate: bool | None = None) -> dict[str, Any]:
    """The fields every Judgment of this arm and trajectory shares."""
    provider, model = request_identity(llm_cfg)
    return dict(trajectory_id=traj.trajectory_id, benchmark=traj.benchmark, task_id=traj.task_id, arm=arm.name,
                kind=arm.kind, provider=provider, model=model,
                evidence_gate=arm.evidence_gate if evidence_gate is None else evidence_gate,
                input_cuts=input_cuts(traj.events, arm.view))


def make_request(purpose: str, messages: list, schema: type[BaseModel], template: PromptTemplate, llm_cfg: dict[str, Any],
                 inputs: dict[str, Any], json_schema: dict[str, Any]) -> LLMRequest:
    """`schema` is the response model read back; `json_schema` the request's own, narrower schema
    (shown in the prompt, sent to the server, validated by the client, covered by the key)."""
    provider, model = request_identity(llm_cfg)
    return LLMRequest(purpose=purpose, provider=provider, model=model, messages=messages, output_schema=schema.__name__,
                      json_schema=json_schema, sampling=sampling_params(llm_cfg, json_schema),
                      template_hash=template.hash, inputs=inputs)


def build_request(events: Sequence[Event], checklist: Checklist, *, arm: ArmSpec, llm_cfg: dict[str, Any], template: PromptTemplate) -> LLMRequest:
    items = [{"item_id": i.item_id, "text": i.text} for i in checklist.items]
    schema = arm.schema(checklist_judgment_schema([i["item_id"] for i in items]), ChecklistJudgment, llm_cfg)
    shown = prompt_schema(llm_cfg, schema)
    _, visible, messages, cut = fit_view(events, arm.view, llm_cfg, mark_authored=arm.mark_authored,
                                         render=lambda log: template.render(shown, items=items, log=log,
                                                                            marked=arm.mark_authored))
    inputs = {"items": items, "events": visible} | ({"context_cut": cut} if cut else {})
    return make_request(f"judgment:{arm.requests_of}", messages, ChecklistJudgment, template, llm_cfg, inputs, schema)


def generic_items(arm: ArmSpec) -> list[dict[str, str]]:
    return [{"item_id": f"g{n}", "text": q} for n, q in enumerate(arm.questions, 1)]


def build_generic_request(events: Sequence[Event], instruction: str, *, arm: ArmSpec, llm_cfg: dict[str, Any],
                          template: PromptTemplate) -> LLMRequest:
    items = generic_items(arm)
    schema = arm.schema(checklist_judgment_schema([i["item_id"] for i in items]), ChecklistJudgment, llm_cfg)
    shown = prompt_schema(llm_cfg, schema)
    _, visible, messages, cut = fit_view(events, arm.view, llm_cfg, mark_authored=arm.mark_authored,
                                         render=lambda log: template.render(shown, items=items,
                                                                            instruction=instruction, log=log))
    return make_request(f"judgment:{arm.requests_of}", messages, ChecklistJudgment, template, llm_cfg,
                        {"mode": "generic", "instruction": instruction, "items": items, "events": visible}
                        | ({"context_cut": cut} if cut else {}), schema)


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


def _gated_judgments(
    pending: list[tuple[Trajectory, LLMRequest, dict[str, Any]]],
    *,
    arm: ArmSpec,
    llm_cfg: dict[str, Any],
    client: LLMClient,
    items_of: dict[str, list[dict[str, Any]]],
) -> list[Judgment]:
    """Run one ChecklistJudgment call per pending trajectory and gate its verdicts.

    `items_of[trajectory_id]` lists the items in order, each with `item_id`, `route`, `test_refs`
    and optionally `text` (kept on the label).
    """
    results = client.run([p[1] for p in pending], ChecklistJudgment, check=check_one_verdict_per_item, desc=f"judge {arm.name}")
    out = []
    for (traj, _request_, extra), result in zip(pending, results, strict=True):
        common = judgment_fields(traj, arm, llm_cfg) | extra | {"request_key": result.key}
        if not result.ok or result.parsed is None:
            out.append(Judgment(**common, status="failed", error=result.error))
            continue
        out.append(Judgment(**common, status="ok", labels=label_items(result.parsed, traj.events,
                                                                        items_of[traj.trajectory_id], arm)))
    return out


def label_items(parsed: dict[str, Any], events: Sequence[Event], items: list[dict[str, Any]], arm: ArmSpec) -> list[ItemLabel]:
    """A validated ChecklistJudgment as item labels, in checklist order, through the arm's evidence gate
    (also what gcpc's Inspect scorer does with its judge's answer)."""
    order = {i["item_id"]: n for n, i in enumerate(items)}
    verdicts = sorted(ChecklistJudgment.model_validate(parsed).verdicts, key=lambda v: order[v.item_id])
    labels = gate_verdicts(verdicts, events, routes={i["item_id"]: i["route"] for i in items},
                           test_refs={i["item_id"]: i.get("test_refs", []) for i in items}, enabled=arm.evidence_gate,
                           task_texts=[t for i in items for t in i.get("restate", ())],
                           min_quote_chars=arm.min_quote_chars)
    texts = {i["item_id"]: i.get("text") for i in items}
    return [lab.model_copy(update={"text": texts[lab.item_id]}) for lab in labels]


def checklist_items(cl: Checklist) -> list[dict[str, Any]]:
    """A frozen checklist's items as the labelling step reads them (route, test refs, texts the gate treats as the task)."""
    return [{"item_id": i.item_id, "route": i.route, "test_refs": i.test_refs, "restate": [i.text, i.quote]} for i in cl.items]


def judge_checklist_arm(inputs: ArmInputs, *, arm: ArmSpec, llm_cfg: dict[str, Any], client: LLMClient) -> list[Judgment]:
    """GCPC: the task's frozen checklist, one call per trajectory."""
    template = arm.judge_template()
    out: list[Judgment] = []
    pending: list[tuple[Trajectory, LLMRequest, dict[str, Any]]] = []
    items_of: dict[str, list[dict[str, Any]]] = {}
    for traj in inputs.trajectories:
        cl = inputs.checklists.get(task_key(traj))
        if cl is None or cl.status != "frozen":
            why = "no checklist for this task" if cl is None else f"checklist not frozen: {cl.failure}"
            out.append(Judgment(**judgment_fields(traj, arm, llm_cfg), checklist_hash=cl.checklist_hash if cl else "",
                                request_key=None, status="skipped", error=why))
            continue
        try:
            request = build_request(traj.events, cl, arm=arm, llm_cfg=llm_cfg, template=template)
        except LogTooLong as exc:
            out.append(Judgment(**judgment_fields(traj, arm, llm_cfg), checklist_hash=cl.checklist_hash, request_key=None,
                                status="skipped", error=str(exc)))
            continue
        items_of[traj.trajectory_id] = checklist_items(cl)
        pending.append((traj, request, {"checklist_hash": cl.checklist_hash}))
    out += _gated_judgments(pending, arm=arm, llm_cfg=llm_cfg, client=client, items_of=items_of)
    return sorted(out, key=lambda j: j.trajectory_id)


def judge_generic_arm(inputs: ArmInputs, *, arm: ArmSpec, llm_cfg: dict[str, Any], client: LLMClient) -> list[Judgment]:
    """Generic: the arm's fixed task-agnostic questions, judged like a checklist (route `judge`)."""
    if not arm.questions:
        raise ValueError(f"params.yaml: arm '{arm.name}' (kind generic) has no 'questions'")
    template = arm.judge_template()
    items = [dict(i, route="judge", test_refs=[], restate=[i["text"]]) for i in generic_items(arm)]
    questions_hash = content_hash({"questions": list(arm.questions)})
    out: list[Judgment] = []
    pending: list[tuple[Trajectory, LLMRequest, dict[str, Any]]] = []
    for traj in inputs.trajectories:
        task = inputs.tasks.get(task_key(traj))
        if task is None:
            out.append(Judgment(**judgment_fields(traj, arm, llm_cfg), checklist_hash=questions_hash, request_key=None,
                                status="skipped", error="task instruction not found among ingested tasks"))
            continue
        try:
            request = build_generic_request(traj.events, task.instruction, arm=arm, llm_cfg=llm_cfg, template=template)
        except LogTooLong as exc:
            out.append(Judgment(**judgment_fields(traj, arm, llm_cfg), checklist_hash=questions_hash, request_key=None,
                                status="skipped", error=str(exc)))
            continue
        pending.append((traj, request, {"checklist_hash": questions_hash}))
    out += _gated_judgments(pending, arm=arm, llm_cfg=llm_cfg, client=client,
                            items_of={traj.trajectory_id: [dict(i, restate=[i["text"], inputs.tasks[task_key(traj)].instruction])
                                                           for i in items] for traj, _, _ in pending})
    return sorted(out, key=lambda j: j.trajectory_id)
