"""Disparity between groups: :func:`disparity`, ranked on the figures' bootstrap intervals."""


from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Literal

import polars as pl

from .. import disparities as D
from .. import request as R
from .._keywords import Columns
from .._imports import pd  # pandas: imported at first use
from .. import engines
from ..engines.eager import Frame
from ..frames.dispatch import public
from .. import registry
from . import binned, gece, variable  # noqa: F401  (their figures are declared before a call)
from .goodness import weight_totals
from .plan import PLANNING, disparity_table

# --------------------------------------------------------------------------- disparity between groups

#: disparity's own parameters (every other keyword goes to the figure)
_DISPARITY_OWN = ("frame", "prob", "label", "by", "ci", "n_boot", "seed", "ci_method", "min_n", "disparity",
                  "progress")


@public(state="groups")
@R.with_progress
def disparity(frame: Frame, figure: str = "ece", prob: Columns = None, label: str | None = None, *,
              by: Columns = None, ci: float | None = 0.95, n_boot: int = 1000, seed: int | None = 0,
              ci_method: Literal["symmetric", "bias_corrected", "percentile"] = "symmetric",
              min_n: int = D.MIN_N, progress: bool | None = None,
              **figure_options: Any) -> pl.DataFrame | pd.DataFrame | pl.LazyFrame:
    """How far apart the groups of ``by`` are on a figure: fairlearn's ``MetricFrame`` group_max / group_min /
    difference / ratio.

    ``figure`` is the name of a function with values per group, any figure of
    the figure table on "disparity" (``calframe.registry.figures("disparity")``):
    ``ece``, ``mce``, ``rmsce``, ``ce``, ``ace``, ``oe``, ``vece``, ``vmce``,
    ``gece``, ``brier``, ``log_loss``, ``accuracy``, ... A figure of several
    columns (``summary``, ``ece_split``, ``brier_decomposition``) gives a row
    per column; a column better when higher (accuracy, resolution) is ranked
    the other way round.
    ``figure_options`` go to that function (``bins=``, ``lens=``,
    ``variable=`` for ``vece``, ...), which computes the values exactly as
    ``calframe.<figure>(frame, by=by, ...)`` does.

    The ranking accounts for group size. Groups with fewer than ``min_n``
    rows (default 50; with ``weights=``, frequency weights, a sum of weights
    below ``min_n``) are listed in ``below_min_n``, not ranked. With ``ci``
    (default 0.95) the groups are ranked on their bootstrap intervals
    (``ci_method``, ``n_boot`` draws, ``seed``; docs/statistics.md): the worst
    is the group whose lower bound is highest, the one surely that bad, and
    the best the one whose upper bound is lowest (for ``accuracy``, the
    other way round), ties broken by the value. ``ci=None`` ranks on the
    values themselves (fairlearn's group_max / group_min: the largest value
    is the worst, the smallest for ``accuracy``), skipping the bootstrap.

    What the intervals do for small groups. A group of one row has no
    interval (NaN bounds: every resample of it is that row); with ``ci`` it
    is never ranked, whatever ``min_n``: it is listed in ``below_min_n`` and
    ``ranked_on`` names it. A small group's noise widens its interval, so it
    is seldom named best. It can still be named worst: the interval is
    centred on the group's figure, and a calibration error estimated on few
    rows per bin is biased upward by about the error a calibrated model
    shows on those bins (``calibration_test``'s ``noise_ece``), which the
    lower bound keeps in part. A small calibrated group is therefore named
    worst over groups whose figure is below its bias: against four groups
    of 2,000 rows with population ECEs 0.026 and 0.052, a calibrated group
    of 15 rows was named worst in 65% of 40 seeds (``min_n=1``), of 50 rows
    in 40%, 100 rows 43%, 200 rows 18%, 500 rows 8%, 1,000 rows 3%
    (docs/statistics.md); against a group with ECE 0.115, seldom. Where
    groups are that small, raise ``min_n`` or test each group with
    ``calibration_test``.

    One row per figure (``summary``: per column; ``vece`` with a list of
    variables: per variable, named ``vece:<variable>``): ``figure``,
    ``n_groups``, ``n_ranked``, ``worst_group`` and ``worst``,
    ``best_group`` and ``best`` (their values), ``difference``: how much
    worse the worst is (worst - best; best - worst for ``accuracy``) and
    ``ratio`` = min / max of the two (fairlearn's ``ratio()``: in
    [0, 1], 1 when they agree; defined as 1 when both are 0, so never inf or
    NaN); with ``ci``, ``<value>_lo`` / ``<value>_hi`` for the four values;
    then ``ranked_on`` (what the ranking read), ``below_min_n`` (the groups
    not ranked), ``distinguishable_from_best`` (the ranked groups whose
    difference to the best group has an interval that excludes 0; null
    without ``ci``) and, with ``ci``, ``ci_method``. A group label is
    ``"region=south"``, ``"region=south, device=ios"`` with several ``by``
    columns (a null key: ``region=null``). Remaining ties (equal floats):
    the first tied group in the ``by=`` result's order (keys sorted, nulls
    last); when all ranked groups tie, it is both worst and best. ``brier``,
    ``log_loss`` and ``accuracy`` are exact sums, the same bits on every
    engine and row order, so their ties (and names) are too. One group:
    worst = best, difference 0, ratio 1. When no group has ``min_n`` rows,
    every group is ranked (``ranked_on`` says so), but, with ``ci``, those
    of one row; when no group has two rows, ``ci`` is an error.

    The bounds all come from the same draws: the worst and best groups'
    bounds are their own intervals (those of ``calframe.<figure>(frame,
    by=by, ci=ci)``), and the difference, the ratio and each group's
    difference to the best are recomputed on every draw before the method's
    bounds are taken ``progress``: the bootstrap's progress bar, as the
    figures' (spec section 8, "Progress bars").

    Without ``ci``, the figures per group are computed where the rows are, as ``calframe.<figure>`` computes
    them: on Dask (a lazy result), in the engine of a DuckDB relation, PySpark DataFrame, Ibis table or pyarrow
    Table (the table in the input's type), streamed on a ``pl.LazyFrame`` (the table a ``pl.LazyFrame``). With
    ``ci``, the draws come from the moments of the figure's state computed there too wherever the figure's own
    ``ci=`` does (docs/engines.md: the CE family, the companions and ``summary``); a bootstrap that needs the rows
    (``bootstrap="rows"``, ...) collects a ``pl.LazyFrame``'s, a pyarrow Table's and a Dask DataFrame's needed
    columns (the table in the input's kind), and the other frames refuse it.

    Examples
    --------
    >>> import calframe
    >>> df = calframe.datasets.grouped_miscalibration(n=4000, seed=0)
    >>> d = calframe.disparity(df, "ece", by="region", ci=None)  # ranked on the values
    >>> d.select("worst_group", "best_group").row(0)
    ('region=south', 'region=east')
    >>> round(d["difference"][0], 4), round(d["ratio"][0], 3)  # ECE 0.0534 in the south, 0.0331 in the east
    (0.0204, 0.619)
    >>> d = calframe.disparity(df, "ece", by="region", n_boot=200)  # ranked on the 95% intervals
    >>> d.select("worst_group", "best_group", "ci_method").row(0)
    ('region=south', 'region=east', 'symmetric')
    """
    func = "disparity"
    R.disparity(figure, by, figure_options, _figure_options)
    R.check_ci(func, ci, n_boot, seed, ci_method)
    R.check_int_range(func, "min_n", min_n, 1)
    if figure == "gece":  # on Dask its row selections run on the rows: every column collected
        out = engines.route(frame, lambda: None, dask=lambda dask: dask.collected(
            func, frame, list(frame.columns), lambda rows: disparity(
                rows, figure, prob, label, by=by, ci=ci, n_boot=n_boot, seed=seed, ci_method=ci_method, min_n=min_n,
                progress=progress, **figure_options)))
        if out is not None:
            return out
    token = PLANNING.set(True)
    try:
        plan = _figure_function(figure)(frame, prob=prob, label=label, by=by, ci=ci, n_boot=n_boot, seed=seed,
                                 ci_method=ci_method, **figure_options)
    finally:
        PLANNING.reset(token)
    return disparity_table(plan, func, min_n, weight_totals)


def _figure_options(figure: str) -> list[str]:
    """The keywords :func:`disparity` passes on to ``figure``'s function."""
    return [p for p in inspect.signature(_figure_function(figure)).parameters if p not in _DISPARITY_OWN]


def _figure_function(figure: str) -> Callable[..., Any]:
    """The function of a figure :func:`disparity` compares (one of ``registry.figures("disparity")``)."""
    return registry.DECLARED[figure].fn
