"""How far apart the groups of a ``by=`` figure are (fairlearn's ``MetricFrame`` idiom, made size-aware):
:func:`calframe.disparity`.

For each figure, over the groups of ``by`` with at least ``min_n`` rows (the
others are listed, not ranked): the worst and the best group (their labels
and values), ``difference``: how much worse the worst is (worst - best; best -
worst for accuracy) and ``ratio`` = min / max of the two. With ``ci`` the
groups are ranked on their interval bounds, not on their values: the worst is the group whose lower bound is highest (the error it
surely has), the best the one whose upper bound is lowest (the error it
surely stays under; for accuracy, the other way round). A small group's noise
widens its interval, so it is seldom named best; but its lower bound keeps
part of the upward bias of a calibration error on few rows per bin, so a small
calibrated group can be named worst over larger groups whose figure is below
that bias (:func:`calframe.disparity`, "What the intervals do for small
groups", gives the measured rates). A group of one row has no interval
(:data:`calframe.figures.MIN_ROWS`: NaN bounds) and is never ranked with
``ci``. Every bound comes from the eager
engine's bootstrap (:func:`calframe.engines.eager._bootstrap`), from the same
draws as the groups' own intervals: the worst and best groups' bounds are
those groups' intervals (the ``<figure>_lo`` / ``<figure>_hi`` of the ``by=``
result), and the difference, the ratio and each group's difference to the
best are recomputed on every draw before the method's bounds are taken
(:func:`calframe.figures.interval`); intervals of groups are never combined.
A group is distinguishable from the best when the interval of its
difference to the best excludes 0.

This module wraps a figure's eager figures (``Scored -> one value per group``)
for :func:`~calframe.engines.eager.evaluate`, which keeps their draws, and
reads the table off the ``by=`` result and the draws.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from ._imports import pd  # imported at first use
import polars as pl

from . import figures as F
from . import registry
from .moments import sums_of, with_sums
from ._columns import Scored
from ._errors import InvalidValueError
from ._errors import rows as _rows
from .frames.convert import collect

Figure = Callable[[Scored], np.ndarray]

#: the value columns of the table, each with ``_lo`` / ``_hi`` bounds with ``ci``
VALUES = ("worst", "best", "difference", "ratio")
#: the table's columns before the bounds
COLUMNS = ("figure", "n_groups", "n_ranked", "worst_group", "worst", "best_group", "best", "difference", "ratio")
#: the table's columns after the bounds: what the ranking read, the groups not ranked (below ``min_n`` and, with
#: ``ci``, of one row: no interval) and the groups whose difference to the best excludes 0 (None without ``ci``)
AFTER = ("ranked_on", "below_min_n", "distinguishable_from_best")
#: disparity's default ``min_n``: groups with fewer rows are listed, not ranked
MIN_N = 50
#: kept for the report: the derived figures of earlier versions (none now)
_DIFFERENCE, _RATIO = " (difference)", " (ratio)"


def spread(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(max - min, min / max)`` over the groups (last axis) of non-negative figures.

    ``min / max`` is fairlearn's ratio, in [0, 1] (1: the groups agree); when
    every group is 0 it is 1 (they agree), and a single group gives 0 and 1. A
    row holding NaN (a replicate where a group's figure is undefined) gives
    NaN for both, which the bootstrap's bounds leave out.

    Examples
    --------
    >>> import numpy as np
    >>> spread(np.array([[0.02, 0.08], [0.0, 0.0], [0.0, 0.05]]))
    (array([0.06, 0.  , 0.05]), array([0.25, 1.  , 0.  ]))
    """
    hi, lo = values.max(axis=-1), values.min(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(hi > 0, lo / hi, np.where(np.isnan(hi), np.nan, 1.0))
    return hi - lo, ratio


class Spread:
    """A figure set to compare groups on: :attr:`figures` go to :func:`~calframe.engines.eager.evaluate`, which
    fills :attr:`draws` (each figure's bootstrap draws, with ``ci``). :attr:`keys` and :attr:`flavor`: the group
    keys (Polars) and the caller's flavor of the rows the figures were given; ``min_n``: the fewest rows a ranked
    group has; ``method``: the interval method (``ci_method``)."""

    def __init__(self, figures: dict[str, Figure], min_n: int = MIN_N, method: str = "symmetric") -> None:
        self.keys: pl.DataFrame | None = None
        self.flavor = "polars"
        self.labels = list(figures)
        self.min_n = min_n
        self.method = method
        self.draws: dict[str, F.Draws] = {}
        #: each group's sum of weights (frequency weights: what ``min_n`` compares), None: its rows (``n``)
        self.sizes: np.ndarray | None = None
        self.figures: dict[str, Figure] = {label: F.with_scale(self._noting_rows(f), F.scale_of(f))
                                           for label, f in figures.items()}

    def _noting_rows(self, figure: Figure) -> Figure:
        """``figure``, noting the keys and flavor of the rows it is given."""
        def noted(s: Scored) -> np.ndarray:
            if s.keys is not None and (self.keys is None or s.keys.height <= self.keys.height):
                self.keys, self.flavor = s.keys, s.flavor  # the call's rows (a draw stacks its groups: more)
                self.sizes = s.frequencies() if s.weights is not None else None
            return figure(s)

        summed = sums_of(figure)  # drawn from its sums as the figure itself is (calframe.moments)
        return noted if summed is None else with_sums(noted, summed)


def group_labels(keys: pl.DataFrame) -> list[str]:
    """One label per group: ``"region=south"``, ``"region=south, device=ios"`` for several ``by`` columns (a null
    key is ``null``), whatever the key columns' types (a duration in ISO 8601, ``"P1DT2H"``, as the report's JSON).

    >>> import datetime as dt
    >>> group_labels(pl.DataFrame({"g": ["a", None], "d": [dt.timedelta(days=1, hours=2), dt.timedelta(0)]}))
    ['g=a, d=P1DT2H', 'g=null, d=PT0S']
    """
    def text(c: str) -> pl.Expr:
        col = pl.col(c)
        return col.dt.to_string("iso") if isinstance(keys.schema[c], pl.Duration) else col.cast(pl.String)

    cols = [pl.concat_str(pl.lit(f"{c}="), text(c).fill_null("null")) for c in keys.columns]
    return keys.select(pl.concat_str(cols, separator=", ").alias("label"))["label"].to_list()


def own_columns(columns: list[str]) -> list[str]:
    """``columns`` of a ``by=`` result without the derived figures :class:`Spread` adds (their bounds included).

    >>> own_columns(["region", "n", "ece", "ece (difference)", "ece (ratio)", "ece_lo", "ece (ratio)_lo"])
    ['region', 'n', 'ece', 'ece_lo']
    """
    return [c for c in columns if _DIFFERENCE not in c and _RATIO not in c]


def _higher_is_better(label: str) -> bool:
    """Whether the figure of a table row (``vece:<variable>`` for a variable's) is better when higher (accuracy):
    its column's direction in the figure table."""
    col = registry.column(label.split(":", 1)[0])
    return col is not None and col.better == "higher"


def table(func: str, result: Any, spread_: Spread, ci: float | None) -> pl.DataFrame | pd.DataFrame:
    """The disparity table from the ``by=`` result of ``spread_.figures`` (one row per group, any flavor) and
    their draws: one row per figure of ``spread_.labels``, in the caller's flavor.

    Ranked groups have at least ``spread_.min_n`` rows (all groups when none has), and with ``ci`` at least
    :data:`calframe.figures.MIN_ROWS` (a group of one row has no interval; it is listed in ``below_min_n`` and
    named in ``ranked_on``; when no group has that many, an InvalidValueError). Without ``ci`` the worst is
    the largest value (the smallest for figures better when higher (the figure table: ``Column.better``)) and the best the other end; with
    ``ci`` the worst has the highest lower bound and the best the lowest upper bound (the other way round for
    those), ties broken by the value and then by the result's order (group keys sorted,
    nulls last).
    """
    result = collect(result)
    names = group_labels(spread_.keys)  # type: ignore[arg-type]
    counts = np.asarray(result["n"]) if spread_.sizes is None else spread_.sizes  # frequency weights: sum w
    ranked = np.flatnonzero(counts >= spread_.min_n)
    everyone = ranked.size == 0
    if everyone:
        ranked = np.arange(counts.size)
    # with ci, a group of one row has no interval (figures.MIN_ROWS): never ranked, whatever min_n
    unresampled = [] if ci is None else [names[g] for g in np.flatnonzero(counts < F.MIN_ROWS)]
    if unresampled:
        ranked = ranked[counts[ranked] >= F.MIN_ROWS]
        if ranked.size == 0:
            raise InvalidValueError(
                f"{func}: no group has {F.MIN_ROWS} rows, so none has a bootstrap interval to rank on (every "
                f"resample of one row is that row). Rank on the values with ci=None, or group more rows together."
            )
    not_ranked = sorted(set(np.flatnonzero(counts < spread_.min_n).tolist() if not everyone else [])
                        | set(np.flatnonzero(counts < F.MIN_ROWS).tolist() if unresampled else []))
    rows: dict[str, list[Any]] = {c: [] for c in COLUMNS + tuple(bound_columns(ci)) + AFTER}
    for label in spread_.labels:
        v = np.asarray(result[label], dtype=np.float64)
        bad = np.flatnonzero(np.isnan(v) | (v < 0))
        if bad.size:
            g = int(bad[0])
            raise InvalidValueError(
                f"{func}: the {label} of group {names[g]} ({_rows(int(counts[g]))}) is {v[g]}; the groups can only "
                "be compared on defined, non-negative figures. Keep rows in every group (gece's labels_in= or "
                "output_between= can empty one), or drop that group from the frame first."
            )
        higher = _higher_is_better(label)
        sign = -1.0 if higher else 1.0  # on sign * value, higher is worse
        if ci is None:
            worst_key = best_key = sign * v
            on = "value"
        else:
            lo, hi = (np.asarray(result[f"{label}_{e}"], dtype=np.float64) for e in ("lo", "hi"))
            worst_key, best_key = (sign * hi, sign * lo) if higher else (lo, hi)
            on = ("upper bound (worst), lower bound (best)" if higher else
                  "lower bound (worst), upper bound (best)") + f" of the {ci:.0%} interval"
        # lexsort: the last key first; position in the result breaks the remaining ties
        worst = int(ranked[np.lexsort((np.arange(ranked.size), -(sign * v)[ranked], -worst_key[ranked]))[0]])
        best = int(ranked[np.lexsort((np.arange(ranked.size), (sign * v)[ranked], best_key[ranked]))[0]])
        rows["figure"].append(label)
        rows["n_groups"].append(len(v))
        rows["n_ranked"].append(int(ranked.size))
        rows["worst_group"].append(names[worst])
        rows["best_group"].append(names[best])
        rows["worst"].append(float(v[worst]))
        rows["best"].append(float(v[best]))
        _, ratio = spread(v[[worst, best]][None, :])
        rows["difference"].append(float(sign * (v[worst] - v[best])) + 0.0)  # + 0.0: a tie is 0.0, not -0.0
        rows["ratio"].append(float(ratio[0]))
        if everyone:
            on += f" (no group has {spread_.min_n} rows: all ranked" + (" that have an interval)" if unresampled else ")")
        if unresampled:
            on += f"; no interval (1 row), not ranked: {', '.join(unresampled)}"
        rows["ranked_on"].append(on)
        rows["below_min_n"].append([names[g] for g in not_ranked])
        if ci is None:
            rows["distinguishable_from_best"].append(None)
            continue
        for value, g in (("worst", worst), ("best", best)):
            for end in ("lo", "hi"):
                rows[f"{value}_{end}"].append(float(np.asarray(result[f"{label}_{end}"])[g]))
        d = spread_.draws[label]
        for value, (lo_, hi_) in zip(("difference", "ratio"), _pair_bounds(d, worst, best, ci, spread_.method, sign)):
            rows[f"{value}_lo"].append(lo_)
            rows[f"{value}_hi"].append(hi_)
        others = ranked[ranked != best]
        apart = _excludes_zero(d, others, best, ci, spread_.method, sign)
        rows["distinguishable_from_best"].append([names[g] for g in others[apart]])
    out = pl.DataFrame(rows, schema=schema(ci))
    if ci is not None:
        out = out.with_columns(pl.lit(spread_.method).alias(F.CI_METHOD))
    return F.to_flavor(out, spread_.flavor)


def schema(ci: float | None = None) -> dict[str, pl.DataType]:
    """The table's columns and their types (without :data:`figures.CI_METHOD`, added with ``ci``)."""
    kinds = {"figure": pl.String, "n_groups": pl.Int64, "n_ranked": pl.Int64, "worst_group": pl.String,
             "best_group": pl.String, "ranked_on": pl.String, "below_min_n": pl.List(pl.String),
             "distinguishable_from_best": pl.List(pl.String)}
    return {c: kinds.get(c, pl.Float64) for c in COLUMNS + tuple(bound_columns(ci)) + AFTER}


def _on_figure_scale(d: F.Draws) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A figure's draws, estimate and truth on the figure's own scale (``Scale.back``)."""
    back = d.scale.back if d.scale.back is not None else (lambda x: x)
    return back(d.draws), back(d.estimate), back(d.truth)


def _pair_bounds(d: F.Draws, worst: int, best: int, ci: float, method: str,
                 sign: float = 1.0) -> list[tuple[float, float]]:
    """The bounds of ``sign * (worst - best)`` and of the ratio of the two (min / max) from the same draws."""
    draws, est, truth = _on_figure_scale(d)
    pair = [worst, best]
    out = []
    for k, scale in ((0, F.Scale(lower=-np.inf)), (1, F.Scale(upper=1.0))):
        x = draws[:, pair]
        stat = (lambda a: sign * (a[..., 0] - a[..., 1])) if k == 0 else (lambda a: spread(a)[1])
        lo, hi = F.interval(stat(x)[:, None], ci, method, np.atleast_1d(stat(est[pair])),
                            np.atleast_1d(stat(truth[pair])), scale)
        out.append((float(lo[0]), float(hi[0])))
    return out


def _excludes_zero(d: F.Draws, groups: np.ndarray, best: int, ci: float, method: str,
                   sign: float = 1.0) -> np.ndarray:
    """Whether the interval of each group's figure minus the best's excludes 0 (as ``difference``'s, from the
    same draws; every group's interval in one call, each column's bounds as alone)."""
    draws, est, truth = _on_figure_scale(d)
    groups = np.asarray(groups, dtype=np.int64)
    if groups.size == 0:
        return np.zeros(0, dtype=bool)
    lo, hi = F.interval(sign * (draws[:, groups] - draws[:, [best]]), ci, method, sign * (est[groups] - est[best]),
                        sign * (truth[groups] - truth[best]), F.Scale(lower=-np.inf))
    return (lo > 0) | (hi < 0)


def bound_columns(ci: float | None) -> list[str]:
    """The ``_lo`` / ``_hi`` columns of the table with ``ci`` (none without)."""
    return [] if ci is None else [c for c in F.output_columns(VALUES, ci)[1 + len(VALUES):] if c != F.CI_METHOD]
