"""Calibration figures as Polars expressions: ``calframe.expr.ece(prob="p", label="y")`` is a ``pl.Expr``.

They go wherever a Polars aggregation goes: ``select``, ``group_by().agg()``
beside other aggregations, ``over()``, ``group_by_dynamic()``, on DataFrames
and LazyFrames, with any engine (``collect(engine="streaming")`` included).
Importing calframe also registers the same functions on expressions:
``pl.col("p").calib.ece(label="y")`` is ``calframe.expr.ece(prob=pl.col("p"), label="y")``.

Each figure is the one of the eager function of the same name, per group, with
the same numbers as ``calframe.ece(df, by=...)`` (docs/expressions.md):

- the columns (names or expressions) are gathered per group, as lists
  (``implode``), and handed to ONE Python call for all the groups of an
  aggregation (the call is elementwise over the groups: each group's value
  depends on its own rows only, so Polars may also split the groups into
  batches, as the streaming engine does);
- that call numbers the groups and runs the eager function with ``by=`` on
  them: the same validation, lens, bins, kernels and finalize, no rule of its
  own. One call instead of one per group is what keeps thousands of groups
  fast (one Python call per group costs ~10-40 us).

Rules of the expressions (tested in tests/test_expr.py)
-------------------------------------------------------
- Parameters are checked when the expression is built, by the eager
  function's own checks (same messages).
- Bad data raises the eager function's error (a subclass of
  :class:`calframe.CalframeError`) from ``collect()`` / the eager operation,
  with the same message; Polars passes it through with its type.
- A group with no rows (an empty window of ``group_by_dynamic``, a filter
  inside the expression that keeps nothing, every row null under
  ``nulls="drop"``) gives null: there is nothing to evaluate. No other case
  gives null, and none gives NaN.
- The ``prob``, ``label``, ``weights`` and ``variable`` expressions must give
  the same number of rows in each group (else :class:`InvalidValueError`).
- The result column is named after the figure (``"ece"``, ``"brier"``, ...);
  ``.alias()`` renames it.
- Figures that need the whole frame at once (bootstrap ``ci``, several
  variables) are not expressions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Union, Unpack

import inspect

import numpy as np
import polars as pl

from . import api
from . import registry
from . import request as R
from ._errors import EmptyInputError, InvalidValueError, bad_param
from ._names import fresh_name

__all__ = ["ce", "ece", "mce", "rmsce", "brier", "log_loss", "accuracy", "vece", "vmce", "smece", "ExprCalib"]

#: a column: its name, or an expression
IntoExpr = Union[str, pl.Expr]
#: the probabilities: one column (binary, or an Array / List of class probabilities), or K class columns
Probs = Union[IntoExpr, Sequence[IntoExpr]]


# the keyword parameters (request.py's groups; the row weights are a column or an expression here)


class Weighted(R.Nulls, total=False):
    weights: IntoExpr | None


class ECE(R.Bins, R.Lensed, Weighted, total=False):
    """ece, mce, vmce."""


class RMSCE(ECE, R.Debias, total=False):
    """rmsce: and ``estimator``."""


class VECE(ECE, R.Powered, R.Seeded, total=False):
    """vece: ``p``, the distance and the estimator too, and the seed of its resampling."""


class SmECE(R.Lensed, Weighted, total=False):
    """smece: and a fixed bandwidth ``sigma``."""

    sigma: float | None


class CE(ECE, R.Resampled, R.Seeded, total=False):
    """ce: every option of calframe.ce but the rows' and the interval's."""


# --------------------------------------------------------------------------- the one mechanism


def _as_expr(func: str, name: str, value: Any) -> pl.Expr:
    if isinstance(value, str):
        return pl.col(value)
    if isinstance(value, pl.Expr):
        return value
    raise bad_param(func, name, "a column name or a Polars expression", value)


def _roles(func: str, prob: Any, label: Any, weights: Any, variable: Any) -> list[tuple[str, pl.Expr]]:
    """(role, expression) of every input column: ``prob`` (one, or one per class), ``label``, then the optional
    ``weights`` and ``variable``."""
    if isinstance(prob, (str, pl.Expr)):
        out = [("prob", _as_expr(func, "prob", prob))]
    elif isinstance(prob, Sequence) and len(prob) >= 2:
        out = [("prob", _as_expr(func, "prob", p)) for p in prob]
    else:
        raise bad_param(func, "prob", "a column name or expression, or a list of at least 2 class columns", prob)
    out.append(("label", _as_expr(func, "label", label)))
    if weights is not None:
        out.append(("weights", _as_expr(func, "weights", weights)))
    if variable is not None:
        out.append(("variable", _as_expr(func, "variable", variable)))
    return out


def _columns(roles: list[str], names: list[str]) -> tuple[list[str], dict[str, Any]]:
    """Unique column names for the inputs (an input named like an earlier one takes its role's name) and the
    eager function's column arguments (``prob``, ``label``, ``weights``, ``variable``)."""
    taken: list[str] = []
    for role, name in zip(roles, names):
        taken.append(name if name not in taken else role if role not in taken and role not in names else
                     fresh_name(names + taken, role))
    probs = [n for r, n in zip(roles, taken) if r == "prob"]
    args: dict[str, Any] = {"prob": probs[0] if len(probs) == 1 else probs}
    args.update({r: n for r, n in zip(roles, taken) if r != "prob"})
    return taken, args


def _check_params(fn: Callable[..., Any], roles: list[str], params: dict[str, Any]) -> None:
    """Run the eager function's own parameter checks now, when the expression is built: on a frame without
    rows, they raise their ParameterError, or pass and the function stops at the empty frame."""
    names, args = _columns(roles, [f"c{i}" for i in range(len(roles))])
    probe = pl.DataFrame({n: pl.Series([], dtype=pl.Float64) for n in names})
    try:
        fn(probe, **args, **params)
    except EmptyInputError:
        return


def _figure(func: str, prob: Any, label: Any, weights: Any = None, variable: Any = None, **params: Any) -> pl.Expr:
    """The expression of the eager figure ``calframe.<func>``: its inputs imploded per group, one elementwise call
    for all the groups. A figure of several columns (the figure table's, e.g. ``brier_decomposition``) gives a
    Struct of them."""
    fn = getattr(api, func)
    inputs = _roles(func, prob, label, weights, variable)
    roles = [r for r, _ in inputs]
    _check_params(fn, roles, params)
    columns = registry.figure_of(func).names
    dtype = pl.Float64 if len(columns) == 1 else pl.Struct({c: pl.Float64 for c in columns})

    def per_group(series: Sequence[pl.Series]) -> pl.Series:
        return _per_group(func, fn, roles, params, series, columns)

    return pl.map_batches([e.implode() for _, e in inputs], per_group, return_dtype=dtype,
                          is_elementwise=True).alias(func)


def _per_group(func: str, fn: Callable[..., Any], roles: list[str], params: dict[str, Any],
               series: Sequence[pl.Series], columns: Sequence[str] = ()) -> pl.Series:
    """One value per row of the List inputs (a row holds one group's values): the eager figure with ``by=``
    (a Struct of ``columns`` for a figure of several)."""
    columns = list(columns) or [func]
    n_groups = series[0].len()
    lengths = series[0].list.len().fill_null(0)
    for role, s in zip(roles[1:], series[1:]):
        differ = int((s.list.len().fill_null(0) != lengths).sum())
        if differ:
            raise InvalidValueError(
                f"{func}: the {role} expression gives a different number of rows than the prob expression in "
                f"{differ} group(s) (of {n_groups}). Filter or transform every input of the figure alike."
            )
    present = (lengths > 0).to_numpy()
    out = {c: np.zeros(n_groups) for c in columns}
    if present.any():
        names, args = _columns(roles, [s.name for s in series])
        group = "group_index" if "group_index" not in names else fresh_name(names, "group_index")
        counts = lengths.to_numpy()[present]
        cols = [(s if present.all() else s.filter(present)).explode().alias(n) for s, n in zip(series, names)]
        cols.append(pl.Series(group, np.repeat(np.arange(counts.size, dtype=np.int32), counts)))
        res = fn(pl.DataFrame(cols), **args, by=group, **params)
        idx = np.flatnonzero(present)
        got = res[group].to_numpy()  # groups emptied by nulls="drop" are absent
        for c in columns:
            out[c][idx[got]] = res[c if len(columns) > 1 else func].to_numpy()
        present[:] = False
        present[idx[got]] = True
    missing = np.flatnonzero(~present)
    if len(columns) == 1:
        return pl.Series(func, out[columns[0]]).scatter(missing, None)
    return pl.DataFrame({c: pl.Series(c, v).scatter(missing, None) for c, v in out.items()}).to_struct(func)


# --------------------------------------------------------------------------- the figures


@R.keywords(CE)
def ce(prob: Probs, label: IntoExpr, **options: Unpack[CE]) -> pl.Expr:
    """Binned calibration error CE_p per group, as an expression named ``"ce"`` (:func:`calframe.ce`).

    ``prob``: a column name or expression (binary: the positive-class
    probability; or an Array / List column of class probabilities), or a list
    of K class columns. ``label``, ``weights``: a column name or expression.
    Every other parameter is :func:`calframe.ce`'s.

    Examples
    --------
    >>> import polars as pl, calframe
    >>> df = pl.DataFrame({"g": [0, 0, 1, 1], "p": [0.9, 0.8, 0.3, 0.6], "y": [1, 0, 0, 1]})
    >>> df.group_by("g", maintain_order=True).agg(calframe.expr.ce("p", "y", p=2), pl.len())
    shape: (2, 3)
    ┌─────┬──────────┬─────┐
    │ g   ┆ ce       ┆ len │
    │ --- ┆ ---      ┆ --- │
    │ i64 ┆ f64      ┆ u32 │
    ╞═════╪══════════╪═════╡
    │ 0   ┆ 0.570088 ┆ 2   │
    │ 1   ┆ 0.353553 ┆ 2   │
    └─────┴──────────┴─────┘
    """
    return _figure("ce", prob, label, **options)


@R.keywords(ECE)
def ece(prob: Probs, label: IntoExpr, **options: Unpack[ECE]) -> pl.Expr:
    """Expected calibration error per group, as an expression named ``"ece"`` (:func:`calframe.ece`).

    ``prob``: a column name or expression (binary: the positive-class
    probability; or an Array / List column of class probabilities), or a list
    of K class columns. ``label``, ``weights``: a column name or expression.
    ``bins``, ``binning``, ``closed``, ``lens``, ``nulls``: as :func:`calframe.ece`.

    Examples
    --------
    >>> import polars as pl, calframe
    >>> df = pl.DataFrame({"g": [0, 0, 1, 1], "p": [0.9, 0.8, 0.3, 0.6], "y": [1, 0, 0, 1]})
    >>> df.group_by("g", maintain_order=True).agg(calframe.expr.ece("p", "y"), pl.col("p").mean())
    shape: (2, 3)
    ┌─────┬──────┬──────┐
    │ g   ┆ ece  ┆ p    │
    │ --- ┆ ---  ┆ ---  │
    │ i64 ┆ f64  ┆ f64  │
    ╞═════╪══════╪══════╡
    │ 0   ┆ 0.45 ┆ 0.85 │
    │ 1   ┆ 0.35 ┆ 0.45 │
    └─────┴──────┴──────┘
    >>> df.select(pl.col("p").calib.ece(label="y"))  # the namespace form; one group: the whole frame
    shape: (1, 1)
    ┌─────┐
    │ ece │
    │ --- │
    │ f64 │
    ╞═════╡
    │ 0.4 │
    └─────┘
    """
    return _figure("ece", prob, label, **options)


@R.keywords(ECE)
def mce(prob: Probs, label: IntoExpr, **options: Unpack[ECE]) -> pl.Expr:
    """Maximum calibration error per group, as an expression named ``"mce"`` (:func:`calframe.mce`).

    Columns as :func:`ece`; the other parameters are :func:`calframe.mce`'s. Two of them in one ``select``
    need two names (``.alias()``).

    Examples
    --------
    >>> import polars as pl, calframe
    >>> df = pl.DataFrame({"p": [0.9, 0.8, 0.3, 0.6], "y": [1, 0, 0, 1]})
    >>> df.select(calframe.expr.mce("p", "y"), calframe.expr.mce("p", "y", bins=2).alias("mce_2"))
    shape: (1, 2)
    ┌─────┬───────┐
    │ mce ┆ mce_2 │
    │ --- ┆ ---   │
    │ f64 ┆ f64   │
    ╞═════╪═══════╡
    │ 0.8 ┆ 0.3   │
    └─────┴───────┘
    """
    return _figure("mce", prob, label, **options)


@R.keywords(RMSCE)
def rmsce(prob: Probs, label: IntoExpr, **options: Unpack[RMSCE]) -> pl.Expr:
    """Root-mean-square calibration error per group, as an expression named ``"rmsce"`` (:func:`calframe.rmsce`).

    Columns as :func:`ece`; the other parameters are :func:`calframe.rmsce`'s (``binning``: uniform for the
    plugin estimator, equal-mass for the debiased one, as :func:`ce`).

    Examples
    --------
    >>> import polars as pl, calframe
    >>> df = pl.DataFrame({"p": [0.9, 0.8, 0.3, 0.6], "y": [1, 0, 0, 1]})
    >>> round(df.select(calframe.expr.rmsce("p", "y")).item(), 6)
    0.474342
    """
    return _figure("rmsce", prob, label, **options)


def _companion(func: str, example: str) -> Callable[..., pl.Expr]:
    def figure(prob: Probs, label: IntoExpr, **options: Unpack[Weighted]) -> pl.Expr:
        return _figure(func, prob, label, **options)

    figure.__name__ = figure.__qualname__ = func
    figure.__doc__ = f"""{getattr(api, func).__doc__.splitlines()[0]}

    Per group, as an expression named ``"{func}"`` (:func:`calframe.{func}`). Columns as :func:`ece`.

    Examples
    --------
    >>> import polars as pl, calframe
    >>> df = pl.DataFrame({{"p": [0.9, 0.8, 0.3, 0.6], "y": [1, 0, 0, 1]}})
    >>> round(df.select(calframe.expr.{func}("p", "y")).item(), 6)
    {example}
    """
    return R.keywords(Weighted)(figure)


brier = _companion("brier", "0.225")
log_loss = _companion("log_loss", "0.645575")
accuracy = _companion("accuracy", "0.75")


@R.keywords(VECE, bins=10, binning="quantile")
def vece(variable: IntoExpr, prob: Probs, label: IntoExpr, **options: Unpack[VECE]) -> pl.Expr:
    """Variable-based ECE per group, as an expression named ``"vece"`` (:func:`calframe.vece`): rows binned on
    ``variable`` (a column name or expression; one variable), each group's own bins.

    Columns as :func:`ece`; the other parameters are :func:`calframe.vece`'s.

    Examples
    --------
    >>> import calframe
    >>> df = calframe.datasets.grouped_miscalibration(n=4000, seed=0, age_shift=0.15)
    >>> round(df.select(calframe.expr.vece("age", "prob", "label")).item(), 4)
    0.1235
    """
    return _figure("vece", prob, label, variable=variable, **options)


@R.keywords(ECE, bins=10, binning="quantile")
def vmce(variable: IntoExpr, prob: Probs, label: IntoExpr, **options: Unpack[ECE]) -> pl.Expr:
    """Variable-based MCE per group, as an expression named ``"vmce"`` (:func:`calframe.vmce`).

    Columns as :func:`vece`; the other parameters are :func:`calframe.vmce`'s.

    Examples
    --------
    >>> import calframe
    >>> df = calframe.datasets.grouped_miscalibration(n=4000, seed=0)
    >>> df.select(calframe.expr.vmce("region", "prob", "label") >= calframe.expr.vece("region", "prob", "label")).item()
    True
    """
    return _figure("vmce", prob, label, variable=variable, **options)


@R.keywords(SmECE)
def smece(prob: Probs, label: IntoExpr, **options: Unpack[SmECE]) -> pl.Expr:
    """Smooth ECE per group, as an expression named ``"smece"`` (:func:`calframe.smece`; relplot's ``smECE``).

    Examples
    --------
    >>> import polars as pl, calframe
    >>> df = calframe.datasets.grouped_miscalibration(n=4000, seed=0)
    >>> out = df.group_by("region").agg(calframe.expr.smece("prob", "label")).sort("region")
    >>> out["smece"].to_list() == calframe.smece(df, by="region")["smece"].to_list()
    True
    """
    return _figure("smece", prob, label, **options)


def _declared(func: str) -> Callable[..., pl.Expr]:
    """The expression of a figure of the figure table declared on "expr" without a function written here: its
    options are those of ``calframe.<func>`` (the row weights a column or an expression)."""

    def figure(prob: Probs, label: IntoExpr, **options: Any) -> pl.Expr:
        return _figure(func, prob, label, **options)

    names = registry.figure_of(func).names
    what = f'named ``"{func}"``' if len(names) == 1 else f"``{func}``, a Struct of {', '.join(names)}"
    figure.__name__ = figure.__qualname__ = func
    figure.__doc__ = (f"``calframe.{func}`` per group, as an expression {what} (:func:`calframe.{func}`).\n\n"
                      f"    Columns as :func:`ece`; every other parameter is :func:`calframe.{func}`'s.\n")
    return figure


#: the figures of the figure table on "expr" that have no function above (a new figure is here by its declaration)
for _name in registry.figures("expr"):
    if _name not in __all__:
        globals()[_name] = _declared(_name)
        __all__.insert(-1, _name)


# --------------------------------------------------------------------------- pl.col("p").calib


class ExprCalib:
    """``expr.calib``: the figures of :mod:`calframe.expr` with ``expr`` as the probabilities.

    ``pl.col("p").calib.ece(label="y", bins=10) == calframe.expr.ece(pl.col("p"), "y", bins=10)``.
    (Holds the expression only; Polars creates one per attribute access.)
    """

    __slots__ = ("_expr",)

    def __init__(self, expr: pl.Expr) -> None:
        self._expr = expr


def _method(fn: Callable[..., pl.Expr]) -> Callable[..., pl.Expr]:
    """``ExprCalib.<name>``: ``fn`` with the namespace's expression as ``prob`` (same docstring and the other
    parameters)."""
    sig = inspect.signature(fn)
    params = [q for n, q in sig.parameters.items() if n != "prob"]
    rest = sig.replace(parameters=params)

    def method(self: ExprCalib, *args: Any, **kwargs: Any) -> pl.Expr:
        try:
            bound = rest.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{fn.__name__}() {exc}") from None
        return fn(prob=self._expr, **bound.arguments)

    self_ = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    method.__signature__ = rest.replace(parameters=[self_, *params])  # type: ignore[attr-defined]
    method.__name__, method.__qualname__, method.__doc__ = fn.__name__, f"ExprCalib.{fn.__name__}", fn.__doc__
    return method


for _name in __all__[:-1]:  # the figures (ExprCalib last)
    setattr(ExprCalib, _name, _method(globals()[_name]))


def __dir__() -> list[str]:
    """The public names (``__all__``), not the modules and typing names this module imports."""
    return sorted(__all__)


pl.api.register_expr_namespace("calib")(ExprCalib)
