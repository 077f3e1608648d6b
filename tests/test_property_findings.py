"""Defects found by tests/test_public_properties.py (issue 11), each pinned by a small regression test.

Expected values are computed here by hand (numpy) or stated by the rule in docs/spec.md section 8.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import polars as pl
import pytest

import calframe
from calframe._errors import CalframeError, ParameterError
from conftest import as_flavour, collected, figure

pytestmark = pytest.mark.usefixtures("one_numba_thread")


def _frame() -> pl.DataFrame:
    return pl.DataFrame({
        "prob": [0.2, 0.7, 0.4, 0.9, 0.35, 0.6],
        "label": [0, 1, 1, 1, 0, 0],
        "g": ["a", "a", "a", "b", "b", "b"],
        "v": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        "u": [0.5, -1.0, 2.0, 0.0, 1.5, 3.0],
    })


# --------------------------------------------------------------------------- 1. by column named like an output column

#: (function, the by column's new name, kwargs); every output column family of the issue
CLASHES = [
    ("ece", "n", {}),
    ("ece", "ece", {}),
    ("mce", "mce", {}),
    ("rmsce", "n", {}),
    ("ce", "ce", {"p": 2}),
    ("brier", "brier", {}),
    ("accuracy", "n", {}),
    ("reliability", "bin", {}),
    ("reliability", "gap", {}),
    ("reliability", "lower", {}),
    ("vece", "vece", {"variable": "v"}),
    ("vece", "variable", {"variable": ["v", "u"]}),
    ("vmce", "n", {"variable": "v"}),
]
#: eager only (not offered by Dask, or with ci=)
EAGER_CLASHES = [
    ("ece", "ece_lo", {"ci": 0.9, "n_boot": 3}),
    ("brier", "brier_hi", {"ci": 0.9, "n_boot": 3}),
    ("summary", "log_loss", {}),
    ("summary", "accuracy_hi", {"ci": 0.9, "n_boot": 3}),
    ("gece", "gece", {}),
    ("vece_rank", "variable", {"variables": ["v", "u"]}),
    ("vece_rank", "vmce", {"variables": ["v"]}),
    ("mlce", "mean_lce", {"features": ["v"]}),
    ("mlce", "n", {"features": ["v"]}),
]


def _call(func: str, frame, by: str, kw: dict):
    kw = dict(kw)
    if hasattr(frame, "calib") and not isinstance(frame, (pl.DataFrame, pl.LazyFrame, pd.DataFrame)):
        handle = frame.calib
        variable = kw.pop("variable", None)
        args = () if variable is None else (variable,)
        return getattr(handle, func)(*args, by=by, **kw)
    args = tuple(kw.pop(k) for k in ("variable", "variables", "features") if k in kw)
    return getattr(calframe, func)(frame, *args, by=by, **kw)


def _check_clash(exc: BaseException, by: str) -> None:
    assert isinstance(exc, ParameterError), repr(exc)
    assert exc.param == "by"
    msg = str(exc)
    assert repr(by) in msg and "rename" in msg.lower() and f"{by}_key" in msg, msg


#: (surface, function, by, kwargs): CLASHES on every surface, EAGER_CLASHES on all but Dask
SURFACE_CLASHES = [(s, *c) for s in ("polars", "lazy", "pandas", "dask") for c in CLASHES] + [
    (s, *c) for s in ("polars", "lazy", "pandas") for c in EAGER_CLASHES]


@pytest.mark.parametrize("surface,func,by,kw", SURFACE_CLASHES, ids=[f"{s}-{f}-{b}" for s, f, b, _ in SURFACE_CLASHES])
def test_by_column_named_like_an_output_column_is_a_parameter_error(surface, func, by, kw):
    frame = as_flavour(_frame().rename({"g": by}), surface)
    with pytest.raises(CalframeError) as info:
        _call(func, frame, by, kw)
    _check_clash(info.value, by)


def test_vce_curve_by_column_named_like_a_curve_column():
    rng = np.random.default_rng(0)
    n = 200
    df = pl.DataFrame({"prob": rng.uniform(0.05, 0.95, n), "label": rng.integers(0, 2, n),
                       "v_star": np.repeat(["a", "b"], n // 2), "x": rng.normal(size=n)})
    with pytest.raises(ParameterError) as info:
        calframe.vce_curve(df, "x", by="v_star", n_points=5)
    _check_clash(info.value, "v_star")


@pytest.mark.parametrize("surface", ["polars", "lazy", "pandas"])
def test_renamed_by_column_gives_the_groups(surface):
    """The advice works: by='n_key' gives one row per group, ECE by hand (15 uniform bins, one row per bin here)."""
    df = _frame().rename({"g": "n_key"})
    out = collected(calframe.ece(as_flavour(df, surface), by="n_key"))
    out = out if isinstance(out, pl.DataFrame) else pl.from_pandas(out)
    assert out.columns == ["n_key", "n", "ece"]
    # group a: p .2 .7 .4, y 0 1 1 -> each row alone in its bin: mean |p - y| = (.2 + .3 + .6) / 3
    # group b: p .9 .35 .6, y 1 0 0 -> (.1 + .35 + .6) / 3
    np.testing.assert_allclose(out["ece"].to_numpy(), [1.1 / 3, 1.05 / 3], rtol=1e-12)


def test_missing_by_column_named_like_an_output_column_is_still_not_found():
    with pytest.raises(calframe.ColumnNotFoundError, match="'n'"):
        calframe.ece(_frame(), by="n")


# --------------------------------------------------------------------------- 2. vece_rank: every variable constant


@pytest.mark.parametrize("surface", ["polars", "lazy", "pandas"])
@pytest.mark.parametrize("by", [None, "g"])
def test_vece_rank_of_constant_variables_is_an_empty_ranking(surface, by):
    """Constant variables are skipped (docstring); when all are, the ranking is empty, with the usual columns."""
    df = pl.DataFrame({"prob": [0.3, 0.6, 0.2], "label": [1, 0, 0], "v": [5.0, 5.0, 5.0], "c": ["x", "x", "x"],
                       "g": ["a", "b", "a"]})
    frame = as_flavour(df if by else df.drop("g"), surface)
    out = calframe.vece_rank(frame, by=by)
    out = out.collect() if isinstance(out, pl.LazyFrame) else out  # lazy in, lazy out
    out = out if isinstance(out, pl.DataFrame) else pl.from_pandas(out)
    keys = [("g", pl.String)] if by else []
    assert out.height == 0
    assert list(out.schema.items()) == [("variable", pl.String), ("kind", pl.String), *keys, ("n", pl.Int64),
                                        ("vece", pl.Float64), ("vmce", pl.Float64), ("leak", pl.String)]
    with_vce = calframe.vece_rank(frame, ["v"], by=by, vce=True)
    with_vce = with_vce.collect() if isinstance(with_vce, pl.LazyFrame) else with_vce
    assert len(with_vce) == 0 and list(with_vce.columns)[-3:] == ["vce", "v_star", "leak"]


# --------------------------------------------------------------------------- 3. prepare="pca" on fewer rows than components


@pytest.mark.parametrize("surface", ["polars", "lazy", "pandas"])
def test_pca_on_fewer_rows_than_components_pads_with_zero_components(surface):
    """Two rows, three features, n_components=3: the rows vary along one direction only (their difference);
    the other two components are 0. LCE by hand: Laplacian kernel on the L1 distance of the PCA coordinates,
    h = d * gamma with d = 3 components."""
    df = pl.DataFrame({"prob": [0.61, 0.62], "label": [0, 1], "v": [1.0, 2.0], "u": [0.5, -1.0], "w": [3.0, 1.0]})
    gamma = 0.5
    dist = np.linalg.norm(np.array([2.0, -1.0, 1.0]) - np.array([1.0, 0.5, 3.0]))  # along the first component
    k = np.exp(-dist / (3 * gamma))
    r = np.array([0.61 - 0, 0.62 - 1])  # g' - y' under class:1; both rows in bin [0.6, 0.667)
    expected = np.abs(r + r[::-1] * k) / (1 + k)
    out = calframe.lce(as_flavour(df, surface), ["v", "u", "w"], prepare="pca", n_components=3, gamma=gamma)
    out = out.collect() if isinstance(out, pl.LazyFrame) else out  # lazy in, lazy out
    np.testing.assert_allclose(np.asarray(out["lce"]), expected, rtol=1e-12)


@pytest.mark.parametrize("func", ["lce", "mlce", "mlce_curve"])
def test_pca_on_one_row(func):
    """One row: its own neighbourhood, LCE = |p - y| = 0.2 (the default n_components=2 > 1 row)."""
    df = pl.DataFrame({"prob": [0.2], "label": [0], "v": [1.0], "u": [0.5]})
    out = getattr(calframe, func)(df, ["v", "u"], prepare="pca")
    value = {"lce": lambda o: o["lce"][0], "mlce": lambda o: o, "mlce_curve": lambda o: o["mlce"][0]}[func](out)
    assert value == pytest.approx(0.2, rel=1e-12)


# --------------------------------------------------------------------------- 4. gece(where=) that fails on the rows


@pytest.mark.parametrize("surface", ["polars", "lazy", "pandas"])
@pytest.mark.parametrize("where", [pl.col("s") > 0, pl.col("s").cast(pl.Int64) > 0, "s > 0"],
                         ids=["compare-string-with-int", "strict-cast-of-a-value", "sql-string"])
def test_gece_where_that_fails_on_the_rows_is_a_parameter_error(surface, where):
    df = _frame().with_columns(s=pl.lit("x"))
    with pytest.raises(ParameterError) as info:
        calframe.gece(as_flavour(df, surface), where=where)
    assert info.value.param == "where" and "'where'" in str(info.value), str(info.value)
    assert "Error" in str(info.value)  # the Polars message is quoted (its class and first line)


@pytest.mark.parametrize("surface", ["polars", "lazy", "pandas"])
def test_gece_where_keeps_the_same_rows_on_a_lazyframe(surface):
    """where= on a LazyFrame is now evaluated eagerly: the kept rows (and a scalar True) are unchanged.
    Group a (rows 0-2, p .2 .7 .4, y 0 1 1), each row alone in its bin under class:1: (.2 + .3 + .6) / 3."""
    frame = as_flavour(_frame(), surface)
    assert figure(calframe.gece(frame, where=pl.col("g") == "a")) == pytest.approx(1.1 / 3, rel=1e-12)
    # every row: |p - y| = .2 .3 .6 .1 .35 .6, one per bin
    assert figure(calframe.gece(frame, where=pl.lit(True))) == pytest.approx(2.15 / 6, rel=1e-12)


# --------------------------------------------------------------------------- 5. ci= on a group a selection empties


@pytest.mark.parametrize("surface", ["polars", "lazy", "pandas"])
def test_bootstrap_of_a_group_emptied_by_labels_in_is_nan_without_a_warning(surface):
    """Group b holds no label 0: labels_in=[0] empties it, so its figure and bounds are NaN with n = 0 (spec
    section 8); group a keeps one row (p .2, y 0): its figure is |.2 - 0| = .2, and it has no interval (NaN bounds,
    issue 31: every resample of one row is that row, which made the interval [.2, .2])."""
    df = _frame().with_columns(label=pl.Series([0, 1, 1, 1, 1, 1]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = collected(calframe.gece(as_flavour(df, surface), by="g", labels_in=[0], ci=0.9, n_boot=3))
    out = out if isinstance(out, pl.DataFrame) else pl.from_pandas(out)
    assert out["g"].to_list() == ["a", "b"] and out["n"].to_list() == [1, 0]
    value = out["gece"].to_numpy()
    assert value[0] == pytest.approx(0.2, rel=1e-12) and np.isnan(value[1]), value
    for col in ("gece_lo", "gece_hi"):  # pandas' NaN read back by pl.from_pandas as null
        assert out[col].cast(pl.Float64).fill_null(float("nan")).is_nan().all(), (col, out[col])


# --------------------------------------------------------------------------- 6. one-class fits name the label column


@pytest.mark.parametrize("method,kw,inner", [("platt", {}, ""), ("beta", {}, ""), ("beta_v", {"variable": "v"}, ""),
                                             ("tree", {"variable": "v"}, ", its beta.fit")])
@pytest.mark.parametrize("by", [None, "g"])
def test_one_class_fit_names_the_label_column(method, kw, inner, by):
    df = pl.DataFrame({"prob": [0.3], "y": [1], "v": [1.0], "g": ["a"]})
    with pytest.raises(calframe.InvalidValueError) as info:
        calframe.fit(df, method, label="y", by=by, **kw)
    msg = str(info.value)
    assert msg.startswith(f"fit (method {method!r}{inner}): the label column 'y' holds class 1 only in 1 row;"), msg
    assert ("(group ('a',))" in msg) == (by is not None)


def test_one_class_fit_of_the_top_label_says_every_prediction_is_right():
    """Multiclass platt fits the top-1 correctness: both rows predicted right is the one outcome."""
    df = pl.DataFrame({"p": [[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]], "lab": [1, 2]},
                      schema={"p": pl.Array(pl.Float64, 3), "lab": pl.Int64})
    with pytest.raises(calframe.InvalidValueError,
                       match=r"every top-1 prediction is right in 2 rows \(the label column 'lab' always equals"):
        calframe.fit(df, "platt", prob="p", label="lab")


# --------------------------------------------------------------------------- 7. vece_rank's default search on pandas


def test_vece_rank_default_search_skips_non_string_pandas_labels():
    """Columns "1" and 1: only the string label is a candidate (spec section 8, "Group keys": labels match
    as strings). VECE of "1" = [1, 2, 3, 4] in 2 quantile bins, by hand: bin {1, 2}: |.45 - .5| = .05,
    bin {3, 4}: |.65 - .5| = .15; VECE = (2 * .05 + 2 * .15) / 4 = .1, VMCE = .15."""
    df = pd.DataFrame({"prob": [0.2, 0.7, 0.4, 0.9], "label": [0, 1, 1, 0], "1": [1.0, 2.0, 3.0, 4.0]})
    df[1] = [4.0, 3.0, 1.0, 2.0]
    out = calframe.vece_rank(df, bins=2)
    assert out["variable"].tolist() == ["1"]
    np.testing.assert_allclose(out[["vece", "vmce"]].to_numpy()[0], [0.1, 0.15], rtol=1e-12)


def test_vece_rank_default_search_with_only_an_int_label_invents_no_variable():
    df = pd.DataFrame({"prob": [0.2, 0.7, 0.4, 0.9], "label": [0, 1, 1, 0]})
    df[1] = [4.0, 3.0, 1.0, 2.0]
    with pytest.raises(ParameterError) as info:
        calframe.vece_rank(df)
    msg = str(info.value)
    assert "no candidate variables" in msg and "non-string column labels [1]" in msg and "variable=" not in msg, msg


# --------------------------------------------------------------------------- 8. beta fit on scores that are all 0 or 1


@pytest.mark.parametrize(("prob", "label"), [
    ([0, 0, 1, 1], [0, 1, 0, 1]),
    ([1, 1, 1, 0, 1], [0, 0, 1, 0, 0]),
    ([0, 1, 1, 0, 0, 1, 1, 0, 1], [1, 1, 0, 0, 1, 0, 1, 0, 0]),
    ([1, 0, 0, 0, 1, 0, 1, 0], [0, 1, 1, 0, 0, 1, 0, 1]),
])
def test_beta_fit_on_scores_all_zero_or_one_gives_each_scores_frequency(prob, label):
    """Scores 0 and 1 only: beta's features [ln s, -ln(1 - s)] (s clipped to eps) take two values, so a, b and c
    have one direction only the tiny penalty (C = 99999999999) curves, and Newton's steps cycled at the rounding
    floor until "did not converge". The fit is saturated on two points: its map gives each score the frequency
    of label 1 among its rows (counted here by hand with numpy)."""
    df = pl.DataFrame({"prob": prob, "label": label}, schema={"prob": pl.Float64, "label": pl.Int64})
    out = calframe.apply(df, calframe.fit(df, "beta"), name="p_beta")["p_beta"].to_numpy()
    s, y = np.array(prob), np.array(label)
    want = np.where(s == 1, y[s == 1].mean(), y[s == 0].mean())
    np.testing.assert_allclose(out, want, rtol=1e-9, atol=1e-9)  # (a frequency 0: the penalty keeps it ~1e-13)


# --------------------------------------------------------------------------- 9. a class lens past the classes


@pytest.mark.parametrize(("func", "kw"), [
    ("lce", {"features": "v"}), ("mlce", {"features": "v"}), ("mlce_curve", {"features": "v"}),
    ("vece_rank", {"variables": ["v"]}), ("vce_curve", {"variable": "v"}), ("ece", {}), ("reliability", {}),
])
@pytest.mark.parametrize("shape", ["binary", "classes"])
def test_class_lens_past_the_classes_is_a_parameter_error(func, kw, shape):
    """lce, mlce, mlce_curve and vece_rank indexed the probabilities with the class (a raw IndexError), and on a
    single probability column read any class but 1 as class 0 (lce(lens="class:2") measured class 0)."""
    df = _frame().with_columns(p0=1 - pl.col("prob"), p2=pl.lit(0.0))
    prob, lens = ("prob", "class:2") if shape == "binary" else (["p0", "prob", "p2"], "class:3")
    with pytest.raises(ParameterError, match=rf"The 'lens' parameter of {func} asks for class {lens[-1]}"):
        getattr(calframe, func)(df, prob=prob, lens=lens, **kw)
