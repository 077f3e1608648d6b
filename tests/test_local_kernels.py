"""Exact LCE / LoRe kernels (calframe._kernels.local) against a plain numpy formula."""

import numba
from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
import pytest

from calframe._kernels import local as L

RTOL = 1e-12


def ref_kernel_sums(rX, rb, rv, qX, qb, h):
    """Straightforward float64 formula, shifted by the min distance (ratio unchanged)."""
    rX = np.asarray(rX, float).reshape(len(rb), -1)
    qX = np.asarray(qX, float).reshape(len(qb), rX.shape[1])
    rv = np.asarray(rv, float).reshape(len(rb), -1)
    num = np.zeros((len(qb), rv.shape[1]))
    den = np.zeros(len(qb))
    for b in np.unique(qb):
        qi = np.flatnonzero(qb == b)
        ri = np.flatnonzero(rb == b)
        if len(ri) == 0:
            continue
        for s in range(0, len(qi), 64):
            qq = qi[s:s + 64]
            D = np.abs(qX[qq, None, :] - rX[None, ri, :]).sum(-1)
            w = np.exp(-(D - D.min(1, keepdims=True)) / h)
            den[qq] = w.sum(1)
            num[qq] = w @ rv[ri]
    return num, den


def ratio(num, den):
    out = np.full(num.shape, np.nan)
    ok = den > 0
    out[ok] = num[ok] / den[ok, None]
    return out


def make(rng, n, d, n_bins, dup=0.0, scale=1.0):
    X = rng.normal(size=(n, d)) * scale
    if dup:
        k = int(dup * n)
        src = rng.integers(0, n, k)
        X[rng.integers(0, n, k)] = X[src]  # duplicate points (exact ties)
        X[:, 0] = np.round(X[:, 0], 1)  # ties in one coordinate
    bins = rng.integers(0, n_bins, n)
    return X, bins


def methods(d):
    return ["auto", "brute", "direct"] + (["tree"] if d <= 3 else [])


CASES = [(1, 400), (2, 500), (3, 300), (10, 300), (50, 200)]


@pytest.mark.parametrize("d,n", CASES)
@pytest.mark.parametrize("gamma", [1e-4, 0.03, 0.5, 1e4])
def test_kernel_sums_match_formula(d, n, gamma):
    rng = np.random.default_rng(d * 1000 + int(gamma * 100))
    X, b = make(rng, n, d, 4, dup=0.1)
    v = rng.normal(size=(n, 2))  # signed values, two columns
    Q, qb = make(rng, n // 2, d, 6)  # bins 4, 5: empty in the reference
    Q[: n // 10] = X[: n // 10]  # queries sitting on reference rows
    h = d * gamma
    rn, rd = ref_kernel_sums(X, b, v, Q, qb, h)
    want = ratio(rn, rd)
    for m in methods(d):
        num, den = L.kernel_sums(X, b, v, Q, qb, h, method=m)
        assert num.shape == (len(qb), 2) and den.shape == (len(qb),)
        assert np.all((den > 0) == (rd > 0)), m
        assert np.all(num[rd == 0] == 0), m
        got = ratio(num, den)
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL, err_msg=m)


@pytest.mark.parametrize("d", [1, 2, 3])
def test_wide_bins_rebase_and_many_rows(d):
    """Coordinates spanning thousands of bandwidths (Fenwick x-rebases, direct path)."""
    rng = np.random.default_rng(7 + d)
    n = 3000
    X = rng.uniform(0, 100, size=(n, d)) + 1e3
    b = rng.integers(0, 2, n)
    v = rng.integers(0, 2, n).astype(float)
    h = 0.02 * d  # ~1e3-5e3 bandwidths across, neighbours within a few h (d = 1, 2)
    rn, rd = ref_kernel_sums(X, b, v, X, b, h)
    want = ratio(rn, rd)
    for m in methods(d):
        got = ratio(*L.kernel_sums(X, b, v, X, b, h, method=m))
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL, err_msg=m)


@pytest.mark.parametrize("d", [1, 2, 3, 10])
def test_lce_matches_formula_and_single_row_bins(d):
    rng = np.random.default_rng(11)
    n = 400
    X, _ = make(rng, n, d, 1, dup=0.05)
    conf = rng.uniform(0.5, 1, n)
    correct = (rng.uniform(size=n) < conf).astype(float)
    bins = np.minimum((conf * 15).astype(int), 14)
    bins[:3] = [100, 101, 102]  # three bins with one row each
    gamma = 0.2
    want = np.abs(ratio(*ref_kernel_sums(X, bins, conf - correct, X, bins, d * gamma))[:, 0])
    for m in methods(d):
        got = L.lce(X, conf, correct, bins, gamma, method=m)
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL, err_msg=m)
        np.testing.assert_array_equal(got[:3], np.abs(conf[:3] - correct[:3]))
        assert np.all((got >= 0) & (got <= 1))


@pytest.mark.parametrize("d", [1, 2, 3, 5])
def test_lore_matches_formula_and_empty_bins(d):
    rng = np.random.default_rng(12)
    n = 500
    X, _ = make(rng, n, d, 1)
    rb = rng.integers(0, 5, n)
    y = rng.integers(0, 2, n).astype(float)
    Q, _ = make(rng, 300, d, 1)
    qb = rng.integers(0, 7, 300)  # bins 5, 6 empty in the reference
    qconf = rng.uniform(size=300)
    gamma = 0.4
    want = ratio(*ref_kernel_sums(X, rb, y, Q, qb, d * gamma))[:, 0]
    empty = qb >= 5
    want[empty] = qconf[empty]
    for m in methods(d):
        got = L.lore_apply(X, y, rb, Q, qb, qconf, gamma, method=m)
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL, err_msg=m)
        assert np.all((got[~empty] >= 0) & (got[~empty] <= 1))


@pytest.mark.parametrize("d", [1, 2, 3, 50])
def test_gamma_to_infinity_gives_bin_means(d):
    rng = np.random.default_rng(13)
    n = 300
    X, b = make(rng, n, d, 5)
    conf = rng.uniform(size=n)
    correct = rng.integers(0, 2, n).astype(float)
    Q, qb = make(rng, 100, d, 5)
    mean_y = np.array([correct[b == k].mean() for k in range(5)])
    gap = np.array([abs((conf - correct)[b == k].mean()) for k in range(5)])
    for m in methods(d):
        lore = L.lore_apply(X, correct, b, Q, qb, np.zeros(100), 1e13, method=m)
        np.testing.assert_allclose(lore, mean_y[qb], rtol=1e-9, atol=1e-9, err_msg=m)
        lce = L.lce(X, conf, correct, b, 1e13, method=m)
        np.testing.assert_allclose(lce, gap[b], rtol=1e-9, atol=1e-9, err_msg=m)
        # Lemma 1: MLCE -> MCE
        assert abs(lce.max() - gap.max()) < 1e-9


@pytest.mark.parametrize("d", [1, 2, 3, 10])
@pytest.mark.parametrize("gamma", [1e-9, 1e-30])
def test_gamma_to_zero_gives_nearest_neighbour(d, gamma):
    rng = np.random.default_rng(14)
    n = 300
    X, b = make(rng, n, d, 3)
    y = rng.integers(0, 2, n).astype(float)
    # exact duplicates with different labels: tied nearest neighbours average
    X[1] = X[0]
    b[1] = b[0]
    y[0], y[1] = 0.0, 1.0
    Q, qb = make(rng, 120, d, 3)
    Q[0] = X[0]
    qb[0] = b[0]
    want = np.empty(len(qb))
    for q in range(len(qb)):
        idx = np.flatnonzero(b == qb[q])
        D = np.abs(X[idx] - Q[q]).sum(1)
        want[q] = y[idx[D == D.min()]].mean()
    assert want[0] == 0.5
    for m in methods(d):
        got = L.lore_apply(X, y, b, Q, qb, np.zeros(len(qb)), gamma, method=m)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=m)
        # LCE of the frame at gamma -> 0: |g - y| of the row itself (no duplicates elsewhere)
        conf = rng.uniform(size=n)
        lce = L.lce(X, conf, y, b, gamma, method=m)
        keep = np.arange(2, n)
        np.testing.assert_allclose(lce[keep], np.abs(conf - y)[keep], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(lce[:2], abs((conf[0] - y[0] + conf[1] - y[1]) / 2), atol=1e-12)


def test_identical_results_for_one_and_two_threads():
    rng = np.random.default_rng(15)
    outs = {}
    cases = []
    for d, n in [(1, 3000), (2, 3000), (2, 400), (3, 1500), (7, 1500)]:
        X, b = make(rng, n, d, 3, dup=0.05)
        v = rng.normal(size=(n, 2))
        cases.append((X, b, v))
    old = numba.get_num_threads()
    try:
        for t in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(t)
            outs[t] = [L.kernel_sums(X, b, v, X, b, 0.3, method=m)
                       for X, b, v in cases for m in methods(X.shape[1])]
    finally:
        numba.set_num_threads(old)
    for a, c in zip(outs[1], outs[max(outs)]):
        np.testing.assert_array_equal(a[0], c[0])
        np.testing.assert_array_equal(a[1], c[1])


def test_edge_shapes():
    X = np.zeros((0, 2))
    num, den = L.kernel_sums(X, np.zeros(0, int), np.zeros(0), np.ones((3, 2)), np.arange(3), 1.0)
    assert num.shape == (3, 1) and np.all(den == 0) and np.all(num == 0)
    num, den = L.kernel_sums(np.ones((3, 2)), np.arange(3), np.ones(3), X, np.zeros(0, int), 1.0)
    assert num.shape == (0, 1) and den.shape == (0,)
    # one row, queried by itself: kernel 1
    num, den = L.kernel_sums(np.ones((1, 4)), [7], [0.25], np.ones((1, 4)), [7], 0.1)
    assert num[0, 0] / den[0] == 0.25
    with pytest.raises(ValueError):
        L.kernel_sums(np.ones((3, 2)), np.arange(3), np.ones(3), np.ones((3, 3)), np.arange(3), 1.0)
    with pytest.raises(ValueError):
        L.kernel_sums(np.ones((3, 2)), np.arange(3), np.ones(3), np.ones((3, 2)), np.arange(3), 0.0)
    with pytest.raises(ValueError):
        L.kernel_sums(np.ones((3, 2)), np.arange(3), np.ones(3), np.ones((3, 2)), np.arange(3), 1.0,
                      method="nope")
    # "tree" on d >= 4 is the brute force
    X = np.random.default_rng(0).normal(size=(50, 5))
    a = L.kernel_sums(X, np.zeros(50, int), X[:, 0], X, np.zeros(50, int), 1.0, method="tree")
    c = L.kernel_sums(X, np.zeros(50, int), X[:, 0], X, np.zeros(50, int), 1.0, method="brute")
    np.testing.assert_array_equal(a[0], c[0])


@pytest.mark.parametrize("d", [1, 2, 3])
def test_isolated_queries_mixed_with_dense_ones(d):
    """Outliers thousands of bandwidths from their bin (den underflows unshifted)."""
    rng = np.random.default_rng(16)
    n = 600
    X = rng.normal(size=(n, d)) * 0.05
    X[:20] += rng.choice([-1, 1], size=(20, d)) * rng.uniform(50, 500, size=(20, d))
    b = rng.integers(0, 2, n)
    v = rng.normal(size=n)
    Q = rng.normal(size=(200, d)) * 0.05
    Q[:30] += rng.uniform(-900, 900, size=(30, d))
    qb = rng.integers(0, 2, 200)
    h = 0.01 * d
    want = ratio(*ref_kernel_sums(X, b, v, Q, qb, h))
    for m in methods(d):
        got = ratio(*L.kernel_sums(X, b, v, Q, qb, h, method=m))
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL, err_msg=m)


@pytest.mark.parametrize("gamma", [0.01, 0.1, 1.0])
def test_3d_divide_and_conquer_many_levels(gamma):
    """Bins large enough for several outer and inner merge levels of the 3-d sweep."""
    rng = np.random.default_rng(17)
    n = 2500
    X, b = make(rng, n, 3, 2, dup=0.05)
    v = rng.normal(size=(n, 2))
    Q, qb = make(rng, 700, 3, 3)
    h = 3 * gamma
    for rows, rb, queries, qbins in [(X, b, X, b), (X, b, Q, qb)]:
        want = ratio(*ref_kernel_sums(rows, rb, v, queries, qbins, h))
        got = ratio(*L.kernel_sums(rows, rb, v, queries, qbins, h, method="tree"))
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL)


def test_sparse_and_negative_bin_ids():
    """Bin ids far apart (dense re-keying path) and negative ids."""
    rng = np.random.default_rng(18)
    n = 400
    X, _ = make(rng, n, 2, 1)
    ids = np.array([-(10**12), -3, 7, 10**15])
    b = ids[rng.integers(0, 4, n)]
    v = rng.normal(size=n)
    Q, _ = make(rng, 100, 2, 1)
    qb = np.append(ids, 12345)[rng.integers(0, 5, 100)]  # 12345: no reference row
    want = ratio(*ref_kernel_sums(X, b, v, Q, qb, 0.5))
    for m in methods(2):
        got = ratio(*L.kernel_sums(X, b, v, Q, qb, 0.5, method=m))
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL, err_msg=m)


@settings(max_examples=40, deadline=None)
@given(
    d=st.integers(1, 3),
    n=st.integers(1, 90),
    n_q=st.integers(0, 40),
    grid=st.sampled_from([0.0, 0.5, 1.0]),
    log_gamma=st.floats(-3, 3),
    seed=st.integers(0, 2**31 - 1),
)
def test_property_all_methods_agree_with_formula(d, n, n_q, grid, log_gamma, seed):
    """Random small frames, coordinates on a coarse grid (many exact ties) or not."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if grid:
        X = np.round(X / grid) * grid
    b = rng.integers(0, 3, n)
    v = rng.normal(size=(n, 2))
    Q = X[rng.integers(0, n, n_q)] + (rng.normal(size=(n_q, d)) if seed % 2 else 0.0)
    qb = rng.integers(0, 4, n_q)
    h = d * 10.0**log_gamma
    want = ratio(*ref_kernel_sums(X, b, v, Q, qb, h))
    want_self = ratio(*ref_kernel_sums(X, b, v, X, b, h))
    for m in methods(d):
        got = ratio(*L.kernel_sums(X, b, v, Q, qb, h, method=m))
        np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-11, err_msg=m)
        got = ratio(*L.kernel_sums(X, b, v, X, b, h, method=m))
        np.testing.assert_allclose(got, want_self, rtol=1e-11, atol=1e-11, err_msg=m)
