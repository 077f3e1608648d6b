"""Group keys, row selections and column lookup: one rule on every frame type (spec section 8).

Expected values are computed by hand with numpy on rows selected with numpy,
never taken from calframe.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import polars as pl
import pytest

import calframe
from conftest import collected, figure
from calframe import ColumnNotFoundError, ColumnTypeError, InvalidValueError, ParameterError

N = 600
BINS = 15


def ece_hand(conf: np.ndarray, acc: np.ndarray, bins: int = BINS) -> float:
    """Binned ECE with ``bins`` uniform bins: sum over bins of |sum conf - sum acc| / n."""
    b = np.minimum((conf * bins).astype(np.int64), bins - 1)
    gap = np.bincount(b, conf, bins) - np.bincount(b, acc.astype(np.float64), bins)
    return float(np.abs(gap).sum() / conf.shape[0])


def top1_ece_hand(p: np.ndarray, y: np.ndarray) -> float:
    return ece_hand(p.max(axis=1), p.argmax(axis=1) == y)


def _multiclass(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    p = rng.dirichlet([1.0, 1.0, 1.0], N)
    y = rng.integers(0, 3, N)
    return {"p0": p[:, 0], "p1": p[:, 1], "p2": p[:, 2], "label": y,
            "region": rng.choice(["eu", "us"], N), "x": rng.random(N)}


P3 = ["p0", "p1", "p2"]


def _probs(d: dict) -> np.ndarray:
    return np.column_stack([d[c] for c in P3])


# --------------------------------------------------------------------------- where=


WHERE_CASES = {
    "sql": ("label > 1", lambda d: d["label"] > 1),
    "sql_and": ("label >= 1 AND region = 'eu'", lambda d: (d["label"] >= 1) & (d["region"] == "eu")),
    "sql_in": ("label IN (0, 2) OR x < 0.25", lambda d: np.isin(d["label"], [0, 2]) | (d["x"] < 0.25)),
    "expr": (pl.col("label") > 1, lambda d: d["label"] > 1),
    "callable": (lambda f: pl.col("x") > 0.5, lambda d: d["x"] > 0.5),
}


@pytest.mark.parametrize("case", list(WHERE_CASES))
def test_where_keeps_the_same_rows_on_every_frame_type(constructor, case) -> None:
    d = _multiclass()
    where, numpy_mask = WHERE_CASES[case]
    keep = numpy_mask(d)
    assert 0 < keep.sum() < N
    expected = top1_ece_hand(_probs(d)[keep], d["label"][keep])
    got = figure(calframe.gece(constructor(d), prob=P3, where=where))
    assert got == pytest.approx(expected, rel=1e-12)


def test_where_boolean_mask_is_positional(constructor) -> None:
    d = _multiclass(1)
    keep = d["x"] > 0.3
    expected = top1_ece_hand(_probs(d)[keep], d["label"][keep])
    for mask in (keep, keep.tolist(), pl.Series(keep), pd.Series(keep, index=np.arange(N)[::-1])):
        assert figure(calframe.gece(constructor(d), prob=P3, where=mask)) == pytest.approx(expected, rel=1e-12)


def test_where_pandas_nan_is_missing_as_in_sql() -> None:
    # NaN in a numpy-backed pandas float column is pandas' missing value: "x > 0.5" does not keep it,
    # as SQL and a Polars null would not.
    d = _multiclass(2)
    d["x"] = np.where(np.arange(N) % 5 == 0, np.nan, d["x"])
    keep = d["x"] > 0.5  # numpy: NaN > 0.5 is False
    expected = top1_ece_hand(_probs(d)[keep], d["label"][keep])
    assert calframe.gece(pd.DataFrame(d), prob=P3, where="x > 0.5") == pytest.approx(expected, rel=1e-12)
    nulls = pl.DataFrame(d).with_columns(pl.col("x").fill_nan(None))
    assert calframe.gece(nulls, prob=P3, where="x > 0.5") == pytest.approx(expected, rel=1e-12)


BAD_WHERE = {
    "empty": "",
    "blank": "   ",
    "int_positions": np.arange(N),
    "int_list": [1, 0] * (N // 2),
    "float_mask": np.ones(N),
    "scalar": True,
    "short_mask": np.ones(N - 1, dtype=bool),
    "not_boolean_sql": "label + 1",
    "unknown_column_sql": "nosuch > 1",
    "bad_sql": "label >",
    "not_boolean_expr": pl.col("x"),
}


@pytest.mark.parametrize("case", list(BAD_WHERE))
def test_where_refuses_what_is_not_a_row_selection(constructor, case) -> None:
    frame = constructor(_multiclass())
    with pytest.raises(ParameterError, match="'where' parameter of gece"):
        calframe.gece(frame, prob=P3, where=BAD_WHERE[case])


def test_where_integer_positions_say_how_to_build_a_mask() -> None:
    with pytest.raises(ParameterError, match=r"(?s)Int64.*row positions.*m\[positions\] = True"):
        calframe.gece(pl.DataFrame(_multiclass()), prob=P3, where=np.arange(N))


# --------------------------------------------------------------------------- -0.0 and 0.0, NaN keys


def _signed_zero_data(seed: int = 3) -> dict:
    rng = np.random.default_rng(seed)
    p = rng.random(N)
    y = (rng.random(N) < p).astype(np.int64)
    g = np.where(np.arange(N) < N // 2, -0.0, 0.0)  # -0.0 in the first half (first Dask partition)
    g[::7] = 1.5
    return {"prob": p, "label": y, "g": g}


def _expected_by_g(d: dict) -> dict[float, tuple[int, float]]:
    """{key: (n, ECE of the class-1 lens)} with -0.0 and 0.0 one key."""
    g = np.asarray(d["g"]) + 0.0  # IEEE: -0.0 + 0.0 == +0.0
    return {float(k): (int((g == k).sum()), ece_hand(d["prob"][g == k], d["label"][g == k])) for k in np.unique(g)}


def _check_groups(res, expected) -> None:
    res = pl.from_pandas(res) if isinstance(res, pd.DataFrame) else res
    assert res.height == len(expected)
    for row in res.iter_rows(named=True):
        key = row["g"]
        assert math.copysign(1.0, key) == 1.0  # the key shows 0.0, never -0.0
        n, ece = expected[key]
        assert row["n"] == n
        assert row["ece"] == pytest.approx(ece, rel=1e-12)


def test_signed_zero_keys_are_one_group(constructor) -> None:
    d = _signed_zero_data()
    res = collected(calframe.ece(constructor(d), lens="class:1", by="g"))
    _check_groups(res, _expected_by_g(d))


def test_signed_zero_keys_are_one_group_on_dask() -> None:
    dd = pytest.importorskip("dask.dataframe")
    import dask

    import calframe.frames.dask  # noqa: F401  (registers ddf.calib)

    d = _signed_zero_data()
    ddf = dd.from_pandas(pd.DataFrame(d), npartitions=2, sort=False)
    with dask.config.set(scheduler="synchronous"):
        res = ddf.calib.ece(lens="class:1", by="g").compute()
    _check_groups(res, _expected_by_g(d))


def test_fit_by_signed_zero_stores_one_group_and_apply_uses_it() -> None:
    d = _signed_zero_data()
    df = pl.DataFrame(d)
    rec = calframe.fit(df, "platt", by="g")
    assert rec.params["keys"] == [[0.0], [1.5]]
    assert math.copysign(1.0, rec.params["keys"][0][0]) == 1.0
    # the 0.0 recalibrator is the one fitted on every row keyed -0.0 or 0.0
    zero = np.asarray(d["g"]) == 0.0
    alone = calframe.fit(df.filter(pl.Series(zero)), "platt")
    out = calframe.apply(df, rec)["p_platt"].to_numpy()
    expected = calframe.apply(df.filter(pl.Series(zero)), alone)["p_platt"].to_numpy()
    np.testing.assert_array_equal(out[zero], expected)
    neg = np.signbit(np.asarray(d["g"])) & zero
    assert neg.any() and (zero & ~neg).any()


def _nan_key_data(seed: int = 4) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.random(N)
    y = (rng.random(N) < p).astype(np.int64)
    g = rng.choice([1.0, 2.0, np.nan], N)
    return pl.DataFrame({"prob": p, "label": y, "g": g})


@pytest.mark.parametrize("flavour", ["polars", "lazy", "pandas"])
def test_nan_key_is_the_missing_key(flavour) -> None:
    df = _nan_key_data()
    g = df["g"].to_numpy()
    # a null beside the NaN on Polars: both are the one missing key
    if flavour != "pandas":
        df = df.with_columns(pl.when(pl.int_range(pl.len()) == 0).then(None).otherwise(pl.col("g")).alias("g"))
    frame = {"polars": df, "lazy": df.lazy(), "pandas": df.to_pandas()}[flavour]
    res = collected(calframe.ece(frame, lens="class:1", by="g"))
    res = pl.from_pandas(res) if isinstance(res, pd.DataFrame) else res
    missing = np.isnan(g) | (np.arange(N) == 0 if flavour != "pandas" else False)
    assert res["g"].to_list()[:2] == [1.0, 2.0] and res["g"][2] is None and res.height == 3
    p, y = df["prob"].to_numpy(), df["label"].to_numpy()
    assert res["n"][2] == int(missing.sum())
    assert res["ece"][2] == pytest.approx(ece_hand(p[missing], y[missing]), rel=1e-12)


def test_fit_by_nan_key_stores_a_null_key_and_apply_uses_it() -> None:
    df = _nan_key_data()
    rec = calframe.fit(df, "platt", by="g")
    assert rec.params["keys"] == [[1.0], [2.0], [None]]
    missing = df["g"].is_nan().to_numpy()
    alone = calframe.fit(df.filter(pl.Series(missing)), "platt")
    for frame in (df, df.to_pandas()):
        out = np.asarray(calframe.apply(frame, rec)["p_platt"])
        expected = calframe.apply(df.filter(pl.Series(missing)), alone)["p_platt"].to_numpy()
        np.testing.assert_array_equal(out[missing], expected)


def test_fit_by_infinite_key_names_the_by_column() -> None:
    df = _nan_key_data().with_columns(g=pl.when(pl.col("g") == 2.0).then(float("inf")).otherwise(pl.col("g")))
    n_inf = int(df["g"].is_infinite().sum())
    with pytest.raises(InvalidValueError, match=rf"(?s)group key column 'g' \(by=\) is infinite in {n_inf} rows.*String"):
        calframe.fit(df, "platt", by="g")


# --------------------------------------------------------------------------- exact column lookup


def test_pandas_string_name_means_the_string_labelled_column() -> None:
    rng = np.random.default_rng(5)
    p = rng.random(N)
    y = (rng.random(N) < p).astype(np.int64)
    s_key = np.where(np.arange(N) < 100, "a", "b")
    i_key = np.arange(N) % 2
    df = pd.DataFrame({"prob": p, "label": y})
    df["1"] = s_key
    df[1] = i_key
    res = calframe.ece(df, lens="class:1", by="1")
    assert res["1"].tolist() == ["a", "b"]
    assert res["n"].tolist() == [100, N - 100]
    assert res["ece"].tolist() == pytest.approx([ece_hand(p[:100], y[:100]), ece_hand(p[100:], y[100:])], rel=1e-12)


def test_pandas_non_string_label_is_not_found_by_its_string() -> None:
    df = pd.DataFrame({"prob": [0.1, 0.8, 0.6], "label": [0, 1, 0], 7: ["a", "b", "a"]})
    with pytest.raises(ColumnNotFoundError, match=r"(?s)'7'.*non-string column labels \[7\].*astype\(str\)"):
        calframe.ece(df, by="7")


def test_apply_on_pandas_with_a_non_string_column_label() -> None:
    rng = np.random.default_rng(6)
    p = rng.random(N)
    df = pd.DataFrame({"prob": p, "label": (rng.random(N) < p).astype(np.int64)})
    rec = calframe.fit(df, "platt")
    df[0] = "other"
    out = calframe.apply(df, rec)
    assert list(out.columns) == ["prob", "label", 0, "p_platt"]
    a, b = rec.params["coef"], rec.params["intercept"]
    logit = np.log(p / (1 - p))
    np.testing.assert_allclose(out["p_platt"], 1 / (1 + np.exp(-(a * logit + b))), rtol=1e-12)


#: the public functions that take variable or feature columns, each called with the columns ``cols``
COLUMN_TAKERS = {
    "lce": lambda f, cols: calframe.lce(f, cols, gamma=0.5, bins=5),
    "mlce": lambda f, cols: calframe.mlce(f, cols, gamma=0.5, bins=5),
    "mlce_curve": lambda f, cols: calframe.mlce_curve(f, cols, gammas=[0.5], bins=5),
    "fit(features=)": lambda f, cols: calframe.fit(f, "lore", features=cols, gamma=0.5),
    "vece": lambda f, cols: calframe.vece(f, cols),
    "vmce": lambda f, cols: calframe.vmce(f, cols),
    "vece_rank": lambda f, cols: calframe.vece_rank(f, variables=cols),
    "vce_curve": lambda f, cols: calframe.vce_curve(f, cols),
    "fit(variable=)": lambda f, cols: calframe.fit(f, "tree", variable=cols),
}
FEATURE_TAKERS = {"lce", "mlce", "mlce_curve", "fit(features=)"}


def _one_and_its_string(n: int = 200, seed: int = 12) -> pd.DataFrame:
    """A pandas frame with a numeric column labelled "1" and another, different, labelled by the int 1."""
    rng = np.random.default_rng(seed)
    p = rng.random(n)
    df = pd.DataFrame({"prob": p, "label": (rng.random(n) < p).astype(np.int64), "1": rng.normal(size=n)})
    df[1] = rng.normal(50, 10, n)
    return df


@pytest.mark.parametrize("cols", [[1], (1,), ["1", 1], 1, np.int64(1)], ids=["list", "tuple", "mixed", "int", "np"])
@pytest.mark.parametrize("func", list(COLUMN_TAKERS))
def test_pandas_int_label_is_refused_as_a_variable_or_feature_not_read_as_its_string(func, cols) -> None:
    """features=[1] / variable=[1] never means the column "1" (nor the int-labelled one): a ColumnNotFoundError
    naming the parameter, with the rename hint (spec section 8), on every function that takes such columns.
    (``features`` itself neither a name nor a list is the ParameterError of a bad parameter.)"""
    frame = _one_and_its_string()
    if func in FEATURE_TAKERS and not isinstance(cols, (list, tuple)):
        with pytest.raises(ParameterError, match=r"'features' parameter of \w+ must be a column name"):
            COLUMN_TAKERS[func](frame, cols)
        return
    with pytest.raises(ColumnNotFoundError, match=r"(?s)(features|variables?)=.*column names must be strings"
                                                  r".*non-string column labels \[1\].*astype\(str\)"):
        COLUMN_TAKERS[func](frame, cols)


@pytest.mark.parametrize("func", ["lce", "mlce", "fit(features=)", "vece", "vece_rank"])
def test_polars_feature_names_must_be_strings_too(func) -> None:
    df = pl.from_pandas(_one_and_its_string().drop(columns=[1]))
    with pytest.raises(ColumnNotFoundError, match=r"(features|variables?)=1: column names must be strings"):
        COLUMN_TAKERS[func](df, [1])


@pytest.mark.parametrize("func", ["vece", "vmce"])
def test_dask_int_label_is_refused_as_a_variable(func) -> None:
    dd = pytest.importorskip("dask.dataframe")
    ddf = dd.from_pandas(_one_and_its_string(), npartitions=2)
    with pytest.raises(ColumnNotFoundError, match=r"(?s)variable=1: column names must be strings.*\[1\]"):
        getattr(calframe, func)(ddf, [1])


def test_lce_on_pandas_reads_the_string_labelled_feature_beside_an_int_label() -> None:
    """LCE by hand (Luo et al.: Laplacian kernel exp(-|x - x'| / gamma) over the rows of x's confidence bin)
    on the column "1", never the int-labelled column 1."""
    df = _one_and_its_string(n=60)
    p, y, x = df["prob"].to_numpy(), df["label"].to_numpy(), df["1"].to_numpy()
    b = np.minimum((p * 5).astype(np.int64), 4)
    k = np.exp(-np.abs(x[:, None] - x[None, :]) / 0.5) * (b[:, None] == b[None, :])
    want = np.abs(k @ (p - y)) / k.sum(axis=1)
    out = calframe.lce(df, ["1"], gamma=0.5, bins=5)
    assert list(out.columns) == ["prob", "label", "1", 1, "lce"]
    np.testing.assert_allclose(out["lce"].to_numpy(), want, rtol=1e-12, atol=1e-15)


# --------------------------------------------------------------------------- key dtypes


def _key_data(seed: int = 7) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.random(N)
    y = (rng.random(N) < p).astype(np.int64)
    return p, y, rng.integers(0, 3, N)


NESTED = {
    "struct": lambda k: pl.Series("k", [{"a": int(v), "b": "x"} for v in k]),
    "list": lambda k: pl.Series("k", [[int(v)] * (int(v) + 1) for v in k]),
    "array": lambda k: pl.Series("k", [[int(v), -int(v)] for v in k], dtype=pl.Array(pl.Int64, 2)),
}


@pytest.mark.parametrize("kind", list(NESTED))
@pytest.mark.parametrize("lazy", [False, True])
def test_nested_keys_group_by_value(kind, lazy) -> None:
    p, y, k = _key_data()
    df = pl.DataFrame({"prob": p, "label": y}).with_columns(NESTED[kind](k))
    res = collected(calframe.ece(df.lazy() if lazy else df, lens="class:1", by="k"))
    assert res.height == 3
    assert res["n"].to_list() == [int((k == v).sum()) for v in range(3)]  # sorted by key: 0, 1, 2
    assert res["ece"].to_list() == pytest.approx([ece_hand(p[k == v], y[k == v]) for v in range(3)], rel=1e-12)


def test_pandas_period_key_groups_in_time_order() -> None:
    p, y, k = _key_data(8)
    months = pd.PeriodIndex(["2024-11", "2024-12", "2025-01"], freq="M")
    df = pd.DataFrame({"prob": p, "label": y, "month": months[k]})
    df.loc[::10, "month"] = pd.NaT
    missing = np.arange(N) % 10 == 0
    res = calframe.ece(df, lens="class:1", by="month")
    assert res["month"].astype(object).where(res["month"].notna(), None).tolist() == \
        ["2024-11", "2024-12", "2025-01", None]
    sel = [(k == v) & ~missing for v in range(3)] + [missing]
    assert res["n"].tolist() == [int(s.sum()) for s in sel]
    assert res["ece"].tolist() == pytest.approx([ece_hand(p[s], y[s]) for s in sel], rel=1e-12)


def test_pandas_interval_key_from_cut_groups_in_order() -> None:
    p, y, _ = _key_data(9)
    age = np.random.default_rng(9).uniform(0, 100, N)
    df = pd.DataFrame({"prob": p, "label": y, "age": pd.cut(age, [0, 9.5, 50, 100])})
    res = calframe.ece(df, lens="class:1", by="age")
    assert res["age"].astype(str).tolist() == ["(0.0, 9.5]", "(9.5, 50.0]", "(50.0, 100.0]"]
    sel = [(age <= 9.5), (age > 9.5) & (age <= 50), age > 50]
    assert res["n"].tolist() == [int(s.sum()) for s in sel]


def test_period_key_fit_and_apply() -> None:
    p, y, k = _key_data(10)
    df = pd.DataFrame({"prob": p, "label": y, "month": pd.PeriodIndex(["2024-11", "2024-12", "2025-01"], freq="M")[k]})
    rec = calframe.fit(df, "platt", by="month")
    assert rec.params["keys"] == [["2024-11"], ["2024-12"], ["2025-01"]]
    out = calframe.apply(df, rec)["p_platt"].to_numpy()
    assert np.isfinite(out).all()


@pytest.mark.parametrize("values", [[1, "a", 2.5], [1, "1", 1]], ids=["int_str_float", "int_and_its_string"])
def test_pandas_mixed_object_key_is_refused(values) -> None:
    p, y, _ = _key_data(11)
    df = pd.DataFrame({"prob": p[:6], "label": y[:6], "k": values * 2})
    with pytest.raises(ColumnTypeError, match=r"(?s)column 'k' has pandas dtype object.*'int'.*'str'.*astype\(str\)"):
        calframe.ece(df, by="k")


@pytest.mark.parametrize("lazy", [False, True])
def test_polars_object_key_is_refused(lazy) -> None:
    df = pl.DataFrame({"prob": [0.2, 0.7], "label": [0, 1], "k": pl.Series([object(), object()], dtype=pl.Object)})
    with pytest.raises(ColumnTypeError, match=r"group key column 'k' has dtype Object"):
        calframe.ece(df.lazy() if lazy else df, by="k")


# --------------------------------------------------------------------------- NaN in a pandas float label


def _nan_label() -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(12)
    p = rng.random(N)
    y = (rng.random(N) < p).astype(np.float64)
    y[::9] = np.nan  # an integer label column with missing values, as pandas stores it
    return pd.DataFrame({"prob": p, "label": y}), ~np.isnan(y)


def test_pandas_nan_label_is_a_null_dropped_with_nulls_drop() -> None:
    df, ok = _nan_label()
    with pytest.warns(calframe.CalframeWarning, match=f"dropped {int((~ok).sum())} rows"):
        got = calframe.ece(df, lens="class:1", nulls="drop")
    assert got == pytest.approx(ece_hand(df["prob"].to_numpy()[ok], df["label"].to_numpy()[ok]), rel=1e-12)


def test_pandas_nan_label_is_named_as_null() -> None:
    df, ok = _nan_label()
    with pytest.raises(InvalidValueError, match=rf"null values in 'label': {int((~ok).sum())} rows.*nulls='drop'"):
        calframe.ece(df, lens="class:1")


def test_pandas_nan_label_on_dask_is_dropped_too() -> None:
    dd = pytest.importorskip("dask.dataframe")
    import dask

    import calframe.frames.dask  # noqa: F401

    df, ok = _nan_label()
    with dask.config.set(scheduler="synchronous"), warnings.catch_warnings():
        warnings.simplefilter("ignore", calframe.CalframeWarning)
        got = dd.from_pandas(df, npartitions=3).calib.ece(lens="class:1", nulls="drop").compute()
    assert float(got) == pytest.approx(ece_hand(df["prob"].to_numpy()[ok], df["label"].to_numpy()[ok]), rel=1e-12)


@pytest.mark.parametrize("keys", [[2**63, 2**63 + 1, 2**63, 2**63 + 5, 2**63 + 5, 2**63 + 1],  # a small span
                                  [2**63, 2**64 - 1, 2**63, 2**64 - 1, 2**63, 2**64 - 1]])   # the keys
def test_uint64_keys_above_int64_group_as_on_a_lazyframe(keys) -> None:
    """UInt64 keys >= 2**63 (issue 31: OverflowError on the eager path): the eager result equals the
    LazyFrame engine's, and each group's ECE the one computed by hand on its rows."""
    prob = np.array([0.2, 0.7, 0.4, 0.9, 0.35, 0.6])
    label = np.array([0, 1, 1, 1, 0, 0])
    df = pl.DataFrame({"prob": prob, "label": label, "g": pl.Series(keys, dtype=pl.UInt64)})
    eager = calframe.ece(df, by="g")
    assert eager.equals(calframe.ece(df.lazy(), by="g").collect()), eager
    assert eager["g"].dtype == pl.UInt64 and eager["g"].to_list() == sorted(set(keys))
    for k, e in zip(eager["g"], eager["ece"]):
        rows = np.array(keys, dtype=np.uint64) == np.uint64(k)
        assert e == pytest.approx(ece_hand(prob[rows], label[rows]), abs=1e-12)
