"""The names docs/comparison.md gives for the peers that are not test extras, as found in those peers: stored in
tests/test_comparison.py (``STORED``), and the parser of that page's tables the test uses too.

probmetrics, netcal and torchmetrics pull in PyTorch, and calibration-belt statsmodels, so they are not test extras
(shared/ORACLES.md): this script is run by hand in the virtualenv of tests/oracles/netcal_mmce.py, where they are
installed, and prints each page name that exists in its peer (import of the longest module prefix, then ``getattr``
along the rest) and takes the keywords the page shows with it, with the peer's version; a name that does not exist,
or lacks a keyword, is printed on standard error and left out, so the test fails on it. Produced with probmetrics
1.3.0, netcal 1.4.0, torchmetrics 1.9.0, calibration-belt 0.1.41, torch 2.13.0+cpu::

    /tmp/netcal-venv/bin/pip install probmetrics calibration-belt numba pandas   # numba, pandas: probmetrics
    PYTHONPATH=. /tmp/netcal-venv/bin/python tests/oracles/peer_names.py          # imports them, undeclared

The page's tables: one per section, a header row ``| feature | calframe | <peer> | ... | others |``, one row per
feature. A cell is "—" or code spans (`` `name` `` or `` `name(keyword=value, ...)` ``) with plain text between.
In the "others" column the peer of a span is read from its top-level module (:data:`OTHERS`). Only the standard
library is imported here: the test imports this module, and pytest collects it for its doctests.

>>> t = "## A\\n\\n| feature | calframe | netcal | others |\\n|---|---|---|---|\\n| x | `calframe.ece(bins=5)` | — | " \\
...     "betacal `betacal.BetaCalibration` |\\n"
>>> [(r.section, r.feature, r.cells["others"]) for r in rows(t)]
[('A', 'x', 'betacal `betacal.BetaCalibration`')]
>>> spans("`calframe.fit(\\"tree\\", by=\\"g\\")`, `calframe.ece`")
['calframe.fit("tree", by="g")', 'calframe.ece']
>>> parse('calframe.fit("tree", by="g")')
('calframe.fit', ('tree',), ('by',))
>>> peer_of("others", "calibration.get_ece"), peer_of("calibration-belt", "calibration.CalibrationBelt")
('uncertainty-calibration', 'calibration-belt')
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PAGE", "PEER_COLUMNS", "OTHERS", "STORED_PEERS", "Row", "rows", "spans", "parse", "peer_of", "resolve",
           "accepted", "main"]

PAGE = Path(__file__).resolve().parents[2] / "docs" / "comparison.md"

#: the page's peer columns and the package of each (the "others" column: by module, :data:`OTHERS`)
PEER_COLUMNS = {"model-diagnostics": "model-diagnostics", "probmetrics": "probmetrics", "netcal": "netcal",
                "calibration-belt": "calibration-belt", "relplot": "relplot", "scikit-learn": "scikit-learn"}

#: the "others" column: top-level module -> package (``calibration`` is uncertainty-calibration's module here;
#: calibration-belt's module has the same name and a column of its own)
OTHERS = {"calibration": "uncertainty-calibration", "betacal": "betacal", "venn_abers": "venn-abers",
          "torchmetrics": "torchmetrics"}

#: the peers that are not test extras: their names are checked against what this script stored
STORED_PEERS = ("probmetrics", "netcal", "torchmetrics", "calibration-belt")


@dataclass(frozen=True)
class Row:
    """One feature row: its section (the ``##`` heading), the feature (first cell) and the cells by column."""

    section: str
    feature: str
    cells: dict[str, str]


def rows(text: str) -> list[Row]:
    """Every feature row of every table of the page."""
    out: list[Row] = []
    section, header = "", None
    for line in text.splitlines():
        if line.startswith("## "):
            section, header = line[3:].strip(), None
        elif not line.startswith("|"):
            header = None
        else:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if header is None:
                header = cells
            elif not set("".join(cells)) <= set("-: "):
                out.append(Row(section, cells[0], dict(zip(header[1:], cells[1:], strict=True))))
    return out


def spans(cell: str) -> list[str]:
    """The code spans of a cell, in order."""
    return re.findall(r"`([^`]+)`", cell)


def parse(span: str) -> tuple[str, tuple[object, ...], tuple[str, ...]]:
    """A span as (dotted name, positional constants, keyword names); ValueError if it is not a name or a call of
    one with constant arguments."""
    node = ast.parse(span, mode="eval").body
    args: tuple[object, ...] = ()
    keywords: tuple[str, ...] = ()
    if isinstance(node, ast.Call):
        args = tuple(ast.literal_eval(a) for a in node.args)
        keywords = tuple(k.arg for k in node.keywords if k.arg is not None)
        for k in node.keywords:
            ast.literal_eval(k.value)
        node = node.func
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        raise ValueError(f"not a dotted name: {span!r}")
    return ".".join([node.id, *reversed(parts)]), args, keywords


def peer_of(column: str, name: str) -> str:
    """The package a peer name belongs to, from its column (the "others" column: from its top-level module)."""
    if column == "others":
        return OTHERS[name.split(".")[0]]
    return PEER_COLUMNS[column]


def resolve(name: str) -> object:
    """The object a dotted name names: the longest importable module prefix, then ``getattr`` along the rest
    (AttributeError or ImportError when it does not exist)."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            if i == 1:
                raise
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(name)


def accepted(obj: object) -> set[str]:
    """The keyword names a callable takes (every name when it takes ``**kwargs`` or has no signature)."""
    import inspect

    class Every(set):  # type: ignore[type-arg]
        def __rsub__(self, other: set[str]) -> set[str]:
            return set()

    try:
        params = inspect.signature(obj).parameters.values()  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return Every()
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return Every()
    return {p.name for p in params}


def main() -> dict[str, tuple[str, list[str]]]:
    from importlib.metadata import version

    names: dict[str, set[str]] = {p: set() for p in STORED_PEERS}
    keys: dict[str, set[str]] = {}
    for row in rows(PAGE.read_text()):
        for column, cell in row.cells.items():
            if column in ("calframe",):
                continue
            for span in spans(cell):
                name, _, keywords = parse(span)
                peer = peer_of(column, name)
                if peer in names:
                    names[peer].add(name)
                    keys[name] = keys.get(name, set()) | set(keywords)
    out: dict[str, tuple[str, list[str]]] = {}
    for peer, found in names.items():
        kept = []
        for name in sorted(found):
            try:
                missing = sorted(keys[name] - accepted(resolve(name)))
            except (ImportError, AttributeError) as e:
                print(f"{peer}: {name} does not exist ({e})", file=sys.stderr)
                continue
            if missing:
                print(f"{peer}: {name} takes no keywords {missing}", file=sys.stderr)
            else:
                kept.append(name)
        out[peer] = (version(peer), kept)
    return out


if __name__ == "__main__":
    for peer, (v, kept) in main().items():
        print(f"    {peer!r}: ({v!r}, {kept!r}),")
