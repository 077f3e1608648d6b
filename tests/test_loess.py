"""calframe._kernels.loess against scikit-misc's cloess (surface="direct").

Tolerances (observed agreement is ~1e-12 or better unless stated):
* fitted values, predictions: 1e-6 absolute;
* standard errors, residual scale: 1e-6 relative;
* trace_hat, one_delta, two_delta, enp, df: 1e-8 relative;
* confidence limits: 1e-6 absolute (skmisc's own t quantile is accurate to
  ~1e-8 only; we use scipy's).
"""
import numpy as np
import pytest

skl = pytest.importorskip("skmisc.loess", reason="scikit-misc not installed")

import numba  # noqa: E402

from calframe._kernels.loess import (  # noqa: E402
    loess_bandwidth,
    cloess_approx_deltas,
    evaluation_grid,
    loess_fit,
)

ABS = 1e-6
REL_SE = 1e-6
REL_STAT = 1e-8


def _skmisc(x, y, w=None, **kw):
    lo = skl.loess(x, y, weights=w, surface="direct", **kw)
    lo.fit()
    return lo


def _binary_data(n, seed, ties=True):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 10, n)
    if ties:
        x = np.round(x, 1)
    y = (rng.uniform(size=n) < 0.2 + 0.06 * x).astype(float)
    return x, y


def _check_against(lo, r, new_x, check_stats=True, check_pred=True):
    o = lo.outputs
    np.testing.assert_allclose(r.fitted, o.fitted_values, rtol=0, atol=ABS)
    np.testing.assert_allclose(r.residuals, o.fitted_residuals, rtol=0, atol=ABS)
    p = lo.predict(new_x, stderror=True)
    c = p.confidence(alpha=0.05)
    if check_pred:
        np.testing.assert_allclose(r.predicted, p.values, rtol=0, atol=ABS)
        np.testing.assert_allclose(r.lower, c.lower, rtol=0, atol=ABS)
        np.testing.assert_allclose(r.upper, c.upper, rtol=0, atol=ABS)
    np.testing.assert_allclose(r.se, p.stderr, rtol=REL_SE, atol=1e-12)
    assert r.residual_scale == pytest.approx(o.residual_scale, rel=REL_SE)
    if check_stats:
        assert r.trace_hat == pytest.approx(o.trace_hat, rel=REL_STAT)
        assert r.one_delta == pytest.approx(o.one_delta, rel=REL_STAT)
        assert r.two_delta == pytest.approx(o.two_delta, rel=REL_STAT)
        assert r.enp == pytest.approx(o.enp, rel=REL_STAT)
        assert r.df == pytest.approx(p.df, rel=REL_STAT)


@pytest.mark.parametrize("n,seed", [(20, 1), (150, 2), (600, 3)])
@pytest.mark.parametrize("span", [0.3, 0.75, 0.9])
@pytest.mark.parametrize("degree", [1, 2])
def test_gaussian_exact_binary_with_ties(n, seed, span, degree):
    x, y = _binary_data(n, seed + int(span * 100) + degree)
    if n * span < 7 and degree == 2:
        span = 0.5  # cloess refuses (pseudo-inverse warnings) on 6 points
    lo = _skmisc(x, y, span=span, degree=degree, statistics="exact")
    # inside the data range and a little outside (direct surface extrapolates)
    new_x = np.concatenate([evaluation_grid(x, 50), [x.min() - 0.3, x.max() + 0.2]])
    r = loess_fit(x, y, span=span, degree=degree, new_x=new_x, se=True,
                  statistics="exact")
    assert r.statistics == "exact"
    _check_against(lo, r, new_x)


@pytest.mark.parametrize("degree", [1, 2])
@pytest.mark.parametrize("span", [0.3, 0.9])
def test_gaussian_n2000_approximate_statistics(degree, span):
    # cloess's exact statistics are O(n^3) in skmisc: use its "approximate"
    # statistics (exact trace, interpolated deltas), which we reproduce too
    rng = np.random.default_rng(11)
    x = rng.integers(18, 90, 2000).astype(float)  # an age-like variable
    y = (rng.uniform(size=2000) < 1 / (1 + np.exp(-(x - 50) / 12))).astype(float)
    lo = _skmisc(x, y, span=span, degree=degree, statistics="approximate")
    new_x = evaluation_grid(x, 500)
    r = loess_fit(x, y, span=span, degree=degree, new_x=new_x, se=True,
                  statistics="approximate")
    _check_against(lo, r, new_x)
    # our default ("auto" -> exact operator over the 72 distinct ages) gives
    # the same fit; only the delta statistics differ (slightly)
    r2 = loess_fit(x, y, span=span, degree=degree, new_x=new_x, se=True)
    assert r2.statistics == "exact"
    np.testing.assert_allclose(r2.predicted, r.predicted, rtol=0, atol=1e-12)
    assert r2.trace_hat == pytest.approx(r.trace_hat, rel=1e-10)


def test_exact_statistics_many_ties_vs_skmisc():
    # the U x U operator (U distinct values) must give cloess's n x n traces
    rng = np.random.default_rng(5)
    x = rng.integers(0, 25, 700).astype(float)
    y = (rng.uniform(size=700) < 0.3 + 0.015 * x).astype(float)
    w = rng.uniform(0.5, 2.0, 700)
    lo = _skmisc(x, y, w, span=0.6, degree=2, statistics="exact")
    new_x = evaluation_grid(x, 40)
    r = loess_fit(x, y, span=0.6, degree=2, weights=w, new_x=new_x, se=True)
    _check_against(lo, r, new_x)


@pytest.mark.parametrize("degree", [0, 1, 2])
def test_weights_gaussian(degree):
    rng = np.random.default_rng(7 + degree)
    x = np.round(rng.normal(5, 2, 120), 1)
    y = np.sin(x) + rng.normal(0, 0.3, 120)
    w = rng.uniform(0.2, 3.0, 120)
    lo = _skmisc(x, y, w, span=0.5, degree=degree, statistics="exact")
    new_x = np.linspace(2, 8, 30)
    r = loess_fit(x, y, span=0.5, degree=degree, weights=w, new_x=new_x, se=True,
                  statistics="exact")
    _check_against(lo, r, new_x)


@pytest.mark.parametrize("n,span,degree", [(100, 0.5, 2), (400, 0.9, 2),
                                           (400, 0.3, 1), (250, 0.75, 1)])
def test_symmetric_family(n, span, degree):
    rng = np.random.default_rng(n + degree)
    x = np.round(rng.uniform(0, 10, n), 2)
    y = np.sin(x) + 0.3 * rng.standard_t(2, n)  # heavy tails / outliers
    lo = _skmisc(x, y, span=span, degree=degree, family="symmetric",
                 statistics="exact")
    new_x = evaluation_grid(x, 60)
    r = loess_fit(x, y, span=span, degree=degree, family="symmetric",
                  new_x=new_x, se=True, statistics="exact")
    _check_against(lo, r, new_x)
    np.testing.assert_allclose(r.robust_weights, lo.outputs.robust, atol=1e-9)


def test_symmetric_binary_calibration_curve():
    # binary y where no neighbourhood is all 0 or all 1 (otherwise cloess's
    # robustness weights are driven by rounding noise in residuals ~1e-16)
    rng = np.random.default_rng(21)
    x = np.round(rng.uniform(20, 80, 500))
    y = (rng.uniform(size=500) < 0.35 + 0.004 * x).astype(float)
    lo = _skmisc(x, y, span=0.9, degree=2, family="symmetric", statistics="exact")
    new_x = evaluation_grid(x, 100)
    r = loess_fit(x, y, span=0.9, degree=2, family="symmetric", new_x=new_x,
                  se=True)
    _check_against(lo, r, new_x)


def test_symmetric_with_weights():
    # skmisc's predict() multiplies the stored (already weighted) robustness
    # weights by the prior weights again (w^2 * rw), so its predictions at new
    # points disagree with its own fitted values; we use w * rw, which does
    # agree.  Fitted values, statistics and standard errors match skmisc.
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 10, 200)
    y = np.sin(x) + 0.3 * rng.standard_t(2, 200)
    w = rng.uniform(0.2, 3.0, 200)
    lo = _skmisc(x, y, w, span=0.5, degree=2, family="symmetric",
                 statistics="exact")
    new_x = np.linspace(1, 9, 20)
    r = loess_fit(x, y, span=0.5, degree=2, weights=w, family="symmetric",
                  new_x=new_x, se=True)
    _check_against(lo, r, new_x, check_pred=False)
    at_data = loess_fit(x, y, span=0.5, degree=2, weights=w, family="symmetric",
                        new_x=x)
    np.testing.assert_allclose(at_data.predicted, r.fitted, atol=1e-12)


def test_approximate_deltas_formula():
    rng = np.random.default_rng(4)
    for degree, span in [(1, 0.4), (2, 0.8), (0, 0.5)]:
        x = rng.uniform(0, 1, 300)
        y = rng.normal(size=300)
        lo = _skmisc(x, y, span=span, degree=degree, statistics="approximate")
        d1, d2 = cloess_approx_deltas(lo.outputs.trace_hat, 300, degree)
        assert d1 == pytest.approx(lo.outputs.one_delta, rel=1e-12)
        assert d2 == pytest.approx(lo.outputs.two_delta, rel=1e-12)


def _dense_reference(x, y, q, span, degree):
    """Plain numpy local regression with cloess's neighbourhood rule."""
    n = x.size
    nf = min(n, int(np.floor(n * span + 1e-5)))
    out = []
    for t in q:
        d = np.abs(x - t)
        h = np.sort(d)[nf - 1] * np.sqrt(max(1.0, span))
        k = np.clip(1 - (d / h) ** 3, 0, None) ** 3
        xm = np.vander(x - t, degree + 1, increasing=True) * np.sqrt(k)[:, None]
        beta = np.linalg.lstsq(xm, y * np.sqrt(k), rcond=None)[0]
        out.append(beta[0])
    return np.array(out)


@pytest.mark.parametrize("span", [1.2, 2.0])
def test_span_above_one_enlarges_by_sqrt_span(span):
    # skmisc rejects span > 1; cloess/R scale the squared radius by span
    x, y = _binary_data(80, 9)
    q = np.linspace(-1, 11, 25)
    r = loess_fit(x, y, span=span, degree=2, new_x=q)
    np.testing.assert_allclose(r.predicted, _dense_reference(x, y, q, span, 2),
                               atol=1e-9)


def test_bandwidth_is_nf_th_nearest_distance_with_ties():
    rng = np.random.default_rng(0)
    for t in range(500):
        n = int(rng.integers(1, 30))
        xs = np.sort(rng.integers(0, 6, n).astype(float))
        nf = int(rng.integers(1, n + 1))
        q = float(rng.uniform(-2, 8)) if t % 3 else float(xs[rng.integers(0, n)])
        assert loess_bandwidth(xs, nf, q) == np.sort(np.abs(xs - q))[nf - 1]


def test_thread_count_does_not_change_results():
    rng = np.random.default_rng(12)
    n = 6000
    x = rng.normal(50, 15, n)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(x - 50) / 10))).astype(float)
    q = evaluation_grid(x)
    saved = numba.get_num_threads()
    results = []
    try:
        for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(threads)
            res = []
            for stats in ("exact", "interpolate"):
                xx = np.round(x) if stats == "exact" else x
                res.append(loess_fit(xx, y, new_x=q, se=True, statistics=stats,
                                     family="symmetric", iterations=2))
            results.append(res)
    finally:
        numba.set_num_threads(saved)
    for a, b in zip(*results):
        for field in ("fitted", "predicted", "se", "lower", "upper"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
        assert a.residual_scale == b.residual_scale
        assert a.df == b.df


def test_interpolate_mode_close_to_exact_fits():
    rng = np.random.default_rng(13)
    n = 5000
    x = rng.exponential(10, n)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(x - 7) / 5))).astype(float)
    q = evaluation_grid(x)
    a = loess_fit(x, y, new_x=q, se=True, statistics="approximate")
    b = loess_fit(x, y, new_x=q, se=True, statistics="interpolate")
    assert (a.statistics, b.statistics) == ("approximate", "interpolate")
    np.testing.assert_array_equal(a.predicted, b.predicted)  # always direct
    np.testing.assert_allclose(b.fitted, a.fitted, atol=1e-3)
    assert b.trace_hat == pytest.approx(a.trace_hat, rel=1e-3)
    np.testing.assert_allclose(b.se, a.se, rtol=1e-5)


def test_defaults_and_errors():
    x, y = _binary_data(50, 0)
    r = loess_fit(x, y)
    assert r.se is None and r.predicted.shape == (50,)
    np.testing.assert_array_equal(r.predicted, r.fitted)
    np.testing.assert_array_equal(r.robust_weights, np.ones(50))
    r2 = loess_fit(x, y, se=True)  # standard errors at the data points
    assert np.all(r2.lower <= r2.fitted) and np.all(r2.fitted <= r2.upper)
    with pytest.raises(ValueError, match="span too small"):
        loess_fit(x, y, span=0.05)
    with pytest.raises(ValueError, match="zero-width"):
        loess_fit(np.r_[np.zeros(30), np.ones(5)], np.zeros(35), span=0.5,
                  new_x=np.array([0.0]))
    with pytest.raises(ValueError):
        loess_fit(x, y, degree=3)
    g = evaluation_grid(np.arange(101.0))
    assert g.size == 500 and g[0] == 5.0 and g[-1] == 95.0


def test_interpolate_mode_cell_merging():
    # the vertex fits on merged x cells (bin_width) barely move anything
    rng = np.random.default_rng(14)
    n = 30000
    x = rng.lognormal(0, 1.5, n)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-np.log(x)))).astype(float)
    q = evaluation_grid(x)
    a = loess_fit(x, y, span=0.5, new_x=q, se=True, bin_width=0)
    b = loess_fit(x, y, span=0.5, new_x=q, se=True)
    assert a.statistics == b.statistics == "interpolate"
    np.testing.assert_array_equal(a.predicted, b.predicted)
    np.testing.assert_allclose(b.fitted, a.fitted, atol=1e-4)
    assert b.trace_hat == pytest.approx(a.trace_hat, rel=1e-5)
    np.testing.assert_allclose(b.se, a.se, rtol=1e-6)
