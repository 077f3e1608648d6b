"""One rule, several languages: the few operations the rules of :mod:`calframe.lenses` and
:mod:`calframe.binning` are written with, for numpy arrays, Polars expressions and SQL text.

A rule is a plain Python function over its inputs using ``+ - * /``, comparisons,
``&`` and the functions here (:func:`where`, :func:`floor`, :func:`minimum`,
:func:`flag`, :func:`floor_clip`; this module is also the ``xp`` argument of
:func:`calframe.binning.linear_quantile` and :func:`calframe.binning.lerp`);
given numpy arrays it computes, given ``pl.Expr`` (or a narwhals ``Expr``: DuckDB,
Spark, Ibis, pyarrow) it builds an expression, given :class:`Sql` it writes SQL.
So the rule is written once and every engine runs that same text.

>>> x = Sql("x")
>>> str(where(x > 0.5, x, 1.0 - x))
'CASE WHEN (x > 0.5e0) THEN x ELSE (1.0e0 - x) END'
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np
import polars as pl

from ._errors import ParameterError


def is_nw(x: Any) -> bool:
    """Whether ``x`` is a narwhals expression (False whenever narwhals has not been imported: an optional
    dependency, imported by :mod:`calframe.engines.native.sums`)."""
    nw = sys.modules.get("narwhals")
    return nw is not None and isinstance(x, nw.Expr)


def _expr(x: Any) -> bool:
    """A Polars or narwhals expression: the two share the method names used here."""
    return isinstance(x, pl.Expr) or is_nw(x)


def lit(x: float) -> str:
    """A float literal that parses back to exactly ``x`` as a DOUBLE in Polars SQL and DuckDB.

    ``repr`` is the shortest round-tripping form; an exponent is added when it
    has none, because DuckDB reads ``0.1`` as DECIMAL but ``0.1e0`` as DOUBLE.
    """
    x = float(x)
    if not math.isfinite(x):
        raise ParameterError(f"Cannot write the non-finite value {x!r} as a SQL literal.")
    s = repr(x)
    return s if ("e" in s or "E" in s) else s + "e0"


def _text(v: Any) -> str:
    if isinstance(v, Sql):
        return v.text
    if isinstance(v, (bool, np.bool_)):
        return "TRUE" if v else "FALSE"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    return lit(v)


def _binop(op: str, swap: bool = False) -> Any:
    """The method ``a <op> b`` (``b <op> a`` if ``swap``) of :class:`Sql`, parenthesised."""
    def method(self: "Sql", other: Any) -> "Sql":
        a, b = self.text, _text(other)
        return Sql(f"({b} {op} {a})" if swap else f"({a} {op} {b})")
    return method


class Sql:
    """SQL text of a scalar expression that composes with Python operators (each operation parenthesised)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Sql({self.text!r})"

    __add__, __radd__ = _binop("+"), _binop("+", True)
    __sub__, __rsub__ = _binop("-"), _binop("-", True)
    __mul__, __rmul__ = _binop("*"), _binop("*", True)
    __truediv__, __rtruediv__ = _binop("/"), _binop("/", True)
    __gt__, __ge__, __lt__, __le__ = _binop(">"), _binop(">="), _binop("<"), _binop("<=")  # type: ignore[assignment]
    __and__ = _binop("AND")


def where(cond: Any, a: Any, b: Any) -> Any:
    """``a`` where ``cond`` holds, else ``b``: numpy.where / pl.when / nw.when / CASE WHEN."""
    if isinstance(cond, pl.Expr):
        return pl.when(cond).then(a).otherwise(b)
    if is_nw(cond):
        return sys.modules["narwhals"].when(cond).then(a).otherwise(b)
    if isinstance(cond, Sql):
        return Sql(f"CASE WHEN {cond.text} THEN {_text(a)} ELSE {_text(b)} END")
    return np.where(cond, a, b)


def _function(sql: str, method: Any, array: Any, doc: str) -> Any:
    """A function of one value: ``method`` of a Polars expression, ``sql(x)`` on SQL text, ``array`` on numpy."""

    def function(x: Any) -> Any:
        if _expr(x):
            return getattr(x, method.__name__)()
        if isinstance(x, Sql):
            return Sql(f"{sql}({x.text})")
        return array(x)

    function.__doc__ = doc
    return function


floor = _function("FLOOR", pl.Expr.floor, np.floor,
                  "numpy.floor / ``Expr.floor`` / FLOOR (a float in every language).")
absolute = _function("ABS", pl.Expr.abs, np.abs, "numpy.abs / ``Expr.abs`` / ABS.")
sqrt = _function("SQRT", pl.Expr.sqrt, np.sqrt, "numpy.sqrt / ``Expr.sqrt`` / SQRT.")
#: the sum over a group's bins: numpy over the last axis (groups x bins), ``Expr.sum`` in a group_by, SUM in a
#: GROUP BY query
bin_sum = _function("SUM", pl.Expr.sum, lambda x: np.sum(x, axis=-1), "The sum over a group's bins.")
#: the largest value over a group's bins (numpy: over the last axis; MAX in SQL)
bin_max = _function("MAX", pl.Expr.max, lambda x: np.max(x, axis=-1), "The largest value over a group's bins.")


def minimum(a: Any, b: Any) -> Any:
    """numpy.minimum / ``pl.min_horizontal`` / ``nw.min_horizontal`` / LEAST."""
    if isinstance(a, Sql) or isinstance(b, Sql):
        return Sql(f"LEAST({_text(a)}, {_text(b)})")
    if is_nw(a) or is_nw(b):
        return sys.modules["narwhals"].min_horizontal(a, b)
    if isinstance(a, pl.Expr) or isinstance(b, pl.Expr):
        return pl.min_horizontal(a, b)
    return np.minimum(a, b)


def flag(cond: Any) -> Any:
    """1 where ``cond`` holds, else 0 (a float64 for Polars and narwhals, whose null stays null; an integer in
    SQL)."""
    if isinstance(cond, pl.Expr):
        return cond.cast(pl.Float64)
    if is_nw(cond):
        return cond.cast(sys.modules["narwhals"].Float64)
    if isinstance(cond, Sql):
        return Sql(f"CASE WHEN {cond.text} THEN 1 ELSE 0 END")
    return np.asarray(cond).astype(np.int64)


def floor_clip(v: Any, hi: Any) -> Any:
    """``clip(floor(v), 0, hi)``: a float64 for numpy, Polars and narwhals (NaN / null stay), a BIGINT in SQL."""
    if _expr(v):
        return v.floor().clip(0.0, hi)
    if isinstance(v, Sql):
        return Sql(f"LEAST(GREATEST(CAST(FLOOR({v.text}) AS BIGINT), 0), {_text(hi)})")
    return np.clip(np.floor(v), 0.0, hi)
