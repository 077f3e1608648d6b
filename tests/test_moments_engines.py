"""ci= where the rows are: the bootstrap from moments (calframe.moments) on a streamed LazyFrame and in the
narwhals engine (DuckDB, pyarrow, Ibis; Spark in tests/test_spark.py), against eager Polars.

The moments of every engine are exact fixed-point sums, so the engines give the same bits as one another; eager
Polars sums its moments as floats in row order, so it agrees to rounding (1e-12 here)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import calframe
from calframe.engines import eager

duckdb = pytest.importorskip("duckdb")
ibis = pytest.importorskip("ibis")


def _frame(n: int = 3000, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    df = pl.DataFrame({"prob": p, "label": (rng.uniform(size=n) < p ** 1.2).astype(np.int8),
                       "g": rng.integers(0, 3, n), "w": rng.gamma(2.0, 1.0, n)})
    # a one-row group, a bin of one row in another group (small cells: drawn exactly from the rows), and weights
    # far apart (their squares in other fixed-point buckets)
    extra = pl.DataFrame({"prob": [0.97, 0.51, 0.3, 0.31], "label": [0, 1, 1, 0], "g": [9, 0, 1, 1],
                          "w": [2.0, 0.5, 1e-30, 3e-200]}, schema=df.schema)
    return pl.concat([df, extra])


DF = _frame()


def _native(kind: str, df: pl.DataFrame):
    if kind == "lazy":
        return df.lazy()
    if kind == "duckdb":
        return duckdb.connect().from_arrow(df.to_arrow())
    if kind == "pyarrow":
        return df.to_arrow()
    return ibis.memtable(df.to_arrow())


def _polars(out) -> pl.DataFrame:
    if isinstance(out, pl.LazyFrame):
        return out.collect()
    if hasattr(out, "pl"):
        return out.pl()
    if hasattr(out, "to_pyarrow"):
        return pl.from_arrow(out.to_pyarrow())
    return pl.from_arrow(out)


@pytest.fixture
def no_rows(monkeypatch):
    """The eager engine (the rows in memory) fails the test if it is reached."""
    def refuse(*a, **k):
        raise AssertionError("the rows were collected")

    monkeypatch.setattr(eager, "evaluate", refuse)


def _same(got: pl.DataFrame, want: pl.DataFrame) -> None:
    assert got.columns == want.columns
    for c in want.columns:
        if want[c].dtype == pl.Float64:
            np.testing.assert_allclose(got[c], want[c], rtol=1e-12, atol=1e-14, err_msg=c)
        else:
            assert got[c].to_list() == want[c].to_list(), c


CALLS = {
    "ece": (calframe.ece, {}),
    "ece by weighted": (calframe.ece, {"by": "g", "weights": "w"}),
    "debiased l2": (calframe.ce, {"by": "g", "p": 2, "estimator": "debiased", "binning": "uniform"}),
    "debiased l1 percentile": (calframe.ce, {"p": 1, "estimator": "debiased", "binning": "uniform",
                                             "ci_method": "percentile"}),
    "rmsce bias_corrected": (calframe.rmsce, {"by": "g", "ci_method": "bias_corrected", "bins": 7}),
}


@pytest.mark.parametrize("kind", ["lazy", "duckdb", "pyarrow", "ibis"])
@pytest.mark.parametrize("call", list(CALLS))
def test_intervals_equal_eager_without_collecting(kind, call, request):
    fn, kw = CALLS[call]
    want = fn(DF, ci=0.9, n_boot=150, **kw)
    request.getfixturevalue("no_rows")
    got = fn(_native(kind, DF), ci=0.9, n_boot=150, **kw)
    if kind == "lazy":
        assert isinstance(got, pl.LazyFrame)
    _same(_polars(got), want)


def test_the_engines_give_the_same_bits():
    fn, kw = CALLS["ece by weighted"]
    outs = [_polars(fn(_native(k, DF), ci=0.9, n_boot=100, **kw)) for k in ("lazy", "duckdb", "pyarrow", "ibis")]
    for o in outs[1:]:
        assert o.equals(outs[0])
    again = _polars(fn(_native("duckdb", DF.sample(fraction=1.0, shuffle=True, seed=1)), ci=0.9, n_boot=100, **kw))
    assert again.equals(outs[0])  # any row order


@pytest.mark.parametrize("kind", ["lazy", "duckdb"])
def test_bad_input_and_zero_weights_give_the_eager_errors(kind):
    bad = DF.with_columns(pl.when(pl.arange(0, DF.height) == 5).then(1.5).otherwise(pl.col("prob")).alias("prob"))
    zero = DF.with_columns(pl.when(pl.col("g") == 9).then(0.0).otherwise(pl.col("w")).alias("w"))
    for frame, kw in ((bad, {}), (zero, {"by": "g", "weights": "w"})):
        with pytest.raises(Exception) as eager_error:
            calframe.ece(frame, ci=0.9, n_boot=20, **kw)
        with pytest.raises(type(eager_error.value)) as engine_error:
            _polars(calframe.ece(_native(kind, frame), ci=0.9, n_boot=20, **kw))
        assert str(engine_error.value) == str(eager_error.value)


def test_rows_and_data_dependent_bins_still_say_what_runs():
    rel = _native("duckdb", DF)
    with pytest.raises(calframe.ParameterError, match="bootstrap='rows'"):
        calframe.ece(rel, ci=0.9, n_boot=20, bootstrap="rows")
    lazy = calframe.ece(DF.lazy(), ci=0.9, n_boot=20, binning="equal_mass")  # collected: still a LazyFrame
    assert isinstance(lazy, pl.LazyFrame)


@pytest.mark.parametrize("kind", ["lazy", "duckdb", "pyarrow", "ibis"])
def test_disparity_with_its_defaults_runs_where_the_rows_are(kind, request):
    """disparity(frame, "ece", by=...) with its default ci=0.95: the groups' draws from the moments of their bins,
    computed in the frame's engine, the table equal to eager Polars'."""
    want = calframe.disparity(DF, "ece", by="g", n_boot=200, min_n=1)
    request.getfixturevalue("no_rows")
    got = calframe.disparity(_native(kind, DF), "ece", by="g", n_boot=200, min_n=1)
    if kind == "lazy":
        assert isinstance(got, pl.LazyFrame)
    _same(_polars(got), want)


@pytest.mark.parametrize("kind", ["duckdb", "pyarrow", "ibis", "dask"])
def test_calibration_test_runs_where_the_rows_are(kind):
    """The test reads the reliability table only: summed in the frame's engine, the same verdicts and p-values."""
    want = calframe.calibration_test(DF, by="g", n_sim=300)
    if kind == "dask":
        dd = pytest.importorskip("dask.dataframe")
        got = pl.from_pandas(calframe.calibration_test(dd.from_pandas(DF.to_pandas(), npartitions=3), by="g",
                                                       n_sim=300).compute())
    else:
        got = _polars(calframe.calibration_test(_native(kind, DF), by="g", n_sim=300))
    _same(got, want)
