"""calframe.sklearn: array metrics and scorers, checked inside real scikit-learn objects.

References are numpy by hand and scikit-learn's own metrics; calframe's frame functions are checked to give
the same numbers as the array entry point.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import polars as pl
import pytest

sklearn = pytest.importorskip("sklearn")
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.metrics import accuracy_score, brier_score_loss, log_loss as sk_log_loss  # noqa: E402
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score  # noqa: E402

import calframe  # noqa: E402
import calframe.sklearn as cs  # noqa: E402


def ece_by_hand(y_true, conf, correct=None, bins=15, weights=None):
    """Uniform-bin ECE by hand: bin b holds conf in [b/bins, (b+1)/bins), the last bin closed."""
    conf = np.asarray(conf, float)
    correct = np.asarray(y_true if correct is None else correct, float)
    w = np.ones_like(conf) if weights is None else np.asarray(weights, float)
    b = np.minimum((conf * bins).astype(int), bins - 1)
    total = 0.0
    for k in np.unique(b):
        m = b == k
        total += abs(np.average(conf[m], weights=w[m]) - np.average(correct[m], weights=w[m])) * w[m].sum()
    return total / w.sum()


@pytest.fixture
def binary():
    rng = np.random.default_rng(3)
    p = rng.uniform(0.01, 0.99, 500)
    y = (rng.uniform(size=500) < p**1.5).astype(int)
    return y, p


@pytest.fixture
def multiclass():
    rng = np.random.default_rng(4)
    logits = rng.normal(size=(400, 3)) * 2
    p = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    y = np.array([rng.choice(3, p=row) for row in p**1.3 / (p**1.3).sum(1, keepdims=True)])
    return y, p


def test_import_calframe_does_not_import_sklearn():
    code = "import sys, calframe; assert 'sklearn' not in sys.modules and 'calframe.sklearn' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_binary_array_metrics_match_hand_and_frame(binary):
    y, p = binary
    assert cs.ece(y, p, bins=10) == pytest.approx(ece_by_hand(y, p, bins=10), abs=1e-12)
    assert cs.ece(y, p, bins=10) == calframe.ece(pl.DataFrame({"prob": p, "label": y}), bins=10)
    mce_hand = max(abs(p[m].mean() - y[m].mean()) for m in
                   (np.minimum((p * 10).astype(int), 9) == k for k in range(10)) if m.any())
    assert cs.mce(y, p, bins=10) == pytest.approx(mce_hand, abs=1e-12)
    assert cs.brier(y, p) == pytest.approx(brier_score_loss(y, p), abs=1e-12)
    assert cs.log_loss(y, p) == pytest.approx(sk_log_loss(y, p), abs=1e-12)


def test_multiclass_array_metrics_match_hand(multiclass):
    y, p = multiclass
    conf, pred = p.max(1), p.argmax(1)
    assert cs.ece(y, p) == pytest.approx(ece_by_hand(y, conf, correct=pred == y), abs=1e-12)
    assert cs.accuracy(y, p) == pytest.approx(accuracy_score(y, pred), abs=1e-12)
    assert cs.log_loss(y, p) == pytest.approx(sk_log_loss(y, p, labels=[0, 1, 2]), abs=1e-12)
    # class:2 lens: class 2's probability against its frequency
    assert cs.ece(y, p, lens="class:2") == pytest.approx(ece_by_hand(y == 2, p[:, 2]), abs=1e-12)


def test_sample_weight_is_a_row_weight(binary):
    y, p = binary
    w = np.random.default_rng(5).integers(0, 4, y.size).astype(float)
    assert cs.ece(y, p, sample_weight=w) == pytest.approx(ece_by_hand(y, p, weights=w), abs=1e-12)
    # integer weights = repeated rows
    assert cs.ece(y, p, sample_weight=w) == pytest.approx(cs.ece(np.repeat(y, w.astype(int)),
                                                                 np.repeat(p, w.astype(int))), abs=1e-12)


def test_options_and_frames_pass_through(binary):
    y, p = binary
    table = cs.reliability(y, p, bins=5)
    assert isinstance(table, pl.DataFrame) and table["n"].sum() == y.size
    out = cs.ece(y, p, ci=0.9, n_boot=50)
    assert isinstance(out, pl.DataFrame) and out["ece_lo"][0] <= out["ece"][0] <= out["ece_hi"][0]


@pytest.mark.parametrize("y_true, y_prob, param, match", [
    ([0, 1, 1], [0.2, 0.7], "y_prob", "y_true has 3 rows but y_prob has 2 rows"),
    ([[0], [1]], [0.2, 0.7], "y_true", "shape \\(2, 1\\)"),
    ([0, 1], np.zeros((2, 2, 2)), "y_prob", "shape \\(2, 2, 2\\)"),
])
def test_bad_shapes_raise_calframe_errors(y_true, y_prob, param, match):
    with pytest.raises(calframe.CalframeError, match=match):
        cs.ece(y_true, y_prob)


def test_bad_values_name_the_argument():
    with pytest.raises(calframe.InvalidValueError, match="'y_prob'.*outside \\[0, 1\\]"):
        cs.ece([0, 1], [0.2, 1.5])
    with pytest.raises(calframe.ParameterError, match="sample_weight"):
        cs.ece([0, 1], [0.2, 0.5], sample_weight=[1.0])


def _folds_by_hand(model, X, y, cv, metric, **options):
    """The metric on each fold's held-out predict_proba, computed outside scikit-learn's scoring."""
    out = []
    for train, test in cv.split(X, y):
        m = sklearn.clone(model).fit(X[train], y[train])
        proba = m.predict_proba(X[test])
        idx = np.searchsorted(m.classes_, y[test])
        if proba.shape[1] == 2:
            proba = proba[:, 1]
        out.append(getattr(cs, metric)(idx, proba, **options))
    return np.array(out)


def _data(n_classes, labels=None, n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    score = X @ np.array([1.5, -1.0, 0.5]) + rng.normal(size=n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    return X, (y if labels is None else np.asarray(labels)[y])


@pytest.mark.parametrize("n_classes, labels", [(2, None), (2, ["no", "yes"]), (3, None), (3, ["a", "b", "c"])])
def test_scorer_in_cross_val_score_is_minus_ece_of_each_fold(n_classes, labels):
    X, y = _data(n_classes, labels)
    cv = StratifiedKFold(4, shuffle=True, random_state=0)
    scores = cross_val_score(LogisticRegression(), X, y, cv=cv, scoring=cs.make_scorer("ece", bins=10),
                             error_score="raise")
    hand = _folds_by_hand(LogisticRegression(), X, y, cv, "ece", bins=10)
    np.testing.assert_allclose(scores, -hand, rtol=0, atol=1e-12)
    assert (hand > 0).all()


def test_binary_scorer_scores_classes_1_probability():
    # the scorer's ECE on the class-1 probability equals the by-hand ECE of predict_proba[:, 1]
    X, y = _data(2)
    model = LogisticRegression().fit(X[:400], y[:400])
    expected = ece_by_hand(y[400:], model.predict_proba(X[400:])[:, 1])
    assert cs.make_scorer("ece")(model, X[400:], y[400:]) == pytest.approx(-expected, abs=1e-12)


def test_grid_search_picks_the_lowest_ece():
    X, y = _data(2, n=400, seed=1)
    cv = StratifiedKFold(3, shuffle=True, random_state=1)
    grid = {"C": [1e-3, 1e-2, 1.0, 100.0]}
    search = GridSearchCV(LogisticRegression(), grid, scoring=cs.make_scorer("ece", bins=10), cv=cv,
                          error_score="raise").fit(X, y)
    hand = [_folds_by_hand(LogisticRegression(C=c), X, y, cv, "ece", bins=10).mean() for c in grid["C"]]
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], -np.array(hand), rtol=0, atol=1e-12)
    assert search.best_params_ == {"C": grid["C"][int(np.argmin(hand))]}
    assert len(set(np.round(hand, 6))) == len(hand)  # the choice is not a tie


def test_accuracy_scorer_is_not_negated():
    X, y = _data(3)
    model = LogisticRegression().fit(X, y)
    assert cs.make_scorer("accuracy")(model, X, y) == pytest.approx(accuracy_score(y, model.predict(X)))


def test_scorer_errors():
    with pytest.raises(calframe.ParameterError, match="'metric'.*make_scorer"):
        cs.make_scorer("reliability")
    with pytest.raises(calframe.ParameterError, match="'ci'"):
        cs.make_scorer("ece", ci=0.95)
    X, y = _data(2)
    model = LogisticRegression().fit(X, y)
    with pytest.raises(calframe.InvalidValueError, match="labels the estimator was not fitted on"):
        cs.make_scorer("ece")(model, X[:3], np.array([0, 1, 7]))
