"""Frequency weights in the recalibrators' fits (docs/spec.md, "Weights"): a row of weight k counts as k rows.

The references are code we did not write: scikit-learn's ``LogisticRegression(sample_weight=)`` (solved to
convergence, as in test_recalibrate_arrays), betacal's ``BetaCalibration.fit(sample_weight=)`` (which hands the
weights to that regression), uncertainty-calibration's ``HistogramCalibrator`` on the repeated rows, and the
repeated-rows property itself: with integer weights every fit equals the unweighted fit on the frame with row i
repeated w_i times (bit for bit where the algorithm is exact -- histogram, isotonic, Venn-Abers --, to 1e-9 where
an iterative optimizer's stopping depends on the data -- Platt, beta, beta_v, temperature).
"""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import calframe
from calframe import recalibrate as R

GRID = np.concatenate((np.linspace(0.0, 1.0, 201), [1e-300, 1 - 1e-16]))
ITER = 1e-9  # iterative fits: weighted vs repeated rows


def _data(seed: int, n: int, K: int = 2):
    rng = np.random.default_rng(seed)
    if K == 2:
        p = rng.beta(0.8, 0.9, n)
        y = (rng.random(n) < p ** 1.3 * 0.9 + 0.04).astype(np.int64)
        y[:2] = [0, 1]  # both classes, whatever the weights of the other rows
        return p, y, rng
    P = rng.dirichlet(np.full(K, 0.6), n)
    y = (P.cumsum(1) < rng.random((n, 1))).sum(1).astype(np.int64)
    return P, y, rng


def _int_weights(rng, n):
    w = rng.integers(0, 4, n)
    w[:2] = np.maximum(w[:2], 1)  # the two rows of different classes keep a positive weight
    return w


CASES = [
    ("platt", {}, ITER),
    ("platt", {"variant": "kelly_smyth"}, ITER),
    ("beta", {}, ITER),
    ("beta", {"variant": "kelly_smyth"}, ITER),
    ("temperature", {}, ITER),
    ("histogram", {"n_bins": 7}, 0.0),
    ("isotonic", {}, 0.0),
    ("venn_abers", {}, 0.0),
]


@pytest.mark.parametrize("method, params, tol", CASES, ids=[f"{m}-{p}" for m, p, _ in CASES])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(3, 120))
def test_integer_weights_are_repeated_rows(method, params, tol, seed, n):
    p, y, rng = _data(seed, n)
    p[rng.random(n) < 0.2] = 0.5  # ties
    w = _int_weights(rng, n)
    idx = np.repeat(np.arange(n), w)
    a = R.fit(method, p, y, weights=w, **params)
    b = R.fit(method, p[idx], y[idx], **params)
    if tol == 0.0:
        assert a.equals(b) if hasattr(a, "equals") else True
        for k, v in b.arrays.items():
            np.testing.assert_array_equal(a.arrays[k], v, err_msg=k)
        np.testing.assert_array_equal(a.predict(GRID), b.predict(GRID))
    else:
        np.testing.assert_allclose(a.predict(GRID), b.predict(GRID), rtol=0, atol=tol)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(3, 100), K=st.integers(3, 5))
def test_temperature_multiclass_weights_are_repeated_rows(seed, n, K):
    P, y, rng = _data(seed, n, K)
    w = rng.integers(0, 4, n)
    w[0] = max(w[0], 1)
    idx = np.repeat(np.arange(n), w)
    a = R.fit("temperature", P, y, weights=w)
    b = R.fit("temperature", P[idx], y[idx])
    assert abs(a.params["inv_temperature"] - b.params["inv_temperature"]) <= ITER * max(1.0, b.params[
        "inv_temperature"])


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(4, 100), degree=st.integers(1, 2))
def test_beta_v_weights_are_repeated_rows(seed, n, degree):
    p, y, rng = _data(seed, n)
    v = rng.normal(size=n)
    w = _int_weights(rng, n)
    idx = np.repeat(np.arange(n), w)
    a = R.fit("beta_v", p, y, v, weights=w, degree=degree)
    b = R.fit("beta_v", p[idx], y[idx], v[idx], degree=degree)
    np.testing.assert_allclose([a.params["v_center"], a.params["v_scale"]], [b.params["v_center"],
                               b.params["v_scale"]], rtol=1e-12)
    vt = rng.normal(size=GRID.size)
    np.testing.assert_allclose(a.predict(GRID, v=vt), b.predict(GRID, v=vt), rtol=0, atol=ITER)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(4, 150), depth=st.integers(1, 3),
       min_leaf=st.sampled_from([1, 5, 0.1, 0.25]), leaf=st.sampled_from(["beta", "isotonic", "histogram"]))
def test_tree_weights_are_repeated_rows(seed, n, depth, min_leaf, leaf):
    """The gini split search on weights (class weights, child weights >= min_leaf, a fractional min_leaf of the
    weights' sum) gives the repeated rows' thresholds bit for bit; the leaves' weighted fits follow."""
    p, y, rng = _data(seed, n)
    v = np.round(rng.normal(size=n), 1)
    y = np.where(rng.random(n) < 0.3, 1 - y, y)
    w = _int_weights(rng, n)
    idx = np.repeat(np.arange(n), w)
    kw = {"max_depth": depth, "min_leaf": min_leaf, "leaf": leaf}
    try:
        a = R.fit("tree", p, y, v, weights=w, **kw)
    except Exception as e:  # a leaf of one class (few rows): the repeated rows fail the same way
        with pytest.raises(type(e)):
            R.fit("tree", p[idx], y[idx], v[idx], **kw)
        return
    b = R.fit("tree", p[idx], y[idx], v[idx], **kw)
    np.testing.assert_array_equal(a.thresholds, b.thresholds)
    np.testing.assert_array_equal(a.arrays["leaf_fallback"], b.arrays["leaf_fallback"])
    vt = np.round(rng.normal(size=GRID.size), 1)
    np.testing.assert_allclose(a.predict(GRID, v=vt), b.predict(GRID, v=vt), rtol=0, atol=ITER)


def test_tree_weighted_splits_match_sklearn_with_weighted_min_leaf():
    """scikit-learn's weighted gini split (``sample_weight``; its min_samples_leaf counts rows, so the weighted
    leaf size is compared through ``min_weight_fraction_leaf`` with min_samples_leaf=1)."""
    tree = pytest.importorskip("sklearn.tree")
    rng = np.random.default_rng(12)
    n = 2000
    v = np.round(rng.normal(size=n) * 8).astype(np.float32).astype(np.float64)
    y = (rng.random(n) < 1 / (1 + np.exp(-v / 6))).astype(np.int64)
    w = rng.random(n) * 2 + 0.1
    ref = tree.DecisionTreeClassifier(criterion="gini", max_depth=2, min_weight_fraction_leaf=0.1,
                                      random_state=0).fit(v.reshape(-1, 1), y, sample_weight=w)
    t = ref.tree_
    thr_ref = np.sort(t.threshold[t.children_left >= 0])
    ours = R.fit("tree", rng.random(n), y, v, weights=w, max_depth=2, min_leaf=0.1)  # ceil(0.1 W) vs 0.1 W
    np.testing.assert_allclose(ours.thresholds, thr_ref, rtol=0, atol=1e-6)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 60), n_bins=st.integers(1, 20))
def test_weighted_equal_mass_edges_are_those_of_the_repeated_rows(seed, n, n_bins):
    rng = np.random.default_rng(seed)
    s = np.round(rng.random(n), 1 + seed % 3)  # ties
    w = rng.integers(0, 5, n)
    w[0] = max(w[0], 1)
    np.testing.assert_array_equal(R.binned.weighted_equal_mass_edges(s, n_bins, w.astype(float)),
                                  R.equal_mass_edges(np.repeat(s, w), n_bins))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(2, 120), K=st.sampled_from([2, 3]), d=st.integers(1, 4),
       gamma=st.sampled_from([0.05, 0.2, 1.0, 1e6]), n_bins=st.integers(1, 8), standardize=st.booleans(),
       kernel_method=st.sampled_from(["auto", "tree", "brute", "direct"]))
def test_lore_weights_are_repeated_rows(seed, n, K, d, gamma, n_bins, standardize, kernel_method):
    """LoRe's kernel sums weigh row i by w_i (and ``standardize`` takes the weighted mean and standard deviation):
    the fit equals the unweighted fit on the rows repeated w_i times, to 1e-12, at new rows as at the stored ones
    (ties: repeated feature rows and scores)."""
    P, y, rng = _data(seed, n, K)
    X = np.round(rng.normal(size=(n, d)), 1)
    X[rng.random(n) < 0.2] = X[0]
    w = _int_weights(rng, n)
    idx = np.repeat(np.arange(n), w)
    kw = {"gamma": gamma, "n_bins": n_bins, "standardize": standardize, "kernel_method": kernel_method}
    a = R.fit("lore", P, y, X, weights=w, **kw)
    b = R.fit("lore", P[idx], y[idx], X[idx], **kw)
    Pt, _, _ = _data(seed + 1, 150, K)
    Xt = np.concatenate((X[rng.integers(0, n, 50)], rng.normal(size=(100, d))))  # some on stored rows
    for q, f in ((Pt, Xt), (P, X)):
        np.testing.assert_allclose(a.predict(q, features=f), b.predict(q, features=f), rtol=0, atol=1e-12)


def test_lore_weights_zero_equal_and_saved(tmp_path):
    """Rows of weight 0 are absent (not stored); equal weights are the unweighted fit, bit for bit, storing no
    weights; a weighted LoRe stores its rows' weights as data and round-trips (JSON + Parquet)."""
    P, y, rng = _data(13, 300, 3)
    X = rng.normal(size=(300, 2))
    w = rng.random(300) * 3
    w[200:] = 0.0
    a = R.fit("lore", P, y, X, weights=w, standardize=True)
    b = R.fit("lore", P[:200], y[:200], X[:200], weights=w[:200], standardize=True)
    assert a.arrays["features"].shape == (200, 2)
    for k, v in b.arrays.items():
        np.testing.assert_array_equal(a.arrays[k], v, err_msg=k)
    np.testing.assert_array_equal(a.arrays["weights"], w[:200])
    Pt, _, _ = _data(14, 100, 3)
    Xt = rng.normal(size=(100, 2))
    c = R.fit("lore", P, y, X, weights=np.where(w > 0, 2.5, 0.0), standardize=True)
    u = R.fit("lore", P[:200], y[:200], X[:200], standardize=True)
    assert "weights" not in c.arrays
    np.testing.assert_array_equal(c.predict(Pt, features=Xt), u.predict(Pt, features=Xt))
    a.save(tmp_path / "lore.parquet")
    back = R.load(tmp_path / "lore.parquet")
    np.testing.assert_array_equal(back.predict(Pt, features=Xt), a.predict(Pt, features=Xt))
    assert np.abs(a.predict(Pt, features=Xt) - u.predict(Pt, features=Xt)).max() > 1e-3  # the weights matter


def test_frame_lore_takes_the_weights_column():
    df = calframe.datasets.grouped_miscalibration(n=2000, seed=3).with_columns(w=pl.col("age") / 10)
    rec = calframe.fit(df, "lore", features=["age"], gamma=0.2, lens="class:1", standardize=True, weights="w")
    X = df["age"].to_numpy().astype(float).reshape(-1, 1)
    arr = R.fit("lore", df["prob"].to_numpy(), df["label"].to_numpy(), X, gamma=0.2, lens="class:1",
                standardize=True, weights=df["w"].to_numpy())
    np.testing.assert_array_equal(calframe.apply(df, rec, name="q")["q"].to_numpy(),
                                  arr.predict(df["prob"].to_numpy(), features=X))


# --------------------------------------------------------------------------- scaling all weights


@pytest.mark.parametrize("method, params", [("temperature", {}), ("isotonic", {}), ("platt", {"C": None}),
                                            ("beta", {"C": None})])
def test_objective_a_mean_scaling_weights_changes_nothing(method, params):
    """Temperature and isotonic (means), and the unpenalised logistic fits (C=None): w and 3.7 w give the same
    function (to rounding). Not Venn-Abers (below), not histogram (the number of bins is min(n_bins, sum w))."""
    p, y, rng = _data(5, 400)
    w = rng.random(400) * 3
    a = R.fit(method, p, y, weights=w, **params)
    b = R.fit(method, p, y, weights=w * 3.7, **params)
    np.testing.assert_allclose(a.predict(GRID), b.predict(GRID), rtol=0, atol=1e-12)


def test_venn_abers_weights_are_counts():
    """Venn-Abers adds the test point with weight 1 to the calibration rows: weights are counts there, and
    scaling them changes the interval (heavier rows: a narrower [p0, p1])."""
    p, y, rng = _data(5, 100)
    w = rng.random(100) + 0.5
    a = R.fit("venn_abers", p, y, weights=w).predict_interval(GRID)
    b = R.fit("venn_abers", p, y, weights=10 * w).predict_interval(GRID)
    assert np.all(b[:, 1] - b[:, 0] <= a[:, 1] - a[:, 0] + 1e-15) and np.any(b[:, 1] - b[:, 0] < a[:, 1] - a[:, 0])


def test_penalised_logistic_scaling_weights_is_scaling_C():
    """With a finite C the objective is sum_i w_i loss_i + |coef|^2 / (2 C), as scikit-learn's: w -> c w is
    C -> c C (so weights are not only relative there)."""
    p, y, rng = _data(6, 300)
    w = rng.random(300)
    a = R.fit("platt", p, y, weights=w * 4.0, variant="kelly_smyth")
    b = R.fit("platt", p, y, weights=w, variant="kelly_smyth", C=4.0)
    np.testing.assert_allclose([a.params["coef"], a.params["intercept"]], [b.params["coef"], b.params["intercept"]],
                               rtol=1e-12)
    c = R.fit("platt", p, y, weights=w, variant="kelly_smyth")
    assert abs(c.params["coef"] - a.params["coef"]) > 1e-6  # the penalty matters at C = 1


# --------------------------------------------------------------------------- peers


def _tight_lr(C):
    sk = pytest.importorskip("sklearn.linear_model")

    class TightLR(sk.LogisticRegression):
        def __init__(self, C=1.0, **kw):
            kw.update(solver="newton-cholesky", tol=1e-14, max_iter=1000)
            super().__init__(C=C, **kw)

    return TightLR(C=C) if C is not None else TightLR(C=np.inf), TightLR


@pytest.mark.parametrize("variant, C", [("kumar", 1e10), ("kelly_smyth", 1.0)])
def test_weighted_platt_matches_sklearn_sample_weight(variant, C):
    p, y, rng = _data(7, 1500)
    w = rng.exponential(1.0, 1500)
    w[rng.random(1500) < 0.1] = 0.0
    lr, _ = _tight_lr(C)
    x = p if variant == "kelly_smyth" else np.log(np.clip(p, 1e-12, 1 - 1e-12) / (1 - np.clip(p, 1e-12, 1 - 1e-12)))
    lr.fit(x.reshape(-1, 1), y, sample_weight=w)
    r = R.fit("platt", p, y, weights=w, variant=variant)
    np.testing.assert_allclose([r.params["coef"], r.params["intercept"]], [lr.coef_[0, 0], lr.intercept_[0]],
                               rtol=1e-8)


@pytest.mark.parametrize("abc", [(1.2, 0.7, 0.1), (-0.4, 1.0, 0.2)], ids=["free", "a<0->a=0"])
def test_weighted_beta_matches_betacal_sample_weight(monkeypatch, abc):
    betacal = pytest.importorskip("betacal")
    import betacal.beta_calibration as bcm
    from scipy.special import expit

    _, TightLR = _tight_lr(1.0)
    monkeypatch.setattr(bcm, "LogisticRegression", TightLR)
    rng = np.random.default_rng(3)
    s = rng.beta(0.8, 0.8, 3000)
    y = (rng.random(3000) < expit(abc[0] * np.log(s) - abc[1] * np.log(1 - s) + abc[2])).astype(int)
    w = rng.exponential(1.0, 3000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = betacal.BetaCalibration(parameters="abm").fit(s, y, sample_weight=w)
    r = R.fit("beta", s, y, weights=w)
    np.testing.assert_allclose([r.params["a"], r.params["b"]], ref.calibrator_.map_[:2], rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(r.predict(GRID), ref.predict(GRID), rtol=0, atol=1e-10)


def test_weighted_histogram_is_uncertainty_calibration_on_the_repeated_rows():
    kumar = pytest.importorskip("calibration")
    p, y, rng = _data(8, 700)
    w = rng.integers(0, 4, 700)
    idx = np.repeat(np.arange(700), w)
    ref = kumar.HistogramCalibrator(int(w.sum()), 12)
    ref.train_calibration(p[idx], y[idx])
    r = R.fit("histogram", p, y, weights=w, n_bins=12)
    np.testing.assert_array_equal(r.predict(GRID), ref.calibrate(GRID))


# --------------------------------------------------------------------------- frames and edges


@pytest.mark.parametrize("method", ["platt", "beta", "temperature", "histogram", "venn_abers"])
def test_frame_fit_takes_the_weights_column(method):
    p, y, rng = _data(9, 600)
    w = rng.random(600) * 1e-3  # scaled inside by a power of two; the fit sees the caller's weights
    g = rng.integers(0, 2, 600)
    df = pl.DataFrame({"prob": p, "label": y, "w": w, "g": g})
    rec = calframe.fit(df, method, weights="w")
    np.testing.assert_array_equal(rec.predict(GRID), R.fit(method, p, y, weights=w).predict(GRID))
    per = calframe.fit(df, method, weights="w", by="g")
    for k in (0, 1):
        m = g == k
        np.testing.assert_array_equal(per.children[k].predict(GRID), R.fit(method, p[m], y[m],
                                                                           weights=w[m]).predict(GRID))


def test_zero_weight_rows_are_absent():
    p, y, rng = _data(10, 200)
    w = rng.random(200)
    w[50:] = 0.0
    for method in ("platt", "beta", "histogram", "isotonic", "temperature", "venn_abers"):
        a = R.fit(method, p, y, weights=w)
        b = R.fit(method, p[:50], y[:50], weights=w[:50])
        np.testing.assert_allclose(a.predict(GRID), b.predict(GRID), rtol=0, atol=1e-12, err_msg=method)
    w2 = np.where(y == 1, 0.0, 1.0)
    with pytest.raises(R.OneClassError):
        R.fit("platt", p, y, weights=w2)


def test_methods_without_weights_refuse_them():
    assert R.weighted_methods() == ["beta", "beta_v", "histogram", "isotonic", "lore", "platt", "temperature",
                                    "tree", "venn_abers"]
    p, y, _ = _data(11, 100)
    with pytest.raises(calframe.ParameterError, match="does not take weights"):
        R.fit("scaling_binning", p, y, weights=np.ones(100))
    with pytest.raises(calframe.ParameterError, match="leaf method 'scaling_binning' does not take weights"):
        R.fit("tree", p, y, p, leaf="scaling_binning", weights=np.ones(100))


def test_frame_tree_takes_the_weights_column():
    df = calframe.datasets.grouped_miscalibration(n=3000, seed=1).with_columns(w=pl.col("age") / 10)
    rec = calframe.fit(df, "tree", variable="age", weights="w")
    arr = R.fit("tree", df["prob"].to_numpy(), df["label"].to_numpy(), df["age"].to_numpy().astype(float),
                weights=df["w"].to_numpy())
    np.testing.assert_array_equal(rec.thresholds, arr.thresholds)
    np.testing.assert_array_equal(calframe.apply(df, rec)["p_tree"].to_numpy(),
                                  arr.predict(df["prob"].to_numpy(), v=df["age"].to_numpy().astype(float)))
