"""Numba kernels for local calibration: LCE and LoRe (Luo et al.; SPEC section 5).

Plain arrays in, arrays out; no dataframe knowledge and no validation beyond
what memory safety needs.

What is computed
----------------
Reference rows i have features x_i in R^d, a bin id b_i and m values v_i
(signed values allowed); query rows q have features x_q and a bin id b_q.
With the Laplacian kernel k(q, i) = exp(-||x_q - x_i||_1 / h) (h = d * gamma),

    num_q = sum_{i: b_i == b_q} k(q, i) v_i        den_q = sum_{i: b_i == b_q} k(q, i)

``kernel_sums`` returns (num, den) multiplied by one positive factor per query
that the algorithm chooses (so only num / den is meaningful); den == 0 exactly
when the query's bin has no reference row.  LCE and LoRe are such ratios.

Numerical scheme (exact in float64; no truncation, no approximation)
--------------------------------------------------------------------
Rows are partitioned by bin once, so every sum is block-diagonal.

Shift.  The ratio is unchanged when every distance is shifted by the smallest
distance dmin_q from the query to its bin; then the nearest row weighs exactly
1, nothing underflows to 0/0 for any gamma, gamma -> 0 tends to the nearest
row's value (exact ties: their average) and gamma -> inf to the bin mean.
The fast paths compute *unshifted* sums whose relevant terms stay in the
normal float range, and hand every query whose den falls below exp(-ISO)
(ISO = 550, i.e. dmin_q > ~550 h: an isolated query or a tiny gamma) to the
exact shifted path.  Why that is exact: den >= exp(-ISO) implies
dmin_q / h <= ISO + log(n), so every term within 40 h of the nearest one
(all terms that can change the ratio by more than 1e-17) is >= exp(-611), a
normal double computed to full relative precision; positive sums carry no
cancellation; signed numerators have absolute error <= a few eps * den.

1. Exact shifted path ("direct"): per query, pass 1 computes dmin_q, pass 2
   sums exp(-(D_i - dmin_q) / h).  One exp per pair; used for isolated
   queries and for bins too wide for the factorised path.
2. Factorised brute force ("brute", any d): per bin, coordinates are centred
   at c (mid-range of the bin's reference and query rows) and
   E = exp((x - c) / h), I = exp(-(x - c) / h) are precomputed per point and
   dimension (allowed when the bin's range / h <= FAST_RANGE = 600, so
   E, I lie in [e^-300, e^300] and no product overflows).  Then
       exp(-|a - b| / h) = min(E_a I_b, E_b I_a)
   so a pair costs d * (2 mul + min + mul), no exp, in loops over contiguous
   reference tiles that LLVM vectorises.  Relative error of a factor is
   <= ~(|a - c| + |b - c|) / h ulps (<= 600 ulps by construction).
3. d = 1 ("tree"): per bin, rows sorted by x; forward and backward running
   sums S_j = S_{j-1} exp(-(x_j - x_{j-1}) / h) + v_j (factors <= 1, never
   overflow).  A query between its neighbours l <= q < r reads
   S_l exp(-(x_q - x_l - dmin) / h) + T_r exp(-(x_r - x_q - dmin) / h) with
   dmin = min(x_q - x_l, x_r - x_q): the exact shift, O(n log n).  A term's
   rounding grows with the number of rows between it and the query (each
   decay step adds ~1 ulp; in practice a random walk, ~sqrt(steps) ulps).
4. d = 2 ("tree"): the kernel is exp(-|dx|/h) exp(-|dy|/h).  Divide and
   conquer on x (CDQ): items (rows and queries) sorted by x are cut into
   leaves of LEAF items (pairs inside a leaf summed directly) and merged
   bottom-up by y.  When blocks L (smaller x) and R meet, every pair
   (i in L, q in R) has x_i <= x_q, so its x factor splits into a row part
   and a query part, and the y factor does too once the merged y order says
   which of y_i, y_q is smaller: L -> R and R -> L contributions are prefix
   sums over the merged y order (forward: rows before the query, backward:
   rows after).  Every pair meets at exactly one merge.  O(n log n).
   * bins with x and y ranges <= FAST_RANGE h: the per-item factors are
     ex = exp((x - cx) / h), its inverse, ey, eyi (centred at the bin's
     mid-range, all in [e^-300, e^300]); a pair's kernel is e.g.
     (ex_i ey_i) (exi_q eyi_q), so the merges need only products and sums:
     no exp after the setup, no chained multiplications.  A term's relative
     error is ~(|z_i| + |z_q|) ulps summed over both coordinates, z the
     centred coordinates in units of h (<= 1200 ulps by construction).
     Records move with the merges, so all passes are sequential.
   * wider bins: factors relative to the split x_s (exp(-|x - x_s| / h), one
     exp per item and level) and decaying running sums in y (one exp per step),
     all factors <= 1.
   In the fast variant every stored factor is a normal double in
   [e^-600, e^600] (sums of n of them cannot overflow for n < e^100) and a
   row factor times a query factor is the kernel value itself; the chain
   variant stores each term as its kernel value times a factor >= 1.  So
   relevant terms never underflow and positive sums are exact to a few ulps
   per term plus the usual summation error.  (An O(n log n) Fenwick-tree sweep was tried first: as exact, but
   2-3x slower because of its random memory access.)
5. d = 3 ("tree"), bins with every range <= FAST_RANGE3 = 400 h: the same
   divide and conquer on x, where each merge of blocks L, R solves the
   cross sums as a 2-d divide and conquer on (y, z) with two colours (rows
   of L feed queries of R and vice versa).  Per item P[b] = product over the
   coordinates of exp(z_k) or exp(-z_k) (bit k of b), all in [e^-600, e^600];
   a pair's kernel is P_row[b] P_query[7 - b], b marking which item is the
   larger in each coordinate.  O(n log^2 n); wider bins use the brute force.
6. d >= 4: the factorised brute force.
   "auto" picks per bin: the sweeps for d = 1; for d = 2 (3) the divide and
   conquer when n_ref * n_query > TREE_MIN_PAIRS (TREE3_MIN_PAIRS), measured
   crossovers; otherwise the brute force.

Sorting: rows are bucketed by bin with a stable counting sort of a numpy
argsort by the first coordinate, so inside each bin they are in x order.

Determinism: work is split into items (bins, query tiles) whose boundaries
depend only on the data sizes; every query's sums are formed by one thread in
a fixed order, so results are bit-identical for any number of threads.

Threads: each kernel that shares out its items is a plain ``nogil`` worker
that takes the next item (or chunk of rows) from an atomic counter
(:func:`calframe._kernels.chunks.take`) until none is left, run on several
threads at once by :func:`calframe._jit.on_threads` from a Python driver of
the old name.  numba's ``parallel=True`` compiled the same loops two to five
times slower (``_cdq2d`` 21.6 s; docs/benchmarks.md, "Compile time"), and
items with their own outputs need no partial tables: the bits are the same.
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import njit
from .chunks import run_items, take

#: den below exp(-ISO) (unshifted) -> recompute with the explicit min-distance shift
ISO = 550.0
#: the factorised brute force needs (max - min) / h <= FAST_RANGE in every dimension
FAST_RANGE = 600.0
#: queries per tile of the brute force
QUERY_TILE = 16
#: the 3-d divide and conquer needs (max - min) / h <= FAST_RANGE3 in every coordinate
FAST_RANGE3 = 400.0
#: a d = 3 bin uses the 3-d divide and conquer when n_ref * n_query exceeds this
TREE3_MIN_PAIRS = 1 << 22
#: leaf size of the 2-d divide and conquer (pairs inside a leaf are summed directly)
LEAF = 16
#: a d = 2 bin uses the divide and conquer when n_ref * n_query exceeds this
TREE_MIN_PAIRS = 1 << 17

_FM = {"reassoc", "contract", "nsz", "arcp"}
#: rows per chunk of the elementwise workers (:func:`_exp_tables`, :func:`_gather`, :func:`_scatter`)
ROW_CHUNK = 1 << 13
#: queries per chunk of the direct path's worker (a query may have few reference rows)
DIRECT_CHUNK = 16


# ---------------------------------------------------------------------------
# 1. exact shifted path (one exp per pair)
# ---------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _direct_worker(rX, rV, qX, q_rs, q_re, qlist, h, out, taken):
    """:func:`_direct`'s share of one thread: chunks of DIRECT_CHUNK queries of qlist, taken by the counter.

    The query's loop is here, its sums in an array of this kernel's own, as in the old kernel: a scratch array
    passed to an out-of-line call per query may alias the inputs for all LLVM knows (that version measured
    slower, under load)."""
    d = rX.shape[1]
    M = rV.shape[1]
    inv_h = 1.0 / h
    nq = qlist.shape[0]
    nchunks = (nq + DIRECT_CHUNK - 1) // DIRECT_CHUNK
    while True:
        k = take(taken)
        if k >= nchunks:
            break
        for t in range(k * DIRECT_CHUNK, min(nq, (k + 1) * DIRECT_CHUNK)):
            q = qlist[t]
            rs = q_rs[q]
            re = q_re[q]
            acc = np.zeros(M)
            if re > rs:
                dmin = np.inf
                for i in range(rs, re):
                    D = 0.0
                    for j in range(d):
                        D += abs(qX[q, j] - rX[i, j])
                    if D < dmin:
                        dmin = D
                for i in range(rs, re):
                    D = 0.0
                    for j in range(d):
                        D += abs(qX[q, j] - rX[i, j])
                    w = math.exp(-(D - dmin) * inv_h)
                    for c in range(M):
                        acc[c] += w * rV[i, c]
            for c in range(M):
                out[q, c] = acc[c]


def _direct(rX, rV, qX, q_rs, q_re, qlist, h, out):
    """out[q, :] = shifted sums over reference rows q_rs[q]:q_re[q], for q in qlist.

    rV has M columns (the last is all ones: den).  Pass 1 finds dmin, pass 2
    sums exp(-(D - dmin) / h) (D is recomputed identically, so the nearest row
    weighs exactly 1).  Each query is one thread's (:func:`_direct_worker`).
    """
    nchunks = -(-qlist.shape[0] // DIRECT_CHUNK)
    run_items(_direct_worker, (rX, rV, qX, q_rs, q_re, qlist, float(h), out), nchunks)


# ---------------------------------------------------------------------------
# 2. factorised brute force
# ---------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _exp_tables_worker(X, pt_group, g_center, h, E, I, taken):
    """:func:`_exp_tables` on the chunks of ROW_CHUNK rows this thread takes."""
    n, d = X.shape
    inv_h = 1.0 / h
    nchunks = (n + ROW_CHUNK - 1) // ROW_CHUNK
    while True:
        k = take(taken)
        if k >= nchunks:
            break
        for i in range(k * ROW_CHUNK, min(n, (k + 1) * ROW_CHUNK)):
            g = pt_group[i]
            for j in range(d):
                z = (X[i, j] - g_center[g, j]) * inv_h
                E[j, i] = math.exp(z)
                I[j, i] = math.exp(-z)


def _exp_tables(X, pt_group, g_center, h, E, I):
    """E[j, i] = exp((X[i, j] - c_j) / h), I = 1 / that, c = centre of the point's group: each element one
    thread's (:func:`_exp_tables_worker`)."""
    nchunks = -(-X.shape[0] // ROW_CHUNK)
    run_items(_exp_tables_worker, (X, pt_group, g_center, float(h), E, I), nchunks)


def _brute_tiles(RE, RI, RVT, QE, QI, tile_q0, tile_q1, tile_rs, tile_re, rt, out):
    """Unshifted kernel sums for query tiles [q0, q1) against reference rows [rs, re).

    RE/RI: (d, n_ref) tables, RVT: (M, n_ref) values (last row ones), QE/QI:
    (d, n_query).  Reference rows are visited in chunks of rt; per query the
    product of the d factors is built in a chunk buffer (vectorised over rows),
    four queries at a time so that they share the loads of the row tables.
    Each tile is one thread's (:func:`_brute_worker`), its queries' rows of out its own.
    """
    run_items(_brute_worker, (RE, RI, RVT, QE, QI, tile_q0, tile_q1, tile_rs, tile_re, rt, out), tile_q0.shape[0])


@njit(cache=True, nogil=True, fastmath=_FM)
def _brute_worker(RE, RI, RVT, QE, QI, tile_q0, tile_q1, tile_rs, tile_re, rt, out, taken):
    """:func:`_brute_tiles`'s share of one thread: the tiles it takes by the counter."""
    d = RE.shape[0]
    M = RVT.shape[0]
    ntiles = tile_q0.shape[0]
    while True:
        t = take(taken)
        if t >= ntiles:
            break
        q0 = tile_q0[t]
        q1 = tile_q1[t]
        rs = tile_rs[t]
        re = tile_re[t]
        nq = q1 - q0
        acc = np.zeros((nq, M))
        p0 = np.empty(rt)
        p1 = np.empty(rt)
        p2 = np.empty(rt)
        p3 = np.empty(rt)
        for r0 in range(rs, re, rt):
            r1 = min(r0 + rt, re)
            L = r1 - r0
            qi = 0
            while qi + 4 <= nq:
                # four queries share each load of the row tables
                q = q0 + qi
                e0 = RE[0, r0:r1]
                i0 = RI[0, r0:r1]
                a0 = QE[0, q]
                a1 = QE[0, q + 1]
                a2 = QE[0, q + 2]
                a3 = QE[0, q + 3]
                c0 = QI[0, q]
                c1 = QI[0, q + 1]
                c2 = QI[0, q + 2]
                c3 = QI[0, q + 3]
                for i in range(L):
                    e = e0[i]
                    v = i0[i]
                    p0[i] = min(e * c0, a0 * v)
                    p1[i] = min(e * c1, a1 * v)
                    p2[i] = min(e * c2, a2 * v)
                    p3[i] = min(e * c3, a3 * v)
                for j in range(1, d):
                    ej = RE[j, r0:r1]
                    ij = RI[j, r0:r1]
                    a0 = QE[j, q]
                    a1 = QE[j, q + 1]
                    a2 = QE[j, q + 2]
                    a3 = QE[j, q + 3]
                    c0 = QI[j, q]
                    c1 = QI[j, q + 1]
                    c2 = QI[j, q + 2]
                    c3 = QI[j, q + 3]
                    for i in range(L):
                        e = ej[i]
                        v = ij[i]
                        p0[i] *= min(e * c0, a0 * v)
                        p1[i] *= min(e * c1, a1 * v)
                        p2[i] *= min(e * c2, a2 * v)
                        p3[i] *= min(e * c3, a3 * v)
                s0 = 0.0
                s1 = 0.0
                s2 = 0.0
                s3 = 0.0
                for i in range(L):
                    s0 += p0[i]
                    s1 += p1[i]
                    s2 += p2[i]
                    s3 += p3[i]
                acc[qi, M - 1] += s0
                acc[qi + 1, M - 1] += s1
                acc[qi + 2, M - 1] += s2
                acc[qi + 3, M - 1] += s3
                for c in range(M - 1):
                    vc = RVT[c, r0:r1]
                    s0 = 0.0
                    s1 = 0.0
                    s2 = 0.0
                    s3 = 0.0
                    for i in range(L):
                        v = vc[i]
                        s0 += p0[i] * v
                        s1 += p1[i] * v
                        s2 += p2[i] * v
                        s3 += p3[i] * v
                    acc[qi, c] += s0
                    acc[qi + 1, c] += s1
                    acc[qi + 2, c] += s2
                    acc[qi + 3, c] += s3
                qi += 4
            while qi < nq:
                q = q0 + qi
                e0 = RE[0, r0:r1]
                i0 = RI[0, r0:r1]
                aq = QE[0, q]
                bq = QI[0, q]
                for i in range(L):
                    t1 = e0[i] * bq
                    t2 = aq * i0[i]
                    p0[i] = min(t1, t2)
                for j in range(1, d):
                    ej = RE[j, r0:r1]
                    ij = RI[j, r0:r1]
                    aq = QE[j, q]
                    bq = QI[j, q]
                    for i in range(L):
                        t1 = ej[i] * bq
                        t2 = aq * ij[i]
                        p0[i] *= min(t1, t2)
                s0 = 0.0
                for i in range(L):
                    s0 += p0[i]
                acc[qi, M - 1] += s0
                for c in range(M - 1):
                    vc = RVT[c, r0:r1]
                    s0 = 0.0
                    for i in range(L):
                        s0 += p0[i] * vc[i]
                    acc[qi, c] += s0
                qi += 1
        for qi in range(nq):
            for c in range(M):
                out[q0 + qi, c] = acc[qi, c]


# ---------------------------------------------------------------------------
# 3. d = 1: sorted sweeps with decaying running sums (exact shift)
# ---------------------------------------------------------------------------


def _sweep1d(rx, rV, qx, g_rs, g_re, g_qs, g_qe, groups, h, out):
    """For each group g in groups: rows rs:re and queries qs:qe, both ascending in x. Each group is one
    thread's (:func:`_sweep1d_worker`)."""
    run_items(_sweep1d_worker, (rx, rV, qx, g_rs, g_re, g_qs, g_qe, groups, float(h), out), groups.shape[0])


@njit(cache=True, nogil=True)
def _sweep1d_worker(rx, rV, qx, g_rs, g_re, g_qs, g_qe, groups, h, out, taken):
    """:func:`_sweep1d`'s share of one thread: the groups it takes by the counter."""
    M = rV.shape[1]
    inv_h = 1.0 / h
    ngroups = groups.shape[0]
    while True:
        t = take(taken)
        if t >= ngroups:
            break
        g = groups[t]
        rs = g_rs[g]
        n = g_re[g] - rs
        xs = rx[rs:rs + n]
        V = rV[rs:rs + n]
        S = np.empty((n, M))  # S[j] = sum_{k <= j} v_k exp(-(x_j - x_k)/h)
        T = np.empty((n, M))  # T[j] = sum_{k >= j} v_k exp(-(x_k - x_j)/h)
        for c in range(M):
            S[0, c] = V[0, c]
            T[n - 1, c] = V[n - 1, c]
        for k in range(1, n):
            f = math.exp(-(xs[k] - xs[k - 1]) * inv_h)
            for c in range(M):
                S[k, c] = S[k - 1, c] * f + V[k, c]
        for k in range(n - 2, -1, -1):
            f = math.exp(-(xs[k + 1] - xs[k]) * inv_h)
            for c in range(M):
                T[k, c] = T[k + 1, c] * f + V[k, c]
        p = 0  # xs[:p] <= x < xs[p:]
        for q in range(g_qs[g], g_qe[g]):
            x = qx[q]
            while p < n and xs[p] <= x:
                p += 1
            dl = x - xs[p - 1] if p > 0 else np.inf
            dr = xs[p] - x if p < n else np.inf
            dmin = min(dl, dr)
            fl = math.exp(-(dl - dmin) * inv_h) if p > 0 else 0.0
            fr = math.exp(-(dr - dmin) * inv_h) if p < n else 0.0
            for c in range(M):
                acc = 0.0
                if p > 0:
                    acc += S[p - 1, c] * fl
                if p < n:
                    acc += T[p, c] * fr
                out[q, c] = acc


# ---------------------------------------------------------------------------
# 4. d = 2 and 3: divide and conquer on x
# ---------------------------------------------------------------------------


@njit(cache=True)
def _sweep_visit(k, kind2, ax, side, A2, V2, SL, SR, M):
    """One row of a 2-d sweep: a query (kind bit 2) takes the running sum of the other side, a reference
    (kind bit 1) adds its values to its own side's running sum (SL/SR already decayed to row k)."""
    kd = kind2[k]
    a = ax[k]
    if kd & 2:
        if side[k]:
            for c in range(M):
                A2[k, c] += a * SL[c]
        else:
            for c in range(M):
                A2[k, c] += a * SR[c]
    if kd & 1:
        if side[k]:
            for c in range(M):
                SR[c] += a * V2[k, c]
        else:
            for c in range(M):
                SL[c] += a * V2[k, c]


@njit(inline="always", cache=True)
def _items(rX, qX, self_mode, d):
    """The first d coordinates of the items of a divide and conquer: the reference rows, then (unless in
    self mode, where row k is also query k) the queries. Returns (n rows, n queries, N items, coordinates)."""
    n = rX.shape[0]
    nq = n if self_mode else qX.shape[0]
    N = n if self_mode else n + nq
    Xa = np.empty((N, d))
    for k in range(n):
        for j in range(d):
            Xa[k, j] = rX[k, j]
    if not self_mode:
        for k in range(nq):
            for j in range(d):
                Xa[n + k, j] = qX[k, j]
    return n, nq, N, Xa


@njit(inline="always", cache=True)
def _x_order(x, n, N, self_mode):
    """Item order: the rows and the queries (each ascending in x) merged by x; in self mode, as they are."""
    ox = np.empty(N, np.int64)
    if self_mode:
        for k in range(N):
            ox[k] = k
        return ox
    i = 0
    j = n
    for k in range(N):
        if j >= N or (i < n and x[i] <= x[j]):
            ox[k] = i
            i += 1
        else:
            ox[k] = j
            j += 1
    return ox


@njit(inline="always", cache=True)
def _records(N, head, M):
    """N zeroed records: ``head`` columns, values (M), accumulators (M), query id. Returns (aV, aA, aQ, R): the
    first column of the values, of the accumulators, the query id's column, the records."""
    aV = head
    aA = head + M
    aQ = head + 2 * M
    return aV, aA, aQ, np.zeros((N, aQ + 1))


@njit(inline="always", cache=True)
def _merge_block(R, R2, side, b0, w, N):
    """Merge (by column 0) the blocks [b0, b0 + w) and [b0 + w, b0 + 2 w) of R (clipped to N) into R2; returns
    the second block's bounds (m0, b1), empty when m0 >= b1."""
    m0 = min(b0 + w, N)
    b1 = min(b0 + 2 * w, N)
    _merge_records(R, R2, side, b0, m0, b1, 0)
    return m0, b1


@njit(inline="always", cache=True)
def _add_pair(R, q, i, w, aA, aV, M):
    """Query record q accumulates w times the values of record i."""
    for c in range(M):
        R[q, aA + c] += w * R[i, aV + c]


@njit(inline="always", cache=True)
def _leaves(R, R2, N, aA, aV, M, three):
    """Leaves of LEAF records (consecutive in x): every pair directly (the kernel of _cdq2d_fast_group's
    records, or with ``three`` of _cdq3d_fast_group's), then each leaf sorted by y into R2. Returns the
    scratch index array (LEAF entries)."""
    idx = np.empty(LEAF, np.int64)
    for b0 in range(0, N, LEAF):
        b1 = min(b0 + LEAF, N)
        for q in range(b0, b1):
            for i in range(b0, b1):
                if i != q:
                    _add_pair(R, q, i, _pair3(R, i, q) if three else _pair2(R, i, q), aA, aV, M)
        _sort_records(R, R2, b0, b1, 0, idx)
    return idx


@njit(inline="always", cache=True)
def _pair2(R, i, q):
    """The kernel of rows i != q of _cdq2d_fast_group's records (x_i <= x_q when i < q)."""
    if i < q:
        return min(R[i, 1] * R[q, 4], R[i, 3] * R[q, 2])
    return min(R[i, 2] * R[q, 3], R[i, 4] * R[q, 1])


@njit(inline="always", cache=True)
def _pair3(R, i, q):
    """The kernel of rows i != q of _cdq3d_fast_group's records: the smallest of the four (y, z) sign
    choices, the x one fixed by the order."""
    bx = 0 if i < q else 1
    wmin = np.inf
    for t in range(4):
        by = t & 1
        bz = t >> 1
        v = R[i, 2 + bx + 2 * by + 4 * bz] * R[q, 2 + (1 - bx) + 2 * (1 - by) + 4 * (1 - bz)]
        wmin = min(wmin, v)
    return wmin


@njit(inline="always", cache=True)
def _write_out(R, aA, aQ, M, out):
    """out[query id] = the accumulators of each record holding a query."""
    for k in range(R.shape[0]):
        q = int(R[k, aQ])
        if q >= 0:
            for c in range(M):
                out[q, c] = R[k, aA + c]


@njit(cache=True)
def _cdq2d_group(rX, rV, qX, self_mode, h, out):
    """Unshifted exact 2-d kernel sums (one bin) by divide and conquer on x.

    Items (rows and queries; in self mode row k is also query k) are sorted
    by x and merged bottom-up by y.  When blocks L (smaller x) and R are
    merged, with x_s = the first x of R, every pair (i in L, q in R) has
    exp(-|dx|/h) = exp(-(x_s - x_i)/h) exp(-(x_q - x_s)/h), so the L -> R
    (and R -> L) contributions are 1-d problems in y, solved by a forward
    and a backward sweep over the merged y order with decaying running sums
    (step factors exp(-(y_k - y_{k-1})/h) <= 1).  Every pair meets at
    exactly one merge; all factors are <= 1.  2 exp per item per level.
    """
    M = rV.shape[1]
    inv_h = 1.0 / h
    n, nq, N, Xa = _items(rX, qX, self_mode, 1)
    xa = Xa[:, 0]
    ox = np.argsort(xa)  # items in x order
    xs = np.empty(N)  # static: x of the k-th item in x order
    X = np.empty(N)
    Y = np.empty(N)
    V = np.zeros((N, M))
    A = np.zeros((N, M))
    kind = np.zeros(N, np.int8)  # bit 0: row, bit 1: query
    qid = np.full(N, -1, np.int64)
    for k in range(N):
        o = ox[k]
        xs[k] = xa[o]
        X[k] = xa[o]
        if o < n:
            Y[k] = rX[o, 1]
            for c in range(M):
                V[k, c] = rV[o, c]
            kind[k] = 1
            if self_mode:
                kind[k] = 3
                qid[k] = o
                for c in range(M):
                    A[k, c] = rV[o, c]  # the row itself, kernel 1
        else:
            Y[k] = qX[o - n, 1]
            kind[k] = 2
            qid[k] = o - n
    X2 = np.empty(N)
    Y2 = np.empty(N)
    V2 = np.empty((N, M))
    A2 = np.empty((N, M))
    kind2 = np.empty(N, np.int8)
    qid2 = np.empty(N, np.int64)
    side = np.empty(N, np.int8)
    ax = np.empty(N)
    fy = np.empty(N)
    SL = np.empty(M)
    SR = np.empty(M)
    w = 1
    while w < N:
        for b0 in range(0, N, 2 * w):
            m0 = min(b0 + w, N)
            b1 = min(b0 + 2 * w, N)
            # stable merge of [b0, m0) and [m0, b1) by y
            i = b0
            j = m0
            for k in range(b0, b1):
                if j >= b1 or (i < m0 and Y[i] <= Y[j]):
                    src = i
                    i += 1
                    side[k] = 0
                else:
                    src = j
                    j += 1
                    side[k] = 1
                X2[k] = X[src]
                Y2[k] = Y[src]
                kind2[k] = kind[src]
                qid2[k] = qid[src]
                for c in range(M):
                    V2[k, c] = V[src, c]
                    A2[k, c] = A[src, c]
            if m0 >= b1:
                continue
            xsp = xs[m0]
            for k in range(b0, b1):
                ax[k] = math.exp(-abs(X2[k] - xsp) * inv_h)
            fy[b0] = 0.0
            for k in range(b0 + 1, b1):
                fy[k] = math.exp(-(Y2[k] - Y2[k - 1]) * inv_h)
            # forward: rows before k in y order
            for c in range(M):
                SL[c] = 0.0
                SR[c] = 0.0
            for k in range(b0, b1):
                f = fy[k]
                for c in range(M):
                    SL[c] *= f
                    SR[c] *= f
                _sweep_visit(k, kind2, ax, side, A2, V2, SL, SR, M)
            # backward: rows after k in y order
            for c in range(M):
                SL[c] = 0.0
                SR[c] = 0.0
            for k in range(b1 - 1, b0 - 1, -1):
                if k + 1 < b1:
                    f = fy[k + 1]
                    for c in range(M):
                        SL[c] *= f
                        SR[c] *= f
                _sweep_visit(k, kind2, ax, side, A2, V2, SL, SR, M)
        X, X2 = X2, X
        Y, Y2 = Y2, Y
        V, V2 = V2, V
        A, A2 = A2, A
        kind, kind2 = kind2, kind
        qid, qid2 = qid2, qid
        w *= 2
    for k in range(N):
        q = qid[k]
        if q >= 0:
            for c in range(M):
                out[q, c] = A[k, c]


@njit(cache=True)
def _cdq2d_fast_group(rX, rV, qX, self_mode, h, out):
    """As _cdq2d_group, exp-free per level: needs x and y ranges <= FAST_RANGE h.

    Rows and queries must each be in ascending x.

    With per-item ex = exp((x - cx)/h), exi = 1/ex, ey, eyi likewise (centred
    at the bin's mid-range, so all lie in [e^-300, e^300]), the kernel of a
    pair is a product of one factor per item (e.g. ex_i ey_i * exi_q eyi_q
    for x_i <= x_q, y_i <= y_q), so every merge needs only prefix sums of
    pre-multiplied row weights; no exp after the setup, no multiplicative
    chains.  Each term's relative error is <= ~(|z_i| + |z_q|) ulps, z the
    centred coordinates in units of h (<= 1200 ulps by construction).
    Returns False (and does nothing) when the bin is too wide.
    """
    M = rV.shape[1]
    inv_h = 1.0 / h
    n, nq, N, Xa = _items(rX, qX, self_mode, 2)
    xa = Xa[:, 0]
    ya = Xa[:, 1]
    x0 = xa.min()
    x1 = xa.max()
    y0 = ya.min()
    y1 = ya.max()
    if not (x1 - x0 <= FAST_RANGE * h and y1 - y0 <= FAST_RANGE * h):
        return False
    cx = 0.5 * (x0 + x1)
    cy = 0.5 * (y0 + y1)
    ox = _x_order(xa, n, N, self_mode)
    # one record per item: y, ex ey, exi ey, ex eyi, exi eyi, values (M),
    # accumulators (M), query id (-1: none).  Records move with the merges, so
    # every pass over them is sequential.
    aV, aA, aQ, R = _records(N, 5, M)
    for k in range(N):
        o = ox[k]
        zx = (xa[o] - cx) * inv_h
        zy = (ya[o] - cy) * inv_h
        ex = math.exp(zx)
        exi = math.exp(-zx)
        ey = math.exp(zy)
        eyi = math.exp(-zy)
        R[k, 0] = ya[o]
        R[k, 1] = ex * ey
        R[k, 2] = exi * ey
        R[k, 3] = ex * eyi
        R[k, 4] = exi * eyi
        _record_payload(R, k, o, n, rV, self_mode, aV, aA, aQ)
    R2 = np.empty_like(R)
    side = np.empty(N, np.int64)
    _leaves(R, R2, N, aA, aV, M, False)
    R, R2 = R2, R
    S = np.empty((2, M))
    w = LEAF
    while w < N:
        for b0 in range(0, N, 2 * w):
            m0, b1 = _merge_block(R, R2, side, b0, w, N)  # by y, moving records
            if m0 < b1:
                # S[0]: rows of the left block seen so far, S[1]: of the right block;
                # a left item (r = 0) reads S[1], a right one S[0].
                # forward (rows before k in y order): row weights left ex ey,
                # right exi ey; query factors left ex eyi, right exi eyi
                _sweep2d_fast(R2, side, S, b0, b1, 1, 3, 1, aA, aV, M)
                # backward (rows after k): row weights left ex eyi, right exi eyi;
                # query factors left ex ey, right exi ey
                _sweep2d_fast(R2, side, S, b1 - 1, b0 - 1, -1, 1, 3, aA, aV, M)
        R, R2 = R2, R
        w *= 2
    _write_out(R, aA, aQ, M, out)
    return True


@njit(inline="always", cache=True)
def _sweep2d_fast(R2, side, S, start, stop, step, fq, fr, aA, aV, M):
    """One sweep of _cdq2d_fast_group's merge over R2[start:stop:step]: each item takes the running sums of
    the other block times its query factor (column fq + side), then adds its values times its row factor
    (column fr + side) to its own block's."""
    for c in range(M):
        S[0, c] = 0.0
        S[1, c] = 0.0
    for k in range(start, stop, step):
        r = side[k]
        f = R2[k, fq + r]
        g = R2[k, fr + r]
        for c in range(M):
            R2[k, aA + c] += f * S[1 - r, c]
            S[r, c] += g * R2[k, aV + c]


@njit(cache=True)
def _record_payload(R, k, o, n, rV, self_mode, aV, aA, aQ):
    """Record k holds item o: a reference row (o < n) carries its values (and, in self mode, is its own
    query, starting from its own values: kernel 1); a query row carries its query id; else id -1."""
    M = rV.shape[1]
    R[k, aQ] = -1.0
    if o < n:
        for c in range(M):
            R[k, aV + c] = rV[o, c]
        if self_mode:
            R[k, aQ] = o
            for c in range(M):
                R[k, aA + c] = rV[o, c]
    else:
        R[k, aQ] = o - n


@njit(cache=True)
def _merge_records(R, R2, side, b0, m0, b1, key):
    """Stable merge of R[b0:m0] and R[m0:b1] (each ascending in column key) into R2[b0:b1].

    side[k] = 1 if R2[k] came from the second run.
    """
    W = R.shape[1]
    i = b0
    j = m0
    k = b0
    while i < m0 and j < b1:
        tj = 1 if R[j, key] < R[i, key] else 0
        src = j if tj else i
        for c in range(W):
            R2[k, c] = R[src, c]
        side[k] = tj
        j += tj
        i += 1 - tj
        k += 1
    k = _copy_records(R, R2, side, i, m0, k, 0)  # the rest of the run not exhausted
    _copy_records(R, R2, side, j, b1, k, 1)


@njit(inline="always", cache=True)
def _copy_records(R, R2, side, s0, s1, k, tag):
    """R2[k:] = R[s0:s1] with side = tag; returns the next k."""
    for src in range(s0, s1):
        for c in range(R.shape[1]):
            R2[k, c] = R[src, c]
        side[k] = tag
        k += 1
    return k


@njit(cache=True)
def _sort_records(R, R2, b0, b1, key, idx):
    """R2[b0:b1] = R[b0:b1] stably sorted by column key (insertion sort, short runs)."""
    W = R.shape[1]
    L = b1 - b0
    for t in range(L):
        u = t
        while u > 0 and R[idx[u - 1], key] > R[b0 + t, key]:
            idx[u] = idx[u - 1]
            u -= 1
        idx[u] = b0 + t
    for t in range(L):
        for c in range(W):
            R2[b0 + t, c] = R[idx[t], c]


@njit(cache=True)
def _cdq3d_inner(Ro, b0, b1, color, M, I, I2, iside, idx, S):
    """Cross sums of one outer merge: rows of colour c to queries of colour 1 - c.

    Ro[b0:b1] are outer records (y, z, P[8], V, A, qid) in y order, color = 0
    for the smaller-x block.  2-d divide and conquer on (y, z) over inner
    records (z, Q[4] = P[c + 2 by + 4 bz], V, A, position, colour); the
    accumulated sums are added back to Ro.
    """
    B = LEAF
    n = b1 - b0
    oV = 10
    oA = 10 + M
    aV = 5
    aA = 5 + M
    aP = 5 + 2 * M
    aC = aP + 1
    for k in range(n):
        c = color[b0 + k]
        I[k, 0] = Ro[b0 + k, 1]
        for t in range(4):
            by = t & 1
            bz = t >> 1
            I[k, 1 + t] = Ro[b0 + k, 2 + c + 2 * by + 4 * bz]
        for u in range(M):
            I[k, aV + u] = Ro[b0 + k, oV + u]
            I[k, aA + u] = 0.0
        I[k, aP] = b0 + k
        I[k, aC] = c
    # inner leaves (consecutive in y): pairs of opposite colours directly
    for l0 in range(0, n, B):
        l1 = min(l0 + B, n)
        for q in range(l0, l1):
            cq = I[q, aC]
            for i in range(l0, l1):
                if I[i, aC] == cq:
                    continue
                if i < q:  # y_i <= y_q: row by = 0, query by = 1
                    w = min(I[i, 1] * I[q, 4], I[i, 3] * I[q, 2])
                else:
                    w = min(I[i, 2] * I[q, 3], I[i, 4] * I[q, 1])
                _add_pair(I, q, i, w, aA, aV, M)
        _sort_records(I, I2, l0, l1, 0, idx)
    I, I2 = I2, I
    w = B
    while w < n:
        for l0 in range(0, n, 2 * w):
            m0, l1 = _merge_block(I, I2, iside, l0, w, n)
            if m0 < l1:
                # S[2 c + r]: rows of colour c in inner block r seen so far
                _sweep3d_inner(I2, iside, S, l0, l1, 1, 3, 1, aA, aV, aC, M)  # forward: rows before k in z (bz = 0)
                _sweep3d_inner(I2, iside, S, l1 - 1, l0 - 1, -1, 1, 3, aA, aV, aC, M)  # backward: after k (bz = 1)
        I, I2 = I2, I
        w *= 2
    for k in range(n):
        pos = int(I[k, aP])
        for u in range(M):
            Ro[pos, oA + u] += I[k, aA + u]


@njit(inline="always", cache=True)
def _sweep3d_inner(I2, iside, S, start, stop, step, fq, fr, aA, aV, aC, M):
    """One sweep of _cdq3d_inner's merge over I2[start:stop:step]: each item takes the running sums of the rows
    of the other colour in the other block times its query factor (column fq + side), then adds its values
    times its row factor (column fr + side) to its own colour and block's."""
    for g in range(4):
        for u in range(M):
            S[g, u] = 0.0
    for k in range(start, stop, step):
        c = int(I2[k, aC])
        r = iside[k]
        f = I2[k, fq + r]
        gw = I2[k, fr + r]
        src = 2 * (1 - c) + (1 - r)
        dst = 2 * c + r
        for u in range(M):
            I2[k, aA + u] += f * S[src, u]
            S[dst, u] += gw * I2[k, aV + u]


@njit(cache=True)
def _cdq3d_fast_group(rX, rV, qX, self_mode, h, out):
    """Exact 3-d kernel sums (one bin): divide and conquer on x, each merge a
    2-d divide and conquer on (y, z) between the two halves (O(n log^2 n)).

    Needs every coordinate range <= FAST_RANGE3 h (factors in [e^-200, e^200],
    products of three in [e^-600, e^600]); returns False otherwise.  Per item
    P[b] = prod_k (exp(z_k) if bit k of b is 0 else exp(-z_k)), z centred
    coordinates in units of h; a pair's kernel is P_row[b] P_query[7 - b] with
    bit k set for the larger of the two in coordinate k.
    Rows and queries must each be in ascending x.
    """
    M = rV.shape[1]
    inv_h = 1.0 / h
    n, nq, N, Xa = _items(rX, qX, self_mode, 3)
    cen = np.empty(3)
    for j in range(3):
        lo = Xa[:, j].min()
        hi = Xa[:, j].max()
        if not (hi - lo <= FAST_RANGE3 * h):
            return False
        cen[j] = 0.5 * (lo + hi)
    ox = _x_order(Xa[:, 0], n, N, self_mode)
    # outer records: y, z, P[8], values (M), accumulators (M), query id
    aV, aA, aQ, R = _records(N, 10, M)
    e = np.empty((3, 2))
    for k in range(N):
        o = ox[k]
        for j in range(3):
            z = (Xa[o, j] - cen[j]) * inv_h
            e[j, 0] = math.exp(z)
            e[j, 1] = math.exp(-z)
        R[k, 0] = Xa[o, 1]
        R[k, 1] = Xa[o, 2]
        for b in range(8):
            R[k, 2 + b] = e[0, b & 1] * e[1, (b >> 1) & 1] * e[2, b >> 2]
        _record_payload(R, k, o, n, rV, self_mode, aV, aA, aQ)
    R2 = np.empty_like(R)
    side = np.empty(N, np.int64)
    idx = _leaves(R, R2, N, aA, aV, M, True)
    R, R2 = R2, R
    Wi = 7 + 2 * M
    I = np.empty((N, Wi))
    I2 = np.empty((N, Wi))
    iside = np.empty(N, np.int64)
    S = np.empty((4, M))
    w = LEAF
    while w < N:
        for b0 in range(0, N, 2 * w):
            m0, b1 = _merge_block(R, R2, side, b0, w, N)
            if m0 < b1:
                _cdq3d_inner(R2, b0, b1, side, M, I, I2, iside, idx, S)
        R, R2 = R2, R
        w *= 2
    _write_out(R, aA, aQ, M, out)
    return True


@njit(cache=True, nogil=True)
def _cdq3d_worker(rX, rV, qX, g_rs, g_re, g_qs, g_qe, groups, self_mode, h, out, done, taken):
    """:func:`_cdq3d`'s share of one thread: the groups it takes by the counter."""
    while True:
        t = take(taken)
        if t >= groups.shape[0]:
            break
        g = groups[t]
        done[t] = _cdq3d_fast_group(rX[g_rs[g]:g_re[g]], rV[g_rs[g]:g_re[g]],
                                    qX[g_qs[g]:g_qe[g]], self_mode, h, out[g_qs[g]:g_qe[g]])


def _cdq3d(rX, rV, qX, g_rs, g_re, g_qs, g_qe, groups, self_mode, h, out, done):
    """The 3-d divide and conquer of each group (done[t]: group t was narrow enough), each group one
    thread's."""
    run_items(_cdq3d_worker, (rX, rV, qX, g_rs, g_re, g_qs, g_qe, groups, bool(self_mode), float(h), out, done),
              groups.shape[0])


@njit(cache=True, nogil=True)
def _cdq2d_worker(rX, rV, qX, g_rs, g_re, g_qs, g_qe, groups, self_mode, h, out, taken):
    """:func:`_cdq2d`'s share of one thread: the groups it takes by the counter."""
    while True:
        t = take(taken)
        if t >= groups.shape[0]:
            break
        g = groups[t]
        rXg = rX[g_rs[g]:g_re[g]]
        rVg = rV[g_rs[g]:g_re[g]]
        qXg = qX[g_qs[g]:g_qe[g]]
        og = out[g_qs[g]:g_qe[g]]
        if not _cdq2d_fast_group(rXg, rVg, qXg, self_mode, h, og):
            _cdq2d_group(rXg, rVg, qXg, self_mode, h, og)


def _cdq2d(rX, rV, qX, g_rs, g_re, g_qs, g_qe, groups, self_mode, h, out):
    """The 2-d divide and conquer of each group (the fast variant where the group is narrow enough, else the
    chain variant), each group one thread's (:func:`_cdq2d_worker`): the biggest first, as the caller orders
    them."""
    run_items(_cdq2d_worker, (rX, rV, qX, g_rs, g_re, g_qs, g_qe, groups, bool(self_mode), float(h), out),
              groups.shape[0])


@njit(cache=True)
def _isolated(out, q_rs, q_re, thresh):
    """Queries with a non-empty bin whose den (last column) is below thresh."""
    n = out.shape[0]
    M = out.shape[1]
    flag = np.zeros(n, np.bool_)
    cnt = 0
    for q in range(n):
        if q_re[q] > q_rs[q] and not (out[q, M - 1] >= thresh):
            flag[q] = True
            cnt += 1
    res = np.empty(cnt, np.int64)
    k = 0
    for q in range(n):
        if flag[q]:
            res[k] = q
            k += 1
    return res


# ---------------------------------------------------------------------------
# entry points
# ---------------------------------------------------------------------------


@njit(cache=True)
def _bucket_order(keys_pre, K, pre):
    """Stable counting sort of the order `pre` by keys in [0, K) (keys_pre = keys[pre]).

    Returns (order, starts (K + 1)).
    """
    n = keys_pre.shape[0]
    start = np.zeros(K + 1, np.int64)
    for t in range(n):
        start[keys_pre[t] + 1] += 1
    for k in range(K):
        start[k + 1] += start[k]
    pos = start[:K].copy()
    order = np.empty(n, np.int64)
    for t in range(n):
        k = keys_pre[t]
        order[pos[k]] = pre[t]
        pos[k] += 1
    return order, start


@njit(cache=True, nogil=True)
def _gather_worker(feats, values, order, X, V, taken):
    """:func:`_gather` on the chunks of ROW_CHUNK rows this thread takes."""
    n = order.shape[0]
    d = feats.shape[1]
    m = values.shape[1]
    nchunks = (n + ROW_CHUNK - 1) // ROW_CHUNK
    while True:
        k = take(taken)
        if k >= nchunks:
            break
        for t in range(k * ROW_CHUNK, min(n, (k + 1) * ROW_CHUNK)):
            i = order[t]
            for j in range(d):
                X[t, j] = feats[i, j]
            for c in range(m):
                V[t, c] = values[i, c]
            V[t, m] = 1.0


def _gather(feats, values, order):
    """(feats[order], [values[order], 1]) as new C arrays: chunks of rows on several threads (a random-access
    copy, which threads speed up while memory latency bounds it)."""
    n = order.shape[0]
    X = np.empty((n, feats.shape[1]))
    V = np.empty((n, values.shape[1] + 1))
    run_items(_gather_worker, (feats, values, order, X, V), -(-n // ROW_CHUNK))
    return X, V


@njit(cache=True, nogil=True)
def _scatter_worker(out, order, num, den, taken):
    """:func:`_scatter` on the chunks of ROW_CHUNK rows this thread takes."""
    n = out.shape[0]
    m = out.shape[1] - 1
    nchunks = (n + ROW_CHUNK - 1) // ROW_CHUNK
    while True:
        k = take(taken)
        if k >= nchunks:
            break
        for t in range(k * ROW_CHUNK, min(n, (k + 1) * ROW_CHUNK)):
            i = order[t]
            for c in range(m):
                num[i, c] = out[t, c]
            den[i] = out[t, m]


def _scatter(out, order):
    """num[order[t]] = out[t, :-1], den[order[t]] = out[t, -1] (order a permutation: each row written once),
    chunks of rows on several threads as :func:`_gather`."""
    n = out.shape[0]
    num = np.empty((n, out.shape[1] - 1))
    den = np.empty(n)
    run_items(_scatter_worker, (out, order, num, den), -(-n // ROW_CHUNK))
    return num, den


@njit(cache=True)
def _group_bounds(rX, qX, g_rs, g_re, g_qs, g_qe, groups):
    """Per group (rows indexed by `groups`): coordinate min / max over its rows and queries."""
    G = g_rs.shape[0]
    d = rX.shape[1]
    lo = np.full((G, d), np.inf)
    hi = np.full((G, d), -np.inf)
    for t in range(groups.shape[0]):
        g = groups[t]
        for i in range(g_rs[g], g_re[g]):
            for j in range(d):
                lo[g, j] = min(lo[g, j], rX[i, j])
                hi[g, j] = max(hi[g, j], rX[i, j])
        for i in range(g_qs[g], g_qe[g]):
            for j in range(d):
                lo[g, j] = min(lo[g, j], qX[i, j])
                hi[g, j] = max(hi[g, j], qX[i, j])
    return lo, hi


@njit(cache=True)
def _owner(starts, ends, ids, n):
    """Array of length n: ids[t] on starts[t]:ends[t], 0 elsewhere."""
    res = np.zeros(n, np.int64)
    for t in range(starts.shape[0]):
        for i in range(starts[t], ends[t]):
            res[i] = ids[t]
    return res


def _iota(n):
    return np.arange(n, dtype=np.int64)


def _as_2d(a, n=None):
    a = np.asarray(a, dtype=np.float64)
    if a.ndim == 1:
        a = a.reshape(-1, 1)
    if a.ndim != 2:
        raise ValueError("expected a 1-d or 2-d array")
    if n is not None and a.shape[0] != n:
        raise ValueError("row counts differ")
    return np.ascontiguousarray(a)


def _ref_tile(d: int) -> int:
    """Reference rows per chunk: keeps the chunk's tables (2 d rows) near L1/L2."""
    return int(max(256, min(4096, (1 << 16) // max(d, 1))))


#: kernel evaluations per call of the pair kernels (brute force, direct path): the calls are progress steps
#: (calframe._progress); a query's sums are one thread's in one call, so the results do not depend on the cut
PAIRS_PER_STEP = 1 << 27


def _cuts(work: np.ndarray) -> list[tuple[int, int]]:
    """Consecutive slices of items with ``work`` each, about :data:`PAIRS_PER_STEP` apiece (at least one)."""
    ends = np.searchsorted(np.cumsum(work, dtype=np.float64),
                           np.arange(1, max(1, int(work.sum() // PAIRS_PER_STEP)) + 1) * PAIRS_PER_STEP, "left") + 1
    bounds = np.unique(np.concatenate(([0], np.minimum(ends, len(work)), [len(work)])))
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


def kernel_sums(ref_feats, ref_bins, ref_values, query_feats, query_bins, h, method="auto", desc="kernel sums"):
    """Per query, kernel-weighted sums over the reference rows of the same bin.

    Parameters: ref_feats (n_ref, d), ref_bins (n_ref,) ints, ref_values
    (n_ref, m) or (n_ref,), query_feats (n_query, d), query_bins (n_query,),
    h > 0 (kernel exp(-||a - b||_1 / h)).  method: "auto" (d = 1 sorted
    sweeps; d = 2, 3 divide and conquer on large bins; else the factorised
    brute force), "brute", "tree" (the sweeps / divide and conquer on every
    bin; d >= 4 and too-wide 3-d bins use the brute force) or "direct" (exp
    per pair, explicit shift).  Any method
    hands queries whose unshifted den underflows to the "direct" path.
    desc: the name of the progress bar over the query rows (calframe._progress).

    Returns (num (n_query, m), den (n_query,)): the sums times one positive
    factor per query (only num / den is meaningful); num = den = 0 for a
    query whose bin has no reference row.
    """
    h = float(h)
    if not (h > 0.0):
        raise ValueError("h must be > 0")
    rf = _as_2d(ref_feats)
    n_ref, d = rf.shape
    qf = _as_2d(query_feats)
    if qf.shape[1] != d:
        raise ValueError("ref_feats and query_feats have different widths")
    n_q = qf.shape[0]
    rv = _as_2d(ref_values, n_ref)
    m = rv.shape[1]
    M = m + 1
    rb = np.asarray(ref_bins).astype(np.int64, copy=False).reshape(-1)
    qb = np.asarray(query_bins).astype(np.int64, copy=False).reshape(-1)
    if rb.shape[0] != n_ref or qb.shape[0] != n_q:
        raise ValueError("bins must have one entry per row")

    if method not in ("auto", "tree", "brute", "direct"):
        raise ValueError(f"unknown method {method!r}")
    # queries == rows (LCE): each row is its own query, in the same order below
    self_mode = (qf.shape == rf.shape and np.array_equal(rb, qb)
                 and (query_feats is ref_feats or np.array_equal(rf, qf)))
    # dense bin keys 0..K-1
    allb = rb if self_mode else np.concatenate((rb, qb))
    if len(allb) and int(allb.max()) - int(allb.min()) < 4 * len(allb) + 1024:
        lo_b = allb.min()
        keys = allb - lo_b
        K = int(allb.max() - lo_b) + 1
    elif len(allb):
        _, keys = np.unique(allb, return_inverse=True)
        keys = keys.reshape(-1).astype(np.int64)
        K = int(keys.max()) + 1
    else:
        keys = allb
        K = 0
    rk = keys[:n_ref]
    qk = rk if self_mode else keys[n_ref:]
    # order rows (and queries) by bin, stably; by x within a bin for the sweeps
    x_sorted = d <= 3 and method in ("auto", "tree")
    if x_sorted:
        pre = np.argsort(rf[:, 0])
        ro, r_start = _bucket_order(rk[pre], K, pre)
    else:
        ro, r_start = _bucket_order(rk, K, _iota(n_ref))
    if self_mode:
        qo, q_start = ro, r_start
    elif x_sorted:
        pre = np.argsort(qf[:, 0])
        qo, q_start = _bucket_order(qk[pre], K, pre)
    else:
        qo, q_start = _bucket_order(qk, K, _iota(n_q))
    rX, rV = _gather(rf, rv, ro)
    qX = rX if self_mode else _gather(qf, np.empty((n_q, 0)), qo)[0]
    # groups = bins holding queries
    gk = np.flatnonzero(q_start[1:] > q_start[:-1])
    g_qs = q_start[gk]
    g_qe = q_start[gk + 1]
    g_rs = r_start[gk]
    g_re = r_start[gk + 1]
    g_of_q = np.repeat(np.arange(len(gk)), g_qe - g_qs)
    q_rs = g_rs[g_of_q]
    q_re = g_re[g_of_q]

    out = np.zeros((n_q, M))
    nonempty = np.flatnonzero(g_re > g_rs)
    pairs = (g_re - g_rs) * (g_qe - g_qs)
    direct_q = []
    from .._progress import steps

    bar = steps(n_q, desc, unit="row")  # query rows done (those of bins without reference rows at once)
    bar.update(n_q - int((g_qe - g_qs)[nonempty].sum()))
    slow_q = np.zeros(n_q, bool)  # the queries the direct path computes first (the others' it recomputes)

    if method == "direct":
        direct_q.append(np.flatnonzero(q_re > q_rs))
        slow_q[direct_q[0]] = True
        tree_g = brute_g = np.zeros(0, np.int64)
    else:
        if (method == "tree" and d <= 3) or (method == "auto" and d == 1):
            tree_g = nonempty
        elif method == "auto" and d == 2:
            tree_g = nonempty[pairs[nonempty] > TREE_MIN_PAIRS]
        elif method == "auto" and d == 3:
            tree_g = nonempty[pairs[nonempty] > TREE3_MIN_PAIRS]
        else:
            tree_g = nonempty[:0]
        brute_g = nonempty

    if len(tree_g):
        tg = tree_g[np.argsort(-pairs[tree_g], kind="stable")].astype(np.int64)
        if d == 1:
            _sweep1d(np.ascontiguousarray(rX[:, 0]), rV, np.ascontiguousarray(qX[:, 0]),
                     g_rs, g_re, g_qs, g_qe, tg, h, out)
        elif d == 3:
            done = np.zeros(len(tg), np.bool_)
            _cdq3d(rX, rV, qX, g_rs, g_re, g_qs, g_qe, tg, self_mode, h, out, done)
            tg = tg[done]  # too wide for the 3-d sweep: brute force below
        else:
            _cdq2d(rX, rV, qX, g_rs, g_re, g_qs, g_qe, tg, self_mode, h, out)
        brute_g = np.setdiff1d(brute_g, tg)
        bar.update(int((g_qe - g_qs)[tg].sum()))
    else:
        brute_g = np.setdiff1d(brute_g, tree_g)

    if len(brute_g):
        # per-group centre and width over its reference and query rows
        lo, hi = _group_bounds(rX, qX, g_rs, g_re, g_qs, g_qe, brute_g)
        with np.errstate(invalid="ignore"):
            width_ok = np.all((hi - lo) <= FAST_RANGE * h, axis=1) & np.isfinite(lo).all(1)
        fast_g = brute_g[width_ok[brute_g]]
        slow_g = brute_g[~width_ok[brute_g]]
        if len(slow_g):
            slow_q[np.isin(g_of_q, slow_g)] = True
            direct_q.append(np.flatnonzero(slow_q))
        if len(fast_g):
            center = np.zeros((len(gk), d))
            center[width_ok] = 0.5 * (lo[width_ok] + hi[width_ok])
            g_of_r = _owner(g_rs[fast_g], g_re[fast_g], fast_g, n_ref)
            RE = np.empty((d, n_ref))
            RI = np.empty((d, n_ref))
            _exp_tables(rX, g_of_r, center, h, RE, RI)
            if self_mode:
                QE, QI = RE, RI
            else:
                QE = np.empty((d, n_q))
                QI = np.empty((d, n_q))
                _exp_tables(qX, g_of_q.astype(np.int64), center, h, QE, QI)
            RVT = np.ascontiguousarray(rV.T)
            nt = -(-(g_qe[fast_g] - g_qs[fast_g]) // QUERY_TILE)
            tg = np.repeat(fast_g, nt)
            first = np.repeat(np.cumsum(nt) - nt, nt)
            tq0 = (g_qs[tg] + QUERY_TILE * (np.arange(len(tg)) - first)).astype(np.int64)
            tq1 = np.minimum(tq0 + QUERY_TILE, g_qe[tg]).astype(np.int64)
            trs = g_rs[tg].astype(np.int64)
            tre = g_re[tg].astype(np.int64)
            # biggest tiles first (load balance)
            order = np.argsort(-(tre - trs) * (tq1 - tq0), kind="stable")
            tq0, tq1, trs, tre = tq0[order], tq1[order], trs[order], tre[order]
            for a, b in _cuts((tre - trs) * (tq1 - tq0)):
                _brute_tiles(RE, RI, RVT, QE, QI, tq0[a:b], tq1[a:b], trs[a:b], tre[a:b], _ref_tile(d), out)
                bar.update(int((tq1[a:b] - tq0[a:b]).sum()))

    # isolated queries of the unshifted paths -> exact shifted path
    if method != "direct":
        iso = _isolated(out, q_rs, q_re, math.exp(-ISO))
        if len(iso):
            direct_q.append(iso)
    if direct_q:
        ql = np.unique(np.concatenate(direct_q)).astype(np.int64)
        for a, b in _cuts(q_re[ql] - q_rs[ql]):
            _direct(rX, rV, qX, q_rs, q_re, ql[a:b], h, out)
            bar.update(int(slow_q[ql[a:b]].sum()))
    bar.close()

    num, den = _scatter(out, qo)
    return num, den


def lce(feats, conf, correct, bins, gamma, method="auto"):
    """Per-row local calibration error LCE_gamma (SPEC 5), over the frame itself.

    feats (n, d), conf (n,) lensed confidence g', correct (n,) y' in {0, 1},
    bins (n,) confidence-bin ids, gamma > 0 (h = d * gamma).
    """
    f = _as_2d(feats)
    v = np.asarray(conf, np.float64) - np.asarray(correct, np.float64)
    num, den = kernel_sums(f, bins, v, f, bins, f.shape[1] * float(gamma), method, "lce")
    return np.abs(num[:, 0]) / den


def lore_apply(ref_feats, ref_correct, ref_bins, query_feats, query_bins, query_conf,
               gamma, method="auto"):
    """LoRe recalibrated confidences for the query rows (SPEC 5).

    g''(q) = kernel-weighted mean of ref_correct over the reference rows in
    q's bin; a query whose bin is empty in the reference keeps query_conf.
    """
    rf = _as_2d(ref_feats)
    num, den = kernel_sums(rf, ref_bins, np.asarray(ref_correct, np.float64), query_feats,
                           query_bins, rf.shape[1] * float(gamma), method, "lore")
    qc = np.asarray(query_conf, np.float64).reshape(-1)
    res = qc.copy()
    ok = den > 0
    res[ok] = num[ok, 0] / den[ok]
    return res
