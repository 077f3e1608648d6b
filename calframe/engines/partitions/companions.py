"""The companions' ``ci=`` on a Dask DataFrame (``brier``, ``log_loss``, ``accuracy``): the bootstrap drawn from
the moments of their row values, split by top-1 correctness, computed on the partitions without gathering the rows.

Each partition runs the LazyFrame engine's moments pass of the companion on its rows
(:func:`calframe.engines.plan.row_means.moment_query`: per (keys, correctness[, weight bucket]) the row count and
the exact fixed-point sums of w, w v and w v^2, as Int128); the client adds the partitions' cells up (integers:
exact, in any order) and finishes as the LazyFrame engine does
(:func:`~calframe.engines.plan.row_means.companion_state`, :func:`calframe.moments.bounds_from_moments`). The rows of the cells under :data:`calframe.moments.SMALL` rows
come from one more, bounded pass. With weights a first pass finds each group's largest weight over every
partition, so that every partition scales the weights by the group's power of two, the eager one: the fixed-point
sums, hence the moments and the draws, are then eager Polars' bits.

Bad rows (a probability outside [0, 1], a bad label, nulls, ...) and an empty frame go to the eager engine on the
collected columns, which raises the eager error with the whole frame's counts.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from ... import figures as F
from ...frames.convert import from_pandas
from ...request import Request
from ..plan import base as P
from ..plan import row_means as RM
from ..streaming import streamed as LZ
from . import moments as DM

__all__ = ["runs", "moment_means", "deferred"]


def runs(req: Request, figures: dict | None) -> bool:
    """Whether :func:`deferred` runs ``req``: a companion's interval drawn from the moments of its row values."""
    return RM.moment_ready(req, figures)


# --------------------------------------------------------------------------- per partition (workers)


def _plan(part: Any, req: Request, columns: list[str], tops: pl.DataFrame | None) -> tuple[Any, pl.LazyFrame]:
    """The moments pass's plan on one partition (None: a schema error, for the eager engine to report, or a
    column the LazyFrame engine does not stream, a List of probabilities), its weights scaled by ``tops``, every
    group's largest weight over all partitions."""
    lf = from_pandas(part, columns, req.func).lazy()
    try:
        plan = LZ.make_plan(lf, req)
    except NotImplementedError:  # the rows are collected, as a LazyFrame's are
        return None, lf
    if plan.schema_errors:
        return None, lf
    if tops is not None:  # the groups' scales: the whole frame's, in this partition's key dtypes
        schema = lf.select(P.key_cols(plan)).collect_schema() if plan.by_cols else {}
        P.set_scales(plan, tops.with_columns(pl.col(k).cast(t) for k, t in schema.items()))
    return plan, lf


def _tops(part: Any, req: Request, columns: list[str]) -> pl.DataFrame | None:
    """One partition's largest kept weight per group."""
    plan, lf = _plan(part, req, columns, None)
    return None if plan is None else LZ.collect_frame(LZ.weight_tops(plan, lf))


def _cells(part: Any, req: Request, columns: list[str], tops: pl.DataFrame | None,
           name: str) -> tuple[pl.DataFrame, Any] | None:
    """One partition's moments cells and its schema (None: a schema error)."""
    plan, lf = _plan(part, req, columns, tops)
    if plan is None:
        return None
    q, cell, aggs, _ = RM.moment_query(plan, lf, name)
    return LZ.collect_frame(q.group_by(cell).agg(aggs)), lf.collect_schema()


def _small(part: Any, req: Request, columns: list[str], tops: pl.DataFrame | None, name: str,
           fetch: pl.DataFrame) -> pl.DataFrame:
    """One partition's rows of the small cells ``fetch``: (cell, w, w v)."""
    plan, lf = _plan(part, req, columns, tops)
    return LZ.collect_frame(RM.moment_query(plan, lf, name)[3](fetch))


# --------------------------------------------------------------------------- client


def moment_means(ddf: Any, req: Request, columns: list[str]) -> tuple | None:
    """(values, counts, keys), moments, table and scale of companion ``req`` on ``ddf`` (its ``columns`` read), as
    the LazyFrame engine's moments pass returns them; None when the rows must be checked in memory (bad rows, no
    rows, a schema error)."""
    import dask

    from .client import compute_now  # (on a distributed worker: through its client)

    mreq, name = RM.moment_request(req), req.func
    parts = ddf[columns].to_delayed()
    tops = None
    if req.weights is not None:
        got = compute_now(*[dask.delayed(_tops)(p, mreq, columns) for p in parts])
        if any(t is None for t in got) or not got:
            return None
        found = pl.concat([t for t in got if t.height] or got[:1], how="vertical_relaxed")
        keys = [c for c in found.columns if c != P.W]
        tops = found.group_by(keys).agg(pl.col(P.W).max()) if keys else found.select(pl.col(P.W).max())
    merged = DM.merged_cells(compute_now(*[dask.delayed(_cells)(p, mreq, columns, tops, name) for p in parts]),
                             mreq, tops)
    if merged is None:
        return None
    plan, point, moment_cells = merged

    def rows_of(fetch: pl.DataFrame) -> tuple:
        got = compute_now(*[dask.delayed(_small)(p, mreq, columns, tops, name, fetch) for p in parts])
        return RM.small_arrays(pl.concat([g for g in got if g.height] or [got[0]], how="vertical_relaxed"))

    return RM.companion_state(plan, point, moment_cells, name, rows_of)


def deferred(ddf: Any, req: Request, figures: dict, columns: list[str]) -> Any:
    """The companion's result with its interval, a Dask result: the partitions' passes when computed; with bad
    rows, the eager engine on the collected columns (the eager errors)."""
    import dask

    from ... import moments as M
    from ..._progress import carry  # the call's progress= holds where the result is computed
    from .client import DaskResult, compute_now, eager_figures

    F.check_by_names(req.func, req.by, F.output_columns([req.func], req.ci), ddf._meta)

    def then(_: Any) -> Any:
        got = moment_means(ddf, req, columns)
        if got is None:
            return eager_figures(req, figures, compute_now(ddf[columns])[0])
        (vals, counts, keys), m, table, scale = got
        bounds = M.bounds_from_moments(req, figures, table, m, keys, scale)
        return F.shape(req, vals, counts, keys, "pandas", bounds, scalar=False)

    return DaskResult(dask.delayed(np.int64)(0), carry(then), req.func)
