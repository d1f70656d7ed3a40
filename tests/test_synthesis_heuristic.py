"""The heuristic generator's documented rules (src/gcpc/llm/heuristic/synthesize.py)."""

from __future__ import annotations

from pathlib import Path

from gcpc.llm.heuristic.synthesize import generate_checklist, instruction_units, requirement_units
from gcpc.synthesis.gates import quote_in_instruction
from gcpc.synthesis.scheme import read_generator_scheme

ROOT = Path(__file__).resolve().parents[1]
SCHEME = read_generator_scheme(ROOT / "prompts" / "rules" / "categories.md").as_input()


def gen(instruction: str, tests=(), history=(), max_items: int = 15) -> list[dict]:
    history = [list(h) for h in history]
    inputs = {"instruction": instruction, "tests": list(tests), "limits": {"min_items": 4, "max_items": max_items},
              "category_scheme": SCHEME, "previous_rejections": sorted({k for h in history for k in h}),
              "rejection_history": history}
    return generate_checklist(inputs)["items"]


def test_hard_wrapped_sentences_are_one_unit_and_quote_verbatim():
    instruction = "Under /tmp/x/, build the compiler from source,\nconfiguring it for the host. Ensure it runs\nfrom `/tmp/x/cc`.\n"
    units = [u.text for u in instruction_units(instruction)]
    assert units == ["Under /tmp/x/, build the compiler from source, configuring it for the host.", "Ensure it runs from `/tmp/x/cc`."]
    assert all(quote_in_instruction(u, instruction) for u in units)


def test_headings_tables_and_code_are_not_requirements():
    instruction = "# Save everything\n\n| must | save |\n|---|---|\n\n```\nwrite all files now please\n```\n\nYou must save the output to `/o.txt`.\n"
    assert [u.text for u in requirement_units(instruction)] == ["You must save the output to `/o.txt`."]


def test_fenced_json_keys_become_expected_fields_unless_restatement_was_rejected():
    instruction = 'Write the result to `/out.json` like this:\n```json\n{"total": 1, "rows": 2}\n```\nAlso print the total to stdout now.\n'
    first = gen(instruction)
    assert first[0]["text"] == "Write the result to `/out.json` like this (expected fields: `total`, `rows`)"
    again = gen(instruction, history=[["no_test_restatement"]])
    assert again[0]["text"] == "Write the result to `/out.json` like this"
    assert [i["quote"] for i in again] == [i["quote"] for i in first]


INSTR_LOW = ("Train a model on `/data/train.csv`, and save it to `/app/model.bin`. "
             "The final model must be smaller than 150MB but reach 0.62 accuracy on the held-out set, "
             "with predictions written to `/app/pred.csv` and logs kept in `/app/train.log`.")


def test_count_low_regeneration_splits_finer_each_time():
    plain = gen(INSTR_LOW)
    once = gen(INSTR_LOW, history=[["count_low"]])
    twice = gen(INSTR_LOW, history=[["count_low"], ["count_low"]])
    assert len(plain) == 2 < len(once) < len(twice)
    assert [i["quote"] for i in once] == [
        "Train a model on `/data/train.csv`", "save it to `/app/model.bin`.", "The final model must be smaller than 150MB",
        "reach 0.62 accuracy on the held-out set, with predictions written to `/app/pred.csv` and logs kept in `/app/train.log`."]
    for items in (plain, once, twice):
        assert all(quote_in_instruction(i["quote"], INSTR_LOW) for i in items)


def test_count_low_never_admits_context_without_cue_or_token():
    instruction = "I was working on my site yesterday evening. Now everything seems gone and lost forever. Please restore the old page."
    for history in ([], [["count_low"]], [["count_low"], ["count_low"]]):
        assert [i["quote"] for i in gen(instruction, history=history)] == ["Please restore the old page."]


def test_count_high_keeps_units_with_concrete_tokens_up_to_the_maximum():
    lines = [f"- Write value number {n} to `/out/v{n}.txt` today." for n in range(10)] + ["- Keep the whole thing tidy and simple."]
    instruction = "\n".join(lines)
    assert len(gen(instruction)) == 11
    capped = gen(instruction, history=[["count_high"]], max_items=5)
    assert [i["quote"] for i in capped] == [line[2:] for line in lines[:5]]


def test_routes():
    tests = [{"id": "test_outputs.py::test_fibonacci_values", "source": "def test_fibonacci_values():\n    assert run(10) == '55'"},
             {"id": "test_outputs.py::test_model_file", "source": "def test_model_file():\n    assert os.path.exists('/app/model.bin')"}]
    items = {i["quote"]: i for i in gen(
        "Save the model to `/app/model.bin` now.\n\nPrint the kth Fibonacci number for every input.\n\n"
        "Write a clear and readable summary of the method.\n\nThe program must exit with status zero.", tests)}
    assert items["Save the model to `/app/model.bin` now."]["test_refs"] == ["test_outputs.py::test_model_file"]
    assert items["Print the kth Fibonacci number for every input."]["test_refs"] == ["test_outputs.py::test_fibonacci_values"]
    assert items["Write a clear and readable summary of the method."]["route"] == "judge"
    assert items["The program must exit with status zero."]["route"] == "generated"


def test_categories_follow_the_scheme_text():
    instruction = "1. Parse the log file line by line.\n2. Compute the total size of all requests.\n"
    assert [i["category"] for i in gen(instruction)] == ["acquisition", "computation"]
    swapped = [{"name": c["name"], "definition": SCHEME[1]["definition"] if c["name"] == "computation" else
                SCHEME[2]["definition"] if c["name"] == "acquisition" else c["definition"]} for c in SCHEME]
    items = generate_checklist({"instruction": instruction, "tests": [], "limits": {"max_items": 15},
                                "category_scheme": swapped, "previous_rejections": [], "rejection_history": []})["items"]
    assert [i["category"] for i in items] == ["computation", "acquisition"]
