"""Finalize and shape, once for every engine (the last layer of the seam).

``public call --parse--> Request --engine--> per (group, bin) sums --figures--> result``

An engine hands over per (group, bin) sums (``[sum w, sum w*conf, sum w*acc]``
per cell, :mod:`calframe.metrics`), the group keys and the row counts; the
functions here turn them into figures (:func:`ce`, :func:`companion`,
:func:`reliability_table`) and into the caller's result (:func:`shape`): a
float without groups, else one row per group with the key columns, ``n`` and
one column per figure (``_lo``/``_hi`` bounds with ``ci``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from ._imports import pd  # imported at first use
import polars as pl

from ._columns import columns_of
from ._errors import ParameterError
from .binning import Bins
from .metrics import ce_from_sums, combine_marginal
from .request import SWEEP_COUNT, Columns, Request

#: the column naming the method of a result's intervals (``ci_method=``), beside the ``_lo`` / ``_hi`` bounds
CI_METHOD = "ci_method"
#: the columns of a reliability table beside the group keys
RELIABILITY_COLUMNS = ("bin", "lower", "upper", "n", "weight", "conf", "acc", "gap")
#: the fewest rows a group needs for a bootstrap interval: every resample of a single row is that row, so its draws
#: are its value and its interval would be [value, value]. A group with fewer gets NaN bounds (:func:`bounds`).
MIN_ROWS = 2


# --------------------------------------------------------------------------- figures from sums


def ce(req: Request, sums_of: Callable[[int], np.ndarray], n_classes: int,
       count_scale: float | np.ndarray = 1.0) -> np.ndarray:
    """CE_p per group. ``sums_of(c)``: the (group, bin) sums of class c's lens for the marginal lens, of the
    request's scalar lens otherwise (c = 0). The marginal CE combines the classes' values (SPEC §1.2)."""

    def one(c: int) -> np.ndarray:
        return ce_from_sums(sums_of(c), req.p, req.distance, req.estimator, req.sq, req.n_resamples, req.seed,
                            count_scale)

    if req.lens.kind != "marginal":
        return one(0)
    per_class = np.stack([one(c) for c in range(n_classes)])
    if req.estimator == "debiased" and req.p == 2:
        # per-class E2 clipped at 0, averaged, then the root (uncertainty-calibration's marginal CE)
        e2 = np.maximum(per_class, 0.0).mean(axis=0)
        return e2 if req.squared else np.sqrt(e2)
    return combine_marginal(per_class, req.p, req.estimator, np.full(n_classes, 1.0 / n_classes))


#: the finalizes of per (group, bin) sums, by ``Request.figure``: ``(request, sums_of, n_classes, count_scale)``
#: -> one value per group, or ``{column: values}`` for a figure of several columns (``Request.parts``)
#: (``sums_of(c)``: the sums of class c's lens for the marginal lens, else of the lens; :func:`finalize` adds one)
BINNED: dict[str, Callable[..., np.ndarray | dict[str, np.ndarray]]] = {"ce": ce}


def finalize(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a finalize of the bin sums as ``name`` (a figure's ``Request.figure``): the one place a figure
    of bin sums adds code beside its public function (docs/design.md, "Recipe: add a figure")."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        BINNED[name] = fn
        return fn

    return register


def binned_values(req: Request, sums_of: Callable[[int], np.ndarray], n_classes: int,
                  count_scale: float | np.ndarray = 1.0) -> dict[str, np.ndarray]:
    """The request's figures from its per (group, bin) sums, by column: what every engine calls once its sums are
    in (one column, ``req.name``, or the figure's ``parts``)."""
    out = BINNED[req.figure](req, sums_of, n_classes, count_scale)
    return dict(out) if isinstance(out, dict) else {req.name: out}


def companion(sums: np.ndarray) -> np.ndarray:
    """A companion figure (Brier score, log loss, accuracy): the weighted mean of its row values per group,
    from one-bin sums ``[sum w, sum w*value, .]``."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums[:, 0, 1] / sums[:, 0, 0]


def reliability_table(sums: np.ndarray, counts: np.ndarray, bins: Bins, keys: pl.DataFrame | None) -> pl.DataFrame:
    """The reliability table from per (group, bin) sums and row counts."""
    g_idx, b_idx = np.nonzero(sums[..., 0] > 0)
    lower = np.empty(g_idx.shape[0])
    upper = np.empty(g_idx.shape[0])
    for g in np.unique(g_idx):
        sel = g_idx == g
        lower[sel], upper[sel] = bins.bounds(int(g), b_idx[sel])
    w = sums[g_idx, b_idx, 0]
    mean_conf = sums[g_idx, b_idx, 1] / w
    mean_acc = sums[g_idx, b_idx, 2] / w
    out = pl.DataFrame(
        {
            "bin": b_idx.astype(np.int32),
            "lower": lower,
            "upper": upper,
            "n": counts[g_idx, b_idx].astype(np.int64),
            "weight": w / sums[..., 0].sum(axis=1)[g_idx],
            "conf": mean_conf,
            "acc": mean_acc,
            "gap": mean_conf - mean_acc,
        }
    )
    return with_keys("reliability", None if keys is None else keys[g_idx], out)


# --------------------------------------------------------------------------- bootstrap intervals


@dataclass(frozen=True)
class Scale:
    """How the bootstrap reads a figure (docs/statistics.md). ``raw``: the figure on the scale its estimator is
    (nearly) unbiased on, resampled instead of the figure (None: the figure itself), e.g. the debiased l2 CE's
    E2, which can be negative; ``truth``: the population figure of the bootstrap world on that scale, i.e. the
    plug-in functional on the rows (None: the estimate itself, for a plug-in figure); ``back``: raw scale ->
    the figure's (non-decreasing; None: the same scale); ``upper``: the largest value the figure takes (1 for
    accuracy and a ratio), where bounds are clipped; ``lower``: the smallest (0; -inf for a difference);
    ``zero``: for a figure that is 0 exactly when every bin is calibrated but whose estimator is biased there
    (the debiased l1 CE), the debiased squared l2 CE E2 on the same bins and its bootstrap world's truth. E2 is
    resampled beside the figure, and where E2's interval reaches 0 (the data do not rule out every bin's gap
    being 0, i.e. a CE_p of 0 for every p) the figure's lower bound is ``lower`` (docs/statistics.md)."""

    raw: Callable[[Any], np.ndarray] | None = None
    truth: Callable[[Any], np.ndarray] | None = None
    back: Callable[[np.ndarray], np.ndarray] | None = None
    upper: float = float("inf")
    lower: float = 0.0
    zero: tuple[Callable[[Any], np.ndarray], Callable[[Any], np.ndarray]] | None = None


@dataclass(frozen=True)
class Draws:
    """A figure's bootstrap draws (n_boot x groups, on its :class:`Scale`'s raw scale), with the estimate and
    the bootstrap world's truth per group on that scale (NaN for ``"percentile"``, which reads neither)."""

    draws: np.ndarray
    estimate: np.ndarray
    truth: np.ndarray
    scale: Scale


def with_scale(figure: Callable[..., np.ndarray], scale: Scale) -> Callable[..., np.ndarray]:
    """``figure`` carrying ``scale`` for the bootstrap (read back by :func:`scale_of`)."""
    figure.ci_scale = scale  # type: ignore[attr-defined]
    return figure


def scale_of(figure: Callable[..., np.ndarray]) -> Scale:
    """The :class:`Scale` ``figure`` carries (default: a plug-in figure resampled as it is)."""
    return getattr(figure, "ci_scale", Scale())


def clipped_root(e2: np.ndarray) -> np.ndarray:
    """``sqrt(max(E2, 0))``: the debiased l2 CE from its squared estimate (SPEC §3)."""
    return np.sqrt(np.maximum(e2, 0.0))


def interval(draws: np.ndarray, level: float, method: str, estimate: np.ndarray, truth: np.ndarray,
             scale: Scale = Scale()) -> tuple[np.ndarray, np.ndarray]:
    """Bounds per group (columns of ``draws``, shape (n_boot, n_groups)) from bootstrap draws.

    With ``e = draw - truth`` (the bootstrap world's estimation error; ``truth`` is the plug-in figure on the
    rows) and ``e_lo``, ``e_hi`` its ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles:

    - ``"percentile"``: the quantiles of the draws themselves (the plug-in's sampling distribution, above the
      population figure when the estimator is biased; calframe's method before 0.x, kept for comparison);
    - ``"bias_corrected"``: ``[estimate - e_hi, estimate - e_lo]`` (the basic, reverse-percentile bootstrap:
      the estimate minus the bootstrap's bias estimate, with its spread);
    - ``"symmetric"``: ``estimate -/+ max(e_hi, -e_lo)``: contains the bias-corrected interval and its mirror
      image, so it holds when the bootstrap misjudges the bias of a figure that is not smooth where bins are
      near calibrated (|gap| is not differentiable at 0).

    Then ``scale.back`` maps the bounds to the figure's scale, and (but for ``"percentile"``) they are clipped to
    [``scale.lower``, ``scale.upper``] (every figure is non-negative). A group whose draws are all NaN gets NaN bounds.

    Examples
    --------
    >>> import numpy as np
    >>> d = np.array([[0.10], [0.12], [0.14], [0.16], [0.18]])  # draws above the estimate 0.11: bias ~0.03
    >>> [round(float(b[0]), 3) for b in interval(d, 0.5, "percentile", np.array([0.11]), np.array([0.11]))]
    [0.12, 0.16]
    >>> [round(float(b[0]), 3) for b in interval(d, 0.5, "bias_corrected", np.array([0.11]), np.array([0.11]))]
    [0.06, 0.1]
    >>> [round(float(b[0]), 3) for b in interval(d, 0.5, "symmetric", np.array([0.11]), np.array([0.11]))]
    [0.06, 0.16]
    """
    alpha = (1.0 - level) / 2.0
    n_groups = draws.shape[1]
    lo, hi = np.full(n_groups, np.nan), np.full(n_groups, np.nan)
    some = ~np.isnan(draws).all(axis=0)  # a group a selection emptied has NaN draws only: NaN bounds, no warning
    if not some.any():
        return lo, hi
    sub = draws[:, some]
    # numpy's quantile along the axis is nanquantile's column by column, bit for bit, when no draw is NaN
    quantile = np.nanquantile if np.isnan(sub).any() else np.quantile
    q_lo, q_hi = quantile(sub, [alpha, 1.0 - alpha], axis=0)
    if method == "percentile":
        lo[some], hi[some] = q_lo, q_hi
    else:
        est, t = np.asarray(estimate, dtype=np.float64)[some], np.asarray(truth, dtype=np.float64)[some]
        e_lo, e_hi = q_lo - t, q_hi - t
        if method == "bias_corrected":
            lo[some], hi[some] = est - e_hi, est - e_lo
        else:
            half = np.maximum(e_hi, -e_lo)
            lo[some], hi[some] = est - half, est + half
    if scale.back is not None:
        lo, hi = scale.back(lo), scale.back(hi)
    if method != "percentile":
        with np.errstate(invalid="ignore"):
            lo, hi = np.clip(lo, scale.lower, scale.upper), np.clip(hi, scale.lower, scale.upper)
    return lo, hi


def _zero_name(name: str) -> str:
    """The bootstrap's name for the E2 drawn beside figure ``name`` (:attr:`Scale.zero`)."""
    return f"{name}\0e2"


def resampled(figures: dict[str, Callable[..., np.ndarray]], method: str
              ) -> tuple[dict[str, Scale], dict[str, Callable[..., np.ndarray]]]:
    """Each figure's :class:`Scale`, and the figures the bootstrap draws: the figure itself for ``"percentile"``,
    else the scale it is estimated on (``Scale.raw``), plus E2 beside each figure that reads it for its lower
    bound (``Scale.zero``)."""
    scales = {name: scale_of(f) for name, f in figures.items()}
    drawn = {name: (f if method == "percentile" or scales[name].raw is None else scales[name].raw)
             for name, f in figures.items()}
    if method != "percentile":
        drawn.update({_zero_name(name): s.zero[0] for name, s in scales.items() if s.zero is not None})
    return scales, drawn


def bounds(figures: dict[str, Callable[..., np.ndarray]], scales: dict[str, Scale], draws: dict[str, np.ndarray],
           value: Callable[[str, Callable[..., np.ndarray]], np.ndarray],
           at: Callable[[Callable[..., np.ndarray]], np.ndarray], level: float, method: str,
           keep: dict[str, Draws] | None = None, counts: np.ndarray | None = None
           ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Bounds per group of every figure from its draws (:func:`resampled`'s, ``(n_boot, groups)``), however they
    were drawn: ``value(name, figure)``, the figure's estimate; ``at(f)``, any other figure (a scale's) on the
    data. ``keep``: filled with each figure's :class:`Draws` (what :func:`calframe.disparity` compares groups on).
    ``counts``: the groups' rows; a group with fewer than :data:`MIN_ROWS` gets NaN bounds (no interval)."""
    out = {}
    tiny = None if counts is None else np.asarray(counts) < MIN_ROWS
    for name, figure in figures.items():
        d = draws[name]
        s = scales[name] if method != "percentile" else Scale()  # percentile: the figure's own draws
        if method == "percentile":
            estimate = truth = np.full(d.shape[1], np.nan)  # not read
        else:
            estimate = at(s.raw) if s.raw is not None else value(name, figure)
            truth = at(s.truth) if s.truth is not None else estimate
        out[name] = interval(d, level, method, estimate, truth, s)
        if method != "percentile" and s.zero is not None:
            e2, e2_truth = s.zero
            e2_lo, _ = interval(draws[_zero_name(name)], level, method, at(e2), at(e2_truth), Scale(lower=-np.inf))
            out[name][0][e2_lo <= 0] = s.lower
        if tiny is not None and tiny.any():
            out[name][0][tiny] = out[name][1][tiny] = np.nan
        if keep is not None:
            keep[name] = Draws(d, estimate, truth, s)
    return out


# --------------------------------------------------------------------------- shape


def to_flavor(df: pl.DataFrame, flavor: str) -> pl.DataFrame | pd.DataFrame:
    """A result in the caller's flavor. pandas results are numpy-backed; a Date column (a date key) holds
    ``datetime.date`` objects (pandas has no date dtype: datetime64 would turn dates into timestamps)."""
    return df.to_pandas(date_as_object=True) if flavor == "pandas" else df


def output_columns(figures: Sequence[str], ci: float | None = None,
                   long: tuple[str, str] | None = None) -> list[str]:
    """The columns of a grouped result beside the group keys: ``n``, the figures and, with ``ci``, their bounds
    and :data:`CI_METHOD` (the interval's method).

    ``long=(key, value)``: the figures are stacked into rows (``key``, ``n``, ``value``).
    """
    figs = [long[1]] if long is not None else list(figures)
    cols = ([long[0]] if long is not None else []) + ["n"] + figs
    if ci is not None:
        cols += [f"{f}_{end}" for f in figs for end in ("lo", "hi")] + [CI_METHOD]
    return cols


def check_by_names(func: str, by: Columns, outputs: Sequence[str], frame: Any = None) -> None:
    """Refuse ``by`` columns named like a column of the result (spec section 8, "Errors").

    Called before anything is computed (``frame`` given: only the ``by`` columns the frame has, a
    missing one is reported by ``resolve``) and by :func:`with_keys` on the result's columns.
    """
    cols = [by] if isinstance(by, str) else [c for c in by if isinstance(c, str)] if isinstance(
        by, (list, tuple)) else []  # any other by= is resolve's to refuse
    clash = [c for c in cols if c in outputs]
    if clash and frame is not None:
        have = set(columns_of(frame))
        clash = [c for c in clash if c in have]
    if not clash:
        return
    c = clash[0]
    what = f"group column {c!r} has the name" if len(clash) == 1 else f"group columns {clash} have the names"
    raise ParameterError(
        f"The 'by' parameter of {func}: the {what} of a column of the result, which holds the group columns and "
        f"{list(outputs)}. Rename the group column first, e.g. frame.rename({{{c!r}: {c + '_key'!r}}}) "
        f"(pandas: frame.rename(columns={{{c!r}: {c + '_key'!r}}})), and pass by={c + '_key'!r}.",
        "by",
    )


def with_keys(func: str, keys: pl.DataFrame | None, out: pl.DataFrame) -> pl.DataFrame:
    """``out`` with the group key columns in front (the one place results get their keys; see check_by_names)."""
    if keys is None:
        return out
    check_by_names(func, keys.columns, out.columns)
    return pl.concat([keys, out], how="horizontal")


def result_columns(req: Request) -> list[str]:
    """The columns of the request's grouped result beside the group keys."""
    if req.kind == "reliability":
        return list(RELIABILITY_COLUMNS)
    return output_columns(req.figure_names + ([SWEEP_COUNT] if req.sweep else []), req.ci, req.long)


def shape(req: Request, values: dict[str, np.ndarray], counts: np.ndarray, keys: pl.DataFrame | None, flavor: str,
          bounds: dict[str, tuple[np.ndarray, np.ndarray]] | None = None, scalar: bool = True) -> Any:
    """The caller's result: a float for one figure without groups or ci (``scalar``), else a frame with the key
    columns, ``n`` and the figures (long: one row per group and figure), in the caller's flavor. The bin count
    of ``binning="sweep"`` (:data:`~calframe.request.SWEEP_COUNT`) is a column of the frame, not a second
    figure: without groups or ci the result is the figure's float, as for any binning."""
    bounds = bounds or {}
    counts = np.asarray(counts).astype(np.int64)
    figures = [k for k in values if not (req.sweep and k == SWEEP_COUNT)]
    if scalar and req.by is None and req.ci is None and len(figures) == 1 and req.long is None:
        return float(values[figures[0]][0])
    n_groups = counts.shape[0]
    if req.long is not None:
        key, value = req.long
        parts = []
        for name, v in values.items():
            cols: dict[str, Any] = {key: [name] * n_groups, "n": counts, value: v}
            if name in bounds:
                cols[f"{value}_lo"], cols[f"{value}_hi"] = bounds[name]
                cols[CI_METHOD] = [req.ci_method] * n_groups
            parts.append(with_keys(req.func, keys, pl.DataFrame(cols)))
        return to_flavor(pl.concat(parts), flavor)
    cols = {"n": counts}
    for name, v in values.items():
        cols[name] = v
        if name in bounds:
            cols[f"{name}_lo"], cols[f"{name}_hi"] = bounds[name]
    if bounds:
        cols[CI_METHOD] = [req.ci_method] * n_groups
    return to_flavor(with_keys(req.func, keys, pl.DataFrame(cols)), flavor)
