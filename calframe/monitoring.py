"""Calibration over time: figures per time window (Polars ``group_by_dynamic``), against a baseline.

``calframe.monitor(df, "ts", every="1d")`` is one row per window: the window's
start and end, its rows ``n`` and each figure of ``figures``, computed by the
expressions of :mod:`calframe.expr` inside ``group_by_dynamic`` (the same
numbers as ``calframe.ece`` on each window's rows: one call for all windows).
With ``baseline`` each figure is also compared with its value on the baseline
rows (``<figure>_baseline`` and ``<figure>_diff`` = window - baseline); with
``ci`` each window gets bootstrap bounds (``<figure>_lo``, ``<figure>_hi``),
drawn within each window by the ``by=`` machinery of the eager functions.
Rules: docs/monitoring.md.
"""

from __future__ import annotations

import datetime as dt
import inspect
from collections.abc import Callable, Sequence
from typing import Any, Union

from ._imports import pd  # pandas: imported at first use
import polars as pl

from . import api, expr, registry
from . import _errors as E
from . import request as R
from ._columns import columns_of, resolve_names
from ._errors import ColumnNotFoundError, ColumnTypeError, EmptyInputError, InvalidValueError, ParameterError
from ._names import fresh_name
from .frames import convert
from .frames.dispatch import public

Frame = Union[pl.DataFrame, pl.LazyFrame, "pd.DataFrame"]
FUNC = "monitor"


@public(state="windows")
@R.with_progress
def monitor(
    frame: Frame,
    time_col: str,
    *,
    every: str | dt.timedelta = "1d",
    figures: str | Sequence[str] = ("ece",),
    prob: str | Sequence[str] | None = None,
    label: str | None = None,
    baseline: str | dt.date | tuple[str | dt.date, str | dt.date] | None = None,
    period: str | dt.timedelta | None = None,
    offset: str | dt.timedelta | None = None,
    window_closed: str = "left",
    ci: float | None = None,
    n_boot: int = 1000,
    ci_method: str = "symmetric",
    seed: int | None = 0,
    progress: bool | None = None,
    **figure_options: Any,
) -> Frame:
    """Calibration figures per time window, optionally against a baseline (docs/monitoring.md).

    Windows are Polars' ``group_by_dynamic`` windows on ``time_col`` (a Date
    or Datetime column): they start every ``every`` (a Polars duration:
    ``"1d"``, ``"12h"``, ``"1w"`` (from Monday), ``"1mo"``, ... or a
    ``timedelta``), on the calendar grid shifted by ``offset``, and span
    ``period`` (default ``every``; longer windows overlap), closed on the
    ``window_closed`` side (default ``"left"``: start <= time < end). Every
    window from the first to the last that holds rows is a row of the result,
    in time order; a window without rows has ``n`` = 0 and null figures (as a
    :mod:`calframe.expr` figure of an empty group: there is nothing to
    evaluate).

    Parameters
    ----------
    frame : polars.DataFrame, polars.LazyFrame or pandas.DataFrame
        Scored rows, in any order.
    time_col : str
        The Date or Datetime column that places each row in time (no nulls;
        ``nulls="drop"`` drops those rows as it drops rows with a null
        probability or label).
    figures : str or list of str
        Any of ``ece``, ``mce``, ``rmsce``, ``ce``, ``brier``, ``log_loss``,
        ``accuracy`` (default ``("ece",)``).
    baseline : date, datetime, ISO string, or (start, end) pair of them, optional
        What each window is compared with: one window start (that window's
        rows: ``"2024-01-01"``), or the rows with start <= time < end (a
        reference period, e.g. the first month: ``("2024-01-01",
        "2024-02-01")``). Naive values are in the column's time zone. Adds
        ``<figure>_baseline`` (the figure on those rows, one value repeated)
        and ``<figure>_diff`` (window minus baseline).
    ci, n_boot, ci_method, seed : as :func:`calframe.ece`
        Bootstrap bounds per window (``<figure>_lo``,
        ``<figure>_hi``), rows resampled within each window. The bounds need
        the rows in memory: a LazyFrame is collected (and the result given
        back lazy). ``<figure>_diff`` has no interval.
    progress : bool, optional
        The bootstrap's progress bars, as :func:`calframe.ece`'s (spec section 8, "Progress bars").
    **figure_options
        Options of the figures (``bins``, ``binning``, ``closed``, ``lens``,
        ``weights``, ``nulls``, ``p``, ...): each goes to the figures that take
        it (an option no figure of ``figures`` takes is an error).

    Returns
    -------
    The input's kind of frame (a ``pl.LazyFrame`` for a LazyFrame: nothing is
    read until it is collected; a pandas frame for pandas): ``time_col`` (the
    window start), ``<time_col>_end``, ``n`` (the window's rows), then per
    figure its value, ``_lo`` / ``_hi`` with ``ci`` and ``_baseline`` /
    ``_diff`` with ``baseline``.

    Examples
    --------
    >>> import datetime as dt, polars as pl, calframe
    >>> df = calframe.datasets.grouped_miscalibration(n=3000, seed=0).with_columns(
    ...     ts=pl.datetime_range(dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 3, 23), "1m", eager=True)
    ...     .sample(3000, seed=0).sort())
    >>> out = calframe.monitor(df, "ts", every="1d", baseline="2024-01-01")
    >>> out.columns
    ['ts', 'ts_end', 'n', 'ece', 'ece_baseline', 'ece_diff']
    >>> out["n"].to_list()
    [1023, 1009, 968]
    >>> first = df.filter(pl.col("ts") < dt.datetime(2024, 1, 2))
    >>> out["ece"][0] == calframe.ece(first)  # a window's figure is the figure of its rows
    True
    """
    w = R.monitor(time_col, every=every, period=period, offset=offset, window_closed=window_closed,
                  baseline=baseline, figures=figures, ci=ci, n_boot=n_boot, seed=seed, ci_method=ci_method)
    figure_args = _figure_options(w, figure_options)
    kind = registry.kind_of(frame)
    if kind not in ("polars", "pandas", None) and (kind != "lazy" or w.ci is not None):
        def here(rows: Any) -> Any:  # the windows in memory (Dask's collected rows)
            return monitor(rows, time_col, every=every, figures=figures, prob=prob, label=label, baseline=baseline,
                           period=period, offset=offset, window_closed=window_closed, ci=ci, n_boot=n_boot,
                           ci_method=ci_method, seed=seed, progress=progress, **figure_options)

        out = where_the_rows_are(frame, kind, w, prob, label, figure_args, figure_options, here)
        if out is not None:
            return out
        frame = convert.from_arrow(frame) if kind == "pyarrow" else frame  # in memory (returned as a Table)
    lf, names, prob_arg, label_col, dtype = _prepared(frame, w, prob, label, figure_options)

    if w.ci is None:
        exprs = [getattr(expr, f)(prob_arg, label_col, **figure_args[f]) for f in w.figures]
        windows = _unnested(_windows(lf, w).agg(pl.len().cast(pl.Int64).alias("n"), *exprs), w.figures)
    else:
        windows = _windows_ci(lf, w, names, prob_arg, label_col, figure_args)
    out = _every_window(windows, w, dtype)
    if w.baseline is not None:
        out = _against_baseline(out, lf, w, dtype, prob_arg, label_col, figure_args)
    out = out.select(time_col, f"{time_col}_end", "n", *[c for f in w.figures for c in _figure_columns(f, w)])
    return convert.in_flavor_of(frame, out)  # lazy in, lazy out (a collected result: frames.dispatch.lazy_out)


def window_tests(frame: Frame, time_col: str, *, every: str | dt.timedelta = "1d", prob: Any = None,
                 label: str | None = None, period: str | dt.timedelta | None = None,
                 offset: str | dt.timedelta | None = None, window_closed: str = "left",
                 **test_options: Any) -> pl.DataFrame:
    """:func:`calframe.calibration_test` in each window of :func:`monitor` (the same windows and options): one
    row per window with rows, its start (``time_col``) and the test's columns (``verdict``, the p-values, ...).

    >>> import datetime as dt, numpy as np, polars as pl, calframe
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=4000)
    >>> df = pl.DataFrame({"prob": p, "label": (rng.uniform(size=4000) < p).astype(np.int8),
    ...                    "ts": [dt.datetime(2024, 1, 1 + i // 2000) for i in range(4000)]})
    >>> window_tests(df, "ts", every="1d")["verdict"].to_list()
    ['undecided', 'undecided']
    """
    w = R.monitor(time_col, every=every, period=period, offset=offset, window_closed=window_closed,
                  baseline=None, figures=("ece",), ci=None, n_boot=1000, seed=0)
    lf, names, prob_arg, label_col, _ = _prepared(frame, w, prob, label, test_options)
    members, long, win = _window_rows(lf, w, names)
    tests = api.calibration_test(long, prob_arg, label_col, by=win, **test_options)
    return members.select(time_col, win).join(tests.drop("n"), on=win, how="inner", maintain_order="left").drop(win)


def _prepared(frame: Frame, w: R.Windows, prob: Any, label: str | None,
              options: dict[str, Any]) -> tuple[pl.LazyFrame, list[str], Any, str, pl.DataType]:
    """The needed columns as a LazyFrame, sorted by a checked time column (nulls dropped with ``nulls="drop"``),
    with the frame's column names, the probability argument, the label column and the time column's type."""
    time_col = w.time_col
    names, needed, prob_arg, label_col = needed_columns(frame, w, prob, label, options)
    lf = _lazy(frame, needed)
    dtype = lf.collect_schema()[time_col]
    check_time_type(w, dtype)
    if options.get("nulls", "raise") == "drop":
        lf = lf.filter(pl.col(time_col).is_not_null())
    lf = lf.with_columns(_checked(pl.col(time_col), _null_times)).sort(time_col, maintain_order=True)
    return lf, names, prob_arg, label_col, dtype


def needed_columns(frame: Any, w: R.Windows, prob: Any, label: str | None, options: dict[str, Any],
                   names: list[str] | None = None) -> tuple[list[str], list[str], Any, str]:
    """(the frame's columns (``names``, else read), the columns the call reads, the probability argument, the label
    column)."""
    time_col = w.time_col
    names = columns_of(frame) if names is None else names
    weights = options.get("weights")
    probs, multi, label_col, _, weight_cols, _ = resolve_names(names, FUNC, prob, label, None, weights)
    if time_col not in names:
        raise ColumnNotFoundError(f"{FUNC}: the time column {time_col!r} (time_col=) is not in the frame; it has "
                                  f"columns {names}.")
    needed = list(dict.fromkeys([time_col, *probs, label_col, *weight_cols]))
    return names, needed, probs if multi else probs[0], label_col


def check_time_type(w: R.Windows, dtype: pl.DataType) -> None:
    """The time column's type: a date (whole-day durations) or a datetime."""
    time_col = w.time_col
    if not isinstance(dtype, (pl.Date, pl.Datetime)):
        raise ColumnTypeError(f"{FUNC}: the time column {time_col!r} has type {dtype}, not a date or datetime. "
                              f"Parse it first, e.g. pl.col({time_col!r}).str.to_datetime(), or pass another "
                              "time_col.")
    if isinstance(dtype, pl.Date) and w.sub_day:
        raise ParameterError(f"The 'every' parameter of {FUNC}: the time column {time_col!r} holds dates, so "
                             "every, period and offset count whole days (d, w, mo, q, y); got every="
                             f"{w.every!r}, period={w.period!r}, offset={w.offset!r}.", "every")


# --------------------------------------------------------------------------- where the rows are


def where_the_rows_are(frame: Any, kind: str, w: R.Windows, prob: Any, label: str | None,
                       figure_args: dict[str, dict[str, Any]], options: dict[str, Any],
                       here: Callable[[Any], Any]) -> Any:
    """``monitor`` on a frame of another engine (DuckDB, Spark, Ibis, pyarrow, Dask; a LazyFrame with ``ci``): the
    windows as a time key of the figures' per (group, bin) sums, in the frame's own engine
    (:mod:`calframe.engines.windows`). A call those windows do not cover returns None on a LazyFrame and a pyarrow
    Table (run in memory), is collected on Dask (``here`` on the rows) and refused on DuckDB, Spark and Ibis."""
    from .engines import dask_engine
    from .engines import windows as WN

    _, needed, prob_arg, label_col = needed_columns(frame, w, prob, label, options, WN.column_names(frame))

    def run() -> pl.DataFrame:
        return _windows_native(frame, kind, w, prob_arg, label_col, figure_args, options)

    try:
        if kind in ("lazy", "dask"):  # what runs is known now; the rows are read when the result is computed
            dtype = WN.time_type(frame, w.time_col)
            WN.grid_of(w, dtype)
            return pl.defer(run, schema=_schema(w, dtype)) if kind == "lazy" else WN.deferred_dask(run)
        out = run()
    except WN.Unsupported as exc:
        if kind in ("lazy", "pyarrow"):
            return None
        if kind == "dask":
            return dask_engine().collected(FUNC, frame, needed, here)
        from .engines.native.sums import refusal

        raise ParameterError(f"{FUNC}: " + refusal(kind, f"calframe.monitor with {exc}")) from None
    if kind == "pyarrow":
        return out.to_arrow()
    from .engines.native.sums import Engine

    return Engine(frame).out(out)


def _schema(w: R.Windows, dtype: pl.DataType) -> dict[str, pl.DataType]:
    t = w.time_col
    return {t: dtype, f"{t}_end": dtype, "n": pl.Int64} | {c: pl.Float64 for f in w.figures
                                                             for c in _figure_columns(f, w)}


def _windows_native(frame: Any, kind: str, w: R.Windows, prob: Any, label: str,
                    figure_args: dict[str, dict[str, Any]], options: dict[str, Any]) -> pl.DataFrame:
    """The windows of ``frame`` computed in its engine: one ``by=`` call per figure and tiling (module
    docstring of :mod:`calframe.engines.windows`), a Polars frame of the result's columns."""
    from .engines import windows as WN

    t = w.time_col
    dtype = WN.time_type(frame, t)
    check_time_type(w, dtype)
    names = WN.column_names(frame)
    key = fresh_name(names, "window")  # the windows' key, named as in memory (its errors name it)
    won = WN.windowed(frame, kind, w, t, options.get("nulls", "raise") == "drop", key, fresh_name(names, "bucket"))
    if won.nulls:
        raise InvalidValueError(f"{FUNC}: the time column {t!r} has null values in {E.rows(won.nulls)}; each row "
                                "needs a time to fall in a window. Drop them, or pass nulls='drop'.")
    if won.counts.height == 0:
        raise E.no_rows(FUNC)
    k, counts = won.grid.k, won.counts
    first = int(counts["bucket"][0])
    parts = []
    for j in range(k):
        native, key = won.tiling(j)
        table = None
        for f in w.figures:
            kwargs = figure_args[f] if w.ci is None else {**figure_args[f], "ci": w.ci, "n_boot": w.n_boot,
                                                          "ci_method": w.ci_method, "seed": w.seed}
            try:
                res = WN.as_polars(getattr(api, f)(native, prob, label, by=key, **kwargs))
            except InvalidValueError as exc:  # a window of zero weights: in memory, the figure's expression says
                if w.ci is None and E.ZERO_WEIGHT_GROUPS in str(exc):
                    raise E.zero_weights(f, options["weights"]) from None
                raise
            cols = [f"{c}{end}" for c in _columns(f) for end in (("", "_lo", "_hi") if w.ci is not None else ("",))]
            res = res.select(pl.col(key).cast(dtype), *cols)
            table = res if table is None else table.join(res, on=key, how="full", coalesce=True)
        parts.append(table.rename({key: t}))  # type: ignore[union-attr]
    windows = pl.concat(parts, how="vertical_relaxed")
    last = int(counts["bucket"][-1])
    starts = pl.DataFrame({t: WN.typed(won.grid, range(first, last + 1), dtype),
                           "n": _forward_sums(counts, first, last, k)})  # a window's rows: its k buckets'
    windows = starts.join(windows, on=t, how="left", maintain_order="left").filter(
        pl.col("n") > 0)
    out = _every_window(windows, w, dtype)
    if w.baseline is not None:
        out = _baseline_native(out, windows, won, w, dtype, prob, label, figure_args)
    return out.select(t, f"{t}_end", "n", *[c for f in w.figures for c in _figure_columns(f, w)]).collect()


def _forward_sums(counts: pl.DataFrame, first: int, last: int, k: int) -> list[int]:
    """Per bucket from ``first`` to ``last``, the rows of it and the k - 1 buckets after it."""
    per = dict(zip(counts["bucket"].to_list(), counts["n"].to_list()))
    return [sum(per.get(b + i, 0) for i in range(k)) for b in range(first, last + 1)]


def _baseline_native(out: pl.LazyFrame, windows: pl.DataFrame, won: Any, w: R.Windows, dtype: pl.DataType,
                     prob: Any, label: str, figure_args: dict[str, dict[str, Any]]) -> pl.LazyFrame:
    """``out`` against the baseline: one window's figures (a window start), or the figures of the rows of a
    (start, end) pair, computed in the frame's engine."""
    from .engines import windows as WN

    lo, hi, closed, what = _baseline_rows(w, dtype)
    cols = [c for f in w.figures for c in _columns(f)]
    if not isinstance(w.baseline, tuple):
        base = windows.filter(pl.col(w.time_col) == lo).select(cols)
    else:
        native = won.between(lo, hi)
        base = None if native is None else pl.concat(
            [WN.scalar_result(getattr(api, f)(native, prob, label, **figure_args[f]), _columns(f))
             for f in w.figures], how="horizontal")
    if base is None or base.height == 0 or base.select(pl.any_horizontal(pl.all().is_null())).item():
        raise EmptyInputError(f"{FUNC}: the baseline ({what}) holds no rows to evaluate; choose a baseline with "
                              "rows.")
    base = base.select(pl.col(c).alias(f"{c}_baseline") for c in cols)
    return (out.join(base.lazy(), how="cross", maintain_order="left")
            .with_columns((pl.col(c) - pl.col(f"{c}_baseline")).alias(f"{c}_diff") for c in cols))


# --------------------------------------------------------------------------- the parts


def _lazy(frame: Any, cols: list[str]) -> pl.LazyFrame:
    """The needed columns as a LazyFrame (pandas converted as every calframe function converts it)."""
    return convert.lazy_select(frame, cols, FUNC)


def _figure_options(w: R.Windows, options: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each figure's options: those of ``options`` its expression takes (and the seed, when it takes one)."""
    out: dict[str, dict[str, Any]] = {}
    used: set[str] = set()
    for f in w.figures:
        takes = inspect.signature(getattr(expr, f)).parameters
        out[f] = {k: v for k, v in {**options, "seed": w.seed}.items() if k in takes}
        used |= out[f].keys()
    unknown = sorted(set(options) - used)
    if unknown:
        raise ParameterError(f"{FUNC}: no figure of figures={list(w.figures)} takes the option(s) {unknown}; the "
                             "options are those of calframe.expr.<figure> (bins, binning, closed, lens, weights, "
                             "nulls, ...). The windows' closed side is window_closed=.", unknown[0])
    return out


def _checked(e: pl.Expr, check: Callable[[pl.Series], None]) -> pl.Expr:
    """``e``, with ``check`` run on all of it when the query runs (it raises a calframe error)."""
    def run(s: pl.Series) -> pl.Series:
        check(s)
        return s

    return e.map_batches(run)


def _null_times(s: pl.Series) -> None:
    if s.null_count():
        raise InvalidValueError(f"{FUNC}: the time column {s.name!r} has null values in {E.rows(s.null_count())}; "
                                "each row needs a time to fall in a window. Drop them, or pass nulls='drop'.")


def _windows(lf: pl.LazyFrame, w: R.Windows) -> Any:
    return lf.group_by_dynamic(w.time_col, every=w.every, period=w.period, offset=w.offset, closed=w.closed)


def _windows_ci(lf: pl.LazyFrame, w: R.Windows, names: list[str], prob: Any, label: str,
                figure_args: dict[str, dict[str, Any]]) -> pl.DataFrame:
    """The windows with bootstrap bounds: each window's rows (a row in several overlapping windows once in each)
    numbered by window, and every figure of the eager API with ``by=`` the window and ``ci``."""
    members, long, win = _window_rows(lf, w, names)
    out = members.select(w.time_col, win, "n")
    for f in w.figures:
        fn = getattr(api, f)
        res = fn(long, prob, label, by=win, ci=w.ci, n_boot=w.n_boot, ci_method=w.ci_method,
                 **{**figure_args[f], "seed": w.seed})
        cols = [f"{c}{end}" for c in _columns(f) for end in ("", "_lo", "_hi")]
        out = out.join(res.select(win, *cols), on=win, how="left", maintain_order="left")
    return out.drop(win)


def _window_rows(lf: pl.LazyFrame, w: R.Windows, names: list[str]) -> tuple[pl.DataFrame, pl.DataFrame, str]:
    """(one row per window with rows: its start, ``win`` (the start again, the window's key) and rows ``n``; each
    window's rows, a row in several overlapping windows once in each, with its window's ``win``; ``win``'s
    name)."""
    row, win = fresh_name(names, "row"), fresh_name(names, "window")
    rows = lf.with_row_index(row)
    members = (_windows(rows, w).agg(pl.col(row), pl.len().cast(pl.Int64).alias("n"))
               .with_columns(pl.col(w.time_col).alias(win)).collect())  # a window is its start (its draws' key)
    long = (members.lazy().select(win, pl.col(row)).explode(row)
            .join(rows, on=row, how="inner", maintain_order="left").drop(row).collect())
    return members, long, win


def _shift(e: pl.Expr, d: str | dt.timedelta) -> pl.Expr:
    return e.dt.offset_by(d) if isinstance(d, str) else e + pl.lit(d)


def _every_window(windows: Any, w: R.Windows, dtype: pl.DataType) -> pl.LazyFrame:
    """Every window from the first to the last with rows (the empty ones: ``n`` = 0, null figures), with its
    end; a frame with no window at all is refused when the query runs."""
    t = w.time_col
    windows = windows.lazy()
    span = _checked(pl.col(t), _some_rows)
    grid = windows.select(
        (pl.date_range if isinstance(dtype, pl.Date) else pl.datetime_range)(
            span.min(), span.max(), interval=w.every).alias(t))
    return (grid.join(windows, on=t, how="left", maintain_order="left")
            .with_columns(pl.col("n").fill_null(0), _shift(pl.col(t), w.period).alias(f"{t}_end")))


def _some_rows(s: pl.Series) -> None:
    if s.len() == 0:
        raise E.no_rows(FUNC)


def _instant(value: Any, dtype: pl.DataType) -> Any:
    """A baseline bound (date, datetime or ISO string) as a value of the time column's type (a naive datetime is
    in the column's time zone)."""
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value)
        except ValueError:
            raise R.bad_param(FUNC, "baseline", "dates, datetimes or ISO 8601 strings such as '2024-01-01'",
                              value) from None
    s = pl.Series([value])
    if isinstance(dtype, pl.Datetime) and dtype.time_zone is not None and s.dtype == pl.Datetime and (
            s.dtype.time_zone is None):
        s = s.dt.replace_time_zone(dtype.time_zone)
    if isinstance(dtype, pl.Date) and isinstance(value, dt.datetime) and value.time() != dt.time(0):
        raise R.bad_param(FUNC, "baseline", "dates for a Date time column", value)
    return s.cast(dtype).item()


def _baseline_rows(w: R.Windows, dtype: pl.DataType) -> tuple[Any, Any, str, str]:
    """(start, end, closed side, description) of the baseline rows; a single instant must start a window."""
    b = w.baseline
    if isinstance(b, tuple):
        lo, hi = _instant(b[0], dtype), _instant(b[1], dtype)
        if not lo < hi:
            raise R.bad_param(FUNC, "baseline", "a (start, end) pair with start < end", b)
        return lo, hi, "left", f"{lo} <= {w.time_col} < {hi}"
    lo = _instant(b, dtype)
    neg = None if w.offset is None else (w.offset[1:] if w.offset.startswith("-") else "-" + w.offset) if isinstance(
        w.offset, str) else -w.offset
    start = pl.lit(lo, dtype=dtype)
    start = start if neg is None else _shift(start, neg)
    start = start.dt.truncate(w.every)
    start = start if w.offset is None else _shift(start, w.offset)
    aligned = pl.select(start).item()
    if aligned != lo:
        raise ParameterError(f"The 'baseline' parameter of {FUNC}: {b!r} does not start a window of every="
                             f"{w.every!r}{'' if w.offset is None else f', offset={w.offset!r}'} (the window "
                             f"holding it starts at {aligned}). Give a window start, or a (start, end) pair for a "
                             "range of rows.", "baseline")
    hi = pl.select(_shift(pl.lit(lo, dtype=dtype), w.period)).item()
    return lo, hi, w.closed, f"the window starting {lo}"


def _against_baseline(out: pl.LazyFrame, lf: pl.LazyFrame, w: R.Windows, dtype: pl.DataType, prob: Any,
                      label: str, figure_args: dict[str, dict[str, Any]]) -> pl.LazyFrame:
    """``out`` with each figure on the baseline rows (``<figure>_baseline``) and the windows' differences."""
    lo, hi, closed, what = _baseline_rows(w, dtype)

    def some(s: pl.Series) -> None:  # a figure of no rows is null (calframe.expr)
        if s.null_count():
            raise EmptyInputError(f"{FUNC}: the baseline ({what}) holds no rows to evaluate; choose a baseline "
                                  "with rows.")

    rows = lf.filter(pl.col(w.time_col).is_between(lo, hi, closed=closed))
    base = rows.select(_checked(getattr(expr, f)(prob, label, **figure_args[f]), some).alias(f)
                       for f in w.figures)
    base = _unnested(base, w.figures).select(pl.col(c).alias(f"{c}_baseline") for f in w.figures for c in _columns(f))
    cols = [c for f in w.figures for c in _columns(f)]
    return (out.join(base, how="cross", maintain_order="left")
            .with_columns((pl.col(c) - pl.col(f"{c}_baseline")).alias(f"{c}_diff") for c in cols))


def _unnested(frame: Any, figures: Sequence[str]) -> Any:
    """``frame`` with the Struct of each figure of several columns (its expression's, :mod:`calframe.expr`) as
    those columns."""
    several = [f for f in figures if len(_columns(f)) > 1]
    return frame.unnest(several) if several else frame


def _columns(f: str) -> tuple[str, ...]:
    """The columns of figure ``f`` (the figure table's: one, or several for e.g. ``brier_decomposition``)."""
    return registry.figure_of(f).names


def _figure_columns(f: str, w: R.Windows) -> list[str]:
    return [x for c in _columns(f) for x in (c, *([f"{c}_lo", f"{c}_hi"] if w.ci is not None else []),
                                               *([f"{c}_baseline", f"{c}_diff"] if w.baseline is not None else []))]
