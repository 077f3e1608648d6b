"""The package's layering (issue 24): no import cycle among calframe's modules, and no module outside
``_kernels/`` over 800 lines (a list of the ones still to split, which may only shrink).

Every ``import`` / ``from ... import`` statement counts, at module level or inside a function: a function-level
import is still a dependency, and a cycle through one is a layer that calls back up. ``from pkg import name``
depends on the submodule ``pkg.name`` when there is one, else on ``pkg``."""

from __future__ import annotations

import ast
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


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    is_pkg = path.name == "__init__.py"
    deps: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            deps |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            subs = {f"{prefix}.{a.name}" for a in node.names if f"{prefix}.{a.name}" in known}
            deps |= subs
            if len(subs) < len(node.names) and prefix in known:
                deps.add(prefix)
    deps.discard(name)
    return deps


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
