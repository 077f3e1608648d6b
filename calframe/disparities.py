"""How far apart the groups of a ``by=`` figure are (fairlearn's ``MetricFrame`` idiom): :func:`calframe.disparity`.

For each figure, over the groups of ``by``: the worst and the best group (their
labels and values), ``difference`` = max - min and ``ratio`` = min / max, as
fairlearn's ``group_max()``, ``group_min()``, ``difference()`` and
``ratio()`` (``method="between_groups"``). With ``ci`` every value gets the
percentile bounds of the eager engine's bootstrap
(:func:`calframe.engines.eager._bootstrap`), from the same resamples as the
groups' own intervals: the worst and best groups' bounds are those groups'
intervals (the ``<figure>_lo`` / ``<figure>_hi`` of the ``by=`` result), and
``difference`` and ``ratio`` are recomputed on every replicate (max - min and
min / max over that replicate's group figures) before the percentiles are
taken; intervals of groups are never combined.

This module turns a figure's eager figures (``Scored -> one value per group``)
into the figures :func:`~calframe.engines.eager._evaluate` computes, point
estimate and bootstrap alike, and reads the table off its ``by=`` result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from ._lazy import pd  # imported at first use
import polars as pl

from . import figures as F
from ._columns import Scored
from ._errors import InvalidValueError
from ._errors import rows as _rows

Figure = Callable[[Scored], np.ndarray]

#: figures where a higher value is better (every other figure is an error: higher is worse)
HIGHER_IS_BETTER = frozenset({"accuracy"})
#: the value columns of the table, each with ``_lo`` / ``_hi`` bounds with ``ci``
VALUES = ("worst", "best", "difference", "ratio")
#: the table's columns without ``ci``
COLUMNS = ("figure", "n_groups", "worst_group", "worst", "best_group", "best", "difference", "ratio")
#: the column suffixes of the derived figures in the ``by=`` result the table is read from
_DIFFERENCE, _RATIO = " (difference)", " (ratio)"


def spread(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(max - min, min / max)`` over the groups (last axis) of non-negative figures.

    ``min / max`` is fairlearn's ratio, in [0, 1] (1: the groups agree); when
    every group is 0 it is 1 (they agree), and a single group gives 0 and 1. A
    row holding NaN (a replicate where a group's figure is undefined) gives
    NaN for both, which the bootstrap's percentiles leave out.

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
    """A figure set and, for each figure, its ``difference`` and ``ratio`` over the groups as figures of their own.

    :attr:`figures` go to :func:`~calframe.engines.eager._evaluate`. A derived figure gives its value once per
    group (the engine shapes one value per group): on the bootstrap's stacked replicates (``r`` replicates of
    the ``keys.height`` groups) each replicate's groups share that replicate's value. A figure's values are
    computed once per rows object (the engine calls every figure on the same resample in turn). :attr:`keys`
    and :attr:`flavor`: the group keys (Polars) and the caller's flavor of the rows the figures were given.
    """

    def __init__(self, figures: dict[str, Figure]) -> None:
        self.keys: pl.DataFrame | None = None
        self.flavor = "polars"
        self.labels = list(figures)
        self.figures: dict[str, Figure] = {}
        for label, figure in figures.items():
            cached = self._once_per_rows(figure)

            def derived(s: Scored, which: int, cached: Figure = cached) -> np.ndarray:
                n_groups = s.keys.height  # type: ignore[union-attr]  (disparity always has groups)
                return np.repeat(spread(cached(s).reshape(-1, n_groups))[which], n_groups)

            self.figures[label] = cached
            self.figures[label + _DIFFERENCE] = lambda s, d=derived: d(s, 0)
            self.figures[label + _RATIO] = lambda s, d=derived: d(s, 1)

    def _once_per_rows(self, figure: Figure) -> Figure:
        """``figure``, computed again only when given another rows object than last time (held: never reused)."""
        last: list[Any] = [None, None]

        def cached(s: Scored) -> np.ndarray:
            if last[0] is not s:
                self.keys, self.flavor = s.keys, s.flavor
                last[:] = [s, figure(s)]
            return last[1]

        return cached


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


def table(func: str, result: Any, spread_: Spread, ci: float | None) -> pl.DataFrame | pd.DataFrame:
    """The disparity table from the ``by=`` result of ``spread_.figures`` (one row per group, any flavor): one row
    per figure of ``spread_.labels``, in the caller's flavor.

    The worst group is the one with the largest value (the smallest for :data:`HIGHER_IS_BETTER` figures), the
    best the other end; on a tie, the first of the tied groups in the result's order (group keys sorted, nulls
    last).
    """
    if isinstance(result, pl.LazyFrame):
        result = result.collect()
    names = group_labels(spread_.keys)  # type: ignore[arg-type]
    counts = np.asarray(result["n"])
    rows: dict[str, list[Any]] = {c: [] for c in COLUMNS + tuple(bound_columns(ci))}
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
        worst, best = (np.argmin(v), np.argmax(v)) if label in HIGHER_IS_BETTER else (np.argmax(v), np.argmin(v))
        at = {"worst": int(worst), "best": int(best), "difference": 0, "ratio": 0}  # derived columns: any row
        col = {"worst": label, "best": label, "difference": label + _DIFFERENCE, "ratio": label + _RATIO}
        rows["figure"].append(label)
        rows["n_groups"].append(len(v))
        rows["worst_group"].append(names[at["worst"]])
        rows["best_group"].append(names[at["best"]])
        for value in VALUES:
            rows[value].append(float(np.asarray(result[col[value]])[at[value]]))
            if ci is not None:
                for end in ("lo", "hi"):
                    rows[f"{value}_{end}"].append(float(np.asarray(result[f"{col[value]}_{end}"])[at[value]]))
    out = pl.DataFrame(rows, schema_overrides={"n_groups": pl.Int64, **{c: pl.Float64 for c in rows if c not in (
        "figure", "n_groups", "worst_group", "best_group")}})
    return F.to_flavor(out, spread_.flavor)


def bound_columns(ci: float | None) -> list[str]:
    """The ``_lo`` / ``_hi`` columns of the table with ``ci`` (none without)."""
    return [] if ci is None else F.output_columns(VALUES, ci)[1 + len(VALUES):]
