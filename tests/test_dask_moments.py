"""disparity's default call (ci=0.95, drawn from the moments of the bins) and the CE family's ci= native on Dask
(calframe/engines/dask_moments.py), against eager Polars; bad input gives the eager errors."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from _engine_checks import assert_same, refuse_rows, small_cells_frame

import calframe
from calframe.engines.partitions import client as dask_engine

dd = pytest.importorskip("dask.dataframe")
import calframe.frames.dask  # noqa: E402,F401  (registers ddf.calib)


DF = small_cells_frame(power=1.2, top=0.99, last=0.999)


def _ddf(df: pl.DataFrame):
    return dd.from_pandas(df.to_pandas(), npartitions=3)


@pytest.fixture
def no_rows(monkeypatch):
    """A collected Dask frame (the rows gathered into one pandas frame) fails the test."""
    monkeypatch.setattr(dask_engine, "collected", refuse_rows)


def _same(got: pl.DataFrame, want: pl.DataFrame) -> None:
    assert_same(got, want, as_text=True)


@pytest.mark.parametrize("kw", [{}, {"min_n": 1, "ci_method": "percentile", "bins": 7}, {"p": 2, "figure": "ce"}],
                         ids=["defaults", "min_n percentile", "ce p=2"])
def test_disparity_defaults_are_native_on_dask(kw, no_rows):
    kw = dict(kw)
    figure = kw.pop("figure", "ece")
    want = calframe.disparity(DF, figure, by="g", n_boot=200, **kw)
    got = calframe.disparity(_ddf(DF), figure, by="g", n_boot=200, **kw)
    assert hasattr(got, "compute")  # lazy: a DaskResult
    _same(pl.from_pandas(got.compute()), want)


def test_the_draws_are_the_lazyframes_bits():
    """The partitions' moments are the LazyFrame engine's exact sums: the same bits as a LazyFrame's."""
    got = pl.from_pandas(calframe.disparity(_ddf(DF), "ece", by="g", n_boot=100, min_n=1).compute())
    lazy = calframe.disparity(DF.lazy(), "ece", by="g", n_boot=100, min_n=1).collect()
    assert got.equals(lazy.with_columns(pl.col(c).cast(got.schema[c]) for c in got.columns))


def test_weights_and_bad_input_give_the_eager_results_and_errors():
    """Weights are collected (the eager result); a bad probability, a null label and all weights zero: the eager
    error when computed."""
    _same(pl.from_pandas(calframe.disparity(_ddf(DF), "ece", by="g", weights="w", n_boot=50).compute()),
          calframe.disparity(DF, "ece", by="g", weights="w", n_boot=50))
    bad = DF.with_columns(pl.when(pl.int_range(pl.len()) == 5).then(1.5).otherwise(pl.col("prob")).alias("prob"))
    null = DF.with_columns(pl.when(pl.int_range(pl.len()) == 7).then(None).otherwise(pl.col("label")).alias("label"))
    zero = DF.with_columns(pl.when(pl.col("g") == 1).then(0.0).otherwise(pl.col("w")).alias("w"))
    for frame, kw in ((bad, {}), (null, {}), (zero, {"weights": "w"}), (DF.with_columns(w=pl.lit(0.0)), {"weights": "w"})):
        with pytest.raises(calframe.CalframeError) as want:
            calframe.disparity(frame, "ece", by="g", n_boot=20, **kw)
        with pytest.raises(type(want.value)) as got:
            calframe.disparity(_ddf(frame), "ece", by="g", n_boot=20, **kw).compute()
        assert str(got.value) == str(want.value)


@pytest.mark.parametrize("kw", [{}, {"by": "g"}, {"by": "g", "p": 2, "estimator": "debiased", "binning": "uniform"}],
                         ids=["one group", "by", "debiased l2"])
def test_ce_intervals_are_native_on_dask(kw, no_rows):
    fn = calframe.ce if "p" in kw else calframe.ece
    want = fn(DF, ci=0.9, n_boot=100, **kw)
    _same(pl.from_pandas(fn(_ddf(DF), ci=0.9, n_boot=100, **kw).compute()), want)
