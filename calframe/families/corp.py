"""The CORP decomposition of a score (Dimitriadis, Gneiting and Jordan 2021, PNAS): how much of the Brier score or
the log loss is miscalibration that recalibration would remove, how much the model's discrimination earns, and how
much is the outcome's own uncertainty.

In a group, with the lens's prediction ``x`` and outcome ``y`` of each row (``class:1``, the positive class, for
one probability column; ``top1`` for class probabilities), its weight ``w`` (1 without ``weights``) and ``S`` the
weighted mean score over the group's rows:

- ``r`` is the isotonic (increasing) regression of ``y`` on ``x``, weighted, tied predictions pooled (the PAV
  algorithm, as ``scipy.optimize.isotonic_regression`` and scikit-learn's ``IsotonicRegression``): the best
  recalibration of the model that keeps the order of its predictions, fitted on the rows themselves;
- ``a`` is the group's (weighted) outcome rate;
- ``score = S(x)``, ``mcb = S(x) - S(r)`` (miscalibration), ``dsc = S(a) - S(r)`` (discrimination) and
  ``unc = S(a)`` (uncertainty), so that ``score = mcb - dsc + unc``.

As the isotonic fit minimises every proper score (Brier, log loss) among the increasing functions of ``x``, and
``x`` itself and the constant ``a`` are two of those, ``mcb >= 0`` and ``dsc >= 0`` (to rounding). ``mcb`` answers
"how much of my loss would recalibration remove?", in-sample: recalibration's best case on these rows.

The **cross-fitted** variant (``cross_fit=K``, as probmetrics' ``calib-err`` with cross-validation) splits each
group's rows into K folds and scores each row by the isotonic recalibration fitted on the other folds (the
recalibrator of ``calframe.fit("isotonic")``): ``mcb`` is then what such a recalibration removes from rows it was
not fitted on, an estimate of its gain on new data, and can be negative (recalibrating would hurt); ``unc`` stays
``S(a)`` and ``dsc = unc - S(r)``, so the identity holds. The folds: each group's rows are put in order of
(prediction, outcome, weight), and each run of K consecutive rows holds one row of each fold in an order drawn
from ``numpy.random.default_rng([seed, K])``; rows equal in all three are interchangeable, so the folds, and the
figures, do not depend on the order of the frame's rows.

The log loss is :func:`calframe.log_loss`'s (probabilities clipped to [eps, 1 - eps], eps the float64 machine
epsilon), the Brier score :func:`calframe.brier`'s, both of the lens's binary outcome: for one probability column
``score`` equals them; for class probabilities it is the score of the top label (or of class c), not the K-class
score. The rows of each group are sorted, so the figure needs the rows: eager frames compute it, a LazyFrame and a
pyarrow Table are collected first (docs/engines.md).
"""

from __future__ import annotations

from typing import Any, Unpack

import numpy as np

from .. import lenses as L
from .. import request as R
from .._columns import Scored
from .._errors import InvalidValueError
from .._errors import rows as _rows
from .._keywords import Columns
from ..engines.eager import Figure, Frame, Result
from ..frames.dispatch import public
from ..registry import Column, Figure as TableRow
from .plan import run_plan

#: the figure's columns, in output order
PARTS = ("score", "mcb", "dsc", "unc")


def row_scores(x: np.ndarray, y: np.ndarray, score: str) -> np.ndarray:
    """Each row's score of the prediction ``x`` for the 0/1 outcome ``y``: ``(x - y)^2``, or the log loss of
    :func:`calframe.log_loss` (the probability given to the outcome clipped to [eps, 1 - eps])."""
    if score == "brier":
        return (x - y) ** 2
    eps = np.finfo(np.float64).eps
    return -np.log(np.clip(np.where(y == 1.0, x, 1.0 - x), eps, 1.0 - eps))


def _canonical(scored: Scored, req: R.Request) -> tuple[np.ndarray, ...]:
    """The lens's (group, prediction, outcome, weight) of every row, sorted by them: equal rows are
    interchangeable, so every sum below is the same for any order of the frame's rows."""
    conf, acc = L.scalar(scored, req.lens, req.func)
    w = np.ones(scored.n) if scored.weights is None else np.asarray(scored.weights, dtype=np.float64)
    g = scored.group_codes.astype(np.int64)
    order = np.lexsort((w, acc, conf, g))
    return g[order], np.asarray(conf, dtype=np.float64)[order], np.asarray(acc, dtype=np.float64)[order], w[order]


def in_sample(g: np.ndarray, x: np.ndarray, y: np.ndarray, w: np.ndarray, n_groups: int) -> np.ndarray:
    """Each row's isotonic recalibration, fitted on the rows of its group (rows sorted by group, then
    prediction): the weighted mean outcome of each distinct prediction, then PAV on each group's."""
    from .._kernels.isotonic import pav_segments

    new = np.ones(g.shape[0], dtype=bool)
    new[1:] = (g[1:] != g[:-1]) | (x[1:] != x[:-1])
    cell_start = np.flatnonzero(new)
    cell = np.cumsum(new) - 1
    cw = np.add.reduceat(w, cell_start)
    cwy = np.add.reduceat(w * y, cell_start)
    mean = np.divide(cwy, cw, out=np.zeros_like(cw), where=cw > 0)  # a prediction of weight 0: any value will do
    segments = np.searchsorted(g[cell_start], np.arange(n_groups + 1))
    return pav_segments(mean, cw, segments)[cell]


def cross_fitted(g: np.ndarray, x: np.ndarray, y: np.ndarray, w: np.ndarray, n_groups: int, folds: int,
                 seed: int | None, scored: Scored, func: str) -> np.ndarray:
    """Each row's isotonic recalibration fitted on the other folds of its group (module docstring: the folds)."""
    from ..recalibrate.binned import isotonic_map, isotonic_steps  # scipy: not imported by `import calframe`

    out = np.empty(g.shape[0])
    starts = np.searchsorted(g, np.arange(n_groups + 1))
    for j in range(n_groups):
        lo, hi = int(starts[j]), int(starts[j + 1])
        m = hi - lo
        rng = np.random.default_rng(None if seed is None else [seed, folds])
        fold = np.argsort(rng.random((-(-m // folds), folds)), axis=1, kind="stable").ravel()[:m]
        xs, ys, ws = x[lo:hi], y[lo:hi], w[lo:hi]
        part = out[lo:hi]
        for k in range(folds):
            held = fold == k
            if not held.any():
                continue
            train = ~held & (ws > 0)
            if not train.any():
                where = "" if scored.keys is None else f" in group {scored.keys.row(j)}"
                raise InvalidValueError(
                    f"{func}: cross_fit={folds} leaves fold {k}{where} nothing to fit the recalibration on: the "
                    f"other folds hold no row of positive weight (the group has {_rows(m)}). Use fewer folds, "
                    "or cross_fit=None (in-sample).")
            steps = isotonic_steps(xs[train], ys[train], ws[train])
            part[held] = isotonic_map(*steps, xs[held])
    return out


def decompose(scored: Scored, req: R.Request, score: str, folds: int | None) -> dict[str, np.ndarray]:
    """Per group: ``score``, ``mcb``, ``dsc`` and ``unc`` (module docstring)."""
    n_groups = scored.n_groups
    if scored.n == 0:
        return {p: np.full(n_groups, np.nan) for p in PARTS}
    g, x, y, w = _canonical(scored, req)
    if folds is None:
        r = in_sample(g, x, y, w, n_groups)
    else:
        r = cross_fitted(g, x, y, w, n_groups, folds, req.seed, scored, req.func)
    total = np.bincount(g, weights=w, minlength=n_groups)

    def mean(values: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.bincount(g, weights=w * values, minlength=n_groups) / total

    rate = mean(y)
    s_x, s_r, s_a = (mean(row_scores(v, y, score)) for v in (x, r, rate[g]))
    return {"score": s_x, "mcb": s_x - s_r, "dsc": s_a - s_r, "unc": s_a}


def _figures(req: R.Request, score: str, folds: int | None) -> dict[str, Figure]:
    """The four figures from one decomposition per scored frame (the call's, then each bootstrap draw's)."""
    last: dict[str, Any] = {}

    def parts(scored: Scored) -> dict[str, np.ndarray]:
        if last.get("scored") is not scored:  # the frame itself is kept, so its identity is not reused
            last.update(scored=scored, out=decompose(scored, req, score, folds))
        return last["out"]

    return {p: (lambda scored, p=p: parts(scored)[p]) for p in PARTS}


@public(state="sorted_rows", figure=TableRow((
    Column("score", "score", "the mean score (Brier or log loss) of the predictions; lower is better"),
    Column("mcb", "MCB (CORP)", "miscalibration: the part of the score the isotonic recalibration removes; 0 is "
           "perfect"),
    Column("dsc", "DSC (CORP)", "discrimination: how far the recalibrated predictions beat the outcome rate; "
           "higher is better", "higher"),
    Column("unc", "UNC (CORP)", "uncertainty: the score of the outcome rate itself; the same for every model")),
    lensed=True, on=frozenset({"disparity", "monitor", "expr", "sklearn"})))
@R.keywords(R.Corp)
def corp_decomposition(frame: Frame, prob: Columns = None, label: str | None = None,
                       **options: Unpack[R.Corp]) -> Result:
    """The CORP decomposition of the Brier score or the log loss (Dimitriadis, Gneiting and Jordan 2021):
    ``score = mcb - dsc + unc``, per group (module docstring).

    ``mcb`` (miscalibration) is how much of the score the isotonic recalibration of the predictions removes,
    ``dsc`` (discrimination) how far the recalibrated predictions beat the outcome rate, ``unc`` (uncertainty)
    the score of the outcome rate. ``score``: ``"brier"`` (default) or ``"log_loss"``. ``weights``: row weights,
    in every mean and in the isotonic fit. ``cross_fit=K``: the out-of-sample variant, each row recalibrated by
    the fit on the other K - 1 folds of its group (``seed`` draws the folds; no ``ci``). A frame: ``n``,
    ``score``, ``mcb``, ``dsc``, ``unc``, one row per group with ``by``; ``ci`` resamples the rows.

    Not :func:`brier_decomposition`, Murphy's reliability, resolution and uncertainty over the ECE's bins: CORP
    has no bins to choose, and its terms add up to the score exactly.

    Examples
    --------
    >>> import polars as pl, calframe
    >>> df = pl.DataFrame({"prob": [0.9, 0.8, 0.3, 0.6], "label": [1, 0, 0, 1]})
    >>> calframe.corp_decomposition(df).select(pl.all().round(6)).row(0)  # isotonic fit: 0, 0.5, 0.5, 1
    (4, 0.225, 0.1, 0.125, 0.25)
    >>> d = calframe.corp_decomposition(df, score="log_loss").row(0, named=True)
    >>> [round(d[k], 6) for k in ("score", "mcb", "dsc", "unc")], round(d["mcb"] - d["dsc"] + d["unc"], 6)
    ([0.645575, 0.299001, 0.346574, 0.693147], 0.645575)
    """
    req, score, folds = R.corp("corp_decomposition", prob, label, **options)
    return run_plan(req, frame, _figures(req, score, folds), scalar=False)
