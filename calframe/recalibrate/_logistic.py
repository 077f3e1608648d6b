"""Binary logistic regression by penalised Newton (IRLS) with a backtracking line search.

Minimises, over w (m coefficients) and an intercept b,

    sum_i [log(1 + exp(eta_i)) - y_i eta_i] + ||w||^2 / (2 C),    eta = X w + b

which is scikit-learn's ``LogisticRegression(C=C)`` objective (the intercept
is not penalised). ``C=None`` drops the penalty (the maximum-likelihood fit).
The problem is convex; Newton converges quadratically, so the result is the
optimum to ~1e-13 relative, tighter than scikit-learn's L-BFGS at its default
tolerance (which is why comparisons with scikit-learn state a tolerance).
"""

from __future__ import annotations

import numpy as np

from .. import _errors as E
from .._errors import InvalidValueError, rows
from .._imports import LazyModule

LK = LazyModule("calframe._kernels.logistic")  # numba kernels: imported at first use


def _objective(Z: np.ndarray, y: np.ndarray, sw: np.ndarray, theta: np.ndarray, pen: np.ndarray) -> float:
    """The penalised objective (one numba pass over the rows)."""
    return float(LK.objective(Z, y, sw, theta, LK.n_chunks(Z.shape[0])) + 0.5 * np.sum(pen * theta * theta))


def logistic_fit(
    X: np.ndarray,
    y: np.ndarray,
    C: float | None = None,
    *,
    fit_intercept: bool = True,
    max_iter: int = 200,
    func: str = "recalibrate",
    init: np.ndarray | None = None,
    weights: np.ndarray | None = None,
) -> tuple[np.ndarray, float]:
    """(coef (m,), intercept) of the penalised logistic fit; see the module docstring.

    Raises InvalidValueError when the labels hold one class only, when an
    unpenalised fit (C=None) meets classes completely separated by X (the
    maximum-likelihood coefficients are infinite; pass a finite C), or when the
    fit does not converge in max_iter steps (the message's advice depends on C).
    ``weights``: frequency weights (non-negative, checked by the caller): row i's loss counts w_i times,
    as scikit-learn's ``sample_weight`` (the penalty is not scaled, so multiplying every weight by c is
    the fit with C * c); rows of weight 0 are left out.
    Separable data with a finite C fits: the kernel computes mu and 1 - mu
    each without rounding to 1 (see calframe._kernels.logistic).
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X.reshape(-1, 1)
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    if weights is not None:
        sw = np.asarray(weights, dtype=np.float64).reshape(-1)
        keep = sw > 0
        if not keep.all():
            X, y, sw = X[keep], y[keep], sw[keep]
        sw = np.ascontiguousarray(sw)
    else:
        sw = np.ones(y.shape[0])
    n, m = X.shape
    if n == 0:
        raise E.no_rows_to_fit(func)
    if fit_intercept and (np.all(y == y[0])):
        raise InvalidValueError(
            f"{func}: the labels hold one class only ({int(y[0])}) in {rows(n)}; a logistic fit needs both classes."
        )
    if fit_intercept:
        Z = np.empty((n, m + 1))
        Z[:, :m] = X
        Z[:, m] = 1.0
    else:
        Z = np.ascontiguousarray(X)
    p = Z.shape[1]
    pen = np.zeros(p)
    if C is not None:
        pen[:m] = 1.0 / float(C)
    theta = np.zeros(p) if init is None else np.array(init, dtype=np.float64).reshape(p)
    nch = LK.n_chunks(n)

    def terms(th: np.ndarray, with_f: bool = True) -> tuple[float, np.ndarray, np.ndarray]:
        """Penalised objective (NaN unless with_f), gradient and Hessian at th in one pass over the rows."""
        f0, g0, h0 = LK.newton_terms(Z, y, sw, th, nch, with_f)
        h0[np.diag_indices(p)] += pen
        return float(f0 + 0.5 * np.sum(pen * th * th)), g0 + pen * th, h0

    f, g, H = terms(theta)
    converged = False
    prev_dec = np.inf  # the last decrement of a full (quadratic-phase) step
    for _ in range(max_iter):
        try:
            step = np.linalg.solve(H, g)
            if not np.all(np.isfinite(step)):
                raise np.linalg.LinAlgError
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(H, g, rcond=None)[0]
        dec = float(g @ step)  # Newton decrement squared (>= 0 for a PSD Hessian)
        if not (dec > 0.0):
            converged = True
            break
        if dec < min(1e-8 * max(1.0, abs(f)), 1e-2):  # lambda^2 < 0.01: full steps are safe (self-concordance)
            # the quadratic region: full Newton steps; objective differences are below the
            # rounding of the sum here, so a line search would only stop the iteration early.
            # A decrement that no longer falls is the rounding floor of the gradient: along a direction
            # only the tiny penalty curves (e.g. beta's two features on scores that are all 0 or 1) the
            # steps then cycle between two points of the same objective, so stop.
            stalled = dec >= prev_dec
            prev_dec = dec
            theta = theta - step
            if (stalled or dec < 1e-24 * max(1.0, abs(f))
                    or np.max(np.abs(step)) <= 1e-15 * (1.0 + np.max(np.abs(theta)))):
                if C is None:  # the separation check below needs the objective at the optimum
                    f = _objective(Z, y, sw, theta, pen)
                converged = True
                break
            # f keeps the last value computed: here it only scales the stopping thresholds
            _, g, H = terms(theta, with_f=False)
            continue
        # damped phase: try the full step with one fused pass (its gradient and Hessian are reused when it
        # is accepted); backtrack with objective-only passes otherwise
        cand = theta - step
        fc, gc, Hc = terms(cand)
        t = 1.0
        if not fc <= f - 1e-4 * dec:
            gc = None
            for _ls in range(60):
                t *= 0.5
                cand = theta - t * step
                fc = _objective(Z, y, sw, cand, pen)
                if fc <= f - 1e-4 * t * dec:
                    break
            else:
                converged = True  # no decrease possible at machine precision
                break
        small = np.max(np.abs(t * step)) <= 1e-13 * (1.0 + np.max(np.abs(theta)))
        theta = cand
        if small or dec < 1e-28 * max(1.0, abs(fc)):
            f = fc
            converged = True
            break
        if gc is None:
            f, g, H = terms(theta)
        else:
            f, g, H = fc, gc, Hc
    # complete separation: the unpenalised likelihood tends to 1 as |coef| -> inf (Newton stops at a
    # huge, arbitrary point); quasi-separation is not detected and gives large finite coefficients
    separated = C is None and f < 1e-6
    if separated:
        raise InvalidValueError(
            f"{func}: the classes in the {rows(n)} are completely separated by the score, so the unpenalised "
            "(C=None) logistic coefficients are infinite. Pass a finite C (e.g. C=1e10, a negligible penalty)."
        )
    if not converged or not np.all(np.isfinite(theta)):
        advice = (
            "the classes may be (nearly) separated by the score, so the unpenalised coefficients grow without "
            "bound. Pass a finite C (e.g. C=1e10)."
            if C is None
            else f"the scores may hold extreme values (largest |feature| {float(np.max(np.abs(X))):.6g}). "
            f"Check them, or pass a smaller C than {C:g} (a stronger penalty)."
        )
        raise InvalidValueError(
            f"{func}: the logistic fit on {rows(n)} did not converge in {max_iter} Newton steps; {advice}"
        )
    if fit_intercept:
        return theta[:m].copy(), float(theta[m])
    return theta.copy(), 0.0
