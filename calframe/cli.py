"""The ``calframe`` command (``python -m calframe``): batch jobs over Parquet, CSV and Arrow IPC files.

    calframe report scores.parquet --prob p --label y --by region --vece age,income --out report.html [--json figs.json]
    calframe report scores.parquet --by region --vece age        # headline and essential figures (--wide: all)
    calframe fit cal.parquet --method tree --variable age -o rec.calib
    calframe apply rec.calib 'scores/*.parquet' -o out/
    calframe demo

Exit codes: 0 success, 3 a ``report --fail-above`` limit breached (the outputs
are written first), 2 usage errors (bad arguments or parameters, an output
that would overwrite an input, collide with another output, or replace an
existing file without ``--overwrite``), 1 data errors (a file missing,
unreadable or holding bad values, a signature that cannot be verified), 130
interrupted (from the start: calframe._startup). Every error is one line on
standard error, never a traceback. Each output is written to a temporary file
in its directory, and the outputs are renamed into place together once all
are complete: each is whole or absent, and a command that fails leaves none
of its outputs (docs/spec.md section 8, "Command line: outputs and errors").
``fit --key-env NAME`` signs the recalibrator with the key in ``$NAME``,
``apply --key-env NAME`` verifies it.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import os
import secrets
import sys
from pathlib import Path
from typing import Any, Iterator, NamedTuple, NoReturn

import polars as pl

from ._errors import CalframeError, ParameterError

EXIT_OK, EXIT_DATA, EXIT_USAGE, EXIT_BREACH, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


class DataError(CalframeError, ValueError):
    """A file problem (missing, unreadable, unknown format, corrupt contents): exit 1."""


class UsageError(CalframeError, ValueError):
    """A bad command line (an argument, a ``--param``, an output path): exit 2."""


# --------------------------------------------------------------------------- files


def expand(patterns: list[str]) -> list[str]:
    """Files named by paths and globs, in order, each once (the same file under two spellings counts once)."""
    out: list[str] = []
    seen: set[str] = set()
    for pat in patterns:
        hits = sorted(glob.glob(pat)) if any(ch in pat for ch in "*?[") else [pat]
        if not hits:
            raise DataError(f"no file matches {pat!r}")
        for h in hits:
            if not os.path.isfile(h):
                raise DataError(f"no such file: {h!r}")
            real = os.path.realpath(h)
            if real not in seen:
                seen.add(real)
                out.append(h)
    return out


def _first_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return lines[0] if lines else type(exc).__name__


@contextlib.contextmanager
def reading(what: Any) -> Iterator[None]:
    """Turn a reader's exception (Polars, pyarrow, OS) into a one-line DataError naming ``what``."""
    import pyarrow as pa

    try:
        yield
    except CalframeError:
        raise
    except (pl.exceptions.PolarsError, pa.ArrowException, OSError) as exc:
        raise DataError(f"cannot read {what}: {_first_line(exc)}") from None


def scan(path: str) -> pl.LazyFrame:
    suffix = Path(path).suffix.lower()
    with reading(repr(path)):
        if suffix in (".parquet", ".pq"):
            return pl.scan_parquet(path)
        if suffix in (".csv", ".txt"):
            return pl.scan_csv(path)
        if suffix in (".arrow", ".ipc", ".feather"):
            return pl.scan_ipc(path)
    raise DataError(f"unknown file type {suffix!r} for {path!r}; use .parquet, .csv or .arrow/.ipc/.feather")


def scan_all(files: list[str]) -> pl.LazyFrame:
    """The files (from :func:`expand`), concatenated, not read yet."""
    frames = [scan(f) for f in files]
    return frames[0] if len(frames) == 1 else pl.concat(frames, how="vertical_relaxed")


def read(files: list[str]) -> pl.DataFrame:
    """The files (from :func:`expand`), concatenated and collected (reader errors become DataError)."""
    with reading(", ".join(map(repr, files))):
        return scan_all(files).collect()


# --------------------------------------------------------------------------- outputs


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return a.resolve() == b.resolve()


def check_outputs(outputs: list[tuple[Path, str]], inputs: list[str], overwrite: bool) -> None:
    """Refuse, before anything is written, outputs that are an input, collide with each other, or exist already.

    ``outputs`` pairs each file the command will write with what it holds (for the message).
    """
    for i, (out, origin) in enumerate(outputs):
        for f in inputs:
            if _same_file(out, Path(f)):
                raise UsageError(f"{origin} would be written to {str(out)!r}, which is the input {f!r}; "
                                 "choose another output path (an output never replaces an input)")
        for prev, prev_origin in outputs[:i]:
            if _same_file(out, prev):
                raise UsageError(f"{prev_origin} and {origin} would both be written to {str(out)!r}; "
                                 "give each output its own path (rename an input, or write to separate directories)")
        if out.is_dir():
            raise UsageError(f"the output {str(out)!r} is a directory, not a file; choose another output path")
        if not overwrite and (out.exists() or out.is_symlink()):
            raise UsageError(f"the output {str(out)!r} exists; pass --overwrite to replace it")


def _temporary(path: Path, suffix: str = "") -> Path:
    """A fresh hidden name next to ``path``: ``.<name>.<random>.tmp<suffix>``."""
    return path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp{suffix}"


class Outputs:
    """The files a command writes: each to a hidden temporary file beside its final name (:meth:`stage`), all
    renamed into place together once every one is complete (:meth:`commit`). On a failure (an error, Ctrl-C)
    :meth:`discard` removes the temporary files and the directories made for them, so a failed command leaves
    nothing behind and an existing output stays as it was. Use it through :func:`staged_outputs`."""

    def __init__(self) -> None:
        self.created: list[Path] = []  # directories made for the outputs, parents first
        self.staged: list[tuple[Path, Path]] = []  # (temporary file, final name)

    def directory(self, path: Path) -> None:
        """Make the directory ``path`` and its missing parents (:meth:`discard` removes those it made)."""
        missing = []
        while not os.path.lexists(path) and path != path.parent:
            missing.append(path)
            path = path.parent
        for d in reversed(missing):
            with contextlib.suppress(FileExistsError):
                d.mkdir()
                self.created.append(d)

    def stage(self, path: Path, suffix: str = "", tmp: Path | None = None) -> Path:
        """A temporary path that :meth:`commit` renames to ``path``: ``tmp``, or a fresh hidden name next to
        ``path`` ending in ``suffix`` (for writers that choose the format by suffix)."""
        self.directory(path.parent)
        tmp = _temporary(path, suffix) if tmp is None else tmp
        self.staged.append((tmp, path))
        return tmp

    def commit(self) -> None:
        """Rename every staged file to its final name."""
        while self.staged:
            tmp, path = self.staged[0]
            os.replace(tmp, path)
            self.staged.pop(0)

    def discard(self) -> None:
        """Remove the staged files not yet renamed, then the directories made for them (those left empty)."""
        for tmp, _ in self.staged:
            with contextlib.suppress(OSError):
                tmp.unlink()
        self.staged.clear()
        for d in reversed(self.created):
            with contextlib.suppress(OSError):
                d.rmdir()
        self.created.clear()


@contextlib.contextmanager
def staged_outputs() -> Iterator[Outputs]:
    """:class:`Outputs` committed when the block ends, discarded if it raises (anything, KeyboardInterrupt too)."""
    out = Outputs()
    try:
        yield out
        out.commit()
    except BaseException:
        out.discard()
        raise


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file (whole or absent)."""
    with staged_outputs() as out:
        out.stage(path).write_text(text)


def recalibrator_files(path: Path) -> list[Path]:
    """The files a saved recalibrator occupies: ``path`` itself (``*.parquet``) or the two files of its directory."""
    from .recalibrate.base import ARRAYS_FILE, HEADER_FILE

    return [path] if path.suffix == ".parquet" or path.is_file() else [path / ARRAYS_FILE, path / HEADER_FILE]


def save_recalibrator(rec: Any, path: Path, key: str | None = None) -> None:
    """``rec.save(path, key=key)`` through temporary files: a ``*.parquet`` file is renamed into place whole; a
    directory's two files are written in full to a temporary subdirectory, then each renamed into place."""
    import shutil

    with staged_outputs() as out:
        if path.suffix == ".parquet":
            rec.save(out.stage(path, ".parquet"), key=key)
            return
        out.directory(path)
        tmp_dir = _temporary(path / "save")
        try:
            rec.save(tmp_dir, key=key)
            for final in recalibrator_files(path):
                out.stage(final, tmp=tmp_dir / final.name)
            out.commit()
        finally:
            shutil.rmtree(tmp_dir, ignore_errors=True)


def key_from_env(name: str | None) -> str | None:
    """The signing key in the environment variable ``name`` (``--key-env NAME``), None without the option.
    A variable that is not set, or empty, is a usage error: the key itself never appears on the command line
    (where ``ps`` and the shell history would show it) nor in a message."""
    if name is None:
        return None
    key = os.environ.get(name)
    if key is None:
        raise UsageError(f"--key-env {name}: the environment variable {name!r} is not set; set it to the signing "
                         f"key (e.g. from your secret store) before running calframe")
    if not key:
        raise UsageError(f"--key-env {name}: the environment variable {name!r} is empty; set it to the signing key")
    return key


def load_recalibrator(path: str, key_env: str | None) -> Any:
    """``calframe.load(path)``, verified with the key in ``$key_env`` when given; a signature that cannot be
    verified is a DataError saying what to do on the command line (``--key-env``, not ``key=``)."""
    from . import api
    from ._errors import RecalibratorFileError

    key = key_from_env(key_env)
    with reading(repr(path)):
        try:
            return api.load(Path(path), key=key)
        except FileNotFoundError:
            raise DataError(f"no recalibrator at {path!r}") from None
        except RecalibratorFileError as exc:
            if exc.reason == "signed":
                raise DataError(f"{path!r} is signed (HMAC-SHA256): give the signer's key with --key-env NAME, "
                                "NAME the environment variable that holds it") from None
            if exc.reason == "unsigned":
                raise DataError(f"{path!r} is not signed, so --key-env {key_env} cannot authenticate it: apply it "
                                "without --key-env only if you trust its source, or fit it again with --key-env") \
                    from None
            if exc.reason == "signature":
                raise DataError(f"the signature of {path!r} does not match the key in ${key_env}: a wrong key, or "
                                "the file was modified after it was signed; do not use it") from None
            raise


def _split(s: str | None) -> list[str] | None:
    if s is None:
        return None
    return [c.strip() for c in s.split(",") if c.strip()]


def _prob(s: str | None) -> str | list[str] | None:
    cols = _split(s)
    if cols is None:
        return None
    return cols[0] if len(cols) == 1 else cols


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

#: Figures ``--fail-above`` judges: the report's summary columns (overall and per ``--by`` group), and the
#: variable figures, written ``vece:VARIABLE`` / ``vmce:VARIABLE``.
GATED_FIGURES = ("ece", "mce", "rmsce", "ce_debiased", "brier", "log_loss")
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


def _limit(text: str) -> Limit:
    """``FIGURE=LIMIT`` or ``vece:VARIABLE=LIMIT`` (argparse type of ``--fail-above``), LIMIT a non-negative
    decimal number, without spaces.

    >>> _limit("vece:age=3e-2")
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

    by = _split(args.by) or []
    time_col = rep.options["time_col"]
    if math.isclose(lim.limit, rep.options["tolerance"]):
        tables = [rep.summary] + ([rep.by_group] if rep.by_group is not None else [])
        tables += [rep.over_time.filter(pl.col("n") > 0)] if rep.over_time is not None else []
        rows = [r for t in tables for r in t.iter_rows(named=True)]
    else:
        from .monitoring import window_tests
        from .verdicts import FIELDS

        options = dict(prob=_prob(args.prob), label=args.label, bins=args.bins, lens=rep.options["lens"],
                       nulls=args.nulls, tolerance=lim.limit, alpha=rep.options["alpha"], seed=args.seed)
        tests = [api.calibration_test(frame, **options)] + ([api.calibration_test(frame, by=by, **options)]
                                                            if by else [])
        if time_col is not None:
            tests.append(window_tests(frame, time_col, every=rep.options["every"], **options))
        rows = [{**r, "verdict": {"result": r["verdict"], **{f: r[f] for f in FIELDS[1:]}}}
                for t in tests for r in (t.collect() if isinstance(t, pl.LazyFrame) else t).iter_rows(named=True)]
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

    by = _split(args.by) or []
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
            tables = [fn(frame, lim.variable, prob=_prob(args.prob), label=args.label, by=by or None,
                         lens=rep.options["lens"], nulls=args.nulls, ci=rep.options["ci"] if upper else None,
                         n_boot=args.n_boot, seed=args.seed)]
            tables = [t.collect() if isinstance(t, pl.LazyFrame) else t for t in tables]
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


# --------------------------------------------------------------------------- commands


def _report(args: argparse.Namespace) -> int:
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
    prob, by, variables = _prob(args.prob), _split(args.by), _split(args.vece) or []
    # the interval: --ci asks for it, --no-ci drops it, and by default it is computed within a budget (report.py)
    ci = None if args.no_ci else args.ci if args.ci is not None else 0.95 if args.on == "upper" else "auto"
    baseline = _split(args.baseline)
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
    if args.out:
        print(f"calframe: wrote {args.out}", file=sys.stderr)
        if not can_draw():
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


def _param_value(text: str) -> Any:
    import json

    try:
        return json.loads(text)
    except ValueError:
        return text


def _params(method: str, items: list[str]) -> dict[str, Any]:
    """``--param key=value`` items as keyword arguments, each key one that ``method``'s fit takes (its
    declared parameter table, ``Recalibrator.PARAMS``, which ``check_params`` validates the values with)."""
    from .recalibrate import REGISTRY

    cls = None if method == "per_group" else REGISTRY.get(method)  # not a method: api.fit names the known ones
    known = None if cls is None else sorted(cls.PARAMS)
    params = {}
    for item in items:
        key, eq, value = (part.strip() for part in item.partition("="))
        if not eq or not key:
            raise UsageError(f"--param takes key=value, got {item!r}")
        if known is not None and key not in known:
            raise UsageError(f"--param {item!r}: method {method!r} has no parameter {key!r}; "
                             f"its parameters are {', '.join(known) or 'none'}")
        params[key] = _param_value(value)
    return params


def _fit(args: argparse.Namespace) -> int:
    from . import api

    params = _params(args.method, args.param or [])
    key = key_from_env(args.key_env)
    if args.gamma is not None:
        params["gamma"] = args.gamma
    files = expand(args.files)
    out = Path(args.output)
    if out.suffix != ".parquet" and out.exists() and not out.is_dir():
        raise UsageError(f"-o {args.output!r} is an existing file: give a directory or a .parquet file to save to")
    check_outputs([(f, "the recalibrator") for f in recalibrator_files(out)], files, args.overwrite)
    frame = read(files)
    try:
        rec = api.fit(frame, args.method, prob=_prob(args.prob), label=args.label, variable=args.variable,
                      features=_split(args.features), by=_split(args.by), nulls=args.nulls, **params)
    except (TypeError, ValueError) as exc:  # name the --param to blame
        if not (isinstance(exc, ParameterError) and exc.param in params or params and not isinstance(exc, CalframeError)):
            raise
        shown = ", ".join(f"{k}={v!r}" for k, v in params.items())
        raise UsageError(f"fit: method {args.method!r} refused the parameters {shown}: {_first_line(exc)}") from None
    save_recalibrator(rec, out, key)
    signed = f", signed with the key in ${args.key_env}" if key is not None else ""
    print(f"calframe: fitted {args.method} on {frame.height} rows; wrote {out}{signed}", file=sys.stderr)
    return EXIT_OK


def _apply_batches(f: str, src: Any, batches: Iterator[Any], tmp: Path, rec: Any, kw: dict, label: str) -> int:
    """Write ``rec`` applied to each record batch of the Parquet file ``f`` to ``tmp``; returns the rows written."""
    import pyarrow.parquet as pq

    from . import api
    from ._progress import steps

    total, writer, done = src.metadata.num_rows, None, 0
    bar = steps(total, label, unit="row")  # calframe._progress: on standard error when it is a terminal
    try:
        while True:
            with reading(repr(f)):
                batch = next(batches, None)
            if batch is None:
                break
            out = api.apply(pl.from_arrow(batch), rec, **kw).to_arrow()
            if writer is None:
                writer = pq.ParquetWriter(tmp, out.schema)
            writer.write_table(out)
            done += batch.num_rows
            bar.update(batch.num_rows)
    finally:
        bar.close()
        if writer is not None:
            writer.close()
    if writer is None:  # no rows: an empty file with the input's columns and the new one, as for CSV input
        with reading(repr(f)):
            api.apply(scan(f), rec, **kw).sink_parquet(tmp)
    return done


def _apply(args: argparse.Namespace) -> int:
    import pyarrow.parquet as pq

    from . import api

    rec_path = Path(args.recalibrator)
    rec = load_recalibrator(args.recalibrator, args.key_env)
    files = expand(args.files)
    out_dir = Path(args.output)
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"-o {args.output!r} is a file; apply writes into a directory")
    targets = [out_dir / (Path(f).stem + ".parquet") for f in files]
    check_outputs([(t, f"the output of {f!r}") for t, f in zip(targets, files)],
                  files + [str(p) for p in recalibrator_files(rec_path)], args.overwrite)
    kw = dict(name=args.name, prob=_prob(args.prob), variable=args.variable, features=_split(args.features),
              unknown=args.unknown)
    total_rows = 0
    with staged_outputs() as out:  # every output renamed into place once all are written; a failure leaves none
        for i, (f, target) in enumerate(zip(files, targets), 1):
            label = f"[{i}/{len(files)}] {Path(f).name}"
            if Path(f).suffix.lower() in (".parquet", ".pq"):
                with reading(repr(f)):
                    src = pq.ParquetFile(f)
                    batches = src.iter_batches(batch_size=args.batch_size)
                done = _apply_batches(f, src, batches, out.stage(target, ".parquet"), rec, kw, label)
            else:
                lf = scan(f)
                tmp = out.stage(target, ".parquet")
                with reading(repr(f)):
                    api.apply(lf, rec, **kw).sink_parquet(tmp)
                done = pl.scan_parquet(tmp).select(pl.len()).collect().item()
            total_rows += done
    print(f"calframe: applied {rec.method} to {total_rows:,} rows in {len(files)} file(s); wrote {out_dir}/",
          file=sys.stderr)
    return EXIT_OK


#: One row of the demo's "Fixing it" table, run once per recalibrator with ``out`` (the scored frame) and ``p``
#: (its probability column) bound; printed once, as the calls that give the row.
_DEMO_ROW = """\
ece = calframe.ece(out, prob=p, lens="class:1")
vece_age = calframe.vece(out, "age", prob=p, lens="class:1")
max_region_ece = calframe.ece(out, prob=p, lens="class:1", by="region")["ece"].max()
m = calframe.mlce(out, ["age"], prob=p, lens="class:1", gamma=0.2, prepare="standardize",
                  by="region")
mlce_age, mean_lce_age = m["mlce"].max(), m["mean_lce"].max()"""

_DEMO_COLUMNS = ("ece", "vece_age", "max_region_ece", "mlce_age", "mean_lce_age")

#: Why the tree's MLCE may rise while every other figure falls (docs/local-calibration.md: LCE averages the
#: rows of a row's confidence bin weighted by a kernel on the features; MLCE is its maximum over rows).
_DEMO_MLCE_NOTE = (
    "# MLCE can rise after the tree fix although the mean LCE falls: MLCE is the largest LCE of any single "
    "row, and the tree lowers old rows' probabilities, so the few old rows left in a high-probability bin have "
    "only a handful of rows of similar age beside them, and their LCE is noise; the mean LCE is the figure "
    "that shows the fix.")


def _demo(args: argparse.Namespace) -> int:
    """Run the example, printing each statement (Python that gives the same result when copied) above its result.
    Without --wide the tables select the essential columns, so every line fits 100 columns."""
    import textwrap

    env: dict[str, Any] = {}

    def run(code: str) -> Any:
        for line in code.splitlines():
            print(line)
        try:
            compiled = compile(code, "<demo>", "eval")
        except SyntaxError:
            exec(compile(code, "<demo>", "exec"), env)
            return None
        value = eval(compiled, env)
        print(value, "\n")
        return value

    def comment(text: str) -> None:
        print(textwrap.fill(text, 100, subsequent_indent="# "))

    n, seed, n_boot = args.rows, args.seed, args.n_boot
    boot = f'ci=0.95, n_boot={n_boot}, seed={seed}'
    comment(f"# calframe demo: {n} scored rows of a model that is calibrated overall but not within regions or "
            "along age (true probability = 0.5 + slope[region] * (prob - 0.5) + 0.15 tanh((49 - age)/10); slope "
            "north 0.6, south 1.4, east 0.8, west 1.2). One probability column: every figure is measured on the "
            'positive class, lens="class:1" (the default for one probability column), written out in each call. '
            "Each statement below gives the result printed under it.")
    run("import calframe\nimport polars as pl")
    run(f"pl.Config.set_float_precision(4)\npl.Config.set_tbl_hide_dataframe_shape(True)\n"
        f"pl.Config.set_tbl_rows(40)\npl.Config.set_tbl_cols({-1 if args.wide else 12})")
    print()
    run(f"df = calframe.datasets.grouped_miscalibration(n={n}, seed={seed}, age_shift=0.15)")
    run("df.head(5)")
    comment("# Overall")
    run(f'overall = calframe.summary(df, lens="class:1", {boot})')
    run("overall" if args.wide else 'overall.select("n", "accuracy", "ece", "ece_lo", "ece_hi", "mce", "brier")')
    comment("# For whom? Worst ECE first")
    run(f'per = calframe.summary(df, lens="class:1", by="region", {boot})')
    run('per.sort("ece", descending=True)' + ("" if args.wide else
                                              '.select("region", "n", "ece", "ece_lo", "ece_hi", "mce", "brier")'))
    comment("# Along which variables? Worst VECE first")
    run('calframe.vece_rank(df, lens="class:1")')
    comment("# Where exactly? Region north in 5 bins")
    run('rel = calframe.reliability(df, lens="class:1", bins=5, by="region")')
    run('rel.filter(pl.col("region") == "north")')

    comment("# Fixing it: recalibrators fitted on a separate calibration frame, applied to df")
    run(f"cal = calframe.datasets.grouped_miscalibration(n={n}, seed={seed + 1}, age_shift=0.15)")
    run('platt = calframe.fit(cal, "platt")\ntree = calframe.fit(cal, "tree", variable="age")\n'
        'lore = calframe.fit(cal, "lore", features=["age"], gamma=0.2, lens="class:1", standardize=True)')
    comment("# One row per recalibrator: out, p = df, \"prob\" (uncalibrated), or "
            'out, p = calframe.apply(df, rec, name="p"), "p"; then')
    for line in _DEMO_ROW.splitlines():
        print(line)
    rows = []
    for name, rec in (("uncalibrated", None), ("platt", "platt"), ("tree on age", "tree"), ("lore on age", "lore")):
        env["out"], env["p"] = (env["df"], "prob") if rec is None else (
            eval('calframe.apply(df, rec, name="p")', {**env, "rec": env[rec]}), "p")
        exec(compile(_DEMO_ROW, "<demo>", "exec"), env)
        rows.append({"method": name, **{c: env[c] for c in _DEMO_COLUMNS}})
    print(pl.DataFrame(rows), "\n")
    comment("# mlce_age / mean_lce_age: local calibration error over standardised age, gamma = 0.2, in the worst "
            "region.")
    comment(_DEMO_MLCE_NOTE)
    return EXIT_OK


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2), as every other calframe error."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _int_at_least(low: int, what: str):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
        return value

    return parse


_seed = _int_at_least(0, "a non-negative integer")
_positive = _int_at_least(1, "a positive integer")

_EPILOG = """Exit codes: 0 success; 2 usage error (bad argument or parameter, an output that is an
input, two outputs with one name, an existing output without --overwrite); 1 data error (missing,
unreadable or invalid file contents); 3 a report --fail-above limit breached (outputs written, the
breaches listed on standard error); 130 interrupted. Errors are one line on standard error.
Outputs are written to temporary files and renamed together when all are complete: never
half-written, and a command that fails leaves none."""

#: Each subcommand's examples (its --help epilog). tests/test_cli.py parses every line and runs some of them
#: in a directory holding scores.parquet and cal.parquet (columns prob, label, region, age, device, ts).
EXAMPLES = {
    "report": """\
  calframe report scores.parquet --no-ci
  calframe report scores.parquet --by region --vece age --n-boot 100 --tolerance 0.05 --wide
  calframe report 'scores/*.parquet' --by region --vece age,device --out report.html --json figs.json
  calframe report scores.parquet --prob prob --label label --lens top1 --no-ci --json -
  calframe report scores.parquet --by region --fail-above ece=0.05 --fail-above vece:age=0.03
  calframe report scores.parquet --fail-above ece=0.05 --on upper --n-boot 200 --out report.html
  calframe report scores.parquet --by region --fail-above ece=0.03 --on test --no-ci
  calframe report scores.parquet --time-col ts --every 1d --baseline 2024-01-01 --out report.html
  calframe report scores.parquet --time-col ts --every 1w --baseline 2024-01-01,2024-01-15 --ci 0.9""",
    "fit": """\
  calframe fit cal.parquet --method platt -o platt.parquet
  calframe fit cal.parquet --method tree --variable age -o rec.calib
  calframe fit cal.parquet --method lore --features age --gamma 0.2 --param standardize=true -o lore.parquet
  calframe fit cal.parquet --method isotonic --by region -o per_region.calib
  calframe fit cal.parquet --method platt -o signed.parquet --key-env CALIB_KEY""",
    "apply": """\
  calframe apply rec.calib scores.parquet -o out/
  calframe apply platt.parquet 'scores/*.parquet' -o out/ --name p_cal --batch-size 100000
  calframe apply signed.parquet scores.parquet -o out/ --key-env CALIB_KEY""",
    "warmup": """\
  calframe warmup
  NUMBA_CACHE_DIR=/opt/numba-cache calframe warmup --quiet""",
    "demo": """\
  calframe demo
  calframe demo --rows 5000 --seed 1 --n-boot 100
  calframe demo --wide""",
}


def _epilog(command: str) -> str:
    return f"examples:\n{EXAMPLES[command]}\n\n" + ("" if command in ("demo", "warmup") else _EPILOG)


def build_parser() -> argparse.ArgumentParser:
    from ._version import __version__
    from .report import TOLERANCE

    parser = _Parser(prog="calframe", description="Classifier calibration analysis for tables.", epilog=_EPILOG)
    parser.add_argument("--version", action="version", version=f"calframe {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{report,fit,apply,demo,warmup}")
    overwrite = "replace existing output files (without it, an existing output is an error, exit 2)"

    rep = sub.add_parser("report", help="calibration figures of scored files, as HTML and/or JSON",
                         epilog=_epilog("report"), formatter_class=argparse.RawDescriptionHelpFormatter)
    rep.add_argument("files", nargs="+", help="Parquet, CSV or Arrow IPC files or globs (quote globs)")
    rep.add_argument("--prob", help="probability column, or comma-separated class columns (default: prob/proba/...)")
    rep.add_argument("--label", help="label column (default: label/y/y_true/target)")
    rep.add_argument("--by", help="comma-separated group columns")
    rep.add_argument("--vece", help="comma-separated variables to check calibration along")
    rep.add_argument("--bins", type=int, default=15)
    rep.add_argument("--lens", default=None,
                     help="top1 or class:<c>; default: class:1 (the positive class) for one probability column, "
                          "top1 for class probability columns")
    rep.add_argument("--ci", type=float, default=None, metavar="LEVEL",
                     help="bootstrap intervals at this level, e.g. 0.95. Default: 0.95 when rows x --n-boot is at "
                     "most 10,000,000 (50,000 rows at 200 draws), else none, which the report says: the bootstrap "
                     "is the slow part (1e6 rows: minutes), the rest takes seconds")
    rep.add_argument("--no-ci", action="store_true", help="skip the bootstrap intervals")
    rep.add_argument("--n-boot", type=int, default=200, help="bootstrap draws (default 200)")
    rep.add_argument("--seed", type=_seed, default=0, help="bootstrap seed, a non-negative integer (default 0)")
    rep.add_argument("--nulls", choices=["raise", "drop"], default="raise")
    rep.add_argument("--title")
    rep.add_argument("--tolerance", type=float, default=TOLERANCE,
                     help=f"the ECE the headline's verdicts judge against (default {TOLERANCE:g}): calibrated when "
                     "the whole interval lies at or below it, not calibrated when it lies above, else undecided")
    rep.add_argument("--wide", action="store_true",
                     help="without --out/--json: print every figure (default: the essential columns, 100 wide)")
    rep.add_argument("--out", "-o", help="write a self-contained HTML report here")
    rep.add_argument("--json", help="write the figures as JSON here ('-' for standard output); dates and times as "
                     "ISO 8601 strings, decimals as strings")
    rep.add_argument("--overwrite", action="store_true", help=overwrite)
    rep.add_argument("--fail-above", action="append", type=_limit, metavar="FIGURE=LIMIT",
                     help=f"exit 3 (after writing the outputs) when FIGURE exceeds LIMIT, overall or in any --by "
                     f"group (ece: and in any --time-col window); FIGURE is one of {', '.join(GATED_FIGURES)}, or vece:VARIABLE / vmce:VARIABLE "
                     "(repeatable)")
    rep.add_argument("--on", choices=["value", "upper", "test"], default="value",
                     help="judge --fail-above on the figure (value, default), on the upper bound of its "
                     "bootstrap interval (upper; computes the interval, 0.95 unless --ci; not with --no-ci), or, "
                     "for ece=LIMIT, on the verdict's test (test: a breach when the data reject 'ECE <= LIMIT' at "
                     "the 5%% level, overall or in a --by group: the verdict 'not calibrated' at tolerance LIMIT; "
                     "other figures are then judged on the value)")
    rep.add_argument("--time-col", metavar="COLUMN",
                     help="a Date or Datetime column, or text (ISO 8601, or see --time-format): adds the ECE per "
                     "time window ('Over time'); --fail-above ece=... then also judges every window with rows")
    rep.add_argument("--time-format", metavar="FORMAT",
                     help="how the --time-col column's text is written, in strftime directives, e.g. "
                     "'%%d/%%m/%%Y %%H:%%M' (a format without a time of day gives dates). Without it a text column "
                     "(a CSV file's) is read as ISO 8601: 2024-01-31, 2024-01-31T13:05:00, with Z or an offset "
                     "(then in UTC)")
    rep.add_argument("--every", metavar="DURATION",
                     help="window length, a Polars duration: 1h, 1d (default), 1w, 1mo, ... (windows start on the "
                     "calendar grid: days at midnight, weeks on Monday)")
    rep.add_argument("--baseline", metavar="START[,END]",
                     help="compare every window with one window (its start, e.g. 2024-01-01) or with the rows "
                     "from START to END (excluded)")
    rep.set_defaults(run=_report)

    fit = sub.add_parser("fit", help="fit a recalibrator on calibration files and save it (data only, no pickle)",
                         epilog=_epilog("fit"), formatter_class=argparse.RawDescriptionHelpFormatter)
    fit.add_argument("files", nargs="+", help="Parquet, CSV or Arrow IPC files or globs")
    fit.add_argument("--method", required=True,
                     help="platt, temperature, histogram, isotonic, beta, scaling_binning, tree, beta_v or lore")
    fit.add_argument("--prob")
    fit.add_argument("--label")
    fit.add_argument("--variable", help="the variable V (tree, beta_v)")
    fit.add_argument("--features", help="comma-separated feature columns (lore)")
    fit.add_argument("--gamma", type=float, help="kernel bandwidth (lore)")
    fit.add_argument("--by", help="comma-separated group columns: one recalibrator per group")
    fit.add_argument("--param", action="append", help="extra method parameter key=value (repeatable)")
    fit.add_argument("--nulls", choices=["raise", "drop"], default="raise")
    fit.add_argument("--output", "-o", required=True, help="where to save (a directory, or a .parquet file)")
    fit.add_argument("--overwrite", action="store_true", help=overwrite)
    fit.add_argument("--key-env", metavar="NAME",
                     help="sign the saved recalibrator (HMAC-SHA256) with the key held in the environment variable "
                     "NAME; apply then needs the same --key-env to verify it")
    fit.set_defaults(run=_fit)

    app = sub.add_parser("apply", help="add the recalibrated column to files, batch by batch",
                         epilog=_epilog("apply"), formatter_class=argparse.RawDescriptionHelpFormatter)
    app.add_argument("recalibrator", help="a saved recalibrator (from calframe fit or rec.save)")
    app.add_argument("files", nargs="+", help="Parquet, CSV or Arrow IPC files or globs (quote globs)")
    app.add_argument("--output", "-o", required=True,
                     help="output directory: one Parquet file per input, named after it (x.csv -> x.parquet); two "
                     "inputs with the same name are an error")
    app.add_argument("--name", help="name of the new column (default p_<method>)")
    app.add_argument("--prob", help="probability column(s), if not those the recalibrator was fitted on")
    app.add_argument("--variable")
    app.add_argument("--features")
    app.add_argument("--unknown", choices=["raise", "keep"], default="raise",
                     help="rows of groups a per-group recalibrator has not seen")
    app.add_argument("--batch-size", type=_positive, default=65_536, help="rows per batch (default 65536)")
    app.add_argument("--overwrite", action="store_true", help=overwrite)
    app.add_argument("--key-env", metavar="NAME",
                     help="verify the recalibrator's signature with the key held in the environment variable NAME "
                     "(needed for a file fitted with --key-env or saved with key=; a wrong key is exit 1)")
    app.set_defaults(run=_apply)

    demo = sub.add_parser("demo", help="run the built-in example and print its calibration figures",
                          epilog=_epilog("demo"), formatter_class=argparse.RawDescriptionHelpFormatter)
    demo.add_argument("--rows", type=_positive, default=20_000, help="rows of the example frame (default 20000)")
    demo.add_argument("--seed", type=_seed, default=0, help="seed of the example and the bootstrap")
    demo.add_argument("--n-boot", type=int, default=500, help="bootstrap draws for the intervals (default 500)")
    demo.add_argument("--wide", action="store_true", help="print every column (default: the essential ones, "
                      "100 columns wide)")
    demo.set_defaults(run=_demo)

    warm = sub.add_parser("warmup", help="compile the kernels ahead of use into numba's disk cache (container images, "
                          "CI caches); safe in several processes at once",
                          description="Compile the kernels calframe's public functions use, for the common dtypes, "
                          "into numba's disk cache: NUMBA_CACHE_DIR when set, else the __pycache__ folders beside "
                          "calframe's sources. Later processes then load them instead of compiling (5-30 s per "
                          "first call). Run it in a container image's build step, or before CI jobs that cache "
                          "NUMBA_CACHE_DIR. Safe in several processes at once.",
                          epilog=_epilog("warmup"), formatter_class=argparse.RawDescriptionHelpFormatter)
    warm.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")
    warm.add_argument("--no-multiclass", action="store_true", help="skip the multiclass and GECE kernels")
    warm.set_defaults(run=_warmup)
    for command in (rep, fit, app, demo, warm):
        command.add_argument("--no-progress", action="store_true",
                             help="no progress bars (default: on standard error when it is a terminal, for work "
                             "that takes seconds; CALFRAME_PROGRESS=0 turns them off too)")
    return parser


def _warmup(args: argparse.Namespace) -> int:
    """``calframe warmup``: compile every kernel the public functions use, and say where the cache is."""
    import time

    from ._warmup import warmup

    if not args.quiet:
        print("calframe warmup: compiling the kernels the public functions use (minutes on a fresh install, "
              "about a second when cached)", file=sys.stderr, flush=True)
    start = time.perf_counter()
    dirs = warmup(verbose=not args.quiet, multiclass=not args.no_multiclass)
    if not args.quiet:
        print(f"calframe warmup: done in {time.perf_counter() - start:.1f} s; kernel cache: {', '.join(dirs)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 ok, 1 data error, 2 usage error, 130 interrupted)."""
    from . import _startup

    interrupted = False
    try:
        _startup.done()  # from here a Ctrl-C is a KeyboardInterrupt, handled below (before: calframe._startup)
        parser = build_parser()
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help, or a usage error argparse has already printed
            return exc.code if isinstance(exc.code, int) else EXIT_USAGE
        from ._progress import setting

        with setting("calframe", False if args.no_progress else None):
            return int(args.run(args))
    except KeyboardInterrupt:
        interrupted = True
        return _fail("interrupted", EXIT_INTERRUPTED)
    except Exception as exc:
        if _after_interrupt(exc):
            interrupted = True
            return _fail("interrupted", EXIT_INTERRUPTED)
        if isinstance(exc, (ParameterError, UsageError)):
            return _fail(exc, EXIT_USAGE)
        if isinstance(exc, CalframeError):
            return _fail(exc, EXIT_DATA)
        if isinstance(exc, (pl.exceptions.PolarsError, OSError)):
            return _fail(f"{type(exc).__name__}: {_first_line(exc)}", EXIT_DATA)
        raise
    finally:
        _startup.finished(interrupted)


def _after_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` came out of a Ctrl-C: a KeyboardInterrupt among its causes, as when one lands inside
    numba's dispatcher (``SystemError: ... returned a result with an exception set``) or inside the import
    machinery's module locks (a ``KeyError`` from importlib)."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def _fail(problem: Any, code: int) -> int:
    """Print ``problem`` as one line on standard error; return ``code``."""
    print("calframe: error: " + " ".join(str(problem).split()), file=sys.stderr)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
