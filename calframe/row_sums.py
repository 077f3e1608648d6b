"""Figures from per-group weighted sums of several row values (the ``row_means`` state): the mean bias with its
standard error and t-test (model-diagnostics' ``compute_bias``) and Spiegelhalter's (1986) z-test.

Each row value is a function of the lens's ``(conf, acc)`` (:mod:`calframe.lenses`), written once in operations
that numpy arrays, Polars expressions and narwhals expressions share (``-``, ``*``, ``.clip``), so the eager
engine, Polars' streaming engine and the narwhals engine (DuckDB, Spark, Ibis, pyarrow) compute the same values
row by row (engines/plan/row_means.py, engines/partitions/workers.py). Each lies in [0, 1], as the engines' exact
fixed-point sums take them: a signed value is summed as its positive and negative parts.

Per group, with weights ``w`` (1 without ``weights``), ``W = sum w``, ``n`` the rows and the bias
``b = conf - acc`` (prediction minus outcome, model-diagnostics' sign: positive is over-prediction):

- ``bias = sum w b / W``; ``bias_se = sqrt(sum w (b - bias)^2 / W / (n - 1))`` (model-diagnostics' weighted
  variance, Bessel-corrected with the rows, not the weights); ``bias_p_value``, the two-sided t-test of
  ``bias = 0`` with ``n - 1`` degrees of freedom;
- ``spiegelhalter_z = sum w (acc - conf)(1 - 2 conf) / sqrt(sum w (1 - 2 conf)^2 conf (1 - conf))`` and its
  two-sided normal p-value ``spiegelhalter_p_value``: frequency weights (a row of weight k counts as k rows), as
  :func:`calframe.hosmer_lemeshow` reads them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._errors import bad_param

__all__ = ["VALUES", "WEIGHT", "P_ADJUST", "RowSums", "BIAS", "SPIEGELHALTER", "finalize", "adjust", "eager_sums"]

#: the row values, each of the lens's (conf, acc), in [0, 1]; the same operations on numpy, Polars and narwhals
VALUES: dict[str, Callable[[Any, Any], Any]] = {
    "bias_over": lambda conf, acc: (conf - acc).clip(0.0, None),
    "bias_under": lambda conf, acc: (acc - conf).clip(0.0, None),
    "bias_sq": lambda conf, acc: (conf - acc) * (conf - acc),
    "sz_up": lambda conf, acc: ((acc - conf) * (1.0 - 2.0 * conf)).clip(0.0, None),
    "sz_down": lambda conf, acc: ((conf - acc) * (1.0 - 2.0 * conf)).clip(0.0, None),
    "sz_var": lambda conf, acc: conf * (1.0 - conf) * ((1.0 - 2.0 * conf) * (1.0 - 2.0 * conf)),
}
#: the name under which an engine hands over each group's sum of weights, in the caller's units
WEIGHT = "__weight"
#: the multiple-comparison adjustments of ``p_adjust`` (over the groups of one call)
P_ADJUST = (None, "holm", "bonferroni")


@dataclass(frozen=True)
class RowSums:
    """A figure of several row values' per-group sums (``Request.options`` of ``kind="row_sums"``): the values it
    sums (keys of :data:`VALUES`), its output columns and the p-value adjustment over the groups."""

    figure: str
    values: tuple[str, ...]
    columns: tuple[str, ...]
    p_adjust: str | None = None


BIAS = ("bias_over", "bias_under", "bias_sq")
SPIEGELHALTER = ("sz_up", "sz_down", "sz_var")


def adjust(p: np.ndarray, method: str | None) -> np.ndarray:
    """``p`` adjusted for the comparisons over its entries (NaN entries are not comparisons): Holm's step-down
    (1979) or Bonferroni's, capped at 1.

    >>> adjust(np.array([0.01, 0.04, 0.03, 0.005]), "holm").round(12).tolist()
    [0.03, 0.06, 0.06, 0.02]
    """
    p = np.asarray(p, dtype=np.float64)
    if method is None:
        return p
    out = p.copy()
    ok = ~np.isnan(p)
    m = int(ok.sum())
    if method == "bonferroni":
        out[ok] = np.minimum(p[ok] * m, 1.0)
        return out
    order = np.argsort(p[ok], kind="stable")
    stepped = np.minimum(np.maximum.accumulate(p[ok][order] * (m - np.arange(m))), 1.0)
    kept = np.empty(m)
    kept[order] = stepped
    out[ok] = kept
    return out


def check_p_adjust(func: str, p_adjust: Any) -> str | None:
    """``p_adjust`` checked: one of :data:`P_ADJUST`."""
    if p_adjust not in P_ADJUST:
        raise bad_param(func, "p_adjust", "None, 'holm' or 'bonferroni'", p_adjust)
    return p_adjust  # type: ignore[no-any-return]


def _bias(means: dict[str, np.ndarray], weight: np.ndarray, counts: np.ndarray) -> dict[str, np.ndarray]:
    from scipy.special import stdtr

    mean = means["bias_over"] - means["bias_under"]
    var = means["bias_sq"] - mean * mean  # sum w (b - mean)^2 / W; rounding's size (a constant bias) is 0
    var = np.where(var > 8.0 * np.finfo(np.float64).eps * means["bias_sq"], var, 0.0)
    n = np.asarray(counts, dtype=np.float64)
    se = np.sqrt(var / np.maximum(n - 1.0, 1.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / se
        p = np.where(se > 0, 2.0 * stdtr(np.maximum(n - 1.0, 1.0), -np.abs(t)), np.where(mean != 0, 0.0, 1.0))
    p = np.where(n > 1, p, np.nan)  # one row: no degrees of freedom
    return {"bias": mean, "bias_se": se, "bias_p_value": p, "bias_weights": np.asarray(weight, dtype=np.float64)}


def _spiegelhalter(means: dict[str, np.ndarray], weight: np.ndarray, counts: np.ndarray) -> dict[str, np.ndarray]:
    from scipy.special import ndtr

    w = np.asarray(weight, dtype=np.float64)
    num = w * (means["sz_up"] - means["sz_down"])
    var = w * means["sz_var"]
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(var > 0, num / np.sqrt(var), np.where(num != 0, np.sign(num) * np.inf, np.nan))
    return {"spiegelhalter_z": z, "spiegelhalter_p_value": 2.0 * ndtr(-np.abs(z))}


_FINALIZE = {"bias": _bias, "spiegelhalter": _spiegelhalter}


def finalize(spec: RowSums, means: dict[str, np.ndarray], counts: np.ndarray) -> dict[str, np.ndarray]:
    """The figure's columns per group from each group's weighted means of its row values, its sum of weights
    (``means[WEIGHT]``, the caller's units) and its rows ``counts``; the p-values adjusted over the groups."""
    out = _FINALIZE[spec.figure](means, means[WEIGHT], counts)
    for name in out:
        if name.endswith("p_value"):
            out[name] = adjust(out[name], spec.p_adjust)
    return {c: out[c] for c in spec.columns}


def eager_sums(spec: RowSums, conf: np.ndarray, acc: np.ndarray, weights: np.ndarray | None, scale: float,
               groups: np.ndarray | None, n_groups: int) -> dict[str, np.ndarray]:
    """Per group, the weighted means of ``spec``'s row values and the sum of weights (``WEIGHT``, times the weights'
    ``scale``: the caller's units), from the rows (the eager engine's and Dask's partitions')."""
    g = np.zeros(conf.shape[0], dtype=np.int64) if groups is None else np.asarray(groups, dtype=np.int64)
    w = np.ones(conf.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    total = np.bincount(g, weights=w, minlength=n_groups)
    out = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        for name in spec.values:
            out[name] = np.bincount(g, weights=w * VALUES[name](conf, acc), minlength=n_groups) / total
    out[WEIGHT] = total * (1.0 if weights is None else scale)
    return out
