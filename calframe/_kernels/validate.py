"""Numba kernels that count bad values in one pass (the messages are built by _columns).

The fast path is one comparison per value; the breakdown of what is wrong is
computed with numpy only when something is.
"""

from __future__ import annotations

from numba import prange

from .._jit import njit  # parallel kernels: fork check, lock under a thread-unsafe layer
from .prefetch import AHEAD, prefetch_row


@njit(parallel=True, cache=True, readonly=("p",))
def count_not_unit(p):
    """Number of values (of a 1-D array) that are not in [0, 1]: NaN, inf and out of range."""
    bad = 0
    for i in prange(p.shape[0]):
        v = p[i]
        bad += 0 if (v >= 0.0 and v <= 1.0) else 1
    return bad


@njit(parallel=True, cache=True, readonly=("p",))
def count_bad_rows(p, tol):
    """(rows with a value not in [0, 1] or NaN, rows whose sum is more than ``tol`` from 1) of (n, k) probabilities.

    One pass; a row's smallest value, largest value and sum decide both.
    """
    n, k = p.shape
    bad = 0
    off = 0
    for i in prange(n):
        if i + AHEAD < n:  # the hardware alone streams rows at half the speed (docs/benchmarks.md)
            prefetch_row(p, i + AHEAD)
        s = p[i, 0]
        lo = s
        hi = s
        for j in range(1, k):
            v = p[i, j]
            s += v
            lo = min(lo, v)
            hi = max(hi, v)
        # a NaN makes the sum NaN (min/max may skip it)
        bad += 0 if (lo >= 0.0 and hi <= 1.0 and s == s) else 1
        off += 1 if abs(s - 1.0) > tol else 0
    return bad, off


@njit(parallel=True, cache=True, readonly=("y",))
def count_outside(y, k):
    """Labels outside [0, k)."""
    bad = 0
    for i in prange(y.shape[0]):
        bad += 1 if (y[i] < 0 or y[i] >= k) else 0
    return bad
