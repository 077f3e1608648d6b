"""GECE's state, ``vector_sums``, where the rows are: a LazyFrame (Polars' streaming engine) and the narwhals
engine's frames (DuckDB relations, PySpark DataFrames, Ibis tables, pyarrow Tables).

:func:`calframe.gece` with uniform bins is per (group, cell) sums of the lensed vectors: a row's lensed output
g' and label y' (K' coordinates each: :func:`calframe.generalized.lens_exprs`, the numbers of
:func:`calframe.generalized.lensed`) fall in the cell of the first K' - 1 coordinates of g', each in
``uniform(bins)`` (:func:`calframe.binning.uniform_bin_expr` / ``uniform_bin_nw``, numpy.digitize's bin on every
edge), and each (group, cell[, weight bucket]) sums the weight (or counts the rows), w g'_j and w y'_j. The sums
are the engines' exact fixed-point ones (``lazy.fixed_sum``; narwhals ``fixed_parts`` / ``exact_sums``; a sum
may be negative: the rest coordinate of top-k, 1 - its sum, is a little below 0 on a row whose probabilities
add up to a little above 1), so the result has the same bits on every run; the Dask engine's per (group, cell)
sums (``partitions.workers``) are finalized the same way, by
:func:`calframe.generalized.gece_from_sums` (the marginal lens: one pass per class, combined by
:func:`~calframe.generalized.gece_marginal`).

The checks are the lazy engine's (``prepared``, ``checked``; narwhals ``Run.prepared`` / ``checked``: the eager path's
errors in its order); a lens's own errors (a class past the classes, a bad ``k`` or ``groups``: the rules of
:func:`calframe.generalized.choose_lens`) come after them, as on the eager path. Calls they do not run (adaptive
bins, ``ci=``, row selections, top-k of more than :data:`~calframe.generalized.TOPK_EXPR_MAX` classes; on the
narwhals engine an Array / List probability column too) are collected on a LazyFrame and a pyarrow Table and
refused on the others (:class:`calframe.engines.native.sums.Unsupported`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

import numpy as np
import polars as pl

from ... import figures as F
from ... import generalized as G
from ... import lenses as L
from ..._columns import check_group_weights
from ..._errors import ParameterError
from ..._limits import check_cells
from ..._names import fresh_prefix
from ...binning import uniform_bin_expr, uniform_bin_nw
from ...request import Request
from ..streaming import streamed as LZ
from ..native import sums as NW
from .base import (BIN, EB, KEEP, LEN, OK, COL_PREFIX, W, WT, EnginePlan, binary_prob, class_probs, keep_expr,
                   key_cols, row_ok, weights_expr, with_scales, make_plan)

__all__ = ["unsupported", "run_lazy", "run_native"]

#: a cell's sums: the weight (weighted; else the rows), and per coordinate j those of g'_j and y'_j
_N = f"{COL_PREFIX}vn"


def _g(j: int) -> str:
    return f"{COL_PREFIX}g{j}"


def _y(j: int) -> str:
    return f"{COL_PREFIX}y{j}"


def _digit(j: int) -> str:
    """The cell's j-th coordinate: the first is ``BIN`` (a dropped row's -1: ``lazy.kept_cells``)."""
    return BIN if j == 0 else f"{COL_PREFIX}d{j}"


def unsupported(req: Request, selects: bool) -> str | None:
    """What of a gece call the engines here do not run (None: they run it)."""
    if req.options.binning[0] != "uniform":
        return "binning='adaptive'"
    if req.ci is not None:
        return "ci="
    if selects:
        return "a row selection (where=, labels_in=, output_between=)"
    return None


def _plan_request(req: Request) -> Request:
    """The request the lazy engine's plan reads (its checks: columns, dtypes, rows); the lens is checked after
    them (:meth:`_Sums.choices`), as on the eager path."""
    return replace(req, lens=L.Lens("top1"))


class _Sums:
    """One gece call's per (group, cell) sums on one engine. An engine gives :meth:`cells` (the collected cells of
    one lens), :meth:`checked` (the eager path's error for bad rows) and :meth:`integers` (its sums as Int128)."""

    def __init__(self, plan: EnginePlan, req: Request) -> None:
        self.plan, self.req = plan, req

    def cells(self, choice: G.LensChoice) -> tuple[pl.DataFrame, int]:
        """The cells of ``choice`` and its K'."""
        raise NotImplementedError

    def checked(self, res: pl.DataFrame) -> None:
        raise NotImplementedError

    def integers(self, res: pl.DataFrame, names: list[str]) -> pl.DataFrame:
        return res

    def probs(self, ns: Any) -> Any:
        """The class probabilities (a list), or the one binary probability."""
        return binary_prob(self.plan, ns) if self.plan.binary else class_probs(self.plan, ns)

    def choices(self) -> tuple[list[G.LensChoice] | None, ParameterError | None]:
        """The lens of each pass (the marginal lens: one pass per class), or the lens's error (raised after the
        checks). Both None: a lens not rendered here (top-k of many classes)."""
        o, plan = self.req.options, self.plan
        try:
            if o.lens == "marginal":
                return [G.LensChoice("class", c) for c in range(plan.k)], None
            choice = G.choose_lens(plan.func, o.lens, o.scalar_lens, o.k, o.groups, plan.binary, plan.k)
        except ParameterError as e:
            return None, e
        if choice.kind == "topk" and plan.k > G.TOPK_EXPR_MAX:
            return None, None
        return [choice], None

    def run(self, choices: list[G.LensChoice] | None, error: ParameterError | None
            ) -> tuple[dict[str, np.ndarray], np.ndarray, pl.DataFrame | None]:
        """The checks, then the figure per group: ({name: values}, rows per group, the key table)."""
        plan, req = self.plan, self.req
        per = []
        counts = keys = None
        for i, choice in enumerate(choices or [G.LensChoice("top1")]):
            res, m = self.cells(choice)
            if i == 0:
                self.checked(res)
            cells = LZ.kept_cells(plan, res)
            g, keys, n_groups = LZ.group_index(plan, cells)
            if i == 0:
                counts = np.bincount(g, weights=cells[LEN].to_numpy().astype(np.float64), minlength=n_groups)
            sums = self.dense(cells, g, n_groups, m)
            if i == 0 and plan.weight_col is not None:
                check_group_weights(plan.func, plan.weight_col, sums[..., 0].sum(axis=1), counts, keys)
            if error is not None:
                raise error
            per.append(G.gece_from_sums(sums, req.p, req.options.distance))
        value = G.gece_marginal(np.stack(per), req.p) if req.options.lens == "marginal" else per[0]
        return {req.name: value}, counts.astype(np.int64), keys  # type: ignore[union-attr]

    def dense(self, cells: pl.DataFrame, g: np.ndarray, n_groups: int, m: int) -> np.ndarray:
        """The (n_groups, cells, 1 + 2 K') sums of the summed cells (``g``: each one's group): the cells of a
        group numbered in the order of their coordinates, a cell's weight buckets added smallest weights first."""
        weighted = self.plan.weight_col is not None
        names = [_g(j) for j in range(m)] + ([_N] + [_y(j) for j in range(m)] if weighted else [])
        table = LZ.exact_floats(self.integers(cells.with_columns(pl.Series(f"{COL_PREFIX}gi", g)), names))
        digits = [_digit(j) for j in range(max(m - 1, 1))]
        table = table.sort([f"{COL_PREFIX}gi", *digits] + ([EB] if weighted else []),
                           descending=[False] * (1 + len(digits)) + ([True] if weighted else []))
        gi = table[f"{COL_PREFIX}gi"].to_numpy().astype(np.int64)
        key = np.column_stack([gi] + [table[d].to_numpy().astype(np.int64) for d in digits])
        new = np.ones(table.height, dtype=bool)
        new[1:] = np.any(key[1:] != key[:-1], axis=1)
        cell = np.cumsum(new) - 1
        first = np.searchsorted(gi[new], np.arange(n_groups), side="left")
        b = cell - first[gi]
        n_bins = max(int(b.max()) + 1, 1) if b.size else 1
        check_cells(n_groups, n_bins, 1 + 2 * m, func=self.plan.func)
        out = np.zeros((n_groups, n_bins, 1 + 2 * m))
        n = table[_N] if weighted else table[LEN].cast(pl.Float64)
        np.add.at(out[..., 0], (gi, b), n.to_numpy())
        for j in range(m):
            np.add.at(out[..., 1 + j], (gi, b), table[_g(j)].to_numpy())
            np.add.at(out[..., 1 + m + j], (gi, b), table[_y(j)].cast(pl.Float64).to_numpy())
        return out

    def row_values(self, choice: G.LensChoice, ns: Any, ok: Any) -> tuple[dict[str, Any], dict[str, Any], int]:
        """The lensed g'_j and y'_j of a row as columns (null on a row the checks report), the columns they read
        that are computed first, beside the user's (top-k's ranks), and K'."""
        plan = self.plan
        staged: dict[str, Any] = {}
        prefix = fresh_prefix(plan.schema)

        def stage(j: int, e: Any) -> Any:
            staged[f"{prefix}rank{j}"] = e
            return ns.col(f"{prefix}rank{j}")

        gp, yp = G.lens_exprs(choice, self.probs(ns), ns.col(plan.label_col), plan.label_kind or "int", ns, stage)
        cols = {_g(j): ns.when(ok).then(e) for j, e in enumerate(gp)}
        cols.update({_y(j): ns.when(ok).then(e) for j, e in enumerate(yp)})
        return cols, staged, len(gp)

    def digits(self, m: int, bin_: Callable[[Any], Any], ns: Any) -> dict[str, Any]:
        """The cell of a row: the bin of each of g'_0 .. g'_{K'-2} (one cell when K' is 1); a dropped row's
        first coordinate is -1."""
        bins = int(self.req.options.binning[1])
        out = {_digit(j): bin_(ns.col(_g(j)), bins) for j in range(m - 1)} or {BIN: ns.lit(0).cast(ns.Int32)}
        if self.plan.nulls == "drop":
            out[BIN] = ns.when(ns.col(KEEP)).then(out[BIN]).otherwise(ns.lit(-1)).cast(ns.Int32)
        return out

    def summed(self, m: int) -> list[str]:
        """The values a cell sums exactly (fixed point): g'_j, and weighted the weight and w y'_j."""
        if self.plan.weight_col is None:
            return [_g(j) for j in range(m)]
        return [_N] + [_g(j) for j in range(m)] + [_y(j) for j in range(m)]

    def weighted_value(self, name: str, ns: Any) -> Any:
        """The row value summed as ``name``: w times the lensed one (the weight itself for ``_N``)."""
        return ns.col(WT) if name == _N else ns.col(WT) * ns.col(name)


# --------------------------------------------------------------------------- a LazyFrame, streamed


def run_lazy(frame: pl.LazyFrame, req: Request, selects: bool) -> pl.LazyFrame | None:
    """gece of a LazyFrame as a LazyFrame whose collect streams the cell sums (the plan read from the schema now:
    a missing column raises here), or None when the call needs the rows (:func:`unsupported`, a List column of
    probabilities, top-k of many classes): the eager engine then collects them."""
    if unsupported(req, selects) is not None:
        return None
    F.check_by_names(req.func, req.by, F.result_columns(req), frame)
    try:
        plan = make_plan(frame, _plan_request(req))
    except NotImplementedError:
        return None
    choices, error = _LazySums(plan, req, frame).choices()
    if choices is None and error is None:
        return None
    schema = {c: plan.schema[c] for c in plan.by_cols} | {"n": pl.Int64, req.name: pl.Float64}

    def run() -> pl.DataFrame:
        s = _LazySums(LZ.prepared(make_plan(frame, _plan_request(req)), frame), req, frame)
        values, counts, keys = s.run(choices, error)
        return F.shape(req, values, counts, keys, "polars", scalar=False)

    return pl.defer(run, schema=schema)


class _LazySums(_Sums):
    """The cell sums streamed by Polars (``lazy.fixed_sum``: Int128 sums), checked as the lazy engine checks."""

    def __init__(self, plan: EnginePlan, req: Request, lf: pl.LazyFrame) -> None:
        super().__init__(plan, req)
        self.lf = lf

    def checked(self, res: pl.DataFrame) -> None:
        LZ.checked(self.plan, self.lf, res)

    def cells(self, choice: G.LensChoice) -> tuple[pl.DataFrame, int]:
        plan = self.plan
        ok, keep = row_ok(plan), keep_expr(plan)
        weighted = plan.weight_col is not None
        values, staged, m = self.row_values(choice, pl, ok)
        cols = key_cols(plan) + [e.alias(n) for n, e in values.items()] + [ok.alias(OK)]
        if keep is not None:
            cols.append(keep.alias(KEEP))
        if weighted:
            cols.append(weights_expr(plan).alias(WT))
        q = with_scales(plan, self.lf)
        q = (q.with_columns(**staged) if staged else q).select(cols)
        if weighted:
            q = q.with_columns(LZ.weight_bucket(pl.col(WT)).alias(EB))
        q = q.with_columns(**self.digits(m, lambda x, b: uniform_bin_expr(x, b, "left"), pl))
        bucket = pl.col(EB) if weighted else None
        summed = self.summed(m)
        aggs = [pl.len().alias(LEN), pl.col(OK).sum().alias(OK)]
        aggs += [LZ.fixed_sum(self.weighted_value(n, pl) if weighted else pl.col(n), bucket).alias(n)
                 for n in summed]
        if weighted:
            aggs.append(pl.col(WT).sum().alias(W))
        else:
            aggs += [pl.col(_y(j)).sum().alias(_y(j)) for j in range(m)]
        cell = plan.keys + [_digit(j) for j in range(max(m - 1, 1))] + ([EB] if weighted else [])
        return LZ.collect_frame(q.group_by(cell).agg(aggs)), m


# --------------------------------------------------------------------------- DuckDB, Spark, Ibis, pyarrow


def run_native(frame: Any, req: Request, selects: bool) -> Any:
    """gece of a frame of the narwhals engine, the cells summed by the frame's own engine; the result in the
    input's type (as :func:`calframe.engines.native.sums.run`'s). A call it does not run raises
    :class:`~calframe.engines.native.sums.Unsupported` (a pyarrow Table is then collected)."""
    eng = NW.Engine(frame)
    what = unsupported(req, selects)
    if what is not None:
        raise NW.Unsupported(f"{req.func}: " + NW.refusal(eng.kind, what))
    F.check_by_names(req.func, req.by, F.result_columns(req), frame=None if not req.by else NW.Columns(eng))
    r = NW.Run(eng, _plan_request(req))
    sums = _NativeSums(r, req)
    choices, error = sums.choices()
    if choices is None and error is None:
        raise NW.Unsupported(f"{req.func}: " + NW.refusal(eng.kind, f"lens='topk' on more than {G.TOPK_EXPR_MAX} "
                                                                     "classes"))
    r.prepared()
    values, counts, keys = sums.run(choices, error)
    out = F.shape(req, values, counts, keys, "polars", scalar=eng.kind == "pyarrow")
    return out if isinstance(out, float) else eng.out(out)


class _NativeSums(_Sums):
    """The cell sums in the frame's engine (narwhals ``fixed_parts``: two Int64 parts, or one 128-bit sum on
    DuckDB), checked as the narwhals engine checks (``Run.fail``)."""

    def __init__(self, r: NW.Run, req: Request) -> None:
        super().__init__(r.plan, req)
        self.r = r

    def checked(self, res: pl.DataFrame) -> None:
        self.r.checked(res)

    def integers(self, res: pl.DataFrame, names: list[str]) -> pl.DataFrame:
        if self.r.wide:
            return res.with_columns(pl.col(n).cast(pl.Int128).fill_null(0) for n in names)
        big = [(pl.col(n + NW.HI).cast(pl.Int128).fill_null(0) * 2**NW.SPLIT
                + pl.col(n + NW.LO).cast(pl.Int128).fill_null(0)).alias(n) for n in names]
        return res.with_columns(big).drop([n + p for n in names for p in (NW.HI, NW.LO)])

    def cells(self, choice: G.LensChoice) -> tuple[pl.DataFrame, int]:
        r, plan = self.r, self.plan
        nw = r.nw
        ok, keep = NW.row_ok(plan), NW.keep_expr(plan)
        weighted = plan.weight_col is not None
        values, staged, m = self.row_values(choice, nw, ok)
        rows = NW.key_cols(plan, r.schema) + [e.alias(n) for n, e in values.items()]
        rows.append(ok.cast(nw.Int64).alias(OK))
        if weighted:
            w = nw.when(ok).then(r.weights())
            rows += [w.alias(WT), NW.bucket_expr(w).alias(EB)]
        if keep is not None:
            rows.append(keep.alias(KEEP))
        q = r.base(rows, staged).with_columns(**self.digits(m, uniform_bin_nw_left, nw))
        bucket = nw.col(EB) if weighted else None
        cell = plan.keys + [_digit(j) for j in range(max(m - 1, 1))] + ([EB] if weighted else [])
        summed = self.summed(m)
        sums = [c for n in summed for c in NW.fixed_parts(n, self.weighted_value(n, nw) if weighted else nw.col(n),
                                                            bucket, r.wide)]
        cols = [nw.col(c) for c in cell] + [nw.col(OK), *sums]
        aggs = [nw.len().alias(LEN), nw.col(OK).sum().alias(OK)]
        aggs += [nw.col(c).sum().alias(c) for n in summed for c in NW.part_names(n, r.wide)]
        if weighted:
            cols.append(nw.col(WT))
            aggs.append(nw.col(WT).sum().alias(W))
        else:
            cols += [nw.col(_y(j)) for j in range(m)]
            aggs += [nw.col(_y(j)).sum().alias(_y(j)) for j in range(m)]
        res = NW.collect_frame(q.select(cols).group_by(cell).agg(*aggs))
        return res.with_columns(pl.col(LEN).cast(pl.Int64), pl.col(OK).cast(pl.Int64)), m


def uniform_bin_nw_left(x: Any, bins: int) -> Any:
    """A coordinate's bin in ``uniform(bins)`` (left-closed, numpy.digitize's), in narwhals."""
    return uniform_bin_nw(x, bins, "left")
