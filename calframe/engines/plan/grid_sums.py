"""The smooth ECE's state, ``grid_sums``, where the rows are: a LazyFrame (Polars' streaming engine) and the
narwhals engine's frames (DuckDB relations, PySpark DataFrames, Ibis tables, pyarrow Tables).

:mod:`calframe.smooth` spreads every group's rows on node grids (a 1001-node grid for every bandwidth >= 0.01, a
finer one on demand) and computes everything else from the grids. Here the frame's own engine sums them: a row
at ``x`` (the lensed confidence) has its left node ``k = min(max(floor(x (m - 1)), 0), m - 2)`` and
``frac = x (m - 1) - k`` (the numba kernel's operations, :func:`calframe._kernels.smooth.node_sums`), and each
(group, k[, weight bucket]) cell sums four values: the weight and the weighted residual ``w (conf - acc)``
given to node k (times ``1 - frac``) and to node k + 1 (times ``frac``). The sums are the engines' exact
fixed-point ones (``lazy.fixed_sum``; narwhals ``fixed_parts`` / ``exact_sums``); the two halves of a node are
added as integers before the one rounding to float, so the grids have the same bits on every run.

The first pass sums every group's grid of the bandwidth's grid size (the 1001 nodes of the bisection, or the
caller's ``sigma``'s) and counts what the input checks need (the lazy engine's ``prepared`` / ``checked``;
narwhals ``Run.prepared`` / ``checked``: the eager path's errors and messages); a finer grid the bisection asks
for is another pass, for the groups that need it (:class:`calframe.smooth.Grids`' source). Calls they do not run
(``ci=``: the bootstrap needs the rows) are collected on a LazyFrame and a pyarrow Table and refused on the
others (:class:`calframe.engines.native.sums.Unsupported`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Callable

import numpy as np
import polars as pl

from ... import figures as F
from ... import smooth as S
from ..._columns import check_group_weights
from ...request import Request
from ..streaming import streamed as LZ
from ..native import sums as NW
from ..eager import evaluate
from .base import (ACC, BIN, CONF, EB, KEEP, LEN, OK, COL_PREFIX, W, WT, X, EnginePlan, group_scales, keep_expr,
                   key_cols, lensed_exprs, row_ok, weights_expr, with_scales, make_plan)

__all__ = ["streamed", "run_lazy", "run_native"]

#: a row's left node (float), the cells' group position, a node of the grid
_K, _G, _NODE = f"{COL_PREFIX}gk", f"{COL_PREFIX}gg", f"{COL_PREFIX}gnode"
#: the four sums of a cell: the weight and the residual given to the left node (0) and to the right one (1)
_W0, _W1, _R0, _R1 = f"{COL_PREFIX}w0", f"{COL_PREFIX}w1", f"{COL_PREFIX}r0", f"{COL_PREFIX}r1"
_SPREAD = (_W0, _W1, _R0, _R1)
#: a node's two sums (weights, residuals), the halves added
_GW, _GR = f"{COL_PREFIX}gw", f"{COL_PREFIX}gr"


def first_nodes(sigma: float | None) -> int:
    """The grid of the first pass: the caller's ``sigma``'s, or the 1001 nodes of every bisection trial >= 0.01."""
    return S.COARSE_NODES if sigma is None else S.grid_nodes(float(sigma))


def spread_stages(col: Callable[[str], Any], weighted: bool, m: int) -> list[dict[str, Any]]:
    """The four values a row gives its cell on the ``m``-node grid, as successive column stages over ``CONF``
    (null on a bad row), ``ACC`` and (``weighted``) ``WT``; ``col``: ``pl.col`` or narwhals' ``col``. The
    kernel's operations, in its order (:func:`calframe._kernels.smooth.node_sums`)."""
    x = col(CONF)
    frac = col(X) - col(_K)
    r = x - col(ACC)
    w = col(WT) if weighted else None
    if w is not None:
        r = w * r
    near, far = 1 - frac, frac
    return [{X: x * float(m - 1)}, {_K: col(X).floor().clip(0.0, float(m - 2))},
            {_W0: near if w is None else near * w, _W1: far if w is None else far * w, _R0: near * r, _R1: far * r}]


class _Pass:
    """One call's grid sums on one engine: the first pass (checked, every group) and the others (some groups).

    An engine gives :meth:`cells` (the collected per (keys, left node[, bucket]) cells of an ``m``-node grid),
    :meth:`checked` (the eager path's error for bad rows) and its exact sums: :meth:`parts` (the integer
    columns of a sum), :meth:`integer` (the sum as an Int128) and :meth:`floats` (the sums as floats)."""

    def __init__(self, plan: EnginePlan) -> None:
        self.plan = plan
        self.table: pl.DataFrame | None = None  # every group's keys (query names) and place

    def cells(self, m: int, only: pl.DataFrame | None) -> pl.DataFrame:
        """The cells of the ``m``-node grid; ``only``: the key table of the groups wanted (None: every group)."""
        raise NotImplementedError

    def checked(self, res: pl.DataFrame) -> None:
        raise NotImplementedError

    def parts(self, name: str) -> list[str]:
        return [name]

    def floats(self, table: pl.DataFrame) -> pl.DataFrame:
        return LZ.exact_floats(table)

    def first(self, m: int) -> tuple[S.Grids, np.ndarray, pl.DataFrame | None]:
        """The first pass: (the groups' :class:`calframe.smooth.Grids`, rows per group, the key table)."""
        plan = self.plan
        res = self.cells(m, None)
        self.checked(res)
        cells = LZ.kept_cells(plan, res)
        g, keys, n_groups = LZ.group_index(plan, cells)
        counts = np.bincount(g, weights=cells[LEN].to_numpy().astype(np.float64), minlength=n_groups)
        sums = self.node_sums(cells, g)
        if plan.weight_col is not None:
            totals = np.bincount(sums.groups, sums.weights, minlength=n_groups)
            check_group_weights(plan.func, plan.weight_col, totals, counts, keys)
        if keys is not None:
            self.table = keys.rename(dict(zip(plan.by_cols, plan.keys))).with_columns(
                pl.Series(_G, np.arange(n_groups)))
        known = {m: partial(_some, sums, n_groups, m)}  # dense for some groups at a time (Grids' chunks)
        return S.Grids(self.more, n_groups, group_scales(plan, keys), known), counts.astype(np.int64), keys

    def more(self, sel: np.ndarray, m: int) -> np.ndarray:
        """The ``m``-node grids of groups ``sel`` (a pass of their own)."""
        if self.table is None:
            return self.node_sums(LZ.kept_cells(self.plan, self.cells(m, None)), None).dense(None, 1, m)
        table = self.table[sel].with_columns(pl.Series(_G, np.arange(sel.shape[0])))
        cells = LZ.kept_cells(self.plan, self.cells(m, table)).join(table, on=self.plan.keys, how="inner",
                                                                      nulls_equal=True)
        return self.node_sums(cells, cells[_G].to_numpy().astype(np.int64)).dense(None, sel.shape[0], m)

    def node_sums(self, cells: pl.DataFrame, g: np.ndarray | None) -> _NodeSums:
        """The node sums of the summed cells (``BIN``: the left node, ``g``: each cell's group, None: one group):
        each node's two halves (and a weight bucket's cells) added as integers, rounded once to a float (signed:
        ``lazy.exact_floats``), in the order :meth:`_NodeSums.dense` adds them (the buckets smallest weights
        first). As many as the cells, whatever the number of groups."""
        eb = [EB] if EB in cells.columns else []
        g = np.zeros(cells.height, dtype=np.int64) if g is None else g

        def half(shift: int, w: str, r: str) -> pl.DataFrame:
            ints = [pl.col(a).cast(pl.Int128).alias(b)
                    for a, b in zip(self.parts(w) + self.parts(r), self.parts(_GW) + self.parts(_GR))]
            return cells.select(pl.Series(_G, g), (pl.col(BIN).cast(pl.Int64) + shift).alias(_NODE), *eb, *ints)

        both = pl.concat([half(0, _W0, _R0), half(1, _W1, _R1)]).group_by([_G, _NODE, *eb]).agg(pl.all().sum())
        both = self.floats(both).sort([_G, _NODE, *eb], descending=[False, False] + [True] * len(eb))
        return _NodeSums(both[_G].to_numpy(), both[_NODE].to_numpy(), both[_GW].to_numpy(), both[_GR].to_numpy())


@dataclass(frozen=True)
class _NodeSums:
    """Per (group, node[, weight bucket]): the group, the node, its weight and residual sums (:meth:`_Pass.node_sums`),
    in the order they are added."""

    groups: np.ndarray
    nodes: np.ndarray
    weights: np.ndarray
    residuals: np.ndarray

    def dense(self, place: np.ndarray | None, n: int, m: int) -> np.ndarray:
        """The grids ``(n, m, 2)``: group g's at ``place[g]`` (-1: not wanted; None: at g), the sums added in
        their order."""
        rows = slice(None) if place is None else np.flatnonzero(place[self.groups] >= 0)
        at = (self.groups[rows] if place is None else place[self.groups[rows]], self.nodes[rows])
        out = np.zeros((n, m, 2))
        np.add.at(out[..., 0], at, self.weights[rows])
        np.add.at(out[..., 1], at, self.residuals[rows])
        return out


def _some(sums: _NodeSums, n_groups: int, m: int, sel: np.ndarray) -> np.ndarray:
    """The ``m``-node grids of groups ``sel`` of ``n_groups`` from their node sums (:class:`calframe.smooth.Grids`'
    known grids)."""
    if sel.shape[0] == n_groups:  # (sel: ascending groups)
        return sums.dense(None, n_groups, m)
    return sums.dense(S.places(sel, n_groups), sel.shape[0], m)


def _value(req: Request, grids: S.Grids) -> dict[str, np.ndarray]:
    return {req.name: grids.smece(req.options.sigma)[0]}


# --------------------------------------------------------------------------- a LazyFrame, streamed


def streamed(req: Request, frame: pl.LazyFrame, figures: dict[str, Any]) -> Any:
    """The smooth ECE of a LazyFrame: streamed (:func:`run_lazy`) when it can be, else the eager engine on the
    collected columns (``figures``: its figure)."""
    F.check_by_names(req.func, req.by, F.result_columns(req), frame)
    out = run_lazy(frame, req)
    return out if out is not None else evaluate(req, frame, figures)


def run_lazy(frame: pl.LazyFrame, req: Request) -> pl.LazyFrame | None:
    """The smooth ECE of a LazyFrame as a LazyFrame whose collect streams the grid sums (the plan read from the
    schema now: a missing column raises here), or None when the call needs the rows (``ci=``, a List column of
    probabilities): the eager engine then collects them."""
    if req.ci is not None:
        return None
    try:
        plan = make_plan(frame, req)
    except NotImplementedError:
        return None
    schema = {c: plan.schema[c] for c in plan.by_cols} | {"n": pl.Int64, req.name: pl.Float64}

    def run() -> pl.DataFrame:
        grids, counts, keys = _LazyPass(make_plan(frame, req), frame).first(first_nodes(req.options.sigma))
        return F.shape(req, _value(req, grids), counts, keys, "polars", scalar=False)

    return pl.defer(run, schema=schema)


class _LazyPass(_Pass):
    """The grid sums streamed by Polars (``lazy.fixed_sum``: Int128 sums), checked as the lazy engine checks."""

    def __init__(self, plan: EnginePlan, lf: pl.LazyFrame) -> None:
        super().__init__(plan)
        self.lf = lf
        LZ.prepared(plan, lf)

    def checked(self, res: pl.DataFrame) -> None:
        LZ.checked(self.plan, self.lf, res)

    def cells(self, m: int, only: pl.DataFrame | None) -> pl.DataFrame:
        """Streamed; ``only``: a semi join."""
        plan = self.plan
        conf, acc = lensed_exprs(plan)
        keep, ok = keep_expr(plan), row_ok(plan)
        weighted = plan.weight_col is not None
        cols = key_cols(plan) + [pl.when(ok).then(conf).alias(CONF), acc.alias(ACC), ok.alias(OK)]
        if keep is not None:
            cols.append(keep.alias(KEEP))
        if weighted:
            cols.append(weights_expr(plan).alias(WT))
        q = with_scales(plan, self.lf).select(cols)
        if only is not None:
            q = q.join(only.lazy(), on=plan.keys, how="semi", nulls_equal=True)
        if weighted:
            q = q.with_columns(LZ.weight_bucket(pl.col(WT)).alias(EB))
        for stage in spread_stages(pl.col, weighted, m):
            q = q.with_columns(**stage)
        node = pl.col(_K).cast(pl.Int32)
        if keep is not None:
            node = pl.when(pl.col(KEEP)).then(node).otherwise(pl.lit(-1, pl.Int32))
        bucket = pl.col(EB) if weighted else None
        aggs = [pl.len().alias(LEN), pl.col(OK).sum().alias(OK)]
        aggs += [LZ.fixed_sum(pl.col(n), bucket).alias(n) for n in _SPREAD]
        if weighted:
            aggs.append(pl.col(WT).sum().alias(W))
        cell = plan.keys + [BIN] + ([EB] if weighted else [])
        return LZ.collect_frame(q.with_columns(node.alias(BIN)).group_by(cell).agg(aggs))


# --------------------------------------------------------------------------- DuckDB, Spark, Ibis, pyarrow


def run_native(frame: Any, req: Request) -> Any:
    """The smooth ECE of a frame of the narwhals engine, the grids summed by the frame's own engine; the result
    in the input's type (as :func:`calframe.engines.native.sums.run`'s). ``ci=`` raises
    :class:`~calframe.engines.native.sums.Unsupported` (a pyarrow Table is then collected)."""
    eng = NW.Engine(frame)
    if req.ci is not None:
        raise NW.Unsupported(f"{req.func}: " + NW.refusal(eng.kind, "ci="))
    F.check_by_names(req.func, req.by, F.result_columns(req), frame=None if not req.by else NW.Columns(eng))
    grids, counts, keys = _NativePass(NW.Run(eng, req)).first(first_nodes(req.options.sigma))
    out = F.shape(req, _value(req, grids), counts, keys, "polars", scalar=eng.kind == "pyarrow")
    return out if isinstance(out, float) else eng.out(out)


class _NativePass(_Pass):
    """The grid sums in the frame's engine (narwhals ``fixed_parts``: two Int64 parts, or one 128-bit sum on
    DuckDB), checked as the narwhals engine checks (``Run.fail``)."""

    def __init__(self, r: NW.Run) -> None:
        super().__init__(r.plan)
        self.r = r
        r.prepared()

    def checked(self, res: pl.DataFrame) -> None:
        self.r.checked(res)

    def parts(self, name: str) -> list[str]:
        return NW.part_names(name, self.r.wide)

    def floats(self, table: pl.DataFrame) -> pl.DataFrame:
        return NW.exact_sums(table, [_GW, _GR], self.r.wide)

    def cells(self, m: int, only: pl.DataFrame | None) -> pl.DataFrame:
        """In the frame's engine; ``only``: a join, when the keys can be joined on (else every group's cells,
        of which :meth:`more` keeps theirs)."""
        r, plan = self.r, self.plan
        nw = r.nw
        conf, acc = NW.lensed_exprs(plan)
        ok, keep = NW.row_ok(plan), NW.keep_expr(plan)
        weighted = plan.weight_col is not None
        rows = NW.key_cols(plan, r.schema) + [nw.when(ok).then(conf).alias(CONF), acc.alias(ACC),
                                               ok.cast(nw.Int64).alias(OK)]
        if weighted:
            w = nw.when(ok).then(r.weights())
            rows += [w.alias(WT), NW.bucket_expr(w).alias(EB)]
        if keep is not None:
            rows.append(keep.alias(KEEP))
        q = r.base(rows)
        if only is not None:
            try:
                exprs, names = NW.join_keys(plan, plan.keys)
            except NW.Unsupported:
                names = []
            if names:
                small = NW.polars_join_keys(only.select(plan.keys), plan.keys, names).drop(plan.keys)
                q = q.with_columns(exprs).join(r.eng.table(small), on=names, how="inner")
        for stage in spread_stages(nw.col, weighted, m):
            q = q.with_columns(**stage)
        node = nw.col(_K)
        if keep is not None:
            node = nw.when(nw.col(KEEP)).then(node).otherwise(nw.lit(-1))
        cell = plan.keys + [BIN] + ([EB] if weighted else [])
        bucket = nw.col(EB) if weighted else None
        sums = [c for n in _SPREAD for c in NW.fixed_parts(n, nw.col(n), bucket, r.wide)]
        cols = [nw.col(c) for c in cell if c != BIN] + [node.cast(nw.Int32).alias(BIN), nw.col(OK), *sums]
        aggs = [nw.len().alias(LEN), nw.col(OK).sum().alias(OK)]
        aggs += [nw.col(c).sum().alias(c) for n in _SPREAD for c in self.parts(n)]
        if weighted:
            cols.append(nw.col(WT))
            aggs.append(nw.col(WT).sum().alias(W))
        res = NW.collect_frame(q.select(cols).group_by(cell).agg(*aggs))
        return res.with_columns(pl.col(LEN).cast(pl.Int64), pl.col(OK).cast(pl.Int64))
