"""A self-contained calibration report: figures as data (JSON) and as one HTML page.

``build_report`` computes every figure from one frame through the public API;
``to_html`` renders them with tables and, when matplotlib is installed (the
``plot`` extra), embedded PNG reliability diagrams and variable curves.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import polars as pl

from . import api
from . import disparities as D
from . import lenses as L
from . import registry
from ._errors import CalframeError
from .frames import convert
from ._progress import honours

# the report in words (headline, tables, console) and as a page: calframe.cli and users import them from here
from ._report_html import (  # noqa: F401
    NO_FIGURES, SECTIONS, Section, can_draw, displays, lens_phrase, render_html,
)
from ._report_text import (  # noqa: F401
    CONSOLE_GROUPS, CONSOLE_OVERALL, ESSENTIAL, FIGURES, GROUP_FIGURES, LABELS, MEANINGS, VCE_SUMMARY_LABELS,
    VERDICTS, all_figures, evidence, figure_table, findings, group_name, headline, interval, num, report_figures,
    rule, verdict_of,
    window_table, by_list, as_polars, render_text,
)

#: The default tolerance of the verdict rule (``verdict``): a calibration error of 0.03, three points of probability.
TOLERANCE = 0.03


@dataclass
class Report:
    """Every figure of a report, as Polars frames (``to_json`` / ``to_html`` render them)."""

    title: str
    options: dict[str, Any]
    summary: pl.DataFrame
    by_group: pl.DataFrame | None
    reliability: pl.DataFrame
    variables: pl.DataFrame | None
    curves: dict[str, Any] = field(default_factory=dict)
    #: the figures per time window (:func:`calframe.monitor`), with ``time_col``
    over_time: pl.DataFrame | None = None
    #: how far apart the ``by`` groups are (:func:`calframe.disparity` of the summary figures, same draws)
    disparity: pl.DataFrame | None = None
    #: the smooth reliability diagram, computed and not drawn (:class:`calframe.plot.SmoothReliabilityDisplay`)
    smooth: Any = None
    #: the CORP reliability diagram (:func:`calframe.reliability_curve`, per group with ``by``; its bands with the
    #: report's intervals), None for a lens without one scalar per row
    corp: pl.DataFrame | None = None

    def to_dict(self) -> dict[str, Any]:
        def rows(df: pl.DataFrame | None) -> list[dict[str, Any]] | None:
            if df is None:
                return None
            return [{k: _json_value(v) for k, v in r.items()} for r in df.iter_rows(named=True)]

        return {
            "title": self.title,
            "options": self.options,
            "headline": self.headline(),
            "summary": rows(self.summary),
            "by_group": rows(self.by_group),
            "reliability": rows(self.reliability),
            "variables": rows(self.variables),
            "vce": {v: rows(convert.to_polars(c.summary)) for v, c in self.curves.items()},
            "over_time": rows(self.over_time),
            "disparity": rows(self.disparity),
            "smooth": None if self.smooth is None else {
                "smece": self.smooth.smece, "sigma": self.smooth.sigma,
                "curve": rows(pl.DataFrame({"t": self.smooth.t, "smoothed": self.smooth.mu,
                                            "density": self.smooth.density,
                                            **({} if self.smooth.lower is None else
                                               {"lower": self.smooth.lower, "upper": self.smooth.upper})}))},
            "corp": rows(self.corp),
        }

    def to_json(self, indent: int = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def to_html(self) -> str:
        return render_html(self)

    def headline(self) -> str:
        """The report's answer in one paragraph (:func:`headline`)."""
        return headline(self)

    def to_text(self, wide: bool = False, width: int = 100) -> str:
        """The headline and the tables for a terminal, ``width`` columns wide: the essential figures, or every
        figure with ``wide`` (whose tables may then be wider)."""
        return render_text(self, wide, width)


def _json_value(v: Any) -> Any:
    """A value JSON can hold (docs/spec.md section 8): non-finite floats -> null; dates, datetimes and times ->
    ISO 8601 strings; durations -> ISO 8601 durations ("P1DT2H30M"); decimals -> their exact decimal string.

    >>> import datetime as dt, decimal
    >>> [_json_value(v) for v in (dt.date(2024, 1, 31), dt.timedelta(days=1, minutes=90), decimal.Decimal("0.10"))]
    ['2024-01-31', 'P1DT1H30M', '0.10']
    """
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, (dt.date, dt.time)):  # datetime.datetime is a date
        return v.isoformat()
    if isinstance(v, dt.timedelta):
        return _iso_duration(v)
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, (list, tuple)):
        return [_json_value(x) for x in v]
    if isinstance(v, dict):
        return {k: _json_value(x) for k, x in v.items()}
    return v


def _iso_duration(td: dt.timedelta) -> str:
    """ISO 8601 duration of ``td`` in days, hours, minutes and seconds; negative ones start with '-'."""
    sign, td = ("-" if td < dt.timedelta(0) else ""), abs(td)
    hours, rest = divmod(td.seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    sec = f"{seconds}.{td.microseconds:06d}".rstrip("0") if td.microseconds else str(seconds) if seconds else ""
    time = "".join(f"{n}{unit}" for n, unit in ((hours, "H"), (minutes, "M")) if n) + (f"{sec}S" if sec else "")
    day = f"{td.days}D" if td.days else ""
    return f"{sign}P{day}T{time}" if time else f"{sign}P{day}" if day else "PT0S"


#: The default report's bootstrap budget: rows x draws resampled (``ci="auto"``). Above it the default report has
#: no interval (an explicit ``ci`` always computes them): 50,000 rows at the default 200 draws.
BOOT_BUDGET = 10_000_000


@honours
def build_report(
    frame: Any,
    *,
    prob: str | Sequence[str] | None = None,
    label: str | None = None,
    by: str | Sequence[str] | None = None,
    variables: Sequence[str] = (),
    bins: int = 15,
    lens: str | None = None,
    ci: float | None | str = "auto",
    n_boot: int = 200,
    seed: int = 0,
    nulls: str = "raise",
    title: str = "Calibration report",
    tolerance: float = TOLERANCE,
    alpha: float = 0.05,
    time_col: str | None = None,
    every: Any = "1d",
    baseline: Any = None,
    progress: bool | None = None,
) -> Report:
    """Compute the figures of a report (summary, per group and their disparity, reliability, smooth reliability,
    the CORP reliability diagram (:func:`calframe.reliability_curve`), VECE ranking, VCE curves, over time).

    Every calibration figure uses one lens: ``lens``, or by default (None)
    ``class:1`` for a single probability column (binary input) and ``top1``
    for class probabilities (SPEC §8 "Default lens"). The lens used is
    ``report.options["lens"]`` and is printed in the HTML page.

    The verdicts are tests (:func:`calframe.calibration_test`, docs/statistics.md): overall and per group,
    ``"not calibrated"`` when the data reject "population ECE <= ``tolerance``" at level ``alpha``,
    ``"calibrated"`` when they reject "population ECE >= ``tolerance``", else ``"undecided"``. The summary and
    every ``by_group`` row carry them as a ``verdict`` struct (``result``, ``p_not_calibrated``,
    ``p_calibrated``, ``noise_ece``, ``small``, ``tolerance``, ``alpha``, ``test``), which the JSON writes as a
    ``verdict`` object; ``small`` marks a group whose rows are so few that a perfectly calibrated model's ECE
    would reach the tolerance.

    ``ci``: the level of the bootstrap intervals, None for none, or
    ``"auto"`` (default): 0.95 when the rows times ``n_boot`` are at most
    :data:`BOOT_BUDGET` (50,000 rows at 200 draws), else none, said in
    ``options["ci_note"]`` and on the page (docs/plots.md, "Time and memory").
    ``options["ci_method"]`` is the intervals' bootstrap method (:func:`calframe.summary`'s ``ci_method``
    column: ``"symmetric"``), None without intervals.
    The smooth reliability diagram's bootstrap band follows the same level (no
    interval, no band).

    The summary holds the smooth ECE (``smece``, :func:`calframe.smece`, no
    interval) beside the binned figures, the groups too with ``by``; then
    ``report.disparity`` is :func:`calframe.disparity` of the summary figures,
    from the same bootstrap draws as the groups' intervals.
    ``frame`` may be a LazyFrame (``pl.scan_parquet``): each figure reads the
    columns it needs, and those that stream, stream.

    With ``time_col``, the ECE per ``every`` window of that column
    (:func:`calframe.monitor`, with the report's intervals) against
    ``baseline`` (a window start or a (start, end) pair) is ``report.over_time``.

    ``progress``: a bar over the report's sections, and the bars of their long loops (the bootstrap, the
    variables), when they take seconds (spec section 8, "Progress bars").

    >>> import calframe
    >>> rep = build_report(calframe.datasets.grouped_miscalibration(n=2000, seed=0), by="region", ci=None)
    >>> rep.headline().split(" (ECE")[0], rep.options["tolerance"]   # 2,000 rows: too few to reject ECE >= 0.03
    ('Undecided overall', 0.03)
    >>> build_report(calframe.datasets.grouped_miscalibration(n=60_000, seed=0), bins=10).options["ci"] is None
    True
    """
    from ._params import check_positive_float

    tolerance = check_positive_float("report", "tolerance", tolerance, below=1.0)
    alpha = check_positive_float("report", "alpha", alpha, below=1.0)
    lens = L.lens_used(frame, prob, lens, func="report")
    ci, ci_note = _interval_level(frame, ci, n_boot)
    common = dict(prob=prob, label=label, nulls=nulls, lens=lens)
    from ._progress import steps

    # summary, smooth diagram, groups, reliability, VECE ranking, one per curve, over time
    bar = steps(4 + (by is not None) + len(variables) + (time_col is not None), "report", unit="section")
    summary = api.summary(frame, bins=bins, ci=ci, n_boot=n_boot, seed=seed, **common)  # type: ignore[arg-type]
    bar.update()
    smooth = _smooth_display(frame, ci, n_boot, seed, **common)
    bar.update()
    summary = as_polars(summary).with_columns(smece=pl.lit(None if smooth is None else smooth.smece, pl.Float64))
    figured = dict(bins=bins, ci=ci, n_boot=n_boot, seed=seed, **common)
    summary = _with_report_figures(summary, frame, figured, [])
    tested = dict(bins=bins, tolerance=tolerance, alpha=alpha, seed=seed, **common)
    summary = _with_verdicts(summary, api.calibration_test(frame, **tested), [])  # type: ignore[arg-type]
    by_group = disparity = disparity_note = None
    if by is not None:
        by_group, disparity, disparity_note = _groups(frame, dict(bins=bins, by=by, ci=ci, n_boot=n_boot, seed=seed, **common))
        if smooth is not None:
            per = as_polars(api.smece(frame, by=by, **common)).select(*by_list(by), "smece")  # type: ignore[arg-type]
            by_group = by_group.join(per, on=by_list(by), how="left", nulls_equal=True, maintain_order="left")
        by_group = _with_report_figures(by_group, frame, {**figured, "by": by}, by_list(by))
        by_group = _with_verdicts(by_group, api.calibration_test(frame, by=by, **tested), by_list(by))  # type: ignore[arg-type]
        bar.update()
    reliability = api.reliability(frame, bins=bins, by=by, **common)  # type: ignore[arg-type]
    bar.update()
    variables_df = None
    curves: dict[str, Any] = {}
    if variables:
        variables_df = as_polars(api.vece_rank(frame, list(variables), by=by, **common))  # type: ignore[arg-type]
        ranked = variables_df.filter(pl.col("leak").is_null())  # type: ignore[union-attr]  (leaking ones: no curve)
        kinds = dict(zip(ranked["variable"].to_list(), ranked["kind"].to_list()))
        bar.update()
        for v in variables:
            if kinds.get(v) == "numeric":
                curves[v] = api.vce_curve(frame, v, by=by, n_points=200, n_boot=max(20, min(n_boot, 200)) if ci else 0,
                                          seed=seed, **common)  # type: ignore
            bar.update()
    bar.update(not variables)
    over_time = None
    if time_col is not None:
        from .monitoring import monitor, window_tests

        over_time = as_polars(monitor(frame, time_col, every=every, baseline=baseline, bins=bins, ci=ci,
                                    n_boot=n_boot, seed=seed, **common))
        over_time = _with_verdicts(over_time, window_tests(frame, time_col, every=every, **tested), [time_col])
        bar.update()
    # the method of the intervals shown, as the summary names it (its ``ci_method`` column); None without them
    ci_method = summary["ci_method"].item() if ci is not None and "ci_method" in summary.columns else None
    return Report(title, {"prob": prob, "label": label, "by": by, "variables": list(variables), "bins": bins,
                          "lens": lens, "ci": ci, "ci_method": ci_method, "ci_note": ci_note, "n_boot": n_boot,
                          "seed": seed,
                          "tolerance": tolerance, "alpha": alpha, "time_col": time_col, "every": every if time_col else None,
                          "baseline": baseline, "disparity_note": disparity_note},
                  summary, by_group, as_polars(reliability), variables_df, curves, over_time, disparity, smooth,
                  _corp_table(frame, by, ci, n_boot, seed, **common))


def _corp_table(frame: Any, by: Any, ci: float | None, n_boot: int, seed: int, *, prob: Any, label: Any,
                nulls: str, lens: str) -> pl.DataFrame | None:
    """The CORP reliability diagram's table, with its consistency and confidence bands at the report's level
    (none without intervals); None for a lens without one scalar per row."""
    if lens != "top1" and not lens.startswith("class:"):
        return None
    return as_polars(api.reliability_curve(frame, prob, label, by=by, lens=lens, nulls=nulls, n_boot=n_boot,
                                           seed=seed, level=ci or 0.9, bands=None if ci is None else
                                           ("consistency", "confidence")))


def _with_report_figures(df: pl.DataFrame, frame: Any, options: dict[str, Any], keys: list[str]) -> pl.DataFrame:
    """``df`` with the columns (and bounds) of the figure table's figures on "report" (``report_figures``), joined on
    ``keys`` (the groups; none: the one overall row)."""
    for name in report_figures():
        res = registry.DECLARED[name].fn(frame, **options)
        if isinstance(res, float):
            res = pl.DataFrame({registry.figure_of(name).names[0]: [res]})
        res = as_polars(res).drop("n", "ci_method", strict=False)
        df = df.join(res, on=keys, how="left", nulls_equal=True, maintain_order="left") if keys else pl.concat(
            [df, res], how="horizontal")
    return df


def _with_verdicts(df: pl.DataFrame, tests: Any, keys: list[str]) -> pl.DataFrame:
    """``df`` with the ``verdict`` struct of :func:`calframe.calibration_test`'s rows (joined on ``keys``)."""
    from .verdicts import verdict_struct

    tests = as_polars(tests)
    struct = tests.select(*keys, verdict_struct(tests))  # type: ignore[union-attr]
    if not keys:
        return df.with_columns(struct.to_series(0).alias("verdict"))
    return df.join(struct, on=keys, how="left", nulls_equal=True, maintain_order="left")


def _groups(frame: Any, options: dict[str, Any]) -> tuple[pl.DataFrame, pl.DataFrame | None, str | None]:
    """The summary per group and its disparity table (:func:`calframe.disparity`) from one run: one bootstrap.

    The groups' own figures and the spread over them are evaluated together (``plan.spread_run``), so the
    table's intervals come from the draws of the groups' intervals. A table that cannot be read (a group whose
    figure is undefined) is None, with the reason."""
    from .families import plan as P

    token = P.PLANNING.set(True)
    try:
        planned = api.summary(frame, **options)
    finally:
        P.PLANNING.reset(token)
    result, spread, ci = P.spread_run(planned)
    result = as_polars(result)
    try:
        disparity, note = as_polars(D.table("report", result, spread, ci)), None
    except CalframeError as exc:
        disparity, note = None, str(exc)
    return result.select(D.own_columns(result.columns)), disparity, note  # type: ignore[union-attr]


def _smooth_display(frame: Any, ci: float | None, n_boot: int, seed: int, *, prob: Any, label: Any, nulls: str,
            lens: str) -> Any:
    """The smooth reliability diagram, not drawn, with the report's bootstrap band (none without intervals:
    the band is the same budget's); None for a lens without one scalar per row."""
    from .plot import SmoothReliabilityDisplay

    if lens != "top1" and not lens.startswith("class:"):
        return None
    return SmoothReliabilityDisplay.compute(frame, prob, label, lens=lens, nulls=nulls, band=ci is not None,
                                            n_boot=n_boot, level=ci or 0.95, seed=seed)


def _interval_level(frame: Any, ci: float | None | str, n_boot: int) -> tuple[float | None, str | None]:
    """(the interval level, why there is none when ``ci="auto"`` decided so)."""
    if ci != "auto":
        return ci, None  # type: ignore[return-value]
    n = convert.height(frame)
    if n * n_boot <= BOOT_BUDGET:
        return 0.95, None
    return None, (f"{n:,} rows x {n_boot} draws is over the default budget of {BOOT_BUDGET:,} resampled rows; "
                  "ask for one with --ci 0.95 (ci=0.95), which takes longer")
