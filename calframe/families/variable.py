"""Calibration along a variable (Kelly & Smyth): VECE, VMCE, ``vece_rank`` and VCE curves."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, Literal, Unpack

import numpy as np
import polars as pl

from .. import _errors as E
from .. import figures as F
from .. import lenses as L
from .. import request as R
from .._columns import Scored, as_names, check_finite_variable, column_names, non_string_hint, resolve
from .._errors import (
    InvalidValueError,
    ParameterError,
    bad_param,
)
from .._imports import lazy_function, pd  # pandas: imported at first use

qcut_bin_sums = lazy_function("calframe._kernels.qcut_sums", "qcut_bin_sums")
from .._keywords import Columns
from ..binning import Binning, Bins, check_variable, qcut_order_statistics
from .. import engines
from ..engines.eager import Binner, Frame, Result, ce_figure, group_counts, binned_sums, variable_binner
from ..figures import check_by_names, with_keys
from ..frames.dispatch import public
from ..registry import Column, Figure
from ..frames import convert
from ..metrics import ce_from_sums
from .plan import run_plan

# --------------------------------------------------------------------------- variable-based (Kelly & Smyth)


@public(state="bin_sums", figure=Figure((Column(
    "vece", "VECE", "average gap between confidence and accuracy over bins of a variable; 0 is perfect"),),
    on=frozenset({"disparity", "expr"})))
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
    figures = {v: ce_figure(req, _checked_variable_binner(func, v, req.binning)) for v in req.variables}
    # the marginal lens is binned eagerly on the rows in memory, by their own engine elsewhere
    return run_plan(req, frame, figures if req.several else {name: figures[req.variables[0]]},
                binned=req.lens.kind != "marginal" or not engines.in_memory(frame))


def _checked_variable_binner(func: str, variable: str, binning: Binning) -> Binner:
    inner = variable_binner(variable, binning)

    def binner(scored: Scored, conf: np.ndarray) -> Bins:
        v = scored.extra[variable]
        numeric = scored.extra_kind[variable] == "numeric"
        outside = int(((v < binning.edges[0]) | (v > binning.edges[-1])).sum()) if (
            numeric and binning.edges is not None) else 0
        check_variable(func, variable, binning, single=bool((v == v[0]).all()), numeric=numeric, outside=outside)
        return inner(scored, conf)

    return binner


@public(state="bin_sums", figure=Figure((Column(
    "vmce", "VMCE", "largest gap between confidence and accuracy over bins of a variable"),),
    on=frozenset({"disparity", "expr"})))
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


@public(state="variables")
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

    A ``pl.LazyFrame`` is collected (the columns the call reads) and the result given back as a
    ``pl.LazyFrame``.

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
    from .._columns import LABEL_CANDIDATES, PROB_CANDIDATES, columns_of, flavor_of
    from .._progress import iterate

    req = R.vece_rank(variables, prob, label, bins=bins, binning=binning, lens=lens, by=by, nulls=nulls,
                      exclude=exclude, vce=vce)
    if not isinstance(leak_check, bool):
        raise bad_param("vece_rank", "leak_check", "True or False", leak_check)
    func, vce = req.func, req.options.vce
    out = engines.collected(  # the rows collected (every column when the candidates are the frame's)
        frame, replace(req, kind="rows", variables=tuple(as_names(variables))), lambda pdf: vece_rank(
            pdf, variables, prob, label, bins=bins, binning=binning, lens=lens, by=by, nulls=nulls,
            exclude=exclude, vce=vce, leak_check=leak_check), every_column=variables is None)
    if out is not None:
        return out
    flavor_of(frame)
    names = columns_of(frame)
    skip = set(req.options.exclude) | set(as_names(by))
    skip |= set(as_names(prob)) if prob is not None else {c for c in PROB_CANDIDATES if c in names}
    skip |= {label} if label is not None else {c for c in LABEL_CANDIDATES if c in names}
    variables = req.options.variables
    if variables is None:  # the frame's columns as calframe reads them (pandas: string labels only)
        dup = {c for c, k in Counter(names).items() if k > 1}  # a pandas frame's: resolve reports duplicate names
        schema = convert.schema(frame, [c for c in names if c not in skip and c not in dup], func)
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
            "n": group_counts(scored),
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
            summ = convert.to_polars(summ)
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
            "n": np.tile(np.asarray(group_counts(scored), dtype=np.int64), len(leaks)),
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

    from .._kernels.chunks import kernel_threads

    with ThreadPoolExecutor(max(1, min(kernel_threads(), len(numeric)))) as pool:
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


@public(state="variables")
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
    out = engines.collected(frame, replace(req, kind="rows"), lambda pdf: vce_curve(  # the smoothers need the rows
        pdf, variable, prob, label, smoother=smoother, span=span, degree=degree, family=family,
        n_points=n_points, quantiles=quantiles, level=level, n_boot=n_boot, seed=seed, **options))
    if out is not None:
        return out
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
    from .._kernels.loess import evaluation_grid

    return evaluation_grid(v, o.n_points, *o.quantiles)


class _Smoother:
    """vce_curve's smoother of one group's variable ``v`` on ``grid`` (``o.smoother``): :meth:`fit` gives
    (fit, lower, upper, start) for an outcome; ``start`` (the local logistic coefficients, else None) lets a
    bootstrap refit start Newton from the full data's fit."""

    def __init__(self, v: np.ndarray, grid: np.ndarray, o: Any):
        self.v, self.grid, self.o = v, grid, o
        if o.smoother == "logistic":
            from .._kernels.local_logistic import LocalLogistic

            self.ll = LocalLogistic(v, grid, span=o.span, degree=o.degree)

    def fit(self, y: np.ndarray, weights: np.ndarray | None = None, bands: bool = True,
            start: np.ndarray | None = None) -> tuple[np.ndarray, Any, Any, Any]:
        """Raises ValueError where the smoother is undefined."""
        o, grid = self.o, self.grid
        if o.smoother == "loess":
            from .._kernels.loess import loess_fit

            f = loess_fit(self.v, y, span=o.span, degree=o.degree, family=o.family, new_x=grid, se=bands,
                          alpha=1 - o.level, weights=weights)
            return f.predicted, f.lower, f.upper, None
        from statistics import NormalDist

        from .._kernels.local_logistic import B2, ETA, FIT, SE_ETA

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
    from .._progress import iterate

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


