"""The compiled draws of the bootstrap from moments (calframe/_kernels/draws.py): its random numbers against
scipy's laws, its bits against the thread count, its fused finalize against the figures' own, its binning
against numpy's digitize. (The draws' law against the row bootstrap: tests/test_moments.py and
tests/test_frequency_weights.py.)"""

from __future__ import annotations

import numba
import numpy as np
import polars as pl
import pytest
from scipy import stats

import calframe
from calframe import moments as M
from calframe._kernels import draws as DK
from calframe.binning import uniform_edges

N = 200_000


@pytest.mark.parametrize("kind", [0, 3])
def test_normals_are_standard_normal(kind):
    """The 256-layer ziggurat (kind 0) and the two halves of a word (kind 3, both halves): Kolmogorov-Smirnov
    against scipy's N(0, 1), and the mass beyond each ziggurat's base strip (the tail's own method) and beyond
    2 sd against scipy's within 4.5 binomial sd."""
    z = DK.samples(kind, 12345, N, 0.0, 0.0)
    assert stats.kstest(z, stats.norm.cdf).pvalue > 1e-3
    for edge in (2.0, DK._R7, DK._R):
        p = 2 * stats.norm.sf(edge)
        hits = int((np.abs(z) > edge).sum())
        assert abs(hits - N * p) <= 4.5 * np.sqrt(N * p * (1 - p)) + 1, (edge, hits, N * p)
    assert abs(np.mean(z)) < 4.5 / np.sqrt(N) and abs(np.var(z) - 1) < 4.5 * np.sqrt(2 / N)


def test_the_two_normals_of_a_word_are_independent():
    """A large cell's count and value normals come from one word: their correlation, and that of their squares,
    is 0 within 4.5 standard errors; their joint quadrants are equally likely (chi-square)."""
    z = DK.samples(3, 99, N, 0.0, 0.0)
    a, b = z[0::2], z[1::2]  # the first and the second normal of the same words
    for x, y in ((a, b), (a * a, b * b)):
        assert abs(np.corrcoef(x, y)[0, 1]) < 4.5 / np.sqrt(a.size)
    quad = np.bincount((a > 0) * 2 + (b > 0), minlength=4)
    assert stats.chisquare(quad).pvalue > 1e-3


def test_uniforms_are_uniform_and_never_0_or_1():
    u = DK.samples(2, 5, N, 0.0, 0.0)
    assert 0.0 < u.min() and u.max() < 1.0
    assert stats.kstest(u, "uniform").pvalue > 1e-3


@pytest.mark.parametrize("n, p", [(20000, 27 / 20000), (20000, 3 / 20000), (7, 0.3), (50, 0.5), (1000, 0.9),
                                  (1_000_000, 0.3), (41, 0.999), (12, 0.6)])
def test_binomials_follow_scipys_law(n, p):
    """Inversion (mean under 10) and BTRS (above), each side of 1/2: chi-square against scipy.stats.binom's pmf
    over the values of expected count >= 20, the tails pooled."""
    x = DK.samples(1, 2024 + n, N, float(n), p)
    assert np.all(x == np.round(x)) and x.min() >= 0 and x.max() <= n
    law = stats.binom(n, p)
    lo, hi = int(law.ppf(1e-4)), int(law.isf(1e-4))
    values = np.arange(lo, hi + 1)
    expected = law.pmf(values) * N
    keep = expected >= 20
    observed = np.array([(x == v).sum() for v in values[keep]])
    rest_o, rest_e = N - observed.sum(), N - expected[keep].sum()
    obs = np.append(observed, rest_o)
    exp = np.append(expected[keep], rest_e)
    assert stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue > 1e-3, (n, p)


def test_binomials_of_tiny_and_degenerate_probabilities():
    """A row of weight 1e-30 among rows of weight 1 (its share 2e-33: the waiting time is past 2^63), p = 0, 1 and
    NaN (a group without weight) and n = 0 return at once."""
    assert np.all(DK.samples(1, 1, 1000, 478.0, 2.1e-33) == 0)
    assert np.all(DK.samples(1, 1, 10, 478.0, 1.0) == 478)
    for n, p in ((478.0, 0.0), (478.0, np.nan), (0.0, 0.5)):
        assert np.all(DK.samples(1, 1, 10, n, p) == 0)
    x = DK.samples(1, 3, 20000, 1e6, 1.0 - 1e-9)  # the mirror image: n - Binomial(n, 1e-9), mean 1e-3 below n
    assert x.min() >= 1e6 - 3 and x.max() == 1e6


def _frame(n: int = 60_000, groups: int = 40) -> pl.DataFrame:
    rng = np.random.default_rng(3)
    p = rng.uniform(size=n)
    return pl.DataFrame({"prob": p, "label": (rng.uniform(size=n) < p ** 1.3).astype(np.int8),
                         "g": rng.integers(0, groups, n), "w": rng.gamma(2.0, 1.0, n)})


@pytest.mark.parametrize("call", [dict(), dict(weights="w"), dict(p=2, estimator="debiased"), dict(binning="quantile")])
def test_same_bits_for_one_and_two_threads(call):
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba was started with fewer than 2 threads")
    df = _frame()
    old = numba.get_num_threads()
    got = []
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            got.append(calframe.ce(df, by="g", ci=0.9, n_boot=300, **call))
    finally:
        numba.set_num_threads(old)
    assert got[0].equals(got[1])


def test_the_fused_plugin_ce_is_the_figures_finalize():
    """The draws' kernel finalizes plug-in CE_p itself: on the same drawn sums it gives ce_from_sums' values (ECE,
    plug-in RMSCE squared and not, MCE; tvd and l2)."""
    from calframe.metrics import Distance, ce_from_sums

    df = _frame(20_000, 7)
    edges = uniform_edges(15, "left")
    m = M.moments(df["prob"].to_numpy(), df["label"].to_numpy(), M.Uniform(edges, False), df["g"].to_numpy(), 7,
                  15, None)
    args = (DK.group_keys(1, np.arange(7, dtype=np.uint64), 3), m.start, m.n, m.freq, m.mean, m.sd, m.split,
            m.bin * 2 + m.split.astype(np.int64), m.small_rows, m.small_start, np.ones(7), False, 200, 15, (0.0, 1.0),
            range(7))
    table = DK.draw(*args, np.zeros((0, 3))).reshape(200 * 7, 15, 3)
    specs = [(1.0, 1.0, False), (2.0, 1.0, True), (2.0, np.sqrt(2.0), False), (np.inf, 1.0, False)]
    fused = DK.draw(*args, np.array(specs, dtype=np.float64))
    for j, (p, factor, squared) in enumerate(specs):
        want = ce_from_sums(table, p, Distance("tvd" if factor == 1.0 else "l2"), "plugin", squared)
        np.testing.assert_allclose(fused[:, :, j].ravel(), want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("closed", ["left", "right"])
def test_the_moments_pass_bins_as_numpys_digitize(closed):
    """The moments' pass bins the rows on uniform edges itself (:class:`calframe.moments.Uniform`): the same cells
    as the bins of numpy.searchsorted on the inner edges, values on and next to every edge, 1 to 40 bins."""
    rng = np.random.default_rng(0)
    for b in (1, 2, 3, 7, 10, 15, 40):
        e = uniform_edges(b, closed)
        x = np.clip(np.concatenate([rng.uniform(size=400), e, np.nextafter(e, 2), np.nextafter(e, -1)]), 0, 1)
        y = rng.integers(0, 2, x.size)
        ids = np.searchsorted(e[1:-1], x, side="right" if closed == "left" else "left")
        a = M.moments(x, y, M.Uniform(e, closed == "right"), None, 1, b, None)
        want = M.moments(x, y, ids, None, 1, b, None)
        for f in ("group", "bin", "split", "n", "small_start"):
            np.testing.assert_array_equal(getattr(a, f), getattr(want, f))
        np.testing.assert_array_equal(a.small_rows, want.small_rows)


def test_the_moments_are_numpys_sums():
    """Per (group, bin, split): the row count, sum w, the weighted mean and sd of the values, against numpy."""
    df = _frame(5000, 3)
    p, y, g, w = (df[c].to_numpy() for c in ("prob", "label", "g", "w"))
    b = np.minimum((p * 5).astype(np.int64), 4)
    m = M.moments(p, y, b, g, 3, 5, w)
    code = (g * 5 + b) * 2 + y
    for c in range(m.n.size):
        sel = code == (m.group[c] * 5 + m.bin[c]) * 2 + int(m.split[c])
        assert m.n[c] == sel.sum()
        np.testing.assert_allclose(m.freq[c], w[sel].sum(), rtol=1e-12)
        mean = np.average(p[sel], weights=w[sel])
        np.testing.assert_allclose(m.mean[c], mean, rtol=1e-12)
        np.testing.assert_allclose(m.sd[c], np.sqrt(np.average((p[sel] - mean) ** 2, weights=w[sel])), rtol=1e-6,
                                   atol=1e-12)
