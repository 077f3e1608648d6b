"""The report in words: its figures as text (numbers, intervals, verdicts, group names), the headline, the
reading rule, the tables and the console view (:meth:`calframe.report.Report.to_text`)."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterator, Mapping
from typing import Any, Sequence

import polars as pl

from . import registry
from .frames import convert

#: what these functions read: a calframe.report.Report (not imported: report.py imports this module)
Report = Any


# --------------------------------------------------------------------------- words and numbers

class _FromTable(Mapping[str, str]):
    """A figure column's header (``attr="label"``) or meaning (``attr="meaning"``) as the figure table declares it
    (:func:`calframe.registry.column`), else ``others``' (the columns that are not figures: ``n``, v*, ...)."""

    def __init__(self, attr: str, others: dict[str, str]) -> None:
        self.attr, self.others = attr, others

    def __getitem__(self, name: str) -> str:
        col = registry.column(name)
        if col is not None:
            return getattr(col, self.attr)
        return self.others[name]

    def __iter__(self) -> Iterator[str]:
        cols = [c.name for f in registry.figures() for c in registry.figure_of(f).columns]
        return iter(dict.fromkeys([*cols, *self.others]))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (registry.column(name) is not None or name in self.others)


#: Column headers: the figures' from the figure table; the summary of VCE and the VECE ranking's own here.
LABELS: Mapping[str, str] = _FromTable("label", {
    "n": "rows", "v_star": "v*", "vce": "VCE(v*)", "variable": "variable", "kind": "kind", "v_star_lo": "v* low",
    "v_star_hi": "v* high", "v_star_edge": "v* at the grid's end"})

#: vce_curve's summary columns the report renames
VCE_SUMMARY_LABELS = ("n", "v_star", "vce", "v_star_lo", "v_star_hi", "v_star_edge")

#: The summary figures, in the order tables show them; ``ESSENTIAL`` are those shown by default per group.
FIGURES = ("ece", "ce_debiased", "smece", "mce", "rmsce", "brier", "log_loss", "accuracy")
#: the page's "All figures" per group: the smooth ECE per group is in the Smooth reliability section (one more
#: column of intervals would not fit 1280 pixels)
GROUP_FIGURES = tuple(f for f in FIGURES if f != "smece")
ESSENTIAL = ("ece", "ce_debiased", "mce", "brier")


def report_figures() -> tuple[str, ...]:
    """The figure table's figures on "report" (``registry.figures("report")``): the report adds their columns to
    the summary and to each group's row (:func:`calframe.report.build_report`)."""
    return registry.figures("report")


def all_figures() -> tuple[str, ...]:
    """The columns of the overall table: the summary's (:data:`FIGURES`), then those of :func:`report_figures`."""
    extra = [c for f in report_figures() for c in registry.figure_of(f).names]
    return FIGURES + tuple(c for c in dict.fromkeys(extra) if c not in FIGURES)

#: What each figure is and what a good value looks like (the Overall table's last column): the figure table's.
MEANINGS: Mapping[str, str] = _FromTable("meaning", {})


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


def bounds(row: dict[str, Any], figure: str) -> tuple[Any, Any, Any]:
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
    return ", ".join(f"{c}={value_key(row[c])}" for c in by)


def value_key(value: Any) -> str:
    return "null" if value is None else str(value)


def by_list(by: str | Sequence[str] | None) -> list[str]:
    return [] if by is None else [by] if isinstance(by, str) else list(by)


def worst_first(df: pl.DataFrame, column: str) -> pl.DataFrame:
    """Rows sorted by ``column`` descending, missing (null or NaN) values last; ties keep their order."""
    key = pl.when(pl.col(column).is_nan()).then(None).otherwise(pl.col(column))
    return df.sort(key, descending=True, nulls_last=True, maintain_order=True)


def as_polars(df: Any) -> pl.DataFrame | None:
    """An API result as an eager Polars frame (a LazyFrame collected, pandas converted)."""
    return None if df is None else convert.to_polars(df)


def headline(report: "Report") -> str:
    """One paragraph that answers "is it calibrated, for whom not, along what?", from the report's figures.

    The verdicts are the tests' (:func:`calframe.calibration_test`, the ``verdict`` struct of each row), each
    with what it came from. With ``by``: the worst group of each verdict the groups got, in its own words
    ("not calibrated for ...", then "undecided for ..."), with how many more got it and how many of them are
    small, then how many are calibrated ("calibrated in every ..." when all are).
    """
    o = report.options
    by = by_list(o["by"])
    row = report.summary.row(0, named=True)
    parts = [f"{verdict_of(row)} overall (ECE {interval(*bounds(row, 'ece'))}{_because(row)})"]
    if report.by_group is not None and report.by_group.height:
        parts += _group_phrases(worst_first(report.by_group, "ece").rows(named=True), by)
    if report.variables is not None and report.variables["vece"].drop_nulls().len():
        top = worst_first(report.variables, "vece").row(0, named=True)
        where = f" in {group_name(top, by)}" if by else ""
        parts.append(f"most miscalibrated along {top['variable']} (VECE {num(top['vece'])}{where})")
    if report.over_time is not None and report.over_time["ece"].drop_nulls().len():
        parts.append(_worst_window(report))
    text = "; ".join(parts) + "."
    return text[0].upper() + text[1:]


def _group_phrases(groups: list[dict[str, Any]], by: list[str]) -> list[str]:
    """The headline's phrases on the groups (``groups`` worst ECE first): one per verdict that is not
    "calibrated", naming its worst group (with its ratio to the best group), then the calibrated ones' count."""
    what = by[0] if len(by) == 1 else "group"
    noun = "groups" if len(by) > 1 else f"{what} groups"  # "4 region groups": a name is not pluralised
    words = [verdict_of(g) for g in groups]
    best = groups[-1]
    best_name = value_key(best[by[0]]) if len(by) == 1 else group_name(best, by)
    if all(w == "calibrated" for w in words):
        return [f"calibrated in every {what} (worst {group_name(groups[0], by)}, "
                f"ECE {interval(*bounds(groups[0], 'ece'))})"]
    parts = []
    for word in ("not calibrated", "undecided"):
        hits = [g for g, w in zip(groups, words) if w == word]
        if not hits:
            continue
        worst = hits[0]
        ratio = worst["ece"] / best["ece"] if best["ece"] and worst["ece"] is not None else None
        times = (f", {ratio:.1f}\u00d7 the best {what} ({best_name})"
                 if ratio is not None and math.isfinite(ratio) and (worst is not best or len(groups) == 1) else "")
        more = f" and {len(hits) - 1} more of {len(groups)} {noun}" if len(hits) > 1 else ""
        small = sum(map(_small, hits))
        small_text = f" ({small} of these {len(hits)} small)" if len(hits) > 1 and small else ""
        parts.append(f"{word} for {group_name(worst, by)} (ECE {interval(*bounds(worst, 'ece'))}{_because(worst)}"
                     f"{times}){more}{small_text}")
    calibrated = words.count("calibrated")
    if calibrated:
        parts.append(f"calibrated in {calibrated} of {len(groups)} {noun}")
    return parts


def _because(row: dict[str, Any]) -> str:
    """``; ECE <= 0.03 rejected, p < 0.001`` (the verdict's evidence, :func:`evidence`) or ``; small, ...``."""
    why = evidence(row)
    if not why:
        return ""
    return f"; {'small, ' if _small(row) else ''}{why}"


def _worst_window(report: "Report") -> str:
    """The headline's phrase on the windows: the worst one, and how far it is from the baseline."""
    o = report.options
    top = worst_first(report.over_time, "ece").row(0, named=True)  # type: ignore[arg-type]
    change = f", {top['ece_diff']:+.4f} against the baseline" if top.get("ece_diff") is not None else ""
    return (f"worst {o['every']} window from {_when(top[o['time_col']])}: {verdict_of(top)} "
            f"(ECE {interval(*bounds(top, 'ece'))}{_because(top)}{change})")


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
            LABELS["ece"]: [interval(*bounds(r, "ece")) if r["n"] else "no rows" for r in rows]}
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
        method = f"{o['ci_method']}, " if o.get("ci_method") else ""
        brackets = (f"Brackets: the {o['ci']:.0%} bootstrap interval ({method}{o['n_boot']} draws) of each "
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
    cols: dict[str, list[str]] = {c: [value_key(v) for v in df[c]] for c in by}
    rows = df.rows(named=True)
    cols[LABELS["n"]] = [f"{r['n']} (small)" if _small(r) else str(r["n"]) for r in rows]
    for f in figures:
        cols[LABELS[f]] = [interval(*bounds(r, f)) for r in rows]
    if tolerance is not None:
        cols["verdict"] = [verdict_of(r) for r in rows]
        if "verdict" in df.columns:
            cols[f"p (ECE <= {tolerance:g}, >= {tolerance:g})"] = [_p_pair(r) for r in rows]
    return pl.DataFrame(cols, schema={c: pl.String for c in cols})


# --------------------------------------------------------------------------- text (the console)

#: The figures the console shows without ``--wide``, overall and per group (the HTML page shows them all).
CONSOLE_OVERALL = ("ece", "ce_debiased", "brier")
CONSOLE_GROUPS = ("ece", "ce_debiased")


def render_text(report: "Report", wide: bool, width: int) -> str:
    import textwrap

    o = report.options
    by = by_list(o["by"])
    out = [textwrap.fill(headline(report), width), textwrap.fill(rule(report), width), ""]
    config = dict(tbl_hide_column_data_types=True, tbl_hide_dataframe_shape=True, fmt_str_lengths=100,
                  tbl_rows=-1, tbl_cols=-1, float_precision=4, tbl_width_chars=10 * width if wide else width)
    with pl.Config(**config):  # type: ignore[arg-type]
        out += ["Overall", str(figure_table(report.summary, (), all_figures() if wide else CONSOLE_OVERALL)), ""]
        if report.by_group is not None:
            df = worst_first(report.by_group, "ece")
            out += [f"By {', '.join(by)}, worst ECE first",
                    str(figure_table(df, by, FIGURES if wide else CONSOLE_GROUPS, o["tolerance"])), ""]
        if report.variables is not None:
            cols = ["variable", "kind", *by, "n", "vece", "vmce"] if wide else ["variable", *by, "vece", "vmce"]
            cols += ["leak"] if "leak" in report.variables.columns and report.variables["leak"].drop_nulls().len() else []
            table = worst_first(report.variables, "vece").select(cols)
            out += ["Along variables, worst VECE first", str(table.rename({c: LABELS[c] for c in table.columns
                                                                          if c in LABELS and c not in by})), ""]
        if report.over_time is not None:
            out += [f"Over time: ECE per {o['every']} window of {o['time_col']}", str(window_table(report)), ""]
    if not wide:
        out.append("(essential columns; --wide shows every figure)")
    return "\n".join(out).rstrip() + "\n"

