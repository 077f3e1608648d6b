"""Weighted quantile / equal-mass edges on a Dask DataFrame: the edges of the rows repeated w_i times, found where
the rows are, bit for bit the eager engine's (:func:`calframe.binning.weighted_take`).

The rule is the LazyFrame and narwhals engines' (:mod:`calframe.engines.plan.order_stats`: ``weighted_groups``,
``order_statistics``, ``take_positions``); only the passes are Dask's. Every partition sums, per (segment, cell,
weight bucket), its rows' count, min, max and the exact sum of their weights; Dask adds the partitions up
(``groupby(...).agg(..., split_out=1)``) and the client follows the wanted positions through the merged
histograms, then gathers the values of the last cells (at most :data:`GATHER_BUDGET` rows). A segment is
a (source, group) pair: a source is a (figure, class) whose values are binned (the lensed confidence of a class,
or a variable), a group the global group of the row's key (:class:`client._Groups`), ``SEG = source * n_groups +
group``.

Exact sums of weights without a common scale: a weight w = M 2^(e - 53) (M its 53-bit mantissa) counts as the
integer v = M 2^(s mod 8), s = e - 53 + WEIGHTED_BITS, in its bucket k = -floor(s / 8), whose unit is
2^-(WEIGHTED_BITS + 8 k): the fixed point of ``streamed.fixed_sum`` with the bucket taken from the exponent
(exact for every finite weight, subnormal ones included; k in [-128, 134]). v < 2^61 travels as three 21-bit
limbs, summed as int64 by Dask (exact up to 2^42 rows) and joined on the client into the Int128 ``FX`` that
``plan.order_stats`` reads. The group's unit is the same for every partition, so no pass is needed to agree on
a scale first: the first pass (in the result's graph) holds the totals.

Per partition nothing here imports Dask; the client functions take the engine's ``Runner`` and ``compute``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from ..._imports import pd  # imported at first use
from ..._columns import check_group_weights
from ...binning import Bins, check_variable, edge_table, pack_edges
from ..eager import caller_weights
from ..plan import order_stats as OS
from ..plan.base import BUCKET_BITS, CNT, COL_PREFIX, EB, LEN, MAX, MIN, NODE, WEIGHTED_BITS, X
from ..streaming import streamed as LZ
from .workers import (CLS, DROP, ERR, FIG, ROWS, VMAX, VMIN, Spec, dd_sources, finish, guarded_partition, local_keys,
                      partition_frame, partition_marker, scored_partition)

__all__ = ["STATS_COLS", "STATS_AGG", "weight_limbs", "stats_partition", "weighted_edges"]

#: a segment: source index * n_groups + global group
SEG = f"{COL_PREFIX}seg"
#: the three 21-bit limbs of a weight's fixed-point integer (summed as int64 by Dask)
V0, V1, V2 = f"{COL_PREFIX}v0", f"{COL_PREFIX}v1", f"{COL_PREFIX}v2"
LIMBS = (V0, V1, V2)
LIMB_BITS = 21
#: the most rows whose values are gathered to the client at once (a node with more is refined by one more
#: histogram pass first); the LazyFrame engine's ``streamed.COLLECT_BUDGET`` when that is smaller
GATHER_BUDGET = 1 << 18
#: the bucket of the rows of weight 0 (no bucket of a positive weight is this far out)
ZERO_EB = 1 << 20

_I8, _F8, _STR = np.dtype(np.int64), np.dtype(np.float64), pd.StringDtype()
#: the first pass: per (group key, figure, class, weight bucket) the rows, their values' min / max and the limbs
STATS_COLS = {FIG: _I8, CLS: _I8, EB: _I8, ROWS: _I8, VMIN: _F8, VMAX: _F8, V0: _I8, V1: _I8, V2: _I8, DROP: _I8,
              ERR: _STR}
STATS_AGG = {ROWS: "sum", VMIN: "min", VMAX: "max", V0: "sum", V1: "sum", V2: "sum", DROP: "sum"}


def weight_limbs(w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each positive finite weight's bucket k and the limbs of its integer v, w = v 2^-(WEIGHTED_BITS + 8 k)
    exactly (see the module docstring).

    >>> k, a, b, c = weight_limbs(np.array([1.0, 0.1, 3e300]))
    >>> [int(x) + (int(y) << 21) + (int(z) << 42) == int(np.ldexp(w, 60 + 8 * int(kk)))
    ...  for w, kk, x, y, z in zip([1.0, 0.1, 3e300], k, a, b, c)]
    [True, True, True]
    """
    mant, e = np.frexp(np.asarray(w, dtype=np.float64))
    m = np.ldexp(mant, 53).astype(np.int64)
    s = e.astype(np.int64) - 53 + WEIGHTED_BITS
    k = -np.floor_divide(s, BUCKET_BITS)
    v = m << (s + BUCKET_BITS * k)
    mask = (1 << LIMB_BITS) - 1
    return k, v & mask, (v >> LIMB_BITS) & mask, v >> (2 * LIMB_BITS)


def _buckets(w: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """(bucket, limbs) of every row; a row of weight 0 in ``ZERO_EB`` with zero limbs."""
    pos = w > 0
    eb = np.full(w.shape[0], ZERO_EB, dtype=np.int64)
    limbs = [np.zeros(w.shape[0], dtype=np.int64) for _ in LIMBS]
    k, *parts = weight_limbs(w[pos])
    eb[pos] = k
    for out, p in zip(limbs, parts):
        out[pos] = p
    return eb, limbs


# --------------------------------------------------------------------------- per partition (workers)


def stats_partition(pdf, spec, meta, partition_info=None) -> pd.DataFrame:
    """:func:`_stats_rows`, guarded (:func:`~.workers.guarded_partition`)."""
    return guarded_partition(_stats_rows, pdf, spec, meta)


def _stats_rows(pdf: pd.DataFrame, spec: Spec, meta: pd.DataFrame) -> pd.DataFrame:
    """Per (group, figure, class, weight bucket): rows, min / max of the binned values and the weights' limbs."""
    scored, kept, dropped = scored_partition(pdf, spec)
    out = partition_marker(pdf, spec, meta, dropped)
    if scored is None:
        return finish(out, meta)
    keys, _ = local_keys(kept, scored, spec.by)
    eb, limbs = _buckets(caller_weights(scored))
    g = scored.group_codes.astype(np.int64)
    for f, c, values in dd_sources(scored, spec):
        agg = pl.DataFrame({"g": g, EB: eb, X: np.asarray(values, dtype=np.float64),
                            **dict(zip(LIMBS, limbs))}).group_by("g", EB).agg(
            pl.len().cast(pl.Int64).alias(ROWS), pl.col(X).min().alias(VMIN), pl.col(X).max().alias(VMAX),
            *[pl.col(v).sum() for v in LIMBS])
        out.append(partition_frame(meta, keys, agg["g"].to_numpy(), {
            FIG: f, CLS: c, **{k: agg[k].to_numpy() for k in (EB, ROWS, VMIN, VMAX, *LIMBS)}}))
    return finish(out, meta)


def _edge_rows(pdf: pd.DataFrame, spec: Spec, ctx: tuple) -> pl.DataFrame:
    """The partition's rows of positive weight, one per segment they are binned in: ``SEG``, ``X``, ``RW`` (the
    caller's weight), ``EB`` and the limbs. ``ctx``: (key tuple -> global group, sources, number of groups)."""
    key_index, sources, n_groups = ctx
    scored, kept, _ = scored_partition(pdf, spec)
    empty = pl.DataFrame(schema={SEG: pl.Int64, X: pl.Float64, OS.RW: pl.Float64, EB: pl.Int64,
                                 **{v: pl.Int64 for v in LIMBS}})
    if scored is None:
        return empty
    _, tuples = local_keys(kept, scored, spec.by)
    for t in tuples:
        if t not in key_index:
            raise RuntimeError(f"{spec.func}: group {t} appeared after the first pass over the Dask DataFrame (was "
                               "the data changed?); exact edges need the same rows on every pass: persist() a random "
                               "or live source.")
    glob = np.array([key_index[t] for t in tuples], dtype=np.int64)[scored.group_codes]
    w = caller_weights(scored)
    pos = np.flatnonzero(w > 0)
    eb, limbs = _buckets(w[pos])
    src = {fc: s for s, fc in enumerate(sources)}
    frames = [pl.DataFrame({SEG: src[(f, c)] * n_groups + glob[pos], X: np.asarray(values, dtype=np.float64)[pos],
                            OS.RW: w[pos], EB: eb, **dict(zip(LIMBS, limbs))})
              for f, c, values in dd_sources(scored, spec) if (f, c) in src]
    return pl.concat([empty, *frames], how="vertical_relaxed")


def _frames(grids: list[dict]) -> list[pl.DataFrame]:
    return [pl.DataFrame(g) for g in grids]


def hist_partition(pdf, spec, meta, ctx, path, grids, c_name, partition_info=None) -> pd.DataFrame:
    """Per (segment, cell at every level of ``grids``, weight bucket): count, min, max and the weights' limbs of
    the partition's rows of positive weight in the refined nodes."""
    q = OS.cells_query(_edge_rows(pdf, spec, ctx).lazy(), [SEG], path, _frames(grids))
    res = q.group_by([SEG, *path, c_name, EB]).agg(
        pl.len().cast(pl.Int64).alias(CNT), pl.col(X).min().alias(MIN), pl.col(X).max().alias(MAX),
        *[pl.col(v).sum() for v in LIMBS]).collect()
    return res.with_columns(pl.col([*path, c_name]).cast(pl.Int64)).to_pandas().astype(meta.dtypes.to_dict())


def values_partition(pdf, spec, meta, ctx, path, grids, want, partition_info=None) -> pd.DataFrame:
    """The partition's rows of positive weight in the nodes of ``want`` (``SEG`` + ``path`` + ``NODE``): their
    node, value and weight."""
    q = OS.cells_query(_edge_rows(pdf, spec, ctx).lazy(), [SEG], path, _frames(grids))
    res = q.join(pl.DataFrame(want).lazy(), on=[SEG, *path], how="inner").select(NODE, X, OS.RW).collect()
    return res.to_pandas().astype(meta.dtypes.to_dict())


# --------------------------------------------------------------------------- client


def _fx(frame: pd.DataFrame) -> pl.Series:
    """The exact sums of the limbs (Int128)."""
    v0, v1, v2 = (frame[v].to_numpy().tolist() for v in LIMBS)
    return pl.Series(OS.FX, [a + (b << LIMB_BITS) + (c << 2 * LIMB_BITS) for a, b, c in zip(v0, v1, v2)],
                     dtype=pl.Int128)


def _shipped(frame: pl.DataFrame) -> dict[str, np.ndarray]:
    """A small Polars frame as numpy columns, sent to the partitions."""
    return {c: frame[c].to_numpy() for c in frame.columns}


def _pass(runner: Any, compute: Any, fn: Any, meta: pd.DataFrame, keys: list[str] | None, agg: dict | None,
          *args: Any) -> pd.DataFrame:
    """``fn`` on every partition (``meta``: its frame), merged by Dask over ``keys`` (None: concatenated), computed."""
    parts = runner.ddf.map_partitions(fn, runner.spec, meta, *args, meta=meta, clear_divisions=True,
                                      enforce_metadata=False)
    if keys is not None:
        parts = parts.groupby(keys, sort=False).agg(agg, split_out=1)
    out = compute(parts)
    return out.reset_index() if keys is not None else out.reset_index(drop=True)


def _meta(cols: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series([], dtype=t) for c, t in cols.items()})


def weighted_edges(runner: Any, compute: Any, stats: pd.DataFrame, g: np.ndarray, groups: Any, src: np.ndarray,
                   sources: list) -> tuple[dict, dict]:
    """The edges of every weighted data-dependent binning per group: the sums plan's ``edges`` and the ``Bins``
    per (figure, class). ``stats``: the first pass merged (markers removed), ``g`` / ``src`` its rows' global
    group and source index, ``groups`` the global groups (``client._Groups``: ``n``, ``index``, ``keys``);
    ``runner``: the engine's passes over the Dask frame, ``compute`` runs a pass."""
    spec = runner.spec
    n_groups = groups.n
    n_seg = len(sources) * n_groups
    seg = src * n_groups + g
    pos = stats[EB].to_numpy() != ZERO_EB
    first, rows_ = src == 0, stats[ROWS].to_numpy()
    counts = np.bincount(g[first], weights=rows_[first], minlength=n_groups)
    # a group of rows whose weights are all 0 has no edges: eager's error (resolve), before any further pass
    check_group_weights(spec.func, spec.weights, np.bincount(g[first & pos], weights=rows_[first & pos],
                                                             minlength=n_groups), counts, groups.keys)
    if spec.variables:  # a variable of a single value (over every row, weight 0 included), as eager checks it
        for f in sorted({f for f, _ in sources}):
            sel = stats[FIG].to_numpy() == f
            check_variable(spec.func, spec.variables[f], spec.binning,
                           single=bool(stats.loc[sel, VMIN].min() == stats.loc[sel, VMAX].max()))
    rows = pl.DataFrame({SEG: seg[pos], LEN: stats.loc[pos, ROWS].to_numpy(), MIN: stats.loc[pos, VMIN].to_numpy(),
                         MAX: stats.loc[pos, VMAX].to_numpy()})
    segs = pl.DataFrame({SEG: np.arange(n_seg, dtype=np.int64)}).join(
        rows.group_by(SEG).agg(pl.col(LEN).sum(), pl.col(MIN).min(), pl.col(MAX).max()), on=SEG, how="left",
        maintain_order="left").with_columns(pl.col(LEN).fill_null(0), pl.lit(0.0).alias(OS.WSUM))
    totals = pl.DataFrame({SEG: seg[pos], EB: stats.loc[pos, EB].to_numpy()}).with_columns(
        _fx(stats[pos]), pl.lit(1.0).alias(OS.MRW), pl.lit(1.0).alias(OS.MWT))  # unit 2^UNIT for every group
    egroups, *exact = OS.weighted_groups(segs, [SEG], totals)
    ctx = (groups.index, sources, n_groups)

    def hist(path: list[str], grids: list[pl.DataFrame], c_name: str) -> pl.DataFrame:
        cols = {SEG: np.int64, **{c: np.int64 for c in path}, c_name: np.int64, EB: np.int64, CNT: np.int64,
                MIN: np.float64, MAX: np.float64, **{v: np.int64 for v in LIMBS}}
        keys = [SEG, *path, c_name, EB]
        got = _pass(runner, compute, hist_partition, _meta(cols), keys,
                    {CNT: "sum", MIN: "min", MAX: "max", **{v: "sum" for v in LIMBS}},
                    ctx, path, [_shipped(x) for x in grids], c_name)
        return pl.from_pandas(got[keys + [CNT, MIN, MAX]]).with_columns(
            pl.col([*path, c_name]).cast(pl.Int32), _fx(got))

    def values(path: list[str], grids: list[pl.DataFrame], want: pl.DataFrame) -> pl.DataFrame:
        meta = _meta({NODE: np.int64, X: np.float64, OS.RW: np.float64})
        wanted = _shipped(want.with_columns(pl.col(NODE).cast(pl.Int64)))
        return pl.from_pandas(_pass(runner, compute, values_partition, meta, None, None, ctx, path,
                                    [_shipped(x) for x in grids], wanted))

    totals_w = egroups[OS.WSUM].fill_null(0.0).to_numpy().astype(np.float64)
    budget = min(GATHER_BUDGET, LZ.COLLECT_BUDGET)
    table = edge_table(totals_w, spec.binning, OS.take_positions(totals_w, lambda s, p: OS.order_statistics(
        egroups, [SEG], s, p, hist, values, budget=budget, hist_cells=LZ.HIST_CELLS, weighted=True,
        exact=tuple(exact))))
    edges_plan, bins = {}, {}
    for s, (f, c) in enumerate(sources):
        edges, offsets, n_bins = pack_edges(table[s * n_groups: (s + 1) * n_groups], spec.binning)
        edges_plan[(f, c)] = [edges[offsets[k]: offsets[k + 1]] for k in range(n_groups)]
        bins[(f, c)] = Bins(None, n_bins, edges, offsets, spec.binning)
    return edges_plan, bins

