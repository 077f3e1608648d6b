"""The companions' intervals (brier, log_loss, accuracy) from the moments of their row values, streamed on a
LazyFrame (calframe.engines.plan.row_means.moment_companion), and calibration_test with frequency weights where the
rows are, each against eager Polars (the rows in memory).

The LazyFrame's moments are exact fixed-point sums and eager Polars' are float sums in row order: they agree to
rounding (1e-12), the draws coming from the same streams."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import calframe
from calframe.engines import eager

from test_moments_engines import DF, _native, _polars, _same


@pytest.fixture
def no_rows(monkeypatch):
    """The eager engine (the rows in memory) fails the test if it is reached."""
    def refuse(*a, **k):
        raise AssertionError("the rows were collected")

    monkeypatch.setattr(eager, "evaluate", refuse)


@pytest.mark.parametrize("func", ["brier", "log_loss", "accuracy"])
@pytest.mark.parametrize("kw", [{}, {"by": "g", "weights": "w"}, {"by": "g", "ci_method": "percentile"}],
                         ids=["one group", "by weighted", "percentile"])
def test_companion_intervals_stream_on_a_lazyframe(func, kw, request):
    """A one-row group and small cells (drawn exactly from the rows of one bounded query) included."""
    fn = getattr(calframe, func)
    want = fn(DF, ci=0.9, n_boot=150, **kw)
    request.getfixturevalue("no_rows")
    got = fn(DF.lazy(), ci=0.9, n_boot=150, **kw)
    assert isinstance(got, pl.LazyFrame)
    _same(got.collect(), want)


@pytest.mark.parametrize("kind", ["duckdb", "pyarrow", "ibis"])
@pytest.mark.parametrize("func", ["brier", "log_loss", "accuracy"])
@pytest.mark.parametrize("kw", [{}, {"by": "g", "weights": "w"}], ids=["one group", "by weighted"])
def test_companion_intervals_native_in_the_narwhals_engine(kind, func, kw, request):
    fn = getattr(calframe, func)
    want = fn(DF, ci=0.9, n_boot=150, **kw)
    request.getfixturevalue("no_rows")
    _same(_polars(fn(_native(kind, DF), ci=0.9, n_boot=150, **kw)), want)


@pytest.mark.parametrize("func", ["brier", "accuracy"])
def test_companion_intervals_are_the_same_bits_on_every_engine(func):
    """Exact sums: the same bits on every engine and row order (log_loss's row values go through each engine's
    own logarithm, which may differ in the last bit: its point figure already does, without ci=)."""
    kw = dict(by="g", weights="w", ci=0.9, n_boot=100)
    fn = getattr(calframe, func)
    outs = [_polars(fn(_native(k, DF), **kw)) for k in ("lazy", "duckdb", "pyarrow", "ibis")]
    for o in outs[1:]:
        assert o.sort("g").equals(outs[0].sort("g"))
    again = _polars(fn(_native("duckdb", DF.sample(fraction=1.0, shuffle=True, seed=1)), **kw))
    assert again.sort("g").equals(outs[0].sort("g"))  # any row order


def test_companion_bad_input_gives_the_eager_error_and_rows_bootstrap_is_collected():
    bad = DF.with_columns(pl.when(pl.arange(0, DF.height) == 5).then(1.5).otherwise(pl.col("prob")).alias("prob"))
    with pytest.raises(Exception) as eager_error:
        calframe.brier(bad, ci=0.9, n_boot=20)
    with pytest.raises(type(eager_error.value)) as lazy_error:
        calframe.brier(bad.lazy(), ci=0.9, n_boot=20).collect()
    assert str(lazy_error.value) == str(eager_error.value)
    with pytest.raises(type(eager_error.value)) as duck_error:
        _polars(calframe.brier(_native("duckdb", bad), ci=0.9, n_boot=20))
    assert str(duck_error.value) == str(eager_error.value)
    rows = calframe.brier(DF.lazy(), ci=0.9, n_boot=20, bootstrap="rows", seed=1).collect()  # collected
    assert rows.equals(calframe.brier(DF, ci=0.9, n_boot=20, bootstrap="rows", seed=1))


@pytest.mark.parametrize("kind", ["lazy", "duckdb", "pyarrow", "ibis", "dask"])
def test_weighted_calibration_test_where_the_rows_are(kind):
    """Frequency weights: the groups' sums of weights come from the frame's engine; the same verdicts and
    p-values as eager Polars."""
    df = DF.with_columns(w=(pl.col("w") * 3).ceil())
    want = calframe.calibration_test(df, by="g", weights="w", n_sim=300)
    if kind == "dask":
        dd = pytest.importorskip("dask.dataframe")
        got = pl.from_pandas(calframe.calibration_test(dd.from_pandas(df.to_pandas(), npartitions=3), by="g",
                                                       weights="w", n_sim=300).compute())
    else:
        got = _polars(calframe.calibration_test(_native(kind, df), by="g", weights="w", n_sim=300))
    _same(got, want)


@pytest.mark.spark
def test_spark_companion_intervals_are_duckdbs(spark):
    """brier's ci= in Spark: the cells' exact sums and moments in one pass, the same bits as DuckDB's, eager
    Polars' to rounding; the one-row group's rows fetched."""
    sdf = spark.createDataFrame(DF.to_arrow())
    kw = dict(by="g", weights="w", ci=0.9, n_boot=100)
    got = pl.from_pandas(calframe.brier(sdf, **kw).toPandas()).sort("g")
    _same(got, calframe.brier(DF, **kw).sort("g"))
    assert got.equals(_polars(calframe.brier(_native("duckdb", DF), **kw)).sort("g"))
