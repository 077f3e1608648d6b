"""The public API: typed functions that take any supported frame.

Each function resolves its columns once (``_columns.resolve``), runs the
pipeline select -> lens -> bin -> accumulate -> finalize on plain arrays, and
returns the caller's flavor: a float when there is no ``by`` (and no ``ci``),
else a frame with the group columns, ``n`` and one column per figure
(Polars for Polars input, pandas for pandas input).

Common parameters
-----------------
frame : polars.DataFrame, polars.LazyFrame or pandas.DataFrame
prob : str or list of str, optional
    The positive-class probability column (binary), or a list of class
    probability columns, or one Array/List column of class probabilities
    (multiclass). Defaults to the one of ``prob``, ``proba``, ``y_prob``,
    ``probs`` present in the frame.
label : str, optional
    0/1 or Boolean labels (binary), integer class indices in [0, K)
    (multiclass). Defaults to the one of ``label``, ``y``, ``y_true``,
    ``target`` present.
by : str or list of str, optional
    Group columns: one result row per group (nulls form their own group).
weights : str, optional
    Non-negative row weights (uniform binning only).
nulls : {"raise", "drop"}
    What to do with nulls in the probability, label and weight columns.
lens : str, optional
    What is binned (SPEC §1.2): ``"top1"`` (the predicted class's
    probability against accuracy) or ``"class:<c>"`` (class c's probability
    against its frequency). Default None: ``"class:1"``, the positive class,
    for a single probability column (binary input, as scikit-learn's
    calibration_curve), and ``"top1"`` for class probabilities (several
    columns, or one Array / List column); SPEC §8 "Default lens".
    ``accuracy`` is always top-label correctness.
ci : float, optional
    Confidence level of bootstrap intervals for the population figure (e.g.
    0.95), adding ``<figure>_lo``, ``<figure>_hi`` and ``ci_method`` columns.
    Rows are resampled within each group and the whole figure (bins
    included) is recomputed per draw.
n_boot : int
    Bootstrap draws (default 1000).
ci_method : {"symmetric", "bias_corrected", "percentile"}
    How the draws become bounds (docs/statistics.md). ``"symmetric"``
    (default): the estimate -/+ the larger of the bootstrap error's two tail
    quantiles, clipped at 0; ``"bias_corrected"``: the basic
    (reverse-percentile) bootstrap, the estimate minus the bootstrap's bias
    and spread, clipped at 0; ``"percentile"``: the quantiles of the draws
    (the plug-in's sampling distribution, which sits above a calibrated
    model's 0; the method of earlier versions). For debiased estimators the
    bootstrap world's true value is the plug-in figure on the rows, and the
    debiased l2 CE is resampled as its squared estimate; the debiased l1
    CE's lower bound is 0 where that squared estimate's interval reaches 0.
seed : int
    Seed of the bootstrap and of any resampling estimator (default 0, so
    results are reproducible).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any, Literal, Union, Unpack

import numpy as np
from ._lazy import is_pandas_frame, pd  # pandas: imported at first use
import polars as pl

from . import disparities as D
from . import figures as F
from . import lenses as L
from . import request as R
from ._columns import (
    SUM_TOLERANCE,
    Scored,
    _select,
    as_names,
    check_finite_variable,
    column_names,
    columns_of,
    non_string_hint,
    normalised_keys,
    resolve,
)
from . import _errors as E
from ._errors import (
    CalframeError,
    ColumnNotFoundError,
    ColumnTypeError,
    InvalidValueError,
    ParameterError,
    bad_param,
)
from ._errors import rows as _rows
from ._lazy import lazy_function

qcut_bin_sums = lazy_function("calframe._kernels.qcut_sums", "qcut_bin_sums")
from ._names import fresh_name
from .figures import check_by_names, with_keys
from .engines import batches as _batches
from .engines import dask_engine as _dask
from .engines import narwhals as _narwhals
from .engines import run_binned as _run_binned
from .engines.eager import (Binner, Figure, _ce_figure, _evaluate, _group_counts, binned_sums, group_means,
                            variable_binner)
from .frames.dispatch import is_dask_frame, native_kind
from .binning import Binning, Bins, qcut_order_statistics
from .metrics import ce_from_sums
from .request import Request

Frame = Union[pl.DataFrame, pl.LazyFrame, "pd.DataFrame"]
Columns = Union[str, Sequence[str], None]
Result = Union[float, pl.DataFrame, "pd.DataFrame"]

__all__ = [
    "ce",
    "ece",
    "mce",
    "rmsce",
    "reliability",
    "brier",
    "log_loss",
    "accuracy",
    "summary",
    "smece",
    "disparity",
]


# --------------------------------------------------------------------------- running a parsed call


@dataclass(frozen=True)
class Plan:
    """A figure function's parsed call, not run: its request, frame, eager figures and row selection."""

    req: R.Request
    frame: Any
    figures: dict[str, Figure]
    prepare: Callable[[Scored], Scored] | None = None


#: True while :func:`disparity` asks a figure function for its :class:`Plan` instead of its result
_PLANNING: ContextVar[bool] = ContextVar("calframe_planning", default=False)


def _run(req: R.Request, frame: Any, figures: dict[str, Figure] | None = None, *, binned: bool = False,
         scalar: bool = True, prepare: Callable[[Scored], Scored] | None = None) -> Any:
    """Run a parsed call: on any engine (``binned``: the figure comes from bin sums), else eagerly. While
    :data:`_PLANNING`, its :class:`Plan` instead (eager figures)."""
    if _PLANNING.get():
        return Plan(req, frame, figures or {req.name: _ce_figure(req)}, prepare)
    if binned:
        return _run_binned(req, frame, figures)
    return _evaluate(req, frame, figures or {}, scalar=scalar, prepare=prepare)


# --------------------------------------------------------------------------- CE family


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
    figure) without ``by``; with ``ci``, the marginal lens or List probabilities the frame is collected first.

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
    return _run(R.ce(func, name or "ce", prob, label, **options), frame, binned=True)


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
    return ce(frame, prob, label, p=1, name="ece", **options)


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
    return ce(frame, prob, label, p="inf", name="mce", **options)


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
    return ce(frame, prob, label, p=2, name="rmsce", **options)


# --------------------------------------------------------------------------- smooth ECE


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
    tries is then a product of spectra per group, not a pass over the rows (calframe.smooth). A
    ``pl.LazyFrame`` is collected (its needed columns: the grids' sums are not pushed into Polars' plan) and
    the result returned as a ``pl.LazyFrame`` (one row, ``n`` and the figure, without ``by``).

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
    return _evaluate(req, frame, {req.name: _smece_figure(req)})


def _smece_figure(req: R.Request) -> Figure:
    """smECE per group of the validated rows (the weights as scaled, with the density's 1e-4, absolute in the
    caller's units, scaled with them: weights up to 1.8e308 do not overflow the grids' sums)."""
    from .smooth import Rows

    def figure(scored: Scored) -> np.ndarray:
        conf, acc = L.scalar(scored, req.lens, req.func)
        scale = 1.0 if scored.weights is None else scored.weight_scale
        return Rows(conf, acc, scored.weights, scored.groups, scored.n_groups, scale).smece(req.options.sigma)[0]

    return figure


# --------------------------------------------------------------------------- companions


def _brier_rows(scored: Scored) -> np.ndarray:
    p, y = scored.probs, scored.labels
    if scored.binary:
        return (p - y) ** 2
    if scored.n_classes == 2:
        return (p[:, 1] - (y == 1)) ** 2
    onehot = np.zeros_like(p)
    onehot[np.arange(p.shape[0]), y] = 1.0
    return ((p - onehot) ** 2).sum(axis=1)


def _log_loss_rows(scored: Scored) -> np.ndarray:
    eps = np.finfo(np.float64).eps
    p, y = scored.probs, scored.labels
    if scored.binary:
        return -np.log(np.clip(np.where(y == 1, p, 1.0 - p), eps, 1 - eps))
    return -np.log(np.clip(p[np.arange(p.shape[0]), y], eps, 1 - eps))


#: the companions' docstrings end with this
_COLLECTS = """A ``pl.LazyFrame`` is collected (its needed columns) and the result returned as a ``pl.LazyFrame`` (one
    row, ``n`` and the figure, without ``by``)."""


def _bounded(func: str, figure: Figure) -> Figure:
    """``figure``, with its largest value for the bootstrap's bounds: 1 for accuracy (:class:`figures.Scale`)."""
    return F.with_scale(figure, F.Scale(upper=1.0)) if func == "accuracy" else figure


def _companion(func: str, rows: Callable[[Scored], np.ndarray], doc: str, example: str) -> Callable[..., Result]:
    """The public function ``func``: the group means of ``rows``; ``doc`` and ``example`` (its value on the
    example frame) make its docstring."""

    def metric(frame: Frame, prob: Columns = None, label: str | None = None, **options: Unpack[R.Sample]) -> Result:
        req = R.companion(func, prob, label, **options)
        figures: dict[str, Figure] = {func: _bounded(func, lambda s: group_means(rows(s), s))}
        if is_dask_frame(frame):
            return _dask().run(frame, req, figures)
        return _run(req, frame, figures)

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
    return R.keywords(R.Sample)(metric)


brier = _companion("brier", _brier_rows, """Brier score: mean (p_1 - y)^2 for two classes (scikit-learn's
    brier_score_loss), mean over rows of sum_k (g_k - y_k)^2 for K > 2 (SPEC §7).""", "0.225")
log_loss = _companion("log_loss", _log_loss_rows, """Log loss: mean of -ln g_y, probabilities clipped to
    [eps, 1 - eps] with eps = float64 machine epsilon (scikit-learn's log_loss).""", "0.645575")
accuracy = _companion("accuracy", lambda s: L.top1(s)[1].astype(np.float64), """Accuracy of the top-1 prediction
    (ties to the lowest class; binary: class 1 iff p > 0.5).""", "0.75")


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
    ``_lo``/``_hi`` bounds for each. A ``pl.LazyFrame`` is collected (its
    needed columns) and the result returned as a ``pl.LazyFrame``.

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
        "accuracy": _bounded("accuracy", lambda s: group_means(L.top1(s)[1].astype(np.float64), s)),
        **{name: _ce_figure(sub) for name, sub in R.summary_parts(req).items()},
        "brier": lambda s: group_means(_brier_rows(s), s),
        "log_loss": lambda s: group_means(_log_loss_rows(s), s),
    }
    if is_dask_frame(frame):
        if disparity:  # the disparity table on the collected columns
            return _dask().collected(req.func, frame, _dask().needed(frame, replace(req, kind="rows")),
                                     lambda pdf: summary(pdf, prob, label, lens=lens, bins=bins, disparity=True,
                                                         **options))
        return _dask().summary(frame, req, figures)
    if disparity:
        return _disparity_table(Plan(req, frame, figures))
    return _run(req, frame, figures, scalar=False)  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- disparity between groups

#: disparity's own parameters (every other keyword goes to the figure)
_DISPARITY_OWN = ("frame", "prob", "label", "by", "ci", "n_boot", "seed", "ci_method", "min_n", "disparity",
                  "progress")


@R.with_progress
def disparity(frame: Frame, figure: str = "ece", prob: Columns = None, label: str | None = None, *,
              by: Columns = None, ci: float | None = 0.95, n_boot: int = 1000, seed: int | None = 0,
              ci_method: Literal["symmetric", "bias_corrected", "percentile"] = "symmetric",
              min_n: int = D.MIN_N, progress: bool | None = None,
              **figure_options: Any) -> pl.DataFrame | pd.DataFrame | pl.LazyFrame:
    """How far apart the groups of ``by`` are on a figure: fairlearn's ``MetricFrame`` group_max / group_min /
    difference / ratio.

    ``figure`` is the name of a function with one value per group: ``ece``,
    ``mce``, ``rmsce``, ``ce``, ``vece``, ``vmce``, ``gece``, ``brier``,
    ``log_loss``, ``accuracy``, or ``summary`` (each of its columns).
    ``figure_options`` go to that function (``bins=``, ``lens=``,
    ``variable=`` for ``vece``, ...), which computes the values exactly as
    ``calframe.<figure>(frame, by=by, ...)`` does.

    The ranking accounts for group size. Groups with fewer than ``min_n``
    rows (default 50) are listed in ``below_min_n``, not ranked. With ``ci``
    (default 0.95) the groups are ranked on their bootstrap intervals
    (``ci_method``, ``n_boot`` draws, ``seed``; docs/statistics.md): the worst
    is the group whose lower bound is highest, the one surely that bad, and
    the best the one whose upper bound is lowest (for ``accuracy``, the
    other way round), ties broken by the value. A small group's noisy value
    widens its interval instead of naming it worst or best. ``ci=None``
    ranks on the values themselves (fairlearn's group_max / group_min: the
    largest value is the worst, the smallest for ``accuracy``), skipping the
    bootstrap.

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
    columns (a null key: ``region=null``). Remaining ties: the first tied
    group in the ``by=`` result's order (keys sorted, nulls last). One group:
    worst = best, difference 0, ratio 1. When no group has ``min_n`` rows,
    every group is ranked (``ranked_on`` says so).

    The bounds all come from the same draws: the worst and best groups'
    bounds are their own intervals (those of ``calframe.<figure>(frame,
    by=by, ci=ci)``), and the difference, the ratio and each group's
    difference to the best are recomputed on every draw before the method's
    bounds are taken ``progress``: the bootstrap's progress bar, as the
    figures' (spec section 8, "Progress bars").

    A ``pl.LazyFrame`` is collected (its needed columns) and the table returned as a ``pl.LazyFrame``.

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
    token = _PLANNING.set(True)
    try:
        plan = globals()[figure](frame, prob=prob, label=label, by=by, ci=ci, n_boot=n_boot, seed=seed,
                                 ci_method=ci_method, **figure_options)
    finally:
        _PLANNING.reset(token)
    return _disparity_table(plan, func, min_n)


def _figure_options(figure: str) -> list[str]:
    """The keywords :func:`disparity` passes on to ``figure``'s function."""
    return [p for p in inspect.signature(globals()[figure]).parameters if p not in _DISPARITY_OWN]


def _disparity_table(plan: Plan, func: str = "summary", min_n: int = D.MIN_N
                     ) -> pl.DataFrame | pd.DataFrame | pl.LazyFrame:
    """Run ``plan``'s figures, keeping their draws (:class:`~calframe.disparities.Spread`), and read the disparity
    table off the ``by=`` result. Several variables (vece) are figures side by side."""
    result, spread, ci = _spread_run(plan, min_n)
    out = D.table(func, result, spread, ci)
    return out.lazy() if isinstance(plan.frame, pl.LazyFrame) else out


def _spread_run(plan: Plan, min_n: int = D.MIN_N) -> tuple[Any, D.Spread, float | None]:
    """``plan``'s ``by=`` result, the :class:`~calframe.disparities.Spread` holding its figures' bootstrap draws
    (one bootstrap for the groups' intervals and the table's) and the interval level."""
    req = replace(plan.req, several=False)
    labels = [f"{req.name}:{v}" for v in req.variables] if req.variables else list(plan.figures)
    spread = D.Spread(dict(zip(labels, plan.figures.values())), min_n, req.ci_method)
    return (_evaluate(req, plan.frame, spread.figures, scalar=False, prepare=plan.prepare, keep=spread.draws),
            spread, req.ci)


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
    ``top1`` for class probabilities. A ``pl.LazyFrame`` is collected (its
    needed columns) and the table returned as a ``pl.LazyFrame``.

    Examples
    --------
    >>> import polars as pl, calframe
    >>> df = pl.DataFrame({"prob": [0.9, 0.8, 0.3, 0.6], "label": [1, 0, 0, 1]})
    >>> calframe.reliability(df, bins=2, lens="class:1")["n"].to_list()
    [1, 3]
    """
    req = R.reliability("reliability", prob, label, **options)
    if is_dask_frame(frame):
        return _dask().run(frame, req)
    if native_kind(frame) is not None:
        return _narwhals.run(frame, req)
    check_by_names(req.func, req.by, F.RELIABILITY_COLUMNS, frame)
    scored = resolve(frame, func=req.func, prob=prob, label=label, by=req.by, weights=req.weights, nulls=req.nulls)
    conf, acc = L.scalar(scored, req.lens, req.func)
    sums, bins_ = binned_sums(conf, acc, scored, req.binning)
    counts = sums
    if scored.weights is not None:  # row counts beside the weighted sums
        counts, _ = binned_sums(conf, acc, replace(scored, weights=None), req.binning)
    table = F.to_flavor(F.reliability_table(sums, counts[..., 0], bins_, scored.keys), scored.flavor)
    return table.lazy() if isinstance(frame, pl.LazyFrame) else table  # collected: a LazyFrame again


# --------------------------------------------------------------------------- variable-based (Kelly & Smyth)


@R.keywords(R.VECE, bins=10, binning="quantile")
def vece(frame: Frame, variable: str | Sequence[str], prob: Columns = None, label: str | None = None, *,
         name: str = "vece", **options: Unpack[R.VECE]) -> Result:
    """Variable-based ECE (Kelly & Smyth §4): bin-weighted |accuracy - confidence| over bins of a variable.

    The ECE pipeline with the bin key swapped: rows are binned on ``variable``
    (``quantile(10)`` by default, as the paper's code; one bin per category for
    String / Categorical / Boolean variables) and every lens, distance, ``p``,
    estimator, ``by`` and ``ci`` option of :func:`ce` applies. With V = the
    lensed confidence and the same bins, VECE equals ECE. ``lens`` defaults
    to ``class:1`` (the positive class) for a single probability column and
    to ``top1`` for class probabilities; Kelly & Smyth's paper measures the
    top label (``lens="top1"``).

    ``variable`` may be a list: the result then has one row per (group,
    variable) with the variable's name in column ``variable``.

    A ``pl.LazyFrame`` input gives a ``pl.LazyFrame``, streamed when collected for one variable with a scalar
    lens and no ``ci`` (else the frame is collected first): see :func:`ce`.

    Examples
    --------
    >>> import calframe
    >>> df = calframe.datasets.grouped_miscalibration(n=4000, seed=0, age_shift=0.15)
    >>> round(calframe.vece(df, "age"), 4)               # one probability column: the positive class
    0.1235
    >>> round(calframe.vece(df, "age", lens="top1"), 4)  # top label: over- and under-confidence cancel
    0.0149
    >>> calframe.vece(df, ["age", "region"])["variable"].to_list()
    ['age', 'region']
    """
    func = name if name in ("vece", "vmce") else "vece"
    req = R.vece(func, name, variable, prob, label, **options)
    figures = {v: _ce_figure(req, _checked_variable_binner(func, v, req.binning)) for v in req.variables}
    if req.lens.kind == "marginal" and not is_dask_frame(frame) and native_kind(frame) is None:
        return _run(req, frame, figures if req.several else {name: figures[req.variables[0]]})
    return _run(req, frame, figures if req.several else {name: figures[req.variables[0]]}, binned=True)


def _checked_variable_binner(func: str, variable: str, binning: Binning) -> Binner:
    inner = variable_binner(variable, binning)

    def binner(scored: Scored, conf: np.ndarray) -> Bins:
        v = scored.extra[variable]
        if (v == v[0]).all():
            raise E.single_value_variable(func, variable)
        if binning.edges is not None:
            if scored.extra_kind[variable] != "numeric":
                raise E.edges_need_numeric_variable(func, variable)
            outside = int(((v < binning.edges[0]) | (v > binning.edges[-1])).sum())
            if outside:
                raise E.outside_edges(func, variable, outside, binning.edges[0], binning.edges[-1])
        return inner(scored, conf)

    return binner


@R.keywords(R.VMCE, bins=10, binning="quantile")
def vmce(frame: Frame, variable: str | Sequence[str], prob: Columns = None, label: str | None = None, *,
         name: str = "vmce", **options: Unpack[R.VMCE]) -> Result:
    """Variable-based maximum calibration error: the largest |accuracy - confidence| over the variable's bins.

    Same options as :func:`vece` (``p`` is fixed to inf; ``lens`` defaults
    to ``class:1`` for a single probability column, ``top1`` for class probabilities).

    Examples
    --------
    >>> import calframe
    >>> df = calframe.datasets.grouped_miscalibration(n=4000, seed=0)
    >>> calframe.vmce(df, "region") >= calframe.vece(df, "region")
    True
    """
    return vece(frame, variable, prob, label, p="inf", name=name, **options)


@R.checked_keywords
@R.with_progress
def vece_rank(
    frame: Frame,
    variables: Sequence[str] | None = None,
    prob: Columns = None,
    label: str | None = None,
    *,
    bins: int = 10,
    binning: str = "quantile",
    lens: str | None = None,
    by: Columns = None,
    nulls: Literal["raise", "drop"] = "raise",
    exclude: Sequence[str] = (),
    vce: bool = False,
    leak_check: bool = True,
    progress: bool | None = None,
) -> pl.DataFrame | pd.DataFrame:
    """VECE of many variables at once, sorted descending (Kelly & Smyth's Table 1).

    ``variables`` defaults to every numeric, Boolean, String and Categorical
    column other than the probability, label, group and ``exclude`` columns
    (columns with a single distinct value are skipped; when all are, the
    ranking is empty, with the same columns). The lens (default
    ``class:1`` for a single probability column, ``top1`` for class
    probabilities) is computed once. Numeric variables under quantile bins without ``by=`` take three
    sequential passes each (range, a cell histogram of acc - conf, the rows
    of the few cells holding the quantile edges), several variables at once;
    every other case takes one binning and one accumulate pass per variable.

    Returns a frame with ``variable``, ``kind`` (numeric/categorical), the group
    columns, ``n``, ``vece``, ``vmce`` and ``leak`` (below), sorted by ``vece``
    descending (within each group). ``vce=True`` adds ``vce`` and ``v_star``
    from :func:`vce_curve` (its default smoother, without v*'s bootstrap) for
    numeric variables (null for categorical ones or where the smoother is
    undefined, e.g. a variable that is mostly one value), as in the paper's
    Table 1 (whose figures are LOESS's: ``vce_curve(..., smoother="loess")``).

    Variables that leak the label are listed, not ranked: they come last,
    with null ``vece`` / ``vmce`` (and ``vce`` / ``v_star``) and the reason in
    ``leak`` (null for ranked variables), and a ``CalframeWarning`` names
    them. A variable leaks when it is the probability or label column itself
    (named in ``variables``), or when it determines the label (the label
    column's class, or the lens's outcome y', e.g. top-1 correctness) on
    nearly every row (:data:`LEAK_RULE`, checked on all rows, before
    ``by``):

    - *by its values*: the values held by at least 10 rows cover at least half
      the rows, and on those rows the most common label of each value is the
      row's label on at least 99% of them, with at most a tenth of the
      errors of always guessing the overall most common label (a text copy of
      the label, a near-copy with a few rows changed; not an identifier,
      whose values are too rare to say);
    - *by one threshold* (numeric variables, two-valued label): ``v > t`` or
      ``v <= t`` is the label on at least 99% of the rows, again with at most
      a tenth of the errors of the guess (a numeric copy with noise).

    ``leak_check=False`` ranks every variable (the probability and label
    columns still leak). ``progress``: a bar over the variables (and their
    curves) when the ranking takes seconds (spec section 8, "Progress bars").

    Examples
    --------
    >>> import calframe
    >>> df = calframe.datasets.grouped_miscalibration(n=4000, seed=0, age_shift=0.15)
    >>> calframe.vece_rank(df)["variable"].to_list()
    ['age', 'region', 'device']
    >>> flat = calframe.datasets.grouped_miscalibration(n=4000, seed=0)  # regions over- / under-confident
    >>> calframe.vece_rank(flat, lens="top1")["variable"].to_list()
    ['region', 'age', 'device']
    """
    from ._columns import PROB_CANDIDATES, LABEL_CANDIDATES, columns_of, flavor_of
    from ._progress import iterate

    req = R.vece_rank(variables, prob, label, bins=bins, binning=binning, lens=lens, by=by, nulls=nulls,
                      exclude=exclude, vce=vce)
    if not isinstance(leak_check, bool):
        raise bad_param("vece_rank", "leak_check", "True or False", leak_check)
    func, vce = req.func, req.options.vce
    if is_dask_frame(frame):  # the rows collected (every column when the candidates are the frame's)
        extra = () if variables is None else tuple(as_names(variables))
        return _dask().collected(func, frame, list(frame.columns) if variables is None else _dask().needed(
            frame, replace(req, kind="rows", variables=extra)), lambda pdf: vece_rank(
                pdf, variables, prob, label, bins=bins, binning=binning, lens=lens, by=by, nulls=nulls,
                exclude=exclude, vce=vce, leak_check=leak_check))
    flavor_of(frame)
    names = columns_of(frame)
    skip = set(req.options.exclude) | set(as_names(by))
    skip |= set(as_names(prob)) if prob is not None else {c for c in PROB_CANDIDATES if c in names}
    skip |= {label} if label is not None else {c for c in LABEL_CANDIDATES if c in names}
    variables = req.options.variables
    if variables is None:  # the frame's columns as calframe reads them (pandas: string labels only)
        if is_pandas_frame(frame):
            dup = set(frame.columns[frame.columns.duplicated(keep=False)])  # resolve reports duplicate names
            schema = _select(frame.head(1), [c for c in names if c not in skip and c not in dup], func).schema
        else:
            schema = frame.collect_schema() if isinstance(frame, pl.LazyFrame) else frame.schema
        variables = [c for c, dt in schema.items() if c not in skip and (
            dt.is_numeric() or dt in (pl.Boolean, pl.String) or isinstance(dt, (pl.Categorical, pl.Enum)))]
    else:
        variables = column_names(func, "variables", variables, frame)
    if not variables:
        raise ParameterError(f"{func}: no candidate variables; pass variables=[...].{non_string_hint(frame)}",
                             "variables")
    check_by_names(func, by, VECE_RANK_COLUMNS + (("vce", "v_star") if vce else ()) + ("leak",), frame)
    scored = resolve(frame, func=func, prob=prob, label=label, by=by, nulls=nulls, extra=variables, allow_weights=False,
                     check_finite=False)
    conf, acc = L.scalar(scored, req.lens, func)  # once for every variable
    leaks = _leaks(scored, variables, acc, func) if leak_check else {}
    own = {**{c: "the probability column" for c in as_names(scored.prob_name)}, scored.label_name: "the label column"}
    leaks = {v: own.get(v) or leaks.get(v) for v in variables if v in own or v in leaks}
    variables = [v for v in variables if v not in leaks]
    rows_ = []
    quick = _qcut_vece_many(conf, acc, scored, variables, req.binning, func)
    ranked = {v: r for v, r in quick.items() if r is not None}  # None: a constant variable, nothing to rank
    if ranked:
        rows_.append(pl.DataFrame({
            "variable": list(ranked),
            "kind": ["numeric"] * len(ranked),
            "n": [scored.n] * len(ranked),
            "vece": [r[0] for r in ranked.values()],
            "vmce": [r[1] for r in ranked.values()],
        }, schema_overrides={"n": pl.Int64}))
    for v in iterate(variables, func, unit="variable"):
        if v in quick:
            continue
        values = scored.extra[v]
        if scored.extra_kind[v] == "numeric":
            check_finite_variable(values, v, func)
        if (values == values[0]).all():
            continue  # a constant variable has nothing to rank
        sums, _ = binned_sums(conf, acc, scored, variable_binner(v, req.binning))
        kind = scored.extra_kind[v]
        part = pl.DataFrame({
            "variable": [v] * scored.n_groups,
            "kind": [kind] * scored.n_groups,
            "n": _group_counts(scored),
            "vece": ce_from_sums(sums, 1.0),
            "vmce": ce_from_sums(sums, float("inf")),
        })
        rows_.append(with_keys(func, scored.keys, part))
    if not rows_:  # every variable is constant: nothing to rank, an empty ranking (spec section 8, "Errors")
        empty = pl.DataFrame(schema=dict(zip(VECE_RANK_COLUMNS, [pl.String, pl.String, pl.Int64, pl.Float64,
                                                                 pl.Float64])))
        rows_.append(with_keys(func, None if scored.keys is None else scored.keys.clear(), empty))
    out = pl.concat(rows_)
    keys = [] if scored.keys is None else scored.keys.columns
    out = out.sort(keys + ["vece"], descending=[False] * len(keys) + [True], maintain_order=True)
    cols = ["variable", "kind"] + keys + list(VECE_RANK_COLUMNS[2:])
    if vce:
        parts = []
        for v, kind in iterate(list(zip(*out.select("variable", "kind").unique(maintain_order=True).to_dict(
                as_series=False).values())), "vce_curve", unit="variable"):
            if kind != "numeric":
                continue
            try:
                summ = vce_curve(frame, v, prob=prob, label=label, lens=lens, by=by, nulls=nulls, n_boot=0).summary
            except InvalidValueError:
                continue
            summ = summ if isinstance(summ, pl.DataFrame) else pl.from_pandas(summ)
            parts.append(summ.select(*keys, "vce", "v_star").with_columns(variable=pl.lit(v)))
        if parts:
            out = out.join(pl.concat(parts), on=["variable"] + keys, how="left", nulls_equal=True, maintain_order="left")
        else:
            out = out.with_columns(v_star=pl.lit(None, dtype=pl.Float64), vce=pl.lit(None, dtype=pl.Float64))
        cols += ["vce", "v_star"]
    out = out.with_columns(leak=pl.lit(None, dtype=pl.String)).select(cols + ["leak"])
    if leaks:
        E.warn(f"{func}: variables that leak the label are listed last with the reason in column 'leak', not "
               "ranked: " + "; ".join(f"{v!r} ({why})" for v, why in leaks.items())
               + ". Drop them with exclude=[...].")
        kinds = {v: scored.extra_kind[v] for v in leaks}
        part = pl.DataFrame({
            "variable": [v for v in leaks for _ in range(scored.n_groups)],
            "kind": [kinds[v] for v in leaks for _ in range(scored.n_groups)],
            "n": np.tile(np.asarray(_group_counts(scored), dtype=np.int64), len(leaks)),
        })
        part = with_keys(func, None if scored.keys is None else pl.concat([scored.keys] * len(leaks)), part)
        out = pl.concat([out, part.with_columns(leak=pl.Series([why for why in leaks.values()
                                                                for _ in range(scored.n_groups)], dtype=pl.String))],
                        how="diagonal_relaxed").select(out.columns)
    return F.to_flavor(out, scored.flavor)


#: the columns of vece_rank's result beside the group keys (``vce=True`` adds ``vce`` and ``v_star``)
VECE_RANK_COLUMNS = ("variable", "kind", "n", "vece", "vmce")

#: vece_rank's rule for a variable that leaks the label (docs/variable-calibration.md, "Variables that leak the label")
LEAK_RULE = dict(min_rows=10, min_cover=0.5, agree=0.99, error_ratio=0.1)


def _leaks(scored: Scored, variables: Sequence[str], acc: np.ndarray, func: str) -> dict[str, str]:
    """The variables that determine the label on nearly every row (:data:`LEAK_RULE`; :func:`vece_rank`'s
    docstring), with the reason: {variable: "determines the label ... on 99.6% of rows"}."""
    targets = [("label", scored.labels.astype(np.int64))]
    out_ = acc.astype(np.int64)
    if np.array_equal(out_, acc) and not np.array_equal(out_, targets[0][1]):
        targets.append(("lens outcome y'", out_))
    r = LEAK_RULE
    found: dict[str, str] = {}
    for v in variables:
        values = scored.extra[v]
        if scored.extra_kind[v] == "numeric" and not np.isfinite(values).all():
            continue  # vece_rank reports it below
        _, inv, counts = np.unique(values, return_inverse=True, return_counts=True)
        for name, t in targets:
            k = int(t.max()) + 1
            guess_err = 1.0 - np.bincount(t, minlength=k).max() / t.size  # always the most common label
            if guess_err == 0:
                continue  # a constant label: nothing to determine
            rep = counts >= r["min_rows"]
            joint = np.bincount(inv * k + t, minlength=counts.size * k).reshape(counts.size, k)
            covered = int(counts[rep].sum())
            if covered >= r["min_cover"] * t.size:
                agree = joint[rep].max(axis=1).sum() / covered
                if 1 - agree <= min(1 - r["agree"], r["error_ratio"] * guess_err):
                    found[v] = f"its value gives the {name} on {agree:.1%} of rows"
                    break
            if scored.extra_kind[v] == "numeric" and k == 2:  # one threshold between distinct values
                pos = np.cumsum(joint[:, 1])
                neg = np.cumsum(joint[:, 0])
                rising = pos[:-1] + (neg[-1] - neg[:-1])  # errors of "v <= t -> 0, v > t -> 1"
                falling = neg[:-1] + (pos[-1] - pos[:-1])  # errors of "v <= t -> 1, v > t -> 0"
                err = min(rising.min(initial=t.size), falling.min(initial=t.size)) / t.size
                if err <= min(1 - r["agree"], r["error_ratio"] * guess_err):
                    found[v] = f"one threshold on it gives the {name} on {1 - err:.1%} of rows"
                    break
    return found


def _qcut_vece_many(
    conf: np.ndarray, acc: np.ndarray, scored: Scored, variables: Sequence[str], binning: Binning, func: str
) -> dict[str, tuple[float, float]]:
    """(VECE, VMCE) of the numeric variables under quantile bins without groups, several variables at once.

    Each variable takes three sequential passes on one thread (``_kernels/qcut_sums.py``;
    same bins as ``bin_variable``), the first of which also checks the values are
    finite; the variables are spread over numba's thread count. Constant
    variables map to None. Returns {} where the case does not apply.
    """
    if scored.groups is not None or scored.weights is not None or binning.edges is not None or (
            binning.scheme != "quantile") or not scored.n:
        return {}
    numeric = [v for v in variables if scored.extra_kind[v] == "numeric"]
    if not numeric:
        return {}
    d = acc - conf
    prev_i, next_i, gamma = qcut_order_statistics(scored.n, binning.bins)

    def one(v: str) -> tuple[np.ndarray, np.ndarray, int, int]:
        return qcut_bin_sums(np.ascontiguousarray(scored.extra[v]), d, prev_i, next_i, gamma)

    import numba

    with ThreadPoolExecutor(max(1, min(numba.get_num_threads(), len(numeric)))) as pool:
        results = list(pool.map(one, numeric))
    for v, (_, _, _, n_bad) in zip(numeric, results):  # the first bad one, as the row-by-row check reports
        if n_bad:
            raise E.variable_not_finite(func, v, n_bad)
    out: dict[str, tuple[float, float] | None] = {}
    for v, (counts, sums, n_bins, _) in zip(numeric, results):
        if n_bins == 0:
            out[v] = None  # constant
            continue
        full = counts > 0
        gap = np.abs(sums[full])
        out[v] = (float(gap.sum() / scored.n), float((gap / counts[full]).max()))
    return out


class VCECurve:
    """Variable calibration curves (Kelly & Smyth §6): smoothed accuracy and confidence over a variable.

    Attributes
    ----------
    curve : frame
        One row per grid point (and group): the group columns, ``v``, ``acc``,
        ``acc_lo``, ``acc_hi``, ``conf``, ``conf_lo``, ``conf_hi`` (pointwise
        bands at ``level``) and ``gap`` = ``conf - acc``.
    summary : frame
        One row per group: ``n``, ``v_star`` (where |acc - conf| is largest on
        the grid), ``vce`` (that largest gap, in probability units; the
        paper quotes percentage points), ``v_star_lo`` / ``v_star_hi`` (the
        bootstrap percentile interval of v*'s location at ``level``; null
        with ``n_boot=0``) and ``v_star_edge`` (True when v* is the first or
        last grid point: the largest gap lies at the end of the range
        evaluated, and may lie beyond it).
    lens : str
        The lens the curves were computed with (``"class:1"`` or ``"top1"``
        when ``lens`` was not given; see :func:`vce_curve`).
    smoother : str
        ``"logistic"`` (local logistic regression) or ``"loess"``.
    """

    def __init__(self, curve: Any, summary: Any, variable: str, by: list[str], lens: str | None = None,
                 smoother: str = "logistic"):
        self.curve, self.summary, self.variable, self._by, self.lens = curve, summary, variable, by, lens
        self.smoother = smoother

    def _single(self, col: str) -> Any:
        if self._by:
            raise AttributeError(f"{col} is per group with by=; read it from .summary")
        return self.summary[col][0]

    @property
    def vce(self) -> float:
        """VCE(v*) without ``by``."""
        return float(self._single("vce"))

    @property
    def v_star(self) -> float:
        """v* without ``by``."""
        return float(self._single("v_star"))

    @property
    def v_star_interval(self) -> tuple[float, float]:
        """(v_star_lo, v_star_hi) without ``by``: the bootstrap interval of v*'s location (NaN with n_boot=0)."""
        lo, hi = self._single("v_star_lo"), self._single("v_star_hi")
        return (float("nan") if lo is None else float(lo), float("nan") if hi is None else float(hi))

    @property
    def v_star_edge(self) -> bool:
        """Whether v* is at an end of the grid, without ``by``."""
        return bool(self._single("v_star_edge"))

    def __repr__(self) -> str:
        return (f"VCECurve(variable={self.variable!r}, lens={self.lens!r}, smoother={self.smoother!r}, summary=\n"
                f"{self.summary})")


#: the columns of vce_curve's curve and summary beside the group keys
VCE_CURVE_COLUMNS = ("v", "acc", "acc_lo", "acc_hi", "conf", "conf_lo", "conf_hi", "gap")
VCE_SUMMARY_COLUMNS = ("n", "v_star", "vce", "v_star_lo", "v_star_hi", "v_star_edge")


@R.keywords(R.Curve)
def vce_curve(frame: Frame, variable: str, prob: Columns = None, label: str | None = None, *,
              smoother: Literal["logistic", "loess"] = "logistic", span: float = 0.9, degree: int = 2,
              family: Literal["gaussian", "symmetric"] = "gaussian", n_points: int = 500,
              quantiles: tuple[float, float] = (0.05, 0.95), level: float = 0.95, n_boot: int = 200, seed: int = 0,
              **options: Unpack[R.Curve]) -> VCECurve:
    """VCE(v*) and the variable calibration curves (SPEC §4, Kelly & Smyth §6).

    Accuracy (the lensed label) and confidence are each smoothed over the
    numeric ``variable`` with the neighbourhoods and tricube weights of
    LOESS (``span`` 0.9 as the paper's Table 1, local polynomial of
    ``degree`` 2), evaluated on ``n_points`` points evenly spaced between the
    ``quantiles`` of the variable, with pointwise confidence bands at
    ``level``. VCE(v*) is the largest |accuracy - confidence| on that grid.

    ``smoother="logistic"`` (the default) fits each point by local-likelihood
    logistic regression (the local polynomial is on the log-odds scale, as
    R's ``locfit(family="binomial")``; ``calframe/_kernels/local_logistic.py``),
    so the curves, their bands (``expit(eta -/+ z se)``, sandwich standard
    errors) and v* come from values inside [0, 1]. ``smoother="loess"`` is
    Kelly & Smyth's LOESS (cloess's exact direct fit, bands from its
    residual scale), the paper's numbers: its local least squares can leave
    [0, 1] where an outcome is rare (Adult's frequency of high income at
    age 19 is -0.027), and a ``CalframeWarning`` then says where.
    ``family="symmetric"`` (robust reweighting) is a LOESS option.

    v*'s location gets a bootstrap percentile interval at ``level``
    (``v_star_lo``, ``v_star_hi``): ``n_boot`` resamples of each group's rows
    (``seed``; 0: no interval), both curves refitted on the same grid with
    the full data's bandwidths, v* taken from each. ``v_star_edge`` marks a v*
    at the first or last grid point. ``lens`` defaults to ``class:1`` (the
    positive class: "accuracy" is then the frequency of class 1) for a single
    probability column and to ``top1`` for class probabilities; the result's
    ``.lens`` says which was used.

    Examples
    --------
    >>> import calframe
    >>> df = calframe.datasets.grouped_miscalibration(n=3000, seed=0)
    >>> res = calframe.vce_curve(df, "age", n_points=50)
    >>> res.curve.columns
    ['v', 'acc', 'acc_lo', 'acc_hi', 'conf', 'conf_lo', 'conf_hi', 'gap']
    >>> 0 <= res.vce < 0.1, res.summary.columns[1:]
    (True, ['v_star', 'vce', 'v_star_lo', 'v_star_hi', 'v_star_edge'])
    >>> lo, hi = res.v_star_interval
    >>> bool(lo <= res.v_star <= hi)
    True
    >>> paper = calframe.vce_curve(df, "age", n_points=50, smoother="loess", n_boot=0)  # Kelly & Smyth's LOESS
    """
    req = R.vce_curve(variable, prob, label, span=span, degree=degree, family=family, n_points=n_points,
                      quantiles=quantiles, level=level, smoother=smoother, n_boot=n_boot, seed=seed, **options)
    func, by, o = req.func, req.by, req.options
    check_by_names(func, by, VCE_CURVE_COLUMNS + VCE_SUMMARY_COLUMNS, frame)
    if is_dask_frame(frame):  # the smoothers need the rows: the needed columns collected
        return _dask().collected(func, frame, _dask().needed(frame, replace(req, kind="rows")), lambda pdf: vce_curve(
            pdf, variable, prob, label, smoother=smoother, span=span, degree=degree, family=family,
            n_points=n_points, quantiles=quantiles, level=level, n_boot=n_boot, seed=seed, **options))
    scored = resolve(frame, func=func, prob=prob, label=label, by=by, nulls=req.nulls, extra=[variable],
                     allow_weights=False)
    if scored.extra_kind[variable] != "numeric":
        raise ParameterError(f"{func}: variable {variable!r} is categorical; a smoothed curve needs a numeric "
                             "variable (use vece() for categories).")
    conf, acc = L.scalar(scored, req.lens, func)
    v = scored.extra[variable]
    codes = scored.group_codes
    curves, rows_, outside = [], [], []
    for g in range(scored.n_groups):
        m = codes == g
        vg, ag, cg = v[m], acc[m].astype(np.float64), np.ascontiguousarray(conf[m], dtype=np.float64)
        where = "" if scored.keys is None else f" in group {scored.keys.row(g)}"
        if np.unique(vg).size < 3:
            raise InvalidValueError(f"{func}: variable {variable!r} has fewer than 3 distinct values{where}; a "
                                    "smoothed curve needs more.")
        grid = _curve_grid(vg, o)
        try:
            smoother_ = _Smoother(vg, grid, o)
            fits = [smoother_.fit(y) for y in (ag, cg)]
        except ValueError as exc:
            _, counts = np.unique(vg, return_counts=True)
            raise InvalidValueError(
                f"{func}: {o.smoother.upper() if o.smoother == 'loess' else 'the local logistic fit'} along "
                f"{variable!r}{where} failed ({exc}); its most common value holds {counts.max() / vg.size:.0%} of "
                "the rows. Increase span, or use vece() with bins for a variable with so many ties."
            ) from None
        (a, a_lo, a_hi, a_coef), (c, c_lo, c_hi, c_coef) = fits
        gap = c - a
        i = int(np.argmax(np.abs(gap)))
        if o.smoother == "loess":  # the fits or their bands outside [0, 1]
            every = np.stack([a, a_lo, a_hi, c, c_lo, c_hi])
            bad = ((every < 0) | (every > 1)).any(axis=0)
            if bad.any():
                outside.append(f"{int(bad.sum())} of {grid.size} points{where} (from {every.min():.3g} to "
                               f"{every.max():.3g})")
        lo, hi = _v_star_interval(vg, ag, cg, grid, o, (a_coef, c_coef)) if o.n_boot else (None, None)
        part = pl.DataFrame(dict(zip(VCE_CURVE_COLUMNS, [grid, a, a_lo, a_hi, c, c_lo, c_hi, gap])))
        srow = pl.DataFrame(dict(zip(VCE_SUMMARY_COLUMNS, [[int(m.sum())], [float(grid[i])], [float(abs(gap[i]))],
                                                           [lo], [hi], [i in (0, grid.size - 1)]])),
                            schema_overrides={"v_star_lo": pl.Float64, "v_star_hi": pl.Float64})
        key = None if scored.keys is None else scored.keys[g]
        curves.append(with_keys(func, None if key is None else pl.concat([key] * o.n_points), part))
        rows_.append(with_keys(func, key, srow))
    if outside:
        E.warn(f"{func}: the LOESS curves or their bands along {variable!r} leave [0, 1] at " + "; ".join(outside)
               + ": least squares on a rare (or near-certain) outcome; smoother='logistic' stays inside.")
    by_cols = [] if scored.keys is None else scored.keys.columns
    return VCECurve(F.to_flavor(pl.concat(curves), scored.flavor), F.to_flavor(pl.concat(rows_), scored.flavor),
                    variable, by_cols, str(L.resolve_lens(req.lens, scored.binary)), o.smoother)


def _curve_grid(v: np.ndarray, o: Any) -> np.ndarray:
    from ._kernels.loess import evaluation_grid

    return evaluation_grid(v, o.n_points, *o.quantiles)


class _Smoother:
    """vce_curve's smoother of one group's variable ``v`` on ``grid`` (``o.smoother``): :meth:`fit` gives
    (fit, lower, upper, start) for an outcome; ``start`` (the local logistic coefficients, else None) lets a
    bootstrap refit start Newton from the full data's fit."""

    def __init__(self, v: np.ndarray, grid: np.ndarray, o: Any):
        self.v, self.grid, self.o = v, grid, o
        if o.smoother == "logistic":
            from ._kernels.local_logistic import LocalLogistic

            self.ll = LocalLogistic(v, grid, span=o.span, degree=o.degree)

    def fit(self, y: np.ndarray, weights: np.ndarray | None = None, bands: bool = True,
            start: np.ndarray | None = None) -> tuple[np.ndarray, Any, Any, Any]:
        """Raises ValueError where the smoother is undefined."""
        o, grid = self.o, self.grid
        if o.smoother == "loess":
            from ._kernels.loess import loess_fit

            f = loess_fit(self.v, y, span=o.span, degree=o.degree, family=o.family, new_x=grid, se=bands,
                          alpha=1 - o.level, weights=weights)
            return f.predicted, f.lower, f.upper, None
        from statistics import NormalDist

        from ._kernels.local_logistic import B2, ETA, FIT, SE_ETA

        z = NormalDist().inv_cdf(0.5 + o.level / 2) if bands else 0.0
        out = self.ll.fit(y, weights, z, start)
        bad = np.flatnonzero(np.isnan(out[:, FIT]))
        if bad.size:
            raise ValueError(f"no rows of positive weight near {grid[bad[0]]!r}, make span bigger")
        coef = out[:, ETA:B2 + 1]
        if not bands:
            return out[:, FIT], None, None, coef
        eta, se = out[:, ETA], out[:, SE_ETA]
        with np.errstate(invalid="ignore"):  # a fit of exactly 0 or 1 (eta infinite, se 0) is its own band
            lo, hi = [np.where(np.isinf(eta), out[:, FIT], 0.5 * (1 + np.tanh((eta + s * z * se) / 2)))
                      for s in (-1, 1)]
        return out[:, FIT], lo, hi, coef


#: v*'s bootstrap merges a variable with more distinct values into this many cells (:func:`_v_star_interval`)
V_STAR_CELLS = 1000


def _v_star_interval(v: np.ndarray, acc: np.ndarray, conf: np.ndarray, grid: np.ndarray, o: Any,
                     starts: tuple[Any, Any]) -> tuple[float | None, float | None]:
    """The bootstrap percentile interval of v* at ``o.level``: rows resampled (``o.n_boot`` times, ``o.seed``),
    both curves refitted on ``grid`` with the full rows' bandwidths (resampled rows as weights; the local
    logistic fits start from the full data's, ``starts``). A variable with more than :data:`V_STAR_CELLS`
    distinct values is merged into that many equal-width cells, each at the mean of its values, for the
    resamples (the fit's cost is per distinct value). None, None when fewer than half the resamples can be
    fitted."""
    rng = np.random.default_rng(o.seed)
    n = v.size
    if np.unique(v).size > V_STAR_CELLS:
        edges = np.linspace(v.min(), v.max(), V_STAR_CELLS + 1)
        cell = np.clip(np.searchsorted(edges, v, side="right") - 1, 0, V_STAR_CELLS - 1)
        v = (np.bincount(cell, weights=v, minlength=V_STAR_CELLS)
             / np.maximum(np.bincount(cell, minlength=V_STAR_CELLS), 1))[cell]
    sm = _Smoother(v, grid, o)
    stars = []
    from ._progress import iterate

    for _ in iterate(range(o.n_boot), "v* bootstrap", unit="draw"):
        w = np.bincount(rng.integers(0, n, n), minlength=n).astype(np.float64)
        try:
            a = sm.fit(acc, w, bands=False, start=starts[0])[0]
            c = sm.fit(conf, w, bands=False, start=starts[1])[0]
        except ValueError:
            continue  # a resample the smoother cannot fit somewhere (a window left without rows)
        stars.append(grid[int(np.argmax(np.abs(c - a)))])
    if len(stars) < max(20, o.n_boot // 2):
        return None, None
    lo, hi = np.quantile(np.asarray(stars), [(1 - o.level) / 2, (1 + o.level) / 2])
    return float(lo), float(hi)


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
    mask = _where_mask(frame, where, func)
    if is_pandas_frame(frame):
        return frame.iloc[np.flatnonzero(mask.fill_null(False).to_numpy())]
    return frame.filter(mask)


def _where_expr(frame: Frame, expr: pl.Expr, func: str) -> Frame:
    """``frame`` filtered by a Polars expression, checked first against the columns (a Boolean column)."""
    names = columns_of(frame)
    if is_pandas_frame(frame):
        used = list(dict.fromkeys([c for c in expr.meta.root_names() if c in names] or names))
        index = fresh_name(names, "i")
        data = _select(frame, used, func, nan_null=used).with_row_index(index)
    else:
        data = frame
    lf = data.lazy()
    try:
        dtype = lf.select(expr).collect_schema().dtypes()
    except Exception as exc:
        raise ParameterError(f"The 'where' parameter of {func} could not be evaluated on the frame's columns "
                             f"{names} ({type(exc).__name__}: {str(exc).splitlines()[0]}).") from None
    if dtype != [pl.Boolean]:
        raise ParameterError(f"The 'where' parameter of {func} must give one Boolean column (True = keep the row); "
                             f"{expr} gives {dtype}. It must be {_WHERE}.")
    try:  # evaluated here, also on a LazyFrame, so that a failure is reported as the where's
        if is_pandas_frame(frame):
            return frame.iloc[data.filter(expr)[index].to_numpy()]
        if isinstance(frame, pl.LazyFrame):
            keep = fresh_name(names, "keep")  # the mask (a scalar broadcast to every row), then the rows it keeps
            return frame.filter(frame.with_columns(expr.alias(keep)).select(keep).collect()[keep])
        return frame.filter(expr)
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
    n = frame.select(pl.len()).collect().item() if isinstance(frame, pl.LazyFrame) else len(frame)
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
    A ``pl.LazyFrame`` is collected (its needed columns: adaptive bins and the
    vector lenses need the rows) and the result returned as a ``pl.LazyFrame``
    (one row, ``n`` and the figure, without ``by``).

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
        if c is not None:
            return G.class_c(scored.probs, scored.labels, c)
        used = None if scalar_lens is None else L.resolve_lens(scalar_lens, scored.binary)
        if used is not None and used.kind == "class":
            if used.c >= scored.n_classes:
                L.parse_lens(func, used, scored.n_classes)
            return G.class_c(scored.probs, scored.labels, used.c)
        if lens == "top1" or used is not None:
            return G.top1(scored.probs, scored.labels)
        if lens == "topk":
            return G.topk(scored.probs, scored.labels, k)  # type: ignore[arg-type]
        if lens == "full":
            return G.full(scored.probs, scored.labels, onehot=False)
        return G.grouping(scored.probs, scored.labels, groups, onehot=False)

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
        return _run(req, _where(frame, where, func), {"gece": figure}, prepare=select)

    if is_dask_frame(frame):
        selects = where is not None or labels_in is not None or output_between is not None
        return _dask().gece(frame, req, {"gece": figure}, lensed, rows, selects)
    return rows(frame)


def gece_marginal(per_class: np.ndarray, p: float) -> np.ndarray:
    """The marginal GECE from the classes' (class:c) figures, (n_classes, n_groups): their max for p = inf, else
    their power mean."""
    return per_class.max(axis=0) if np.isinf(p) else (per_class**p).mean(axis=0) ** (1.0 / p)


def _gece_module():
    """The array-level building blocks (calframe/generalized.py)."""
    from . import generalized

    return generalized


# --------------------------------------------------------------------------- local calibration (Luo et al.)


def _features(frame: Frame, features: str | Sequence[str], func: str) -> list[str]:
    cols = column_names(func, "features", features, frame) if isinstance(features, (str, list, tuple)) else []
    if not cols:
        raise bad_param(func, "features", "a column name, an Array column, or a non-empty list of columns", features)
    return cols


def _feature_matrix(scored: Scored, cols: list[str], func: str) -> np.ndarray:
    mats = []
    for c in cols:
        v = scored.extra[c]
        if scored.extra_kind[c] != "numeric":
            raise ColumnTypeError(f"{func}: feature {c!r} is not numeric; features must be numbers (or an Array).")
        mats.append(v.reshape(v.shape[0], -1))
    return np.ascontiguousarray(np.column_stack(mats), dtype=np.float64)


def prepare_features(x: np.ndarray, func: str, prepare: str = "none", n_components: int | None = None,
                     names: Sequence[str] = ()) -> np.ndarray:
    """Features as given, standardised (z-scores), or reduced to ``n_components`` by PCA (numpy SVD).

    PCA of fewer rows than ``n_components`` (default min(features, 2)): the components past the
    SVD's, along which the rows do not vary, are 0 (spec section 8, "Errors").
    """
    if prepare == "none":
        return x
    sd = x.std(axis=0)
    const = np.flatnonzero(sd == 0)
    if prepare == "standardize":
        if const.size:
            which = [names[i] if i < len(names) else i for i in const]
            raise InvalidValueError(f"{func}: feature(s) {which} are constant; they cannot be standardised. "
                                    "Drop them or use prepare='none'.")
        return (x - x.mean(axis=0)) / sd
    m = n_components if n_components is not None else min(x.shape[1], 2)
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or not 1 <= m <= x.shape[1]:
        raise bad_param(func, "n_components", f"an int in 1..{x.shape[1]}", n_components)
    xc = x - x.mean(axis=0)
    _, _, vt = np.linalg.svd(xc, full_matrices=False)
    comp = vt[:m]  # fewer than m with fewer rows than m: the rows do not vary along the others
    r = comp.shape[0]
    comp *= np.where(comp[np.arange(r), np.abs(comp).argmax(axis=1)] < 0, -1.0, 1.0)[:, None]  # sign convention
    return np.hstack([xc @ comp.T, np.zeros((x.shape[0], m - r))])  # those components are 0, as rank-deficient data


def _lce_values(scored: Scored, cols: list[str], gamma: float, req: R.Request
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    from ._kernels import local as LK
    from .binning import uniform_bins

    o = req.options
    x = prepare_features(_feature_matrix(scored, cols, req.func), req.func, o.prepare, o.n_components, cols)
    conf, acc = L.scalar(scored, req.lens, req.func)
    ids = uniform_bins(conf, req.binning.bins, "left").astype(np.int64)
    return LK.lce(x, conf, acc.astype(np.float64), ids, gamma), conf, acc, ids


@R.keywords(R.Kernel)
def lce(frame: Frame, features: str | Sequence[str], prob: Columns = None, label: str | None = None, *,
        name: str = "lce", **options: Unpack[R.Kernel]) -> pl.DataFrame | pd.DataFrame:
    """Local calibration error of every row (Luo et al. §3; SPEC §5), as a new column ``name``.

    LCE(x) = |sum_i (g'_i - y'_i) k(x, x_i)| / sum_i k(x, x_i) over the rows
    i in x's confidence bin (``bins`` uniform bins of the lensed confidence;
    x itself included), with the Laplacian kernel
    k(x, x') = exp(-||phi(x) - phi(x')||_1 / (d * gamma)) on the d feature
    columns (``prepare``: as given, standardised, or PCA to ``n_components``).
    Sums are exact (no truncation): calframe._kernels.local. ``lens``
    defaults to ``class:1`` (the positive class) for a single probability
    column and to ``top1`` for class probabilities (g', y' are its outputs).

    Returns the frame (the rows used, in order) with the column added.

    Examples
    --------
    >>> import calframe
    >>> df = calframe.datasets.grouped_miscalibration(n=2000, seed=0)
    >>> out = calframe.lce(df, ["age"], gamma=0.5)
    >>> out.columns[-1], bool((out["lce"] >= 0).all())
    ('lce', True)
    """
    req = R.local("lce", prob, label, **options)
    scored, cols, values = _lce(req, frame, features)
    return _with_column(frame, name, values, scored, req.nulls, req.func, prob, label, cols)


def _lce(req: R.Request, frame: Frame, features: str | Sequence[str], values: bool = True
         ) -> tuple[Scored, list[str], np.ndarray | None]:
    """lce and mlce: the rows resolved and the LCE of every row over all of them: (scored rows, feature columns,
    LCE; None when ``values`` is False)."""
    func = req.func
    cols = _features(frame, features, func)
    check_by_names(func, req.by, MLCE_COLUMNS, frame)
    scored = resolve(frame, func=func, prob=req.prob, label=req.label, by=req.by, nulls=req.nulls, extra=cols)
    return scored, cols, _lce_values(scored, cols, req.options.gammas[0], req)[0] if values else None


def _with_column(frame: Frame, name: str, values: np.ndarray, scored: Scored, nulls: str, func: str,
                 prob: Columns, label: str | None, cols: list[str]) -> Any:
    """``frame`` with one new column (rows with nulls dropped first when nulls='drop')."""
    if isinstance(frame, pl.LazyFrame):
        frame = frame.collect()
    if isinstance(frame, pl.DataFrame):
        base = frame
        if len(base) != len(values):  # nulls="drop" removed rows: the same rows, in order
            need = list(dict.fromkeys(as_names(scored.prob_name) + [scored.label_name] + cols))
            base = base.drop_nulls(subset=need)
        return base.with_columns(pl.Series(name, values))
    base = frame
    if len(base) != len(values):
        need = list(dict.fromkeys(as_names(scored.prob_name) + [scored.label_name] + cols))
        base = base.dropna(subset=need)
    out = base.copy()
    out[name] = values
    return out


#: the columns of mlce's grouped result beside the group keys
MLCE_COLUMNS = ("n", "mlce", "mean_lce")


@R.keywords(R.Kernel)
def mlce(frame: Frame, features: str | Sequence[str], prob: Columns = None, label: str | None = None, *,
         by: Columns = None, neighbours: Literal["group", "frame"] = "group", **options: Unpack[R.Kernel]) -> Result:
    """Maximum (and mean) local calibration error (Luo et al.): ``max_x LCE_gamma(x)``.

    With ``by``, each group is measured on its own rows, like every other
    ``by=``: a group's ``mlce`` and ``mean_lce`` equal the call on that group's
    rows alone (its neighbourhoods, confidence bins and ``prepare`` come
    from its rows only). ``neighbours="frame"`` instead computes every row's
    LCE over the whole frame (neighbourhoods drawn from every group's rows)
    and summarises those per group: how locally miscalibrated a group's
    rows are in the neighbourhoods of the whole population, as
    ``lce(frame)`` then a group-by would give. Without ``by`` returns the
    MLCE as a float (``neighbours`` makes no difference). ``lens`` as
    :func:`lce` (default ``class:1`` for a single probability column,
    ``top1`` for class probabilities).

    Examples
    --------
    >>> import calframe
    >>> df = calframe.datasets.grouped_miscalibration(n=2000, seed=0)
    >>> abs(calframe.mlce(df, ["age"], gamma=1e9) - calframe.mce(df)) < 1e-8   # Lemma 1: gamma -> inf
    True
    >>> per = calframe.mlce(df, ["age"], gamma=0.2, by="region")   # each region on its own rows
    >>> alone = calframe.mlce(df.filter(region=per["region"][0]), ["age"], gamma=0.2)
    >>> per["mlce"][0] == alone
    True
    """
    if neighbours not in ("group", "frame"):
        raise bad_param("mlce", "neighbours", "'group' (each group on its own rows) or 'frame' (LCE over the whole "
                        "frame, summarised per group)", neighbours)
    req = R.local("mlce", prob, label, by=by, **options)
    if by is None or neighbours == "frame":
        scored, _, values = _lce(req, frame, features)
    else:  # each group's LCE from its own rows
        scored, cols, _ = _lce(req, frame, features, values=False)
        values = np.empty(scored.n)
        for g in range(scored.n_groups):
            m = scored.group_codes == g
            values[m] = _lce_values(scored.subset(m), cols, req.options.gammas[0], req)[0]
    codes = scored.group_codes
    mx = np.full(scored.n_groups, -np.inf)
    np.maximum.at(mx, codes, values)
    mean = np.bincount(codes, weights=values, minlength=scored.n_groups) / np.maximum(
        np.bincount(codes, minlength=scored.n_groups), 1)
    if by is None:
        return float(mx[0])
    out = pl.DataFrame(dict(zip(MLCE_COLUMNS, [_group_counts(scored), mx, mean])))
    return F.to_flavor(with_keys(req.func, scored.keys, out), scored.flavor)


@R.keywords(R.Local)
def mlce_curve(frame: Frame, features: str | Sequence[str], prob: Columns = None, label: str | None = None, *,
               gammas: Sequence[float] | None = None, **options: Unpack[R.Local]) -> pl.DataFrame | pd.DataFrame:
    """MLCE as a function of gamma (Luo et al. Fig. 1), with MCE (the gamma -> inf limit, Lemma 1) beside it.

    ``gammas`` defaults to ``numpy.logspace(-2, 2, 25)``. Columns: ``gamma``,
    ``mlce``, ``mean_lce``, ``mce``, all under ``lens`` (default ``class:1``
    for a single probability column, ``top1`` for class probabilities).

    Examples
    --------
    >>> import calframe
    >>> df = calframe.datasets.grouped_miscalibration(n=1000, seed=0)
    >>> calframe.mlce_curve(df, ["age"], gammas=[0.1, 1.0]).columns
    ['gamma', 'mlce', 'mean_lce', 'mce']
    """
    req = R.local("mlce_curve", prob, label, gammas=gammas, **options)
    func, gs = req.func, req.options.gammas
    cols = _features(frame, features, func)
    scored = resolve(frame, func=func, prob=prob, label=label, nulls=req.nulls, extra=cols)
    conf, acc = L.scalar(scored, req.lens, func)
    sums, _ = binned_sums(conf, acc, scored, req.binning)
    mce_value = float(ce_from_sums(sums, float("inf"))[0])
    mx, mean = [], []
    from ._progress import iterate

    for gv in iterate(gs, func, unit="gamma"):
        v = _lce_values(scored, cols, gv, req)[0]
        mx.append(float(v.max()))
        mean.append(float(v.mean()))
    out = pl.DataFrame({"gamma": list(gs), "mlce": mx, "mean_lce": mean, "mce": [mce_value] * len(gs)})
    return F.to_flavor(out, scored.flavor)


# --------------------------------------------------------------------------- recalibration columns


def _rec_module():
    from . import recalibrate
    from .recalibrate import grouped  # noqa: F401  (registers per_group)

    return recalibrate


@R.with_progress
def fit(
    frame: Frame,
    method: str,
    prob: Columns = None,
    label: str | None = None,
    *,
    variable: str | None = None,
    features: str | Sequence[str] | None = None,
    by: Columns = None,
    nulls: Literal["raise", "drop"] = "raise",
    progress: bool | None = None,
    **params: Any,
) -> Any:
    """Fit a recalibrator on a calibration frame; apply it with :func:`apply`, save it with ``.save(path)``.

    Methods (SPEC §6): ``platt``, ``temperature``, ``histogram``,
    ``isotonic``, ``beta``, ``scaling_binning``, ``tree`` (needs
    ``variable``), ``beta_v`` (needs ``variable``) and ``lore`` (needs
    ``features``; ``gamma``). ``params`` go to the method (see
    ``calframe.recalibrate``). With ``by``, one recalibrator is fitted per
    group (the paper's per-group baseline); applying it needs the same group
    columns. ``progress``: a bar over the groups, and a tree's leaves, when the
    fit takes seconds (spec section 8, "Progress bars").

    The column names are stored with the recalibrator, so ``apply`` finds them
    on a new frame by default. Saved files hold only data (JSON + Parquet).

    A ``pl.LazyFrame`` is collected (the columns the fit reads). On a Dask
    DataFrame the result is a lazy ``DaskResult`` (``.compute()`` gives the
    recalibrator): the columns the fit reads are collected into one pandas
    frame, all of them, in partition order, and the fit is the eager one on it,
    bit for bit. Nothing is sampled: when those columns do not fit in memory,
    sample explicitly, e.g. ``calframe.fit(ddf.sample(frac=0.05,
    random_state=0), "platt")`` (docs/scaling-out-dask.md).

    Examples
    --------
    >>> import calframe
    >>> cal = calframe.datasets.grouped_miscalibration(n=4000, seed=1)
    >>> rec = calframe.fit(cal, "tree", variable="age", max_depth=2)
    >>> new = calframe.apply(calframe.datasets.grouped_miscalibration(n=1000, seed=2), rec, name="p_tree")
    >>> new.columns[-1]
    'p_tree'
    """
    R = _rec_module()
    func = "fit"
    if method not in R.METHODS or method == "per_group":
        raise bad_param(func, "method", f"one of {sorted(m for m in R.METHODS if m != 'per_group')}", method)
    params = R.REGISTRY[method].check_params(params)  # names and values, before reading any data
    if method in ("tree", "beta_v") and variable is None:
        raise ParameterError(f"fit: method {method!r} needs variable=<column> (the variable V it recalibrates along).",
                             "variable")
    if method == "lore" and features is None:
        raise ParameterError("fit: method 'lore' needs features=[...] (the columns of the kernel's feature map).",
                             "features")
    if variable is not None and method not in ("tree", "beta_v"):
        raise bad_param(func, "variable", f"None for method {method!r} (only 'tree' and 'beta_v' use a variable)",
                        variable)
    if features is not None and method != "lore":
        raise bad_param(func, "features", f"None for method {method!r} (only 'lore' uses features)", features)
    feat_cols = [] if features is None else _features(frame, features, func)
    extra = ([variable] if variable is not None else []) + feat_cols
    if is_dask_frame(frame):  # the fit needs the rows: the needed columns collected
        rows = Request(func, "rows", func, prob, label, by, None, nulls, variables=tuple(extra))
        return _dask().collected(func, frame, _dask().needed(frame, rows), lambda pdf: fit(
            pdf, method, prob, label, variable=variable, features=features, by=by, nulls=nulls, progress=progress,
            **params))
    scored = resolve(frame, func=func, prob=prob, label=label, by=by, nulls=nulls, extra=extra, allow_weights=False)
    meta = {"prob": scored.prob_name, "label": scored.label_name, "variable": variable, "features": feat_cols,
            "by": as_names(by), "n_classes": scored.n_classes, "binary": scored.binary}

    def fit_one(sc: Scored) -> Any:
        kw = dict(params)
        args = []
        if variable is not None:
            if sc.extra_kind[variable] != "numeric":
                raise ParameterError(f"fit: variable {variable!r} must be numeric for method {method!r}.")
            args.append(sc.extra[variable])
        if feat_cols:
            args.append(_feature_matrix(sc, feat_cols, func))
        try:
            return R.fit(method, sc.probs, sc.labels.astype(np.int64), *args, **kw)
        except R.OneClassError as exc:  # the arrays' message, naming the label column
            inner, lens_, value, n = exc.detail or (method, "class:1", 0, sc.n)
            where = f"fit (method {method!r}" + ("" if inner == f"{method}.fit" else f", its {inner}") + ")"
            raise R.one_class_error(where, lens_, value, n, scored.label_name) from None

    if by is None:
        rec = fit_one(scored)
        rec.meta.update(meta)
        return rec
    _check_storable_keys(scored)
    children, keys = [], []
    from ._progress import iterate

    for g in iterate(range(scored.n_groups), func, unit="group"):
        sub = scored.subset(scored.group_codes == g)
        try:
            children.append(fit_one(sub))
        except ParameterError:  # a parameter, not a group, is to blame
            raise
        except CalframeError as exc:
            raise type(exc)(f"{exc} (group {scored.keys.row(g)})") from None  # type: ignore[union-attr]
        keys.append([_json_key(v) for v in scored.keys.row(g)])  # type: ignore[union-attr]
    from .recalibrate.grouped import PerGroup

    return PerGroup(params={"keys": keys, "method": method}, meta=meta, children=children)


def _check_storable_keys(scored: Scored) -> None:
    """fit(by=): a saved recalibrator stores its keys as JSON, so no key may be infinite (NaN keys are nulls)."""
    keys = scored.keys
    for c in keys.columns:  # type: ignore[union-attr]
        if keys[c].dtype.is_float():  # type: ignore[index]
            inf = np.isinf(keys[c].to_numpy())  # type: ignore[index]
            if inf.any():
                n = int(_group_counts(scored)[inf].sum())
                raise InvalidValueError(
                    f"fit: group key column {c!r} (by=) is infinite in {_rows(n)}; a per-group recalibrator "
                    "stores its keys as JSON, which holds finite numbers only. Replace those keys (e.g. by null, "
                    f"which is a group of its own) or cast {c!r} to String before fitting."
                )


def _json_key(v: Any) -> Any:
    if isinstance(v, (np.generic,)):
        return v.item()
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    return str(v)


@R.with_progress
def apply(
    frame: Frame,
    recalibrator: Any,
    *,
    name: str | None = None,
    prob: Columns = None,
    variable: str | None = None,
    features: str | Sequence[str] | None = None,
    unknown: Literal["raise", "keep"] = "raise",
    progress: bool | None = None,
) -> Any:
    """Add the recalibrated column(s) to a frame (a new frame; the input is not changed).

    Adds ``name`` (default ``p_<method>``): the recalibrated positive-class
    probability for binary input (a method that resets the top-label
    confidence, such as ``lore``, keeps the predicted class: p = conf where
    p > 0.5, else 1 - conf), or the recalibrated confidence for multiclass methods that
    reset the top-label confidence (the predicted class is unchanged); for
    multiclass methods that rescale the whole vector (``temperature``, ...)
    ``name`` is the probability Array and ``<name>_conf`` its top-label
    confidence. Columns default to those the recalibrator was fitted on. A
    LazyFrame stays lazy, and so do a PySpark DataFrame and a DuckDB relation
    (recalibrated batch by batch inside the engine: :mod:`calframe.engines.batches`).
    With a per-group recalibrator, rows of a group it
    has not seen raise an error, or keep their probability with
    ``unknown="keep"``. ``progress``: the bar of a LoRe recalibrator's kernel
    sums when they take seconds (spec section 8, "Progress bars").

    Examples
    --------
    >>> import calframe
    >>> cal = calframe.datasets.grouped_miscalibration(n=3000, seed=1)
    >>> rec = calframe.fit(cal, "platt")
    >>> out = calframe.apply(cal, rec)
    >>> calframe.ece(out, prob="p_platt", lens="class:1") < calframe.ece(cal, lens="class:1")
    True
    """
    R = _rec_module()
    if not isinstance(recalibrator, R.Recalibrator):
        raise E.not_a_recalibrator("apply", recalibrator)
    if unknown not in ("raise", "keep"):
        raise bad_param("apply", "unknown", "'raise' or 'keep'", unknown)
    meta = recalibrator.meta
    method = recalibrator.params.get("method", recalibrator.method) if recalibrator.method == "per_group" \
        else recalibrator.method
    name = name or f"p_{method}"
    kwargs = {"name": name, "prob": prob, "variable": variable, "features": features, "unknown": unknown}
    if is_dask_frame(frame):
        return _dask().apply(frame, recalibrator, kwargs)
    if _batches.runs_apply(frame):
        return _batches.apply(frame, recalibrator, kwargs)
    if isinstance(frame, pl.LazyFrame):
        lf = frame

        def batch(df: pl.DataFrame) -> pl.DataFrame:
            return apply(df, recalibrator, **kwargs)

        schema = {**lf.collect_schema(), **apply_columns(recalibrator, name)}
        return lf.map_batches(batch, schema=pl.Schema(schema), streamable=True)
    return _apply_eager(frame, recalibrator, meta, name, prob, variable, features, unknown, R)


def apply_columns(recalibrator: Any, name: str) -> dict[str, pl.DataType]:
    """The columns :func:`apply` adds, with their types: ``name`` (Float64), or for multiclass methods that rescale
    the whole vector ``name`` (an Array of the K probabilities) and ``<name>_conf`` (Float64)."""
    meta = recalibrator.meta
    if recalibrator.output == "probs" and not meta.get("binary", True):
        return {name: pl.Array(pl.Float64, int(meta.get("n_classes", 2))), f"{name}_conf": pl.Float64}
    return {name: pl.Float64}


def _apply_eager(frame, rec, meta, name, prob, variable, features, unknown, R):
    func = "apply"
    prob = prob if prob is not None else meta.get("prob")
    variable = variable if variable is not None else meta.get("variable")
    feat_cols = list(features) if isinstance(features, (list, tuple)) else (
        [features] if isinstance(features, str) else list(meta.get("features") or []))
    by = meta.get("by") or []
    extra = ([variable] if variable else []) + feat_cols
    names = columns_of(frame)
    missing = [c for c in extra + by if c not in names]
    if missing:
        raise ColumnNotFoundError(f"apply: the recalibrator needs column(s) {missing}, which the frame lacks "
                                  f"(it has {names}).{non_string_hint(frame)}")
    label_dummy = fresh_name(names, "label")  # apply reads no labels: a constant column no frame has
    prob_cols = [prob] if isinstance(prob, str) else list(prob or [])
    data = frame if isinstance(frame, pl.DataFrame) else _select(
        frame, list(dict.fromkeys([c for c in prob_cols if c in names] + extra + by)), func)
    work = data.with_columns(pl.lit(0, dtype=pl.Int8).alias(label_dummy))
    scored = resolve(work, func=func, prob=prob, label=label_dummy, extra=extra, allow_weights=False)
    if scored.n_classes != int(meta.get("n_classes", scored.n_classes)) or scored.binary != bool(
            meta.get("binary", scored.binary)):
        kind = "binary" if meta.get("binary") else f"{meta.get('n_classes')}-class"
        raise InvalidValueError(f"apply: this recalibrator was fitted on {kind} probabilities; the frame's "
                                f"{prob!r} gives {'binary' if scored.binary else f'{scored.n_classes}-class'} input.")
    kw: dict[str, Any] = {}
    if variable:
        kw["v"] = scored.extra[variable]
    if feat_cols:
        kw["features"] = _feature_matrix(scored, feat_cols, func)
    if rec.method == "per_group":
        keys = normalised_keys(data, by)
        idx = rec.key_index([tuple(_json_key(v) for v in r) for r in keys.iter_rows()])
        if (idx < 0).any() and unknown == "raise":
            unseen = sorted({tuple(r) for r, i in zip(keys.iter_rows(), idx) if i < 0}, key=str)[:5]
            raise InvalidValueError(f"apply: {int((idx < 0).sum())} rows belong to groups the recalibrator was not "
                                    f"fitted on, e.g. {unseen}. Pass unknown='keep' to leave them unchanged.")
        fallback = _fallback(scored, rec.output)
        pred = rec.predict(scored.probs, group_index=idx, fallback=fallback, **kw)
    else:
        pred = rec.predict(scored.probs, **kw)
    if scored.binary and rec.output == "top1":
        # binary input gets a probability back: the reset confidence of the unchanged predicted class
        pred = np.where(L.predicted(scored.probs)[1] == 1, pred, 1.0 - pred)
    elif scored.binary and rec.output == "class:0":
        pred = 1.0 - pred
    cols = _output_columns(name, pred, scored)
    if isinstance(frame, pl.DataFrame):
        return frame.with_columns(cols)
    out = frame.copy()
    for s in cols:
        out[s.name] = list(s.to_numpy()) if s.dtype == pl.Array or isinstance(s.dtype, pl.Array) else s.to_numpy()
    return out


def _fallback(scored: Scored, output: str) -> np.ndarray:
    if output == "top1":
        return L.top1(scored)[0]
    if output.startswith("class:"):
        return L.class_lens(scored, int(output[6:]))[0]
    return scored.probs


def _output_columns(name: str, pred: np.ndarray, scored: Scored) -> list[pl.Series]:
    if pred.ndim == 2:
        k = pred.shape[1]
        arr = pl.Series(name, pred).cast(pl.Array(pl.Float64, k))
        return [arr, pl.Series(f"{name}_conf", pred.max(axis=1))]
    return [pl.Series(name, np.asarray(pred, dtype=np.float64))]


def load(path: Any, *, key: bytes | str | None = None) -> Any:
    """Read a recalibrator saved with ``rec.save(path)`` (JSON + Parquet; validated, never unpickled).

    Every value is checked (finite numbers, probabilities in [0, 1], sorted
    edges, consistent shapes, known format version and method), and a file
    that fails raises :class:`RecalibratorFileError` naming the file, the field
    and the problem. The checksum only catches accidents. To trust a file
    from elsewhere, have it saved with ``rec.save(path, key=secret)`` and
    load it with the same ``key`` (HMAC-SHA256): a wrong key, a modified
    file, a signed file without a key or an unsigned one with a key is an
    error.

    Examples
    --------
    >>> import calframe, tempfile, os
    >>> cal = calframe.datasets.grouped_miscalibration(n=1000, seed=1)
    >>> path = calframe.fit(cal, "platt").save(os.path.join(tempfile.mkdtemp(), "platt.calib"), key=b"k3y")
    >>> calframe.load(path, key=b"k3y").method
    'platt'
    """
    return _rec_module().load(path, key=key)



# --------------------------------------------------------------------------- the verdict as a test


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
    (with ``weights``, a bin's noise is simulated with its row count: an
    approximation). The result is in the caller's flavor; a LazyFrame is
    collected (the reliability table's columns) and the result returned as a
    LazyFrame.

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
    from . import _params as P
    from . import verdicts as V

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
    if isinstance(table, pl.LazyFrame):
        table = table.collect()
    flavor = "pandas" if is_pandas_frame(table) else "polars"
    keys = [] if by is None else [by] if isinstance(by, str) else list(by)
    out = V.judge_groups(table if flavor == "polars" else pl.from_pandas(table), keys, tolerance=tolerance,
                           alpha=alpha, n_sim=n_sim, seed=seed, method=method)  # type: ignore[arg-type]
    out = F.to_flavor(out, flavor)
    return out.lazy() if isinstance(frame, pl.LazyFrame) else out

from .monitoring import monitor  # noqa: E402  (calframe.monitor: figures over time, built on calframe.expr)
