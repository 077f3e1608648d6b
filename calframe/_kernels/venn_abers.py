"""Numba kernel of inductive Venn-Abers calibration (Vovk & Petej 2014; Vovk, Petej & Fedorova 2015): the
isotonic fits of the calibration scores with one test point added, labelled 0 and 1, at every position.

No dataframe knowledge, no validation: plain arrays in, arrays out. Sequential, so deterministic.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit


@njit(cache=True)
def _pava_stack(w, y, order, sw, sy, nxt, heads):
    """The blocks of the pool-adjacent-violators algorithm over the points ``order`` (in that order), kept as a
    persistent linked stack: block ``b`` (one per point, the block that point opened) has weight ``sw[b]``, label
    sum ``sy[b]`` and the block under it ``nxt[b]`` (-1: none); ``heads[t]`` is the top block after the first t
    points. A block is pooled with the one under it while that one's mean is larger (``order`` from the left,
    as usual) or smaller (``order`` from the right: the stack of the suffix, read from its left end)."""
    top = -1
    heads[0] = -1
    rightwards = order[0] <= order[-1]
    for t in range(order.shape[0]):
        i = order[t]
        bw, by = w[i], y[i]
        while top >= 0 and ((sy[top] * bw > by * sw[top]) if rightwards else (sy[top] * bw < by * sw[top])):
            bw += sw[top]
            by += sy[top]
            top = nxt[top]
        sw[i], sy[i], nxt[i] = bw, by, top
        top = i
        heads[t + 1] = top


@njit(cache=True)
def venn_abers_tables(w, y):
    """``(p0, p1)``, each of length k + 1, for the k distinct calibration scores in increasing order with ``w[i]``
    rows and ``y[i]`` positive labels each: ``p_label[j]`` is the isotonic (increasing) regression's value at a
    test point with that label placed after the first j distinct scores and before the others.

    The fit pools the test point with the prefix's top PAVA blocks and the suffix's first blocks (the blocks of
    each part are never split by the other), so each position starts from the two stacks of
    :func:`_pava_stack` and pools adjacent violators until the point's block lies between its neighbours."""
    k = w.shape[0]
    lw, ly, ln, lh = np.empty(k), np.empty(k), np.empty(k, np.int64), np.empty(k + 1, np.int64)
    rw, ry, rn, rh = np.empty(k), np.empty(k), np.empty(k, np.int64), np.empty(k + 1, np.int64)
    _pava_stack(w, y, np.arange(k), lw, ly, ln, lh)
    _pava_stack(w, y, np.arange(k)[::-1], rw, ry, rn, rh)  # rh[t]: the suffix of the last t scores
    p0 = np.empty(k + 1)
    p1 = np.empty(k + 1)
    for j in range(k + 1):
        for label in range(2):
            bw, by = 1.0, float(label)
            left, right = lh[j], rh[k - j]
            while True:
                if right >= 0 and by * rw[right] > ry[right] * bw:  # the suffix's first block is lower: pool it
                    bw += rw[right]
                    by += ry[right]
                    right = rn[right]
                elif left >= 0 and ly[left] * bw > by * lw[left]:  # the prefix's top block is higher: pool it
                    bw += lw[left]
                    by += ly[left]
                    left = ln[left]
                else:
                    break
            if label == 0:
                p0[j] = by / bw
            else:
                p1[j] = by / bw
    return p0, p1
