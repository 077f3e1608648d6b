"""One-dimensional LOESS (Cleveland's cloess, ``surface="direct"``) in numba.

This module reproduces what ``skmisc.loess.loess(x, y, surface="direct",
statistics="exact")`` (the classic cloess / R ``loess`` code) computes for a
single predictor: fitted values, predictions at new points, pointwise
standard errors and confidence limits.  It is used for the variable-based
calibration curves of SPEC section 4 (Kelly & Smyth, VCE).

Definitions (taken from the cloess Fortran/C sources, not from their docs)
-------------------------------------------------------------------------
* ``nf = min(n, floor(n * span + 1e-5))`` points form the neighbourhood of an
  evaluation point q.  ``h`` is the distance from q to its nf-th nearest data
  point (ties counted with multiplicity).  cloess scales the *squared* radius
  by ``max(1, span)`` (``rho = dist(psi(nf)) * max(1, f)`` in ``ehg127``), so
  for span > 1 the bandwidth is ``h * sqrt(span)``.  (R's documentation says
  ``span ** (1/p)``; the code does ``sqrt(span)`` for every p.  skmisc rejects
  span > 1; we follow the code, as R does.)
* Weights of the local least squares problem: ``w_j * T(|x_j - q| / h)``
  with the tricube ``T(u) = (1 - u^3)^3`` for u < 1, 0 otherwise.  Points at
  exactly distance h get weight 0, so ties at the edge of the neighbourhood
  never matter.  The local polynomial (degree 0, 1 or 2) is solved as cloess
  does: columns equilibrated to unit norm, pseudo-inverse with near-zero
  singular values dropped.  We form the (tiny) Gram matrix and take its
  eigen-decomposition instead of a QR + SVD of the design; an eigenvalue is
  dropped below ``1e-12 * max eigenvalue`` (cloess drops singular values below
  ``100 * eps * max``, which a Gram matrix cannot resolve); the two only
  differ for local fits that are singular to within ~1e-6 relative.
* ``family="symmetric"``: after the first fit, ``iterations`` (default 4)
  reweightings with bisquare robustness weights on the residuals scaled by
  ``6 * median(|residual|)`` (cloess ``lowesw``: weight 1 below 0.001 of the
  scale, 0 above 0.999 of it).  The residual scale then comes from cloess's
  pseudovalues (``lowesp``) refitted with the prior weights.
* Statistics: ``L`` is the n x n operator of the fit at the data points
  computed with the prior weights (never the robustness weights, as in
  cloess).  ``trace_hat = tr L``, ``one_delta = tr (I-L)(I-L)^T``,
  ``two_delta = tr ((I-L)(I-L)^T)^2``, ``enp = one_delta + 2 trace_hat - n``,
  ``residual_scale = sqrt(sum w r^2 / one_delta)``,
  ``df = one_delta^2 / two_delta`` (lookup degrees of freedom).
* Predictions for ``family="symmetric"`` use the weights ``w * rw`` of the
  last fit (rw: robustness weights), so they agree with the fitted values.
  skmisc's ``predict`` multiplies its stored ``w * rw`` by ``w`` once more
  (again at every call), so with non-unit prior weights its symmetric-family
  predictions differ from its own fitted values; we do not copy that.
* If more than half the residuals are exactly zero, cloess's pseudovalue
  scale divides by zero (NaN); we fall back to ``sum w r^2`` for the
  symmetric family in that case.  With binary y and neighbourhoods that are
  all 0 or all 1, cloess's robustness weights are driven by residuals of
  ~1e-16 (rounding noise) and cannot be reproduced bit for bit by any other
  implementation; that is a property of the method, not of this code.
* Standard error at q: ``residual_scale * sqrt(sum_j (L_qj / w_j)^2)`` --
  exactly what skmisc/cloess compute (R's ``predict.loess`` uses
  ``L_qj^2 / w_j`` instead; both agree for unit weights; choose with
  ``se_weights``).  Limits: ``fit -/+ t_{1-alpha/2, df} * se``.

Speed
-----
x is sorted once and aggregated over its distinct values (sum of weights,
of weight * y, of squared weights, counts), so every local fit costs
O(log n + number of distinct x values in the window).  Evaluation points are
processed on several threads (plain ``nogil`` workers taking the next point
from an atomic counter, run by :func:`calframe._jit.on_threads`); every output
element is written by one thread with a fixed summation order, so results do
not depend on the number of threads.

The exact statistics need the U x U operator over the U distinct x values
(U^3 work, U^2 memory; with ties that is far cheaper than cloess's n x n).
``statistics`` chooses:

* ``"exact"``: as skmisc ``statistics="exact"``.
* ``"approximate"``: ``trace_hat`` exact (from the operator diagonal); the two
  deltas from cloess's interpolation formulas (``lowesa``/``ehg141``), exactly
  skmisc's ``surface="direct", statistics="approximate"``.
* ``"interpolate"``: as "approximate", but the fit at the data points and the
  operator diagonal are evaluated at ``n_vertices`` (1024) vertices (half
  spaced evenly over the range of x, half at quantiles of the distinct
  values) and interpolated to the data (cubic Hermite with the local slopes
  for the fit, as cloess's ``surface="interpolate"`` does, linear for the
  diagonal).  For these vertex fits, x values closer than ``bin_width``
  (1e-3) times the smallest vertex bandwidth are merged at their mean
  (moments change by ~1e-7 relative; a vertex then costs O(number of cells)
  rather than O(n)).  This touches only the residuals, robustness weights,
  trace_hat and the deltas; the predictions and standard errors at ``new_x``
  are always exact local fits over all the data.
* ``"auto"`` (default): exact up to ``exact_max`` (2000) distinct values,
  then approximate up to ``approximate_max`` (10000), then interpolate.

Accuracy of the approximations (binary y, 5000-200000 continuous x): the
"approximate" deltas move the confidence limits by < 1e-6; "interpolate"
moves the fitted values at the data points by ~1e-5 to 5e-4 (the local fit is
rough on the scale of the data spacing), trace_hat by ~1e-5 relative and the
gaussian residual scale by < 1e-6 relative (more for the symmetric family,
whose pseudovalue scale is sensitive: up to ~1e-3 relative for span 0.3).

Timing (2 cores shared with other jobs, 500 evaluation points with standard
errors, binary y, span 0.9, degree 2, after compilation): continuous x,
n = 1e5: 0.35 s (symmetric family 0.65 s); n = 1e6: 3-5 s (symmetric 7 s),
almost all of it the exact local fits at the 500 points (500 x 0.9e6 window
terms).  Integer-valued x (ages): 0.15 s / 0.3 s.  Exact statistics cost
~1 s at 2000 distinct values.  First compilation ~8-15 s (cached on disk).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._jit import njit
from .chunks import run_items, take

__all__ = [
    "LoessResult",
    "loess_fit",
    "evaluation_grid",
    "loess_eval",
    "loess_operator",
    "hermite_interp",
    "cloess_approx_deltas",
]

# eigenvalues of the equilibrated local Gram matrix below this fraction of
# the largest are treated as zero (pseudo-inverse), see module docstring
_LAMBDA_TOL = 1e-12

# output columns of loess_eval
FIT, SLOPE, DIAG, VAR_SE, VAR_ROW, STATUS = 0, 1, 2, 3, 4, 5
_NOUT = 6
# status codes (cloess error numbers 120 and 121)
_OK, _ZERO_WIDTH, _ALL_ZERO = 0, 1, 2
#: points per chunk of the cheap elementwise workers (bandwidths, Hermite interpolation)
_POINT_CHUNK = 1 << 12


# --------------------------------------------------------------------------
# numba kernels
# --------------------------------------------------------------------------
@njit(cache=True)
def loess_bandwidth(xs, nf, q):
    """Distance from q to its nf-th nearest value of the sorted array xs.

    The nf nearest points form a contiguous window of the sorted array; a
    binary search finds its left end (ties in x count with multiplicity).
    """
    n = xs.shape[0]
    lo = 0
    hi = n - nf
    while lo < hi:
        mid = (lo + hi) // 2
        if q - xs[mid] > xs[mid + nf] - q:
            lo = mid + 1
        else:
            hi = mid
    a = q - xs[lo]
    b = xs[lo + nf - 1] - q
    return a if a > b else b


@njit(cache=True)
def loess_window(ux, q, h):
    """Index range [i0, i1) of the sorted distinct values within h of q
    (one extra value on each side, weights are computed anyway)."""
    u = ux.shape[0]
    i0 = np.searchsorted(ux, q - h, side="left") - 1
    i1 = np.searchsorted(ux, q + h, side="right") + 1
    if i0 < 0:
        i0 = 0
    if i1 > u:
        i1 = u
    return i0, i1


@njit(inline="always", cache=True)
def tricube_weight(d):
    """(1 - |d|^3)^3 for |d| < 1, else 0, without a branch (the window sums vectorise)."""
    t = 1.0 - abs(d) * d * d
    t = t if t > 0.0 else 0.0
    return t * t * t


@njit(cache=True)
def _gram_pinv(mom, k, out):
    """Pseudo-inverse of the k x k Hankel Gram matrix G_ij = mom[i + j],
    computed as cloess does (equilibrate columns to unit norm, drop tiny
    singular values, undo the equilibration): out = D^-1 pinv(D^-1 G D^-1) D^-1.
    """
    g = np.zeros((3, 3))
    for i in range(k):
        for j in range(k):
            g[i, j] = mom[i + j]
    sym_pinv(g, k, out)


@njit(cache=True)
def sym_pinv(g, k, out):
    """Pseudo-inverse of the leading k x k block of the symmetric positive semi-definite g (k <= 3), as
    :func:`_gram_pinv` (equilibrated, eigenvalues below ``_LAMBDA_TOL`` of the largest dropped)."""
    d = np.empty(3)
    a = np.zeros((3, 3))
    v = np.zeros((3, 3))
    for i in range(k):
        gi = g[i, i]
        d[i] = math.sqrt(gi) if gi > 0.0 else 1.0
    for i in range(k):
        v[i, i] = 1.0
        for j in range(k):
            a[i, j] = g[i, j] / (d[i] * d[j])
    # cyclic Jacobi eigen-decomposition (k <= 3)
    for _sweep in range(60):
        off = 0.0
        diag = 0.0
        for i in range(k):
            diag += a[i, i] * a[i, i]
            for j in range(i + 1, k):
                off += a[i, j] * a[i, j]
        if off <= 1e-36 * diag or off == 0.0:
            break
        for p in range(k - 1):
            for q in range(p + 1, k):
                apq = a[p, q]
                if apq == 0.0:
                    continue
                theta = (a[q, q] - a[p, p]) / (2.0 * apq)
                if theta >= 0.0:
                    t = 1.0 / (theta + math.sqrt(theta * theta + 1.0))
                else:
                    t = -1.0 / (-theta + math.sqrt(theta * theta + 1.0))
                c = 1.0 / math.sqrt(t * t + 1.0)
                s = t * c
                for r in range(k):
                    arp = a[r, p]
                    arq = a[r, q]
                    a[r, p] = c * arp - s * arq
                    a[r, q] = s * arp + c * arq
                for r in range(k):
                    apr = a[p, r]
                    aqr = a[q, r]
                    a[p, r] = c * apr - s * aqr
                    a[q, r] = s * apr + c * aqr
                for r in range(k):
                    vrp = v[r, p]
                    vrq = v[r, q]
                    v[r, p] = c * vrp - s * vrq
                    v[r, q] = s * vrp + c * vrq
    lmax = 0.0
    for i in range(k):
        if a[i, i] > lmax:
            lmax = a[i, i]
    tol = _LAMBDA_TOL * lmax
    for i in range(k):
        for j in range(k):
            acc = 0.0
            for m in range(k):
                lam = a[m, m]
                if lam > tol:
                    acc += v[i, m] * v[j, m] / lam
            out[i, j] = acc / (d[i] * d[j])


# Reassociation lets LLVM vectorise the window sums.  Each sum is still
# computed by one thread in a fixed order, so results do not depend on the
# number of threads (they may differ in the last bits between CPUs).
_FASTMATH = {"reassoc", "nsz", "contract"}


@njit(inline="always", cache=True)
def _moments(s, w, d, d2, powers):
    """s[p] + w d^p for p = 0..4 (d2 = d^2): w d^3 as (w d^2) d, or with ``powers`` as w (d^2 d) (likewise
    w d^4). The two round differently: each sum keeps the one it has always had."""
    if powers:
        return s[0] + w, s[1] + w * d, s[2] + w * d2, s[3] + w * (d2 * d), s[4] + w * (d2 * d2)
    return s[0] + w, s[1] + w * d, s[2] + w * d2, s[3] + w * d2 * d, s[4] + w * d2 * d2


@njit(inline="always", cache=True)
def _store(out, s):
    for p in range(len(s)):
        out[p] = s[p]


@njit(inline="always", cache=True)
def _fit_sums(ux, fw, fwy, c, i0, i1, q, inv_h, mom, tv, vmom, var):
    """mom[p] = sum fw K d^p (p <= 4), tv[p] = sum fwy K d^p (p <= 2) and, with ``var`` (a constant of each
    caller: the loop is compiled without the test), vmom[p] = sum c K^2 d^p (p <= 4) in the same pass."""
    sm = sv = (0.0, 0.0, 0.0, 0.0, 0.0)
    t0 = t1 = t2 = 0.0
    for j in range(i0, i1):
        dd = (ux[j] - q) * inv_h
        kw = tricube_weight(dd)
        d2 = dd * dd
        sm = _moments(sm, fw[j] * kw, dd, d2, var)
        yk = fwy[j] * kw
        t0 += yk
        t1 += yk * dd
        t2 += yk * d2
        if var:
            sv = _moments(sv, c[j] * kw * kw, dd, d2, True)
    _store(mom, sm)
    _store(tv, (t0, t1, t2))
    if var:
        _store(vmom, sv)


@njit(cache=True, fastmath=_FASTMATH)
def _sums_fit(ux, fw, fwy, i0, i1, q, inv_h, mom, tv):
    """mom[p] = sum fw K d^p (p <= 4), tv[p] = sum fwy K d^p (p <= 2)."""
    _fit_sums(ux, fw, fwy, fw, i0, i1, q, inv_h, mom, tv, mom, False)


@njit(cache=True, fastmath=_FASTMATH)
def _sums_fit_var(ux, fw, fwy, c, i0, i1, q, inv_h, mom, tv, vmom):
    """_sums_fit and _sums_weight(c, power=2) in one pass."""
    _fit_sums(ux, fw, fwy, c, i0, i1, q, inv_h, mom, tv, vmom, True)


@njit(cache=True, fastmath=_FASTMATH)
def _sums_weight(ux, c, i0, i1, q, inv_h, power, mom):
    """mom[p] = sum c K^power d^p (p <= 4), power 1 or 2."""
    sm = (0.0, 0.0, 0.0, 0.0, 0.0)
    for j in range(i0, i1):
        dd = (ux[j] - q) * inv_h
        kw = tricube_weight(dd)
        if power == 2:
            kw = kw * kw
        d2 = dd * dd
        sm = _moments(sm, c[j] * kw, dd, d2, False)
    _store(mom, sm)


@njit(cache=True)
def _quad(avec, mom, k):
    acc = 0.0
    for i in range(k):
        for j in range(k):
            acc += avec[i] * avec[j] * mom[i + j]
    return acc


@njit(cache=True)
def _local(q, xs, nf, sfac, degree, ux, fw, fwy, lw, q1, q2,
           sep_l, want_v1, want_v2, res, avec):
    """One local fit at q.

    fw/fwy: per distinct x, sum of fit weights and of fit weight * y.
    lw: per distinct x, the weights defining the operator L (prior weights;
    used only if sep_l, otherwise L uses fw).
    q1/q2: per distinct x, weights c_j of sum_j c_j (K_j a.X_j)^2 (SE / row
    norm of L).  res receives [fit, slope, diag factor, v1, v2, status];
    avec receives the operator coefficients a (L_qj = lw_j K_j a.X_j).
    Returns (h, H): the nf-th nearest distance and the bandwidth.
    """
    k = degree + 1
    h = loess_bandwidth(xs, nf, q)
    for i in range(_NOUT):
        res[i] = 0.0
    if not h > 0.0:
        res[STATUS] = _ZERO_WIDTH
        return h, h
    big_h = math.sqrt(h * h * sfac)
    inv_h = 1.0 / big_h
    i0, i1 = loess_window(ux, q, h)
    mom = np.empty(5)
    tv = np.empty(3)
    vmom = np.empty(5)
    fused = want_v1 and not sep_l
    if fused:
        _sums_fit_var(ux, fw, fwy, q1, i0, i1, q, inv_h, mom, tv, vmom)
    else:
        _sums_fit(ux, fw, fwy, i0, i1, q, inv_h, mom, tv)
    if not mom[0] > 0.0:
        res[STATUS] = _ALL_ZERO
        return h, big_h
    pinv = np.zeros((3, 3))
    _gram_pinv(mom, k, pinv)
    fit = 0.0
    slope = 0.0
    for j in range(k):
        fit += pinv[0, j] * tv[j]
        if k > 1:
            slope += pinv[1, j] * tv[j]
    res[FIT] = fit
    res[SLOPE] = slope * inv_h
    if sep_l:
        _sums_weight(ux, lw, i0, i1, q, inv_h, 1, mom)
        if not mom[0] > 0.0:
            res[STATUS] = _ALL_ZERO
            return h, big_h
        _gram_pinv(mom, k, pinv)
    for j in range(3):
        avec[j] = pinv[0, j] if j < k else 0.0
    res[DIAG] = avec[0]
    if want_v1:
        if fused:
            res[VAR_SE] = _quad(avec, vmom, k)
        else:
            _sums_weight(ux, q1, i0, i1, q, inv_h, 2, mom)
            res[VAR_SE] = _quad(avec, mom, k)
    if want_v2:
        _sums_weight(ux, q2, i0, i1, q, inv_h, 2, mom)
        res[VAR_ROW] = _quad(avec, mom, k)
    return h, big_h


@njit(cache=True, nogil=True)
def _eval_points(xs, nf, sfac, degree, ux, fw, fwy, lw, q1, q2, qpts, sep_l, want_v1, want_v2, out, taken):
    """:func:`loess_eval`'s share of one thread: the points it takes by the counter."""
    m = qpts.shape[0]
    while True:
        i = take(taken)
        if i >= m:
            break
        avec = np.empty(3)
        _local(qpts[i], xs, nf, sfac, degree, ux, fw, fwy, lw, q1, q2,
               sep_l, want_v1, want_v2, out[i], avec)


def loess_eval(xs, nf, span, degree, ux, fw, fwy, lw, q1, q2, qpts,
               sep_l, want_v1, want_v2):
    """Local fits at the points qpts.

    xs: all x values sorted (length n, ties repeated); nf: neighbourhood size;
    ux: sorted distinct x values; fw, fwy, lw, q1, q2: per distinct value
    (see ``_local``).  Returns an (m, 6) array with columns
    fit, slope, operator diagonal factor a_0, v1 = sum_j q1_j (K_j a.X_j)^2,
    v2 = the same with q2, status (0 ok, 1 zero-width neighbourhood,
    2 all weights zero).  Each point is one thread's (:func:`_eval_points`).
    """
    m = qpts.shape[0]
    out = np.empty((m, _NOUT))
    span = float(span)
    sfac = span if span > 1.0 else 1.0
    run_items(_eval_points, (xs, int(nf), sfac, int(degree), ux, fw, fwy, lw, q1, q2, qpts, bool(sep_l),
                            bool(want_v1), bool(want_v2), out), m)
    return out


def loess_operator(xs, nf, span, degree, ux, lw):
    """G (U x U) with L_ij = lw_j * G[u(i), u(j)] for the fit at the data
    points (u(i): index of x_i among the distinct values ux); status (U,).
    Each row is one thread's (:func:`_operator_rows`)."""
    u = ux.shape[0]
    g = np.zeros((u, u))
    status = np.zeros(u, dtype=np.int64)
    span = float(span)
    sfac = span if span > 1.0 else 1.0
    run_items(_operator_rows, (xs, int(nf), sfac, int(degree), ux, lw, g, status), u)
    return g, status


@njit(cache=True, nogil=True)
def _operator_rows(xs, nf, sfac, degree, ux, lw, g, status, taken):
    """:func:`loess_operator`'s share of one thread: the rows it takes by the counter."""
    u = ux.shape[0]
    while True:
        r = take(taken)
        if r >= u:
            break
        avec = np.empty(3)
        res = np.empty(_NOUT)
        q = ux[r]
        h, big_h = _local(q, xs, nf, sfac, degree, ux, lw, lw, lw, lw, lw,
                          False, False, False, res, avec)
        status[r] = int(res[STATUS])
        if status[r] != _OK:
            continue
        inv_h = 1.0 / big_h
        i0, i1 = loess_window(ux, q, h)
        for j in range(i0, i1):
            dd = (ux[j] - q) * inv_h
            kw = tricube_weight(dd)
            if kw != 0.0:
                g[r, j] = kw * (avec[0] + dd * (avec[1] + dd * avec[2]))


@njit(cache=True)
def _bandwidths(xs, nf, q):
    """The bandwidth at each point of q: sequential, as it serves the vertices only (about a thousand)."""
    out = np.empty(q.shape[0])
    for i in range(q.shape[0]):
        out[i] = loess_bandwidth(xs, nf, q[i])
    return out


def hermite_interp(vx, val, slope, t):
    """Cubic Hermite interpolation (values and slopes at sorted vertices vx)
    at the points t, as cloess's ``ehg128`` in one dimension; points beyond
    the end vertices are extrapolated with the end cells' cubics.  Chunks of
    the points on several threads (:func:`_hermite_worker`), each point one
    thread's."""
    out = np.empty(t.shape[0])
    run_items(_hermite_worker, (vx, val, slope, t, out), -(-t.shape[0] // _POINT_CHUNK))
    return out


@njit(cache=True, nogil=True)
def _hermite_worker(vx, val, slope, t, out, taken):
    """:func:`hermite_interp` on the chunks of _POINT_CHUNK points this thread takes."""
    m = t.shape[0]
    nv = vx.shape[0]
    nchunks = (m + _POINT_CHUNK - 1) // _POINT_CHUNK
    while True:
        k = take(taken)
        if k >= nchunks:
            break
        for i in range(k * _POINT_CHUNK, min(m, (k + 1) * _POINT_CHUNK)):
            z = t[i]
            c = np.searchsorted(vx, z, side="right") - 1
            if c < 0:
                c = 0
            if c > nv - 2:
                c = nv - 2
            v0 = vx[c]
            v1 = vx[c + 1]
            w = v1 - v0
            hh = (z - v0) / w
            phi0 = (1 - hh) ** 2 * (1 + 2 * hh)
            phi1 = hh ** 2 * (3 - 2 * hh)
            psi0 = hh * (1 - hh) ** 2
            psi1 = hh ** 2 * (hh - 1)
            out[i] = (phi0 * val[c] + phi1 * val[c + 1]
                      + (psi0 * slope[c] + psi1 * slope[c + 1]) * w)


# --------------------------------------------------------------------------
# cloess's approximate statistics (lowesa / ehg141 / ehg176), scalar Python
# --------------------------------------------------------------------------
_EHG141_C = np.array([
    .2971620, .3802660, .5886043, .4263766, .3346498, .6271053, .5241198,
    .3484836, .6687687, .6338795, .4076457, .7207693, .1611761, .3091323,
    .4401023, .2939609, .3580278, .5555741, .3972390, .4171278, .6293196,
    .4675173, .4699070, .6674802, .2848308, .2254512, .2914126, .5393624,
    .2517230, .3898970, .7603231, .2969113, .4740130, .9664956, .3629838,
    .5348889, .2075670, .2822574, .2369957, .3911566, .2981154, .3623232,
    .5508869, .3501989, .4371032, .7002667, .4291632, .4930370])
# ehg176's one-dimensional k-d tree, flattened: vertices (sorted), values,
# slopes
_EHG176_V = np.array([-0.005, 0.1204, 0.2017, 0.2815, 0.3705, 0.4536,
                      0.5591, 0.7132, 0.8751, 1.005])
_EHG176_VAL = np.array([-9.0572e-2, 9.5807e-2, 2.6152e-2, -3.1926e-2,
                        -5.3718e-2, -6.4170e-2, -5.8387e-2, -2.0636e-2,
                        4.0172e-2, -1.0856e-2])
_EHG176_SLOPE = np.array([4.4844, -0.7978, -0.7286, -0.4457, -0.3495,
                          3.2813e-2, 0.1611, 0.3350, -4.1032e-2, -0.7736])


def _ehg176(z):
    vx = _EHG176_V
    # cell search as ehg128: z <= split goes to the low cell
    c = int(np.searchsorted(vx, z, side="left")) - 1
    c = min(max(c, 0), vx.size - 2)
    v0, v1 = vx[c], vx[c + 1]
    h = (z - v0) / (v1 - v0)
    phi0 = (1 - h) ** 2 * (1 + 2 * h)
    phi1 = h ** 2 * (3 - 2 * h)
    psi0 = h * (1 - h) ** 2
    psi1 = h ** 2 * (h - 1)
    return (phi0 * _EHG176_VAL[c] + phi1 * _EHG176_VAL[c + 1]
            + (psi0 * _EHG176_SLOPE[c] + psi1 * _EHG176_SLOPE[c + 1]) * (v1 - v0))


def _ehg141(trl, n, deg, k, d):
    if deg == 0:
        dk = 1
    elif deg == 1:
        dk = d + 1
    else:
        dk = int((d + 2) * (d + 1) / 2.0)
    corx = math.sqrt(k / n)
    z = (math.sqrt(k / trl) - corx) / (1 - corx)
    z = min(1.0, max(0.0, z))
    c4 = math.exp(_ehg176(z))
    c = _EHG141_C
    out = []
    i = 1 + 3 * (min(d, 4) - 1 + 4 * (deg - 1))
    for _ in range(2):
        if d <= 4:
            c1, c2, c3 = c[i - 1], c[i], c[i + 1]
        else:
            c1 = c[i - 1] + (d - 4) * (c[i - 1] - c[i - 4])
            c2 = c[i] + (d - 4) * (c[i] - c[i - 3])
            c3 = c[i + 1] + (d - 4) * (c[i + 1] - c[i - 2])
        out.append(n - trl * math.exp(c1 * z ** c2 * (1 - z) ** c3 * c4))
        i += 24
    return dk, out[0], out[1]


def cloess_approx_deltas(trace_hat, n, degree, d=1):
    """cloess ``lowesa``: one_delta and two_delta interpolated from tr L.

    tau is cloess's number of local parameters: (d+2)(d+1)/2 for degree 2,
    d + 1 otherwise (also for degree 0, as in ``loess_workspace``).
    """
    tau = (d + 2) * (d + 1) // 2 if degree > 1 else d + 1
    dka, d1a, d2a = _ehg141(trace_hat, n, 1, tau, d)
    dkb, d1b, d2b = _ehg141(trace_hat, n, 2, tau, d)
    alpha = (tau - dka) / (dkb - dka)
    return ((1 - alpha) * d1a + alpha * d1b, (1 - alpha) * d2a + alpha * d2b)


# --------------------------------------------------------------------------
# Python-level driver
# --------------------------------------------------------------------------
class LoessResult(NamedTuple):
    """Output of :func:`loess_fit` (arrays in the caller's order)."""

    fitted: np.ndarray            # (n,) fit at the data points
    residuals: np.ndarray         # (n,) y - fitted
    x_eval: np.ndarray            # (m,) evaluation points (new_x, or x)
    predicted: np.ndarray         # (m,) fit at x_eval
    se: np.ndarray | None         # (m,) standard errors (se=True)
    lower: np.ndarray | None      # (m,) confidence limits (se=True)
    upper: np.ndarray | None
    df: float                     # lookup degrees of freedom one^2 / two
    t_quantile: float             # t_{1 - alpha/2, df}
    residual_scale: float
    enp: float                    # one_delta + 2 trace_hat - n (cloess)
    trace_hat: float
    one_delta: float
    two_delta: float
    robust_weights: np.ndarray    # (n,) final robustness weights (1 if gaussian)
    statistics: str               # "exact" / "approximate" / "interpolate"


def evaluation_grid(x, n_points=500, lower=0.05, upper=0.95):
    """n_points evenly spaced between the lower and upper quantiles of x
    (numpy's default linear quantiles), the VCE grid of SPEC section 4."""
    x = np.asarray(x, dtype=np.float64)
    lo, hi = np.quantile(x, [lower, upper])
    return np.linspace(lo, hi, n_points)


def _group_sums(inv, u, values):
    return np.bincount(inv, weights=values, minlength=u)


def _bisquare_weights(res):
    """cloess ``lowesw``: bisquare of residuals / (6 * median |residual|)."""
    ar = np.abs(res)
    cmad = 6.0 * np.median(ar)
    if cmad < np.finfo(np.float64).tiny:
        return np.ones_like(ar)
    rw = (1.0 - (ar / cmad) ** 2) ** 2
    rw = np.where(ar > 0.999 * cmad, 0.0, rw)
    rw = np.where(ar <= 0.001 * cmad, 1.0, rw)
    return rw


def _pseudovalues(y, yhat, pw, rw):
    """cloess ``lowesp`` (rw: the final robustness weights times the prior)."""
    mad = np.median(np.abs(y - yhat) * np.sqrt(pw))
    c = (6.0 * mad) ** 2 / 5.0
    if not c > 0.0:
        # more than half the residuals are exactly 0: cloess divides by zero
        # here (NaN scale); we return None and the caller falls back to the
        # weighted residual sum of squares
        return None
    yt = (1.0 - (y - yhat) ** 2 * pw / c) * np.sqrt(rw)
    c = y.size / np.sum(yt[::-1])
    return yhat + (c * rw) * (y - yhat)


def _raise_status(status, where):
    bad = np.flatnonzero(status != _OK)
    if bad.size:
        code = int(status[bad[0]])
        msg = ("zero-width neighbourhood, make span bigger" if code == _ZERO_WIDTH
               else "all data on the boundary of the neighbourhood (all local "
                    "weights zero), make span bigger")
        raise ValueError(f"loess: {msg} (at {where[bad[0]]!r})")


def loess_fit(x, y, *, span=0.9, degree=2, weights=None, family="gaussian",
              iterations=4, new_x=None, se=False, alpha=0.05,
              statistics="auto", se_weights="cloess", exact_max=2000,
              approximate_max=10000, n_vertices=1024,
              bin_width=1e-3, exact_limit=8000):
    """LOESS of y on x as ``skmisc.loess.loess(x, y, weights, span=span,
    degree=degree, family=family, iterations=iterations, surface="direct",
    statistics=...)`` followed by ``predict(new_x, stderror=se)`` and
    ``confidence(alpha)``.

    Parameters
    ----------
    x, y : 1-D arrays of equal length n.
    span : fraction of points in each neighbourhood (> 0; > 1 allowed and
        enlarges the bandwidth by sqrt(span), as cloess does).
    degree : 0, 1 or 2.
    weights : optional non-negative prior weights.
    family : "gaussian" (least squares) or "symmetric" (``iterations``
        bisquare robustness reweightings).
    new_x : evaluation points (default: the data points x).
    se : compute standard errors and ``1 - alpha`` pointwise limits.
    statistics : "auto", "exact", "approximate" or "interpolate" (see the
        module docstring); "auto" picks exact for at most ``exact_max``
        distinct x values, approximate up to ``approximate_max``.
    se_weights : "cloess" (sum (L/w)^2, skmisc) or "r" (sum L^2 / w, R).
    n_vertices : number of interpolation vertices for "interpolate".
    bin_width : in "interpolate" mode the vertex fits merge x values closer
        than bin_width times the smallest bandwidth (0: never).
    exact_limit : refuse statistics="exact" above this many distinct x
        values (the operator takes 3 U^2 doubles).

    Returns a :class:`LoessResult`; ``predicted``/``se``/``lower``/``upper``
    refer to ``x_eval`` (``new_x``, or x itself when new_x is None).
    Raises ValueError for invalid input and where cloess stops: span too
    small for the degree, a zero-width neighbourhood (more than nf tied
    values at a point), or a neighbourhood whose weights are all zero.
    """
    x = np.ascontiguousarray(x, dtype=np.float64).ravel()
    y = np.ascontiguousarray(y, dtype=np.float64).ravel()
    n = x.size
    if y.size != n:
        raise ValueError("x and y must have the same length")
    if n == 0:
        raise ValueError("loess needs at least one observation")
    if weights is None:
        w = np.ones(n)
    else:
        w = np.ascontiguousarray(weights, dtype=np.float64).ravel()
        if w.size != n:
            raise ValueError("weights must have the same length as x")
        if np.any(w < 0) or not np.all(np.isfinite(w)):
            raise ValueError("weights must be finite and non-negative")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("x and y must be finite")
    if degree not in (0, 1, 2):
        raise ValueError("degree must be 0, 1 or 2")
    if not span > 0:
        raise ValueError("span must be positive")
    if family not in ("gaussian", "symmetric"):
        raise ValueError("family must be 'gaussian' or 'symmetric'")
    if se_weights not in ("cloess", "r"):
        raise ValueError("se_weights must be 'cloess' or 'r'")
    if statistics not in ("auto", "exact", "approximate", "interpolate"):
        raise ValueError("statistics must be auto, exact, approximate or interpolate")
    iters = int(iterations) if family == "symmetric" else 0
    if iters < 0:
        raise ValueError("iterations must be >= 0")
    nf = min(n, int(math.floor(n * span + 1e-5)))
    k = degree + 1
    if nf <= 0 or k > nf - 1:
        raise ValueError("span too small: fewer data values than degrees of freedom")

    order = np.argsort(x, kind="stable")
    xs = x[order]
    ux, first, inv_s = np.unique(xs, return_index=True, return_inverse=True)
    ux = np.ascontiguousarray(ux)
    u = ux.size
    ys = y[order]
    ws = w[order]
    cnt = np.bincount(inv_s, minlength=u).astype(np.float64)
    sw = _group_sums(inv_s, u, ws)
    sw2 = _group_sums(inv_s, u, ws * ws)
    q1 = cnt if se_weights == "cloess" else sw

    if statistics == "auto":
        statistics = ("exact" if u <= exact_max else
                      "approximate" if u <= approximate_max else "interpolate")
    if statistics == "exact" and u > exact_limit:
        raise ValueError(
            f"statistics='exact' needs a {u} x {u} operator (distinct x values); "
            f"use 'approximate' or raise exact_limit (now {exact_limit})")
    interp = statistics == "interpolate"
    if interp:
        nv = max(4, int(n_vertices))
        idx = np.unique(np.linspace(0, u - 1, nv // 2).round().astype(np.int64))
        vx = np.unique(np.concatenate([np.linspace(ux[0], ux[-1], nv - nv // 2), ux[idx]]))
        if vx.size < 2:
            vx = ux
    else:
        vx = ux
    vx = np.ascontiguousarray(vx)
    # In "interpolate" mode the local fits at the vertices run on the distinct
    # values merged into cells of width delta = bin_width * (smallest
    # bandwidth at any vertex), each cell placed at the mean of its values
    # (the bandwidths still come from all of x).  The local moments then
    # change by O(bin_width^2) relative, and a vertex costs O(number of
    # cells) instead of O(U).
    px = ux
    starts = None
    if interp and bin_width > 0:
        delta = float(bin_width) * float(np.min(_bandwidths(xs, nf, vx)))
        if delta > 0:
            cell = np.floor((ux - ux[0]) / delta)
            starts = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]])
            if starts.size > 0.8 * u:
                starts = None
    if starts is not None:
        def vb(a):
            return np.add.reduceat(a, starts)

        px = vb(ux * cnt) / vb(cnt)
    else:
        def vb(a):
            return a

    def fit_at_data(fw, fwy, lw, want_diag):
        """Fit (and operator diagonal / row norms) at the distinct x values."""
        sep = lw is not fw
        out = loess_eval(xs, nf, float(span), degree, px, vb(fw), vb(fwy),
                         vb(lw), vb(q1), vb(sw2), vx, sep, False, want_diag)
        _raise_status(out[:, STATUS], vx)
        if not interp:
            return out[:, FIT], out[:, DIAG], out[:, VAR_ROW]
        if degree == 0:  # local constants carry no slope: interpolate linearly
            fit = np.interp(ux, vx, out[:, FIT])
        else:
            fit = hermite_interp(vx, out[:, FIT], out[:, SLOPE], ux)
        diag = np.interp(ux, vx, out[:, DIAG])
        row = np.interp(ux, vx, out[:, VAR_ROW])
        return fit, diag, row

    # --- iteration 0: prior weights; statistics of the operator L ----------
    swy = _group_sums(inv_s, u, ws * ys)
    fit_u, diag_u, row_u = fit_at_data(sw, swy, sw, True)
    fitted_s = fit_u[inv_s]
    trace_hat = float(np.sum(sw * diag_u))
    if statistics == "exact":
        g, status = loess_operator(xs, nf, float(span), degree, ux, sw)
        _raise_status(status, ux)
        p = g * sw[None, :]
        tr_l = float(np.trace(p))
        z = (g * sw2[None, :]) @ g.T
        z *= cnt[None, :]
        tr_llt = float(np.trace(z))
        tr_l2 = float(np.sum(p * p.T))
        tr_lllt = float(np.sum(p * z.T))
        tr_z2 = float(np.sum(z * z.T))
        del g, p, z
        trace_hat = tr_l
        one_delta = n - 2.0 * tr_l + tr_llt
        two_delta = (n - 4.0 * tr_l + 4.0 * tr_llt + 2.0 * tr_l2
                     - 4.0 * tr_lllt + tr_z2)
    else:
        one_delta, two_delta = cloess_approx_deltas(trace_hat, n, degree)

    # --- robustness iterations ----------------------------------------------
    rw = np.ones(n)
    fw, fwy = sw, swy
    for _ in range(iters):
        rw = _bisquare_weights(ys - fitted_s)
        ew = ws * rw
        fw = _group_sums(inv_s, u, ew)
        fwy = _group_sums(inv_s, u, ew * ys)
        fit_u, _, _ = fit_at_data(fw, fwy, fw, False)
        fitted_s = fit_u[inv_s]
    resid_s = ys - fitted_s

    pseudo = _pseudovalues(ys, fitted_s, ws, ws * rw) if iters > 0 else None
    if pseudo is not None:
        pfit_u, _, _ = fit_at_data(sw, _group_sums(inv_s, u, ws * pseudo), sw, False)
        ss = float(np.sum(ws * (pseudo - pfit_u[inv_s]) ** 2))
    else:
        ss = float(np.sum(ws * resid_s * resid_s))
    residual_scale = math.sqrt(ss / one_delta) if one_delta > 0 else float("nan")
    enp = one_delta + 2.0 * trace_hat - n
    df = one_delta * one_delta / two_delta if two_delta > 0 else float("nan")

    # --- predictions ----------------------------------------------------------
    if new_x is None:
        x_eval = x.copy()
        q = ux
    else:
        x_eval = np.ascontiguousarray(new_x, dtype=np.float64).ravel()
        if not np.all(np.isfinite(x_eval)):
            raise ValueError("new_x must be finite")
        q = x_eval
    back = np.empty(n, dtype=np.int64)
    back[order] = np.arange(n)
    se_arr = lower = upper = None
    tq = float("nan")
    if new_x is None and (not se or interp):
        # at the data points: the fit already computed (interpolated in
        # "interpolate" mode, as the standard errors are)
        pred = fitted_s[back]
        if se:
            out = loess_eval(xs, nf, float(span), degree, px, vb(fw), vb(fwy),
                             vb(sw), vb(q1), vb(sw2), vx, iters > 0, True, False)
            _raise_status(out[:, STATUS], vx)
            v1 = np.interp(ux, vx, out[:, VAR_SE])[inv_s][back]
    else:
        out = loess_eval(xs, nf, float(span), degree, ux, fw, fwy, sw, q1, sw2,
                         np.ascontiguousarray(q), iters > 0, bool(se), False)
        _raise_status(out[:, STATUS], q)
        pred = out[:, FIT].copy()
        v1 = out[:, VAR_SE]
        if new_x is None:
            pred = pred[inv_s][back]
            v1 = v1[inv_s][back]
    if se:
        from scipy.stats import t as t_dist

        se_arr = residual_scale * np.sqrt(v1)
        tq = float(t_dist.ppf(1.0 - alpha / 2.0, df))
        lower = pred - tq * se_arr
        upper = pred + tq * se_arr

    fitted = fitted_s[back]
    residuals = resid_s[back]
    robust = rw[back]
    return LoessResult(fitted, residuals, x_eval, pred, se_arr, lower, upper,
                       float(df), tq, float(residual_scale), float(enp),
                       float(trace_hat), float(one_delta), float(two_delta),
                       robust, statistics)
