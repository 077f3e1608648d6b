"""Streaming per (group, bin) sums for Polars LazyFrames (DESIGN: "lazy frames push the sums down").

:func:`lazy_sums` builds one lazy query that computes, per (group keys, bin),
``n`` (sum of weights), ``sum w*conf`` and ``sum w*acc`` with native Polars
expressions, runs it with the streaming engine (``collect(engine="streaming")``)
and returns the same ``(n_groups, n_bins, 3)`` array the eager pipeline
(:func:`calframe.engines.eager.binned_sums`) builds, with the sorted key table and the
per-group row counts. :func:`calframe.metrics.ce_from_sums` finalizes it. The
frame is never collected.

The sums are exact integers (``fixed_sum``: fixed point, summed as Int128), so
the same query gives the same bits on every run and thread count (docs/spec.md
section 8, "Exact sums"); :func:`make_plan` reads the plan from the schema
alone, which the API does at call time before it defers the sums to collect
(:func:`run`, "Lazy in, lazy out").

Validation (the same errors as the eager path)
----------------------------------------------
In the same pass, every row gets a validity flag, false or null for: a null
in a checked column (``nulls="raise"``), a NaN / infinite / out of [0, 1]
probability, a multiclass row whose sum is more than
:data:`calframe._columns.SUM_TOLERANCE` from 1 (summed in numpy's pairwise
order, so rows on the tolerance decide as the eager path does), a label
outside the classes or not a whole number, a negative / NaN / infinite
weight, a non-finite numeric variable, a variable outside explicit edges.
The valid rows are counted per cell. Only if some row is not valid does a
second streaming pass compute the detailed counts (per column nulls, rows
per kind of problem, min / max, worst row sum, first offending labels); the
first failing check, in the eager path's order, then raises the eager
path's exception class with its exact message. Dtype problems are found from
the schema but are raised at their place in that order too (a null count,
for example, is reported before a String probability column).
``nulls="drop"`` sends rows with a null in a checked column to a sentinel
bin (-1; null for a categorical variable) of their group, so they are
counted (for the warning) and ignored.

Bins (SPEC §1.3), exact on every edge
-------------------------------------
The lens and the bin of a value are the Polars renderings of their one
definition (:func:`calframe.lenses.lens_exprs`, :func:`calframe.binning.edge_bins_expr`
and :func:`calframe.binning.uniform_bin_expr`), exact on every edge. A categorical VECE
variable is its own bin key (one bin per category).

Quantile / equal-mass bins are exact, in streaming passes:
1. validation, and per group: count, min, max;
2. the order statistics that :func:`calframe.binning.edge_table` (the one
   edge rule of every engine) asks its ``take`` for are
   located by histograms: each group's range is cut into a grid of cells
   (the cell of a value is monotone in the value), and each wanted rank is
   followed into its cell through the cumulative counts; a cell whose min
   equals its max gives the value outright. While the values in the target
   cells exceed :data:`COLLECT_BUDGET`, those cells are cut again (one more
   pass each time; at most :data:`HIST_CELLS` cells per pass, where Polars'
   streaming group-by stays small). With few rows this step is skipped;
3. the values in the target cells are collected and sorted (only them), and
   ``edge_table`` builds the edges from those values;
4. the accumulate pass joins each row to its group's edges.
With weights the ranks are positions in the rows' exact running sums of weights, the histograms carry exact
sums of weights per cell, and each group's total takes one more pass (:mod:`calframe.engines.plan.order_stats`).
Memory: the per (group, bin) table, plus the histograms and at most about
COLLECT_BUDGET values for data-dependent bins. (1e8 rows, 1000 groups,
quantile(10): 5 passes, 12.5 s, 0.59 GB peak; eager 8.2 s, 5.5 GB.)

Inputs: a binary probability column (float or integer), a list of class
columns, or an ``Array`` column of class probabilities (``arr.max()`` /
``arr.arg_max()``, whose ties go to the lowest index like numpy's argmax).
``List`` columns, the ``marginal`` lens and several variables at once are not
streamed (:func:`supports` says False; use the eager path).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from ... import figures as F
from ..._columns import SUM_TOLERANCE, check_group_weights
from ... import _errors as E
from ..._imports import lazy_function

fixed_to_floats = lazy_function("calframe._kernels.accumulate", "fixed_to_floats")
from ..._limits import check_cells
from ...registry import Capabilities
from ..eager import evaluate
from ...request import Request
from ...binning import check_variable
# the plan (schema only), the queries' column names and the expressions the passes are built from
from ..plan import base as P
from ..plan import order_stats as OS
from ..plan.order_stats import RW, edge_columns
from ..plan.base import (detail_aggs, detail_row, ACC, BAD, BIN, CATV, CNT, CONF, EB, KEEP, LEN, MAX, MAX_BUCKET,
                         MIN, NODE, OK, ONE, COL_PREFIX, SA, SC, TWO64, VMAX, VMIN, W, WT, X, BUCKET_BITS,
                         FIXED_BITS, WEIGHTED_BITS, EnginePlan, bin_stages, group_scales, keep_expr, key_cols,
                         lensed_exprs, raw_weights, row_ok, var_expr, weights_expr, with_scales, make_plan)

__all__ = ["lazy_sums", "make_plan", "run", "supports", "ENGINE", "COLLECT_BUDGET", "HIST_CELLS"]

#: the engine every query here runs on
ENGINE = "streaming"
#: quantile / equal-mass bins: refine the histogram while the values to collect exceed this
COLLECT_BUDGET = 4_000_000
#: quantile / equal-mass bins: cells in one histogram pass, over all nodes (at least 2 per node).
#: Polars' streaming group-by jumps from ~0.3 GB to 2-3 GB between 64k and 256k groups
#: (measured on 1e8 rows), so a histogram stays under it and refines in more passes instead.
HIST_CELLS = 1 << 16



# --------------------------------------------------------------------------- the passes


def collect_frame(q: pl.LazyFrame) -> pl.DataFrame:
    return q.collect(engine=ENGINE)


def _set_weight_scale(plan: EnginePlan, lf: pl.LazyFrame) -> None:
    """One aggregation: the largest kept weight of each group, read by :func:`~calframe.engines.plan.base.set_scales`."""
    P.set_scales(plan, collect_frame(weight_tops(plan, lf)))


def weight_tops(plan: EnginePlan, lf: pl.LazyFrame) -> pl.LazyFrame:
    """The largest kept weight (``W``) of each group (the key columns ``plan.keys``; one row without them)."""
    w = raw_weights(plan)
    keep = keep_expr(plan)
    w = w if keep is None else w.filter(keep)
    if plan.by_cols:
        return lf.group_by(key_cols(plan)).agg(w.max().alias(W))
    return lf.select(w.max().alias(W))


def fixed_sum(x: pl.Expr, bucket: pl.Expr | None) -> pl.Expr:
    """The exact sum of the integers trunc(x * 2^62) (no weights: x in [0, 1]) or, with ``bucket`` k (the
    row's weight bucket), trunc(x * 2^(60 + 8 k)) of the rows, as Int128 (``exact_floats`` converts it).

    Integers add up exactly in any order: the same sum, hence the same bits, for any thread count or
    morsel layout (Polars' float sums are merged in an order that varies from run to run). Each integer fits
    an Int64 (a weighted value is below twice its weight, which is below 2^(1 - 8 k)), whose sum as Int128
    costs ~1.2x a float sum (a float cast straight to Int128 costs ~1.6x); 2^65 rows fit. The bucket's power
    of two is applied as two equal factors (each finite, the product exact). NaN, infinite and out-of-range
    values (bad rows, which the checks report) count as null.
    """
    if bucket is None:
        scaled = x * 2.0**FIXED_BITS
    else:
        f = pl.lit(2.0).pow(bucket * (BUCKET_BITS // 2) + WEIGHTED_BITS // 2)
        scaled = x * f * f
    return scaled.cast(pl.Int64, strict=False).cast(pl.Int128).sum()


def weight_bucket(w: pl.Expr) -> pl.Expr:
    """k = floor(-log2(w) / 8) in [0, 134]: weights spanning any range keep 52 bits each in their bucket's
    fixed point (a scaled weight is below 2; a 0 weight adds 0 in any bucket)."""
    return (-w.log(2.0) / float(BUCKET_BITS)).floor().clip(0.0, float(MAX_BUCKET)).cast(pl.Int32, strict=False)


def _sum_aggs(plan: EnginePlan) -> list[pl.Expr]:
    """Per cell: rows, and the exact sums of w, w*conf and w*acc (unweighted: conf and acc; n is the rows).
    Weighted rows are grouped by their weight bucket too (``EB``). Unweighted acc is 0 or 1: its float sum is
    an exact integer in any order already."""
    aggs = [pl.len().alias(LEN)]
    if plan.weight_col is None:
        return aggs + [fixed_sum(pl.col(CONF), None).alias(SC), pl.col(ACC).sum().alias(SA)]
    w, k = pl.col(WT), pl.col(EB)
    return aggs + [fixed_sum(w, k).alias(W), fixed_sum(w * pl.col(CONF), k).alias(SC),
                   fixed_sum(w * pl.col(ACC), k).alias(SA)]


def exact_floats(res: pl.DataFrame) -> pl.DataFrame:
    """``res`` with its Int128 sums as float64, each correctly rounded (``fixed_to_float``; a negative sum, as
    the smooth ECE's residuals and top-k's rest coordinate give, by its magnitude). Weighted: the buckets of a
    cell are then one row each, smallest weights first, so that adding them up (``assemble``) goes in one
    order."""
    ints = [c for c, dt in res.schema.items() if dt == pl.Int128]
    if EB in res.columns:
        exp = (-WEIGHTED_BITS - BUCKET_BITS * res[EB].fill_null(0).to_numpy()).astype(np.int64)
    else:
        exp = np.full(res.height, -FIXED_BITS, dtype=np.int64)
    out = res.with_columns(pl.Series(c, int128_float(res, c, exp)) for c in ints)
    return out.sort(EB, descending=True, maintain_order=True) if EB in res.columns else out


def main_query(plan: EnginePlan, lf: pl.LazyFrame, conf: pl.Expr, acc: pl.Expr, moments: bool = False) -> pl.LazyFrame:
    """One query: per (keys, bin) row count, sum w, sum w*conf, sum w*acc, valid rows (+ variable range).

    nulls='drop': the dropped rows go to bin -1 of their group (a null bin for a
    categorical variable), so they are counted and ignored. ``moments``: per (keys, bin, acc), with the second
    moments beside (:func:`_moment_aggs`; :func:`split_moments` adds the acc cells up again).
    """
    keep = keep_expr(plan)
    cols: list[pl.Expr] = key_cols(plan)
    cols += [conf.alias(CONF), acc.alias(ACC), row_ok(plan).alias(OK)]
    if keep is not None:
        cols.append(keep.alias(KEEP))
    if plan.weight_col is not None:
        cols.append(weights_expr(plan).alias(WT))
    aggs = _sum_aggs(plan)
    cell = plan.keys + [BIN] + ([EB] if plan.weight_col is not None else [])
    aggs.append(pl.col(OK).sum().alias(OK))  # a null (bad) flag is not counted
    if plan.var_col is not None:
        if plan.var_kind == "numeric":
            cols.append(var_expr(plan).alias(f"{COL_PREFIX}v"))
            aggs += [pl.col(f"{COL_PREFIX}v").min().alias(VMIN), pl.col(f"{COL_PREFIX}v").max().alias(VMAX)]
        else:
            cols.append(pl.col(plan.var_col).alias(CATV))
    q = _binned_rows(plan, with_scales(plan, lf).select(cols))
    if moments:
        cell.append(ACC)
        aggs += _moment_aggs(plan)
    return q.group_by(cell).agg(aggs)


def _binned_rows(plan: EnginePlan, q: pl.LazyFrame) -> pl.LazyFrame:
    """The selected rows with their weight bucket and bin (-1: a dropped row)."""
    if plan.weight_col is not None:
        q = q.with_columns(weight_bucket(pl.col(WT)).alias(EB))
    for stage in bin_stages(plan, CONF):
        q = q.with_columns(**stage)
    if keep_expr(plan) is not None:
        dropped = pl.lit(None) if plan.var_kind == "categorical" else pl.lit(-1, pl.Int32)
        q = q.with_columns(pl.when(pl.col(KEEP)).then(pl.col(BIN)).otherwise(dropped).alias(BIN))
    return q


#: the second moment of a cell's rows (calframe.moments: frequency weights): sum w v^2 (v = conf; w = 1
#: unweighted) as an exact fixed-point sum, a weight of bucket k in bucket k (w v^2 <= w). ``Q[0]``, ``Q[1]``:
#: names no pass sums any more (the squared weights of an importance reading), kept out of the point sums
Q = (f"{COL_PREFIX}qww", f"{COL_PREFIX}qwv", f"{COL_PREFIX}qvv")


def _moment_aggs(plan: EnginePlan) -> list[pl.Expr]:
    c = pl.col(CONF)
    if plan.weight_col is None:
        return [fixed_sum(c * c, None).alias(Q[2])]
    w = pl.col(WT)
    return [fixed_sum((w * c) * c, pl.col(EB)).alias(Q[2])]


def split_moments(plan: EnginePlan, res: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A moments pass's cells (per keys, bin, acc[, bucket]) as the main pass's (per keys, bin[, bucket]: the
    Int128 sums added up exactly) and the kept cells themselves, for :func:`cell_moments`."""
    cell = [c for c in res.columns if c in plan.keys or c in (BIN, EB)]
    aggs = [pl.col(c).sum() for c in res.columns if c not in cell and c not in (ACC, VMIN, VMAX, *Q)]
    aggs += [pl.col(c).min() for c in res.columns if c == VMIN] + [pl.col(c).max() for c in res.columns if c == VMAX]
    return res.group_by(cell).agg(aggs), kept_cells(plan, res)


def cell_moments(plan: EnginePlan, cells: pl.DataFrame, exact: Any,
                 n_bins: int | None = None) -> tuple[tuple, pl.DataFrame | None]:
    """The :func:`calframe.moments.from_cells` inputs of a moments pass's kept cells (Int128 sums; ``exact``: the
    engine's Int128 -> float conversion of a column at an exponent per row), and the keys of the small cells,
    whose rows are then fetched (None: no cell is small). ``n_bins``: the bins per group (default: the plan's;
    quantile / equal-mass bins: as many as the edges found)."""
    from ... import moments as M

    g, _, n_groups = group_index(plan, cells)
    weighted = plan.weight_col is not None
    eb = cells[EB].fill_null(0).to_numpy().astype(np.int64) if weighted else np.zeros(cells.height, np.int64)
    first = -WEIGHTED_BITS - BUCKET_BITS * eb if weighted else np.full(cells.height, -FIXED_BITS)
    n = cells[LEN].to_numpy().astype(np.float64)
    if weighted:
        cols = [exact(cells, c, first) for c in (W, SC, Q[2])]
    else:
        cols = [n, exact(cells, SC, first), exact(cells, Q[2], first)]
    merged, rows, small = M.merge_cells(g, cells[BIN].to_numpy().astype(np.int64),
                                        cells[ACC].fill_null(0).to_numpy().astype(np.int64), eb, n,
                                        np.stack(cols, axis=1), n_bins or plan.binning.bins, n_groups)
    fetch = None
    if small.size:
        fetch = cells.select(plan.keys + [BIN, ACC])[rows[small]].with_columns(pl.Series(f"{COL_PREFIX}cell", small))
    return merged, fetch


def int128_float(res: pl.DataFrame, name: str, exp: np.ndarray) -> np.ndarray:
    """An Int128 sum column as correctly rounded floats at exponents ``exp`` (by its magnitude and sign)."""
    sign = np.where((res[name] < 0).fill_null(False).to_numpy(), -1.0, 1.0)
    m = pl.col(name).abs()
    parts = res.select(m.floordiv(TWO64).cast(pl.Int64).alias("hi"), (m % TWO64).cast(pl.UInt64).alias("lo"))
    return sign * fixed_to_floats(parts["hi"].to_numpy(), parts["lo"].to_numpy(), exp.astype(np.int64))


def small_rows(plan: EnginePlan, lf: pl.LazyFrame, conf: pl.Expr, fetch: pl.DataFrame) -> tuple:
    """The small cells' rows (one bounded query: at most calframe.moments.SMALL rows per cell): (cell, w, w conf)."""
    cols: list[pl.Expr] = key_cols(plan) + [conf.alias(CONF), lensed_exprs(plan)[1].alias(ACC)]
    if keep_expr(plan) is not None:
        cols.append(keep_expr(plan).alias(KEEP))
    if plan.weight_col is not None:
        cols.append(weights_expr(plan).alias(WT))
    rows = _binned_rows(plan, with_scales(plan, lf).select(cols)).join(
        fetch.lazy(), on=plan.keys + [BIN, ACC], how="inner", nulls_equal=True)
    w = pl.col(WT) if plan.weight_col is not None else pl.lit(1.0)
    got = collect_frame(rows.select(pl.col(f"{COL_PREFIX}cell"), w.alias(W), (w * pl.col(CONF)).alias(SC)))
    return got[f"{COL_PREFIX}cell"].to_numpy(), got[W].to_numpy(), got[SC].to_numpy()


def detail_stats(plan: EnginePlan, lf: pl.LazyFrame) -> dict[str, Any]:
    """Every count the ordered checks need (the error path: a second streaming pass, :func:`detail_aggs`)."""
    return detail_row(plan, collect_frame(lf.select(**detail_aggs(plan))).row(0, named=True))


def outside_label_rows(plan: EnginePlan, lf: pl.LazyFrame) -> list[Any]:
    keep = keep_expr(plan)
    sel = P._label_outside(plan) if keep is None else P._label_outside(plan) & keep
    vals = collect_frame(lf.filter(sel).select(pl.col(plan.label_col).unique()))[plan.label_col].sort()
    return vals.head(5).to_list()


def run_checks(plan: EnginePlan, st: dict[str, Any], lf: pl.LazyFrame) -> None:
    """The eager path's checks in its order: raise the first that fails (warn on dropped nulls).

    ``st["outside_labels"]``, when given, holds the out-of-range labels to report
    (else they are read from ``lf``).
    """
    func = plan.func
    if not st.get("n_total"):
        raise E.no_rows(func)
    null_counts = st.get("nulls") or {}
    if plan.nulls == "raise":
        if any(null_counts.values()):
            raise E.null_values(func, null_counts)
    else:
        E.warn_nulls_dropped(func, int(st["n_total"]) - int(st["n_kept"]), int(st["n_kept"]))
        if int(st["n_kept"]) == 0:
            raise E.all_rows_null(func)
    err = plan.schema_errors
    if "prob_dtype" in err:
        raise err["prob_dtype"]
    nonfinite, outside = int(st.get("prob_nonfinite") or 0), int(st.get("prob_outside") or 0)
    if nonfinite or outside:
        lo, hi = (float(st["prob_lo"]), float(st["prob_hi"])) if outside else (0.0, 1.0)
        raise E.not_probabilities(func, plan.prob_name, nonfinite, outside, lo, hi)
    if st.get("sum_bad"):
        raise E.sums_not_one(func, plan.prob_name, int(st["sum_bad"]), float(st["sum_worst"]), SUM_TOLERANCE)
    if "label_dtype" in err:
        raise err["label_dtype"]
    binary, k, name = plan.binary, plan.k, plan.label_col
    if st.get("label_nonwhole"):
        raise E.labels_not_whole(func, name, int(st["label_nonwhole"]), binary, k)
    if st.get("label_outside"):
        raise E.labels_outside(func, name, int(st["label_outside"]), binary, k,
                               st.get("outside_labels") or outside_label_rows(plan, lf))
    if "weights_dtype" in err:
        raise err["weights_dtype"]
    if plan.weight_col is not None:
        if st.get("w_bad"):
            raise E.bad_weights(func, plan.weight_col, int(st["w_bad"]))
        if not (st.get("w_sum") or 0.0) > 0.0:
            raise E.zero_weights(func, plan.weight_col)
    if "var_dtype" in err:
        raise err["var_dtype"]
    if st.get("var_nonfinite"):
        raise E.variable_not_finite(func, plan.var_col, int(st["var_nonfinite"]))
    if "lens_class" in err:
        raise err["lens_class"]
    if plan.var_col is not None:
        single = (st.get("var_unique") == 1) if plan.var_kind == "categorical" else (st.get("var_min") == st.get("var_max"))
        check_variable(func, plan.var_col, plan.binning, single=single, numeric=plan.var_kind == "numeric",
                       outside=int(st.get("var_outside") or 0))


# --------------------------------------------------------------------------- public


#: what Polars' engine computes on a LazyFrame, the result a LazyFrame (calframe.registry): the bin sums streamed
#: (:func:`supports` says which calls: no ``ci``, not the sweep, a scalar lens), the smooth ECE's grid sums
#: (engines/plan/grid_sums.py, without ``ci``), the companions' and summary's row means and disparity's figures per
#: group (engines/plan/row_means.py, without ``ci``), GECE's cell sums (engines/plan/vector_sums.py: uniform bins, without
#: ``ci`` or a row selection), ``monitor``'s windows (calframe.expr in ``group_by_dynamic``; engines/windows.py with
#: ``ci``), ``apply``'s batches and the reliability table (engines/streaming/reliability.py); the others collect the needed
#: columns
CAPABILITIES = {"lazy": Capabilities(frozenset({"bin_sums", "bin_table", "grid_sums", "row_means", "groups",
                                                "vector_sums", "windows", "batches"}), collects=None, word="streamed")}


def supports(req: Request, state: str, frame: Any) -> str | None:
    """What of ``req`` (of ``state``) Polars' streaming engine does not compute on the LazyFrame ``frame``, None
    when it streams it (the engine's answer to :func:`calframe.registry.route`; the call is then collected).

    The bin sums stream for a CE_p request whose probabilities are one column (binary or ``Array``) or a list of
    class columns, with the ``top1`` or ``class:c`` lens, uniform / explicit-edge / quantile / equal-mass bins
    (with weights too: :mod:`calframe.engines.plan.order_stats`; not the sweep: it sorts each group's rows), at most
    one variable and ``ci=`` drawn from the moments of its bins; the other states as
    :func:`calframe.engines.plan.base.outside` says. Bad column names or values do not make it collected: the
    passes raise the eager path's errors for them."""
    if state == "bin_table" and req.kind == "reliability":  # the table (engines/streaming/reliability.py): fixed bins
        b = req.binning
        if b is None or not (b.scheme == "uniform" or b.edges is not None):
            return "a reliability table on data-dependent bins"
    what = P.outside(req, state)
    if what is not None:
        return what
    try:
        schema = frame.collect_schema()
    except Exception:  # a plan that fails to resolve raises its error when the call runs it
        return None
    if P.prob_shape(schema, req) == "list":
        return "a List probability column"
    return None


def streams(frame: Any, req: Request) -> bool:
    """Whether ``frame`` is a LazyFrame whose bin sums for ``req`` Polars' streaming engine computes
    (:func:`supports`)."""
    return isinstance(frame, pl.LazyFrame) and req.kind == "ce" and supports(req, "bin_sums", frame) is None


def refuse(func: str, kind: str, why: str) -> Exception:  # pragma: no cover - a LazyFrame collects what it does not stream
    """The protocol's refusal: never raised here (a LazyFrame's other calls are collected)."""
    return E.ParameterError(f"{func}: {why} is not streamed")


def collect(frame: pl.LazyFrame) -> pl.LazyFrame:
    """The frame the eager engine reads for a call collected here: the LazyFrame itself (the eager engine
    collects its needed columns, and its result is a LazyFrame again)."""
    return frame


def lazy_sums(lf: pl.LazyFrame,
              req: Request) -> tuple[np.ndarray, pl.DataFrame | None, np.ndarray, float | np.ndarray]:
    """Per (group, bin) sums of a LazyFrame for ``req``, computed by the streaming engine.

    Returns ``(sums, keys, counts, scale)``: ``sums`` has shape ``(n_groups, n_bins, 3)``
    holding ``[sum w, sum w*conf, sum w*acc]`` per cell (what
    :func:`calframe.engines.eager.binned_sums` returns for the collected frame, to
    rounding), ``keys`` the group key table sorted like calframe's eager
    output (ascending, nulls last, original dtypes; None without ``by``) and
    ``counts`` the rows per group (int64, the ``n`` column). With
    ``req.variable``, rows are binned on that column (VECE) instead of the lensed
    confidence. Bad input raises the eager path's exception and message.
    Weights are summed divided by the eager path's power of two (``Scored.weight_scale``), so
    they neither overflow nor lose bits as subnormals; ``scale`` is that power of two (one per
    group with ``by``; 1.0 without weights), what ``ce_from_sums``' ``count_scale`` takes.
    """
    sums, keys, counts, scale, _ = sums_and_moments(lf, req)
    return sums, keys, counts, scale


def sums_and_moments(lf: pl.LazyFrame, req: Request, moments: bool = False) -> tuple[Any, ...]:
    """:func:`lazy_sums`, and with ``moments`` the :class:`calframe.moments.Moments` of the bins from the same
    pass (uniform or explicit-edge bins), plus one bounded query for the small cells' rows."""
    from ... import moments as M

    func = req.func
    plan = prepared(make_plan(lf, req), lf)
    m = None
    if plan.data_binned:  # with moments: the edges found once, then held fixed (moments.edges_ci)
        out = _data_binned_sums(plan, lf, moments)
        if moments:
            out, m = out
    else:
        conf, acc = lensed_exprs(plan)
        res = collect_frame(main_query(plan, lf, conf, acc, moments))
        if moments:
            res, cells = split_moments(plan, res)
        out = assemble(plan, checked(plan, lf, exact_floats(res)))
        if moments:
            merged, fetch = cell_moments(plan, cells, int128_float)
            small = small_rows(plan, lf, conf, fetch) if fetch is not None else M.NO_ROWS
            m = M.from_cells(*merged, small, plan.weight_col is not None)
    sums, keys, counts = out
    if plan.weight_col is not None:
        check_group_weights(func, plan.weight_col, sums[..., 0].sum(axis=1), counts, keys)
    return sums, keys, counts, group_scales(plan, keys), m


def prepared(plan: EnginePlan, lf: pl.LazyFrame) -> EnginePlan:
    """``plan``, the errors its schema decided raised (in the checks' order) and the weights' scale set."""
    if plan.schema_errors:
        run_checks(plan, detail_stats(plan, lf), lf)
        raise AssertionError(f"{plan.func}: a schema error was not raised")  # pragma: no cover
    if plan.weight_col is not None:
        _set_weight_scale(plan, lf)
    return plan


def checked(plan: EnginePlan, lf: pl.LazyFrame, res: pl.DataFrame) -> pl.DataFrame:
    """A pass's cells (``LEN``, ``OK``, ``BIN`` -1 for a dropped row, ``W``), the eager path's checks run."""
    st = light_stats(plan, res)
    if st["bad"]:
        run_checks(plan, detail_stats(plan, lf), lf)
        raise AssertionError(f"{plan.func}: the streaming pass found bad rows that no check reports")  # pragma: no cover
    run_checks(plan, st, lf)
    return res


def light_stats(plan: EnginePlan, res: pl.DataFrame) -> dict[str, Any]:
    """The checks' inputs from the main pass's table (every bad-row count is zero when ``bad`` is)."""
    kept = kept_cells(plan, res)
    st: dict[str, Any] = {
        "n_total": int(res[LEN].sum()),
        "n_kept": int(kept[LEN].sum()),
        "bad": int(kept[LEN].sum()) - int(kept[OK].sum()),
        "nulls": {},
    }
    if plan.weight_col is not None:
        st["w_sum"] = float(kept[W].sum())
    if plan.var_col is not None:
        if plan.var_kind == "categorical":
            st["var_unique"] = kept[BIN].n_unique()
        else:
            st["var_min"], st["var_max"] = kept[VMIN].min(), kept[VMAX].max()
    return st


def kept_cells(plan: EnginePlan, res: pl.DataFrame) -> pl.DataFrame:
    if plan.nulls != "drop":
        return res
    if plan.var_kind == "categorical":
        return res.filter(pl.col(BIN).is_not_null())
    return res.filter(pl.col(BIN).is_null() | (pl.col(BIN) != -1))  # (a null bin: a NaN row, reported)


def group_index(plan: EnginePlan, cells: pl.DataFrame) -> tuple[np.ndarray, pl.DataFrame | None, int]:
    """Group code of each cell (keys sorted ascending, nulls last) and the key table."""
    if not plan.by_cols:
        return np.zeros(cells.height, dtype=np.int64), None, 1
    keys = cells.select(plan.keys).unique().sort(plan.keys, nulls_last=True, maintain_order=True)
    idx = keys.with_row_index(f"{COL_PREFIX}g")
    g = cells.select(plan.keys).with_row_index(f"{COL_PREFIX}row").join(
        idx, on=plan.keys, how="left", nulls_equal=True
    ).sort(f"{COL_PREFIX}row")[f"{COL_PREFIX}g"].to_numpy().astype(np.int64)
    return g, plan.user_keys(keys), keys.height


def assemble(plan: EnginePlan, res: pl.DataFrame, bin_codes: np.ndarray | None = None,
              n_bins: int | None = None) -> tuple[np.ndarray, pl.DataFrame | None, np.ndarray]:
    cells = kept_cells(plan, res)
    g, keys, n_groups = group_index(plan, cells)
    if bin_codes is None:
        if plan.var_kind == "categorical":
            cats = cells.select(pl.col(BIN).unique(maintain_order=True)).with_row_index(f"{COL_PREFIX}code")
            bin_codes = (
                cells.select(BIN).with_row_index(f"{COL_PREFIX}row").join(cats, on=BIN, how="left", nulls_equal=True)
                .sort(f"{COL_PREFIX}row")[f"{COL_PREFIX}code"].to_numpy().astype(np.int64)
            )
            n_bins = max(cats.height, 1)
        else:
            bin_codes = cells[BIN].to_numpy().astype(np.int64)
            n_bins = plan.binning.bins
    assert n_bins is not None
    check_cells(n_groups, n_bins, func=plan.func)
    sums = np.zeros((n_groups, n_bins, 3))
    n = cells[W].to_numpy() if plan.weight_col is not None else cells[LEN].to_numpy().astype(np.float64)
    np.add.at(sums, (g, bin_codes, 0), n)
    np.add.at(sums, (g, bin_codes, 1), cells[SC].to_numpy())
    np.add.at(sums, (g, bin_codes, 2), cells[SA].to_numpy())
    counts = np.bincount(g, weights=cells[LEN].to_numpy().astype(np.float64), minlength=n_groups).astype(np.int64)
    return sums, keys, counts


# --------------------------------------------------------------------------- quantile / equal-mass bins

def _data_binned_sums(plan: EnginePlan, lf: pl.LazyFrame, moments: bool = False) -> Any:
    """Quantile / equal-mass bins per group, exact, in streaming passes (see the module docstring): (sums, keys,
    counts). ``moments``: ((sums, keys, counts), the :class:`calframe.moments.Moments` of the same bins), the
    accumulate pass per (keys, bin, acc) with the second moments beside, plus one bounded query for the rows of
    the small cells (the edges are the call's: the bootstrap conditional on them)."""
    conf, acc = lensed_exprs(plan)
    x = conf if plan.var_col is None else var_expr(plan)
    gk = plan.keys or [ONE]
    keep = keep_expr(plan)
    bad = ~row_ok(plan).fill_null(False)
    if keep is not None:
        bad = bad & keep
    cols = key_cols(plan) or [pl.lit(0, pl.Int8).alias(ONE)]
    cols += [x.alias(X), conf.alias(CONF), acc.alias(ACC), bad.alias(BAD),
             (keep if keep is not None else pl.lit(True)).alias(KEEP)]
    weighted = plan.weight_col is not None  # the edges of the rows repeated w_i times (plan/order_stats.py)
    if weighted:
        cols += [weights_expr(plan).alias(WT), raw_weights(plan).alias(RW)]
    base = with_scales(plan, lf).select(cols)
    base = base.with_columns(OS.positive_columns(pl)) if weighted else base

    # pass 1: validation, and per group count / min / max (weighted: also of the rows of positive weight)
    aggs = [pl.len().alias(LEN), pl.col(BAD).sum().alias(BAD), pl.col(X).min().alias(MIN),
            pl.col(X).max().alias(MAX)]
    if weighted:
        aggs += [pl.col(WT).sum().alias(W)] + OS.positive_aggs(pl)
    res = collect_frame(base.group_by(gk + [KEEP]).agg(aggs))
    kept = res.filter(pl.col(KEEP))
    st: dict[str, Any] = {"n_total": int(res[LEN].sum()), "n_kept": int(kept[LEN].sum()),
                          "bad": int(res[BAD].sum()), "nulls": {}}
    if st["bad"]:
        run_checks(plan, detail_stats(plan, lf), lf)
        raise AssertionError(f"{plan.func}: the streaming pass found bad rows that no check reports")  # pragma: no cover
    if plan.weight_col is not None:
        st["w_sum"] = float(kept[W].sum())
    if plan.var_col is not None:
        st["var_min"], st["var_max"] = kept[MIN].min(), kept[MAX].max()
    run_checks(plan, st, lf)

    groups = kept.drop(KEEP).sort(gk, nulls_last=True, maintain_order=True)
    rows_ = base.filter(pl.col(KEEP)) if keep is not None else base
    edge_rows = rows_.filter(pl.col(RW) > 0).with_columns(weight_bucket(pl.col(WT)).alias(EB)) if weighted else rows_
    exact_w = [fixed_sum(pl.col(WT), pl.col(EB)).alias(OS.FX)]  # weighted: exact sums per weight bucket

    def hist(path: list[str], grids: list[pl.DataFrame], c_name: str) -> pl.DataFrame:
        cell = gk + path + [c_name] + ([EB] if weighted else [])
        return collect_frame(OS.cells_query(edge_rows, gk, path, grids).group_by(cell).agg(
            pl.len().alias(CNT), pl.col(X).min().alias(MIN), pl.col(X).max().alias(MAX),
            *(exact_w if weighted else [])))

    def values(path: list[str], grids: list[pl.DataFrame], want: pl.DataFrame) -> pl.DataFrame:
        q = OS.cells_query(edge_rows, gk, path, grids)
        return collect_frame(q.join(want.lazy(), on=gk + path, how="inner", nulls_equal=True).select(
            NODE, X, *([RW] if weighted else [])))

    egroups, exact = groups, None
    if weighted:  # each group's exact sum of weights (the eager W), in one more pass
        totals = collect_frame(edge_rows.group_by(gk + [EB]).agg(
            *exact_w, pl.col(RW).max().alias(OS.MRW), pl.col(WT).max().alias(OS.MWT)))
        egroups, *exact = OS.weighted_groups(OS.positive_groups(groups), gk, totals)
    etab, ecols, n_bins = edge_columns(egroups, gk, plan.binning, lambda seg, rank: order_statistics(
        egroups, gk, seg, rank, hist, values, weighted=weighted, exact=exact), weighted)
    qcut = plan.binning.scheme == "quantile"
    below = pl.sum_horizontal([pl.col(c) < pl.col(X) for c in ecols]).cast(pl.Int32)
    ne = pl.col(f"{COL_PREFIX}ne")
    if qcut:  # weighted: a row above its group's top edge (weight 0) in the last bin, as the eager engine
        bin_expr = pl.max_horizontal(below, pl.lit(1, pl.Int32)) - 1
        bin_expr = pl.min_horizontal(bin_expr, pl.max_horizontal(ne - 2, pl.lit(0, pl.Int32))) if weighted else bin_expr
    else:
        bin_expr = pl.min_horizontal(below, ne - 1)
    aggs = _sum_aggs(plan)
    q = rows_.join(etab.lazy(), on=gk, how="inner", nulls_equal=True).with_columns(bin_expr.alias(BIN))
    if weighted:
        q = q.with_columns(weight_bucket(pl.col(WT)).alias(EB))
    cell = gk + [BIN] + ([EB] if weighted else [])
    if not moments:
        return cell_sums(plan, exact_floats(collect_frame(q.group_by(cell).agg(aggs))), groups, gk, n_bins)
    return _data_binned_moments(plan, q, cell, aggs, groups, gk, n_bins)


def _data_binned_moments(plan: EnginePlan, q: pl.LazyFrame, cell: list[str], aggs: list[pl.Expr],
                         groups: pl.DataFrame, gk: list[str], n_bins: int) -> tuple[tuple, Any]:
    """The accumulate pass of quantile / equal-mass bins with the moments (``q``: the kept rows with their
    ``BIN``; ``cell``: the point sums' cell): the point sums are the moments' cells added up over the label
    (exact integers: the bits of the pass without moments), then the small cells' rows in one bounded query."""
    from ... import moments as M

    res = collect_frame(q.group_by(cell + [ACC]).agg(aggs + _moment_aggs(plan)))
    point = res.group_by(cell).agg(pl.col(c).sum() for c in res.columns if c not in cell and c not in (ACC, *Q))
    out = cell_sums(plan, exact_floats(point), groups, gk, n_bins)
    merged, fetch = cell_moments(plan, res, int128_float, n_bins)
    small = M.NO_ROWS
    if fetch is not None:
        w = pl.col(WT) if plan.weight_col is not None else pl.lit(1.0)
        got = collect_frame(q.join(fetch.lazy(), on=plan.keys + [BIN, ACC], how="inner", nulls_equal=True).select(
            pl.col(f"{COL_PREFIX}cell"), w.alias(W), (w * pl.col(CONF)).alias(SC)))
        small = (got[f"{COL_PREFIX}cell"].to_numpy(), got[W].to_numpy(), got[SC].to_numpy())
    return out, M.from_cells(*merged, small, plan.weight_col is not None)


def cell_sums(plan: EnginePlan, cells: pl.DataFrame, groups: pl.DataFrame, gk: list[str],
              n_bins: int) -> tuple[np.ndarray, pl.DataFrame | None, np.ndarray]:
    """(sums, keys, counts) of the accumulate pass's cells (``gk``, ``BIN``, the exact sums) for ``groups``
    (sorted; ``gk`` and ``LEN``)."""
    gidx = groups.select(gk).with_row_index(f"{COL_PREFIX}g")
    g = (
        cells.select(gk).with_row_index(f"{COL_PREFIX}row").join(gidx, on=gk, how="left", nulls_equal=True)
        .sort(f"{COL_PREFIX}row")[f"{COL_PREFIX}g"].to_numpy().astype(np.int64)
    )
    b = cells[BIN].to_numpy().astype(np.int64)
    sums = np.zeros((groups.height, n_bins, 3))
    n = cells[W].to_numpy() if plan.weight_col is not None else cells[LEN].to_numpy().astype(np.float64)
    np.add.at(sums, (g, b, 0), n)
    np.add.at(sums, (g, b, 1), cells[SC].to_numpy())
    np.add.at(sums, (g, b, 2), cells[SA].to_numpy())
    keys = plan.user_keys(groups) if plan.by_cols else None
    return sums, keys, groups[LEN].to_numpy().astype(np.int64)


def order_statistics(*args: Any, **kwargs: Any) -> np.ndarray:
    """:func:`calframe.engines.plan.order_stats.order_statistics` with this engine's COLLECT_BUDGET and HIST_CELLS."""
    return OS.order_statistics(*args, budget=COLLECT_BUDGET, hist_cells=HIST_CELLS, **kwargs)


# --------------------------------------------------------------------------- lazy out


def binned(req: Request, frame: pl.LazyFrame, figures: dict | None = None) -> Any:
    """A request of bin sums on a LazyFrame (the registry's entry, :func:`calframe.engines.run_binned`): streamed
    (:func:`run`) when it can be, else the eager engine on the collected columns."""
    if req.variable is not None or not req.variables:
        F.check_by_names(req.func, req.by, F.result_columns(req), frame)
        streamed = run(frame, req)
        if streamed is not None:
            return streamed
    return evaluate(req, frame, figures)


def run(frame: Any, req: Request) -> pl.LazyFrame | None:
    """A LazyFrame's figure as a LazyFrame (spec section 8, "Lazy in, lazy out"), or None when the call needs the
    rows in memory.

    The plan is read from the schema now (a missing column raises here, as the parameters already have); when
    the result is collected, Polars' streaming engine computes the per (group, bin) sums (this module:
    uniform, explicit-edge, quantile and equal-mass bins, scalar lenses, one variable, no bootstrap; bad data
    raises the eager path's errors there) and :func:`figures.binned_values` finalizes them. The result has the group
    columns (with ``by``), ``n`` and the figure: one row without ``by``.
    """
    if not streams(frame, req):
        return None
    plan = make_plan(frame, req)
    ends = ("", "_lo", "_hi") if req.ci is not None else ("",)
    schema = {c: plan.schema[c] for c in plan.by_cols} | {"n": pl.Int64}
    schema |= {f"{f}{end}": pl.Float64 for f in req.figure_names for end in ends}
    schema |= {F.CI_METHOD: pl.String} if req.ci is not None else {}

    def run() -> pl.DataFrame:
        sums, keys, counts, scale, m = sums_and_moments(frame, req, moments=req.ci is not None)
        return moment_result(req, sums, keys, counts, scale, m)

    from ..._progress import carry  # the call's progress= holds where the result is computed (at collect)

    return pl.defer(carry(run), schema=schema)


def moment_result(req: Request, sums: np.ndarray, keys: pl.DataFrame | None, counts: np.ndarray, scale: Any,
                  m: Any) -> pl.DataFrame:
    """A CE_p result from its bin sums, with ``req.ci`` its intervals from the moments ``m`` of the same bins."""
    from ... import moments as M
    from ..eager import ce_figures

    values = F.binned_values(req, lambda c: sums, 1, scale)
    bounds = None
    if req.ci is not None:
        bounds = M.bounds_from_moments(req, ce_figures(req), sums, m, keys, scale)
    return F.shape(req, values, counts, keys, "polars", bounds, scalar=False)
