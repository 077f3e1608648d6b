"""Numbers at the edges (issue 11): logistic fits on separable data, extreme and scaled weights, the
CE order p, Mahalanobis matrices, the (group, bin) table limit and seed validation.

References: scikit-learn's LogisticRegression solved to convergence (newton-cholesky, tol=1e-14),
betacal with that solver patched in, the issue's numbers, and numpy by hand.
"""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest
from scipy.special import expit

import calframe
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
