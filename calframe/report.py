"""A self-contained calibration report: figures as data (JSON) and as one HTML page.

``build_report`` computes every figure from one frame through the public API;
``to_html`` renders them with tables and, when matplotlib is installed (the
``plot`` extra), embedded PNG reliability diagrams and variable curves.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import html
import io
import json
import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import polars as pl

from . import api
from . import lenses as L


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

    def to_dict(self) -> dict[str, Any]:
        def rows(df: pl.DataFrame | None) -> list[dict[str, Any]] | None:
            if df is None:
                return None
            return [{k: _json_value(v) for k, v in r.items()} for r in df.iter_rows(named=True)]

        return {
            "title": self.title,
            "options": self.options,
            "summary": rows(self.summary),
            "by_group": rows(self.by_group),
            "reliability": rows(self.reliability),
            "variables": rows(self.variables),
            "vce": {v: rows(c.summary if isinstance(c.summary, pl.DataFrame) else pl.from_pandas(c.summary))
                    for v, c in self.curves.items()},
        }

    def to_json(self, indent: int = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def to_html(self) -> str:
        return _render_html(self)


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


def build_report(
    frame: Any,
    *,
    prob: str | Sequence[str] | None = None,
    label: str | None = None,
    by: str | Sequence[str] | None = None,
    variables: Sequence[str] = (),
    bins: int = 15,
    lens: str | None = None,
    ci: float | None = 0.95,
    n_boot: int = 200,
    seed: int = 0,
    nulls: str = "raise",
    title: str = "Calibration report",
) -> Report:
    """Compute the figures of a report (summary, per group, reliability, VECE ranking, VCE curves).

    Every calibration figure uses one lens: ``lens``, or by default (None)
    ``class:1`` for a single probability column (binary input) and ``top1``
    for class probabilities (SPEC §8 "Default lens"). The lens used is
    ``report.options["lens"]`` and is printed in the HTML page.
    """
    lens = L.lens_used(frame, prob, lens, func="report")
    common = dict(prob=prob, label=label, nulls=nulls, lens=lens)
    summary = api.summary(frame, bins=bins, ci=ci, n_boot=n_boot, seed=seed, **common)  # type: ignore[arg-type]
    by_group = None
    if by is not None:
        by_group = api.summary(frame, bins=bins, by=by, ci=ci, n_boot=n_boot, seed=seed, **common)  # type: ignore
    reliability = api.reliability(frame, bins=bins, by=by, **common)  # type: ignore[arg-type]
    variables_df = None
    curves: dict[str, Any] = {}
    if variables:
        variables_df = api.vece_rank(frame, list(variables), by=by, **common)  # type: ignore[arg-type]
        kinds = dict(zip(variables_df["variable"].to_list(), variables_df["kind"].to_list())) if isinstance(
            variables_df, pl.DataFrame) else {}
        for v in variables:
            if kinds.get(v) == "numeric":
                curves[v] = api.vce_curve(frame, v, by=by, n_points=200, **common)  # type: ignore
    return Report(title, {"prob": prob, "label": label, "by": by, "variables": list(variables), "bins": bins,
                          "lens": lens, "ci": ci, "n_boot": n_boot, "seed": seed},
                  _pl(summary), _pl(by_group), _pl(reliability), _pl(variables_df), curves)


def _pl(df: Any) -> pl.DataFrame | None:
    if df is None or isinstance(df, pl.DataFrame):
        return df
    return pl.from_pandas(df)


# --------------------------------------------------------------------------- HTML

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;color:#1b1f24}
h1{font-size:1.6rem;margin-bottom:.2rem} h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #d0d7de}
table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0} th,td{padding:.25rem .6rem;text-align:right}
th{background:#f6f8fa;border-bottom:1px solid #d0d7de} td:first-child,th:first-child{text-align:left}
tr:nth-child(even) td{background:#fafbfc} .meta{color:#57606a;font-size:.85rem} img{max-width:100%}
.figs{display:flex;flex-wrap:wrap;gap:1rem} .scroll{overflow-x:auto}
"""


def _table(df: pl.DataFrame, max_rows: int = 200) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in df.columns)
    body = []
    for row in df.head(max_rows).iter_rows():
        cells = "".join(f"<td>{_cell(v)}</td>" for v in row)
        body.append(f"<tr>{cells}</tr>")
    more = f"<p class='meta'>{df.height - max_rows} more rows not shown</p>" if df.height > max_rows else ""
    return (f"<div class='scroll'><table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
            f"{more}")


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return "" if not math.isfinite(v) else f"{v:.4f}"
    return html.escape(str(v))


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return "<img alt='figure' src='data:image/png;base64," + base64.b64encode(buf.getvalue()).decode() + "'>"


def _figures(report: Report) -> dict[str, str]:
    """Embedded PNGs, when matplotlib and calframe.plot are available."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        from . import plot
    except Exception:  # the plot extra is optional
        return {}
    out = {}
    try:
        disp = plot.ReliabilityDisplay(report.reliability, by=report.options.get("by"),
                                       lens=report.options["lens"]).plot()
        out["reliability"] = _png(disp.figure_)
        plt.close(disp.figure_)
    except Exception as exc:  # a figure must never break the report
        out["reliability"] = f"<p class='meta'>reliability diagram unavailable: {html.escape(str(exc))}</p>"
    for v, curve in report.curves.items():
        try:
            disp = plot.VariableCurveDisplay(curve).plot()
            out[f"curve:{v}"] = _png(disp.figure_)
            plt.close(disp.figure_)
        except Exception as exc:
            out[f"curve:{v}"] = f"<p class='meta'>curve for {html.escape(v)} unavailable: {html.escape(str(exc))}</p>"
    return out


def _render_html(report: Report) -> str:
    figs = _figures(report)
    o = report.options
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{html.escape(report.title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(report.title)}</h1>",
        f"<p class='meta'>calframe {html.escape(_version())} &middot; "
        f"lens {html.escape(lens_phrase(o['lens']))} &middot; "
        f"{o['bins']} bins &middot; bootstrap {o['n_boot']} draws, seed {o['seed']}</p>",
        "<h2>Overall</h2>", _table(report.summary),
    ]
    if report.by_group is not None:
        by = o["by"] if isinstance(o["by"], str) else ", ".join(o["by"])
        parts += [f"<h2>By {html.escape(by)}</h2>", _table(report.by_group)]
    parts += ["<h2>Reliability</h2>"]
    if "reliability" in figs:
        parts.append(f"<div class='figs'>{figs['reliability']}</div>")
    parts.append(_table(report.reliability))
    if report.variables is not None:
        parts += ["<h2>Calibration along variables (VECE)</h2>", _table(report.variables)]
        for v, curve in report.curves.items():
            summ = _pl(curve.summary)
            parts += [f"<h3>VCE along {html.escape(v)}</h3>", figs.get(f"curve:{v}", ""), _table(summ)]
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
    from . import __version__

    return __version__
