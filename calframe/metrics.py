"""Finalize: per (group, bin) sums -> calibration figures per group (SPEC §1.5, §2, §3).

``sums`` always has shape (n_groups, n_bins, 3) holding, per cell,
``[n (sum of weights), sum conf, sum acc]``. Empty cells contribute nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from . import _errors as E
from . import _render as R
from ._errors import InvalidValueError, ParameterError, bad_param
from .generalized import interval, mahalanobis

Estimator = Literal["plugin", "debiased"]


@dataclass(frozen=True)
class Distance:
    """A distance between a bin's mean output and mean label on a scalar lens."""

    kind: Literal["tvd", "l2", "interval", "mahalanobis"] = "tvd"
    low: float = 0.0
    high: float = 1.0
    matrix: tuple[tuple[float, float], tuple[float, float]] | None = None

    def __call__(self, conf: np.ndarray, acc: np.ndarray) -> np.ndarray:
        gap = np.abs(conf - acc)
        if self.kind == "tvd":
            return gap
        if self.kind == "l2":
            return np.sqrt(2.0) * gap
        if self.kind == "interval":
            return np.maximum(0.0, np.maximum(self.low - acc, acc - self.high))
        m = np.asarray(self.matrix) * 0.25  # exact; keeps the sum below finite for entries near the largest float
        # g' - y' = [d, -d] on a scalar lens: d^2 (m00 - m01 - m10 + m11), and sqrt(4 x) = 2 sqrt(x) exactly
        return 2.0 * gap * np.sqrt(np.maximum(m[0, 0] - m[0, 1] - m[1, 0] + m[1, 1], 0.0))


def parse_distance(func: str, distance: "str | Distance | tuple") -> Distance:
    """``"tvd"``, ``"l2"``, ``("interval", l, h)``, ``("mahalanobis", M)`` or a :class:`Distance`."""
    if isinstance(distance, Distance):
        return distance
    if distance in ("tvd", "l2"):
        return Distance(distance)  # type: ignore[arg-type]
    if isinstance(distance, tuple) and distance and distance[0] == "interval":
        if len(distance) != 3:
            raise bad_param(func, "distance", "('interval', low, high)", distance)
        try:
            d = interval(float(distance[1]), float(distance[2]))
        except ParameterError as exc:
            raise E.bad_distance(func, exc) from None
        return Distance("interval", d.low, d.high)
    if isinstance(distance, tuple) and distance and distance[0] == "mahalanobis":
        m = np.asarray(distance[1], dtype=np.float64)
        if m.shape != (2, 2):
            raise E.bad_distance(func, "a Mahalanobis matrix on a scalar lens must be 2x2 "
                                 f"(the lens output is [conf, 1 - conf]). Got shape {m.shape}.")
        try:  # finite, symmetric, positive semi-definite: the checks of gece's vector distance
            m = mahalanobis(m).matrix
        except ParameterError as exc:
            raise E.bad_distance(func, exc) from None
        return Distance("mahalanobis", matrix=((m[0, 0], m[0, 1]), (m[1, 0], m[1, 1])))
    raise bad_param(func, "distance", "'tvd', 'l2', ('interval', l, h) or ('mahalanobis', M)", distance)


def check_seed(func: str, seed: Any, allow_none: bool = True) -> int | None:
    """The one check of a ``seed`` parameter: a non-negative int (numpy integers too; not bool), or None.

    None (when ``allow_none``) draws fresh entropy from the operating system: not reproducible.
    """
    if seed is None and allow_none:
        return None
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        expected = "a non-negative int" + (" or None (fresh, unreproducible randomness)" if allow_none else "")
        raise bad_param(func, "seed", expected, seed)
    return int(seed)


def check_weight_sums(sums: np.ndarray) -> None:
    """Refuse per (group, bin) sums whose weight total overflowed float64 (instead of returning NaN).

    A guard: eager frames, LazyFrame streaming and Dask all divide each group's weights by the power
    of two near its maximum first (``_columns.scale_weights``), so their sums stay finite; sums given
    in the caller's units may not.
    """
    total = sums[..., 0]
    if not np.isfinite(total).all():
        raise InvalidValueError(
            "weights: their sum in a group exceeds float64's largest value (1.8e308) when added in LazyFrame "
            "streaming or Dask partitions. Divide the weights by a constant (no result changes), or pass an "
            "eager frame (which scales them)."
        )


def bin_means(sums: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(n, mean conf, mean acc, group totals); means are NaN for empty cells."""
    n = sums[..., 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        conf = sums[..., 1] / n
        acc = sums[..., 2] / n
    total = n.sum(axis=-1)
    return n, conf, acc, total


def plugin_ce(n: Any, d: Any, p: float, xp: Any, squared: bool = False) -> Any:
    """The plugin CE_p of a group from its bins' weights ``n`` and distances ``d`` (SPEC §1.5): the n-weighted
    mean of d^p to the power 1/p, the largest d for p = inf (``d`` of an empty bin: 0, or -inf for the max).

    The one definition: ``xp`` is :mod:`calframe._render` (numpy arrays of shape groups x bins, Polars
    expressions or SQL text; ``bin_sum`` / ``bin_max`` aggregate a group's bins), so the eager finalize and
    :mod:`calframe.sql`'s queries run this same text.
    """
    if math.isinf(p):
        return xp.bin_max(d)
    e = xp.bin_sum(n * (d if p == 1 else d * d)) / xp.bin_sum(n)
    return e if p == 1 or squared else xp.sqrt(e)


def ce_from_sums(
    sums: np.ndarray,
    p: float,
    distance: Distance = Distance(),
    estimator: Estimator = "plugin",
    squared: bool = False,
    n_resamples: int = 1000,
    seed: int | None = 0,
    count_scale: float | np.ndarray = 1.0,
) -> np.ndarray:
    """CE_p per group from per (group, bin) sums.

    plugin: :func:`plugin_ce`, ``(sum_b n_b d_b^p / sum_b n_b)^(1/p)``, ``max_b d_b`` for p = inf.
    debiased, p = 2: Kumar's unbiased squared error ``sum_b w_b [(s_b - y_b)^2 - y_b(1 - y_b)/(n_b - 1)]``
    (bins with n_b < 2 contribute 0); reported as ``sqrt(max(E2, 0))``, or E2 if ``squared``.
    debiased, other p: Kumar's Gaussian resampling, ``2 * plugin - mean(resampled)``, every
    group drawing from its own stream seeded by ``seed`` (so a group's value does not depend on
    the other groups).
    ``count_scale``: the power of two the weights in ``sums`` were divided by (Scored.weight_scale:
    one, or one per group); the debiased estimators count a bin's rows as n_b * count_scale (weights
    are frequency weights there, in the caller's units), every other figure depends on ratios of the
    sums within a group only.
    """
    check_weight_sums(sums)
    count_scale = np.asarray(count_scale, dtype=np.float64)
    if count_scale.ndim:
        count_scale = count_scale[:, None]  # one per group, broadcast over the bins
    n, conf, acc, total = bin_means(sums)
    conf, acc = np.nan_to_num(conf, copy=False), np.nan_to_num(acc, copy=False)  # (bin_means' own arrays)
    nonempty = n > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        w = n / total[:, None]
    d = np.where(nonempty, distance(conf, acc), 0.0)
    empty_group = total <= 0
    if estimator == "plugin" or np.isinf(p):
        with np.errstate(invalid="ignore", divide="ignore"):
            out = plugin_ce(n, np.where(nonempty, d, -np.inf) if np.isinf(p) else d, p, R, squared)
    elif p == 2:
        ybar = np.nan_to_num(acc)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):  # rows past float64: var 0
            rows_b = n * count_scale
            var = np.where(rows_b >= 2, ybar * (1.0 - ybar) / (rows_b - 1.0), 0.0)
        e2 = (w * np.where(rows_b >= 2, d * d - var, 0.0)).sum(axis=1)
        out = e2 if squared else np.sqrt(np.maximum(e2, 0.0))
    else:
        with np.errstate(over="ignore"):  # rows past float64: no resampling noise
            rows_b = n * count_scale
        out = _normal_debiased(rows_b, conf, acc, w, p, distance, n_resamples, seed)
    return np.where(empty_group, np.nan, out)


def _normal_debiased(n, conf, acc, w, p, distance, n_resamples, seed) -> np.ndarray:
    """Kumar App. G: resample each bin's mean label from N(y_b, y_b(1 - y_b)/n_b)."""
    n_groups, n_bins = n.shape
    nonempty = n > 0
    ybar = np.nan_to_num(acc)
    sbar = np.nan_to_num(conf)
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.where(nonempty, np.sqrt(ybar * (1.0 - ybar) / n), 0.0)
    plugin = (w * np.where(nonempty, distance(sbar, ybar), 0.0) ** p).sum(axis=1) ** (1.0 / p)
    out = np.empty(n_groups)
    for g in range(n_groups):
        nz = nonempty[g]  # draw for the group's own non-empty bins only, from the group's own stream
        draws = np.random.default_rng(seed).normal(loc=ybar[g][nz], scale=sd[g][nz], size=(n_resamples, int(nz.sum())))
        resampled = (distance(sbar[g][nz][None, :], draws) ** p @ w[g][nz]) ** (1.0 / p)
        out[g] = 2.0 * plugin[g] - resampled.mean()
    return out


def combine_marginal(per_class: np.ndarray, p: float, estimator: Estimator, class_weights: np.ndarray) -> np.ndarray:
    """Marginal CE from per-class CE (shape (K, n_groups)): (sum_c w_c CE_c^p)^(1/p)."""
    if np.isinf(p):
        return per_class.max(axis=0)
    v = per_class
    if estimator == "debiased" and p == 2:
        v = np.maximum(v, 0.0)
    return (class_weights[:, None] * v**p).sum(axis=0) ** (1.0 / p)
