"""Judge stage library: one arm per invocation (dvc.yaml runs it for each configured arm)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gcpc.corpus.models import Trajectory
from gcpc.io import read_models, write_jsonl
from gcpc.judging.checklist_arm import ArmSpec, judge_checklist_arm
from gcpc.judging.models import Judgment
from gcpc.llm import make_client
from gcpc.synthesis.models import Checklist

ARM_KINDS = {"checklist": judge_checklist_arm}


def run(params: dict[str, Any], arm_name: str, ingest_dir: Path, synth_dir: Path, out_dir: Path, *, progress: bool = True) -> list[Judgment]:
    arms = params.get("arm") or {}
    if arm_name not in arms:
        raise KeyError(f"params.yaml: arm '{arm_name}' is not configured (configured: {', '.join(sorted(arms)) or 'none'})")
    arm = ArmSpec.from_params(arm_name, arms[arm_name], params.get("judging", {}))
    runner = ARM_KINDS.get(arm.kind)
    if runner is None:
        raise ValueError(f"params.yaml: arm '{arm_name}' has unknown kind '{arm.kind}' (known: {', '.join(ARM_KINDS)})")
    trajectories = read_models(ingest_dir / "trajectories.jsonl", Trajectory)
    checklists = {(c.benchmark, c.task_id): c for c in read_models(synth_dir / "checklists.jsonl", Checklist)}
    out_dir.mkdir(parents=True, exist_ok=True)
    client = make_client(params["judge"], out_dir / "llm_calls.jsonl", progress=progress)
    try:
        judgments = runner(trajectories, checklists, arm=arm, llm_cfg=params["judge"], client=client)
        client.store.compact(client.used_keys)
    finally:
        client.store.close()
    write_jsonl(out_dir / "judgments.jsonl", judgments)
    return judgments
