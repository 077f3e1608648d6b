"""``calframe.apply`` of a fitted recalibrator on a PySpark DataFrame and on a DuckDB relation: a lazy frame of the
input's type whose recalibrated column(s) equal the eager call on the same rows (to 1e-12), for every method.

The recalibrators are fitted eagerly (Polars) on a calibration split; every one is applied to one Spark DataFrame
(and one DuckDB relation) and the chain is collected once. The Spark rows are split into 2 partitions and Arrow
batches of 4096 rows, so several batches meet every recalibrator.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import calframe

TOL = 1e-12
N = 30_000
MULTI = {"prob": ["p0", "p1", "p2"], "label": "cls"}

#: name -> (fit arguments, apply arguments): every method, binary and multiclass, per group, Array input
CASES: dict[str, tuple[dict, dict]] = {
    "platt": ({"method": "platt"}, {}),
    "temperature": ({"method": "temperature"}, {}),
    "histogram": ({"method": "histogram", "n_bins": 12}, {}),
    "isotonic": ({"method": "isotonic"}, {}),
    "beta": ({"method": "beta"}, {}),
    "scaling_binning": ({"method": "scaling_binning"}, {}),
    "venn_abers": ({"method": "venn_abers", "interval": True}, {}),
    "per_group_venn_abers": ({"method": "venn_abers", "interval": True, "by": "region", "lens": "top1"}, {}),
    "tree": ({"method": "tree", "variable": "age", "max_depth": 2}, {}),
    "beta_v": ({"method": "beta_v", "variable": "age"}, {}),
    "lore": ({"method": "lore", "features": ["age"], "gamma": 0.5}, {}),
    "per_group_platt": ({"method": "platt", "by": "region"}, {}),
    "per_group_unseen_kept": ({"method": "isotonic", "by": "device"}, {"unknown": "keep"}),
    "top1_histogram_multiclass": ({"method": "histogram", **MULTI}, {}),
    "temperature_multiclass": ({"method": "temperature", **MULTI}, {}),
    "isotonic_array_column": ({"method": "isotonic", "prob": "pvec", "label": "cls"}, {}),
}


def _frame(n: int = N) -> pl.DataFrame:
    df = calframe.datasets.grouped_miscalibration(n=n, seed=3, age_shift=0.2)
    rng = np.random.default_rng(4)
    probs = rng.dirichlet(np.ones(3) * 0.8, n)
    return df.with_row_index("id").with_columns(
        pl.col("id").cast(pl.Int64),
        p0=probs[:, 0], p1=probs[:, 1], p2=probs[:, 2], pvec=pl.Series(probs.tolist()),
        cls=(rng.random(n)[:, None] > probs.cumsum(axis=1)).sum(axis=1),
    )


@pytest.fixture(scope="module")
def fitted() -> tuple[pl.DataFrame, dict]:
    df = _frame()
    cal = df.head(4000).filter(pl.col("device") != "tablet")  # tablet rows: a group the per-group fit never saw
    recs = {}
    for case, (fit_kw, apply_kw) in CASES.items():
        kw = dict(fit_kw)
        method = kw.pop("method")
        if case == "per_group_unseen_kept":
            recs[case] = calframe.fit(cal, method, **kw)
        else:
            recs[case] = calframe.fit(df.head(4000), method, **kw)
    return df, recs


def _chain(frame, recs):
    for case, rec in recs.items():
        frame = calframe.calib(frame).apply(rec, name=f"p_{case}", **CASES[case][1])
    return frame


def _assert_same(got: pl.DataFrame, want: pl.DataFrame) -> None:
    assert got.columns == want.columns
    got, want = got.sort("id"), want.sort("id")
    for c in want.columns:
        g, w = got[c], want[c]
        if c.startswith(("p_", "q")):
            gv = np.asarray(g.to_list(), dtype=float)
            wv = np.asarray(w.to_list(), dtype=float)
            assert np.isfinite(gv).all()
            np.testing.assert_allclose(gv, wv, atol=TOL, rtol=0, err_msg=c)
        else:
            assert g.to_list() == w.to_list(), c


# --------------------------------------------------------------------------- PySpark


@pytest.fixture(scope="module")
def spark_frame(spark, fitted):
    df, recs = fitted
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "4096")
    return spark.createDataFrame(df.to_arrow()).repartition(2).cache()


@pytest.mark.spark
@pytest.mark.parametrize("case", list(CASES))
def test_spark_apply_equals_eager(spark_frame, fitted, case):
    # one job per case: Spark reuses its Python workers (a chain of applies would start one worker per stage)
    df, recs = fitted
    out = calframe.calib(spark_frame).apply(recs[case], name="q", **CASES[case][1])
    assert type(out).__module__.startswith("pyspark.sql")  # a Spark DataFrame: lazy, nothing ran yet
    cols = ["id"] + [c for c in out.columns if c.startswith("q")]
    want = calframe.apply(df, recs[case], name="q", **CASES[case][1]).select(cols)
    _assert_same(pl.from_arrow(out.select(cols).toArrow()), want)


@pytest.mark.spark
def test_spark_apply_keeps_every_other_column(spark_frame, fitted):
    df, recs = fitted
    some = {c: recs[c] for c in ("tree", "temperature_multiclass")}
    _assert_same(pl.from_arrow(_chain(spark_frame, some).toArrow()), _chain(df, some))


@pytest.mark.spark
def test_spark_apply_replaces_a_column_of_the_same_name(spark, fitted):
    df, recs = fitted
    small = df.head(500).select("id", "prob", "label", "region")
    sdf = spark.createDataFrame(small.to_arrow())
    out = calframe.apply(sdf, recs["platt"], name="prob")
    assert out.columns == ["id", "prob", "label", "region"]
    want = calframe.apply(small, recs["platt"], name="prob")
    _assert_same(pl.from_arrow(out.toArrow()), want)


@pytest.mark.spark
def test_spark_apply_errors(spark, fitted):
    df, recs = fitted
    small = df.head(300)
    sdf = spark.createDataFrame(small.drop("age").to_arrow())
    with pytest.raises(calframe.ColumnNotFoundError, match="age"):  # at the call: the schema is known
        calframe.apply(sdf, recs["tree"])
    bad = spark.createDataFrame(small.with_columns(prob=pl.when(pl.col("id") == 7).then(1.5)
                                                   .otherwise(pl.col("prob"))).to_arrow())
    out = calframe.apply(bad, recs["platt"])  # lazy: the data is read when the plan runs
    with pytest.raises(Exception, match=r"InvalidValueError.*prob"):
        out.collect()
    n = int((small["device"] == "tablet").sum())  # counted by Spark at the call: calframe's error, the eager count
    with pytest.raises(calframe.InvalidValueError, match=f"{n} rows belong to groups the recalibrator was not "):
        calframe.apply(spark.createDataFrame(small.to_arrow()), recs["per_group_unseen_kept"])


# --------------------------------------------------------------------------- DuckDB


@pytest.fixture(scope="module")
def duck(fitted):
    duckdb = pytest.importorskip("duckdb")
    df, _ = fitted
    con = duckdb.connect()
    con.sql("CREATE TABLE t AS SELECT * FROM df")
    yield con
    con.close()


def test_duckdb_apply_equals_eager(duck, fitted):
    df, recs = fitted
    out = _chain(duck.table("t"), recs)
    assert type(out).__name__ == "DuckDBPyRelation"
    # a relation: more SQL can follow in the same engine
    assert out.filter("region = 'north'").aggregate("count(*)").fetchall()[0][0] == df["region"].eq("north").sum()
    got = out.pl()
    want = _chain(df, recs)
    _assert_same(got.with_columns(pl.col(c).cast(want.schema[c]) for c in want.columns), want)


def test_duckdb_apply_errors(duck, fitted):
    df, recs = fitted
    with pytest.raises(calframe.ColumnNotFoundError, match="age"):
        calframe.apply(duck.sql("SELECT prob, label FROM t"), recs["tree"])
    out = calframe.apply(duck.sql("SELECT * REPLACE (CASE WHEN id = 7 THEN 1.5 ELSE prob END AS prob) FROM t"),
                         recs["platt"])
    with pytest.raises(Exception, match="prob"):
        out.fetchall()


def test_unseen_groups_raise_one_calframe_error(duck, fitted):
    """Issue 31, 6: rows of a group a per-group recalibrator was not fitted on raise calframe's InvalidValueError,
    with the eager call's count, on DuckDB at the call (the engine counts each group's rows; raised in a batch, the
    error reached the caller at fetch inside DuckDB's own exception, counting that batch's rows), and on a relation
    of DuckDB's default connection too (the output's types were refused there). A LazyFrame and a Dask DataFrame
    raise it from one batch or partition: the message says that the count is that batch's."""
    import re

    df, recs = fitted
    rec = recs["per_group_unseen_kept"]  # fitted without the tablet rows
    n = int((df["device"] == "tablet").sum())
    with pytest.raises(calframe.InvalidValueError) as eager:
        calframe.apply(df, rec)
    msg = str(eager.value)
    assert f"apply: {n} rows belong to groups the recalibrator was not fitted on" in msg
    assert "1 group of key column(s) ['device']" in msg and "unknown='keep'" in msg
    duckdb = pytest.importorskip("duckdb")
    arrow = df.to_arrow()
    for rel in (duck.table("t"), duckdb.from_arrow(arrow)):
        with pytest.raises(calframe.InvalidValueError) as got:
            calframe.apply(rel, rec)  # at the call, before anything is fetched
        assert str(got.value) == msg
        kept = calframe.apply(rel, rec, unknown="keep").pl().sort("id")
        assert kept["p_isotonic"].to_list() == calframe.apply(df, rec, unknown="keep")["p_isotonic"].to_list()
    with pytest.raises(calframe.InvalidValueError, match=r"in one batch \(.*the count is that batch's") as lazy:
        calframe.apply(df.lazy(), rec).collect()
    assert 0 < int(re.match(r"apply: (\d+) rows", str(lazy.value)).group(1)) <= n
    dd = pytest.importorskip("dask.dataframe")
    ddf = dd.from_pandas(df.select("id", "prob", "label", "device").to_pandas(), npartitions=3)
    with pytest.raises(calframe.InvalidValueError, match=r"in one partition \(.*the count is that partition's"):
        calframe.apply(ddf, rec).compute()
