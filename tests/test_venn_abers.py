"""fit("venn_abers") against the ``venn-abers`` package (Petej, MIT; a test extra) and against the definition of
Vovk & Petej (2014) computed with scipy's isotonic regression: the test point added with label 0 and with label 1,
p = p1 / (1 - p0 + p1). Per group, the interval columns, the lenses, save and load."""

from __future__ import annotations

import os

import numpy as np
import polars as pl
import pytest
from scipy.optimize import isotonic_regression

import calframe
from calframe import recalibrate as R

va = pytest.importorskip("venn_abers")
TOL = 1e-9  # the brief's bar; the two agree to the bit (asserted where it holds by construction)


def _package(s_cal: np.ndarray, y_cal: np.ndarray, s_test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The package's (p, [p0, p1]) of the test scores, fitted on the calibration scores (its binary input [1-s, s])."""
    m = va.VennAbers()
    m.fit(np.c_[1 - s_cal, s_cal], np.asarray(y_cal))
    p, p01 = m.predict_proba(np.c_[1 - s_test, s_test])
    return p[:, 1], p01


def _definition(s_cal: np.ndarray, y_cal: np.ndarray, s: float) -> tuple[float, float]:
    """(p0, p1) of one test score s by the definition: isotonic regression of the calibration rows and (s, label),
    tied scores pooled, read at s."""
    out = []
    for label in (0.0, 1.0):
        x = np.r_[s_cal, s]
        y = np.r_[y_cal, label].astype(float)
        ux, inv = np.unique(x, return_inverse=True)
        w = np.bincount(inv).astype(float)
        fitted = isotonic_regression(np.bincount(inv, weights=y) / w, weights=w).x
        out.append(float(fitted[np.searchsorted(ux, s)]))
    return out[0], out[1]


def _data(seed: int, n: int, decimals: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    s = rng.uniform(size=n)
    if decimals is not None:
        s = np.round(s, decimals)  # ties
    return s, (rng.uniform(size=n) < s**1.6).astype(np.int64)


@pytest.mark.parametrize("seed, n, decimals", [(0, 1000, None), (1, 1000, 2), (2, 300, 1), (3, 5, None), (4, 1, None)])
def test_equals_the_package(seed, n, decimals):
    s, y = _data(seed, n, decimals)
    t = np.r_[np.linspace(0, 1, 501), np.unique(s), np.nextafter(np.unique(s), 2), np.nextafter(np.unique(s), -1)]
    t = np.clip(t, 0, 1)
    rec = R.fit("venn_abers", s, y)
    want_p, want_01 = _package(s, y, t)
    np.testing.assert_allclose(rec.predict(t), want_p, rtol=0, atol=TOL)
    np.testing.assert_allclose(rec.predict_interval(t), want_01, rtol=0, atol=TOL)
    assert np.array_equal(rec.predict_interval(t), want_01)  # the same divisions of the same integer sums


def test_equals_the_definition():
    for seed in range(30):
        rng = np.random.default_rng(100 + seed)
        n = int(rng.integers(1, 60))
        s, y = _data(seed, n, int(rng.integers(1, 3)))
        rec = R.fit("venn_abers", s, y)
        t = np.r_[rng.uniform(size=10), np.unique(s)]
        got = rec.predict_interval(t)
        for i, ti in enumerate(t):
            assert tuple(got[i]) == pytest.approx(_definition(s, y, ti), abs=1e-12)


def test_one_class_only_and_the_validity_bounds():
    s = np.linspace(0.1, 0.9, 9)
    rec = R.fit("venn_abers", s, np.zeros(9, dtype=int))
    np.testing.assert_array_equal(rec.predict_interval(np.array([0.0, 0.5, 1.0]))[:, 0], 0.0)
    assert rec.predict_interval(np.array([1.0]))[0, 1] == 1.0  # (1, 1) above every calibration score: alone
    s, y = _data(7, 2000)
    rec = R.fit("venn_abers", s, y)
    t = np.linspace(0, 1, 1001)
    p, iv = rec.predict(t), rec.predict_interval(t)
    assert (iv[:, 0] <= p).all() and (p <= iv[:, 1]).all()  # p lies in its interval


@pytest.fixture(scope="module")
def adult() -> tuple[pl.DataFrame, pl.DataFrame]:
    df = calframe.datasets.adult_scored()
    cal = df.sample(n=4000, seed=0, shuffle=True)
    return cal, df


def test_frame_fit_and_apply_equal_the_package_on_adult(adult):
    cal, test = adult
    rec = calframe.fit(cal, "venn_abers", interval=True)
    out = calframe.apply(test, rec)
    assert out.columns[-3:] == ["p_venn_abers", "p_venn_abers_p0", "p_venn_abers_p1"]
    p, p01 = _package(cal["prob"].to_numpy(), cal["label"].to_numpy(), test["prob"].to_numpy())
    np.testing.assert_allclose(out["p_venn_abers"].to_numpy(), p, rtol=0, atol=TOL)
    np.testing.assert_allclose(out.select("p_venn_abers_p0", "p_venn_abers_p1").to_numpy(), p01, rtol=0, atol=TOL)
    assert calframe.apply(test, calframe.fit(cal, "venn_abers")).columns[-1] == "p_venn_abers"  # no interval
    assert calframe.apply(test.lazy(), rec).collect().equals(out)


def test_per_group_equals_the_package_per_group(adult):
    cal, test = adult
    out = calframe.apply(test, calframe.fit(cal, "venn_abers", by="sex", interval=True), name="q")
    for sex in ("Female", "Male"):
        c, t = cal.filter(pl.col("sex") == sex), out.filter(pl.col("sex") == sex)
        p, p01 = _package(c["prob"].to_numpy(), c["label"].to_numpy(), t["prob"].to_numpy())
        np.testing.assert_allclose(t["q"].to_numpy(), p, rtol=0, atol=TOL)
        np.testing.assert_allclose(t.select("q_p0", "q_p1").to_numpy(), p01, rtol=0, atol=TOL)


def test_per_group_unknown_groups_keep_their_probability(adult):
    cal, test = adult
    rec = calframe.fit(cal.filter(pl.col("sex") == "Male"), "venn_abers", by="sex", interval=True)
    out = calframe.apply(test, rec, name="q", unknown="keep").filter(pl.col("sex") == "Female")
    assert out["q"].equals(out["prob"], check_names=False)
    assert out["q_p0"].equals(out["prob"], check_names=False) and out["q_p1"].equals(out["prob"], check_names=False)


def test_top_label_of_binary_input_is_the_package_on_the_confidence(adult):
    """lens="top1": the package fitted on (max(p, 1 - p), correct); apply gives back the positive-class probability
    (the predicted class's p, or 1 - p) and the interval of the positive class, [1 - p1, 1 - p0] when class 0 is
    predicted."""
    cal, test = adult
    out = calframe.apply(test, calframe.fit(cal, "venn_abers", lens="top1", interval=True), name="q")
    conf = lambda d: np.maximum(d["prob"].to_numpy(), 1 - d["prob"].to_numpy())  # noqa: E731
    correct = ((cal["prob"].to_numpy() > 0.5) == (cal["label"].to_numpy() == 1)).astype(int)
    p, p01 = _package(conf(cal), correct, conf(test))
    one = test["prob"].to_numpy() > 0.5
    np.testing.assert_allclose(out["q"].to_numpy(), np.where(one, p, 1 - p), rtol=0, atol=TOL)
    np.testing.assert_allclose(out["q_p0"].to_numpy(), np.where(one, p01[:, 0], 1 - p01[:, 1]), rtol=0, atol=TOL)
    np.testing.assert_allclose(out["q_p1"].to_numpy(), np.where(one, p01[:, 1], 1 - p01[:, 0]), rtol=0, atol=TOL)


def test_three_classes_top_label():
    mc = calframe.datasets.multiclass(n=3000, k=3, seed=1)
    cal, test = mc.head(2000), mc.tail(1000)
    out = calframe.apply(test, calframe.fit(cal, "venn_abers", interval=True), name="q")
    P, Pt = np.stack(cal["probs"].to_numpy()), np.stack(test["probs"].to_numpy())
    correct = (P.argmax(1) == cal["label"].to_numpy()).astype(int)
    p, p01 = _package(P.max(1), correct, Pt.max(1))
    np.testing.assert_allclose(out["q"].to_numpy(), p, rtol=0, atol=TOL)
    np.testing.assert_allclose(out.select("q_p0", "q_p1").to_numpy(), p01, rtol=0, atol=TOL)


@pytest.mark.parametrize("form", ["va.parquet", "va_dir"])
def test_save_and_load_round_trip(tmp_path, adult, form):
    cal, test = adult
    rec = calframe.fit(cal, "venn_abers", by="sex", interval=True)
    back = calframe.load(rec.save(os.path.join(tmp_path, form)))
    assert back.equals(rec)
    assert calframe.apply(test, back, name="q").equals(calframe.apply(test, rec, name="q"))


def test_dask_apply_writes_the_interval_columns():
    dd = pytest.importorskip("dask.dataframe")
    df = calframe.datasets.grouped_miscalibration(n=3000, seed=1)
    rec = calframe.fit(df, "venn_abers", by="region", interval=True)
    out = calframe.apply(dd.from_pandas(df.to_pandas(), npartitions=3), rec, name="q").compute()
    want = calframe.apply(df.to_pandas(), rec, name="q")
    assert list(out.columns) == list(want.columns)
    np.testing.assert_array_equal(out[["q", "q_p0", "q_p1"]].to_numpy(), want[["q", "q_p0", "q_p1"]].to_numpy())
