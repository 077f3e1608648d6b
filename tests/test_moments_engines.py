"""ci= where the rows are: the bootstrap from moments (calframe.moments) on a streamed LazyFrame and in the
narwhals engine (DuckDB, pyarrow, Ibis; Spark in tests/test_spark.py), against eager Polars.

The moments of every engine are exact fixed-point sums, so the engines give the same bits as one another; eager
Polars sums its moments as floats in row order, so it agrees to rounding (1e-12 here)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from _engine_checks import native_frame, result_to_polars, assert_same, refuse_rows

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


_native = native_frame


_polars = result_to_polars


@pytest.fixture
def no_rows(monkeypatch):
    """The eager engine (the rows in memory) fails the test if it is reached, also from the LazyFrame engine (which
    holds its own name of it)."""
    from calframe.engines.streaming import streamed

    monkeypatch.setattr(eager, "evaluate", refuse_rows)
    monkeypatch.setattr(streamed, "evaluate", refuse_rows)


_same = assert_same


CALLS = {
    "ece": (calframe.ece, {}),
    "ece by weighted": (calframe.ece, {"by": "g", "weights": "w"}),
    "debiased l2": (calframe.ce, {"by": "g", "p": 2, "estimator": "debiased", "binning": "uniform"}),
    "debiased l1 percentile": (calframe.ce, {"p": 1, "estimator": "debiased", "binning": "uniform",
                                             "ci_method": "percentile"}),
    "rmsce bias_corrected": (calframe.rmsce, {"by": "g", "ci_method": "bias_corrected", "bins": 7}),
}


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


def test_rows_and_the_sweep_still_say_what_runs():
    rel = _native("duckdb", DF)
    with pytest.raises(calframe.ParameterError, match="bootstrap='rows'"):
        calframe.ece(rel, ci=0.9, n_boot=20, bootstrap="rows")
    with pytest.raises(calframe.ParameterError, match="bootstrap='rows'"):
        calframe.ece(rel, ci=0.9, n_boot=20, binning="quantile", bootstrap="rows")
    with pytest.raises(calframe.ParameterError, match="binning='sweep'"):
        calframe.ece(rel, ci=0.9, n_boot=20, binning="sweep")
    lazy = calframe.ece(DF.lazy(), ci=0.9, n_boot=20, binning="sweep")  # collected: still a LazyFrame
    assert isinstance(lazy, pl.LazyFrame)


# ci= on quantile / equal-mass bins (issue 30): the edges found where the rows are (exact order statistics),
# then held fixed under the draws, as in memory (calframe.moments.edges_ci: the bootstrap conditional on the edges)
EDGE_CALLS = {
    "ece quantile": (calframe.ece, {"binning": "quantile"}),
    "ece equal_mass by": (calframe.ece, {"binning": "equal_mass", "by": "g"}),
    "mce quantile by weighted": (calframe.mce, {"binning": "quantile", "by": "g", "weights": "w"}),
    "ace by weighted": (calframe.ace, {"by": "g", "weights": "w"}),
    "rmsce quantile percentile": (calframe.rmsce, {"binning": "quantile", "by": "g", "bins": 7,
                                                   "ci_method": "percentile"}),
    "debiased l2 equal_mass": (calframe.ce, {"p": 2, "estimator": "debiased", "binning": "equal_mass",
                                             "by": "g"}),
}


@pytest.mark.parametrize("kind", ["lazy", "duckdb", "pyarrow", "ibis"])
@pytest.mark.parametrize("call", [*CALLS, *EDGE_CALLS])
def test_intervals_equal_eager_without_collecting(kind, call, request):
    """The same bounds as eager Polars (whose moments are float sums: to rounding), no row brought into Python
    (the eager engine unreachable), a LazyFrame kept lazy; on uniform bins and on data-dependent ones, whose
    edges the engine finds itself."""
    fn, kw = {**CALLS, **EDGE_CALLS}[call]
    want = fn(DF, ci=0.9, n_boot=150, **kw)
    request.getfixturevalue("no_rows")
    got = fn(_native(kind, DF), ci=0.9, n_boot=150, **kw)
    if kind == "lazy":
        assert isinstance(got, pl.LazyFrame)
    _same(_polars(got), want)


@pytest.mark.parametrize("kind", ["lazy", "duckdb", "pyarrow", "ibis"])
def test_data_dependent_bins_bring_no_rows_into_python(kind, monkeypatch):
    """tests/test_surfaces.py's spy: nothing of half the rows or more is materialized in this process while the
    edges, the cells' moments and the small cells' rows are computed (its histogram budget made small, so that
    the order statistics refine as at scale), and the bounds are eager Polars'."""
    from test_surfaces import RowSpy

    kw = {"binning": "quantile", "by": "g", "weights": "w", "ci": 0.9, "n_boot": 100}
    want = calframe.ece(DF, **kw)
    spy = RowSpy(monkeypatch, DF.height // 2)
    got = _polars(calframe.ece(_native(kind, DF), **kw))
    monkeypatch.undo()
    assert not spy.big, spy.big
    _same(got, want)


def test_data_dependent_bins_give_the_same_bits_on_every_engine_and_row_order():
    kw = {"binning": "quantile", "by": "g", "weights": "w", "ci": 0.9, "n_boot": 100}
    outs = [_polars(calframe.ece(_native(k, DF), **kw)) for k in ("lazy", "duckdb", "pyarrow", "ibis")]
    for o in outs[1:]:
        assert o.equals(outs[0])
    shuffled = DF.sample(fraction=1.0, shuffle=True, seed=2)
    assert _polars(calframe.ece(_native("duckdb", shuffled), **kw)).equals(outs[0])


def test_data_dependent_bins_are_held_fixed_as_in_memory():
    """Eager Polars draws quantile bins from the moments with the edges fixed by default (bootstrap="auto" is
    "moments"), not by re-binning each resample ("rows"): the engines' draws are that conditional bootstrap."""
    kw = {"binning": "quantile", "by": "g", "ci": 0.9, "n_boot": 150}
    auto = calframe.ece(DF, **kw)
    assert auto.equals(calframe.ece(DF, bootstrap="moments", **kw))
    assert not auto.equals(calframe.ece(DF, bootstrap="rows", **kw))


def _awkward(n: int = 2000, seed: int = 5) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Tied scores (two decimals), a null key, integer weights with zeros, a group of one score repeated (its edges
    collapse to one bin), some null scores; and three class columns."""
    rng = np.random.default_rng(seed)
    p = np.round(rng.uniform(size=n), 2)
    df = pl.DataFrame({"prob": p, "label": (rng.uniform(size=n) < p).astype(np.int8),
                       "g": rng.choice(["a", "b", None], n).tolist(), "w": rng.integers(0, 4, n).astype(float)})
    same = pl.DataFrame({"prob": [0.5] * 5, "label": [1, 0, 1, 1, 0], "g": ["c"] * 5, "w": [1.0] * 5},
                        schema=df.schema)
    df = pl.concat([df, same]).with_columns(
        pl.when(pl.int_range(pl.len()) % 97 == 0).then(None).otherwise(pl.col("prob")).alias("prob"))
    k = rng.dirichlet([1, 1, 1], n)
    classes = pl.DataFrame({"p0": k[:, 0], "p1": k[:, 1], "p2": k[:, 2], "label": rng.integers(0, 3, n),
                            "g": rng.integers(0, 2, n)})
    return df, classes


@pytest.mark.parametrize("kind", ["lazy", "duckdb"])
def test_data_dependent_bins_with_ties_null_keys_and_class_columns(kind, request):
    df, classes = _awkward()
    calls = [(df, calframe.ece, {"binning": "quantile", "by": "g", "bins": 4, "nulls": "drop"}),
             (df, calframe.ece, {"binning": "equal_mass", "by": "g", "weights": "w", "closed": "right",
                                 "nulls": "drop"}),
             (classes, calframe.ece, {"prob": ["p0", "p1", "p2"], "binning": "quantile", "by": "g", "lens": "top1"}),
             (classes, calframe.rmsce, {"prob": ["p0", "p1", "p2"], "binning": "equal_mass", "lens": "class:2",
                                        "ci_method": "bias_corrected"})]
    wants = []
    with pytest.warns(calframe.CalframeWarning):  # nulls="drop" says how many rows it dropped
        for frame, fn, kw in calls[:2]:
            wants.append(fn(frame, ci=0.9, n_boot=80, **kw))
    wants += [fn(frame, ci=0.9, n_boot=80, **kw) for frame, fn, kw in calls[2:]]
    request.getfixturevalue("no_rows")
    with pytest.warns(calframe.CalframeWarning):
        gots = [_polars(fn(_native(kind, frame), ci=0.9, n_boot=80, **kw)) for frame, fn, kw in calls]
    for got, want in zip(gots, wants):
        _same(got, want)


@pytest.mark.parametrize("kind", ["lazy", "duckdb"])
def test_data_dependent_bins_with_bad_input_give_the_eager_errors(kind):
    bad = DF.with_columns(pl.when(pl.arange(0, DF.height) == 5).then(1.5).otherwise(pl.col("prob")).alias("prob"))
    zero = DF.with_columns(pl.when(pl.col("g") == 9).then(0.0).otherwise(pl.col("w")).alias("w"))
    for frame, kw in ((bad, {}), (zero, {"by": "g", "weights": "w"}), (DF.with_columns(w=pl.lit(0.0)),
                                                                        {"weights": "w"})):
        with pytest.raises(Exception) as eager_error:
            calframe.ece(frame, ci=0.9, n_boot=20, binning="quantile", **kw)
        with pytest.raises(type(eager_error.value)) as engine_error:
            _polars(calframe.ece(_native(kind, frame), ci=0.9, n_boot=20, binning="quantile", **kw))
        assert str(engine_error.value) == str(eager_error.value)


@pytest.mark.parametrize("kind", ["lazy", "duckdb", "pyarrow", "ibis"])
@pytest.mark.parametrize("binning", ["uniform", "quantile"])
def test_disparity_with_its_defaults_runs_where_the_rows_are(kind, binning, request):
    """disparity(frame, "ece", by=...) with its default ci=0.95: the groups' draws from the moments of their bins,
    computed in the frame's engine, the table equal to eager Polars'."""
    want = calframe.disparity(DF, "ece", by="g", n_boot=200, min_n=1, binning=binning)
    request.getfixturevalue("no_rows")
    got = calframe.disparity(_native(kind, DF), "ece", by="g", n_boot=200, min_n=1, binning=binning)
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
