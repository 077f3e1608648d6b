"""vce_curve's bounded smoother (issue 23 item 4): local-likelihood logistic regression, checked against
scikit-learn's LogisticRegression at single points, closed forms, and simulations with known curves; curves and
bands inside [0, 1] where LOESS leaves it; v*'s interval and edge flag."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import calframe
from calframe._kernels.local_logistic import ETA, FIT, SE_ETA, local_logistic_fit


def tricube_weights(x: np.ndarray, q: float, span: float) -> tuple[np.ndarray, float]:
    """LOESS's neighbourhood written out: h = distance to the floor(n span)-th nearest row, weights (1 - u^3)^3."""
    d = np.abs(x - q)
    h = np.sort(d)[int(np.floor(x.size * span + 1e-5)) - 1]
    return (1 - np.minimum(d / h, 1) ** 3) ** 3, h


def sklearn_local_fit(x, y, q, span, degree):
    """expit(b0) of scikit-learn's unpenalised logistic regression on (x - q)/h, ((x - q)/h)^2 with the kernel as
    sample_weight; a fractional y becomes two rows (y = 1 with weight K y, y = 0 with weight K (1 - y))."""
    from sklearn.linear_model import LogisticRegression

    w, h = tricube_weights(x, q, span)
    d = (x - q) / h
    X = np.column_stack([d ** p for p in range(1, degree + 1)])
    X2, y2, w2 = np.vstack([X, X]), np.r_[np.ones_like(y), np.zeros_like(y)], np.r_[w * y, w * (1 - y)]
    keep = w2 > 0
    lr = LogisticRegression(C=np.inf, solver="newton-cholesky", tol=1e-12, max_iter=1000)
    lr.fit(X2[keep], y2[keep], sample_weight=w2[keep])
    return float(lr.predict_proba(np.zeros((1, degree)))[0, 1])


def age_frame(n=3000, seed=0, base=-3.0):
    rng = np.random.default_rng(seed)
    age = rng.integers(17, 80, n).astype(float)
    t = (age - 17) / 10
    true = 1 / (1 + np.exp(-(base + 0.8 * t - 0.12 * t * t)))
    prob = np.clip(true + 0.03 * np.sin(age / 6), 0.001, 0.999)
    return pl.DataFrame({"prob": prob, "label": (rng.random(n) < true).astype(int), "age": age}), true


@pytest.mark.parametrize("degree", [1, 2])
def test_local_logistic_equals_sklearn_at_single_points(degree):
    df, _ = age_frame(n=1500)
    x, y, conf = (df[c].to_numpy().astype(float) for c in ("age", "label", "prob"))
    q = np.array([17.0, 33.3, 79.0])
    for outcome in (y, conf):  # the label (0/1) and the confidence (a fraction)
        got = local_logistic_fit(x, outcome, q, span=0.9, degree=degree)[:, FIT]
        want = [sklearn_local_fit(x, outcome, qi, 0.9, degree) for qi in q]
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
    # and through vce_curve: its curve at the grid's ends and middle
    res = calframe.vce_curve(df, "age", degree=degree, n_points=21, n_boot=0)
    grid = res.curve["v"].to_numpy()
    for j in (0, 20):
        assert res.curve["acc"][j] == pytest.approx(sklearn_local_fit(x, y, grid[j], 0.9, degree), abs=1e-6)
        assert res.curve["conf"][j] == pytest.approx(sklearn_local_fit(x, conf, grid[j], 0.9, degree), abs=1e-6)


def test_local_constant_is_the_kernel_weighted_mean():
    """Degree 0: the local likelihood's maximiser is the logit of the weighted mean, so the fit is that mean."""
    df, _ = age_frame(n=800, seed=1)
    x, y = df["age"].to_numpy().astype(float), df["label"].to_numpy().astype(float)
    for q in (20.0, 45.5, 78.0):
        w, _ = tricube_weights(x, q, 0.5)
        got = local_logistic_fit(x, y, np.array([q]), span=0.5, degree=0)[0, FIT]
        assert got == pytest.approx((w * y).sum() / w.sum(), rel=1e-12)


def test_pointwise_bands_cover_a_logit_quadratic_curve():
    """Where the true log-odds is quadratic in x the local quadratic logistic fit has no bias, so the 95% band
    expit(eta -/+ 1.96 se) should cover the true value in about 95% of seeds (at least 88% of 200 asserted)."""
    rng = np.random.default_rng(5)
    q = np.array([25.0, 45.0, 65.0])
    hits = np.zeros(3)
    for _ in range(200):
        x = rng.uniform(17, 80, 1500)
        eta = -2.0 + 0.06 * (x - 17) - 0.0012 * (x - 17) ** 2
        y = (rng.random(x.size) < 1 / (1 + np.exp(-eta))).astype(float)
        out = local_logistic_fit(x, y, q, span=0.9, degree=2, z=1.959963984540054)
        true = -2.0 + 0.06 * (q - 17) - 0.0012 * (q - 17) ** 2
        hits += np.abs(out[:, ETA] - true) <= 1.959963984540054 * out[:, SE_ETA]
    assert (hits / 200 >= 0.88).all(), hits / 200


def test_curves_stay_in_unit_interval_on_adult_where_loess_leaves_it():
    """Issue 23: on adult_scored(), LOESS's frequency at age 19 is -0.027 (band -0.044 to -0.010), and v* sat
    at 19 on that impossible value; the local logistic curves and bands stay in [0, 1] and v* moves inside."""
    df = calframe.datasets.adult_scored()
    with pytest.warns(calframe.CalframeWarning, match="leave \\[0, 1\\].*smoother='logistic'"):
        loess = calframe.vce_curve(df, "age", smoother="loess", n_boot=0, n_points=100)
    assert loess.curve["acc"].min() < -0.02 and loess.v_star == 19.0 and loess.v_star_edge
    res = calframe.vce_curve(df, "age", n_points=60, n_boot=30)
    for col in ("acc", "acc_lo", "acc_hi", "conf", "conf_lo", "conf_hi"):
        assert res.curve[col].is_between(0, 1).all(), col
    assert (res.curve["acc_lo"] <= res.curve["acc"]).all() and (res.curve["acc"] <= res.curve["acc_hi"]).all()
    assert not res.v_star_edge and 22 < res.v_star < 30
    lo, hi = res.v_star_interval
    assert lo <= res.v_star <= hi and hi - lo < 5


def test_rare_outcome_near_zero_stays_in_unit_interval():
    """A simulated rare outcome (about 1% at the low end of x, rising): LOESS dips below 0, the local logistic
    curves and bands do not."""
    rng = np.random.default_rng(2)
    n = 4000
    x = rng.uniform(0, 10, n)
    true = 1 / (1 + np.exp(-(-5.5 + 0.45 * x)))
    df = pl.DataFrame({"prob": np.full(n, 0.05), "label": (rng.random(n) < true).astype(int), "x": x})
    with pytest.warns(calframe.CalframeWarning, match="leave \\[0, 1\\]"):
        loess = calframe.vce_curve(df, "x", smoother="loess", n_boot=0, n_points=50, quantiles=(0, 1))
    assert loess.curve["acc_lo"].min() < 0
    res = calframe.vce_curve(df, "x", n_boot=0, n_points=50, quantiles=(0, 1))
    for col in ("acc", "acc_lo", "acc_hi"):
        assert res.curve[col].is_between(0, 1).all(), col
    # the fit follows the true curve (a logit-linear truth: no bias for the local quadratic fit)
    truth = 1 / (1 + np.exp(-(-5.5 + 0.45 * res.curve["v"].to_numpy())))
    inside = (res.curve["acc_lo"].to_numpy() <= truth) & (truth <= res.curve["acc_hi"].to_numpy())
    assert inside.mean() >= 0.9


def test_v_star_interval_contains_the_true_location_and_edge_is_marked():
    """The gap's true maximum lies at x = 6 (a bump in the outcome the probability misses): v*'s bootstrap interval
    covers it; a gap that grows to the end of the range puts v* at the grid's end, which is marked."""
    rng = np.random.default_rng(3)
    n = 3000
    x = rng.uniform(0, 10, n)
    p = np.full(n, 0.3)
    true = 0.3 + 0.25 * np.exp(-((x - 6) ** 2) / 2)
    df = pl.DataFrame({"prob": p, "label": (rng.random(n) < true).astype(int), "x": x})
    res = calframe.vce_curve(df, "x", n_points=80, n_boot=100, seed=1)
    lo, hi = res.v_star_interval
    assert lo <= 6 <= hi and lo <= res.v_star <= hi and not res.v_star_edge
    ramp = df.with_columns(label=(pl.Series(rng.random(n)) < 0.1 + 0.05 * pl.col("x")).cast(pl.Int64))
    edge = calframe.vce_curve(ramp, "x", n_points=80, n_boot=0)
    assert edge.v_star_edge and edge.v_star == edge.curve["v"][-1]
    assert edge.summary["v_star_lo"].is_null().all()


def test_by_group_equals_each_group_with_the_interval():
    df, _ = age_frame(n=2000, seed=4)
    df = df.with_columns(g=pl.Series(np.arange(df.height) % 2))
    res = calframe.vce_curve(df, "age", by="g", n_points=40, n_boot=30)
    for row in res.summary.iter_rows(named=True):
        alone = calframe.vce_curve(df.filter(pl.col("g") == row["g"]), "age", n_points=40, n_boot=30).summary
        for col in ("v_star", "vce", "v_star_lo", "v_star_hi", "v_star_edge"):
            assert row[col] == alone[col][0], col


def test_smoother_parameters():
    df, _ = age_frame(n=300)
    with pytest.raises(calframe.ParameterError, match="smoother"):
        calframe.vce_curve(df, "age", smoother="spline")
    with pytest.raises(calframe.ParameterError, match="family.*smoother='loess'"):
        calframe.vce_curve(df, "age", family="symmetric")
    with pytest.raises(calframe.ParameterError, match="n_boot"):
        calframe.vce_curve(df, "age", n_boot=5)
    res = calframe.vce_curve(df, "age", smoother="loess", family="symmetric", n_boot=0, n_points=20)
    assert res.smoother == "loess"
