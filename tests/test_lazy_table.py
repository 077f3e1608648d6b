"""reliability and calibration_test streamed on a LazyFrame (calframe/engines/streaming/reliability.py), against eager Polars.

The table's sums are the streaming pass's exact fixed-point sums, eager Polars' float sums: equal to rounding
(1e-12), the same verdicts. A spy fails a case whose LazyFrame brings half the rows or more into Python."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from _engine_checks import assert_same, small_cells_frame

import calframe


DF = small_cells_frame(power=1.3, top=0.999, last=0.9995)  # a bin of one row in group 0: its only row above 0.999


@pytest.fixture
def spy(monkeypatch):
    """Fails the test when a LazyFrame's collect brings half the rows or more into Python."""
    big: list[int] = []
    collect = pl.LazyFrame.collect

    def watched(self, *a, **k):
        out = collect(self, *a, **k)
        if out.height >= DF.height // 2:
            big.append(out.height)
        return out

    monkeypatch.setattr(pl.LazyFrame, "collect", watched)
    yield big
    monkeypatch.undo()
    assert not big, f"rows collected: {big}"


def _same(got: pl.DataFrame, want: pl.DataFrame) -> None:
    assert got.schema == want.schema
    assert_same(got, want, atol=1e-15)


OPTIONS = {
    "by": {"by": "g"},
    "one group": {},
    "edges, class:0": {"by": "g", "bins": [0.0, 0.2, 0.5, 0.9, 1.0], "lens": "class:0"},
    "weights, 12 bins": {"by": "g", "weights": "w", "bins": 12},
}


@pytest.mark.parametrize("name", list(OPTIONS))
def test_reliability_and_the_test_are_streamed(name, spy):
    kw = OPTIONS[name]
    table = calframe.reliability(DF.lazy(), **kw)
    test = calframe.calibration_test(DF.lazy(), n_sim=200, **kw)
    assert isinstance(table, pl.LazyFrame) and isinstance(test, pl.LazyFrame)
    _same(table.collect(), calframe.reliability(DF, **kw))
    _same(test.collect(), calframe.calibration_test(DF, n_sim=200, **kw))


def test_nothing_is_read_until_collected(tmp_path):
    DF.write_parquet(tmp_path / "s.parquet")
    test = calframe.calibration_test(pl.scan_parquet(tmp_path / "s.parquet"), by="g", n_sim=100)
    (tmp_path / "s.parquet").unlink()  # the rows are read when the result is collected, not before
    with pytest.raises(Exception):
        test.collect()


def test_data_dependent_bins_are_collected_and_equal():
    kw = {"by": "g", "binning": "quantile", "bins": 8}
    _same(calframe.calibration_test(DF.lazy(), n_sim=100, **kw).collect(),
          calframe.calibration_test(DF, n_sim=100, **kw))


def test_bad_input_gives_the_eager_errors():
    """A group of one row and a bin of one row are in DF (equal tables above); all weights zero in a group or
    everywhere, and a probability outside [0, 1]: the eager error, raised when the result is collected."""
    zero_group = DF.with_columns(pl.when(pl.col("g") == 1).then(0.0).otherwise(pl.col("w")).alias("w"))
    bad = DF.with_columns(pl.when(pl.int_range(pl.len()) == 5).then(1.5).otherwise(pl.col("prob")).alias("prob"))
    cases = [(zero_group, {"by": "g", "weights": "w"}), (DF.with_columns(w=pl.lit(0.0)), {"weights": "w"}),
             (bad, {"by": "g"})]
    for frame, kw in cases:
        for fn in (calframe.reliability, calframe.calibration_test):
            with pytest.raises(calframe.CalframeError) as want:
                fn(frame, **kw)
            with pytest.raises(type(want.value)) as got:
                fn(frame.lazy(), **kw).collect()
            assert str(got.value) == str(want.value)


def test_the_spy_sees_a_collected_lazyframe(spy):
    calframe.reliability(DF.lazy(), by="g", binning="quantile", bins=8).collect()
    assert spy  # (the quantile edges need the rows: collected)
    spy.clear()
