"""uu-sml's data-dependent binning, level by level: one pass over the rows per tree level, on several threads.

``vector._split_group`` grows the tree node by node on one thread, replaying
numpy's float operations exactly (``numpy.var`` of the node, ``numpy.mean`` of
the split coordinate). That costs four passes over a node's rows. Here every
level of every group's tree is split in one parallel pass, and numpy's exact
figures are computed only where they can change the outcome:

- Each node's per-coordinate count, sum and sum of squares come from the pass
  that created it (rows in chunks; the chunk count depends on sizes only, so
  the result is the same for any number of threads).
- The split coordinate is the largest variance, estimated as S2/n - (S1/n)^2.
  With every |x| <= M, this estimate and numpy's two-pass variance differ by
  at most ``_var_tol(n, M)`` (rounding error bounds for running sums of n
  terms). When the two largest estimates are closer than twice that, the
  node's variances are recomputed as numpy does (rows in order, two passes),
  and numpy's first-maximum rule picks the coordinate.
- The threshold is estimated as S1/n; it and numpy's pairwise mean differ by
  at most ``_mean_tol(n, M)``. A row further than that from the estimate is
  on the same side of both; if any row of a node is closer, the node's
  threshold is recomputed as numpy's pairwise mean over its rows in order and
  its rows are split again.

So the bins are those of ``vector._split_group`` row for row (the tests check
it against the reference algorithm on numpy), at the cost of about one pass
over the data per level instead of four per node.

The tree also carries each node's label counts when given the labels'
positions, so ``level_sums`` hands back every leaf's [n, sum x, label
counts] without another pass. The passes prefetch rows ``AHEAD`` places
ahead (``prefetch.py``): measured here, that halves a level's time, as the
hardware alone keeps few row loads in flight.

The passes are plain ``nogil`` kernels whose calls share out the chunks
(:func:`calframe._kernels.chunks.run_chunks`), each chunk summed into its own
partial table, the tables added in chunk order after: not ``parallel=True``,
which took 13 s and 10 s to compile these two passes.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from .chunks import in_chunk_order, run_chunks, take
from .prefetch import AHEAD, prefetch_row
from .vector import numpy_argmax_var, numpy_mean

_EPS = np.finfo(np.float64).eps
_BLOCK = 256  # split_pass sums the rows it sends to a summed child this many list places at a time
#: a row of m values counts as this many rows per value when the threads are chosen
#: (:func:`calframe._kernels.chunks.pass_threads`): a row here is m sums and squares, not one
_ROW_COST = 2


def _direct_errors(cnt: np.ndarray, big: float) -> tuple[np.ndarray, np.ndarray]:
    """Bounds on the rounding error of S1 and S2 summed directly over cnt rows in <= 64 chunks (|x| <= big).

    Running sums of k terms err by at most (k - 1) u sum|x| (u = eps / 2); the
    chunk partials add at most 64 u sum|x|. Twice that, to be safe.
    """
    e = (cnt + 64.0) * cnt * _EPS
    return e * big, e * big * big


def _tolerances(cnt, e1, e2, big):
    """(threshold tolerance, variance tolerance) of nodes with these counts and error bounds.

    |S1/n - numpy.mean| <= e1/n + (pairwise summation and division error, at
    most (log2 n + 10) eps big); |S2/n - (S1/n)^2 - numpy.var| <= e2/n +
    2 big e1/n + (e1/n)^2 + (numpy's two-pass error, at most (4n + 16) eps
    big^2) + the final roundings. Both are taken with a margin (factor 2,
    140 and 8n + 64 in place of 10 and 4n + 16).
    """
    m1 = e1 / cnt
    t_mean = 2.0 * (m1 + (np.log2(cnt) + 140.0) * _EPS * big)
    t_var = e2 / cnt + 2.0 * big * m1 + m1 * m1 + (8.0 * cnt + 64.0) * _EPS * big * big
    return t_mean, t_var


def root_stats(g, ypos, groups, n_groups, nchunks, find_big, nid):
    """Per group [n, sum x_0..m-1, sum x_0^2..x_m-1^2, label counts 0..m-1] (n_groups, 1 + 3m) and the largest |x|.

    ``ypos`` holds each row's label position in [0, m), or nothing (no label counts).
    With ``find_big`` False the largest |x| is not looked for (0 is returned):
    the caller knows a bound. Each row's node id, its group's root, is
    written to ``nid`` (written before it is read: memory from ``np.empty`` is
    mapped to the shared zero page until written, and a threaded
    read-then-write of it costs a page fault and a TLB shootdown per page,
    ~10 ms per 4 MB on a 2-core VM). Chunk c's sums go to ``part[c]``, added
    in chunk order after, so the bits do not depend on the threads.
    """
    n, m = g.shape
    part = np.zeros((nchunks, n_groups, 1 + 3 * m))
    bigs = np.zeros((nchunks, m))
    run_chunks(_root_stats, (g, ypos, groups, n_groups, nchunks, find_big, nid, part, bigs), _ROW_COST * n * m)
    return in_chunk_order(part), bigs.max()


@njit(cache=True, nogil=True, readonly=("g",))
def _root_stats(g, ypos, groups, n_groups, nchunks, find_big, nid, part, bigs, taken):
    """:func:`root_stats`, one thread's share of the chunks: chunk c's sums into ``part[c]``, its largest
    |x| per coordinate into ``bigs[c]``. The merged layout of ``part``: [n, sum x, sum x^2, label counts]."""
    n, m = g.shape
    labels = ypos.shape[0] > 0
    step = (n + nchunks - 1) // nchunks
    big = np.zeros(m)
    a = np.zeros(m)
    b = np.zeros(m)
    cy = np.zeros(m)
    while True:
        c = take(taken)
        if c >= nchunks:
            break
        lo = c * step
        hi = min(n, lo + step)
        big[:] = 0.0
        tab = part[c]
        if groups is None:  # local sums, apart from g: the compiler keeps them out of g's way (vectorised)
            a[:] = 0.0
            b[:] = 0.0
            for i in range(lo, hi):
                if i + AHEAD < hi:
                    prefetch_row(g, i + AHEAD)
                for j in range(m):
                    x = g[i, j]
                    a[j] += x
                    b[j] += x * x
                    if find_big:
                        ax = abs(x)
                        big[j] = ax if ax > big[j] else big[j]  # a plain select vectorises; max() does not
            tab[0, 0] = hi - lo
            for j in range(m):
                tab[0, 1 + j] = a[j]
                tab[0, 1 + m + j] = b[j]
            nid[lo:hi] = 0
            if labels:
                cy[:] = 0.0  # a local table: twice as fast as adding into the partial table
                for i in range(lo, hi):
                    cy[ypos[i]] += 1.0
                for j in range(m):
                    tab[0, 1 + 2 * m + j] = cy[j]
        else:
            for i in range(lo, hi):
                if i + AHEAD < hi:
                    prefetch_row(g, i + AHEAD)
                k = groups[i]
                nid[i] = k
                tab[k, 0] += 1.0
                for j in range(m):
                    x = g[i, j]
                    tab[k, 1 + j] += x
                    tab[k, 1 + m + j] += x * x
                    if find_big:
                        ax = abs(x)
                        big[j] = ax if ax > big[j] else big[j]
                if labels:
                    tab[k, 1 + 2 * m + ypos[i]] += 1.0
        for j in range(m):
            bigs[c, j] = big[j]


def split_pass(g, ypos, nid, active, n_active, listed, slot_of, cols, thr, tol, take_high, first_child, n_slots):
    """Split the rows of the frontier nodes (``slot_of[node] >= 0``) at ``g[:, cols[slot]] < thr[slot]``.

    Rows move to node ``first_child + 2 slot`` (low) or ``+ 1`` (high).
    Returns, per slot, [n, sum x, sum x^2, label counts] of one child (label
    counts only when ``ypos`` has rows), the high one where
    ``take_high[slot]`` else the low one (the other child's are the parent's
    minus these: summing the smaller side saves work), and whether a row lay
    within ``tol`` of the threshold.

    Only rows listed in ``active`` are visited: chunk c's list is
    ``active[c * step : c * step + n_active[c]]`` (step = ceil(n / chunks)),
    rows in order (with ``listed`` False, the chunk's rows are all of
    ``lo .. lo + n_active[c]`` and the list is written, not read: the levels
    whose frontier holds every row). Rows that are no longer in the frontier leave the list
    (it shrinks in place), so a level costs what its frontier holds. The row
    ``AHEAD`` places down the list is prefetched, so scattered rows load in
    parallel; the rows of each ``_BLOCK`` of the list that go to summed
    children are summed after the block, slot by slot, while still in cache.
    Chunk c's sums go to its own partial table, the tables added in chunk
    order after (the threads are those for the rows still listed).
    """
    m = g.shape[1]
    nchunks = n_active.shape[0]
    part = np.zeros((nchunks, n_slots, 1 + 3 * m))
    close = np.zeros((nchunks, n_slots), dtype=np.uint8)
    work = _ROW_COST * int(n_active.sum()) * m
    run_chunks(_split_pass, (
        g, ypos, nid, active, n_active, listed, slot_of, cols, thr, tol, take_high, first_child, n_slots, part, close,
    ), work)
    return in_chunk_order(part), close.max(axis=0) if nchunks else np.zeros(n_slots, dtype=np.uint8)


@njit(cache=True, nogil=True, readonly=("g",))
def _split_pass(
    g, ypos, nid, active, n_active, listed, slot_of, cols, thr, tol, take_high, first_child, n_slots, part, close,
    taken,
):
    """:func:`split_pass`, one thread's share of the chunks: chunk c's sums into ``part[c]``
    ([n, sum x, sum x^2, label counts] per slot), its near-threshold flags into ``close[c]``."""
    n, m = g.shape
    labels = ypos.shape[0] > 0
    nchunks = n_active.shape[0]
    step = (n + nchunks - 1) // nchunks
    # a block's rows to sum, per slot, then summed slot by slot into local sums the
    # compiler keeps in registers (one memory store per row and value costs more)
    todo = np.empty((n_slots, _BLOCK), dtype=np.int64)
    k = np.zeros(n_slots, dtype=np.int64)
    a = np.zeros(m)
    b = np.zeros(m)
    while True:
        c = take(taken)
        if c >= nchunks:
            break
        lo = c * step
        w = lo
        end = lo + n_active[c]
        tab = part[c]
        for b0 in range(lo, end, _BLOCK):
            b1 = min(end, b0 + _BLOCK)
            k[:] = 0
            for r in range(b0, b1):
                if r + AHEAD < end:  # the rows are scattered: start loading one further down the list
                    prefetch_row(g, active[r + AHEAD] if listed else r + AHEAD)
                i = active[r] if listed else r
                f = slot_of[nid[i]]
                if f < 0:
                    continue
                active[w] = i
                w += 1
                x = g[i, cols[f]]
                t = thr[f]
                if not abs(x - t) > tol[f]:
                    close[c, f] = 1
                high = x >= t
                nid[i] = first_child + 2 * f + (1 if high else 0)
                todo[f, k[f]] = i
                k[f] += 1 if high == take_high[f] else 0
            for f in range(n_slots):
                kf = k[f]
                if kf == 0:
                    continue
                tab[f, 0] += kf
                for j in range(m):
                    a[j] = tab[f, 1 + j]
                    b[j] = tab[f, 1 + m + j]
                for q in range(kf):  # rows in order: the same additions as row by row
                    i = todo[f, q]
                    for j in range(m):
                        v = g[i, j]
                        a[j] += v
                        b[j] += v * v
                    if labels:
                        tab[f, 1 + 2 * m + ypos[i]] += 1.0
                for j in range(m):
                    tab[f, 1 + j] = a[j]
                    tab[f, 1 + m + j] = b[j]
        n_active[c] = w - lo


@njit(cache=True)
def exact_split_columns(g, nid, slot_of, n_slots):
    """``numpy.argmax(numpy.var(x, axis=0))`` of the nodes with ``slot_of[node] >= 0``, rows in order."""
    n, m = g.shape
    cnt = np.zeros(n_slots)
    mean = np.zeros((n_slots, m))
    var = np.zeros((n_slots, m))
    for i in range(n):
        f = slot_of[nid[i]]
        if f >= 0:
            cnt[f] += 1.0
            for j in range(m):
                mean[f, j] += g[i, j]
    for f in range(n_slots):
        for j in range(m):
            mean[f, j] = mean[f, j] / cnt[f]
    for i in range(n):
        f = slot_of[nid[i]]
        if f >= 0:
            for j in range(m):
                d = g[i, j] - mean[f, j]
                var[f, j] += d * d
    cols = np.zeros(n_slots, dtype=np.int64)
    for f in range(n_slots):
        cols[f] = numpy_argmax_var(var[f], cnt[f])
    return cols


@njit(cache=True)
def exact_resplit(g, ypos, nid, low, col):
    """Split the rows now in nodes ``low`` and ``low + 1`` again at numpy.mean of coordinate ``col`` (rows in order).

    Returns the two children's [n, sum x, sum x^2, label counts], recomputed.
    """
    n, m = g.shape
    width = 1 + 3 * m
    rows = np.empty(n, dtype=np.int64)
    k = 0
    for i in range(n):
        if nid[i] == low or nid[i] == low + 1:
            rows[k] = i
            k += 1
    vals = np.empty(k)
    for r in range(k):
        vals[r] = g[rows[r], col]
    t = numpy_mean(vals, k)
    out = np.zeros((2, width))
    for r in range(k):
        i = rows[r]
        s = 0 if vals[r] < t else 1
        nid[i] = low + s
        out[s, 0] += 1.0
        for j in range(m):
            v = g[i, j]
            out[s, 1 + j] += v
            out[s, 1 + m + j] += v * v
        if ypos.shape[0] > 0:
            out[s, 1 + 2 * m + ypos[i]] += 1.0
    return out


def _grow(
    g: np.ndarray, ypos: np.ndarray, groups: np.ndarray | None, n_groups: int, min_sizes: np.ndarray, nchunks: int,
    bound: float | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Grow every group's tree level by level -> (row node ids, node -> pre-order leaf id or -1, leaves per group,
    node stats [n, sum x, sum x^2, label counts], node -> group); None if some value is not finite.

    ``bound``: a known bound on every |x| (1 for probabilities), else the largest |x| is found.
    """
    n, m = g.shape
    nid = np.empty(n, dtype=np.int32)  # written by root_stats
    stats, big = root_stats(g, ypos, groups, n_groups, nchunks, bound is None, nid)
    if not (np.isfinite(big) and np.isfinite(stats).all()):  # (a NaN or inf in g makes a sum so)
        return None
    big = max(float(big if bound is None else bound), np.finfo(np.float64).tiny)
    # the rows still in the frontier, per chunk (see split_pass)
    active = np.empty(n, dtype=np.int32 if n < 2**31 else np.int64)  # filled by the first pass
    written = False
    step = -(-n // nchunks)
    n_active = np.array([max(0, min(n, (c + 1) * step) - c * step) for c in range(nchunks)], dtype=np.int64)
    # tree: node -> group, count, first child (-1: none)
    node_group = list(range(n_groups))
    node_stats = list(stats)
    child: list[int] = [-1] * n_groups
    frontier = [k for k in range(n_groups) if 0 < stats[k, 0] and stats[k, 0] >= min_sizes[k]]
    fstats = stats[frontier]
    e1, e2 = _direct_errors(fstats[:, 0], big)
    # which child to sum (the other is the parent minus it): the high one at the root, as
    # probabilities pile up near 0; below, the side that was the smaller one a level up
    take_high = np.ones(len(frontier), dtype=np.uint8)
    while frontier:
        n_slots = len(frontier)
        cnt = fstats[:, 0]
        t_mean, t_var = _tolerances(cnt, e1, e2, big)
        mean = fstats[:, 1 : 1 + m] / cnt[:, None]
        var = fstats[:, 1 + m : 1 + 2 * m] / cnt[:, None] - mean * mean
        cols = np.argmax(var, axis=1).astype(np.int64)
        slot_of = np.full(len(node_stats), -1, dtype=np.int64)
        if m > 1:
            top2 = np.partition(var, m - 2, axis=1)[:, m - 2 :]
            unsure = np.flatnonzero(~(top2[:, 1] - top2[:, 0] > 2.0 * t_var))
            if unsure.size:  # the two largest variances are too close to call: numpy's own figures
                slot_of[np.asarray(frontier)[unsure]] = np.arange(unsure.size)
                cols[unsure] = exact_split_columns(g, nid, slot_of, unsure.size)
                slot_of[:] = -1
        slot_of[frontier] = np.arange(n_slots)
        thr = fstats[np.arange(n_slots), 1 + cols] / cnt
        first = len(node_stats)
        # while the frontier holds every row, visit them in order rather than through the list
        listed = written and cnt.sum() < n
        summed, amb = split_pass(g, ypos, nid, active, n_active, listed, slot_of, cols, thr, t_mean, take_high, first, n_slots)
        written = True
        rows = 2 * np.arange(n_slots)
        direct = rows + take_high
        other = rows + 1 - take_high
        kids = np.empty((2 * n_slots, 1 + 3 * m))
        kids[direct] = summed
        kids[other] = fstats - summed
        kids[other, 0] = cnt - summed[:, 0]  # counts are exact (label counts too: whole numbers)
        d_e1, d_e2 = _direct_errors(summed[:, 0], big)
        k_e1 = np.empty(2 * n_slots)
        k_e2 = np.empty(2 * n_slots)
        k_e1[direct], k_e2[direct] = d_e1, d_e2
        # parent minus the summed child: both errors, plus the subtraction's rounding
        k_e1[other] = e1 + d_e1 + 2.0 * _EPS * cnt * big
        k_e2[other] = e2 + d_e2 + 2.0 * _EPS * cnt * big * big
        for f in np.flatnonzero(amb):  # a row lies too close to the threshold to call: numpy's own mean
            kids[2 * f : 2 * f + 2] = exact_resplit(g, ypos, nid, first + 2 * f, int(cols[f]))
            k_e1[2 * f : 2 * f + 2], k_e2[2 * f : 2 * f + 2] = _direct_errors(kids[2 * f : 2 * f + 2, 0], big)
        # next level: sum the side that was the smaller one here
        k_take = np.empty(2 * n_slots, dtype=np.uint8)
        k_take[0::2] = k_take[1::2] = kids[1::2, 0] < kids[0::2, 0]
        new_frontier = []
        for f, node in enumerate(frontier):
            grp = node_group[node]
            child[node] = first + 2 * f
            # a split with an empty side does not happen: the node stays one leaf (its non-empty child)
            degenerate = kids[2 * f, 0] == 0 or kids[2 * f + 1, 0] == 0
            for s in (0, 1):
                node_group.append(grp)
                node_stats.append(kids[2 * f + s])
                child.append(-1)
                if not degenerate and kids[2 * f + s, 0] >= min_sizes[grp]:
                    new_frontier.append(first + 2 * f + s)
        pick = np.asarray(new_frontier, dtype=np.int64) - first
        fstats, e1, e2, take_high = kids[pick], k_e1[pick], k_e2[pick], k_take[pick]
        frontier = new_frontier
    # leaves numbered in pre-order per group, the low child first
    leaf = np.full(len(node_stats), -1, dtype=np.int32)
    n_leaves = np.zeros(n_groups, dtype=np.int64)
    for root in range(n_groups):
        stack = [root]
        k = 0
        while stack:
            node = stack.pop()
            if child[node] >= 0:
                stack.append(child[node] + 1)
                stack.append(child[node])
            elif node_stats[node][0] > 0:
                leaf[node] = k
                k += 1
        n_leaves[root] = k
    return nid, leaf, n_leaves, np.asarray(node_stats), np.asarray(node_group, dtype=np.int64)


def level_bins(
    g: np.ndarray, groups: np.ndarray | None, n_groups: int, min_sizes: np.ndarray, nchunks: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """Pre-order leaf ids per group and leaves per group, as ``vector.adaptive_bins`` (split at the mean).

    None if some value is not finite (the caller then uses the node-by-node kernel).
    """
    tree = _grow(g, np.empty(0, dtype=np.int32), groups, n_groups, min_sizes, nchunks, None)
    if tree is None:
        return None
    nid, leaf, n_leaves, _, _ = tree
    return leaf[nid], n_leaves


def level_sums(
    g: np.ndarray, ypos: np.ndarray, groups: np.ndarray | None, n_groups: int, min_sizes: np.ndarray, nchunks: int,
    bound: float | None = None,
) -> tuple[np.ndarray, int] | None:
    """The bins of ``level_bins`` summed as ``accumulate_vector`` sums them, without a pass of its own.

    ``ypos``: each row's label position in [0, m) (a one-hot y'). Returns
    (per (group, leaf) [n, sum g'_0..m-1, sum y'_0..m-1], largest number of
    leaves of a group), or None where ``level_bins`` gives None. The tree
    already holds every leaf's count, sums and label counts: a leaf's sums are
    either summed over its rows or its parent's minus its sibling's, so they
    can differ from summing its rows in order by a few units in the last place
    of the parent's sums (label counts and n are exact). ``bound``: see ``_grow``.
    """
    tree = _grow(g, ypos, groups, n_groups, min_sizes, nchunks, bound)
    if tree is None:
        return None
    _, leaf, n_leaves, stats, node_group = tree
    m = g.shape[1]
    n_bins = max(int(n_leaves.max()), 1)
    out = np.zeros((n_groups, n_bins, 1 + 2 * m))
    nodes = np.flatnonzero(leaf >= 0)
    at = (node_group[nodes], leaf[nodes])
    out[at[0], at[1], : 1 + m] = stats[nodes, : 1 + m]
    out[at[0], at[1], 1 + m :] = stats[nodes, 1 + 2 * m :]
    return out, n_bins
