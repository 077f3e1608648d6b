"""The moments of the bins on a Dask DataFrame (calframe.moments): ``disparity``'s default call (``ci=0.95``) and
the CE family's ``ci=`` from the partitions, without gathering the rows.

Each partition runs the LazyFrame engine's moments pass on its rows (:func:`calframe.engines.streaming.streamed.main_query`:
per (keys, bin, label) the row count and the exact fixed-point sums of ``w``, ``w conf`` and their second
moments, as Int128); the client adds the partitions' cells up (exact: integers), which is the one pass over the
whole frame, and finishes as the LazyFrame engine does (:func:`calframe.engines.streaming.streamed.sums_and_moments`). The
rows of the cells under :data:`calframe.moments.SMALL` rows come from a second pass that returns only those
(bounded). The moments are the LazyFrame's, so the draws are its bits.

Unweighted calls on uniform or explicit-edge bins of a scalar lens; weights (their scale is the whole frame's)
are collected. Bad rows (a probability outside [0, 1], a bad label, nulls, ...) and an empty frame go to the
eager engine on the collected columns, which raises the eager error with the whole frame's counts.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import polars as pl

from ... import moments as M
from ...frames.convert import from_pandas
from ...request import Request
from ..plan import base as P
from ..streaming import streamed as LZ

__all__ = ["runs", "moment_sums", "computed", "deferred", "result"]

#: moments computed for a Dask frame (by id) while its result is finished (:func:`computed`)
_DONE: dict[int, tuple] = {}


def runs(req: Request) -> bool:
    """Whether :func:`moment_sums` runs ``req`` (an interval drawn from the moments of its bins, no weights)."""
    return (req.ci is not None and req.kind == "ce" and not req.several and M.native_ci(req)
            and req.weights is None)


@contextlib.contextmanager
def computed(ddf: Any, sums: tuple) -> Iterator[None]:
    """While inside, :func:`moment_sums` of ``ddf`` is ``sums`` (computed once, read by the figures' run)."""
    _DONE[id(ddf)] = sums
    try:
        yield
    finally:
        _DONE.pop(id(ddf), None)


def moment_sums(ddf: Any, req: Request, columns: list[str]) -> tuple | None:
    """``(sums, keys, counts, scale, moments)`` of ``req``'s bins on ``ddf`` (its ``columns`` read), or None when
    the rows must be checked in memory (bad rows, no rows, a schema error)."""
    if id(ddf) in _DONE:
        return _DONE[id(ddf)]
    import dask

    from .client import compute_now  # (on a distributed worker: through its client)

    parts = ddf[columns].to_delayed()
    merged = merged_cells(compute_now(*[dask.delayed(_cells)(p, req, columns) for p in parts]), req)
    if merged is None:
        return None
    plan, res, moment_cells = merged
    sums, keys_, counts = LZ.assemble(plan, res)
    cell_sums, fetch = LZ.cell_moments(plan, moment_cells, LZ.int128_float)
    small = M.NO_ROWS
    if fetch is not None:
        rows = compute_now(*[dask.delayed(_rows)(p, req, columns, fetch) for p in parts])
        small = tuple(_concat([r[i] for r in rows]) for i in range(3))  # type: ignore[assignment]
    m = M.from_cells(*cell_sums, small, False)
    return sums, keys_, counts, LZ.group_scales(plan, keys_), m


def merged_cells(cells: list[tuple[pl.DataFrame, Any] | None], req: Request,
                 tops: pl.DataFrame | None = None) -> tuple[Any, pl.DataFrame, pl.DataFrame] | None:
    """The partitions' moments cells (``(cells, schema)`` each, None: a partition the pass cannot read) added up:
    ``(plan, point sums as floats, moment cells)``, the input checked as the LazyFrame engine checks it; None when
    the rows must be checked in memory (a partition not read, no rows, bad rows). ``tops``: the groups' largest
    weights (the weighted companions' scale, :mod:`calframe.engines.partitions.companions`)."""
    if not cells or any(c is None for c in cells):
        return None
    plan = LZ.make_plan(pl.DataFrame(schema=cells[0][1]).lazy(), req)
    if tops is not None:
        P.set_scales(plan, tops)
    found = [c for c, _ in cells if c.height]
    if not found:
        return None
    merged = pl.concat(found, how="vertical_relaxed")
    keys = [c for c in merged.columns if c in plan.keys or c in (P.BIN, LZ.ACC, P.EB)]
    res = merged.group_by(keys).agg(pl.col(c).sum() for c in merged.columns if c not in keys)
    point, moment_cells = LZ.split_moments(plan, res)
    point = LZ.exact_floats(point)
    st = LZ.light_stats(plan, point)
    if st["bad"]:
        return None
    LZ.run_checks(plan, st, None)  # (nothing read: the rows are good)
    return plan, point, moment_cells


def deferred(ddf: Any, req: Request, columns: list[str], rows: Any) -> Any:
    """A Dask result of ``rows(ddf)`` (the figures' run, whose moments :func:`moment_sums` gives), computed when
    asked: the partitions' passes then; with bad rows, ``rows`` of the collected columns (the eager errors)."""
    import dask

    from .client import DaskResult, compute_now

    def then(_: Any) -> Any:
        sums = moment_sums(ddf, req, columns)
        if sums is None:
            out = rows(compute_now(ddf[columns])[0])
        else:
            with computed(ddf, sums):
                out = rows(ddf)
        return out.to_pandas() if isinstance(out, pl.DataFrame) else out

    from ..._progress import carry  # the call's progress= holds where the result is computed

    return DaskResult(dask.delayed(_nothing)(), carry(then), req.func)


def result(req: Request, frame: Any, figures: dict | None) -> Any:
    """A CE figure's result with its interval: from the moments of ``frame`` (a Dask frame, :func:`computed`), or
    the eager engine's on ``frame``, the collected pandas rows."""
    if isinstance(frame, pd_frame()):
        from ..eager import ce_figures, evaluate

        return evaluate(req, frame, figures or ce_figures(req))
    sums, keys, counts, scale, m = _DONE[id(frame)]
    return LZ.moment_result(req, sums, keys, counts, scale, m)


def pd_frame() -> type:
    import pandas as pd

    return pd.DataFrame


def _nothing() -> None:
    return None


def _concat(arrays: list[Any]) -> Any:
    import numpy as np

    return np.concatenate(arrays) if arrays else np.zeros(0)


def _lazy(part: Any, req: Request, columns: list[str]) -> pl.LazyFrame:
    return from_pandas(part, columns, req.func).lazy()


def _cells(part: Any, req: Request, columns: list[str]) -> tuple[pl.DataFrame, Any] | None:
    """One partition's moments pass (None: a schema error, for the eager engine to report)."""
    lf = _lazy(part, req, columns)
    plan = LZ.make_plan(lf, req)
    if plan.schema_errors:
        return None
    conf, acc = LZ.lensed_exprs(plan)
    return LZ.collect_frame(LZ.main_query(plan, lf, conf, acc, True)), lf.collect_schema()


def _rows(part: Any, req: Request, columns: list[str], fetch: pl.DataFrame) -> tuple:
    """One partition's rows of the small cells ``fetch``: (cell, w, w conf)."""
    lf = _lazy(part, req, columns)
    plan = LZ.make_plan(lf, req)
    conf, _ = LZ.lensed_exprs(plan)
    return LZ.small_rows(plan, lf, conf, fetch)
