"""The package's layering (issue 24): no import cycle among calframe's modules, no module outside
``_kernels/`` over 800 lines (a list of the ones still to split, which may only shrink), and at most 5
frame-type tests outside ``engines/`` and ``frames/`` (a list of the allowed ones, which may only shrink).

Every ``import`` / ``from ... import`` statement counts, at module level or inside a function: a function-level
import is still a dependency, and a cycle through one is a layer that calls back up. So does an import by name:
``importlib.import_module("calframe.x")``, ``LazyModule("calframe.x")`` and ``lazy_function("calframe.x", ...)``. ``from pkg import name``
depends on the submodule ``pkg.name`` when there is one, else on ``pkg``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "calframe"
MAX_LINES = 800
#: modules over MAX_LINES still to split (issue 24); a module leaves the list when it is split
STILL_LONG: set[str] = set()


def modules() -> dict[str, Path]:
    out = {}
    for f in PACKAGE.rglob("*.py"):
        parts = list(f.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = f
    return out


def imported_from(node: ast.ImportFrom, name: str, is_pkg: bool) -> str:
    """The module a ``from ... import`` statement of module ``name`` imports from (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    is_pkg = path.name == "__init__.py"
    deps: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            deps |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom):
            prefix = imported_from(node, name, is_pkg)
            subs = {f"{prefix}.{a.name}" for a in node.names if f"{prefix}.{a.name}" in known}
            deps |= subs
            if len(subs) < len(node.names) and prefix in known:
                deps.add(prefix)
        elif isinstance(node, ast.Call) and _dynamic(node) in known:  # importlib.import_module("calframe.x"), ...
            deps.add(_dynamic(node))
    deps.discard(name)
    return deps


#: calls that import the module named by their first argument: importlib's, and calframe._imports's stand-ins
DYNAMIC = {"import_module", "LazyModule", "lazy_function"}


def _dynamic(node: ast.Call) -> str | None:
    """The module a call imports by name (a string literal first argument of a :data:`DYNAMIC` call)."""
    fn = node.func
    called = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else None
    if called in DYNAMIC and node.args and isinstance(node.args[0], ast.Constant) and isinstance(
            node.args[0].value, str):
        return node.args[0].value
    return None


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle():
    known = modules()
    graph = {m: imports_of(m, p, known) for m, p in known.items()}
    assert graph["calframe.api"] and graph["calframe.engines.eager"], "the import graph was not read"
    found = cycles(graph)
    detail = [{m: sorted(graph[m] & set(c)) for m in c} for c in found]
    assert not found, detail


def test_the_cycle_check_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("path", sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                                        if "_kernels" not in p.parts))
def test_modules_are_at_most_800_lines(path):
    assert STILL_LONG <= {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")}, "a STILL_LONG module is gone"
    n = len((PACKAGE / path).read_text(encoding="utf-8").splitlines())
    if path in STILL_LONG:
        assert n > MAX_LINES, f"{path} is {n} lines now: take it off STILL_LONG"
    else:
        assert n <= MAX_LINES, f"{path}: {n} lines (at most {MAX_LINES} outside _kernels/)"


#: a frame-type test: an isinstance check against a frame type, a call of the kind detectors (issue 24's grep)
FRAME_TYPE_TEST = re.compile(r"isinstance\([^)]*(DataFrame|LazyFrame|Table\b|RecordBatch)|is_dask_frame|native_kind\(")
#: where frame-type tests belong: the engines and the frames' own modules (frames/kinds.py, frames/convert.py, ...)
FRAME_TYPE_HOMES = ("engines", "frames")
#: frame-type tests still allowed elsewhere, as (module path, the line's text stripped), each with its reason;
#: at most MAX_FRAME_TYPE_TESTS, and the list may only shrink. None is left: every decision is a function of
#: frames/convert.py (reading, measuring, converting a frame) or of the engines (engines.route / in_memory /
#: collected / apply: where a family's call runs)
ALLOWED_FRAME_TYPE_TESTS: dict[tuple[str, str], str] = {}
MAX_FRAME_TYPE_TESTS = 5


def frame_type_tests() -> list[tuple[str, int, str]]:
    """The frame-type tests outside engines/ and frames/: (path in the package, line number, the line stripped)."""
    out = []
    for f in sorted(PACKAGE.rglob("*.py")):
        rel = f.relative_to(PACKAGE)
        if rel.parts[0] in FRAME_TYPE_HOMES:
            continue
        for i, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            if FRAME_TYPE_TEST.search(line):
                out.append((str(rel), i, line.strip()))
    return out


def test_frame_type_tests_live_in_the_engines_and_frames():
    assert len(ALLOWED_FRAME_TYPE_TESTS) <= MAX_FRAME_TYPE_TESTS
    found = frame_type_tests()
    unexpected = [t for t in found if (t[0], t[2]) not in ALLOWED_FRAME_TYPE_TESTS]
    assert not unexpected, ("a frame-type test outside calframe/engines/ and calframe/frames/: ask "
                            "calframe.frames.convert (read, measure, convert a frame) or the engines (engines.route, "
                            f"in_memory, collected: where a call runs) instead: {unexpected}")
    assert len(found) <= MAX_FRAME_TYPE_TESTS, found
    gone = set(ALLOWED_FRAME_TYPE_TESTS) - {(t[0], t[2]) for t in found}
    assert not gone, f"allowed frame-type tests no longer there: take them off ALLOWED_FRAME_TYPE_TESTS: {gone}"


def test_the_frame_type_rule_finds_the_tests():
    for line in ("if isinstance(frame, pl.LazyFrame):", "isinstance(x, (pl.DataFrame, pd.DataFrame))",
                 "isinstance(t, pa.Table)", "isinstance(b, pa.RecordBatch)", "if is_dask_frame(frame):",
                 "kind = native_kind(frame)", "from ..frames.kinds import is_dask_frame"):
        assert FRAME_TYPE_TEST.search(line), line
    for line in ("isinstance(dtype, pl.Date)", "convert.collect(out)", "isinstance(x, TableTooLargeError)"):
        assert not FRAME_TYPE_TEST.search(line), line


# --------------------------------------------------------------------------- private names stay in their module

#: the most private names (a leading underscore) one calframe module may take from another (issue 29: 209 once).
#: A package-private *module* (``calframe._errors``, ``engines._lazy_plan``) is imported freely inside calframe: its
#: underscore says "not for users", not "not for the next module".
MAX_PRIVATE_IMPORTS = 20


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_imports(source: str, name: str, is_pkg: bool, known: dict[str, Path]) -> set[tuple[str, str]]:
    """(module, name) of each private name module ``name`` (source ``source``) takes from another calframe module:
    ``from m import _x`` (``_x`` not a submodule) and ``alias._x`` with ``alias`` an imported calframe module."""
    tree = ast.parse(source)
    aliases: dict[str, str] = {}
    found: set[tuple[str, str]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            prefix = imported_from(node, name, is_pkg)
            for a in node.names:
                full = f"{prefix}.{a.name}"
                if full in known:
                    aliases[a.asname or a.name] = full
                elif prefix in known and prefix != name and _private(a.name):
                    found.add((prefix, a.name))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name in known and a.asname:
                    aliases[a.asname] = a.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and _private(node.attr) and aliases[node.value.id] != name
                and f"{aliases[node.value.id]}.{node.attr}" not in known):
            found.add((aliases[node.value.id], node.attr))
    return found


def test_private_names_stay_in_their_module():
    known = modules()
    found = {(user, *pair) for user, path in known.items()
             for pair in private_imports(path.read_text(encoding="utf-8"), user, path.name == "__init__.py", known)}
    assert len(found) <= MAX_PRIVATE_IMPORTS, (
        f"{len(found)} private names are used outside their module (at most {MAX_PRIVATE_IMPORTS}): make a name "
        f"another module needs public in its own module (no leading underscore): {sorted(found)[:30]}")


def test_the_private_name_rule_finds_them():
    known = {"calframe.engines.lazy": Path("x"), "calframe.engines.eager": Path("x"), "calframe.engines": Path("x")}
    src = ("from .lazy import _collect, run\nfrom . import eager as E\nE._evaluate(1)\nE.evaluate(2)\n"
           "from ._lazy_plan import _P\n")
    got = private_imports(src, "calframe.engines.narwhals", False, known)
    assert got == {("calframe.engines.lazy", "_collect"), ("calframe.engines.eager", "_evaluate")}, got
