"""Numba kernels for group codes of integer keys (direct indexing, no hashing)."""

from __future__ import annotations

import numpy as np
from numba import prange

from .._jit import njit  # parallel kernels: fork check, lock under a thread-unsafe layer
from .accumulate import sum_partials


@njit(parallel=True, cache=True, readonly=("v",))
def int_histogram(v, lo, span, nchunks):
    """Counts of v - lo over [0, span), from per-chunk partial histograms added in chunk order."""
    n = v.shape[0]
    part = np.zeros((nchunks, span), dtype=np.int64)
    step = (n + nchunks - 1) // nchunks
    for c in prange(nchunks):
        row = part[c]
        for i in range(c * step, min(n, (c + 1) * step)):
            row[v[i] - lo] += 1
    return sum_partials(part)


@njit(parallel=True, cache=True, readonly=("v", "remap"))
def int_remap(v, lo, remap):
    """int32 code of each key: remap[v - lo]."""
    n = v.shape[0]
    out = np.empty(n, dtype=np.int32)
    for i in prange(n):
        out[i] = remap[v[i] - lo]
    return out
