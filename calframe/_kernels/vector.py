"""Numba kernels for vector lenses (generalized ECE): top-k selection, binning, per-(group, bin) sums.

No dataframe knowledge, no validation: plain arrays in, arrays out (see
``calframe.generalized`` for the definitions and the checks).

Determinism: every parallel loop either writes disjoint outputs per iteration
(rows, groups) or sums rows in chunks whose number depends only on the sizes
(never on the thread count), with the partial tables added in chunk order. The
results are bit-identical for any number of threads.

Adaptive binning reproduces uu-sml's ``DataDependentBinning`` (used by the GECE
reference) float operation for float operation, so that rows lying on a split
threshold land where the reference puts them:

- per-coordinate population variance as ``numpy.var(x, axis=0)`` on a C-ordered
  (n, m) block: mean = (row-by-row running sum) / n, then the row-by-row
  running sum of squared deviations / n (a reduction over axis 0 is not pairwise);
- split coordinate = first index of the largest variance (``numpy.argmax``);
- threshold = ``numpy.mean`` of that coordinate (a 1-d reduction: numpy's
  pairwise summation over all n values, / n), or ``numpy.median``;
- rows keep their original relative order inside every node (the reference
  indexes ``indices[low]``), so every sum runs over the same rows in the same order.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from .accumulate import chunk_bounds as _chunk_bounds, group_order as _group_order
from .chunks import in_chunk_order, run_chunks, take

#: rows per chunk of the accumulate pass (before the caps below)
CHUNK_ROWS = 1 << 16
#: at most this many chunks
MAX_CHUNKS = 32
#: budget for all partial tables together, in float64 cells (64 MB)
PARTIAL_BUDGET = 1 << 23
#: numpy's pairwise-summation block (PW_BLOCKSIZE in loops_utils.h)
_PW_BLOCKSIZE = 128


def n_chunks(n_rows: int, n_cells: int, width: int) -> int:
    """Number of row chunks for the accumulate pass (a function of sizes only)."""
    by_rows = min(MAX_CHUNKS, max(1, -(-n_rows // CHUNK_ROWS)))
    by_memory = max(1, PARTIAL_BUDGET // max(width * n_cells, 1))
    return max(1, min(by_rows, by_memory, MAX_CHUNKS))


# --------------------------------------------------------------------------- lenses


def top1_rows(g, labels):
    """[m, 1 - m] and [c, 1 - c] per row: m = g at numpy.argmax (first maximum), c = 1 if that class is the label."""
    n = g.shape[0]
    gp = np.empty((n, 2))
    yp = np.empty((n, 2))
    run_chunks(_top1_rows, (g, labels, gp, yp, _row_chunks(n)), n)
    return gp, yp


@njit(cache=True, nogil=True, readonly=("g", "labels"))
def _top1_rows(g, labels, gp, yp, nchunks, taken):
    n, k = g.shape
    while True:
        ch = take(taken)
        if ch >= nchunks:
            break
        lo, hi = _chunk_bounds(n, nchunks, ch)
        for i in range(lo, hi):
            best = 0
            m = g[i, 0]
            for j in range(1, k):
                x = g[i, j]
                if m == m and (x > m or x != x):  # numpy.argmax: the first maximum, or the first NaN
                    m = x
                    best = j
            c = 1.0 if best == labels[i] else 0.0
            gp[i, 0] = m
            gp[i, 1] = 1.0 - m
            yp[i, 0] = c
            yp[i, 1] = 1.0 - c


def _row_chunks(n: int) -> int:
    """Chunks of rows of a per-row kernel (sizes only): accumulate's rule without tables."""
    return max(1, min(MAX_CHUNKS, -(-n // CHUNK_ROWS)))


def topk_indices(g, k):
    """Per row, the indices of the k largest values, largest first; ties to the lowest index.

    Insertion into a sorted list of length k: a value enters only if strictly
    larger than the current k-th, and goes after every kept value >= it, so
    among equal values the lowest index ranks first (a stable descending sort).
    Rows are processed in blocks (one scratch buffer per block); each row's
    output depends on that row only.
    """
    n = g.shape[0]
    out = np.empty((n, k), dtype=np.int64)
    run_chunks(_topk_indices, (g, k, out), n)
    return out


@njit(cache=True, nogil=True)
def _topk_indices(g, k, out, taken):
    n, m = g.shape
    block = 4096
    vals = np.empty(k)
    while True:
        c = take(taken)
        if c >= (n + block - 1) // block:
            break
        for i in range(c * block, min(n, (c + 1) * block)):
            idx = out[i]
            filled = 0
            for j in range(m):
                x = g[i, j]
                if filled == k and not (x > vals[k - 1]):
                    continue
                # position: after every kept value >= x (the k-th is dropped when full)
                pos = filled if filled < k else k - 1
                while pos > 0 and vals[pos - 1] < x:
                    vals[pos] = vals[pos - 1]
                    idx[pos] = idx[pos - 1]
                    pos -= 1
                vals[pos] = x
                idx[pos] = j
                if filled < k:
                    filled += 1


# --------------------------------------------------------------------------- uniform grid


def digitize_uniform(g, n_coords, edges):
    """``numpy.digitize(g[:, j], edges[1:-1])`` for j < n_coords, with edges = ``numpy.linspace(0, 1, bins + 1)``.

    I.e. the number of inner edges <= x (left-closed bins, last bin closed at 1;
    values below 0 go to bin 0 and above 1 to the last bin). The edges come from
    numpy: numba's linspace rounds some edges differently (12 * 0.05 vs 0.6). A hot-loop form of
    ``calframe.binning.uniform_bins``, tested against it (tests/test_rules.py).
    """
    out = np.empty((g.shape[0], n_coords), dtype=np.int32)
    run_chunks(_digitize_uniform, (g, n_coords, edges, out, _row_chunks(g.shape[0])), g.shape[0])
    return out


@njit(cache=True, nogil=True, readonly=("g", "edges"))
def _digitize_uniform(g, n_coords, edges, out, nchunks, taken):
    bins = edges.shape[0] - 1
    n = g.shape[0]
    while True:
        ch = take(taken)
        if ch >= nchunks:
            break
        lo, hi = _chunk_bounds(n, nchunks, ch)
        for i in range(lo, hi):
            for j in range(n_coords):
                x = g[i, j]
                if not (x < 1.0):  # also NaN, which numpy.digitize puts last
                    b = bins - 1
                elif x <= 0.0:
                    b = 0
                else:
                    b = min(int(x * bins), bins - 1)
                while b > 0 and edges[b] > x:
                    b -= 1
                while b < bins - 1 and edges[b + 1] <= x:
                    b += 1
                out[i, j] = b


def mixed_radix_keys(digits, groups, bins):
    """One int64 key per row: group * bins^c + digits in base ``bins`` (first coordinate most significant)."""
    out = np.empty(digits.shape[0], dtype=np.int64)
    run_chunks(_mixed_radix_keys, (digits, groups, bins, out, _row_chunks(digits.shape[0])), digits.shape[0])
    return out


@njit(cache=True, nogil=True)
def _mixed_radix_keys(digits, groups, bins, out, nchunks, taken):
    n, c = digits.shape
    radix = 1
    for _ in range(c):
        radix *= bins
    while True:
        ch = take(taken)
        if ch >= nchunks:
            break
        lo, hi = _chunk_bounds(n, nchunks, ch)
        for i in range(lo, hi):
            key = 0
            for j in range(c):
                key = key * bins + digits[i, j]
            if groups is not None:
                key += np.int64(groups[i]) * radix
            out[i] = key


# --------------------------------------------------------------------------- adaptive (uu-sml) binning


@njit(cache=True)
def group_order(groups, n_groups, n):
    """Stable counting sort by group: (rows in group order, segment starts of length n_groups + 1)."""
    if groups is None:
        starts = np.zeros(n_groups + 1, dtype=np.int64)
        starts[1] = n
        return np.arange(n), starts
    return _group_order(groups, n_groups)


@njit(cache=True)
def _pairwise_block(a, lo, n):
    """numpy's pairwise_sum for n <= PW_BLOCKSIZE (8 accumulators, then the tail)."""
    if n < 8:
        res = -0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0 = a[lo]
    r1 = a[lo + 1]
    r2 = a[lo + 2]
    r3 = a[lo + 3]
    r4 = a[lo + 4]
    r5 = a[lo + 5]
    r6 = a[lo + 6]
    r7 = a[lo + 7]
    top = n - n % 8
    i = 8
    while i < top:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for i in range(top, n):
        res += a[lo + i]
    return res


@njit(cache=True)
def _pairwise(a, lo, n):
    """numpy's pairwise_sum over a[lo:lo + n] (loops_utils.h), bit for bit.

    numpy recurses: n <= 128 is a block, else the sum of the halves split at
    n2 = n // 2 rounded down to a multiple of 8. Done here with an explicit
    stack (numba's cache does not handle recursive functions).
    """
    if n <= _PW_BLOCKSIZE:
        return _pairwise_block(a, lo, n)
    f_lo = np.empty(64, dtype=np.int64)
    f_n = np.empty(64, dtype=np.int64)
    f_stage = np.empty(64, dtype=np.int64)
    vals = np.empty(64)
    nf = 1
    nv = 0
    f_lo[0] = lo
    f_n[0] = n
    f_stage[0] = 0
    while nf > 0:
        t = nf - 1
        cn = f_n[t]
        if cn <= _PW_BLOCKSIZE:
            vals[nv] = _pairwise_block(a, f_lo[t], cn)
            nv += 1
            nf -= 1
            continue
        n2 = cn // 2
        n2 -= n2 % 8
        if f_stage[t] == 0:
            f_stage[t] = 1
            f_lo[nf] = f_lo[t]
            f_n[nf] = n2
            f_stage[nf] = 0
            nf += 1
        elif f_stage[t] == 1:
            f_stage[t] = 2
            f_lo[nf] = f_lo[t] + n2
            f_n[nf] = cn - n2
            f_stage[nf] = 0
            nf += 1
        else:
            nv -= 1
            vals[nv - 1] = vals[nv - 1] + vals[nv]
            nf -= 1
    return vals[0]


@njit(cache=True)
def numpy_mean(a, n):
    """``numpy.mean(a[:n])`` for float64, bit for bit: pairwise_sum(a[:n]) / n (numpy >= 2, 1-d reduction)."""
    return _pairwise(a, 0, n) / n


@njit(cache=True)
def numpy_argmax_var(ssd, cnt):
    """``numpy.argmax`` of the variances ssd / cnt (ssd: sums of squared deviations): first maximum, first NaN wins."""
    ax = 0
    best = ssd[0] / cnt
    if best == best:
        for j in range(1, ssd.shape[0]):
            v = ssd[j] / cnt
            if v > best or v != v:
                ax = j
                best = v
                if v != v:
                    break
    return ax


@njit(cache=True)
def _split_group(g, perm, lo, hi, min_size, use_median, ids):
    """Split rows perm[lo:hi] as uu-sml's DataDependentBinning; leaves numbered in pre-order.

    Writes ``ids`` for the group's rows and returns the number of leaves.
    Iterative: a stack of [start, end) nodes; the high child is pushed before
    the low child so the low child is visited first (pre-order).
    """
    m = g.shape[1]
    size = hi - lo
    col = np.empty(size)
    scratch = np.empty(size, dtype=np.int64)
    mean = np.empty(m)
    var = np.empty(m)
    stack = np.empty((size + 1, 2), dtype=np.int64)
    top = 0
    stack[0, 0] = lo
    stack[0, 1] = hi
    top = 1
    leaves = 0
    while top > 0:
        top -= 1
        a = stack[top, 0]
        b = stack[top, 1]
        cnt = b - a
        split = False
        nl = 0
        if cnt >= min_size and cnt > 0:
            # numpy.var(x, axis=0): running sums over rows, in row order
            for j in range(m):
                mean[j] = g[perm[a], j]
            for r in range(a + 1, b):
                row = perm[r]
                for j in range(m):
                    mean[j] += g[row, j]
            for j in range(m):
                mean[j] = mean[j] / cnt
            for j in range(m):
                d = g[perm[a], j] - mean[j]
                var[j] = d * d
            for r in range(a + 1, b):
                row = perm[r]
                for j in range(m):
                    d = g[row, j] - mean[j]
                    var[j] += d * d
            ax = numpy_argmax_var(var, cnt)
            for r in range(cnt):
                col[r] = g[perm[a + r], ax]
            if use_median:
                t = np.median(col[:cnt])
            else:
                t = numpy_mean(col, cnt)
            for r in range(cnt):
                if col[r] < t:
                    nl += 1
            split = 0 < nl < cnt
        if split:
            # stable partition: low rows first, both sides in their original order
            wl = a
            wh = 0
            for r in range(cnt):
                row = perm[a + r]
                if col[r] < t:
                    perm[wl] = row
                    wl += 1
                else:
                    scratch[wh] = row
                    wh += 1
            for r in range(wh):
                perm[wl + r] = scratch[r]
            stack[top, 0] = a + nl
            stack[top, 1] = b
            stack[top + 1, 0] = a
            stack[top + 1, 1] = a + nl
            top += 2
        elif cnt > 0:
            for r in range(a, b):
                ids[perm[r]] = leaves
            leaves += 1
    return leaves


def adaptive_bins(g, order, starts, min_sizes, use_median):
    """Bin ids (dense per group, leaves in pre-order) and the number of leaves of each group (the groups on
    several threads, each on its own)."""
    n_groups = starts.shape[0] - 1
    ids = np.zeros(g.shape[0], dtype=np.int32)
    n_leaves = np.zeros(n_groups, dtype=np.int64)
    perm = order.copy()
    run_chunks(_adaptive_bins, (g, perm, starts, min_sizes, use_median, ids, n_leaves), g.shape[0])
    return ids, n_leaves


@njit(cache=True, nogil=True)
def _adaptive_bins(g, perm, starts, min_sizes, use_median, ids, n_leaves, taken):
    while True:
        gi = take(taken)
        if gi >= n_leaves.shape[0]:
            break
        lo = starts[gi]
        hi = starts[gi + 1]
        if hi > lo:
            n_leaves[gi] = _split_group(g, perm, lo, hi, min_sizes[gi], use_median, ids)


# --------------------------------------------------------------------------- accumulate


def accumulate_vector(groups, bins, gp, yp, ypos, weights, n_bins, part, out):
    """Per (group, bin) ``[sum w, sum w g'_0..m-1, sum w y'_0..m-1]`` as a flat (n_cells * (1 + 2m)) array.

    y' is ``yp`` (n, m), or, when ``yp`` has no rows, one-hot with its 1 at ``ypos`` (n,).

    Rows are cut into as many chunks as ``part`` has tables (chosen from the sizes only); each chunk
    sums its rows in order into its own partial table; the tables are added in chunk order into ``out``.
    ``part`` and ``out``: :func:`calframe._kernels.accumulate.tables` (numpy's allocation).
    """
    run_chunks(_accumulate_vector, (groups, bins, gp, yp, ypos, weights, n_bins, part), gp.shape[0])
    return in_chunk_order(part, out)


@njit(cache=True, nogil=True, readonly=("groups", "bins", "gp", "yp", "ypos", "weights"))
def _accumulate_vector(groups, bins, gp, yp, ypos, weights, n_bins, part, taken):
    n, m = gp.shape
    onehot = yp.shape[0] == 0 and n > 0
    width = 1 + 2 * m
    while True:
        c = take(taken)
        if c >= part.shape[0]:
            break
        lo, hi = _chunk_bounds(n, part.shape[0], c)
        tab = part[c]
        for i in range(lo, hi):
            k = bins[i] if groups is None else groups[i] * n_bins + bins[i]
            base = k * width
            w = 1.0 if weights is None else weights[i]
            tab[base] += w
            for j in range(m):
                tab[base + 1 + j] += w * gp[i, j]
            if onehot:
                tab[base + 1 + m + ypos[i]] += w
            else:
                for j in range(m):
                    tab[base + 1 + m + j] += w * yp[i, j]
