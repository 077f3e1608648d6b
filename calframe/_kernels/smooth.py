"""Numba kernel of the smooth ECE: per (group, cell) moments of the rows, one pass.

No dataframe knowledge, no validation, no defaults: plain arrays in, arrays out. Deterministic as
:mod:`.accumulate` (chunks fixed by the sizes, partial tables added in chunk order).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from .._runtime import njit
from .accumulate import partials, sum_partials

#: the moments of a cell: [sum w, sum w*d, sum w*r, sum w*r*d], d = conf - (the cell's left node), r = conf - acc
N_MOMENTS = 4


@njit(inline="always")
def _add_row(tab, x, a, w, nodes, lookup):
    """Row (x, a, w) into its cell of ``tab``: cell c is ``[nodes[c], nodes[c + 1])`` (the last one closed),
    ``lookup[int(x * (len(lookup) - 1))]`` the cell holding that slot's left end."""
    n_cells = nodes.shape[0] - 1
    c = lookup[int(x * (lookup.shape[0] - 1))]
    while c < n_cells - 1 and nodes[c + 1] <= x:
        c += 1
    d = x - nodes[c]
    r = x - a
    k = N_MOMENTS * c
    tab[k] += w
    tab[k + 1] += w * d
    tab[k + 2] += w * r
    tab[k + 3] += w * r * d


@njit(parallel=True, cache=True)
def cell_moments(conf, acc, weights, nodes, lookup, nchunks):
    """The cell moments of all rows -> flat array (n_cells * 4). ``weights``: float64 or None (all 1)."""
    n = conf.shape[0]
    part, step = partials(n, nchunks, N_MOMENTS * (nodes.shape[0] - 1))
    for ch in prange(nchunks):
        tab = part[ch]
        for i in range(ch * step, min(n, (ch + 1) * step)):
            _add_row(tab, conf[i], acc[i], 1.0 if weights is None else weights[i], nodes, lookup)
    return sum_partials(part)


@njit(parallel=True, cache=True)
def group_cell_moments(conf, acc, weights, order, starts, which, nodes, lookup):
    """The cell moments of the groups ``which`` -> (len(which), n_cells * 4), each group from its rows
    ``order[starts[g]:starts[g + 1]]`` in order (``accumulate.group_order``): one small table per group, which
    stays in cache, and no partial tables."""
    out = np.zeros((which.shape[0], N_MOMENTS * (nodes.shape[0] - 1)))
    for q in prange(which.shape[0]):
        g = which[q]
        tab = out[q]
        for j in range(starts[g], starts[g + 1]):
            i = order[j]
            _add_row(tab, conf[i], acc[i], 1.0 if weights is None else weights[i], nodes, lookup)
    return out


@njit(cache=True)
def cells_to_grid(table, k, a0, s, m):
    """Grid values of the hat functions of ``m`` nodes (spacing 1/s) from cell moments ``table`` (G, C, 4):
    ``(G, 2, m)``, [0] the weights, [1] the residuals. Cell c lies in grid interval ``k[c]``, its left node at
    ``a0[c]`` of that interval: a row at ``x = node + d`` gives ``1 - a0 - s d`` to node k and ``a0 + s d`` to k + 1
    (relplot's ``smooth_round_to_grid``)."""
    g_n, n_cells, _ = table.shape
    out = np.zeros((g_n, 2, m))
    for g in range(g_n):
        for c in range(n_cells):
            kc = k[c]
            for v in range(2):
                sw = table[g, c, 2 * v]
                swd = table[g, c, 2 * v + 1]
                right = a0[c] * sw + s * swd
                out[g, v, kc] += sw - right
                out[g, v, kc + 1] += right
    return out
