"""The report as one self-contained HTML page (:meth:`calframe.report.Report.to_html`): its sections, tables
and embedded figures (PNG, when matplotlib is installed)."""

from __future__ import annotations

import base64
import copy
import html
import io
import re
from typing import Any, NamedTuple

import polars as pl

from . import disparities as D
from ._report_text import (
    ESSENTIAL, FIGURES, GROUP_FIGURES, LABELS, MEANINGS, all_figures, VCE_SUMMARY_LABELS, VERDICTS, evidence, figure_table,
    findings, headline, interval, num, rule, verdict_of, window_table, bounds, by_list, value_key, as_polars, worst_first,
)

#: what these functions read: a calframe.report.Report (not imported: report.py imports this module)
Report = Any


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
    if report.corp is not None:
        try:
            out["corp"] = plot.CorpReliabilityDisplay(report.corp, by=report.options.get("by") or [], lens=lens).plot()
        except Exception as exc:
            out["corp"] = f"CORP reliability diagram unavailable: {exc}"
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
                *(["smooth"] if report.smooth is not None else []), *(["corp"] if report.corp is not None else []),
                *(["drift"] if report.over_time is not None else [])]
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
    shown = [f for f in all_figures() if f in row]
    table = pl.DataFrame({"figure": [LABELS[f] for f in shown] + ["verdict"],
                          "value" if o["ci"] is None else f"value [{o['ci']:.0%} interval]":
                              [interval(*bounds(row, f)) for f in shown] + [verdict_of(row)],
                          "what it is": [MEANINGS[f] for f in shown] + [
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
    by = by_list(o["by"])
    what = ", ".join(by)
    df = worst_first(report.by_group, "ece")
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
    one = len(by_list(o["by"])) == 1  # "south", not "region=south", under a "worst region" header

    def group(r: dict[str, Any], end: str) -> str:
        return r[f"{end}_group"].split("=", 1)[1] if one else r[f"{end}_group"]

    cols = {"figure": [LABELS[r["figure"]] for r in shown],
            f"worst {what}": [group(r, "worst") for r in shown], "worst": [interval(*bounds(r, "worst")) for r in shown],
            f"best {what}": [group(r, "best") for r in shown], "best": [interval(*bounds(r, "best")) for r in shown],
            "difference": [interval(*bounds(r, "difference")) for r in shown],
            "ratio best / worst": [interval(*bounds(r, "ratio")) for r in shown]}
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
        by = by_list(o["by"])
        df = worst_first(report.by_group, "smece")
        per = _details(f"Smooth ECE by {', '.join(by)}, worst first",
                       _table(figure_table(df, by, ("smece", "ece"))))
    body = (f"<div class='figs'>{figs['smooth']}</div>" if "smooth" in figs else "") + per
    return Section("Smooth reliability", note, body)


def _corp_section(report: Report, figs: dict[str, str]) -> Section | None:
    if report.corp is None:
        return None
    o = report.options
    pred, obs = _words(o["lens"])
    bands = (f" The grey band is the consistency band: where the curve of a calibrated model would lie ({o['ci']:.0%}, "
             f"{o['n_boot']} draws of the outcomes as Bernoulli({pred})); the blue band is the curve's {o['ci']:.0%} "
             "confidence band (rows resampled). A curve outside the grey band is miscalibrated there."
             if "consistency_lo" in report.corp.columns else " No bands: this report has no intervals.")
    note = (f"The CORP reliability diagram (Dimitriadis, Gneiting & Jordan 2021): {obs} against {pred} by isotonic "
            "regression, the best increasing recalibration of the predictions, so no bins to choose." + bands)
    return Section("CORP reliability", note, f"<div class='figs'>{figs['corp']}</div>" if "corp" in figs else "")


def _reliability(report: Report, figs: dict[str, str]) -> Section:
    from .plot import lens_labels

    o = report.options
    by = by_list(o["by"])
    pred, obs = _words(o["lens"])
    x, y = lens_labels(o["lens"])
    rel = report.reliability.with_columns(adds=pl.col("weight") * pl.col("gap").abs())
    rel = worst_first(rel, "adds")
    table = pl.DataFrame({**{c: [value_key(v) for v in rel[c]] for c in by},
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
    by = by_list(o["by"])
    pred, obs = _words(o["lens"])
    df = worst_first(report.variables, "vece")
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
        summ = worst_first(as_polars(curve.summary), "vce")  # type: ignore[arg-type]
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
SECTIONS = (_overall, _by_group, _reliability, _smooth_section, _corp_section, _variables, _over_time)


def render_html(report: Report) -> str:
    figs = _figures(report)
    o = report.options
    ci = f"no bootstrap interval{': ' + o['ci_note'] if o.get('ci_note') else ''}" if o["ci"] is None else (
        f"{o['ci']:.0%} bootstrap intervals in brackets ({o['ci_method'] + ', ' if o.get('ci_method') else ''}"
        f"{o['n_boot']} draws, "
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
