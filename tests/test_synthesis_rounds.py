"""Synthesis sends every pending task of a round in one client.run, so calls can run concurrently or in one batch."""

from gcpc.corpus.models import VerifierTest
from gcpc.llm import make_client
from gcpc.synthesis.generate import SynthesisSettings, synthesize_checklist, synthesize_checklists

HEURISTIC = {"provider": "heuristic", "model": "gcpc-heuristic-v1", "temperature": 0.0, "seed": 0}
LONG = """Summarise `/root/sales.csv`.

1. Read `/root/sales.csv` and compute the total of the `amount` column.
2. Count the rows whose `region` is "north".
3. Save both numbers to `/root/summary.json` with keys `total_amount` and `north_rows`.
4. The file must be valid JSON.
5. Do not modify `/root/sales.csv`.
"""
SHORT = "Fix the bug in `/app/main.py` so that `make test` passes."  # one item: frozen as it is
EMPTY = "# Context\n\nThe repository was migrated last week."  # no stated requirement: regenerated, then reported
TESTS = [VerifierTest(id="test_outputs.py::test_summary", file="test_outputs.py", name="test_summary",
                      source='def test_summary():\n    assert json.load(open("/root/summary.json"))["total_amount"]')]


def test_one_run_per_round_with_every_pending_task(tmp_path):
    client = make_client(HEURISTIC, tmp_path / "calls.jsonl", progress=False)
    batches: list[int] = []
    original = client.run

    def counting_run(requests, *args, **kwargs):
        batches.append(len(requests))
        return original(requests, *args, **kwargs)

    client.run = counting_run  # type: ignore[method-assign]
    jobs = [(LONG, TESTS, ("demo", "long")), (EMPTY, [], ("demo", "empty")), (SHORT, [], ("demo", "short")),
            (LONG, TESTS, ("demo", "long-2"))]
    outcomes = synthesize_checklists(jobs, client=client, llm_cfg=HEURISTIC, settings=SynthesisSettings())
    assert batches[0] == 4
    assert batches[1:] == [1] * (len(batches) - 1)  # only the empty task is regenerated
    assert outcomes[0].items and outcomes[3].items and len(outcomes[2].items) == 1 and outcomes[1].items is None
    assert len(outcomes[1].attempts) == len(batches) and outcomes[1].failure


def test_single_task_entry_point_gives_the_same_outcome(tmp_path):
    settings = SynthesisSettings()
    one = synthesize_checklist(LONG, TESTS, client=make_client(HEURISTIC, tmp_path / "a.jsonl", progress=False),
                               llm_cfg=HEURISTIC, settings=settings, label=("demo", "long"))
    many = synthesize_checklists([(LONG, TESTS, ("demo", "long"))], client=make_client(HEURISTIC, tmp_path / "b.jsonl", progress=False),
                                 llm_cfg=HEURISTIC, settings=settings)[0]
    assert [i.model_dump() for i in one.items] == [i.model_dump() for i in many.items]
    assert [a.model_dump() for a in one.attempts] == [a.model_dump() for a in many.attempts]
