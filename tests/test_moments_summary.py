"""``summary(ci=)`` where the rows are (issue 30): streamed on a LazyFrame and native in the narwhals engine (DuckDB,
pyarrow, Ibis; Spark in tests/test_spark.py), against eager Polars.

Eager's summary draws every figure from the moments of its own state (tests/test_moments.py: its bounds are each
figure's alone): ece, mce, rmsce from the uniform bins' moments, the debiased CE from those of its equal-mass bins
(held fixed; uniform with weights), accuracy, brier and log_loss from the moments of their row values. The engines
compute the same states where the rows are (exact fixed-point sums), so they agree with eager Polars to rounding
(1e-12) and with one another to the bit (but log_loss, whose row values go through each engine's own logarithm)."""

from __future__ import annotations

import warnings

import polars as pl
import pytest

import calframe

from test_moments_engines import DF, _native, _polars, _same, no_rows  # noqa: F401  (no_rows: a fixture)

KINDS = ["lazy", "duckdb", "pyarrow", "ibis"]
CALLS = {
    "one group": {},
    "by weighted": {"by": "g", "weights": "w"},
    "by percentile": {"by": "g", "ci_method": "percentile", "bins": 7},
    "by bias_corrected top1": {"by": "g", "ci_method": "bias_corrected", "lens": "top1"},
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("call", list(CALLS))
def test_summary_intervals_equal_eager_without_collecting(kind, call, request):
    """A one-row group (NaN bounds) and small cells (drawn exactly from the rows of one bounded query each)
    included; the eager engine is never reached."""
    kw = CALLS[call]
    want = calframe.summary(DF, ci=0.9, n_boot=150, **kw)
    request.getfixturevalue("no_rows")
    got = calframe.summary(_native(kind, DF), ci=0.9, n_boot=150, **kw)
    if kind == "lazy":
        assert isinstance(got, pl.LazyFrame)
        assert got.collect_schema().names() == want.columns
    _same(_polars(got), want)


@pytest.mark.parametrize("kind", KINDS)
def test_summary_intervals_bring_no_rows_into_python(kind, monkeypatch):
    """tests/test_surfaces.py's spy: nothing of half the rows or more is materialized in this process while the
    summary's states (the equal-mass edges refined as at scale), their moments and the small cells' rows are
    computed; the bounds are eager Polars'."""
    from test_surfaces import RowSpy

    kw = {"by": "g", "ci": 0.9, "n_boot": 100}
    want = calframe.summary(DF, **kw)
    spy = RowSpy(monkeypatch, DF.height // 2)
    got = _polars(calframe.summary(_native(kind, DF), **kw))
    monkeypatch.undo()
    assert not spy.big, spy.big
    _same(got, want)


def test_summary_intervals_are_the_same_bits_on_every_engine_and_row_order():
    kw = dict(by="g", weights="w", ci=0.9, n_boot=100)
    outs = [_polars(calframe.summary(_native(k, DF), **kw)).drop("log_loss", "log_loss_lo", "log_loss_hi")
            for k in KINDS]
    for o in outs[1:]:
        assert o.equals(outs[0])
    again = _polars(calframe.summary(_native("duckdb", DF.sample(fraction=1.0, shuffle=True, seed=1)), **kw))
    assert again.drop("log_loss", "log_loss_lo", "log_loss_hi").equals(outs[0])


@pytest.mark.parametrize("kind", ["lazy", "duckdb"])
def test_summary_nulls_dropped_warn_once_as_eager(kind):
    d = DF.with_columns(pl.when(pl.arange(0, DF.height) % 7 == 0).then(None).otherwise(pl.col("prob")).alias("prob"))
    kw = dict(by="g", nulls="drop", ci=0.9, n_boot=60)
    with warnings.catch_warnings(record=True) as eager_warned:
        warnings.simplefilter("always")
        want = calframe.summary(d, **kw)
    with warnings.catch_warnings(record=True) as engine_warned:
        warnings.simplefilter("always")
        got = _polars(calframe.summary(_native(kind, d), **kw))
    assert [str(w.message) for w in engine_warned] == [str(w.message) for w in eager_warned]
    _same(got, want)


@pytest.mark.parametrize("kind", KINDS)
def test_summary_bad_input_and_zero_weights_give_the_eager_errors(kind):
    bad = DF.with_columns(pl.when(pl.arange(0, DF.height) == 5).then(1.5).otherwise(pl.col("prob")).alias("prob"))
    zero = DF.with_columns(pl.when(pl.col("g") == 9).then(0.0).otherwise(pl.col("w")).alias("w"))
    all_zero = DF.with_columns(w=pl.lit(0.0))
    for frame, kw in ((bad, {}), (zero, {"by": "g", "weights": "w"}), (all_zero, {"weights": "w"})):
        with pytest.raises(Exception) as eager_error:
            calframe.summary(frame, ci=0.9, n_boot=20, **kw)
        with pytest.raises(type(eager_error.value)) as engine_error:
            _polars(calframe.summary(_native(kind, frame), ci=0.9, n_boot=20, **kw))
        assert str(engine_error.value) == str(eager_error.value)


def test_summary_row_bootstrap_is_collected_on_a_lazyframe_and_refused_in_duckdb():
    kw = dict(by="g", ci=0.9, n_boot=20, bootstrap="rows", seed=1)
    got = calframe.summary(DF.lazy(), **kw)
    assert isinstance(got, pl.LazyFrame)
    assert got.collect().equals(calframe.summary(DF, **kw))
    with pytest.raises(calframe.ParameterError, match="ci= with bootstrap='rows' is not supported on a DuckDB"):
        calframe.summary(_native("duckdb", DF), **kw)


DISPARITIES = {
    "brier": ("brier", {}),
    "accuracy weighted": ("accuracy", {"weights": "w"}),
    "summary": ("summary", {}),
    "summary weighted": ("summary", {"weights": "w", "min_n": 10}),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("call", list(DISPARITIES))
def test_disparity_of_companions_and_summary_with_its_defaults_where_the_rows_are(kind, call, request):
    """disparity's default ci=0.95 on a companion or summary: the groups' draws from the moments of each figure's
    state where the rows are (with weights, min_n compares each group's sum of weights), the eager table."""
    fig, kw = DISPARITIES[call]
    want = calframe.disparity(DF, fig, by="g", n_boot=100, **kw)
    request.getfixturevalue("no_rows")
    got = calframe.disparity(_native(kind, DF), fig, by="g", n_boot=100, **kw)
    if kind == "lazy":
        assert isinstance(got, pl.LazyFrame)
    _same(_polars(got), want, as_text=True)


@pytest.mark.parametrize("kind", ["lazy", "duckdb"])
def test_summary_disparity_true_with_ci_where_the_rows_are(kind, request):
    want = calframe.summary(DF, by="g", disparity=True, ci=0.9, n_boot=100)
    request.getfixturevalue("no_rows")
    _same(_polars(calframe.summary(_native(kind, DF), by="g", disparity=True, ci=0.9, n_boot=100)), want,
          as_text=True)


@pytest.mark.parametrize("kind", KINDS)
def test_summary_intervals_on_class_columns_with_a_null_key(kind, request):
    """Three class-probability columns (the top-1 lens, the companions over K classes) and a null group key."""
    import numpy as np

    rng = np.random.default_rng(3)
    p = rng.dirichlet([0.6, 0.6, 0.6], size=2000)
    y = (rng.uniform(size=(2000, 1)) > p.cumsum(axis=1)).sum(axis=1).clip(0, 2)
    df = pl.DataFrame({"p0": p[:, 0], "p1": p[:, 1], "p2": p[:, 2], "label": y,
                       "g": rng.choice(["a", "b", None], 2000).tolist()})
    kw = dict(prob=["p0", "p1", "p2"], by="g", ci=0.9, n_boot=80)
    want = calframe.summary(df, **kw)
    request.getfixturevalue("no_rows")
    _same(_polars(calframe.summary(_native(kind, df), **kw)), want)


def test_summary_intervals_count_one_bar_of_n_boot_draws_in_duckdb(monkeypatch):
    """As in memory (tests/test_progress.py): one bootstrap bar of n_boot draws, though each state draws apart."""
    from test_progress import _Recorder
    from calframe import _progress as P

    rec = type("Rec", (_Recorder,), {"made": []})
    monkeypatch.setattr(P, "_tqdm", lambda: rec)
    monkeypatch.setattr(P, "_terminal", lambda: True)
    monkeypatch.delenv(P.ENV, raising=False)
    calframe.summary(_native("duckdb", DF), by="g", ci=0.9, n_boot=11, progress=True)
    assert [(b.kw["desc"], b.kw["total"], b.n) for b in rec.made if b.kw["desc"] == "bootstrap"] == [
        ("bootstrap", 11, 11)]
