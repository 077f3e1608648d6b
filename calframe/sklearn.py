"""calframe for scikit-learn users: metrics on ``(y_true, y_prob)`` arrays, scorers, estimators.

scikit-learn is an optional dependency (the ``sklearn`` extra): ``import
calframe`` never imports this module, and this module imports scikit-learn
only when an estimator class is first used (the array metrics and the scorers
do not need it).

Array metrics
-------------
``calframe.sklearn.ece(y_true, y_prob, **options)`` (and ``ce``, ``mce``,
``rmsce``, ``brier``, ``log_loss``, ``accuracy``, ``gece``, ``reliability``,
``summary``) take the arrays as scikit-learn's metrics do:

- ``y_prob`` 1-d: the probability of class 1 (binary); ``y_true`` holds 0/1
  or booleans. The default lens is ``class:1``, as scikit-learn's
  ``calibration_curve``.
- ``y_prob`` of shape (n, K): class probabilities, as ``predict_proba``
  returns them; ``y_true`` holds class indices in [0, K). The default lens is
  ``top1``.
- ``sample_weight``: optional non-negative row weights.

They build a Polars frame with the columns ``y_true``, ``y_prob`` (and
``sample_weight``) and call the function of the same name in ``calframe``:
same options, same numbers, same errors (which name those columns).

Scorers
-------
``make_scorer("ece", **options)`` gives a scorer for ``cross_val_score``,
``GridSearchCV`` and every ``scoring=`` parameter: it calls
``estimator.predict_proba(X)``, maps ``y`` to the indices of
``estimator.classes_`` (binary: the probability of ``classes_[1]``), and
returns minus the figure, since scikit-learn maximises scores.

Estimators
----------
``CalibratedClassifier(estimator, method=..., cv=0.3)`` is a classifier
followed by any calframe recalibrator (``tree``, ``beta_v`` and ``lore``
included), fitted on held-out rows or, with ``cv="prefit"``, on the rows given
to ``fit``; ``CalframeCalibrator(method=...)`` is the recalibrator alone, on
class probabilities. Both follow the scikit-learn protocol (``get_params``,
``set_params``, ``clone``, ``Pipeline``, ``GridSearchCV``).

Examples
--------
>>> import numpy as np, calframe.sklearn as cs
>>> from sklearn.linear_model import LogisticRegression
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(500, 2)); y = (X[:, 0] + rng.normal(size=500) > 0).astype(int)
>>> model = cs.CalibratedClassifier(LogisticRegression(), method="tree", variable=1).fit(X, y)
>>> model.predict_proba(X[:3]).shape
(3, 2)
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

from . import api
from . import registry
from ._errors import InvalidValueError, ParameterError, bad_param
from ._errors import rows as _rows

__all__ = [
    "CalframeCalibrator",
    "CalibratedClassifier",
    "accuracy",
    "brier",
    "ce",
    "ece",
    "gece",
    "log_loss",
    "make_scorer",
    "mce",
    "reliability",
    "rmsce",
    "summary",
    "to_frame",
]

#: the calframe functions offered on arrays, by name: the figure table's figures on "sklearn"
#: (``calframe.registry.figures("sklearn")``) and ``reliability``. A scorer may use those with one column.
METRICS = (*registry.figures("sklearn"), "reliability")


def _scorable() -> dict[str, tuple[str, str | None]]:
    """What a scorer may use, by name: each figure of :data:`METRICS` with one column (``(figure, None)``: one
    number without ``by``), and each column of a figure of several by the column's name (``(figure, column)``;
    ``"hl_p_value"``, ``"mcb"``, ``"ece_over"``), unless that name is already a function's."""
    one = {m: (m, None) for m in METRICS if m != "reliability" and len(registry.figure_of(m).columns) == 1}
    out = dict(one)
    for m in METRICS:
        if m == "reliability" or m in one:
            continue
        for c in registry.figure_of(m).columns:
            if c.name not in METRICS:
                out.setdefault(c.name, (m, c.name))
    return out


def to_frame(y_true: Any, y_prob: Any, sample_weight: Any = None, *, func: str = "to_frame") -> pl.DataFrame:
    """The Polars frame the array metrics run on: columns ``y_true``, ``y_prob`` (and ``sample_weight``).

    ``y_prob`` is 1-d (probability of class 1) or (n, K) (class probabilities,
    one ``Array`` column). Shapes are checked here; values are checked by the
    calframe function that reads the frame.

    Examples
    --------
    >>> import calframe.sklearn as cs
    >>> cs.to_frame([0, 1], [[0.7, 0.3], [0.2, 0.8]]).schema["y_prob"]
    Array(Float64, shape=(2,))
    """
    y = np.asarray(y_true)
    p = np.asarray(y_prob)
    if y.ndim != 1:
        raise bad_param(func, "y_true", "a 1-d array of labels", f"an array of shape {y.shape}")
    if p.ndim not in (1, 2):
        raise bad_param(func, "y_prob", "a 1-d array (probability of class 1) or an (n, K) array of class "
                        "probabilities", f"an array of shape {p.shape}")
    if p.shape[0] != y.shape[0]:
        raise InvalidValueError(f"{func}: y_true has {_rows(y.shape[0])} but y_prob has {_rows(p.shape[0])}; "
                                "pass one label per probability row.")
    columns = {"y_true": pl.Series("y_true", y), "y_prob": pl.Series("y_prob", p)}
    if sample_weight is not None:
        w = np.asarray(sample_weight)
        if w.shape != y.shape:
            raise bad_param(func, "sample_weight", f"None or a 1-d array of {_rows(y.shape[0])}",
                            f"an array of shape {w.shape}")
        columns["sample_weight"] = pl.Series("sample_weight", w)
    return pl.DataFrame(columns)


def _array_metric(name: str) -> Callable[..., Any]:
    func = getattr(api, name)

    def metric(y_true: Any, y_prob: Any, *, sample_weight: Any = None, **options: Any) -> Any:
        frame = to_frame(y_true, y_prob, sample_weight, func=f"calframe.sklearn.{name}")
        weights = {} if sample_weight is None else {"weights": "sample_weight"}
        return func(frame, "y_prob", "y_true", **weights, **options)

    metric.__name__ = metric.__qualname__ = name
    metric.__doc__ = (f"``calframe.{name}`` on arrays: ``{name}(y_true, y_prob, sample_weight=None, **options)``.\n\n"
                      "``y_prob`` is 1-d (probability of class 1) or (n, K) (``predict_proba`` output); the options\n"
                      f"and the result are those of ``calframe.{name}`` (see the module docstring).\n")
    return metric


ce = _array_metric("ce")
ece = _array_metric("ece")
mce = _array_metric("mce")
rmsce = _array_metric("rmsce")
brier = _array_metric("brier")
log_loss = _array_metric("log_loss")
accuracy = _array_metric("accuracy")
gece = _array_metric("gece")
reliability = _array_metric("reliability")
summary = _array_metric("summary")


def class_indices(y: Any, classes: Any, func: str) -> np.ndarray:
    """Indices of the labels ``y`` in the sorted ``classes`` (an estimator's ``classes_``)."""
    y, classes = np.asarray(y), np.asarray(classes)
    idx = np.searchsorted(classes, y).clip(0, len(classes) - 1)
    unknown = classes[idx] != y
    if unknown.any():
        raise InvalidValueError(f"{func}: {_rows(int(unknown.sum()))} of y hold labels the estimator was not fitted "
                                f"on (e.g. {y[unknown][0]!r}; classes_ is {classes.tolist()!r}).")
    return idx


def predictions(estimator: Any, X: Any, y: Any, func: str) -> tuple[np.ndarray, np.ndarray]:
    """``(y_true, y_prob)`` for the array metrics from a fitted classifier: ``y`` as indices of
    ``estimator.classes_`` and ``estimator.predict_proba(X)``, for two classes the probability of
    ``classes_[1]`` (as scikit-learn's scorers and ``CalibrationDisplay.from_estimator``)."""
    proba = np.asarray(estimator.predict_proba(X))
    labels = class_indices(y, estimator.classes_, func)
    if proba.ndim == 2 and proba.shape[1] == 2:
        proba = proba[:, 1]
    return labels, proba


class CalframeScorer:
    """A scikit-learn scorer (``scorer(estimator, X, y, sample_weight=None)``) for one calframe figure.

    Made by :func:`make_scorer`; returns ``sign * figure`` on ``estimator.predict_proba(X)``.
    """

    def __init__(self, metric: str, sign: int, options: dict[str, Any]) -> None:
        self.metric, self.sign, self.options = metric, sign, options
        self.figure, self.column = _scorable()[metric]

    def __call__(self, estimator: Any, X: Any, y: Any, sample_weight: Any = None) -> float:
        labels, proba = predictions(estimator, X, y, f"calframe.sklearn.make_scorer({self.metric!r})")
        value = getattr(sys.modules[__name__], self.figure)(labels, proba, sample_weight=sample_weight, **self.options)
        if self.column is not None:  # a column of a figure of several: its one row
            value = value[self.column][0]
        return self.sign * float(value)

    def __repr__(self) -> str:
        opts = "".join(f", {k}={v!r}" for k, v in self.options.items())
        return f"calframe.sklearn.make_scorer({self.metric!r}{opts})"


def make_scorer(metric: str, *, greater_is_better: bool | None = None, **options: Any) -> CalframeScorer:
    """A scorer for ``cross_val_score``, ``GridSearchCV`` and any ``scoring=`` parameter.

    ``metric`` is a figure of one column on "sklearn" in the figure table
    (``ce``, ``ece``, ``ace``, ``mce``, ``rmsce``, ``oe``, ``brier``, ``log_loss``,
    ``accuracy``, ``gece``, ...: ``calframe.registry.figures("sklearn")``), or a
    column of a figure of several (``hl_p_value``, ``mcb``, ``ece_over``, ``ks``, ...),
    scored on that column; ``options`` go to the figure (``bins``,
    ``lens``, ``binning``, ...; not ``ci`` or ``by``: a score is one number).
    The scorer calls ``predict_proba``; for two classes it scores the
    probability of ``estimator.classes_[1]`` (lens ``class:1`` by default),
    else the class probabilities (``top1`` by default). Errors are negated
    (``greater_is_better`` defaults to False except for ``accuracy``), as
    scikit-learn's ``neg_*`` scorers: the best model has the highest score.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.model_selection import cross_val_score
    >>> import numpy as np, calframe.sklearn as cs
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2)); y = (X[:, 0] + rng.normal(size=300) > 0).astype(int)
    >>> scores = cross_val_score(LogisticRegression(), X, y, cv=3, scoring=cs.make_scorer("ece", bins=10))
    >>> bool((scores <= 0).all())
    True
    """
    scalar = _scorable()
    if metric not in scalar:
        raise bad_param("calframe.sklearn.make_scorer", "metric", f"one of {sorted(scalar)}", metric)
    figure, column = scalar[metric]
    for key in ("ci", "by"):
        if options.get(key) is not None:
            raise bad_param("calframe.sklearn.make_scorer", key, "None (a score is one number)", options[key])
    if greater_is_better is None:
        cols = registry.figure_of(figure).columns
        greater_is_better = next(c for c in cols if column is None or c.name == column).better == "higher"
    return CalframeScorer(metric, 1 if greater_is_better else -1, options)


# --------------------------------------------------------------------------- estimators


def _sklearn_base() -> tuple[type, type]:
    """scikit-learn's BaseEstimator and ClassifierMixin, imported when an estimator class is first needed."""
    from sklearn.base import BaseEstimator, ClassifierMixin

    return BaseEstimator, ClassifierMixin


def _recalibrate(func: str, method: str, params: dict[str, Any] | None, proba: np.ndarray, labels: np.ndarray | None,
                 extra: np.ndarray, variable: int | None, features: list[int] | None, rec: Any = None) -> Any:
    """calframe.fit (when ``rec`` is None) or calframe.apply on a frame of class probabilities and extra columns.

    ``proba`` is (n, K); binary input goes to calframe as the probability of class 1. Returns the recalibrator
    (fit) or the (n, K) recalibrated class probabilities (apply).
    """
    binary = proba.shape[1] == 2
    _check_indices(func, variable, features, extra.shape[1], f" after its {proba.shape[1]} class probabilities")
    frame = to_frame(np.zeros(len(proba), np.int64) if labels is None else labels,
                     proba[:, 1] if binary else proba, func=func)
    cols = {"v": variable} if variable is not None else {}
    cols.update({f"f{j}": i for j, i in enumerate(features or [])})
    frame = frame.with_columns(pl.Series(name, extra[:, i]) for name, i in cols.items())
    where = {"variable": "v"} if variable is not None else {}
    if features:
        where["features"] = [f"f{j}" for j in range(len(features))]
    if rec is None:
        rec = api.fit(frame, method, "y_prob", "y_true", **where, **(params or {}))
        if not binary and rec.output != "probs":
            raise bad_param(func, "method", "a method that recalibrates the whole class-probability vector for "
                            f"K = {proba.shape[1]} classes ('temperature' or 'tree'); {method!r} resets only the "
                            "top-label confidence", method)
        return rec
    out = api.apply(frame.drop("y_true"), rec, name="p_cal", **where)["p_cal"].to_numpy()
    return np.column_stack([1.0 - out, out]) if binary else np.asarray(out)


def _check_indices(func: str, variable: Any, features: Any, n_cols: int, after: str = "") -> None:
    """``variable`` and each of ``features`` are column indices of X's ``n_cols`` columns (``after``: where they
    start, e.g. " after its 2 class probabilities"), as numpy takes them (``-n_cols`` to ``n_cols - 1``); else
    a ParameterError naming the parameter, the index and how many columns there are.

    >>> _check_indices("CalibratedClassifier.fit", 7, None, 3)
    Traceback (most recent call last):
    ...
    calframe._errors.ParameterError: CalibratedClassifier.fit: variable=7 is not a column index: X has 3 \
columns (indices 0 to 2). Pass one of those indices (variable=0: the first column).
    """
    named = [("variable", variable)] if variable is not None else []
    named += [("features", f) for f in ([] if features is None else list(features))]
    for param, i in named:
        if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)) or not -n_cols <= i < n_cols:
            shown = (f"variable={i!r} is" if param == "variable"
                     else f"features={list(features)!r} holds {i!r}, which is")
            first = "variable=0" if param == "variable" else "features=[0]"
            if not n_cols:
                raise ParameterError(f"{func}: {shown} not a column index: X has no columns{after}.", param)
            raise ParameterError(f"{func}: {shown} not a column index: X has {n_cols} columns{after} (indices 0 "
                                 f"to {n_cols - 1}). Pass one of those indices ({first}: the first column{after}).",
                                 param)


def _columns(X: Any, func: str) -> np.ndarray:
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise bad_param(func, "X", "a 2-d array", f"an array of shape {X.shape}")
    return X


def __getattr__(name: str) -> Any:
    """The estimator classes, built on first use so that importing this module does not import scikit-learn; every
    other figure of :data:`METRICS` on arrays (a figure declared on "sklearn" is here without an edit here)."""
    if name in ("CalframeCalibrator", "CalibratedClassifier"):
        globals().update(_estimators())
        return globals()[name]
    if name in METRICS:
        globals()[name] = fn = _array_metric(name)
        return fn
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _estimators() -> dict[str, type]:
    BaseEstimator, ClassifierMixin = _sklearn_base()
    from sklearn.utils.validation import check_is_fitted

    class CalframeCalibrator(ClassifierMixin, BaseEstimator):
        """A calframe recalibrator as a scikit-learn estimator: ``fit(X, y)`` / ``predict_proba(X)``.

        ``X`` holds the K class probabilities (``predict_proba`` output; K =
        the number of classes in ``y``) in its first K columns, then any extra
        columns: ``variable`` (tree, beta_v) and ``features`` (lore) index
        those extra columns (0 = the first column after the probabilities).
        ``method`` is any of ``calframe.fit``'s; ``params`` go to it.
        """

        def __init__(self, method: str = "platt", params: dict[str, Any] | None = None,
                     variable: int | None = None, features: list[int] | None = None) -> None:
            self.method, self.params, self.variable, self.features = method, params, variable, features

        def _split(self, X: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
            X = _columns(X, "CalframeCalibrator")
            if X.shape[1] < k:
                raise bad_param("CalframeCalibrator", "X", f"at least {k} columns (the class probabilities first)",
                                f"an array of shape {X.shape}")
            return X[:, :k], X[:, k:]

        def fit(self, X: Any, y: Any) -> "CalframeCalibrator":
            self.classes_ = np.unique(np.asarray(y))
            proba, extra = self._split(X, max(len(self.classes_), 2))
            labels = class_indices(y, self.classes_, "CalframeCalibrator.fit")
            self.recalibrator_ = _recalibrate("CalframeCalibrator.fit", self.method, self.params, proba, labels,
                                              extra, self.variable, self.features)
            self.n_features_in_ = np.asarray(X).shape[1]
            return self

        def predict_proba(self, X: Any) -> np.ndarray:
            check_is_fitted(self, "recalibrator_")
            proba, extra = self._split(X, max(len(self.classes_), 2))
            return _recalibrate("CalframeCalibrator.predict_proba", self.method, self.params, proba, None, extra,
                                self.variable, self.features, rec=self.recalibrator_)

        def predict(self, X: Any) -> np.ndarray:
            return self.classes_[self.predict_proba(X).argmax(1)]

    class CalibratedClassifier(ClassifierMixin, BaseEstimator):
        """A classifier followed by a calframe recalibrator, as scikit-learn's ``CalibratedClassifierCV``.

        ``cv="prefit"`` recalibrates an already fitted ``estimator`` on the
        data given to ``fit``; a float in (0, 1) holds that fraction of the
        rows out (stratified, ``random_state``), fits a clone of ``estimator``
        on the rest and recalibrates on the held-out rows. ``variable`` and
        ``features`` are column indices of ``X`` (tree, beta_v; lore).
        """

        def __init__(self, estimator: Any = None, method: str = "platt", params: dict[str, Any] | None = None,
                     variable: int | None = None, features: list[int] | None = None,
                     cv: str | float = 0.3, random_state: int = 0) -> None:
            self.estimator, self.method, self.params = estimator, method, params
            self.variable, self.features, self.cv, self.random_state = variable, features, cv, random_state

        def _stacked(self, clf: Any, X: np.ndarray, func: str) -> np.ndarray:
            _check_indices(func, self.variable, self.features, X.shape[1])
            extra = [self.variable] if self.variable is not None else []
            return np.column_stack([clf.predict_proba(X), X[:, extra + list(self.features or [])]])

        def _calibrator(self) -> Any:
            k = 1 if self.variable is not None else 0
            return CalframeCalibrator(self.method, self.params, 0 if self.variable is not None else None,
                                      list(range(k, k + len(self.features))) if self.features else None)

        def fit(self, X: Any, y: Any) -> "CalibratedClassifier":
            from sklearn.base import clone
            from sklearn.model_selection import train_test_split

            X, y = _columns(X, "CalibratedClassifier.fit"), np.asarray(y)
            if self.estimator is None:
                raise bad_param("CalibratedClassifier", "estimator", "a classifier with predict_proba", None)
            _check_indices("CalibratedClassifier.fit", self.variable, self.features, X.shape[1])  # before any fit
            if isinstance(self.cv, str) and self.cv == "prefit":
                check_is_fitted(self.estimator)
                clf, X_cal, y_cal = self.estimator, X, y
            elif isinstance(self.cv, float) and 0.0 < self.cv < 1.0:
                X_fit, X_cal, y_fit, y_cal = train_test_split(X, y, test_size=self.cv, stratify=y,
                                                              random_state=self.random_state)
                clf = clone(self.estimator).fit(X_fit, y_fit)
            else:
                raise bad_param("CalibratedClassifier", "cv", "'prefit' or a float in (0, 1)", self.cv)
            self.estimator_, self.classes_ = clf, clf.classes_
            seen = np.unique(y_cal).size
            if seen != len(clf.classes_):
                raise InvalidValueError(f"CalibratedClassifier.fit: the {_rows(len(y_cal))} recalibrated on hold "
                                        f"{seen} of the {len(clf.classes_)} classes the estimator knows; "
                                        "recalibrate on rows of every class (a larger cv fraction, or more rows).")
            self.calibrator_ = self._calibrator().fit(self._stacked(clf, X_cal, "CalibratedClassifier.fit"),
                                                      class_indices(y_cal, clf.classes_, "CalibratedClassifier.fit"))
            self.n_features_in_ = X.shape[1]
            return self

        def predict_proba(self, X: Any) -> np.ndarray:
            check_is_fitted(self, "calibrator_")
            X = _columns(X, "CalibratedClassifier.predict_proba")
            stacked = self._stacked(self.estimator_, X, "CalibratedClassifier.predict_proba")
            return self.calibrator_.predict_proba(stacked)

        def predict(self, X: Any) -> np.ndarray:
            return self.classes_[self.predict_proba(X).argmax(1)]

    for cls in (CalframeCalibrator, CalibratedClassifier):  # pickled as calframe.sklearn.<name> (module __getattr__)
        cls.__module__, cls.__qualname__ = __name__, cls.__name__
    return {"CalframeCalibrator": CalframeCalibrator, "CalibratedClassifier": CalibratedClassifier}


def __dir__() -> list[str]:
    """The public names (``__all__``), not the modules and typing names this module imports."""
    return sorted(__all__)
