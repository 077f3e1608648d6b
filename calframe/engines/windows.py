"""``monitor``'s windows where the rows are (DuckDB, Spark, Ibis, pyarrow, Dask, a LazyFrame): a time key of the
per (group, bin) sums.

Every row's **bucket** is computed in the frame's own engine from its time's calendar fields (year, day of the
year, hour, minute, second, microsecond: exact integers on every engine), as Polars' ``group_by_dynamic`` places
it: ``floor((t - offset - origin) / every)`` for a fixed ``every`` (the origin 1970-01-01, its next Monday
1970-01-05 for weeks; the days and the time of day apart when ``every`` divides a day or is a whole number of
days, so that an engine dividing in float64 stays exact), ``floor(months since 1970-01 / n)`` for ``every`` in
months (mo, q, y). One small query counts the rows per bucket (the windows' ``n``, and the null times' count);
each window's start is put back into the engine as a small table of (bucket, start) joined on the bucket, so that
a window's key is its start, with the time column's type: the key of its bootstrap draws, as in memory.

A ``period`` of ``k`` times ``every`` gives windows of ``k`` buckets that overlap: the windows starting at
buckets ``j, j + k, j + 2k, ...`` tile the rows (each row in exactly one), so the windows are ``k`` ``by=``
calls per figure, one per tiling ``j``, each one pass over the rows in their engine (each window's bucket sums
added up by the engine's group-by). Anything else (``window_closed`` "both" / "none", ``every`` mixing calendar
and fixed units, an offset with ``every`` in months, a period that is not a multiple of ``every``, durations in
nanoseconds, a time zone other than UTC) is :class:`Unsupported`: a pyarrow Table and a LazyFrame then run it in
memory, a DuckDB, Spark or Ibis frame refuses it naming what runs, a Dask frame collects the needed columns.

>>> import datetime as dt
>>> g = grid(_windows("1d", "3d", None, "left"), "us")
>>> (g.size, g.shift, g.k), g.start(19723)
((86400000000, 0, 3), datetime.datetime(2024, 1, 1, 0, 0))
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from collections.abc import Callable
from typing import Any

import polars as pl

from .._errors import ParameterError

__all__ = ["Unsupported", "Grid", "grid", "grid_of", "bucket_expr", "Windowed", "windowed", "column_names", "time_type", "collect", "as_polars",
           "scalar_result", "deferred_dask", "typed", "DAY"]

#: microseconds in a day
DAY = 86_400_000_000
_UNITS = {"ns": None, "us": 1, "ms": 1_000, "s": 1_000_000, "m": 60_000_000, "h": 3_600_000_000, "d": DAY,
          "w": 7 * DAY}
_MONTHS = {"mo": 1, "q": 3, "y": 12}
_PART = re.compile(r"(\d+)(ns|us|ms|mo|s|m|h|d|w|q|y)")
_EPOCH = _dt.datetime(1970, 1, 1)


class Unsupported(ParameterError):
    """A ``monitor`` call whose windows this module does not compute where the rows are."""


@dataclass(frozen=True)
class Grid:
    """The buckets of ``every``: ``months`` (calendar months) or microseconds, of ``size`` units each,
    counted from ``shift`` units (the offset plus the origin: a Monday for weeks); ``k`` buckets per window
    (``period`` / ``every``); ``right``: windows closed on the right (start < t <= end)."""

    months: bool
    size: int
    shift: int
    k: int
    right: bool

    def start(self, bucket: int) -> _dt.datetime:
        """The start of bucket ``bucket`` (a naive datetime)."""
        if self.months:
            m = bucket * self.size + self.shift
            return _dt.datetime(1970 + m // 12, m % 12 + 1, 1)
        return _EPOCH + _dt.timedelta(microseconds=bucket * self.size + self.shift)


def _us(d: str | _dt.timedelta) -> tuple[int, int] | None:
    """(months, microseconds) of a Polars duration, None when it has nanoseconds."""
    if isinstance(d, _dt.timedelta):
        return 0, d // _dt.timedelta(microseconds=1)
    sign = -1 if d.startswith("-") else 1
    months = us = 0
    for n, u in _PART.findall(d.lstrip("-")):
        if u in _MONTHS:
            months += int(n) * _MONTHS[u]
        elif _UNITS[u] is None:
            return None
        else:
            us += int(n) * _UNITS[u]
    return sign * months, sign * us


def grid(w: Any, unit: str) -> Grid:
    """The bucket grid of :class:`calframe.request.Windows` ``w`` on a time column of Polars time unit ``unit``
    ("ns", "us", "ms"; "d" for dates), or :class:`Unsupported` saying what is not computed here."""
    every, period, offset = _us(w.every), _us(w.period), (0, 0) if w.offset is None else _us(w.offset)
    if w.closed not in ("left", "right"):
        raise Unsupported(f"window_closed={w.closed!r} (windows closed on one side run where the rows are)")
    if every is None or period is None or offset is None:
        raise Unsupported("durations in nanoseconds")
    (em, eu), (pm, pu), (om, ou) = every, period, offset
    if em and eu or pm and pu or om:
        raise Unsupported("durations mixing months with fixed units, or an offset in months")
    if em:
        if ou or pm % em:
            raise Unsupported("an offset with every= in months, or a period that is not a multiple of every")
        return Grid(True, em, 0, pm // em, w.closed == "right")
    if pu % eu:
        raise Unsupported("a period that is not a multiple of every")
    weeks = eu % (7 * DAY) == 0
    shift = ou + (4 * DAY if weeks else 0)  # 1970-01-05, a Monday, starts Polars' weeks
    if unit == "ms" and (eu % 1000 or shift % 1000) or unit == "ns" and w.closed == "right":
        raise Unsupported("durations below the time column's unit, or windows closed on the right of a "
                          "nanosecond time")
    return Grid(False, eu, shift, pu // eu, w.closed == "right")


def _windows(every: Any, period: Any, offset: Any, closed: str) -> Any:
    """A stand-in for :class:`calframe.request.Windows` (the doctest's)."""
    from types import SimpleNamespace

    return SimpleNamespace(every=every, period=period, offset=offset, closed=closed)


def bucket_expr(nw: Any, g: Grid, col: str, date: bool) -> Any:
    """The bucket of each row's time ``col`` (a narwhals expression: exact integer arithmetic on the calendar
    fields, whose quotients stay far below 2^53 where an engine divides in float64)."""
    t = nw.col(col)
    y = t.dt.year().cast(nw.Int64)
    if g.months:
        m = (y - 1970) * 12 + t.dt.month().cast(nw.Int64) - 1  # months since 1970-01, as Polars counts them
        if g.right:  # start < t <= end: a time at a month's first instant belongs to the month before
            first = (t.dt.day() == 1) & _midnight(t, date)
            m = nw.when(first).then(m - 1).otherwise(m)
        return (m - g.shift) // g.size
    leaps = (y - 1) // 4 - (y - 1) // 100 + (y - 1) // 400 - (1969 // 4 - 1969 // 100 + 1969 // 400)
    days = (y - 1970) * 365 + leaps + t.dt.ordinal_day().cast(nw.Int64) - 1
    rest = nw.lit(0) if date else (t.dt.hour().cast(nw.Int64) * 3_600_000_000 + t.dt.minute().cast(nw.Int64)
                                   * 60_000_000 + t.dt.second().cast(nw.Int64) * 1_000_000
                                   + t.dt.microsecond().cast(nw.Int64))
    shift_days, shift_rest = divmod(g.shift + (1 if g.right else 0), DAY)
    d, r = days - shift_days, rest - shift_rest
    d = nw.when(r < 0).then(d - 1).otherwise(d)
    r = nw.when(r < 0).then(r + DAY).otherwise(r)
    if g.size % DAY == 0:
        return d // (g.size // DAY)
    if DAY % g.size == 0:
        return d * (DAY // g.size) + r // g.size
    return (d * DAY + r) // g.size  # below 2^52 until 2112: exact where an engine divides in float64


def _midnight(t: Any, date: bool) -> Any:
    if date:
        return t.dt.year() == t.dt.year()
    return (t.dt.hour() == 0) & (t.dt.minute() == 0) & (t.dt.second() == 0) & (t.dt.microsecond() == 0)


@dataclass
class Windowed:
    """A frame's windows: the rows per bucket (``counts``: a Polars frame of (bucket, n), sorted), the rows with a
    null time (``nulls``), the grid and the time column's type; ``tiling(j)``: the frame (native, of the input's
    kind) with the key of its window in tiling ``j`` (the windows starting at buckets congruent to ``j`` modulo
    ``k``: each row in one) as a column of the time column's type, and that column's name; ``between(lo, hi)``:
    the frame's rows with lo <= time < hi (native), None when there are none."""

    counts: pl.DataFrame
    nulls: int
    grid: Grid
    dtype: pl.DataType
    tiling: Callable[[int], tuple[Any, str]]
    between: Callable[[Any, Any], Any]

    def starts(self, j: int) -> list[int]:
        """The first buckets of tiling ``j``'s windows that hold rows."""
        k = self.grid.k
        return sorted({j + k * ((b - j) // k) for b in self.counts["bucket"].to_list()})


def typed(g: Grid, buckets: Any, dtype: pl.DataType) -> pl.Series:
    """The starts of ``buckets`` as a Series of the time column's type ``dtype``."""
    s = pl.Series([g.start(int(b)) for b in buckets], dtype=pl.Datetime("us"))
    tz = getattr(dtype, "time_zone", None)
    return (s.dt.replace_time_zone(tz) if tz is not None else s).cast(dtype)


def grid_of(w: Any, dtype: pl.DataType) -> Grid:
    """:func:`grid` on a time column of type ``dtype`` (a time zone other than UTC: :class:`Unsupported`)."""
    if getattr(dtype, "time_zone", None) not in (None, "UTC"):
        raise Unsupported("a time column with a time zone other than UTC")
    return grid(w, "d" if dtype == pl.Date else getattr(dtype, "time_unit", "us"))


def windowed(frame: Any, kind: str, w: Any, time_col: str, nulls_drop: bool, key: str, bucket: str) -> Windowed:
    """:class:`Windowed` of ``frame`` (of ``kind``: "lazy", "dask" or a narwhals engine kind) for the windows
    ``w`` (a time zone other than UTC: :class:`Unsupported`); ``key``, ``bucket``: the names of the window key and
    bucket columns (not the frame's)."""
    dtype = time_type(frame, time_col)
    g, date = grid_of(w, dtype), dtype == pl.Date
    if kind == "dask":
        return _dask_windowed(frame, g, dtype, time_col, nulls_drop, key, bucket)
    import narwhals as nw

    lf = _lazy(frame)
    if nulls_drop:
        lf = lf.filter(~nw.col(time_col).is_null())
    lf = lf.with_columns(bucket_expr(nw, g, time_col, date).alias(bucket))
    counts, nulls = _counts(collect(lf.group_by(bucket).agg(nw.len().alias("n"))), bucket)
    table = _tables(frame, kind, nw)

    def tiling(j: int) -> tuple[Any, str]:
        starts = won.starts(j)
        small = pl.DataFrame({bucket: pl.Series(starts, dtype=pl.Int64), key: typed(g, starts, dtype)})
        col = nw.col(bucket)
        tile = col if g.k == 1 else (col - j) // g.k * g.k + j
        out = lf.with_columns(tile.alias(bucket)).join(table(small), on=bucket, how="inner").drop(bucket)
        if getattr(dtype, "time_zone", None) is not None:  # UTC (Spark's session time): the key is the naive start,
            out = out.with_columns(nw.col(key).cast(nw.Datetime(dtype.time_unit)))  # the draws' key in memory
        return out.to_native(), key

    def between(lo: Any, hi: Any) -> Any:
        t = nw.col(time_col)
        rows = lf.filter((t >= nw.lit(lo)) & (t < nw.lit(hi)))
        return rows.drop(bucket).to_native() if int(collect(rows.select(nw.len().alias("n")))["n"][0]) else None

    won = Windowed(counts, nulls, g, dtype, tiling, between)
    return won


def _counts(counts: pl.DataFrame, bucket: str) -> tuple[pl.DataFrame, int]:
    """(rows per bucket: ("bucket", "n"), sorted; rows of a null time) of a (``bucket``, n) table."""
    nulls = int(counts.filter(pl.col(bucket).is_null())["n"].sum())
    return counts.filter(pl.col(bucket).is_not_null()).select(
        pl.col(bucket).cast(pl.Int64).alias("bucket"), pl.col("n").cast(pl.Int64)).sort("bucket"), nulls


def _dask_windowed(ddf: Any, g: Grid, dtype: pl.DataType, time_col: str, nulls_drop: bool, key: str,
                   bucket: str) -> Windowed:
    """:class:`Windowed` of a Dask DataFrame: the buckets and keys computed per partition (Polars on the
    partition's time column), the rows per bucket added up by Dask."""
    import numpy as np
    import pandas as pd

    if nulls_drop:
        ddf = ddf[ddf[time_col].notna()]
    meta = ddf._meta.assign(**{bucket: pd.Series([], dtype="Int64")})
    ddf = ddf.map_partitions(_with_bucket, g, time_col, dtype == pl.Date, bucket, meta=meta)
    from .partitions.client import compute_now

    sizes = compute_now(ddf[bucket].value_counts(dropna=False))[0]
    counts, nulls = _counts(pl.DataFrame({bucket: pl.Series(sizes.index.astype("Int64").to_numpy(
        dtype=np.float64, na_value=np.nan), nan_to_null=True).cast(pl.Int64), "n": sizes.to_numpy()}), bucket)

    def tiling(j: int) -> tuple[Any, str]:
        meta = ddf._meta.assign(**{key: ddf._meta[time_col]}).drop(columns=[bucket])
        return ddf.map_partitions(_with_key, g, j, key, dtype, bucket, meta=meta), key

    def between(lo: Any, hi: Any) -> Any:
        t = ddf[time_col]
        rows = ddf[(t >= pd.Timestamp(lo)) & (t < pd.Timestamp(hi))].drop(columns=[bucket])
        return rows if int(compute_now(rows.shape[0])[0]) else None

    won = Windowed(counts, nulls, g, dtype, tiling, between)
    return won


def _with_bucket(part: Any, g: Grid, time_col: str, date: bool, bucket: str) -> Any:
    """A pandas partition with its rows' buckets (nullable Int64)."""
    import narwhals as nw
    import pandas as pd

    times = nw.from_native(pl.from_pandas(part[[time_col]]))
    b = times.select(bucket_expr(nw, g, time_col, date).alias(bucket)).to_native()[bucket]
    return part.assign(**{bucket: pd.array(b.to_list(), dtype="Int64")})


def _with_key(part: Any, g: Grid, j: int, key: str, dtype: pl.DataType, bucket: str) -> Any:
    """A pandas partition with the start of each row's window in tiling ``j`` (the time column's type)."""
    import numpy as np

    b = part[bucket].to_numpy(dtype="int64")
    uniq, inverse = np.unique(j + g.k * ((b - j) // g.k), return_inverse=True)
    keys = typed(g, uniq, dtype).to_pandas()
    return part.drop(columns=[bucket]).assign(**{key: keys.iloc[inverse].to_numpy()})


def _lazy(frame: Any) -> Any:
    """``frame`` as a narwhals LazyFrame."""
    import narwhals as nw

    f = nw.from_native(frame)
    return f.lazy() if isinstance(f, nw.DataFrame) else f


def column_names(frame: Any) -> list[str]:
    """``frame``'s column names (any engine's frame)."""
    if hasattr(frame, "map_partitions"):  # a Dask DataFrame
        return [str(c) for c in frame.columns]
    return list(_lazy(frame).collect_schema().names())


def time_type(frame: Any, time_col: str) -> pl.DataType:
    """The Polars type of ``frame``'s column ``time_col`` (a date or datetime; another type as its name)."""
    import narwhals as nw

    if hasattr(frame, "map_partitions"):  # a Dask DataFrame: its partitions' pandas type
        return pl.from_pandas(frame._meta[[time_col]]).schema[time_col]
    return _polars_dtype(nw, _lazy(frame).collect_schema()[time_col])


def collect(q: Any) -> pl.DataFrame:
    """A small narwhals query's result as a Polars frame."""
    import narwhals as nw

    out = q.collect(backend="polars") if isinstance(q, nw.LazyFrame) else q
    return out.to_polars()


def as_polars(res: Any) -> pl.DataFrame:
    """A (small) calframe result of any engine as a Polars frame: a LazyFrame collected, a Dask result computed,
    a DuckDB relation, Spark DataFrame, Ibis table or pyarrow Table read through narwhals."""
    if isinstance(res, pl.LazyFrame):
        return res.collect()
    if isinstance(res, pl.DataFrame):
        return res
    if hasattr(res, "__dask_graph__"):
        from .partitions.client import compute_now  # (on a distributed worker: through its client)

        out = compute_now(res)[0]
        return out if isinstance(out, (pl.DataFrame, float)) else pl.from_pandas(out.reset_index(drop=True))
    return collect(_lazy(res))


def scalar_result(res: Any, columns: tuple[str, ...]) -> pl.DataFrame:
    """A figure's result without ``by`` (a float, or a one-row frame of ``n`` and its columns) as a one-row
    Polars frame of its ``columns``."""
    if hasattr(res, "__dask_graph__"):
        from .partitions.client import compute_now

        res = compute_now(res)[0]
    if isinstance(res, float):
        return pl.DataFrame({columns[0]: [res]})
    if isinstance(res, dict):
        return pl.DataFrame({c: [res[c]] for c in columns})
    return as_polars(res).select(columns)


def deferred_dask(run: Any) -> Any:
    """A Dask result (``calframe.engines.partitions.client.DaskResult``) that runs ``run()`` (a Polars frame, given back as
    pandas) when computed: its passes are Dask's own, started then."""
    import dask

    from .partitions.client import DaskResult

    from .._progress import carry  # the call's progress= holds where the result is computed

    return DaskResult(dask.delayed(_nothing)(), carry(lambda _: run().to_pandas()), "monitor")


def _nothing() -> None:
    return None


def _tables(frame: Any, kind: str, nw: Any) -> Any:
    """``table(df)``: a small Polars frame as a narwhals LazyFrame of ``frame``'s engine."""
    if kind == "lazy":
        return lambda df: nw.from_native(df.lazy())
    from .native.sums import Engine

    return Engine(frame).table


def _polars_dtype(nw: Any, d: Any) -> pl.DataType:
    """The Polars type of a narwhals time type (other types: as their name, for the caller's error)."""
    if d == nw.Date:
        return pl.Date()
    if isinstance(d, nw.Datetime):
        return pl.Datetime(d.time_unit, d.time_zone)
    try:
        return getattr(pl, type(d).__name__)()
    except (AttributeError, TypeError):
        return pl.Object()
