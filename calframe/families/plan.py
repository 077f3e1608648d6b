"""Running a parsed call, or planning it: :func:`run_plan` and :class:`Plan`."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import polars as pl

from .. import disparities as D
from .. import request as R
from .._columns import Scored
from .._imports import pd  # pandas: imported at first use
from ..engines import run_binned as _run_binned
from ..engines import moment_means as _moment_means
from ..engines import moment_sums as _moment_sums
from ..engines import run_table as _run_table
from .. import figures as F
from .. import moments as M
from .. import registry
from ..engines.eager import Figure, evaluate, part_figures

# --------------------------------------------------------------------------- running a parsed call


@dataclass(frozen=True)
class Plan:
    """A figure function's parsed call, not run: its request, frame, eager figures and row selection."""

    req: R.Request
    frame: Any
    figures: dict[str, Figure]
    prepare: Callable[[Scored], Scored] | None = None


#: True while :func:`disparity` asks a figure function for its :class:`Plan` instead of its result
PLANNING: ContextVar[bool] = ContextVar("calframe_planning", default=False)


def run_plan(req: R.Request, frame: Any, figures: dict[str, Figure] | None = None, *, binned: bool = False,
         scalar: bool = True, prepare: Callable[[Scored], Scored] | None = None) -> Any:
    """Run a parsed call: on any engine (``binned``: the figure comes from bin sums), else eagerly. While
    :data:`PLANNING`, its :class:`Plan` instead (eager figures)."""
    if PLANNING.get():
        return Plan(req, frame, figures or part_figures(req), prepare)
    if binned:
        return _run_binned(req, frame, figures)
    return evaluate(req, frame, figures or {}, scalar=scalar, prepare=prepare)


def run_finalize(func: str, frame: Any, prob: Any, label: str | None, options: dict[str, Any]) -> Any:
    """The figure ``func`` of the figure table from its finalize of the bin sums (``figures.BINNED[func]``): parsed
    as the ECE (p = 1, the ECE's options), its columns (``Request.parts``, for a figure of several) read from its
    row of the figure table."""
    names = registry.figure_of(func).names
    req = R.ce(func, func, prob, label, **{**options, "p": 1})
    return run_plan(replace(req, figure=func, parts=names if len(names) > 1 else ()), frame, binned=True)


def disparity_table(plan: Plan, func: str = "summary", min_n: int = D.MIN_N,
                    weight_totals: Callable[..., pl.DataFrame] | None = None
                    ) -> pl.DataFrame | pd.DataFrame | pl.LazyFrame:
    """Run ``plan``'s figures, keeping their draws (:class:`~calframe.disparities.Spread`), and read the disparity
    table off the ``by=`` result. ``weight_totals``: the groups' sums of weights in the frame's engine
    (:func:`calframe.families.goodness.weight_totals`), which ``min_n`` compares when the values come from an
    engine's table (frequency weights). Several variables (vece) are figures side by side. Without ``ci`` and a row
    selection, the figures per group come from the engine where the rows are (:func:`calframe.engines.run_table`:
    Dask, the narwhals engine, a LazyFrame streamed)."""
    req = plan.req

    def finish(values: dict[str, np.ndarray], counts: np.ndarray, keys: pl.DataFrame | None, flavor: str) -> Any:
        spread = _spread(plan, min_n)  # no draws: ranked on the values (no ci)
        spread.keys, spread.flavor = keys, flavor
        if req.weights is not None and weight_totals is not None:  # frequency weights: min_n compares sum w
            spread.sizes = _group_weights(plan, keys, weight_totals)
        return D.table(func, {"n": counts, **dict(zip(spread.labels, values.values()))}, spread, None)

    def rows(frame: Any) -> pl.DataFrame | pd.DataFrame:
        result, spread, ci = spread_run(replace(plan, frame=frame), min_n)
        return D.table(func, result, spread, ci)  # a LazyFrame's: lazy again (frames.dispatch.lazy_out)

    schema = D.schema() if req.ci is None else {**D.schema(req.ci), F.CI_METHOD: pl.String}
    return _run_table(req, plan.frame, finish, schema, rows, native=plan.prepare is None)


def _group_weights(plan: Plan, keys: pl.DataFrame | None, weight_totals: Callable[..., pl.DataFrame]) -> np.ndarray:
    """Each group's sum of weights (caller's units) in the order of ``keys``, summed in the frame's engine (one
    more pass: :func:`calframe.families.goodness.weight_totals`)."""
    req = plan.req
    totals = weight_totals(plan.frame, req.prob, req.label, by=req.by, weights=req.weights, nulls=req.nulls)
    if keys is None:
        return totals["total"].to_numpy()
    on = keys.columns
    return keys.join(totals.select(*on, "total"), on=on, how="left", nulls_equal=True,
                     maintain_order="left")["total"].to_numpy()


def spread_run(plan: Plan, min_n: int = D.MIN_N) -> tuple[Any, D.Spread, float | None]:
    """``plan``'s ``by=`` result, the :class:`~calframe.disparities.Spread` holding its figures' bootstrap draws
    (one bootstrap for the groups' intervals and the table's) and the interval level."""
    req = replace(plan.req, several=False)
    spread = _spread(plan, min_n)
    native = _moment_sums(req, plan.frame) if plan.prepare is None else None
    if native is not None:  # where the rows are: the figures and their draws from the bins' sums and moments
        sums, keys, counts, scale, m = native
        values = {name: M.sums_of(f).finalize(sums, scale) for name, f in spread.figures.items()}
        bounds = M.bounds_from_moments(req, spread.figures, sums, m, keys, scale, keep=spread.draws)
        spread.keys, spread.flavor = keys, "polars"
        spread.sizes = M.frequencies(m, sums.shape[0], scale) if m is not None and m.weighted else None
        return F.shape(req, values, counts, keys, "polars", bounds, scalar=False), spread, req.ci
    means = _moment_means(req, plan.frame, spread.figures, spread.draws) if plan.prepare is None else None
    if means is not None:  # a companion's or summary's figures, each from the moments of its own state
        values, counts, keys, bounds, spread.sizes = means
        spread.keys, spread.flavor = keys, "polars"
        return F.shape(req, values, counts, keys, "polars", bounds, scalar=False), spread, req.ci
    return (evaluate(req, plan.frame, spread.figures, scalar=False, prepare=plan.prepare, keep=spread.draws),
            spread, req.ci)


def _spread(plan: Plan, min_n: int) -> D.Spread:
    """The :class:`~calframe.disparities.Spread` of ``plan``'s figures: one per variable for vece
    (``vece:<variable>``)."""
    req = plan.req
    labels = [f"{req.name}:{v}" for v in req.variables] if req.variables else list(plan.figures)
    return D.Spread(dict(zip(labels, plan.figures.values())), min_n, req.ci_method)
