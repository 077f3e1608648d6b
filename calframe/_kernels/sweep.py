"""The monotonic sweep of equal-mass bin counts (Roelofs et al. 2022, ECE_sweep), per group.

Rows come sorted by (group, value); a group of n rows split into b bins puts the row of rank i in bin
``min(b - 1, floor((i / n) * b))``, computed in float64 as caltrain's ``em_monotonic_sweep`` does (the
float product differs from the integer ``i * b // n`` for some n and b, e.g. n = 44, b = 22, i = 30).
``calframe.binning.sweep_bins`` is the caller; docs/spec.md section 1.3 states the rule.

Each group is worked on its own, so the groups are shared out among threads a group at a time
(:func:`calframe._kernels.chunks.run_chunks`; plain ``nogil`` kernels, not ``parallel=True``, which costs
seconds more to compile) and the results do not depend on the threads.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from .chunks import ROWS_PER_THREAD, run_chunks, take

#: a row of :func:`sweep_assign` (a float division and floor, a scattered store) costs several times a row of a
#: summing pass: its threads are chosen (:func:`calframe._kernels.chunks.pass_threads`) as for this many times
#: the rows. :func:`sweep_counts` counts a row once: its sweep mostly stops after a few bin counts (at 1e6 rows
#: in 1,000 groups it took 0.4 to 1.5 ms, less than waking a second thread gains)
ROW_COST = 4


def _work(starts, cost):
    """The work of the groups ``starts`` delimits, in rows of a summing pass (``cost`` per row), capped so
    that no more threads run than there are groups (a group is one thread's work)."""
    n_groups = starts.shape[0] - 1
    return min(cost * int(starts[-1] - starts[0]), n_groups * ROWS_PER_THREAD) if n_groups > 0 else 0


@njit(inline="always")
def rank_bin(i, n, b):
    """The bin of the row of rank ``i`` (0-based) among ``n`` rows split into ``b``: caltrain's float rule."""
    return min(b - 1, int(np.floor((i / n) * b)))


@njit(inline="always")
def bin_start(k, n, b):
    """The first rank of bin ``k`` (``n`` for k = b): the integer ceil(k * n / b), moved to where
    :func:`rank_bin` (monotone in i) crosses k."""
    if k >= b:
        return n
    i = (k * n + b - 1) // b
    while i < n and rank_bin(i, n, b) < k:
        i += 1
    while i > 0 and rank_bin(i - 1, n, b) >= k:
        i -= 1
    return i


@njit(inline="always")
def _monotone(csum, lo, n, b):
    """Whether the mean of ``acc`` never decreases from one non-empty bin to the next (``csum``: prefix sums of
    the sorted acc; the group's rows are ``lo .. lo + n``). caltrain's test: ``mean < previous mean`` fails."""
    last = -np.inf
    s = 0
    for k in range(b):
        e = bin_start(k + 1, n, b)
        if e > s:
            m = (csum[lo + e] - csum[lo + s]) / (e - s)
            if m < last:
                return False
            last = m
        s = e
    return True


def sweep_counts(csum, starts):
    """Per group: the bin count the sweep keeps. b = 2, 3, ..., n - 1 in turn; the first b whose bin means are
    not monotone stops the sweep and b - 1 is kept (1 if b = 2); n - 1 if none stops it, 1 for n <= 2.
    ``csum``: prefix sums (length n_rows + 1) of acc sorted by (group, value); ``starts``: group offsets."""
    out = np.ones(starts.shape[0] - 1, dtype=np.int64)
    run_chunks(_sweep_counts, (csum, starts, out), _work(starts, 1))
    return out


@njit(cache=True, nogil=True)
def _sweep_counts(csum, starts, out, taken):
    """:func:`sweep_counts`, one thread's share of the groups."""
    while True:
        g = take(taken)
        if g >= starts.shape[0] - 1:
            break
        lo = starts[g]
        n = starts[g + 1] - lo
        chosen = 1
        for b in range(2, n):
            if not _monotone(csum, lo, n, b):
                break
            chosen = b
        out[g] = chosen


def sweep_assign(values_sorted, order, starts, counts, offsets):
    """Bin ids (int32, in row order) and per-group edges for the chosen counts.

    Group g's ``counts[g]`` edges go to ``edges[offsets[g]:offsets[g + 1]]``: the inner edges at the midpoint of
    the last value of one bin and the first of the next, then ``max(1, top value)`` (equal_mass's edge rule,
    for the reliability table's ``lower`` / ``upper``; the bins themselves are by rank).
    """
    n_groups = starts.shape[0] - 1
    ids = np.empty(order.shape[0], dtype=np.int32)
    edges = np.empty(offsets[n_groups], dtype=np.float64)
    run_chunks(_sweep_assign, (values_sorted, order, starts, counts, offsets, ids, edges), _work(starts, ROW_COST))
    return ids, edges


@njit(cache=True, nogil=True)
def _sweep_assign(values_sorted, order, starts, counts, offsets, ids, edges, taken):
    """:func:`sweep_assign`, one thread's share of the groups."""
    while True:
        g = take(taken)
        if g >= starts.shape[0] - 1:
            break
        lo = starts[g]
        n = starts[g + 1] - lo
        b = counts[g]
        for j in range(n):
            ids[order[lo + j]] = rank_bin(j, n, b)
        for k in range(1, b):
            s = lo + bin_start(k, n, b)
            edges[offsets[g] + k - 1] = (values_sorted[s - 1] + values_sorted[s]) / 2.0
        edges[offsets[g] + b - 1] = max(1.0, values_sorted[lo + n - 1])
