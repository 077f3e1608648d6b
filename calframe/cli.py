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
import os
import sys
from pathlib import Path
from typing import Any, Iterator, NoReturn

import polars as pl

from ._cli_files import (  # noqa: F401  (the command's errors, inputs and outputs, as calframe.cli had them)
    EXIT_BREACH, EXIT_DATA, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, DataError, Outputs, UsageError, check_outputs,
    expand, key_from_env, load_recalibrator, read, reading, recalibrator_files, save_recalibrator, scan, scan_all,
    staged_outputs, write_text, first_line, parse_prob, split_names,
)
from ._cli_report import (  # noqa: F401  (the report command, its time column and its gate)
    GATED_FIGURES, VARIABLE_FIGURES, Limit, time_column, parse_limit, run_report,
)
from ._errors import CalframeError, ParameterError


# --------------------------------------------------------------------------- commands


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
        rec = api.fit(frame, args.method, prob=parse_prob(args.prob), label=args.label, variable=args.variable,
                      features=split_names(args.features), by=split_names(args.by), nulls=args.nulls, **params)
    except (TypeError, ValueError) as exc:  # name the --param to blame
        if not (isinstance(exc, ParameterError) and exc.param in params or params and not isinstance(exc, CalframeError)):
            raise
        shown = ", ".join(f"{k}={v!r}" for k, v in params.items())
        raise UsageError(f"fit: method {args.method!r} refused the parameters {shown}: {first_line(exc)}") from None
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
    kw = dict(name=args.name, prob=parse_prob(args.prob), variable=args.variable, features=split_names(args.features),
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


#: report's options of the time windows: (flag, metavar, help)
_TIME_OPTIONS = (
    ("--time-col", "COLUMN", "a Date or Datetime column, or text (ISO 8601, or see --time-format): adds the ECE per "
     "time window ('Over time'); --fail-above ece=... then also judges every window with rows"),
    ("--time-format", "FORMAT", "how the --time-col column's text is written, in strftime directives, e.g. "
     "'%%d/%%m/%%Y %%H:%%M' (a format without a time of day gives dates). Without it a text column "
     "(a CSV file's) is read as ISO 8601: 2024-01-31, 2024-01-31T13:05:00, with Z or an offset "
     "(then in UTC)"),
    ("--every", "DURATION", "window length, a Polars duration: 1h, 1d (default), 1w, 1mo, ... (windows start on the "
     "calendar grid: days at midnight, weeks on Monday)"),
    ("--baseline", "START[,END]", "compare every window with one window (its start, e.g. 2024-01-01) or with the rows "
     "from START to END (excluded)"),
)

#: the help of --overwrite (report, fit and apply)
_OVERWRITE = "replace existing output files (without it, an existing output is an error, exit 2)"


def _recalibrator_options(command: argparse.ArgumentParser, run: Any, *, key_env: str) -> None:
    """The last options of ``fit`` and ``apply`` (which write files and sign or verify a recalibrator):
    ``--overwrite`` and ``--key-env`` (its help ``key_env``); ``run`` runs the command."""
    command.add_argument("--overwrite", action="store_true", help=_OVERWRITE)
    command.add_argument("--key-env", metavar="NAME", help=key_env)
    command.set_defaults(run=run)


def build_parser() -> argparse.ArgumentParser:
    from ._version import __version__
    from .report import TOLERANCE

    parser = _Parser(prog="calframe", description="Classifier calibration analysis for tables.", epilog=_EPILOG)
    parser.add_argument("--version", action="version", version=f"calframe {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{report,fit,apply,demo,warmup}")

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
                     help=f"the tolerance on the population ECE that the verdicts test (default {TOLERANCE:g}; "
                     "calframe.calibration_test, at the 5%% level, overall, per --by group and per --time-col "
                     "window): not calibrated when the data reject 'ECE <= TOLERANCE', calibrated when they reject "
                     "'ECE >= TOLERANCE', else undecided (more rows would decide). The test simulates the labels "
                     "bin by bin; it needs no bootstrap interval")
    rep.add_argument("--wide", action="store_true",
                     help="without --out/--json: print every figure (default: the essential columns, 100 wide)")
    rep.add_argument("--out", "-o", help="write a self-contained HTML report here")
    rep.add_argument("--json", help="write the figures as JSON here ('-' for standard output); dates and times as "
                     "ISO 8601 strings, decimals as strings")
    rep.add_argument("--overwrite", action="store_true", help=_OVERWRITE)
    rep.add_argument("--fail-above", action="append", type=parse_limit, metavar="FIGURE=LIMIT",
                     help=f"exit 3 (after writing the outputs) when FIGURE exceeds LIMIT, overall or in any --by "
                     f"group (ece: and in any --time-col window); FIGURE is one of {', '.join(GATED_FIGURES)}, or vece:VARIABLE / vmce:VARIABLE "
                     "(repeatable)")
    rep.add_argument("--on", choices=["value", "upper", "test"], default="value",
                     help="judge --fail-above on the figure (value, default), on the upper bound of its "
                     "bootstrap interval (upper; computes the interval, 0.95 unless --ci; not with --no-ci), or, "
                     "for ece=LIMIT, on the verdict's test (test: a breach when the data reject 'ECE <= LIMIT' at "
                     "the 5%% level, overall or in a --by group: the verdict 'not calibrated' at tolerance LIMIT; "
                     "other figures are then judged on the value)")
    for flag, metavar, text in _TIME_OPTIONS:
        rep.add_argument(flag, metavar=metavar, help=text)
    rep.set_defaults(run=run_report)

    fit = sub.add_parser("fit", help="fit a recalibrator on calibration files and save it (data only, no pickle)",
                         epilog=_epilog("fit"), formatter_class=argparse.RawDescriptionHelpFormatter)
    fit.add_argument("files", nargs="+", help="Parquet, CSV or Arrow IPC files or globs")
    fit.add_argument("--method", required=True,
                     help="platt, temperature, histogram, isotonic, beta, scaling_binning, venn_abers, tree, beta_v or lore")
    fit.add_argument("--prob")
    fit.add_argument("--label")
    fit.add_argument("--variable", help="the variable V (tree, beta_v)")
    fit.add_argument("--features", help="comma-separated feature columns (lore)")
    fit.add_argument("--gamma", type=float, help="kernel bandwidth (lore)")
    fit.add_argument("--by", help="comma-separated group columns: one recalibrator per group")
    fit.add_argument("--param", action="append", help="extra method parameter key=value (repeatable)")
    fit.add_argument("--nulls", choices=["raise", "drop"], default="raise")
    fit.add_argument("--output", "-o", required=True, help="where to save (a directory, or a .parquet file)")
    _recalibrator_options(fit, _fit, key_env="sign the saved recalibrator (HMAC-SHA256) with the key held in the "
                          "environment variable NAME; apply then needs the same --key-env to verify it")

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
    _recalibrator_options(app, _apply, key_env="verify the recalibrator's signature with the key held in the "
                          "environment variable NAME (needed for a file fitted with --key-env or saved with key=; a "
                          "wrong key is exit 1)")

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
    warm.add_argument("--jobs", "-j", type=int, default=min(os.cpu_count() or 1, 4), metavar="N",
                      help="compile in N processes at once (default: one per core, at most 4)")
    warm.add_argument("--part", type=_part, default=None, help=argparse.SUPPRESS)  # i/N: one of --jobs' processes
    warm.add_argument("--force", action="store_true", help="compile again even when the cache is marked warm")
    warm.set_defaults(run=_warmup)
    for command in (rep, fit, app, demo, warm):
        command.add_argument("--no-progress", action="store_true",
                             help="no progress bars (default: on standard error when it is a terminal, for work "
                             "that takes seconds; CALFRAME_PROGRESS=0 turns them off too)")
    return parser


def _part(text: str) -> tuple[int, int]:
    i, _, n = text.partition("/")
    return int(i), int(n)


def _warmup(args: argparse.Namespace) -> int:
    """``calframe warmup``: compile every kernel the public functions use, and say where the cache is."""
    import time

    from ._warmup import warmup

    if not args.quiet and not args.part:
        print("calframe warmup: compiling the kernels the public functions use (minutes on a fresh install, "
              "returns at once when a completed warm-up marked the cache)", file=sys.stderr, flush=True)
    start = time.perf_counter()
    if args.jobs < 1:
        print(f"calframe warmup: --jobs takes a count of at least 1, not {args.jobs}", file=sys.stderr)
        return EXIT_USAGE
    dirs = warmup(verbose=not args.quiet, multiclass=not args.no_multiclass,
                  jobs=1 if args.part else args.jobs, part=args.part, force=args.force)
    if args.part:
        return 0
    if not args.quiet:
        print(f"calframe warmup: done in {time.perf_counter() - start:.1f} s; kernel cache: {', '.join(dirs)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 ok, 1 data error, 2 usage error, 130 interrupted)."""
    from . import _startup

    interrupted, args = False, None
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
            return _fail(_in_flags(str(exc), args), EXIT_USAGE)
        if isinstance(exc, CalframeError):
            return _fail(_in_flags(str(exc), args), EXIT_DATA)
        if isinstance(exc, (pl.exceptions.PolarsError, OSError)):
            return _fail(f"{type(exc).__name__}: {first_line(exc)}", EXIT_DATA)
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


def _in_flags(message: str, args: argparse.Namespace | None) -> str:
    """A calframe error's ``message``, written for the Python API, in the command's own words: for each keyword
    that is an option of the command that ran (``args``), ``prob=<column name>`` becomes ``--prob COLUMN``,
    ``nulls='drop'`` becomes ``--nulls drop`` and ``given as by=`` becomes ``given as --by``.

    >>> _in_flags("Pass prob=<column name>, or pass nulls='drop'.", argparse.Namespace(prob=None, nulls="raise"))
    'Pass --prob COLUMN, or pass --nulls drop.'
    """
    import re

    for name in vars(args) if args is not None else ():
        if name in ("run", "command", "files") or not re.fullmatch(r"[a-z][a-z_]*", name):
            continue
        flag = "--" + name.replace("_", "-")
        message = re.sub(rf"(?<![\w-]){name}=<column(?: name)?>", f"{flag} COLUMN", message)
        message = re.sub(rf"(?<![\w-]){name}='([^'\s]*)'", rf"{flag} \1", message)
        message = re.sub(rf"(?<![\w-]){name}=(?=\s|$)", flag, message)
    return message


def _fail(problem: Any, code: int) -> int:
    """Print ``problem`` as one line on standard error; return ``code``."""
    print("calframe: error: " + " ".join(str(problem).split()), file=sys.stderr)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
