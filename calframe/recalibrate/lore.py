"""LoRe: local recalibration (Luo et al.; SPEC section 5)."""

from __future__ import annotations

from functools import partial

import numpy as np

from .._errors import InvalidValueError, ParameterError, rows
from .._imports import lazy_function

lore_apply = lazy_function("calframe._kernels.local", "lore_apply")
kernel_sums = lazy_function("calframe._kernels.local", "kernel_sums")
from .._limits import check_cells
from .._params import check_bool, check_choice, check_positive_float
from ..binning import uniform_bins
from ._inputs import Probs, as_labels, as_probs, as_weights, check_lens, lens_score, lens_view, parse_lens
from .binned import check_n_bins
from .base import Recalibrator, Schema, register


def _features(features, n: int, func: str, d: int | None = None) -> np.ndarray:
    if features is None:
        raise ParameterError(f"{func}: LoRe needs the feature array features=... (n, d).")
    f = np.asarray(features)
    if f.dtype.kind not in "fiub":
        raise InvalidValueError(f"{func}: features must be numeric, got dtype {f.dtype}.")
    f = np.ascontiguousarray(f, dtype=np.float64)
    if f.ndim == 1:
        f = f.reshape(-1, 1)
    if f.ndim != 2 or f.shape[0] != n or f.shape[1] < 1:
        raise InvalidValueError(f"{func}: features must be an (n, d) array with n = {n} rows; got shape {f.shape}.")
    if d is not None and f.shape[1] != d:
        raise InvalidValueError(f"{func}: the recalibrator was fitted on {d} feature columns; got {f.shape[1]}.")
    bad = ~np.isfinite(f).all(axis=1)
    if bad.any():
        raise InvalidValueError(f"{func}: features must be finite; {rows(int(bad.sum()))} hold NaN or infinity.")
    return f


def conf_bins(conf: np.ndarray, n_bins: int) -> np.ndarray:
    """uniform(B) bins of [0, 1], left-closed (SPEC section 1): the number of inner edges <= conf."""
    return uniform_bins(conf, n_bins, "left").astype(np.int64)


def weighted_lore_apply(ref: np.ndarray, correct: np.ndarray, bins: np.ndarray, weights: np.ndarray,
                        f: np.ndarray, qb: np.ndarray, s: np.ndarray, gamma: float, method: str) -> np.ndarray:
    """LoRe with stored row weights: sum_i k w_i y'_i / sum_i k w_i over the query's bin, by
    ``calframe._kernels.local.kernel_sums`` on the two value columns (w y', w) (their ratio; the kernel's own
    den only says whether the bin holds a stored row). The weights are first scaled by a power of two (exact:
    the ratio's bits do not change) so that the largest lies in [1, 2). A query whose bin is empty keeps its
    confidence.

    >>> import numpy as np
    >>> X = np.array([[0.0], [1.0], [5.0]])
    >>> weighted_lore_apply(X, np.array([1.0, 0.0, 1.0]), np.zeros(3, np.int64), np.array([3.0, 1.0, 2.0]),
    ...                     np.array([[0.0]]), np.zeros(1, np.int64), np.array([0.5]), 1e9, "direct").round(6)
    array([0.833333])
    """
    w = np.ldexp(weights, -int(np.frexp(weights.max())[1] - 1)) if weights.size else weights
    num, den = kernel_sums(ref, bins, np.column_stack((w * correct, w)), f, qb, ref.shape[1] * float(gamma),
                           method, "lore")
    res = np.array(s, dtype=np.float64, copy=True).reshape(-1)
    ok = (den > 0) & (num[:, 1] > 0)
    res[ok] = num[ok, 0] / num[ok, 1]
    return res


@register
class LoRe(Recalibrator):
    """Local recalibration (Luo et al.), SPEC section 5.

    For a new row x with lensed confidence in bin beta(x) (``uniform(n_bins)``
    on the lensed score, left-closed; top1 lens by default),

        g''(x) = sum_{i in beta_D(x)} k(x, x_i) y'_i / sum_{i in beta_D(x)} k(x, x_i),
        k(x, x') = exp(-||phi(x) - phi(x')||_1 / (d * gamma)),

    over the stored recalibration rows D (their features, confidence bins and
    correctness y'), computed exactly by ``calframe._kernels.local.lore_apply``
    (distances shifted by the nearest one, so any gamma works: gamma -> inf
    gives histogram binning per confidence bin, gamma -> 0 the nearest
    neighbour's y').  A row whose bin is empty in D keeps its confidence.
    Only the confidence is reset: ``predict`` returns the recalibrated lensed
    score (the top-label confidence for ``"top1"``); the predicted class is
    unchanged.  ``standardize=True`` centres and scales each feature column
    by its calibration mean and standard deviation (stored) before the kernel.

    With frequency weights (``weights=``, docs/spec.md "Weights": a row of
    weight k counts as k rows) both sums weigh row i by w_i, and ``standardize``
    takes the weighted mean and standard deviation: the function of the rows
    repeated w_i times (tests/test_weighted_fits.py). Rows of weight 0 are not
    stored; the others' weights are (array ``weights``), unless they are all
    equal, when the function is the unweighted one on the rows of positive
    weight and nothing more is stored.

    params: lens, n_classes, gamma, n_bins, standardize, kernel_method.
    arrays: features (n, d), bins (n,), correct (n,) [, center (d,), scale (d,)] [, weights (n,)].
    """

    method = "lore"
    takes_weights = True
    PARAMS = {"gamma": check_positive_float, "n_bins": check_n_bins, "lens": check_lens, "standardize": check_bool,
              "kernel_method": partial(check_choice, choices=("auto", "tree", "brute", "direct"))}

    @classmethod
    def fit(cls, probs, labels, features, *, gamma: float = 0.2, n_bins: int = 15, lens: str | None = "top1",
            standardize: bool = False, kernel_method: str = "auto", weights=None, meta=None) -> "LoRe":
        """Store the recalibration rows: probs ((n,) or (n, K)), labels, features (n, d); ``weights``: frequency
        weights (None: all 1).

        >>> import numpy as np
        >>> p = np.array([0.2, 0.3, 0.7, 0.8]); y = np.array([0, 1, 1, 1]); X = p.reshape(-1, 1)
        >>> a = LoRe.fit(p, y, X, n_bins=1, weights=[2, 1, 0, 1])
        >>> b = LoRe.fit(p[[0, 0, 1, 3]], y[[0, 0, 1, 3]], X[[0, 0, 1, 3]], n_bins=1)
        >>> bool(np.allclose(a.predict(p, features=X), b.predict(p, features=X), rtol=0, atol=1e-12))
        True
        """
        func = "lore.fit"
        kw = cls.check_params({"gamma": gamma, "n_bins": n_bins, "lens": lens, "standardize": standardize,
                               "kernel_method": kernel_method})
        gamma, n_bins, standardize = kw["gamma"], kw["n_bins"], kw["standardize"]
        check_cells(1, n_bins, 1, func)  # the bin edges
        pr = as_probs(probs, func)
        y = as_labels(labels, pr.n, pr.K, func)
        f = _features(features, pr.n, func)
        w = as_weights(weights, pr.n, func)
        lens_ = parse_lens(lens, pr.K, func)
        s, t = lens_view(pr, y, lens_)
        if w is not None:  # rows of weight 0 are absent; equal weights are no weights
            keep = w > 0
            s, t, f, w = s[keep], t[keep], f[keep], w[keep]
            if np.all(w == w[0]):
                w = None
        arrays = {"bins": conf_bins(s, n_bins), "correct": t}
        if w is not None:
            arrays["weights"] = w
        if standardize:
            if w is None:
                center = f.mean(axis=0)
                scale = f.std(axis=0)
            else:
                center = np.average(f, axis=0, weights=w)
                scale = np.sqrt(np.average((f - center) ** 2, axis=0, weights=w))
            scale[~(scale > 0)] = 1.0
            arrays.update(center=center, scale=scale)
            f = (f - center) / scale
        arrays["features"] = f
        params = {"lens": lens_, "n_classes": pr.K, "gamma": gamma, "n_bins": n_bins,
                  "standardize": standardize, "kernel_method": kernel_method}
        return cls(params=params, arrays=arrays, meta=meta or {})

    def predict(self, probs, features=None, **extra) -> np.ndarray:
        """Recalibrated lensed confidence (n,) for probs ((n,) or (n, K)) and features (n, d)."""
        pr = as_probs(probs, "lore.predict", self.n_classes)
        return self._predict_probs(pr, features=features)

    def _predict_probs(self, pr: Probs, features=None, **extra) -> np.ndarray:
        p = self.params
        ref = self.arrays["features"]
        f = _features(features, pr.n, "lore.predict", ref.shape[1])
        if p["standardize"]:
            f = (f - self.arrays["center"]) / self.arrays["scale"]
        s = lens_score(pr, p["lens"])
        qb = conf_bins(s, p["n_bins"])
        if "weights" in self.arrays:
            return weighted_lore_apply(ref, self.arrays["correct"], self.arrays["bins"], self.arrays["weights"], f,
                                       qb, s, p["gamma"], p["kernel_method"])
        return lore_apply(ref, self.arrays["correct"], self.arrays["bins"], f, qb, s, p["gamma"],
                          p["kernel_method"])

    def _check(self) -> None:
        sc = Schema(self)
        K = sc.param("n_classes", int, check=lambda k: k >= 2)
        lens = sc.param("lens", str)
        try:
            parse_lens(lens, K, "lore")
        except Exception:
            sc.fail(f"lens {lens!r} is invalid for {K} classes")
        sc.param("gamma", float, check=lambda g: g > 0 and np.isfinite(g))
        B = sc.param("n_bins", int, check=lambda b: b >= 1)
        std = sc.param("standardize", bool)
        sc.param("kernel_method", str, check=lambda m: m in ("auto", "tree", "brute", "direct"))
        f = sc.array("features", "float64", 2)
        n, d = f.shape
        if d < 1:
            sc.fail("features must have at least one column")
        b = sc.array("bins", "int64", 1, shape=(n,))
        c = sc.array("correct", "float64", 1, shape=(n,))
        names = ["features", "bins", "correct"]
        if std:
            sc.array("center", "float64", 1, shape=(d,))
            if np.any(sc.array("scale", "float64", 1, shape=(d,)) <= 0):
                sc.fail("array 'scale' must be positive (a feature's standard deviation, 1 where it is 0)")
            names += ["center", "scale"]
        if "weights" in self.arrays:
            w = sc.array("weights", "float64", 1, shape=(n,))
            if not np.all(np.isfinite(w) & (w > 0)):
                sc.fail("array 'weights' must be finite and positive (rows of weight 0 are not stored)")
            names.append("weights")
        sc.only_arrays(*names)
        if n and (b.min() < 0 or b.max() >= B):
            sc.fail(f"bins must lie in 0..{B - 1}")
        if not np.all((c == 0) | (c == 1)):
            sc.fail("array 'correct' must hold 0 or 1 only")
        sc.children(0)
