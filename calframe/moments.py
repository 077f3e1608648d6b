"""The bootstrap from moments: a binned figure's draws from its per (group, bin) sums, not from its rows.

A binned figure reads a group's rows only through the sums of its cells, a cell being the rows of one
(group, bin, split) with ``split`` the row's 0/1 accuracy (the label's side of the bin). The row bootstrap
(a group's ``n_g`` rows drawn again with replacement) moves those sums by

1. the cells' row counts: ``Multinomial(n_g, n_cell / n_g)``, exactly for the cells of fewer than :data:`SMALL`
   rows, the large cells' from that law's normal approximation (same mean and covariance; :func:`_group_random`);
2. given a cell's count ``k``, its ``sum conf``: the sum of ``k`` rows drawn with replacement from the cell's own
   rows. For a cell of at least :data:`SMALL` rows it is drawn from its normal law, mean ``k * m`` and variance
   ``k * s^2`` with ``m``, ``s^2`` the mean and variance of the cell's values (from its sums ``sum conf`` and
   ``sum conf^2``); a smaller cell's rows are drawn exactly. ``sum acc`` is ``split * k``: exact.

**Weights are frequency weights** (docs/spec.md §8 "Weights"): a row of weight w is w rows, each resampled on
its own. Every count above is then a sum of weights: ``n_cell = sum w`` and ``n_g`` their sum over the group (in
the caller's units, the eager power of two undone), the drawn ``sum w`` of a cell is its drawn count ``k``, and
the law of one drawn row's value is the cell's values each counted its weight: mean ``sum w conf / sum w``,
variance ``sum w conf^2 / sum w - mean^2``. The moments state is therefore ``[sum w, sum w conf, sum w conf^2]``
per cell (``w`` = 1 without weights). A small cell (fewer than :data:`SMALL` rows) is drawn exactly: the small
cells' total is Binomial(n_g, their share), split among their rows by ``Multinomial(total, w_i / sum w)``.
With integer weights this is, in law, the row bootstrap of the frame with each row repeated w times.
Non-integer weights use the same formulas; only the exact part needs a whole number of rows, and there n_g is
rounded down or up at random per draw (its mean kept), at least 1.

A small cell is drawn exactly as the row bootstrap draws it; a large cell's count and, given it, its sums from
their normal laws. The bins stay the call's: for data-dependent bins (quantile, equal-mass, a variable's) this
is the bootstrap conditional on the bin edges (docs/statistics.md).

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
#: a weighted group's sum of weights above which no cell is drawn exactly (its count is no int64): all normal
HUGE = 2.0 ** 52
#: the most float64 values of drawn sums held at once (groups are drawn in chunks below it)
_CHUNK_VALUES = 200_000

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
    #: each cell's sum of weights (its row count unweighted), in the units the rows' weights were given in
    freq: np.ndarray
    #: the mean value of a cell's rows, each counted its weight: ``sum w v / sum w``
    mean: np.ndarray
    #: their standard deviation, each row counted its weight: ``sqrt(sum w v^2 / sum w - mean^2)``
    sd: np.ndarray
    start: np.ndarray
    small_rows: np.ndarray
    small_start: np.ndarray
    weighted: bool


def moments(value: np.ndarray, split: np.ndarray, bins: np.ndarray, groups: np.ndarray | None, n_groups: int,
            n_bins: int, weights: np.ndarray | None) -> Moments:
    """The cells' counts, weight sums, first and second moments and small cells' rows, from the rows of one
    binning (``weights`` as the rows carry them: a group's power of two, ``Scored.weight_scale``, is applied by
    :func:`draws`)."""
    code = np.asarray(bins, dtype=np.int64) * 2 + np.asarray(split, dtype=np.int64)
    if groups is not None:
        code += np.asarray(groups, dtype=np.int64) * (2 * n_bins)
    size = n_groups * n_bins * 2
    n = np.bincount(code, minlength=size)
    w = np.ones_like(value) if weights is None else weights
    wv = value if weights is None else weights * value
    present = np.flatnonzero(n)
    sums = np.stack([n.astype(np.float64) if weights is None else np.bincount(code, w, size),
                     np.bincount(code, wv, size), np.bincount(code, wv * value, size)], axis=1)[present]
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
    """An engine's cells (one row per (group, bin, split, weight bucket), in any order; ``parts``: the three sums
    of :func:`from_cells` per row) added up per (group, bin, split), each cell's buckets smallest weights first
    (one order of addition). Returns (the cells as :func:`from_cells`' first arguments, the first input row of
    each cell, the indices of the small cells)."""
    code = (group * n_bins + bin_) * 2 + split
    order = np.lexsort((-bucket, code))
    code, parts = code[order], parts[order]
    uniq, first = np.unique(code, return_index=True)
    sums = np.add.reduceat(parts, first, axis=0) if code.size else np.zeros((0, parts.shape[1]))
    counts = (np.add.reduceat(n[order], first) if code.size else np.zeros(0)).astype(np.int64)
    g, rest = np.divmod(uniq, 2 * n_bins)
    b, a = np.divmod(rest, 2)
    return (g, b, a, counts, sums, n_groups), order[first], np.flatnonzero(counts < SMALL)


def from_cells(group: np.ndarray, bin_: np.ndarray, split: np.ndarray, n: np.ndarray, sums: np.ndarray,
               n_groups: int, small: tuple[np.ndarray, np.ndarray, np.ndarray], weighted: bool) -> Moments:
    """:class:`Moments` from each cell's (group, bin, split), row count and sums ``[w, w v, w v^2]`` (cells
    sorted by (group, bin, split); unweighted ``w`` is 1), and the rows of its small cells: ``(cell, w, w *
    value)`` per row, in any order (the engines' bounded query)."""
    n = np.asarray(n, dtype=np.int64)
    freq = np.asarray(sums[:, 0], dtype=np.float64) if weighted else n.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(freq > 0, sums[:, 1] / freq, 0.0)
        sd = np.sqrt(np.maximum(np.where(freq > 0, sums[:, 2] / freq, 0.0) - mean * mean, 0.0))
    start = np.searchsorted(group, np.arange(n_groups + 1))
    cell, w, wv = small
    order = np.lexsort((w, wv, cell))  # by (cell, value, weight): independent of the row order
    small_rows = np.stack([w[order], wv[order]], axis=1).reshape(-1, 2)
    counts = np.where(n < SMALL, n, 0)
    small_start = np.concatenate([[0], np.cumsum(counts)])
    return Moments(np.asarray(group), np.asarray(bin_), np.asarray(split, dtype=np.float64), n, freq, mean, sd,
                   start, small_rows, small_start, weighted)


def _trials(total: float, rng: np.random.Generator, n_boot: int) -> np.ndarray:
    """The group's number of rows per draw: ``total`` (its sum of frequency weights) when it is a whole number;
    otherwise floor or ceil at random, with mean ``total`` (non-integer frequency weights), and at least 1."""
    whole = np.floor(total)
    if whole == total:
        return np.full(n_boot, max(whole, 1.0))
    return np.maximum(whole + (rng.random(n_boot) < total - whole), 1.0)


def _draw_small_weighted(m: Moments, c0: int, few: np.ndarray, k: np.ndarray, sw: np.ndarray, sv: np.ndarray,
                         rng: np.random.Generator) -> None:
    """The small cells' sums of a weighted group (frequency weights): the small cells' total of rows per draw
    (``k[:, few[0]]``) split among their rows by ``Multinomial(total, w_i / sum w)``, a row of
    weight w_i being w_i rows each drawn alone; a cell's sums are then its rows' counts and ``counts @ value``."""
    lo, hi = m.small_start[c0 + few], m.small_start[c0 + few + 1]
    idx = np.concatenate([np.arange(a, b) for a, b in zip(lo, hi)])
    rows = m.small_rows[idx]
    w = rows[:, 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        value = np.where(w > 0, rows[:, 1] / w, 0.0)
    total = w.sum()
    starts = np.concatenate([[0], np.cumsum(hi - lo)[:-1]])  # each cell's first row (a small cell has one)
    picks = rng.multinomial(k[:, few[0]].astype(np.int64), w / total if total > 0 else np.full(w.size, 1 / w.size))
    sw[:, few] = np.add.reduceat(picks, starts, axis=1)
    sv[:, few] = np.add.reduceat(picks * value, starts, axis=1)


def _group_random(m: Moments, g: int, n_boot: int, rng: np.random.Generator, unit: float
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Group g's random part, drawn from its own stream ``rng`` in one fixed order: ``(big cells, rest, count
    normals, value normals, small cells, their drawn [sum w, sum w value])``: the rows left to the large cells per
    draw, standard normals for their counts and values ``(n_boot, big)``, and the small cells' sums drawn exactly
    ``(n_boot, small, 2)``, frequencies in the caller's units. :func:`_chunk` does the arithmetic of every
    group's large cells at once."""
    c0, c1 = int(m.start[g]), int(m.start[g + 1])
    n_c = m.n[c0:c1]
    small = n_c < SMALL
    freq = m.freq[c0:c1] * unit if m.weighted else n_c.astype(np.float64)
    if m.weighted and freq.sum() > HUGE:
        small = np.zeros(small.size, dtype=bool)
    few, big = np.flatnonzero(small), np.flatnonzero(~small)
    n_g = float(freq.sum())
    rest = np.full(n_boot, n_g)
    kf = None
    if few.size:
        share = freq[few].sum()
        if m.weighted:
            trials = _trials(n_g, rng, n_boot)
            k_small = (rng.binomial(trials.astype(np.int64), min(share / n_g, 1.0)) if big.size
                       else trials.astype(np.int64))
            rest = np.maximum(trials - k_small, 0.0)
        else:
            k_small = rng.binomial(int(n_g), share / n_g, size=n_boot) if big.size else np.full(n_boot, int(n_g))
            kf = rng.multinomial(k_small, n_c[few] / share)
            rest = n_g - k_small.astype(np.float64)
    zc = rng.standard_normal((n_boot, big.size)) if big.size else np.zeros((n_boot, 0))
    zv = rng.standard_normal((n_boot, big.size)) if big.size else np.zeros((n_boot, 0))
    sums = np.zeros((n_boot, few.size, 2))
    if few.size and m.weighted:
        k = np.zeros((n_boot, c1 - c0))
        k[:, few[0]] = k_small
        sw, sv = np.zeros_like(k), np.zeros_like(k)
        _draw_small_weighted(m, c0, few, k, sw, sv, rng)
        sums[:, :, 0], sums[:, :, 1] = sw[:, few], sv[:, few]
    elif few.size:
        total = int(kf.sum())
        seg = np.repeat(np.arange(kf.size), kf.ravel())
        cells = few[seg % few.size]
        lo = m.small_start[c0 + cells]
        picked = m.small_rows[lo + np.minimum((rng.random(total) * n_c[cells]).astype(np.int64), n_c[cells] - 1)]
        sums[:, :, 0] = np.bincount(seg, picked[:, 0], kf.size).reshape(kf.shape)
        sums[:, :, 1] = np.bincount(seg, picked[:, 1], kf.size).reshape(kf.shape)
    return c0 + big, rest, zc, zv, c0 + few, sums


def _chunk(m: Moments, groups: range, n_boot: int, n_bins: int, rngs: list[np.random.Generator],
           bounds: tuple[float, float], units: np.ndarray) -> np.ndarray:
    """``(n_boot, groups, n_bins, 3)`` draws of the per-bin sums of ``groups`` (each from its own generator,
    :func:`_group_random`): the random numbers per group, the arithmetic of every group's large cells in one pass of
    array operations (no Python loop over cells; no matrix product: BLAS threads stall on a loaded machine)."""
    parts = [_group_random(m, g, n_boot, rng, float(units[i])) for i, (g, rng) in enumerate(zip(groups, rngs))]
    g0, n_g = groups[0], len(groups)
    c0, c1 = int(m.start[g0]), int(m.start[g0 + n_g])
    sw = np.zeros((n_boot, c1 - c0))
    sv = np.zeros((n_boot, c1 - c0))
    big = np.concatenate([p[0] for p in parts]).astype(np.int64)
    unit_of = np.repeat(units, np.diff(m.start[g0:g0 + n_g + 1]))  # per cell of the chunk
    if big.size:
        owner = np.repeat(np.arange(n_g), [p[0].size for p in parts])  # chunk group of each large cell
        freq = (m.freq[big] * unit_of[big - c0]) if m.weighted else m.n[big].astype(np.float64)
        seg = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])  # first large cell of each group
        which = np.searchsorted(seg, np.arange(big.size), side="right") - 1  # its group among those
        q = freq / np.add.reduceat(freq, seg)[which]
        x = np.concatenate([p[2] for p in parts], axis=1)
        x *= np.sqrt(q)
        x -= q * np.add.reduceat(x, seg, axis=1)[:, which]  # the multinomial's deviations: they add up to 0
        rest = np.stack([p[1] for p in parts], axis=1)[:, owner[seg]]  # (n_boot, groups with large cells)
        x *= np.sqrt(rest)[:, which]
        k = rest[:, which] * q
        k += x
        np.maximum(k, 0.0, out=k)
        v = np.sqrt(k)
        v *= np.concatenate([p[3] for p in parts], axis=1)
        v *= m.sd[big]
        v += k * m.mean[big]
        np.maximum(v, bounds[0] * k, out=v)
        np.minimum(v, bounds[1] * k, out=v)
        if big.size == c1 - c0:  # no small cell: the arrays themselves
            sw, sv = k, v
        else:
            sw[:, big - c0], sv[:, big - c0] = k, v
    few = np.concatenate([p[4] for p in parts]).astype(np.int64)
    if few.size:
        drawn = np.concatenate([p[5] for p in parts], axis=1)
        sw[:, few - c0], sv[:, few - c0] = drawn[:, :, 0], drawn[:, :, 1]
    if m.weighted:  # frequencies back to the rows' units (the figures divide sums by sums)
        sw /= unit_of
        sv /= unit_of
    out = np.zeros((n_boot, n_g * n_bins, 3))
    gb = (m.group[c0:c1] - g0) * n_bins + m.bin[c0:c1]  # sorted: a (group, bin)'s one or two cells adjacent
    second = np.flatnonzero(np.r_[False, gb[1:] == gb[:-1]])  # a bin's split-1 cell beside its split-0 one
    first = np.setdiff1d(np.arange(c1 - c0), second, assume_unique=True)
    acc = sw * m.split[c0:c1]
    for j, x in enumerate((sw, sv, acc)):  # no matrix product: BLAS threads stall on a loaded machine
        out[:, gb[first], j] = x[:, first]
        out[:, gb[second], j] += x[:, second]
    return out.reshape(n_boot, n_g, n_bins, 3)


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
            rngs = [np.random.default_rng(None if seed is None else [seed, key_hash[g], stream]) for g in range(g0, g1)]
            units = np.broadcast_to(np.asarray(scale, dtype=np.float64), (n_groups,))[g0:g1]
            table = _chunk(m, range(g0, g1), n_boot, n_bins, rngs, summed.bounds, units)  # type: ignore[union-attr]
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

    counts = frequencies(m, sums.shape[0], scale)
    return F.bounds(figures, scales, draws_, lambda name, f: at(f), at, req.ci, req.ci_method, keep, counts)


def frequencies(m: Moments, n_groups: int, scale: Any = 1.0) -> np.ndarray:
    """Each group's rows as frequency weights count them: its sum of weights in the caller's units (``scale``:
    the weights' power of two, one or one per group), its row count unweighted (docs/spec.md §8 "Weights")."""
    if not m.weighted:
        return np.bincount(m.group, weights=m.n, minlength=n_groups)
    return np.bincount(m.group, weights=m.freq, minlength=n_groups) * scale
