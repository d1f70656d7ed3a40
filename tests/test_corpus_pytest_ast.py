"""Static pytest enumeration: ids must match what pytest reports, without importing test code."""

from __future__ import annotations

import textwrap

import pytest

from gcpc.corpus.pytest_ast import ascii_escaped, collect_file, collect_source


def ids(source: str, file: str = "test_outputs.py") -> list[str]:
    return [t.id for t in collect_source(textwrap.dedent(source), file)]


def test_functions_and_class_methods():
    src = """
    import pytest

    def helper():
        pass

    def test_a():
        assert True

    async def test_async():
        pass

    class TestOutputs:
        def test_b(self):
            pass

        def not_a_test(self):
            pass

        class TestNested:
            def test_c(self):
                pass

    class Helper:
        def test_ignored(self):
            pass

    class TestWithInit:
        def __init__(self):
            pass

        def test_not_collected(self):
            pass
    """
    assert ids(src) == [
        "test_outputs.py::test_a",
        "test_outputs.py::test_async",
        "test_outputs.py::TestOutputs::test_b",
        "test_outputs.py::TestOutputs::TestNested::test_c",
    ]


def test_record_fields_and_source_includes_decorators():
    src = textwrap.dedent(
        """
        import pytest

        class TestX:
            @pytest.mark.slow
            def test_y(self):
                assert 1 == 1
        """
    )
    (t,) = collect_source(src, "sub/test_m.py")
    assert t.id == "sub/test_m.py::TestX::test_y"
    assert (t.file, t.name, t.cls) == ("sub/test_m.py", "test_y", "TestX")
    assert t.source.startswith("@pytest.mark.slow\ndef test_y(self):")
    assert t.source.rstrip().endswith("assert 1 == 1")


def test_redefined_test_is_collected_once():
    src = """
    def test_a():
        pass

    def test_a():
        assert 2
    """
    tests = collect_source(textwrap.dedent(src), "test_m.py")
    assert [t.id for t in tests] == ["test_m.py::test_a"]
    assert "assert 2" in tests[0].source


def test_parametrize_literals():
    src = """
    import pytest

    @pytest.mark.parametrize("x", ["a", "b c", 1, 2.5, None, True])
    def test_x(x):
        pass

    @pytest.mark.parametrize("a,b", [(1, 2), (3, 4)])
    def test_pairs(a, b):
        pass

    @pytest.mark.parametrize(("a", "b"), [([1], {"k": 1})])
    def test_objects(a, b):
        pass
    """
    assert ids(src) == [
        "test_outputs.py::test_x[a]",
        "test_outputs.py::test_x[b c]",
        "test_outputs.py::test_x[1]",
        "test_outputs.py::test_x[2.5]",
        "test_outputs.py::test_x[None]",
        "test_outputs.py::test_x[True]",
        "test_outputs.py::test_pairs[1-2]",
        "test_outputs.py::test_pairs[3-4]",
        "test_outputs.py::test_objects[a0-b0]",
    ]


def test_parametrize_ids_param_and_module_constants():
    src = """
    import pytest
    from pytest import mark

    CASES = [("x", 1), ("y", 2)]
    NAMES = ["first", "second"]
    SIZES = list(range(2, 4))

    @pytest.mark.parametrize("name,n", CASES, ids=NAMES)
    def test_ids(name, n):
        pass

    @pytest.mark.parametrize("name,n", CASES, ids=[c[0] + "!" for c in CASES])
    def test_comprehension_ids(name, n):
        pass

    @mark.parametrize("v", [pytest.param(1, id="one"), pytest.param(2, marks=pytest.mark.skip)])
    def test_param(v):
        pass

    @pytest.mark.parametrize("size", SIZES)
    def test_range(size):
        pass

    ITEMS = {"b": 1, "a": 2}

    @pytest.mark.parametrize("key", sorted(ITEMS))
    def test_sorted_keys(key):
        pass

    @pytest.mark.parametrize("key,val", ITEMS.items())
    def test_items(key, val):
        pass

    class TestC:
        LOCAL = ["p", "q"]

        @pytest.mark.parametrize("v", LOCAL)
        def test_class_constant(self, v):
            pass
    """
    assert ids(src) == [
        "test_outputs.py::test_ids[first]",
        "test_outputs.py::test_ids[second]",
        "test_outputs.py::test_comprehension_ids[x!]",
        "test_outputs.py::test_comprehension_ids[y!]",
        "test_outputs.py::test_param[one]",
        "test_outputs.py::test_param[2]",
        "test_outputs.py::test_range[2]",
        "test_outputs.py::test_range[3]",
        "test_outputs.py::test_sorted_keys[a]",
        "test_outputs.py::test_sorted_keys[b]",
        "test_outputs.py::test_items[b-1]",
        "test_outputs.py::test_items[a-2]",
        "test_outputs.py::TestC::test_class_constant[p]",
        "test_outputs.py::TestC::test_class_constant[q]",
    ]


def test_stacked_parametrize_and_duplicates():
    src = """
    import pytest

    @pytest.mark.parametrize("x", [0, 1])
    @pytest.mark.parametrize("y", ["a", "b"])
    def test_stack(x, y):
        pass

    @pytest.mark.parametrize("v", ["a", "a", 1, 1])
    def test_dups(v):
        pass
    """
    assert ids(src) == [
        "test_outputs.py::test_stack[a-0]",
        "test_outputs.py::test_stack[a-1]",
        "test_outputs.py::test_stack[b-0]",
        "test_outputs.py::test_stack[b-1]",
        "test_outputs.py::test_dups[a0]",
        "test_outputs.py::test_dups[a1]",
        "test_outputs.py::test_dups[1_0]",
        "test_outputs.py::test_dups[1_1]",
    ]


def test_parametrized_fixtures():
    src = """
    import pytest

    @pytest.fixture(params=["m1", "m2"])
    def base(request):
        return request.param

    @pytest.fixture
    def derived(base):
        return base

    @pytest.mark.parametrize("x", [1])
    def test_uses(derived, x):
        pass

    @pytest.mark.parametrize("base", ["direct"])
    def test_overrides(derived):
        pass
    """
    assert ids(src) == [
        "test_outputs.py::test_uses[m1-1]",
        "test_outputs.py::test_uses[m2-1]",
        "test_outputs.py::test_overrides[direct]",
    ]


def test_not_static_keeps_base_id():
    src = """
    import pytest

    def load():
        return [1, 2]

    @pytest.mark.parametrize("v", load())
    def test_dynamic(v):
        pass

    @pytest.mark.parametrize("v", [1, 2], ids=lambda v: str(v))
    def test_callable_ids(v):
        pass

    GROWN = [1]
    GROWN.append(2)

    @pytest.mark.parametrize("v", GROWN)
    def test_mutated(v):
        pass
    """
    assert ids(src) == [
        "test_outputs.py::test_dynamic", "test_outputs.py::test_callable_ids", "test_outputs.py::test_mutated"]


def test_string_escaping_matches_pytest():
    assert ascii_escaped("a\nb") == "a\\nb"
    assert ascii_escaped("é") == "\\xe9"
    src = """
    import pytest

    @pytest.mark.parametrize("s", ["tab\\there"])
    def test_s(s):
        pass
    """
    assert ids(src) == ["test_outputs.py::test_s[tab\\there]"]


def test_syntax_error_names_file(tmp_path):
    bad = tmp_path / "test_bad.py"
    bad.write_text("def test_x(:\n    pass\n", encoding="utf-8")
    with pytest.raises(ValueError, match="test_bad.py"):
        collect_file(bad, "test_bad.py")
