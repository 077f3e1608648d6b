"""The GiViTI calibration belt (Finazzi et al. 2011; Nattino, Finazzi and Bertolini 2014, Statistics in Medicine
33, 2390-2407): a test of exact calibration and the confidence region of the calibration curve, per group.

In a group, with the lens's prediction ``p`` and outcome ``y`` of each row (``class:1``, the positive class, for one
probability column; ``top1`` for class probabilities) and its weight ``w`` (1 without ``weights``; frequency
weights, a row of weight k counts as k rows):

- the calibration curve is the logistic regression of ``y`` on the powers of ``g = logit(p)``:
  ``logit P(y = 1) = a0 + a1 g + ... + am g^m``; exact calibration is ``a1 = 1`` and every other ``a = 0``;
- the degree ``m`` is chosen by forward selection from ``m = 1`` (predictions made without these rows: Nattino et
  al.'s external validation, calframe's case): a term ``g^(m+1)`` is added while its likelihood-ratio statistic
  reaches the ``q`` quantile of chi2(1) (default ``q = 0.95``), up to ``max_degree`` (at most 4);
- the statistic is ``T = 2 (l(a) - l(p))``, the fitted curve's log-likelihood against the predictions' own, and its
  p-value is ``P(T' >= T)`` under Nattino et al.'s law of ``T`` given the forward selection (their equations 16 to
  19: chi2(2) for ``m = 1``; no longer a chi-squared law after a selection);
- the belt at confidence ``c`` is, at each prediction ``p``, the range of the curves ``expit(sum a_j g^j)`` whose
  log-likelihood is at least ``l(a) - k_c / 2``, ``k_c`` the ``c`` quantile of that law (their equations 26-27):
  where it excludes the bisector, the model is miscalibrated at ``p`` at level ``c``.

The region is convex (the log-likelihood is concave), so each bound is found exactly: by Newton's method on the
Lagrange conditions ``grad l(a) + t x = 0, l(a) = l(a_hat) - k / 2`` from the quadratic (Wald) approximation.
The ``calibration-belt`` package (0.1.41) finds the same bounds with scipy's ``trust-constr`` to a tolerance of
1e-5 (its probabilities clipped to [1e-5, 1 - 1e-5]); its test and degree are the same to rounding
(tests/test_belt.py). Its grid of predictions: ``points // 2`` values evenly spaced in ``p`` and as many in
``logit(p)`` between the group's smallest and largest prediction.

The fit needs the rows of each group: eager frames compute it, a LazyFrame and a pyarrow Table are collected
first (docs/engines.md). Predictions of exactly 0 or 1 have no logit: they are refused, unless ``clip`` moves
every prediction into ``[clip, 1 - clip]``.
"""

from __future__ import annotations

from math import asin, atan, exp, pi, sqrt
from typing import Any, NamedTuple

import numpy as np

from .. import lenses as L
from .. import request as R
from .._columns import Scored
from .._errors import InvalidValueError, ParameterError
from .._errors import rows as _rows

#: the test's columns, in output order
COLUMNS = ("belt_degree", "belt_statistic", "belt_p_value")

#: the largest degree Nattino et al. give the law of the statistic for
MAX_DEGREE = 4


class Fit(NamedTuple):
    """One group's selected logistic fit: its degree, coefficients, log-likelihood and the predictions' own."""

    degree: int
    coef: np.ndarray
    llf: float
    llh: float


# --------------------------------------------------------------------------- the law of the statistic


def _cdf(t: float, m: int, q: float) -> float:
    """Nattino et al.'s P(T <= t) after a forward selection stopped at degree ``m`` (their eqs. 16-19, as the
    calibration-belt package)."""
    from scipy.integrate import quad
    from scipy.stats import chi2

    c = float(chi2.ppf(q, 1))
    if t <= (m - 1) * c:
        return 0.0
    if m == 1:
        return float(chi2.cdf(t, 2))
    if m == 2:
        return (-2 * exp(-t / 2) / sqrt(2 * pi) * (sqrt(t) - sqrt(c)) + float(chi2.cdf(t, 1)) - q) / (1 - q)
    if m == 3:
        def f3(r: float) -> float:
            return r * (exp(-r * r / 2) - exp(-t / 2)) * (pi / 2 - 2 * asin(sqrt(c) / r))
        return 2 / (pi * (1 - q) ** 2) * quad(f3, sqrt(2 * c), sqrt(t))[0]

    def f4(r: float) -> float:
        s = sqrt(c) / r
        return r * r * (exp(-r * r / 2) - exp(-t / 2)) * (
            -pi * s / 2 + 2 * s * asin((r * r / c - 1) ** -0.5) - 2 * atan((1 - 2 * c / (r * r)) ** -0.5)
            + 2 * s * atan((r * r / c - 2) ** -0.5) + 2 * atan(r / sqrt(c) * sqrt(r * r / c - 2))
            - 2 * s * atan(sqrt(r * r / c - 2)))
    return (2 / (pi * (1 - q) ** 2)) ** 1.5 * quad(f4, sqrt(3 * c), sqrt(t))[0]


def p_value(t: float, m: int, q: float) -> float:
    """``P(T' >= t)`` under Nattino et al.'s law (the upper tail computed directly for m = 1 and 2)."""
    from scipy.stats import chi2

    if not np.isfinite(t):
        return float("nan") if np.isnan(t) else 0.0
    if m == 1:
        return float(chi2.sf(t, 2))
    c = float(chi2.ppf(q, 1))
    if t <= (m - 1) * c:
        return 1.0
    if m == 2:
        return (float(chi2.sf(t, 1)) + 2 * exp(-t / 2) / sqrt(2 * pi) * (sqrt(t) - sqrt(c))) / (1 - q)
    return min(1.0, max(0.0, 1.0 - _cdf(t, m, q)))


def quantile(level: float, m: int, q: float) -> float:
    """The ``level`` quantile of the statistic's law (the belt's ``k``), as the package: a root on
    ``[(m - 1) chi2.ppf(q, 1), 40]``."""
    from scipy.optimize import brentq
    from scipy.stats import chi2

    if m == 1:
        return float(chi2.ppf(level, 2))
    return float(brentq(lambda k: _cdf(k, m, q) - level, (m - 1) * float(chi2.ppf(q, 1)), 40.0, xtol=1e-14,
                        rtol=1e-15))


# --------------------------------------------------------------------------- the logistic fits


def _expit(v: np.ndarray) -> np.ndarray:
    from scipy.special import expit

    return expit(v)


def _design(g: np.ndarray, m: int) -> np.ndarray:
    return g[:, None] ** np.arange(m + 1)


def _loglik(eta: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    # log expit(eta) = -log1p(exp(-eta)), stable on both sides
    return float(np.sum(w * (y * -np.logaddexp(0.0, -eta) + (1 - y) * -np.logaddexp(0.0, eta))))


def logistic(x: np.ndarray, y: np.ndarray, w: np.ndarray, start: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """The weighted maximum-likelihood logistic regression of ``y`` on the columns of ``x`` (Newton's method with
    step halving, to convergence in the coefficients): its coefficients and log-likelihood."""
    beta = np.zeros(x.shape[1]) if start is None else start.copy()
    ll = _loglik(x @ beta, y, w)
    for _ in range(100):
        mu = _expit(x @ beta)
        grad = x.T @ (w * (y - mu))
        hess = (x * (w * mu * (1 - mu))[:, None]).T @ x
        step = np.linalg.lstsq(hess, grad, rcond=None)[0]
        for _ in range(60):
            ll_new = _loglik(x @ (beta + step), y, w)
            if ll_new >= ll - 1e-12 * abs(ll):
                break
            step = step / 2
        beta, ll_old, ll = beta + step, ll, ll_new
        if np.all(np.abs(step) <= 1e-10 * (1 + np.abs(beta))) or abs(ll - ll_old) <= 1e-14 * abs(ll):
            break
    return beta, ll


def select(p: np.ndarray, y: np.ndarray, w: np.ndarray, q: float, max_degree: int) -> Fit:
    """The forward selection of the degree (module docstring), as the package's ``forward_select``."""
    from scipy.stats import chi2

    g = np.log(p) - np.log1p(-p)
    bound = float(chi2.ppf(q, 1))
    coef, llf = logistic(_design(g, 1), y, w)
    m = 1
    for m1 in range(2, max_degree + 1):
        coef1, llf1 = logistic(_design(g, m1), y, w, np.append(coef, 0.0))
        if 2 * (llf1 - llf) < bound:
            break
        m, coef, llf = m1, coef1, llf1
    llh = float(np.sum(w * (y * np.log(p) + (1 - y) * np.log1p(-p))))
    return Fit(m, coef, llf, llh)


def bound(x: np.ndarray, y: np.ndarray, w: np.ndarray, fit: Fit, k: float, at: np.ndarray, side: int) -> float:
    """The largest (``side=1``) or smallest (``side=-1``) ``at @ a`` over ``l(a) >= llf - k / 2``: Newton's method
    on ``grad l(a) + t at = 0, l(a) = llf - k / 2``, started from the Wald bound."""
    target = fit.llf - k / 2
    a = fit.coef
    mu = _expit(x @ a)
    hess = (x * (w * mu * (1 - mu))[:, None]).T @ x
    h_at = np.linalg.solve(hess, at)
    s = sqrt(float(at @ h_at))
    t = side * sqrt(k) / s
    a = a + t * h_at
    for _ in range(100):
        eta = x @ a
        mu = _expit(eta)
        grad = x.T @ (w * (y - mu))
        hess = (x * (w * mu * (1 - mu))[:, None]).T @ x
        r1 = grad + t * at  # stationarity of at @ a + (l(a) - target) / t
        r2 = _loglik(eta, y, w) - target
        jac = np.zeros((a.size + 1, a.size + 1))
        jac[:-1, :-1], jac[:-1, -1], jac[-1, :-1] = -hess, at, grad
        step = np.linalg.solve(jac, -np.append(r1, r2))
        a, t = a + step[:-1], t + step[-1]
        if np.all(np.abs(step[:-1]) <= 1e-13 * (1 + np.abs(a))):
            break
    return float(at @ a)


def grid(p: np.ndarray, points: int) -> np.ndarray:
    """The package's grid of logits: ``points // 2`` evenly spaced in ``logit(p)`` and in ``p``, sorted."""
    g = np.log(p) - np.log1p(-p)
    e = np.linspace(p.min(), p.max(), points // 2)
    return np.sort(np.append(np.linspace(g.min(), g.max(), points // 2), np.log(e) - np.log1p(-e)))


# --------------------------------------------------------------------------- per group


class Options(NamedTuple):
    """The belt's own parameters, checked."""

    q: float
    max_degree: int
    confidence: tuple[float, ...]
    points: int
    clip: float | None = None


def options(func: str, q: Any, max_degree: Any, confidence: Any, points: Any, clip: Any = None) -> Options:
    """The checked parameters (a ParameterError naming the parameter)."""
    def level(name: str, v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1:
            raise ParameterError(f"{func}: {name} must be a number strictly between 0 and 1, got {v!r}", name)
        return float(v)

    levels = (confidence,) if isinstance(confidence, (int, float)) else tuple(confidence)
    if not levels:
        raise ParameterError(f"{func}: confidence must name at least one level, got {confidence!r}", "confidence")
    if isinstance(max_degree, bool) or not isinstance(max_degree, int) or not 1 <= max_degree <= MAX_DEGREE:
        raise ParameterError(f"{func}: max_degree must be an integer from 1 to {MAX_DEGREE} (Nattino et al. give "
                             f"the statistic's law up to degree 4), got {max_degree!r}", "max_degree")
    if isinstance(points, bool) or not isinstance(points, int) or points < 4:
        raise ParameterError(f"{func}: points must be an integer of at least 4, got {points!r}", "points")
    if clip is not None and (isinstance(clip, bool) or not isinstance(clip, (int, float)) or not 0 < clip < 0.5):
        raise ParameterError(f"{func}: clip must be None or a number strictly between 0 and 0.5, got {clip!r}",
                             "clip")
    return Options(level("q", q), max_degree, tuple(level("confidence", c) for c in levels), points,
                   None if clip is None else float(clip))


def rows(scored: Scored, req: R.Request, clip: float | None = None) -> tuple[np.ndarray, ...]:
    """The lens's (group, prediction, outcome, weight) of every row, sorted by them (the same sums for any order
    of the frame's rows), the weights the caller's; predictions of 0 or 1 refused, or clipped to ``[clip, 1 -
    clip]``."""
    conf, acc = L.scalar(scored, req.lens, req.func)
    conf, acc = np.asarray(conf, dtype=np.float64), np.asarray(acc, dtype=np.float64)
    if clip is not None:
        conf = np.clip(conf, clip, 1.0 - clip)
    edge = int(np.count_nonzero((conf <= 0) | (conf >= 1)))
    if edge:
        raise InvalidValueError(
            f"{req.func}: column {scored.prob_name!r} has {_rows(edge)} with a prediction of exactly 0 or 1 (of "
            f"{_rows(scored.n)}): the calibration belt regresses on logit(p), which is infinite there. Clip the "
            "predictions (clip=1e-6, say) or drop those rows.")
    w = np.ones(scored.n) if scored.weights is None else np.asarray(scored.weights, dtype=np.float64)
    g = scored.group_codes.astype(np.int64)
    scale = np.asarray(scored.weight_scale, dtype=np.float64)
    w = w * (scale[g] if scale.ndim else scale)
    order = np.lexsort((w, acc, conf, g))
    return g[order], conf[order], acc[order], w[order]


def per_group(scored: Scored, req: R.Request, opts: Options) -> list[tuple[int, np.ndarray, ...] | None]:
    """Each group's (rows, p, y, w, fit), None for a group without rows of positive weight."""
    g, p, y, w = rows(scored, req, opts.clip)
    starts = np.searchsorted(g, np.arange(scored.n_groups + 1))
    out: list[Any] = []
    for j in range(scored.n_groups):
        lo, hi = int(starts[j]), int(starts[j + 1])
        keep = w[lo:hi] > 0
        pj, yj, wj = p[lo:hi][keep], y[lo:hi][keep], w[lo:hi][keep]
        if pj.size < 2 or pj.min() == pj.max():
            out.append(None)  # no curve to fit: one prediction
            continue
        out.append((hi - lo, pj, yj, wj, select(pj, yj, wj, opts.q, opts.max_degree)))
    return out


def figures(scored: Scored, req: R.Request, opts: Options) -> dict[str, np.ndarray]:
    """Per group: the degree, the statistic and its p-value (NaN for a group with fewer than two distinct
    predictions)."""
    n = scored.n_groups
    out = {"belt_degree": np.full(n, np.nan), "belt_statistic": np.full(n, np.nan),
           "belt_p_value": np.full(n, np.nan)}
    for j, item in enumerate(per_group(scored, req, opts)):
        if item is None:
            continue
        fit = item[-1]
        t = max(0.0, 2 * (fit.llf - fit.llh))
        out["belt_degree"][j], out["belt_statistic"][j] = fit.degree, t
        out["belt_p_value"][j] = p_value(t, fit.degree, opts.q)
    return out


def bands(scored: Scored, req: R.Request, opts: Options) -> list[dict[str, np.ndarray]]:
    """Per group, per confidence level: the grid's predictions and the belt's lower and upper bounds."""
    out: list[dict[str, np.ndarray]] = []
    for j, item in enumerate(per_group(scored, req, opts)):
        if item is None:
            continue
        _, p, y, w, fit = item
        x = _design(np.log(p) - np.log1p(-p), fit.degree)
        at = _design(grid(p, opts.points), fit.degree)
        for c in opts.confidence:
            k = quantile(c, fit.degree, opts.q)
            lo = np.array([bound(x, y, w, fit, k, a, -1) for a in at])
            hi = np.array([bound(x, y, w, fit, k, a, 1) for a in at])
            out.append({"group": np.full(at.shape[0], j), "confidence": np.full(at.shape[0], c),
                        "p": _expit(at[:, 1]), "lower": _expit(lo),
                        "upper": _expit(hi)})
    return out
