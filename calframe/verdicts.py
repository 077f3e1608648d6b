"""The calibration verdict as a statistical test: is the population ECE above or below a tolerance?

:func:`calibration_test` decides, per group, between three verdicts at level ``alpha`` (docs/statistics.md,
"The verdict"):

- ``"not calibrated"`` when the data reject H0: population ECE <= tolerance (``p_not_calibrated <= alpha``);
- ``"calibrated"`` when they reject H0': population ECE >= tolerance (``p_calibrated <= alpha``);
- ``"undecided"`` otherwise: more rows would decide.

The statistic is the plug-in binned ECE T = sum_b w_b |acc_b - conf_b| of :func:`calframe.ece`, whose upward bias
with few rows per bin is what made an interval-above-the-tolerance rule call calibrated small groups
miscalibrated. Both p-values come from simulating T's noise, conditional on the rows' bins and mean
predictions (consistency resampling, Bröcker & Smith 2007: labels drawn again, bin by bin, from a model
whose population gaps are known):

``p_not_calibrated`` (method ``"boundary"``, the default)
    T is simulated under a model *on the null's boundary*: each bin's frequency is ``conf_b + delta_b`` with
    ``sum_b w_b |delta_b| = tolerance``. The tolerance is spread over the bins in proportion to the bins'
    debiased squared gaps ``max(d_b^2 - 2 s_b^2, 0)`` (d_b = acc_b - conf_b, s_b^2 its variance:
    Kumar et al. 2019's per-bin debiasing, with twice the variance so that a bin counts only when its gap
    stands out of its noise), keeping each bin's sign; where no bin's gap stands out, the bound below is
    used instead. Spreading the tolerance the way the data spread their gap is the null model closest to
    the data. The plug-in's bias is largest where most bins have no gap (the tolerance concentrated in few
    bins), so the mass follows the squared gap (concentrating it); measured sizes at the boundary are in
    docs/statistics.md. In a small group (``noise_ece``, the mean ECE of a calibrated model on its bins, at
    least the tolerance) the data cannot locate a gap, and the bound decides.
``p_not_calibrated`` (method ``"bound"``)
    Valid for every model in the null: |delta_b + e_b| <= |delta_b| + |e_b| gives T <= ECE + T0 with T0 =
    sum_b w_b |e_b| the noise of a calibrated model, so P(T >= t) <= P(T0 >= t - tolerance). Conservative
    (it is the exact size only for a tolerance concentrated in a bin of negligible weight): less power.
``p_calibrated`` (both methods)
    |delta_b + e_b| >= |delta_b| + sign(delta_b) e_b gives T >= ECE + S with S = sum_b w_b sign_b e_b, whose
    law does not depend on the signs (symmetric noise): P(T <= t) <= P(S <= t - tolerance) for every model
    with ECE >= tolerance, and the bound is tight when the gaps are large.

The noise e_b of a bin with n_b rows is Binomial(n_b, pi_b) / n_b - pi_b with pi_b the one of conf_b and
acc_b nearer 1/2 (the larger Bernoulli variance: conservative). p-values are Monte Carlo estimates
(1 + #{simulated as extreme}) / (1 + n_sim): never 0, and valid at their resolution.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl

METHODS = ("boundary", "bound")
#: Monte Carlo draws per group by default: a p-value near 0.05 to about +-0.005 (one standard error).
N_SIM = 2000
#: The struct fields of a ``verdict`` column (:func:`verdict_struct`), as the report's JSON writes them.
FIELDS = ("result", "p_not_calibrated", "p_calibrated", "noise_ece", "small", "tolerance", "alpha", "test")


def _binomial_noise(rng: np.random.Generator, n_b: np.ndarray, pi: np.ndarray, n_sim: int) -> np.ndarray:
    """(n_sim, bins) draws of each bin's frequency minus ``pi``: Binomial(n_b, pi_b) / n_b - pi_b."""
    return rng.binomial(n_b, pi, size=(n_sim, n_b.size)) / n_b - pi


def _nearer_half(conf: np.ndarray, acc: np.ndarray) -> np.ndarray:
    """Per bin, the one of ``conf`` and ``acc`` nearer 1/2: the larger Bernoulli variance of the two."""
    return np.where(np.abs(conf - 0.5) <= np.abs(acc - 0.5), conf, acc)


def boundary_model(w: np.ndarray, n_b: np.ndarray, conf: np.ndarray, acc: np.ndarray,
                   tolerance: float) -> np.ndarray | None:
    """Each bin's frequency under the null model closest to the data whose ECE equals ``tolerance``, or None
    when no bin's gap stands out of its noise (then the bound decides).

    The tolerance is spread over the bins in proportion to ``max(d^2 - 2 s^2, 0)`` (d = acc - conf, s^2 its
    variance pi (1 - pi) / n_b, pi the one of conf and acc nearer 1/2), with the sign of ``d``; a bin
    whose frequency would leave [0, 1] is held at the edge and the rest is spread over the others.

    >>> w = np.array([0.5, 0.5]); n = np.array([1000, 1000])
    >>> boundary_model(w, n, np.array([0.2, 0.7]), np.array([0.3, 0.7]), 0.03).round(4).tolist()
    [0.26, 0.7]
    """
    d = acc - conf
    pi = _nearer_half(conf, acc)
    var = pi * (1 - pi) / n_b
    mass = np.maximum(d * d - 2 * var, 0.0)
    if not np.any(mass > 0):
        return None
    sign = np.where(d >= 0, 1.0, -1.0)
    room = np.where(sign > 0, 1 - conf, conf)  # how far each bin's frequency can move
    delta = np.zeros_like(d)
    free = mass > 0
    left = tolerance
    while left > 1e-15 and np.any(free):
        step = left / np.sum(w[free] * mass[free]) * mass
        over = free & (delta + step > room)
        if not over.any():
            delta[free] += step[free]
            break
        delta[over] = room[over]
        free &= ~over
        left = tolerance - float(np.sum(w * delta))
    return conf + sign * delta


def judge_bins(w: np.ndarray, n_b: np.ndarray, conf: np.ndarray, acc: np.ndarray, *, tolerance: float = 0.03,
              alpha: float = 0.05, n_sim: int = N_SIM, method: str = "boundary",
              rng: np.random.Generator | None = None) -> dict[str, Any]:
    """The test on one group's bins: ``w`` (share of rows or weights), ``n_b`` (rows), ``conf`` (mean
    prediction), ``acc`` (frequency), non-empty bins only. Returns the struct fields (:data:`FIELDS`) and
    ``ece``, the plug-in statistic.

    >>> out = judge_bins(np.array([0.5, 0.5]), np.array([5000, 5000]), np.array([0.2, 0.7]),
    ...                 np.array([0.3, 0.8]), rng=np.random.default_rng(0))
    >>> out["result"], out["ece"] > 0.03, out["p_not_calibrated"] < 0.001
    ('not calibrated', True, True)
    """
    rng = np.random.default_rng(0) if rng is None else rng
    n_b = np.asarray(n_b, dtype=np.int64)
    ece = float(np.sum(w * np.abs(acc - conf)))
    pi = _nearer_half(conf, acc)
    e = _binomial_noise(rng, n_b, pi, n_sim)
    t0 = np.abs(e) @ w  # the noise ECE of a calibrated model with these bins
    s = e @ w
    p_cal = (1 + np.count_nonzero(s <= ece - tolerance)) / (n_sim + 1)
    noise = float(t0.mean())
    # a small group (a calibrated model's noise alone reaches the tolerance) cannot locate its gap: the bound
    q = boundary_model(w, n_b, conf, acc, tolerance) if method == "boundary" and noise < tolerance else None
    if q is None:
        p_not = (1 + np.count_nonzero(t0 >= ece - tolerance)) / (n_sim + 1)
        used = "bound"
    else:
        t = np.abs(rng.binomial(n_b, q, size=(n_sim, n_b.size)) / n_b - conf) @ w
        p_not = (1 + np.count_nonzero(t >= ece)) / (n_sim + 1)
        used = "boundary"
    result = "not calibrated" if p_not <= alpha else "calibrated" if p_cal <= alpha else "undecided"
    return {"result": result, "p_not_calibrated": float(p_not), "p_calibrated": float(p_cal),
            "noise_ece": noise, "small": noise >= tolerance, "tolerance": tolerance, "alpha": alpha,
            "test": used, "ece": ece}


def judge_groups(table: pl.DataFrame, keys: list[str], *, tolerance: float, alpha: float, n_sim: int = N_SIM,
                   seed: int = 0, method: str = "boundary") -> pl.DataFrame:
    """:func:`calibration_test` on a reliability table (:func:`calframe.reliability`) grouped by ``keys``:
    the group columns, ``n``, ``ece``, ``verdict`` and the fields of :func:`judge_bins`, groups in the table's
    order."""
    parts = table.partition_by(keys, maintain_order=True) if keys else [table]
    rows = []
    for i, part in enumerate(parts):
        rng = np.random.default_rng([seed, i])
        got = judge_bins(part["weight"].to_numpy(), part["n"].to_numpy(), part["conf"].to_numpy(),
                        part["acc"].to_numpy(), tolerance=tolerance, alpha=alpha, n_sim=n_sim, method=method,
                        rng=rng)
        row = {k: part[k][0] for k in keys}
        row.update(n=int(part["n"].sum()), ece=got["ece"], verdict=got["result"],
                   **{f: got[f] for f in FIELDS if f not in ("result",)})
        rows.append(row)
    schema = {**{k: table.schema[k] for k in keys}, "n": pl.Int64, "ece": pl.Float64, "verdict": pl.String,
              "p_not_calibrated": pl.Float64, "p_calibrated": pl.Float64, "noise_ece": pl.Float64,
              "small": pl.Boolean, "tolerance": pl.Float64, "alpha": pl.Float64, "test": pl.String}
    return pl.DataFrame(rows, schema=schema) if rows else pl.DataFrame(schema=schema)


def verdict_struct(tests: pl.DataFrame) -> pl.Expr:
    """The ``verdict`` struct column of a report's rows from :func:`judge_groups`'s columns."""
    return pl.struct(pl.col("verdict").alias("result"), *[pl.col(f) for f in FIELDS[1:]]).alias("verdict")


def p_text(p: float) -> str:
    """A p-value as the report prints it: ``p = 0.012``, ``p < 0.001`` at the Monte Carlo floor.

    >>> p_text(0.0121), p_text(0.0004), p_text(1.0)
    ('p = 0.012', 'p < 0.001', 'p = 1')
    """
    if p is None or not math.isfinite(p):
        return "p = n/a"
    return "p < 0.001" if p < 0.001 else f"p = {p:.2g}"
