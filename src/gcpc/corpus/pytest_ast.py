"""Enumerate a verifier's pytest tests statically, by AST, without importing the test code.

Checklist items are linked to verifier tests by pytest node id, so the ids here must match
what pytest itself would report (`test_outputs.py::TestX::test_y[param]`). Importing the
task's test modules is not an option (they need the task's container and may have side
effects), so parametrize ids are computed from the source, the way pytest 8 builds them
(the verifiers pin pytest 8.4; pytest 9 shortens auto ids of strings over 100 characters),
whenever the argument values are statically known. When they are not, the test keeps its
base id (no `[...]`), which still names the test function.

Covered: `@pytest.mark.parametrize` on functions, methods and classes (stacked marks,
`ids=`, `pytest.param(..., id=)`), and `@pytest.fixture(params=...)` defined in the same
module or class (conftest.py fixtures are not followed). Statically known means: Python
literals, names bound once at module or class level, tuples/lists (with `*` unpacking),
`range`/`list`/`tuple`, simple f-strings, `+`, subscripts and list comprehensions over such
values; functions and lambdas count by name, as in pytest. Nothing is evaluated with `eval`.
"""

from __future__ import annotations

import ast
import itertools
import math
import os
import textwrap
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gcpc.corpus.limits import read_text_bounded
from gcpc.corpus.models import VerifierTest

TEST_FUNC_PREFIX = "test_"
TEST_CLASS_PREFIX = "Test"


class NotStatic(Exception):
    """A parametrize argument whose value cannot be known without running the module."""


@dataclass(frozen=True)
class _Named:
    """A function, class or lambda: pytest ids use its `__name__`."""

    name: str


_DEF = object()  # marks a name bound by a def/class statement


@dataclass(frozen=True)
class _Param:
    """A `pytest.param(...)` entry: its values and optional explicit id."""

    values: tuple[Any, ...]
    id: str | None


# --- pytest's id rules (pytest 8: _pytest.python.IdMaker, _pytest.compat.ascii_escaped) ----

_NON_PRINTABLE = {i: f"\\x{i:02x}" for i in range(128) if i not in range(32, 127)}
_NON_PRINTABLE.update({ord("\t"): "\\t", ord("\r"): "\\r", ord("\n"): "\\n"})


def ascii_escaped(val: str | bytes) -> str:
    """pytest's escaping of string parameter values in ids."""
    if isinstance(val, bytes):
        ret = val.decode("ascii", "backslashreplace")
    else:
        ret = val.encode("unicode_escape").decode("ascii")
    return ret.translate(_NON_PRINTABLE)


def _idval(val: Any, argname: str, idx: int) -> str:
    if isinstance(val, (str, bytes)):
        return ascii_escaped(val)
    if val is None or isinstance(val, (bool, int, float, complex)):
        return str(val)
    if isinstance(val, _Named):
        return val.name
    return f"{argname}{idx}"


def _explicit_id(val: Any) -> str:
    if isinstance(val, (str, bytes)):
        return ascii_escaped(val)
    if isinstance(val, (bool, int, float, complex)):
        return str(val)
    raise NotStatic(f"unsupported explicit id {val!r}")


def _make_unique(ids: list[str]) -> list[str]:
    """pytest 8 disambiguates duplicate ids by appending a counter (`a0`, `a1`, `1_0`)."""
    counts = Counter(ids)
    if all(c == 1 for c in counts.values()):
        return ids
    suffixes: dict[str, int] = defaultdict(int)
    out = list(ids)
    taken = set(ids)
    for i, id_ in enumerate(ids):
        if counts[id_] > 1:
            sep = "_" if id_ and id_[-1].isdigit() else ""
            new = f"{id_}{sep}{suffixes[id_]}"
            while new in taken:
                suffixes[id_] += 1
                new = f"{id_}{sep}{suffixes[id_]}"
            out[i] = new
            taken.add(new)
            suffixes[id_] += 1
    return out


# --- static evaluation -------------------------------------------------------------------


class _Scope:
    """Names bound exactly once to an expression at module (or class) level."""

    def __init__(self, body: list[ast.stmt], parent: _Scope | None = None):
        self.parent = parent
        bound: dict[str, list[Any]] = defaultdict(list)
        for stmt in body:
            if isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    for name in _target_names(target):
                        bound[name].append(stmt.value if isinstance(target, ast.Name) else None)
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                bound[stmt.target.id].append(stmt.value)
            elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                bound[stmt.name].append(_DEF)
            else:  # if/for/try/with/import/augmented assignment, or a mutating call like X.append(...)
                for node in ast.walk(stmt):
                    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                        bound[node.id].append(None)
                    elif isinstance(node, ast.alias):
                        bound[(node.asname or node.name).split(".")[0]].append(None)
                    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(
                            node.func.value, ast.Name):
                        bound[node.func.value.id].append(None)
        self.values = {k: v[0] for k, v in bound.items() if len(v) == 1 and v[0] is not None}
        self.unknown = {k for k, v in bound.items() if not (len(v) == 1 and v[0] is not None)}

    def lookup(self, name: str) -> Any:
        """The expression bound to `name`, or `_DEF` for a def/class; NotStatic otherwise."""
        if name in self.values:
            return self.values[name]
        if name in self.unknown or self.parent is None:
            raise NotStatic(name)
        return self.parent.lookup(name)


def _target_names(target: ast.expr) -> list[str]:
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


_MAX_DEPTH = 50


def _eval(node: ast.expr, scope: _Scope, local: dict[str, Any] | None = None, depth: int = 0) -> Any:
    """Evaluate a small, side-effect-free subset of Python expressions."""
    if depth > _MAX_DEPTH:
        raise NotStatic("too deep")
    local = local or {}
    ev = lambda n: _eval(n, scope, local, depth + 1)  # noqa: E731
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in local:
            return local[node.id]
        bound = scope.lookup(node.id)
        if bound is _DEF:
            return _Named(node.id)
        return _eval(bound, scope, None, depth + 1)
    if isinstance(node, ast.Tuple):
        return tuple(_elements(node.elts, ev))
    if isinstance(node, ast.List):
        return _elements(node.elts, ev)
    if isinstance(node, ast.Lambda):
        return _Named("<lambda>")
    if isinstance(node, ast.Set):
        return frozenset(_elements(node.elts, ev))  # unordered: usable through sorted() only
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args
            and not node.keywords and node.func.attr in ("keys", "values", "items")):
        target = ev(node.func.value)
        if not isinstance(target, dict):
            raise NotStatic("dict view of a non-dict")
        return list(getattr(target, node.func.attr)())
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise NotStatic("dict unpacking")
        return {ev(k): ev(v) for k, v in zip(node.keys, node.values)}  # type: ignore[arg-type]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        val = ev(node.operand)
        if isinstance(val, bool) or not isinstance(val, (int, float, complex)):
            raise NotStatic("unary on non-number")
        return -val if isinstance(node.op, ast.USub) else +val
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = ev(node.left), ev(node.right)
        if type(left) is type(right) and isinstance(left, (str, list, tuple)):
            return left + right
        raise NotStatic("unsupported +")
    if isinstance(node, ast.Subscript):
        container, index = ev(node.value), ev(node.slice)
        try:
            return container[index]
        except Exception as exc:
            raise NotStatic("bad subscript") from exc
    if isinstance(node, ast.JoinedStr):
        parts = []
        for part in node.values:
            if isinstance(part, ast.Constant):
                parts.append(str(part.value))
            elif isinstance(part, ast.FormattedValue) and part.conversion == -1 and part.format_spec is None:
                val = ev(part.value)
                if not isinstance(val, (str, int, float)):
                    raise NotStatic("f-string of non-scalar")
                parts.append(str(val))
            else:
                raise NotStatic("f-string formatting")
        return "".join(parts)
    if isinstance(node, ast.ListComp) and len(node.generators) == 1:
        gen = node.generators[0]
        if gen.is_async or gen.ifs:
            raise NotStatic("comprehension with conditions")
        names = gen.target
        out = []
        for item in _iterable(ev(gen.iter)):
            inner = dict(local)
            _bind(names, item, inner)
            out.append(_eval(node.elt, scope, inner, depth + 1))
        return out
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _BUILTIN_CALLS:
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args) or _shadowed(node.func.id, scope):
            raise NotStatic("call")
        call_args = [ev(a) for a in node.args]
        try:
            return _BUILTIN_CALLS[node.func.id](*call_args)
        except NotStatic:
            raise
        except Exception as exc:
            raise NotStatic("builtin call failed") from exc
    if isinstance(node, ast.Call) and _dotted(node.func).split(".")[-1] == "param":
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise NotStatic("starred pytest.param")
        pid = None
        for kw in node.keywords:
            if kw.arg == "id":
                pid = ev(kw.value)
        return _Param(values=tuple(ev(a) for a in node.args), id=None if pid is None else _explicit_id(pid))
    raise NotStatic(type(node).__name__)


def _elements(elts: list[ast.expr], ev: Any) -> list[Any]:
    out: list[Any] = []
    for e in elts:
        if isinstance(e, ast.Starred):
            out.extend(_iterable(ev(e.value)))
        else:
            out.append(ev(e))
    return out


def _range(*args: Any) -> list[int]:
    if not all(isinstance(a, int) and not isinstance(a, bool) for a in args) or not 1 <= len(args) <= 3:
        raise NotStatic("range arguments")
    r = range(*args)
    if len(r) > 10_000:
        raise NotStatic("range too long")
    return list(r)


def _sorted(x: Any = ()) -> list[Any]:
    items = list(x) if isinstance(x, (set, frozenset)) else _iterable(x)
    return sorted(items)  # a TypeError (mixed types) becomes NotStatic in the caller


_BUILTIN_CALLS: dict[str, Any] = {
    "range": _range,
    "sorted": _sorted,
    "list": lambda x=(): list(_iterable(x)),
    "tuple": lambda x=(): tuple(_iterable(x)),
}


def _shadowed(name: str, scope: _Scope | None) -> bool:
    while scope is not None:
        if name in scope.values or name in scope.unknown:
            return True
        scope = scope.parent
    return False


def _iterable(val: Any) -> list[Any]:
    if isinstance(val, (list, tuple, str)):
        return list(val)
    if isinstance(val, dict):
        return list(val)
    raise NotStatic("not iterable")


def _bind(target: ast.expr, item: Any, local: dict[str, Any]) -> None:
    if isinstance(target, ast.Name):
        local[target.id] = item
    elif isinstance(target, ast.Tuple | ast.List):
        if not isinstance(item, (tuple, list)) or len(item) != len(target.elts):
            raise NotStatic("unpacking mismatch")
        for t, v in zip(target.elts, item):
            _bind(t, v, local)
    else:
        raise NotStatic("comprehension target")


# --- parametrize and parametrized fixtures -----------------------------------------------


def _is_parametrize(dec: ast.expr) -> bool:
    return isinstance(dec, ast.Call) and (_dotted(dec.func) + ".").endswith("mark.parametrize.")


def _argnames(node: ast.expr, scope: _Scope) -> list[str]:
    names = _eval(node, scope)
    if isinstance(names, str):
        return [n.strip() for n in names.split(",") if n.strip()]
    if isinstance(names, (list, tuple)) and all(isinstance(n, str) for n in names):
        return list(names)
    raise NotStatic("argnames")


def _ids_for(argnames: list[str], values_node: ast.expr, ids_node: ast.expr | None, scope: _Scope) -> list[str]:
    """pytest's ids for one parametrization (IdMaker): explicit ids first, else from the values."""
    values = _eval(values_node, scope)
    if not isinstance(values, (list, tuple)) or not values:
        raise NotStatic("argvalues not a non-empty list")
    explicit: list[Any] | None = None
    if ids_node is not None and not (isinstance(ids_node, ast.Constant) and ids_node.value is None):
        explicit = _eval(ids_node, scope)
        if not isinstance(explicit, (list, tuple)) or len(explicit) != len(values):
            raise NotStatic("ids is not a list as long as argvalues")
        explicit = list(explicit)
    ids: list[str] = []
    for idx, entry in enumerate(values):
        if isinstance(entry, _Param):
            vals, pid = entry.values, entry.id
        else:
            vals, pid = ((entry,) if len(argnames) == 1 else entry), None
            if not isinstance(vals, (tuple, list)):
                raise NotStatic("argvalue is not a tuple")
        if len(vals) != len(argnames):
            raise NotStatic("argvalue length mismatch")
        if pid is not None:
            ids.append(pid)
        elif explicit is not None and explicit[idx] is not None:
            ids.append(_explicit_id(explicit[idx]))
        else:
            ids.append("-".join(_idval(v, n, idx) for v, n in zip(vals, argnames)))
    return _make_unique(ids)


def _call_args(call: ast.Call, positional: list[str]) -> dict[str, ast.expr]:
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        raise NotStatic("starred arguments")
    out = dict(zip(positional, call.args))
    out.update({k.arg: k.value for k in call.keywords if k.arg})
    return out


def _parametrize_mark(call: ast.Call, scope: _Scope) -> tuple[list[str], list[str]]:
    """(argnames, ids) of one `@pytest.mark.parametrize(...)`."""
    args = _call_args(call, ["argnames", "argvalues", "indirect", "ids"])
    if "argnames" not in args or "argvalues" not in args:
        raise NotStatic("missing argnames/argvalues")
    names = _argnames(args["argnames"], scope)
    return names, _ids_for(names, args["argvalues"], args.get("ids"), scope)


_SCOPE_RANK = {"session": 0, "package": 1, "module": 2, "class": 3, "function": 4}
_FUNCTION_RANK = _SCOPE_RANK["function"]


@dataclass(frozen=True)
class _Fixture:
    """A fixture defined in the module or a test class; `ids` is set when it has params."""

    name: str
    rank: int
    argnames: tuple[str, ...]
    autouse: bool
    params: bool
    ids: tuple[str, ...] | None  # None with params=True: params not statically known


def _func_argnames(node: ast.FunctionDef | ast.AsyncFunctionDef, is_method: bool) -> list[str]:
    """pytest's getfuncargnames: arguments without defaults; a method's first one dropped."""
    a = node.args
    positional = list(a.args)
    required = positional[: len(positional) - len(a.defaults)]
    names = [x.arg for x in required]
    names += [x.arg for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is None]
    is_static = any(_dotted(d) == "staticmethod" for d in node.decorator_list)
    if is_method and not is_static and positional and names and names[0] == positional[0].arg:
        names = names[1:]
    return names


def _fixture_of(node: ast.stmt, scope: _Scope, is_method: bool) -> _Fixture | None:
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if not (_dotted(target) + ".").endswith("fixture."):
            continue
        kw = {k.arg: k.value for k in dec.keywords if k.arg} if isinstance(dec, ast.Call) else {}
        if isinstance(dec, ast.Call) and dec.args:  # fixture(fixture_function) or legacy positional scope
            kw.setdefault("scope", dec.args[0])

        def const(key: str, default: Any) -> Any:
            node_ = kw.get(key)
            return node_.value if isinstance(node_, ast.Constant) else default

        name = const("name", node.name)
        rank = _SCOPE_RANK.get(const("scope", "function"), _FUNCTION_RANK)
        ids: tuple[str, ...] | None = None
        if "params" in kw:
            try:
                ids = tuple(_ids_for([name], kw["params"], kw.get("ids"), scope))
            except NotStatic:
                ids = None
        return _Fixture(
            name=name,
            rank=rank,
            argnames=tuple(_func_argnames(node, is_method)),
            autouse=const("autouse", False) is True,
            params="params" in kw,
            ids=ids,
        )
    return None


def _fixtures_in(body: list[ast.stmt], scope: _Scope, is_method: bool) -> dict[str, _Fixture]:
    out: dict[str, _Fixture] = {}
    for stmt in body:
        fx = _fixture_of(stmt, scope, is_method)
        if fx is not None:
            out[fx.name] = fx  # a later definition overrides an earlier one
    return out


def _usefixtures(marks: list[ast.expr]) -> list[str]:
    names: list[str] = []
    for dec in marks:
        if isinstance(dec, ast.Call) and (_dotted(dec.func) + ".").endswith("mark.usefixtures."):
            names += [a.value for a in dec.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return names


def _param_suffixes(
    node: ast.FunctionDef | ast.AsyncFunctionDef,
    marks: list[ast.expr],
    scope: _Scope,
    fixture_chain: list[dict[str, _Fixture]],
    is_method: bool,
) -> list[str] | None:
    """All `[...]` suffixes of one test; None when it is not parametrized or not statically known.

    `marks` lists decorators in pytest's mark order: the function's own, closest to the `def`
    first, then those of its class(es), innermost first. As pytest does, the parametrized
    fixtures of the test's fixture closure (stable-sorted by scope) come first, then each
    parametrize mark; ids are joined with '-' in that order.
    """
    try:
        mark_ids = [_parametrize_mark(m, scope) for m in marks if _is_parametrize(m)]  # type: ignore[arg-type]
    except NotStatic:
        return None
    direct = {n for names, _ in mark_ids for n in names}

    def lookup(name: str) -> _Fixture | None:
        for level in fixture_chain:  # innermost class first, module last
            if name in level:
                return level[name]
        return None

    autouse = [fx.name for level in reversed(fixture_chain) for fx in level.values() if fx.autouse]
    closure: list[str] = []
    for n in autouse + _usefixtures(marks) + _func_argnames(node, is_method):
        if n not in closure:
            closure.append(n)
    i = 0
    while i < len(closure):
        name = closure[i]
        i += 1
        fx = lookup(name)
        if fx is None or name in direct:
            continue
        closure += [a for a in fx.argnames if a not in closure]
    ranked = sorted(closure, key=lambda n: (lookup(n).rank if lookup(n) and n not in direct else _FUNCTION_RANK))  # type: ignore[union-attr]
    fixture_ids: list[list[str]] = []
    for name in ranked:
        fx = lookup(name)
        if fx is None or name in direct or not fx.params:
            continue
        if fx.ids is None:
            return None
        fixture_ids.append(list(fx.ids))
    groups = fixture_ids + [ids for _, ids in mark_ids]
    if not groups:
        return None
    n = math.prod(len(g) for g in groups)
    if n > MAX_PARAM_IDS:
        raise TooManyIds(n)  # before expanding: a 140-byte file can stack parametrize to millions of ids
    return ["-".join(combo) for combo in itertools.product(*groups)]


MAX_PARAM_IDS = 10_000
"""Most parametrized ids collected for one test function; a test over the cap is collected once, noted."""


class TooManyIds(Exception):
    def __init__(self, n: int):
        super().__init__(n)
        self.n = n


# --- collection --------------------------------------------------------------------------


def _source_of(lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    start = min([node.lineno] + [d.lineno for d in node.decorator_list])
    end = node.end_lineno or node.lineno
    return textwrap.dedent("\n".join(lines[start - 1 : end]))


def _is_test_func(node: ast.stmt) -> bool:
    return isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(TEST_FUNC_PREFIX)


def _last_definitions(body: list[ast.stmt]) -> list[ast.stmt]:
    """A name defined twice is collected once, at its last definition (Python rebinds it)."""
    last: dict[str, int] = {}
    for i, stmt in enumerate(body):
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            last[stmt.name] = i
    return [s for i, s in enumerate(body) if not hasattr(s, "name") or last.get(s.name) == i]  # type: ignore[attr-defined]


PARSE_FILENAME = os.devnull
"""The file name `ast.parse` is given for source that is not read from a file: CPython re-opens the file name of a
syntax error (an over-long integer literal, say) to show its line, so a relative name ('test_outputs.py', or the
default '<unknown>') would read a same-named file of the working directory (issue 39); the null device reads as
empty, and the parser then shows the line from the source it was given."""


def collect_source(source: str, file: str, notes: list[str] | None = None, label: str | None = None,
                   origin: str | None = None) -> list[VerifierTest]:
    """Every pytest test in one test module's source; `file` is its path relative to tests/; `origin` its absolute
    path when read from a file (the only name the parser may re-open). A test whose parametrize marks expand past
    `MAX_PARAM_IDS` is collected once, with a note."""
    filename = origin if origin and os.path.isabs(origin) else PARSE_FILENAME
    try:
        with warnings.catch_warnings():  # e.g. invalid escape sequences in the task's test code
            warnings.simplefilter("ignore")
            tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise ValueError(f"{file}: cannot parse test module (line {exc.lineno}: {exc.msg})") from exc
    lines = source.splitlines()
    module_scope = _Scope(tree.body)
    module_fixtures = _fixtures_in(tree.body, module_scope, is_method=False)
    out: list[VerifierTest] = []

    def emit(node: ast.FunctionDef | ast.AsyncFunctionDef, cls_path: list[str], scope: _Scope,
             cls_marks: list[ast.expr], chain: list[dict[str, _Fixture]]) -> None:
        base = "::".join([file, *cls_path, node.name])
        src = _source_of(lines, node)
        marks = list(reversed(node.decorator_list)) + cls_marks
        try:
            suffixes = _param_suffixes(node, marks, scope, chain, is_method=bool(cls_path))
        except TooManyIds as exc:
            suffixes = None
            if notes is not None:
                notes.append(f"{label or file}: {'::'.join([*cls_path, node.name])} expands to {exc.n} parametrized ids "
                             f"(over the cap of {MAX_PARAM_IDS}); collected as one test")
        cls = "::".join(cls_path) or None
        for suffix in suffixes or [None]:
            test_id = base if suffix is None else f"{base}[{suffix}]"
            out.append(VerifierTest(id=test_id, file=file, name=node.name, cls=cls, source=src))

    def visit_class(node: ast.ClassDef, cls_path: list[str], outer_marks: list[ast.expr],
                    outer_chain: list[dict[str, _Fixture]]) -> None:
        body = _last_definitions(node.body)
        if any(isinstance(s, ast.FunctionDef) and s.name == "__init__" for s in body):
            return  # pytest refuses to collect test classes with a constructor
        scope = _Scope(node.body, module_scope)
        marks = list(reversed(node.decorator_list)) + outer_marks
        chain = [_fixtures_in(node.body, scope, is_method=True), *outer_chain]
        for stmt in body:
            if _is_test_func(stmt):
                emit(stmt, [*cls_path, node.name], scope, marks, chain)  # type: ignore[arg-type]
            elif isinstance(stmt, ast.ClassDef) and stmt.name.startswith(TEST_CLASS_PREFIX):
                visit_class(stmt, [*cls_path, node.name], marks, chain)

    for stmt in _last_definitions(tree.body):
        if _is_test_func(stmt):
            emit(stmt, [], module_scope, [], [module_fixtures])  # type: ignore[arg-type]
        elif isinstance(stmt, ast.ClassDef) and stmt.name.startswith(TEST_CLASS_PREFIX):
            visit_class(stmt, [], [], [module_fixtures])
    return out


def collect_file(path: str | Path, file: str, notes: list[str] | None = None, label: str | None = None) -> list[VerifierTest]:
    """Read one test module (UTF-8) and enumerate its tests; errors name the file."""
    path = Path(path)
    try:  # a leading BOM: read, not kept; within the byte limit of a task file (gcpc.corpus.limits)
        source = read_text_bounded(path, "task_file", label).removeprefix("\ufeff")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot read test module ({exc})") from exc
    try:
        return collect_source(source, file, notes, label, origin=os.path.abspath(path))
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from exc
