"""Exact order statistics of each group's values by histogram passes, for quantile / equal-mass edges on the
engines that cannot sort a group's rows (the LazyFrame engine, :mod:`calframe.engines.streaming.streamed`, and the narwhals
engine over DuckDB, Spark, Ibis and pyarrow): the engine runs the queries (``hist``, ``values``), this module
follows the wanted ranks through them.

With frequency weights (``weighted=True``) a "rank" is a float position in [0, W) of the group's rows of
positive weight laid end to end in the order of their values, row i covering [C_{i-1}, C_i), C_i the exact sum
w_1 + ... + w_i correctly rounded (:func:`calframe.binning.weighted_take`, the eager definition). The histograms
carry each cell's exact sum of weights beside its count (the fixed-point sums of the scaled weights per weight
bucket, ``lazy.fixed_sum``, combined here as Python integers: :func:`exact_cells`), W is the group's exact sum
rounded (:func:`weighted_groups`, one more pass), a position is followed into the first cell whose running sum
at its end, rounded, exceeds it, and the values of the last cells are collected with their weights and read by
``binning.Running`` from the exact weight before them. Every running sum is the eager one, so the edges are the
eager engine's bit for bit, for any weights; for whole weights they are the ranks of the frame with each row
repeated w_i times.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from ...binning import Binning, Running, Take, edge_table, pack_edges, rounded, take_each
from .base import BUCKET_BITS, CNT, COL_PREFIX, EB, LEN, MAX, MAX_BUCKET, MIN, NODE, WEIGHTED_BITS, X

#: a group's (or a histogram cell's) sum of the caller's weights over its rows of positive weight
WSUM = f"{COL_PREFIX}wsum"
#: a row's weight as the caller gave it (not scaled): the positions of weighted edges are in those units
RW = f"{COL_PREFIX}rw"
#: a group's rows of positive weight, their min and max (the first pass's, beside the rows')
PLEN, PMIN, PMAX = f"{COL_PREFIX}plen", f"{COL_PREFIX}pmin", f"{COL_PREFIX}pmax"
#: a cell's (or group's) exact sum of the scaled weights (``WT``) in one weight bucket (``EB``), as Int128
#: (``lazy.fixed_sum``: trunc(w 2^(WEIGHTED_BITS + BUCKET_BITS k)), exact for a weight of bucket k)
FX = f"{COL_PREFIX}wfx"
#: a group's largest weight, as the caller gave it and scaled: their ratio is the group's power of two
MRW, MWT = f"{COL_PREFIX}mrw", f"{COL_PREFIX}mwt"
#: the exponent of the unit of the exact sums of scaled weights, every bucket's sum shifted into it
UNIT = -(WEIGHTED_BITS + BUCKET_BITS * MAX_BUCKET)
_XI = f"{COL_PREFIX}xi"
#: cells per node (at most) in one histogram pass
GRID_CELLS = 4096
#: at most this many refinement levels of the histogram
MAX_LEVELS = 8


def cell_expr(x: pl.Expr, lo: str, sc: str, g: str) -> pl.Expr:
    """A grid cell, monotone in x: clip(floor((x - lo) * sc), 0, g - 1)."""
    return ((x - pl.col(lo)) * pl.col(sc)).floor().clip(0.0, pl.col(g).cast(pl.Float64) - 1.0).cast(pl.Int32)


def cells_query(rows_: pl.LazyFrame, gk: list[str], path: list[str], grids: list[pl.DataFrame]) -> pl.LazyFrame:
    """Rows (``gk``, ``X``, ...) with their cell at every level of ``grids`` (``order_statistics``' ``grids``:
    inner joins keep only the rows in refined nodes), the cell of level L in ``COL_PREFIX cL`` (Int32)."""
    q = rows_
    for level, grid in enumerate(grids):
        on = gk + path[:level]
        lo_c, sc_c, g_c = f"{COL_PREFIX}lo{level}", f"{COL_PREFIX}sc{level}", f"{COL_PREFIX}gn{level}"
        q = q.join(grid.lazy(), on=on, how="inner", nulls_equal=True)
        q = q.with_columns(cell_expr(pl.col(X), lo_c, sc_c, g_c).alias(f"{COL_PREFIX}c{level}")).drop(lo_c, sc_c, g_c)
    return q


def grid_size(cnt: np.ndarray, targets: np.ndarray, hist_cells: int) -> np.ndarray:
    """Cells per node: about sqrt(targets * rows) (histogram size ~ values collected), at most
    ``hist_cells`` over all nodes, 2..GRID_CELLS each.

    >>> grid_size(np.array([100, 10**6]), np.array([1, 4]), 1 << 16).tolist()
    [10, 2000]
    """
    share = max(2, hist_cells // max(cnt.shape[0], 1))
    g = np.minimum(np.ceil(np.sqrt(np.maximum(targets, 1) * cnt.astype(np.float64))), share)
    return np.clip(g, 2, GRID_CELLS).astype(np.int64)


def positive_columns(ns: Any) -> list[Any]:
    """The row columns :func:`positive_aggs` sums (``ns``: ``polars`` or ``narwhals``, over the columns ``X`` and
    ``RW``): 1 for a row of positive weight, and its ``X`` (null for a row of weight 0)."""
    pos = ns.col(RW) > 0
    return [pos.cast(ns.Int64).alias(PLEN), ns.when(pos).then(ns.col(X)).alias(PMIN)]


def positive_aggs(ns: Any) -> list[Any]:
    """The first pass's elementary aggregations (as a pyarrow group-by takes them) over a group's rows of positive
    weight, on :func:`positive_columns`: their number, min and max of ``X``, and the sum of ``RW`` (a row of
    weight 0 adds 0 to it)."""
    return [ns.col(PLEN).sum().alias(PLEN), ns.col(PMIN).min().alias(PMIN), ns.col(PMIN).max().alias(PMAX),
            ns.col(RW).sum().alias(WSUM)]


def positive_groups(groups: pl.DataFrame) -> pl.DataFrame:
    """``groups`` (the first pass's, with :func:`positive_aggs`) as :func:`order_statistics` reads them with weights:
    ``LEN``, ``MIN``, ``MAX`` those of the rows of positive weight."""
    return groups.drop(LEN, MIN, MAX).rename({PLEN: LEN, PMIN: MIN, PMAX: MAX})


def take_positions(totals: np.ndarray, fetch: Any) -> Take:
    """A :data:`calframe.binning.Take` of float positions (weighted edges) for an engine that finds them one by one:
    ``fetch(segment, position)`` gets every wanted pair of the segments with a positive total (positions may be
    negative or past the total: the first or the last value), sorted by segment then position.

    >>> take = take_positions(np.array([3.0, 0.0]), lambda s, p: p * 10)
    >>> take(np.array([[0.5, 2.0], [-1.0, -1.0]])).tolist()
    [[5.0, 20.0], [nan, nan]]
    """

    def take(ranks: np.ndarray) -> np.ndarray:
        out = np.full(ranks.shape, np.nan)
        present = np.asarray(totals) > 0
        seg = np.broadcast_to(np.arange(ranks.shape[0])[:, None], ranks.shape)[present].ravel()
        pos = np.asarray(ranks, dtype=np.float64)[present].ravel()
        order = np.lexsort((pos, seg))
        got = np.empty(pos.shape[0])
        got[order] = np.asarray(fetch(seg[order], pos[order]), dtype=np.float64)
        out[present] = got.reshape(-1, ranks.shape[1])
        return out

    return take


def edge_columns(groups: pl.DataFrame, gk: list[str], binning: Binning, fetch: Any,
                 weighted: bool = False) -> tuple[pl.DataFrame, list[str], int]:
    """Each group's quantile / equal-mass edges as columns beside its keys (``gk``), for the accumulate pass:
    binning's edge rule (``edge_table``) on the order statistics ``fetch(segment, rank)`` finds
    (:func:`calframe.binning.take_each`; ``weighted``: positions in [0, W), W the groups' ``WSUM``,
    :func:`take_positions`); kept edges first, in order, +inf pads; ``COL_PREFIX ne`` the number of edges.
    Returns (table, edge column names, bins)."""
    if weighted:
        totals = groups[WSUM].fill_null(0.0).to_numpy().astype(np.float64)
        table = edge_table(totals, binning, take_positions(totals, fetch))
    else:
        counts = groups[LEN].to_numpy().astype(np.int64)
        table = edge_table(counts, binning, take_each(counts, fetch))
    edges, offsets, n_bins = pack_edges(table, binning)
    n_edges = np.diff(offsets)
    width = max(int(n_edges.max()), 1)
    padded = np.full((groups.height, width), np.inf)
    row = np.repeat(np.arange(groups.height), n_edges)
    padded[row, np.arange(edges.shape[0]) - offsets[row]] = edges
    ecols = [f"{COL_PREFIX}e{j}" for j in range(width)]
    etab = groups.select(gk).with_columns(
        [pl.Series(c, padded[:, j]) for j, c in enumerate(ecols)]
        + [pl.Series(f"{COL_PREFIX}ne", n_edges.astype(np.int32))]
    )
    return etab, ecols, n_bins


def _cell_sums(ints: list[int], par: np.ndarray, node_base: list[int],
               exps: np.ndarray) -> tuple[list[int], np.ndarray]:
    """Weighted: each cell's exact weight before it in its group (its parent node's, plus the cells before it in
    that node, in value order) and the float of the running sum at its end (the exact sum correctly rounded, as
    ``binning.Running`` rounds it at a row)."""
    base: list[int] = [0] * len(ints)
    ends = np.empty(len(ints))
    run, prev = 0, -1
    for j, (x, p) in enumerate(zip(ints, par.tolist())):
        if p != prev:
            run, prev = node_base[p], p
        base[j] = run
        run += x
        ends[j] = rounded(run, int(exps[j]))
    return base, ends


def _follow(ends: np.ndarray, seg_start: np.ndarray, seg_end: np.ndarray, node: np.ndarray,
            pos: np.ndarray) -> np.ndarray:
    """Weighted: the cell (index into the histogram) of each position ``pos`` within its parent ``node``: the first
    whose running sum at its end (``ends``, increasing within a node) exceeds it; a position at or past the node's
    end goes to its last cell, a negative one to its first."""
    cell = np.empty(node.shape[0], dtype=np.int64)
    for k in np.unique(node):
        at = np.flatnonzero(node == k)
        a, b = seg_start[k], seg_end[k]
        cell[at] = a + np.minimum(np.searchsorted(ends[a:b], pos[at], side="right"), b - a - 1)
    return cell


def exact_cells(res: pl.DataFrame, keys: list[str]) -> tuple[pl.DataFrame, list[int]]:
    """A weighted histogram's (or totals') rows per (``keys``, ``EB``), with ``FX`` (Int128), as one row per
    ``keys``: ``CNT`` added, ``MIN`` / ``MAX`` / ``MRW`` / ``MWT`` their extremes (those present), and ``_XI``
    the index of its exact sum of scaled weights in the list returned (Python ints in the unit 2^UNIT: a
    bucket k's sum shifted left by BUCKET_BITS (MAX_BUCKET - k))."""
    eb = res[EB].fill_null(MAX_BUCKET).to_list()
    ints = [int(x or 0) << (BUCKET_BITS * (MAX_BUCKET - int(k))) for x, k in zip(res[FX].to_list(), eb)]
    aggs = [pl.col(_XI)]
    for c, f in ((CNT, "sum"), (MIN, "min"), (MAX, "max"), (MRW, "max"), (MWT, "max")):
        if c in res.columns:
            aggs.append(getattr(pl.col(c), f)())
    out = res.with_row_index(_XI).group_by(keys, maintain_order=True).agg(aggs)
    sums = [sum(ints[i] for i in rows) for rows in out[_XI].to_list()]
    return out.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias(_XI)), sums


def weighted_groups(groups: pl.DataFrame, gk: list[str], totals: pl.DataFrame) -> tuple[pl.DataFrame, list[int],
                                                                                         np.ndarray]:
    """``groups`` (:func:`positive_groups`) with ``WSUM`` each group's exact sum of weights correctly rounded (the
    eager W: ``binning.Running``), from ``totals``, the rows of positive weight per (``gk``, ``EB``) with ``FX``,
    ``MRW`` and ``MWT``; and per group that exact sum (a Python int) and the exponent of its unit (2^UNIT times
    the group's power of two, ``MRW / MWT``)."""
    tab, sums = exact_cells(totals, gk)
    joined = groups.drop(WSUM).join(tab.select(gk + [_XI, MRW, MWT]), on=gk, how="left", nulls_equal=True,
                                    maintain_order="left")
    xi = joined[_XI].to_list()
    ints = [0 if i is None else sums[i] for i in xi]
    ratio = (joined[MRW] / joined[MWT]).fill_null(1.0).fill_nan(1.0).to_numpy()
    exps = UNIT + np.frexp(ratio)[1].astype(np.int64) - 1
    w = [rounded(x, int(e)) for x, e in zip(ints, exps)]
    return joined.drop(_XI, MRW, MWT).with_columns(pl.Series(WSUM, w, dtype=pl.Float64)), ints, exps


def order_statistics(groups: pl.DataFrame, gk: list[str], tgt_group: np.ndarray, rank: np.ndarray,
                     hist: Any, values: Any, *, budget: int, hist_cells: int, weighted: bool = False,
                     exact: tuple[list[int], np.ndarray] | None = None) -> np.ndarray:
    """The ``rank``-th smallest value (0-based) of group ``tgt_group``, exactly, for each pair (``weighted``: the
    value at position ``rank``, a float, of the group's rows of positive weight; see the module docstring).

    Histogram passes narrow each wanted rank down to one cell (a node); a node
    whose min equals its max is resolved without reading values; the values of
    the remaining nodes are collected once their rows number at most ``budget``.
    The engine runs the passes: ``hist(path, grids, c)`` is the per (``gk + path + [c]``) count / min / max
    (``CNT``, ``MIN``, ``MAX``; ``weighted``: per (``gk + path + [c, EB]``), with ``FX``) of the rows with their
    cell at every level of ``grids``, ``values(path, grids, want)`` the (``NODE``, ``X``; ``weighted``: and
    ``RW``) of the rows in the nodes of ``want`` (``gk + path + [NODE]``). ``groups`` holds ``gk``, ``LEN``,
    ``MIN`` and ``MAX`` (``weighted``: over the rows of positive weight, which alone the queries read then; and
    ``exact``, :func:`weighted_groups`' sums and exponents).
    """
    out = np.full(rank.shape[0], np.nan)
    if rank.shape[0] == 0:
        return out
    rank = rank.astype(np.float64 if weighted else np.int64, copy=True)
    # level-0 nodes are the groups: grid between each group's min and max
    nodes = groups.select(gk)
    node_of = tgt_group.astype(np.int64, copy=True)
    cnt = groups[LEN].fill_null(0).to_numpy().astype(np.int64)
    mn, mx = groups[MIN].to_numpy(), groups[MAX].to_numpy()
    open_ = np.ones(rank.shape[0], dtype=bool)
    if weighted:  # each node's exact weight before it in its group (unit 2^exps[group]), and its group
        assert exact is not None
        exps = exact[1]
        node_base: list[int] = [0] * nodes.height
        node_group = np.arange(nodes.height)
    path: list[str] = []
    grids: list[pl.DataFrame] = []
    for level in range(MAX_LEVELS + 1):
        same = mn[node_of] == mx[node_of]
        out[open_ & same] = mn[node_of][open_ & same]
        open_ &= ~same
        if not open_.any():
            return out
        live = np.unique(node_of[open_])
        if cnt[live].sum() <= budget or level == MAX_LEVELS:
            break
        # refine: a grid inside each live node
        per_node = np.bincount(node_of[open_], minlength=nodes.height)[live]
        size = grid_size(cnt[live], per_node, hist_cells)
        span = mx[live] - mn[live]
        lo_c, sc_c, g_c = f"{COL_PREFIX}lo{level}", f"{COL_PREFIX}sc{level}", f"{COL_PREFIX}gn{level}"
        grid = nodes[live].with_columns(
            pl.Series(lo_c, mn[live]), pl.Series(sc_c, size / span), pl.Series(g_c, size)
        )
        grids.append(grid)
        c_name = f"{COL_PREFIX}c{level}"
        h = hist(path, grids, c_name)
        if weighted:
            h, h_ints = exact_cells(h, gk + path + [c_name])
        h = h.sort(gk + path + [c_name], nulls_last=True, maintain_order=True)
        # parent node of each histogram row
        parent_idx = nodes.select(gk + path).with_row_index(NODE)
        par = (
            h.select(gk + path).with_row_index(f"{COL_PREFIX}row")
            .join(parent_idx, on=gk + path, how="left", nulls_equal=True)
            .sort(f"{COL_PREFIX}row")[NODE].to_numpy().astype(np.int64)
        )
        h_cnt = h[CNT].to_numpy().astype(np.int64)
        order = np.lexsort((h[c_name].to_numpy(), par))
        h, par, h_cnt = h[order], par[order], h_cnt[order]
        seg_start = np.searchsorted(par, np.arange(nodes.height), side="left")
        new_node = node_of.copy()
        if weighted:
            seg_end = np.searchsorted(par, np.arange(nodes.height), side="right")
            ints = [h_ints[i] for i in h[_XI].to_list()]
            cell_group = node_group[par]
            cell_base, ends = _cell_sums(ints, par, node_base, exps[cell_group])
            new_node[open_] = _follow(ends, seg_start, seg_end, node_of[open_], rank[open_])
            node_base, node_group = cell_base, cell_group
        else:
            cum = np.concatenate([[0], np.cumsum(h_cnt)])
            base = cum[seg_start[node_of[open_]]]
            i = np.searchsorted(cum[1:], base + rank[open_], side="right")
            rank[open_] -= cum[i] - base
            new_node[open_] = i
        node_of = np.where(open_, new_node, -1)
        path = path + [c_name]
        nodes = h.select(gk + path)
        cnt, mn, mx = h_cnt, h[MIN].to_numpy(), h[MAX].to_numpy()
    # collect the values of the live nodes and pick the ranks
    live = np.unique(node_of[open_])
    want = nodes[live].with_columns(pl.Series(NODE, live))
    vals = values(path, grids, want).sort([NODE, X])
    v_node = vals[NODE].to_numpy().astype(np.int64)
    v_x = vals[X].to_numpy()
    first = np.searchsorted(v_node, node_of[open_], side="left")
    if not weighted:
        out[open_] = v_x[first + rank[open_]]
        return out
    last = np.searchsorted(v_node, node_of[open_], side="right")
    v_w = vals[RW].to_numpy().astype(np.float64)
    got = np.empty(first.shape[0])
    r, tnode = rank[open_], node_of[open_]
    for k in np.unique(first):  # each node's running sums from the exact weight before it (binning.Running)
        at = np.flatnonzero(first == k)
        a, b = k, last[at[0]]
        run = Running(v_w[a:b], node_base[tnode[at[0]]], int(exps[node_group[tnode[at[0]]]]))
        got[at] = v_x[[a + run.first_above(float(p)) for p in r[at]]]
    out[open_] = got
    return out
