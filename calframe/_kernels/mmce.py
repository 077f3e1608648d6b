"""Numba kernel of the MMCE (Kumar et al. 2018): the pairwise Laplacian-kernel sum of each group, in one pass over
its rows in order of the prediction.

No dataframe knowledge, no validation, no defaults: plain arrays in, arrays out. Each group is summed on its own,
in the order of its rows, so the result does not depend on the number of threads, to the bit.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from .._jit import njit


@njit(parallel=True, cache=True)
def pair_sums(conf, resid, starts, rate, out):
    """``out[g] = sum_{i, j in g} resid_i resid_j exp(-rate |conf_i - conf_j|)`` for each group g, whose rows are
    ``starts[g]:starts[g + 1]``, sorted by ``conf`` within it.

    With the rows sorted, ``exp(-rate (conf_j - conf_i)) = prod_{i < m <= j} exp(-rate (conf_m - conf_{m-1}))``,
    so ``S_j = sum_{i < j} resid_i exp(-rate (conf_j - conf_i))`` follows from ``S_{j-1}``:
    ``S_j = exp(-rate (conf_j - conf_{j-1})) (S_{j-1} + resid_{j-1})``, and the sum is
    ``sum_j resid_j^2 + 2 sum_j resid_j S_j``: exact, in O(n) instead of the O(n^2) pairs (every factor is
    at most 1, so nothing grows)."""
    for g in prange(starts.shape[0] - 1):
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
