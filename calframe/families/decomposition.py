"""Figures that take the calibration error apart, each a finalize of the CE family's per (group, bin) sums: the
overconfidence error ``oe`` (Thulasidasan et al. 2019), the ECE's over- and under-confident parts
(``ece_split``) and Murphy's (1973) decomposition of the Brier score (``brier_decomposition``).

Each is declared once, below (its state, its row of the figure table, its finalize), so every engine that computes
the bin sums runs it where the rows are, and ``df.calib``, :mod:`calframe.expr`, :func:`calframe.disparity`,
:func:`calframe.monitor` and :mod:`calframe.sklearn` offer it (docs/design.md, "Recipe: add a figure").

In a bin b of a group, with weight share ``w_b = n_b / N`` (the weights' sums with ``weights``), mean confidence
``conf_b`` and mean outcome ``acc_b`` of the lens (``class:1``, the positive class, for one probability column;
``top1`` for class probabilities), and the group's mean outcome ``a``:

- ``oe = sum_b w_b * conf_b * max(conf_b - acc_b, 0)``;
- ``ece_over = sum_b w_b * max(conf_b - acc_b, 0)`` and ``ece_under = sum_b w_b * max(acc_b - conf_b, 0)``,
  which add up to the ECE of the same bins;
- ``reliability = sum_b w_b * (conf_b - acc_b)^2``, ``resolution = sum_b w_b * (acc_b - a)^2`` and
  ``uncertainty = a * (1 - a)``. ``reliability - resolution + uncertainty`` is the Brier score of the forecast
  that says ``conf_b`` for every row of bin b: it equals the lens's Brier score when each bin holds a single
  forecast value. Otherwise the Brier score adds the within-bin variance of the forecasts and subtracts twice
  their within-bin covariance with the outcome (Stephenson et al. 2008), terms these bin sums do not hold.

With the marginal lens each class is binned on its own: ``oe`` and the ECE's parts are the classes' mean (as
the marginal ECE), and the Brier score's terms are the classes' sums (the K-class Brier score is the sum of the
classes' squared errors).
"""

from __future__ import annotations

from typing import Any, Unpack

import numpy as np

from .. import figures as F
from .. import request as R
from .._errors import bad_param
from .._keywords import Columns
from ..engines.eager import Frame, Result
from ..frames.dispatch import public
from ..registry import Column, Figure
from .plan import run_finalize


def _bins(sums: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per (group, bin): the weight share, the mean confidence and mean outcome (0 in an empty bin, whose share
    is 0), and per group the mean outcome."""
    w = sums[..., 0]
    total = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = w / total[:, None]
        conf = np.where(w > 0, sums[..., 1] / np.where(w > 0, w, 1.0), 0.0)
        acc = np.where(w > 0, sums[..., 2] / np.where(w > 0, w, 1.0), 0.0)
        mean_acc = sums[..., 2].sum(axis=1) / total
    return share, conf, acc, mean_acc


def _per_class(req: R.Request, sums_of: Any, n_classes: int, one: Any, combine: str) -> Any:
    """``one(sums)`` for the request's lens; for the marginal lens each class's, combined by their mean or sum."""
    if req.lens.kind != "marginal":
        return one(sums_of(0))
    parts = [one(sums_of(c)) for c in range(n_classes)]
    if isinstance(parts[0], dict):
        return {k: getattr(np, combine)([p[k] for p in parts], axis=0) for k in parts[0]}
    return getattr(np, combine)(parts, axis=0)


def _check(func: str, options: dict[str, Any]) -> None:
    if options.get("binning") == "sweep":
        raise bad_param(func, "binning", "'uniform', 'quantile' or 'equal_mass' (the sweep chooses its bins for "
                        "the ECE)", "sweep")


@F.finalize("oe")
def _oe(req: R.Request, sums_of: Any, n_classes: int, count_scale: Any = 1.0) -> np.ndarray:
    def one(sums: np.ndarray) -> np.ndarray:
        share, conf, acc, _ = _bins(sums)
        return (share * conf * np.maximum(conf - acc, 0.0)).sum(axis=1)

    return _per_class(req, sums_of, n_classes, one, "mean")


@F.finalize("ece_split")
def _ece_split(req: R.Request, sums_of: Any, n_classes: int, count_scale: Any = 1.0) -> dict[str, np.ndarray]:
    def one(sums: np.ndarray) -> dict[str, np.ndarray]:
        share, conf, acc, _ = _bins(sums)
        return {"ece_over": (share * np.maximum(conf - acc, 0.0)).sum(axis=1),
                "ece_under": (share * np.maximum(acc - conf, 0.0)).sum(axis=1)}

    return _per_class(req, sums_of, n_classes, one, "mean")


@F.finalize("brier_decomposition")
def _brier_decomposition(req: R.Request, sums_of: Any, n_classes: int,
                         count_scale: Any = 1.0) -> dict[str, np.ndarray]:
    def one(sums: np.ndarray) -> dict[str, np.ndarray]:
        share, conf, acc, a = _bins(sums)
        return {"reliability": (share * (conf - acc) ** 2).sum(axis=1),
                "resolution": (share * (acc - a[:, None]) ** 2).sum(axis=1),
                "uncertainty": a * (1.0 - a)}

    return _per_class(req, sums_of, n_classes, one, "sum")


def _figure(frame: Frame, prob: Columns, label: str | None, func: str, options: dict[str, Any]) -> Result:
    _check(func, options)
    return run_finalize(func, frame, prob, label, options)


@public(state="bin_sums", figure=Figure((Column(
    "oe", "OE", "the gap where predictions exceed outcomes, weighted by the prediction; 0 is perfect"),),
    lensed=True, sql=("SUM(n * conf * GREATEST(conf - acc, 0)) / SUM(n)",)))
@R.keywords(R.ECE)
def oe(frame: Frame, prob: Columns = None, label: str | None = None, **options: Unpack[R.ECE]) -> Result:
    """Overconfidence error (Thulasidasan et al. 2019): ``sum_b (n_b / N) * conf_b * max(conf_b - acc_b, 0)``.

    Only bins whose mean confidence exceeds their accuracy count, each weighted by its confidence: a model that
    errs on the safe side (underconfident) has an OE of 0. The options are :func:`ece`'s (``bins``,
    ``binning``, ``closed``, ``lens``, ``by``, ``weights``, ``nulls``, ``ci``, ...).

    Examples
    --------
    >>> import polars as pl, calframe
    >>> df = pl.DataFrame({"prob": [0.9, 0.8, 0.3, 0.6], "label": [1, 0, 0, 1]})
    >>> round(calframe.oe(df), 6)  # (0.8 * 0.8 + 0.3 * 0.3) / 4: the bins of 0.8 and 0.3 are overconfident
    0.1825
    """
    return _figure(frame, prob, label, "oe", options)


@public(state="bin_sums", figure=Figure((
    Column("ece_over", "ECE over", "the ECE's part from bins whose predictions exceed their outcomes; 0 is perfect"),
    Column("ece_under", "ECE under", "the ECE's part from bins whose outcomes exceed their predictions; 0 is "
           "perfect")), lensed=True, sql=("SUM(n * GREATEST(conf - acc, 0)) / SUM(n)",
                                          "SUM(n * GREATEST(acc - conf, 0)) / SUM(n)")))
@R.keywords(R.ECE)
def ece_split(frame: Frame, prob: Columns = None, label: str | None = None, **options: Unpack[R.ECE]) -> Result:
    """The ECE split into its overconfident and underconfident parts: ``ece_over + ece_under = ece``.

    ``ece_over = sum_b (n_b / N) * max(conf_b - acc_b, 0)`` and ``ece_under = sum_b (n_b / N) * max(acc_b -
    conf_b, 0)``, over the bins of :func:`ece` (same options). A frame: one row (``n``, ``ece_over``,
    ``ece_under``), one per group with ``by``.

    Examples
    --------
    >>> import polars as pl, calframe
    >>> df = pl.DataFrame({"prob": [0.9, 0.8, 0.3, 0.6], "label": [1, 0, 0, 1]})
    >>> calframe.ece_split(df).select(pl.all().round(6)).row(0)  # (n, over, under): 0.275 + 0.125 = ECE 0.4
    (4, 0.275, 0.125)
    """
    return _figure(frame, prob, label, "ece_split", options)


@public(state="bin_sums", figure=Figure((
    Column("reliability", "reliability", "the Brier score's miscalibration term over the bins; 0 is perfect"),
    Column("resolution", "resolution", "how far the bins' outcome rates spread from the overall rate; higher is "
           "better", "higher"),
    Column("uncertainty", "uncertainty", "the outcome's own variance a(1 - a); the same for every model")),
    lensed=True, sql=("SUM(n * (conf - acc) * (conf - acc)) / SUM(n)",  # resolution: sum w acc^2 - a^2, a = sum w acc
                      "SUM(n * acc * acc) / SUM(n) - (SUM(n * acc) / SUM(n)) * (SUM(n * acc) / SUM(n))",
                      "(SUM(n * acc) / SUM(n)) * (1 - SUM(n * acc) / SUM(n))")))
@R.keywords(R.ECE)
def brier_decomposition(frame: Frame, prob: Columns = None, label: str | None = None,
                        **options: Unpack[R.ECE]) -> Result:
    """Murphy's (1973) decomposition of the Brier score over the bins of :func:`ece`: reliability, resolution
    and uncertainty, per group.

    ``reliability = sum_b (n_b / N)(conf_b - acc_b)^2`` (the binned miscalibration),
    ``resolution = sum_b (n_b / N)(acc_b - a)^2`` and ``uncertainty = a (1 - a)``, with ``a`` the group's
    outcome rate. ``reliability - resolution + uncertainty`` is the Brier score of the bins' mean forecasts;
    it equals the lens's Brier score when every bin holds one forecast value (Stephenson et al. 2008's
    within-bin terms are then 0; module docstring). The options are :func:`ece`'s.

    Examples
    --------
    >>> import polars as pl, calframe
    >>> df = pl.DataFrame({"prob": [0.9, 0.8, 0.3, 0.6], "label": [1, 0, 0, 1]})
    >>> d = calframe.brier_decomposition(df).select(pl.all().round(6))
    >>> d.row(0)  # n, reliability, resolution, uncertainty
    (4, 0.225, 0.25, 0.25)
    >>> round(d["reliability"][0] - d["resolution"][0] + d["uncertainty"][0], 6), round(calframe.brier(df), 6)
    (0.225, 0.225)
    """
    return _figure(frame, prob, label, "brier_decomposition", options)
