"""calframe.corp_decomposition against model-diagnostics' ``decompose`` (1.5; SquaredError for the Brier score,
LogLoss for the log loss), per group, unweighted and weighted; its cross-fitted variant against scikit-learn's
IsotonicRegression fitted on the other folds; the identity score = mcb - dsc + unc and the signs of its terms;
the weighted isotonic recalibrator (``fit("isotonic", weights=)``) against scikit-learn's
``IsotonicRegression(sample_weight=)``; and the errors of bad input."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings, strategies as st

import calframe
from calframe import recalibrate

md = pytest.importorskip("model_diagnostics.scoring", reason="model-diagnostics is a test extra")
IsotonicRegression = pytest.importorskip("sklearn.isotonic").IsotonicRegression

PEER_SCORE = {"brier": md.SquaredError(), "log_loss": md.LogLoss()}


def synthetic(n: int = 3000, seed: int = 0) -> pl.DataFrame:
    """Three groups, many tied predictions (rounded to 0.001), miscalibrated (p^1.4), weights with some zeros."""
    rng = np.random.default_rng(seed)
    p = np.round(rng.uniform(0.001, 0.999, n), 3)
    w = rng.uniform(0.5, 2.0, n)
    w[rng.uniform(size=n) < 0.02] = 0.0
    return pl.DataFrame({"g": rng.integers(0, 3, n), "prob": p,
                         "label": (rng.uniform(size=n) < p**1.4).astype(np.int8), "w": w})


def adult() -> pl.DataFrame:
    """The bundled Adult data, scored; predictions rounded to 1e-12: scikit-learn's IsotonicRegression (inside
    model-diagnostics) pools predictions closer than 1e-15 (calframe, as scipy, pools equal ones only), and
    returns NaN at the largest of such near ties (the men's rows of Adult)."""
    return calframe.datasets.adult_scored().with_columns(pl.col("prob").round(12), pl.col("fnlwgt").cast(pl.Float64))


def peer(part: pl.DataFrame, weights: str | None, score: str) -> dict[str, float]:
    d = md.decompose(part["label"].to_numpy().astype(np.float64), part["prob"].to_numpy(),
                     None if weights is None else part[weights].to_numpy(), scoring_function=PEER_SCORE[score])
    row = d.row(0, named=True)
    return {"score": row["score"], "mcb": row["miscalibration"], "dsc": row["discrimination"],
            "unc": row["uncertainty"]}


@pytest.mark.parametrize("score", ["brier", "log_loss"])
@pytest.mark.parametrize("weights", [None, "w"])
def test_equals_model_diagnostics_per_group(score, weights):
    df = synthetic()
    got = calframe.corp_decomposition(df, by="g", weights=weights, score=score)
    assert got.columns == ["g", "n", "score", "mcb", "dsc", "unc"]
    for row in got.iter_rows(named=True):
        want = peer(df.filter(pl.col("g") == row["g"]), weights, score)
        for k, v in want.items():
            assert row[k] == pytest.approx(v, rel=1e-9, abs=1e-12), (k, row["g"])


@pytest.mark.parametrize("score", ["brier", "log_loss"])
@pytest.mark.parametrize("weights", [None, "fnlwgt"])
def test_equals_model_diagnostics_on_adult(score, weights):
    df = adult()
    got = calframe.corp_decomposition(df, by="sex", weights=weights, score=score)
    for row in got.iter_rows(named=True):
        want = peer(df.filter(pl.col("sex") == row["sex"]), weights, score)
        for k, v in want.items():
            assert row[k] == pytest.approx(v, rel=1e-9, abs=1e-12), (k, row["sex"])


def test_the_score_is_calframes_brier_and_log_loss_and_the_three_calls_agree():
    """score equals calframe.brier / log_loss (one probability column); mcb equals the three calls the issue
    names: fit("isotonic"), apply, then the score of the recalibrated column."""
    df = synthetic().drop("w")
    rec = calframe.apply(df, calframe.fit(df, "isotonic"), name="iso")
    for score, fn in (("brier", calframe.brier), ("log_loss", calframe.log_loss)):
        row = calframe.corp_decomposition(df, score=score).row(0, named=True)
        assert row["score"] == pytest.approx(fn(df), rel=1e-13)  # summed in another order
        assert row["mcb"] == pytest.approx(fn(df) - fn(rec, prob="iso"), rel=1e-12, abs=1e-15)


def test_integer_weights_are_repeated_rows():
    df = synthetic(800, seed=3).with_columns(k=pl.Series(np.random.default_rng(4).integers(1, 4, 800)))
    repeated = df.select(pl.all().repeat_by("k").explode()).drop("k")
    for score in ("brier", "log_loss"):
        a = calframe.corp_decomposition(df, by="g", weights="k", score=score)
        b = calframe.corp_decomposition(repeated, by="g", score=score)
        for c in ("score", "mcb", "dsc", "unc"):
            np.testing.assert_allclose(a[c].to_numpy(), b[c].to_numpy(), rtol=1e-12, atol=1e-15)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.0, 0.1, 0.3, 0.5, 0.5, 0.7, 0.9, 1.0]), st.booleans(),
                          st.sampled_from([0.0, 0.5, 1.0, 3.0])), min_size=2, max_size=40),
       st.sampled_from(["brier", "log_loss"]), st.randoms(use_true_random=False))
def test_identity_signs_and_row_order(rows, score, rnd):
    df = pl.DataFrame({"prob": [r[0] for r in rows], "label": [int(r[1]) for r in rows],
                       "w": [r[2] for r in rows]})
    if df["w"].sum() == 0:
        df = df.with_columns(w=pl.lit(1.0))
    shuffled = df[rnd.sample(range(df.height), df.height)]
    for weights in (None, "w"):
        got = calframe.corp_decomposition(df, weights=weights, score=score).row(0, named=True)
        assert got["score"] == pytest.approx(got["mcb"] - got["dsc"] + got["unc"], abs=1e-12)
        assert got["mcb"] >= -1e-12 and got["dsc"] >= -1e-12 and got["unc"] >= 0.0
        assert calframe.corp_decomposition(shuffled, weights=weights, score=score).row(0, named=True) == got
        if df.height >= 4 and (weights is None or (df["w"] > 0).sum() >= 4):
            try:
                cf = calframe.corp_decomposition(df, weights=weights, score=score, cross_fit=2)
            except calframe.InvalidValueError:  # a fold whose other fold holds only rows of weight 0
                continue
            row = cf.row(0, named=True)
            assert row["score"] == pytest.approx(row["mcb"] - row["dsc"] + row["unc"], abs=1e-12)
            assert calframe.corp_decomposition(shuffled, weights=weights, score=score, cross_fit=2).row(
                0, named=True) == row


def cross_fitted_by_hand(p: np.ndarray, y: np.ndarray, w: np.ndarray, k: int, seed: int) -> np.ndarray:
    """The documented folds (rows in order of (prediction, outcome, weight); each run of k rows takes a random
    order of the k folds from default_rng([seed, k])), each fold recalibrated by scikit-learn's
    IsotonicRegression(out_of_bounds="clip") fitted on the others; in the sorted order."""
    order = np.lexsort((w, y, p))
    p, y, w = p[order], y[order], w[order]
    m = p.size
    rng = np.random.default_rng([seed, k])
    fold = np.argsort(rng.random((-(-m // k), k)), axis=1, kind="stable").ravel()[:m]
    out = np.empty(m)
    for f in range(k):
        held = fold == f
        iso = IsotonicRegression(out_of_bounds="clip").fit(p[~held], y[~held], sample_weight=w[~held])
        out[held] = iso.predict(p[held])
    return p, y, w, out


@pytest.mark.parametrize("score", ["brier", "log_loss"])
def test_cross_fit_against_scikit_learn_on_the_other_folds(score):
    df = synthetic(2000, seed=5)
    got = calframe.corp_decomposition(df, by="g", weights="w", score=score, cross_fit=5, seed=7)
    eps = np.finfo(np.float64).eps
    for row in got.iter_rows(named=True):
        part = df.filter(pl.col("g") == row["g"])
        p, y, w, r = cross_fitted_by_hand(part["prob"].to_numpy(), part["label"].to_numpy().astype(np.float64),
                                          part["w"].to_numpy(), 5, 7)

        def s(x: np.ndarray) -> float:
            rows = (x - y) ** 2 if score == "brier" else -np.log(np.clip(np.where(y == 1, x, 1 - x), eps, 1 - eps))
            return float(np.sum(w * rows) / np.sum(w))

        a = float(np.sum(w * y) / np.sum(w))
        want = {"score": s(p), "mcb": s(p) - s(r), "dsc": s(np.full_like(p, a)) - s(r), "unc": s(np.full_like(p, a))}
        for k, v in want.items():
            assert row[k] == pytest.approx(v, rel=1e-9, abs=1e-12), (k, row["g"])


def test_cross_fit_is_out_of_sample():
    """On a calibrated model the in-sample mcb is positive (the isotonic fit chases noise); the cross-fitted one is
    near zero or below (a recalibration fitted on other rows does not help)."""
    rng = np.random.default_rng(11)
    p = rng.uniform(size=4000)
    df = pl.DataFrame({"prob": p, "label": (rng.uniform(size=p.size) < p).astype(np.int8)})
    ins = calframe.corp_decomposition(df).row(0, named=True)
    out = calframe.corp_decomposition(df, cross_fit=5).row(0, named=True)
    assert ins["mcb"] > 0.001 and out["mcb"] < 0.0
    assert out["score"] == ins["score"] and out["unc"] == ins["unc"]


def test_intervals_from_the_row_bootstrap():
    df = synthetic(1500, seed=2)
    got = calframe.corp_decomposition(df, by="g", weights="w", ci=0.9, n_boot=60)
    again = calframe.corp_decomposition(df, by="g", weights="w", ci=0.9, n_boot=60)
    assert got.equals(again)  # same input, same bits
    for c in ("score", "mcb", "dsc", "unc"):
        assert (got[f"{c}_lo"] <= got[f"{c}_hi"]).all()
    one = calframe.corp_decomposition(df.filter(pl.col("g") == 1), weights="w", ci=0.9, n_boot=60)
    assert one.drop("n").row(0) == got.filter(pl.col("g") == 1).drop("g", "n").row(0)  # by=g is filtering


def test_top_label_lens_on_class_probabilities():
    mc = calframe.datasets.multiclass(n=2000, k=4, seed=0)
    got = calframe.corp_decomposition(mc).row(0, named=True)
    probs = np.stack(mc["probs"].to_numpy())
    conf, pred = probs.max(axis=1), probs.argmax(axis=1)
    hit = (pred == mc["label"].to_numpy()).astype(np.float64)
    want = peer(pl.DataFrame({"prob": conf, "label": hit}), None, "brier")
    for k, v in want.items():
        assert got[k] == pytest.approx(v, rel=1e-9, abs=1e-12)


# --------------------------------------------------------------------------- the weighted isotonic recalibrator


def test_weighted_isotonic_fit_equals_scikit_learn():
    df = synthetic(3000, seed=8)
    p, y, w = df["prob"].to_numpy(), df["label"].to_numpy(), df["w"].to_numpy()
    grid = np.linspace(0, 1, 2001)
    want = IsotonicRegression(out_of_bounds="clip").fit(p, y, sample_weight=w)
    arrays = recalibrate.fit("isotonic", p, y, weights=w)
    np.testing.assert_allclose(arrays.predict(grid), want.predict(grid), rtol=0, atol=1e-12)
    frame = calframe.fit(df, "isotonic", weights="w")
    np.testing.assert_allclose(frame.predict(grid), want.predict(grid), rtol=0, atol=1e-12)
    per_group = calframe.fit(df, "isotonic", weights="w", by="g")
    out = calframe.apply(df, per_group, name="q")
    for g in range(3):
        part = out.filter(pl.col("g") == g)
        iso = IsotonicRegression(out_of_bounds="clip").fit(part["prob"].to_numpy(), part["label"].to_numpy(),
                                                            sample_weight=part["w"].to_numpy())
        np.testing.assert_allclose(part["q"].to_numpy(), iso.predict(part["prob"].to_numpy()), rtol=0, atol=1e-12)


def test_weighted_isotonic_saves_data_only(tmp_path):
    df = synthetic(500, seed=9)
    rec = calframe.fit(df, "isotonic", weights="w")
    path = rec.save(tmp_path / "iso.calib")
    back = calframe.load(path)
    grid = np.linspace(0, 1, 101)
    np.testing.assert_array_equal(back.predict(grid), rec.predict(grid))
    assert calframe.fit(df.with_columns(w=pl.col("w") * 8), "isotonic", weights="w").arrays["y"].tolist() == \
        rec.arrays["y"].tolist()  # the weights' scale does not matter


# --------------------------------------------------------------------------- bad input


def test_bad_input():
    df = synthetic(300)
    with pytest.raises(calframe.ParameterError, match="score"):
        calframe.corp_decomposition(df, score="auc")
    with pytest.raises(calframe.ParameterError, match="cross_fit"):
        calframe.corp_decomposition(df, cross_fit=1)
    with pytest.raises(calframe.ParameterError, match="no bootstrap interval"):
        calframe.corp_decomposition(df, cross_fit=3, ci=0.9)
    with pytest.raises(calframe.InvalidValueError, match=r"group \(7,\).*1 row"):
        calframe.corp_decomposition(pl.concat([df, df[:1].with_columns(g=pl.lit(7, pl.Int64))]), by="g",
                                    cross_fit=2)
    with pytest.raises(calframe.InvalidValueError, match="'prob'.*1 row"):
        calframe.corp_decomposition(df.with_columns(prob=pl.when(pl.int_range(pl.len()) == 0).then(1.5)
                                                    .otherwise(pl.col("prob"))))
    with pytest.raises(calframe.InvalidValueError, match="'w'"):
        calframe.corp_decomposition(df.with_columns(w=-pl.col("w")), weights="w")
    with pytest.raises(calframe.ParameterError, match="does not take weights.*isotonic"):
        calframe.fit(df, "scaling_binning", weights="w")
    with pytest.raises(calframe.ParameterError, match="does not take weights"):
        recalibrate.fit("scaling_binning", df["prob"].to_numpy(), df["label"].to_numpy(), weights=df["w"].to_numpy())
    with pytest.raises(calframe.InvalidValueError, match="weights must be finite and non-negative; 1 row"):
        recalibrate.fit("isotonic", [0.2, 0.4], [0, 1], weights=[1.0, -1.0])
    with pytest.raises(calframe.InvalidValueError, match="every weight is 0"):
        recalibrate.fit("isotonic", [0.2, 0.4], [0, 1], weights=[0.0, 0.0])
    with pytest.raises(calframe.InvalidValueError, match="one entry per row"):
        recalibrate.fit("isotonic", [0.2, 0.4], [0, 1], weights=[1.0])
