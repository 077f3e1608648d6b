"""Inductive Venn-Abers calibration (Vovk & Petej 2014, "Venn-Abers predictors"; Vovk, Petej & Fedorova 2015,
"Large-scale probabilistic predictors with and without guarantees of validity")."""

from __future__ import annotations

import numpy as np

from .. import _errors as E
from .._imports import lazy_function
from .._params import check_bool
from ._scalar import ScalarRecalibrator
from .base import Schema, register

venn_abers_tables = lazy_function("calframe._kernels.venn_abers", "venn_abers_tables")  # numba: at first use


@register
class VennAbers(ScalarRecalibrator):
    """Inductive Venn-Abers calibration of a score, with a validity guarantee.

    For a test score s, fit the isotonic (increasing) regression of the labels on the calibration scores with
    (s, 0) added, and again with (s, 1) added: their values at s are ``p0 <= p1``, one of which is calibrated
    (the Venn predictor's multiprobability; exactly valid when the calibration and test rows are exchangeable).
    The prediction is ``p = p1 / (1 - p0 + p1)``, the combination that minimises the worst log loss of the two.

    The fit stores, for the k distinct calibration scores ``c`` (in increasing order), ``p0`` and ``p1`` at each
    of the k + 1 places a test score can fall (:func:`calframe._kernels.venn_abers.venn_abers_tables`, exact:
    pooled adjacent violators); predict reads ``p0[searchsorted(c, s, "right")]`` and
    ``p1[searchsorted(c, s, "left")]``, as the ``venn-abers`` package does (equal to it to the bit).

    params: lens, n_classes, interval (apply adds the columns ``<name>_p0`` and ``<name>_p1``).
    arrays: c (the distinct scores), p0, p1.
    """

    method = "venn_abers"
    takes_weights = True
    PARAMS = {**ScalarRecalibrator.PARAMS, "interval": check_bool}

    @classmethod
    def fit(cls, probs, labels, *, interval: bool = False, lens=None, weights=None, meta=None) -> "VennAbers":
        """Fit on probs ((n,) binary or (n, K)) and labels; lens: 'class:c' or 'top1' (default class:1 / top1);
        ``interval``: :func:`calframe.apply` also writes ``p0`` and ``p1``; ``weights``: frequency weights
        (None: all 1), the tables of the rows repeated w_i times (the added test row keeps weight 1)."""
        return super().fit(probs, labels, lens=lens, meta=meta, interval=interval, weights=weights)

    @classmethod
    def _fit_scores(cls, s, t, *, n, interval=False, w=None):
        if n == 0:
            raise E.no_rows_to_fit("venn_abers.fit")
        if w is not None:  # rows of weight 0 are absent
            keep = w > 0
            s, t, w = s[keep], t[keep], w[keep]
        c, inv = np.unique(s, return_inverse=True)
        inv = inv.reshape(-1)
        tf = np.asarray(t, dtype=np.float64)
        if w is None:
            w = np.bincount(inv, minlength=len(c)).astype(np.float64)
            pos = np.bincount(inv, weights=tf, minlength=len(c))
        else:
            pos = np.bincount(inv, weights=w * tf, minlength=len(c))
            w = np.bincount(inv, weights=w, minlength=len(c))
        p0, p1 = venn_abers_tables(w, pos)
        return {"interval": bool(interval)}, {"c": c.astype(np.float64), "p0": p0, "p1": p1}, []

    def bounds(self, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(p0, p1)`` of the lensed scores ``s``."""
        c = self.arrays["c"]
        return (self.arrays["p0"][np.searchsorted(c, s, "right")], self.arrays["p1"][np.searchsorted(c, s, "left")])

    def _map(self, s, **extra):
        p0, p1 = self.bounds(s)
        return p1 / (1.0 - p0 + p1)

    def predict_interval(self, probs) -> np.ndarray:
        """The (n, 2) multiprobability ``[p0, p1]`` of the lensed scores of ``probs`` (``predict`` combines them).

        Examples
        --------
        >>> import numpy as np
        >>> from calframe import recalibrate
        >>> rec = recalibrate.fit("venn_abers", np.array([0.2, 0.4, 0.6, 0.8]), np.array([0, 1, 0, 1]))
        >>> rec.predict_interval(np.array([0.5]))
        array([[0.33333333, 0.66666667]])
        >>> rec.predict(np.array([0.5]))
        array([0.5])
        """
        from ._inputs import as_probs, lens_score

        pr = as_probs(probs, f"{self.method}.predict_interval", self.n_classes)
        return np.stack(self.bounds(lens_score(pr, self.params["lens"])), axis=1)

    def _check_specific(self, sc: Schema) -> None:
        sc.param("interval", bool)
        c = sc.probabilities("c")
        if len(c) == 0:
            sc.fail("array 'c' is empty")
        sc.increasing("c", c)
        for name in ("p0", "p1"):
            sc.array(name, "float64", 1, shape=(len(c) + 1,))
            sc.probabilities(name)
        if (sc.obj.arrays["p0"] > sc.obj.arrays["p1"]).any():
            sc.fail("array 'p0' must be <= 'p1' at every place (the fit with label 0 is below the one with label 1)")
        sc.only_arrays("c", "p0", "p1")
        sc.children(0)
