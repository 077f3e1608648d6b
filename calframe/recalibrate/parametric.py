"""Parametric recalibrators: Platt, temperature, beta (Kull et al.) and beta with V (Kelly & Smyth App. C)."""

from __future__ import annotations

import math
from functools import partial

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit, logsumexp

from .. import _errors as E
from .._params import check_bool, check_choice, check_int_range, check_positive_float
from ._inputs import Probs, as_labels, as_probs, as_variable, as_weights
from ._logistic import logistic_fit
from ._scalar import UNSET, ScalarRecalibrator, resolve
from .base import Recalibrator, Schema, register

#: Kumar et al.'s library: LogisticRegression(C=1e10) on logit(clip(p, 1e-12, 1 - 1e-12))
KUMAR_C = 1e10
KUMAR_EPS = 1e-12
#: betacal: LogisticRegression(C=99999999999) on clip(s, eps, 1 - eps), eps = float64 machine epsilon
BETACAL_C = 99999999999.0
#: Kelly & Smyth's notebooks replace s == 0 by 1e-4 and s == 1 by 1 - 1e-4 (nothing else)
KS_EDGE = 1e-4


#: the penalty C of the logistic fits: a finite number > 0, or None (unpenalised)
check_C = partial(check_positive_float, allow_none=True)
#: the replacement of s == 0 and s == 1 under clip="exact"
check_edge = partial(check_positive_float, below=0.5)


# ---------------------------------------------------------------------------
# Platt
# ---------------------------------------------------------------------------


@register
class Platt(ScalarRecalibrator):
    """Platt scaling: logistic regression of the target on one feature of the score.

    ``variant="kumar"`` (default): feature logit(clip(s, 1e-12, 1 - 1e-12)),
    C = 1e10, as Kumar et al.'s ``get_platt_scaler`` (a negligible penalty that
    keeps separable data finite; ``C=None`` is the strictly unpenalised fit).
    ``variant="kelly_smyth"``: feature = s itself and C = 1.0, scikit-learn's
    ``LogisticRegression()`` on the raw probability as in Kelly & Smyth's code.
    ``feature`` and ``C`` override the variant's choice.  Penalty as
    scikit-learn: ||coef||^2 / (2 C), intercept unpenalised.

    params: lens, n_classes, variant, feature ("logit" | "raw"), C, eps, coef, intercept.
    """

    method = "platt"
    needs_both = True
    takes_weights = True
    PARAMS = {**ScalarRecalibrator.PARAMS, "variant": partial(check_choice, choices=("kumar", "kelly_smyth")),
              "feature": partial(check_choice, choices=("logit", "raw")), "C": check_C}

    @classmethod
    def fit(cls, probs, labels, *, lens=None, variant: str = "kumar", feature: str = UNSET, C=UNSET,
            weights=None, meta=None) -> "Platt":
        """Fit on probs ((n,) binary or (n, K)) and labels; lens: 'class:c' or 'top1' (default class:1 / top1).
        weights: frequency weights, one per row (None: all 1), as scikit-learn's ``sample_weight``."""
        return super().fit(probs, labels, lens=lens, meta=meta, variant=variant, feature=feature, C=C,
                           weights=weights)

    @classmethod
    def _fit_scores(cls, s, t, *, n, variant="kumar", feature=UNSET, C=UNSET, w=None):
        # values checked by check_params (PARAMS); here the variant's defaults
        if variant == "kumar":
            feature, C = resolve(feature, "logit"), resolve(C, KUMAR_C)
        else:
            feature, C = resolve(feature, "raw"), resolve(C, 1.0)
        x = cls._feature(s, feature, KUMAR_EPS)
        coef, intercept = logistic_fit(x, t, C, func="platt.fit", weights=w)
        params = {"variant": variant, "feature": feature, "C": C, "eps": KUMAR_EPS,
                  "coef": float(coef[0]), "intercept": intercept}
        return params, {}, []

    @staticmethod
    def _feature(s: np.ndarray, feature: str, eps: float) -> np.ndarray:
        if feature == "raw":
            return s
        x = np.clip(s, eps, 1.0 - eps)
        return np.log(x / (1.0 - x))

    def _map(self, s, **extra):
        p = self.params
        x = self._feature(s, p["feature"], p["eps"])
        return expit(x * p["coef"] + p["intercept"])

    def _check_specific(self, sc: Schema) -> None:
        sc.param("variant", str, check=lambda v: v in ("kumar", "kelly_smyth"))
        sc.param("feature", str, check=lambda f: f in ("logit", "raw"))
        sc.param("C", float, allow_none=True, check=lambda c: c > 0)
        sc.param("eps", float, check=lambda e: 0 <= e < 0.5)
        sc.param("coef", float)
        sc.param("intercept", float)
        super()._check_specific(sc)


# ---------------------------------------------------------------------------
# Temperature
# ---------------------------------------------------------------------------

#: the inverse temperature 1/T is searched in [0, BETA_MAX]
BETA_MAX = 1e3
_TINY = np.finfo(np.float64).tiny


def _log_probs(P: np.ndarray) -> np.ndarray:
    return np.log(np.maximum(P, _TINY))


@register
class Temperature(Recalibrator):
    """Temperature scaling: softmax(log(g) / T), one T for all classes (binary input: K = 2).

    Fitted by minimising the mean negative log-likelihood.  In the inverse
    temperature beta = 1/T the NLL is convex (log-sum-exp of a linear
    function), so its derivative is monotone: scipy's ``brentq`` finds the
    root of the derivative in [0, 1e3] (bounded: beta = 0, i.e. T = inf and
    uniform outputs, when the scores are anti-informative; beta = 1e3 when the
    classes are separated).  log(0) is read as log(float64 tiny).

    params: lens ("probs"), n_classes, inv_temperature (beta = 1/T).
    ``temperature`` is 1/beta (inf for beta = 0).
    """

    method = "temperature"
    takes_weights = True

    @classmethod
    def fit(cls, probs, labels, *, weights=None, meta=None) -> "Temperature":
        """Fit on probs ((n,) binary or (n, K)) and integer labels; weights: frequency weights, one per row
        (None: all 1): the weighted mean NLL is minimised, so scaling every weight changes nothing."""
        pr = as_probs(probs, "temperature.fit")
        y = as_labels(labels, pr.n, pr.K, "temperature.fit")
        return cls.fit_probs(pr, y, "probs", meta=meta, weights=as_weights(weights, pr.n, "temperature.fit"))

    @classmethod
    def fit_probs(cls, pr: Probs, y: np.ndarray, lens: str = "probs", *, meta=None,
                  weights: np.ndarray | None = None) -> "Temperature":
        if pr.n == 0:
            raise E.no_rows_to_fit("temperature.fit")
        z = _log_probs(pr.P)
        zy = z[np.arange(pr.n), y]
        if weights is not None:  # rows of weight 0 left out; the mean below is the weighted mean
            keep = weights > 0
            sw = weights[keep] / np.max(weights)  # in (0, 1]: the sum cannot overflow
            z, zy, sw = z[keep], zy[keep], sw / np.sum(sw)
        else:
            sw = None

        def grad(beta: float) -> float:
            a = beta * z
            a -= a.max(axis=1, keepdims=True)
            w = np.exp(a)
            w /= w.sum(axis=1, keepdims=True)
            d = np.sum(w * z, axis=1) - zy
            return float(np.mean(d) if sw is None else np.sum(sw * d))

        g0 = grad(0.0)
        if g0 >= 0.0:
            beta = 0.0
        elif grad(BETA_MAX) <= 0.0:
            beta = BETA_MAX
        else:
            beta = float(brentq(grad, 0.0, BETA_MAX, xtol=1e-14, rtol=4 * np.finfo(float).eps, maxiter=500))
        return cls(params={"lens": "probs", "n_classes": pr.K, "inv_temperature": beta}, meta=meta or {})

    @property
    def temperature(self) -> float:
        b = self.params["inv_temperature"]
        return math.inf if b == 0 else 1.0 / b

    @property
    def output(self) -> str:
        return "probs"

    def predict(self, probs, **extra) -> np.ndarray:
        """(n, K) recalibrated probabilities; a 1-d binary input gives the 1-d positive-class probability."""
        pr = as_probs(probs, "temperature.predict", self.n_classes)
        return self._predict_probs(pr)

    def _predict_probs(self, pr: Probs, **extra) -> np.ndarray:
        a = self.params["inv_temperature"] * _log_probs(pr.P)
        out = np.exp(a - logsumexp(a, axis=1, keepdims=True))
        return out[:, 1].copy() if pr.p is not None else out

    def nll(self, probs, labels) -> float:
        """Mean negative log-likelihood of the recalibrated probabilities (the fitted objective)."""
        pr = as_probs(probs, "temperature.nll", self.n_classes)
        y = as_labels(labels, pr.n, pr.K, "temperature.nll")
        a = self.params["inv_temperature"] * _log_probs(pr.P)
        return float(np.mean(logsumexp(a, axis=1) - a[np.arange(pr.n), y]))

    def _check(self) -> None:
        sc = Schema(self)
        sc.param("n_classes", int, check=lambda k: k >= 2)
        sc.param("lens", str, check=lambda v: v == "probs")
        sc.param("inv_temperature", float, check=lambda b: 0 <= b <= BETA_MAX)  # T = 1/b > 0 (inf for b = 0)
        sc.only_arrays()
        sc.children(0)


# ---------------------------------------------------------------------------
# Beta calibration
# ---------------------------------------------------------------------------


def _beta_clip(s: np.ndarray, clip: str, edge: float) -> np.ndarray:
    if clip == "eps":
        eps = np.finfo(np.float64).eps
        return np.clip(s, eps, 1.0 - eps)
    s = s.copy()
    s[s == 0.0] = edge
    s[s == 1.0] = 1.0 - edge
    return s


def _beta_features(s: np.ndarray) -> np.ndarray:
    """[ln s, -ln(1 - s)] as an (n, 2) array (filled in place: the same values as column_stack)."""
    x = np.empty((s.shape[0], 2))
    np.log(s, out=x[:, 0])
    np.subtract(1.0, s, out=x[:, 1])
    np.log(x[:, 1], out=x[:, 1])
    np.negative(x[:, 1], out=x[:, 1])
    return x


def _beta_options(variant: str, C, constrained, clip):
    """The variant's defaults for the options not given (values checked by check_params)."""
    if variant == "betacal":
        return resolve(C, BETACAL_C), resolve(constrained, True), resolve(clip, "eps")
    return resolve(C, 1.0), resolve(constrained, False), resolve(clip, "exact")


#: the parameters beta and beta_v share
_BETA_PARAMS = {**ScalarRecalibrator.PARAMS, "variant": partial(check_choice, choices=("betacal", "kelly_smyth")),
                "C": check_C, "clip": partial(check_choice, choices=("eps", "exact")), "edge": check_edge}


@register
class Beta(ScalarRecalibrator):
    """Beta calibration (Kull et al. 2017): logistic regression on [ln s, -ln(1 - s)].

    mu(s) = expit(a ln s - b ln(1 - s) + c).

    ``variant="betacal"`` (default) reproduces ``betacal.BetaCalibration(parameters="abm")``:
    s clipped to [eps, 1 - eps] (float64 machine epsilon), C = 99999999999,
    and the a, b >= 0 handling of that package: if the joint fit gives a < 0
    the model is refitted on -ln(1 - s) alone (a = 0); else if b < 0 it is
    refitted on ln s alone (b = 0).  (As in betacal, the refitted remaining
    coefficient is not checked again.)
    ``variant="kelly_smyth"``: LogisticRegression(C=1) on the same features,
    unconstrained, with only s == 0 -> 1e-4 and s == 1 -> 1 - 1e-4
    (``clip="exact"``, ``edge=1e-4``), as Kelly & Smyth's notebooks.
    ``C``, ``constrained``, ``clip`` ("eps" | "exact") and ``edge`` override.

    params: lens, n_classes, variant, C, constrained, clip, edge, a, b, c.
    """

    method = "beta"
    needs_both = True
    takes_weights = True
    PARAMS = {**_BETA_PARAMS, "constrained": check_bool}

    @classmethod
    def fit(cls, probs, labels, *, lens=None, variant: str = "betacal", C=UNSET, constrained=UNSET,
            clip=UNSET, edge: float = KS_EDGE, weights=None, meta=None) -> "Beta":
        """Fit on probs ((n,) binary or (n, K)) and labels; lens: 'class:c' or 'top1' (default class:1 / top1).
        weights: frequency weights, one per row (None: all 1), as betacal's ``fit(sample_weight=)``."""
        return super().fit(probs, labels, lens=lens, meta=meta, variant=variant, C=C, constrained=constrained,
                           clip=clip, edge=edge, weights=weights)

    @classmethod
    def _fit_scores(cls, s, t, *, n, variant="betacal", C=UNSET, constrained=UNSET, clip=UNSET, edge=KS_EDGE,
                    w=None):
        C, constrained, clip = _beta_options(variant, C, constrained, clip)
        X = _beta_features(_beta_clip(s, clip, edge))
        # start from the identity map (a = b = 1, c = 0: logit of the fit = logit s), usually a few steps away
        coef, c = logistic_fit(X, t, C, func="beta.fit", init=np.array([1.0, 1.0, 0.0]), weights=w)
        a, b = float(coef[0]), float(coef[1])
        if constrained:
            if a < 0:
                coef, c = logistic_fit(X[:, 1], t, C, func="beta.fit", weights=w)
                a, b = 0.0, float(coef[0])
            elif b < 0:
                coef, c = logistic_fit(X[:, 0], t, C, func="beta.fit", weights=w)
                a, b = float(coef[0]), 0.0
        params = {"variant": variant, "C": C, "constrained": constrained, "clip": clip, "edge": edge,
                  "a": a, "b": b, "c": c}
        return params, {}, []

    def _map(self, s, **extra):
        p = self.params
        X = _beta_features(_beta_clip(s, p["clip"], p["edge"]))
        return expit(X[:, 0] * p["a"] + X[:, 1] * p["b"] + p["c"])

    def _check_specific(self, sc: Schema) -> None:
        sc.param("variant", str, check=lambda v: v in ("betacal", "kelly_smyth"))
        sc.param("C", float, allow_none=True, check=lambda c: c > 0)
        constrained = sc.param("constrained", bool)
        sc.param("clip", str, check=lambda c: c in ("eps", "exact"))
        sc.param("edge", float, check=lambda e: 0 < e < 0.5)
        a, b, _ = (sc.param(k, float) for k in ("a", "b", "c"))
        if constrained and min(a, b) < 0 and a != 0 and b != 0:
            sc.fail(f"parameters 'a' = {a!r} and 'b' = {b!r}: a constrained fit has a, b >= 0 or one of them 0")
        super()._check_specific(sc)


@register
class BetaV(ScalarRecalibrator):
    """Beta calibration with a variable (Kelly & Smyth App. C): logistic regression on

        [ln s, -ln(1 - s), v', v'^2, ..., v'^degree],   v' = (v - centre) / scale

    (degree 1 or 2; unconstrained coefficients).  With ``standardize=True``
    (default) centre/scale are the mean and standard deviation of v on the
    calibration rows (for an unpenalised fit this changes nothing but the
    conditioning: the span of 1, v, v^2 is the same); ``standardize=False``
    uses v as is.  ``variant="betacal"`` (default): clip s to [eps, 1 - eps]
    and C = 99999999999; ``variant="kelly_smyth"``: C = 1, the exact 0/1 ->
    1e-4 clip and ``standardize=False`` (scikit-learn's LogisticRegression()
    on raw v, v^2 as in the paper's notebooks).  Binary scores only (any
    scalar lens).

    params: lens, n_classes, variant, degree, C, clip, edge, standardize,
    v_center, v_scale, coef (list: a, b, d_1..d_degree), intercept.
    """

    method = "beta_v"
    needs_both = True
    takes_weights = True
    extras = ("v",)
    PARAMS = {**_BETA_PARAMS, "degree": partial(check_int_range, low=1, high=2), "standardize": check_bool}

    @classmethod
    def fit(cls, probs, labels, v, *, degree: int = 1, lens=None, variant: str = "betacal", C=UNSET,
            clip=UNSET, edge: float = KS_EDGE, standardize=UNSET, weights=None, meta=None) -> "BetaV":
        """Fit on probs ((n,) binary or (n, K)), labels and the variable v (n,); weights: frequency weights
        (None: all 1; the standardisation then uses the weighted mean and standard deviation of v)."""
        return super().fit(probs, labels, lens=lens, meta=meta, v=v, degree=degree, variant=variant, C=C,
                           clip=clip, edge=edge, standardize=standardize, weights=weights)

    @classmethod
    def _fit_scores(cls, s, t, *, n, v=None, degree=1, variant="betacal", C=UNSET, clip=UNSET, edge=KS_EDGE,
                    standardize=UNSET, w=None):
        v = as_variable(v, n, "beta_v.fit")
        C, _, clip = _beta_options(variant, C, False, clip)
        standardize = resolve(standardize, variant != "kelly_smyth")
        if standardize and w is not None:  # the frequency-weighted mean and (population) standard deviation
            center = float(np.sum(w * v) / np.sum(w))
            scale = float(np.sqrt(np.sum(w * (v - center) ** 2) / np.sum(w)))
            if not scale > 0:
                scale = 1.0
        elif standardize:
            center = float(np.mean(v))
            scale = float(np.std(v))
            if not scale > 0:
                scale = 1.0
        else:
            center, scale = 0.0, 1.0
        X = cls._design(s, v, clip, edge, center, scale, degree)
        coef, c = logistic_fit(X, t, C, func="beta_v.fit", weights=w)
        params = {"variant": variant, "degree": degree, "C": C, "clip": clip, "edge": edge,
                  "standardize": standardize, "v_center": center, "v_scale": scale,
                  "coef": [float(x) for x in coef], "intercept": c}
        return params, {}, []

    @staticmethod
    def _design(s, v, clip, edge, center, scale, degree):
        u = (v - center) / scale
        cols = [_beta_features(_beta_clip(s, clip, edge))] + [(u ** k).reshape(-1, 1) for k in range(1, degree + 1)]
        return np.hstack(cols)

    def _map(self, s, *, n, v=None, **extra):
        p = self.params
        v = as_variable(v, n, "beta_v.predict")
        X = self._design(s, v, p["clip"], p["edge"], p["v_center"], p["v_scale"], p["degree"])
        return expit(X @ np.asarray(p["coef"]) + p["intercept"])

    def _check_specific(self, sc: Schema) -> None:
        sc.param("variant", str, check=lambda v: v in ("betacal", "kelly_smyth"))
        deg = sc.param("degree", int, check=lambda d: d in (1, 2))
        sc.param("C", float, allow_none=True, check=lambda c: c > 0)
        sc.param("clip", str, check=lambda c: c in ("eps", "exact"))
        sc.param("edge", float, check=lambda e: 0 < e < 0.5)
        sc.param("standardize", bool)
        sc.param("v_center", float)
        sc.param("v_scale", float, check=lambda x: x > 0)
        coef = sc.param("coef", list, check=lambda c: len(c) == 2 + deg)
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in coef):
            sc.fail("coef must be a list of numbers")
        self.params["coef"] = [float(x) for x in coef]
        sc.param("intercept", float)
        super()._check_specific(sc)
