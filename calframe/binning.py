"""Binning schemes (SPEC §1.3), defined exactly so edge values land where the references put them.

- ``uniform(B, closed="left")``: edges ``numpy.linspace(0, 1, B + 1)``, bins
  ``[e0, e1), ..., [e_{B-1}, 1]`` (numpy.digitize on the inner edges, GECE's
  reference). ``closed="right"``: edges ``i / B``, bins ``[0, e1], (e1, e2], ...``
  (Guo et al., uncertainty-calibration's ``get_ece``).
- ``quantile(B)``: pandas.qcut with ``duplicates="drop"`` (linearly
  interpolated quantiles, right-closed, first bin includes its lower edge).
- ``equal_mass(B)``: uncertainty-calibration's ``get_equal_bins`` (B chunks as
  numpy.array_split, inner edges at midpoints, last edge 1.0, right-closed).
- ``sweep``: Roelofs et al.'s ECE_sweep (google-research caltrain's
  ``em_monotonic_sweep``): bins by rank, the count chosen per group from the
  labels (:func:`sweep_bins`).

Bins are built per group, on the rows being evaluated. Bin ids are dense per
group in ``[0, n_bins)``; empty bins contribute nothing downstream.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Literal, Sequence

import numpy as np
import polars as pl

from . import _errors as E
from ._errors import bad_param
from ._render import Sql, flag, floor_clip, lit
from ._imports import LazyModule

K = LazyModule("calframe._kernels.accumulate")  # numba kernels: imported at first use
S = LazyModule("calframe._kernels.sweep")

Scheme = Literal["uniform", "quantile", "equal_mass", "sweep"]
SCHEMES: tuple[str, ...] = ("uniform", "quantile", "equal_mass", "sweep")


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
        if self.scheme == "sweep":
            return "sweep"
        return f"{self.scheme}({self.bins})"


def make_binning(func: str, binning: str, bins: "int | Sequence[float]", closed: str, param: str = "bins") -> Binning:
    """Validate a binning request. ``bins`` is a count, or explicit edges for ``binning="uniform"`` (``param``: its
    name in messages).

    Explicit edges must increase strictly and cover [0, 1] (e.g.
    ``numpy.linspace(0, 1, 11)`` with ``closed="right"`` is scikit-learn's
    ``calibration_curve(strategy="uniform")``). ``sweep`` chooses its own count: ``bins`` is checked, not read
    (as caltrain's ``num_bins``).
    """
    if binning not in SCHEMES:
        raise bad_param(func, "binning", f"one of {list(SCHEMES)}", binning)
    if closed not in ("left", "right"):
        raise bad_param(func, "closed", "'left' or 'right'", closed)
    if isinstance(bins, (list, tuple, np.ndarray)):
        e = np.asarray(bins, dtype=np.float64)
        if binning != "uniform":
            raise bad_param(func, param, f"an int >= 1 with binning={binning!r} (explicit edges go with 'uniform')", bins)
        if e.ndim != 1 or e.size < 2 or not np.all(np.isfinite(e)) or np.any(np.diff(e) <= 0) or e[0] > 0 or e[-1] < 1:
            raise bad_param(func, param, "an int >= 1, or strictly increasing finite edges from <= 0 to >= 1", bins)
        return Binning("uniform", int(e.size - 1), closed, tuple(float(v) for v in e))  # type: ignore[arg-type]
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins < 1:
        raise bad_param(func, param, "an int >= 1 or a sequence of edges", bins)
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
    """The B + 1 edges of ``uniform(B, closed)``: ``numpy.linspace(0, 1, B + 1)`` (left), ``i / B`` (right)."""
    if closed == "left":
        return np.linspace(0.0, 1.0, bins + 1)
    return np.array([0.0] + [i * 1.0 / bins for i in range(1, bins + 1)])


# --------------------------------------------------------------------------- the bin of a value
#
# The rule (SPEC §1.3), for explicit and uniform edges alike: the bin of x is the number of inner edges
# e[1..B-1] that are <= x (closed="left", numpy.digitize) or < x (closed="right"). ``edge_bins`` is its
# definition; every other form below (Polars, narwhals, SQL) and the numba kernels (``_kernels.accumulate.uniform_bin``,
# ``_kernels.vector.digitize_uniform``) are tested against it on and next to every edge
# (tests/test_rules.py).

#: up to this many inner edges a Polars bin is a sum of comparisons (vectorised), beyond a search_sorted
MAX_COMPARE_EDGES = 32


def edge_bins(x: np.ndarray, inner: Sequence[float], closed: str) -> np.ndarray:
    """The bin (int32) of each ``x``: the number of ``inner`` edges ``<= x`` (closed="left") or ``< x`` ("right").

    >>> edge_bins(np.array([0.0, 0.5, 0.7, 1.0]), [0.5], "left").tolist(), edge_bins(np.array([0.5]), [0.5], "right").tolist()
    ([0, 1, 1, 1], [0])
    """
    side = "right" if closed == "left" else "left"
    return np.searchsorted(np.asarray(inner, dtype=np.float64), x, side=side).astype(np.int32)


def uniform_bins(x: np.ndarray, bins: int, closed: str) -> np.ndarray:
    """:func:`edge_bins` on the inner edges of ``uniform(bins, closed)``."""
    return edge_bins(x, uniform_edges(bins, closed)[1:-1], closed)


def uniform_k0(x: Any, bins: Any) -> Any:
    """``clip(floor(x * B), 0, B - 1)``, within one bin of the uniform bin of x (a float64 rounding of
    x * B moves it by a few ulp, never past a neighbouring edge); numpy, Polars or SQL (``_render``)."""
    return floor_clip(x * bins, bins - 1)


def uniform_nudge(x: Any, k0: Any, bins: Any, closed: str, edge: Callable[[Any], Any]) -> Any:
    """The uniform bin of x from :func:`uniform_k0`: one comparison with each neighbouring edge.

    ``edge(k)`` is the k-th edge computed in the target language bit for bit as
    :func:`uniform_edges` (left: ``k * (1 / B)``, numpy.linspace's own
    operation; right: ``k / B``). Written once for Polars and SQL.
    """
    k1 = k0 + 1
    if closed == "left":
        down = (k0 >= 1) & (edge(k0) > x)
        up = (k1 <= bins - 1) & (edge(k1) <= x)
    else:
        down = (k0 >= 1) & (edge(k0) >= x)
        up = (k1 <= bins - 1) & (edge(k1) < x)
    return k0 - flag(down) + flag(up)


def edge_bins_expr(x: pl.Expr, inner: Sequence[float], closed: str) -> pl.Expr:
    """:func:`edge_bins` as a Polars Int32 expression, against float64 literals of ``inner``."""
    if len(inner) == 0:  # one bin: 0 on every row (a literal would be one row, not a column)
        return pl.when(x.is_not_null()).then(pl.lit(0, pl.Int32))
    if len(inner) <= MAX_COMPARE_EDGES:
        terms = [(x > float(e)) if closed == "right" else (x >= float(e)) for e in inner]
        return pl.sum_horizontal(terms).cast(pl.Int32)
    edges = pl.lit(pl.Series(np.asarray(inner, dtype=np.float64)))
    return edges.search_sorted(x, side="left" if closed == "right" else "right").cast(pl.Int32)


def _edges_computable(bins: int, closed: str) -> bool:
    """Whether ``k * (1 / B)`` reproduces every uniform edge bit for bit.

    Polars divides a column by a scalar as a product with the reciprocal (``k / 5``
    gives ``3 * 0.2 = 0.6000000000000001``, not 0.6), so edges are only ever built
    as ``k * (1 / B)``: numpy.linspace's own operation; ``i / B`` edges agree with
    it for some B only (not 5, 10, ...).
    """
    computed = np.arange(bins + 1, dtype=np.float64) * (1.0 / bins)
    return bool(np.array_equal(computed[:bins], uniform_edges(bins, closed)[:bins]))


def uniform_k0_expr(x: pl.Expr, bins: int, closed: str) -> pl.Expr | None:
    """The Polars :func:`uniform_k0` that :func:`uniform_bin_expr` corrects, or None where it compares with
    literal edges instead (one bin, or edges ``k * (1 / B)`` does not reproduce). A query may compute it in
    a stage of its own and pass it back as ``k0``, so that the engine evaluates it once."""
    if bins == 1 or not _edges_computable(bins, closed):
        return None
    return uniform_k0(x, float(bins))


def uniform_bin_expr(x: pl.Expr, bins: int, closed: str, k0: pl.Expr | None = None) -> pl.Expr:
    """:func:`uniform_bins` as a Polars Int32 expression (null where x is NaN or null), exact on every edge.

    :func:`uniform_k0` corrected by :func:`uniform_nudge`, the neighbouring edges
    computed as ``k * (1 / B)`` where that reproduces every edge; else (right-closed
    ``i / B`` edges for B = 5, 10, ...) :func:`edge_bins_expr` on the literal edges.
    (Measured on 1e8 rows: 14 comparisons cost ~1 s of CPU more than the
    correction; ``floor(x * B)`` alone would put values on edges in the wrong bin.)

    >>> pl.DataFrame({"x": [0.0, 0.1, 0.2, 1.0]}).select(uniform_bin_expr(pl.col("x"), 10, "right"))["x"].to_list()
    [0, 0, 1, 9]
    """
    if k0 is None:
        k0 = uniform_k0_expr(x, bins, closed)
        if k0 is None:
            return edge_bins_expr(x, [float(e) for e in uniform_edges(bins, closed)[1:-1]], closed)
    inv = 1.0 / bins
    # NaN (a bad row, reported by the checks) gives a null bin instead of a failed cast
    return uniform_nudge(x, k0, float(bins), closed, lambda k: k * inv).cast(pl.Int32, strict=False)


def edge_bins_nw(x: Any, inner: Sequence[float], closed: str) -> Any:
    """:func:`edge_bins` as a narwhals Int32 expression (DuckDB, Spark, Ibis, pyarrow): the number of ``inner``
    edges (float64 literals) below ``x``, one comparison each (null where x is null)."""
    import narwhals as nw

    if len(inner) == 0:  # one bin
        return nw.when(~x.is_null()).then(nw.lit(0)).cast(nw.Int32)
    edges = [nw.lit(float(e), nw.Float64) for e in inner]
    terms = [((x > e) if closed == "right" else (x >= e)).cast(nw.Int32) for e in edges]
    out = terms[0]
    for t in terms[1:]:
        out = out + t
    return out.cast(nw.Int32)


def uniform_bin_nw(x: Any, bins: int, closed: str) -> Any:
    """:func:`uniform_bins` as a narwhals Int32 expression, exact on every edge (null where ``x`` is null; ``x``
    must not be NaN: the engine passes null for the rows its checks report).

    One comparison per row: ``k0 = min(floor(x * m), B - 1)`` with ``m = B (1 + 2^-50)`` (rounded) is never
    below the bin k of x and at most one above it (edge k, ``k * (1 / B)``, is k / B within a relative 2u,
    u = 2^-53; the roundings of m and of ``x * m`` add 2u more, less than the bias of 8u, so ``x * m >= k``;
    and ``x * m <= (k + 1)(1 + 12u) < k + 2`` for k below 2^49), so only the edge ``k0`` is compared
    (left-closed: x below it; right-closed: x not above it, bin 0 holding 0). Where ``k * (1 / B)`` does
    not reproduce the edges (right-closed, B = 5, 10, ...) or B is 1: :func:`edge_bins_nw` on the literal
    edges."""
    import narwhals as nw

    if bins == 1 or not _edges_computable(bins, closed):
        return edge_bins_nw(x, [float(e) for e in uniform_edges(bins, closed)[1:-1]], closed)
    # k * (1 / B) in float64: Ibis writes float literals as decimals, which DuckDB reads as DECIMAL, and drops a
    # cast to float64 of what it types as float64 already; k (a whole number below 2^24) is exact in float32 and
    # a DOUBLE once cast back, so the product is numpy's. (min_horizontal skips a null: the comparison with a
    # null x keeps the result null.)
    k0 = nw.min_horizontal((x * (float(bins) * (1.0 + 2.0**-50))).floor(), nw.lit(float(bins - 1)))
    edge = k0.cast(nw.Float32).cast(nw.Float64) * (1.0 / bins)
    down = (edge > x) if closed == "left" else ((edge >= x) & (k0 >= 1.0))
    return (k0 - down.cast(nw.Float64)).cast(nw.Int32)


def edge_bins_sql(x: str, inner: Sequence[float], closed: str) -> str:
    """:func:`edge_bins` as SQL text: a nested CASE binary search over float literals of ``inner``.

    The text grows linearly and the depth logarithmically with the number of edges.

    >>> edge_bins_sql("x", [0.5], "left")
    'CASE WHEN x >= 0.5e0 THEN 1 ELSE 0 END'
    """
    op = ">" if closed == "right" else ">="

    def rec(lo: int, hi: int) -> str:
        if lo == hi:
            return str(lo)
        mid = (lo + hi + 1) // 2
        return f"CASE WHEN {x} {op} {lit(inner[mid - 1])} THEN {rec(mid, hi)} ELSE {rec(lo, mid - 1)} END"

    return rec(0, len(inner))


def uniform_bin_sql(x: str, k0: str, bins: str, closed: str) -> str:
    """:func:`uniform_bins` as SQL text for a bin count ``bins`` known only at run time (a BIGINT expression):
    :func:`uniform_nudge` of ``k0`` (a BIGINT column holding :func:`uniform_k0`), the edges computed as
    numpy does (left ``k * (1 / B)``, right ``k / B``; SQL divides exactly)."""
    b = Sql(bins)
    if closed == "left":
        def edge(k: Any) -> Any:
            return Sql(f"CAST({k} AS DOUBLE)") * (1.0 / b)
    else:
        def edge(k: Any) -> Any:
            return Sql(f"CAST({k} AS DOUBLE)") / b
    return str(uniform_nudge(Sql(x), Sql(k0), b, closed, edge))


def check_variable(func: str, variable: str, binning: Binning, *, single: bool, numeric: bool = True,
                   outside: int = 0) -> None:
    """A variable's checks, in their order, from what an engine counted: a single distinct value (``single``),
    explicit edges on a categorical variable (not ``numeric``), values outside the explicit edges (``outside``
    rows). Every engine raises them through here."""
    if single:
        raise E.single_value_variable(func, variable)
    if binning.edges is not None:
        if not numeric:
            raise E.edges_need_numeric_variable(func, variable)
        if outside:
            raise E.outside_edges(func, variable, outside, binning.edges[0], binning.edges[-1])


def qcut_quantiles(bins: int) -> np.ndarray:
    """The quantile levels pandas.qcut uses for an integer q (rounded up where not representable)."""
    q = np.linspace(0, 1, bins + 1)
    np.putmask(q, bins * q != np.arange(bins + 1), np.nextafter(q, 1))
    return q


#: ``take(ranks) -> values``, what an engine gives :func:`edge_table`: ``ranks`` is an int64 array
#: (n_segments, m) of 0-based ranks within each segment's values (-1 in the rows of segments without
#: values); the result holds the order statistics at those ranks, float64 of the same shape (any value
#: where the rank is -1). Segments are groups (or, on Dask, (figure, class, group) sources).
Take = Callable[[np.ndarray], np.ndarray]


def linear_quantile(last: Any, q: Any, xp: Any = np) -> tuple[Any, Any, Any]:
    """numpy.quantile(method='linear') at level ``q`` of ``last + 1`` sorted values: (prev, next, gamma).

    The value is ``lerp(v[prev], v[next], gamma)``. Written over the operations of ``xp``
    (``floor``, ``minimum``; numpy here, SQL text in :mod:`calframe.sql`), so every engine
    evaluates this one rule. ``q <= 1``, so ``prev <= last``: numpy's clipping never applies.
    """
    virtual = last * q
    prev = xp.floor(virtual)
    return prev, xp.minimum(prev + 1, last), virtual - prev


def lerp(a: Any, b: Any, gamma: Any, xp: Any = np) -> Any:
    """numpy's _lerp, float op for float op (``xp.where`` picks the form numpy computes)."""
    diff = b - a
    return xp.where(gamma >= 0.5, b - diff * (1 - gamma), a + diff * gamma)


def _quantile_ranks(counts: np.ndarray, q: np.ndarray, weighted: bool = False):
    """:func:`linear_quantile` of every (group, level): the two ranks (int64; float64 positions ``weighted``)
    and the weight."""
    prev, nxt, gamma = linear_quantile(counts[:, None] - 1, q[None, :])
    return (prev, nxt, gamma) if weighted else (prev.astype(np.int64), nxt.astype(np.int64), gamma)


def qcut_order_statistics(n: int, bins: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """pandas.qcut(q=bins) edges of n values: the two order statistics and the weight of each edge."""
    return tuple(a[0] for a in _quantile_ranks(np.array([n]), qcut_quantiles(bins)))  # type: ignore[return-value]


def _equal_mass_ranks(counts: np.ndarray, bins: int):
    """Kumar's get_equal_bins: the ranks around each inner edge, which edges exist, and b_eff per group.

    ``counts`` may be weight totals W (float, :func:`weighted_take`): ``b_eff = min(B, max(1, floor(W)))``
    and the chunk starts ``j q + min(j, r)`` (``q = floor(W / b_eff)``, ``r = W - b_eff q``) are the same
    numbers as for W rows when W is whole."""
    b_eff = np.minimum(np.maximum(np.floor(counts), 1), bins).astype(np.int64)
    # array_split: the first n % b chunks have n // b + 1 values, the rest n // b
    j = np.arange(1, bins)[None, :]
    size = np.floor(counts[:, None] / b_eff[:, None]) if counts.dtype.kind == "f" else counts[:, None] // b_eff[:, None]
    extra = counts[:, None] - b_eff[:, None] * size
    ends = j * size + np.minimum(j, extra)  # rank of the first value of chunk j
    valid = j < b_eff[:, None]
    idx = np.where(valid, ends, 1)
    return np.maximum(idx - 1, 0), np.minimum(idx, counts[:, None] - 1), valid, b_eff


def edge_table(counts: np.ndarray, binning: Binning, take: Take) -> np.ndarray:
    """Each segment's quantile / equal-mass edges, before :func:`pack_edges`: (n_segments, bins + 1), NaN-padded.

    The one driver of data-dependent edges for every engine: ``counts`` are the
    values per segment; the ranks the rule reads go to ``take`` in one call.
    ``quantile``: pandas.qcut's levels, interpolated as numpy.quantile
    (:func:`linear_quantile`, :func:`lerp`). ``equal_mass``: Kumar's
    get_equal_bins (inner edges at the midpoints of array_split chunk ends, last
    edge ``max(1, top value)``; B_eff = min(n, B) chunks).

    With frequency weights ``counts`` are float64 weight totals W and ``take`` gets float64 positions in
    [0, W) of the rows laid end to end (:func:`weighted_take`): the same rule on the frame with each row
    repeated w_i times.
    """
    weighted = np.asarray(counts).dtype.kind == "f"
    counts = np.asarray(counts, dtype=np.float64 if weighted else np.int64)
    bins = binning.bins
    table = np.full((counts.shape[0], bins + 1), np.nan)
    present = counts > 0
    c = counts[present]
    if not c.shape[0]:
        return table
    if binning.scheme == "quantile":
        prev_i, next_i, gamma = _quantile_ranks(c, qcut_quantiles(bins), weighted)
        parts = [prev_i, next_i]
    else:
        lo, hi, valid, b_eff = _equal_mass_ranks(c, bins)
        parts = [lo, hi, (c - 1)[:, None]]
    ranks = np.full((counts.shape[0], sum(p.shape[1] for p in parts)), -1, dtype=counts.dtype)
    ranks[present] = np.concatenate(parts, axis=1)
    got = np.split(np.asarray(take(ranks), dtype=np.float64)[present], np.cumsum([p.shape[1] for p in parts])[:-1],
                   axis=1)
    if binning.scheme == "quantile":
        table[present] = lerp(got[0], got[1], gamma)
    else:
        em = np.full((c.shape[0], bins), np.nan)
        em[:, : bins - 1] = np.where(valid, (got[0] + got[1]) / 2.0, np.nan)
        em[np.arange(c.shape[0]), b_eff - 1] = np.maximum(1.0, got[2][:, 0])  # the final edge after the inner ones
        table[present, :bins] = em
    return table


def rounded(x: int, exp: int) -> float:
    """The float64 nearest to the exact number ``x * 2**exp`` (``x`` a non-negative Python int; ties to even, as
    every float operation rounds), for a result in float64's normal range.

    >>> rounded(3, -1), rounded((1 << 60) + 1, 0) == 2.0**60, rounded((1 << 54) + 3, 0) == 2.0**54 + 4
    (1.5, True, True)
    """
    s = max(x.bit_length() - 55, 0)
    y = x >> s
    if s and x & ((1 << s) - 1):
        y |= 1  # a sticky bit: what was shifted out decides a tie, as the exact number does
    return math.ldexp(float(y), exp + s)


class Running:
    """The running sums C_i = base + w_1 + ... + w_i of finite, non-negative float64 weights, each the exact sum
    correctly rounded (so the same bits in any order of the terms, on every engine): ``total`` (C_n) and
    ``first_above(p)``, the first i (0-based) with C_i > p (n - 1 if none). ``base``: an exact number
    ``base * 2**base_exp`` (a Python int; 0 by default) before the first weight. Whole weights whose total is
    below 2^53 add up exactly as floats (``numpy.cumsum``); others are kept as Python integers in the unit of
    their smallest bit, and only the sums near p are rounded (the float running sum is within
    (n + 2) 2^-52 C_n of them).

    >>> r = Running(np.array([0.1] * 10))
    >>> r.total, float(np.cumsum([0.1] * 10)[-1]), r.first_above(0.3), r.first_above(99.0)
    (1.0, 0.9999999999999999, 2, 9)
    """

    def __init__(self, w: np.ndarray, base: int = 0, base_exp: int = 0) -> None:
        w = np.asarray(w, dtype=np.float64)
        self.n = w.shape[0]
        whole = base == 0 or (base_exp >= 0 and base.bit_length() + base_exp <= 53)
        b0 = float(base << base_exp) if whole and base else 0.0
        self.c = b0 + np.cumsum(w)
        self.exact = whole and (not self.n or (self.c[-1] < 2.0**53 and bool(np.all(w == np.floor(w)))))
        if self.exact:
            self.total = float(self.c[-1]) if self.n else b0
            return
        mant, e = np.frexp(w)
        m = np.ldexp(mant, 53).astype(np.int64)  # w = m 2^(e - 53), m a 53-bit integer
        sh = e.astype(np.int64) - 53
        self.lo = min(int(sh[m > 0].min()) if (m > 0).any() else base_exp, base_exp)
        start = base << (base_exp - self.lo)
        self.ints = start + np.cumsum(m.astype(object) << np.maximum(sh - self.lo, 0).astype(object))
        self.total = rounded(int(self.ints[-1]), self.lo) if self.n else rounded(start, self.lo)
        self.c = rounded(base, base_exp) + np.cumsum(w)
        self.slack = (self.n + 2) * 2.0**-52 * float(self.c[-1] if self.n else 0.0)

    def first_above(self, p: float) -> int:
        if self.exact:
            return min(int(np.searchsorted(self.c, p, side="right")), self.n - 1)
        i = min(int(np.searchsorted(self.c, p - self.slack, side="left")), self.n - 1)  # C_j <= p before it
        while i < self.n - 1 and rounded(int(self.ints[i]), self.lo) <= p:
            i += 1
        return i


def weighted_take(values: np.ndarray, weights: np.ndarray, groups: np.ndarray | None,
                  n_groups: int) -> tuple[np.ndarray, Take]:
    """Frequency weights for :func:`edge_table`: (each group's weight total W, float64; a :data:`Take` of positions).

    A group's rows of positive weight are sorted by value (ties in row order) and laid end to end, row i
    covering ``[C_{i-1}, C_i)`` with ``C_i`` the exact sum of the weights up to row i, correctly rounded
    (:class:`Running`: for whole weights below 2^53 in total ``numpy.cumsum``; for others the same bits in
    any order of the rows, on every engine: :mod:`calframe.engines.plan.order_stats`).
    The value at position p is that of the row whose stretch holds p (the first row for p < 0, the last for
    p >= W). For whole weights, position p is rank p of the frame with each row repeated w_i times, so the
    edges are that frame's, bit for bit; other weights use the same formula.

    >>> W, take = weighted_take(np.array([0.3, 0.1, 0.2]), np.array([2.0, 1.0, 0.0]), None, 1)
    >>> W.tolist(), take(np.array([[0.0, 1.0, 2.0]])).tolist()  # 0.1, 0.3, 0.3 (0.2 has weight 0)
    ([3.0], [[0.1, 0.3, 0.3]])
    """
    keep = weights > 0
    g = np.zeros(values.shape[0], dtype=np.int64) if groups is None else np.asarray(groups, dtype=np.int64)
    v, w, g = values[keep], weights[keep], g[keep]
    order = np.lexsort((v, g))  # stable: ties keep row order
    v, w, g = v[order], w[order], g[order]
    starts = np.zeros(n_groups + 1, dtype=np.int64)
    np.cumsum(np.bincount(g, minlength=n_groups), out=starts[1:])
    runs: list[Running | None] = [None] * n_groups
    totals = np.zeros(n_groups)
    for k in range(n_groups):  # each group's running sum from its own first row (bits independent of the others)
        a, b = starts[k], starts[k + 1]
        if b > a:
            runs[k] = Running(w[a:b])
            totals[k] = runs[k].total  # type: ignore[union-attr]

    def take(ranks: np.ndarray) -> np.ndarray:
        out = np.full(ranks.shape, np.nan)
        for k in range(ranks.shape[0]):
            run = runs[k] if k < n_groups else None
            if run is not None:
                at = np.array([run.first_above(float(p)) for p in np.ravel(ranks[k])], dtype=np.int64)
                out[k] = v[starts[k]:starts[k + 1]][at].reshape(np.shape(ranks[k]))
        return out

    return totals, take


def take_each(counts: np.ndarray, fetch: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Take:
    """A :data:`Take` for an engine that finds order statistics one by one (histogram passes).

    ``fetch(segment, rank)`` gets every wanted (segment, rank) pair once, as two
    flat int64 arrays sorted by segment then rank, and returns their values.
    """
    starts = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])

    def take(ranks: np.ndarray) -> np.ndarray:
        out = np.full(ranks.shape, np.nan)
        wanted = ranks >= 0
        seg = np.broadcast_to(np.arange(ranks.shape[0])[:, None], ranks.shape)[wanted]
        pos, inverse = np.unique(starts[seg] + ranks[wanted], return_inverse=True)
        seg = np.searchsorted(starts, pos, side="right") - 1  # the segment a position falls in (empty ones skipped)
        out[wanted] = np.asarray(fetch(seg, pos - starts[seg]), dtype=np.float64)[inverse]
        return out

    return take


def pack_edges(table: np.ndarray, binning: Binning) -> tuple[np.ndarray, np.ndarray, int]:
    """Drop NaN padding and duplicate edges per segment (pandas' ``duplicates="drop"``); flatten.

    Returns (edges, offsets, n_bins): segment ``s`` has ``edges[offsets[s]:offsets[s+1]]``.
    """
    keep = ~np.isnan(table)
    keep[:, 1:] &= table[:, 1:] != table[:, :-1]
    counts = keep.sum(axis=1)
    offsets = np.zeros(table.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    width = int(counts.max()) if counts.shape[0] else 0
    return table[keep], offsets, max(width - 1, 1) if binning.scheme == "quantile" else width


def bin_values(values: np.ndarray, groups: np.ndarray | None, n_groups: int, binning: Binning,
               acc: np.ndarray | None = None, weights: np.ndarray | None = None) -> Bins:
    """Bin one float64 value per row, per group, with ``binning`` (``sweep`` reads the rows' ``acc`` too).

    ``weights``: the caller's frequency weights (not rescaled): quantile / equal-mass edges are those of the
    rows repeated w_i times (:func:`weighted_take`); a row outside its group's edges (weight 0, or above the
    top edge with fractional weights) goes to the nearest bin.
    """
    if binning.scheme == "sweep":
        if acc is None:
            raise TypeError("bin_values: binning='sweep' needs the rows' acc")
        return sweep_bins(values, acc, groups, n_groups, binning)
    if binning.edges is not None:
        edges = np.asarray(binning.edges)
        return Bins(edge_bins(values, edges[1:-1], binning.closed), binning.bins, edges, None, binning)
    if binning.scheme == "uniform":
        return Bins(None, binning.bins, uniform_edges(binning.bins, binning.closed), None, binning)
    if weights is not None:
        totals, take = weighted_take(values, weights, groups, 1 if groups is None else n_groups)
        table = edge_table(totals, binning, take)
    # only a few order statistics per group are needed: a multi-rank quickselect, not a full sort
    elif groups is None:  # one group: a fixed-grid histogram, then sort only the cells holding the ranks
        counts = np.array([values.shape[0]], dtype=np.int64)
        table = edge_table(counts, binning, lambda ranks: K.select_1d(values, ranks))
    else:
        grouped, starts = K.group_values(values, groups, n_groups)
        table = edge_table(np.diff(starts), binning, lambda ranks: K.select_within_groups(grouped, starts, ranks))
    edges, offsets, n_bins = pack_edges(table, binning)
    ids = K.assign_bins(values, groups, edges, offsets, binning.scheme == "quantile")
    if weights is not None and binning.scheme == "quantile":  # a row above its group's top edge: the last bin
        last = np.maximum(np.diff(offsets) - 2, 0)
        ids = np.minimum(ids, last if groups is None else last[groups]).astype(np.int32)
    return Bins(ids, n_bins, edges, offsets, binning)


def sweep_bins(values: np.ndarray, acc: np.ndarray, groups: np.ndarray | None, n_groups: int,
               binning: Binning) -> Bins:
    """Roelofs et al.'s ECE_sweep bins, per group: caltrain's ``em_monotonic_sweep``.

    A group's rows are sorted by value (ties in row order: a stable sort; caltrain's ``numpy.argsort`` leaves
    the order of ties unspecified) and split by rank into b bins, the row of rank i in bin
    ``min(b - 1, floor((i / n) * b))`` in float64. b = 2, 3, ..., n - 1 are tried in turn; the first b whose
    mean ``acc`` decreases from one bin to the next stops the sweep, and b - 1 bins are kept (1 when b = 2; n - 1
    when no b stops it; 1 for n <= 2). The chosen count of group g is ``offsets[g + 1] - offsets[g]``: its edges
    are equal_mass's (inner edges at the midpoints between bins, last edge ``max(1, top value)``), for the
    reliability table; the bins are by rank, so tied values may fall in two bins.

    >>> b = sweep_bins(np.array([0.1, 0.2, 0.3, 0.4, 0.5]), np.array([0.0, 0.0, 1.0, 0.0, 1.0]), None, 1,
    ...                make_binning("f", "sweep", 15, "left"))
    >>> b.ids.tolist(), np.diff(b.offsets).tolist()  # 4 bins: accuracies 0, 1, 0, 1 (not monotone); 3 are kept
    ([0, 0, 1, 1, 2], [3])
    """
    values = np.ascontiguousarray(values, dtype=np.float64)
    if groups is None:
        order = np.argsort(values, kind="stable")
        starts = np.array([0, values.shape[0]], dtype=np.int64)
    else:
        order = np.lexsort((values, groups))  # stable: ties keep row order
        starts = np.zeros(n_groups + 1, dtype=np.int64)
        np.cumsum(np.bincount(groups, minlength=n_groups), out=starts[1:])
    csum = np.zeros(values.shape[0] + 1)
    np.cumsum(np.asarray(acc, dtype=np.float64)[order], out=csum[1:])  # 0/1 sums: exact
    counts = S.sweep_counts(csum, starts)
    offsets = np.zeros(n_groups + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    ids, edges = S.sweep_assign(values[order], order.astype(np.int64), starts, counts, offsets)
    return Bins(ids, int(counts.max()) if counts.shape[0] else 1, edges, offsets, binning)


def bin_variable(values: np.ndarray, kind: str, groups: np.ndarray | None, n_groups: int, binning: Binning,
                 weights: np.ndarray | None = None) -> Bins:
    """Bin a variable (VECE): one bin per category, or ``binning`` of the numeric values per group.

    Numeric variables take ``quantile`` (the default, as Kelly & Smyth),
    ``equal_mass`` or explicit edges covering the values; ``uniform`` with a
    bin count is not defined for an unbounded variable.
    """
    if kind == "categorical":
        n_bins = int(values.max()) + 1 if values.shape[0] else 1
        return Bins(values.astype(np.int32, copy=False), n_bins, np.empty(0), None, binning)
    return bin_values(values, groups, n_groups, binning, weights=weights)
