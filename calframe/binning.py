"""Binning schemes (SPEC §1.3), defined exactly so edge values land where the references put them.

- ``uniform(B, closed="left")``: edges ``numpy.linspace(0, 1, B + 1)``, bins
  ``[e0, e1), ..., [e_{B-1}, 1]`` (numpy.digitize on the inner edges, GECE's
  reference). ``closed="right"``: edges ``i / B``, bins ``[0, e1], (e1, e2], ...``
  (Guo et al., uncertainty-calibration's ``get_ece``).
- ``quantile(B)``: pandas.qcut with ``duplicates="drop"`` (linearly
  interpolated quantiles, right-closed, first bin includes its lower edge).
- ``equal_mass(B)``: uncertainty-calibration's ``get_equal_bins`` (B chunks as
  numpy.array_split, inner edges at midpoints, last edge 1.0, right-closed).

Bins are built per group, on the rows being evaluated. Bin ids are dense per
group in ``[0, n_bins)``; empty bins contribute nothing downstream.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence

import numpy as np

from ._errors import bad_param
from ._kernels import accumulate as K

Scheme = Literal["uniform", "quantile", "equal_mass"]
SCHEMES: tuple[str, ...] = ("uniform", "quantile", "equal_mass")


@dataclass(frozen=True)
class Binning:
    """A validated binning request (``edges``: explicit bin edges given as ``bins=[...]``)."""

    scheme: Scheme
    bins: int
    closed: Literal["left", "right"] = "left"
    edges: tuple[float, ...] | None = None

    def describe(self) -> str:
        if self.edges is not None:
            return f"edges({list(self.edges)}, closed={self.closed!r})"
        if self.scheme == "uniform":
            return f"uniform({self.bins}, closed={self.closed!r})"
        return f"{self.scheme}({self.bins})"


def make_binning(func: str, binning: str, bins: "int | Sequence[float]", closed: str) -> Binning:
    """Validate a binning request. ``bins`` is a count, or explicit edges for ``binning="uniform"``.

    Explicit edges must increase strictly and cover [0, 1] (e.g.
    ``numpy.linspace(0, 1, 11)`` with ``closed="right"`` is scikit-learn's
    ``calibration_curve(strategy="uniform")``).
    """
    if binning not in SCHEMES:
        raise bad_param(func, "binning", f"one of {list(SCHEMES)}", binning)
    if closed not in ("left", "right"):
        raise bad_param(func, "closed", "'left' or 'right'", closed)
    if isinstance(bins, (list, tuple, np.ndarray)):
        e = np.asarray(bins, dtype=np.float64)
        if binning != "uniform":
            raise bad_param(func, "bins", f"an int >= 1 with binning={binning!r} (explicit edges go with 'uniform')", bins)
        if e.ndim != 1 or e.size < 2 or not np.all(np.isfinite(e)) or np.any(np.diff(e) <= 0) or e[0] > 0 or e[-1] < 1:
            raise bad_param(func, "bins", "an int >= 1, or strictly increasing finite edges from <= 0 to >= 1", bins)
        return Binning("uniform", int(e.size - 1), closed, tuple(float(v) for v in e))  # type: ignore[arg-type]
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins < 1:
        raise bad_param(func, "bins", "an int >= 1 or a sequence of edges", bins)
    return Binning(binning, int(bins), closed)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Bins:
    """Result of binning one scalar per row.

    ``ids`` is None for uniform bins (the accumulate pass bins on the fly);
    ``edges``/``offsets`` hold each group's edges (group ``g``:
    ``edges[offsets[g]:offsets[g+1]]``) for data-dependent schemes, or the B+1
    uniform edges.
    """

    ids: np.ndarray | None
    n_bins: int
    edges: np.ndarray
    offsets: np.ndarray | None
    binning: Binning

    def bounds(self, g: int, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper edge of bins ``b`` of group ``g`` (for reliability tables)."""
        if self.offsets is None:
            return self.edges[b], self.edges[b + 1]
        e = self.edges[self.offsets[g] : self.offsets[g + 1]]
        if self.binning.scheme == "quantile":
            # a group whose values are all equal keeps one edge: its single bin is [e0, e0]
            return e[b], e[np.minimum(b + 1, e.shape[0] - 1)]
        lower = np.where(b > 0, e[np.maximum(b - 1, 0)], 0.0)
        return lower, e[b]


def uniform_edges(bins: int, closed: str) -> np.ndarray:
    if closed == "left":
        return np.linspace(0.0, 1.0, bins + 1)
    return np.array([0.0] + [i * 1.0 / bins for i in range(1, bins + 1)])


def qcut_quantiles(bins: int) -> np.ndarray:
    """The quantile levels pandas.qcut uses for an integer q (rounded up where not representable)."""
    q = np.linspace(0, 1, bins + 1)
    np.putmask(q, bins * q != np.arange(bins + 1), np.nextafter(q, 1))
    return q


def _sorted_take(sorted_vals: np.ndarray, starts: np.ndarray):
    """take(ranks) on group segments of an already sorted array (ranks (n_groups, m), within each group)."""
    return lambda ranks: sorted_vals[starts[:, None] + ranks]


def _quantile_ranks(counts: np.ndarray, q: np.ndarray):
    """numpy.quantile(method='linear'): the two order statistics and the weight of every (group, level)."""
    virtual = (counts[:, None] - 1) * q[None, :]  # numpy's 'linear' method: (n - 1) * q
    prev = np.floor(virtual)
    gamma = virtual - prev
    prev_i = prev.astype(np.int64)
    last = counts[:, None] - 1
    above = virtual >= last
    below = virtual < 0
    next_i = np.where(above, last, np.where(below, 0, prev_i + 1))
    prev_i = np.where(above, last, np.where(below, 0, prev_i))
    return prev_i, next_i, gamma


def qcut_order_statistics(n: int, bins: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """pandas.qcut(q=bins) edges of n values: the two order statistics and the weight of each edge."""
    return tuple(a[0] for a in _quantile_ranks(np.array([n]), qcut_quantiles(bins)))  # type: ignore[return-value]


def _lerp(a: np.ndarray, b: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """numpy's _lerp, float op for float op."""
    diff = b - a
    out = a + diff * gamma
    hi = gamma >= 0.5
    out[hi] = (b - diff * (1 - gamma))[hi]
    return out


def _lerp_quantiles(sorted_vals: np.ndarray, starts: np.ndarray, counts: np.ndarray, q: np.ndarray) -> np.ndarray:
    """numpy.quantile(method='linear') of every group segment at levels q, with numpy's exact float ops.

    Returns (n_groups, len(q)).
    """
    take = _sorted_take(sorted_vals, starts)
    prev_i, next_i, gamma = _quantile_ranks(counts, q)
    return _lerp(take(prev_i), take(next_i), gamma)


def _equal_mass_ranks(counts: np.ndarray, bins: int):
    """Kumar's get_equal_bins: the ranks around each inner edge, which edges exist, and b_eff per group."""
    b_eff = np.minimum(counts, bins)
    # array_split: the first n % b chunks have n // b + 1 values, the rest n // b
    j = np.arange(1, bins)[None, :]
    size, extra = counts[:, None] // b_eff[:, None], counts[:, None] % b_eff[:, None]
    ends = j * size + np.minimum(j, extra)  # rank of the first value of chunk j
    valid = j < b_eff[:, None]
    idx = np.where(valid, ends, 1)
    return np.maximum(idx - 1, 0), np.minimum(idx, counts[:, None] - 1), valid, b_eff


def _equal_mass_table(lo_vals, hi_vals, top_vals, valid, b_eff, bins: int) -> np.ndarray:
    n_groups = b_eff.shape[0]
    out = np.full((n_groups, bins), np.nan)
    out[:, : bins - 1] = np.where(valid, (lo_vals + hi_vals) / 2.0, np.nan)
    out[np.arange(n_groups), b_eff - 1] = np.maximum(1.0, top_vals)  # the final edge right after the inner ones
    return out


def _equal_mass_edges(sorted_vals: np.ndarray, starts: np.ndarray, counts: np.ndarray, bins: int):
    """Kumar's get_equal_bins per group: (n_groups, bins) edges, NaN-padded where a group has < bins rows."""
    take = _sorted_take(sorted_vals, starts)
    lo, hi, valid, b_eff = _equal_mass_ranks(counts, bins)
    return _equal_mass_table(take(lo), take(hi), take((counts - 1)[:, None])[:, 0], valid, b_eff, bins)


def _pack(edge_table: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Drop NaN padding and duplicate edges per group; flatten with offsets."""
    keep = ~np.isnan(edge_table)
    keep[:, 1:] &= edge_table[:, 1:] != edge_table[:, :-1]
    counts = keep.sum(axis=1)
    offsets = np.zeros(edge_table.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return edge_table[keep], offsets, int(counts.max())


def bin_values(values: np.ndarray, groups: np.ndarray | None, n_groups: int, binning: Binning) -> Bins:
    """Bin one float64 value per row, per group, with ``binning``."""
    if binning.edges is not None:
        edges = np.asarray(binning.edges)
        side = "right" if binning.closed == "left" else "left"
        ids = np.searchsorted(edges[1:-1], values, side=side).astype(np.int32)
        return Bins(ids, binning.bins, edges, None, binning)
    if binning.scheme == "uniform":
        return Bins(None, binning.bins, uniform_edges(binning.bins, binning.closed), None, binning)
    # only a few order statistics per group are needed: a multi-rank quickselect, not a full sort
    if groups is None:
        order, starts = None, np.array([0, values.shape[0]], dtype=np.int64)
    else:
        order, starts = K.group_order(groups, n_groups)
    counts = np.diff(starts)
    present = np.flatnonzero(counts > 0)
    c = counts[present]

    def take(ranks: np.ndarray) -> np.ndarray:
        if order is None:  # one group: a fixed-grid histogram, then sort only the cells holding the ranks
            return K.select_1d(values, ranks)
        full = np.zeros((n_groups, ranks.shape[1]), dtype=np.int64)
        full[present] = ranks
        return K.select_within_groups(values, order, starts, full)[present]

    table = np.full((n_groups, binning.bins + 1), np.nan)
    if binning.scheme == "quantile":
        prev_i, next_i, gamma = _quantile_ranks(c, qcut_quantiles(binning.bins))
        both = take(np.concatenate([prev_i, next_i], axis=1))
        m = prev_i.shape[1]
        table[present] = _lerp(both[:, :m], both[:, m:], gamma)
        edges, offsets, width = _pack(table)
        n_bins = max(width - 1, 1)
        qcut = True
    else:
        lo, hi, valid, b_eff = _equal_mass_ranks(c, binning.bins)
        m = lo.shape[1]
        got = take(np.concatenate([lo, hi, (c - 1)[:, None]], axis=1))
        table[present, : binning.bins] = _equal_mass_table(got[:, :m], got[:, m:2 * m], got[:, -1], valid, b_eff,
                                                           binning.bins)
        edges, offsets, n_bins = _pack(table)
        qcut = False
    ids = K.assign_bins(values, groups, edges, offsets, qcut)
    return Bins(ids, n_bins, edges, offsets, binning)


def bin_variable(values: np.ndarray, kind: str, groups: np.ndarray | None, n_groups: int, binning: Binning) -> Bins:
    """Bin a variable (VECE): one bin per category, or ``binning`` of the numeric values per group.

    Numeric variables take ``quantile`` (the default, as Kelly & Smyth),
    ``equal_mass`` or explicit edges covering the values; ``uniform`` with a
    bin count is not defined for an unbounded variable.
    """
    if kind == "categorical":
        n_bins = int(values.max()) + 1 if values.shape[0] else 1
        return Bins(values.astype(np.int32, copy=False), n_bins, np.empty(0), None, binning)
    return bin_values(values, groups, n_groups, binning)
