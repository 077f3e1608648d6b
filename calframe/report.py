"""A self-contained calibration report: figures as data (JSON) and as one HTML page.

``build_report`` computes every figure from one frame through the public API;
``to_html`` renders them with tables and, when matplotlib is installed (the
``plot`` extra), embedded PNG reliability diagrams and variable curves.
"""

from __future__ import annotations

import base64
import copy
import datetime as dt
import decimal
import html
import io
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Sequence

import polars as pl

from . import api
from . import disparities as D
from . import lenses as L
from ._errors import CalframeError
from ._progress import honours

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
            "vce": {v: rows(c.summary if isinstance(c.summary, pl.DataFrame) else pl.from_pandas(c.summary))
                    for v, c in self.curves.items()},
            "over_time": rows(self.over_time),
            "disparity": rows(self.disparity),
            "smooth": None if self.smooth is None else {
                "smece": self.smooth.smece, "sigma": self.smooth.sigma,
                "curve": rows(pl.DataFrame({"t": self.smooth.t, "smoothed": self.smooth.mu,
                                            "density": self.smooth.density,
                                            **({} if self.smooth.lower is None else
                                               {"lower": self.smooth.lower, "upper": self.smooth.upper})}))},
        }

    def to_json(self, indent: int = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def to_html(self) -> str:
        return _render_html(self)

    def headline(self) -> str:
        """The report's answer in one paragraph (:func:`headline`)."""
        return headline(self)

    def to_text(self, wide: bool = False, width: int = 100) -> str:
        """The headline and the tables for a terminal, ``width`` columns wide: the essential figures, or every
        figure with ``wide`` (whose tables may then be wider)."""
        return _render_text(self, wide, width)


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
    VECE ranking, VCE curves, over time).

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
    summary = _pl(summary).with_columns(smece=pl.lit(None if smooth is None else smooth.smece, pl.Float64))
    tested = dict(bins=bins, tolerance=tolerance, alpha=alpha, seed=seed, **common)
    summary = _with_verdicts(summary, api.calibration_test(frame, **tested), [])  # type: ignore[arg-type]
    by_group = disparity = disparity_note = None
    if by is not None:
        by_group, disparity, disparity_note = _groups(frame, dict(bins=bins, by=by, ci=ci, n_boot=n_boot, seed=seed, **common))
        if smooth is not None:
            per = _pl(api.smece(frame, by=by, **common)).select(*_by_list(by), "smece")  # type: ignore[arg-type]
            by_group = by_group.join(per, on=_by_list(by), how="left", nulls_equal=True, maintain_order="left")
        by_group = _with_verdicts(by_group, api.calibration_test(frame, by=by, **tested), _by_list(by))  # type: ignore[arg-type]
        bar.update()
    reliability = api.reliability(frame, bins=bins, by=by, **common)  # type: ignore[arg-type]
    bar.update()
    variables_df = None
    curves: dict[str, Any] = {}
    if variables:
        variables_df = _pl(api.vece_rank(frame, list(variables), by=by, **common))  # type: ignore[arg-type]
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

        over_time = _pl(monitor(frame, time_col, every=every, baseline=baseline, bins=bins, ci=ci,
                                    n_boot=n_boot, seed=seed, **common))
        over_time = _with_verdicts(over_time, window_tests(frame, time_col, every=every, **tested), [time_col])
        bar.update()
    return Report(title, {"prob": prob, "label": label, "by": by, "variables": list(variables), "bins": bins,
                          "lens": lens, "ci": ci, "ci_note": ci_note, "n_boot": n_boot, "seed": seed,
                          "tolerance": tolerance, "alpha": alpha, "time_col": time_col, "every": every if time_col else None,
                          "baseline": baseline, "disparity_note": disparity_note},
                  summary, by_group, _pl(reliability), variables_df, curves, over_time, disparity, smooth)


def _with_verdicts(df: pl.DataFrame, tests: Any, keys: list[str]) -> pl.DataFrame:
    """``df`` with the ``verdict`` struct of :func:`calframe.calibration_test`'s rows (joined on ``keys``)."""
    from .verdicts import verdict_struct

    tests = _pl(tests)
    struct = tests.select(*keys, verdict_struct(tests))  # type: ignore[union-attr]
    if not keys:
        return df.with_columns(struct.to_series(0).alias("verdict"))
    return df.join(struct, on=keys, how="left", nulls_equal=True, maintain_order="left")


def _groups(frame: Any, options: dict[str, Any]) -> tuple[pl.DataFrame, pl.DataFrame | None, str | None]:
    """The summary per group and its disparity table (:func:`calframe.disparity`) from one run: one bootstrap.

    The groups' own figures and the spread over them are evaluated together (``plan._spread_run``), so the
    table's intervals come from the draws of the groups' intervals. A table that cannot be read (a group whose
    figure is undefined) is None, with the reason."""
    from .families import plan as P

    token = P._PLANNING.set(True)
    try:
        planned = api.summary(frame, **options)
    finally:
        P._PLANNING.reset(token)
    result, spread, ci = P._spread_run(planned)
    result = _pl(result)
    try:
        disparity, note = _pl(D.table("report", result, spread, ci)), None
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
    n = frame.select(pl.len()).collect().item() if isinstance(frame, pl.LazyFrame) else len(frame)
    if n * n_boot <= BOOT_BUDGET:
        return 0.95, None
    return None, (f"{n:,} rows x {n_boot} draws is over the default budget of {BOOT_BUDGET:,} resampled rows; "
                  "ask for one with --ci 0.95 (ci=0.95), which takes longer")


def _pl(df: Any) -> pl.DataFrame | None:
    """An API result as an eager Polars frame (a LazyFrame collected, pandas converted)."""
    if df is None or isinstance(df, pl.DataFrame):
        return df
    return df.collect() if isinstance(df, pl.LazyFrame) else pl.from_pandas(df)


# --------------------------------------------------------------------------- words and numbers

#: Column headers of the figures (summary, VECE ranking and VCE summary columns).
LABELS = {"n": "rows", "accuracy": "accuracy (top label)", "ece": "ECE", "mce": "MCE", "rmsce": "RMSCE",
          "ce_debiased": "debiased CE", "smece": "smooth ECE", "brier": "Brier", "log_loss": "log loss", "vece": "VECE", "vmce": "VMCE",
          "v_star": "v*", "vce": "VCE(v*)", "variable": "variable", "kind": "kind", "v_star_lo": "v* low",
          "v_star_hi": "v* high", "v_star_edge": "v* at the grid's end"}

#: vce_curve's summary columns the report renames
VCE_SUMMARY_LABELS = ("n", "v_star", "vce", "v_star_lo", "v_star_hi", "v_star_edge")

#: The summary figures, in the order tables show them; ``ESSENTIAL`` are those shown by default per group.
FIGURES = ("ece", "ce_debiased", "smece", "mce", "rmsce", "brier", "log_loss", "accuracy")
#: the page's "All figures" per group: the smooth ECE per group is in the Smooth reliability section (one more
#: column of intervals would not fit 1280 pixels)
GROUP_FIGURES = tuple(f for f in FIGURES if f != "smece")
ESSENTIAL = ("ece", "ce_debiased", "mce", "brier")

#: What each summary figure is and what a good value looks like (the Overall table's last column).
MEANINGS = {
    "ece": "average gap between prediction and outcome, over bins of the prediction; 0 is perfect",
    "ce_debiased": "the same gap (l2), with the upward bias of few rows per bin removed; 0 is perfect",
    "smece": "the same gap on a kernel-smoothed curve instead of bins, so no bin count moves it; 0 is perfect "
             "(no interval)",
    "mce": "largest gap of any bin; noisy where bins hold few rows",
    "rmsce": "root mean square gap over the bins; weighs large gaps more than ECE",
    "brier": "mean squared error of the probability; lower is better (rewards sharp predictions too)",
    "log_loss": "mean negative log-likelihood; lower is better (compare between models)",
    "accuracy": "share of rows whose predicted class is right (always the top label)",
}


def num(v: Any) -> str:
    """A figure as the report prints it: 4 decimals; a missing or non-finite one as ``n/a``.

    >>> num(0.05921), num(float("nan")), num(None)
    ('0.0592', 'n/a', 'n/a')
    """
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    return f"{v:.4f}" if isinstance(v, float) else str(v)


def interval(v: Any, lo: Any = None, hi: Any = None) -> str:
    """``0.0592 [0.0488, 0.0724]``: the figure and its interval in one cell (the figure alone without one).

    >>> interval(0.05921, 0.04877, 0.07243), interval(0.05921)
    ('0.0592 [0.0488, 0.0724]', '0.0592')
    """
    if lo is None and hi is None:
        return num(v)
    return f"{num(v)} [{num(lo)}, {num(hi)}]"


def _bounds(row: dict[str, Any], figure: str) -> tuple[Any, Any, Any]:
    return row.get(figure), row.get(f"{figure}_lo"), row.get(f"{figure}_hi")


VERDICTS = ("calibrated", "not calibrated", "undecided")


def verdict_of(row: dict[str, Any]) -> str:
    """A row's verdict: its test's (the ``verdict`` struct of :func:`build_report`; docs/statistics.md, "The
    verdict"), "undecided" for a row without one (no rows to test).

    >>> verdict_of({"verdict": {"result": "not calibrated"}}), verdict_of({"verdict": None})
    ('not calibrated', 'undecided')
    """
    v = row.get("verdict")
    return v["result"] if isinstance(v, dict) and v.get("result") is not None else "undecided"


def evidence(row: dict[str, Any]) -> str:
    """What a row's verdict came from, in words: ``ECE <= 0.03 rejected, p < 0.001``; for an undecided
    verdict both p-values; "" without a test.

    >>> v = dict(result="undecided", p_not_calibrated=0.41, p_calibrated=0.2, tolerance=0.03, alpha=0.05)
    >>> evidence({"verdict": v}), evidence({"verdict": {**v, "result": "calibrated", "p_calibrated": 0.0004}})
    ('neither rejected at 5%: p = 0.41 for ECE <= 0.03, p = 0.2 for ECE >= 0.03', 'ECE >= 0.03 rejected, p < 0.001')
    """
    from .verdicts import p_text

    v = row.get("verdict")
    if not isinstance(v, dict) or v.get("result") is None:
        return ""
    tol = f"{v['tolerance']:g}"
    if v["result"] == "not calibrated":
        return f"ECE <= {tol} rejected, {p_text(v['p_not_calibrated'])}"
    if v["result"] == "calibrated":
        return f"ECE >= {tol} rejected, {p_text(v['p_calibrated'])}"
    return (f"neither rejected at {v['alpha']:.0%}: {p_text(v['p_not_calibrated'])} for ECE <= {tol}, "
            f"{p_text(v['p_calibrated'])} for ECE >= {tol}")


def _small(row: dict[str, Any]) -> bool:
    v = row.get("verdict")
    return isinstance(v, dict) and bool(v.get("small"))


def _p_pair(row: dict[str, Any]) -> str:
    """The two p-values of a row's test, ``0.41, 0.2`` (ECE <= tolerance, ECE >= tolerance)."""
    v = row.get("verdict")
    if not isinstance(v, dict) or v.get("result") is None:
        return ""
    return ", ".join("<0.001" if p < 0.001 else f"{p:.2g}" for p in (v["p_not_calibrated"], v["p_calibrated"]))


def findings(rows: Sequence[dict[str, Any]], what: str) -> str:
    """How many groups got each verdict, and how many are small: ``2 of 10 race, sex groups not calibrated, ...``.

    >>> v = lambda r, small=False: {"verdict": {"result": r, "small": small}}
    >>> findings([v("not calibrated"), v("undecided", True), v("undecided", True)], "region")
    '1 of 3 region groups not calibrated, 2 undecided (2 of the 3 small)'
    """
    words = [verdict_of(r) for r in rows]
    counts = [(w, words.count(w)) for w in ("not calibrated", "calibrated", "undecided") if w in words]
    text = ", ".join(f"{k} {w}" if i else f"{k} of {len(rows)} {what} groups {w}" for i, (w, k) in enumerate(counts))
    small = sum(_small(r) for r in rows)
    return text + (f" ({small} of the {len(rows)} small)" if small else "")


def group_name(row: dict[str, Any], by: Sequence[str]) -> str:
    """A group as the report and ``--fail-above`` name it: ``region=south, device=ios``; a null key is ``null``
    (as :func:`calframe.disparity` and Polars write it).

    >>> group_name({"region": None, "device": "ios"}, ["region", "device"])
    'region=null, device=ios'
    """
    return ", ".join(f"{c}={_key(row[c])}" for c in by)


def _key(value: Any) -> str:
    return "null" if value is None else str(value)


def _by_list(by: str | Sequence[str] | None) -> list[str]:
    return [] if by is None else [by] if isinstance(by, str) else list(by)


def _worst_first(df: pl.DataFrame, column: str) -> pl.DataFrame:
    """Rows sorted by ``column`` descending, missing (null or NaN) values last; ties keep their order."""
    key = pl.when(pl.col(column).is_nan()).then(None).otherwise(pl.col(column))
    return df.sort(key, descending=True, nulls_last=True, maintain_order=True)


def headline(report: "Report") -> str:
    """One paragraph that answers "is it calibrated, for whom not, along what?", from the report's figures.

    The verdicts are the tests' (:func:`calframe.calibration_test`, the ``verdict`` struct of each row), each
    with what it came from; the groups' tell how many got each verdict and how many are small.
    """
    o = report.options
    by = _by_list(o["by"])
    row = report.summary.row(0, named=True)
    parts = [f"{verdict_of(row)} overall (ECE {interval(*_bounds(row, 'ece'))}{_because(row)})"]
    if report.by_group is not None and report.by_group.height:
        groups = _worst_first(report.by_group, "ece").rows(named=True)
        what = by[0] if len(by) == 1 else "group"
        words = [verdict_of(g) for g in groups]
        best = groups[-1]["ece"]
        best_name = _key(groups[-1][by[0]]) if len(by) == 1 else group_name(groups[-1], by)
        for word in ("not calibrated", "undecided"):
            hits = [g for g, w in zip(groups, words) if w == word]
            if hits:
                worst = hits[0]
                ratio = worst["ece"] / best if best and worst["ece"] is not None else None
                times = f", {ratio:.1f}\u00d7 the best {what} ({best_name})" if ratio is not None and math.isfinite(ratio) else ""
                noun = "groups" if len(by) > 1 else f"{what} groups"  # "4 region groups": a name is not pluralised
                more = f" and {len(hits) - 1} more of {len(groups)} {noun}" if len(hits) > 1 else ""
                small = f" ({sum(map(_small, hits))} of these {len(hits)} small)" if len(hits) > 1 and any(map(_small, hits)) else ""
                parts.append(f"{'not' if word == 'not calibrated' else 'undecided'} for "
                             f"{group_name(worst, by)} (ECE {interval(*_bounds(worst, 'ece'))}{_because(worst)}"
                             f"{times}){more}{small}")
                break
        else:
            parts.append(f"calibrated in every {what} (worst {group_name(groups[0], by)}, "
                         f"ECE {interval(*_bounds(groups[0], 'ece'))})")
    if report.variables is not None and report.variables["vece"].drop_nulls().len():
        top = _worst_first(report.variables, "vece").row(0, named=True)
        where = f" in {group_name(top, by)}" if by else ""
        parts.append(f"most miscalibrated along {top['variable']} (VECE {num(top['vece'])}{where})")
    if report.over_time is not None and report.over_time["ece"].drop_nulls().len():
        parts.append(_worst_window(report))
    text = "; ".join(parts) + "."
    return text[0].upper() + text[1:]


def _because(row: dict[str, Any]) -> str:
    """``; ECE <= 0.03 rejected, p < 0.001`` (the verdict's evidence, :func:`evidence`) or ``; small, ...``."""
    why = evidence(row)
    if not why:
        return ""
    return f"; {'small, ' if _small(row) else ''}{why}"


def _worst_window(report: "Report") -> str:
    """The headline's phrase on the windows: the worst one, and how far it is from the baseline."""
    o = report.options
    top = _worst_first(report.over_time, "ece").row(0, named=True)  # type: ignore[arg-type]
    change = f", {top['ece_diff']:+.4f} against the baseline" if top.get("ece_diff") is not None else ""
    return (f"worst {o['every']} window from {_when(top[o['time_col']])}: {verdict_of(top)} "
            f"(ECE {interval(*_bounds(top, 'ece'))}{_because(top)}{change})")


def _when(t: Any) -> str:
    """A window start as the report prints it: the date alone at midnight."""
    if isinstance(t, dt.datetime) and t.time() == dt.time(0):
        return t.date().isoformat()
    return t.isoformat(sep=" ") if isinstance(t, dt.datetime) else str(t)


def window_table(report: "Report") -> pl.DataFrame:
    """The windows as text, in time order: start, rows, ECE (and interval), the change against the baseline,
    the verdict of the window's ECE (for the console and the page)."""
    o = report.options
    df = report.over_time
    rows = df.rows(named=True)  # type: ignore[union-attr]
    cols = {f"{o['time_col']} ({o['every']} from)": [_when(r[o["time_col"]]) for r in rows],
            LABELS["n"]: [str(r["n"]) for r in rows],
            LABELS["ece"]: [interval(*_bounds(r, "ece")) if r["n"] else "no rows" for r in rows]}
    if "ece_diff" in df.columns:  # type: ignore[union-attr]
        cols["vs baseline"] = ["n/a" if r["ece_diff"] is None else f"{r['ece_diff']:+.4f}" for r in rows]
    cols["verdict"] = [verdict_of(r) if r["n"] else "" for r in rows]
    return pl.DataFrame(cols, schema={c: pl.String for c in cols})


def rule(report: "Report") -> str:
    """How to read the report: the verdict rule in words, with the report's tolerance, level and interval."""
    o = report.options
    tol, alpha = f"{o['tolerance']:g}", o.get("alpha", 0.05)
    if o["ci"] is None:
        why = f" ({o['ci_note']})" if o.get("ci_note") else ""
        brackets = f"This report has no bootstrap intervals{why}; the verdicts do not need them."
    else:
        method = o.get("ci_method") or "percentile"
        brackets = (f"Brackets: the {o['ci']:.0%} bootstrap interval ({method}, {o['n_boot']} draws) of each "
                    "figure; the verdict comes from the test, not from the interval.")
    return (f"How to read this: each verdict is a test at the {alpha:.0%} level against a tolerance of {tol} on "
            f"the ECE. Not calibrated: the data reject \"ECE <= {tol}\". Calibrated: they reject \"ECE >= {tol}\". "
            "Undecided: neither, and more rows would decide. A calibrated group is called not calibrated at most "
            f"{alpha:.0%} of the time, at any size. The ECE shown is the plug-in estimate, which few rows per bin "
            "push up; the debiased CE (Kumar et al. 2019) removes that bias, and \"small\" marks a group so small "
            f"that a perfectly calibrated model's ECE would reach {tol}. {brackets}")


def figure_table(df: pl.DataFrame, by: Sequence[str] = (), figures: Sequence[str] = FIGURES,
                 tolerance: float | None = None) -> pl.DataFrame:
    """The summary ``df`` as text, one column per figure (``0.0592 [0.0488, 0.0724]``), for tables and the console.

    Columns: the group columns, ``rows`` (``(small)`` after a small group's), the ``figures`` (``LABELS`` as
    headers) and, with ``tolerance``, the ``verdict`` and the p-values of its test. Rows keep ``df``'s order.
    """
    cols: dict[str, list[str]] = {c: [_key(v) for v in df[c]] for c in by}
    rows = df.rows(named=True)
    cols[LABELS["n"]] = [f"{r['n']} (small)" if _small(r) else str(r["n"]) for r in rows]
    for f in figures:
        cols[LABELS[f]] = [interval(*_bounds(r, f)) for r in rows]
    if tolerance is not None:
        cols["verdict"] = [verdict_of(r) for r in rows]
        if "verdict" in df.columns:
            cols[f"p (ECE <= {tolerance:g}, >= {tolerance:g})"] = [_p_pair(r) for r in rows]
    return pl.DataFrame(cols, schema={c: pl.String for c in cols})


# --------------------------------------------------------------------------- text (the console)

#: The figures the console shows without ``--wide``, overall and per group (the HTML page shows them all).
CONSOLE_OVERALL = ("ece", "ce_debiased", "brier")
CONSOLE_GROUPS = ("ece", "ce_debiased")


def _render_text(report: "Report", wide: bool, width: int) -> str:
    import textwrap

    o = report.options
    by = _by_list(o["by"])
    out = [textwrap.fill(headline(report), width), textwrap.fill(rule(report), width), ""]
    config = dict(tbl_hide_column_data_types=True, tbl_hide_dataframe_shape=True, fmt_str_lengths=100,
                  tbl_rows=-1, tbl_cols=-1, float_precision=4, tbl_width_chars=10 * width if wide else width)
    with pl.Config(**config):  # type: ignore[arg-type]
        out += ["Overall", str(figure_table(report.summary, (), FIGURES if wide else CONSOLE_OVERALL)), ""]
        if report.by_group is not None:
            df = _worst_first(report.by_group, "ece")
            out += [f"By {', '.join(by)}, worst ECE first",
                    str(figure_table(df, by, FIGURES if wide else CONSOLE_GROUPS, o["tolerance"])), ""]
        if report.variables is not None:
            cols = ["variable", "kind", *by, "n", "vece", "vmce"] if wide else ["variable", *by, "vece", "vmce"]
            cols += ["leak"] if "leak" in report.variables.columns and report.variables["leak"].drop_nulls().len() else []
            table = _worst_first(report.variables, "vece").select(cols)
            out += ["Along variables, worst VECE first", str(table.rename({c: LABELS[c] for c in table.columns
                                                                          if c in LABELS and c not in by})), ""]
        if report.over_time is not None:
            out += [f"Over time: ECE per {o['every']} window of {o['time_col']}", str(window_table(report)), ""]
    if not wide:
        out.append("(essential columns; --wide shows every figure)")
    return "\n".join(out).rstrip() + "\n"


# --------------------------------------------------------------------------- HTML

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;
padding:0 1rem;color:#1b1f24;line-height:1.45}
h1{font-size:1.6rem;margin-bottom:.2rem} h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #d0d7de}
.headline{font-size:1.15rem;background:#f6f8fa;border-left:4px solid #0969da;padding:.7rem 1rem;margin:1rem 0 .3rem}
.note{color:#343a40;font-size:.9rem;max-width:75ch} .rule{color:#57606a;font-size:.85rem;max-width:90ch}
table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0;max-width:100%}
th,td{padding:.25rem .6rem;text-align:right;vertical-align:top} th{white-space:nowrap} th{background:#f6f8fa;border-bottom:1px solid #d0d7de}
td:first-child,th:first-child{text-align:left} td.text,th.text{text-align:left} tr:nth-child(even) td{background:#fafbfc}
.ci{white-space:nowrap;color:#57606a} .v{white-space:nowrap} .meta{color:#57606a;font-size:.85rem}
img{max-width:100%;height:auto} .figs{display:flex;flex-wrap:wrap;gap:1rem}
details{margin:.5rem 0} summary{cursor:pointer;color:#0969da}
.verdict-not{color:#b42318;font-weight:600} .verdict-undecided{color:#9a6700} .verdict-calibrated{color:#1a7f37}
"""


def _cell(v: Any) -> str:
    """One table cell: numbers right-aligned, words left; ``0.0592 [0.0488, 0.0724]`` breaks only before its
    interval; verdicts are coloured."""
    if isinstance(v, float):
        return f"<td>{num(v)}</td>"
    text = str(v)
    if not text[:1].isdigit() and text[:1] not in "-[" and text != "n/a":
        return f"<td class='text'>{html.escape(text)}</td>" if text not in VERDICTS else \
            f"<td class='text verdict-{text.split()[0]}'>{text}</td>"
    value, sep, rest = text.partition(" [")
    if sep and rest.endswith("]"):
        return f"<td><span class='v'>{html.escape(value)}</span> <span class='ci'>[{html.escape(rest)}</span></td>"
    return f"<td>{html.escape(text)}</td>"


def _table(df: pl.DataFrame, max_rows: int = 200) -> str:
    body = ["<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in df.head(max_rows).iter_rows()]
    first = re.findall(r"<td( class='text)?", body[0]) if body else []  # a header aligns as its column
    left = [i < len(first) and bool(first[i]) for i in range(df.width)]
    head = "".join(("<th class='text'>" if lt else "<th>") + f"{html.escape(c)}</th>" for c, lt in zip(df.columns, left))
    more = f"<p class='meta'>{df.height - max_rows} more rows not shown</p>" if df.height > max_rows else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{more}"


def _details(summary: str, body: str) -> str:
    return f"<details><summary>{html.escape(summary)}</summary>{body}</details>"


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return "<img alt='figure' src='data:image/png;base64," + base64.b64encode(buf.getvalue()).decode() + "'>"


def displays(report: Report) -> dict[str, Any]:
    """The report's plots as calframe.plot display objects, drawn, with the report's lens (keys ``reliability``
    ``smooth`` and ``curve:VARIABLE``, ``drift``); a plot that fails is its error message. Needs matplotlib (the ``plot`` extra)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from . import plot

    out: dict[str, Any] = {}
    lens = report.options["lens"]
    try:
        out["reliability"] = plot.ReliabilityDisplay(report.reliability, by=report.options.get("by"),
                                                     lens=lens).plot()
    except Exception as exc:  # a figure must never break the report
        out["reliability"] = f"reliability diagram unavailable: {exc}"
    for v, curve in report.curves.items():
        try:
            out[f"curve:{v}"] = plot.VariableCurveDisplay(curve, lens=lens).plot()
        except Exception as exc:
            out[f"curve:{v}"] = f"curve for {v} unavailable: {exc}"
    if report.smooth is not None:
        try:
            out["smooth"] = copy.copy(report.smooth).plot()  # the report's display stays undrawn
        except Exception as exc:
            out["smooth"] = f"smooth reliability diagram unavailable: {exc}"
    if report.over_time is not None:
        try:
            out["drift"] = plot.DriftDisplay(report.over_time, time_col=report.options["time_col"], lens=lens).plot()
        except Exception as exc:
            out["drift"] = f"drift plot unavailable: {exc}"
    return out


#: What the page (at the top, and where each figure would be) and ``calframe report`` say without matplotlib.
NO_FIGURES = ("The figures (reliability diagrams, curves, drift plot) are not drawn: matplotlib is not installed. "
              "pip install 'calframe[plot]' draws them; the tables hold the same numbers.")


def can_draw() -> bool:
    """Whether matplotlib (the ``plot`` extra) imports, so that the page holds its figures."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _figures(report: Report) -> dict[str, str]:
    """Embedded PNGs, when matplotlib is installed (the plot extra is optional); without it, each figure's place
    says so and how to draw it."""
    try:
        import matplotlib.pyplot as plt

        shown = displays(report)
    except ImportError:
        keys = ["reliability", *(f"curve:{v}" for v in report.curves),
                *(["smooth"] if report.smooth is not None else []), *(["drift"] if report.over_time is not None else [])]
        missing = ("<p class='meta'>Figure not drawn: matplotlib is not installed (pip install "
                   "'calframe[plot]' draws it).</p>")
        return dict.fromkeys(keys, missing)
    out = {}
    for key, disp in shown.items():
        if isinstance(disp, str):
            out[key] = f"<p class='meta'>{html.escape(disp)}</p>"
        else:
            out[key] = _png(disp.figure_)
            plt.close(disp.figure_)
    return out


def _words(lens: str) -> tuple[str, str]:
    """(what is predicted, what is observed) under ``lens``, in words for the notes."""
    if lens.startswith("class:"):
        c = lens.split(":", 1)[1]
        return f"the predicted probability of class {c}", f"the observed frequency of class {c}"
    return "the confidence (the probability of the predicted class)", "the accuracy"


class Section(NamedTuple):
    """One section of the HTML page: a title, a plain-language note and its body (HTML)."""

    title: str
    note: str
    body: str


def _overall(report: Report, figs: dict[str, str]) -> Section:
    o = report.options
    pred, obs = _words(o["lens"])
    row = report.summary.row(0, named=True)
    table = pl.DataFrame({"figure": [LABELS[f] for f in FIGURES] + ["verdict"],
                          "value" if o["ci"] is None else f"value [{o['ci']:.0%} interval]":
                              [interval(*_bounds(row, f)) for f in FIGURES] + [verdict_of(row)],
                          "what it is": [MEANINGS[f] for f in FIGURES] + [
                              f"the test's result against the tolerance {o['tolerance']:g}: {evidence(row)}"]})
    note = (f"ECE is the average gap between {pred} and {obs}, over {o['bins']} bins of the prediction, weighted by "
            f"rows ({row['n']} rows here): 0 is perfect, and 0.03 means predictions are off by 3 points on "
            "average. The smooth ECE measures the same gap without bins (see Smooth reliability), so a second "
            "opinion that no bin count moves. Brier and log loss also reward sharp predictions: use them to compare "
            "models, not against a bar.")
    return Section("Overall", note, _table(table))


def _by_group(report: Report, figs: dict[str, str]) -> Section | None:
    if report.by_group is None:
        return None
    o = report.options
    by = _by_list(o["by"])
    what = ", ".join(by)
    df = _worst_first(report.by_group, "ece")
    note = (f"The same figures within each {what}, worst ECE first. Here: "
            f"{findings(df.rows(named=True), what)}. A model can be calibrated overall and not "
            "within groups, when their errors cancel (one group over-predicted, another under-predicted). A good "
            f"result would read: every {what} calibrated, with similar ECEs. \"(small)\" after the rows: too few "
            "for the ECE alone to tell (a calibrated model's would reach the tolerance); their verdict still holds.")
    body = (_table(figure_table(df, by, ESSENTIAL, o["tolerance"]))
            + _details(f"All figures by {what}", _table(figure_table(df, by, GROUP_FIGURES))))
    return Section(f"By {what}", note, body + _disparity(report, what))


def _disparity(report: Report, what: str) -> str:
    """The "how far apart" part of the By-group section: :func:`calframe.disparity` of each summary figure."""
    o = report.options
    head = f"<h3>How far apart the {html.escape(what)} groups are</h3>"
    if report.disparity is None:
        return head + f"<p class='meta'>disparity unavailable: {html.escape(o.get('disparity_note') or '')}</p>"
    rows = {r["figure"]: r for r in report.disparity.iter_rows(named=True)}
    shown = [rows[f] for f in FIGURES if f in rows]
    one = len(_by_list(o["by"])) == 1  # "south", not "region=south", under a "worst region" header

    def group(r: dict[str, Any], end: str) -> str:
        return r[f"{end}_group"].split("=", 1)[1] if one else r[f"{end}_group"]

    cols = {"figure": [LABELS[r["figure"]] for r in shown],
            f"worst {what}": [group(r, "worst") for r in shown], "worst": [interval(*_bounds(r, "worst")) for r in shown],
            f"best {what}": [group(r, "best") for r in shown], "best": [interval(*_bounds(r, "best")) for r in shown],
            "difference": [interval(*_bounds(r, "difference")) for r in shown],
            "ratio best / worst": [interval(*_bounds(r, "ratio")) for r in shown]}
    during = "" if o["ci"] is None else (
        f" The {o['ci']:.0%} intervals come from the same bootstrap draws as the groups' own: those of the "
        "difference and the ratio are recomputed on every draw.")
    note = (f"For each figure, the worst and the best {what} (for accuracy, the lowest is the worst), the "
            "difference between them and the ratio of the best to the worst (calframe.disparity, fairlearn's "
            "group_max, group_min, difference and ratio). Good: a difference near 0 and a ratio near 1; a "
            f"ratio of 0.5 means the worst {what} errs twice as much as the best.{during}")
    note += _ranking_note(shown, what)
    return head + f"<p class='note'>{html.escape(note)}</p>" + _table(pl.DataFrame(cols))


def _ranking_note(shown: list[dict[str, Any]], what: str) -> str:
    """What the disparity ranking read (calframe.disparity's ``ranked_on``) and the groups it left out
    (``below_min_n``): a small group's value is mostly noise."""
    if not shown:
        return ""
    small = sorted({g for r in shown for g in (r.get("below_min_n") or [])})
    out = f" The {what} groups are ranked on the {shown[0]['ranked_on']}."
    if small:
        out += (f" Not ranked, with fewer than {D.MIN_N} rows: {', '.join(small)}.")
    return out


def _smooth_section(report: Report, figs: dict[str, str]) -> Section | None:
    if report.smooth is None:
        return None
    o = report.options
    pred, obs = _words(o["lens"])
    band = (f" The shaded band is the curve's pointwise {o['ci']:.0%} bootstrap band ({o['n_boot']} draws)."
            if report.smooth.lower is not None else
            f" No bootstrap band: {o['ci_note']}." if o.get("ci_note") else " No bootstrap band: this report has "
            "no intervals.")
    note = (f"The smooth reliability diagram (Błasiok & Nakkiran 2023, relplot): instead of cutting {pred} into bins, "
            f"it averages {obs} of the rows near each value with a Gaussian kernel of width σ = "
            f"{report.smooth.sigma:.4g}, chosen from the data (the width that equals the smooth ECE). The smooth ECE "
            f"({num(report.smooth.smece)} here) is the average distance of that curve to the diagonal: the binned "
            "ECE's gap without bins, so no choice of a bin count (which moves the binned ECE) plays a part. "
            f"Calibrated: the curve on the diagonal and a smooth ECE near 0; below the curve, how the predictions "
            f"are spread.{band}")
    per = ""
    if report.by_group is not None and "smece" in report.by_group.columns:
        by = _by_list(o["by"])
        df = _worst_first(report.by_group, "smece")
        per = _details(f"Smooth ECE by {', '.join(by)}, worst first",
                       _table(figure_table(df, by, ("smece", "ece"))))
    body = (f"<div class='figs'>{figs['smooth']}</div>" if "smooth" in figs else "") + per
    return Section("Smooth reliability", note, body)


def _reliability(report: Report, figs: dict[str, str]) -> Section:
    from .plot import lens_labels

    o = report.options
    by = _by_list(o["by"])
    pred, obs = _words(o["lens"])
    x, y = lens_labels(o["lens"])
    rel = report.reliability.with_columns(adds=pl.col("weight") * pl.col("gap").abs())
    rel = _worst_first(rel, "adds")
    table = pl.DataFrame({**{c: [_key(v) for v in rel[c]] for c in by},
                          "bin": [f"[{num(lo)}, {num(hi)}]" for lo, hi in zip(rel["lower"], rel["upper"])],
                          "rows": [str(v) for v in rel["n"]], x: rel["conf"], y: rel["acc"], "gap": rel["gap"],
                          "adds to ECE": rel["adds"]})
    note = (f"Each bar is one bin of {pred}; its height is {obs} among the bin's rows, and the hatched part is the "
            "gap to the diagonal. Calibrated: bars on the diagonal. Below it the predictions are too high there, "
            "above it too low; bins with few rows (the counts below each panel) are noisy. The table lists the "
            "bins that add most to the ECE first (their share of rows times their gap; the shares of a "
            f"{'group' if by else 'report'} sum to its ECE).")
    body = (f"<div class='figs'>{figs['reliability']}</div>" if "reliability" in figs else "")
    return Section("Reliability", note, body + _details("The bins, largest contribution to ECE first", _table(table)))


def _variables(report: Report, figs: dict[str, str]) -> Section | None:
    if report.variables is None:
        return None
    o = report.options
    by = _by_list(o["by"])
    pred, obs = _words(o["lens"])
    df = _worst_first(report.variables, "vece")
    leaks = "leak" in df.columns and df["leak"].drop_nulls().len() > 0
    table = df.select("variable", "kind", *by, "n", "vece", "vmce", *(["leak"] if leaks else [])).rename(
        {c: LABELS[c] for c in ("n", "vece", "vmce")})
    note = (f"VECE checks calibration along a variable: it bins the rows by the variable instead of by the "
            f"prediction and averages the gap between {pred} and {obs} over those bins. A model can have a small "
            "ECE and a large VECE when it errs in opposite directions for, say, young and old rows. Good: near 0 "
            "(below the tolerance). VMCE is the largest bin gap. Worst first."
            + (" Variables that leak the label (a copy of it, or one that gives it on nearly every row) are listed "
               "last with the reason, not ranked: their VECE would only measure the leak." if leaks else ""))
    body = [_table(table)]
    for v, curve in report.curves.items():
        summ = _worst_first(_pl(curve.summary), "vce")  # type: ignore[arg-type]
        summ = summ.rename({c: LABELS[c] for c in VCE_SUMMARY_LABELS if c in summ.columns})
        body += [f"<h3>VCE along {html.escape(v)}</h3>",
                 "<p class='note'>Smoothed curves (local logistic regression, so they stay between 0 and 1) of the "
                 f"outcome and of the prediction along {html.escape(v)}, with 95% pointwise bands. Where they "
                 "part, the model is miscalibrated for those values; v* marks the largest gap, VCE(v*), with a "
                 "bootstrap interval for where it lies (v* low, v* high, when the report has intervals). A v* at "
                 "the grid's end (the 5% or 95% quantile of the variable) says the gap is largest at the edge "
                 "of the range shown, where the curves rest on rows from one side only. Good: the curves overlap "
                 "everywhere.</p>",
                 figs.get(f"curve:{v}", ""), _table(summ)]
    return Section("Calibration along variables (VECE)", note, "\n".join(body))


def _over_time(report: Report, figs: dict[str, str]) -> Section | None:
    if report.over_time is None:
        return None
    o = report.options
    base = o["baseline"]
    against = "" if base is None else (
        f" The dashed line is the ECE of the baseline ({base if isinstance(base, str) else ' to '.join(map(str, base))}"
        "), and the table gives each window's difference to it.")
    note = (f"The ECE of each {o['every']} window of {o['time_col']}, in time order, with the window's rows below "
            f"the plot.{against} A model drifts when its windows climb away from the baseline; a window with few "
            "rows is noisy. Good: flat, near the baseline and below the tolerance. A window with no rows has no ECE.")
    body = (f"<div class='figs'>{figs['drift']}</div>" if "drift" in figs else "") + _table(window_table(report))
    return Section("Over time", note, body)


#: The page's sections, in order: each takes the report and its embedded figures and returns a Section, or None
#: when the report has nothing for it. A new section is one more function here.
SECTIONS = (_overall, _by_group, _reliability, _smooth_section, _variables, _over_time)


def _render_html(report: Report) -> str:
    figs = _figures(report)
    o = report.options
    ci = f"no bootstrap interval{': ' + o['ci_note'] if o.get('ci_note') else ''}" if o["ci"] is None else (
        f"{o['ci']:.0%} bootstrap intervals in brackets ({o.get('ci_method') or 'percentile'}, {o['n_boot']} draws, "
        f"seed {o['seed']})")
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{html.escape(report.title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(report.title)}</h1>",
        f"<p class='meta'>calframe {html.escape(_version())} &middot; "
        f"lens {html.escape(lens_phrase(o['lens']))} &middot; {o['bins']} bins &middot; {html.escape(ci)} &middot; "
        f"verdicts: tests at the {o.get('alpha', 0.05):.0%} level, tolerance {o['tolerance']:g}</p>",
        f"<p class='headline' id='headline'>{html.escape(headline(report))}</p>",
        f"<p class='rule'>{html.escape(rule(report))}</p>",
    ]
    if not can_draw():
        parts.append(f"<p class='meta' id='no-figures'>{html.escape(NO_FIGURES)}</p>")
    for make in SECTIONS:
        section = make(report, figs)
        if section is not None:
            parts += [f"<h2>{html.escape(section.title)}</h2>", f"<p class='note'>{html.escape(section.note)}</p>",
                      section.body]
    parts.append("</body></html>")
    return "\n".join(parts)


def lens_phrase(lens: str) -> str:
    """The lens a report used, in words: ``class:1 (positive class)``, ``top1 (top label)``."""
    if lens == "top1":
        return "top1 (top label: confidence of the predicted class against accuracy)"
    if lens.startswith("class:"):
        c = lens.split(":", 1)[1]
        what = "the positive class" if c == "1" else f"class {c}"
        return f"{lens} (probability of {what} against its frequency)"
    return lens


def _version() -> str:
    from ._version import __version__

    return __version__
