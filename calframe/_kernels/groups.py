"""Numba kernels for group codes of integer keys (direct indexing, no hashing): plain ``nogil`` kernels over
chunks of rows, run on several threads (:func:`calframe._kernels.chunks.run_chunks`)."""

from __future__ import annotations

import numpy as np

from .._jit import njit
from .accumulate import chunk_bounds, n_chunks
from .chunks import run_chunks, take


def int_histogram(v: np.ndarray, lo: int, span: int, nchunks: int) -> np.ndarray:
    """Counts of v - lo over [0, span), from per-chunk partial histograms added in chunk order.

    >>> int_histogram(np.array([3, 5, 3]), 3, 3, 2).tolist()
    [2, 0, 1]
    """
    part = np.zeros((nchunks, span), dtype=np.int64)
    run_chunks(_histogram, (v, lo, part), v.shape[0])
    return part.sum(axis=0)


@njit(cache=True, nogil=True, readonly=("v",))
def _histogram(v, lo, part, taken):
    n = v.shape[0]
    while True:
        c = take(taken)
        if c >= part.shape[0]:
            break
        row = part[c]
        start, end = chunk_bounds(n, part.shape[0], c)
        for i in range(start, end):
            row[v[i] - lo] += 1


def int_remap(v: np.ndarray, lo: int, remap: np.ndarray) -> np.ndarray:
    """int32 code of each key: remap[v - lo].

    >>> int_remap(np.array([7, 5]), 5, np.array([1, -1, 0], dtype=np.int32)).tolist()
    [0, 1]
    """
    out = np.empty(v.shape[0], dtype=np.int32)
    run_chunks(_remap, (v, lo, remap, out, n_chunks(v.shape[0], 0)), v.shape[0])
    return out


@njit(cache=True, nogil=True, readonly=("v", "remap"))
def _remap(v, lo, remap, out, nchunks, taken):
    n = v.shape[0]
    while True:
        c = take(taken)
        if c >= nchunks:
            break
        start, end = chunk_bounds(n, nchunks, c)
        for i in range(start, end):
            out[i] = remap[v[i] - lo]
