"""Numba kernels: per (group, bin) sufficient statistics, and per-group sorting.

No dataframe knowledge, no validation, no defaults: plain arrays in, arrays out.

Determinism: rows are cut into a number of chunks that depends only on the
number of rows and cells (never on the thread count); each chunk sums its
rows in order into its own partial table, and partial tables are added in
chunk order. The result is bit-identical for any number of threads.
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import njit  # parallel kernels: fork check, lock under a thread-unsafe layer
from . import arrays as A
from .chunks import in_chunk_order, run_chunks, take

#: rows per chunk of the accumulate pass (before the caps below)
CHUNK_ROWS = 1 << 16
#: at most this many chunks
MAX_CHUNKS = 32
#: :func:`uniform_bin` takes floor(x B) without reading the edges where x B is this far from an integer, for
#: at most FAST_BINS bins (the bound is in its docstring)
NEAR_EDGE = 2.0**-30
FAST_BINS = 1 << 20
#: budget for all partial tables together, in float64 cells (64 MB)
PARTIAL_BUDGET = 1 << 23


def n_chunks(n_rows: int, n_cells: int) -> int:
    """Number of row chunks (a function of sizes only, never of the thread count)."""
    by_rows = min(MAX_CHUNKS, max(1, -(-n_rows // CHUNK_ROWS)))
    by_memory = max(2, PARTIAL_BUDGET // max(3 * n_cells, 1))
    return max(1, min(by_rows, by_memory, MAX_CHUNKS))


def accumulate(groups, bins, conf, acc, weights, edges, right, n_groups, n_bins):
    """Per (group, bin) sums ``[sum w, sum w*conf, sum w*acc]`` -> array (n_groups, n_bins, 3).

    ``groups``: int32 codes or None (one group). ``bins``: int32 bin ids, or
    None to bin ``conf`` on the uniform ``edges`` (``right`` selects the closed
    side) inside the pass. ``weights``: float64 or None (all 1).

    Rows are cut into chunks (their number depends on the sizes only); each
    chunk sums its rows in order into its own partial table and the tables
    are added in chunk order: bit-identical for any thread count. (Measured
    alternatives for 1e7 rows in 1e5 groups, where the table no longer fits
    in cache: summing group by group after a counting sort, 0.33 s; a stable
    radix partition of the rows into cache-sized slices of the table, then
    summing each slice, 0.14 s; this pass with two partial tables, 0.17 s.
    The partition's scatter is memory-bound, so the simpler pass stays.)
    """
    n_cells = n_groups * n_bins
    part, out = tables(n_chunks(conf.shape[0], n_cells), 3 * n_cells)
    run_chunks(_accumulate_chunked, (
        A.frozen(groups), A.frozen(bins), A.real(conf), A.frozen(acc), A.real(weights), A.real(edges), bool(right),
        n_bins, part
    ), conf.shape[0])  # read-only arrays: one compiled version for writable and Arrow-backed columns (arrays.py)
    return in_chunk_order(part, out).reshape((n_groups, n_bins, 3))


@njit(inline="always")
def uniform_bin(x, edges, n_bins, right):
    """Bin of x for edges e[0..B]: left-closed (numpy.digitize on inner edges) or right-closed.

    The hot-loop form of the one rule, ``calframe.binning.uniform_bins``, tested against it on and
    next to every edge (tests/test_rules.py): :func:`fast_bin`, else :func:`edge_bin`."""
    k = fast_bin(x, n_bins)
    return k if k >= 0 else edge_bin(x, edges, n_bins, right)


@njit(inline="always")
def fast_bin(x, n_bins):
    """:func:`uniform_bin`'s fast path, -1 where it does not apply (then :func:`edge_bin`).

    Where t = x B is at least NEAR_EDGE from an integer, the bin is floor(t), no edge read. Proof:
    fl(x B) is within B 2^-53 of x B (x in [0, 1]; a larger x gives floor(t) >= B and the slow path), and the
    edges (``binning.uniform_edges``: linspace or i / B) are within 2^-51 of k / B; so x is further than
    (NEAR_EDGE - B 2^-53) / B > 2^-51 from every k / B, on the same side of each edge as of k / B, for
    B <= FAST_BINS. A negative or NaN t never passes the test. (The two edge walks were a third of the
    fused pass; this test costs a subtraction and predicted branches.)

    Scalars only: a plain (not ``parallel=True``) kernel that passes an array to an inlined function in its
    row loop counts a reference to it per row, which made the fused pass twice as slow; the edge walk is a
    call, taken rarely."""
    t = x * n_bins
    k = int(t)
    f = t - k
    if f >= NEAR_EDGE and f <= 1.0 - NEAR_EDGE and k < n_bins and n_bins <= FAST_BINS:
        return k
    return -1


@njit
def edge_bin(x, edges, n_bins, right):
    """:func:`uniform_bin` by the edges: the first guess floor(x B), clamped, moved to the side of each edge x
    is on."""
    k = int(x * n_bins)
    if k > n_bins - 1:
        k = n_bins - 1
    if k < 0:
        k = 0
    if right:
        # bin = number of inner edges strictly below x: (e_k, e_k+1], first bin [0, e_1]
        while k > 0 and not (edges[k] < x):
            k -= 1
        while k < n_bins - 1 and edges[k + 1] < x:
            k += 1
    else:
        # bin = number of inner edges <= x: [e_k, e_k+1), last bin [e_B-1, 1]
        while k > 0 and edges[k] > x:
            k -= 1
        while k < n_bins - 1 and edges[k + 1] <= x:
            k += 1
    return k


def tables(nchunks: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(zeroed partial tables, ``nchunks`` x ``width``; the array :func:`~.chunks.in_chunk_order` adds them into) for
    a chunked pass, allocated by numpy: numpy asks the OS for huge pages for large arrays, numba's np.zeros
    does not (72 MB of tables, 1e5 groups x 15 bins in 2 chunks, took 17.6K page faults and 56 ms; numpy's
    205 faults and 8 ms)."""
    return np.zeros((nchunks, width)), np.empty(width)


@njit(inline="always")
def chunk_bounds(n, nchunks, c):
    """Rows ``lo:hi`` of chunk ``c`` of a chunked pass over ``n`` rows: ``nchunks`` chunks of
    ceil(n / nchunks) rows, the last ones shorter (or empty)."""
    step = (n + nchunks - 1) // nchunks
    return c * step, min(n, (c + 1) * step)


@njit(cache=True, nogil=True)
def _accumulate_chunked(groups, bins, conf, acc, weights, edges, right, n_bins, part, taken):
    """One thread's share of :func:`accumulate`: chunks taken by the counter ``taken`` until none is left
    (:func:`calframe._kernels.chunks.run_chunks`). No array goes to an inlined call per row (a plain kernel
    counts a reference per such call: :func:`fast_bin` says so)."""
    n = conf.shape[0]
    nchunks = part.shape[0]
    while True:
        c = take(taken)
        if c >= nchunks:
            break
        lo, hi = chunk_bounds(n, nchunks, c)
        tab = part[c]
        for i in range(lo, hi):
            x = conf[i]
            if bins is None:
                b = fast_bin(x, n_bins)
                if b < 0:
                    b = edge_bin(x, edges, n_bins, right)
            else:
                b = bins[i]
            k3 = 3 * (b if groups is None else groups[i] * n_bins + b)
            w = 1.0 if weights is None else weights[i]
            tab[k3] += w
            tab[k3 + 1] += w * x
            tab[k3 + 2] += w * acc[i]


def group_values(values, groups, n_groups):
    """(the values grouped: group 0's in row order, then group 1's, ...; segment starts, n_groups + 1): a
    stable counting sort of the values themselves. A quickselect then reads each group's values in one
    piece (:func:`select_within_groups`) instead of gathering them through
    :func:`group_order`'s row order (1e7 random reads: the equal-mass bins of 1e7 rows in 1e3 groups took
    395 ms that way, 307 ms this way). The output is numpy's allocation (:func:`tables` says why)."""
    out = np.empty(values.shape[0])
    return out, _group_values(A.real(values), A.codes(groups), n_groups, out)


@njit(inline="always")
def _group_starts(groups, n_groups):
    """Segment starts (n_groups + 1) of a counting sort by group."""
    starts = np.zeros(n_groups + 1, dtype=np.int64)
    for i in range(groups.shape[0]):
        starts[groups[i] + 1] += 1
    for g in range(n_groups):
        starts[g + 1] += starts[g]
    return starts


@njit(cache=True)
def _group_values(values, groups, n_groups, out):
    starts = _group_starts(groups, n_groups)
    fill = starts[:-1].copy()
    for i in range(groups.shape[0]):
        g = groups[i]
        out[fill[g]] = values[i]
        fill[g] += 1
    return starts


@njit(cache=True)
def group_order(groups, n_groups):
    """Stable counting sort by group: (row order, segment starts of length n_groups + 1)."""
    starts = _group_starts(groups, n_groups)
    fill = starts[:-1].copy()
    order = np.empty(groups.shape[0], dtype=np.int64)
    for i in range(groups.shape[0]):
        g = groups[i]
        order[fill[g]] = i
        fill[g] += 1
    return order, starts


def sort_within_groups(values, order, starts):
    """values[order], each group's segment sorted ascending (the groups on several threads)."""
    out = values[order]
    run_chunks(_sort_segments, (out, starts), out.shape[0])
    return out


@njit(cache=True, nogil=True)
def _sort_segments(out, starts, taken):
    while True:
        g = take(taken)
        if g >= starts.shape[0] - 1:
            break
        out[starts[g] : starts[g + 1]].sort()


@njit(cache=True)
def count_below(x, edges, lo, hi):
    """Number of ``edges[lo:hi]`` strictly below x (branch-free; for a handful of edges)."""
    k = 0
    for j in range(lo, hi):
        k += 1 if edges[j] < x else 0
    return k


def assign_bins(values, groups, edges, offsets, qcut):
    """Bin of each row on its group's sorted edges ``edges[offsets[g]:offsets[g+1]]``.

    ``qcut=True``: pandas.qcut (right-closed, first bin includes its lower
    edge; edges include the minimum). ``qcut=False``: Kumar's scheme (edges
    exclude 0 and end at the top edge; bin = number of edges strictly below).
    """
    out = np.empty(values.shape[0], dtype=np.int32)
    run_chunks(_assign_bins, (values, groups, edges, offsets, qcut, out, n_chunks(values.shape[0], 0)),
               values.shape[0])
    return out


@njit(cache=True, nogil=True, readonly=("values", "groups", "edges", "offsets"))
def _assign_bins(values, groups, edges, offsets, qcut, out, nchunks, taken):
    n = values.shape[0]
    while True:
        c = take(taken)
        if c >= nchunks:
            break
        start, end = chunk_bounds(n, nchunks, c)
        for i in range(start, end):
            g = 0 if groups is None else groups[i]
            lo = offsets[g]
            hi = offsets[g + 1]
            x = values[i]
            # searchsorted(side="left") = the number of edges < x
            if hi - lo <= 32:  # few edges: a branch-free count
                k = count_below(x, edges, lo, hi)
            else:
                a = lo
                b = hi
                while a < b:
                    m = (a + b) >> 1
                    if edges[m] < x:
                        a = m + 1
                    else:
                        b = m
                k = a - lo
            if qcut:
                k = max(k, 1) - 1
            else:
                k = min(k, hi - lo - 1)
            out[i] = k


@njit(cache=True)
def _multi_select(seg, ks):
    """Partially sort ``seg`` in place so that seg[k] is the k-th smallest for every k in sorted unique ``ks``.

    Quickselect on all ranks at once (3-way partitions around a median-of-3 pivot,
    recursing only into the parts that hold wanted ranks): O(n log len(ks)).
    """
    m = ks.shape[0]
    stack = np.empty((64 + 2 * m, 4), dtype=np.int64)
    top = 0
    stack[0, 0], stack[0, 1], stack[0, 2], stack[0, 3] = 0, seg.shape[0], 0, m
    top = 1
    while top > 0:
        top -= 1
        lo, hi, klo, khi = stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3]
        if klo >= khi or hi - lo <= 1:
            continue
        if hi - lo <= 24:
            for i in range(lo + 1, hi):
                x = seg[i]
                j = i - 1
                while j >= lo and seg[j] > x:
                    seg[j + 1] = seg[j]
                    j -= 1
                seg[j + 1] = x
            continue
        a, b, c = seg[lo], seg[(lo + hi) >> 1], seg[hi - 1]
        pivot = max(min(a, b), min(max(a, b), c))
        lt, i, gt = lo, lo, hi
        while i < gt:
            x = seg[i]
            if x < pivot:
                seg[i] = seg[lt]
                seg[lt] = x
                lt += 1
                i += 1
            elif x > pivot:
                gt -= 1
                seg[i] = seg[gt]
                seg[gt] = x
            else:
                i += 1
        k1 = klo
        while k1 < khi and ks[k1] < lt:
            k1 += 1
        k2 = k1
        while k2 < khi and ks[k2] < gt:
            k2 += 1
        if klo < k1:
            stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3] = lo, lt, klo, k1
            top += 1
        if k2 < khi:
            stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3] = gt, hi, k2, khi
            top += 1


def select_within_groups(values, starts, ranks):
    """Order statistics per group: out[g, j] = the ranks[g, j]-th smallest value of group g, whose values are
    ``values[starts[g]:starts[g + 1]]`` (:func:`group_values`).

    A multi-rank quickselect per group (on a copy of its values) instead of a full sort; ranks are clipped
    into the group. Groups without rows get NaN. The groups run on several threads, each on its own.
    """
    out = np.full(ranks.shape, np.nan)
    run_chunks(_select_within_groups, (values, starts, ranks, out), values.shape[0])
    return out


@njit(cache=True, nogil=True)
def _select_within_groups(values, starts, ranks, out, taken):
    n_groups, m = ranks.shape
    while True:
        g = take(taken)
        if g >= n_groups:
            break
        s0 = starts[g]
        n = starts[g + 1] - s0
        if n == 0:
            continue
        seg = values[s0 : s0 + n].copy()
        ks = np.empty(m, dtype=np.int64)
        for j in range(m):
            ks[j] = min(max(ranks[g, j], 0), n - 1)
        _multi_select(seg, np.unique(ks))
        for j in range(m):
            out[g, j] = seg[ks[j]]


@njit(cache=True)
def value_range(v):
    """(min, max, sum of x - x) of a 1-d array; the last is NaN when some x is NaN or infinite.

    Four independent lanes: a single running min/max is a latency-bound chain.
    """
    n = v.shape[0]
    a0 = a1 = a2 = a3 = np.inf
    b0 = b1 = b2 = b3 = -np.inf
    z0 = z1 = 0.0
    m = n - n % 4
    for i in range(0, m, 4):
        x0, x1, x2, x3 = v[i], v[i + 1], v[i + 2], v[i + 3]
        a0 = x0 if x0 < a0 else a0
        a1 = x1 if x1 < a1 else a1
        a2 = x2 if x2 < a2 else a2
        a3 = x3 if x3 < a3 else a3
        b0 = x0 if x0 > b0 else b0
        b1 = x1 if x1 > b1 else b1
        b2 = x2 if x2 > b2 else b2
        b3 = x3 if x3 > b3 else b3
        z0 += (x0 - x0) + (x1 - x1)
        z1 += (x2 - x2) + (x3 - x3)
    for i in range(m, n):
        x = v[i]
        a0 = x if x < a0 else a0
        b0 = x if x > b0 else b0
        z0 += x - x
    return min(min(a0, a1), min(a2, a3)), max(max(b0, b1), max(b2, b3)), z0 + z1


def _minmax(values, nchunks):
    lo = np.full(nchunks, np.inf)
    hi = np.full(nchunks, -np.inf)
    run_chunks(_chunk_ranges, (values, lo, hi), values.shape[0])
    return lo.min(), hi.max()


@njit(cache=True, nogil=True, readonly=("values",))
def _chunk_ranges(values, lo, hi, taken):
    n = values.shape[0]
    nchunks = lo.shape[0]
    step = (n + nchunks - 1) // nchunks
    while True:
        c = take(taken)
        if c >= nchunks:
            break
        lo[c], hi[c], _ = value_range(values[c * step : min(n, (c + 1) * step)])


@njit(cache=True)
def cell_of(x, lo, scale, n_cells):
    """The cell of x on a grid of n_cells over [lo, lo + n_cells / scale] (the ends clipped in)."""
    k = int((x - lo) * scale)
    return min(max(k, 0), n_cells - 1)


def _cell_histogram(values, lo, scale, n_cells, nchunks):
    part = np.zeros((nchunks, n_cells), dtype=np.int64)
    run_chunks(_cell_counts, (values, lo, scale, part), values.shape[0])
    return part.sum(axis=0)


@njit(cache=True, nogil=True, readonly=("values",))
def _cell_counts(values, lo, scale, part, taken):
    n = values.shape[0]
    nchunks, n_cells = part.shape
    step = (n + nchunks - 1) // nchunks
    while True:
        c = take(taken)
        if c >= nchunks:
            break
        row = part[c]
        for i in range(c * step, min(n, (c + 1) * step)):
            row[cell_of(values[i], lo, scale, n_cells)] += 1


@njit(cache=True, readonly=("values",))
def _gather_cells(values, lo, scale, n_cells, wanted, slot_start, total):
    """Values of the wanted cells, each cell's values contiguous (slot_start gives where)."""
    buf = np.empty(total)
    fill = slot_start.copy()
    for i in range(values.shape[0]):
        w = wanted[cell_of(values[i], lo, scale, n_cells)]
        if w >= 0:
            buf[fill[w]] = values[i]
            fill[w] += 1
    return buf


def select_1d(values: np.ndarray, ranks: np.ndarray, n_cells: int = 1 << 14) -> np.ndarray:
    """Exact order statistics of one array at ``ranks`` (any shape), in two passes.

    A fixed-grid histogram of the values locates the cells holding the wanted
    ranks; only those cells' values are gathered and sorted. The cell index is
    monotone in the value, so the k-th smallest value is the (k - before)-th of
    its cell: exact, O(n) plus the sort of a few cells (heavily tied data falls
    back to sorting the crowded cell).
    """
    n = values.shape[0]
    nch = int(min(32, max(1, n // (1 << 16))))
    lo, hi = _minmax(values, nch)
    if not hi > lo:
        return np.full(ranks.shape, lo)
    scale = n_cells / (hi - lo)
    hist = _cell_histogram(values, lo, scale, n_cells, nch)
    cum = np.concatenate(([0], np.cumsum(hist)))
    r = np.clip(ranks.reshape(-1), 0, n - 1)
    cell = np.searchsorted(cum, r, side="right") - 1
    cells = np.unique(cell)
    wanted = np.full(n_cells, -1, dtype=np.int64)
    wanted[cells] = np.arange(cells.size)
    sizes = hist[cells]
    slot_start = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    buf = _gather_cells(values, lo, scale, n_cells, wanted, slot_start, int(sizes.sum()))
    for j in range(cells.size):
        buf[slot_start[j] : slot_start[j] + sizes[j]].sort()
    out = buf[slot_start[wanted[cell]] + (r - cum[cell])]
    return out.reshape(ranks.shape)


@njit(cache=True)
def fixed_to_float(a, b, c, exp):
    """(a * 2^64 + b * 2^32 + c) * 2^exp correctly rounded to float64 (limbs b, c >= 0 carry into the limb
    above; a >= 0): how the LazyFrame engine's exact Int128 sums become float64 (calframe/engines/streaming/streamed.py).

    The integer's top 64 bits, with a sticky bit for any lower one, convert with one rounding
    (to nearest even), then scale by a power of two.
    """
    b += c >> 32
    a += b >> 32
    m = (np.uint64(b & 0xFFFFFFFF) << np.uint64(32)) | np.uint64(c & 0xFFFFFFFF)
    if a == 0:
        return math.ldexp(float(m), exp)
    k = math.frexp(float(a))[1]  # the bit length of a, or one more when float(a) rounded up to 2^k
    if (a >> (k - 1)) == 0:
        k -= 1
    top = (np.uint64(a) << np.uint64(64 - k)) | (m >> np.uint64(k))
    if (m & ((np.uint64(1) << np.uint64(k)) - np.uint64(1))) != np.uint64(0):
        top |= np.uint64(1)
    return math.ldexp(float(top), exp + k)


@njit(cache=True)
def fixed_to_floats(hi, lo, exp):
    """fixed_to_float of each integer hi * 2^64 + lo (int64 hi >= 0, uint64 lo), times 2^exp[i]."""
    out = np.empty(hi.shape[0])
    for i in range(hi.shape[0]):
        m = lo[i]
        out[i] = fixed_to_float(hi[i], np.int64(m >> np.uint64(32)), np.int64(m & np.uint64(0xFFFFFFFF)), exp[i])
    return out
