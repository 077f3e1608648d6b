"""The fused binned pass: validate, lens, bin and accumulate binary rows in one read of each column.

No dataframe knowledge: plain arrays in, arrays out (the engine, calframe/engines/eager.py, decides when
it applies and falls back to the detailed checks of calframe._columns when a row is bad).

Determinism: as :func:`calframe._kernels.accumulate.accumulate`, rows are cut into a number of chunks
that depends on the sizes only (``accumulate.n_chunks``); each chunk sums its rows in order into its own
partial table and the tables are added in chunk order: the same bits for any thread count.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from .._runtime import njit  # parallel kernels: fork check, lock under a thread-unsafe layer
from .accumulate import _uniform_bin, partials, sum_partials
from .prefetch import AHEAD, prefetch_row

#: lens codes of :func:`binned_pass` (calframe.lenses.binary_rule): class:1, class:0, top1
CLASS1, CLASS0, TOP1 = 0, 1, 2

#: a table of more cells than this (per chunk) does not stay in cache: the pass prefetches its cells
PREFETCH_CELLS = 1 << 15


@njit(inline="always")
def _lensed(x, a, lens):
    """(conf, acc) of a binary row: calframe.lenses.binary_rule, operation for operation."""
    if lens == CLASS1:
        return x, a
    if lens == CLASS0:
        return 1.0 - x, 1.0 - a
    if x > 0.5:
        return x, a
    return 1.0 - x, 1.0 - a


@njit(inline="always")
def _slot(keys, i, lo):
    return 0 if keys is None else np.int64(keys[i]) - lo


@njit(parallel=True, cache=True)
def weight_tops(keys, lo, w, n_slots, nchunks):
    """(largest weight of each slot, number of weights that are not finite and >= 0): the pre-pass of a
    weighted :func:`binned_pass` (the weights are scaled per group by their largest, as
    calframe._columns.scale_weights)."""
    n = w.shape[0]
    part = np.zeros((nchunks, n_slots))
    bad = np.zeros(nchunks, dtype=np.int64)
    step = (n + nchunks - 1) // nchunks
    for c in prange(nchunks):
        top = part[c]
        nb = 0
        for i in range(c * step, min(n, (c + 1) * step)):
            v = w[i]
            if v >= 0.0 and v <= 1.7976931348623157e308:
                s = _slot(keys, i, lo)
                if v > top[s]:
                    top[s] = v
            else:
                nb += 1
        bad[c] = nb
    out = part[0].copy()
    for c in range(1, nchunks):
        out = np.maximum(out, part[c])
    return out, bad.sum()


@njit(parallel=True, cache=True)
def binned_pass(p, y, keys, lo, w, w_mult, edges, right, lens, n_bins, n_slots, nchunks):
    """Per (slot, bin) sums ``[sum w, sum w*conf, sum w*acc]`` (flat, n_slots * n_bins * 3), rows per slot
    (weighted only; else empty: the weight sums count the rows), and the number of bad rows.

    ``p``: positive-class probabilities (any real dtype), ``y``: 0/1 labels (int, float or bool); a row
    with p outside [0, 1] (NaN included) or a label other than 0 / 1 is bad and not summed (the caller
    raises the detailed error). ``keys``: None (one slot) or integers, row i in slot ``keys[i] - lo``.
    ``w``: None (all 1) or float64 weights (checked by :func:`weight_tops`), multiplied by
    ``w_mult[slot]`` (an array even without weights). ``lens``: CLASS1, CLASS0 or TOP1. Bins: ``_uniform_bin`` on the uniform ``edges``.
    """
    n = p.shape[0]
    n_cells = n_slots * n_bins
    part, step = partials(n, nchunks, 3 * n_cells)
    counts = np.zeros((nchunks, n_slots if w is not None else 0), dtype=np.int64)
    bad = np.zeros(nchunks, dtype=np.int64)
    far = n_cells > PREFETCH_CELLS
    for c in prange(nchunks):
        tab = part[c].reshape((n_cells, 3))
        cnt = counts[c]
        lo_i = c * step
        hi_i = min(n, lo_i + step)
        nb = 0
        for i in range(lo_i, hi_i):
            if far and i + AHEAD < hi_i:  # the table is out of cache: ask for the cell of a row ahead
                j = i + AHEAD
                xj = np.float64(p[j])
                kj = int(min(xj, 1.0) * n_bins) if xj > 0.0 else 0
                prefetch_row(tab, _slot(keys, j, lo) * n_bins + min(kj, n_bins - 1))
            x = np.float64(p[i])
            a = y[i]
            if not (x >= 0.0 and x <= 1.0 and (a == 0 or a == 1)):
                nb += 1
                continue
            conf, acc = _lensed(x, np.float64(a), lens)
            s = _slot(keys, i, lo)
            k = s * n_bins + _uniform_bin(conf, edges, n_bins, right)
            if w is None:
                tab[k, 0] += 1.0
                tab[k, 1] += conf
                tab[k, 2] += acc
            else:
                wi = w[i] * w_mult[s]
                tab[k, 0] += wi
                tab[k, 1] += wi * conf
                tab[k, 2] += wi * acc
                cnt[s] += 1
        bad[c] = nb
    return sum_partials(part), sum_partials(counts), bad.sum()


@njit(parallel=True, cache=True)
def int_range(v, nchunks):
    """(min, max) of a non-empty integer array, as int64."""
    n = v.shape[0]
    step = (n + nchunks - 1) // nchunks
    los = np.empty(nchunks, dtype=np.int64)
    his = np.empty(nchunks, dtype=np.int64)
    for c in prange(nchunks):
        a = np.int64(v[min(c * step, n - 1)])
        b = a
        for i in range(c * step, min(n, (c + 1) * step)):
            x = np.int64(v[i])
            a = x if x < a else a
            b = x if x > b else b
        los[c] = a
        his[c] = b
    return los.min(), his.max()
