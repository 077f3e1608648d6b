"""calframe.sklearn: array metrics and scorers, checked inside real scikit-learn objects.

References are numpy by hand and scikit-learn's own metrics; calframe's frame functions are checked to give
the same numbers as the array entry point.
"""

from __future__ import annotations

import re
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
    code = ("import sys, calframe; assert 'sklearn' not in sys.modules and 'calframe.sklearn' not in sys.modules\n"
            "import calframe.sklearn as cs; cs.make_scorer('ece'); assert cs.ece([0, 1], [0.25, 0.75]) == 0.25\n"
            "assert 'sklearn' not in sys.modules")
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


# --------------------------------------------------------------------------- estimators

from sklearn.base import clone  # noqa: E402
from sklearn.calibration import CalibratedClassifierCV  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402


def _skewed(n=3000, seed=2):
    """A logistic model made over-confident by a large C on few features: room for recalibration."""
    X, y = _data(2, n=n, seed=seed)
    return X, y, LogisticRegression(C=1e4).fit(X[: n // 3] * 3, y[: n // 3])


def test_estimator_protocol_clone_params_pickle():
    est = cs.CalibratedClassifier(LogisticRegression(C=0.5), method="tree", variable=1, params={"max_depth": 2})
    params = est.get_params()
    assert params["method"] == "tree" and params["estimator__C"] == 0.5 and params["params"] == {"max_depth": 2}
    twin = clone(est)
    assert twin is not est and twin.get_params()["estimator__C"] == 0.5
    twin.set_params(method="platt", variable=None, estimator__C=2.0)
    assert (twin.method, twin.variable, twin.estimator.C, est.method) == ("platt", None, 2.0, "tree")
    with pytest.raises(NotFittedError):
        est.predict_proba(np.zeros((2, 3)))
    with pytest.raises(NotFittedError):
        cs.CalframeCalibrator().predict_proba(np.full((2, 2), 0.5))
    import pickle
    X, y = _data(2)
    fitted = est.fit(X, y)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(fitted)).predict_proba(X), fitted.predict_proba(X))


def test_prefit_platt_matches_logistic_regression_on_the_logit_and_sklearn_sigmoid():
    X, y, clf = _skewed()
    X_cal, y_cal, X_new = X[1000:2000], y[1000:2000], X[2000:]
    ours = cs.CalibratedClassifier(clf, method="platt", cv="prefit").fit(X_cal, y_cal).predict_proba(X_new)
    # the reference fit: logistic regression of y on logit(p), nearly unpenalised (calframe's default variant)
    logit = lambda q: np.log(q / (1 - q))  # noqa: E731
    ref = LogisticRegression(C=1e10, tol=1e-12, max_iter=10_000).fit(logit(clf.predict_proba(X_cal)[:, 1:]), y_cal)
    np.testing.assert_allclose(ours, ref.predict_proba(logit(clf.predict_proba(X_new)[:, 1:])), atol=1e-6)
    # scikit-learn's sigmoid calibration differs only by Platt's target smoothing: close at n = 1000
    from sklearn.frozen import FrozenEstimator
    sk = CalibratedClassifierCV(FrozenEstimator(clf), method="sigmoid").fit(X_cal, y_cal).predict_proba(X_new)
    np.testing.assert_allclose(ours, sk, atol=5e-3)
    assert np.abs(ours - clf.predict_proba(X_new)).max() > 0.05  # the recalibration did something


@pytest.mark.parametrize("method, kw", [("platt", {}), ("isotonic", {}), ("beta", {}), ("tree", {"variable": 1}),
                                        ("beta_v", {"variable": 1}), ("lore", {"features": [0, 2]})])
def test_every_method_is_calframe_apply_in_a_pipeline(method, kw):
    X, y, _ = _skewed()
    pipe = make_pipeline(StandardScaler(), cs.CalibratedClassifier(LogisticRegression(), method=method, **kw))
    got = pipe.fit(X[:2000], y[:2000]).predict_proba(X[2000:])
    # the same recalibration done by hand on frames with calframe.fit / calframe.apply
    cc = pipe[-1]
    Xs = pipe[0].transform(X)
    cal_rows = np.setdiff1d(np.arange(2000), _train_rows(y[:2000], cc))
    frame = lambda rows: pl.DataFrame({"prob": cc.estimator_.predict_proba(Xs[rows])[:, 1], "label": y[rows],  # noqa: E731
                                       **{f"x{j}": Xs[rows, j] for j in range(3)}})
    where = {"variable": f"x{kw['variable']}"} if "variable" in kw else {}
    if "features" in kw:
        where["features"] = [f"x{j}" for j in kw["features"]]
    rec = calframe.fit(frame(cal_rows), method, **where)
    expected = calframe.apply(frame(np.arange(2000, 3000)), rec, name="q", **where)["q"].to_numpy()
    np.testing.assert_allclose(got[:, 1], expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got.sum(1), 1.0)
    np.testing.assert_array_equal(pipe.predict(X[2000:]), got.argmax(1))


def _train_rows(y, cc):
    from sklearn.model_selection import train_test_split
    train, _ = train_test_split(np.arange(len(y)), test_size=cc.cv, stratify=y, random_state=cc.random_state)
    return train


def test_multiclass_vector_methods_and_a_clear_error_for_top_label_ones():
    X, y = _data(3, labels=["a", "b", "c"], n=1500)
    p = cs.CalibratedClassifier(LogisticRegression(C=1e4), method="temperature").fit(X, y).predict_proba(X)
    assert p.shape == (1500, 3)
    np.testing.assert_allclose(p.sum(1), 1.0)
    with pytest.raises(calframe.ParameterError, match="'method'.*'temperature' or 'tree'"):
        cs.CalibratedClassifier(LogisticRegression(), method="platt").fit(X, y)


def test_grid_search_over_methods_with_the_ece_scorer():
    X, y, _ = _skewed(n=1500)
    search = GridSearchCV(cs.CalibratedClassifier(LogisticRegression(C=1e4)),
                          {"method": ["platt", "isotonic", "histogram"]},
                          scoring=cs.make_scorer("ece", bins=10), cv=3, error_score="raise").fit(X, y)
    assert search.best_params_["method"] in {"platt", "isotonic", "histogram"}
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()


def test_estimator_bad_parameters():
    X, y = _data(2)
    with pytest.raises(calframe.ParameterError, match="'cv'"):
        cs.CalibratedClassifier(LogisticRegression(), cv=3).fit(X, y)
    prefit = LogisticRegression().fit(X, y)
    with pytest.raises(calframe.InvalidValueError, match="hold 1 of the 2 classes"):
        cs.CalibratedClassifier(prefit, cv="prefit").fit(X[y == 1], y[y == 1])
    with pytest.raises(calframe.ParameterError, match="'X'"):
        cs.CalframeCalibrator().fit(np.full((4, 1), 0.5), [0, 1, 0, 1])


@pytest.mark.parametrize("kw, shown", [(dict(variable=7), "variable=7"), (dict(variable=-4), "variable=-4"),
                                       (dict(variable=1.0), "variable=1.0"),
                                       (dict(method="lore", features=[0, 5]), "features=[0, 5] holds 5")])
def test_column_indices_outside_x(kw, shown):
    """variable / features outside X (issue 22, 5: a raw IndexError before): a ParameterError naming the index
    and X's columns, raised before the estimator is fitted."""
    X, y = _data(2)  # 3 columns
    with pytest.raises(calframe.ParameterError, match=rf"CalibratedClassifier.fit: {re.escape(shown)}.* X has 3 "
                                                       r"columns \(indices 0 to 2\)") as info:
        cs.CalibratedClassifier(LogisticRegression(), **{"method": "tree", **kw}).fit(X, y)
    assert info.value.param == next(iter(k for k in kw if k != "method"))
    model = cs.CalibratedClassifier(LogisticRegression(), method="tree", variable=2).fit(X, y)
    with pytest.raises(calframe.ParameterError, match="predict_proba: variable=2 .* X has 2 columns"):
        model.predict_proba(X[:, :2])
    probs = LogisticRegression().fit(X, y).predict_proba(X)  # CalframeCalibrator: indices after the probabilities
    with pytest.raises(calframe.ParameterError, match="variable=3 .* X has 3 columns after its 2 class probabilities"):
        cs.CalframeCalibrator("tree", variable=3).fit(np.column_stack([probs, X]), y)


# --------------------------------------------------------------------------- ReliabilityDisplay from arrays / estimators

pytest.importorskip("matplotlib")
import matplotlib  # noqa: E402

matplotlib.use("Agg")
from sklearn.calibration import calibration_curve  # noqa: E402

from calframe.plot import ReliabilityDisplay  # noqa: E402


def _bars(disp: ReliabilityDisplay) -> tuple[np.ndarray, np.ndarray]:
    return disp.table["acc"].to_numpy(), disp.table["conf"].to_numpy()


def test_from_predictions_bins_are_sklearns_calibration_curve():
    rng = np.random.default_rng(3)
    p = rng.uniform(size=4000) ** 1.5
    y = (rng.uniform(size=4000) < p ** 0.8).astype(int)
    disp = ReliabilityDisplay.from_predictions(y, p, bins=8)
    prob_true, prob_pred = calibration_curve(y, p, n_bins=8, strategy="uniform")
    acc, conf = _bars(disp)
    np.testing.assert_allclose(acc, prob_true, rtol=0, atol=1e-12)
    np.testing.assert_allclose(conf, prob_pred, rtol=0, atol=1e-12)
    assert disp.hist_ax_.get_xlabel() == "Mean predicted probability of class 1"


def test_from_estimator_in_a_pipeline_maps_string_labels_and_names_the_model():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(1500, 2))
    y = np.where(X[:, 0] - X[:, 1] + rng.normal(size=1500) > 0, "spam", "ham")  # classes_ = ["ham", "spam"]
    model = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    disp = ReliabilityDisplay.from_estimator(model, X, y, bins=10)
    prob_true, prob_pred = calibration_curve(y == "spam", model.predict_proba(X)[:, 1], n_bins=10)
    acc, conf = _bars(disp)
    np.testing.assert_allclose(acc, prob_true, rtol=0, atol=1e-12)
    np.testing.assert_allclose(conf, prob_pred, rtol=0, atol=1e-12)
    assert disp.ax_.get_title().startswith("Pipeline (ECE = ")
    assert disp.ece_ == pytest.approx(cs.ece((y == "spam").astype(int), model.predict_proba(X)[:, 1], bins=10),
                                      abs=1e-15)


def test_from_estimator_multiclass_is_top_label_and_unknown_labels_raise():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(900, 3))
    y = np.argmax(X + rng.normal(size=(900, 3)), axis=1)
    model = LogisticRegression().fit(X, y)
    disp = ReliabilityDisplay.from_estimator(model, X, y, bins=5, name="lr")
    proba = model.predict_proba(X)
    conf, correct = proba.max(1), (proba.argmax(1) == y).astype(float)
    b = np.minimum((conf * 5).astype(int), 4)
    want_acc = [correct[b == k].mean() for k in range(5) if (b == k).any()]
    np.testing.assert_allclose(disp.table["acc"].to_numpy(), want_acc, rtol=0, atol=1e-12)
    assert disp.hist_ax_.get_xlabel() != "Mean predicted probability of class 1"
    with pytest.raises(calframe.InvalidValueError, match="not fitted on"):
        ReliabilityDisplay.from_estimator(model, X, np.where(y == 2, 7, y))


def test_a_scorer_on_a_column_of_a_figure_of_several():
    """make_scorer takes a column of a figure of several columns (the figure table's names): the scorer's value
    is that column of the figure on the estimator's held-out probabilities, signed by the column's direction."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_score

    import calframe
    import calframe.sklearn as cs

    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 2))
    y = (X[:, 0] + rng.normal(size=600) > 0).astype(int)
    model = LogisticRegression().fit(X[:400], y[:400])
    held = pl.DataFrame({"prob": model.predict_proba(X[400:])[:, 1], "label": y[400:]})
    for column, figure, sign in (("hl_p_value", "hosmer_lemeshow", 1), ("mcb", "corp_decomposition", -1),
                                 ("ece_over", "ece_split", -1)):
        want = getattr(calframe, figure)(held)[column][0]
        got = cs.make_scorer(column)(model, X[400:], y[400:])
        assert got == sign * want, (column, got, want)
    scores = cross_val_score(LogisticRegression(), X, y, cv=3, scoring=cs.make_scorer("spiegelhalter_p_value"))
    assert ((scores >= 0) & (scores <= 1)).all()
    with pytest.raises(calframe.ParameterError, match="hl_p_value"):
        cs.make_scorer("no_such_column")
