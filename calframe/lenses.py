"""Lenses (SPEC §1.2): map (probabilities, label) to the (conf, acc) that gets binned.

Scalar lenses:

- ``"top1"``: conf = max_j g_j, acc = 1 if the top class is the label. Ties
  go to the lowest class index; for binary input conf = max(p, 1 - p) and
  class 1 is predicted only when p > 0.5.
- ``"class:c"``: conf = g_c, acc = 1 if the label is c (``"class:1"`` on binary
  input is positive-class calibration, what scikit-learn's calibration_curve plots).

The default (``lens=None``, also spelled ``"auto"``; SPEC §8 "Default lens")
depends on the shape of the probabilities and is resolved by :func:`resolve_lens`
alone: ``class:1`` for a single probability column (binary input: the
positive class, as scikit-learn, torchmetrics' BinaryCalibrationError, relplot
and uncertainty-calibration measure it; the top-label lens would let over- and
under-confidence cancel inside a bin) and ``top1`` for class probabilities
(several columns, or one Array / List column).

``"marginal"`` is not a lens but the class-averaged form of the ``class:c``
metrics, each class binned on its own (Kumar et al. Def. 2.4).

This module is the one place the lens is defined; every engine calls it:
:func:`binary_rule` (one probability column, written once over numpy, Polars
and SQL), :func:`predicted` / :func:`top1` / :func:`class_lens` (numpy),
:func:`lens_exprs` (Polars expressions), :func:`lens_nw` (narwhals expressions), :func:`lens_sql` (SQL text).
tests/test_rules.py holds them (and GECE's numba vector lens) to a by-hand
reference on ties and on p = 0.5 and its neighbouring floats.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import polars as pl

from ._columns import Scored
from ._errors import ParameterError, bad_param
from ._render import Sql, where

LENS_NAMES = ("top1", "class:<c>", "marginal")


@dataclass(frozen=True)
class Lens:
    #: "auto" is the unresolved default; :func:`resolve_lens` turns it into class:1 or top1
    kind: Literal["auto", "top1", "class", "marginal"]
    c: int = -1

    def __str__(self) -> str:
        return f"class:{self.c}" if self.kind == "class" else self.kind


def class_(c: int) -> str:
    """The lens string for class ``c``: ``class_(1) == "class:1"``."""
    return f"class:{int(c)}"


_CLASS_RE = re.compile(r"^class[:(]\s*(\d+)\s*\)?$")


AUTO = Lens("auto")


def parse_lens(func: str, lens: "str | Lens | None", n_classes: int | None = None) -> Lens:
    """The :class:`Lens` of a ``lens`` argument; None (or ``"auto"``) is :data:`AUTO`, resolved later."""
    if isinstance(lens, Lens):
        out = lens
    elif lens is None or lens == "auto":
        out = AUTO
    elif not isinstance(lens, str):
        raise bad_param(func, "lens", f"None or one of {list(LENS_NAMES)}", lens)
    elif lens in ("top1", "marginal"):
        out = Lens(lens)  # type: ignore[arg-type]
    else:
        m = _CLASS_RE.match(lens.strip())
        if not m:
            raise bad_param(func, "lens", f"None or one of {list(LENS_NAMES)} (e.g. 'class:1')", lens)
        out = Lens("class", int(m.group(1)))
    if n_classes is not None and out.kind == "class" and out.c >= n_classes:
        raise ParameterError(
            f"The 'lens' parameter of {func} asks for class {out.c}, but the probabilities have "
            f"{n_classes} classes (0..{n_classes - 1})."
        )
    return out


def resolve_lens(lens: Lens, binary: bool) -> Lens:
    """The lens a call measures: the default (:data:`AUTO`) is ``class:1`` for a single
    probability column (``binary``) and ``top1`` for class probabilities; any other lens as given.

    This is the one place the default is decided (every surface calls it once the
    shape of the probabilities is known).
    """
    if lens.kind != "auto":
        return lens
    return Lens("class", 1) if binary else Lens("top1")


def binary_dtype(dtype: Any) -> bool:
    """Whether one probability column of this Polars dtype is binary input (not an Array / List of classes)."""
    return not isinstance(dtype, (pl.Array, pl.List))


def lens_used(frame: Any, prob: "str | Sequence[str] | None" = None, lens: "str | Lens | None" = None,
              func: str = "lens_used") -> str:
    """The lens (as a string) a calframe call with these ``prob`` / ``lens`` arguments measures on ``frame``.

    Reads the schema only (pandas: the first row of the probability column).

    Examples
    --------
    >>> import polars as pl
    >>> lens_used(pl.DataFrame({"prob": [0.2], "label": [1]}))
    'class:1'
    >>> lens_used(pl.DataFrame({"p0": [0.8], "p1": [0.2], "label": [1]}), prob=["p0", "p1"])
    'top1'
    >>> lens_used(pl.DataFrame({"prob": [0.2]}), lens="top1")
    'top1'
    """
    lens_ = parse_lens(func, lens)
    if lens_.kind != "auto":
        return str(lens_)
    if prob is not None and not isinstance(prob, str):
        return str(resolve_lens(lens_, False))
    from ._columns import PROB_CANDIDATES, check_present, pick_default, columns_of
    from .frames.convert import schema

    names = columns_of(frame)
    name = prob if prob is not None else pick_default(names, PROB_CANDIDATES, "probability", "prob", func)
    check_present(names, [name], func, "prob")
    dtype = schema(frame, [name], func)[name]
    return str(resolve_lens(lens_, binary_dtype(dtype)))


def binary_top1(p: Any) -> tuple[Any, Any]:
    """(conf, predicted class 1?) of the top-1 lens on binary input, in any language (:mod:`calframe._render`):
    class 1 is predicted only when ``p > 0.5`` (a tie at 0.5 goes to class 0, the lowest index, as on class
    probabilities), and conf is the predicted class's probability."""
    pred = p > 0.5
    return where(pred, p, 1.0 - p), pred


def binary_rule(lens: Lens, p: Any, y: Any) -> tuple[Any, Any]:
    """The lens on binary input, written once for every language (:mod:`calframe._render`).

    ``p`` is the positive-class probability and ``y`` the label as a 0/1 number
    (numpy arrays, Polars expressions or :class:`~calframe._render.Sql`);
    ``lens`` is resolved (``top1`` or ``class:0`` / ``class:1``).
    """
    if lens.kind == "top1":
        conf, pred = binary_top1(p)
        return conf, where(pred, y, 1 - y)
    if lens.c == 1:
        return p, y
    return 1.0 - p, 1 - y


def predicted(probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(conf float64, predicted class int64) of the top-1 lens on numpy probabilities, (n,) binary or (n, K):
    the first maximum (numpy.argmax) is the predicted class."""
    if probs.ndim == 1:
        conf, pred = binary_top1(probs)
        return conf, pred.astype(np.int64)
    pred = np.argmax(probs, axis=1)
    return probs[np.arange(probs.shape[0]), pred], pred


def top1(scored: Scored) -> tuple[np.ndarray, np.ndarray]:
    """(conf float64, correct uint8) of the top-1 lens."""
    if scored.binary:
        return binary_rule(Lens("top1"), scored.probs, scored.labels)
    conf, pred = predicted(scored.probs)
    return conf, (pred == scored.labels).astype(np.uint8)


def class_lens(scored: Scored, c: int) -> tuple[np.ndarray, np.ndarray]:
    """(g_c float64, [y == c] uint8)."""
    p, y = scored.probs, scored.labels
    if scored.binary:
        return binary_rule(Lens("class", c), p, y)
    return np.ascontiguousarray(p[:, c]), (y == c).astype(np.uint8)


def scalar(scored: Scored, lens: Lens, func: str = "calframe") -> tuple[np.ndarray, np.ndarray]:
    """(conf, acc) of a scalar lens; the default is resolved against ``scored``'s shape. A class lens past
    the classes of ``scored`` is the ParameterError of :func:`parse_lens` (naming ``func``)."""
    lens = resolve_lens(lens, scored.binary)
    if lens.kind == "top1":
        return top1(scored)
    if lens.kind == "class":
        parse_lens(func, lens, scored.n_classes)  # raises the class-range error
        return class_lens(scored, lens.c)
    raise ParameterError("the marginal lens has no single scalar output; it averages the class lenses")


# --------------------------------------------------------------------------- the lens in Polars and SQL


def label_is(label: pl.Expr, c: int, label_kind: str = "int") -> pl.Expr:
    """``label == c`` in the label's own dtype (``label_kind``: "bool", "int" or "float")."""
    if label_kind == "bool":
        return label if c == 1 else ~label
    return label == (float(c) if label_kind == "float" else c)


def _scalar_lens(lens: Lens, binary: bool, func: str) -> Lens:
    """The scalar lens an expression rendering computes: the default resolved, the marginal lens refused, a
    class past 1 on binary input the ParameterError of :func:`parse_lens`."""
    lens = resolve_lens(lens, binary)
    if lens.kind == "marginal":
        raise ParameterError("the marginal lens has no single scalar output; it averages the class lenses")
    if binary and lens.kind == "class":
        parse_lens(func, lens, 2)
    return lens


def lens_exprs(lens: Lens, probs: "pl.Expr | Sequence[pl.Expr]", label: pl.Expr, *, k: int | None = None,
               label_kind: str = "int", func: str = "calframe", ns: Any = pl) -> tuple[pl.Expr, pl.Expr]:
    """(conf, acc) Float64 expressions of a scalar lens, the same numbers as :func:`scalar`: Polars expressions,
    or narwhals ones with ``ns=narwhals`` (DuckDB, Spark, Ibis, pyarrow), from this one text.

    ``probs`` is one Float64 expression (binary input: the positive-class
    probability), a sequence of the K class probabilities as Float64
    expressions, or, with ``k=K``, one ``Array(Float64, K)`` expression (Polars).
    ``label`` is the label column, of ``label_kind`` "bool", "int" or "float"
    (valid labels: 0/1 or Boolean on binary input, 0..K-1 otherwise; what
    other rows give is unspecified, the caller checks them). The default lens
    is resolved here; a class past K is the ParameterError of
    :func:`parse_lens` naming ``func``. Top-1 ties go to the lowest class index, as numpy.argmax
    (:func:`predicted`).

    >>> conf, acc = lens_exprs(Lens("top1"), pl.col("p"), pl.col("y"))
    >>> pl.DataFrame({"p": [0.2, 0.5, 0.9], "y": [0, 1, 1]}).select(conf, acc.alias("acc")).rows()
    [(0.8, 1.0), (0.5, 0.0), (0.9, 1.0)]
    """
    binary = not isinstance(probs, (list, tuple)) and k is None
    lens = _scalar_lens(lens, binary, func)
    if binary:
        return binary_rule(lens, probs, label.cast(ns.Float64))
    if not isinstance(probs, (list, tuple)):  # a Polars Array column
        assert k is not None
        classes = [probs.arr.get(j) for j in range(k)]
    else:
        classes, k = list(probs), len(probs)
    if lens.kind == "class":
        parse_lens(func, lens, k)
        return classes[lens.c], label_is(label, lens.c, label_kind).cast(ns.Float64)
    if not isinstance(probs, (list, tuple)):
        conf, pred = probs.arr.max(), probs.arr.arg_max()  # arg_max: ties to the lowest index, as numpy.argmax
    elif ns is pl and k > 16:
        conf, pred = pl.max_horizontal(classes), pl.concat_arr(classes).arr.arg_max()
    else:
        conf = ns.max_horizontal(*classes)
        pred = ns.lit(k - 1)
        for j in range(k - 2, -1, -1):  # the first maximum wins
            pred = ns.when(classes[j] == conf).then(ns.lit(j)).otherwise(pred)
    correct = (pred.cast(ns.Float64) == label) if label_kind == "float" else (pred.cast(ns.Int64) == label)
    return conf, correct.cast(ns.Float64)


def lens_nw(lens: Lens, probs: Any, label: Any, *, label_kind: str = "int",
            func: str = "calframe") -> tuple[Any, Any]:
    """:func:`lens_exprs` in narwhals expressions: ``probs`` is one Float64 expression (binary input) or a list of
    the K class probabilities."""
    import narwhals as nw

    return lens_exprs(lens, probs, label, label_kind=label_kind, func=func, ns=nw)


def lens_sql(lens: Lens, p: str, y: str) -> tuple[str, str]:
    """(conf, acc) SQL text of a binary lens over DOUBLE expressions ``p`` (positive-class probability) and
    ``y`` (0/1 label): :func:`binary_rule` written out (the default lens is class:1).

    >>> lens_sql(Lens("top1"), "p", "y")
    ('CASE WHEN (p > 0.5e0) THEN p ELSE (1.0e0 - p) END', 'CASE WHEN (p > 0.5e0) THEN y ELSE (1 - y) END')
    """
    conf, acc = binary_rule(resolve_lens(lens, True), Sql(p), Sql(y))
    return str(conf), str(acc)
