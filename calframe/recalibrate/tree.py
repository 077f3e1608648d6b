"""Variable-based tree recalibration (Kelly & Smyth §6, App. B)."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from .._errors import ParameterError, bad_param
from .._params import check_choice, check_int_range, is_int, is_real
from ._inputs import Probs, as_labels, as_probs, as_variable, as_weights, min_leaf_count
from .._imports import lazy_function

leaf_of = lazy_function("calframe._kernels.tree", "leaf_of")  # numba: imported at first use
tree_thresholds = lazy_function("calframe._kernels.tree", "tree_thresholds")
from .base import REGISTRY, Recalibrator, Schema, register

#: methods usable as the per-leaf calibrator
LEAF_METHODS = ("beta", "platt", "temperature", "histogram", "isotonic", "scaling_binning")


def check_min_leaf(func: str, name: str, value: Any) -> int | float:
    """An int >= 1 (a row count) or a float in (0, 1) (a fraction of the rows), as scikit-learn's min_samples_leaf."""
    if is_int(value) and value >= 1:
        return int(value)
    if is_real(value) and not is_int(value) and 0.0 < value < 1.0:
        return float(value)
    raise bad_param(func, name, "an int >= 1 (rows) or a float in (0, 1) (a fraction of the rows)", value)


def check_leaf_params(func: str, name: str, value: Any) -> dict[str, Any] | None:
    """None or a dict keyed by parameter names (their values are checked by the leaf method)."""
    if value is None or (isinstance(value, dict) and all(isinstance(k, str) for k in value)):
        return None if value is None else dict(value)
    raise bad_param(func, name, "None or a dict of the leaf method's parameters (e.g. {'variant': 'kelly_smyth'})",
                    value)


@register
class Tree(Recalibrator):
    """A gini decision tree on one variable V, then one calibrator per leaf.

    1. The tree predicts the class label y from V alone (``max_depth=2``,
       ``min_leaf=0.1``: a float in (0, 1) is a fraction of the calibration
       rows, rounded up as scikit-learn does; an int is a row count).  Its
       leaves are intervals of V, stored as the sorted split thresholds
       t_0 < ... < t_m: leaf j = (t_{j-1}, t_j] (v <= t goes left, as
       scikit-learn).  The split search is ``calframe._kernels.tree`` (numba); for V
       exact in float32 the thresholds and leaves are scikit-learn's
       ``DecisionTreeClassifier(criterion="gini", max_depth, min_samples_leaf)``.
    2. A calibrator of method ``leaf`` (``"beta"`` for binary input,
       ``"temperature"`` for K > 2 by default; keyword arguments in
       ``leaf_params``, e.g. ``{"variant": "kelly_smyth"}``) is fitted on the
       rows of each leaf separately.

    Fallback for a leaf holding one class only (where a per-leaf logistic or
    beta fit has no finite solution and a per-leaf frequency would output
    exactly 0 or 1): the leaf uses the *global* calibrator, the same method
    fitted on all calibration rows (``children[0]``, always fitted; its
    ``leaf_fallback`` flag is set).  Every other leaf uses its own fit.

    params: n_classes, max_depth, min_leaf, min_leaf_rows, leaf, leaf_params.
    arrays: thresholds (m,), leaf_child (m + 1,) index into ``children`` per
    leaf, leaf_rows (m + 1,) calibration rows per leaf, leaf_fallback (m + 1,).
    children: [global calibrator, one calibrator per non-fallback leaf].
    """

    method = "tree"
    takes_weights = True
    PARAMS = {"max_depth": partial(check_int_range, low=0, high=30), "min_leaf": check_min_leaf,
              "leaf": partial(check_choice, choices=LEAF_METHODS, allow_none=True), "leaf_params": check_leaf_params}

    @classmethod
    def check_params(cls, params: dict[str, Any], n_classes: int | None = None) -> dict[str, Any]:
        """As ``Recalibrator.check_params``; ``leaf_params`` are checked as parameters of the leaf method
        (``leaf``, or its default once ``n_classes`` is known)."""
        out = super().check_params(params)
        leaf = out.get("leaf") or (None if n_classes is None else "beta" if n_classes == 2 else "temperature")
        if leaf is not None and out.get("leaf_params"):
            try:
                out["leaf_params"] = REGISTRY[leaf].check_params(out["leaf_params"], n_classes)
            except ParameterError as exc:
                raise ParameterError(f"The 'leaf_params' parameter of tree.fit holds a bad {leaf!r} parameter: "
                                     f"{exc}", "leaf_params") from None
        return out

    @classmethod
    def fit(cls, probs, labels, v, *, max_depth: int = 2, min_leaf: int | float = 0.1, leaf: str | None = None,
            leaf_params: dict[str, Any] | None = None, weights=None, meta=None) -> "Tree":
        """Fit on probs ((n,) binary or (n, K)), integer labels and the variable v (n,). ``weights``: frequency
        weights (None: all 1): the tree's class counts, child sizes and ``min_leaf`` are weights (a float
        ``min_leaf`` is a fraction of the weights' sum), and each leaf's calibrator gets its rows' weights; so
        integer weights give the tree of the rows repeated w_i times. Not with ``leaf="scaling_binning"``."""
        func = "tree.fit"
        kw = cls.check_params({"max_depth": max_depth, "min_leaf": min_leaf, "leaf": leaf,
                               "leaf_params": leaf_params})
        max_depth, min_leaf, leaf = kw["max_depth"], kw["min_leaf"], kw["leaf"]
        pr = as_probs(probs, func)
        y = as_labels(labels, pr.n, pr.K, func)
        vv = as_variable(v, pr.n, func)
        w = as_weights(weights, pr.n, func)
        nmin = min_leaf_count(min_leaf, pr.n if w is None else float(np.sum(w)))
        leaf = leaf or ("beta" if pr.K == 2 else "temperature")
        if w is not None and not getattr(REGISTRY[leaf], "takes_weights", False):
            raise ParameterError(f"{func}: the leaf method {leaf!r} does not take weights; with weights= use one "
                                 f"that does: {sorted(m for m in LEAF_METHODS if REGISTRY[m].takes_weights)}.",
                                 "leaf")
        wkw = {} if w is None else {"weights": w}
        leaf_params = cls.check_params({"leaf": leaf, "leaf_params": kw["leaf_params"]}, pr.K)["leaf_params"] or {}
        leaf_cls = REGISTRY[leaf]
        raw = pr.p if pr.p is not None else pr.P

        thr = tree_thresholds(vv, y, pr.K, int(max_depth), nmin, w)
        lf = leaf_of(thr, vv)
        n_leaves = len(thr) + 1
        children: list[Recalibrator] = [leaf_cls.fit(raw, y, **leaf_params, **wkw)]
        leaf_child = np.zeros(n_leaves, np.int64)
        leaf_rows = np.bincount(lf, minlength=n_leaves).astype(np.int64)
        fallback = np.zeros(n_leaves, bool)
        from .._progress import iterate

        for j in iterate(range(n_leaves), "tree leaves", unit="leaf"):
            rows_j = np.flatnonzero(lf == j)
            y_j = y[rows_j] if w is None else y[rows_j][w[rows_j] > 0]  # rows of weight 0 are absent
            if y_j.size == 0 or y_j.min() == y_j.max():  # one class only
                fallback[j] = True
                continue
            children.append(leaf_cls.fit(raw[rows_j], y[rows_j], **leaf_params,
                                         **({} if w is None else {"weights": w[rows_j]})))
            leaf_child[j] = len(children) - 1
        params = {"n_classes": pr.K, "max_depth": int(max_depth), "min_leaf": min_leaf, "min_leaf_rows": nmin,
                  "leaf": leaf, "leaf_params": leaf_params}
        arrays = {"thresholds": thr, "leaf_child": leaf_child, "leaf_rows": leaf_rows, "leaf_fallback": fallback}
        return cls(params=params, arrays=arrays, meta=meta or {}, children=children)

    @property
    def output(self) -> str:
        return self.children[0].output

    @property
    def thresholds(self) -> np.ndarray:
        return self.arrays["thresholds"]

    def leaf(self, v) -> np.ndarray:
        """Leaf index of each value of v (0 .. len(thresholds))."""
        return leaf_of(self.arrays["thresholds"], as_variable(v, np.size(v), "tree.leaf"))

    def predict(self, probs, v=None, **extra) -> np.ndarray:
        """Recalibrated probabilities (the leaf calibrator's output, see ``output``); v (n,) is required."""
        pr = as_probs(probs, "tree.predict", self.n_classes)
        return self._predict_probs(pr, v=v)

    def _predict_probs(self, pr: Probs, v=None, **extra) -> np.ndarray:
        vv = as_variable(v, pr.n, "tree.predict")
        child = self.arrays["leaf_child"][leaf_of(self.arrays["thresholds"], vv)]
        wide = self.output == "probs" and pr.p is None
        out = np.empty((pr.n, pr.K) if wide else pr.n)
        for c in np.unique(child):
            rows_c = np.flatnonzero(child == c)
            sub = Probs(pr.P[rows_c], None if pr.p is None else pr.p[rows_c])
            out[rows_c] = self.children[c]._predict_probs(sub)
        return out

    def _check(self) -> None:
        sc = Schema(self)
        K = sc.param("n_classes", int, check=lambda k: k >= 2)
        depth = sc.param("max_depth", int, check=lambda d: 0 <= d <= 30)
        sc.param("min_leaf", (int, float))
        ml = self.params["min_leaf"]
        if not (ml >= 1 if isinstance(ml, int) else 0 < ml < 1):
            sc.fail(f"parameter 'min_leaf' = {ml!r} must be an int >= 1 or a float in (0, 1)")
        sc.param("min_leaf_rows", int, check=lambda m: m >= 1)
        leaf = sc.param("leaf", str, check=lambda m: m in LEAF_METHODS)
        sc.param("leaf_params", dict)
        thr = sc.array("thresholds", "float64", 1)
        m = len(thr) + 1
        lc = sc.array("leaf_child", "int64", 1, shape=(m,))
        rows = sc.array("leaf_rows", "int64", 1, shape=(m,))
        fb = sc.array("leaf_fallback", "bool", 1, shape=(m,))
        sc.only_arrays("thresholds", "leaf_child", "leaf_rows", "leaf_fallback")
        sc.increasing("thresholds", thr)
        if m > 2**depth:
            sc.fail(f"array 'thresholds' holds {m - 1} splits; a tree of max_depth {depth} has at most {2**depth - 1}")
        if np.any(rows < 0):
            sc.fail("array 'leaf_rows' holds negative row counts")
        if not self.children:
            sc.fail("the global calibrator (children[0]) is missing")
        if np.any(lc[fb] != 0) or not np.array_equal(lc[~fb], np.arange(1, len(self.children))):
            sc.fail("array 'leaf_child' must point fallback leaves to children[0] and the other leaves, in order, "
                    "to children[1:], one each")
        for c in self.children:
            if c.method != leaf or c.params.get("n_classes") != K or c.output != self.children[0].output:
                sc.fail(f"every child must be a {leaf!r} calibrator for {K} classes with the same output")
