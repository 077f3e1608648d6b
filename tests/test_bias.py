"""calframe.bias against model-diagnostics 1.5 (``compute_bias``), calframe.spiegelhalter against pycaleva 0.8.2
(``CalibrationEvaluator.z_test``, values stored below with the script that produced them), both per group, weighted,
on synthetic data and the bundled Adult data; their false-alarm rates and power by simulation (exact calibration
known in closed form: y ~ Bernoulli(p)); Holm's and Bonferroni's adjustments; bad input."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy.stats import binom

import calframe

md = pytest.importorskip("model_diagnostics.calibration")
pytestmark = pytest.mark.filterwarnings("ignore:the string cache:DeprecationWarning")  # model-diagnostics' own

#: pycaleva 0.8.2's z_test on the data of :func:`synthetic` and Adult: tests/oracles/pycaleva_spiegelhalter.py
PYCALEVA = {
    'synthetic-0': (-0.24279767439332428, 0.8081621372405623),
    'synthetic-0-g0': (1.3158734984211404, 0.18821650505623344),
    'synthetic-0-g1': (-1.3999605042414391, 0.16152514599419732),
    'synthetic-0-g2': (-0.3564359101413726, 0.7215141405282938),
    'synthetic-0-repeated': (-1.147487751150113, 0.2511800926392198),
    'synthetic-1': (-0.5751973266421158, 0.5651578506012944),
    'synthetic-1-g0': (-0.6218149155522259, 0.5340635774305864),
    'synthetic-1-g1': (-1.042482589141413, 0.29718799349311753),
    'synthetic-1-g2': (0.6535810953237842, 0.5133817270652877),
    'synthetic-1-repeated': (-0.979201346120389, 0.32748050364644654),
    'adult': (0.9874657824823667, 0.3234143494530256),
    'adult-Female': (0.1915615985049579, 0.8480856253083028),
    'adult-Male': (1.0655130855772161, 0.2866438071846209),
}


def synthetic(seed: int, n: int = 2000, power: float = 1.0) -> pl.DataFrame:
    """The data of tests/oracles/pycaleva_spiegelhalter.py: p ~ U(0.01, 0.99), y ~ Bernoulli(p^power), g in 0..2;
    integer weights w in 1..3 from a second stream."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.01, 0.99, size=n)
    y = (rng.uniform(size=n) < p**power).astype(np.int64)
    g = rng.integers(0, 3, n)
    w = np.random.default_rng(seed + 10).integers(1, 4, n)
    return pl.DataFrame({"prob": p, "label": y, "g": g, "w": w, "wf": w * np.linspace(0.3, 1.7, n)})


@pytest.fixture(scope="module")
def adult() -> pl.DataFrame:
    return calframe.datasets.adult_scored()


def compare_bias(got: pl.DataFrame, ref: pl.DataFrame) -> None:
    assert got["n"].to_list() == ref["bias_count"].to_list()
    for ours, theirs in (("bias", "bias_mean"), ("bias_se", "bias_stderr"), ("bias_p_value", "p_value"),
                         ("bias_weights", "bias_weights")):
        np.testing.assert_allclose(got[ours].to_numpy(), ref[theirs].to_numpy(), rtol=1e-12, atol=1e-15)


# --------------------------------------------------------------------------- bias against model-diagnostics


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("weights", [None, "wf"])
def test_bias_equals_model_diagnostics_overall_and_per_group(seed, weights):
    df = synthetic(seed, power=1.3)
    y, p = df["label"].to_numpy().astype(float), df["prob"].to_numpy()
    w = None if weights is None else df[weights].to_numpy()
    compare_bias(calframe.bias(df, weights=weights), md.compute_bias(y, p, weights=w))
    feature = pl.Series("g", [f"g{k}" for k in df["g"]])  # a string feature: one bin per value, sorted
    compare_bias(calframe.bias(df.with_columns(feature), by="g", weights=weights),
                 md.compute_bias(y, p, feature=feature, weights=w))


@pytest.mark.parametrize("by", ["sex", "race", "education"])
def test_bias_equals_model_diagnostics_on_adult(adult, by):
    y, p = adult["label"].to_numpy().astype(float), adult["prob"].to_numpy()
    feature = adult[by]
    ref = md.compute_bias(y, p, feature=feature, n_bins=feature.n_unique())
    compare_bias(calframe.bias(adult, by=by), ref)
    w = adult["fnlwgt"].to_numpy().astype(float)  # Adult's sampling weights
    ref = md.compute_bias(y, p, feature=feature, weights=w, n_bins=feature.n_unique())
    compare_bias(calframe.bias(adult, by=by, weights="fnlwgt"), ref)


def test_bias_along_a_binned_variable_equals_model_diagnostics_feature(adult):
    """Along a variable: ``by=`` the variable binned by the caller; model-diagnostics bins it with the same edges
    when given the binned values as its (string) feature."""
    edges = np.array([25, 35, 45, 55, 65])
    labels = np.array([f"age {k}" for k in range(6)])[np.digitize(adult["age"].to_numpy(), edges)]
    binned = adult.with_columns(age_bin=pl.Series(labels))
    y, p = binned["label"].to_numpy().astype(float), binned["prob"].to_numpy()
    ref = md.compute_bias(y, p, feature=binned["age_bin"], n_bins=6)
    got = calframe.bias(binned, by="age_bin")
    assert got["age_bin"].to_list() == ref["age_bin"].to_list()
    compare_bias(got, ref)
    assert got["bias_p_value"].min() < 1e-6  # the Adult model is biased along age (datasets.adult_scored)


def test_bias_sign_and_top_label_lens():
    df = pl.DataFrame({"prob": [0.9, 0.8, 0.3, 0.6], "label": [1, 0, 0, 1]})
    assert calframe.bias(df)["bias"][0] == pytest.approx(np.mean([0.9, 0.8, 0.3, 0.6]) - 0.5, abs=1e-15)
    top = calframe.bias(df, lens="top1")  # confidence max(p, 1 - p) against correctness
    assert top["bias"][0] == pytest.approx(np.mean([0.9 - 1, 0.8 - 0, 0.7 - 1, 0.6 - 1]), abs=1e-15)


def test_bias_of_one_row_and_of_constant_bias():
    df = pl.DataFrame({"prob": [0.3, 0.3, 0.3, 1.0, 1.0], "label": [0, 0, 0, 1, 1], "g": [0, 0, 0, 1, 1]})
    one = calframe.bias(df.head(1))
    assert one["bias"][0] == pytest.approx(0.3) and np.isnan(one["bias_p_value"][0])
    got = calframe.bias(df, by="g")
    assert got["bias_se"].to_list() == pytest.approx([0.0, 0.0], abs=1e-9)
    assert got["bias_p_value"].to_list() == [0.0, 1.0]  # a constant bias of 0.3 is real; a bias of 0 is not


# --------------------------------------------------------------------------- Spiegelhalter against pycaleva


@pytest.mark.parametrize("seed,power", [(0, 1.0), (1, 1.3)])
def test_spiegelhalter_equals_pycaleva_overall_per_group_and_with_frequency_weights(seed, power):
    df = synthetic(seed, power=power)
    z, pv = calframe.spiegelhalter(df).row(0)[1:]
    assert (z, pv) == pytest.approx(PYCALEVA[f"synthetic-{seed}"], rel=1e-12)
    per = calframe.spiegelhalter(df, by="g")
    for k, z, pv in per.select("g", "spiegelhalter_z", "spiegelhalter_p_value").iter_rows():
        assert (z, pv) == pytest.approx(PYCALEVA[f"synthetic-{seed}-g{k}"], rel=1e-12)
    weighted = calframe.spiegelhalter(df, weights="w").row(0)[1:]  # a row of weight k counts as k rows
    assert weighted == pytest.approx(PYCALEVA[f"synthetic-{seed}-repeated"], rel=1e-12)


def test_spiegelhalter_equals_pycaleva_on_adult(adult):
    assert calframe.spiegelhalter(adult).row(0)[1:] == pytest.approx(PYCALEVA["adult"], rel=1e-12)
    for sex, z, pv in calframe.spiegelhalter(adult, by="sex").select(
            "sex", "spiegelhalter_z", "spiegelhalter_p_value").iter_rows():
        assert (z, pv) == pytest.approx(PYCALEVA[f"adult-{sex}"], rel=1e-12)


def test_spiegelhalter_top_label_equals_positive_class_on_binary_input():
    """(y - p)(1 - 2p) and p(1 - p)(1 - 2p)^2 do not change under p -> 1 - p, y -> 1 - y."""
    df = synthetic(3, power=1.2)
    a = calframe.spiegelhalter(df, by="g")
    b = calframe.spiegelhalter(df, by="g", lens="top1")
    np.testing.assert_allclose(b["spiegelhalter_z"].to_numpy(), a["spiegelhalter_z"].to_numpy(), rtol=1e-12)


def test_spiegelhalter_without_variance():
    half = pl.DataFrame({"prob": [0.5, 0.5], "label": [0, 1]})
    assert np.isnan(calframe.spiegelhalter(half)["spiegelhalter_z"][0])
    sure = pl.DataFrame({"prob": [0.0, 1.0, 0.5], "label": [1, 1, 0]})  # p = 0 with y = 1: refuted for sure
    z, pv = calframe.spiegelhalter(sure).row(0)[1:]
    assert z == np.inf and pv == 0.0


# --------------------------------------------------------------------------- simulation: size and power


def _groups(n_sets: int, n: int, seed: int, overconfident: float = 1.0) -> pl.DataFrame:
    """``n_sets`` data sets of ``n`` rows (a group each): true probability q ~ U(0.05, 0.95), y ~ Bernoulli(q), and
    the model says q (exactly calibrated) or, tempered, sigmoid(overconfident * logit(q))."""
    rng = np.random.default_rng(seed)
    q = rng.uniform(0.05, 0.95, size=n_sets * n)
    y = (rng.uniform(size=q.size) < q).astype(np.int8)
    p = 1.0 / (1.0 + np.exp(-overconfident * np.log(q / (1 - q))))
    return pl.DataFrame({"set": np.repeat(np.arange(n_sets), n), "prob": p, "label": y})


def test_false_alarm_rates_at_5_percent_and_uniform_p_values():
    """400 exactly calibrated data sets of 500 rows: each test rejects at 5% in about 5% of them (within the 99.9%
    binomial band), and its p-values are near uniform (their deciles each hold about a tenth)."""
    df = _groups(400, 500, seed=0)
    lo, hi = binom.ppf(0.0005, 400, 0.05) / 400, binom.ppf(0.9995, 400, 0.05) / 400
    for pv in (calframe.spiegelhalter(df, by="set")["spiegelhalter_p_value"].to_numpy(),
               calframe.bias(df, by="set")["bias_p_value"].to_numpy()):
        assert lo <= (pv < 0.05).mean() <= hi
        deciles = np.bincount(np.minimum((pv * 10).astype(int), 9), minlength=10) / pv.size
        assert deciles.min() > binom.ppf(0.0005, 400, 0.1) / 400 and deciles.max() < binom.ppf(0.9995, 400, 0.1) / 400


def test_power_against_an_overconfident_model():
    """Tempered (logits times 1.5): Spiegelhalter's test sees the spread; the mean bias, near 0 for a symmetric
    tempering, does not."""
    df = _groups(100, 1000, seed=1, overconfident=1.5)
    assert (calframe.spiegelhalter(df, by="set")["spiegelhalter_p_value"].to_numpy() < 0.05).mean() > 0.9
    assert (calframe.bias(df, by="set")["bias_p_value"].to_numpy() < 0.05).mean() < 0.15
    shifted = df.with_columns(prob=pl.col("prob") * 0.9)  # predicts 10% too low: the bias test sees it
    assert (calframe.bias(shifted, by="set")["bias_p_value"].to_numpy() < 0.05).mean() > 0.9


# --------------------------------------------------------------------------- multiple comparisons


def test_holm_and_bonferroni_over_the_groups():
    """Holm (1979) on Wikipedia's worked example, p = (0.01, 0.04, 0.03, 0.005): adjusted 0.03, 0.06, 0.06, 0.02."""
    from calframe.row_sums import adjust

    p = np.array([0.01, 0.04, 0.03, 0.005, np.nan])
    np.testing.assert_allclose(adjust(p, "holm"), [0.03, 0.06, 0.06, 0.02, np.nan], rtol=1e-12)
    np.testing.assert_allclose(adjust(p, "bonferroni"), [0.04, 0.16, 0.12, 0.02, np.nan], rtol=1e-12)
    df = synthetic(1, power=1.3)
    raw = calframe.bias(df, by="g")["bias_p_value"].to_numpy()
    got = calframe.bias(df, by="g", p_adjust="holm")["bias_p_value"].to_numpy()
    np.testing.assert_allclose(got, adjust(raw, "holm"), rtol=1e-15)
    raw = calframe.spiegelhalter(df, by="g")["spiegelhalter_p_value"].to_numpy()
    got = calframe.spiegelhalter(df, by="g", p_adjust="bonferroni")["spiegelhalter_p_value"].to_numpy()
    np.testing.assert_allclose(got, np.minimum(3 * raw, 1.0), rtol=1e-15)


# --------------------------------------------------------------------------- engines and bad input


@pytest.mark.parametrize("func", [calframe.bias, calframe.spiegelhalter])
def test_lazy_and_pandas_equal_eager(func):
    df = synthetic(2, power=1.2)
    want = func(df, by="g", weights="wf")
    for got in (func(df.lazy(), by="g", weights="wf").collect(),
                pl.from_pandas(func(df.to_pandas(), by="g", weights="wf"))):
        for c in want.columns[2:]:
            np.testing.assert_allclose(got[c].to_numpy(), want[c].to_numpy(), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("func", [calframe.bias, calframe.spiegelhalter])
def test_bad_input(func):
    df = synthetic(0, n=10)
    with pytest.raises(calframe.ParameterError, match="p_adjust"):
        func(df, p_adjust="fdr")
    with pytest.raises(calframe.ParameterError, match="lens"):
        func(df, lens="marginal")
    with pytest.raises(Exception, match="'nope'"):
        func(df, prob="nope")
    with pytest.raises(Exception, match=r"prob.*(1 row|outside)|outside.*prob"):
        func(df.with_columns(prob=pl.when(pl.col("g") == 0).then(1.5).otherwise(pl.col("prob"))).head(1)
             .with_columns(prob=pl.lit(1.5)))
    with pytest.raises(TypeError, match="ci"):
        func(df, ci=0.9)
