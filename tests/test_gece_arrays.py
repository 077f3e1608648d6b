"""Array-level generalized ECE (calframe/generalized.py): ORACLES.md section B, the binning against plain-numpy
re-statements of the reference algorithms, identities between lenses, groups, and thread counts."""

from __future__ import annotations

import importlib
from pathlib import Path

import numba
import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import calframe
from calframe._kernels import vector as VK

# ``calframe.gece`` may be the public function once it is wired; the module is imported by name.
G = importlib.import_module("calframe.generalized")

CIFAR = Path(__file__).parent / "data" / "cifar10_vgg16_test_probs.npz"


@pytest.fixture(scope="module")
def cifar() -> tuple[np.ndarray, np.ndarray]:
    d = np.load(CIFAR)
    return d["probs"].astype(np.float64), d["labels"]


# --------------------------------------------------------------------------- plain-numpy statements of the reference


def ref_adaptive(gp: np.ndarray, gamma: float, threshold=np.mean) -> np.ndarray:
    """uu-sml DataDependentBinning(min_size=round(gamma * N)) on g', leaves numbered in pre-order."""
    min_size = round(gp.shape[0] * gamma)
    ids = np.full(gp.shape[0], -1)
    leaves = [0]

    def split(idx: np.ndarray) -> None:
        x = gp[idx]
        if idx.size >= min_size:
            col = x[:, np.argmax(np.var(x, axis=0))]
            low = col < threshold(col)
            if 0 < low.sum() < idx.size:
                split(idx[low])
                split(idx[~low])
                return
        ids[idx] = leaves[0]
        leaves[0] += 1

    split(np.arange(gp.shape[0]))
    return ids


def ref_uniform(gp: np.ndarray, bins: int) -> np.ndarray:
    """uu-sml UniformBinning: nested digitize on coordinates 0..K'-2, non-empty children, pre-order leaves."""
    inner = np.linspace(0, 1, bins + 1)[1:-1]
    ids = np.full(gp.shape[0], -1)
    leaves = [0]

    def split(idx: np.ndarray, axis: int) -> None:
        if axis + 1 >= gp.shape[1]:
            ids[idx] = leaves[0]
            leaves[0] += 1
            return
        cell = np.digitize(gp[idx, axis], inner)
        for i in range(bins):
            if np.any(cell == i):
                split(idx[cell == i], axis + 1)

    split(np.arange(gp.shape[0]), 0)
    return ids


def ref_gece(gp: np.ndarray, yp: np.ndarray, ids: np.ndarray, agg: str = "mean") -> float:
    d, w = [], []
    for b in np.unique(ids):
        m = ids == b
        d.append(0.5 * np.abs(gp[m].mean(axis=0) - yp[m].mean(axis=0)).sum())
        w.append(m.sum())
    d_, w_ = np.array(d), np.array(w)
    return float((w_ * d_).sum() / w_.sum()) if agg == "mean" else float(d_.max())


# --------------------------------------------------------------------------- ORACLES.md B


def _oracle_lens(name: str, probs: np.ndarray, labels: np.ndarray):
    if name == "top1":
        return G.top1(probs, labels)
    if name == "full":
        return G.full(probs, labels)
    # the reference's class lens: [g_c, sum of the other classes]
    return G.grouping(probs, labels, [[0], list(range(1, 10))])


SECTION_B = [
    ("top1 uniform(15)", "top1", ("uniform", 15), 1, "tvd", 0.03978006685674191),
    ("top1 uniform(15) max", "top1", ("uniform", 15), np.inf, "tvd", 0.2856856780351648),
    ("top1 adaptive(0.1)", "top1", ("adaptive", 0.1), 1, "tvd", 0.039723024329543104),
    ("full uniform(15)", "full", ("uniform", 15), 1, "tvd", 0.05745289132274067),
    ("full adaptive(0.1)", "full", ("adaptive", 0.1), 1, "tvd", 0.03965363733545313),
    ("class(0) uniform(15)", "class0", ("uniform", 15), 1, "tvd", 0.008274094027521692),
    ("top1 uniform(15) mahalanobis I", "top1", ("uniform", 15), 1, ("mahalanobis", np.eye(2)), 0.056257510060912876),
]


@pytest.mark.parametrize("case,lens,binning,p,distance,value", SECTION_B, ids=[c[0] for c in SECTION_B])
def test_section_b(cifar, case, lens, binning, p, distance, value):
    gp, yp = _oracle_lens(lens, *cifar)
    got = G.gece(gp, yp, binning, p=p, distance=distance)
    assert got.shape == (1,)
    assert got[0] == pytest.approx(value, rel=1e-12, abs=0)


def test_class_lens_is_not_the_reference_class_lens(cifar):
    """class_c is [g_c, 1 - g_c] (SPEC); on rows that do not sum to 1 it differs from the reference's grouping."""
    probs, labels = cifar
    got = G.gece(*G.class_c(probs, labels, 0))[0]
    assert got != pytest.approx(0.008274094027521692, rel=1e-9)
    assert got == pytest.approx(0.008274094027521692, rel=1e-5)


@pytest.mark.parametrize("lens", ["top1", "full", "class0"])
def test_adaptive_bins_match_reference_algorithm(cifar, lens):
    """Same partition and pre-order numbering as a plain-numpy statement of uu-sml's algorithm."""
    gp, yp = _oracle_lens(lens, *cifar)
    ids, n_bins = G.adaptive(gp, 0.1)
    ref = ref_adaptive(gp, 0.1)
    np.testing.assert_array_equal(ids, ref)
    assert n_bins == ref.max() + 1
    assert G.gece(gp, yp, ("adaptive", 0.1))[0] == pytest.approx(ref_gece(gp, yp, ref), rel=1e-13)


def test_adaptive_median_matches_reference_algorithm(cifar):
    gp, _ = G.topk(*cifar, 3)
    ids, _ = G.adaptive(gp, 0.05, split="median")
    np.testing.assert_array_equal(ids, ref_adaptive(gp, 0.05, np.median))


@pytest.mark.parametrize("lens", ["top1", "full", "topk3"])
def test_uniform_grid_matches_reference_algorithm(cifar, lens):
    gp = G.topk(*cifar, 3)[0] if lens == "topk3" else _oracle_lens(lens, *cifar)[0]
    ids, n_bins = G.uniform_grid(gp, 15)
    ref = ref_uniform(gp, 15)
    np.testing.assert_array_equal(ids, ref)
    assert n_bins == ref.max() + 1


def test_uniform_cells_are_numpy_digitize():
    """Edges, values outside [0, 1], NaN and multiples of 1/B land where numpy.digitize puts them."""
    rng = np.random.default_rng(5)
    special = np.array([-1.0, np.nan, np.inf, -np.inf, 0.0, 1.0, 0.9999999, 1e300, 0.5, 0.6, 0.3])
    for bins in range(1, 41):
        edges = np.linspace(0, 1, bins + 1)
        x = np.concatenate([special, edges, np.round(rng.random(300) * bins) / bins, rng.random(300)])
        got = VK.digitize_uniform(np.ascontiguousarray(x[:, None]), 1, edges)[:, 0]
        np.testing.assert_array_equal(got, np.digitize(x, edges[1:-1]), err_msg=f"bins={bins}")


def test_adaptive_on_random_data_and_edge_values():
    """Ties at the mean, repeated values, tiny nodes; gamma giving min_size 0, 1 and > N."""
    rng = np.random.default_rng(3)
    g = rng.dirichlet(np.ones(4), size=500)
    g[:100] = np.round(g[:100], 1)  # many equal values, some exactly at a node mean
    g[100:110] = 0.25
    for gamma in (0.0001, 0.002, 0.003, 0.005, 0.007, 0.01, 0.1, 0.5, 1.0, 3.0):
        ids, n_bins = G.adaptive(g, gamma)
        ref = ref_adaptive(g, gamma)
        np.testing.assert_array_equal(ids, ref)
        assert n_bins == ref.max() + 1
    assert G.adaptive(g, 3.0)[1] == 1  # min_size > N: the root stays one bin


def test_adaptive_value_at_the_mean_goes_high():
    """uu-sml splits ``x < mean`` low: the middle row of [0, 0.5, 1] (mean 0.5) joins the high side."""
    gp = np.array([[0.0, 1.0], [0.5, 0.5], [1.0, 0.0]])
    ids, n_bins = G.adaptive(gp, 1.0)  # min_size 3: only the root splits
    np.testing.assert_array_equal(ids, [0, 1, 1])
    assert n_bins == 2
    ids, _ = G.adaptive(gp, 0.01)
    np.testing.assert_array_equal(ids, [0, 1, 2])


def test_numpy_mean_emulation_is_bit_exact():
    """The split threshold is numpy.mean of a strided column, reproduced bit for bit."""
    rng = np.random.default_rng(0)
    for n in list(range(1, 140)) + [255, 256, 257, 1000, 4097, 9999, 70001]:
        x = rng.random((n, 3)) ** 3
        assert VK.numpy_mean(np.ascontiguousarray(x[:, 1]), n) == np.mean(x[:, 1]), n


# --------------------------------------------------------------------------- lenses


def test_lens_shapes_and_binary_input():
    p = np.array([0.2, 0.5, 0.9, 0.6])
    y = np.array([0, 1, 1, 0])
    gp, yp = G.top1(p, y)
    np.testing.assert_array_equal(gp[:, 0], [0.8, 0.5, 0.9, 0.6])
    np.testing.assert_array_equal(yp[:, 0], [1, 0, 1, 0])  # p = 0.5 predicts class 0
    gp, yp = G.class_c(p, y, 1)
    np.testing.assert_array_equal(gp, np.stack([p, 1 - p], 1))
    np.testing.assert_array_equal(yp[:, 0], y)
    gp, yp = G.full(p, y)
    np.testing.assert_array_equal(gp, np.stack([1 - p, p], 1))
    np.testing.assert_array_equal(yp, np.eye(2)[y])
    gp, yp = G.topk(p, y, 1)
    assert gp.shape == (4, 2)
    np.testing.assert_array_equal(gp[:, 0], [0.8, 0.5, 0.9, 0.6])


def test_ties_go_to_the_lowest_class():
    g = np.array([[0.3, 0.3, 0.3, 0.1], [0.1, 0.4, 0.1, 0.4], [0.25, 0.25, 0.25, 0.25]])
    y = np.array([1, 3, 0])
    _, yp = G.top1(g, y)
    np.testing.assert_array_equal(yp[:, 0], [0, 0, 1])
    gp, yp = G.topk(g, y, 2)
    np.testing.assert_array_equal(gp[:, :2], [[0.3, 0.3], [0.4, 0.4], [0.25, 0.25]])
    np.testing.assert_array_equal(yp, [[0, 1, 0], [0, 1, 0], [1, 0, 0]])
    assert gp[0, 2] == 1.0 - (0.3 + 0.3)


@pytest.mark.parametrize("k", [1, 2, 5, 16, 17, 30])
def test_topk_matches_stable_argsort(k):
    rng = np.random.default_rng(k)
    g = rng.integers(0, 6, size=(300, 30)) / 10.0  # many ties
    y = rng.integers(0, 30, size=300)
    gp, yp = G.topk(g, y, k)
    idx = np.argsort(-g, axis=1, kind="stable")[:, :k]
    np.testing.assert_array_equal(gp[:, :k], np.take_along_axis(g, idx, 1))
    np.testing.assert_array_equal(yp[:, :k], idx == y[:, None])
    if k < 30:
        np.testing.assert_array_equal(yp[:, k], 1.0 - yp[:, :k].sum(1))
    else:
        assert gp.shape == (300, 30)


def test_topk_and_class_parameter_errors():
    g = np.full((2, 3), 1 / 3)
    y = np.array([0, 2])
    for k in (0, 4, 1.0, True):
        with pytest.raises(ValueError, match="1 <= k <= 3"):
            G.topk(g, y, k)
    with pytest.raises(ValueError, match=r"\[0, 2\]"):
        G.class_c(g, y, 3)
    with pytest.raises(ValueError, match="class indices"):
        G.full(g, np.array([0, 3]))


@pytest.mark.parametrize(
    "groups,message",
    [
        ([[0, 1]], r"class 2 is missing"),
        ([[0], [1]], r"class 2 is missing"),
        ([[0, 1], [1, 2]], r"class 1 is repeated \(in groups 0 and 1\)"),
        ([[0, 0, 1], [2]], r"class 0 is repeated \(twice in group 0\)"),
        ([[0, 1], [2, 3]], r"class 3 in group 1 is out of range"),
        ([[0, 1], [-1, 2]], r"class -1 in group 1 is out of range"),
        ([[0, 1, 2], []], r"group 1 is empty"),
        ([[0, 1], [2.0]], r"not a class index"),
        ("012", r"sequence of sequences"),
    ],
)
def test_grouping_must_partition_the_classes(groups, message):
    g = np.full((2, 3), 1 / 3)
    with pytest.raises(ValueError, match=message):
        G.grouping(g, np.array([0, 1]), groups)


def test_grouping_sums():
    g = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]])
    gp, yp = G.grouping(g, np.array([2, 1]), [[2], {0, 1}])
    np.testing.assert_array_equal(gp, [[0.7, 0.1 + 0.2], [0.25, 0.75]])
    np.testing.assert_array_equal(yp, [[1, 0], [0, 1]])


# --------------------------------------------------------------------------- identities


def _frame(probs: np.ndarray, labels: np.ndarray) -> pl.DataFrame:
    k = probs.shape[1]
    return pl.DataFrame({"probs": probs, "label": labels}).with_columns(pl.col("probs").cast(pl.Array(pl.Float64, k)))


def test_tvd_on_top1_is_the_scalar_ece(cifar):
    probs, labels = cifar
    gp, yp = G.top1(probs, labels)
    df = _frame(probs, labels)
    assert G.gece(gp, yp)[0] == pytest.approx(calframe.ece(df), rel=1e-12)
    assert G.gece(gp, yp, p=2)[0] == pytest.approx(calframe.ce(df, p=2), rel=1e-12)
    assert G.gece(gp, yp, p=np.inf)[0] == pytest.approx(calframe.mce(df), rel=1e-12)
    # l2 on a 2-vector lens is sqrt(2) |conf - acc|
    assert G.gece(gp, yp, distance="l2")[0] == pytest.approx(np.sqrt(2) * calframe.ece(df), rel=1e-12)


def test_grouping_with_singletons_is_full(cifar):
    probs, labels = cifar
    probs, labels = probs[:3000], labels[:3000]
    full = G.full(probs, labels)
    single = G.grouping(probs, labels, [[c] for c in range(10)])
    np.testing.assert_array_equal(single[0], full[0])
    np.testing.assert_array_equal(single[1], full[1])
    for binning in (("uniform", 15), ("adaptive", 0.1), ("adaptive", 0.02)):
        assert G.gece(*single, binning)[0] == G.gece(*full, binning)[0]


def _sorted_rows(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows of dyadic probabilities (sums exactly 1), each sorted in decreasing order."""
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(64, np.ones(k) / k, size=n).astype(np.float64)
    g = -np.sort(-counts, axis=1) / 64.0
    labels = np.array([rng.choice(k, p=row) for row in g])
    return g, labels


def test_topk_all_classes_is_full_on_sorted_outputs():
    g, y = _sorted_rows(2000, 5, 0)
    topk, full = G.topk(g, y, 5), G.full(g, y)
    np.testing.assert_array_equal(topk[0], full[0])
    np.testing.assert_array_equal(topk[1], full[1])
    for binning in (("uniform", 15), ("uniform", 4), ("adaptive", 0.1)):
        assert G.gece(*topk, binning)[0] == G.gece(*full, binning)[0]


def test_topk_all_classes_is_full_up_to_a_class_permutation():
    """Every row ordered by the same permutation: topk(K) sees permuted coordinates, same adaptive bins.

    (Rows without ties: a tie would be broken by class index, not by the permutation.)
    """
    rng = np.random.default_rng(1)
    g = -np.sort(-rng.dirichlet(np.ones(5), size=2000), axis=1)
    assert np.all(np.diff(g, axis=1) < 0)
    y = np.array([rng.choice(5, p=row / row.sum()) for row in g])
    perm = np.array([3, 0, 4, 2, 1])  # class perm[j] holds the j-th largest
    gp = np.empty_like(g)
    gp[:, perm] = g
    labels = perm[y]
    topk, full = G.topk(gp, labels, 5), G.full(gp, labels)
    np.testing.assert_array_equal(topk[0], full[0][:, perm])
    for binning in (("adaptive", 0.1), ("adaptive", 0.01)):
        np.testing.assert_array_equal(G.adaptive(topk[0], binning[1])[0], G.adaptive(full[0], binning[1])[0])
        assert G.gece(*topk, binning)[0] == pytest.approx(G.gece(*full, binning)[0], rel=1e-14)


@pytest.mark.parametrize("binning", [("uniform", 15), ("uniform", 3), ("adaptive", 0.1), ("adaptive_median", 0.05)])
def test_groups_equal_each_group_alone(cifar, binning):
    probs, labels = cifar
    rng = np.random.default_rng(7)
    n_groups = 5
    groups = rng.integers(0, n_groups - 1, size=labels.shape[0]).astype(np.int32)  # the last group stays empty
    gp, yp = G.topk(probs, labels, 2)
    if binning[0] == "uniform":
        ids, _ = G.uniform_grid(gp, binning[1], groups, n_groups)
    else:
        ids, _ = G.adaptive(gp, binning[1], groups, n_groups, "median" if binning[0] == "adaptive_median" else "mean")
    for distance in ("tvd", "l2", G.mahalanobis(np.diag([1.0, 2.0, 0.5]))):
        for p in (1, 2, np.inf):
            together = G.gece(gp, yp, binning, p, distance, groups, n_groups)
            assert np.isnan(together[-1])
            for k in range(n_groups - 1):
                m = groups == k
                alone = G.gece(gp[m], yp[m], binning, p, distance)
                assert together[k] == pytest.approx(alone[0], rel=1e-12)
    for k in range(n_groups - 1):
        m = groups == k
        if binning[0] == "uniform":
            alone_ids, _ = G.uniform_grid(gp[m], binning[1])
        else:
            alone_ids, _ = G.adaptive(gp[m], binning[1], split="median" if binning[0] == "adaptive_median" else "mean")
        np.testing.assert_array_equal(ids[m], alone_ids)


def test_same_result_for_one_and_two_threads():
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has a single thread")
    rng = np.random.default_rng(11)
    n = 150_000  # more than one accumulate chunk
    probs = rng.dirichlet(np.ones(4) * 0.5, size=n)
    labels = rng.integers(0, 4, size=n)
    groups = rng.integers(0, 3, size=n).astype(np.int32)
    weights = rng.random(n)
    gp, yp = G.full(probs, labels)
    out = []
    old = numba.get_num_threads()
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            top = G.topk(probs, labels, 2)
            u_ids, u_n = G.uniform_grid(gp, 15, groups, 3)
            a_ids, a_n = G.adaptive(gp, 0.05, groups, 3)
            sums_u = G.accumulate(gp, yp, u_ids, u_n, groups, 3)
            sums_a = G.accumulate(gp, yp, a_ids, a_n, groups, 3, weights=weights)
            out.append((top[0], top[1], u_ids, a_ids, sums_u, sums_a))
    finally:
        numba.set_num_threads(old)
    for a, b in zip(*out):
        np.testing.assert_array_equal(a, b)
    assert VK.n_chunks(n, 3 * out[0][4].shape[1], 9) > 1


# --------------------------------------------------------------------------- sums and distances


def test_accumulate_sums_and_weights():
    gp = np.array([[0.9, 0.1], [0.6, 0.4], [0.7, 0.3]])
    yp = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    sums = G.accumulate(gp, yp, np.array([0, 0, 1]), 2, np.array([1, 1, 0], dtype=np.int32), 2)
    assert sums.shape == (2, 2, 5)
    np.testing.assert_allclose(sums[1, 0], [2, 1.5, 0.5, 1, 1])
    np.testing.assert_allclose(sums[0, 1], [1, 0.7, 0.3, 1, 0])
    assert not sums[0, 0].any() and not sums[1, 1].any()
    w = np.array([2.0, 1.0, 0.5])
    sums = G.accumulate(gp, yp, np.zeros(3, dtype=np.int32), 1, weights=w)
    np.testing.assert_allclose(sums[0, 0], [3.5, 2.75, 0.75, 2.5, 1.0])


def test_distances_on_a_known_case():
    # one bin: gbar = [0.5, 0.3, 0.2], ybar = [0.25, 0.25, 0.5]
    gp = np.array([[0.5, 0.3, 0.2]] * 4)
    yp = np.eye(3)[[0, 1, 2, 2]]
    diff = np.array([0.25, 0.05, -0.3])
    ones = ("uniform", 1)
    assert G.gece(gp, yp, ones)[0] == pytest.approx(0.5 * np.abs(diff).sum())
    assert G.gece(gp, yp, ones, distance="l2")[0] == pytest.approx(np.sqrt((diff**2).sum()))
    M = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.0], [0.0, 0.0, 3.0]])
    assert G.gece(gp, yp, ones, distance=G.mahalanobis(M))[0] == pytest.approx(np.sqrt(diff @ M @ diff))
    w = np.array([1.0, 4.0, 0.5])  # Kumar's class-weighted distance
    assert G.gece(gp, yp, ones, distance=("mahalanobis", np.diag(w)))[0] == pytest.approx(np.sqrt((w * diff**2).sum()))


def test_p_and_empty_bins():
    gp = np.array([[0.05, 0.95], [0.15, 0.85], [0.95, 0.05], [0.95, 0.05]])
    yp = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    # bins (uniform 10 on the first coordinate): {0}, {1}, {2, 3}; d = 0.05, 0.85, 0.45
    d = np.array([0.05, 0.85, 0.45])
    w = np.array([0.25, 0.25, 0.5])
    assert G.gece(gp, yp, ("uniform", 10))[0] == pytest.approx((w * d).sum())
    assert G.gece(gp, yp, ("uniform", 10), p=2)[0] == pytest.approx(np.sqrt((w * d**2).sum()))
    assert G.gece(gp, yp, ("uniform", 10), p=float("inf"))[0] == pytest.approx(0.85)
    # interval distance on a scalar lens: only the bin's mean label counts
    assert G.gece(gp, yp, ("uniform", 10), distance=("interval", 0.0, 0.3))[0] == pytest.approx(0.25 * 0.7 + 0.5 * 0.2)


@pytest.mark.parametrize(
    "M,message",
    [
        (np.array([[1.0, 0.5], [0.0, 1.0]]), "symmetric"),
        (np.array([[1.0, 2.0], [2.0, 1.0]]), "positive semi-definite"),
        (np.ones((2, 3)), "square"),
        (np.array([[np.nan, 0], [0, 1]]), "finite"),
    ],
)
def test_mahalanobis_matrix_is_checked(M, message):
    with pytest.raises(ValueError, match=message):
        G.mahalanobis(M)


def test_mahalanobis_size_and_other_parameter_errors():
    gp, yp = G.full(np.full((3, 3), 1 / 3), np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="3 x 3"):
        G.gece(gp, yp, distance=G.mahalanobis(np.eye(2)))
    with pytest.raises(ValueError, match="scalar"):
        G.gece(gp, yp, distance=("interval", 0.1, 0.2))
    with pytest.raises(ValueError, match="p must be"):
        G.gece(gp, yp, p=3)
    with pytest.raises(ValueError, match="distance must be"):
        G.gece(gp, yp, distance="l1")
    with pytest.raises(ValueError, match="gamma"):
        G.adaptive(gp, 0)
    with pytest.raises(ValueError, match="bins"):
        G.uniform_grid(gp, 0)
    with pytest.raises(ValueError, match="group codes"):
        G.uniform_grid(gp, 15, np.array([0, 1, 2], dtype=np.int32), 2)


# --------------------------------------------------------------------------- level-by-level adaptive kernel


def _both_kernels(g: np.ndarray, gamma: float, groups: np.ndarray | None = None, n_groups: int = 1):
    """(level-by-level ids, node-by-node ids) for the same data."""
    from calframe._kernels import adaptive as AK

    n = g.shape[0]
    counts = np.bincount(groups, minlength=n_groups) if groups is not None else np.array([n])
    min_sizes = np.array([round(gamma * int(c)) for c in counts], dtype=np.int64)
    codes = None if groups is None else groups.astype(np.int32)
    fast = AK.level_bins(g, codes, n_groups, min_sizes, 4)
    order, starts = VK.group_order(codes, n_groups, n)
    slow = VK.adaptive_bins(g, order, starts, min_sizes, False)
    return fast, slow


@pytest.mark.parametrize("case", ["binary", "discrete", "constant", "continuous"])
def test_level_kernel_equals_node_kernel_and_uses_its_exact_fallbacks(case, monkeypatch):
    """Bins row for row as the node-by-node kernel (itself checked against numpy above), on data built
    so that the estimated split coordinate or threshold is too close to call: the exact paths must run."""
    from calframe._kernels import adaptive as AK

    calls = {"columns": 0, "resplit": 0}
    for name, key in (("exact_split_columns", "columns"), ("exact_resplit", "resplit")):
        real = getattr(AK, name)

        def counted(*a, _real=real, _key=key):
            calls[_key] += 1
            return _real(*a)

        monkeypatch.setattr(AK, name, counted)
    rng = np.random.default_rng(11)
    n = 3000
    if case == "binary":  # var(p) == var(1 - p): every node's coordinate is a tie
        p = rng.random(n)
        g = np.stack([1 - p, p], axis=1)
    elif case == "discrete":  # few distinct values: thresholds land on data values
        g = rng.dirichlet(np.ones(3), size=n).round(1)
        g[:, 2] = 1 - g[:, 0] - g[:, 1]
    elif case == "constant":  # whole nodes of equal rows, and a constant coordinate
        g = np.repeat(rng.dirichlet(np.ones(3), size=6), n // 6, axis=0)
        g[: n // 2, 1] = 0.25
    else:
        g = rng.dirichlet(np.ones(5), size=n)
    groups = rng.integers(0, 3, n)
    for gamma in (0.001, 0.02, 0.1, 0.4):
        (ids, leaves), (ref_ids, ref_leaves) = _both_kernels(np.ascontiguousarray(g), gamma)
        np.testing.assert_array_equal(ids, ref_ids, err_msg=f"{case} gamma={gamma}")
        np.testing.assert_array_equal(leaves, ref_leaves)
        (ids, leaves), (ref_ids, ref_leaves) = _both_kernels(np.ascontiguousarray(g), gamma, groups, 3)
        np.testing.assert_array_equal(ids, ref_ids, err_msg=f"{case} gamma={gamma}, 3 groups")
        np.testing.assert_array_equal(leaves, ref_leaves)
    if case == "binary":
        assert calls["columns"] > 0
    if case in ("discrete", "constant"):
        assert calls["resplit"] > 0


def test_level_kernel_hands_non_finite_data_back():
    from calframe._kernels import adaptive as AK

    g = np.array([[0.5, 0.5], [np.inf, 0.0], [0.2, 0.8]])
    assert AK.level_bins(g, None, 1, np.array([1]), 1) is None
    g[1] = [np.nan, 0.0]
    assert AK.level_bins(g, None, 1, np.array([1]), 1) is None


def test_one_hot_labels_as_positions_sum_like_the_dense_array():
    """full/grouping with onehot=False hand accumulate the label's position: same sums, bit for bit."""
    rng = np.random.default_rng(2)
    g = rng.dirichlet(np.ones(5), size=2000)
    y = rng.integers(0, 5, 2000)
    w = rng.random(2000)
    groups = rng.integers(0, 3, 2000)
    for lens in (lambda oh: G.full(g, y, onehot=oh), lambda oh: G.grouping(g, y, [[0, 3], [1], [2, 4]], onehot=oh)):
        (gp, dense), (_, pos) = lens(True), lens(False)
        assert pos.ndim == 1 and np.array_equal(dense[np.arange(2000), pos], np.ones(2000))
        ids, n_bins = G.adaptive(gp, 0.05, groups, 3)
        for weights in (None, w):
            np.testing.assert_array_equal(G.accumulate(gp, pos, ids, n_bins, groups, 3, weights),
                                          G.accumulate(gp, dense, ids, n_bins, groups, 3, weights))


@pytest.mark.parametrize("case", ["dirichlet", "peaked", "discrete", "binary"])
def test_tree_sums_equal_accumulating_the_adaptive_bins(case):
    """adaptive_sums (the leaves' sums read off the level-by-level tree, no accumulate pass) against
    accumulate over adaptive's bins: n and label counts exact, sums of g' to a few ulps of the parent's sums."""
    rng = np.random.default_rng(5)
    n = 4000
    if case == "dirichlet":
        g = rng.dirichlet(np.ones(6), size=n)
    elif case == "peaked":  # softmax-like: most mass on one class, the tree goes deep
        g = rng.dirichlet(np.full(10, 0.1), size=n)
    elif case == "discrete":  # thresholds on data values: the exact re-split runs and must carry the labels
        g = rng.dirichlet(np.ones(3), size=n).round(1)
        g[:, 2] = 1 - g[:, 0] - g[:, 1]
    else:
        p = rng.random(n)
        g = np.stack([1 - p, p], axis=1)
    y = np.array([rng.choice(g.shape[1], p=np.clip(r, 0, None) / np.clip(r, 0, None).sum()) for r in g])
    groups = rng.integers(0, 3, n)
    for gamma in (0.002, 0.05, 0.3):
        for grp, k in ((None, 1), (groups, 3)):
            gp, pos = G.full(g, y, onehot=False)
            fast = G.adaptive_sums(gp, pos, gamma, grp, k)
            ids, n_bins = G.adaptive(gp, gamma, grp, k)
            slow = G.accumulate(gp, pos, ids, n_bins, grp, k)
            assert fast.shape == slow.shape
            m = g.shape[1]
            np.testing.assert_array_equal(fast[..., 0], slow[..., 0])  # n per leaf
            np.testing.assert_array_equal(fast[..., 1 + m :], slow[..., 1 + m :])  # label counts
            np.testing.assert_allclose(fast[..., 1 : 1 + m], slow[..., 1 : 1 + m], rtol=0, atol=1e-12 * n)
            np.testing.assert_allclose(G.gece(gp, pos, ("adaptive", gamma), groups=grp, n_groups=k),
                                       G.gece_from_sums(slow), rtol=1e-13)


def test_tree_sums_fall_back_to_accumulate_where_the_level_kernel_does_not_apply():
    g = np.array([[0.5, 0.5], [np.inf, 0.0], [0.2, 0.8], [0.9, 0.1]])
    pos = np.array([0, 1, 1, 0])
    ids, n_bins = G.adaptive(g, 0.25)
    np.testing.assert_array_equal(G.adaptive_sums(g, pos, 0.25), G.accumulate(g, pos, ids, n_bins))
    with pytest.raises(ValueError, match="positions"):
        G.adaptive_sums(g, np.array([0, 1, 2, 0]), 0.25)


def test_a_known_bound_on_g_gives_the_same_tree_sums():
    """bound= spares the search for the largest |g'|; the bins and sums do not change, a bad bound is refused."""
    rng = np.random.default_rng(8)
    g = rng.dirichlet(np.full(4, 0.3), size=5000)
    y = rng.integers(0, 4, 5000)
    for gamma in (0.01, 0.1):
        np.testing.assert_array_equal(G.adaptive_sums(g, y, gamma, bound=1.0), G.adaptive_sums(g, y, gamma))
    for bad in (0.0, -1.0, float("nan"), "1", True):
        with pytest.raises(ValueError, match="bound"):
            G.adaptive_sums(g, y, 0.1, bound=bad)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 240),
    k=st.integers(2, 5),
    decimals=st.sampled_from([1, 2, 3, None]),
    gamma=st.sampled_from([0.004, 0.03, 0.1, 0.25, 0.6, 1.0]),
    n_groups=st.integers(1, 3),
    seed=st.integers(0, 2**32 - 1),
)
def test_gece_adaptive_by_position_equals_the_reference_algorithm(n, k, decimals, gamma, n_groups, seed):
    """The tree-sum path (one-hot y' by position) against uu-sml's algorithm on numpy, group by group,
    on data with ties (rounded values put rows on node means; equal variances tie the split coordinate)."""
    rng = np.random.default_rng(seed)
    g = rng.dirichlet(np.full(k, 0.5), size=n)
    if decimals is not None:
        g = g.round(decimals)
    y = rng.integers(0, k, n)
    groups = rng.permutation(np.arange(n) % n_groups)
    n_groups = min(n_groups, n)
    gp, pos = G.full(g, y, onehot=False)
    got = G.gece(gp, pos, ("adaptive", gamma), groups=groups, n_groups=n_groups)
    onehot = np.eye(k)[y]
    for j in range(n_groups):
        rows = groups == j
        want = ref_gece(g[rows], onehot[rows], ref_adaptive(g[rows], gamma))
        assert got[j] == pytest.approx(want, rel=1e-12, abs=1e-15)
