"""PySpark for real (issue 13 item 4): a local[2] session, 300,000 rows, every ce-family figure, ``vece`` and
``reliability`` summed inside Spark by the narwhals engine equal the eager figures to 1e-12, and a by-hand numpy
ECE. Marked ``spark`` (deselect with ``-m "not spark"``)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import calframe

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def scores() -> pl.DataFrame:
    rng = np.random.default_rng(13)
    n = 300_000
    p = rng.random(n)
    p[:64] = np.linspace(0, 1, 16).repeat(4)  # values on the uniform edges
    return pl.DataFrame({"prob": p, "label": (rng.random(n) < p ** 1.2).astype(np.int8),
                         "g": rng.choice(["a", "b", "c", None], n).tolist(), "age": rng.integers(18, 80, n),
                         "w": rng.uniform(0.5, 2.0, n)})


@pytest.fixture(scope="module")
def sdf(spark, scores):
    return spark.createDataFrame(scores.to_arrow()).repartition(3).cache()


def to_polars(res) -> pl.DataFrame:
    from pyspark.sql import DataFrame

    assert isinstance(res, DataFrame)
    return pl.from_arrow(res.toArrow())


CALLS = {
    "ece": ("ece", {}),
    "ece_by_weights": ("ece", {"by": "g", "weights": "w"}),
    "mce_top1": ("mce", {"lens": "top1", "by": "g", "closed": "right"}),
    "rmsce_quantile": ("rmsce", {"binning": "quantile", "by": "g"}),
    "rmsce_quantile_weights": ("rmsce", {"binning": "quantile", "by": "g", "weights": "w"}),
    "vece_equal_mass_weights": ("vece", {"variable": "age", "binning": "equal_mass", "weights": "w"}),
    "ce_debiased_equal_mass": ("ce", {"p": 2, "estimator": "debiased", "binning": "equal_mass"}),
    "vece": ("vece", {"variable": "age", "by": "g"}),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_spark_equals_eager(sdf, scores, name):
    fn, kw = CALLS[name]
    kw = dict(kw)
    args = (kw.pop("variable"),) if "variable" in kw else ()
    want = getattr(calframe, fn)(scores, *args, **kw)
    got = to_polars(getattr(calframe, fn)(sdf, *args, **kw))
    if isinstance(want, float):  # one row: n and the figure
        assert got.columns == ["n", fn] and got["n"].item() == scores.height
        assert got[fn].item() == pytest.approx(want, rel=1e-12, abs=1e-15)
        return
    assert got.columns == want.columns
    assert got["g"].to_list() == want["g"].to_list() and got["n"].to_list() == want["n"].to_list()
    np.testing.assert_allclose(got[fn].to_numpy(), want[fn].to_numpy(), rtol=1e-12, atol=1e-15)


def test_spark_reliability_and_a_numpy_reference(sdf, scores):
    got = to_polars(calframe.reliability(sdf, bins=10))
    want = calframe.reliability(scores, bins=10)
    assert got["n"].to_list() == want["n"].to_list()
    for c in ("conf", "acc", "weight", "lower", "upper"):
        np.testing.assert_allclose(got[c].to_numpy(), want[c].to_numpy(), rtol=1e-12, atol=1e-15)
    # ECE by hand from the rows (numpy.digitize on linspace edges: class:1, uniform(10) left-closed)
    p, y = scores["prob"].to_numpy(), scores["label"].to_numpy().astype(float)
    b = np.clip(np.digitize(p, np.linspace(0, 1, 11)[1:-1]), 0, 9)
    ece = sum(abs(p[b == k].sum() - y[b == k].sum()) for k in range(10)) / p.size
    assert to_polars(calframe.ece(sdf, bins=10))["ece"].item() == pytest.approx(ece, rel=1e-12)


def test_spark_draws_intervals_from_the_moments_of_its_bins(sdf, scores):
    """ci= in Spark (calframe.moments): the cells' exact sums and second moments in one pass, the same bits as
    DuckDB's (exact fixed-point sums in both), eager Polars' to rounding; a 1-row cell's rows fetched."""
    import duckdb

    kw = dict(by="g", weights="w", ci=0.9, n_boot=100)
    got = to_polars(calframe.ece(sdf, **kw))
    want = calframe.ece(scores, **kw)
    for c in ("ece", "ece_lo", "ece_hi"):
        np.testing.assert_allclose(got[c].to_numpy(), want[c].to_numpy(), rtol=1e-12, atol=1e-15, err_msg=c)
    assert got.equals(calframe.ece(duckdb.connect().from_arrow(scores.to_arrow()), **kw).pl())


def test_spark_draws_intervals_on_quantile_bins_held_fixed(sdf, scores):
    """ci= on quantile / equal-mass bins in Spark (issue 30): the edges by exact order statistics in Spark, then
    the draws from the moments of those bins, held fixed (the bootstrap conditional on the edges, as in memory):
    eager Polars' bounds to rounding, DuckDB's bits."""
    import duckdb

    for kw in ({"binning": "quantile", "by": "g", "weights": "w"}, {"binning": "equal_mass", "by": "g"}):
        kw = {**kw, "ci": 0.9, "n_boot": 100}
        got = to_polars(calframe.mce(sdf, **kw))
        want = calframe.mce(scores, **kw)
        for c in ("mce", "mce_lo", "mce_hi"):
            np.testing.assert_allclose(got[c].to_numpy(), want[c].to_numpy(), rtol=1e-12, atol=1e-15, err_msg=c)
        assert got.equals(calframe.mce(duckdb.connect().from_arrow(scores.to_arrow()), **kw).pl())


def test_spark_refuses_what_its_engine_does_not_run(sdf):
    with pytest.raises(calframe.ParameterError, match="ci= with bootstrap='rows' is not supported on a PySpark"):
        calframe.ece(sdf, ci=0.9, bootstrap="rows")
    with pytest.raises(calframe.ParameterError, match="calframe.lce is not supported on a PySpark DataFrame"):
        calframe.lce(sdf)
    with pytest.raises(calframe.ParameterError, match="binning='adaptive' is not supported on a PySpark DataFrame"):
        calframe.gece(sdf, binning="adaptive")


def test_spark_bad_rows_give_the_eager_message(spark):
    df = pl.DataFrame({"prob": [0.1, 1.5, 0.3, -0.4], "label": [0, 1, 0, 1]})
    with pytest.raises(calframe.InvalidValueError) as eager:
        calframe.ece(df)
    with pytest.raises(calframe.InvalidValueError) as got:
        calframe.ece(spark.createDataFrame(df.to_arrow()))
    assert str(got.value) == str(eager.value)
