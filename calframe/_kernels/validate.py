"""Numba kernels that count bad values in one pass (the messages are built by _columns).

The fast path is one comparison per value; the breakdown of what is wrong is
computed with numpy only when something is. Each count is a plain ``nogil`` kernel over chunks of rows, run on
several threads (:func:`calframe._kernels.chunks.run_chunks`), its per-chunk counts added here: integers, so
the same for any thread count.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from .accumulate import chunk_bounds, n_chunks
from .chunks import run_chunks, take
from .prefetch import AHEAD, prefetch_row


def count_not_unit(p: np.ndarray) -> int:
    """Number of values (of a 1-D array) that are not in [0, 1]: NaN, inf and out of range.

    >>> count_not_unit(np.array([0.0, 1.0, 1.5, np.nan]))
    2
    """
    counts = np.zeros(n_chunks(p.shape[0], 0), dtype=np.int64)
    run_chunks(_not_unit, (p, counts), p.shape[0])
    return int(counts.sum())


@njit(cache=True, nogil=True, readonly=("p",))
def _not_unit(p, counts, taken):
    n = p.shape[0]
    while True:
        c = take(taken)
        if c >= counts.shape[0]:
            break
        lo, hi = chunk_bounds(n, counts.shape[0], c)
        bad = 0
        for i in range(lo, hi):
            v = p[i]
            bad += 0 if (v >= 0.0 and v <= 1.0) else 1
        counts[c] = bad


def count_bad_rows(p: np.ndarray, tol: float) -> tuple[int, int]:
    """(rows with a value not in [0, 1] or NaN, rows whose sum is more than ``tol`` from 1) of (n, k) probabilities.

    One pass; a row's smallest value, largest value and sum decide both.

    >>> count_bad_rows(np.array([[0.2, 0.8], [0.5, 0.6], [np.nan, 1.0]]), 1e-6)
    (1, 1)
    """
    counts = np.zeros((n_chunks(p.shape[0], 0), 2), dtype=np.int64)
    run_chunks(_bad_rows, (p, tol, counts), p.shape[0])
    bad, off = counts.sum(axis=0)
    return int(bad), int(off)


@njit(cache=True, nogil=True, readonly=("p",))
def _bad_rows(p, tol, counts, taken):
    n, k = p.shape
    while True:
        c = take(taken)
        if c >= counts.shape[0]:
            break
        lo, hi = chunk_bounds(n, counts.shape[0], c)
        bad = 0
        off = 0
        for i in range(lo, hi):
            if i + AHEAD < hi:  # the hardware alone streams rows at half the speed (docs/benchmarks.md)
                prefetch_row(p, i + AHEAD)
            s = p[i, 0]
            low = s
            high = s
            for j in range(1, k):
                v = p[i, j]
                s += v
                low = min(low, v)
                high = max(high, v)
            # a NaN makes the sum NaN (min/max may skip it)
            bad += 0 if (low >= 0.0 and high <= 1.0 and s == s) else 1
            off += 1 if abs(s - 1.0) > tol else 0
        counts[c, 0] = bad
        counts[c, 1] = off


def count_outside(y: np.ndarray, k: int) -> int:
    """Labels outside [0, k).

    >>> count_outside(np.array([0, 1, 2, -1]), 2)
    2
    """
    counts = np.zeros(n_chunks(y.shape[0], 0), dtype=np.int64)
    run_chunks(_outside, (y, k, counts), y.shape[0])
    return int(counts.sum())


@njit(cache=True, nogil=True, readonly=("y",))
def _outside(y, k, counts, taken):
    n = y.shape[0]
    while True:
        c = take(taken)
        if c >= counts.shape[0]:
            break
        lo, hi = chunk_bounds(n, counts.shape[0], c)
        bad = 0
        for i in range(lo, hi):
            bad += 1 if (y[i] < 0 or y[i] >= k) else 0
        counts[c] = bad
