"""Numbers at the edges (issue 11): logistic fits on separable data, extreme and scaled weights, the
CE order p, Mahalanobis matrices, the (group, bin) table limit and seed validation.

References: scikit-learn's LogisticRegression solved to convergence (newton-cholesky, tol=1e-14),
betacal with that solver patched in, the issue's numbers, and numpy by hand.
"""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.special import expit

import calframe
from conftest import collected, figure
import calframe.frames.polars  # noqa: F401  (registers df.calib)
from calframe import recalibrate as R
from calframe.recalibrate._logistic import logistic_fit
from sklearn.linear_model import LogisticRegression


def tight_lr(C: float) -> LogisticRegression:
    """scikit-learn's LogisticRegression (the same penalised objective) solved to convergence."""
    return LogisticRegression(C=C, solver="newton-cholesky", tol=1e-14, max_iter=1000)


# --------------------------------------------------------------------------- logistic fits


#: scikit-learn's test_sigmoid_calibration data: decision values and labels, perfectly separable
SK_SCORES = np.array([5.0, -4.0, 1.0])
SK_LABELS = np.array([1, 0, 0])
#: the penalised optimum at C = 1e10 (issue 11)
SK_COEF, SK_INTERCEPT = 11.0068153, -33.0204460


def test_logistic_fit_on_separable_scores_reaches_the_penalised_optimum():
    coef, intercept = logistic_fit(SK_SCORES, SK_LABELS, 1e10)
    np.testing.assert_allclose([coef[0], intercept], [SK_COEF, SK_INTERCEPT], rtol=0, atol=1e-6)
    lr = tight_lr(1e10).fit(SK_SCORES.reshape(-1, 1), SK_LABELS)
    np.testing.assert_allclose([coef[0], intercept], [lr.coef_[0, 0], lr.intercept_[0]], rtol=1e-6)
    # the gradient of the penalised objective vanishes (to its rounding: the residuals are ~3e-10 each)
    mu = expit(coef[0] * SK_SCORES + intercept)
    assert abs(np.sum(mu - SK_LABELS)) < 1e-15
    assert abs(np.sum((mu - SK_LABELS) * SK_SCORES) + coef[0] / 1e10) < 1e-15


def test_platt_on_separable_probabilities():
    """Platt (Kumar: logistic on logit p, C = 1e10) on p = expit(scores): the same optimum."""
    r = R.Platt.fit(expit(SK_SCORES), SK_LABELS)
    np.testing.assert_allclose([r.params["coef"], r.params["intercept"]], [SK_COEF, SK_INTERCEPT], rtol=0, atol=1e-6)


#: two small groups, each perfectly separated by the probability (a per-group fit meets this often)
SEPARABLE = {
    "g": ["a"] * 4 + ["b"] * 5,
    "prob": [0.9, 0.8, 0.3, 0.2, 0.95, 0.7, 0.6, 0.1, 0.05],
    "label": [1, 1, 0, 0, 1, 1, 1, 0, 0],
}


def _by_group(ref_fit):
    df = pl.DataFrame(SEPARABLE)
    want = np.empty(df.height)
    g = df["g"].to_numpy()
    for key in ("a", "b"):
        m = g == key
        want[m] = ref_fit(df["prob"].to_numpy()[m], df["label"].to_numpy()[m])
    return df, want


def test_per_group_platt_on_separable_groups():
    def ref(p, y):
        x = np.log(p / (1 - p)).reshape(-1, 1)
        return tight_lr(1e10).fit(x, y).predict_proba(x)[:, 1]

    df, want = _by_group(ref)
    got = calframe.apply(df, df.calib.fit("platt", by="g"), name="out")["out"].to_numpy()
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-7)


def test_per_group_beta_on_separable_groups(monkeypatch):
    betacal = pytest.importorskip("betacal")
    import betacal.beta_calibration as bcm

    monkeypatch.setattr(bcm, "LogisticRegression", lambda C=1.0, **kw: tight_lr(C))

    def ref(p, y):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return betacal.BetaCalibration(parameters="abm").fit(p, y).predict(p)

    df, want = _by_group(ref)
    got = calframe.apply(df, df.calib.fit("beta", by="g"), name="out")["out"].to_numpy()
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-7)


def test_unpenalised_fit_on_separated_classes_says_pass_a_finite_c():
    with pytest.raises(calframe.InvalidValueError, match=r"3 rows are completely separated.*Pass a finite C"):
        logistic_fit(SK_SCORES, SK_LABELS, None, func="platt.fit")


def test_non_convergence_with_a_finite_c_does_not_advise_a_finite_c():
    with pytest.raises(calframe.InvalidValueError, match="did not converge") as err:
        logistic_fit(SK_SCORES, SK_LABELS, 1e10, max_iter=2, func="platt.fit")
    assert "finite C" not in str(err.value) and "smaller C" in str(err.value) and "3 rows" in str(err.value)


# --------------------------------------------------------------------------- weights at the limits of float64


def _scored(n=300, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.random(n)
    return p, (rng.random(n) < p).astype(np.int64)


def ref_ece(p, y, w, bins=15):
    """numpy by hand: top-1 ECE on uniform left-closed bins, weights as given (exact integers here)."""
    conf = np.maximum(p, 1 - p)
    acc = ((p > 0.5) == (y == 1)).astype(float)
    b = np.digitize(conf, np.linspace(0, 1, bins + 1)[1:-1])
    out = 0.0
    for k in np.unique(b):
        m = b == k
        out += w[m].sum() / w.sum() * abs(np.average(conf[m], weights=w[m]) - np.average(acc[m], weights=w[m]))
    return out


@pytest.mark.parametrize("flavour", ["polars", "pandas"])
def test_weights_near_the_largest_float_give_the_unweighted_value(flavour):
    p, y = _scored()
    df = pl.DataFrame({"prob": p, "label": y, "w": np.full(p.size, 1.7e308)})
    df = df.to_pandas() if flavour == "pandas" else df
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not even a numpy overflow warning
        got = calframe.ece(df, weights="w", lens="top1")  # ref_ece is top-label
        brier = calframe.brier(df, weights="w")
    assert got == pytest.approx(ref_ece(p, y, np.ones(p.size)), rel=1e-12)
    assert brier == pytest.approx(np.mean((p - y) ** 2), rel=1e-12)


def test_subnormal_weights_keep_their_precision():
    p, y = _scored()
    m = np.random.default_rng(1).integers(1, 4, p.size).astype(float)
    df = pl.DataFrame({"prob": p, "label": y, "w": m * 5e-324})  # subnormal: m * 2^-1074 exactly
    assert calframe.ece(df, weights="w", lens="top1") == pytest.approx(ref_ece(p, y, m), rel=1e-12)
    assert calframe.ece(df, weights="w") == calframe.ece(df.with_columns(w=pl.lit(m)), weights="w")


def test_weight_sums_past_float64_on_lazy_and_dask_give_the_unweighted_value():
    """LazyFrame and Dask scale the weights as eager frames do (tests/test_zero_weights.py covers more scales)."""
    p, y = _scored()
    df = pl.DataFrame({"prob": p, "label": y, "w": np.full(p.size, 1.7e308)})
    want = ref_ece(p, y, np.ones(p.size))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert figure(calframe.ece(df.lazy(), weights="w", lens="top1")) == pytest.approx(want, rel=1e-12)
    dd = pytest.importorskip("dask.dataframe")
    importlib.import_module("calframe.frames.dask")  # registers ddf.calib
    ddf = dd.from_pandas(df.to_pandas(), npartitions=3)
    assert ddf.calib.ece(weights="w", lens="top1").compute() == pytest.approx(want, rel=1e-12)
    assert ddf.calib.brier(weights="w").compute() == pytest.approx(np.mean((p - y) ** 2), rel=1e-12)


WEIGHTED = {
    "ece": lambda f: calframe.ece(f, weights="w", bins=7),
    "mce": lambda f: calframe.mce(f, weights="w", bins=7),
    "rmsce-by": lambda f: calframe.rmsce(f, weights="w", bins=5, by="g")["rmsce"].to_list(),
    "brier": lambda f: calframe.brier(f, weights="w"),
    "log_loss": lambda f: calframe.log_loss(f, weights="w"),
    "accuracy": lambda f: calframe.accuracy(f, weights="w"),
    "gece": lambda f: calframe.gece(f, weights="w", bins=6),
    "vece": lambda f: calframe.vece(f, "v", weights="w", binning="uniform", bins=[0.0, 0.3, 0.6, 1.0]),
    "reliability": lambda f: calframe.reliability(f, weights="w", bins=5).drop("n").rows(),
}


@pytest.mark.parametrize("case", list(WEIGHTED))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_results_do_not_depend_on_the_scale_of_the_weights(case, data):
    """Weights m * 2^k (exact for every k drawn) give the bits of weights m; m * c the same value to rounding."""
    n = data.draw(st.integers(4, 40))
    p = np.array(data.draw(st.lists(st.floats(0, 1), min_size=n, max_size=n)))
    y = np.array(data.draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    m = np.array(data.draw(st.lists(st.integers(1, 2**20), min_size=n, max_size=n)), dtype=np.float64)
    k = data.draw(st.one_of(st.sampled_from([-1074, -1050, 990, 1002]), st.integers(-1074, 1023 - 21)))
    c = data.draw(st.floats(1e-280, 1e280))
    v = np.random.default_rng(n).random(n)
    frame = lambda w: pl.DataFrame({"prob": p, "label": y, "w": w, "g": np.arange(n) % 2, "v": v})  # noqa: E731
    call = WEIGHTED[case]
    base = call(frame(m))
    assert call(frame(np.ldexp(m, k))) == base
    scaled = call(frame(m * c))
    if isinstance(base, list):
        np.testing.assert_allclose(np.array(scaled, dtype=float), np.array(base, dtype=float), rtol=1e-9, atol=1e-12)
    else:
        assert scaled == pytest.approx(base, rel=1e-9, abs=1e-12)


# --------------------------------------------------------------------------- p and the Mahalanobis matrix

BINARY = pl.DataFrame({"prob": [0.9, 0.8, 0.3, 0.6, 0.2], "label": [1, 0, 0, 1, 0], "v": [1.0, 2.0, 3.0, 4.0, 5.0]})


@pytest.mark.parametrize("p", [-np.inf, np.float64(-np.inf), -1.0, 0.0, 3.0, np.nan])
@pytest.mark.parametrize("func", ["ce", "vece", "gece"])
def test_p_other_than_1_2_inf_is_refused(func, p):
    call = {"ce": lambda: calframe.ce(BINARY, p=p), "vece": lambda: calframe.vece(BINARY, "v", p=p),
            "gece": lambda: calframe.gece(BINARY, p=p)}[func]
    with pytest.raises(calframe.ParameterError, match=r"'p' parameter .*1, 2 or float\('inf'\)"):
        call()


def test_p_plus_inf_is_the_max_over_bins():
    # top-1 confidence [0.9, 0.8, 0.7, 0.6], correct [1, 0, 0, 1]; 4 uniform bins: [0.5, 0.75) holds
    # 0.7, 0.6 (gap |0.65 - 0.5|), [0.75, 1] holds 0.9, 0.8 (gap |0.85 - 0.5|)
    df = pl.DataFrame({"prob": [0.9, 0.8, 0.3, 0.6], "label": [1, 0, 1, 1]})
    want = max(abs(0.65 - 0.5), abs(0.85 - 0.5))
    for p in (np.inf, float("inf"), np.float64(np.inf), "inf"):
        assert calframe.ce(df, p=p, bins=4, lens="top1") == pytest.approx(want, abs=1e-15)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("call", [
    lambda M: calframe.ce(BINARY, distance=("mahalanobis", M)),
    lambda M: calframe.gece(BINARY, distance=("mahalanobis", M)),
    lambda M: calframe.gece(BINARY, lens="full", distance=("mahalanobis", M)),
], ids=["ce", "gece", "gece-full"])
def test_non_finite_mahalanobis_matrix_is_refused(call, bad):
    M = [[bad, 0.0], [0.0, 1.0]]
    with pytest.raises(calframe.ParameterError, match=r"'distance'.*finite numbers; 1 of its 4 entries"):
        call(M)


def test_mahalanobis_matrix_near_the_largest_float_stays_finite():
    """d = sqrt(diff M diff^T) with diff = [d, -d]: |conf - acc| * sqrt(m00 - m01 - m10 + m11) per bin."""
    M = [[1e308, -1e308], [-1e308, 1e308]]
    want = calframe.ce(BINARY, bins=2) * np.sqrt(4.0) * 1e154  # sqrt(4e308) = 2e154, linear in the distance
    assert calframe.ce(BINARY, bins=2, distance=("mahalanobis", M)) == pytest.approx(want, rel=1e-12)
    assert calframe.gece(BINARY, bins=2, distance=("mahalanobis", M)) == pytest.approx(want, rel=1e-12)


# --------------------------------------------------------------------------- seeds

SEEDED = {
    "ce": lambda s: calframe.ce(BINARY, seed=s),
    "ce-lazy": lambda s: calframe.ce(BINARY.lazy(), seed=s),
    "ce-debiased-p1": lambda s: calframe.ce(BINARY, p=1, estimator="debiased", seed=s),
    "ece-ci": lambda s: calframe.ece(BINARY, ci=0.9, n_boot=20, seed=s),
    "mce": lambda s: calframe.mce(BINARY, seed=s),
    "rmsce": lambda s: calframe.rmsce(BINARY, seed=s),
    "brier": lambda s: calframe.brier(BINARY, seed=s),
    "log_loss": lambda s: calframe.log_loss(BINARY, seed=s),
    "accuracy": lambda s: calframe.accuracy(BINARY, seed=s),
    "summary": lambda s: calframe.summary(BINARY, seed=s),
    "vece": lambda s: calframe.vece(BINARY, "v", bins=2, seed=s),
    "vece-lazy": lambda s: calframe.vece(BINARY.lazy(), "v", bins=2, seed=s),
    "vmce": lambda s: calframe.vmce(BINARY, "v", bins=2, seed=s),
    "gece": lambda s: calframe.gece(BINARY, seed=s),
    "namespace": lambda s: BINARY.calib.ece(seed=s),
    "report": lambda s: __import__("calframe.report", fromlist=["x"]).build_report(BINARY, n_boot=10, seed=s),
    "datasets.grouped_miscalibration": lambda s: calframe.datasets.grouped_miscalibration(n=10, seed=s),
    "datasets.multiclass": lambda s: calframe.datasets.multiclass(n=10, k=3, seed=s),
    "datasets.theorem_5_1": lambda s: calframe.datasets.theorem_5_1(n=10, seed=s),
    "datasets.theorem_5_2": lambda s: calframe.datasets.theorem_5_2(n=10, seed=s),
    "scaling_binning": lambda s: R.ScalingBinning.fit(np.linspace(0.05, 0.95, 30), np.arange(30) % 2, seed=s),
    "fit-scaling_binning": lambda s: calframe.fit(calframe.datasets.grouped_miscalibration(n=300), "scaling_binning",
                                                  n_bins=2, seed=s),
}
BAD_SEEDS = [-1, "a", 1.5, True, np.int64(-3), [1, 2]]


@pytest.mark.parametrize("seed", BAD_SEEDS, ids=repr)
@pytest.mark.parametrize("case", list(SEEDED))
def test_bad_seed_is_a_parameter_error_naming_seed(case, seed):
    with pytest.raises(calframe.ParameterError, match=r"'seed' parameter .*non-negative int"):
        SEEDED[case](seed)


@pytest.mark.parametrize("case", list(SEEDED))
def test_good_seeds_are_accepted(case):
    SEEDED[case](0)
    SEEDED[case](np.uint32(7))  # numpy integers are seeds too


@pytest.mark.parametrize("seed", BAD_SEEDS, ids=repr)
@pytest.mark.parametrize("method", ["ce", "ece", "mce", "rmsce", "vece", "brier", "log_loss", "accuracy"])
def test_bad_seed_on_dask(method, seed):
    dd = pytest.importorskip("dask.dataframe")
    importlib.import_module("calframe.frames.dask")
    ddf = dd.from_pandas(BINARY.to_pandas(), npartitions=2)
    args = ("v",) if method == "vece" else ()
    kw = {"bins": 2} if method == "vece" else {}
    with pytest.raises(calframe.ParameterError, match=r"'seed' parameter .*non-negative int"):
        getattr(ddf.calib, method)(*args, seed=seed, **kw)


# --------------------------------------------------------------------------- resource limits


def _many_groups(n=20_000, groups=1000, seed=0):
    rng = np.random.default_rng(seed)
    return pl.DataFrame({"prob": rng.random(n), "label": rng.integers(0, 2, n), "g": rng.integers(0, groups, n)})


def _dask(df):
    dd = pytest.importorskip("dask.dataframe")
    importlib.import_module("calframe.frames.dask")
    return dd.from_pandas(df.to_pandas(), npartitions=2)


HUGE = {  # bins=b in 1000 groups: a 1e9-cell table (24 GB of sums, ~72 GB with partial tables)
    "eager": lambda df, b: calframe.ece(df, bins=b, by="g"),
    "pandas": lambda df, b: calframe.ece(df.to_pandas(), bins=b, by="g"),
    "lazy": lambda df, b: calframe.ece(df.lazy(), bins=b, by="g").collect(),  # the limit is checked at collect
    "reliability": lambda df, b: calframe.reliability(df, bins=b, by="g"),
    "summary": lambda df, b: calframe.summary(df, bins=b, by="g"),
    "dask": lambda df, b: _dask(df).calib.ece(bins=b, by="g").compute(),
}


@pytest.mark.parametrize("case", list(HUGE))
def test_huge_group_bin_table_is_refused_before_allocating(case):
    import time
    import tracemalloc

    df = _many_groups()
    HUGE[case](df, 15)  # warm up (imports, numba) outside the measurement
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        with pytest.raises(calframe.ParameterError, match=r"1,000,000,000 cells.*calframe\.limits\(max_cells="):
            HUGE[case](df, 10**6)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - t0 < 30
    assert peak < 200 * 2**20  # no table: well below the 24 GB it would take


def test_the_limit_is_raised_by_calframe_limits():
    df = _many_groups(n=2000, groups=20, seed=1)
    with calframe.limits(max_cells=1999):  # 20 groups x 100 bins = 2000 cells
        assert calframe.limits().max_cells == 1999
        for call in (lambda: calframe.ece(df, bins=100, by="g"),
                     lambda: calframe.ece(df.lazy(), bins=100, by="g").collect(),
                     lambda: calframe.reliability(df, bins=100, by="g")):
            with pytest.raises(calframe.ParameterError, match="2,000 cells.*limit of 1,999 cells"):
                call()
        with calframe.limits(max_cells=2000):
            got = calframe.ece(df, bins=100, by="g", lens="top1")  # ref_ece is top-label
            lazy = calframe.ece(df.lazy(), bins=100, by="g", lens="top1").collect()  # the limit when collected
        assert calframe.limits().max_cells == 1999  # restored on exit
    assert calframe.limits().max_cells == 20_000_000  # the documented default
    # the values are those of a per-group numpy computation (not of a changed algorithm)
    for key, value in zip(got["g"].to_list(), got["ece"].to_list()):
        sub = df.filter(pl.col("g") == key)
        p, y = sub["prob"].to_numpy(), sub["label"].to_numpy()
        assert value == pytest.approx(ref_ece(p, y, np.ones(len(p)), bins=100), abs=1e-12)
    assert lazy["ece"].to_list() == pytest.approx(got["ece"].to_list(), abs=1e-12)


def test_the_bootstrap_splits_its_batches_under_the_limit():
    """A batch of r draws builds r tables side by side: under a low limit it takes fewer draws at a time, same values."""
    df = _many_groups(n=400, groups=4, seed=2)
    want = calframe.ece(df, bins=50, by="g", ci=0.9, n_boot=40, seed=3)
    with calframe.limits(max_cells=200):  # 4 groups x 50 bins: the call's own table fits, 40 draws at once do not
        got = calframe.ece(df, bins=50, by="g", ci=0.9, n_boot=40, seed=3)
    assert got.equals(want)


@pytest.mark.parametrize("bad", [0, -5, 1.5, "10", True])
def test_limits_refuses_a_bad_max_cells(bad):
    with pytest.raises(calframe.ParameterError, match="'max_cells' parameter of limits"):
        calframe.limits(max_cells=bad)
    assert calframe.limits().max_cells == 20_000_000


def test_vector_lens_table_is_checked():
    from calframe import generalized as G

    gp = np.array([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]])
    with calframe.limits(max_cells=10):
        with pytest.raises(calframe.ParameterError, match="11 cells"):
            G.accumulate(gp, np.array([0, 1]), np.array([0, 10], dtype=np.int32), 11)
