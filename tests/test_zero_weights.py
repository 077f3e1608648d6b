"""Weights at the edges on every surface (docs/spec.md section 8, "Numbers at the edges").

- A group whose weights are all 0 raises InvalidValueError naming the weights column, the group key and its
  rows (it would give 0/0 = NaN), on every frame type and Dask, for every weighted function.
- Dask checks the weight totals over all partitions: one partition of zero weights is fine.
- LazyFrame and Dask scale the weights as eager frames do: subnormal and near-overflow weights give the
  eager (and hand-computed) values.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

import numpy as np
import pandas as pd
import polars as pl
import pytest

import calframe
from conftest import collected, figure
from calframe import InvalidValueError

N_PER = 20
GROUPS = np.repeat(["a", "b", "c"], N_PER)


def _frame(seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    n = GROUPS.size
    p = rng.random(n)
    return {"p": p, "y": (rng.random(n) < p).astype(np.int64), "g": GROUPS, "h": np.tile([1, 2], n // 2),
            "v": rng.random(n), "w": np.where(GROUPS == "b", 0.0, rng.random(n) + 0.5)}


KW = {"prob": "p", "label": "y", "weights": "w"}
CALLS: dict[str, Callable[..., Any]] = {
    "ece": lambda f, **k: calframe.ece(f, **KW, **k),
    "mce": lambda f, **k: calframe.mce(f, **KW, **k),
    "rmsce": lambda f, **k: calframe.rmsce(f, **KW, **k),
    "rmsce-debiased": lambda f, **k: calframe.rmsce(f, **KW, estimator="debiased", binning="uniform", **k),
    "ce": lambda f, **k: calframe.ce(f, **KW, p=2, **k),
    "vece": lambda f, **k: calframe.vece(f, "v", **KW, bins=[0.0, 0.5, 1.0], **k),
    "reliability": lambda f, **k: calframe.reliability(f, **KW, **k),
    "summary": lambda f, **k: calframe.summary(f, **KW, **k),
    "gece": lambda f, **k: calframe.gece(f, **KW, **k),
    "brier": lambda f, **k: calframe.brier(f, **KW, **k),
    "log_loss": lambda f, **k: calframe.log_loss(f, **KW, **k),
    "accuracy": lambda f, **k: calframe.accuracy(f, **KW, **k),
    "ece-ci": lambda f, **k: calframe.ece(f, **KW, ci=0.9, n_boot=20, **k),
}


@pytest.mark.parametrize("call", list(CALLS))
def test_a_group_of_zero_weights_is_an_error(constructor, call):
    with pytest.raises(InvalidValueError) as info:
        collected(CALLS[call](constructor(_frame()), by="g"))
    msg = str(info.value)
    assert "weights column 'w'" in msg and "g='b' (20 rows)" in msg and "positive weight" in msg, msg


def test_every_zero_group_is_listed_with_all_its_keys(constructor):
    d = _frame()
    d["w"] = np.where((GROUPS == "a") | ((GROUPS == "c") & (d["h"] == 2)), 0.0, 1.0)
    with pytest.raises(InvalidValueError) as info:
        collected(calframe.ece(constructor(d), **KW, by=["g", "h"]))
    msg = str(info.value)
    assert "2 groups: g='a', h=1 (10 rows); g='a', h=2 (10 rows)" in msg or \
        "3 groups: g='a', h=1 (10 rows); g='a', h=2 (10 rows); g='c', h=2 (10 rows)" in msg, msg


def _ref_ece(p: np.ndarray, y: np.ndarray, w: np.ndarray, bins: int = 15) -> float:
    """numpy by hand: positive-class ECE (the default lens for one probability column), uniform left-closed
    bins, weighted."""
    conf = p
    acc = (y == 1).astype(float)
    b = np.digitize(conf, np.linspace(0, 1, bins + 1)[1:-1])
    out = 0.0
    for k in np.unique(b):
        wk = w[b == k]
        if wk.sum() > 0:  # a bin of zero weight contributes nothing
            out += wk.sum() / w.sum() * abs(np.dot(wk, conf[b == k]) - np.dot(wk, acc[b == k])) / wk.sum()
    return out


def test_one_positive_weight_makes_the_group_count(constructor):
    d = _frame()
    d["w"] = d["w"].copy()
    d["w"][N_PER + 3] = 2.0  # group b: one row of weight
    got = calframe.ece(constructor(d), **KW, by="g")
    got = got.to_pandas() if isinstance(got, pl.DataFrame) else got.collect().to_pandas() \
        if isinstance(got, pl.LazyFrame) else got
    for i, key in enumerate("abc"):
        m = GROUPS == key
        assert got["ece"].iloc[i] == pytest.approx(_ref_ece(d["p"][m], d["y"][m], d["w"][m]), rel=1e-12, abs=1e-15)


def test_a_selection_that_leaves_a_group_zero_weights_is_an_error(constructor):
    d = _frame()
    d["w"] = np.where((GROUPS == "b") & (d["p"] >= 0.5), 0.0, 1.0)
    with pytest.raises(InvalidValueError, match=r"weights column 'w' is 0 in every row of group g='b'"):
        calframe.gece(constructor(d), **KW, by="g", lens="class:1", output_between=(0.5, 1.0))


# --------------------------------------------------------------------------- Dask


@pytest.fixture(scope="module")
def dd():
    dask = pytest.importorskip("dask")
    ddm = pytest.importorskip("dask.dataframe")
    importlib.import_module("calframe.frames.dask")  # registers ddf.calib
    with dask.config.set(scheduler="synchronous"):  # light: no cluster
        yield ddm


def _ddf(dd, d: dict[str, Any], npartitions: int = 3):
    return dd.from_pandas(pd.DataFrame(d), npartitions=npartitions, sort=False)


DASK_CALLS = ["ece", "mce", "rmsce", "rmsce-debiased", "ce", "vece", "reliability", "brier", "log_loss", "accuracy"]


@pytest.mark.parametrize("call", DASK_CALLS)
def test_dask_zero_weight_group_counts_rows_over_every_partition(dd, call):
    d = _frame()
    d["g"] = np.tile(["a", "b", "c"], N_PER)  # every partition holds rows of group b
    d["w"] = np.where(d["g"] == "b", 0.0, 1.0)
    with pytest.raises(InvalidValueError) as info:
        collected(CALLS[call](_ddf(dd, d), by="g"))
    assert "weights column 'w'" in str(info.value) and "g='b' (20 rows)" in str(info.value), str(info.value)


@pytest.mark.parametrize("by", [None, "g"])
@pytest.mark.parametrize("call", ["ece", "rmsce", "vece", "reliability", "brier"])
def test_dask_partition_of_zero_weights_with_positive_total_equals_eager(dd, call, by):
    d = _frame()
    d["g"] = np.tile(["a", "b", "c"], N_PER)
    d["w"] = d["w"].copy()
    d["w"][N_PER:2 * N_PER] = 0.0  # the middle partition: every weight 0
    ddf = _ddf(dd, d)
    assert ddf.map_partitions(lambda x: x["w"].sum()).compute().tolist()[1] == 0.0
    got, want = collected(CALLS[call](ddf, by=by)), CALLS[call](pd.DataFrame(d), by=by)
    if isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-12)
    else:
        pd.testing.assert_frame_equal(got, want, check_exact=False, rtol=1e-12)
    if call == "ece" and by is None:
        assert got == pytest.approx(_ref_ece(d["p"], d["y"], d["w"]), rel=1e-12)


def test_dask_all_weights_zero_is_the_eager_error(dd):
    d = _frame()
    d["w"] = np.zeros(GROUPS.size)
    with pytest.raises(InvalidValueError, match="weights column 'w' sums to 0"):
        calframe.ece(pd.DataFrame(d), **KW)
    with pytest.raises(InvalidValueError, match="weights column 'w' sums to 0"):
        _ddf(dd, d).calib.ece(**KW).compute()


# --------------------------------------------------------------------------- scale of the weights


@pytest.mark.parametrize("scale", [1e-310, 3e-318, 2e307])
@pytest.mark.parametrize("by", [None, "g"])
def test_lazy_and_dask_scale_weights_as_eager(dd, scale, by):
    """Subnormal weights (3e-318 holds ~20 bits) and weights whose sum passes float64: the eager value, which is
    the value of the same weights at scale 1 (by hand: ratios of sums do not depend on the scale)."""
    d = _frame()
    m = np.random.default_rng(5).integers(1, 9, GROUPS.size).astype(float)
    d["w"] = m * scale
    ref = [_ref_ece(d["p"][GROUPS == k], d["y"][GROUPS == k], m[GROUPS == k]) for k in "abc"] if by else \
        [_ref_ece(d["p"], d["y"], m)]
    want = calframe.ece(pl.DataFrame(d), **KW, by=by)
    lazy = calframe.ece(pl.LazyFrame(d), **KW, by=by).collect()
    dask = _ddf(dd, d).calib.ece(**KW, by=by).compute()
    if by is None:
        want, lazy, dask = [want], lazy["ece"].to_list(), [dask]
    else:
        want, lazy, dask = want["ece"].to_list(), lazy["ece"].to_list(), dask["ece"].to_list()
    np.testing.assert_allclose(want, ref, rtol=1e-12)
    np.testing.assert_allclose(lazy, ref, rtol=1e-12)
    np.testing.assert_allclose(dask, ref, rtol=1e-12)


def test_debiased_rows_stay_in_the_callers_units(dd):
    """Debiased figures count a bin's rows as its weight sum in the caller's units (integer weights = repeated
    rows): weights m * 2^60 on LazyFrame and Dask give the eager value through the scale."""
    d = _frame()
    d["w"] = np.random.default_rng(6).integers(1, 4, GROUPS.size) * 2.0**60
    kw = dict(**KW, estimator="debiased", binning="uniform", bins=5)
    want = calframe.rmsce(pl.DataFrame(d), **kw)
    assert want > 0
    assert figure(calframe.rmsce(pl.LazyFrame(d), **kw)) == pytest.approx(want, rel=1e-12)
    assert _ddf(dd, d).calib.rmsce(**kw).compute() == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("kind", ["lazy", "pyarrow", "duckdb", "ibis"])
@pytest.mark.parametrize("fn", ["ece", "smece"])
def test_zero_weights_on_the_engines_equal_eager(kind, fn):
    """A row of weight 0 counts for nothing in the sums of every engine. On an Ibis table the weight's bucket
    (narwhals.bucket_expr) took the floor of -log2(0) = inf before clipping it, and Ibis's integer FLOOR failed."""
    rng = np.random.default_rng(5)
    w = rng.random(300)
    w[::7] = 0.0
    df = pl.DataFrame({"prob": rng.random(300), "label": rng.integers(0, 2, 300), "w": w,
                       "g": rng.integers(0, 3, 300)})
    if kind == "lazy":
        frame = df.lazy()
    elif kind == "pyarrow":
        frame = df.to_arrow()
    else:
        duckdb = pytest.importorskip("duckdb")
        con = duckdb.connect()
        con.register("scores", df.to_arrow())
        frame = con.table("scores")
        if kind == "ibis":
            frame = pytest.importorskip("ibis").duckdb.from_connection(con).table("scores")
    want = getattr(calframe, fn)(df, weights="w", by="g")
    got = getattr(calframe, fn)(frame, weights="w", by="g")
    got = got.collect() if isinstance(got, pl.LazyFrame) else pl.from_arrow(got) if kind == "pyarrow" else (
        got.pl() if kind == "duckdb" else got.to_polars())
    np.testing.assert_allclose(got[fn].to_numpy(), want[fn].to_numpy(), rtol=1e-12, atol=1e-15)
    assert got["n"].to_list() == want["n"].to_list()
