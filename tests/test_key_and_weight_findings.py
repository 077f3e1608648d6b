"""Findings of the property test (tests/test_public_properties.py) on weights and group keys (issue 11).

- Each group's weights are scaled by the power of two of the group's own maximum: a group whose weights
  sit far below another group's keeps its value (it underflowed to 0 and was refused, or gave NaN), and
  every per-group figure is unchanged when one group's weights are multiplied by 2^k, on every surface.
  The debiased estimator still counts rows in the caller's units.
- Dask refuses nested group keys with a ColumnTypeError, and groups by an Arrow-backed Categorical key
  holding a null as eager pandas does.
- Date group keys (and Date variables) come back as dates, not timestamps, from Arrow-backed pandas and Dask.

Expected values are computed by hand with numpy.
"""

from __future__ import annotations

import datetime as dt
import importlib
from typing import Any, Callable

import numpy as np
import pandas as pd
import polars as pl
import polars.testing
import pytest

import calframe
from conftest import collected
from test_zero_weights import CALLS as ZERO_WEIGHT_CALLS

N_PER = 20
GROUPS = np.repeat(["a", "b", "c"], N_PER)
KW = {"prob": "p", "label": "y", "weights": "w"}


@pytest.fixture
def dd():
    dask = pytest.importorskip("dask")
    ddm = pytest.importorskip("dask.dataframe")
    importlib.import_module("calframe.frames.dask")  # registers ddf.calib
    with dask.config.set(scheduler="synchronous"):
        yield ddm


def _data(seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    n = GROUPS.size
    p = rng.random(n)
    return {"p": p, "y": (rng.random(n) < p).astype(np.int64), "g": GROUPS, "v": rng.random(n),
            "m": rng.integers(1, 9, n).astype(float)}


def _ref_ece(p: np.ndarray, y: np.ndarray, w: np.ndarray, bins: int = 15) -> float:
    """numpy by hand: positive-class ECE, uniform left-closed bins, weighted."""
    b = np.digitize(p, np.linspace(0, 1, bins + 1)[1:-1])
    out = 0.0
    for k in np.unique(b):
        s = b == k
        out += abs(np.dot(w[s], p[s]) - np.dot(w[s], y[s])) / w.sum()
    return out


def _ref_brier(p: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    return float(np.dot(w, (p - y) ** 2) / w.sum())


def _ref_debiased(p: np.ndarray, y: np.ndarray, w: np.ndarray, bins: int) -> float:
    """Kumar's debiased RMSCE with frequency weights: a bin counts sum(w) rows (bins under 2 rows add 0)."""
    b = np.digitize(p, np.linspace(0, 1, bins + 1)[1:-1])
    e2 = 0.0
    for k in np.unique(b):
        s = b == k
        n_b = w[s].sum()
        if n_b >= 2:
            conf, acc = np.dot(w[s], p[s]) / n_b, np.dot(w[s], y[s]) / n_b
            e2 += n_b / w.sum() * ((conf - acc) ** 2 - acc * (1 - acc) / (n_b - 1))
    return float(np.sqrt(max(e2, 0.0)))


# --------------------------------------------------------------------------- weights: one scale per group

#: group -> the power of two its weights are multiplied by (far apart: one scale for all underflows "c")
SPREAD = {"a": 2.0**1000, "b": 1.0, "c": 2.0**-1000}


def _spread(d: dict[str, Any], factors: dict[str, float] = SPREAD) -> dict[str, Any]:
    out = dict(d)
    out["w"] = d["m"] * np.array([factors[k] for k in GROUPS])
    return out


def _dask_frame(dd, d: dict[str, Any], npartitions: int = 3):
    return dd.from_pandas(pd.DataFrame(d), npartitions=npartitions, sort=False)


def _per_group(ref: Callable[..., float], d: dict[str, Any], **kw: Any) -> list[float]:
    return [ref(d["p"][GROUPS == k], d["y"][GROUPS == k], d["m"][GROUPS == k], **kw) for k in "abc"]


def test_the_issue_example_gives_the_group_its_own_value(constructor):
    """brier of group b (weight 1e-300 beside 1e300 in group a) is its value alone: (0.5 - 1)^2 = 0.25."""
    df = {"p": [0.5, 0.0], "y": [1, 0], "g": ["b", "a"], "w": [1e-300, 1e300]}
    out = collected(calframe.brier(constructor(df), **KW, by="g"))
    out = out if isinstance(out, pl.DataFrame) else pl.from_pandas(out)
    assert out["g"].to_list() == ["a", "b"]
    assert out["brier"].to_list() == [0.0, 0.25]


@pytest.mark.parametrize("func, ref", [("ece", _ref_ece), ("brier", _ref_brier)])
def test_groups_far_apart_in_weight_keep_their_values(constructor, func, ref):
    d = _data()
    out = collected(getattr(calframe, func)(constructor(_spread(d)), **KW, by="g"))
    out = out if isinstance(out, pl.DataFrame) else pl.from_pandas(out)
    np.testing.assert_allclose(out[func].to_numpy(), _per_group(ref, d), rtol=1e-12)


@pytest.mark.parametrize("func, ref", [("ece", _ref_ece), ("brier", _ref_brier)])
def test_dask_groups_far_apart_in_weight_keep_their_values(dd, func, ref):
    d = _data()
    d["g"] = GROUPS
    out = getattr(_dask_frame(dd, _spread(d)).calib, func)(**KW, by="g").compute()
    np.testing.assert_allclose(out[func].to_numpy(), _per_group(ref, d), rtol=1e-12)


def _drop(out: Any, column: str) -> Any:
    return out.drop(columns=column) if isinstance(out, pd.DataFrame) else out.drop(column)


#: every weighted function of tests/test_zero_weights.py but the debiased estimator (it counts rows in the
#: caller's units: test_debiased_counts_rows_in_the_callers_units_per_group) and the intervals (weights are
#: frequency weights: a group's weights times 2^1000 are 2^1000 times its rows; tests/test_frequency_weights.py)
CALLS: dict[str, Callable[..., Any]] = {
    **{name: call for name, call in ZERO_WEIGHT_CALLS.items() if name not in ("rmsce-debiased", "ece-ci")},
    "summary": lambda f, **k: _drop(calframe.summary(f, **KW, **k), "ce_debiased"),
}


@pytest.mark.parametrize("call", list(CALLS))
@pytest.mark.parametrize("surface", ["polars", "lazy", "pandas"])
def test_scaling_one_group_by_a_power_of_two_changes_nothing(call, surface):
    """Every per-group figure depends on the ratios of weights within its group: multiplying group c's weights
    by 2^-1000 (or group a's by 2^1000) gives the same bits as weights m (the debiased estimator excepted: it
    counts rows in the caller's units)."""
    make = {"polars": pl.DataFrame, "lazy": pl.LazyFrame, "pandas": pd.DataFrame}[surface]
    d = _data()
    base = CALLS[call](make(_spread(d, {"a": 1.0, "b": 1.0, "c": 1.0})), by="g")
    moved = CALLS[call](make(_spread(d)), by="g")
    if isinstance(base, pd.DataFrame):
        pd.testing.assert_frame_equal(moved, base)
    elif surface == "lazy":  # streaming sums: the order of additions varies from run to run (last bits)
        pl.testing.assert_frame_equal(moved, base, check_exact=False, rel_tol=1e-13, abs_tol=0.0)
    else:
        assert moved.equals(base)


DASK_CALLS = ["ece", "mce", "rmsce", "vece", "reliability", "brier", "log_loss", "accuracy"]


@pytest.mark.parametrize("call", DASK_CALLS)
def test_dask_scaling_one_group_by_a_power_of_two_changes_nothing(dd, call):
    d = _data()
    d["g"] = np.tile(["a", "b", "c"], N_PER)  # every partition holds rows of every group
    factor = np.where(d["g"] == "c", 2.0**-1000, np.where(d["g"] == "a", 2.0**1000, 1.0))
    args = ("v",) if call == "vece" else ()
    kw = dict(KW, by="g", **({"bins": [0.0, 0.5, 1.0]} if call == "vece" else {}))
    want = getattr(_dask_frame(dd, {**d, "w": d["m"]}).calib, call)(*args, **kw).compute()
    got = getattr(_dask_frame(dd, {**d, "w": d["m"] * factor}).calib, call)(*args, **kw).compute()
    pd.testing.assert_frame_equal(got, want, check_exact=False, rtol=1e-13)


def test_debiased_counts_rows_in_the_callers_units_per_group(dd):
    """Weights are frequency weights for the debiased estimator: a bin of group a (weights m * 2^60) counts
    sum(m) * 2^60 rows, group b's sum(m); group c's (m * 2^-1000) fewer than 2 (its bins add 0)."""
    d = _data()
    factors = {"a": 2.0**60, "b": 1.0, "c": 2.0**-1000}
    w = _spread(d, factors)["w"]
    want = [_ref_debiased(d["p"][GROUPS == k], d["y"][GROUPS == k], w[GROUPS == k], bins=5) for k in "abc"]
    assert want[1] > 0 and want[2] == 0.0
    kw = dict(**KW, estimator="debiased", binning="uniform", bins=5, by="g")
    for frame in (pl.DataFrame(_spread(d, factors)), pl.LazyFrame(_spread(d, factors))):
        np.testing.assert_allclose(collected(calframe.rmsce(frame, **kw))["rmsce"].to_numpy(), want, rtol=1e-9)
    got = _dask_frame(dd, _spread(d, factors)).calib.rmsce(**kw).compute()
    np.testing.assert_allclose(got["rmsce"].to_numpy(), want, rtol=1e-9)


# --------------------------------------------------------------------------- Dask: key dtypes


def _keyed(seed: int = 1) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    n = 40
    p = rng.random(n)
    # in order: the partitions hold different keys (one only "a", the last "b" and the nulls)
    return {"p": p, "y": (rng.random(n) < p).astype(np.int64), "k": ["a"] * 15 + ["b"] * 15 + [None] * 10}


def test_dask_arrow_categorical_key_with_a_null_groups_as_eager(dd):
    """A Polars Categorical key holding a null, as Arrow-backed pandas (a dictionary column), on Dask: the
    groups and values of eager pandas (hand reference), the key still categorical."""
    d = _keyed()
    pdf = pl.DataFrame(d).with_columns(pl.col("k").cast(pl.Categorical)).to_pandas(use_pyarrow_extension_array=True)
    got = dd.from_pandas(pdf, npartitions=3, sort=False).calib.ece("p", "y", by="k").compute()
    k = np.array(d["k"], dtype=object)
    want = [_ref_ece(d["p"][k == v], d["y"][k == v], np.ones(int((k == v).sum()))) for v in ("a", "b", None)]
    assert got["k"].tolist()[:2] == ["a", "b"] and pd.isna(got["k"].iloc[2])
    assert isinstance(got["k"].dtype, pd.CategoricalDtype)
    np.testing.assert_allclose(got["ece"].to_numpy(), want, rtol=1e-12)
    pd.testing.assert_frame_equal(got, calframe.ece(pdf, "p", "y", by="k"), check_exact=False, rtol=1e-12)


@pytest.mark.parametrize("key", [[{"x": 1}, {"x": 2}], [[1], [2]], [[1, 2], [2, 1]]], ids=["struct", "list", "array"])
def test_dask_refuses_nested_keys_naming_the_column(dd, key):
    d = _keyed()
    s = pl.Series("s", [key[i % 2] for i in range(len(d["p"]))])
    if len(key[0]) == 2:
        s = s.cast(pl.Array(pl.Int64, 2))
    pdf = pl.DataFrame(d).with_columns(s).to_pandas(use_pyarrow_extension_array=True)
    with pytest.raises(calframe.ColumnTypeError) as info:
        dd.from_pandas(pdf, npartitions=2, sort=False).calib.ece("p", "y", by="s")
    msg = str(info.value)
    assert "'s'" in msg and str(s.dtype).split("(")[0] in msg and "ddf.compute()" in msg and "astype(str)" in msg, msg


# --------------------------------------------------------------------------- Date keys stay dates

DAYS = [dt.date(2024, 1, 1), dt.date(2024, 2, 29), None]


def _dated(seed: int = 2) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    n = 45
    p = rng.random(n)
    return {"p": p, "y": (rng.random(n) < p).astype(np.int64), "v": rng.random(n), "day": [DAYS[i // 15] for i in range(n)]}


def _date_frames() -> dict[str, Callable[[dict[str, Any]], Any]]:
    return {
        "polars": pl.DataFrame,
        "lazy": pl.LazyFrame,
        "pandas[pyarrow]": lambda d: pl.DataFrame(d).to_pandas(use_pyarrow_extension_array=True),
        "pandas[object]": pd.DataFrame,  # datetime.date objects, pandas' own way to hold dates
    }


def _check_days(out: Any, d: dict[str, Any], column: str = "ece") -> None:
    """The key column holds the input's dates (None for the missing one) and each group its hand ECE."""
    days = out["day"].to_list() if isinstance(out, pl.DataFrame) else out["day"].tolist()
    assert days[:2] == DAYS[:2] and all(type(x) is dt.date for x in days[:2]), days
    assert days[2] is None or pd.isna(days[2])
    if isinstance(out, pd.DataFrame):
        assert out["day"].dtype == object  # pandas results are numpy-backed: dates as datetime.date objects
    else:
        assert out.schema["day"] == pl.Date
    p, y = d["p"], d["y"]
    want = [_ref_ece(p[i * 15:(i + 1) * 15], y[i * 15:(i + 1) * 15], np.ones(15)) for i in range(3)]
    np.testing.assert_allclose(np.asarray(out[column], dtype=float), want, rtol=1e-12)


@pytest.mark.parametrize("kind", list(_date_frames()))
def test_date_keys_come_back_as_dates(kind):
    d = _dated()
    out = collected(calframe.ece(_date_frames()[kind](d), "p", "y", by="day"))
    _check_days(out, d)


@pytest.mark.parametrize("kind", ["pandas[pyarrow]", "pandas[object]"])
def test_date_keys_come_back_as_dates_in_other_outputs(kind):
    """summary and reliability (every pandas output goes through one conversion)."""
    d = _dated()
    frame = _date_frames()[kind](d)
    summary = calframe.summary(frame, "p", "y", by="day")
    assert [type(x) for x in summary["day"].tolist()[:2]] == [dt.date, dt.date]
    table = calframe.reliability(frame, "p", "y", by="day")
    assert set(table["day"].dropna().tolist()) == set(DAYS[:2]) and table["day"].dtype == object


@pytest.mark.parametrize("kind", ["pandas[pyarrow]", "pandas[object]"])
def test_dask_date_keys_come_back_as_dates(dd, kind):
    """(Dask's default dataframe.convert-string turns an object column into strings when the Dask frame is built,
    before calframe sees it: the object case turns it off.)"""
    import dask

    d = _dated()
    with dask.config.set({"dataframe.convert-string": kind != "pandas[object]"}):
        ddf = dd.from_pandas(_date_frames()[kind](d), npartitions=2, sort=False)
        _check_days(ddf.calib.ece("p", "y", by="day").compute(), d)
