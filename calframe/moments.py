"""The bootstrap from moments: a binned figure's draws from its per (group, bin) sums, not from its rows.

A binned figure reads a group's rows only through the sums of its cells, a cell being the rows of one
(group, bin, split) with ``split`` the row's 0/1 accuracy (the label's side of the bin). The row bootstrap
(a group's ``n_g`` rows drawn again with replacement) moves those sums by

1. the cells' row counts: ``Multinomial(n_g, n_cell / n_g)``, exactly for the cells of fewer than :data:`SMALL`
   rows, the large cells' from that law's normal approximation (same mean and covariance; :func:`draws`);
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

Every random number is a function of (seed, group key, binning, cell, draw) alone: a counter-based stream
(:mod:`calframe._kernels.draws`: SplitMix64's mixer of those, a ziggurat for the normals, exact binomials), so a
group's draws do not depend on the other groups, the thread count, the engine or the row order of its cells'
small rows (sorted by value), and the same call draws the same bits on every run. The draws run compiled, one
group per thread at a time; a plug-in CE_p (ECE, MCE, the plug-in RMSCE) is finalized in the same kernel
(:attr:`Summed.plugin`), any other figure from the drawn ``(draws x groups, bins, 3)`` tables.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._imports import LazyModule

DK = LazyModule("calframe._kernels.draws")  # numba kernels: imported at first use

#: a cell with fewer rows than this is resampled exactly (its rows drawn with replacement)
SMALL = 32
#: a weighted group's sum of weights above which no cell is drawn exactly (its count is no int64): all normal
HUGE = 2.0 ** 52
#: the most float64 values of drawn sums held at once (groups are drawn in chunks below it)
_CHUNK_VALUES = 2_000_000

Cells = tuple[np.ndarray, np.ndarray, Any, int]


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
    #: ``(p, distance factor, squared)`` when ``finalize`` is the plug-in CE_p (p 1, 2 or inf) of the distance
    #: ``factor * |conf - acc|`` (tvd: 1, l2: sqrt 2): the draws' kernel finalizes it itself
    plugin: tuple[float, float, bool] | None = None


@dataclass(frozen=True)
class Uniform:
    """A figure's bins as :attr:`Summed.cells` may give them instead of each row's bin: the uniform ``edges``
    (B + 1) and their closed side (``right``), on which the moments' pass bins the rows itself (the rule of
    :func:`calframe.binning.edge_bins`, as the fused pass)."""

    edges: np.ndarray
    right: bool


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


def moments(value: np.ndarray, split: np.ndarray, bins: "np.ndarray | Uniform", groups: np.ndarray | None,
            n_groups: int, n_bins: int, weights: np.ndarray | None) -> Moments:
    """The cells' counts, weight sums, first and second moments and small cells' rows, from the rows of one
    binning (``bins``: each row's bin, or :class:`Uniform` edges to bin the rows on in the same compiled pass;
    ``weights`` as the rows carry them: a group's power of two, ``Scored.weight_scale``, is applied by
    :func:`draws`). The sums are added in chunks of rows, in chunk order: the same bits for any thread count.

    >>> m = moments(np.array([0.1, 0.2, 0.9]), np.array([0, 1, 1]), np.array([0, 0, 1]), None, 1, 2, None)
    >>> m.n.tolist(), m.bin.tolist(), m.split.tolist(), m.small_rows[:, 1].tolist()
    ([1, 1, 1], [0, 0, 1], [0.0, 1.0, 1.0], [0.1, 0.2, 0.9])
    """
    uniform = isinstance(bins, Uniform)
    codes = np.zeros(value.shape[0], dtype=np.int32) if groups is None else np.asarray(groups, dtype=np.int32)
    counts, sums, present, small = DK.cell_sums(
        value, split, None if uniform else np.asarray(bins, dtype=np.int32),
        bins.edges if uniform else np.zeros(2), bins.right if uniform else False, codes, max(n_groups, 1), n_bins,
        weights)
    group, rest = np.divmod(present, 2 * n_bins)
    bin_, split_ = np.divmod(rest, 2)
    return from_cells(group, bin_, split_, counts[present], sums[present], n_groups, small, weights is not None)


#: no small cells' rows: (cell, w, w * value)
NO_ROWS = (np.zeros(0, np.int64), np.zeros(0), np.zeros(0))


def native_ci(req: Any) -> bool:
    """Whether an engine draws ``req``'s interval from the moments of its bins where the rows are: the bootstrap
    from moments on uniform or explicit-edge bins of a scalar lens's confidence."""
    b = req.binning
    return (req.bootstrap != "rows" and not req.variables and req.lens.kind != "marginal" and b is not None
            and (b.scheme == "uniform" or b.edges is not None))


def edges_ci(req: Any) -> bool:
    """Whether ``req``'s interval is drawn from the moments of quantile or equal-mass bins of a scalar lens's
    confidence: the edges found once on the call's rows and then held fixed (the bootstrap conditional on the
    edges, docs/statistics.md), as in memory. The LazyFrame and narwhals engines find the edges where the rows
    are (:mod:`calframe.engines.plan.order_stats`) and draw on them as on explicit edges.

    >>> from calframe import request as R
    >>> edges_ci(R.ce("ece", "ece", binning="quantile", ci=0.9)), edges_ci(R.ce("ece", "ece", ci=0.9))
    (True, False)
    >>> edges_ci(R.ce("ece", "ece", binning="quantile", ci=0.9, bootstrap="rows"))
    False
    """
    b = req.binning
    return (req.bootstrap != "rows" and not req.variables and req.lens.kind != "marginal" and b is not None
            and b.edges is None and b.scheme in ("quantile", "equal_mass"))


def plan_ci(req: Any) -> bool:
    """Whether the engines that sum from a plan (a LazyFrame streamed, the narwhals engine) draw ``req``'s interval
    from the moments of its bins where the rows are: :func:`native_ci` or :func:`edges_ci`."""
    return native_ci(req) or edges_ci(req)


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
    (:func:`calframe._progress.steps`), advanced as the groups are drawn.

    The draws of a binning whose figures are all plug-in CE_p (:attr:`Summed.plugin`) come finalized from the
    kernel (:func:`calframe._kernels.draws.draw`); the others' per-bin sums are drawn for chunks of groups and
    finalized by each figure's ``finalize``."""
    by_key: dict[Hashable, list[str]] = {}
    for name, f in figures.items():
        by_key.setdefault(sums_of(f).key, []).append(name)  # type: ignore[union-attr]
    n_groups = len(keys)
    key_hash = np.array([stable_hash(k) for k in keys], dtype=np.uint64).reshape(n_groups)
    seed64 = _seed64(seed)
    units = np.ascontiguousarray(np.broadcast_to(np.asarray(scale, dtype=np.float64), (n_groups,)))
    out = {name: np.empty((n_boot, n_groups)) for name in figures}
    done, parts = 0, len(by_key) * n_groups
    for i, (key, names) in enumerate(by_key.items()):
        summed = sums_of(figures[names[0]])
        m, n_bins = moments_of(summed)  # type: ignore[arg-type]
        stream = stable_hash(key if summed.stream is None else summed.stream)  # type: ignore[union-attr]
        gkeys = DK.group_keys(seed64, key_hash, stream)
        arrays = (gkeys, m.start, m.n, m.freq, m.mean, m.sd, m.split, np.asarray(m.bin) * 2 + m.split.astype(np.int64),
                  m.small_rows, m.small_start, units, m.weighted, n_boot, n_bins, summed.bounds)  # type: ignore
        plugins = [sums_of(figures[name]).plugin for name in names]  # type: ignore[union-attr]
        if all(p is not None for p in plugins):
            figs = DK.draw(*arrays, range(n_groups), np.array(plugins, dtype=np.float64))
            for j, name in enumerate(names):
                out[name][:] = figs[:, :, j]
            chunk = n_groups
        else:
            chunk = max(1, _CHUNK_VALUES // (n_boot * n_bins * 3))
            for g0 in range(0, n_groups, chunk):
                g1 = min(n_groups, g0 + chunk)
                table = DK.draw(*arrays, range(g0, g1), np.zeros((0, 3)))
                flat = table.reshape(n_boot * (g1 - g0), n_bins, 3)
                s = np.tile(scale[g0:g1], n_boot) if isinstance(scale, np.ndarray) else scale
                for name in names:
                    fin = sums_of(figures[name]).finalize  # type: ignore[union-attr]
                    out[name][:, g0:g1] = np.asarray(fin(flat, s)).reshape(n_boot, g1 - g0)
                if bar is not None:  # the draws' share of the work done so far
                    now = n_boot * (i * n_groups + g1) // parts
                    bar.update(now - done)
                    done = now
        if bar is not None:
            now = n_boot * (i + 1) * n_groups // parts
            bar.update(now - done)
            done = now
    return out


def _seed64(seed: int | None) -> int:
    """The stream's seed as 64 bits: ``seed`` itself below 2^64, a hash of it above; None: fresh entropy."""
    if seed is None:
        return int(np.random.SeedSequence().generate_state(1, np.uint64)[0])
    return int(seed) if int(seed) < 2 ** 64 else stable_hash(("seed", int(seed)))


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
