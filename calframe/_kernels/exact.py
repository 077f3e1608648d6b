"""Numba kernel: the exact engines' fixed-point group sums, in memory (the eager companions).

The LazyFrame and narwhals engines sum a companion's row values (Brier, log loss, accuracy) as integers: a row
value x (divided by a power of two ``span`` into [0, 1]) counts as trunc(x * 2^62) without weights; with
weights w (each group's divided by its power of two: ``calframe._columns.scale_weights``), the row's weight
bucket k = floor(-log2(w) / 8) (in [0, 134]) scales w and w * x by 2^(60 + 8 k) before the truncation, and each
(group, bucket) is summed on its own (``calframe.engines.streaming.streamed.fixed_sum`` / ``_weight_bucket``,
``calframe.engines.native.sums.fixed_parts``). Integer sums do not depend on the order of the rows, so
:func:`group_sums` gives each group's sums with the same bits for any row order and thread count, and the
same bits as those engines: each (group, bucket) integer is rounded once to float64
(:func:`calframe._kernels.accumulate.fixed_to_float`), and a group's buckets are added smallest weights first
(``lazy.exact_floats``'s order).

The integers are 128 bits, two uint64 limbs (two's complement, the high limb's sign the sum's): each row adds
an int64, with a carry from the low limb; 2^63 rows fit.
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import njit  # parallel kernels: fork check, lock under a thread-unsafe layer
from . import arrays as A
from .accumulate import chunk_bounds, fixed_to_float, n_chunks
from .chunks import run_chunks, take
from .codes import BUCKET_BITS, FIXED_BITS, MAX_BUCKET, WEIGHTED_BITS

#: the words of a group's bitmap of weight buckets (135 buckets)
_WORDS = (MAX_BUCKET >> 6) + 1
#: ln 2, the divisor of Polars' ``log(2.0)`` (Rust's ``f64::log``: ln(w) / ln(2))
_LN2 = math.log(2.0)
#: 2^63: an int64 cast of a float takes [-2^63, 2^63) (Polars' ``strict=False`` cast gives null outside)
_I64_END = 2.0**63
#: within this many units in the last place of a power of two (2^-30 relative), a weight's bucket is computed as
#: Polars does (the log); elsewhere from its exponent
_FRAC_NEAR = np.uint64(1 << 22)


def group_sums(groups, values, weights, n_groups, span):
    """(total weight, total weight * value) of each group (two float64 arrays of ``n_groups``), the exact
    engines' sums (module docstring): unweighted, the row count and the sum of the values.

    ``groups``: int32 / int64 codes, or None (one group); ``values``: float64 row values in [0, ``span``]
    (``span`` a power of two); ``weights``: float64 in [0, 2) (the scaled weights) or None.
    """
    n = values.shape[0]
    g = A.codes(groups) if groups is not None else np.empty(0, dtype=np.int32)
    w = A.real(weights) if weights is not None else np.empty(0)
    x = A.real(values)
    buckets, rank = np.empty(0, dtype=np.uint8), np.zeros(MAX_BUCKET + 1, dtype=np.int64)
    bitmap, base = np.empty((0, _WORDS), dtype=np.uint64), np.empty((0, _WORDS), dtype=np.int64)
    width = 1  # cells per group (dense layout)
    if weights is not None:
        buckets = np.empty(n, dtype=np.uint8)
        counts = np.zeros((n_chunks(n, 0), MAX_BUCKET + 1), dtype=np.int64)
        run_chunks(_buckets, (w, buckets, counts), n)
        present = counts.sum(axis=0) > 0
        width = int(present.sum())
        rank = np.where(present, np.cumsum(present) - 1, -1)
        if n_groups * width > 2 * n + n_groups:  # sparse: each group's own buckets (a cell per row at most)
            bitmap, base = np.zeros((n_groups, _WORDS), dtype=np.uint64), np.empty((n_groups, _WORDS), dtype=np.int64)
    cells = n_groups * width if bitmap.shape[0] == 0 else _bucket_cells(g, buckets, bitmap, base)
    part = np.zeros((n_chunks(n, -(-4 * cells // 3)), 4 * cells), dtype=np.uint64)
    total_w, total_v = np.zeros(n_groups), np.zeros(n_groups)
    run_chunks(_sums, (g, x, w, buckets, rank, width, bitmap, base, 1.0 / span, _FACTORS, part), n)
    _totals(part, rank, width, bitmap, base, weights is not None, total_w, total_v)
    return total_w, total_v * span


@njit(inline="always")
def weight_bucket(w, bits):
    """floor(-log2(w) / 8) clipped to [0, 134], as Polars computes it (``lazy.weight_bucket``:
    -(ln(w) / ln(2)) / 8), for w >= 0 with the float64 ``bits`` of w. Where w = m 2^e (m in [1/2, 1)) is a normal
    number not within 2^-30 of a power of two, -log2(w) lies in (-e, 1 - e), an interval with no multiple of 8
    inside, which the computed log's error (a few ulps) cannot leave: the bucket is floor(-e / 8), read off the
    exponent bits without the log."""
    biased = np.int64((bits >> np.uint64(52)) & np.uint64(0x7FF))
    frac = bits & np.uint64(0xFFFFFFFFFFFFF)
    if biased > 0 and frac > _FRAC_NEAR and frac < np.uint64(0xFFFFFFFFFFFFF) - _FRAC_NEAR:
        k = (1022 - biased) // BUCKET_BITS  # e = biased - 1022
        return min(max(k, 0), MAX_BUCKET)
    t = math.floor(-(math.log(w) / _LN2) / BUCKET_BITS) if w > 0.0 else math.inf  # 0: -log2 0 = inf
    return int(min(max(t, 0.0), float(MAX_BUCKET)))


#: 2^(BUCKET_BITS / 2 * k + WEIGHTED_BITS / 2) for each bucket k: a weighted value is scaled by its square
_FACTORS = np.ldexp(1.0, np.arange(MAX_BUCKET + 1) * (BUCKET_BITS // 2) + WEIGHTED_BITS // 2)


@njit(inline="always")
def _fixed(s):
    """The int64 a scaled value ``s`` adds: trunc(s), or 0 for NaN or outside the int64 range (a null in the
    engines' ``strict=False`` cast)."""
    if s >= -_I64_END and s < _I64_END:
        return np.int64(s)
    return np.int64(0)


@njit(inline="always")
def _add128(hi, lo, v):
    """(hi, lo) + the int64 ``v``: the limbs of the sum. Scalars only, for the row loop (a plain kernel counts a
    reference per row for an array given to an inlined call: ``accumulate.fast_bin``)."""
    u = np.uint64(v)
    low = lo + u
    carry = np.uint64(1) if low < u else np.uint64(0)
    return hi + carry + (np.uint64(0xFFFFFFFFFFFFFFFF) if v < 0 else np.uint64(0)), low


@njit(inline="always")
def _popcount(x):
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@njit(cache=True, nogil=True)
def _buckets(weights, buckets, counts, taken):
    """Each row's weight bucket (into ``buckets``), and each chunk's rows per bucket (``counts``, chunks x
    buckets): one thread's share of chunks (:func:`calframe._kernels.chunks.run_chunks`)."""
    n = weights.shape[0]
    nchunks = counts.shape[0]
    bits = weights.view(np.uint64)
    while True:
        c = take(taken)
        if c >= nchunks:
            break
        lo, hi = chunk_bounds(n, nchunks, c)
        for i in range(lo, hi):
            k = weight_bucket(weights[i], bits[i])
            buckets[i] = k
            counts[c, k] += 1


@njit(cache=True)
def _bucket_cells(groups, buckets, bitmap, base):
    """The sparse layout: each group's bitmap of the buckets its rows have, and ``base``, the first cell of each
    (group, bitmap word), cells numbered by group, then bucket. Returns the number of cells."""
    for i in range(buckets.shape[0]):
        g = 0 if groups.shape[0] == 0 else groups[i]
        k = buckets[i]
        bitmap[g, k >> 6] |= np.uint64(1) << np.uint64(k & 63)
    c = 0
    for g in range(bitmap.shape[0]):
        for j in range(bitmap.shape[1]):
            base[g, j] = c
            c += _popcount(bitmap[g, j])
    return c


@njit(inline="always")
def _cell(rank, width, bitmap, base, g, k):
    """The cell of bucket ``k`` of group ``g``: dense (no ``bitmap``), g * width + the bucket's rank among those
    present; else sparse (:func:`_bucket_cells`)."""
    if bitmap.shape[0] == 0:
        return g * width + rank[k]
    j = k >> 6
    return _sparse_cell(base[g, j], bitmap[g, j], k)


@njit(inline="always")
def _sparse_cell(first, word, k):
    """The cell of bucket ``k`` in the sparse layout, from its (group, word)'s first cell and bitmap word."""
    return first + _popcount(word & ((np.uint64(1) << np.uint64(k & 63)) - np.uint64(1)))


@njit(inline="always")
def _to_float(hi, lo, exp):
    """The 128-bit integer (hi, lo) times 2^exp, correctly rounded (a negative one by its magnitude)."""
    if np.int64(hi) < 0:
        lo = ~lo + np.uint64(1)
        hi = ~hi + (np.uint64(1) if lo == np.uint64(0) else np.uint64(0))
        return -fixed_to_float(np.int64(hi), np.int64(lo >> np.uint64(32)), np.int64(lo & np.uint64(0xFFFFFFFF)),
                               exp)
    return fixed_to_float(np.int64(hi), np.int64(lo >> np.uint64(32)), np.int64(lo & np.uint64(0xFFFFFFFF)), exp)


@njit(cache=True, nogil=True, readonly=("groups", "values", "weights"))
def _sums(groups, values, weights, buckets, rank, width, bitmap, base, scale, factors, part, taken):
    """Per cell (group; weighted, (group, bucket)): the 128-bit sums of the weight's and the weighted value's
    integers (unweighted: the row count and the value's), one chunk of rows into each row of ``part``: one
    thread's share of chunks (:func:`calframe._kernels.chunks.run_chunks`). No array goes to an inlined call
    per row."""
    n = values.shape[0]
    weighted = weights.shape[0] > 0
    sparse = bitmap.shape[0] > 0
    nchunks = part.shape[0]
    while True:
        c = take(taken)
        if c >= nchunks:
            break
        lo, hi = chunk_bounds(n, nchunks, c)
        tab = part[c]
        for i in range(lo, hi):
            g = 0 if groups.shape[0] == 0 else groups[i]
            x = values[i] * scale
            if weighted:
                k = np.int64(buckets[i])
                if sparse:
                    j = 4 * _sparse_cell(base[g, k >> 6], bitmap[g, k >> 6], k)
                else:
                    j = 4 * (g * width + rank[k])
                w = weights[i]
                f = factors[k]  # two equal factors, each finite, as the engines apply 2^(60 + 8 k)
                a = _fixed(w * f * f)
                b = _fixed(w * x * f * f)
            else:
                j = 4 * g
                a = np.int64(1)
                b = _fixed(x * 2.0**FIXED_BITS)
            tab[j], tab[j + 1] = _add128(tab[j], tab[j + 1], a)
            tab[j + 2], tab[j + 3] = _add128(tab[j + 2], tab[j + 3], b)


@njit(cache=True)
def _totals(part, rank, width, bitmap, base, weighted, total_w, total_v):
    """The chunks' integers added (into ``part[0]``), then each group's totals: its cells' floats added from the
    highest bucket (smallest weights) down."""
    out = part[0]
    for c in range(1, part.shape[0]):
        for j in range(0, out.shape[0], 2):  # (high, low) pairs
            lo = out[j + 1] + part[c, j + 1]
            out[j] += part[c, j] + (np.uint64(1) if lo < part[c, j + 1] else np.uint64(0))
            out[j + 1] = lo
    for g in range(total_w.shape[0]):
        tw = 0.0
        tv = 0.0
        if weighted:
            for k in range(MAX_BUCKET, -1, -1):  # an empty cell adds 0.0: no change
                if rank[k] >= 0 and (bitmap.shape[0] == 0 or (bitmap[g, k >> 6] >> np.uint64(k & 63)) & np.uint64(1)):
                    j = 4 * _cell(rank, width, bitmap, base, g, k)
                    e = -WEIGHTED_BITS - BUCKET_BITS * k
                    tw += _to_float(out[j], out[j + 1], e)
                    tv += _to_float(out[j + 2], out[j + 3], e)
        else:
            j = 4 * g
            tw += _to_float(out[j], out[j + 1], 0)
            tv += _to_float(out[j + 2], out[j + 3], -FIXED_BITS)
        total_w[g] = tw
        total_v[g] = tv
