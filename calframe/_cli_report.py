"""``calframe report``: the command, its time column (``--time-col``, ``--time-format``) and its gate
(``--fail-above``, ``--on``). See :mod:`calframe.cli`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, NamedTuple

import polars as pl

from ._cli_files import (
    EXIT_BREACH, EXIT_OK, DataError, UsageError, check_outputs, expand, reading, scan_all, staged_outputs, parse_prob,
    split_names,
)
from . import registry
from ._report_text import all_figures
from .frames.convert import collect


# --------------------------------------------------------------------------- the time column (report --time-col)

#: ISO 8601 as ``--time-col`` reads text without ``--time-format``: a date, or a date and time (``T`` or a space
#: between them, seconds and their fraction optional), then optionally ``Z`` or a UTC offset (+02, +0200, +02:00)
_ISO_8601 = (r"^[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?"
             r"(?:Z|[+-][0-9]{2}(?::?[0-9]{2})?)?)?$")
_HAS_TIME = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ]"
_HAS_OFFSET = r"[T ][0-9:.]+(?:Z|[+-][0-9:]+)$"
#: strftime directives of a time of day (a --time-format without one parses dates)
_TIME_DIRECTIVES = r"%[-_0^#]?[0-9]*[.:#]?[HIklMSTRrfpPzZcsX]"


def time_column(frame: pl.LazyFrame, column: str | None, fmt: str | None) -> pl.LazyFrame:
    """``frame`` with the ``--time-col`` column parsed when it holds text (a CSV file's times): ISO 8601 dates
    (``2024-01-31``: a Date) or date-times (``2024-01-31T13:05:00``, with ``Z`` or an offset: UTC), or with
    ``fmt`` (``--time-format``, strftime directives: ``%d/%m/%Y %H:%M``). Text that does not parse is a
    DataError naming the column and how many rows; a column that is neither text nor a date or datetime too."""
    import re

    from ._errors import rows

    if column is None:
        if fmt is not None:
            raise UsageError("--time-format tells how the --time-col column's text is written: give --time-col")
        return frame
    schema = frame.collect_schema()
    if column not in schema:
        return frame  # the report names the missing column, with the frame's columns
    dtype = schema[column]
    if isinstance(dtype, (pl.Date, pl.Datetime)):
        if fmt is not None:
            raise UsageError(f"--time-format parses text, and the time column {column!r} already holds {dtype}: "
                             "drop --time-format")
        return frame
    if dtype != pl.String:
        raise DataError(f"the time column {column!r} (--time-col) holds {dtype}, not dates, date-times or text "
                        "(ISO 8601, or --time-format): give a column of dates or times")
    text = pl.col(column).str.strip_chars()
    given = text.is_not_null() & (text != "")
    how = f"--time-format {fmt!r}" if fmt is not None else "ISO 8601 (2024-01-31, 2024-01-31T13:05:00)"
    if fmt is not None:
        parsed = (text.str.to_datetime(fmt, strict=False, time_unit="us") if re.search(_TIME_DIRECTIVES, fmt)
                  else text.str.to_date(fmt, strict=False))
    else:
        stats = frame.select(bad=(given & ~text.str.contains(_ISO_8601)).sum(),
                             example=text.filter(given & ~text.str.contains(_ISO_8601)).first(),
                             times=(given & text.str.contains(_HAS_TIME)).sum(),
                             offsets=(given & text.str.contains(_HAS_OFFSET)).sum())
        bad, example, times, offsets = stats.collect().row(0)
        if bad:
            raise DataError(f"the time column {column!r} (--time-col) holds text that is not an ISO 8601 date or "
                            f"date-time in {rows(bad)} (e.g. {example!r}); give its format with --time-format, "
                            "e.g. --time-format '%d/%m/%Y %H:%M'")
        if offsets and offsets != times:
            raise DataError(f"the time column {column!r} (--time-col) mixes times with a UTC offset ({rows(offsets)}) "
                            f"and without one ({rows(times - offsets)}): write them all one way")
        full = (text.str.replace(" ", "T").str.replace(r"Z$", "+00:00")
                .str.replace(r"^([0-9]{4}-[0-9]{2}-[0-9]{2})$", "${1}T00:00:00")
                .str.replace(r"T([0-9]{2}:[0-9]{2})($|[+-])", "T${1}:00${2}"))
        parsed = (text.str.to_date("%Y-%m-%d", strict=False) if not times else
                  full.str.to_datetime("%Y-%m-%dT%H:%M:%S%.f" + ("%z" if offsets else ""), strict=False,
                                       time_unit="us"))
    check = frame.select(bad=(given & parsed.is_null()).sum(), example=text.filter(given & parsed.is_null()).first())
    bad, example = check.collect().row(0)
    if bad:
        raise DataError(f"the time column {column!r} (--time-col) holds text that is not a date or time as "
                        f"{how} in {rows(bad)} (e.g. {example!r})")
    return frame.with_columns(pl.when(given).then(parsed).alias(column))


# --------------------------------------------------------------------------- gating (report --fail-above)

#: Figures ``--fail-above`` judges: the report's summary columns and those of the figure table's figures on
#: "report" (overall and per ``--by`` group) that are better lower, and the variable figures, written
#: ``vece:VARIABLE`` / ``vmce:VARIABLE``.
GATED_FIGURES = tuple(c for c in all_figures() if c != "smece" and registry.column(c).better == "lower")
VARIABLE_FIGURES = ("vece", "vmce")


class Limit(NamedTuple):
    figure: str
    variable: str | None
    limit: float

    def __str__(self) -> str:
        return f"{self.figure}:{self.variable}" if self.variable else self.figure


#: A ``--fail-above`` limit as written: a non-negative decimal number (0.05, .05, 5e-2), nothing else: no sign,
#: no ``_`` digit groups, no spaces (Python's ``float`` would read ``1_0`` as 10 and `` 0.05`` as 0.05).
_NUMBER = r"(?a)(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"


def parse_limit(text: str) -> Limit:
    """``FIGURE=LIMIT`` or ``vece:VARIABLE=LIMIT`` (argparse type of ``--fail-above``), LIMIT a non-negative
    decimal number, without spaces.

    >>> parse_limit("vece:age=3e-2")
    Limit(figure='vece', variable='age', limit=0.03)
    """
    import math
    import re

    name, eq, value = text.partition("=")
    figure, colon, variable = name.partition(":")
    limit = float(value) if re.fullmatch(_NUMBER, value) else math.nan
    known = f"figures: {', '.join(GATED_FIGURES)}, or vece:VARIABLE, vmce:VARIABLE"
    spaced = any(part != part.strip() for part in (figure, variable))
    if not eq or not figure or not math.isfinite(limit) or spaced:
        raise argparse.ArgumentTypeError(f"takes FIGURE=LIMIT without spaces, LIMIT a non-negative number written "
                                         f"plainly, e.g. ece=0.05, ece=5e-2 or vece:age=0.03; got {text!r}")
    if figure in VARIABLE_FIGURES:
        if not variable:
            raise argparse.ArgumentTypeError(f"{figure} needs a variable, e.g. {figure}:age={value}; got {text!r}")
    elif figure not in GATED_FIGURES or colon:
        raise argparse.ArgumentTypeError(f"unknown figure {name!r} in {text!r}; {known}")
    return Limit(figure, variable or None, limit)


def _test_breaches(lim: Limit, rep: Any, frame: Any, args: argparse.Namespace) -> list[str]:
    """``--on test``: one line per group, window (and overall) that the verdict's test calls "not calibrated" with the
    limit as its tolerance (:func:`calframe.calibration_test`: the data reject "population ECE <= LIMIT" at
    the 5% level). At the report's own tolerance these are the report's verdicts."""
    import math

    from . import api
    from .report import evidence, group_name

    by = split_names(args.by) or []
    time_col = rep.options["time_col"]
    if math.isclose(lim.limit, rep.options["tolerance"]):
        tables = [rep.summary] + ([rep.by_group] if rep.by_group is not None else [])
        tables += [rep.over_time.filter(pl.col("n") > 0)] if rep.over_time is not None else []
        rows = [r for t in tables for r in t.iter_rows(named=True)]
    else:
        from .monitoring import window_tests
        from .verdicts import FIELDS

        options = dict(prob=parse_prob(args.prob), label=args.label, bins=args.bins, lens=rep.options["lens"],
                       nulls=args.nulls, tolerance=lim.limit, alpha=rep.options["alpha"], seed=args.seed)
        tests = [api.calibration_test(frame, **options)] + ([api.calibration_test(frame, by=by, **options)]
                                                            if by else [])
        if time_col is not None:
            tests.append(window_tests(frame, time_col, every=rep.options["every"], **options))
        rows = [{**r, "verdict": {"result": r["verdict"], **{f: r[f] for f in FIELDS[1:]}}}
                for t in tests for r in collect(t).iter_rows(named=True)]
    lines = []
    for row in rows:
        if row["verdict"]["result"] == "not calibrated":
            group = group_name(row, [c for c in by if c in row] or [c for c in (time_col,) if c and c in row])
            lines.append(f"{lim}{f' [{group}]' if group else ''}: not calibrated at tolerance {lim.limit:g} "
                         f"({evidence(row)})")
    return lines


def _breaches(limits: list[Limit], rep: Any, frame: Any, args: argparse.Namespace) -> list[str]:
    """One line per figure (and group, or window) over its limit: judged on the value, or with ``--on upper`` on
    the upper bound of the report's interval. Summary figures are judged overall and in every ``--by`` group, and
    ``ece`` also in every ``--time-col`` window that has rows; ``vece``/``vmce`` in every group (overall without
    ``--by``). A NaN figure is a breach (it proves nothing). With ``--on test``, ``ece=LIMIT`` is judged by the
    verdict's test with LIMIT as the tolerance (:func:`_test_breaches`); other figures are judged on the value."""
    from . import api
    from .report import group_name

    by = split_names(args.by) or []
    upper = args.on == "upper"
    time_col = rep.options["time_col"]
    lines = []
    for lim in limits:
        if args.on == "test" and lim.figure == "ece" and lim.variable is None:
            lines += _test_breaches(lim, rep, frame, args)
            continue
        if lim.variable is None:
            tables = [rep.summary] + ([rep.by_group] if rep.by_group is not None else [])
            if lim.figure == "ece" and rep.over_time is not None:
                tables.append(rep.over_time.filter(pl.col("n") > 0))
        else:
            fn = api.vece if lim.figure == "vece" else api.vmce
            tables = [fn(frame, lim.variable, prob=parse_prob(args.prob), label=args.label, by=by or None,
                         lens=rep.options["lens"], nulls=args.nulls, ci=rep.options["ci"] if upper else None,
                         n_boot=args.n_boot, seed=args.seed)]
            tables = [collect(t) for t in tables]
        column = f"{lim.figure}_hi" if upper else lim.figure
        for table in tables:
            for row in table.iter_rows(named=True):
                got = row[column]
                if got is None or not got <= lim.limit:
                    keys = [c for c in by if c in row] or [c for c in (time_col,) if c and c in row]
                    group = group_name(row, keys)
                    lines.append(f"{lim}{f' [{group}]' if group else ''}: {'upper bound ' if upper else ''}"
                                 f"{'missing' if got is None else f'{got:.6g}'} > limit {lim.limit:g}")
    return lines


# --------------------------------------------------------------------------- the report command


def run_report(args: argparse.Namespace) -> int:
    from .report import NO_FIGURES, build_report, can_draw, lens_phrase

    if args.on == "upper" and args.no_ci:
        raise UsageError("--on upper judges the upper bound of the interval: drop --no-ci (or use --on value)")
    if args.time_col is None and (args.every is not None or args.baseline is not None
                                  or args.time_format is not None):
        raise UsageError("--every, --baseline and --time-format concern the time windows: give the time column "
                         "with --time-col")
    files = expand(args.files)
    outputs = [(Path(p), what) for p, what in ((args.out, "the HTML report"), (args.json, "the JSON figures"))
               if p and p != "-"]
    check_outputs(outputs, files, args.overwrite)
    with reading(", ".join(map(repr, files))):  # each figure reads the columns it needs; those that can stream, do
        frame = time_column(scan_all(files), args.time_col, args.time_format)
    prob, by, variables = parse_prob(args.prob), split_names(args.by), split_names(args.vece) or []
    # the interval: --ci asks for it, --no-ci drops it, and by default it is computed within a budget (report.py)
    ci = None if args.no_ci else args.ci if args.ci is not None else 0.95 if args.on == "upper" else "auto"
    baseline = split_names(args.baseline)
    with reading(", ".join(map(repr, files))):
        rep = build_report(frame, prob=prob, label=args.label, by=by, variables=variables, bins=args.bins,
                           lens=args.lens, ci=ci, n_boot=args.n_boot, seed=args.seed, nulls=args.nulls,
                           tolerance=args.tolerance, title=args.title or f"Calibration report: {', '.join(args.files)}",
                           time_col=args.time_col, every=args.every or "1d",
                           baseline=None if not baseline else baseline[0] if len(baseline) == 1 else tuple(baseline))
        # the gate's figures too, before anything is written: an error in them (a --fail-above variable that is
        # not a column) leaves no output behind
        breaches = _breaches(args.fail_above or [], rep, frame, args)
    json_text = rep.to_json() if args.json else None
    html_text = rep.to_html() if args.out else None
    with staged_outputs() as out:  # both files, or neither
        for path, text in ((args.json, json_text), (args.out, html_text)):
            if text is not None and path != "-":
                out.stage(Path(path)).write_text(text)
    if args.json == "-":
        print(json_text)
    for path in (args.out, args.json):
        if path and path != "-":
            print(f"calframe: wrote {path}", file=sys.stderr)
    if args.out and not can_draw():
        print(f"calframe: {NO_FIGURES}", file=sys.stderr)
    lens = f"lens {lens_phrase(rep.options['lens'])}"
    if args.out or args.json:
        print(f"calframe: {lens}", file=sys.stderr)
    else:
        print(lens[0].upper() + lens[1:])
        print(rep.to_text(wide=args.wide), end="")
    for line in breaches:
        print(f"calframe: limit breached: {line}", file=sys.stderr)
    return EXIT_BREACH if breaches else EXIT_OK
