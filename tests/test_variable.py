"""Variable-based calibration (Kelly & Smyth): identities and the paper's Adult numbers."""

from __future__ import annotations


import numpy as np
import pandas as pd
import polars as pl
import pytest

import calframe



def frame(n: int = 3000, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.random(n)
    return pl.DataFrame(
        {
            "prob": p,
            "label": (rng.random(n) < p**1.3).astype(np.int64),
            "age": rng.integers(18, 80, n),
            "score": rng.normal(size=n),
            "city": rng.choice(["a", "b", "c", "d"], n),
            "g": rng.integers(0, 3, n),
        }
    )


@pytest.mark.parametrize("binning", ["quantile", "equal_mass"])
@pytest.mark.parametrize("lens", ["top1", "class:1"])
def test_vece_of_the_confidence_is_ece(binning, lens):
    """SPEC §4: with V = the lensed confidence and the same bins, VECE == ECE."""
    df = frame()
    p = df["prob"].to_numpy()
    conf = np.maximum(p, 1 - p) if lens == "top1" else p
    df = df.with_columns(conf=pl.Series(conf))
    got = calframe.vece(df, "conf", lens=lens, binning=binning, bins=10, by="g")
    ref = calframe.ece(df, lens=lens, binning=binning, bins=10, by="g")
    np.testing.assert_allclose(got["vece"].to_numpy(), ref["ece"].to_numpy(), rtol=1e-12)


def test_vece_by_hand_with_qcut_and_groupby():
    """The natural pandas computation: qcut the variable, groupby, weighted |acc - conf| (top label)."""
    df = frame(5000, 1).to_pandas()
    conf = np.maximum(df["prob"], 1 - df["prob"])
    correct = ((df["prob"] > 0.5).astype(int) == df["label"]).astype(float)
    b = pd.qcut(df["age"], 10, labels=False, duplicates="drop")
    t = pd.DataFrame({"b": b, "conf": conf, "acc": correct}).groupby("b").agg(["mean", "size"])
    ref = float((t[("conf", "size")] / len(df) * (t[("acc", "mean")] - t[("conf", "mean")]).abs()).sum())
    assert calframe.vece(df, "age", lens="top1") == pytest.approx(ref, rel=1e-12)
    # categorical: one bin per category
    t = pd.DataFrame({"b": df["city"], "conf": conf, "acc": correct}).groupby("b").agg(["mean", "size"])
    ref = float((t[("conf", "size")] / len(df) * (t[("acc", "mean")] - t[("conf", "mean")]).abs()).sum())
    assert calframe.vece(df, "city", lens="top1") == pytest.approx(ref, rel=1e-12)
    mref = float((t[("acc", "mean")] - t[("conf", "mean")]).abs().max())
    assert calframe.vmce(df, "city", lens="top1") == pytest.approx(mref, rel=1e-12)


def test_vece_by_equals_filtering():
    df = frame(4000, 2)
    got = calframe.vece(df, "score", by="g")
    for row in got.iter_rows(named=True):
        assert row["vece"] == pytest.approx(calframe.vece(df.filter(pl.col("g") == row["g"]), "score"), rel=1e-12)


def test_vece_rank_orders_and_matches_vece():
    # top label: under the positive class this frame's gap has one sign in every bin, so every
    # variable has the same VECE (|mean(p) - mean(y)|) and there is no order to check
    df = frame(4000, 3)
    rank = calframe.vece_rank(df, exclude=["g"], lens="top1")
    assert rank["variable"].to_list() == sorted(
        ["age", "score", "city"], key=lambda v: -calframe.vece(df, v, lens="top1")
    )
    for row in rank.iter_rows(named=True):
        assert row["vece"] == pytest.approx(calframe.vece(df, row["variable"], lens="top1"), rel=1e-12)
        assert row["vmce"] == pytest.approx(calframe.vmce(df, row["variable"], lens="top1"), rel=1e-12)


def test_variable_errors():
    df = frame(200)
    with pytest.raises(calframe.ColumnNotFoundError, match="nope"):
        calframe.vece(df, "nope")
    with pytest.raises(calframe.InvalidValueError, match="single distinct value"):
        calframe.vece(df.with_columns(k=pl.lit(3)), "k")
    with pytest.raises(calframe.InvalidValueError, match=r"null values in 'age': 200 rows"):
        calframe.vece(df.with_columns(age=pl.lit(None, dtype=pl.Int64)), "age")
    with pytest.raises(calframe.ParameterError, match="binning"):
        calframe.vece(df, "age", binning="uniform")
    with pytest.raises(calframe.InvalidValueError, match="outside the given edges"):
        calframe.vece(df, "age", binning="uniform", bins=[20, 50, 60])


def test_adult_uncalibrated_vece_age_oracle(adult_split):
    """ORACLES.md C: uncalibrated VECE(Age) on the Adult test rows = 0.20665741864533657."""
    cal, test = adult_split
    frame_ = pd.DataFrame(
        {
            "conf": np.maximum(test["prob_0"], test["prob_1"]),
            "correct": (test["actual"] == test["pred"]).astype(int),
            "Age": test["Age"],
        }
    )
    got = calframe.vece(frame_, "Age", prob="conf", label="correct", lens="class:1")
    assert got == pytest.approx(0.20665741864533657, rel=1e-12)


def test_adult_beta_calibrated_vece_and_vce_oracles(adult_split):
    """ORACLES.md C: beta calibration as Kelly & Smyth (LogisticRegression C=1 on [ln s, -ln(1-s)],
    s clipped 0 -> 1e-4, 1 -> 1-1e-4, fitted on the 2500 calibration rows); correctness keeps the file's
    predictions. VECE(Age) = 0.09593200720465153 (~1e-5) and VCE(v*) = 23.4374 pp (paper; ~0.15 pp for an
    exact LOESS)."""
    from sklearn.linear_model import LogisticRegression

    cal, test = adult_split

    def feats(s):
        s = np.where(s == 0, 1e-4, np.where(s == 1, 1 - 1e-4, s))
        return np.column_stack([np.log(s), -np.log(1 - s)])

    lr = LogisticRegression(C=1).fit(feats(cal["prob_1"].to_numpy()), cal["actual"])
    p = lr.predict_proba(feats(test["prob_1"].to_numpy()))[:, 1]
    fr = pd.DataFrame(
        {"conf": np.maximum(p, 1 - p), "correct": (test["actual"] == test["pred"]).astype(int), "Age": test["Age"]}
    )
    assert calframe.vece(fr, "Age", prob="conf", label="correct", lens="class:1") == pytest.approx(
        0.09593200720465153, abs=1e-5
    )
    res = calframe.vce_curve(fr, "Age", prob="conf", label="correct", lens="class:1", smoother="loess", n_boot=0)
    assert res.vce * 100 == pytest.approx(23.4374, abs=0.15)
    assert res.curve.shape[0] == 500
    assert res.curve["v"].min() == pytest.approx(np.quantile(fr["Age"], 0.05))


def test_vce_curve_by_group_equals_each_group():
    df = frame(3000, 4).with_columns(v=pl.col("score"))
    # n_boot=20: the v* interval's resamples run (and cost 10x less than the default 200); vce and v* are the fits'
    res = calframe.vce_curve(df, "v", by="g", n_points=40, n_boot=20)
    for row in res.summary.iter_rows(named=True):
        alone = calframe.vce_curve(df.filter(pl.col("g") == row["g"]), "v", n_points=40, n_boot=20)
        assert row["vce"] == pytest.approx(alone.vce, rel=1e-12)
        assert row["v_star"] == pytest.approx(alone.v_star, rel=1e-12)
    with pytest.raises(AttributeError, match="summary"):
        res.vce
    with pytest.raises(calframe.ParameterError, match="categorical"):
        calframe.vce_curve(df, "city")


@pytest.mark.parametrize("k", [2, 3, 10])
def test_theorem_5_1_and_5_2_constructions(k):
    """Kelly & Smyth Theorems 5.1/5.2: the constructions give their predicted values within sampling error.

    With n = 200k rows the binned estimates have standard errors below 2e-3
    (binomial noise of ~20k rows per VECE bin); 0.01 is > 5 standard errors.
    """
    alpha = 0.02
    gap = 0.5 - 1 / (2 * k) - alpha / 2
    d1 = calframe.datasets.theorem_5_1(n=200_000, k=k, alpha=alpha, seed=k)
    # the theorems are about the top label (K = 2 is one probability column, whose default is class:1)
    assert calframe.vece(d1, "v", lens="top1") == pytest.approx(gap, abs=0.01)
    assert calframe.ece(d1, lens="top1") <= alpha / 4 + 0.01
    d2 = calframe.datasets.theorem_5_2(n=200_000, k=k, alpha=alpha, seed=k)
    assert calframe.ece(d2, lens="top1") == pytest.approx(gap, abs=0.01)
    assert calframe.vece(d2, "v", lens="top1") <= 0.01


def test_vece_rank_with_vce_matches_vce_curve():
    df = frame(1500, 6)
    rank = calframe.vece_rank(df, exclude=["g"], vce=True)
    for row in rank.iter_rows(named=True):
        if row["kind"] == "numeric":
            # n_boot=20: the v* interval's resamples still run beside the fit (the default 200 cost ~25 s a variable
            # on the loaded 2-core machine); vce and v* are the full data's, which vece_rank(vce=True) gives
            res = calframe.vce_curve(df, row["variable"], n_boot=20)
            assert row["vce"] == pytest.approx(res.vce, rel=1e-12)
            assert row["v_star"] == pytest.approx(res.v_star, rel=1e-12)
        else:
            assert row["vce"] is None


def _pandas_vece_vmce(p: np.ndarray, y: np.ndarray, v: np.ndarray, bins: int = 10) -> tuple[float, float]:
    """The natural pandas computation (top-1 lens): qcut the variable, groupby, weighted and max |acc - conf|."""
    conf = np.maximum(p, 1 - p)
    acc = ((p > 0.5).astype(int) == y).astype(float)
    b = pd.qcut(pd.Series(v), bins, labels=False, duplicates="drop")
    t = pd.DataFrame({"b": b, "conf": conf, "acc": acc}).groupby("b").agg(["mean", "size"])
    gap = (t[("acc", "mean")] - t[("conf", "mean")]).abs()
    return float((t[("conf", "size")] / len(v) * gap).sum()), float(gap.max())


def test_vece_rank_many_variables_against_pandas_qcut():
    """vece_rank's histogram path (numeric variables, no groups) on awkward variables: heavy ties, a few
    distinct values, values sitting on the edges, extreme skew, huge and negative magnitudes, tiny n."""
    rng = np.random.default_rng(5)
    for n in (3, 11, 257, 20_000):
        p = rng.random(n)
        y = (rng.random(n) < p).astype(np.int64)
        cols = {
            "normal": rng.normal(size=n),
            "ints": rng.integers(17, 90, n).astype(np.int64),
            "binary": rng.integers(0, 2, n),
            "three": rng.choice([0.1, 0.2, 0.7], n),
            "skew": np.exp(rng.normal(size=n) * 8),
            "huge": rng.normal(size=n) * 1e300,
            "ties": np.round(rng.normal(size=n), 1),
            "mostly_one": np.where(rng.random(n) < 0.97, 5.0, rng.normal(size=n)),
        }
        df = pl.DataFrame({"prob": p, "label": y, **cols})
        rank = calframe.vece_rank(df, lens="top1")  # the reference is top-label
        got = {r["variable"]: (r["vece"], r["vmce"]) for r in rank.iter_rows(named=True)}
        for name, v in cols.items():
            if np.unique(v).size < 2:
                assert name not in got
                continue
            ref = _pandas_vece_vmce(p, y, np.asarray(v, dtype=np.float64))
            assert got[name] == pytest.approx(ref, rel=1e-12, abs=1e-15), f"{name}, n={n}"


def test_vece_rank_numeric_variable_with_nan_or_inf_is_an_error():
    df = frame(500)
    bad = df.with_columns(age=pl.col("age").cast(pl.Float64)).with_columns(
        age=pl.when(pl.int_range(pl.len()) < 3).then(float("nan")).otherwise(pl.col("age")),
        score=pl.when(pl.int_range(pl.len()) == 7).then(float("inf")).otherwise(pl.col("score")))
    with pytest.raises(calframe.InvalidValueError, match=r"variable 'age' has NaN or infinite values in 3 rows"):
        calframe.vece_rank(bad, ["age", "score"])
    with pytest.raises(calframe.InvalidValueError, match=r"variable 'score' has NaN or infinite values in 1 row"):
        calframe.vece_rank(bad, ["score", "city"])
    with pytest.raises(calframe.InvalidValueError, match=r"variable 'score' has NaN or infinite values in 1 row"):
        calframe.vece_rank(bad, ["score"], by="g")  # the grouped path checks the same way


def test_vece_rank_and_vce_curve_parameters_checked_before_the_frame():
    """vece_rank's lens and binning, and vce_curve's, are checked when the call is parsed (calframe.request), before
    the frame is read: a frame with no candidate variables (or no such variable) still gets the parameter's error."""
    only = pl.DataFrame({"prob": [0.2, 0.8], "label": [0, 1]})  # no candidate variables
    with pytest.raises(calframe.ParameterError, match="'lens' parameter of vece_rank"):
        calframe.vece_rank(only, lens="marginal")
    with pytest.raises(calframe.ParameterError, match="'binning' parameter of vece_rank"):
        calframe.vece_rank(only, binning="uniform")
    with pytest.raises(calframe.ParameterError, match="'span' parameter of vce_curve"):
        calframe.vce_curve(only, "nope", span=0)


# --------------------------------------------------------------------------- vece_rank: variables that leak the label


def leaky_frame(n: int = 4000, seed: int = 3) -> pl.DataFrame:
    """A calibrated model's frame with copies of the label beside real variables: the label as text, a near-copy
    with 0.4% of rows changed, a numeric copy with noise (one threshold gives the label), and, not leaking, a
    copy with 15% of rows changed, an identifier (one row per value) and a real variable."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.02, 0.98, n)
    y = (rng.random(n) < p).astype(np.int64)
    flip = np.zeros(n, bool)
    flip[rng.choice(n, 16, replace=False)] = True  # 0.4% of rows
    far = rng.random(n) < 0.15
    return pl.DataFrame({
        "prob": p, "label": y,
        "income": np.where(y == 1, ">50K", "<=50K"),
        "near_copy": np.where((y == 1) ^ flip, "high", "low"),
        "amount": 50_000 + 40_000 * (y - 0.5) + rng.normal(0, 5_000, n),
        "noisy_copy": np.where((y == 1) ^ far, "high", "low"),
        "row_id": rng.permutation(n),
        "age": rng.integers(18, 80, n),
    })


def test_vece_rank_lists_leaking_variables_and_does_not_rank_them():
    """Issue 23 item 6: a copy of the label is not the most miscalibrated variable; it is listed, with why."""
    df = leaky_frame()
    with pytest.warns(calframe.CalframeWarning, match="leak the label.*'income'.*'near_copy'.*'amount'"):
        res = calframe.vece_rank(df)
    ranked = res.filter(pl.col("leak").is_null())
    assert set(ranked["variable"]) == {"noisy_copy", "row_id", "age"}
    assert ranked["vece"].null_count() == 0
    leaks = res.filter(pl.col("leak").is_not_null())
    assert leaks["variable"].to_list() == ["income", "near_copy", "amount"]  # listed last, in the frame's order
    assert leaks["vece"].null_count() == leaks["vmce"].null_count() == 3
    why = dict(zip(leaks["variable"], leaks["leak"]))
    assert "100.0%" in why["income"] and "99.6%" in why["near_copy"] and "threshold" in why["amount"]
    # the rule, from pandas: the near-copy's value gives the label on 99.6% of rows (16 of 4000 changed)
    pdf = df.to_pandas()
    agree = pdf.groupby("near_copy")["label"].agg(lambda s: s.value_counts().iloc[0]).sum() / len(pdf)
    assert agree == pytest.approx(1 - 16 / 4000)
    # the label and probability columns named in variables= are leaks too; leak_check=False ranks the copies
    with pytest.warns(calframe.CalframeWarning, match="leak the label"):
        named = calframe.vece_rank(df, ["age", "label", "prob", "income"], by=None)
    assert dict(zip(named["variable"], named["leak"])) == {
        "age": None, "label": "the label column", "prob": "the probability column",
        "income": "its value gives the label on 100.0% of rows"}
    off = calframe.vece_rank(df, ["age", "income"], leak_check=False)
    assert off["variable"].to_list() == ["income", "age"] and off["leak"].null_count() == 2
    # by=: the leak rows are per group like the ranked ones
    with pytest.warns(calframe.CalframeWarning, match="leak the label"):
        grouped = calframe.vece_rank(df.with_columns(g=pl.col("age") % 2), ["age", "income"], by="g")
    assert grouped.filter(pl.col("variable") == "income")["g"].to_list() == [0, 1]
    # pandas gives the same table
    with pytest.warns(calframe.CalframeWarning, match="leak the label"):
        pd_res = calframe.vece_rank(pdf)
    assert pd_res["variable"].tolist() == res["variable"].to_list()


def test_vece_rank_leak_rule_does_not_fire_on_a_rare_label():
    """With 0.5% positives the commonest label alone is right on 99.5% of rows: a variable must do ten times
    better than that guess to count as determining the label."""
    rng = np.random.default_rng(1)
    n = 6000
    p = rng.uniform(0.0, 0.01, n)
    y = (rng.random(n) < p).astype(np.int64)
    df = pl.DataFrame({"prob": p, "label": y, "city": rng.choice(["a", "b", "c"], n), "age": rng.integers(18, 80, n)})
    assert calframe.vece_rank(df)["leak"].null_count() == 2


def test_vece_rank_skips_adult_income():
    """Adult (ships with calframe): its `income` column is the label as text and was ranked first (VECE 0.254)."""
    df = calframe.datasets.adult_scored()
    with pytest.warns(calframe.CalframeWarning, match="leak the label.*'income'"):
        res = calframe.vece_rank(df, nulls="drop")
    assert res.filter(pl.col("leak").is_not_null())["variable"].to_list() == ["income"]
    assert res["variable"][0] == "marital-status"  # the household columns the model was kept blind to


def test_vece_rank_skips_the_label_text_on_kelly_and_smyth_adult(adult_split):
    """Kelly & Smyth's Adult test rows (their MLP's prob_1; /work/shared/data, skipped when absent) with the label's
    text copy added: only it leaks; none of their one-hot features, ages or predictions does."""
    _, test = adult_split
    df = test.drop(columns=["prob_0"]).assign(income=np.where(test["actual"] == 1, ">50K", "<=50K"))
    with pytest.warns(calframe.CalframeWarning, match="leak the label.*: 'income' [^;]*$"):
        res = calframe.vece_rank(df, prob="prob_1", label="actual")
    leaks = res[res["leak"].notna()]
    assert leaks["variable"].tolist() == ["income"]
    assert res["vece"].notna().sum() == len(res) - 1
