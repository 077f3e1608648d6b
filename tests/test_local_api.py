"""LCE / MLCE / LoRe on frames: the papers' limits, exactness against a numpy formula, bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pytest

import calframe


def frame(n=600, seed=0, d=2) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    p = 1 / (1 + np.exp(-(x[:, 0] + 0.3 * rng.normal(size=n))))
    y = (rng.random(n) < 1 / (1 + np.exp(-1.5 * x[:, 0]))).astype(int)
    cols = {f"e{j}": x[:, j] for j in range(d)}
    return pl.DataFrame({"prob": p, "label": y, **cols, "g": rng.integers(0, 3, n)})


def numpy_lce(df: pl.DataFrame, feats: list[str], gamma: float, bins: int = 15, lens: str = "class:1") -> np.ndarray:
    """SPEC §5 written out directly: pairwise L1 kernel within the row's confidence bin, under the
    positive-class lens (the default for one probability column) or the top-1 lens."""
    p, y = df["prob"].to_numpy(), df["label"].to_numpy()
    if lens == "top1":
        conf = np.maximum(p, 1 - p)
        correct = ((p > 0.5).astype(int) == y).astype(float)
    else:
        conf, correct = p, y.astype(float)
    b = np.digitize(conf, np.linspace(0, 1, bins + 1)[1:-1])
    x = df.select(feats).to_numpy()
    h = len(feats) * gamma
    out = np.empty(len(p))
    for i in range(len(p)):
        m = b == b[i]
        dist = np.abs(x[m] - x[i]).sum(axis=1)
        k = np.exp(-(dist - dist.min()) / h)
        out[i] = abs(((conf[m] - correct[m]) * k).sum()) / k.sum()
    return out


@pytest.mark.parametrize("gamma", [0.05, 0.2, 3.0])
def test_lce_equals_the_formula(gamma):
    df = frame()
    got = calframe.lce(df, ["e0", "e1"], gamma=gamma)["lce"].to_numpy()  # default: the positive class
    np.testing.assert_allclose(got, numpy_lce(df, ["e0", "e1"], gamma), rtol=1e-10, atol=1e-13)
    got = calframe.lce(df, ["e0", "e1"], gamma=gamma, lens="top1")["lce"].to_numpy()
    np.testing.assert_allclose(got, numpy_lce(df, ["e0", "e1"], gamma, lens="top1"), rtol=1e-10, atol=1e-13)


def test_lemma_1_mlce_tends_to_mce():
    df = frame(seed=1)
    mce = calframe.mce(df)
    assert calframe.mlce(df, ["e0", "e1"], gamma=1e10) == pytest.approx(mce, abs=1e-8)
    curve = calframe.mlce_curve(df, ["e0", "e1"], gammas=[0.01, 0.1, 1, 10, 1e3, 1e6])
    assert curve["mce"][0] == pytest.approx(mce, rel=1e-12)
    assert curve["mlce"][-1] == pytest.approx(mce, abs=1e-5)
    assert (curve["mlce"].to_numpy() >= curve["mean_lce"].to_numpy()).all()


def test_single_row_bin_lce_is_its_own_gap():
    df = frame(n=300, seed=2)
    extra = pl.DataFrame({"prob": [0.999], "label": [0], "e0": [0.0], "e1": [0.0], "g": [0]})
    df = pl.concat([df.filter(pl.col("prob").is_between(0.05, 0.95)), extra])
    out = calframe.lce(df, ["e0", "e1"], gamma=0.2)
    assert out["lce"][-1] == pytest.approx(0.999, rel=1e-12)  # |conf - acc| = |0.999 - 0|


def test_mlce_by_group_and_flavors():
    df = frame(seed=3)
    res = calframe.mlce(df, ["e0", "e1"], gamma=0.3, by="g", neighbours="frame")
    lce = calframe.lce(df, ["e0", "e1"], gamma=0.3)
    for row in res.iter_rows(named=True):
        vals = lce.filter(pl.col("g") == row["g"])["lce"]
        assert row["mlce"] == pytest.approx(vals.max(), rel=1e-12)
        assert row["mean_lce"] == pytest.approx(vals.mean(), rel=1e-12)
    pd_out = calframe.lce(df.to_pandas(), ["e0", "e1"], gamma=0.3)
    np.testing.assert_array_equal(pd_out["lce"].to_numpy(), lce["lce"].to_numpy())


def test_feature_preparation():
    df = frame(seed=4).with_columns(e1=pl.col("e1") * 1000)
    std = calframe.lce(df, ["e0", "e1"], gamma=0.2, prepare="standardize")["lce"].to_numpy()
    z = df.with_columns([(pl.col(c) - pl.col(c).mean()) / pl.col(c).std(ddof=0) for c in ("e0", "e1")])
    np.testing.assert_allclose(std, numpy_lce(z, ["e0", "e1"], 0.2), rtol=1e-10, atol=1e-13)
    pca = calframe.lce(df, ["e0", "e1"], gamma=0.2, prepare="pca", n_components=1)
    assert pca["lce"].is_finite().all()


def test_local_bad_input():
    df = frame(n=50)
    with pytest.raises(calframe.ParameterError, match="gamma"):
        calframe.lce(df, ["e0"], gamma=0)
    with pytest.raises(calframe.ParameterError, match="gamma"):
        calframe.mlce(df, ["e0"], gamma=-1)
    with pytest.raises(calframe.InvalidValueError, match="constant"):
        calframe.lce(df.with_columns(c=pl.lit(1.0)), ["e0", "c"], prepare="standardize")
    with pytest.raises(calframe.InvalidValueError, match="NaN"):
        calframe.lce(df.with_columns(e0=pl.when(pl.col("g") == 0).then(float("nan")).otherwise(pl.col("e0"))), ["e0"])
    with pytest.raises(calframe.ColumnNotFoundError, match="nope"):
        calframe.lce(df, ["nope"])


@pytest.mark.parametrize("func", ["lce", "mlce", "mlce_curve"])
def test_local_parameters_checked_before_the_frame(func):
    """Every parameter of the local figures is checked when the call is parsed, before any column is read
    (calframe.request.local): a bad ``prepare`` is reported even when the features are missing, and a
    marginal lens is refused as a parameter by mlce_curve too, as by lce and mlce."""
    df = frame(n=50)
    with pytest.raises(calframe.ParameterError, match="'prepare' parameter of " + func):
        getattr(calframe, func)(df, ["nope"], prepare="bogus")
    with pytest.raises(calframe.ParameterError, match="'lens' parameter of " + func):
        getattr(calframe, func)(df, ["nope"], lens="marginal")


# --------------------------------------------------------------------------- recalibration on frames


def test_fit_apply_save_load_round_trip(tmp_path):
    cal = calframe.datasets.grouped_miscalibration(n=3000, seed=1)
    new = calframe.datasets.grouped_miscalibration(n=1000, seed=2)
    before = new.clone()
    for method, kw in [("platt", {}), ("beta", {}), ("isotonic", {}), ("histogram", {}), ("temperature", {}),
                       ("tree", {"variable": "age"}), ("beta_v", {"variable": "age"}),
                       ("lore", {"features": ["age"], "gamma": 0.5}), ("scaling_binning", {})]:
        rec = calframe.fit(cal, method, **kw)
        out = calframe.apply(new, rec, name="p_new")
        assert new.equals(before)  # the input frame is unchanged
        path = tmp_path / f"{method}.parquet"
        rec.save(path)
        again = calframe.apply(new, calframe.load(path), name="p_new")
        np.testing.assert_array_equal(out["p_new"].to_numpy(), again["p_new"].to_numpy())
        pd_out = calframe.apply(new.to_pandas(), rec, name="p_new")
        np.testing.assert_array_equal(pd_out["p_new"].to_numpy(), out["p_new"].to_numpy())
        lazy = calframe.apply(new.lazy(), rec, name="p_new")
        assert isinstance(lazy, pl.LazyFrame)
        np.testing.assert_array_equal(lazy.collect()["p_new"].to_numpy(), out["p_new"].to_numpy())


def test_per_group_fit_equals_fitting_each_group():
    cal = calframe.datasets.grouped_miscalibration(n=4000, seed=3)
    new = calframe.datasets.grouped_miscalibration(n=1000, seed=4)
    rec = calframe.fit(cal, "platt", by="region")
    out = calframe.apply(new, rec)
    for region in ["north", "south"]:
        alone = calframe.fit(cal.filter(pl.col("region") == region), "platt")
        sub = new.filter(pl.col("region") == region)
        np.testing.assert_allclose(out.filter(pl.col("region") == region)["p_platt"].to_numpy(),
                                   calframe.apply(sub, alone)["p_platt"].to_numpy(), rtol=1e-12)
    with pytest.raises(calframe.InvalidValueError, match="not fitted on"):
        calframe.apply(new.with_columns(region=pl.lit("mars")), rec)
    kept = calframe.apply(new.with_columns(region=pl.lit("mars")), rec, unknown="keep")
    np.testing.assert_array_equal(kept["p_platt"].to_numpy(), new["prob"].to_numpy())


def test_recalibration_bad_input(tmp_path):
    cal = calframe.datasets.grouped_miscalibration(n=500, seed=5)
    with pytest.raises(calframe.ParameterError, match="needs variable"):
        calframe.fit(cal, "tree")
    with pytest.raises(calframe.ParameterError, match="method"):
        calframe.fit(cal, "magic")
    rec = calframe.fit(cal, "tree", variable="age")
    with pytest.raises(calframe.ColumnNotFoundError, match="age"):
        calframe.apply(cal.drop("age"), rec)
    mc = calframe.datasets.multiclass(n=300, k=3)
    with pytest.raises(calframe.InvalidValueError, match="binary"):
        calframe.apply(mc, calframe.fit(cal, "platt"), prob="probs")
    with pytest.raises(calframe.ParameterError, match="gamma"):
        calframe.fit(cal, "lore", features=["age"], gamma=0)
    path = tmp_path / "rec"
    rec.save(path)
    header = path / "recalibrator.json"
    header.write_text(header.read_text().replace('"max_depth": 2', '"max_depth": 3'))
    with pytest.raises(calframe.CalframeError, match="checksum|modified"):
        calframe.load(path)


@pytest.mark.parametrize("prepare", ["none", "standardize"])
def test_mlce_by_is_each_group_on_its_own_rows(prepare):
    """Issue 23 item 5: like every by=, mlce(by=) is the call on each group's rows alone. The groups here overlap
    in the features and are miscalibrated in opposite directions, so a neighbourhood drawn from the whole frame
    mixes the two and gives other values (the old meaning, kept as neighbours="frame": lce over the frame, then a
    group-by)."""
    rng = np.random.default_rng(7)
    n = 800
    g = rng.integers(0, 3, n)
    x = rng.normal(size=(n, 2)) + g[:, None] * 0.3
    p = rng.uniform(0.05, 0.95, n)
    shift = np.array([0.25, -0.25, 0.0])[g] * np.tanh(x[:, 0])
    y = (rng.random(n) < np.clip(p + shift, 0, 1)).astype(int)
    df = pl.DataFrame({"prob": p, "label": y, "e0": x[:, 0], "e1": x[:, 1], "g": g})
    res = calframe.mlce(df, ["e0", "e1"], gamma=0.3, by="g", prepare=prepare)
    frame_wide = calframe.mlce(df, ["e0", "e1"], gamma=0.3, by="g", prepare=prepare, neighbours="frame")
    lce_all = calframe.lce(df, ["e0", "e1"], gamma=0.3, prepare=prepare)
    assert res["g"].to_list() == [0, 1, 2]
    for row, wide in zip(res.iter_rows(named=True), frame_wide.iter_rows(named=True)):
        alone = df.filter(pl.col("g") == row["g"])
        assert row["n"] == alone.height
        assert row["mlce"] == pytest.approx(calframe.mlce(alone, ["e0", "e1"], gamma=0.3, prepare=prepare),
                                            rel=1e-12)
        if prepare == "none":  # numpy's formula on the group's rows alone, not ours
            vals = numpy_lce(alone, ["e0", "e1"], 0.3)
            assert row["mlce"] == pytest.approx(vals.max(), rel=1e-10)
            assert row["mean_lce"] == pytest.approx(vals.mean(), rel=1e-10)
        vals = lce_all.filter(pl.col("g") == row["g"])["lce"]
        assert wide["mlce"] == pytest.approx(vals.max(), rel=1e-12)
        assert wide["mean_lce"] == pytest.approx(vals.mean(), rel=1e-12)
        assert abs(wide["mean_lce"] - row["mean_lce"]) > 1e-3  # the two meanings differ here
    pd_res = calframe.mlce(df.to_pandas(), ["e0", "e1"], gamma=0.3, by="g", prepare=prepare)
    np.testing.assert_array_equal(pd_res["mlce"].to_numpy(), res["mlce"].to_numpy())
    with pytest.raises(calframe.ParameterError, match="neighbours"):
        calframe.mlce(df, ["e0"], by="g", neighbours="rows")
