"""Issue 11, "Unclear errors": calframe's own column names never meet the user's.

- A user column named like one of calframe's internal columns (as an unrelated
  column, or as the probability / label / group / variable / weights column
  itself) gives the same numbers as without it, on eager Polars, pandas,
  LazyFrame and Dask, and in the SQL queries (docs/spec.md section 8,
  "Internal column names").
- ``apply`` works on pandas frames whose other columns have non-string labels.
- The top-level functions take a Dask DataFrame (dispatch to ``ddf.calib``),
  and Dask input errors count rows over every partition, with eager's message.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import polars as pl
import pytest

import calframe
from calframe import sql
from conftest import collected

#: internal names of the eager path, the LazyFrame queries, the Dask sums and apply (before issue 11)
INTERNAL = ["__calframe_i", "__cf_i", "__cf_bin", "__cf_len", "__cf_ok", "__cf_conf", "__cf_g", "__cf_row",
            "__cf_k0", "__cf_key0", "__cf_key1", "__cf_fig", "__cf_cls", "__cf_cat", "__cf_rows", "__cf_n",
            "__cf_x", "__cf_e0", "__cf_catv", "__cf_label", "__calframe_no_label__"]
#: the test frame's columns an internal name replaces (the other names are added as unrelated columns)
ROLES = ["prob", "label", "g", "age", "w", "c"]
TOL = 1e-12
N = 600


def _data() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    p = rng.random(N)
    return pd.DataFrame({
        "prob": p,
        "label": (rng.random(N) < p**1.3).astype(np.int64),
        "g": rng.integers(0, 3, N),
        "s": rng.choice(["a", "b"], N),  # a second, String key: group_codes hashes and sorts the key table
        "age": rng.normal(40, 10, N),
        "w": rng.random(N) + 0.5,
        "c": rng.choice(["x", "y", "z"], N),
    })


def _hand_ece(df: pd.DataFrame, prob: str, label: str, by: list[str]) -> pd.Series:
    """ECE per group by hand (class:1 lens, 15 uniform left-closed bins)."""
    out = {}
    for key, d in df.groupby(by, sort=True):
        p, y = d[prob].to_numpy(), d[label].to_numpy()
        b = np.digitize(p, np.linspace(0, 1, 16)[1:-1])
        out[key] = sum(np.sum(b == k) / len(p) * abs(p[b == k].mean() - y[b == k].mean()) for k in np.unique(b))
    return pd.Series(out)


def _convert(df: pd.DataFrame, kind: str):
    if kind == "polars":
        return pl.from_pandas(df)
    if kind == "lazy":
        return pl.from_pandas(df).lazy()
    if kind == "dask":
        dd = pytest.importorskip("dask.dataframe")
        return dd.from_pandas(df, npartitions=3)
    return df


def _pandas(x):
    x = collected(x)
    if isinstance(x, pl.LazyFrame):
        x = x.collect()
    return x.to_pandas() if isinstance(x, pl.DataFrame) else x


def _results(df: pd.DataFrame, kind: str, prob="prob", label="label", g="g", age="age", w="w", c="c") -> dict:
    """Every figure of the test, with the columns under the given names (results as pandas frames)."""
    f = _convert(df, kind)
    by = [g, "s"]
    kw = dict(prob=prob, label=label, lens="class:1")
    out = {
        "ece": calframe.ece(f, by=by, **kw),
        "ece_quantile": calframe.ece(f, by=by, binning="quantile", bins=5, **kw),
        "ece_weights": calframe.ece(f, by=by, weights=w, **kw),
        "vece": calframe.vece(f, age, by=by, bins=5, **kw),
        "vece_categorical": calframe.vece(f, c, by=[g], **kw),
        "reliability": calframe.reliability(f, by=by, **kw),
    }
    eager = f.collect() if kind == "lazy" else f
    if kind != "dask":  # gece and fit take no Dask frame (test_dask_dispatch)
        out["gece"] = calframe.gece(eager, prob, label, by=by)
        rec = calframe.fit(eager, "platt", prob, label, by=by)
    else:
        rec = calframe.fit(df, "platt", prob, label, by=by)
    applied = calframe.apply(f, rec, name="p_out")
    out["apply"] = (applied.compute() if kind == "dask" else _pandas(applied))[["p_out"]]
    return {k: _pandas(v) for k, v in out.items()}


@pytest.fixture(scope="module")
def sync_dask():
    dask = pytest.importorskip("dask")
    with dask.config.set(scheduler="synchronous"):
        yield


_REFERENCE: dict[str, dict] = {}


def _reference(kind: str) -> dict:
    """The figures with the test frame's own column names (computed once per frame kind)."""
    if kind not in _REFERENCE:
        _REFERENCE[kind] = _results(_data(), kind)
    return _REFERENCE[kind]


@pytest.mark.parametrize("kind", ["polars", "pandas", "lazy", "dask"])
def test_reference_is_right(sync_dask, kind):
    """The baseline the collision runs are compared with is the hand-computed ECE."""
    want = _hand_ece(_data(), "prob", "label", ["g", "s"]).to_numpy()
    np.testing.assert_allclose(_reference(kind)["ece"]["ece"].to_numpy(), want, rtol=0, atol=TOL)


@pytest.mark.parametrize("kind", ["polars", "pandas", "lazy", "dask"])
def test_internal_names_never_collide(sync_dask, kind):
    """Run j names role r INTERNAL[j + r] and adds every other internal name as a column of its own:
    over the runs, each name is each role once and an unrelated column many times. On Dask (a graph per call,
    the slowest surface) every sixth run: each name takes at least one of the six roles, and is an unrelated
    column in every run."""
    df, ref = _data(), _reference(kind)
    k = len(INTERNAL)
    for j in range(0, k, 6 if kind == "dask" else 1):
        names = {role: INTERNAL[(j + r) % k] for r, role in enumerate(ROLES)}
        data = df.rename(columns={role: name for role, name in names.items()})
        for i, extra in enumerate(n for n in INTERNAL if n not in names.values()):
            data[extra] = np.random.default_rng(i).random(N)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = _results(data, kind, **names)
        back = {name: role for role, name in names.items()}
        for fig, want in ref.items():
            pd.testing.assert_frame_equal(got[fig].rename(columns=back).reset_index(drop=True),
                                          want.reset_index(drop=True), check_exact=False, rtol=0, atol=TOL,
                                          obj=f"{kind} {fig} with columns {names}")


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_sql_queries_take_any_user_name(engine):
    """Columns and tables named like the queries' own names (__cf_p, __cf_rows, ...) give calframe's numbers."""
    df = pl.from_pandas(_data()).drop("s", "c")
    want = calframe.ece(df, "prob", "label", by="g", lens="class:1")
    want_v = calframe.vece(df, "age", "prob", "label", by="g", bins=5, lens="class:1")
    for name in ["__cf_p", "__cf_y", "__cf_bin", "__cf_v", "__cf_rows", "__cf_k0", "__CF_P"]:
        for role in ["extra", "prob", "label", "g", "age", "table"]:
            data, table = df, "scores"
            cols = {"prob": "prob", "label": "label", "g": "g", "age": "age"}
            if role == "extra":
                data = df.with_columns(pl.lit(0.5).alias(name))
            elif role == "table":
                table = name
            else:
                data, cols[role] = df.rename({role: name}), name
            kw = dict(prob=cols["prob"], label=cols["label"], by=cols["g"], lens="class:1")
            for q, ref, fig in ((sql.ece_query(table, **kw), want, "ece"),
                                (sql.vece_query(table, cols["age"], bins=5, **kw), want_v, "vece")):
                if engine == "polars":
                    got = pl.SQLContext(frames={table: data}).execute(q, eager=True)
                else:
                    duckdb = pytest.importorskip("duckdb")
                    con = duckdb.connect()
                    con.register(table, data.to_arrow())
                    got = pl.from_arrow(con.sql(q).to_arrow_table())
                    con.close()
                np.testing.assert_allclose(got[fig].to_numpy(), ref[fig].to_numpy(), rtol=0, atol=TOL,
                                           err_msg=f"{name} as {role}")


def test_duckdb_macros_ignore_other_columns_and_refuse_reserved_names():
    duckdb = pytest.importorskip("duckdb")
    df = pl.from_pandas(_data()).drop("s", "c")
    want = calframe.ece(df, "prob", "label", by="g", lens="class:1")["ece"].to_numpy()
    con = duckdb.connect()
    sql.install_duckdb_macros(con)
    wide = df.with_columns(pl.lit(0.5).alias(n) for n in ["__cf_p", "__cf_y", "__cf_all", "__cf_bin"])
    con.register("t", wide.to_arrow())
    got = con.sql("SELECT * FROM calframe_ece('t', 'prob', 'label', lens := 'class:1', by_cols := ['g'])").fetchnumpy()
    np.testing.assert_allclose(got["ece"], want, rtol=0, atol=TOL)
    con.register("u", df.rename({"g": "__cf_all"}).to_arrow())
    with pytest.raises(duckdb.Error, match="starting with '__cf_' are reserved"):
        con.sql("SELECT * FROM calframe_ece('u', 'prob', 'label', by_cols := ['__cf_all'])").fetchall()
    con.close()


# --------------------------------------------------------------------------- apply: non-string pandas labels


def test_apply_keeps_non_string_labels():
    df = _data()
    rec = calframe.fit(df, "platt", "prob", "label", by="g")
    want = calframe.apply(df, rec)
    odd = df.copy()
    odd[0] = np.arange(N)
    odd[("a", 1)] = "x"
    odd[2.5] = pd.array([None, 1.0] * (N // 2), dtype=object)
    got = calframe.apply(odd, rec)
    assert list(got.columns) == list(odd.columns) + ["p_platt"]
    np.testing.assert_array_equal(got["p_platt"].to_numpy(), want["p_platt"].to_numpy())
    for c in (0, ("a", 1), 2.5):
        pd.testing.assert_series_equal(got[c], odd[c])
    assert 0 in odd.columns and "p_platt" not in odd.columns  # the input is not changed


def test_apply_refuses_a_non_string_column_to_read():
    df = _data()
    rec = calframe.fit(df, "platt", "prob", "label")
    odd = df.rename(columns={"prob": 0})
    with pytest.raises(calframe.ColumnNotFoundError, match="prob=0: column names must be strings"):
        calframe.apply(odd, rec, prob=0)


# --------------------------------------------------------------------------- Dask: dispatch and totals


def test_dask_dispatch(sync_dask):
    dd = pytest.importorskip("dask.dataframe")
    df = _data()
    ddf = dd.from_pandas(df, npartitions=3)
    want = _hand_ece(df, "prob", "label", ["g"]).to_numpy()
    got = calframe.ece(ddf, "prob", "label", by="g", lens="class:1").compute()
    assert isinstance(got, pd.DataFrame)
    np.testing.assert_allclose(got["ece"].to_numpy(), want, rtol=0, atol=TOL)
    assert calframe.ece(frame=ddf, prob="prob", lens="class:1").compute() == pytest.approx(
        calframe.ece(df, "prob", lens="class:1"), abs=TOL)
    pd.testing.assert_frame_equal(calframe.vece(ddf, "age", by="g", lens="class:1").compute(),
                                  ddf.calib.vece("age", by="g", lens="class:1").compute())
    with pytest.raises(calframe.ColumnTypeError, match=r"lce: Dask DataFrames are not supported.*compute\(\)"):
        calframe.lce(ddf, ["age"])
    with pytest.raises(calframe.ParameterError, match="ddf.calib.ece"):
        calframe.ece(ddf, bogus=1)


def _message(fn, frame) -> str:
    with pytest.raises(calframe.CalframeError) as info:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            collected(fn(frame))
    return f"{type(info.value).__name__}: {info.value}"


@pytest.mark.parametrize("case", ["labels", "probabilities", "nulls", "variable", "labels_after_drop"])
def test_dask_errors_count_every_partition(sync_dask, case):
    dd = pytest.importorskip("dask.dataframe")
    rng = np.random.default_rng(3)
    n = 100_000
    df = pd.DataFrame({"prob": rng.random(n), "label": (rng.random(n) < 0.5).astype(np.int64),
                       "g": rng.integers(0, 3, n), "age": rng.normal(size=n)})
    fn = lambda f: calframe.ece(f, by="g", lens="class:1")  # noqa: E731
    if case == "labels":  # the case: every label out of range
        df["label"] = 2
        expect = "100000 rows outside the classes"
    elif case == "probabilities":
        df.loc[::7, "prob"] = 1.5
        df.loc[::11, "prob"] = np.nan
        expect = "probabilities outside [0, 1] in 12987 rows"
    elif case == "nulls":
        df["prob"] = pd.array(df["prob"], dtype="Float64")
        df["label"] = pd.array(df["label"], dtype="Int64")
        df.loc[::5, "prob"] = pd.NA
        df.loc[::3, "label"] = pd.NA
        expect = "'prob': 20000 rows, 'label': 33334 rows"
    elif case == "variable":
        df.loc[::13, "age"] = np.inf
        fn = lambda f: calframe.vece(f, "age", lens="class:1")  # noqa: E731
        expect = "in 7693 rows"
    else:
        df["label"] = pd.array(df["label"], dtype="Int64")
        df.loc[1::4, "label"] = 7
        df.loc[::3, "label"] = pd.NA  # 25000 sevens, 8333 of them (rows 9, 21, ...) dropped
        fn = lambda f: calframe.ece(f, by="g", nulls="drop", lens="class:1")  # noqa: E731
        expect = "16667 rows outside the classes {0, 1} (found values [7])"
    eager = _message(fn, df)
    assert expect in eager
    assert _message(fn, dd.from_pandas(df, npartitions=3)) == eager
