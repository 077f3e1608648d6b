"""The companions' ``ci=`` on Dask (issue 30): ``brier``, ``log_loss`` and ``accuracy`` draw their intervals from
the moments of their row values, split by top-1 correctness, summed on the partitions
(calframe/engines/partitions/companions.py), never gathering the rows.

The draws are a counter-based stream keyed on (seed, group key, cell, draw), so the intervals are the same bits
wherever the moments are the same: the partitions' moments are the LazyFrame engine's exact fixed-point sums, so
the intervals are the LazyFrame's bits (and so DuckDB's, pyarrow's, Ibis's: tests/test_moments_companions.py), and
eager Polars' to rounding (its moments are float sums in row order: 1e-12, as on a LazyFrame).
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from _engine_checks import assert_same, refuse_rows, small_cells_frame

import calframe

dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")
import calframe.frames.dask  # noqa: E402,F401  (registers ddf.calib)
from calframe.engines import eager  # noqa: E402
from calframe.engines.partitions import client as engine  # noqa: E402


def _frame() -> pl.DataFrame:
    """small_cells_frame (a group of one row: a cell under 32 rows, from the bounded pass) with class
    probabilities and a class label beside."""
    df = small_cells_frame(power=1.2, top=0.99, last=0.999)
    rng = np.random.default_rng(1)
    probs = rng.dirichlet(np.ones(3), df.height)
    return df.with_columns(p0=probs[:, 0], p1=probs[:, 1], p2=probs[:, 2], cls=rng.integers(0, 3, df.height))


DF = _frame()
FUNCS = [calframe.brier, calframe.log_loss, calframe.accuracy]
MULTI = {"prob": ["p0", "p1", "p2"], "label": "cls"}


@pytest.fixture(autouse=True)
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


def no_rows(monkeypatch) -> list[int]:
    """From here on collecting the Dask frame, or the eager engine, fails the test; every ``dask.compute`` is
    measured (the most rows it returned: ``[0]``)."""
    monkeypatch.setattr(engine, "collected", refuse_rows)
    monkeypatch.setattr(eager, "evaluate", refuse_rows)
    most = [0]
    original = dask.compute

    def compute(*args, **kwargs):
        out = original(*args, **kwargs)
        most[0] = max([most[0]] + [getattr(o, "height", 0) or (len(o) if hasattr(o, "__len__") else 0)
                                   for o in out])
        return out

    monkeypatch.setattr(dask, "compute", compute)
    return most


def _ddf(df: pl.DataFrame, parts: int = 3):
    return dd.from_pandas(df.to_pandas(), npartitions=parts)


def _same_bits(got: pl.DataFrame, want: pl.DataFrame) -> None:
    assert got.columns == want.columns
    assert got.equals(want.with_columns(pl.col(c).cast(got.schema[c]) for c in got.columns)), (got, want)


@pytest.mark.parametrize("fn", FUNCS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("kw", [{}, {"by": "g"}, {**MULTI, "by": "g", "seed": 4}, {"ci_method": "percentile"}],
                         ids=["one group", "by", "multiclass by", "percentile"])
def test_unweighted_intervals_are_native(fn, kw, monkeypatch):
    """Nothing collected, nothing but the cells, the groups and the small cells' rows computed; the LazyFrame's
    bits, eager Polars' to 1e-12."""
    kw = dict(kw, ci=0.9, n_boot=100)
    want, lazy = fn(DF, **kw), fn(DF.lazy(), **kw).collect()
    most = no_rows(monkeypatch)
    got = fn(_ddf(DF), **kw)
    assert hasattr(got, "compute")  # lazy: a DaskResult
    got = pl.from_pandas(got.compute(), nan_to_null=False)
    monkeypatch.undo()
    assert 0 < most[0] < DF.height // 10
    _same_bits(got, lazy)
    assert_same(got, want, atol=1e-12, as_text=True)


@pytest.mark.parametrize("fn", FUNCS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("kw", [{}, {"by": "g"}, {**MULTI, "by": "g"}], ids=["one group", "by", "multiclass by"])
def test_weighted_intervals_are_the_lazyframes_bits(fn, kw, monkeypatch):
    """With weights every partition scales a group's weights by the group's power of two over the whole frame (a
    first pass): the LazyFrame's exact sums, so its bits; eager Polars' to 1e-12."""
    kw = dict(kw, weights="w", ci=0.95, n_boot=80)
    lazy = fn(DF.lazy(), **kw).collect()
    want = fn(DF, **kw)
    no_rows(monkeypatch)
    got = pl.from_pandas(fn(_ddf(DF, 4), **kw).compute(), nan_to_null=False)
    monkeypatch.undo()
    _same_bits(got, lazy)
    assert_same(got, want, atol=1e-12, as_text=True)


def test_groups_scaled_apart():
    """Groups whose weights sit 2^40 apart (each its own power of two), split unevenly over the partitions: the
    LazyFrame's bits."""
    df = DF.with_columns(pl.when(pl.col("g") == 1).then(pl.col("w") * 2.0**40).otherwise(pl.col("w")).alias("w"))
    kw = {"by": "g", "weights": "w", "ci": 0.9, "n_boot": 60}
    _same_bits(pl.from_pandas(calframe.brier(_ddf(df.sort("g"), 5), **kw).compute(), nan_to_null=False),
               calframe.brier(df.lazy(), **kw).collect())


def test_bad_input_gives_the_eager_errors():
    """A probability outside [0, 1], a null label, a group of zero weights: the eager error (the rows collected)."""
    bad = DF.with_columns(pl.when(pl.int_range(pl.len()) == 5).then(1.5).otherwise(pl.col("prob")).alias("prob"))
    null = DF.with_columns(pl.when(pl.int_range(pl.len()) == 7).then(None).otherwise(pl.col("label")).alias("label"))
    zero = DF.with_columns(pl.when(pl.col("g") == 1).then(0.0).otherwise(pl.col("w")).alias("w"))
    for frame, kw in ((bad, {}), (null, {"by": "g"}), (zero, {"weights": "w", "by": "g"})):
        for fn in FUNCS:
            with pytest.raises(calframe.CalframeError) as want:
                fn(frame.to_pandas(), ci=0.9, n_boot=20, **kw)
            with pytest.raises(type(want.value)) as got:
                fn(_ddf(frame), ci=0.9, n_boot=20, **kw).compute()
            assert str(got.value) == str(want.value)


def test_nulls_dropped():
    """``nulls="drop"``: one warning, the rows left out; the LazyFrame's bits, eager pandas' to 1e-12."""
    df = DF.with_columns(pl.when(pl.int_range(pl.len()) % 89 == 1).then(None).otherwise(pl.col("prob")).alias("prob"))
    pdf = df.to_pandas(use_pyarrow_extension_array=True)  # (the nulls kept)
    kw = {"by": "g", "nulls": "drop", "ci": 0.9, "n_boot": 50}
    with pytest.warns(UserWarning, match="dropped"):
        want = pl.from_pandas(calframe.log_loss(pdf, **kw), nan_to_null=False)
    with pytest.warns(UserWarning, match="dropped"):
        lazy = calframe.log_loss(df.lazy(), **kw).collect()
    with pytest.warns(UserWarning, match="dropped"):
        got = pl.from_pandas(calframe.log_loss(dd.from_pandas(pdf, npartitions=3), **kw).compute(), nan_to_null=False)
    _same_bits(got, lazy)
    assert_same(got, want, atol=1e-12, as_text=True)


def test_bootstrap_rows_still_collects():
    """``bootstrap="rows"`` resamples the rows themselves: collected, eager's result."""
    kw = {"by": "g", "ci": 0.9, "n_boot": 20, "bootstrap": "rows"}
    got = pl.from_pandas(calframe.brier(_ddf(DF), **kw).compute(), nan_to_null=False)
    _same_bits(got, pl.from_pandas(calframe.brier(DF.to_pandas(), **kw), nan_to_null=False))


def test_a_list_of_probabilities_is_collected():
    """Class probabilities in one Arrow List column: the LazyFrame engine streams no List column, so the rows are
    collected here too (as on a LazyFrame): eager's result."""
    pa = pytest.importorskip("pyarrow")
    import pandas as pd

    probs = DF.select("p0", "p1", "p2").to_numpy().tolist()
    pdf = pd.DataFrame({"probs": pd.array(probs, dtype=pd.ArrowDtype(pa.list_(pa.float64()))),
                        "label": DF["cls"].to_numpy(), "g": DF["g"].to_numpy()})
    for fn in FUNCS:
        want = pl.from_pandas(fn(pdf, ci=0.9, n_boot=30, by="g"), nan_to_null=False)
        got = pl.from_pandas(fn(dd.from_pandas(pdf, npartitions=2), ci=0.9, n_boot=30, by="g").compute(),
                             nan_to_null=False)
        _same_bits(got, want)
