"""Judge stage library: one arm per invocation (dvc.yaml runs it for each configured arm).

ARM_KINDS is the registry of arm kinds. An arm in params.yaml (`arm.<name>`, from conf/arm/<name>.yaml)
names its kind, its prompt template (file or folder) and kind-specific settings.

The stage streams: trajectories are read and judged `CHUNK_TRAJECTORIES` at a time and each chunk's
judgments are written as they come, so memory does not grow with the corpus (bench/bench_store.py
measures it). With several calls in flight (`concurrency` > 1) two chunks are judged at once
(`OUTSTANDING`): the next chunk's requests are prepared while this one's calls are in flight, and one
event loop and HTTP client serve the whole stage (`LLMClient`), so no chunk boundary drains the calls.
A request shared by chunks (TICK's per-task question generation) is answered from the call store
after its first chunk, or from the call that chunk is still making, so chunking makes no extra call
and changes no output byte. In batch mode the whole population is one chunk, so every request still
goes into the fewest batches.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gcpc.errors import ParamsError
from gcpc.corpus.models import Task, Trajectory
from gcpc.io import (atomic_path, forget_outputs, iter_models_sized, read_models, record_outputs, verify_output, write_jsonl,
                     write_jsonl_lines, write_text)
from gcpc.judging.checklist_arm import judge_checklist_arm, judge_generic_arm
from gcpc.judging.floor_arm import judge_floor_arm
from gcpc.judging.holistic_arm import judge_holistic_arm
from gcpc.judging.models import Judgment
from gcpc.judging.spec import ArmInputs, ArmSpec, redact_run_metadata
from gcpc.judging.tick_arm import judge_tick_arm
from gcpc.llm import LLMClient, LLMSettings, llm_session
from gcpc.llm.budget import check_failure_budget
from gcpc.synthesis.models import Checklist


@dataclass(frozen=True)
class ArmKind:
    run: Callable[..., list[Judgment]]
    reads: tuple[str, ...]
    """Ingest/synthesis outputs the kind reads besides trajectories: 'checklists' and/or 'tasks' (instructions)."""
    summary: str
    uses_model: bool = True
    """False for floor arms: no LLM request is made (their call store stays empty)."""


ARM_KINDS: dict[str, ArmKind] = {
    "checklist": ArmKind(judge_checklist_arm, ("checklists",), "GCPC: frozen checklist, one call, evidence gate"),
    "generic": ArmKind(judge_generic_arm, ("tasks",), "fixed task-agnostic questions judged like a checklist"),
    "tick": ArmKind(judge_tick_arm, ("tasks",), "TICK: generated yes/no questions, one call per question"),
    "holistic": ArmKind(judge_holistic_arm, ("tasks",), "one 0-10 score with a rationale"),
    "floor": ArmKind(judge_floor_arm, (), "outcome-blind floor: one feature of the judge-visible log, no model", uses_model=False),
}


def arm_spec(params: dict[str, Any], arm_name: str) -> ArmSpec:
    arms = params.get("arm") or {}
    if arm_name not in arms:
        raise ParamsError(f"params.yaml: arm '{arm_name}' is not configured (configured: {', '.join(sorted(arms)) or 'none'})")
    arm = ArmSpec.from_params(arm_name, arms[arm_name], params.get("judging", {}))
    if arm.kind not in ARM_KINDS:
        raise ValueError(f"params.yaml: arm '{arm_name}' has unknown kind '{arm.kind}' (known: {', '.join(ARM_KINDS)})")
    return arm


def judge_arm(arm: ArmSpec, trajectories: Sequence[Trajectory], *, llm_cfg: dict[str, Any], client: LLMClient | None,
              checklists: dict[tuple[str, str], Checklist] | None = None,
              tasks: dict[tuple[str, str], Task] | None = None) -> list[Judgment]:
    """Judge trajectories with one arm (what the stage does, without the files)."""
    if arm.kind not in ARM_KINDS:
        raise ValueError(f"arm '{arm.name}' has unknown kind '{arm.kind}' (known: {', '.join(ARM_KINDS)})")
    trajectories = [redact_run_metadata(t) for t in trajectories]
    inputs = ArmInputs(trajectories=trajectories, checklists=checklists or {}, tasks=tasks or {})
    return ARM_KINDS[arm.kind].run(inputs, arm=arm, llm_cfg=llm_cfg, client=client)


CHUNK_TRAJECTORIES = 200
CHUNK_BYTES = 8_000_000
"""A chunk is at most CHUNK_TRAJECTORIES trajectories and ends once its lines in trajectories.jsonl reach
CHUNK_BYTES (a few large logs make a chunk alone), so a stage holds a bounded slice of its input (sync and
concurrent modes; batch mode takes them all at once, so requests go into the fewest batches). In sync mode
with one call at a time each chunk is judged after the last."""
OUTSTANDING = 2
"""Concurrent mode: chunks being judged at once. While chunk k's calls are in flight, chunk k+1's requests are
prepared (rendered, fitted, keyed) on a second thread and submitted to the same client, whose semaphore keeps
`concurrency` calls in flight over both, so a chunk boundary no longer drains the calls (issue 29). The bound on
memory: at most OUTSTANDING chunks of trajectories are held at once (the next is read only after the oldest is
written), each at most CHUNK_BYTES of lines."""
CHUNKS_PER_CONCURRENCY = 4
"""Concurrent mode: a chunk is at most this many trajectories per concurrent call (and CHUNK_TRAJECTORIES, and
CHUNK_BYTES), so the first calls start after a few dozen requests are prepared, not after 200."""


@dataclass(frozen=True)
class StageCounts:
    """Judgments written by a judge stage, and how many of them are ok."""

    ok: int
    written: int


def run(params: dict[str, Any], arm_name: str, ingest_dir: Path, synth_dir: Path, out_dir: Path, *, progress: bool = True,
        chunk: int | None = None) -> list[Judgment]:
    """The stage (`judge_stage`), then its judgments read back from judgments.jsonl."""
    judge_stage(params, arm_name, ingest_dir, synth_dir, out_dir, progress=progress, chunk=chunk)
    return read_models(out_dir / "judgments.jsonl", Judgment)


def judge_stage(params: dict[str, Any], arm_name: str, ingest_dir: Path, synth_dir: Path, out_dir: Path, *,
                progress: bool = True, chunk: int | None = None) -> StageCounts:
    """`run` without reading the judgments back: the counts of what was written (a second parse of a
    paper-scale judgments.jsonl only to count it is minutes)."""
    arm = arm_spec(params, arm_name)
    reads = ARM_KINDS[arm.kind].reads
    checklists = ({(c.benchmark, c.task_id): c for c in read_models(synth_dir / "checklists.jsonl", Checklist)}
                  if "checklists" in reads else {})
    tasks = {(t.benchmark, t.task_id): t for t in read_models(ingest_dir / "tasks.jsonl", Task)} if "tasks" in reads else {}
    out_dir.mkdir(parents=True, exist_ok=True)
    forget_outputs(out_dir)
    trajectories = verify_output(ingest_dir / "trajectories.jsonl")  # whole, as ingest wrote it, before any request
    llm_cfg = params["judge"]
    budget = _Budget()
    if not ARM_KINDS[arm.kind].uses_model:
        # floors: no provider is built (none is needed, no key is read); the call store is empty by construction
        _judge_to_file(arm, trajectories, out_dir / "judgments.jsonl", budget, chunk or CHUNK_TRAJECTORIES,
                       None if chunk else CHUNK_BYTES, llm_cfg=llm_cfg, client=None, checklists=checklists, tasks=tasks)
        write_text(out_dir / "llm_calls.jsonl", "")
        record_outputs(out_dir, ["judgments.jsonl"])
    else:
        with llm_session(llm_cfg, out_dir / "llm_calls.jsonl", progress=progress) as client:
            size = chunk or (sys.maxsize if client.mode == "batch" else CHUNK_TRAJECTORIES)
            if not chunk and client.concurrent:
                size = min(size, max(32, CHUNKS_PER_CONCURRENCY * client.concurrency))
            # (`chunk` given: that many trajectories a chunk, whatever their size)
            max_bytes = None if chunk or client.mode == "batch" else CHUNK_BYTES
            _judge_to_file(arm, trajectories, out_dir / "judgments.jsonl", budget, size, max_bytes, llm_cfg=llm_cfg,
                           client=client, checklists=checklists, tasks=tasks)
        record_outputs(out_dir, ["judgments.jsonl"])  # rows and hashes finalize checks (the call log is not: it resumes)
        share_call_store(out_dir, out_dir.parent / arm.requests_of)
        budget.check(llm_cfg, stage=f"judge[{arm_name}]")  # floors make no request, so they have nothing to fail
    return StageCounts(ok=budget.ok, written=budget.written)


STORE_FILES = ("llm_calls.jsonl", "llm_calls.blobs.jsonl.gz", "usage_summary.json")


def share_call_store(out_dir: Path, source: Path) -> list[str]:
    """Make each call-store file of `out_dir` byte-identical to `source`'s a hard link to it (stored once).

    An arm that sends another arm's requests (`requests_of`, `ArmSpec.calls_as`: `gcpc_gate` sends `gcpc`'s) writes the
    same bytes; linked to the first arm's file, which DVC has linked to its cache, it is one file on disk.
    (DVC itself links an output file to an existing identical cache object only on `dvc checkout --relink`.)
    Returns the names linked. Writers never append through a link (`gcpc.io.own_file`)."""
    import filecmp
    import os

    linked = []
    if out_dir.resolve() == source.resolve():
        return linked
    for name in STORE_FILES:
        mine, theirs = out_dir / name, source / name
        if not (mine.is_file() and theirs.is_file()) or mine.samefile(theirs):
            continue
        if mine.stat().st_size != theirs.stat().st_size or not filecmp.cmp(mine, theirs, shallow=False):
            continue
        tmp = out_dir / f".{name}.link"
        tmp.unlink(missing_ok=True)
        try:
            os.link(theirs, tmp)
        except OSError:  # another device or a file system without hard links: keep the copy
            continue
        os.replace(tmp, mine)
        linked.append(name)
    return linked


@dataclass
class _Budget:
    """Failed judgments (refused, or invalid after every attempt) among those asked, counted as chunks are
    written, against the judge's `failure_budget`."""

    asked: int = 0
    failed: list[tuple[str, str | None, str | None]] = field(default_factory=list)  # (trajectory id, request key, error)
    written: int = 0
    ok: int = 0

    def add(self, judgments: Sequence[Judgment]) -> None:
        self.written += len(judgments)
        for j in judgments:
            self.ok += j.status == "ok"
            if j.status in ("ok", "failed"):
                self.asked += 1
                if j.status == "failed":
                    self.failed.append((j.trajectory_id, j.request_key, j.error))

    def check(self, llm_cfg: dict[str, Any], *, stage: str) -> str:
        failed = [f[1:] for f in sorted(self.failed, key=lambda f: f[0])]  # in trajectory order, as the file is
        budget = LLMSettings.from_cfg(llm_cfg, where="params.yaml judge").failure_budget
        return check_failure_budget(failed, self.asked, budget, stage=stage)


def trajectory_chunks(path: Path, size: int, max_bytes: int | None) -> Iterator[list[Trajectory]]:
    """trajectories.jsonl in consecutive chunks of at most `size` trajectories and about `max_bytes` of lines."""
    chunk: list[Trajectory] = []
    used = 0
    for line_bytes, traj in iter_models_sized(path, Trajectory):
        chunk.append(traj)
        used += line_bytes
        if len(chunk) >= size or (max_bytes is not None and used >= max_bytes):
            yield chunk
            chunk, used = [], 0
    if chunk:
        yield chunk


def _judge_to_file(arm: ArmSpec, trajectories: Path, path: Path, budget: _Budget, chunk: int, max_bytes: int | None,
                   **kw: Any) -> None:
    """Judge chunk by chunk, appending each chunk's judgments (sorted by trajectory id, as the whole file is).

    With a concurrent client, up to OUTSTANDING chunks are judged at once on worker threads; their
    judgments are still written in chunk order, so the file is the same bytes as one chunk after another."""
    client: LLMClient | None = kw.get("client")
    depth = OUTSTANDING if client is not None and client.concurrent else 1
    last: str | None = None
    ordered = True

    def write(judgments: list[Judgment]) -> None:
        nonlocal last, ordered
        budget.add(judgments)
        if judgments and last is not None and judgments[0].trajectory_id < last:
            ordered = False  # input not sorted by trajectory id: sorted below, as one whole list would be
        if judgments:
            last = judgments[-1].trajectory_id
        write_jsonl_lines(fh, judgments)

    with atomic_path(path) as tmp:
        with tmp.open("w", encoding="utf-8", newline="\n") as fh:
            if depth == 1:
                for part in trajectory_chunks(trajectories, chunk, max_bytes):
                    write(judge_arm(arm, part, **kw))
            else:
                # leaving the `with` waits for every chunk started: a failure in chunk k raises only once chunk
                # k+1's calls in flight are recorded (the client starts no new call after a transport failure)
                assert client is not None
                with ThreadPoolExecutor(max_workers=depth, thread_name_prefix="gcpc-judge") as pool:
                    running: deque[Future[list[Judgment]]] = deque()
                    try:
                        for part in trajectory_chunks(trajectories, chunk, max_bytes):
                            running.append(pool.submit(judge_arm, arm, part, **kw))
                            del part  # the chunk's trajectories are held by its task only
                            if len(running) >= depth:
                                write(running.popleft().result())
                        while running:
                            write(running.popleft().result())
                    except BaseException as exc:  # a failed chunk, a bad record, Ctrl-C: the other chunk starts no new call
                        client.halt(f"judge stage stopped: {type(exc).__name__}: {exc}")
                        raise
        if not ordered:
            write_jsonl(tmp, sorted(read_models(tmp, Judgment), key=lambda j: j.trajectory_id))

