"""Numba kernels of the smooth ECE: the rows' grids (one pass), and sums of |smoothed residuals|.

No dataframe knowledge, no validation, no defaults: plain arrays in, arrays out. Deterministic as
:mod:`.accumulate` (chunks fixed by the sizes, partial tables added in chunk order; the other kernels compute each
group on its own, in a fixed order).
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from .accumulate import chunk_bounds
from .chunks import in_chunk_order, run_chunks, take
from .prefetch import prefetch_row


#: rows ahead whose grid values are prefetched (groups' grids beyond the cache): measured at 1e7 rows x 1e3
#: groups, 8 -> 0.19 s, 16 -> 0.15 s, 32 -> 0.20 s, none 0.27 s
AHEAD = 16
#: a group's work counts as this many rows when the threads for a per-group kernel are chosen
#: (:func:`calframe._kernels.chunks.pass_threads`): a few groups run on one thread
_ROWS_PER_ITEM = 1 << 12


@njit(inline="always")
def _node(x, scale, m):
    """The node left of x on the ``m``-node grid (relplot's ``int(x (m - 1))`` clipped to ``[0, m - 2]``)."""
    return min(max(int(x * scale), 0), m - 2)


def node_sums(conf, acc, weights, groups, slots, n_slots, m, part, out):
    """The ``m``-node grids of the rows, in one pass -> flat ``(n_slots, m, 2)``: [..., 0] the weights, [..., 1]
    the weighted residuals ``conf - acc``, each row spread on the two nodes around it as relplot's
    ``smooth_round_to_grid`` does (node ``k`` gets ``1 - frac``, node ``k + 1`` gets ``frac``,
    ``frac = x (m - 1) - k``).

    ``groups``: codes or None (one group); a row of group ``g`` goes to slot ``slots[g]``, or nowhere if that is
    negative. ``weights``: float64 or None (all 1). With groups, the grid values of the row ``AHEAD`` places
    on are prefetched (``prefetch.py``). ``part``, ``out``: the zeroed partial tables (one per chunk) and the
    array they are added into, from :func:`calframe._kernels.accumulate.tables` (numpy's allocation). The
    chunks run on several threads (:func:`calframe._kernels.chunks.run_chunks`) and their tables are added in
    chunk order."""
    run_chunks(_node_rows, (conf, acc, weights, groups, slots, n_slots, m, part), conf.shape[0])
    return in_chunk_order(part, out)


@njit(cache=True, nogil=True, readonly=("conf", "acc", "weights", "groups", "slots"))
def _node_rows(conf, acc, weights, groups, slots, n_slots, m, part, taken):
    """:func:`node_sums`, one thread's share of chunks."""
    n = conf.shape[0]
    scale = float(m - 1)
    while True:
        ch = take(taken)
        if ch >= part.shape[0]:
            break
        tab = part[ch]
        nodes = tab.reshape((n_slots * m, 2))
        lo, hi = chunk_bounds(n, part.shape[0], ch)
        for i in range(lo, hi):
            if groups is not None and i + AHEAD < hi:
                prefetch_row(nodes, slots[groups[i + AHEAD]] * m + _node(conf[i + AHEAD], scale, m))
            s = 0 if groups is None else slots[groups[i]]
            if s < 0:
                continue
            x = conf[i]
            k = _node(x, scale, m)
            frac = x * scale - k
            r = x - acc[i]
            w = 1.0
            if weights is not None:
                w = weights[i]
                r = w * r
            j = 2 * (s * m + k)
            tab[j] += (1 - frac) * w
            tab[j + 1] += (1 - frac) * r
            tab[j + 2] += frac * w
            tab[j + 3] += frac * r


def abs_sums(spectra, sel, basis):
    """``sum_j |sum_k spectra[g, k] basis[k, j]|`` for each group ``g`` of ``sel`` (the first ``len(basis)``
    coefficients of its spectrum), each group on its own in a fixed order (on several threads, a group at a
    time)."""
    out = np.empty(sel.shape[0])
    run_chunks(_abs_sums, (spectra, sel, basis, out), _ROWS_PER_ITEM * sel.shape[0] * basis.shape[0])
    return out


@njit(cache=True, nogil=True)
def _abs_sums(spectra, sel, basis, out, taken):
    n_k, n_eval = basis.shape
    vals = np.empty(n_eval)
    while True:
        q = take(taken)
        if q >= sel.shape[0]:
            break
        row = spectra[sel[q]]
        vals[:] = 0.0
        for k in range(n_k):
            c = row[k]
            for j in range(n_eval):
                vals[j] += c * basis[k, j]
        tot = 0.0
        for j in range(n_eval):
            tot += abs(vals[j])
        out[q] = tot


def abs_at_points(smoothed, inds, frac):
    """``sum_j |smoothed[g, i_j] (1 - f_j) + smoothed[g, i_j + 1] f_j|`` per row ``g`` (relplot's
    ``interpolate`` at the evaluation points, then the sum of absolute values)."""
    out = np.empty(smoothed.shape[0])
    run_chunks(_abs_at_points, (smoothed, inds, frac, out), _ROWS_PER_ITEM * smoothed.shape[0])
    return out


@njit(cache=True, nogil=True)
def _abs_at_points(smoothed, inds, frac, out, taken):
    while True:
        g = take(taken)
        if g >= smoothed.shape[0]:
            break
        row = smoothed[g]
        tot = 0.0
        for j in range(inds.shape[0]):
            i = inds[j]
            tot += abs(row[i] * (1 - frac[j]) + row[i + 1] * frac[j])
        out[g] = tot


def grid_dots(grids, sel, dens, tail):
    """Per group ``g`` of ``sel`` (grids ``(G, m, 2)``): ``[sum_i b_i dens_i, sum_i |r_i| dens_i,
    sum_i |r_i| tail_i]`` (b the weights, r the residuals; the last is 0 where ``tail`` is None)."""
    out = np.zeros((sel.shape[0], 3))
    run_chunks(_grid_dots, (grids, sel, dens, tail, out), _ROWS_PER_ITEM * sel.shape[0])
    return out


@njit(cache=True, nogil=True)
def _grid_dots(grids, sel, dens, tail, out, taken):
    m = grids.shape[1]
    while True:
        q = take(taken)
        if q >= sel.shape[0]:
            break
        grid = grids[sel[q]]
        den = 0.0
        bound = 0.0
        rest = 0.0
        for i in range(m):
            r = abs(grid[i, 1])
            den += grid[i, 0] * dens[i]
            bound += r * dens[i]
            if tail is not None:
                rest += r * tail[i]
        out[q, 0] = den
        out[q, 1] = bound
        out[q, 2] = rest
