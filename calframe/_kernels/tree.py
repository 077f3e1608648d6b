"""Numba split search of a one-variable classification tree (gini), as scikit-learn grows it.

The tree predicts integer labels y in 0..K-1 from one variable V.  Rows are
sorted by V once; every node of a tree on one variable is a contiguous range
[lo, hi) of the sorted order, and one scan of the node with running
(prefix) class counts of the left child evaluates every candidate split
(O(n K) time per tree level, O(K) memory).  Per node the candidate splits are the
positions p (lo < p < hi) where V changes value (v[p-1] < v[p]) and both
children keep >= min_leaf rows; the threshold is v[p-1]/2 + v[p]/2 (v[p-1]
if that rounds to v[p]); rows with V <= threshold go left.

The best split maximises scikit-learn's proxy
    -n_R * gini_R - n_L * gini_L,   gini = 1 - (sum_k c_k^2) / n^2,
computed with the same floating-point operations in the same order, with the
first (lowest-threshold) maximum kept on ties, so the thresholds equal
``DecisionTreeClassifier(criterion="gini")``'s for V stored exactly in
float32 (scikit-learn casts X to float32).  A node is a leaf when
depth == max_depth, n < max(2, 2 min_leaf), its gini <= float64 eps, or it
has no admissible split.  (scikit-learn also treats values closer than 1e-7
as equal; here distinct values are always distinct.)
"""

from __future__ import annotations

import numpy as np
from .._jit import njit  # cached kernels: keyed, locked disk cache (calframe._kernel_cache)

_EPS = np.finfo(np.float64).eps


@njit(cache=True)
def _counts(cs, ws, lo, hi, K):
    """Class weights of [lo, hi) (rows without weights have weight 1.0: the counts, exactly)."""
    c = np.zeros(K, np.float64)
    for i in range(lo, hi):
        c[cs[i]] += ws[i]
    return c


@njit(cache=True)
def _gini(c, n):
    sq = 0.0
    for k in range(c.shape[0]):
        ck = c[k]
        sq += ck * ck
    nn = float(n)
    return 1.0 - sq / (nn * nn)


@njit(cache=True)
def _best_split(vs, cs, ws, lo, hi, K, min_leaf):
    """Position p of the best split of [lo, hi) (left = [lo, p)), or -1.

    One pass with running (prefix) class weights of the left child; a child's size is its weight (its
    rows without weights: the same numbers, so the same bits).
    """
    total = _counts(cs, ws, lo, hi, K)
    ntot = 0.0
    for k in range(K):
        ntot += total[k]
    left = np.zeros(K, np.float64)
    nl = 0.0
    best = -np.inf
    best_p = -1
    for p in range(lo + 1, hi):
        left[cs[p - 1]] += ws[p - 1]
        nl += ws[p - 1]
        nr = ntot - nl
        if nl < min_leaf or nr < min_leaf or not (vs[p] > vs[p - 1]):
            continue
        sql = 0.0
        sqr = 0.0
        for k in range(K):
            cl = left[k]
            cr = total[k] - left[k]
            sql += cl * cl
            sqr += cr * cr
        gl = 1.0 - sql / (nl * nl)
        gr = 1.0 - sqr / (nr * nr)
        proxy = -nr * gr - nl * gl
        if proxy > best:
            best = proxy
            best_p = p
    return best_p


@njit(cache=True)
def _grow(vs, cs, ws, K, max_depth, min_leaf):
    """Thresholds of all splits (unsorted), depth-first with an explicit stack."""
    n = vs.shape[0]
    cap = 1
    for _ in range(max_depth):
        cap *= 2
        if cap > n:
            cap = n + 1
            break
    thr = np.empty(cap, np.float64)
    nt = 0
    st_lo = np.empty(cap * 2 + 2, np.int64)
    st_hi = np.empty(cap * 2 + 2, np.int64)
    st_d = np.empty(cap * 2 + 2, np.int64)
    top = 0
    st_lo[0] = 0
    st_hi[0] = n
    st_d[0] = 0
    top = 1
    min_split = max(2.0, 2.0 * min_leaf)
    while top > 0:
        top -= 1
        lo = st_lo[top]
        hi = st_hi[top]
        d = st_d[top]
        if d >= max_depth:
            continue
        c = _counts(cs, ws, lo, hi, K)
        nw = 0.0
        for k in range(K):
            nw += c[k]
        if nw < min_split or _gini(c, nw) <= _EPS:
            continue
        p = _best_split(vs, cs, ws, lo, hi, K, min_leaf)
        if p < 0:
            continue
        t = vs[p - 1] / 2.0 + vs[p] / 2.0
        if t == vs[p] or not np.isfinite(t):
            t = vs[p - 1]
        thr[nt] = t
        nt += 1
        st_lo[top] = p
        st_hi[top] = hi
        st_d[top] = d + 1
        top += 1
        st_lo[top] = lo
        st_hi[top] = p
        st_d[top] = d + 1
        top += 1
    return thr[:nt].copy()


def _integer_order(v: np.ndarray) -> np.ndarray | None:
    """A stable sorting permutation by counting sort when v holds whole numbers over a small range (ages, counts)."""
    from .._kernels.accumulate import group_order

    if v.size == 0:
        return None
    lo, hi = float(v.min()), float(v.max())
    if not (np.isfinite(lo) and np.isfinite(hi)) or hi - lo > 1 << 20 or not np.all(v == np.floor(v)):
        return None
    keys = (v - lo).astype(np.int32)
    order, _ = group_order(keys, int(hi - lo) + 1)
    return order


def tree_thresholds(v: np.ndarray, codes: np.ndarray, K: int, max_depth: int, min_leaf: int | float,
                    weights: np.ndarray | None = None) -> np.ndarray:
    """Sorted split thresholds; the leaves are the intervals (-inf, t_0], (t_0, t_1], ..., (t_last, inf).

    ``weights``: frequency weights (rows of weight 0 are absent; child sizes and ``min_leaf`` are weights), so
    integer weights give the thresholds of the rows repeated w_i times, bit for bit."""
    if weights is not None:
        keep = weights > 0
        v, codes, weights = v[keep], codes[keep], weights[keep]
    order = _integer_order(v)
    if order is None:
        order = np.argsort(v, kind="stable")
    vs = np.ascontiguousarray(v[order], dtype=np.float64)
    cs = np.ascontiguousarray(codes[order], dtype=np.int64)
    ws = np.ones(len(vs)) if weights is None else np.ascontiguousarray(weights[order], dtype=np.float64)
    return np.sort(_grow(vs, cs, ws, int(K), int(max_depth), float(min_leaf)))


def leaf_of(thresholds: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Leaf index of each value: the number of thresholds < v (v <= t goes left)."""
    return np.searchsorted(thresholds, v, side="left")
