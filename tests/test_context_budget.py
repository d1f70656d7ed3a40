"""A context budget per request: the judge view is cut to the judge's context window, longest events
first, marked and recorded; a log that cannot fit even then is excluded with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from gcpc.corpus.models import Event, EventKind, Outcome, SourceRef, Trajectory
from gcpc.judging.spec import MIN_EVENT_CHARS, ArmSpec
from gcpc.judging.stage import judge_arm
from gcpc.llm import make_client
from gcpc.synthesis.models import Checklist, ChecklistItem, Provenance

ROOT = Path(__file__).resolve().parents[1]
HEURISTIC = {"provider": "heuristic", "model": "gcpc-heuristic-v1", "temperature": 0.0, "max_tokens": 1000, "seed": 0}


def _traj(sizes: list[int]) -> Trajectory:
    events = [Event(index=0, kind=EventKind.TOOL_CALL, text="Bash: make", tool="Bash", source=SourceRef(path="log", line=1))]
    for n, size in enumerate(sizes, 1):
        events.append(Event(index=n, kind=EventKind.TOOL_OUTPUT, text=(f"out{n} " * size)[:size], tool="Bash",
                            source=SourceRef(path="log", line=n + 1)))
    return Trajectory(trajectory_id=f"b/j/t{len(sizes)}-{sum(sizes)}", benchmark="b", task_id="t", harness="h", model="m",
                      condition="c", source="j", trial="t", outcome=Outcome(status="FAIL"), events=events, source_path="x")


def _checklist() -> Checklist:
    fields = {"item_id": "i01", "text": "Write /root/out.txt", "quote": "Write /root/out.txt", "route": "judge", "test_refs": []}
    if "category" in ChecklistItem.model_fields:  # the item schema may or may not carry a category
        fields["category"] = "construction"
    return Checklist(benchmark="b", task_id="t", status="frozen", items=[ChecklistItem(**fields)],
                     provenance=Provenance(provider="heuristic", model="m", prompt_hash="p", rules_hash="r"), attempts=1,
                     first_attempt_valid=True).with_hash()


def _judge(trajs, window: int | None, tmp_path, **extra):
    cfg = dict(HEURISTIC, context_window=window, **extra) if window else HEURISTIC
    arm = ArmSpec.from_params("gcpc", {"kind": "checklist", "template": str(ROOT / "prompts" / "judging" / "gcpc.jinja"),
                                       "evidence_gate": False}, {"max_event_chars": 4000})
    client = make_client(cfg, tmp_path / "calls.jsonl", progress=False)
    try:
        judgments = judge_arm(arm, trajs, llm_cfg=cfg, client=client, checklists={("b", "t"): _checklist()})
        requests = {r.key: r for r in client.store.records()}
    finally:
        client.store.close()
    return judgments, requests


def test_log_is_cut_longest_events_first_to_fit_and_the_cut_is_recorded(tmp_path):
    traj = _traj([300, 3000, 3900])
    (uncut,), _ = _judge([traj], None, tmp_path / "a")
    (fitted,), records = _judge([traj], 2600, tmp_path / "b")
    assert uncut.request_key != fitted.request_key and fitted.status == "ok"
    cut = records[fitted.request_key].request["inputs"]["context_cut"]
    assert cut["events_cut"] == [2, 3] and MIN_EVENT_CHARS <= cut["event_cap_chars"] < 3000  # the short event is kept whole
    assert cut["tokens_after"] <= 2600 * 0.95 - 1000 < cut["tokens_before"]
    prompt = "\n".join(m["content"] for m in records[fitted.request_key].request["messages"])
    assert "chars truncated ...]" in prompt and "out1 " * 50 in prompt
    (again,), _ = _judge([traj], 2600, tmp_path / "c")
    assert again.request_key == fitted.request_key  # deterministic


def test_a_models_own_tokenizer_margin_fits_the_view_tighter(tmp_path):
    """`context_margin` (issue 30: Gemma counted 9-21 % more tokens than cl100k) keeps that share of the window
    free: the view is fitted to window x (1 - margin) - max_tokens."""
    traj = _traj([300, 3000, 3900])
    (default,), records = _judge([traj], 2600, tmp_path / "a")
    (tight,), tight_records = _judge([traj], 2600, tmp_path / "b", context_margin=0.25)
    before = records[default.request_key].request["inputs"]["context_cut"]
    after = tight_records[tight.request_key].request["inputs"]["context_cut"]
    assert after["tokens_after"] <= 2600 * 0.75 - 1000 < before["tokens_after"]
    assert after["event_cap_chars"] < before["event_cap_chars"] and tight.request_key != default.request_key


def test_a_log_that_cannot_fit_is_excluded_with_the_reason(tmp_path):
    traj = _traj([3000] * 40)
    (j,), records = _judge([traj], 2000, tmp_path)
    assert j.status == "skipped" and j.request_key is None and not records
    assert j.error.startswith("log does not fit the judge's context window (2000 tokens")


def _judge_arm(kind: str, template: str, trajs, window: int | None, tmp_path):
    from gcpc.corpus.models import Task

    cfg = dict(HEURISTIC, context_window=window) if window else HEURISTIC
    arm = ArmSpec.from_params(kind, {"kind": kind, "template": str(ROOT / "prompts" / "judging" / template)},
                              {"max_event_chars": 4000})
    tasks = {("b", "t"): Task(benchmark="b", task_id="t", instruction="Write /root/out.txt with the build's result.",
                              source_path="x")}
    client = make_client(cfg, tmp_path / "calls.jsonl", progress=False)
    try:
        judgments = judge_arm(arm, trajs, llm_cfg=cfg, client=client, tasks=tasks)
        requests = [r for r in client.store.records() if r.request["purpose"].startswith("judgment:")]
    finally:
        client.store.close()
    return judgments, requests


@pytest.mark.parametrize(("kind", "template"), [("holistic", "holistic.jinja"), ("tick", "tick")])
def test_holistic_and_tick_fit_the_same_budget_and_record_the_cut(kind, template, tmp_path):
    traj = _traj([300, 3000, 3900])
    (uncut,), plain = _judge_arm(kind, template, [traj], None, tmp_path / "a")
    (fitted,), records = _judge_arm(kind, template, [traj], 2600, tmp_path / "b")
    assert uncut.status == fitted.status == "ok" and plain and records
    assert all("context_cut" not in r.request["inputs"] for r in plain)
    cuts = [r.request["inputs"]["context_cut"] for r in records]
    assert all(c == cuts[0] for c in cuts)  # TICK: every question sees the same fitted log
    assert cuts[0]["events_cut"] == [2, 3] and MIN_EVENT_CHARS <= cuts[0]["event_cap_chars"] < 3000
    for r in records:
        chars = sum(len(m["content"]) for m in r.request["messages"])
        assert -(-chars // 4) <= 2600 * 0.95 - 1000
        assert "chars truncated ...]" in "".join(m["content"] for m in r.request["messages"])


@pytest.mark.parametrize(("kind", "template"), [("holistic", "holistic.jinja"), ("tick", "tick")])
def test_holistic_and_tick_exclude_a_log_that_cannot_fit(kind, template, tmp_path):
    (j,), records = _judge_arm(kind, template, [_traj([3000] * 40)], 2000, tmp_path)
    assert j.status == "skipped" and not records
    assert j.error.startswith("log does not fit the judge's context window (2000 tokens")


def test_fitting_search_finds_the_bisections_cap_with_fewer_counts():
    """issue 36: the largest fitting cap is found by interpolation with a bisection fallback; for a prompt that grows
    with the cap the answer is the bisection's, and near-linear growth (a log's tokens) needs fewer exact counts."""
    import random

    from gcpc.judging.spec import _largest_fitting_cap

    def bisect(lo, hi, fits):
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
        return lo

    rng = random.Random(36)
    probes_new = probes_old = 0
    for _ in range(300):
        lo, hi = 200, rng.randint(201, 60_000)
        slope, base = rng.uniform(0.5, 30), rng.randint(0, 5000)
        steps = sorted(rng.sample(range(lo, hi + 1), min(5, hi - lo)))  # a monotone, piecewise, non-linear count
        tokens = lambda cap: int(base + slope * cap + 40 * sum(cap >= s for s in steps))  # noqa: E731
        budget = rng.randint(tokens(lo), tokens(hi))
        seen = []

        def probe(cap):
            seen.append(cap)
            return tokens(cap) <= budget, tokens(cap)

        old = []
        want = bisect(lo, hi, lambda cap: old.append(cap) or tokens(cap) <= budget)
        assert _largest_fitting_cap(lo, hi, tokens(lo), tokens(hi), budget, probe) == want
        assert len(seen) <= 2 * max(len(old), 1) + 1
        probes_new += len(seen)
        probes_old += len(old)
    assert probes_new < probes_old / 2, (probes_new, probes_old)
