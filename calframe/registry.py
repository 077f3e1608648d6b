"""What runs where, declared once: each public function's state, each engine's capabilities, and the one choice
between them (docs/design.md, "The seam").

- A public function that takes a frame declares the **state** it is computed from (:data:`STATES`), with
  :func:`calframe.frames.dispatch.public` (``@public(state="bin_sums")``): the per (group, bin) sums of the CE
  family, the row means of the companions, and so on. :func:`declare` records it in :data:`DECLARED`, in
  definition order: ``df.calib``'s methods, the support matrix and the engines' lists all read it.
- An **engine** is one module of ``calframe.engines`` with a ``CAPABILITIES`` mapping: kind of frame ->
  :class:`Capabilities` (the states it computes where the rows are, those it collects into memory first), and
  optionally ``call(name, fn, args, kwargs)``, its own run of a public function the route let through, and
  ``returned(out, kind)``, the result in the input's type. :data:`ENGINES` is the registry: one line per kind of frame, the class that has it and the engine
  module. Adding an engine is one module and one line here.
- :func:`route` is the one choice: ``"eager"``, ``"streamed"``, ``"native"``, ``"collected"`` or
  ``"refused"`` for a call on a frame, and why. Given a function's name it answers for its default call from its
  states (the support matrix; a public function's entry, before its call is parsed, where no parameter can make
  a state native that is not); given the parsed request, from its states and its parameters: the engine's
  ``supports(req, state, frame)`` says what of the call it does not run where the rows are. Nothing else
  decides, and nothing retries by exception.

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
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, NamedTuple

__all__ = ["STATES", "SURFACES", "Column", "Figure", "Declaration", "figures", "figure_of", "column", "DECLARED", "declare", "functions", "Capabilities", "EVERY_STATE", "Engine",
           "ENGINES", "KINDS", "instance", "kind_of", "engine", "how", "functions_on", "Route", "route", "calling_on", "called", "ENGINE_OF"]

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
    "sorted_rows": "each group's rows in order of the prediction (the KS and Kuiper calibration errors, the MMCE, the CORP "
                   "decomposition)",
    "windows": "one figure per time window (monitor)",
    "fit": "the rows a recalibrator is fitted on",
    "batches": "a recalibrator applied batch by batch (apply)",
}


#: the surfaces that list figures: each shows every declared figure that names it in :attr:`Figure.on`
SURFACES = ("disparity", "monitor", "expr", "sklearn", "sql", "report")


@dataclass(frozen=True)
class Column:
    """One column of a figure's result: its name, the report's header for it, what a good value looks like and
    the direction in which it is better (``"lower"``: an error; ``"higher"``: accuracy). A column another
    figure owns (``summary``'s ``ece``) is named only: ``Column("ece")``; :func:`column` finds its owner's."""

    name: str
    label: str = ""
    meaning: str = ""
    better: str = "lower"

    def __post_init__(self) -> None:
        if self.better not in ("lower", "higher"):
            raise ValueError(f"{self.name}: better is 'lower' or 'higher', not {self.better!r}")


@dataclass(frozen=True)
class Figure:
    """The figure table's row of a public function whose result is figures per group (docs/design.md, "The
    figure table"): its output ``columns`` (beside the keys and ``n``), whether it is measured under a ``lens``
    (the plots name it), the surfaces of :data:`SURFACES` it appears on (``on``) and, for a figure of the bin
    sums on "sql", its finalize in SQL (``sql``): one aggregate per column over the rows of a group's bins, whose
    columns are ``n`` (the bin's rows), ``conf`` and ``acc`` (its mean confidence and mean outcome)
    (:func:`calframe.sql.figure_query`). Every surface reads this table: no list of figures anywhere else."""

    columns: tuple[Column, ...]
    lensed: bool = False
    #: None: every surface, "sql" only with a ``sql`` finalize
    on: frozenset[str] | None = None
    sql: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.on is None:
            object.__setattr__(self, "on", frozenset(SURFACES) - (frozenset() if self.sql else {"sql"}))
        if not self.columns or not set(self.on) <= set(SURFACES):
            raise ValueError(f"a figure: its columns, and surfaces among {SURFACES}: {self}")
        if ("sql" in self.on) != (self.sql is not None) or len(self.sql or self.columns) != len(self.columns):
            raise ValueError(f"a figure on 'sql' has its finalize in SQL, one aggregate per column: {self}")

    @property
    def names(self) -> tuple[str, ...]:
        """The output columns' names."""
        return tuple(c.name for c in self.columns)


@dataclass(frozen=True)
class Declaration:
    """A public function of a frame: its name, the states it is computed from (all of them needed), its keyword
    parameters' group (the TypedDict of ``request.keywords``, None for a function without one), its row of the
    figure table (None: its result is not figures per group, e.g. ``fit``) and the function itself."""

    name: str
    states: tuple[str, ...]
    params: type | None = None
    figure: Figure | None = None
    fn: Any = None


#: every public function of a frame, in definition order
DECLARED: dict[str, Declaration] = {}


def declare(name: str, state: str | tuple[str, ...], params: type | None = None, figure: Figure | None = None,
            fn: Any = None) -> Declaration:
    """Record that the public function ``name`` (``fn``) is computed from ``state`` (a key of :data:`STATES`, or
    several, all needed: ``summary`` is bin sums and row means), with the keyword parameters of group ``params``
    and, when its result is figures per group, its row of the figure table (``figure``)."""
    states = (state,) if isinstance(state, str) else tuple(state)
    unknown = [s for s in states if s not in STATES]
    if not states or unknown:
        raise ValueError(f"{name}: unknown states {unknown or states}; one of {sorted(STATES)}")
    DECLARED[name] = Declaration(name, states, params, figure, fn)
    return DECLARED[name]


def functions() -> tuple[str, ...]:
    """The declared public functions, in definition order (importing :mod:`calframe` declares them all)."""
    return tuple(DECLARED)


def figures(on: str | None = None) -> tuple[str, ...]:
    """The public functions whose results are figures per group (the figure table), in definition order; with
    ``on`` (one of :data:`SURFACES`), those that appear on that surface."""
    if on is not None and on not in SURFACES:
        raise KeyError(on)
    return tuple(n for n, d in DECLARED.items() if d.figure is not None and (on is None or on in d.figure.on))


def column(name: str) -> Column | None:
    """The figure table's column ``name`` as its owner declares it (the first with a label), None for a column no
    figure has (``n``, a group key)."""
    for d in DECLARED.values():
        for c in d.figure.columns if d.figure is not None else ():
            if c.name == name and c.label:
                return c
    return None


def figure_of(name: str) -> Figure:
    """The figure table's row of the public function ``name`` (KeyError when it has none)."""
    d = DECLARED.get(name)
    if d is None or d.figure is None:
        raise KeyError(name)
    return d.figure


@dataclass(frozen=True)
class Capabilities:
    """What an engine does with one kind of frame: the states it computes where the rows are (``native``), and
    those it collects into one in-memory frame first (``collects``; None: every other state). ``word`` is what
    the support matrix calls a native cell ("streamed" for Polars' streaming engine, "eager" for the in-memory
    frames). ``outside``: what happens to a call of a native state whose parameters the engine does not run
    there (its ``supports`` names them): "collected" where the engine collects (default: when it collects every
    state), else "refused"."""

    native: frozenset[str]
    collects: frozenset[str] | None = frozenset()
    word: str = "native"
    outside: str | None = None

    def __post_init__(self) -> None:
        if self.outside is None:
            object.__setattr__(self, "outside", "collected" if self.collects is None else "refused")

    def how(self, states: tuple[str, ...]) -> str:
        if self.native.issuperset(states):
            return self.word
        if self.collects is None or (self.native | self.collects).issuperset(states):
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
    Engine("lazy", "polars", "LazyFrame", "calframe.engines.streaming"),
    Engine("pandas", "pandas", "DataFrame", "calframe.engines.eager"),
    Engine("pyarrow", "pyarrow", "Table", "calframe.engines.native"),
    Engine("duckdb", "duckdb", "DuckDBPyRelation", "calframe.engines.native"),
    Engine("ibis", "ibis.expr.types", "Table", "calframe.engines.native"),
    Engine("spark", "pyspark.sql", "DataFrame", "calframe.engines.native"),
    Engine("spark", "pyspark.sql.connect.dataframe", "DataFrame", "calframe.engines.native"),
    Engine("dask", "dask.dataframe", "DataFrame", "calframe.engines.partitions"),
)

#: the kinds of frame, once each, in the registry's order
KINDS = tuple(dict.fromkeys(e.kind for e in ENGINES))


def instance(obj: Any, module: str, name: str) -> bool:
    """Whether ``obj`` is of ``module``'s class ``name`` (False while the module has not been imported)."""
    cls = getattr(sys.modules.get(module), name, None)
    return isinstance(cls, type) and isinstance(obj, cls)


def kind_of(frame: Any) -> str | None:
    """The kind of ``frame`` (a key of the registry: "polars", "lazy", "pandas", "duckdb", ...), None when no
    engine takes it; the public call's frame's, detected once (:func:`calling_on`)."""
    call = _CALL.get()
    if call is not None and call[0] is frame:
        return call[1]
    for e in ENGINES:
        if instance(frame, e.module, e.cls):
            return e.kind
    return None


#: the engine module's name of each kind of frame
ENGINE_OF = {e.kind: e.engine for e in ENGINES}


def engine(kind: str) -> Any:
    """The engine module of ``kind`` (imported now)."""
    return importlib.import_module(ENGINE_OF[kind])


def how(name: str, kind: str) -> str:
    """How the public function ``name``'s default call runs on a frame of ``kind``: ``"eager"``,
    ``"streamed"``, ``"native"``, ``"collected"`` or ``"refused"`` (:func:`route`)."""
    if name not in DECLARED or kind not in KINDS:
        raise KeyError((name, kind))
    return route(name, kind=kind).how


class Route(NamedTuple):
    """Where a call runs (:func:`route`): the frame's ``kind`` (None: not a frame of the registry, the eager
    engine's arguments), ``how`` (a word of the support matrix) and ``why``: what of the call the engine does
    not run where the rows are, when it is collected or refused (None when it runs there)."""

    kind: str | None
    how: str
    why: str | None = None

    @property
    def engine(self) -> Any:
        """The engine module (the eager engine for a frame of no kind)."""
        return engine(self.kind or "polars")

    @property
    def here(self) -> bool:
        """Whether the engine of the frame's kind runs the call where the rows are (eager, streamed, native)."""
        return self.how not in ("collected", "refused")

    def refusal(self, func: str) -> Exception:
        """The error of a refused call (the engine's ``refuse(func, kind, why)``: what runs there instead)."""
        return self.engine.refuse(func, self.kind, self.why or f"calframe.{func}")


_UNSET: Any = object()

#: the frame of the public call running now and its kind (:func:`calling_on`): detected once per call
_CALL: ContextVar[tuple[Any, str | None] | None] = ContextVar("calframe_call", default=None)


def calling_on(frame: Any) -> tuple[str | None, Any]:
    """Detect ``frame``'s kind once for the public call about to run: (its kind, the token that
    :func:`called` takes when the call returns); :func:`kind_of` answers from it meanwhile."""
    kind = kind_of(frame)
    return kind, _CALL.set((frame, kind))


def called(token: Any) -> None:
    """The public call of :func:`calling_on`'s ``token`` has returned."""
    _CALL.reset(token)


def route(call: Any, frame: Any = None, *, kind: Any = _UNSET, state: str | None = None) -> Route:
    """Where ``call`` runs on ``frame`` (or on a frame of ``kind``): the one decision of calframe.

    ``call``: a public function's name (its default call: its declared states against the engine's
    capabilities) or its parsed :class:`~calframe.request.Request` (then also its parameters: the engine's
    ``supports(req, state, frame)``, None when it runs them, else what it does not run); ``state``: the state
    the request is computed from (default: the function's declared ones). A call of a native state that the
    engine does not run is collected or refused as its capabilities say (``outside``).

    >>> route("ece", kind="duckdb").how, route("lce", kind="duckdb").how, route("ece", kind="polars").how
    ('native', 'refused', 'eager')
    """
    k = kind_of(frame) if kind is _UNSET else kind
    name = call if isinstance(call, str) else call.func
    if k is None:
        return Route(None, "eager")
    caps = engine(k).CAPABILITIES[k]
    states = (state,) if state is not None else DECLARED[name].states
    how_ = caps.how(states)
    if how_ == "refused":
        return Route(k, how_, f"calframe.{name}")
    if how_ in ("collected", "eager") or isinstance(call, str):  # the eager engine runs every parameter
        return Route(k, how_)
    why = engine(k).supports(call, states[0], frame)
    return Route(k, how_) if why is None else Route(k, caps.outside, why)  # type: ignore[arg-type]


def functions_on(kind: str, *hows: str) -> tuple[str, ...]:
    """The declared functions that run on ``kind`` in one of the ways ``hows``, in definition order."""
    return tuple(n for n in DECLARED if how(n, kind) in hows)
