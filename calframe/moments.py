"""The bootstrap from moments: a binned figure's draws from its per (group, bin) sums, not from its rows.

A binned figure reads a group's rows only through the sums of its cells, a cell being the rows of one
(group, bin, split) with ``split`` the row's 0/1 accuracy (the label's side of the bin). The row bootstrap
(a group's ``n_g`` rows drawn again with replacement) moves those sums by

1. the cells' row counts: ``Multinomial(n_g, n_cell / n_g)``, exactly for the cells of fewer than :data:`SMALL`
   rows, the large cells' from that law's normal approximation (same mean and covariance; :func:`_counts`);
2. given a cell's count ``k``, its ``[sum w, sum w * conf]``: the sum of ``k`` rows drawn with replacement from
   the cell's own rows. For a cell of at least :data:`SMALL` rows it is drawn from its normal law, mean
   ``k * m`` and covariance ``k * S`` with ``m``, ``S`` the mean and covariance of the cell's row vectors
   ``(w, w * conf)`` (from the cell's first and second moments); a smaller cell's rows are drawn exactly.
   ``sum w * acc`` is ``split * sum w``: exact.

A small cell is drawn exactly as the row bootstrap draws it; a large cell's count and, given it, its sums from
their normal laws (without weights its ``sum w`` is its count). The bins stay the call's: for data-dependent bins (quantile, equal-mass, a
variable's) this is the bootstrap conditional on the bin edges (docs/statistics.md).

Group ``g`` draws from ``default_rng([seed, hash(g's key), hash(binning)])``: its draws do not depend on the
other groups or on the row order of its cells' small rows (sorted by value), and the same call draws the same
bits on every run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

#: a cell with fewer rows than this is resampled exactly (its rows drawn with replacement)
SMALL = 32
#: the most float64 values of drawn sums held at once (groups are drawn in chunks below it)
_CHUNK_VALUES = 1_000_000

Cells = tuple[np.ndarray, np.ndarray, np.ndarray, int]


@dataclass(frozen=True)
class Summed:
    """A figure as a function of per (group, bin) sums ``[sum w, sum w * value, sum w * split]``.

    ``key``: figures with equal keys bin the same values the same way (their sums are drawn once, together);
    ``cells(scored)`` -> ``(value, split, bin, n_bins)`` per row (``split`` 0/1, ``bin`` int);
    ``finalize(sums, count_scale)`` -> one value per group of a ``(groups, bins, 3)`` table;
    ``bounds``: the range of ``value`` (a drawn bin mean is kept in it).
    """

    key: Hashable
    cells: Callable[[Any], Cells]
    finalize: Callable[[np.ndarray, Any], np.ndarray]
    bounds: tuple[float, float] = (0.0, 1.0)
    #: what seeds the draws beside (seed, group key): the bins (default: ``key``), so that the same bins draw the
    #: same numbers whatever lens (or its default) the call named
    stream: Hashable = None


def with_sums(figure: Callable[..., np.ndarray], summed: Summed) -> Callable[..., np.ndarray]:
    """``figure`` carrying how it reads per (group, bin) sums (read back by :func:`sums_of`)."""
    figure.summed = summed  # type: ignore[attr-defined]
    return figure


def sums_of(figure: Callable[..., np.ndarray] | None) -> Summed | None:
    """The :class:`Summed` a figure carries, or None (a figure the moments cannot draw: the rows are resampled)."""
    return getattr(figure, "summed", None)


def stable_hash(value: Any) -> int:
    """A 63-bit hash of ``repr(value)``, the same in every process (Python's ``hash`` of a str is salted)."""
    return int.from_bytes(hashlib.blake2b(repr(value).encode(), digest_size=8).digest(), "little") >> 1


@dataclass(frozen=True)
class Moments:
    """The cells of one binning, sorted by (group, bin, split): their rows and the moments of ``(w, w * value)``.

    ``start[g]:start[g + 1]`` are group g's cells; ``small_rows[small_start[c]:small_start[c + 1]]`` the
    ``(w, w * value)`` of cell c's rows when it has fewer than :data:`SMALL` (sorted by value, then weight)."""

    group: np.ndarray
    bin: np.ndarray
    split: np.ndarray
    n: np.ndarray
    mean: np.ndarray
    chol: np.ndarray
    start: np.ndarray
    small_rows: np.ndarray
    small_start: np.ndarray
    weighted: bool


def moments(value: np.ndarray, split: np.ndarray, bins: np.ndarray, groups: np.ndarray | None, n_groups: int,
            n_bins: int, weights: np.ndarray | None) -> Moments:
    """The cells' counts, first and second moments and small cells' rows, from the rows of one binning."""
    code = np.asarray(bins, dtype=np.int64) * 2 + np.asarray(split, dtype=np.int64)
    if groups is not None:
        code += np.asarray(groups, dtype=np.int64) * (2 * n_bins)
    size = n_groups * n_bins * 2
    n = np.bincount(code, minlength=size)
    w = np.ones_like(value) if weights is None else weights
    wv = value if weights is None else weights * value
    present = np.flatnonzero(n)
    sums = np.stack([np.bincount(code, w, size), np.bincount(code, wv, size), np.bincount(code, w * w, size),
                     np.bincount(code, w * wv, size), np.bincount(code, wv * wv, size)], axis=1)[present]
    group, rest = np.divmod(present, 2 * n_bins)
    bin_, split_ = np.divmod(rest, 2)
    cell_of = np.full(size, -1, dtype=np.int64)
    cell_of[present] = np.arange(present.size)
    rows = np.flatnonzero(n[code] < SMALL)
    small = (cell_of[code[rows]], w[rows], wv[rows])
    return from_cells(group, bin_, split_, n[present], sums, n_groups, small, weights is not None)



#: no small cells' rows: (cell, w, w * value)
NO_ROWS = (np.zeros(0, np.int64), np.zeros(0), np.zeros(0))


def native_ci(req: Any) -> bool:
    """Whether an engine draws ``req``'s interval from the moments of its bins where the rows are: the bootstrap
    from moments on uniform or explicit-edge bins of a scalar lens's confidence."""
    b = req.binning
    return (req.bootstrap != "rows" and not req.variables and req.lens.kind != "marginal" and b is not None
            and (b.scheme == "uniform" or b.edges is not None))


def merge_cells(group: np.ndarray, bin_: np.ndarray, split: np.ndarray, bucket: np.ndarray, n: np.ndarray,
                parts: np.ndarray, n_bins: int, n_groups: int) -> tuple[tuple, np.ndarray, np.ndarray]:
    """An engine's cells (one row per (group, bin, split, weight bucket), in any order; ``parts``: the five sums of
    :func:`from_cells` per row) added up per (group, bin, split), each cell's buckets smallest weights first (one
    order of addition). Returns (the cells as :func:`from_cells`' first arguments, the first input row of each
    cell, the indices of the small cells)."""
    code = (group * n_bins + bin_) * 2 + split
    order = np.lexsort((-bucket, code))
    code, parts = code[order], parts[order]
    uniq, first = np.unique(code, return_index=True)
    sums = np.add.reduceat(parts, first, axis=0) if code.size else np.zeros((0, 5))
    counts = (np.add.reduceat(n[order], first) if code.size else np.zeros(0)).astype(np.int64)
    g, rest = np.divmod(uniq, 2 * n_bins)
    b, a = np.divmod(rest, 2)
    return (g, b, a, counts, sums, n_groups), order[first], np.flatnonzero(counts < SMALL)


def from_cells(group: np.ndarray, bin_: np.ndarray, split: np.ndarray, n: np.ndarray, sums: np.ndarray,
               n_groups: int, small: tuple[np.ndarray, np.ndarray, np.ndarray], weighted: bool) -> Moments:
    """:class:`Moments` from each cell's (group, bin, split), row count and sums ``[w, w v, w^2, w^2 v, (w v)^2]``
    (cells sorted by (group, bin, split)), and the rows of its small cells: ``(cell, w, w * value)`` per row, in
    any order (the engines' bounded query)."""
    n = np.asarray(n, dtype=np.int64)
    mean = sums[:, :2] / n[:, None]
    var_w = np.maximum(sums[:, 2] / n - mean[:, 0] ** 2, 0.0)
    cov = sums[:, 3] / n - mean[:, 0] * mean[:, 1]
    var_v = np.maximum(sums[:, 4] / n - mean[:, 1] ** 2, 0.0)
    a = np.sqrt(var_w)
    with np.errstate(invalid="ignore", divide="ignore"):
        b = np.where(a > 0, cov / a, 0.0)
    c = np.sqrt(np.maximum(var_v - b * b, 0.0))
    chol = np.stack([a, b, c], axis=1)  # the lower Cholesky factor [[a, 0], [b, c]] of each cell's covariance
    start = np.searchsorted(group, np.arange(n_groups + 1))
    cell, w, wv = small
    order = np.lexsort((w, wv, cell))  # by (cell, value, weight): independent of the row order
    small_rows = np.stack([w[order], wv[order]], axis=1).reshape(-1, 2)
    counts = np.where(n < SMALL, n, 0)
    small_start = np.concatenate([[0], np.cumsum(counts)])
    return Moments(np.asarray(group), np.asarray(bin_), np.asarray(split, dtype=np.float64), n, mean, chol, start,
                   small_rows, small_start, weighted)


def _counts(n_c: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """``(n_boot, cells)`` row counts of a group's cells under the row bootstrap (``Multinomial(n_g, n_c / n_g)``):
    exact for the small cells (their total drawn first, Binomial(n_g, their share), then split among them), the
    large cells' share of the rest from the normal law with the multinomial's mean and covariance
    ``m (diag(q) - q q^T)`` (q their shares, m the rest: ``sqrt(q) z - q (sqrt(q) . z)`` has that covariance and
    adds up to 0), so that every draw has the group's n_g rows."""
    n_g = int(n_c.sum())
    small = n_c < SMALL
    few, big = np.flatnonzero(small), np.flatnonzero(~small)
    k = np.empty((n_boot, n_c.size))
    rest = np.full(n_boot, float(n_g))
    if few.size:
        share = n_c[few].sum()
        k_small = rng.binomial(n_g, share / n_g, size=n_boot) if big.size else np.full(n_boot, n_g)
        k[:, few] = rng.multinomial(k_small, n_c[few] / share)
        rest = n_g - k_small.astype(np.float64)
    if big.size:
        q = n_c[big] / n_c[big].sum()
        root_q = np.sqrt(q)
        x = rng.standard_normal((n_boot, big.size)) * root_q  # sqrt(q_j) z_j
        dev = x - q * x.sum(axis=1, keepdims=True)
        k[:, big] = np.maximum(rest[:, None] * q + np.sqrt(rest)[:, None] * dev, 0.0)
    return k


def draw_group(m: Moments, g: int, n_boot: int, n_bins: int, rng: np.random.Generator,
               bounds: tuple[float, float]) -> np.ndarray:
    """``(n_boot, n_bins, 3)`` bootstrap draws of group g's per-bin sums (module docstring)."""
    c0, c1 = int(m.start[g]), int(m.start[g + 1])
    out = np.zeros((n_boot, n_bins, 3))
    if c1 == c0:
        return out
    n_c = m.n[c0:c1]
    k = _counts(n_c, n_boot, rng)
    small = n_c < SMALL
    big = np.flatnonzero(~small)
    sw = np.empty_like(k)
    sv = np.empty_like(k)
    if big.size:
        every = big.size == k.shape[1]  # (no small cell: whole arrays, not copies)
        kb = k if every else k[:, big]
        root = np.sqrt(kb)
        mean, ch = m.mean[c0 + big], m.chol[c0 + big]
        if m.weighted:
            z = rng.standard_normal((2, n_boot, big.size))
            w = np.maximum(kb * mean[:, 0] + root * ch[:, 0] * z[0], 0.0)
            v = kb * mean[:, 1] + root * (ch[:, 1] * z[0] + ch[:, 2] * z[1])
        else:
            w = kb
            v = root * rng.standard_normal((n_boot, big.size))
            v *= ch[:, 2]
            v += kb * mean[:, 1]
        v = np.minimum(np.maximum(v, bounds[0] * w), bounds[1] * w)
        if every:
            sw, sv = w, v
        else:
            sw[:, big], sv[:, big] = w, v
    few = np.flatnonzero(small)
    if few.size:
        kf = k[:, few].astype(np.int64)  # (n_boot, small cells): picks per (draw, cell)
        total = int(kf.sum())
        seg = np.repeat(np.arange(kf.size), kf.ravel())
        cells = few[seg % few.size]
        lo = m.small_start[c0 + cells]
        picked = m.small_rows[lo + np.minimum((rng.random(total) * n_c[cells]).astype(np.int64), n_c[cells] - 1)]
        sw[:, few] = np.bincount(seg, picked[:, 0], kf.size).reshape(kf.shape)
        sv[:, few] = np.bincount(seg, picked[:, 1], kf.size).reshape(kf.shape)
    into = np.zeros((c1 - c0, n_bins))  # cell -> its bin
    into[np.arange(c1 - c0), m.bin[c0:c1]] = 1.0
    out[:, :, 0], out[:, :, 1], out[:, :, 2] = sw @ into, sv @ into, (sw * m.split[c0:c1]) @ into
    return out


def of_rows(scored: Any) -> Callable[[Summed], tuple[Moments, int]]:
    """The moments of a figure's binning on in-memory rows (:class:`~calframe._columns.Scored`)."""
    def get(summed: Summed) -> tuple[Moments, int]:
        value, split, bins, n_bins = summed.cells(scored)
        return moments(np.asarray(value, dtype=np.float64), split, bins, scored.groups, scored.n_groups, n_bins,
                       scored.weights), n_bins

    return get


def draws(moments_of: Callable[[Summed], tuple[Moments, int]], figures: dict[str, Callable[..., np.ndarray]],
          n_boot: int, seed: int | None, keys: list[Any], scale: Any = 1.0, bar: Any = None) -> dict[str, np.ndarray]:
    """``(n_boot, groups)`` draws of every figure (each carries a :class:`Summed`), figures of one binning from
    the same drawn sums: ``moments_of(summed)`` -> (its binning's :class:`Moments`, bins) (:func:`of_rows`, or an
    engine's cells); ``keys``: each group's key (its stream); ``scale``: the weights' power of two (one, or one
    per group: ``Scored.weight_scale``); ``bar``: a progress counter of ``n_boot`` draws
    (:func:`calframe._progress.steps`), advanced as the groups are drawn."""
    by_key: dict[Hashable, list[str]] = {}
    for name, f in figures.items():
        by_key.setdefault(sums_of(f).key, []).append(name)  # type: ignore[union-attr]
    n_groups = len(keys)
    key_hash = [stable_hash(k) for k in keys]
    out = {name: np.empty((n_boot, n_groups)) for name in figures}
    done, parts = 0, len(by_key) * n_groups
    for i, (key, names) in enumerate(by_key.items()):
        summed = sums_of(figures[names[0]])
        m, n_bins = moments_of(summed)  # type: ignore[arg-type]
        stream = stable_hash(key if summed.stream is None else summed.stream)  # type: ignore[union-attr]
        chunk = max(1, _CHUNK_VALUES // (n_boot * n_bins * 3))
        for g0 in range(0, n_groups, chunk):
            g1 = min(n_groups, g0 + chunk)
            table = np.empty((n_boot, g1 - g0, n_bins, 3))
            for g in range(g0, g1):
                rng = np.random.default_rng(None if seed is None else [seed, key_hash[g], stream])
                table[:, g - g0] = draw_group(m, g, n_boot, n_bins, rng, summed.bounds)  # type: ignore[union-attr]
            flat = table.reshape(n_boot * (g1 - g0), n_bins, 3)
            s = np.tile(scale[g0:g1], n_boot) if isinstance(scale, np.ndarray) else scale
            for name in names:
                fin = sums_of(figures[name]).finalize  # type: ignore[union-attr]
                out[name][:, g0:g1] = np.asarray(fin(flat, s)).reshape(n_boot, g1 - g0)
            if bar is not None:  # the draws' share of the work done so far
                now = n_boot * (i * n_groups + g1) // parts
                bar.update(now - done)
                done = now
    return out


def bounds_from_moments(req: Any, figures: dict[str, Callable[..., np.ndarray]], sums: np.ndarray, m: Moments,
                        keys: Any, scale: Any, keep: dict | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``req``'s intervals where the rows are: its figures (eager ones carrying :class:`Summed`, of one binning)
    on the bin sums ``sums``, drawn from the moments ``m`` of the same bins; ``keys``: the key table (None: one
    group); ``keep``: filled with each figure's draws (:func:`calframe.figures.bounds`)."""
    from . import figures as F
    from ._progress import steps

    scales, drawn = F.resampled(figures, req.ci_method)
    n_bins = sums.shape[1]
    draws_ = draws(lambda summed: (m, n_bins), drawn, req.n_boot, req.seed,
                   keys.rows() if keys is not None else [()], scale, steps(req.n_boot, "bootstrap", unit="draw"))

    def at(f: Callable[..., np.ndarray]) -> np.ndarray:
        return sums_of(f).finalize(sums, scale)  # type: ignore[union-attr]

    counts = np.bincount(m.group, weights=m.n, minlength=sums.shape[0])  # the groups' rows
    return F.bounds(figures, scales, draws_, lambda name, f: at(f), at, req.ci, req.ci_method, keep, counts)
