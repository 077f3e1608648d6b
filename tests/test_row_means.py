"""The companions (brier, log_loss, accuracy), summary and disparity where the rows are (engines/_row_means.py):
DuckDB, pyarrow and a LazyFrame (streamed) give eager Polars' numbers to 1e-12 with weights, nulls="drop",
multiclass input and Boolean labels, raise eager's errors with eager's messages, and disparity runs on Dask."""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest

import calframe

duckdb = pytest.importorskip("duckdb")

KINDS = ("duckdb", "pyarrow", "lazy")


def frame_of(df: pl.DataFrame, kind: str) -> object:
    if kind == "duckdb":
        con = duckdb.connect()
        con.register("src", df.to_arrow())
        return con.sql("SELECT * FROM src")
    if kind == "pyarrow":
        return df.to_arrow()
    return df.lazy()


def polars_of(res: object) -> object:
    if isinstance(res, pl.LazyFrame):
        return res.collect()
    if hasattr(res, "pl"):
        return res.pl()
    if isinstance(res, float):
        return res
    return pl.from_arrow(res)


def same(got: object, expected: object) -> None:
    if isinstance(expected, float):
        if isinstance(got, pl.DataFrame):
            assert got.height == 1 and got.columns[0] == "n"
            got = got.item(0, 1)
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-15)
        return
    assert got.columns == expected.columns
    for c in expected.columns:
        if expected[c].dtype.is_float():
            np.testing.assert_allclose(got[c].to_numpy(), expected[c].to_numpy(), rtol=1e-12, atol=1e-15)
        else:
            assert got[c].to_list() == expected[c].to_list(), c


@pytest.fixture(scope="module")
def binary() -> pl.DataFrame:
    rng = np.random.default_rng(3)
    n = 3000
    p = rng.uniform(0, 1, n)
    p[:5] = [0.0, 1.0, 0.5, 1e-300, 1.0 - 1e-17]  # the log loss's clip, the top-1 tie at 0.5
    y = (rng.uniform(0, 1, n) < p).astype(np.int64)
    w = rng.exponential(1.0, n) * np.where(np.arange(n) % 3 == 0, 1e-30, 1.0)  # groups of different scales
    g = np.array(["a", "b", "c"])[np.arange(n) % 3]
    return pl.DataFrame({"prob": p, "label": y, "g": g, "w": w, "flag": y.astype(bool)})


@pytest.fixture(scope="module")
def multi() -> pl.DataFrame:
    rng = np.random.default_rng(4)
    n = 2000
    logits = rng.normal(size=(n, 3))
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    probs[:4] = [[1 / 3, 1 / 3, 1 / 3], [0.5, 0.5, 0.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]  # ties, exact 0 / 1
    y = np.array([(rng.uniform() < np.cumsum(r)).argmax() for r in probs])
    return pl.DataFrame({"p0": probs[:, 0], "p1": probs[:, 1], "p2": probs[:, 2], "label": y,
                         "g": np.arange(n) % 4, "w": rng.uniform(0.5, 2.0, n)})


CALLS = [
    ("brier", {}), ("brier", {"by": "g", "weights": "w"}), ("log_loss", {"by": "g"}),
    ("log_loss", {"weights": "w"}), ("accuracy", {"by": "g", "weights": "w"}), ("accuracy", {}),
    ("summary", {"by": "g"}), ("summary", {"by": "g", "weights": "w", "bins": 7}), ("summary", {"lens": "top1"}),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fn, kw", CALLS, ids=[f"{f}-{'-'.join(k)}" for f, k in CALLS])
def test_binary_equals_eager(binary, kind, fn, kw):
    expected = getattr(calframe, fn)(binary, **kw)
    got = getattr(calframe, fn)(frame_of(binary, kind), **kw)
    if kind == "lazy":
        assert isinstance(got, pl.LazyFrame)
    same(polars_of(got), expected)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fn", ["brier", "log_loss", "accuracy", "summary"])
def test_boolean_labels(binary, kind, fn):
    kw = {"label": "flag", "by": "g"}
    same(polars_of(getattr(calframe, fn)(frame_of(binary, kind), **kw)), getattr(calframe, fn)(binary, **kw))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("classes", [["p0", "p1", "p2"], ["p0", "p1"]])
@pytest.mark.parametrize("fn, kw", [("brier", {"by": "g"}), ("log_loss", {"weights": "w"}),
                                    ("accuracy", {"by": "g"}), ("summary", {"by": "g", "weights": "w"})])
def test_multiclass_equals_eager(multi, kind, classes, fn, kw):
    df = multi
    if len(classes) == 2:  # two class columns: Brier reads class 1 only (scikit-learn's binary score)
        df = df.with_columns(p1=1.0 - pl.col("p0"), label=pl.col("label").clip(0, 1))
    kw = {"prob": classes, **kw}
    same(polars_of(getattr(calframe, fn)(frame_of(df, kind), **kw)), getattr(calframe, fn)(df, **kw))


def test_array_probabilities_stream(multi):
    df = multi.with_columns(probs=pl.concat_arr("p0", "p1", "p2"))
    for fn in ("brier", "log_loss", "accuracy"):
        expected = getattr(calframe, fn)(df, prob="probs", by="g")
        same(getattr(calframe, fn)(df.lazy(), prob="probs", by="g").collect(), expected)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fn", ["brier", "log_loss", "accuracy", "summary"])
def test_nulls_dropped(binary, kind, fn):
    df = binary.with_columns(prob=pl.when(pl.int_range(pl.len()) % 7 == 0).then(None).otherwise(pl.col("prob")),
                             w=pl.when(pl.int_range(pl.len()) % 11 == 0).then(None).otherwise(pl.col("w")))
    kw = {"by": "g", "weights": "w", "nulls": "drop"}
    with pytest.warns(UserWarning) as caught:
        expected = getattr(calframe, fn)(df, **kw)
    with pytest.warns(UserWarning) as got_caught:
        got = polars_of(getattr(calframe, fn)(frame_of(df, kind), **kw))
    assert [str(w.message) for w in got_caught] == [str(w.message) for w in caught]
    same(got, expected)


def _bad(binary: pl.DataFrame) -> dict[str, tuple[pl.DataFrame, dict]]:
    return {
        "probability": (binary.with_columns(prob=pl.when(pl.col("g") == "b").then(1.5).otherwise(pl.col("prob"))), {}),
        "label": (binary.with_columns(label=pl.col("label") * 3), {}),
        "null": (binary.with_columns(prob=pl.when(pl.col("g") == "c").then(None).otherwise(pl.col("prob"))), {}),
        "weight": (binary.with_columns(w=-pl.col("w")), {"weights": "w"}),
        "zero weights": (binary.with_columns(w=pl.when(pl.col("g") == "a").then(0.0).otherwise(pl.col("w"))),
                         {"weights": "w", "by": "g"}),
        "string probability": (binary.with_columns(prob=pl.col("prob").cast(pl.String)), {}),
    }


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fn", ["brier", "log_loss", "accuracy", "summary"])
@pytest.mark.parametrize("what", ["probability", "label", "null", "weight", "zero weights", "string probability"])
def test_bad_input_same_error_as_eager(binary, kind, fn, what):
    df, kw = _bad(binary)[what]
    with pytest.raises(calframe.CalframeError) as eager:
        getattr(calframe, fn)(df, **kw)
    with pytest.raises(type(eager.value)) as got:
        polars_of(getattr(calframe, fn)(frame_of(df, kind), **kw))
    assert str(got.value) == str(eager.value)


def test_multiclass_bad_labels_same_error(multi):
    df = multi.with_columns(label=pl.col("label") + 1)
    kw = {"prob": ["p0", "p1", "p2"]}
    with pytest.raises(calframe.CalframeError) as eager:
        calframe.brier(df, **kw)
    for kind in KINDS:
        with pytest.raises(type(eager.value)) as got:
            polars_of(calframe.brier(frame_of(df, kind), **kw))
        assert str(got.value) == str(eager.value)


def test_streamed_sums_are_the_same_bits_every_run(binary):
    lf = pl.concat([binary.lazy()] * 4)
    runs = [calframe.summary(lf, by="g", weights="w").collect() for _ in range(3)]
    assert all(r.equals(runs[0]) for r in runs[1:])


def test_ci_in_duckdb_on_a_lazyframe_and_pyarrow(binary):
    """A companion's own intervals come from the moments of its row values where the rows are
    (tests/test_moments_companions.py), and so do a disparity's of companions (tests/test_moments_summary.py)."""
    same(polars_of(calframe.brier(frame_of(binary, "duckdb"), by="g", ci=0.9, n_boot=20)),
         calframe.brier(binary, by="g", ci=0.9, n_boot=20))
    same(polars_of(calframe.disparity(frame_of(binary, "duckdb"), "brier", by="g", n_boot=20)),
         calframe.disparity(binary, "brier", by="g", n_boot=20))
    expected = calframe.brier(binary, by="g", ci=0.9, n_boot=20)
    same(calframe.brier(binary.lazy(), by="g", ci=0.9, n_boot=20).collect(), expected)
    same(pl.from_arrow(calframe.brier(binary.to_arrow(), by="g", ci=0.9, n_boot=20)), expected)
    expected = calframe.disparity(binary, "accuracy", by="g", n_boot=20)
    got = calframe.disparity(binary.lazy(), "accuracy", by="g", n_boot=20)
    assert isinstance(got, pl.LazyFrame)
    same(got.collect(), expected)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("figure, kw", [("brier", {"weights": "w"}), ("accuracy", {}), ("summary", {}),
                                        ("vece", {"variable": "w"}), ("rmsce", {"binning": "quantile"})])
def test_disparity_equals_eager(binary, kind, figure, kw):
    expected = calframe.disparity(binary, figure, by="g", ci=None, min_n=1001, **kw)
    got = calframe.disparity(frame_of(binary, kind), figure, by="g", ci=None, min_n=1001, **kw)
    if kind == "lazy":
        assert isinstance(got, pl.LazyFrame)
    same(polars_of(got), expected)


def test_summary_disparity_in_duckdb(binary):
    expected = calframe.summary(binary, by="g", disparity=True)
    same(polars_of(calframe.summary(frame_of(binary, "duckdb"), by="g", disparity=True)), expected)


def test_disparity_refuses_what_the_engine_does_not_run(binary):
    with pytest.raises(calframe.ParameterError, match="not supported on a DuckDB relation"):
        calframe.disparity(frame_of(binary, "duckdb"), "gece", by="g", ci=None)
    with pytest.raises(calframe.ParameterError, match="not supported on a DuckDB relation"):
        calframe.disparity(frame_of(binary, "duckdb"), "ece", by="g", ci=None, lens="marginal")
    expected = calframe.disparity(binary, "gece", by="g", ci=None)  # pyarrow: collected
    same(pl.from_arrow(calframe.disparity(binary.to_arrow(), "gece", by="g", ci=None)), expected)


@pytest.fixture(scope="module")
def ddf_of():
    dd = pytest.importorskip("dask.dataframe")

    def make(df: pl.DataFrame) -> object:
        return dd.from_pandas(df.to_pandas(), npartitions=3)

    return make


@pytest.mark.parametrize("figure, kw", [("brier", {"weights": "w"}), ("summary", {}), ("ece", {"bins": 5}),
                                        ("vece", {"variable": "w"})])
def test_disparity_on_dask(binary, ddf_of, figure, kw):
    expected = calframe.disparity(binary.to_pandas(), figure, by="g", ci=None, **kw)
    res = calframe.disparity(ddf_of(binary), figure, by="g", ci=None, **kw)
    assert hasattr(res, "compute") and "not computed" in repr(res)
    got = res.compute()
    same(pl.from_pandas(got), pl.from_pandas(expected))


def test_disparity_on_dask_with_ci_or_gece_is_collected(binary, ddf_of):
    pdf = binary.to_pandas()
    for figure, kw in (("accuracy", {"n_boot": 20}), ("gece", {"ci": None})):
        expected = calframe.disparity(pdf, figure, by="g", **kw)
        got = calframe.disparity(ddf_of(binary), figure, by="g", **kw).compute()
        same(pl.from_pandas(got), pl.from_pandas(expected))
    expected = calframe.summary(pdf, by="g", disparity=True)
    same(pl.from_pandas(calframe.summary(ddf_of(binary), by="g", disparity=True).compute()),
         pl.from_pandas(expected))


def test_no_warning_without_nulls(binary):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        polars_of(calframe.summary(frame_of(binary, "duckdb"), by="g"))


def test_disparity_with_ci_on_pyarrow_is_collected(binary):
    expected = calframe.disparity(binary, "brier", by="g", n_boot=20)
    got = calframe.disparity(binary.to_arrow(), "brier", by="g", n_boot=20)
    same(pl.from_arrow(got), expected)


@pytest.mark.spark
@pytest.mark.parametrize("fn, kw", [("summary", {"by": "g", "weights": "w", "nulls": "drop"}),
                                    ("log_loss", {"prob": ["p0", "p1", "p2"], "by": "g", "weights": "w"})])
def test_spark(spark, binary, multi, fn, kw):
    df = multi if "prob" in kw else binary.with_columns(
        prob=pl.when(pl.int_range(pl.len()) % 7 == 0).then(None).otherwise(pl.col("prob")))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = getattr(calframe, fn)(df, **kw)
        got = getattr(calframe, fn)(spark.createDataFrame(df.to_arrow()), **kw)
    same(pl.from_arrow(got.toArrow()), expected)
    bad = df.with_columns(w=-pl.col("w"))
    with pytest.raises(calframe.CalframeError) as eager, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        getattr(calframe, fn)(bad, **kw)
    with pytest.raises(type(eager.value)) as native, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        getattr(calframe, fn)(spark.createDataFrame(bad.to_arrow()), **kw)
    assert str(native.value) == str(eager.value)
