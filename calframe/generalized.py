"""Generalized ECE on vector lenses (SPEC §1-§2; Kirchenbauer et al. §3-§4, App. A-B): array building blocks.

Plain numpy arrays in and out, no dataframe code. The pipeline is

    lens (probs, labels) -> (g', y'), both (n, K') float64
    bin g' per group     -> bin ids (int32, dense per group), n_bins
    accumulate           -> sums (n_groups, n_bins, 1 + 2K'): [n, sum g'_0..K'-1, sum y'_0..K'-1]
    gece_from_sums       -> one figure per group

Input. ``probs`` is (n, K) class probabilities, or (n,) positive-class
probabilities p of a binary problem, read as the rows [1 - p, p]. ``labels``
are integer class indices in [0, K). Nothing here renormalises rows: lenses use
the probabilities as given (the CIFAR-10 reference rows are float32 and do not
sum to 1 exactly, which is why ``class_c`` and a ``grouping`` with {c} and the
rest give different figures, see below).

Lenses (ties in the ordering of classes go to the lowest class index)
---------------------------------------------------------------------
- ``top1``: g' = [m, 1 - m], m = max_j g_j; y' = [c, 1 - c], c = 1 if the
  first argmax is the label. The GECE reference builds this exact vector
  (ORACLES B "top1" reproduces with 1 - m; [m, sum of the others] does not).
- ``class_c(c)``: g' = [g_c, 1 - g_c]; y' = [y_c, 1 - y_c] (SPEC §1). The GECE
  reference's class lens is the grouping ({c}, all other classes), i.e.
  [g_c, sum of the others]; ORACLES B "class(0)" is reproduced with
  ``grouping(probs, labels, [[0], [1, ..., 9]])``.
- ``topk(k)``, 1 <= k <= K: g' = [g_(1), ..., g_(k), 1 - (g_(1) + ... + g_(k))]
  (largest first, the sum taken in that order); y' = the one-hot label at the
  same classes and 1 - their sum. For k = K the last coordinate would be
  identically 0 in y' (and rounding noise in g'), so it is left out: topk(K)
  is the full lens on each row's sorted probabilities (K' = K).
- ``full``: g' = g, y' = one-hot label.
- ``grouping(G)``: g'_j = sum of g over the classes of group j (numpy's sum,
  in the order the classes are listed), y'_j = 1 if the label is in group j.
  The groups must partition 0..K-1 (ValueError naming a missing, repeated or
  out-of-range class, or an empty group). Singleton groups give ``full``
  exactly.

Binning (per group of rows, on the rows given)
----------------------------------------------
- ``uniform_grid(gp, B)`` (SPEC "uniform(B) on a vector lens"; uu-sml's
  ``UniformBinning``): each of the first K' - 1 coordinates is cut with
  ``numpy.digitize(x, numpy.linspace(0, 1, B + 1)[1:-1])`` (left-closed,
  last bin closed at 1), a cell is the tuple of those indices, only non-empty
  cells exist; cells are numbered per group in lexicographic order of the
  tuple (the order of uu-sml's tree leaves). On a 2-vector lens this is the
  scalar ``uniform(B)`` on the first coordinate.
- ``adaptive(gp, gamma)`` (SPEC "adaptive(gamma)"; the GECE reference's
  ``adaptive_histogram_binning_estimator`` = uu-sml ``DataDependentBinning(
  min_size=round(gamma * N), threshold="mean")`` fitted on the lensed outputs
  g' of all K' coordinates): with N the rows of the group and
  min_size = round(gamma * N) (half to even, as Python's round), a node of
  n rows is a leaf if n < min_size; otherwise it splits on the coordinate of
  largest population variance (numpy.var, ddof = 0; first such coordinate on
  ties) at that coordinate's mean: rows with value < mean go low, the others
  high; a split that leaves a side empty makes the node a leaf. The root is
  treated like any node (with gamma > 1 it may stay one bin). Leaves in
  pre-order (low before high) are the bins. Variance, argmax and mean are
  computed with numpy's exact float operations and row order, so rows on a
  threshold land where the reference puts them. ``split="median"`` uses the
  median as threshold (uu-sml's other option).

  How: level by level (``_kernels/adaptive.py``), one parallel pass over the
  rows of a level's nodes, with numpy's exact figures recomputed only for the
  nodes where a rounding error bound says they could change the split; the
  node-by-node kernel (``vector.adaptive_bins``) serves the median split and
  very wide trees. Both give the same bins row for row. ``gece`` with a
  one-hot y' given by position (the ``full`` and ``grouping`` lenses) and no
  weights reads each leaf's n, sum g' and label counts off that tree
  (``adaptive_sums``) instead of accumulating them in a pass of its own.

  Which variant: this is the reference code itself (uu-sml
  ``calibration/binning/datadependent.py``: ``n < min_size`` -> leaf,
  ``np.argmax(np.var(probs, axis=0))``, ``split_probs < np.mean(split_probs)``;
  the GECE estimator: ``min_size = round(N * frac_per_bin)``,
  ``BinningTree.fit(lensed outputs)``). It reproduces ORACLES B top1
  adaptive(0.1) and full adaptive(0.1) to ~2e-16 relative, with the same
  bins as a plain-numpy run of that algorithm. On that data (N = 10000,
  gamma * N = 1000 exactly, no row exactly at a node mean, the variance
  argmax unchanged by ddof) sample variance, ``<=``, floor or ceil give the
  same figures, so the oracle does not tell those apart; splitting on y'
  instead of g' does not reproduce (0.0666 and 0.0703).

Sums and distances
------------------
``accumulate`` gives per (group, bin) [n, sum w g', sum w y'] (n = sum of the
weights, 1 per row by default). With w_b = n_b / N, gbar_b = sum g' / n_b,
ybar_b = sum y' / n_b, over non-empty bins:

    GECE_p = (sum_b w_b d(gbar_b, ybar_b)^p)^(1/p), p in {1, 2};  GECE_inf = max_b d(gbar_b, ybar_b)

- ``"tvd"``: d = 1/2 ||gbar - ybar||_1 (the reference's default; on top1 it is
  |conf - acc| up to rounding, i.e. the scalar ECE).
- ``"l2"``: d = ||gbar - ybar||_2.
- ``mahalanobis(M)``: d = sqrt((gbar - ybar) M (gbar - ybar)^T), M symmetric
  positive semi-definite K' x K' (checked; W = I gives l2, as ORACLES B).
- ``interval(l, h)`` on 2-vector lenses only: max(0, l - ybar_0, ybar_0 - h).

A group with no rows gives NaN.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from functools import reduce
from typing import Any, Literal, Sequence

import numpy as np

from ._errors import ParameterError
from ._limits import check_cells
from ._imports import LazyModule, lazy_function

AK = LazyModule("calframe._kernels.adaptive")  # numba kernels: imported at first use
VV = LazyModule("calframe._kernels.validate")
VK = LazyModule("calframe._kernels.vector")
tables = lazy_function("calframe._kernels.accumulate", "tables")
from .binning import uniform_edges

__all__ = [
    "as_probs",
    "top1",
    "class_c",
    "topk",
    "full",
    "grouping",
    "LensChoice",
    "choose_lens",
    "lensed",
    "lens_exprs",
    "uniform_grid",
    "adaptive",
    "accumulate",
    "VectorDistance",
    "mahalanobis",
    "interval",
    "gece_from_sums",
    "gece",
]

Lensed = tuple[np.ndarray, np.ndarray]

#: above this k, top-k uses a stable argsort instead of per-row insertion
_TOPK_INSERTION_MAX = 16
#: adaptive binning goes level by level when a tree level can hold at most this many nodes to split
_LEVEL_MAX_FRONTIER = 16384


# --------------------------------------------------------------------------- input


def as_probs(probs: Any) -> np.ndarray:
    """(n, K) float64 C-ordered probabilities; a 1-d array of p is read as the rows [1 - p, p]."""
    p = np.asarray(probs)
    if p.dtype.kind not in "fiub":
        raise ParameterError(f"probs must hold numbers. Got dtype {p.dtype}.")
    p = p.astype(np.float64, copy=False)
    if p.ndim == 1:
        return np.ascontiguousarray(np.stack([1.0 - p, p], axis=1))
    if p.ndim != 2 or p.shape[1] < 2:
        raise ParameterError(
            f"probs must be (n,) positive-class probabilities or (n, K) class probabilities with K >= 2. "
            f"Got shape {p.shape}."
        )
    return np.ascontiguousarray(p)


def _labels(labels: Any, n: int, k: int) -> np.ndarray:
    y = np.asarray(labels)
    if y.ndim != 1 or y.shape[0] != n:
        raise ParameterError(f"labels must be a 1-d array of {n} class indices. Got shape {y.shape}.")
    if y.dtype.kind == "b":
        y = y.astype(np.int64)
    elif y.dtype.kind not in "iu":
        raise ParameterError(f"labels must be integer class indices. Got dtype {y.dtype}.")
    if y.dtype not in (np.int32, np.int64):
        y = y.astype(np.int64)
    bad = VV.count_outside(y, k)  # one parallel pass
    if bad:
        raise ParameterError(
            f"labels must be class indices in [0, {k - 1}] ({k} classes); {bad} of {n} labels are outside."
        )
    return y  # int32 (as calframe's frames give them) or int64: no copy


def _inputs(probs: Any, labels: Any) -> tuple[np.ndarray, np.ndarray]:
    g = as_probs(probs)
    return g, _labels(labels, g.shape[0], g.shape[1])


def _pair(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.stack([first, second], axis=1))


# --------------------------------------------------------------------------- lenses


def top1(probs: Any, labels: Any) -> Lensed:
    """[max g, 1 - max g] and [correct, 1 - correct]; the top class is the first argmax."""
    g, y = _inputs(probs, labels)
    return VK.top1_rows(g, y)


def class_c(probs: Any, labels: Any, c: int) -> Lensed:
    """[g_c, 1 - g_c] and [y_c, 1 - y_c] (SPEC §1; the reference's class lens is ``grouping`` ({c}, rest))."""
    g, y = _inputs(probs, labels)
    k = g.shape[1]
    if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or not 0 <= c < k:
        raise ParameterError(f"class_c: c must be a class index in [0, {k - 1}]. Got {c!r}.")
    gc = g[:, int(c)]
    yc = (y == c).astype(np.float64)
    return _pair(gc, 1.0 - gc), _pair(yc, 1.0 - yc)


def topk(probs: Any, labels: Any, k: int) -> Lensed:
    """The k largest probabilities (largest first, ties to the lowest class) and 1 - their sum.

    Shape (n, k + 1) for k < K, (n, K) for k = K (no rest coordinate).
    """
    g, y = _inputs(probs, labels)
    n, n_classes = g.shape
    k = _check_k(k, n_classes)
    if k <= _TOPK_INSERTION_MAX:
        idx = VK.topk_indices(g, k)
    else:
        idx = np.argsort(-g, axis=1, kind="stable")[:, :k]
    rest = k < n_classes
    width = k + 1 if rest else k
    gp = np.empty((n, width))
    yp = np.empty((n, width))
    gp[:, :k] = np.take_along_axis(g, idx, axis=1)
    yp[:, :k] = idx == y[:, None]
    if rest:
        s = np.zeros(n)
        hit = np.zeros(n)
        for j in range(k):  # in rank order
            s += gp[:, j]
            hit += yp[:, j]
        gp[:, k] = 1.0 - s
        yp[:, k] = 1.0 - hit
    return gp, yp


def _check_k(k: Any, n_classes: int) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= n_classes:
        raise ParameterError(f"topk: k must be an int with 1 <= k <= {n_classes} (the number of classes). Got {k!r}.")
    return int(k)


def full(probs: Any, labels: Any, onehot: bool = True) -> Lensed:
    """g itself and the one-hot label.

    ``onehot=False`` gives y' as the position of its 1 per row, (n,) int64;
    ``accumulate`` and ``gece`` read that form directly, without the (n, K) array.
    """
    g, y = _inputs(probs, labels)
    if not onehot:
        return g, y
    yp = np.zeros_like(g)
    yp[np.arange(g.shape[0]), y] = 1.0
    return g, yp


def _check_groups(class_groups: Any, n_classes: int) -> list[list[int]]:
    if isinstance(class_groups, (str, bytes)) or not isinstance(class_groups, (Sequence, np.ndarray)):
        raise ParameterError(f"grouping: groups must be a sequence of sequences of class indices. Got {class_groups!r}.")
    out: list[list[int]] = []
    owner = np.full(n_classes, -1)
    for i, grp in enumerate(class_groups):
        if isinstance(grp, (str, bytes)) or not isinstance(grp, (Sequence, np.ndarray, set, frozenset)):
            raise ParameterError(f"grouping: group {i} must be a sequence of class indices. Got {grp!r}.")
        members = sorted(grp) if isinstance(grp, (set, frozenset)) else list(grp)
        if not members:
            raise ParameterError(f"grouping: group {i} is empty; the groups must partition the classes 0..{n_classes - 1}.")
        cls: list[int] = []
        for c in members:
            if isinstance(c, (bool, np.bool_)) or not isinstance(c, (int, np.integer)):
                raise ParameterError(f"grouping: group {i} holds {c!r}, which is not a class index.")
            c = int(c)
            if not 0 <= c < n_classes:
                raise ParameterError(
                    f"grouping: class {c} in group {i} is out of range; the probabilities have "
                    f"{n_classes} classes (0..{n_classes - 1})."
                )
            if owner[c] >= 0:
                where = "twice in group" if owner[c] == i else f"in groups {owner[c]} and"
                raise ParameterError(
                    f"grouping: class {c} is repeated ({where} {i}); each class must be in exactly one group."
                )
            owner[c] = i
            cls.append(c)
        out.append(cls)
    missing = np.flatnonzero(owner < 0)
    if missing.size:
        raise ParameterError(
            f"grouping: class{'es' if missing.size > 1 else ''} "
            f"{missing.tolist() if missing.size > 1 else int(missing[0])} "
            f"{'are' if missing.size > 1 else 'is'} missing from the groups; the groups must partition "
            f"the classes 0..{n_classes - 1}."
        )
    return out


def grouping(probs: Any, labels: Any, groups: Any, onehot: bool = True) -> Lensed:
    """Per class group: the sum of g over its classes, and whether the label is in it.

    ``onehot=False`` gives y' as the label's group per row, (n,) int64 (see ``full``).
    """
    g, y = _inputs(probs, labels)
    n, n_classes = g.shape
    class_groups = _check_groups(groups, n_classes)
    gp = np.empty((n, len(class_groups)))
    group_of = np.empty(n_classes, dtype=np.int64)
    for j, cls in enumerate(class_groups):
        gp[:, j] = g[:, cls].sum(axis=1)
        group_of[cls] = j
    if not onehot:
        return gp, group_of[y]
    yp = np.zeros((n, len(class_groups)))
    yp[np.arange(n), group_of[y]] = 1.0
    return gp, yp


@dataclass(frozen=True)
class LensChoice:
    """The lens a :func:`calframe.gece` call measures on its probabilities (:func:`choose_lens`): ``kind`` "top1",
    "class" (class ``c``), "topk" (``k``), "full" or "grouping" (``groups``, checked)."""

    kind: str
    c: int = -1
    k: int = 0
    groups: tuple[tuple[int, ...], ...] = ()


def choose_lens(func: str, lens: str | None, scalar_lens: Any, k: Any, groups: Any, binary: bool,
                n_classes: int, c: int | None = None) -> LensChoice:
    """The lens of a gece call (``lens``: a vector lens's name, or None with ``scalar_lens``: class:c or the
    default) on probabilities of ``n_classes`` classes (``binary``: one probability column); ``c``: one class of
    the marginal lens. A class past the classes, a bad ``k`` or bad ``groups`` raise their ParameterError."""
    from . import lenses as L

    if c is not None:
        return LensChoice("class", c)
    used = None if scalar_lens is None else L.resolve_lens(scalar_lens, binary)
    if used is not None and used.kind == "class":
        if used.c >= n_classes:
            L.parse_lens(func, used, n_classes)
        return LensChoice("class", used.c)
    if lens == "top1" or used is not None:
        return LensChoice("top1")
    if lens == "topk":
        return LensChoice("topk", k=_check_k(k, n_classes))
    if lens == "full":
        return LensChoice("full")
    return LensChoice("grouping", groups=tuple(tuple(g) for g in _check_groups(groups, n_classes)))


def lensed(probs: Any, labels: Any, choice: LensChoice) -> Lensed:
    """The lensed outputs and labels of ``choice`` (:func:`choose_lens`); y' as positions for full / grouping."""
    if choice.kind == "class":
        return class_c(probs, labels, choice.c)
    if choice.kind == "top1":
        return top1(probs, labels)
    if choice.kind == "topk":
        return topk(probs, labels, choice.k)
    if choice.kind == "full":
        return full(probs, labels, onehot=False)
    return grouping(probs, labels, [list(g) for g in choice.groups], onehot=False)


#: :func:`lens_exprs` renders top-k for at most this many classes (K^2 comparisons a row)
TOPK_EXPR_MAX = 16


def lens_exprs(choice: LensChoice, probs: Any, label: Any, label_kind: str, ns: Any,
               stage: Any = None) -> tuple[list, list]:
    """(g', y') of ``choice`` as lists of Float64 expressions, Polars (``ns=polars``) or narwhals (``ns=narwhals``),
    the numbers of :func:`lensed` bit for bit: ``probs`` the list of the K class probabilities, or one expression
    (binary input: the classes are ``[1 - p, p]``, as :func:`as_probs` reads it); ``label`` the label column of
    ``label_kind`` ("bool", "int", "float"). The scalar lenses are :func:`calframe.lenses.lens_exprs`'.
    Top-k ranks each class (the larger first, a tie to the lower class: :func:`topk`'s order), for up to
    :data:`TOPK_EXPR_MAX` classes; ``stage(j, rank)``, when given, makes class j's rank a column of its own (the
    expression to read it by), computed once; a group's output is the sum of its classes from the first (numpy's order for
    ``g[:, cls].sum(axis=1)``). What a row outside the checks gives is unspecified."""
    from . import lenses as L

    def f64(e: Any) -> Any:
        return e.cast(ns.Float64)

    def pair(a: Any, b: Any) -> tuple[list, list]:
        return [a, 1.0 - a], [b, 1.0 - b]

    def is_(c: int) -> Any:
        return L.label_is(label, c, label_kind)

    if choice.kind in ("top1", "class"):
        lens = L.Lens("top1") if choice.kind == "top1" else L.Lens("class", choice.c)
        return pair(*L.lens_exprs(lens, probs, label, label_kind=label_kind, ns=ns))
    classes = list(probs) if isinstance(probs, (list, tuple)) else [1.0 - probs, probs]
    K = len(classes)
    if choice.kind == "full":
        return list(classes), [f64(is_(j)) for j in range(K)]
    if choice.kind == "grouping":
        gp = [reduce(operator.add, [classes[c] for c in cls]) for cls in choice.groups]
        return gp, [f64(reduce(operator.or_, [is_(c) for c in cls])) for cls in choice.groups]
    k = choice.k
    # the rank of class c: the classes above it, and those of a lower index equal to it
    rank = [sum((((classes[d] > classes[c]) if d > c else (classes[d] >= classes[c])).cast(ns.Int32)
                 for d in range(K) if d != c), ns.lit(0, ns.Int32)) for c in range(K)]
    rank = rank if stage is None else [stage(c, r) for c, r in enumerate(rank)]
    gp, yp = [], []
    for j in range(k):
        v = classes[K - 1]
        for c in range(K - 2, -1, -1):
            v = ns.when(rank[c] == j).then(classes[c]).otherwise(v)
        gp.append(v)
        yp.append(f64(reduce(operator.or_, [is_(c) & (rank[c] == j) for c in range(K)])))
    if k < K:
        gp.append(1.0 - reduce(operator.add, gp))
        yp.append(1.0 - f64(reduce(operator.or_, [is_(c) & (rank[c] < k) for c in range(K)])))
    return gp, yp


# --------------------------------------------------------------------------- binning


def _lensed(gp: Any, name: str) -> np.ndarray:
    a = np.asarray(gp)
    if a.ndim != 2 or a.shape[1] < 1:
        raise ParameterError(f"{name}: the lensed outputs must be an (n, K') array. Got shape {a.shape}.")
    return np.ascontiguousarray(a, dtype=np.float64)


def _group_codes(groups: Any, n: int, n_groups: int, name: str) -> np.ndarray | None:
    if isinstance(n_groups, bool) or not isinstance(n_groups, (int, np.integer)) or n_groups < 1:
        raise ParameterError(f"{name}: n_groups must be an int >= 1. Got {n_groups!r}.")
    if groups is None:
        if n_groups != 1:
            raise ParameterError(f"{name}: groups=None means one group, but n_groups={n_groups}.")
        return None
    codes = np.asarray(groups)
    if codes.shape != (n,) or codes.dtype.kind not in "iu":
        raise ParameterError(f"{name}: groups must be {n} integer group codes. Got {codes.dtype} {codes.shape}.")
    if n and (codes.min() < 0 or codes.max() >= n_groups):
        raise ParameterError(f"{name}: group codes must lie in [0, {n_groups - 1}].")
    return np.ascontiguousarray(codes, dtype=np.int32)


def uniform_grid(gp: Any, bins: int = 15, groups: Any = None, n_groups: int = 1) -> tuple[np.ndarray, int]:
    """Product grid of ``bins`` uniform bins over the first K' - 1 coordinates -> (ids int32, n_bins).

    Ids are dense per group (0..cells of the group - 1, in lexicographic order of
    the cells' index tuples); ``n_bins`` is the largest number of cells of a group.
    """
    g = _lensed(gp, "uniform_grid")
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins < 1:
        raise ParameterError(f"uniform_grid: bins must be an int >= 1. Got {bins!r}.")
    bins = int(bins)
    n, m = g.shape
    codes = _group_codes(groups, n, n_groups, "uniform_grid")
    digits = VK.digitize_uniform(g, m - 1, uniform_edges(bins, "left"))
    if n == 0:
        return np.zeros(0, dtype=np.int32), 1
    if m - 1 == 0 or bins == 1:
        return np.zeros(n, dtype=np.int32), 1
    if n_groups * bins ** (m - 1) < 2**62:
        keys = VK.mixed_radix_keys(digits, codes, bins)
        uniq, inv = np.unique(keys, return_inverse=True)
        cell_group = uniq // (bins ** (m - 1))
    else:  # too many cells for one int64 key: sort the index tuples
        cols = [digits[:, j] for j in range(m - 2, -1, -1)]
        if codes is not None:
            cols.append(codes)
        order = np.lexsort(cols)
        tup = digits[order] if codes is None else np.column_stack([codes[order], digits[order]])
        new = np.ones(n, dtype=bool)
        new[1:] = np.any(tup[1:] != tup[:-1], axis=1)
        sorted_ids = np.cumsum(new) - 1
        inv = np.empty(n, dtype=np.int64)
        inv[order] = sorted_ids
        cell_group = np.zeros(int(sorted_ids[-1]) + 1, dtype=np.int64) if codes is None else codes[order][new]
    per_group = np.bincount(cell_group, minlength=n_groups)
    first = np.concatenate([[0], np.cumsum(per_group)[:-1]])
    row_group = 0 if codes is None else codes
    ids = (inv.reshape(-1) - first[row_group]).astype(np.int32)
    return ids, max(int(per_group.max()), 1)


def _adaptive_plan(gp: Any, gamma: float, groups: Any, n_groups: int, split: str, func: str = "adaptive"):
    """Checked inputs of the adaptive binning -> (g, group codes, min_size per group, chunks or 0).

    chunks is 0 when the level-by-level kernel does not apply (median split,
    no rows, or a tree that may be very wide).
    """
    g = _lensed(gp, func)
    if isinstance(gamma, bool) or not isinstance(gamma, (int, float, np.integer, np.floating)) or not (
        math.isfinite(gamma) and gamma > 0
    ):
        raise ParameterError(f"{func}: gamma must be a finite number > 0 (a fraction of the rows). Got {gamma!r}.")
    if split not in ("mean", "median"):
        raise ParameterError(f"{func}: split must be 'mean' or 'median'. Got {split!r}.")
    n = g.shape[0]
    codes = _group_codes(groups, n, n_groups, func)
    counts = np.bincount(codes, minlength=n_groups) if codes is not None else np.array([n], dtype=np.int64)
    # Python's round(gamma * N): the float product rounded half to even
    min_sizes = np.array([round(float(gamma) * int(c)) for c in counts], dtype=np.int64)
    # level by level (one parallel pass per tree level) unless the tree may be very wide
    widest = int(np.sum(counts // np.maximum(min_sizes, 1)))
    nchunks = 0
    if split == "mean" and n and widest <= _LEVEL_MAX_FRONTIER:
        nchunks = VK.n_chunks(n, max(n_groups, 2 * widest), 1 + 3 * g.shape[1])
    return g, codes, min_sizes, nchunks


def adaptive(
    gp: Any,
    gamma: float = 0.1,
    groups: Any = None,
    n_groups: int = 1,
    split: Literal["mean", "median"] = "mean",
) -> tuple[np.ndarray, int]:
    """uu-sml's data-dependent binning of g' per group (see the module docstring) -> (ids int32, n_bins).

    Each group of N rows uses min_size = round(gamma * N); ids are the leaves
    of its tree in pre-order; ``n_bins`` is the largest number of leaves of a group.
    """
    g, codes, min_sizes, nchunks = _adaptive_plan(gp, gamma, groups, n_groups, split)
    res = AK.level_bins(g, codes, n_groups, min_sizes, nchunks) if nchunks else None
    return _node_bins(g, codes, n_groups, min_sizes, split) if res is None else (res[0], max(int(res[1].max()), 1))


def _node_bins(g: np.ndarray, codes: Any, n_groups: int, min_sizes: np.ndarray, split: str) -> tuple[np.ndarray, int]:
    """``adaptive``'s bins by the node-by-node kernel (median split, very wide trees, data that is not finite)."""
    order, starts = VK.group_order(codes, n_groups, g.shape[0])
    ids, n_leaves = VK.adaptive_bins(g, order, starts, min_sizes, split == "median")
    return ids, max(int(n_leaves.max()), 1)


def adaptive_sums(
    gp: Any, ypos: Any, gamma: float = 0.1, groups: Any = None, n_groups: int = 1, bound: float | None = None
) -> np.ndarray:
    """``accumulate(gp, ypos, *adaptive(gp, gamma, groups, n_groups), groups, n_groups)`` without its pass.

    ``ypos``: y' as the position of its 1 per row (``full``/``grouping`` with
    ``onehot=False``). The level-by-level tree already holds every leaf's n,
    sum g' and label counts; a leaf whose sums were taken as its parent's
    minus its sibling's can differ from summing its rows by a few units in
    the last place of the parent's sums. Falls back to the node-by-node
    kernel then ``accumulate`` where the level kernel does not apply. ``bound``: a bound
    on every |g'| that the caller guarantees (validated probabilities: 1 plus
    the sum tolerance); it spares finding the largest |g'|, which the
    rounding-error bounds of the tree need.
    """
    g, codes, min_sizes, nchunks = _adaptive_plan(gp, gamma, groups, n_groups, "mean", "adaptive_sums")
    y = np.asarray(ypos)
    n, m = g.shape
    if y.shape != (n,) or y.dtype.kind not in "iu" or VV.count_outside(y, m):
        raise ParameterError(f"adaptive_sums: y' as positions must be {n} integers in [0, {m - 1}].")
    if bound is not None and (isinstance(bound, bool) or not (
        isinstance(bound, (int, float)) and math.isfinite(bound) and bound > 0
    )):
        raise ParameterError(f"adaptive_sums: bound must be a finite number > 0. Got {bound!r}.")
    res = AK.level_sums(g, np.ascontiguousarray(y, dtype=np.int32), codes, n_groups, min_sizes, nchunks,
                        None if bound is None else float(bound)) if nchunks else None
    if res is None:  # (without running the level kernel's root pass a second time)
        return accumulate(g, y, *_node_bins(g, codes, n_groups, min_sizes, "mean"), groups, n_groups)
    return res[0]


# --------------------------------------------------------------------------- accumulate


def accumulate(
    gp: Any,
    yp: Any,
    bins: Any,
    n_bins: int,
    groups: Any = None,
    n_groups: int = 1,
    weights: Any = None,
) -> np.ndarray:
    """Per (group, bin) sums -> (n_groups, n_bins, 1 + 2K'): [n, sum g'_0..K'-1, sum y'_0..K'-1].

    ``yp`` is (n, K'), or (n,) integers: the position of the 1 of a one-hot y'.

    ``weights`` (float64, optional) multiply every term (n is then the sum of the
    weights). Bit-identical for any number of threads.
    """
    g = _lensed(gp, "accumulate")
    n, m = g.shape
    y = np.asarray(yp)
    if y.ndim == 1 and y.dtype.kind in "iu":  # one-hot y' given by the position of its 1
        if y.shape != (n,) or (n and (y.min() < 0 or y.max() >= m)):
            raise ParameterError(f"accumulate: y' as positions must be {n} integers in [0, {m - 1}].")
        y = np.ascontiguousarray(y, dtype=np.int64)
    else:
        y = _lensed(yp, "accumulate")
        if y.shape != g.shape:
            raise ParameterError(f"accumulate: g' and y' must have the same shape. Got {g.shape} and {y.shape}.")
    b = np.asarray(bins)
    if b.shape != (n,) or b.dtype.kind not in "iu":
        raise ParameterError(f"accumulate: bins must be {n} integer bin ids. Got {b.dtype} {b.shape}.")
    if n and (b.min() < 0 or b.max() >= n_bins):
        raise ParameterError(f"accumulate: bin ids must lie in [0, {n_bins - 1}].")
    codes = _group_codes(groups, n, n_groups, "accumulate")
    w = None
    if weights is not None:
        w = np.ascontiguousarray(weights, dtype=np.float64)
        if w.shape != (n,):
            raise ParameterError(f"accumulate: weights must be {n} numbers. Got shape {w.shape}.")
    width = 1 + 2 * m
    check_cells(n_groups, n_bins, width)
    n_cells = n_groups * n_bins
    dense, pos = (np.empty((0, m)), y) if y.ndim == 1 else (y, np.empty(0, dtype=np.int64))
    flat = VK.accumulate_vector(codes, np.ascontiguousarray(b, dtype=np.int32), g, dense, pos, w, n_bins,
                                *tables(VK.n_chunks(n, n_cells, width), width * n_cells))
    return flat.reshape((n_groups, n_bins, width))


# --------------------------------------------------------------------------- distances and finalize


@dataclass(frozen=True)
class VectorDistance:
    """A distance between a bin's mean lensed output and mean lensed label (vectors of K' values)."""

    kind: Literal["tvd", "l2", "mahalanobis", "interval"] = "tvd"
    matrix: np.ndarray | None = None
    low: float = 0.0
    high: float = 1.0

    def __call__(self, gbar: np.ndarray, ybar: np.ndarray) -> np.ndarray:
        """d over the last axis of gbar, ybar (..., K')."""
        diff = gbar - ybar
        if self.kind == "tvd":
            return 0.5 * np.abs(diff).sum(axis=-1)
        if self.kind == "l2":
            return np.sqrt((diff * diff).sum(axis=-1))
        m = diff.shape[-1]
        if self.kind == "interval":
            if m != 2:
                raise ParameterError(f"The interval distance needs a scalar (2-vector) lens; this lens has K' = {m}.")
            acc = ybar[..., 0]
            return np.maximum(0.0, np.maximum(self.low - acc, acc - self.high))
        M = self.matrix
        assert M is not None
        if M.shape != (m, m):
            raise ParameterError(
                f"The Mahalanobis matrix must be K' x K' = {m} x {m} for this lens (its output has {m} "
                f"coordinates). Got shape {M.shape}."
            )
        q = np.einsum("...i,ij,...j->...", diff, M, diff)
        return np.sqrt(np.maximum(q, 0.0))


def mahalanobis(M: Any) -> VectorDistance:
    """d = sqrt((gbar - ybar) M (gbar - ybar)^T); M must be square, symmetric, positive semi-definite."""
    m = np.array(M, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] < 1:
        raise ParameterError(f"The Mahalanobis matrix must be square (K' x K'). Got shape {m.shape}.")
    bad = int((~np.isfinite(m)).sum())
    if bad:  # an infinite entry would make every distance inf (or NaN): refused, not returned
        raise ParameterError(
            f"The Mahalanobis matrix must hold finite numbers; {bad} of its {m.size} entries are NaN or "
            f"infinite. Got {m.tolist()}."
        )
    scale = max(1.0, float(np.abs(m).max()))
    if not np.allclose(m, m.T, rtol=1e-12, atol=1e-12 * scale):
        raise ParameterError(f"The Mahalanobis matrix must be symmetric. Got {m.tolist()}.")
    m = 0.5 * m + 0.5 * m.T  # (m + m.T) / 2 without overflow near the largest float
    low = float(np.linalg.eigvalsh(m).min())
    if low < -1e-12 * scale:
        raise ParameterError(
            f"The Mahalanobis matrix must be positive semi-definite; its smallest eigenvalue is {low:.3g}. "
            f"Got {m.tolist()}."
        )
    m.setflags(write=False)
    return VectorDistance("mahalanobis", matrix=m)


def interval(low: float, high: float) -> VectorDistance:
    """Inter-interval distance on a 2-vector lens: max(0, low - ybar_0, ybar_0 - high)."""
    low, high = float(low), float(high)
    if not 0.0 <= low <= high <= 1.0:
        raise ParameterError(f"interval bounds must satisfy 0 <= low <= high <= 1. Got low={low}, high={high}.")
    return VectorDistance("interval", low=low, high=high)


def _distance(distance: Any) -> VectorDistance:
    if isinstance(distance, VectorDistance):
        return distance
    if isinstance(distance, str) and distance in ("tvd", "l2"):
        return VectorDistance(distance)  # type: ignore[arg-type]
    if isinstance(distance, tuple) and distance:
        if distance[0] == "mahalanobis" and len(distance) == 2:
            return mahalanobis(distance[1])
        if distance[0] == "interval" and len(distance) == 3:
            return interval(distance[1], distance[2])
    kind = getattr(distance, "kind", None)  # calframe.metrics.Distance (scalar lenses)
    if kind in ("tvd", "l2"):
        return VectorDistance(kind)
    if kind == "interval":
        return interval(distance.low, distance.high)
    if kind == "mahalanobis":
        return mahalanobis(distance.matrix)
    raise ParameterError(
        f"distance must be 'tvd', 'l2', ('mahalanobis', M), ('interval', low, high) or a VectorDistance. "
        f"Got {distance!r}."
    )


def _p(p: Any) -> float:
    try:
        v = float(p)
    except (TypeError, ValueError):
        v = float("nan")
    if isinstance(p, bool) or v not in (1.0, 2.0, math.inf):
        raise ParameterError(f"p must be 1, 2 or inf. Got {p!r}.")
    return v


def gece_from_sums(sums: np.ndarray, p: float = 1, distance: Any = "tvd") -> np.ndarray:
    """GECE_p per group from (n_groups, n_bins, 1 + 2K') sums; NaN for a group without rows.

    (sum_b w_b d_b^p)^(1/p) with w_b = n_b / N for p in {1, 2}; max over
    non-empty bins of d_b for p = inf.
    """
    pv = _p(p)
    dist = _distance(distance)
    s = np.asarray(sums, dtype=np.float64)
    if s.ndim != 3 or s.shape[2] < 3 or s.shape[2] % 2 != 1:
        raise ParameterError(f"sums must be (n_groups, n_bins, 1 + 2K'). Got shape {s.shape}.")
    m = (s.shape[2] - 1) // 2
    n = s[..., 0]
    nonempty = n > 0
    safe = np.where(nonempty, n, 1.0)[..., None]
    gbar = s[..., 1 : 1 + m] / safe
    ybar = s[..., 1 + m :] / safe
    d = np.where(nonempty, dist(gbar, ybar), 0.0)
    total = n.sum(axis=1)
    empty_group = ~(total > 0)
    if math.isinf(pv):
        out = np.where(nonempty, d, -np.inf).max(axis=1)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            w = n / total[:, None]
        out = (np.where(nonempty, w * d**pv, 0.0)).sum(axis=1) ** (1.0 / pv)
    return np.where(empty_group, np.nan, out)


def gece(
    gp: Any,
    yp: Any,
    binning: tuple[str, float] = ("uniform", 15),
    p: float = 1,
    distance: Any = "tvd",
    groups: Any = None,
    n_groups: int = 1,
    weights: Any = None,
    bound: float | None = None,
) -> np.ndarray:
    """bin -> accumulate -> finalize on lensed arrays: GECE per group.

    ``binning``: ("uniform", B) or ("adaptive", gamma) (or ("adaptive_median", gamma)).
    ``bound``: a bound on every |g'| the caller guarantees (see ``adaptive_sums``).
    """
    schemes = ("uniform", "adaptive", "adaptive_median")
    if not (isinstance(binning, tuple) and len(binning) == 2 and isinstance(binning[0], str) and binning[0] in schemes):
        raise ParameterError(f"binning must be ('uniform', B) or ('adaptive', gamma). Got {binning!r}.")
    scheme, param = binning
    y = np.asarray(yp)
    if scheme == "adaptive" and weights is None and y.ndim == 1 and y.dtype.kind in "iu":
        # one-hot y' by position: the tree's own sums, no accumulate pass
        return gece_from_sums(adaptive_sums(gp, y, param, groups, n_groups, bound), p, distance)  # type: ignore[arg-type]
    if scheme == "uniform":
        ids, n_bins = uniform_grid(gp, param, groups, n_groups)  # type: ignore[arg-type]
    else:
        ids, n_bins = adaptive(gp, param, groups, n_groups, "median" if scheme == "adaptive_median" else "mean")
    sums = accumulate(gp, yp, ids, n_bins, groups, n_groups, weights)
    return gece_from_sums(sums, p, distance)


def gece_marginal(per_class: np.ndarray, p: float) -> np.ndarray:
    """The marginal GECE from the classes' (class:c) figures, (n_classes, n_groups): their max for p = inf, else
    their power mean."""
    return per_class.max(axis=0) if np.isinf(p) else (per_class**p).mean(axis=0) ** (1.0 / p)
