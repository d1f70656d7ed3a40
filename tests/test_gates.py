"""Mechanical gates: each rejects what it should, names the gate and the item, and passes the rest."""

from gcpc.corpus.models import VerifierTest
from gcpc.llm.schemas import GeneratedItem
from gcpc.synthesis.gates import check_items, quote_in_instruction, resolve_test_ref, restates_test

INSTRUCTION = """Compute the mean of `price` in `/root/data.csv`.

Save the result to `/root/out.json`   with the key
`mean_price`.
"""
TESTS = [
    VerifierTest(id="test_outputs.py::test_file_exists", file="test_outputs.py", name="test_file_exists",
                 source='def test_file_exists():\n    assert os.path.exists("/root/out.json")'),
    VerifierTest(id="test_outputs.py::TestValues::test_mean", file="test_outputs.py", name="test_mean", cls="TestValues",
                 source='def test_mean(self):\n    """Save the mean price of every row to the output file with the key mean price."""\n    # compare with the reference\n    assert abs(load()["mean_price"] - 12.5) < 1e-6, "the mean price in the output file must match the reference mean price within tolerance"'),
    VerifierTest(id="test_outputs.py::test_rows[a]", file="test_outputs.py", name="test_rows", source="def test_rows(x): ..."),
]


def item(**kw) -> GeneratedItem:
    base = dict(text="The mean price is saved to /root/out.json.", quote="Save the result to `/root/out.json`",
                route="generated", test_refs=[], category="construction")
    return GeneratedItem(**(base | kw))


def test_quote_normalizes_whitespace_only():
    assert quote_in_instruction("Save the result to `/root/out.json` with the key `mean_price`.", INSTRUCTION)
    assert not quote_in_instruction("save the result to `/root/out.json`", INSTRUCTION)  # case matters
    assert not quote_in_instruction("Save the result to /root/out.json", INSTRUCTION)  # markdown matters
    assert not quote_in_instruction("   ", INSTRUCTION)


def test_test_refs_resolve_by_id_class_method_and_param():
    assert resolve_test_ref("test_outputs.py::test_file_exists", TESTS) == "test_outputs.py::test_file_exists"
    assert resolve_test_ref("TestValues::test_mean", TESTS) == "test_outputs.py::TestValues::test_mean"
    assert resolve_test_ref("test_rows[a]", TESTS) == "test_outputs.py::test_rows[a]"
    assert resolve_test_ref("test_rows[b]", TESTS) is None
    assert resolve_test_ref("test_missing", TESTS) is None


def test_restatement_rule():
    assert restates_test("assert the mean equals 12.5", TESTS)
    assert restates_test("mean price in the output file must match the reference mean price within tolerance", TESTS)
    assert restates_test("The output file /root/out.json exists.", TESTS) is None
    # syntax that the instruction itself contains is quoted, not restated
    assert restates_test("Install `pkg==1.2`", TESTS, quote="Install `pkg==1.2`") is None
    # docstrings and comments paraphrase the instruction; sharing them is not restating code
    assert restates_test("Save the mean price of every row to the output file with the key mean price", TESTS) is None


def gates_failing(items, **kw):
    return [(r.gate, r.item_index) for r in check_items(items, INSTRUCTION, TESTS, min_items=kw.get("lo", 1), max_items=kw.get("hi", 15)) if not r.passed]


def test_each_gate_names_itself_and_the_item():
    good = item()
    assert gates_failing([good]) == []
    assert gates_failing([good, item(quote="Write everything to disk")]) == [("quote_verbatim", 1)]
    assert gates_failing([item(route="assertion", test_refs=[])]) == [("assertion_ref", 0)]
    assert gates_failing([item(route="assertion", test_refs=["test_nope"])]) == [("assertion_ref", 0)]
    assert gates_failing([item(text="assert out['mean_price'] == 12.5")]) == [("no_test_restatement", 0)]
    assert gates_failing([good], lo=4) == [("item_count", None)]
    assert gates_failing([good] * 3, hi=2) == [("item_count", None)]
