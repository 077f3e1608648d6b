"""monitor where the rows are (calframe/engines/windows.py): DuckDB, Ibis, pyarrow, Dask, a LazyFrame with ``ci``
(Spark: the cases marked spark), against eager Polars' ``group_by_dynamic`` windows.

The windows are a time key computed in the frame's engine, one ``by=`` call per figure (and per tiling of a period
that is a multiple of ``every``): the engines' sums are exact fixed-point sums, eager Polars' float sums, so the
figures and the bounds drawn from the moments agree to rounding (1e-12). A spy fails a case that brings the rows
into Python (the eager engine, or eager monitor's in-memory windows)."""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl
import pytest

from _engine_checks import native_frame, result_to_polars, refuse_rows

import calframe
from calframe import monitoring
from calframe.engines import eager

duckdb = pytest.importorskip("duckdb")
ibis = pytest.importorskip("ibis")
dd = pytest.importorskip("dask.dataframe")
import calframe.frames.dask  # noqa: E402,F401  (registers ddf.calib)


def _frame(n: int = 4000, seed: int = 3) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    secs = rng.integers(0, 40 * 86_400, n)
    return pl.DataFrame({
        "prob": p, "label": (rng.uniform(size=n) < p ** 1.3).astype(np.int8), "w": rng.gamma(2.0, 1.0, n),
        "ts": pl.Series([dt.datetime(2023, 12, 20, 5, 17) + dt.timedelta(seconds=int(s), microseconds=int(u))
                         for s, u in zip(secs, rng.integers(0, 10**6, n))]),
    }).with_columns(day=pl.col("ts").dt.date())


DF = _frame()
KINDS = ["duckdb", "ibis", "pyarrow", "dask", "lazy"]


_native = native_frame


_polars = result_to_polars


@pytest.fixture
def no_rows(monkeypatch):
    """The eager engine, and eager monitor's windows in memory, fail the test if they are reached."""
    monkeypatch.setattr(eager, "evaluate", refuse_rows)
    monkeypatch.setattr(monitoring, "_prepared", refuse_rows)


def _same(got: pl.DataFrame, want: pl.DataFrame) -> None:
    assert got.columns == want.columns
    for c in want.columns:
        if want[c].dtype == pl.Float64:
            np.testing.assert_allclose(got[c], want[c], rtol=1e-12, atol=1e-14, err_msg=c)
        elif isinstance(want[c].dtype, (pl.Date, pl.Datetime)):
            g = got[c]
            if isinstance(g.dtype, pl.Datetime) and g.dtype.time_zone is not None:  # Spark: its session's UTC
                g = g.dt.replace_time_zone(None)
            assert g.cast(want[c].dtype).to_list() == want[c].to_list(), c
        else:
            assert got[c].to_list() == want[c].to_list(), c


CALLS = {
    "default": ("ts", {}),
    "figures weighted 6h": ("ts", {"every": "6h", "figures": ["ece", "brier", "accuracy", "mce"], "bins": 10,
                                   "weights": "w"}),
    "period of 4 buckets, offset": ("ts", {"every": "6h", "period": "1d", "offset": "2h", "figures": ["ece", "brier"]}),
    "weeks right closed, baseline": ("ts", {"every": "1w", "window_closed": "right", "baseline": "2023-12-18"}),
    "months, baseline pair": ("ts", {"every": "1mo", "baseline": ("2023-12-20", "2024-01-03"), "figures": ["rmsce"]}),
    "7h": ("ts", {"every": "7h", "figures": "log_loss"}),
    "dates, 3d of 6d": ("day", {"every": "3d", "period": "6d", "baseline": "2023-12-22"}),
    "ci": ("ts", {"every": "1w", "ci": 0.9, "n_boot": 60, "seed": 4, "bins": 8}),
    "ci weighted, period": ("ts", {"every": "1w", "period": "2w", "ci": 0.9, "n_boot": 40, "weights": "w",
                                   "ci_method": "percentile"}),
    # quantile edges found per window where the rows are, held fixed under the draws (calframe.moments.edges_ci)
    "ci quantile": ("ts", {"every": "1w", "ci": 0.9, "n_boot": 40, "binning": "quantile", "bins": 6}),
}


@pytest.mark.parametrize("name", list(CALLS))
@pytest.mark.parametrize("kind", KINDS)
def test_monitor_where_the_rows_are(kind, name, request):
    col, kwargs = CALLS[name]
    collects = "weights" in kwargs or "binning" in kwargs  # Dask's weighted and data-dependent intervals collect
    if not (kind == "dask" and "ci" in kwargs and collects):
        request.getfixturevalue("no_rows")
    if kind == "lazy" and "ci" not in kwargs:
        pytest.skip("a LazyFrame without ci runs Polars' group_by_dynamic, streamed (tests/test_monitor.py)")
    want = _eager(col, kwargs)
    got = _polars(calframe.monitor(_native(kind, DF), col, **kwargs))
    if kind == "dask" and col == "day":  # a pandas frame holds dates as datetimes, as eager pandas does
        want = want.with_columns(pl.col("day", "day_end").cast(pl.Datetime("ms")))
    _same(got, want)


def _eager(col: str, kwargs: dict) -> pl.DataFrame:
    """Eager Polars' windows (the spy lifted: the reference runs in memory)."""
    saved = monitoring.__dict__.get("_prepared"), eager.evaluate
    try:
        monitoring._prepared = _PREPARED
        eager.evaluate = _EVALUATE
        return calframe.monitor(DF, col, **kwargs)
    finally:
        monitoring._prepared, eager.evaluate = saved


_PREPARED, _EVALUATE = monitoring._prepared, eager.evaluate


def test_the_draws_are_keyed_by_the_window_start():
    """A window's bounds are those of the figure by its start: ``ece(by=<start>, ci=)`` on DuckDB, bit for bit
    the same as on a pyarrow Table and a LazyFrame (the engines' moments are exact)."""
    kwargs = {"every": "1w", "ci": 0.9, "n_boot": 50, "seed": 7}
    outs = [_polars(calframe.monitor(_native(k, DF), "ts", **kwargs)) for k in ("duckdb", "pyarrow", "lazy")]
    for o in outs[1:]:
        assert o.equals(outs[0])


@pytest.mark.parametrize("kind", KINDS)
def test_bad_input_gives_the_eager_errors(kind):
    """A window of one row (no interval: NaN bounds), a bin of one row, all weights zero in a window or
    everywhere, null times: the eager result or error on every engine."""
    one = pl.concat([DF, DF.head(1).with_columns(ts=pl.datetime(2024, 3, 1, 3))])  # a window and a bin of one row
    kw = {"every": "1w", "ci": 0.9, "n_boot": 30}
    _same(_polars(calframe.monitor(_native(kind, one), "ts", **kw)), calframe.monitor(one, "ts", **kw))
    zero_late = DF.with_columns(w=pl.when(pl.col("ts") >= dt.datetime(2024, 1, 8)).then(0.0).otherwise(pl.col("w")))
    cases = [(zero_late, {"weights": "w"}), (zero_late, {"weights": "w", "ci": 0.9, "n_boot": 20}),
             (DF.with_columns(w=pl.lit(0.0)), {"weights": "w"}),
             (DF.with_columns(ts=pl.when(pl.int_range(pl.len()) < 3).then(None).otherwise(pl.col("ts"))), {}),
             (DF.head(0), {})]
    for df, options in cases:
        if kind == "lazy" and "ci" not in options:
            continue
        with pytest.raises(calframe.CalframeError) as want:
            calframe.monitor(df, "ts", every="1w", **options)
        with pytest.raises(type(want.value)) as got:
            _polars(calframe.monitor(_native(kind, df), "ts", every="1w", **options))
        assert str(got.value).splitlines()[0] == str(want.value).splitlines()[0]  # (Polars' note on its expression)


@pytest.mark.parametrize("kind", ["duckdb", "ibis"])
def test_windows_not_computed_there_are_refused_saying_what_runs(kind):
    with pytest.raises(calframe.ParameterError, match="window_closed='both'.*not supported"):
        calframe.monitor(_native(kind, DF), "ts", window_closed="both")


@pytest.mark.parametrize("kind", ["pyarrow", "lazy", "dask"])
def test_windows_not_computed_there_run_in_memory(kind):
    kwargs = {"every": "1d", "window_closed": "none", "ci": 0.9, "n_boot": 20}
    _same(_polars(calframe.monitor(_native(kind, DF), "ts", **kwargs)), calframe.monitor(DF, "ts", **kwargs))


@pytest.mark.spark
@pytest.mark.parametrize("name", ["default", "period of 4 buckets, offset", "ci weighted, period"])
def test_monitor_on_spark(spark, name):
    col, kwargs = CALLS[name]
    got = _polars(calframe.monitor(spark.createDataFrame(DF.to_arrow()), col, **kwargs))
    _same(got, calframe.monitor(DF, col, **kwargs))
