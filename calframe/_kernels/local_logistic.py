"""Local-likelihood logistic regression in one variable: a smoother of an outcome in [0, 1] that stays in [0, 1].

At an evaluation point q the neighbourhood, bandwidth and tricube weights are LOESS's (cloess's, as
``loess.py``: ``h`` the distance to the nf-th nearest value, nf = floor(n * span), the radius scaled by
sqrt(span) for span > 1, weights K_j = T(|x_j - q| / h)). Instead of a weighted least-squares polynomial,
the local fit maximises the kernel-weighted Bernoulli log-likelihood

    sum_i K_i [y_i eta_i - log(1 + exp(eta_i))],   eta_i = b_0 + b_1 d_i + b_2 d_i^2,   d_i = (x_i - q) / h

(degree 0, 1 or 2 as LOESS), and the smoothed value at q is expit(b_0), inside [0, 1] by construction.
y may be a fraction in [0, 1] (a confidence): the same quasi-likelihood, whose maximiser is the same as
for the two rows (y = 1, weight K y) and (y = 0, weight K (1 - y)). This is the local logistic regression
of Loader (1999, "Local regression and likelihood", ch. 4) and R's ``locfit(family="binomial")``; at one
point it is ``sklearn.linear_model.LogisticRegression(penalty=None)`` on the columns d, d^2 with
``sample_weight=K`` (tests/test_local_logistic.py).

Newton's method from the local constant fit (logit of the kernel-weighted mean; or from given
coefficients, as the bootstrap starts from the full data's), each step shortened to at most 4 in every
coefficient (the log-likelihood is concave, so the steps then converge without evaluating it), until the
step is below 1e-10 in every coefficient (at most 100 steps).
When the neighbourhood's outcomes are all 0 (all 1) the fit is 0 (1). Where the neighbourhood is separable
by the local polynomial the likelihood has no maximum; the fit then approaches 0 or 1 and stops at the
step limit (the value is within [0, 1] either way).

Standard error of eta_0 = b_0: the sandwich H^-1 M H^-1 with H = sum K_j n_j p_j (1 - p_j) X_j X_j' and
M = sum K_j^2 e_j X_j X_j', e_j the sum of squared residuals (y - p_j)^2 of the rows at the distinct
value x_j (so the same formula serves a 0/1 outcome and a confidence, whose spread is far below
p (1 - p)). The band is expit(eta_0 -/+ z se): inside [0, 1] too.

Rows are aggregated over the distinct values of x (count, sum of y, sum of y^2: optionally weighted, which
is how the bootstrap reweights rows); each evaluation point is fitted by one thread with a fixed summation
order: a plain ``nogil`` worker taking the next point from an atomic counter
(:func:`calframe._kernels.chunks.take`), run on several threads by :func:`calframe._jit.on_threads`, as the
other kernels without numba's ``parallel=True`` (docs/benchmarks.md, "Compile time": here most of the compile
is :func:`_fit_one`'s, which the worker's own part, about 1 s, adds little to).
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import njit
from .chunks import run_items, take
from .loess import loess_bandwidth, tricube_weight, loess_window, sym_pinv

#: output columns of :func:`local_logistic`: the fit expit(b0), b0 (= ETA), b1, b2, se(b0), Newton steps
FIT, ETA, B1, B2, SE_ETA, ITERS = 0, 1, 2, 3, 4, 5
_NOUT = 6
_MAX_STEPS = 100
_STEP_TOL = 1e-10
_MAX_STEP = 4.0


@njit(inline="always", cache=True)
def _expit(eta):
    if eta >= 0.0:
        return 1.0 / (1.0 + math.exp(-eta))
    e = math.exp(eta)
    return e / (1.0 + e)


@njit(inline="always", cache=True)
def _basis_prob(u, q, inv_h, k, beta, x):
    """x = [1, d, d^2] at the value u (d = (u - q) / h); returns expit(beta . x) over the first k terms."""
    dd = (u - q) * inv_h
    x[0] = 1.0
    x[1] = dd
    x[2] = dd * dd
    eta = 0.0
    for a in range(k):
        eta += beta[a] * x[a]
    return _expit(eta)


@njit(cache=True)
def _terms(ux, cnt, sy, syy, kw, i0, i1, q, inv_h, k, beta, grad, hess, meat, want_meat):
    """Gradient of the local log-likelihood and its negative Hessian H at beta; with ``want_meat`` also the
    sandwich's M = sum K_j^2 e_j X_j X_j' (e_j: the squared residuals at the distinct value j)."""
    for a in range(3):
        grad[a] = 0.0
        for b in range(3):
            hess[a, b] = 0.0
            meat[a, b] = 0.0
    x = np.empty(3)
    for j in range(i0, i1):
        w = kw[j - i0]
        if w == 0.0:
            continue
        p = _basis_prob(ux[j], q, inv_h, k, beta, x)
        r = w * (sy[j] - cnt[j] * p)
        v = w * cnt[j] * p * (1.0 - p)
        e = 0.0
        if want_meat:
            e = syy[j] - 2.0 * p * sy[j] + p * p * cnt[j]
            e = w * w * (e if e > 0.0 else 0.0)
        for a in range(k):
            grad[a] += r * x[a]
            for b in range(k):
                hess[a, b] += v * x[a] * x[b]
                if want_meat:
                    meat[a, b] += e * x[a] * x[b]


@njit(cache=True)
def _fit_one(q, xs, nf, sfac, k, ux, cnt, sy, syy, z, beta0, res):
    """Local logistic fit at q: res = [expit(b0), b0, b1, b2, se(b0), steps] (se NaN without ``z``), Newton from
    beta0 when its first entry is finite."""
    h = loess_bandwidth(xs, nf, q)
    for a in range(_NOUT):
        res[a] = np.nan
    res[ITERS] = 0.0
    if not h > 0.0:
        return
    big_h = math.sqrt(h * h * sfac)
    inv_h = 1.0 / big_h
    i0, i1 = loess_window(ux, q, h)
    kw = np.empty(i1 - i0)
    sk = 0.0
    sky = 0.0
    for j in range(i0, i1):
        w = tricube_weight((ux[j] - q) * inv_h)
        kw[j - i0] = w
        sk += w * cnt[j]
        sky += w * sy[j]
    if not sk > 0.0:
        return
    mean = sky / sk
    if mean <= 0.0 or mean >= 1.0:  # every outcome of the neighbourhood is 0 (1): so is the fit
        res[FIT] = 0.0 if mean <= 0.0 else 1.0
        res[ETA] = -np.inf if mean <= 0.0 else np.inf
        res[B1] = 0.0
        res[B2] = 0.0
        res[SE_ETA] = 0.0
        return
    beta = np.zeros(3)
    if math.isfinite(beta0[0]):
        for a in range(k):
            beta[a] = beta0[a]
    else:
        beta[0] = math.log(mean / (1.0 - mean))
    grad = np.zeros(3)
    hess = np.zeros((3, 3))
    inv = np.zeros((3, 3))
    step = np.zeros(3)
    meat = np.zeros((3, 3))
    steps = 0
    for _ in range(_MAX_STEPS):
        _terms(ux, cnt, sy, syy, kw, i0, i1, q, inv_h, k, beta, grad, hess, meat, False)
        sym_pinv(hess, k, inv)
        big = 0.0
        for a in range(k):
            s = 0.0
            for b in range(k):
                s += inv[a, b] * grad[b]
            step[a] = s
            if abs(s) > big:
                big = abs(s)
        t = _MAX_STEP / big if big > _MAX_STEP else 1.0
        for a in range(k):
            beta[a] += t * step[a]
        steps += 1
        if big < _STEP_TOL:
            break
    res[ETA] = beta[0]
    res[B1] = beta[1]
    res[B2] = beta[2]
    res[FIT] = _expit(beta[0])
    res[ITERS] = steps
    if z > 0.0:  # the sandwich H^-1 M H^-1 at the fit
        _terms(ux, cnt, sy, syy, kw, i0, i1, q, inv_h, k, beta, grad, hess, meat, True)
        sym_pinv(hess, k, inv)
        var = 0.0
        for a in range(k):
            for b in range(k):
                var += inv[0, a] * meat[a, b] * inv[b, 0]
        res[SE_ETA] = math.sqrt(var) if var > 0.0 else 0.0


@njit(cache=True, nogil=True)
def _fit_points(xs, nf, sfac, k, ux, cnt, sy, syy, qpts, z, beta0, out, taken):
    """:func:`local_logistic`'s share of one thread: the points it takes by the counter."""
    m = qpts.shape[0]
    while True:
        i = take(taken)
        if i >= m:
            break
        _fit_one(qpts[i], xs, nf, sfac, k, ux, cnt, sy, syy, z, beta0[i], out[i])


def local_logistic(xs, nf, span, degree, ux, cnt, sy, syy, qpts, z, beta0):
    """Local logistic fits at the points qpts: an (m, 6) array [fit, b0, b1, b2, se(b0), Newton steps].

    xs: every x sorted (ties repeated: the bandwidths); ux: the sorted distinct values; cnt, sy, syy: per
    distinct value the (weighted) count of rows, sum of y and sum of y^2; z > 0 asks for the standard error;
    beta0 (m, 3): starting coefficients (NaN: the local constant fit). Each point is one thread's
    (:func:`_fit_points`).
    """
    m = qpts.shape[0]
    out = np.empty((m, _NOUT))
    span = float(span)
    sfac = span if span > 1.0 else 1.0
    run_items(_fit_points, (xs, int(nf), sfac, int(degree) + 1, ux, cnt, sy, syy, qpts, float(z), beta0, out), m)
    return out


class LocalLogistic:
    """The local logistic fits of one x at fixed points ``new_x``: x sorted and aggregated once, then
    :meth:`fit` for any outcome and row weights (a bootstrap's counts: they weigh rows, the bandwidths stay
    those of every row of x)."""

    def __init__(self, x: np.ndarray, new_x: np.ndarray, *, span: float = 0.9, degree: int = 2):
        x = np.ascontiguousarray(x, dtype=np.float64)
        n = x.size
        self.nf = min(n, int(math.floor(n * span + 1e-5)))
        if self.nf <= 0 or degree + 1 > self.nf - 1:
            raise ValueError("span too small: fewer data values than degrees of freedom")
        self.xs = np.sort(x)
        self.ux, self.inv = np.unique(x, return_inverse=True)
        self.new_x = np.ascontiguousarray(new_x, dtype=np.float64)
        self.span, self.degree = float(span), int(degree)

    def fit(self, y: np.ndarray, weights: np.ndarray | None = None, z: float = 0.0,
            start: np.ndarray | None = None) -> np.ndarray:
        """(m, 6) [fit, b0, b1, b2, se(b0), steps] at ``new_x`` for the outcome y in [0, 1]; ``start``: the
        coefficients to start Newton from (an earlier result's columns 1..3)."""
        y = np.asarray(y, dtype=np.float64)
        u = self.ux.size
        w = np.ones(y.size) if weights is None else np.asarray(weights, dtype=np.float64)
        cnt = np.bincount(self.inv, weights=w, minlength=u)
        sy = np.bincount(self.inv, weights=w * y, minlength=u)
        syy = np.bincount(self.inv, weights=w * y * y, minlength=u)
        beta0 = np.full((self.new_x.size, 3), np.nan) if start is None else np.ascontiguousarray(start)
        return local_logistic(self.xs, self.nf, self.span, self.degree, self.ux, cnt, sy, syy, self.new_x,
                              float(z), beta0)


def local_logistic_fit(x: np.ndarray, y: np.ndarray, new_x: np.ndarray, *, span: float = 0.9, degree: int = 2,
                       weights: np.ndarray | None = None, z: float = 0.0) -> np.ndarray:
    """:func:`local_logistic` of the rows (x, y) at ``new_x``, y in [0, 1]: :class:`LocalLogistic` once."""
    return LocalLogistic(x, new_x, span=span, degree=degree).fit(y, weights, z)
