"""Per-bin sums over pandas.qcut bins of one variable, without binning every row.

``vece_rank`` bins dozens of variables by their own quantiles and needs, per
bin, only the row count and the sum of a per-row value ``d`` (= acc - conf:
VECE = sum_b |sum d| / N, VMCE = max_b |sum d| / n_b). One variable takes
three sequential passes on one thread (``nogil``, so the caller runs several
variables at once):

1. min and max;
2. a histogram on a fixed grid of cells over [min, max]: per cell the count,
   the sum of d and one of its values;
3. the values and d of the few cells that hold the order statistics the
   quantile edges are interpolated from (numpy's ``linear`` method).

A cell holding none of those order statistics lies strictly between two
edges (the edge values lie between consecutive order statistics, and the cell
index is monotone in the value), so its count and sum go to one bin whole,
found from its stored value. Only the gathered rows are binned one by one,
with pandas.qcut's rule (right-closed bins, the first one including the
minimum). Edges and bins are the same as ``binning.bin_values`` row for row;
only the order of the additions differs.
"""

from __future__ import annotations

import numpy as np
from .._jit import njit  # cached kernels: keyed, locked disk cache (calframe._kernel_cache)

from .accumulate import cell_of, count_below, value_range

#: histogram cells per variable
N_CELLS = 1 << 12


@njit(nogil=True, cache=True, readonly=("v",))
def qcut_bin_sums(v, d, prev_i, next_i, gamma):
    """(count, sum d) per bin of pandas.qcut(v) at the levels whose ranks/weights are given.

    ``prev_i``, ``next_i``, ``gamma``: numpy.quantile's two order statistics and
    weight per level (``binning.qcut_order_statistics``). Returns (counts, sums,
    n_bins, n_bad): n_bins = 0 when v is constant (no bins to speak of); n_bad
    counts NaN and infinite values, and when it is not 0 nothing else is computed.
    """
    n = v.shape[0]
    n_cells = N_CELLS
    n_lev = prev_i.shape[0]
    counts = np.zeros(n_lev, dtype=np.int64)
    sums = np.zeros(n_lev)
    lo, hi, z = value_range(v)
    n_bad = 0
    if z != 0.0:  # x - x is NaN for NaN and infinite x
        for i in range(n):
            n_bad += 1 if v[i] - v[i] != 0.0 else 0
    if n_bad or not hi > lo:
        return counts, sums, 0, n_bad
    scale = n_cells / (hi - lo)
    cnt = np.zeros(n_cells, dtype=np.int64)
    sd = np.zeros(n_cells)
    cell = np.empty(n, dtype=np.uint16)
    for i in range(n):
        k = cell_of(v[i], lo, scale, n_cells)
        cell[i] = k
        cnt[k] += 1
        sd[k] += d[i]
    cum = np.zeros(n_cells + 1, dtype=np.int64)
    for k in range(n_cells):
        cum[k + 1] = cum[k] + cnt[k]
    # the cells holding the wanted order statistics, each given a slot of a gather buffer
    ranks = np.concatenate((prev_i, next_i))
    rank_cell = np.searchsorted(cum, ranks, side="right") - 1
    slot = np.full(n_cells, -1, dtype=np.int64)
    n_slots = 0
    for r in range(ranks.shape[0]):
        if slot[rank_cell[r]] < 0:
            slot[rank_cell[r]] = n_slots
            n_slots += 1
    slot_cell = np.empty(n_slots, dtype=np.int64)
    for k in range(n_cells):
        if slot[k] >= 0:
            slot_cell[slot[k]] = k
    start = np.zeros(n_slots + 1, dtype=np.int64)
    for s in range(n_slots):
        start[s + 1] = start[s] + cnt[slot_cell[s]]
    gv = np.empty(start[n_slots])
    gd = np.empty(start[n_slots])
    fill = start[:n_slots].copy()
    for i in range(n):
        s = slot[cell[i]]
        if s >= 0:
            gv[fill[s]] = v[i]
            gd[fill[s]] = d[i]
            fill[s] += 1
    # order statistics: the rank within its cell, in the cell's sorted values
    sorted_v = gv.copy()
    for s in range(n_slots):
        seg = sorted_v[start[s] : start[s + 1]]
        if seg.shape[0] > 1 and seg.min() < seg.max():
            seg.sort()
    stat = np.empty(ranks.shape[0])
    for r in range(ranks.shape[0]):
        k = rank_cell[r]
        stat[r] = sorted_v[start[slot[k]] + ranks[r] - cum[k]]
    # numpy's _lerp, then pandas' duplicates="drop"; each kept edge remembers its upper order statistic's rank
    edges = np.empty(n_lev)
    edge_next = np.empty(n_lev, dtype=np.int64)
    n_edges = 0
    for j in range(n_lev):
        a = stat[j]
        b = stat[n_lev + j]
        diff = b - a
        e = b - diff * (1 - gamma[j]) if gamma[j] >= 0.5 else a + diff * gamma[j]
        if n_edges == 0 or e != edges[n_edges - 1]:
            edges[n_edges] = e
            edge_next[n_edges] = next_i[j]
            n_edges += 1
    # a cell holding no order statistic lies strictly between two edges: above edge j
    # exactly when its ranks come after edge j's upper order statistic
    for k in range(n_cells):
        if cnt[k] > 0 and slot[k] < 0:
            above = 0
            for j in range(n_edges):
                above += 1 if cum[k] > edge_next[j] else 0
            b = max(above, 1) - 1
            counts[b] += cnt[k]
            sums[b] += sd[k]
    for r in range(start[n_slots]):  # pandas.qcut: right-closed, the first bin holding the lowest edge
        b = max(count_below(gv[r], edges, 0, n_edges), 1) - 1
        counts[b] += 1
        sums[b] += gd[r]
    return counts, sums, max(n_edges - 1, 1), 0
