"""The engines behind the seam (docs/design.md): each turns a frame and a parsed
:class:`~calframe.request.Request` into the sums of its state and hands them to :mod:`calframe.figures`.
An engine is the module the registry names for a kind of frame (:data:`calframe.registry.ENGINES`), with the
protocol of docs/design.md ("Recipe: add an engine"):

- :mod:`.eager`: numba kernels over numpy / Arrow buffers (Polars and pandas frames);
- :mod:`.streaming`: Polars' streaming engine (LazyFrames; the result is a LazyFrame);
- :mod:`.partitions`: the eager kernels per partition, sums added by Dask;
- :mod:`.native`: DuckDB relations, PySpark DataFrames, Ibis tables and pyarrow Tables, summed in their own
  engine through narwhals (the result in the input's type).

Each runner here asks :func:`calframe.registry.route` once, with the parsed request and its state, and calls the
engine's method of that state (:func:`run_binned`: ``binned``; :func:`run_grid`: ``grid``; :func:`run_vector`:
``vector``; :func:`run_table`: ``table``; :func:`moment_sums`: ``moment_sums``), or the eager engine's on the frame
the engine collects (``collect``); no runner tests an engine's name. The families ask here where their other
calls run (:func:`route`, :func:`in_memory`, :func:`collected`, :func:`apply`): no family tests the kind of its
frame.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import polars as pl

from .. import moments as M
from .. import registry
from .. import request as R
from . import eager
from .plan import row_means as _row_means


def _routed(req: R.Request, frame: Any, state: str) -> registry.Route:
    """:func:`calframe.registry.route` of the parsed ``req`` of ``state`` on ``frame``; a refusal raised."""
    r = registry.route(req, frame, state=state)
    if r.how == "refused":
        raise r.refusal(req.func)
    return r


def run_binned(req: R.Request, frame: Any, figures: dict[str, eager.Figure] | None = None) -> Any:
    """A request whose figure comes from bin sums (:data:`figures.BINNED`) or row means (the companions,
    ``summary``), on any frame, where :func:`calframe.registry.route` says: the ``binned`` of the frame's engine,
    or, for a call it collects, the eager engine's on the collected frame."""
    r = _routed(req, frame, "row_means" if req.kind in _row_means.KINDS else
                "bin_table" if req.kind == "reliability" else "bin_sums")
    if r.how == "collected":
        return eager.binned(req, r.engine.collect(frame), figures)
    return r.engine.binned(req, frame, figures)


def run_grid(req: R.Request, frame: Any, figures: dict[str, eager.Figure]) -> Any:
    """A request whose figure comes from grid sums (the smooth ECE's state, ``grid_sums``), on any frame, where
    :func:`calframe.registry.route` says: the ``grid`` of the frame's engine, else the eager engine on the
    collected frame (``figures``: its figure)."""
    r = _routed(req, frame, "grid_sums")
    if r.how == "collected":
        return eager.evaluate(req, r.engine.collect(frame), figures)
    return r.engine.grid(req, frame, figures)


def moment_sums(req: R.Request, frame: Any) -> tuple | None:
    """``(sums, keys, counts, scale, moments)`` of ``req``'s bins computed where the rows are, for intervals
    drawn from the moments (:mod:`calframe.moments`): the ``moment_sums`` of the frame's engine where
    :func:`calframe.registry.route` runs the call there; None where the rows are in memory or needed."""
    if req.ci is None or req.kind != "ce" or req.several or not M.plan_ci(req):
        return None
    r = registry.route(req, frame, state="bin_sums")
    return r.engine.moment_sums(req, frame) if r.here else None


def run_table(req: R.Request, frame: Any, finish: _row_means.Finish, schema: dict[str, Any],
              rows: Callable[[Any], Any], native: bool = True) -> Any:
    """A table read off ``req``'s figures per group (``req.by``): ``finish(values, counts, keys, flavor)``,
    computed by the ``table`` of the frame's engine where :func:`calframe.registry.route` says (``native``: no
    row selection): lazily on Dask, in the narwhals engine (the table in the input's type), streamed on a
    LazyFrame (a LazyFrame of ``schema``). Else ``rows(frame)`` runs it eagerly, on the collected frame (a
    LazyFrame's, a pyarrow Table's as a Polars frame); DuckDB, Spark and Ibis refuse it."""
    r = _routed(req if native else replace(req, selects=True), frame, "groups")
    if r.how == "collected":
        return rows(r.engine.collect(frame))
    return r.engine.table(req, frame, finish, schema, rows, native)


def run_vector(req: R.Request, frame: Any, here: Callable[[Any], Any], selects: bool,
               dask: Callable[[Any], Any]) -> Any:
    """:func:`calframe.gece` (its state, ``vector_sums``: per (group, cell) sums of the lensed vectors) on any frame,
    where :func:`calframe.registry.route` says: the ``vector`` of the frame's engine (``dask(engine)`` on Dask,
    the cell sums in the frame's engine or streamed: uniform bins, no ``ci``, no row selection: ``selects``),
    else ``here(frame)``, the eager call on the collected frame."""
    r = _routed(replace(req, selects=selects), frame, "vector_sums")
    if r.how == "collected":
        return here(r.engine.collect(frame))
    return r.engine.vector(req, frame, here, selects, dask)


def dask_engine() -> Any:
    """The Dask engine (imported when a Dask frame arrives: importing calframe never imports Dask)."""
    from .partitions import client as dask

    return dask


def _engine_name(kind: str | None) -> str:
    """The short name of the engine of ``kind`` (its protocol's ``NAME``: "eager", "lazy", "dask", "narwhals");
    "eager" for an object of no kind."""
    return "eager" if kind is None else registry.engine(kind).NAME


def route(frame: Any, here: Callable[[], Any], **steps: Callable[[Any], Any]) -> Any:
    """Where a family's call runs: ``steps[name](engine)`` when the engine of ``frame``'s kind is ``name``
    (``dask=``, ``narwhals=``, ``lazy=``: that engine's module), else ``here()``, the family's own computation
    (calframe's engines on the rows in this process).

    >>> import polars as pl
    >>> route(pl.DataFrame({"a": [1]}), lambda: "here", dask=lambda engine: "partitions")
    'here'
    """
    kind = registry.kind_of(frame)
    step = steps.get(_engine_name(kind))
    return here() if step is None else step(registry.engine(kind))  # type: ignore[arg-type]


def in_memory(frame: Any) -> bool:
    """Whether calframe's own engines read ``frame``'s rows in this process (a Polars or pandas frame, a
    LazyFrame): not a Dask DataFrame or a frame of the narwhals engine, summed where their rows are."""
    return _engine_name(registry.kind_of(frame)) in ("eager", "lazy")


def collected(frame: Any, req: R.Request, again: Callable[[Any], Any], *, every_column: bool = False) -> Any:
    """``again`` (the public function, on an in-memory frame) run on the rows of a frame whose engine collects
    them for ``req`` (of kind "rows": the columns it names): a Dask DataFrame's needed columns (every column
    with ``every_column``) computed into one pandas frame, lazily (a ``DaskResult``). None for any other frame,
    whose figure the caller computes here."""
    return route(frame, lambda: None, dask=lambda dask: dask.collected(
        req.func, frame, list(frame.columns) if every_column else dask.needed(frame, req), again))


def apply(frame: Any, recalibrator: Any, kwargs: dict[str, Any], columns: dict[str, pl.DataType],
          batch: Callable[[pl.DataFrame], pl.DataFrame], here: Callable[[], Any]) -> Any:
    """:func:`calframe.apply` where ``frame``'s rows are: a Dask DataFrame's partitions, a PySpark DataFrame's
    or DuckDB relation's batches (:mod:`.batches`), a LazyFrame's batches streamed by Polars (``batch`` on each,
    adding ``columns``), else ``here()``, the eager step."""
    from . import batches

    if batches.runs_apply(frame):
        return batches.apply(frame, recalibrator, kwargs)
    return route(frame, here, dask=lambda dask: dask.apply(frame, recalibrator, kwargs),
                 lazy=lambda _: frame.map_batches(batch, schema=pl.Schema({**frame.collect_schema(), **columns}),
                                                  streamable=True))
