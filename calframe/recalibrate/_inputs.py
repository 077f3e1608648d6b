"""Array-level input checks and the scalar views (lenses) the recalibrators fit on.

Probabilities are either a 1-d array (binary: the positive-class probability
p, read as [1 - p, p]) or an (n, K) array of class probabilities.  Labels are
integer class indices 0..K-1.

Lenses (SPEC section 1) reduce a probability row and its label to one score s
and one 0/1 target t:

* ``"class:c"``: s = g_c, t = [y == c] (binary input: ``"class:1"`` is s = p).
* ``"top1"``: s = max_j g_j, t = [y == argmax_j g_j], ties to the lowest class
  index (binary input: s = max(p, 1 - p), predicted class 1 only when p > 0.5).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import InvalidValueError, ParameterError, bad_param, rows
from ..lenses import predicted
from .._params import is_int


@dataclass(frozen=True)
class Probs:
    """Validated probabilities: ``P`` (n, K) always; ``p`` the original 1-d input or None."""

    P: np.ndarray
    p: np.ndarray | None

    @property
    def n(self) -> int:
        return self.P.shape[0]

    @property
    def K(self) -> int:
        return self.P.shape[1]


def as_probs(probs, func: str, n_classes: int | None = None) -> Probs:
    a = np.asarray(probs)
    if a.dtype.kind not in "fiub":
        raise InvalidValueError(f"{func}: probabilities must be numeric, got dtype {a.dtype}.")
    a = np.ascontiguousarray(a, dtype=np.float64)
    if a.ndim == 1:
        P = np.empty((a.shape[0], 2))  # [1 - p, p], filled in place
        np.subtract(1.0, a, out=P[:, 0])
        P[:, 1] = a
        p = a
    elif a.ndim == 2 and a.shape[1] >= 2:
        P = a
        p = None
    else:
        raise InvalidValueError(
            f"{func}: probabilities must be a 1-d array (binary positive-class probability) or an (n, K) array "
            f"with K >= 2; got shape {a.shape}."
        )
    bad = ~((a >= 0.0) & (a <= 1.0))
    if bad.any():
        nbad = int(bad.any(axis=1).sum()) if a.ndim == 2 else int(bad.sum())
        raise InvalidValueError(
            f"{func}: probabilities must be finite and in [0, 1]; {rows(nbad)} are not (NaN, infinite or out of range)."
        )
    if n_classes is not None and P.shape[1] != n_classes:
        raise InvalidValueError(
            f"{func}: the recalibrator was fitted on {n_classes} classes; got probabilities for {P.shape[1]}."
        )
    return Probs(P, p)


def as_labels(labels, n: int, K: int, func: str) -> np.ndarray:
    y = np.asarray(labels)
    if y.ndim != 1 or y.shape[0] != n:
        raise InvalidValueError(f"{func}: labels must be a 1-d array with one entry per row ({n}); got shape {y.shape}.")
    if y.dtype.kind == "b":
        y = y.astype(np.int64)
    elif y.dtype.kind == "f":
        if not np.all(np.isfinite(y)) or np.any(y != np.round(y)):
            raise InvalidValueError(f"{func}: labels must be integer class indices; got non-integer floats.")
        y = y.astype(np.int64)
    elif y.dtype.kind not in "iu":
        raise InvalidValueError(f"{func}: labels must be integer class indices 0..K-1; got dtype {y.dtype}.")
    y = y.astype(np.int64, copy=False)
    bad = (y < 0) | (y >= K)
    if bad.any():
        raise InvalidValueError(f"{func}: labels must lie in 0..{K - 1}; {rows(int(bad.sum()))} do not.")
    return y


def as_variable(v, n: int, func: str, name: str = "v") -> np.ndarray:
    if v is None:
        raise ParameterError(f"{func}: this recalibrator needs the variable array {name}=...")
    a = np.asarray(v)
    if a.dtype.kind not in "fiub":
        raise InvalidValueError(f"{func}: {name} must be numeric, got dtype {a.dtype}.")
    if a.ndim == 2 and a.shape[1] == 1:
        a = a[:, 0]
    a = np.ascontiguousarray(a, dtype=np.float64).reshape(-1) if a.ndim <= 1 else None
    if a is None or a.shape[0] != n:
        raise InvalidValueError(f"{func}: {name} must be a 1-d array with one entry per row ({n}).")
    bad = ~np.isfinite(a)
    if bad.any():
        raise InvalidValueError(f"{func}: {name} must be finite; {rows(int(bad.sum()))} are NaN or infinite.")
    return a


def as_weights(weights, n: int, func: str) -> np.ndarray | None:
    """Row weights for a fit: None, or a 1-d array of n finite, non-negative numbers with a positive sum
    (frequency or importance weights: a row of weight 2 counts as two rows)."""
    if weights is None:
        return None
    a = np.asarray(weights)
    if a.dtype.kind not in "fiub":
        raise InvalidValueError(f"{func}: weights must be numeric, got dtype {a.dtype}.")
    a = np.ascontiguousarray(a, dtype=np.float64)
    if a.ndim != 1 or a.shape[0] != n:
        raise InvalidValueError(f"{func}: weights must be a 1-d array with one entry per row ({n}); got shape "
                                f"{a.shape}.")
    bad = ~(np.isfinite(a) & (a >= 0.0))
    if bad.any():
        raise InvalidValueError(f"{func}: weights must be finite and non-negative; {rows(int(bad.sum()))} are not "
                                "(NaN, infinite or negative).")
    if n and not (a > 0).any():
        raise InvalidValueError(f"{func}: every weight is 0 ({rows(n)}); a fit needs rows of positive weight.")
    return a


LENS_EXPECTED = "'top1', 'class:c' (c a class index) or None (class:1 for binary input, else top1)"


def check_lens(func: str, name: str, lens: Any) -> str | None:
    """A lens parameter before the number of classes is known: None, 'top1' or 'class:<int>'."""
    if lens is None or lens == "top1" or (isinstance(lens, str) and re.fullmatch(r"class:[0-9]+", lens)):
        return lens
    raise bad_param(func, name, LENS_EXPECTED, lens)


def parse_lens(lens: str | None, K: int, func: str) -> str:
    """Canonical lens string: 'top1' or 'class:c'. None -> 'class:1' (K = 2) or 'top1'."""
    check_lens(func, "lens", lens)
    if lens is None:
        return "class:1" if K == 2 else "top1"
    if lens == "top1":
        return "top1"
    c = int(lens[6:])
    if c < K:
        return f"class:{c}"
    raise bad_param(func, "lens", f"'top1' or 'class:c' with 0 <= c < {K} (the number of classes)", lens)


def top1(pr: Probs) -> tuple[np.ndarray, np.ndarray]:
    """(conf, predicted class) of the top1 lens (:func:`calframe.lenses.predicted`)."""
    return predicted(pr.p if pr.p is not None else pr.P)


def lens_score(pr: Probs, lens: str) -> np.ndarray:
    """The lensed score s."""
    if lens == "top1":
        return top1(pr)[0]
    c = int(lens[6:])
    if pr.p is not None:
        return pr.p if c == 1 else 1.0 - pr.p
    return np.ascontiguousarray(pr.P[:, c])


def lens_view(pr: Probs, y: np.ndarray, lens: str) -> tuple[np.ndarray, np.ndarray]:
    """(s, t): lensed score and 0/1 target as float64."""
    if lens == "top1":
        conf, cls = top1(pr)
        return conf, (cls == y).astype(np.float64)
    c = int(lens[6:])
    return lens_score(pr, lens), (y == c).astype(np.float64)


class OneClassError(InvalidValueError):
    """A fit that needs both values of its 0/1 target got one only; ``detail`` = (func, lens, value, n)."""

    detail: tuple[str, str, int, int] | None = None


def one_class_error(func: str, lens: str, value: int, n: int, label: str | None = None) -> OneClassError:
    """The message of a logistic fit whose lens target ``t`` is ``value`` on all ``n`` rows.

    ``label``: the label column's name (the frame-level ``calframe.fit`` knows it), else "the labels".
    """
    where = "the labels" if label is None else f"the label column {label!r}"
    if lens == "top1":
        what = (f"every top-1 prediction is {'right' if value else 'wrong'} in {rows(n)} ({where} "
                f"{'always' if value else 'never'} equal{'s' if label else ''} the predicted class)")
        target = "the top-1 correctness"
    else:
        c = lens[6:]
        what = f"{where} hold{'s' if label else ''} {'class ' + c + ' only' if value else 'no row of class ' + c} in {rows(n)}"
        target = f"the frequency of class {c}"
    exc = OneClassError(f"{func}: {what}; a logistic fit of {target} needs rows of both outcomes. Fit on rows with "
                        "both, or use a method that does not need them (histogram, isotonic, temperature).")
    exc.detail = (func, lens, int(value), int(n))
    return exc


def min_leaf_count(min_leaf: int | float, n: int) -> int:
    """scikit-learn's min_samples_leaf rule: an int >= 1 as is, a float in (0, 1) -> ceil(f * n) (checked by
    ``tree.check_min_leaf``)."""
    if is_int(min_leaf):
        return int(min_leaf)
    return max(1, int(np.ceil(float(min_leaf) * n)))
