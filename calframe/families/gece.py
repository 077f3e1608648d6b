"""The generalized ECE (Kirchenbauer et al.): lenses, distances, label and output selection."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Unpack

import numpy as np
import polars as pl

from .. import _errors as E
from .. import lenses as L
from .. import request as R
from .._columns import SUM_TOLERANCE, Scored, columns_of
from .._errors import (
    ParameterError,
    bad_param,
)
from .._keywords import Columns
from .._names import fresh_name
from .. import engines
from ..engines.eager import Frame, Result
from ..frames.dispatch import public
from ..registry import Column, Figure
from ..frames import convert
from ..generalized import gece_marginal
from .plan import PLANNING, run_plan

# --------------------------------------------------------------------------- generalized ECE (Kirchenbauer et al.)


#: what ``where=`` accepts (the message of every refusal)
_WHERE = ("a Polars expression, a SQL expression string (e.g. \"label > 1 AND region = 'eu'\"), a callable "
          "returning one of these, or a boolean mask with one True/False per row")


def _where(frame: Frame, where: Any, func: str) -> Frame:
    """Rows of ``frame`` kept by ``where`` (spec section 8, "Row selections"), the same rows on every frame type.

    A SQL string becomes ``pl.sql_expr(where)``; an expression is evaluated by Polars on the
    frame's columns (a pandas frame's are read as calframe reads them, NaN in numpy float columns
    as null) and keeps the rows where it is True (null is not True); a callable gets the frame and returns an expression or a mask;
    a mask is 1-D, Boolean (null = not kept) and positional, one entry per row.
    """
    if where is None:
        return frame
    if isinstance(where, str):
        if not where.strip():
            raise bad_param(func, "where", _WHERE + "; an empty string selects nothing", where)
        try:
            where = pl.sql_expr(where)
        except Exception as exc:
            raise ParameterError(f"The 'where' parameter of {func} is not a SQL expression Polars can parse "
                                 f"({type(exc).__name__}: {exc}). Got {where!r}; it must be {_WHERE}. Quote a column "
                                 "name that is a SQL keyword or not a plain identifier: \"group\" = 'a'.") from None
    elif callable(where) and not isinstance(where, pl.Expr):
        try:
            where = where(frame)
        except Exception as exc:
            raise ParameterError(f"The 'where' parameter of {func}: the callable failed on the frame "
                                 f"({type(exc).__name__}: {exc}).") from None
    if isinstance(where, pl.Expr):
        return _where_expr(frame, where, func)
    return convert.rows_where(frame, _where_mask(frame, where, func))


def _where_expr(frame: Frame, expr: pl.Expr, func: str) -> Frame:
    """``frame`` filtered by a Polars expression, checked first against the columns (a Boolean column)."""
    names = columns_of(frame)
    used = list(dict.fromkeys([c for c in expr.meta.root_names() if c in names] or names))  # a pandas frame's
    lf = convert.as_polars(frame, used, func, nan_null=used).lazy()
    try:
        dtype = lf.select(expr).collect_schema().dtypes()
    except Exception as exc:
        raise ParameterError(f"The 'where' parameter of {func} could not be evaluated on the frame's columns "
                             f"{names} ({type(exc).__name__}: {str(exc).splitlines()[0]}).") from None
    if dtype != [pl.Boolean]:
        raise ParameterError(f"The 'where' parameter of {func} must give one Boolean column (True = keep the row); "
                             f"{expr} gives {dtype}. It must be {_WHERE}.")
    try:  # evaluated here, also on a LazyFrame, so that a failure is reported as the where's
        keep = fresh_name(names, "keep")  # the mask (a scalar broadcast to every row), then the rows it keeps
        return convert.rows_where(frame, lf.with_columns(expr.alias(keep)).select(keep).collect()[keep])
    except pl.exceptions.PolarsError as exc:
        raise ParameterError(f"The 'where' parameter of {func} failed on the frame's rows "
                             f"({type(exc).__name__}: {str(exc).splitlines()[0]}); {expr} must evaluate without "
                             "error on every row (cast or fix the columns it compares).", "where") from None


def _where_mask(frame: Frame, where: Any, func: str) -> pl.Series:
    """``where`` as a Boolean Series with one entry per row of ``frame``, or a ParameterError."""
    if np.ndim(where) != 1 or isinstance(where, (dict, set)):
        raise bad_param(func, "where", _WHERE, where)
    try:
        mask = pl.Series("where", where)
    except Exception:
        raise bad_param(func, "where", _WHERE, where) from None
    if mask.dtype != pl.Boolean:
        hint = (" Integer row positions are not a selection: build a mask, e.g. m = np.zeros(n_rows, bool); "
                "m[positions] = True.") if mask.dtype.is_integer() else ""
        raise ParameterError(f"The 'where' parameter of {func} must be {_WHERE}. Got a mask of dtype {mask.dtype}."
                             + hint)
    n = convert.height(frame)
    if mask.len() != n:
        raise ParameterError(f"The 'where' parameter of {func} must select rows: a boolean mask of {n} rows. "
                             f"Got {mask.len()} entries.")
    return mask


def _select_rows(scored: Scored, func: str, labels_in: Sequence[int] | None, output: np.ndarray | None,
                 output_between: tuple[float, float] | None) -> Scored:
    """The selection operators of GECE §4.1 on labels and outputs (both ends inclusive)."""
    mask = np.ones(scored.n, dtype=bool)
    if labels_in is not None:
        wanted = np.asarray(list(labels_in))
        if wanted.size == 0 or not np.issubdtype(wanted.dtype, np.integer):
            raise bad_param(func, "labels_in", "a non-empty list of class indices", labels_in)
        bad = wanted[(wanted < 0) | (wanted >= scored.n_classes)]
        if bad.size:
            raise ParameterError(f"The 'labels_in' parameter of {func} holds {bad.tolist()}, outside the classes "
                                 f"0..{scored.n_classes - 1}.")
        mask &= np.isin(scored.labels, wanted)
    if output_between is not None:
        lo, hi = output_between
        mask &= (output >= lo) & (output <= hi)  # type: ignore[operator]
    if mask.all():
        return scored
    if not mask.any():
        raise E.nothing_selected(func, f"labels_in={labels_in}, output_between={output_between}")
    return scored.subset(mask)


@public(state="vector_sums", figure=Figure((Column(
    "gece", "GECE", "the generalized ECE of a lens and distance; 0 is perfect"),), on=frozenset({"disparity", "sklearn"})))
@R.keywords(R.Sample)
def gece(
    frame: Frame,
    prob: Columns = None,
    label: str | None = None,
    *,
    lens: str | None = None,
    k: int | None = None,
    groups: Sequence[Sequence[int]] | None = None,
    distance: Any = "tvd",
    p: float | str = 1,
    binning: Literal["uniform", "adaptive"] = "uniform",
    bins: int = 15,
    gamma: float = 0.1,
    labels_in: Sequence[int] | None = None,
    output_between: tuple[float, float] | None = None,
    output_class: int | None = None,
    where: Any = None,
    **options: Unpack[R.Sample],
) -> Result:
    """Generalized ECE (Kirchenbauer et al.; SPEC §1-§2): lens -> bins -> distance between mean output and label.

    Parameters
    ----------
    lens : {None, "top1", "class:<c>", "topk", "full", "grouping", "marginal"}
        Default None: ``class:1`` (the positive class) for a single
        probability column, ``top1`` for class probabilities. ``topk``
        needs ``k``; ``grouping`` needs ``groups`` (lists of class
        indices partitioning the classes); ``marginal`` averages the
        ``class:c`` figures over the classes, each binned on its own.
    distance : "tvd", "l2", ("mahalanobis", M) or ("interval", l, h)
        ``tvd`` is 1/2 the L1 distance between the mean lensed output and
        the mean lensed label of a bin; M must be symmetric PSD (K' x K').
    binning : {"uniform", "adaptive"}
        ``uniform``: ``bins`` per coordinate on the product grid of the first
        K' - 1 coordinates (non-empty cells only); ``adaptive``: uu-sml's
        data-dependent tree with leaves of at least ``gamma`` of the rows.
    labels_in : list of int, optional
        Keep the rows whose label is one of these classes.
    output_between : (low, high), optional
        Keep the rows whose lensed confidence (or, with ``output_class=c``,
        probability of class c) lies in [low, high].
    where : polars expression, SQL expression string, callable or boolean mask, optional
        Any other row selection, applied first, with the same meaning on
        every frame type: a string is a SQL expression (``pl.sql_expr``, e.g.
        ``"label > 1 AND region = 'eu'"``) evaluated by Polars, also on pandas
        input; a mask is positional, Boolean, one entry per row (integer row
        positions are refused). Selections come before binning; bin weights
        are renormalised over the kept rows. A group left with no rows gets
        NaN with ``n = 0``.

    Notes
    -----
    With uniform bins, no ``ci`` and no row selection, the per (group, cell)
    sums are computed where the rows are (docs/gece.md, "Where it runs"): a
    ``pl.LazyFrame`` streamed, a DuckDB relation, PySpark DataFrame, Ibis table
    or pyarrow Table by its own engine, a Dask DataFrame per partition. Other
    calls collect a LazyFrame's needed columns; the result of a LazyFrame is a
    ``pl.LazyFrame`` (one row, ``n`` and the figure, without ``by``).

    Examples
    --------
    >>> import calframe
    >>> mc = calframe.datasets.multiclass(n=5000, k=5, seed=0)
    >>> round(calframe.gece(mc), 6) == round(calframe.ece(mc), 6)
    True
    >>> calframe.gece(mc, lens="topk", k=2, binning="adaptive", gamma=0.05) > 0
    True
    """
    G = _gece_module()
    req = R.gece(prob, label, lens=lens, k=k, groups=groups, distance=distance, p=p, binning=binning, bins=bins,
                 gamma=gamma, output_between=output_between, **options)
    func, o = req.func, req.options
    pv, dist, binning_, scalar_lens = req.p, o.distance, o.binning, o.scalar_lens

    def lensed(scored: Scored, c: int | None = None):
        choice = G.choose_lens(func, lens, scalar_lens, k, groups, scored.binary, scored.n_classes, c)
        return G.lensed(scored.probs, scored.labels, choice)

    def figure(scored: Scored) -> np.ndarray:
        if lens == "marginal":
            per = np.stack([G.gece(*lensed(scored, c), binning_, pv, dist, scored.groups, scored.n_groups,
                                   scored.weights) for c in range(scored.n_classes)])
            return gece_marginal(per, pv)
        gp, yp = lensed(scored)
        # every lensed output of validated probabilities lies in [-tol, 1 + tol] (tol: the row-sum tolerance)
        return G.gece(gp, yp, binning_, pv, dist, scored.groups, scored.n_groups, scored.weights,
                      bound=1.0 + 2 * SUM_TOLERANCE)

    def select(scored: Scored) -> Scored:
        output = None
        if output_between is not None:
            if output_class is not None:
                if not (0 <= output_class < scored.n_classes):
                    raise ParameterError(f"The 'output_class' parameter of {func} must be a class index in "
                                         f"0..{scored.n_classes - 1}. Got {output_class!r}.")
                output = G.as_probs(scored.probs)[:, output_class]
            else:
                output = lensed(scored)[0][:, 0] if lens != "marginal" else L.top1(scored)[0]
        return _select_rows(scored, func, labels_in, output, output_between)

    def rows(frame: Frame) -> Result:
        return run_plan(req, _where(frame, where, func), {"gece": figure}, prepare=select)

    selects = where is not None or labels_in is not None or output_between is not None
    if PLANNING.get():  # disparity's plan (plan.disparity_table runs it; with gece's selection step, on the rows:
        # a narwhals frame's refused there, or collected for a pyarrow Table, whose rows `where` then reads)
        return engines.route(frame, lambda: rows(frame),
                             narwhals=lambda _: run_plan(req, frame, {"gece": figure}, prepare=select))
    return engines.run_vector(req, frame, rows, selects,
                              lambda dask: dask.gece(frame, req, {"gece": figure}, lensed, rows, selects))


def _gece_module():
    """The array-level building blocks (calframe/generalized.py)."""
    from .. import generalized

    return generalized


