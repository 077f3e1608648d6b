"""Non-parametric recalibrators: histogram binning, isotonic regression, scaling-binning (Kumar §4.1)."""

from __future__ import annotations

from functools import partial

import numpy as np
from scipy.optimize import isotonic_regression

from .. import _errors as E
from .._errors import InvalidValueError
from ..binning import Binning, edge_table, weighted_take
from .._params import check_bool, check_int_range
from ..metrics import check_seed
from ._inputs import Probs, lens_view
from ._scalar import UNSET, ScalarRecalibrator
from .base import Schema, register
from .parametric import KUMAR_C, Platt, check_C


def check_seed_param(func: str, name: str, seed, allow_none: bool = True):
    """``metrics.check_seed`` in the (func, name, value) form of the parameter checks."""
    return check_seed(func, seed, allow_none)


def equal_mass_edges(s: np.ndarray, n_bins: int) -> np.ndarray:
    """Kumar et al.'s ``get_equal_bins``: upper bin edges, the last one 1.0.

    Sorted scores are split into min(n_bins, n) parts by ``numpy.array_split``;
    each inner edge is the midpoint between a part's last value and the next
    part's first value; duplicates are removed.  Bins are right-closed:
    bin j = (e_{j-1}, e_j] (the first one [0, e_0]), i.e.
    ``numpy.searchsorted(edges, s, side="left")``.
    """
    if len(s) == 0:
        raise InvalidValueError("no rows to build bins from.")
    ss = np.sort(s, kind="stable")
    parts = np.array_split(ss, min(n_bins, len(ss)))
    edges = [(parts[i][-1] + parts[i + 1][0]) / 2.0 for i in range(len(parts) - 1)]
    edges.append(1.0)
    return np.unique(np.asarray(edges, dtype=np.float64))


def weighted_equal_mass_edges(s: np.ndarray, n_bins: int, w: np.ndarray) -> np.ndarray:
    """``equal_mass_edges`` with frequency weights: the edges of the scores with row i repeated w_i times.

    The metrics' rule (:func:`calframe.binning.edge_table` on :func:`calframe.binning.weighted_take`): the
    sorted scores are laid end to end, row i taking a stretch of length w_i of [0, W) (W the weights' sum,
    rows of weight 0 none). ``numpy.array_split`` of W positions into B = min(n_bins, max(1, floor(W))) parts
    starts part k at c_k = k q + min(k, r) (q = floor(W / B), r = W - B q); the inner edge k is the midpoint
    of the scores at positions c_k - 1 and c_k; the last edge is 1.0. For integer weights these are the
    positions of the repeated array, so the edges are ``equal_mass_edges`` of it, bit for bit; other weights
    use the same formula.
    """
    if not (w > 0).any():
        raise InvalidValueError("no rows of positive weight to build bins from.")
    totals, take = weighted_take(np.asarray(s, dtype=np.float64), np.asarray(w, dtype=np.float64), None, 1)
    row = edge_table(totals, Binning("equal_mass", int(n_bins)), take)[0]
    inner = row[~np.isnan(row)][:-1]
    return np.unique(np.append(inner, 1.0))


def bin_index(edges: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Right-closed bin of each score (scores above the last edge go to the last bin)."""
    return np.minimum(np.searchsorted(edges, s, side="left"), len(edges) - 1)


def bin_means(edges: np.ndarray, s: np.ndarray, values: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """Kumar et al.'s ``get_histogram_calibrator`` bin values: the mean of ``values`` per bin of s.

    An empty bin gets the midpoint of its edges (the first bin: e_0 / 2), as
    that library does.  Means are numpy means of each bin's values in row
    order, so they equal the library's bit for bit. With frequency weights
    ``w``: each bin's weighted mean (a bin of weight 0 is empty).
    """
    idx = bin_index(edges, s)
    if w is not None:
        wt = np.bincount(idx, weights=w, minlength=len(edges))
        wv = np.bincount(idx, weights=w * np.asarray(values, dtype=np.float64), minlength=len(edges))
        mid = np.concatenate(([edges[0] / 2.0], (edges[1:] + edges[:-1]) / 2.0))
        return np.where(wt > 0, wv / np.where(wt > 0, wt, 1.0), mid)
    order = np.argsort(idx, kind="stable")
    sv = np.asarray(values, dtype=np.float64)[order]
    counts = np.bincount(idx, minlength=len(edges))
    starts = np.concatenate(([0], np.cumsum(counts)))
    out = np.empty(len(edges))
    for j in range(len(edges)):
        if counts[j]:
            out[j] = np.mean(sv[starts[j]:starts[j + 1]])
        else:
            out[j] = edges[0] / 2.0 if j == 0 else (edges[j] + edges[j - 1]) / 2.0
    return out


#: a number of bins: an int >= 1
check_n_bins = partial(check_int_range, low=1)


@register
class Histogram(ScalarRecalibrator):
    """Histogram binning: equal-mass bins of the score (``equal_mass_edges``), output = the bin's mean target.

    The same as uncertainty-calibration's ``HistogramCalibrator`` (lens
    class:1) and ``HistogramTopCalibrator`` (lens top1), bit for bit.

    params: lens, n_classes, n_bins.  arrays: edges (upper edges), values.
    """

    method = "histogram"
    takes_weights = True
    PARAMS = {**ScalarRecalibrator.PARAMS, "n_bins": check_n_bins}

    @classmethod
    def fit(cls, probs, labels, *, n_bins: int = 15, lens=None, weights=None, meta=None) -> "Histogram":
        """Fit on probs ((n,) binary or (n, K)) and labels; lens: 'class:c' or 'top1' (default class:1 / top1).
        weights: frequency weights (None: all 1): the edges and bin means of the rows repeated w_i times
        (``weighted_equal_mass_edges``)."""
        return super().fit(probs, labels, lens=lens, meta=meta, n_bins=n_bins, weights=weights)

    @classmethod
    def _fit_scores(cls, s, t, *, n, n_bins=15, w=None):
        if w is None:
            edges = equal_mass_edges(s, n_bins)
        else:
            edges = weighted_equal_mass_edges(s, n_bins, w)
        return {"n_bins": n_bins}, {"edges": edges, "values": bin_means(edges, s, t, w)}, []

    def _map(self, s, **extra):
        return self.arrays["values"][bin_index(self.arrays["edges"], s)]

    def _check_specific(self, sc: Schema) -> None:
        _check_edges(sc, sc.param("n_bins", int, check=lambda b: b >= 1))
        sc.children(0)


def _check_edges(sc: Schema, n_bins: int) -> None:
    """1 to n_bins upper bin edges in [0, 1], strictly increasing, the last one 1; one value in [0, 1] per bin."""
    e = sc.probabilities("edges")
    if not 1 <= len(e) <= n_bins or e[-1] != 1.0:
        sc.fail(f"array 'edges' must hold 1 to n_bins = {n_bins} upper bin edges, the last one 1.0; it holds "
                f"{len(e)}" + (f" ending at {float(e[-1])!r}" if len(e) else ""))
    sc.increasing("edges", e)
    sc.array("values", "float64", 1, shape=(len(e),))
    sc.probabilities("values")
    sc.only_arrays("edges", "values")


def isotonic_steps(s: np.ndarray, t: np.ndarray, w: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The isotonic (increasing) regression of ``t`` on ``s``, with row weights ``w``: (x, y), the distinct scores
    that carry it and its values there (:class:`Isotonic`). Rows of weight 0 are left out (they change nothing,
    and scikit-learn's ``IsotonicRegression`` drops them), tied scores are pooled (their weighted mean target,
    weight the sum of theirs), as scikit-learn and ``scipy.optimize.isotonic_regression``."""
    if w is not None:
        keep = w > 0
        s, t, w = s[keep], t[keep], w[keep]
    ux, inv = np.unique(s, return_inverse=True)
    inv = inv.reshape(-1)
    if w is None:
        wc = np.bincount(inv, minlength=len(ux)).astype(np.float64)
        ym = np.bincount(inv, weights=t, minlength=len(ux)) / wc
    else:
        wc = np.bincount(inv, weights=w, minlength=len(ux))
        ym = np.bincount(inv, weights=w * t, minlength=len(ux)) / wc
    yf = isotonic_regression(ym, weights=wc, increasing=True).x
    keep = np.ones(len(ux), dtype=bool)
    if len(ux) > 2:
        keep[1:-1] = (yf[1:-1] != yf[:-2]) | (yf[1:-1] != yf[2:])
    return ux[keep].copy(), np.asarray(yf[keep], dtype=np.float64)


def isotonic_map(x: np.ndarray, y: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The fitted isotonic function (x, y) at the scores ``s``: linear between the thresholds, clipped outside
    (scikit-learn's ``IsotonicRegression(out_of_bounds="clip")``)."""
    if len(x) == 1:
        return np.full(len(s), y[0])
    return np.interp(np.clip(s, x[0], x[-1]), x, y)


@register
class Isotonic(ScalarRecalibrator):
    """Isotonic (increasing) regression of the target on the score.

    Scores are aggregated per distinct value (mean target, weight = count,
    or with ``weights`` the weighted mean and the weights' sum; rows of
    weight 0 are left out), ``scipy.optimize.isotonic_regression`` fits the
    increasing step values, and predict interpolates linearly between the
    distinct scores, clipping scores outside the fitted range:
    scikit-learn's ``IsotonicRegression(out_of_bounds="clip")``, with
    ``sample_weight=weights``. Interior points of constant runs are dropped
    (they do not change the interpolation), as scikit-learn does.

    params: lens, n_classes.  arrays: x (increasing thresholds), y (values).
    """

    method = "isotonic"
    takes_weights = True

    @classmethod
    def fit(cls, probs, labels, *, lens=None, weights=None, meta=None) -> "Isotonic":
        """Fit on probs ((n,) binary or (n, K)) and labels; lens: 'class:c' or 'top1' (default class:1 / top1);
        weights: one non-negative weight per row (None: all 1)."""
        return super().fit(probs, labels, lens=lens, meta=meta, weights=weights)

    @classmethod
    def _fit_scores(cls, s, t, *, n, w=None):
        if n == 0:
            raise E.no_rows_to_fit("isotonic.fit")
        x, y = isotonic_steps(s, t, w)
        return {}, {"x": x, "y": y}, []

    def _map(self, s, **extra):
        return isotonic_map(self.arrays["x"], self.arrays["y"], s)

    def _check_specific(self, sc: Schema) -> None:
        x = sc.probabilities("x")
        if len(x) == 0:
            sc.fail("array 'x' is empty")
        sc.increasing("x", x)
        sc.array("y", "float64", 1, shape=(len(x),))
        sc.increasing("y", sc.probabilities("y"), strict=False)
        sc.only_arrays("x", "y")
        sc.children(0)


@register
class ScalingBinning(ScalarRecalibrator):
    """The scaling-binning calibrator (Kumar et al. §4.1).

    1. Platt scaling g (Kumar's variant, ``Platt`` with C = 1e10 on the logit)
       fitted on T1;
    2. equal-mass bins (``equal_mass_edges``) of g(s) on T2;
    3. output the mean of g(s) over the T3 rows in g(s)'s bin (an empty bin:
       the midpoint of its edges).

    ``split=True`` (default, the paper's algorithm): T1, T2, T3 are the three
    parts of ``numpy.array_split(numpy.random.default_rng(seed).permutation(n), 3)``.
    ``split=False`` uses all rows for all three steps, which is exactly
    uncertainty-calibration's ``PlattBinnerCalibrator`` (lens class:1) and
    ``PlattBinnerTopCalibrator`` (lens top1).

    params: lens, n_classes, n_bins, split, seed.  arrays: edges, values.
    children: [the Platt scaler].
    """

    method = "scaling_binning"
    PARAMS = {**ScalarRecalibrator.PARAMS, "n_bins": check_n_bins, "split": check_bool,
              "seed": partial(check_seed_param, allow_none=False), "C": check_C}

    @classmethod
    def fit(cls, probs, labels, *, n_bins: int = 10, split: bool = True, seed: int = 0, lens=None,
            C=UNSET, meta=None) -> "ScalingBinning":
        """Fit on probs ((n,) binary or (n, K)) and labels; lens: 'class:c' or 'top1' (default class:1 / top1)."""
        return super().fit(probs, labels, lens=lens, meta=meta, n_bins=n_bins, split=split, seed=seed, C=C)

    @classmethod
    def fit_probs(cls, pr, y, lens, *, meta=None, n_bins=10, split=True, seed=0, C=UNSET):
        if split:
            if pr.n < 3:
                raise InvalidValueError("scaling_binning.fit: split=True needs at least 3 rows.")
            t1, t2, t3 = np.array_split(np.random.default_rng(int(seed)).permutation(pr.n), 3)
        else:
            t1 = t2 = t3 = np.arange(pr.n)
        def sub(idx):
            return Probs(pr.P[idx], None if pr.p is None else pr.p[idx])

        platt = Platt.fit_probs(sub(t1), y[t1], lens, C=resolve_c(C))
        g2 = platt._map(lens_view(sub(t2), y[t2], lens)[0])
        edges = equal_mass_edges(g2, n_bins)
        g3 = platt._map(lens_view(sub(t3), y[t3], lens)[0])
        values = bin_means(edges, g3, g3)
        return cls(params={"lens": lens, "n_classes": pr.K, "n_bins": n_bins, "split": bool(split),
                           "seed": int(seed)},
                   arrays={"edges": edges, "values": values}, meta=meta or {}, children=[platt])

    def _map(self, s, **extra):
        g = self.children[0]._map(s)
        return self.arrays["values"][bin_index(self.arrays["edges"], g)]

    def _check_specific(self, sc: Schema) -> None:
        n_bins = sc.param("n_bins", int, check=lambda b: b >= 1)
        sc.param("split", bool)
        sc.param("seed", int)
        _check_edges(sc, n_bins)
        sc.children(1)
        child = self.children[0]
        if not isinstance(child, Platt) or child.params.get("lens") != self.params["lens"]:
            sc.fail("the child must be a Platt scaler with the same lens")


def resolve_c(C):
    return KUMAR_C if C is UNSET else C
