"""Every public call parsed once: a frozen :class:`Request` (the first layer of the seam).

``public call --parse--> Request --engine--> per (group, bin) sums --figures--> result``

A Request holds the call's columns (as given: they are looked up in the frame by
the engine, which alone knows the frame), its lens, binning, estimator, ``p``,
distance, nulls policy and CI settings, every default filled in and every
parameter checked, in the order the checks are documented. Engines (eager,
LazyFrame, Dask) and the SQL generator read the Request; none parses a
parameter of its own. docs/design.md, "Add a metric", shows where a new
figure's parameters go.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from . import lenses as L
from . import registry
from . import _errors as E
from ._errors import ParameterError, bad_param
from ._columns import as_names
from ._params import check_int_range, check_positive_float
from .binning import Binning, make_binning
from .metrics import Distance, check_seed, parse_distance
from ._keywords import (  # noqa: F401  (the groups and decorators, read as request.<name>)
    Columns,
    Bins,
    Lensed,
    Grouped,
    Rows,
    Nulls,
    BOOTSTRAPS,
    CI_METHODS,
    Interval,
    Seeded,
    Progress,
    Sample,
    Debias,
    Distanced,
    Powered,
    Resampled,
    Local,
    Kernel,
    Curve,
    Table,
    ECE,
    RMSCE,
    VMCE,
    VECE,
    CE,
    SmECE,
    Scalar,
    Tested,
    Corp,
    DEFAULTS,
    group_defaults,
    keywords,
    with_progress,
    check_keyword_names,
    checked_keywords,
)

#: the column of a ``binning="sweep"`` result holding the bin count each group's sweep chose
SWEEP_COUNT = "n_bins"


@dataclass(frozen=True)
class Request:
    """One parsed call. ``kind``: ``ce`` (CE_p, ECE/MCE/RMSCE, VECE/VMCE), ``companion`` or ``reliability``.

    ``name``: the figure's column in grouped output. ``variables``: the variables
    binned instead of the confidence (VECE), ``()`` for confidence bins; with
    ``several`` the result is long (one row per group and variable).
    """

    func: str
    kind: str
    name: str
    prob: Columns = None
    label: str | None = None
    by: Columns = None
    weights: str | None = None
    nulls: str = "raise"
    lens: L.Lens = L.AUTO
    binning: Binning | None = None
    p: float = 1.0
    distance: Distance = Distance()
    estimator: str = "plugin"
    squared: bool = False
    n_resamples: int = 1000
    variables: tuple[str, ...] = ()
    several: bool = False
    ci: float | None = None
    n_boot: int = 1000
    seed: int | None = 0
    ci_method: str = "symmetric"
    #: how the bootstrap draws (:data:`calframe._keywords.BOOTSTRAPS`; :mod:`calframe.moments`)
    bootstrap: str = "auto"
    #: a family's own settings (e.g. :class:`GeceOptions`)
    options: Any = None
    #: the finalize of the bin sums (``kind="ce"``): a key of :data:`calframe.figures.BINNED`
    figure: str = "ce"
    #: the columns of a figure of several (e.g. ``brier_decomposition``), in output order; () for one (``name``)
    parts: tuple[str, ...] = ()
    #: whether rows are selected before the figure (gece's ``where``, ``labels_in``, ``output_between``): the
    #: engines that sum where the rows are do not select them (:func:`calframe.registry.route`)
    selects: bool = False

    @property
    def variable(self) -> str | None:
        """The one variable of a single-variable VECE, else None."""
        return self.variables[0] if len(self.variables) == 1 and not self.several else None

    @property
    def long(self) -> tuple[str, str] | None:
        """``(key, value)`` columns of a long result: several variables stack into rows."""
        return ("variable", self.name) if self.several else None

    @property
    def figure_names(self) -> list[str]:
        """The figures computed, in output order (a long result: one per variable; a figure of several columns:
        its ``parts``)."""
        if self.parts:
            return list(self.parts)
        return list(self.variables) if self.several else [self.name]

    @property
    def sweep(self) -> bool:
        """Whether the bins are the ECE sweep's (``binning="sweep"``), whose chosen counts join the result."""
        return self.binning is not None and self.binning.scheme == "sweep"

    @property
    def weighted_ranks(self) -> bool:
        """Whether weights meet quantile / equal-mass bins computed from the data: edges of the rows repeated
        w_i times (:func:`calframe.binning.weighted_take`; on a LazyFrame and in the narwhals engine
        :mod:`calframe.engines.plan.order_stats`; on Dask :mod:`calframe.engines.partitions.order_stats`)."""
        b = self.binning
        return self.weights is not None and b is not None and b.edges is None and b.scheme in ("quantile",
                                                                                               "equal_mass")

    @property
    def sq(self) -> bool:
        """Whether the per-class values are squared errors (combined before the root)."""
        return self.squared or (self.lens.kind == "marginal" and self.estimator == "debiased" and self.p == 2)


def _options(call: dict[str, Any], **defaults: Any) -> dict[str, Any]:
    """A parser's parameters: the call's, the others' defaults (:data:`DEFAULTS`, or ``defaults``)."""
    return {**DEFAULTS, **defaults, **call}


# --------------------------------------------------------------------------- single parameters


def p_value(func: str, p: Any) -> float:
    """``p``: 1, 2 or inf (also ``"inf"``)."""
    if isinstance(p, bool):
        raise E.bad_p(func, p)
    if p in (1, 2) or p == "inf" or (isinstance(p, float) and (p == np.inf or p in (1.0, 2.0))):
        return float("inf") if p == "inf" else float(p)
    # -inf (a min over bins, not a norm) is refused like any other order, not read as +inf
    raise E.bad_p(func, p)


def check_ci(func: str, ci: float | None, n_boot: int, seed: Any, ci_method: Any = "symmetric",
             bootstrap: Any = "auto") -> None:
    """The checks of ci, n_boot, seed, ci_method and bootstrap (every seed is checked, used or not)."""
    check_seed(func, seed)
    if ci is not None and not (isinstance(ci, (float, int)) and 0 < ci < 1):
        raise bad_param(func, "ci", "a confidence level in (0, 1) such as 0.95, or None", ci)
    check_int_range(func, "n_boot", n_boot, 2)
    if not isinstance(ci_method, str) or ci_method not in CI_METHODS:
        raise bad_param(func, "ci_method", f"one of {list(CI_METHODS)} (docs/statistics.md)", ci_method)
    if not isinstance(bootstrap, str) or bootstrap not in BOOTSTRAPS:
        raise bad_param(func, "bootstrap", f"one of {list(BOOTSTRAPS)} (docs/statistics.md)", bootstrap)


def estimator_value(func: str, estimator: Any) -> str:
    if estimator not in ("plugin", "debiased"):
        raise E.bad_estimator(func, estimator)
    return estimator


def scalar_lens(func: str, lens: Any) -> L.Lens:
    """A lens that is not ``marginal`` (figures of one binned output: reliability, summary, vece_rank, vce_curve,
    lce, mlce, mlce_curve)."""
    lens_ = L.parse_lens(func, lens)
    if lens_.kind == "marginal":
        raise E.not_scalar_lens(func, lens)
    return lens_


def variable_binning(func: str, binning: str, bins: "int | Sequence[float]", closed: str,
                     param: str = "bins") -> Binning:
    """Bins of a variable: a count (quantile / equal-mass) or explicit edges (any finite range); ``param``: the
    name of ``bins`` in messages."""
    if binning == "sweep":
        raise ParameterError(f"The 'binning' parameter of {func}: 'sweep' chooses the number of confidence bins "
                             "(ce, ece, mce, rmsce, reliability: bin accuracies that rise with the confidence); a "
                             "variable takes 'quantile' (default), 'equal_mass', or 'uniform' with explicit edges.",
                             "binning")
    if binning == "uniform" and not isinstance(bins, (list, tuple, np.ndarray)):
        raise bad_param(
            func, "binning", "'quantile' (default), 'equal_mass', or 'uniform' with explicit edges in bins=[...] "
            "(a bin count has no range to divide for a variable)", binning
        )
    if isinstance(bins, (list, tuple, np.ndarray)):
        e = np.asarray(bins, dtype=np.float64)
        if e.ndim != 1 or e.size < 2 or not np.all(np.isfinite(e)) or np.any(np.diff(e) <= 0):
            raise bad_param(func, param, "an int >= 1 or strictly increasing finite edges", bins)
        return Binning("uniform", int(e.size - 1), closed, tuple(float(v) for v in e))  # type: ignore[arg-type]
    return make_binning(func, binning, bins, closed, param)


def _no_sweep_with_weights(func: str, binning: Binning, weights: str | None) -> None:
    if weights is not None and binning.scheme == "sweep":
        raise E.weights_refuse_sweep(func)


# --------------------------------------------------------------------------- one parser per family


def _figure_name(func: str, name: Any) -> str:
    """The figure's column name in grouped output."""
    if not isinstance(name, str) or not name or name == "n":
        raise bad_param(func, "name", "a non-empty column name other than 'n'", name)
    return name


def _ce_params(func: str, p: Any, estimator: Any, distance: Any) -> tuple[float, Distance]:
    """``p``, ``estimator`` and ``distance`` of a CE_p figure, and the estimator's limits."""
    pv = p_value(func, p)
    estimator_value(func, estimator)
    if estimator == "debiased" and np.isinf(pv):
        raise ParameterError(f"The 'estimator' parameter of {func}: there is no debiased max (p=inf) estimator; "
                             "use 'plugin'.")
    dist = parse_distance(func, distance)
    if estimator == "debiased" and dist.kind != "tvd":
        raise ParameterError(f"The 'estimator' parameter of {func}: the debiased estimator is defined for "
                             f"distance='tvd'; got {dist.kind!r}.")
    return pv, dist


def ce(func: str, name: str, prob: Columns = None, label: str | None = None, **call: Any) -> Request:
    """CE_p (ECE, MCE, RMSCE): checks in the documented order (name, p, estimator, distance, n_resamples, lens,
    binning, weights, then ci / n_boot / seed). ``binning=None`` (the default): uniform, equal-mass for
    ``debiased``."""
    o = _options(call, binning=None)
    _figure_name(func, name)
    pv, dist = _ce_params(func, o["p"], o["estimator"], o["distance"])
    n_resamples = o["n_resamples"]
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise bad_param(func, "n_resamples", "an int >= 1", n_resamples)
    lens_ = L.parse_lens(func, o["lens"])
    binning = o["binning"] if o["binning"] is not None else "equal_mass" if o["estimator"] == "debiased" else "uniform"
    binning_ = make_binning(func, binning, o["bins"], o["closed"])
    if binning_.scheme == "sweep":
        _sweep_limits(func, name, o["estimator"], lens_)
    _no_sweep_with_weights(func, binning_, o["weights"])
    return _checked_ci(func, o, Request(func, "ce", name, prob, label, o["by"], o["weights"], o["nulls"], lens_,
                                        binning_, pv, dist, o["estimator"], bool(o["squared"]), int(n_resamples)))


def _sweep_limits(func: str, name: str, estimator: str, lens: L.Lens) -> None:
    """What ``binning="sweep"`` does not take: the debiased estimator, the marginal lens (one count per class),
    a figure named like the count's column."""
    if estimator != "plugin":
        raise ParameterError(f"The 'estimator' parameter of {func}: binning='sweep' is the plugin estimate on the "
                             "bins the sweep chose (Roelofs et al.'s ECE_sweep); use estimator='plugin', or "
                             "binning='equal_mass' with bins=<count> for the debiased estimator.", "estimator")
    if lens.kind == "marginal":
        raise ParameterError(f"The 'lens' parameter of {func}: binning='sweep' chooses one bin count per binned "
                             "output, and the marginal lens bins each class on its own; use lens='top1' or "
                             "'class:<c>' (one figure per class), or another binning.", "lens")
    if name == SWEEP_COUNT:
        raise bad_param(func, "name", f"a column name other than 'n' and {SWEEP_COUNT!r} (binning='sweep' adds "
                        f"the chosen count as {SWEEP_COUNT!r})", name)


def vece(func: str, name: str, variable: Any, prob: Columns = None, label: str | None = None,
         bins_param: str = "bins", **call: Any) -> Request:
    """VECE / VMCE: CE_p over bins of one or several variables (a list gives a long result). ``bins_param``: the
    name of ``bins`` in messages."""
    o = _options(call, bins=10, binning="quantile")
    variables = as_names(variable)  # as given: resolve refuses a name that is not a string (a pandas int label)
    if variable is None or not variables:
        raise E.bad_variables(func, variable)
    _figure_name(func, name)
    pv, dist = _ce_params(func, o["p"], o["estimator"], o["distance"])
    lens_ = L.parse_lens(func, o["lens"])
    binning_ = variable_binning(func, o["binning"], o["bins"], o["closed"], bins_param)
    return _checked_ci(func, o, Request(func, "ce", name, prob, label, o["by"], o["weights"], o["nulls"], lens_,
                                        binning_, pv, dist, o["estimator"], variables=tuple(variables),
                                        several=not isinstance(variable, str)))


def reliability(func: str, prob: Columns = None, label: str | None = None, **call: Any) -> Request:
    """The reliability table: a scalar lens, one binning."""
    o = _options(call)
    lens_ = scalar_lens(func, o["lens"])
    binning_ = make_binning(func, o["binning"], o["bins"], o["closed"])
    _no_sweep_with_weights(func, binning_, o["weights"])
    return Request(func, "reliability", func, prob, label, o["by"], o["weights"], o["nulls"], lens_, binning_)


def companion(func: str, prob: Columns = None, label: str | None = None, **call: Any) -> Request:
    """Brier score, log loss, accuracy: group means of a per-row value."""
    o = _options(call)
    return _checked_ci(func, o, Request(func, "companion", func, prob, label, o["by"], o["weights"], o["nulls"]))


def summary(prob: Columns = None, label: str | None = None, *, disparity: Any = False, **call: Any) -> Request:
    """The headline figures in one frame: ``disparity`` (a bool; True needs ``by``), a scalar lens, ``bins`` for
    every binned figure."""
    func = "summary"
    o = _options(call)
    if not isinstance(disparity, (bool, np.bool_)):
        raise bad_param(func, "disparity", "True or False", disparity)
    if disparity:
        _groups_to_compare(func, o["by"], "a group column or a list of group columns with disparity=True (it "
                           "compares the groups)")
    lens_ = scalar_lens(func, o["lens"])
    uniform = make_binning(func, "uniform", o["bins"], "left")
    if o["weights"] is None:
        make_binning(func, "equal_mass", o["bins"], "left")  # the debiased figure's bins (summary_parts)
    return _checked_ci(func, o, Request(func, "summary", func, prob, label, o["by"], o["weights"], o["nulls"],
                                        lens_, uniform))




def disparity(figure: Any, by: Columns, options: dict[str, Any], accepted: Callable[[str], Sequence[str]]) -> str:
    """:func:`calframe.disparity`: the figure's name, ``by`` (needed), then the options for the figure (each one
    ``accepted(figure)`` lists; the debiased E2, which can be negative, refused: a ratio needs non-negative
    figures). The figure's function checks their values, and ci / n_boot / seed, when it parses its call."""
    func = "disparity"
    compared = registry.figures("disparity")
    if not isinstance(figure, str) or figure not in compared:
        raise bad_param(func, "figure", f"the name of a figure with one value per group, one of "
                        f"{list(compared)}", figure)
    _groups_to_compare(func, by, "a group column or a list of group columns (disparity compares the groups)")
    names = accepted(figure)
    unknown = [k for k in options if k not in names]
    if unknown:
        raise ParameterError(f"{func}: figure {figure!r} takes no option {unknown[0]!r}; its options are "
                             f"{sorted(names)} (beside prob, label, by, ci, n_boot, seed).", unknown[0])
    if options.get("squared") and options.get("estimator") == "debiased":
        raise ParameterError(f"{func}: squared=True with estimator='debiased' gives E2 estimates, which can be "
                             "negative; the ratio between groups needs non-negative figures. Use squared=False "
                             "(the default: sqrt(max(E2, 0))).", "squared")
    return figure


def _groups_to_compare(func: str, by: Columns, expected: str) -> None:
    """``by`` given (a disparity compares groups); the columns themselves are resolve's to check."""
    if by is None or (isinstance(by, (list, tuple)) and not by):
        raise bad_param(func, "by", expected, by)


def _checked_ci(func: str, o: dict[str, Any], req: Request) -> Request:
    """``req`` with the call's ci, n_boot, seed and ci_method, checked last (:func:`check_ci`)."""
    check_ci(func, o["ci"], o["n_boot"], o["seed"], o["ci_method"], o["bootstrap"])
    return replace(req, ci=o["ci"], n_boot=o["n_boot"], seed=o["seed"], ci_method=o["ci_method"],
                   bootstrap=o["bootstrap"])


def summary_parts(req: Request) -> dict[str, Request]:
    """The CE figures of a summary: ECE, MCE, RMSCE (plugin, uniform bins) and Kumar's debiased l2 CE (equal-mass
    bins; with weights uniform bins, chosen when Dask did not compute weighted equal-mass edges,
    ``Request.weighted_ranks``, which every engine computes now)."""
    debiased_bins = req.binning if req.weights is not None else make_binning(req.func, "equal_mass", req.binning.bins,
                                                                             "left")
    return {
        "ece": replace(req, kind="ce", p=1.0),
        "mce": replace(req, kind="ce", p=float("inf")),
        "rmsce": replace(req, kind="ce", p=2.0),
        "ce_debiased": replace(req, kind="ce", p=2.0, estimator="debiased", binning=debiased_bins),
    }


# --------------------------------------------------------------------------- generalized ECE (vector lenses)


@dataclass(frozen=True)
class GeceOptions:
    """gece's own settings: a vector lens (``top1``, ``topk``, ``full``, ``grouping``, ``marginal``) or, for
    ``class:c`` and the default, ``scalar_lens``; the distance between vectors; ``binning``: ``("uniform", bins)``
    or ``("adaptive", gamma)``."""

    lens: str | None
    scalar_lens: L.Lens | None
    k: int | None
    groups: Any
    distance: Any
    binning: tuple[str, float]
    output_between: tuple[float, float] | None


VECTOR_LENSES = ("top1", "topk", "full", "grouping", "marginal")


def gece_distance(func: str, distance: Any) -> Any:
    """``'tvd'``, ``'l2'``, ``('mahalanobis', M)``, ``('interval', l, h)`` or a vector distance."""
    from . import generalized as G

    if distance in ("tvd", "l2"):
        return distance
    if isinstance(distance, tuple) and distance and distance[0] == "mahalanobis" and len(distance) == 2:
        try:
            return G.mahalanobis(distance[1])
        except ValueError as exc:
            raise E.bad_distance(func, exc) from None
    if isinstance(distance, tuple) and distance and distance[0] == "interval" and len(distance) == 3:
        try:
            return G.interval(float(distance[1]), float(distance[2]))
        except ParameterError as exc:
            raise E.bad_distance(func, exc) from None
    if isinstance(distance, G.VectorDistance):
        return distance
    raise bad_param(func, "distance", "'tvd', 'l2', ('mahalanobis', M) or ('interval', l, h)", distance)


def gece(prob: Columns, label: str | None, *, lens: Any, k: Any, groups: Any, distance: Any, p: Any, binning: Any,
         bins: Any, gamma: Any, output_between: Any, **call: Any) -> Request:
    """The generalized ECE: p, binning (uniform bins or adaptive gamma), the output range, the lens (vector lenses
    and their k / groups), the distance, then the rows' and the interval's (:class:`Sample`: ci / n_boot / seed
    checked last). Its own parameters come from :func:`calframe.gece`'s signature."""
    func = "gece"
    o = _options(call)
    pv = p_value(func, p)
    if binning not in ("uniform", "adaptive"):
        raise bad_param(func, "binning", "'uniform' or 'adaptive'", binning)
    if binning == "uniform" and (isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins < 1):
        raise bad_param(func, "bins", "an int >= 1", bins)
    if binning == "adaptive" and (isinstance(gamma, bool) or not isinstance(gamma, (int, float)) or not gamma > 0):
        raise bad_param(func, "gamma", "a number > 0 (the smallest bin as a fraction of the rows)", gamma)
    if output_between is not None:
        if not (isinstance(output_between, (tuple, list)) and len(output_between) == 2):
            raise bad_param(func, "output_between", "a pair (low, high)", output_between)
        if output_between[0] > output_between[1]:
            raise ParameterError(f"The 'output_between' parameter of {func} must have low <= high. "
                                 f"Got {tuple(output_between)}.")
    lens_name = lens if lens in VECTOR_LENSES else None
    scalar = None  # class:c or the default, resolved per input by lenses.resolve_lens
    if lens_name is None:
        scalar = L.parse_lens(func, lens)
        if scalar.kind not in ("class", "auto"):
            raise bad_param(func, "lens", "None, 'top1', 'class:<c>', 'topk', 'full', 'grouping' or 'marginal'",
                            lens)
    if lens == "topk" and k is None:
        raise ParameterError(f"The 'lens' parameter of {func}: lens='topk' needs k=<number of classes to keep>.")
    if lens == "grouping" and groups is None:
        raise ParameterError(f"The 'lens' parameter of {func}: lens='grouping' needs groups=[[...], [...]].")
    dist = gece_distance(func, distance)
    binning_ = ("uniform", int(bins)) if binning == "uniform" else ("adaptive", float(gamma))
    options = GeceOptions(lens_name, scalar, k, groups, dist, binning_,
                          None if output_between is None else tuple(output_between))
    return _checked_ci(func, o, Request(func, "gece", func, prob, label, o["by"], o["weights"], o["nulls"], p=pv,
                                        options=options))


# --------------------------------------------------------------------------- VECE of many variables (vece_rank)


@dataclass(frozen=True)
class RankOptions:
    """vece_rank's own settings: the variables as given (None: the frame's candidates; both read against the frame
    by the run), the columns to ``exclude`` from the candidates, and whether to add :func:`calframe.vce_curve`'s
    ``vce`` and ``v_star``."""

    variables: Any
    exclude: tuple[Any, ...]
    vce: bool


def vece_rank(variables: Sequence[str] | None, prob: Columns, label: str | None, *, bins: Any, binning: Any,
              lens: Any, by: Columns, nulls: str, exclude: Sequence[str], vce: bool) -> Request:
    """VECE and VMCE of many variables: a scalar lens, then the variables' binning (:func:`variable_binning`)."""
    func = "vece_rank"
    lens_ = scalar_lens(func, lens)
    binning_ = variable_binning(func, binning, bins, "left")
    options = RankOptions(variables, tuple(exclude), bool(vce))
    return Request(func, "vece_rank", func, prob, label, by, None, nulls, lens_, binning_, options=options)


# --------------------------------------------------------------------------- variable calibration curves (LOESS)


@dataclass(frozen=True)
class CurveOptions:
    """vce_curve's smoother (``"logistic"`` or ``"loess"``) and its settings: ``span``, ``degree``, ``family``; the
    grid (``n_points`` between the variable's ``quantiles``), the bands' ``level``, and v*'s bootstrap
    (``n_boot`` resamples, 0: none, ``seed``)."""

    span: float
    degree: int
    family: str
    n_points: int
    quantiles: tuple[float, float]
    level: float
    smoother: str = "logistic"
    n_boot: int = 0
    seed: int = 0


def vce_curve(variable: str, prob: Columns, label: str | None, *, span: Any, degree: Any, family: Any,
              n_points: Any, quantiles: Any, level: Any, smoother: Any = "logistic", n_boot: Any = 0, seed: Any = 0,
              **call: Any) -> Request:
    """The variable calibration curves: a scalar lens, then smoother, span, degree, family, n_points, quantiles,
    level, n_boot, seed (the rows' columns and the variable's kind are the run's). Its own parameters come from
    :func:`calframe.vce_curve`'s signature."""
    func = "vce_curve"
    o = _options(call)
    lens_ = scalar_lens(func, o["lens"])
    if not (isinstance(span, (int, float)) and span > 0):
        raise bad_param(func, "span", "a number > 0", span)
    if degree not in (0, 1, 2):
        raise bad_param(func, "degree", "0, 1 or 2", degree)
    if family not in ("gaussian", "symmetric"):
        raise bad_param(func, "family", "'gaussian' or 'symmetric'", family)
    if isinstance(n_points, bool) or not isinstance(n_points, (int, np.integer)) or n_points < 2:
        raise bad_param(func, "n_points", "an int >= 2", n_points)
    if not (0 <= quantiles[0] < quantiles[1] <= 1):
        raise bad_param(func, "quantiles", "(low, high) with 0 <= low < high <= 1", quantiles)
    if not (0 < level < 1):
        raise bad_param(func, "level", "a confidence level in (0, 1)", level)
    if smoother not in ("logistic", "loess"):
        raise bad_param(func, "smoother", "'logistic' (local logistic regression, inside [0, 1]) or 'loess' "
                        "(Kelly & Smyth's LOESS)", smoother)
    if smoother == "logistic" and family != "gaussian":
        raise ParameterError(f"The 'family' parameter of {func} is a LOESS option (robust reweighting); "
                             f"family={family!r} needs smoother='loess'.", "family")
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 0 or 0 < n_boot < 20:
        raise bad_param(func, "n_boot", "0 (no interval for v*) or an int >= 20", n_boot)
    check_seed(func, seed, allow_none=False)
    options = CurveOptions(span, degree, family, int(n_points), (quantiles[0], quantiles[1]), level, smoother,
                           int(n_boot), int(seed))
    return Request(func, "vce_curve", func, prob, label, o["by"], None, o["nulls"], lens_, variables=(variable,),
                   options=options)


# --------------------------------------------------------------------------- local calibration (lce, mlce, mlce_curve)


@dataclass(frozen=True)
class LocalOptions:
    """The local figures' own settings: the kernel widths (lce, mlce: one ``gamma``; mlce_curve: its ``gammas``)
    and the features' preparation (``n_components`` is checked against the features' count by the run)."""

    gammas: tuple[float, ...]
    prepare: str
    n_components: int | None


def local(func: str, prob: Columns = None, label: str | None = None, *, gammas: Any = None, **call: Any) -> Request:
    """lce, mlce (``gamma``) and mlce_curve (``gammas``, default 25 from 0.01 to 100 on a log scale): the kernel
    widths, a scalar lens, ``bins`` uniform confidence bins, then
    ``prepare`` (the features, columns and rows are the run's)."""
    o = _options(call)
    if func == "mlce_curve":
        gs = np.logspace(-2, 2, 25) if gammas is None else np.asarray(list(gammas), dtype=np.float64)
        for gv in gs:
            check_positive_float(func, "gamma", float(gv))
    else:
        gs = np.array([check_positive_float(func, "gamma", o["gamma"])])
    lens_ = scalar_lens(func, o["lens"])
    binning_ = make_binning(func, "uniform", o["bins"], "left")
    if o["prepare"] not in ("none", "standardize", "pca"):
        raise bad_param(func, "prepare", "'none', 'standardize' or 'pca'", o["prepare"])
    options = LocalOptions(tuple(float(g) for g in gs), o["prepare"], o["n_components"])
    return Request(func, "local", func, prob, label, o["by"], None, o["nulls"], lens_, binning_, options=options)


# --------------------------------------------------------------------------- smooth ECE


@dataclass(frozen=True)
class SmoothOptions:
    """smece's own setting: the kernel bandwidth, or None for relplot's automatic one (``sigma = smECE_sigma``)."""

    sigma: float | None


def smece(prob: Columns = None, label: str | None = None, **call: Any) -> Request:
    """The smooth ECE: a scalar lens, ``sigma`` (None, or a number > 0), then ci / n_boot / seed.

    Examples
    --------
    >>> from calframe import request as R
    >>> R.smece("p", "y", lens="top1", sigma=0.05).options
    SmoothOptions(sigma=0.05)
    >>> R.smece(sigma=0)
    Traceback (most recent call last):
    ...
    calframe._errors.ParameterError: The 'sigma' parameter of smece must be a finite number > 0 or None. Got 0 instead.
    """
    func = "smece"
    o = _options(call)
    lens_ = scalar_lens(func, o["lens"])
    sigma = check_positive_float(func, "sigma", o["sigma"], allow_none=True)
    return _checked_ci(func, o, Request(func, "smece", func, prob, label, o["by"], o["weights"], o["nulls"], lens_,
                                        options=SmoothOptions(sigma)))


def scalar_rows(func: str, prob: Columns = None, label: str | None = None, **call: Any) -> Request:
    """A figure of one lensed output over the rows (``kind="rows"``): a scalar lens, then ci / n_boot / seed."""
    o = _options(call)
    lens_ = scalar_lens(func, o["lens"])
    return _checked_ci(func, o, Request(func, "rows", func, prob, label, o["by"], o["weights"], o["nulls"], lens_))


def row_sums(func: str, spec: Any, prob: Columns = None, label: str | None = None, **call: Any) -> Request:
    """A figure of several row values' per-group sums (``kind="row_sums"``; ``spec`` a
    :class:`calframe.row_sums.RowSums`): a scalar lens, the rows."""
    o = _options(call)
    lens_ = scalar_lens(func, o["lens"])
    return Request(func, "row_sums", func, prob, label, o["by"], o["weights"], o["nulls"], lens_, options=spec,
                   parts=spec.columns)


#: the scores :func:`calframe.corp_decomposition` decomposes
CORP_SCORES = ("brier", "log_loss")


def corp(func: str, prob: Columns = None, label: str | None = None, **call: Any) -> tuple[Request, str, int | None]:
    """:func:`calframe.corp_decomposition`: the rows figure's request (:func:`scalar_rows`), the score and the
    number of folds of the cross-fit (None: in-sample). A cross-fit has no bootstrap interval (a resampled row
    and its copy would fall in different folds, one fitting the recalibration the other is scored by)."""
    o = _options(call)
    score = o["score"]
    if not isinstance(score, str) or score not in CORP_SCORES:
        raise bad_param(func, "score", "'brier' or 'log_loss'", score)
    folds = o["cross_fit"]
    if folds is not None:
        folds = check_int_range(func, "cross_fit", folds, 2)
        if o["ci"] is not None:
            raise ParameterError(f"{func}: cross_fit={folds} takes no bootstrap interval (ci={o['ci']!r}): a "
                                 "resampled row and its copy would fall in different folds, so the recalibration "
                                 "would be fitted on rows it is then scored on. Use ci=None with cross_fit, or "
                                 "the in-sample decomposition (cross_fit=None) with ci.", "ci")
    return scalar_rows(func, prob, label, **call), score, folds


# --------------------------------------------------------------------------- monitoring over time (monitor)

_DURATION = re.compile(r"(\d+)(ns|us|ms|mo|s|m|h|d|w|q|y)")


@dataclass(frozen=True)
class Windows:
    """:func:`calframe.monitor`'s windows, as Polars' ``group_by_dynamic`` takes them: ``every``, ``period``
    (default ``every``), ``offset`` (default none), ``closed``; ``baseline``: None, one instant (the window
    starting there) or a ``(start, end)`` pair (rows with start <= time < end), as given (read against the
    time column's type by the run); ``figures``: the names of the figures per window."""

    time_col: str
    every: str | _dt.timedelta
    period: str | _dt.timedelta
    offset: str | _dt.timedelta | None
    closed: str
    baseline: Any
    figures: tuple[str, ...]
    ci: float | None
    n_boot: int
    seed: int | None
    ci_method: str = "symmetric"

    @property
    def sub_day(self) -> bool:
        """Whether ``every``, ``period`` or ``offset`` counts time below a day (a Date column cannot)."""
        def below(d: Any) -> bool:
            if isinstance(d, _dt.timedelta):
                return d % _dt.timedelta(days=1) != _dt.timedelta(0)
            return any(u in ("ns", "us", "ms", "s", "m", "h") for _, u in _DURATION.findall(str(d)))
        return any(below(d) for d in (self.every, self.period, self.offset) if d is not None)


def duration(func: str, name: str, value: Any, *, signed: bool = False) -> str | _dt.timedelta:
    """A Polars duration: a string of ``<int><unit>`` parts (units ns, us, ms, s, m, h, d, w, mo, q, y; e.g.
    ``"1d"``, ``"1h30m"``, ``"1mo"``) or a ``datetime.timedelta``; > 0, or any sign when ``signed`` (``offset``)."""
    expected = ("a Polars duration such as '1d', '12h', '1w', '1mo' or '1h30m' (units ns, us, ms, s, m, h, d, w, "
                f"mo, q, y) or a datetime.timedelta, {'' if signed else 'greater than zero'}").rstrip(", ")
    if isinstance(value, _dt.timedelta) and (signed or value > _dt.timedelta(0)):
        return value
    if isinstance(value, str):
        body = value[1:] if signed and value.startswith("-") else value
        parts = _DURATION.findall(body)
        if body and "".join(n + u for n, u in parts) == body and (signed or any(int(n) for n, _ in parts)):
            return value
    raise bad_param(func, name, expected, value)


def monitor(time_col: Any, *, every: Any, period: Any, offset: Any, window_closed: Any, baseline: Any,
            figures: Any, ci: Any, n_boot: Any, seed: Any, ci_method: Any = "symmetric") -> Windows:
    """:func:`calframe.monitor`'s own parameters, in the order of its signature (the figures' options are
    checked by the figures)."""
    func = "monitor"
    if not isinstance(time_col, str) or not time_col:
        raise bad_param(func, "time_col", "the name of a Date or Datetime column", time_col)
    every_ = duration(func, "every", every)
    period_ = every_ if period is None else duration(func, "period", period)
    offset_ = None if offset is None else duration(func, "offset", offset, signed=True)
    if window_closed not in ("left", "right", "both", "none"):
        raise bad_param(func, "window_closed", "'left', 'right', 'both' or 'none'", window_closed)
    names = (figures,) if isinstance(figures, str) else tuple(figures) if isinstance(figures, (list, tuple)) else ()
    monitored = registry.figures("monitor")
    if not names or any(f not in monitored for f in names) or len(set(names)) != len(names):
        raise bad_param(func, "figures", f"a figure name or a list of distinct ones among {list(monitored)}",
                        figures)
    if baseline is not None:
        pair = isinstance(baseline, (tuple, list))
        ok = (len(baseline) == 2 and all(isinstance(b, (str, _dt.date)) for b in baseline)) if pair else isinstance(
            baseline, (str, _dt.date))
        if not ok:
            raise bad_param(func, "baseline", "a window start (a date, datetime or ISO string such as '2024-01-01') "
                            "or a (start, end) pair of them", baseline)
    check_ci(func, ci, n_boot, seed, ci_method)
    return Windows(time_col, every_, period_, offset_, window_closed,
                   tuple(baseline) if isinstance(baseline, list) else baseline, names, ci, n_boot, seed, ci_method)
