"""What runs where, declared once: each public function's state, each engine's capabilities, and the one choice
between them (docs/design.md, "The seam").

- A public function that takes a frame declares the **state** it is computed from (:data:`STATES`), with
  :func:`calframe.frames.dispatch.public` (``@public(state="bin_sums")``): the per (group, bin) sums of the CE
  family, the row means of the companions, and so on. :func:`declare` records it in :data:`DECLARED`, in
  definition order: ``df.calib``'s methods, the support matrix and the engines' lists all read it.
- An **engine** is one module of ``calframe.engines`` with a ``CAPABILITIES`` mapping: kind of frame ->
  :class:`Capabilities` (the states it computes where the rows are, those it collects into memory first), and
  optionally ``call(name, fn, args, kwargs)``, its entry for a public function (refusing, collecting or running
  it). :data:`ENGINES` is the registry: one line per kind of frame, the class that has it and the engine
  module. Adding an engine is one module and one line here.
- :func:`how` is the one choice: ``"eager"``, ``"streamed"``, ``"native"``, ``"collected"`` or
  ``"refused"`` for a function on a kind of frame.

Nothing is imported here: a frame can only be of a library's type once that library has been imported, so
:func:`kind_of` tests an object against the classes of the modules already in ``sys.modules``, and an
engine module is imported when its kind of frame first arrives.

>>> import polars as pl
>>> kind_of(pl.DataFrame({"a": [1]})), kind_of(pl.LazyFrame()), kind_of([1])
('polars', 'lazy', None)
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from typing import Any, NamedTuple

__all__ = ["STATES", "Declaration", "DECLARED", "declare", "functions", "Capabilities", "EVERY_STATE", "Engine",
           "ENGINES", "KINDS", "instance", "kind_of", "engine", "how", "functions_on"]

#: the states a public function is computed from; an engine that computes one natively runs every function of it
STATES = {
    "bin_sums": "per (group, bin) sums of weight, weight x output and weight x label (the CE family, vece, ACE)",
    "bin_table": "the per (group, bin) sums with the rows per bin and the bins' edges (reliability)",
    "row_means": "per group sums of weight and weight x a row's value (brier, log_loss, accuracy)",
    "grid_sums": "per (group, grid node) sums of the rows spread on a grid (the smooth ECE)",
    "vector_sums": "per (group, cell) sums of lensed vectors (GECE)",
    "groups": "another figure's per-group result, compared across the groups (disparity)",
    "variables": "the bin sums of several variables, or a smoother along one (vece_rank, vce_curve)",
    "local": "kernel-weighted sums around every row (the local calibration errors)",
    "simulation": "the rows, resampled (calibration_test)",
    "windows": "one figure per time window (monitor)",
    "fit": "the rows a recalibrator is fitted on",
    "batches": "a recalibrator applied batch by batch (apply)",
}


@dataclass(frozen=True)
class Declaration:
    """A public function of a frame: its name, the states it is computed from (all of them needed) and its
    keyword parameters' group (the TypedDict of ``request.keywords``, None for a function without one)."""

    name: str
    states: tuple[str, ...]
    params: type | None = None


#: every public function of a frame, in definition order
DECLARED: dict[str, Declaration] = {}


def declare(name: str, state: str | tuple[str, ...], params: type | None = None) -> Declaration:
    """Record that the public function ``name`` is computed from ``state`` (a key of :data:`STATES`, or several,
    all needed: ``summary`` is bin sums and row means), with the keyword parameters of group ``params``."""
    states = (state,) if isinstance(state, str) else tuple(state)
    unknown = [s for s in states if s not in STATES]
    if not states or unknown:
        raise ValueError(f"{name}: unknown states {unknown or states}; one of {sorted(STATES)}")
    DECLARED[name] = Declaration(name, states, params)
    return DECLARED[name]


def functions() -> tuple[str, ...]:
    """The declared public functions, in definition order (importing :mod:`calframe` declares them all)."""
    return tuple(DECLARED)


@dataclass(frozen=True)
class Capabilities:
    """What an engine does with one kind of frame: the states it computes where the rows are (``native``), and
    those it collects into one in-memory frame first (``collects``; None: every other state). ``word`` is what
    the support matrix calls a native cell ("streamed" for Polars' streaming engine, "eager" for the in-memory
    frames)."""

    native: frozenset[str]
    collects: frozenset[str] | None = frozenset()
    word: str = "native"

    def how(self, states: tuple[str, ...]) -> str:
        if all(s in self.native for s in states):
            return self.word
        if self.collects is None or all(s in self.native or s in self.collects for s in states):
            return "collected"
        return "refused"


#: every state: the eager engine's capabilities on in-memory frames
EVERY_STATE = frozenset(STATES)


class Engine(NamedTuple):
    """One line of the registry: the kind of frame, the class that has it (module, name) and its engine."""

    kind: str
    module: str
    cls: str
    engine: str


#: the registry, in the order :func:`kind_of` tries the classes
ENGINES = (
    Engine("polars", "polars", "DataFrame", "calframe.engines.eager"),
    Engine("lazy", "polars", "LazyFrame", "calframe.engines.lazy"),
    Engine("pandas", "pandas", "DataFrame", "calframe.engines.eager"),
    Engine("pyarrow", "pyarrow", "Table", "calframe.engines.narwhals"),
    Engine("duckdb", "duckdb", "DuckDBPyRelation", "calframe.engines.narwhals"),
    Engine("ibis", "ibis.expr.types", "Table", "calframe.engines.narwhals"),
    Engine("spark", "pyspark.sql", "DataFrame", "calframe.engines.narwhals"),
    Engine("spark", "pyspark.sql.connect.dataframe", "DataFrame", "calframe.engines.narwhals"),
    Engine("dask", "dask.dataframe", "DataFrame", "calframe.engines.dask"),
)

#: the kinds of frame, once each, in the registry's order
KINDS = tuple(dict.fromkeys(e.kind for e in ENGINES))


def instance(obj: Any, module: str, name: str) -> bool:
    """Whether ``obj`` is of ``module``'s class ``name`` (False while the module has not been imported)."""
    cls = getattr(sys.modules.get(module), name, None)
    return isinstance(cls, type) and isinstance(obj, cls)


def kind_of(frame: Any) -> str | None:
    """The kind of ``frame`` (a key of the registry: "polars", "lazy", "pandas", "duckdb", ...), None when no
    engine takes it."""
    for e in ENGINES:
        if instance(frame, e.module, e.cls):
            return e.kind
    return None


def engine(kind: str) -> Any:
    """The engine module of ``kind`` (imported now)."""
    return importlib.import_module(next(e.engine for e in ENGINES if e.kind == kind))


def how(name: str, kind: str) -> str:
    """How the public function ``name`` runs on a frame of ``kind``: ``"eager"``, ``"streamed"``,
    ``"native"``, ``"collected"`` or ``"refused"`` (its declared states against the engine's capabilities)."""
    if name not in DECLARED or kind not in KINDS:
        raise KeyError((name, kind))
    return engine(kind).CAPABILITIES[kind].how(DECLARED[name].states)


def functions_on(kind: str, *hows: str) -> tuple[str, ...]:
    """The declared functions that run on ``kind`` in one of the ways ``hows``, in definition order."""
    return tuple(n for n in DECLARED if how(n, kind) in hows)
