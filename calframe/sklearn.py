"""calframe for scikit-learn users: metrics on ``(y_true, y_prob)`` arrays and scorers.

scikit-learn is an optional dependency: ``import calframe`` never imports this
module, and this module imports scikit-learn only where a scorer is used in
scikit-learn (it is not needed for the array metrics).

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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

from . import api
from ._errors import InvalidValueError, bad_param
from ._errors import rows as _rows

__all__ = [
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

#: the calframe functions offered on arrays, by name; a scorer may use those that return one number
METRICS = ("ce", "ece", "mce", "rmsce", "brier", "log_loss", "accuracy", "gece", "reliability", "summary")
#: figures for which a lower value is better (the others, accuracy, higher)
LOWER_IS_BETTER = frozenset(METRICS) - {"accuracy"}


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


class CalframeScorer:
    """A scikit-learn scorer (``scorer(estimator, X, y, sample_weight=None)``) for one calframe figure.

    Made by :func:`make_scorer`; returns ``sign * figure`` on ``estimator.predict_proba(X)``.
    """

    def __init__(self, metric: str, sign: int, options: dict[str, Any]) -> None:
        self.metric, self.sign, self.options = metric, sign, options

    def __call__(self, estimator: Any, X: Any, y: Any, sample_weight: Any = None) -> float:
        func = f"calframe.sklearn.make_scorer({self.metric!r})"
        proba = np.asarray(estimator.predict_proba(X))
        labels = class_indices(y, estimator.classes_, func)
        if proba.ndim == 2 and proba.shape[1] == 2:  # binary: the probability of classes_[1], as scikit-learn
            proba = proba[:, 1]
        value = globals()[self.metric](labels, proba, sample_weight=sample_weight, **self.options)
        return self.sign * float(value)

    def __repr__(self) -> str:
        opts = "".join(f", {k}={v!r}" for k, v in self.options.items())
        return f"calframe.sklearn.make_scorer({self.metric!r}{opts})"


def make_scorer(metric: str, *, greater_is_better: bool | None = None, **options: Any) -> CalframeScorer:
    """A scorer for ``cross_val_score``, ``GridSearchCV`` and any ``scoring=`` parameter.

    ``metric`` is one of ``ce``, ``ece``, ``mce``, ``rmsce``, ``brier``,
    ``log_loss``, ``accuracy``, ``gece``; ``options`` go to it (``bins``,
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
    scalar = set(METRICS) - {"reliability", "summary"}
    if metric not in scalar:
        raise bad_param("calframe.sklearn.make_scorer", "metric", f"one of {sorted(scalar)}", metric)
    for key in ("ci", "by"):
        if options.get(key) is not None:
            raise bad_param("calframe.sklearn.make_scorer", key, "None (a score is one number)", options[key])
    if greater_is_better is None:
        greater_is_better = metric not in LOWER_IS_BETTER
    return CalframeScorer(metric, 1 if greater_is_better else -1, options)
