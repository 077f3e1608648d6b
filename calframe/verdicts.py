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
    |delta_b + e_b| >= |delta_b| + sign(delta_b) e_b gives T >= ECE + S with S = sum_b w_b sign_b e_b, so
    P(T <= t) <= P(S <= t - tolerance) for every model with ECE >= tolerance. S's law depends on the bins' true
    frequencies q_b, and where a bin holds few rows of one label its noise is skewed, so that its sign matters
    too. The bound is therefore taken over a confidence set for the frequencies (Berger & Boos 1994: ``GAMMA``
    plus the bound's largest value over a set that misses the true frequencies with probability at most
    ``GAMMA``), with each bin's noise replaced by a law below it:

    - a small bin (fewer than ``LARGE_COUNT`` rows of one label): a law below e_b and -e_b for every frequency in
      its Clopper-Pearson interval at level 1 - GAMMA / (2 bins), exactly (:func:`envelope_quantiles`);
    - the large bins: their binomial noise at their own frequency, taken on the side with the longer lower tail,
      all scaled so that their sum's variance is its upper bound at level 1 - GAMMA / 2 (normal approximation;
      their noise is near normal).

    An estimate at or above the tolerance is no evidence of an ECE below it: ``p_calibrated`` is then 1 (nothing
    is drawn). The simulation no longer assumes symmetric noise at a frequency read off the data (conf_b or
    acc_b, whichever is nearer 1/2): with Bernoulli noise in bins of few rows that called a single row with p =
    0.01 and y = 0 calibrated (p_calibrated 0.0005), and 95% of one-row groups and 80% of five-row groups whose
    true gap equals the tolerance. Measured: docs/statistics.md, "The verdict".

The noise e_b of a bin with n_b rows in ``p_not_calibrated`` is Binomial(n_b, pi_b) / n_b - pi_b with pi_b the one
of conf_b and acc_b nearer 1/2 (the larger Bernoulli variance: conservative). p-values are Monte Carlo estimates
(1 + #{simulated as extreme}) / (1 + n_sim): never 0, and valid at their resolution.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np
import polars as pl

METHODS = ("boundary", "bound")
#: Monte Carlo draws per group by default: a p-value near 0.05 to about +-0.005 (one standard error).
N_SIM = 2000
#: The struct fields of a ``verdict`` column (:func:`verdict_struct`), as the report's JSON writes them.
FIELDS = ("result", "p_not_calibrated", "p_calibrated", "noise_ece", "small", "tolerance", "alpha", "test")
#: Berger & Boos (1994): the share of ``alpha`` that ``p_calibrated`` spends on its confidence set for the bins'
#: frequencies (added to it: ``p_calibrated`` is at least this).
GAMMA = 0.001
#: A bin is small, for ``p_calibrated``, when it holds fewer than this many rows of one label: its noise is then
#: far from normal, and bounded exactly (:func:`envelope_quantiles`).
LARGE_COUNT = 10
#: At most this many pieces per interval of frequencies in a small bin's envelope (each piece moves the law down
#: by its width; with 2 n_b pieces per unit of frequency, by at most half a row's worth, 1 / (2 n_b)).
PIECES = 16
#: A bin's noise is drawn as its quantile at a level m / LEVELS, m uniform: the level rounded down.
LEVELS = 4096


def _binomial_noise(rng: np.random.Generator, n_b: np.ndarray, pi: np.ndarray, n_sim: int) -> np.ndarray:
    """(n_sim, bins) draws of each bin's frequency minus ``pi``: Binomial(n_b, pi_b) / n_b - pi_b."""
    return rng.binomial(n_b, pi, size=(n_sim, n_b.size)) / n_b - pi


def _nearer_half(conf: np.ndarray, acc: np.ndarray) -> np.ndarray:
    """Per bin, the one of ``conf`` and ``acc`` nearer 1/2: the larger Bernoulli variance of the two."""
    return np.where(np.abs(conf - 0.5) <= np.abs(acc - 0.5), conf, acc)


def frequency_interval(n_b: np.ndarray, k_b: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Each bin's Clopper-Pearson interval for its frequency from ``k_b`` positives in ``n_b`` rows, two-sided at
    ``level`` (each end misses with probability at most ``level / 2``).

    >>> lo, hi = frequency_interval(np.array([1, 100]), np.array([0, 50]), 0.05)
    >>> lo.round(4).tolist(), hi.round(4).tolist()
    ([0.0, 0.3983], [0.975, 0.6017])
    """
    from scipy.special import betaincinv

    n = np.asarray(n_b, dtype=np.float64)
    k = np.asarray(k_b, dtype=np.float64)
    lo = np.where(k > 0, betaincinv(np.maximum(k, 1.0), n - k + 1, level / 2), 0.0)
    hi = np.where(k < n, betaincinv(k + 1, np.maximum(n - k, 1.0), 1 - level / 2), 1.0)
    return lo, hi


def _binomial_cdfs(n: int, a: np.ndarray) -> tuple[int, np.ndarray]:
    """P(Binomial(n, a_j) <= k) for increasing ``a`` and k = k0, k0 + 1, ...: (k0, array (pieces, counts)); the
    counts cover every a_j's mass but for less than 1e-30 on each side."""
    from scipy.special import gammaln, xlog1py, xlogy

    sd = np.sqrt(n * a * (1 - a))
    k0 = int(np.clip(np.floor(n * a[0] - 12 * sd[0] - 12), 0, n))
    k1 = int(np.clip(np.ceil(n * a[-1] + 12 * sd[-1] + 12), 0, n))
    k = np.arange(k0, k1 + 1, dtype=np.float64)
    log_pmf = (gammaln(n + 1.0) - gammaln(k + 1) - gammaln(n - k + 1))[None, :] + xlogy(k[None, :], a[:, None]) \
        + xlog1py(n - k[None, :], -a[:, None])
    return k0, np.cumsum(np.exp(log_pmf), axis=1)


def _pieces_cdf(n: int, first: int, last: int, step: int) -> tuple[int, np.ndarray]:
    """The envelope of one interval of frequencies [first h, last h] (h = 1/(2n)): pieces [j h, (j + step) h],
    j = first, first + step, ...; returns the lowest support point's index i0 and the CDF at (i0 + 0, 1, ...) h,
    the max over pieces of P(Binomial(n, j h) / n - (j + step) h <= i h)."""
    j = np.minimum(np.arange(first, last, step), 2 * n - step)  # each piece inside [0, 1]
    k0, cdf = _binomial_cdfs(n, j / (2 * n))
    k1 = k0 + cdf.shape[1] - 1
    # the support point i h = k / n - (j + step) h: i = 2 k - j - step; piece j's CDF there is at (i + j + step) // 2
    i0 = 2 * k0 - int(j[-1]) - step
    kk = (np.arange(i0, 2 * k1 - int(j[0]) - step + 1)[:, None] + j[None, :] + step) // 2
    each = np.where(kk < k0, 0.0, np.where(kk > k1, 1.0, np.take_along_axis(cdf.T, np.clip(kk - k0, 0, k1 - k0),
                                                                            axis=0)))
    return i0, each.max(axis=1)


def _quantiles(k0: int, cdf: np.ndarray) -> np.ndarray:
    """The quantiles, at levels m / :data:`LEVELS`, of a law on k0, k0 + 1, ... with CDF ``cdf`` there: the
    smallest point whose CDF reaches the level (within 1e-12); level 0 gives -inf (replaced by the caller)."""
    levels = np.arange(1, LEVELS) / LEVELS - 1e-12
    return np.concatenate([[-np.inf], k0 + np.minimum(np.searchsorted(cdf, levels), cdf.size - 1)])


@lru_cache(maxsize=8192)
def envelope_quantiles(n: int, lo: float, hi: float) -> np.ndarray:
    """Quantiles, at levels m / :data:`LEVELS`, of a law Z stochastically below e and -e for every frequency q in
    [lo, hi], e = Binomial(n, q) / n - q: the noise of a bin of ``n`` rows, of either sign (``p_calibrated``).

    -e at q is e at 1 - q, so the frequencies to cover are [lo, hi] and [1 - hi, 1 - lo]. Both are cut into
    pieces [a, a + L h] on the grid of step h = 1/(2n), rounded outwards (L = 1 unless that makes more than
    :data:`PIECES` pieces), on each of which e >= Binomial(n, a) / n - a - L h (the binomial count grows with q,
    all drawn from one uniform). So Z's CDF, the max over pieces of P(Binomial(n, a) / n - a - L h <= u), is at
    least P(e <= u) for every q covered, exactly. Level 0 gives -1, the least e can be.

    >>> z = envelope_quantiles(1, 0.0, 1.0)  # one row, any frequency: at or below -U(0, 1)
    >>> float(z[0]), float(z[len(z) // 2]) <= -0.5
    (-1.0, True)
    """
    h = 0.5 / n
    parts = []
    for x, y in ((lo, hi), (1 - hi, 1 - lo)):
        first = max(0, math.floor(x / h - 1e-9))  # the pieces cover [x, y], rounded outwards
        last = min(2 * n, max(math.ceil(y / h + 1e-9), first + 1))
        step = max(1, math.ceil((last - first) / PIECES))
        parts.append(_pieces_cdf(n, first, last, step))
    i0 = min(p[0] for p in parts)
    top = max(p[0] + p[1].size for p in parts)
    cdf = np.zeros(top - i0)
    for start, part in parts:  # the max of the two intervals' CDFs: each 0 below its support, 1 above
        cdf = np.maximum(cdf, np.concatenate([np.zeros(start - i0), part, np.ones(top - start - part.size)]))
    return np.maximum(_quantiles(i0, np.maximum.accumulate(cdf)) * h, -1.0)


@lru_cache(maxsize=8192)
def binomial_quantiles(n: int, k: int) -> np.ndarray:
    """Quantiles, at levels m / :data:`LEVELS`, of e = Binomial(n, r) / n - r with r = max(k, n - k) / n: a large
    bin's noise at its frequency, on the side with the longer lower tail. Level 0 gives -1.

    >>> z = binomial_quantiles(100, 30)  # r = 0.7: below the mean, down to -0.7
    >>> float(z[0]), round(float(z[len(z) // 2]), 2), float(z[1]) > -0.7
    (-1.0, 0.0, True)
    """
    r = max(k, n - k) / n
    k0, cdf = _binomial_cdfs(n, np.array([r]))
    return np.maximum(_quantiles(k0, cdf[0]) / n - r, -1.0)


def calibrated_p(w: np.ndarray, n_b: np.ndarray, acc: np.ndarray, ece: float, tolerance: float,
                 rng: np.random.Generator, n_sim: int) -> float:
    """``p_calibrated`` (module docstring): GAMMA + P(sum_b w_b Z_b <= ece - tolerance), by Monte Carlo, each
    Z_b drawn as its quantile at a level m / LEVELS, m uniform. A small bin's Z_b is its envelope over its
    Clopper-Pearson interval at level 1 - GAMMA / (2 bins); the large bins' are their binomial noises, scaled
    together so that their sum's variance is its upper bound at level 1 - GAMMA / 2."""
    from scipy.special import ndtri

    k_b = np.clip(np.rint(acc * n_b), 0, n_b)
    lo, hi = frequency_interval(n_b, k_b, GAMMA / 2 / n_b.size)
    large = np.minimum(k_b, n_b - k_b) >= LARGE_COUNT
    table = np.stack([binomial_quantiles(int(n), int(k)) if big else envelope_quantiles(int(n), float(a), float(c))
                      for n, k, a, c, big in zip(n_b, k_b, lo, hi, large)])
    z = table[np.arange(n_b.size), rng.integers(0, LEVELS, size=(n_sim, n_b.size))]
    if large.any():
        # sum_b w_b^2 f_b (1 - f_b) / (n_b - 1) is unbiased for the large bins' variance; its delta-method error
        f, wl, nl = (k_b / n_b)[large], w[large], n_b[large]
        var = f * (1 - f)
        v_hat = float(np.sum(wl ** 2 * var / (nl - 1)))
        se = math.sqrt(float(np.sum(wl ** 4 / nl ** 2 * ((1 - 2 * f) ** 2 * var / nl + 2 * var ** 2 / nl ** 2))))
        z[:, large] *= math.sqrt((v_hat + float(ndtri(1 - GAMMA / 2)) * se) / float(np.sum(wl ** 2 * var / nl)))
    return min(1.0, GAMMA + (1 + np.count_nonzero(z @ w <= ece - tolerance)) / (n_sim + 1))


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
    # an estimate at or above the tolerance is no evidence of an ECE below it: p_calibrated 1, nothing drawn
    p_cal = calibrated_p(w, n_b, acc, ece, tolerance, rng, n_sim) if ece < tolerance else 1.0
    result = "not calibrated" if p_not <= alpha else "calibrated" if p_cal <= alpha else "undecided"
    return {"result": result, "p_not_calibrated": float(p_not), "p_calibrated": float(p_cal),
            "noise_ece": noise, "small": noise >= tolerance, "tolerance": tolerance, "alpha": alpha,
            "test": used, "ece": ece}


def bin_frequencies(weight: np.ndarray, total: float) -> np.ndarray:
    """A group's bins' rows as frequency weights count them (docs/spec.md §8 "Weights"): each bin's share of the
    group's weight times the group's sum of weights ``total`` (caller's units), to the nearest whole number and
    at least 1 (the noise is binomial: a whole number of rows; integer weights give the repeated frame's counts).

    >>> bin_frequencies(np.array([0.25, 0.75]), 8.0).tolist()
    [2, 6]
    """
    return np.maximum(np.rint(np.asarray(weight) * total), 1).astype(np.int64)


def judge_groups(table: pl.DataFrame, keys: list[str], *, tolerance: float, alpha: float, n_sim: int = N_SIM,
                   seed: int = 0, method: str = "boundary", totals: pl.DataFrame | None = None) -> pl.DataFrame:
    """:func:`calibration_test` on a reliability table (:func:`calframe.reliability`) grouped by ``keys``:
    the group columns, ``n``, ``ece``, ``verdict`` and the fields of :func:`judge_bins`, groups in the table's
    order. ``totals``: with weights, each group's sum of weights (``keys`` and ``total``): a bin's noise is then
    simulated with its frequency (:func:`bin_frequencies`), not its rows."""
    if totals is not None:
        table = table.join(totals.select(*keys, "total"), on=keys, how="left", nulls_equal=True,
                           maintain_order="left") if keys else table.with_columns(total=totals["total"][0])
    parts = table.partition_by(keys, maintain_order=True) if keys else [table]
    rows = []
    for i, part in enumerate(parts):
        rng = np.random.default_rng([seed, i])
        n_b = part["n"].to_numpy() if totals is None else bin_frequencies(part["weight"].to_numpy(),
                                                                            float(part["total"][0]))
        got = judge_bins(part["weight"].to_numpy(), n_b, part["conf"].to_numpy(),
                        part["acc"].to_numpy(), tolerance=tolerance, alpha=alpha, n_sim=n_sim, method=method,
                        rng=rng)
        row = {k: part[k][0] for k in keys}
        row.update(n=int(part["n"].sum()), ece=got["ece"], verdict=got["result"],
                   **{f: got[f] for f in FIELDS if f not in ("result",)})
        rows.append(row)
    schema = result_schema({k: table.schema[k] for k in keys})
    return pl.DataFrame(rows, schema=schema) if rows else pl.DataFrame(schema=schema)


def result_schema(keys: dict[str, pl.DataType]) -> dict[str, pl.DataType]:
    """The columns of :func:`judge_groups`' result and their types, after the group ``keys`` (name: type)."""
    return {**keys, "n": pl.Int64, "ece": pl.Float64, "verdict": pl.String, "p_not_calibrated": pl.Float64,
            "p_calibrated": pl.Float64, "noise_ece": pl.Float64, "small": pl.Boolean, "tolerance": pl.Float64,
            "alpha": pl.Float64, "test": pl.String}


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
