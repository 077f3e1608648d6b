"""The engines behind the seam (docs/design.md): each turns a frame and a parsed
:class:`~calframe.request.Request` into per (group, bin) sums and hands them to
:mod:`calframe.figures`.

- :mod:`.eager`: numba kernels over numpy / Arrow buffers (Polars and pandas frames);
- :mod:`.lazy`: Polars' streaming engine (LazyFrames; the result is a LazyFrame);
- :mod:`.dask`: the eager kernels per partition, sums added by Dask;
- :mod:`.narwhals`: DuckDB relations, PySpark DataFrames, Ibis tables and pyarrow Tables, summed in their own
  engine through narwhals (the result in the input's type).

:func:`run_binned` asks the registry (:mod:`calframe.registry`) for the engine of the frame's kind; each engine
module has ``CAPABILITIES`` and ``binned(req, frame, figures)`` (and may have ``call``, its entry for a public
function). :func:`run_grid` does the same for the smooth ECE's grid sums (``_grid_sums.py``, ``_grid_dask.py``),
:func:`run_vector` for GECE's cell sums (``_vector_sums.py``, Dask's ``gece``).
The families ask here where their other calls run (:func:`route`, :func:`in_memory`, :func:`collected`,
:func:`apply`): no family tests the kind of its frame.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

import polars as pl

from .. import moments as M
from .. import registry
from .. import request as R
from . import _grid_sums
from . import eager
from . import _row_means


def _routed(req: R.Request, frame: Any, state: str) -> registry.Route:
    """:func:`calframe.registry.route` of the parsed ``req`` of ``state`` on ``frame``; a refusal raised."""
    r = registry.route(req, frame, state=state)
    if r.how == "refused":
        raise r.refusal(req.func)
    return r


def run_binned(req: R.Request, frame: Any, figures: dict[str, eager.Figure] | None = None) -> Any:
    """A request whose figure comes from bin sums (:data:`figures.BINNED`) or row means (the companions,
    ``summary``), on any frame, where :func:`calframe.registry.route` says: the ``binned`` of the frame's engine
    (Dask's partitions, the narwhals engine: DuckDB, Spark, Ibis, pyarrow; streamed sums for a LazyFrame), the
    row means of the narwhals and lazy engines in :mod:`._row_means`' passes; a call collected, and an in-memory
    frame, by the eager engine."""
    r = _routed(req, frame, "row_means" if req.kind in _row_means.KINDS else
                "bin_table" if req.kind == "reliability" else "bin_sums")
    if r.how == "collected":
        return eager.binned(req, r.engine.collect(frame), figures)
    if req.kind in _row_means.KINDS and r.kind in _row_means.ON:
        return _row_means.binned(req, frame, figures)
    if r.kind == "dask" and _dask_moments().runs(req):  # ci= from the moments of the partitions' bins
        return _dask_moments().deferred(frame, req, dask_engine().needed(frame, req),
                                        lambda rows: _dask_moments().result(req, rows, figures))
    return r.engine.binned(req, frame, figures)


def run_grid(req: R.Request, frame: Any, figures: dict[str, eager.Figure]) -> Any:
    """A request whose figure comes from grid sums (the smooth ECE's state, ``grid_sums``), on any frame, where
    :func:`calframe.registry.route` says: the engine of the frame's kind (``_grid_sums.py``: a LazyFrame,
    streamed, and the narwhals engine's frames; ``_grid_dask.py``: Dask's partitions), else the eager engine
    (``figures``: its figure, which a bootstrap or a collected frame runs)."""
    r = _routed(req, frame, "grid_sums")
    engine = _engine_name(r.kind)
    if r.how == "collected":
        return eager.evaluate(req, r.engine.collect(frame), figures)
    if engine == "dask":
        from . import _grid_dask

        return _grid_dask.run(frame, req, figures)
    if engine == "narwhals":
        return _grid_sums.run_native(frame, req)
    if engine == "lazy":
        return _grid_sums.streamed(req, frame, figures)
    return eager.evaluate(req, frame, figures)


def moment_sums(req: R.Request, frame: Any) -> tuple | None:
    """``(sums, keys, counts, scale, moments)`` of ``req``'s bins computed where the rows are, for intervals
    drawn from the moments (:mod:`calframe.moments`): on a LazyFrame (streamed) and in the narwhals engine; None
    where they are not (eager frames, Dask, a call whose bins or lens need the rows: not
    :func:`calframe.registry.route`'s "here")."""
    if req.ci is None or req.kind != "ce" or req.several or not M.native_ci(req):
        return None
    r = registry.route(req, frame, state="bin_sums")
    engine = _engine_name(r.kind)
    if not r.here:
        return None
    if engine == "lazy":
        return r.engine.sums_and_moments(frame, req, moments=True)
    if engine == "narwhals":
        eng = r.engine.Engine(frame)
        return (*r.engine.binned_sums(eng, req, moments=True)[:4], eng.moments)
    if engine == "dask" and _dask_moments().runs(req):
        return _dask_moments().moment_sums(frame, req, dask_engine().needed(frame, req))
    return None


def run_table(req: R.Request, frame: Any, finish: _row_means.Finish, schema: dict[str, Any],
              rows: Callable[[Any], Any], native: bool = True) -> Any:
    """A table read off ``req``'s figures per group (``req.by``): ``finish(values, counts, keys, flavor)``,
    computed where the frame's rows are when :func:`calframe.registry.route` says so (``native``: no row
    selection): lazily on Dask, in the narwhals engine (the table in the input's type), streamed on a
    LazyFrame (a LazyFrame of ``schema``). Else ``rows(frame)`` runs it eagerly: on the collected needed columns
    on Dask, on the collected LazyFrame, on a pyarrow Table as a Polars frame; DuckDB, Spark and Ibis refuse it."""
    kind = registry.kind_of(frame)
    if kind != "dask":
        r = _routed(req if native else replace(req, selects=True), frame, "groups")
        if r.how == "collected":
            return rows(r.engine.collect(frame))
        if r.how == "eager":
            return rows(frame)
        if req.ci is not None:  # the intervals from the moments, where the rows are
            return _where_the_rows_are(kind, frame, rows, schema)
        out = _row_means.table(kind, frame, req, finish, schema, True, native)
        return out if out is not None else rows(frame)
    d = dask_engine()
    plain = native and req.ci is None and not req.several
    if native and not plain and _dask_moments().runs(req):  # the moments of the bins from the partitions
        return _dask_moments().deferred(frame, req, d.needed(frame, req), rows)
    if not plain:
        return d.collected(req.func, frame, d.needed(frame, req), rows)
    return d.binned(req, frame, None, partial(finish, flavor="pandas"))


def run_vector(req: R.Request, frame: Any, here: Callable[[Any], Any], selects: bool,
               dask: Callable[[Any], Any]) -> Any:
    """:func:`calframe.gece` (its state, ``vector_sums``: per (group, cell) sums of the lensed vectors) on any frame,
    where :func:`calframe.registry.route` says: ``dask(engine)`` on a Dask DataFrame (``dask.gece``), the cell
    sums in the frame's engine on the narwhals engine's frames and streamed on a LazyFrame (``_vector_sums.py``:
    uniform bins, no ``ci``, no row selection: ``selects``), else ``here(frame)``, the eager call (on a
    LazyFrame's needed columns collected, a pyarrow Table's rows as a Polars frame)."""
    r = _routed(replace(req, selects=selects), frame, "vector_sums")
    engine = _engine_name(r.kind)
    if engine == "dask":
        return dask(r.engine)  # type: ignore[arg-type]
    if r.how == "collected":
        return here(r.engine.collect(frame))
    if engine == "narwhals":
        from . import _vector_sums

        return _vector_sums.run_native(frame, req, selects)
    if engine == "lazy":
        from . import _vector_sums

        out = _vector_sums.run_lazy(frame, req, selects)
        if out is not None:
            return out
    return here(frame)


def _dask_moments() -> Any:
    from . import dask_moments

    return dask_moments


def dask_engine() -> Any:
    """The Dask engine (imported when a Dask frame arrives: importing calframe never imports Dask)."""
    from . import dask

    return dask


def _engine_name(kind: str | None) -> str:
    """The short name of the engine of ``kind`` ("eager", "lazy", "dask", "narwhals"), not importing it; "eager"
    for an object of no kind."""
    return "eager" if kind is None else registry.ENGINE_OF[kind].rsplit(".", 1)[1]


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


def _where_the_rows_are(kind: str | None, frame: Any, rows: Callable[[Any], Any], schema: dict[str, Any]) -> Any:
    """``rows(frame)`` (its sums and moments from the frame's own engine: :func:`moment_sums`) in the frame's type:
    a LazyFrame deferred to its collect (a frame of ``schema``), else the narwhals engine's."""
    if _engine_name(kind) == "lazy":
        return pl.defer(lambda: rows(frame), schema=schema)
    from . import narwhals

    return narwhals.Engine(frame).out(rows(frame))
