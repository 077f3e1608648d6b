"""The verdict as a test: ``calibration_test``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import polars as pl

from .. import figures as F
from .. import engines
from .. import request as R
from .._keywords import Columns
from ..engines.eager import Frame, Result
from ..frames import convert
from ..frames.dispatch import public
from .binned import reliability
from .goodness import weight_totals

# --------------------------------------------------------------------------- the verdict as a test


@public(state="bin_table")
@R.checked_keywords
def calibration_test(frame: Frame, prob: Columns = None, label: str | None = None, *, tolerance: float = 0.03,
                     alpha: float = 0.05, by: Columns = None, bins: int | Sequence[float] = 15,
                     binning: str | None = None, lens: str | None = None, weights: str | None = None,
                     nulls: Literal["raise", "drop"] = "raise", n_sim: int = 2000, seed: int = 0,
                     method: Literal["boundary", "bound"] = "boundary") -> Result:
    """Test, per group, whether the population ECE is below or above ``tolerance``: the verdict.

    One row per group (per ``by`` key, or one row): the group columns, ``n``
    (rows), ``ece`` (the plug-in statistic, as :func:`ece`), ``verdict``,
    ``p_not_calibrated``, ``p_calibrated``, ``noise_ece``, ``small``,
    ``tolerance``, ``alpha`` and ``test``:

    - ``verdict`` is ``"not calibrated"`` when the data reject H0: population
      ECE <= ``tolerance`` at level ``alpha`` (``p_not_calibrated <= alpha``),
      ``"calibrated"`` when they reject H0': population ECE >= ``tolerance``
      (``p_calibrated <= alpha``), else ``"undecided"`` (more rows would decide);
    - ``noise_ece`` is the mean ECE a perfectly calibrated model shows on the
      group's bins and rows (the plug-in's upward bias); ``small`` is True when
      it reaches the tolerance: too few rows for the ECE alone to mean anything;
    - ``test`` names how ``p_not_calibrated`` was found: ``"boundary"`` (labels
      simulated from the null model nearest the data with ECE = tolerance) or
      ``"bound"`` (the bound valid for every null model, used with
      ``method="bound"``, in a small group, or when no bin's gap stands out
      of its noise).

    The p-values come from ``n_sim`` simulations of the labels, bin by bin
    (consistency resampling, Bröcker & Smith 2007), seeded by ``seed`` and the
    group's position: docs/statistics.md ("The verdict") gives the method, why
    it holds, and its false-alarm and power table from 50 to 100,000 rows.
    ``bins``, ``binning``, ``lens``, ``weights`` and ``nulls`` are :func:`ece`'s
    (``weights`` are frequency weights: a bin's noise is simulated with its
    sum of weights as its rows, rounded, so integer weights give the verdicts
    of the frame with each row repeated; docs/spec.md §8 "Weights"; the
    groups' sums of weights take one more pass). The test reads the rows only through the reliability
    table's per (group, bin) sums, so it runs wherever :func:`reliability`
    does: a DuckDB relation, PySpark DataFrame, Ibis table or pyarrow Table
    is summed in its own engine (the result in its type), a Dask DataFrame by
    its partitions; a LazyFrame gives a LazyFrame.

    Examples
    --------
    >>> import numpy as np, polars as pl, calframe
    >>> rng = np.random.default_rng(0)
    >>> p = rng.random(20_000)
    >>> freq = np.where(np.arange(20_000) < 10_000, p, p ** 1.6)  # group a calibrated, b over-confident
    >>> df = pl.DataFrame({"prob": p, "label": (rng.random(20_000) < freq).astype(int),
    ...                    "g": np.where(np.arange(20_000) < 10_000, "a", "b")})
    >>> calframe.calibration_test(df, by="g")["verdict"].to_list()
    ['calibrated', 'not calibrated']
    >>> calframe.calibration_test(df.head(150)).select("verdict", "small").row(0)
    ('undecided', True)
    """
    from .. import _params as P
    from .. import verdicts as V

    func = "calibration_test"
    tolerance = P.check_positive_float(func, "tolerance", tolerance, below=1.0)
    alpha = P.check_positive_float(func, "alpha", alpha, below=1.0)
    n_sim = P.check_int_range(func, "n_sim", n_sim, 1)
    seed = P.check_int_range(func, "seed", seed, 0)
    method = P.check_choice(func, "method", method, V.METHODS)  # type: ignore[assignment]
    options: dict[str, Any] = dict(bins=bins, lens=lens, by=by, weights=weights, nulls=nulls)
    if binning is not None:
        options["binning"] = binning
    table = reliability(frame, prob, label, **options)
    keys = [] if by is None else [by] if isinstance(by, str) else list(by)
    def judged(t: Any) -> Any:
        # frequency weights: a bin's noise has its sum of weights as rows; the groups' sums from the same engine,
        # once the table is there (a LazyFrame's: at collect, after the table's own checks raised theirs)
        totals = None if weights is None else weight_totals(frame, prob, label, by=by, weights=weights,
                                                             nulls=nulls, lens=lens)
        out = V.judge_groups(convert.to_polars(t), keys, tolerance=tolerance, alpha=alpha, n_sim=n_sim, seed=seed,
                             method=method, totals=totals)  # type: ignore[arg-type]
        return F.to_flavor(out, convert.flavor(t))  # type: ignore[arg-type]

    # the test reads the reliability table only (per (group, bin) sums): where the table was summed, its type
    return engines.route(frame, lambda: judged(table),
                         narwhals=lambda e: e.Engine(frame).out(judged(e.Engine.back(table))),
                         lazy=lambda _: pl.defer(lambda: judged(table.collect()),  # the streamed table, when collected
                                                 schema=V.result_schema({k: table.collect_schema()[k] for k in keys})),
                         dask=lambda e: e.DaskResult(table._first, lambda x: judged(table._then(x)), table._what))

