"""The CE family (ECE, MCE, RMSCE, CE_p), smooth ECE, the companions (Brier, log loss, accuracy), ``summary``,
``disparity`` and ``reliability``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, Unpack

import numpy as np
import polars as pl

from .. import figures as F
from .. import lenses as L
from .. import request as R
from .._columns import Scored, resolve
from .._keywords import Columns
from .._imports import pd  # pandas: imported at first use
from .. import engines
from ..engines.streaming import reliability as lazy_table
from ..engines.eager import (
    Figure,
    Frame,
    Result,
    ce_figure,
    binned_sums,
    brier_rows,
    group_means,
    mean_figure,
    log_loss_rows,
)
from ..figures import check_by_names
from ..frames.dispatch import public
from ..registry import Column, Figure
from .goodness import weight_totals
from .plan import Plan, disparity_table, run_plan

# --------------------------------------------------------------------------- CE family

#: the surfaces of a figure the report's summary tables already show (its own row of the table would repeat them)
_BUT_REPORT = frozenset({"disparity", "monitor", "expr", "sklearn", "sql"})


@public(state="bin_sums", figure=Figure((Column("ce", "CE_p", "the bin-weighted p-mean of the gaps; 0 is perfect"),),
                                        lensed=True, on=_BUT_REPORT - {"sql"}))
@R.keywords(R.CE)
def ce(frame: Frame, prob: Columns = None, label: str | None = None, *, name: str | None = None,
       **options: Unpack[R.CE]) -> Result:
    """Binned calibration error CE_p (SPEC §1-§3): ECE (p=1), RMSCE (p=2), MCE (p=inf).

    Parameters
    ----------
    p : 1, 2 or inf
        Power of the bin-weighted mean of distances; ``inf`` is the max over non-empty bins.
    lens : {None, "top1", "class:<c>", "marginal"}
        What is binned: the top-1 confidence, one class's probability, or the
        class average of the ``class:c`` errors, each class binned on its own.
        Default None: ``class:1`` (the positive class) for a single
        probability column, ``top1`` for class probabilities.
    distance : "tvd", "l2", ("interval", l, h) or ("mahalanobis", M)
        Distance between a bin's mean output and mean label (SPEC §2).
    estimator : {"plugin", "debiased"}
        ``debiased`` with p = 2 is Kumar et al.'s unbiased squared error
        (reported as ``sqrt(max(E2, 0))``, or E2 with ``squared=True``); with
        other p it is their Gaussian resampling correction (``n_resamples``
        draws, seeded by ``seed``).
    binning : {"uniform", "quantile", "equal_mass", "sweep"}, optional
        Default ``uniform`` for the plugin estimator and ``equal_mass`` for the
        debiased one (as uncertainty-calibration). ``sweep``: Roelofs et al.'s
        ECE_sweep (caltrain's ``em_monotonic_sweep``), equal-mass bins by rank,
        as many as keep the bin accuracies monotone, chosen per group (spec
        §1.3). The chosen count: ``n_bins`` in results with ``by`` or ``ci``;
        without them (a float, as for every binning) the rows of
        ``calframe.reliability(frame, binning="sweep")``, the chosen bins.
    bins : int
        Number of bins (default 15; not read by ``sweep``).
    closed : {"left", "right"}
        Closed side of uniform bins: ``left`` = numpy.digitize on linspace
        edges (GECE reference), ``right`` = (a, b] with edges i/B as Guo et
        al. and uncertainty-calibration's ``get_ece``.
    name : str, optional
        Name of the figure's column in grouped output (default ``"ce"``).

    Returns
    -------
    float, or a frame with one row per group (``by``) or with ``ci`` bounds (and with ``binning="sweep"``, the
    chosen counts in ``n_bins``). A ``pl.LazyFrame`` input gives a
    ``pl.LazyFrame`` (spec section 8, "Lazy in, lazy out"): streamed when collected, one row (``n`` and the
    figure) without ``by``, ``ci`` drawn from the moments of its bins (quantile and equal-mass edges found in the
    stream, then held fixed); with ``bootstrap="rows"``, the sweep, the marginal lens or List probabilities the
    frame is collected first.

    Examples
    --------
    >>> import polars as pl, calframe
    >>> df = pl.DataFrame({"prob": [0.9, 0.8, 0.3, 0.6], "label": [1, 0, 0, 1]})
    >>> round(calframe.ce(df, p=2), 6)
    0.474342
    >>> round(calframe.ce(df, binning="sweep"), 6)  # 2 bins, accuracies 0.5, 0.5 (3 bins: 0.5, 0, 1)
    0.2
    >>> calframe.reliability(df, binning="sweep").height  # the count the sweep chose
    2
    """
    func = name if name in ("ece", "mce", "rmsce") else "ce"
    return _ce(frame, prob, label, func, name or "ce", options)


def _ce(frame: Frame, prob: Columns, label: str | None, func: str, name: str, options: dict[str, Any]) -> Result:
    """:func:`ce` and its named forms (ece, mce, rmsce): the call parsed and run, under the public wrapper of the
    function the user called (once)."""
    return run_plan(R.ce(func, name, prob, label, **options), frame, binned=True)


@public(state="bin_sums", figure=Figure((Column(
    "ece", "ECE", "average gap between prediction and outcome, over bins of the prediction; 0 is perfect"),),
    lensed=True, on=_BUT_REPORT, sql=("SUM(n * ABS(conf - acc)) / SUM(n)",)))
@R.keywords(R.ECE)
def ece(frame: Frame, prob: Columns = None, label: str | None = None, **options: Unpack[R.ECE]) -> Result:
    """Expected calibration error: bin-weighted mean of |mean confidence - accuracy| (CE_1, plugin).

    See :func:`ce` for every option; this is ``ce(p=1, estimator="plugin")``.
    ``lens`` defaults to ``class:1`` (the positive class) for a single
    probability column and to ``top1`` for class probabilities.

    Examples
    --------
    >>> import polars as pl, calframe
    >>> df = pl.DataFrame({"prob": [0.9, 0.8, 0.3, 0.6], "label": [1, 0, 0, 1]})
    >>> round(calframe.ece(df), 6)
    0.4
    >>> calframe.ece(df.with_columns(g=pl.Series([0, 0, 1, 1])), by="g")
    shape: (2, 3)
    ┌─────┬─────┬──────┐
    │ g   ┆ n   ┆ ece  │
    │ --- ┆ --- ┆ ---  │
    │ i64 ┆ i64 ┆ f64  │
    ╞═════╪═════╪══════╡
    │ 0   ┆ 2   ┆ 0.45 │
    │ 1   ┆ 2   ┆ 0.35 │
    └─────┴─────┴──────┘
    """
    return _ce(frame, prob, label, "ece", "ece", {**options, "p": 1})


@public(state="bin_sums", figure=Figure((Column(
    "ace", "ACE", "average gap over equal-mass bins of the prediction; 0 is perfect"),), lensed=True,
    on=frozenset({"disparity", "monitor", "expr", "sklearn"})))
@R.keywords(R.ECE, binning="equal_mass")
def ace(frame: Frame, prob: Columns = None, label: str | None = None, **options: Unpack[R.ECE]) -> Result:
    """Adaptive calibration error (Nixon et al. 2019): the ECE over equal-mass bins (CE_1, plugin).

    Each of the ``bins`` bins holds the same number of rows (uncertainty-calibration's ``get_equal_bins``), so
    every bin's gap is measured on as many rows, wherever the predictions crowd; this is
    uncertainty-calibration's ``get_ece_em``. ``ce(p=1, binning="equal_mass")``, with the options of
    :func:`ece`; ``lens="marginal"`` gives the class-averaged form of the paper. ``binning="quantile"`` bins by
    pandas.qcut instead; equal-mass bins take no ``weights``.

    Examples
    --------
    >>> import polars as pl, calframe
    >>> df = pl.DataFrame({"prob": [0.9, 0.8, 0.3, 0.6], "label": [1, 0, 0, 1]})
    >>> round(calframe.ace(df, bins=2), 6)  # calibration.get_ece_em(p, y, num_bins=2)
    0.2
    """
    return _ce(frame, prob, label, "ace", "ace", {**options, "p": 1})


@public(state="bin_sums", figure=Figure((Column(
    "mce", "MCE", "largest gap of any bin; noisy where bins hold few rows"),), lensed=True, on=_BUT_REPORT,
    sql=("MAX(ABS(conf - acc))",)))
@R.keywords(R.ECE)
def mce(frame: Frame, prob: Columns = None, label: str | None = None, **options: Unpack[R.ECE]) -> Result:
    """Maximum calibration error: the largest |mean confidence - accuracy| over non-empty bins (CE_inf).

    ``ce(p="inf")``, with the options of :func:`ece` (``lens`` defaults to
    ``class:1``, the positive class, for a single probability column and to
    ``top1`` for class probabilities).

    Examples
    --------
    >>> import polars as pl, calframe
    >>> df = pl.DataFrame({"prob": [0.9, 0.8, 0.3, 0.6], "label": [1, 0, 0, 1]})
    >>> calframe.mce(df), calframe.mce(df, bins=2)  # the worst of 15 bins, of 2
    (0.8, 0.3)
    """
    return _ce(frame, prob, label, "mce", "mce", {**options, "p": "inf"})


@public(state="bin_sums", figure=Figure((Column(
    "rmsce", "RMSCE", "root mean square gap over the bins; weighs large gaps more than ECE"),), lensed=True,
    on=_BUT_REPORT, sql=("SQRT(SUM(n * ((conf - acc) * (conf - acc))) / SUM(n))",)))
@R.keywords(R.RMSCE)
def rmsce(frame: Frame, prob: Columns = None, label: str | None = None, **options: Unpack[R.RMSCE]) -> Result:
    """Root-mean-square calibration error (Kumar et al.'s l2 CE, CE_2).

    ``ce(p=2)``: the options of :func:`ece`, and ``estimator``
    (``"debiased"``: Kumar et al.'s debiased estimator). ``binning`` defaults
    as :func:`ce`'s: uniform for the plugin estimator, equal-mass for the
    debiased one (as uncertainty-calibration's ``get_calibration_error``).
    The default ``lens`` is :func:`ece`'s.

    Examples
    --------
    >>> import polars as pl, calframe
    >>> df = pl.DataFrame({"prob": [0.9, 0.8, 0.3, 0.6], "label": [1, 0, 0, 1]})
    >>> round(calframe.rmsce(df), 6), round(calframe.rmsce(df, bins=2), 6)  # 15 bins, 2 bins
    (0.474342, 0.173205)
    """
    return _ce(frame, prob, label, "rmsce", "rmsce", {**options, "p": 2})


# --------------------------------------------------------------------------- smooth ECE


@public(state="grid_sums", figure=Figure((Column(
    "smece", "smooth ECE", "the same gap on a kernel-smoothed curve instead of bins, so no bin count moves it; 0 is "
    "perfect (no interval)"),), lensed=True, on=frozenset({"expr"})))
@R.keywords(R.SmECE)
def smece(frame: Frame, prob: Columns = None, label: str | None = None, **options: Unpack[R.SmECE]) -> Result:
    """Smooth ECE (Błasiok & Nakkiran 2023): the calibration error of a kernel-smoothed reliability curve, no bins.

    relplot's ``smECE`` on the lens's (confidence, outcome) pairs, equal to it to rounding (docs/spec.md,
    "Smooth ECE"): the residuals ``conf - acc`` and the density are smoothed with a Gaussian kernel reflected
    at 0 and 1, and the smooth ECE is ``sum |smoothed residual| / sum density`` on relplot's evaluation points.
    Its bandwidth is found by relplot's bisection, ``sigma = smECE_sigma`` (ten halvings of [0, 1]), or given.

    Parameters
    ----------
    lens : {None, "top1", "class:<c>"}
        Default None: ``class:1`` for a single probability column (relplot's ``smECE(p, y)``), ``top1`` for
        class probabilities (relplot's ``smECE(*multiclass_logits_to_confidences(probs, y, probs=True))``).
    sigma : float, optional
        A fixed bandwidth (relplot's ``smECE_sigma(f, y, sigma)``); default None, the automatic one.
    weights : str, optional
        Row weights: each row counts ``w`` times (integer weights give the value of repeated rows).

    Notes
    -----
    The rows are spread once on every group's grid (one pass over the frame); each bandwidth the bisection
    tries is then a product of spectra per group, not a pass over the rows (calframe.smooth); a finer grid
    (a bandwidth below 0.01) is a pass of its own for the groups that need it. Where the rows are, the frame's
    engine sums the grids (calframe/engines/plan/grid_sums.py, _grid_dask.py): a ``pl.LazyFrame`` gives a
    ``pl.LazyFrame`` whose collect streams them (one row, ``n`` and the figure, without ``by``), a DuckDB
    relation, PySpark DataFrame, Ibis table or pyarrow Table its own type, a Dask DataFrame a lazy result.
    ``ci`` needs the rows: they are collected (LazyFrame, pyarrow Table, Dask) or the call is refused.

    Examples
    --------
    >>> import polars as pl, calframe
    >>> df = pl.DataFrame({"prob": [0.9, 0.8, 0.3, 0.6, 0.2, 0.7], "label": [1, 0, 0, 1, 0, 1]})
    >>> round(calframe.smece(df), 6)  # relplot.smECE(p, y): 0.138632
    0.138632
    >>> round(calframe.smece(df, sigma=0.1), 6)  # relplot.smECE_sigma(p, y, 0.1): 0.187775
    0.187775
    """
    req = R.smece(prob, label, **options)
    return engines.run_grid(req, frame, {req.name: _smece_figure(req)})


def _smece_figure(req: R.Request) -> Figure:
    """smECE per group of the validated rows (the weights as scaled, with the density's 1e-4, absolute in the
    caller's units, scaled with them: weights up to 1.8e308 do not overflow the grids' sums)."""
    from ..smooth import Rows

    def figure(scored: Scored) -> np.ndarray:
        conf, acc = L.scalar(scored, req.lens, req.func)
        scale = 1.0 if scored.weights is None else scored.weight_scale
        return Rows(conf, acc, scored.weights, scored.groups, scored.n_groups, scale).smece(req.options.sigma)[0]

    return figure


# --------------------------------------------------------------------------- companions


#: the companions' docstrings end with this
_COLLECTS = """A ``pl.LazyFrame`` gives a ``pl.LazyFrame`` (one row, ``n`` and the figure, without ``by``), streamed when
    collected (with ``ci``, the needed columns are collected first); a DuckDB relation, PySpark DataFrame, Ibis table
    or pyarrow Table is summed in its own engine."""


def _bounded(func: str, figure: Figure) -> Figure:
    """``figure``, with its largest value for the bootstrap's bounds: 1 for accuracy (:class:`figures.Scale`)."""
    return F.with_scale(figure, F.Scale(upper=1.0)) if func == "accuracy" else figure


#: the range of a companion's row values (a bin mean drawn by the moments is kept in it: calframe.moments)
_RANGE = {"brier": (0.0, 2.0), "log_loss": (0.0, np.inf), "accuracy": (0.0, 1.0)}


def _correct(scored: Scored) -> np.ndarray:
    """1.0 where the top-1 prediction is right (ties to the lowest class; binary: class 1 iff p > 0.5)."""
    return L.top1(scored)[1].astype(np.float64)


def _companion(func: str, rows: Callable[[Scored], np.ndarray], doc: str, example: str, column: Column,
               ) -> Callable[..., Result]:
    """The public function ``func``: the group means of ``rows``; ``doc`` and ``example`` (its value on the
    example frame) make its docstring."""

    def metric(frame: Frame, prob: Columns = None, label: str | None = None, **options: Unpack[R.Sample]) -> Result:
        req = R.companion(func, prob, label, **options)
        figures: dict[str, Figure] = {func: _bounded(func, mean_figure(func, rows, _RANGE[func]))}
        return run_plan(req, frame, figures, binned=True)

    metric.__name__ = metric.__qualname__ = func
    metric.__doc__ = f"""{doc}

    {_COLLECTS}

    Examples
    --------
    >>> import polars as pl, calframe
    >>> df = pl.DataFrame({{"prob": [0.9, 0.8, 0.3, 0.6], "label": [1, 0, 0, 1]}})
    >>> round(calframe.{func}(df), 6)
    {example}
    """
    figure = Figure((column,), on=_BUT_REPORT - {"sql"})
    return public(R.keywords(R.Sample)(metric), state="row_means", figure=figure)


brier = _companion("brier", brier_rows, """Brier score: mean (p_1 - y)^2 for two classes (scikit-learn's
    brier_score_loss), mean over rows of sum_k (g_k - y_k)^2 for K > 2 (SPEC §7).""", "0.225", Column(
    "brier", "Brier", "mean squared error of the probability; lower is better (rewards sharp predictions too)"))
log_loss = _companion("log_loss", log_loss_rows, """Log loss: mean of -ln g_y, probabilities clipped to
    [eps, 1 - eps] with eps = float64 machine epsilon (scikit-learn's log_loss).""", "0.645575", Column(
    "log_loss", "log loss", "mean negative log-likelihood; lower is better (compare between models)"))
accuracy = _companion("accuracy", _correct, """Accuracy of the top-1 prediction
    (ties to the lowest class; binary: class 1 iff p > 0.5).""", "0.75", Column(
    "accuracy", "accuracy (top label)", "share of rows whose predicted class is right (always the top label)",
    "higher"))


#: summary's columns: the figures' of their own functions, and the debiased CE's
_SUMMARY = Figure((Column("accuracy"), Column("ece"), Column("mce"), Column("rmsce"), Column(
    "ce_debiased", "debiased CE", "the same gap (l2), with the upward bias of few rows per bin removed; 0 is perfect"),
    Column("brier"), Column("log_loss")), lensed=True, on=frozenset({"disparity", "sklearn"}))


@public(state=("bin_sums", "row_means"), figure=_SUMMARY)
@R.keywords(R.Sample)
def summary(frame: Frame, prob: Columns = None, label: str | None = None, *, lens: str | None = None,
            bins: int = 15, disparity: bool = False, **options: Unpack[R.Sample]) -> pl.DataFrame | pd.DataFrame:
    """Every headline figure in one frame, one row per group.

    Columns: ``n``, ``accuracy`` (top-label correctness, whatever the lens),
    ``ece``, ``mce`` and ``rmsce`` (plugin, uniform bins) and ``ce_debiased``
    (equal-mass bins, Kumar's debiased l2 estimator; uniform bins when
    ``weights`` are given), all four under ``lens``: by default ``class:1``
    (the positive class) for a single probability column and ``top1`` for
    class probabilities; then ``brier``, ``log_loss``; with ``ci``,
    ``_lo``/``_hi`` bounds for each. A ``pl.LazyFrame`` gives a
    ``pl.LazyFrame``, streamed when collected (with ``ci``, the needed columns
    are collected first).

    ``disparity=True`` (needs ``by``) answers how far apart the groups are
    instead: :func:`disparity`'s table, one row per column above (``figure``
    ``accuracy``, ``ece``, ... ``log_loss``), with the worst and best group,
    ``difference`` and ``ratio``; with ``ci``, from the same bootstrap draws
    as the intervals of ``summary(by=..., ci=...)`` (same ``seed``).

    Examples
    --------
    >>> import calframe
    >>> df = calframe.datasets.grouped_miscalibration(n=2000, seed=0)
    >>> calframe.summary(df, by="region").columns[:4]
    ['region', 'n', 'accuracy', 'ece']
    >>> calframe.summary(df, by="region", disparity=True)["figure"].to_list()
    ['accuracy', 'ece', 'mce', 'rmsce', 'ce_debiased', 'brier', 'log_loss']
    """
    req = R.summary(prob, label, lens=lens, bins=bins, disparity=disparity, **options)
    figures: dict[str, Figure] = {
        "accuracy": _bounded("accuracy", mean_figure("accuracy", _correct, _RANGE["accuracy"])),
        **{name: ce_figure(sub) for name, sub in R.summary_parts(req).items()},
        "brier": mean_figure("brier", brier_rows, _RANGE["brier"]),
        "log_loss": mean_figure("log_loss", log_loss_rows, _RANGE["log_loss"]),
    }
    if disparity:
        return disparity_table(Plan(req, frame, figures), weight_totals=weight_totals)
    return run_plan(req, frame, figures, binned=True)  # type: ignore[no-any-return]


@public(state="bin_table")
@R.keywords(R.Table)
def reliability(frame: Frame, prob: Columns = None, label: str | None = None,
                **options: Unpack[R.Table]) -> pl.DataFrame | pd.DataFrame:
    """The per (group, bin) table a reliability diagram is drawn from.

    One row per non-empty bin: the group columns, ``bin`` (0-based id),
    ``lower``/``upper`` (the bin's edges), ``n`` (rows), ``weight`` (share of
    the group's rows or weights), ``conf`` (mean lensed output), ``acc`` (mean
    label: accuracy for top1, frequency for ``class:c``) and ``gap`` =
    ``conf - acc`` (positive = over-confident). ``lens`` defaults to
    ``class:1`` (the positive class) for a single probability column and to
    ``top1`` for class probabilities. A ``pl.LazyFrame`` gives a ``pl.LazyFrame``: on uniform or explicit-edge
    bins its sums are streamed when it is collected, on other bins its needed columns are collected.

    Examples
    --------
    >>> import polars as pl, calframe
    >>> df = pl.DataFrame({"prob": [0.9, 0.8, 0.3, 0.6], "label": [1, 0, 0, 1]})
    >>> calframe.reliability(df, bins=2, lens="class:1")["n"].to_list()
    [1, 3]
    """
    req = R.reliability("reliability", prob, label, **options)
    if not engines.in_memory(frame):  # Dask's partitions, the narwhals engine
        return engines.run_binned(req, frame)
    check_by_names(req.func, req.by, F.RELIABILITY_COLUMNS, frame)
    streamed = engines.route(frame, lambda: None, lazy=lambda _: lazy_table.reliability(frame, req))
    if streamed is not None:  # a LazyFrame's table, streamed
        return streamed
    scored = resolve(frame, func=req.func, prob=prob, label=label, by=req.by, weights=req.weights, nulls=req.nulls)
    conf, acc = L.scalar(scored, req.lens, req.func)
    sums, bins_ = binned_sums(conf, acc, scored, req.binning)
    counts = sums
    if scored.weights is not None:  # row counts beside the weighted sums
        counts, _ = binned_sums(conf, acc, replace(scored, weights=None), lambda s, c: bins_)  # the same bins
    return F.to_flavor(F.reliability_table(sums, counts[..., 0], bins_, scored.keys), scored.flavor)


