"""The reliability table of a LazyFrame, streamed (the state ``bin_table``): the per (group, bin) sums and row
counts of the figures' one streaming pass (:func:`calframe.engines.streaming.streamed.main_query`), the table built by
:func:`calframe.figures.reliability_table` when the result is collected. ``reliability`` and ``calibration_test``
(which reads the table only) then run on a LazyFrame as on the narwhals engine's frames.

Uniform and explicit-edge bins of a scalar lens; data-dependent bins (quantile, equal-mass, the sweep), a
variable, weights with ranks or a marginal lens: None, and the caller collects the needed columns.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from ... import figures as F
from ..._columns import check_group_weights
from ...binning import Bins, uniform_edges
from ...request import Request
from . import streamed as LZ

__all__ = ["reliability", "table"]

#: the reliability table's columns beside the group keys, and their types
COLUMNS = {"bin": pl.Int32, "lower": pl.Float64, "upper": pl.Float64, "n": pl.Int64, "weight": pl.Float64,
           "conf": pl.Float64, "acc": pl.Float64, "gap": pl.Float64}
assert tuple(COLUMNS) == F.RELIABILITY_COLUMNS


def streams(frame: Any, req: Request) -> bool:
    """Whether the table of ``req`` (a reliability request) is streamed: on a LazyFrame whose engine streams it
    (:func:`calframe.engines.streaming.streamed.supports`: the figures' own test, on uniform or explicit-edge bins)."""
    return isinstance(frame, pl.LazyFrame) and LZ.supports(req, "bin_table", frame) is None and not req.variables


def reliability(frame: pl.LazyFrame, req: Request) -> pl.LazyFrame | None:
    """The reliability table of ``req`` as a LazyFrame (its columns read from the schema now, the rows when it is
    collected), or None when it is not streamed (:func:`streams`)."""
    if not streams(frame, req):
        return None
    plan = LZ.make_plan(frame, req)
    schema = {c: plan.schema[c] for c in plan.by_cols} | COLUMNS
    return pl.defer(lambda: table(frame, req), schema=schema)


def table(lf: pl.LazyFrame, req: Request) -> pl.DataFrame:
    """The reliability table of ``req`` on ``lf``: one streaming pass (bad input raises the eager errors)."""
    plan = LZ.prepared(LZ.make_plan(lf, req), lf)
    conf, acc = LZ.lensed_exprs(plan)
    res = LZ.checked(plan, lf, LZ.exact_floats(LZ.collect_frame(LZ.main_query(plan, lf, conf, acc))))
    sums, keys, counts = LZ.assemble(plan, res)
    if plan.weight_col is not None:
        check_group_weights(req.func, plan.weight_col, sums[..., 0].sum(axis=1), counts, keys)
    cells = LZ.kept_cells(plan, res)
    g, _, _ = LZ.group_index(plan, cells)
    rows = np.zeros(sums.shape[:2])
    np.add.at(rows, (g, cells[LZ.BIN].to_numpy().astype(np.int64)), cells[LZ.LEN].to_numpy().astype(np.float64))
    b = plan.binning
    edges = np.asarray(b.edges) if b.edges is not None else uniform_edges(b.bins, b.closed)
    return F.reliability_table(sums, rows, Bins(None, b.bins, edges, None, b), keys)
