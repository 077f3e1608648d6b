"""Numba kernel of the MMCE (Kumar et al. 2018): the pairwise Laplacian-kernel sum of each group, in one pass over
its rows in order of the prediction.

No dataframe knowledge, no validation, no defaults: plain arrays in, arrays out. Each group is summed on its own,
in the order of its rows, so the result does not depend on the number of threads, to the bit. The groups are
shared out among threads a group at a time (:func:`calframe._kernels.chunks.run_chunks`; a plain ``nogil``
kernel, not ``parallel=True``, which costs seconds more to compile).
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from .chunks import ROWS_PER_THREAD, run_chunks, take

#: a row costs an exp (on the chain from one row to the next), several times a row of a summing pass: the
#: threads are chosen (:func:`calframe._kernels.chunks.pass_threads`) as for this many times the rows
ROW_COST = 4


def pair_sums(conf, resid, starts, rate, out):
    """``out[g] = sum_{i, j in g} resid_i resid_j exp(-rate |conf_i - conf_j|)`` for each group g, whose rows are
    ``starts[g]:starts[g + 1]``, sorted by ``conf`` within it.

    With the rows sorted, ``exp(-rate (conf_j - conf_i)) = prod_{i < m <= j} exp(-rate (conf_m - conf_{m-1}))``,
    so ``S_j = sum_{i < j} resid_i exp(-rate (conf_j - conf_i))`` follows from ``S_{j-1}``:
    ``S_j = exp(-rate (conf_j - conf_{j-1})) (S_{j-1} + resid_{j-1})``, and the sum is
    ``sum_j resid_j^2 + 2 sum_j resid_j S_j``: exact, in O(n) instead of the O(n^2) pairs (every factor is
    at most 1, so nothing grows). A group is one thread's work: the threads are those for its rows, at most one
    per group."""
    n_groups = starts.shape[0] - 1
    n_rows = int(starts[-1] - starts[0]) if n_groups > 0 else 0
    run_chunks(_pair_sums, (conf, resid, starts, rate, out), min(ROW_COST * n_rows, n_groups * ROWS_PER_THREAD))


@njit(cache=True, nogil=True)
def _pair_sums(conf, resid, starts, rate, out, taken):
    """:func:`pair_sums`, one thread's share of the groups."""
    while True:
        g = take(taken)
        if g >= starts.shape[0] - 1:
            break
        lo, hi = starts[g], starts[g + 1]
        s = 0.0
        square = 0.0
        cross = 0.0
        for j in range(lo, hi):
            if j > lo:
                s = np.exp(-rate * (conf[j] - conf[j - 1])) * (s + resid[j - 1])
            square += resid[j] * resid[j]
            cross += resid[j] * s
        out[g] = square + 2.0 * cross
