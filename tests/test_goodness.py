"""calframe.hosmer_lemeshow against numpy written from Hosmer and Lemeshow (1980) on pandas.qcut deciles, and its
false-alarm rate and power by simulation (exact calibration known in closed form: y ~ Bernoulli(p))."""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pytest
from scipy.stats import chi2

import calframe


def by_hand(p: np.ndarray, y: np.ndarray, groups: np.ndarray, w: np.ndarray | None = None,
            fitted: int = 0) -> tuple[float, float]:
    """HL = sum_g (O_g - E_g)^2 / (E_g (1 - E_g / n_g)) over the non-empty groups, and its chi2(G - fitted) tail
    (``fitted=2``: Hosmer and Lemeshow's, for the rows a logistic model was fitted on)."""
    w = np.ones_like(p) if w is None else w
    hl, used = 0.0, 0
    for g in np.unique(groups):
        m = groups == g
        n, o, e = w[m].sum(), (w[m] * y[m]).sum(), (w[m] * p[m]).sum()
        hl += (o - e) ** 2 / (e * (1 - e / n))
        used += 1
    return hl, chi2.sf(hl, used - fitted)


def frame(n: int, seed: int, power: float = 1.0, groups: int = 1) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.02, 0.98, size=n)
    return pl.DataFrame({"g": rng.integers(0, groups, n), "prob": p,
                         "label": (rng.uniform(size=n) < p**power).astype(np.int8)})


def test_deciles_equal_the_definition_on_pandas_qcut_per_group():
    df = frame(6000, seed=1, power=1.2, groups=3)
    got = calframe.hosmer_lemeshow(df, by="g")
    assert got.columns == ["g", "n", "hl", "hl_p_value"]
    for row in got.iter_rows(named=True):
        part = df.filter(pl.col("g") == row["g"])
        p, y = part["prob"].to_numpy(), part["label"].to_numpy().astype(float)
        hl, pv = by_hand(p, y, pd.qcut(p, 10, labels=False))
        assert row["hl"] == pytest.approx(hl, rel=1e-12)
        assert row["hl_p_value"] == pytest.approx(pv, rel=1e-9)


def test_weights_are_frequency_weights_on_uniform_bins():
    df = frame(3000, seed=2, power=1.3).with_columns(w=pl.Series(np.random.default_rng(3).integers(1, 4, 3000)))
    got = calframe.hosmer_lemeshow(df, weights="w", binning="uniform", bins=8).row(0, named=True)
    p, y, w = df["prob"].to_numpy(), df["label"].to_numpy().astype(float), df["w"].to_numpy().astype(float)
    hl, pv = by_hand(p, y, np.digitize(p, np.linspace(0, 1, 9)[1:-1]), w)
    assert got["hl"] == pytest.approx(hl, rel=1e-12) and got["hl_p_value"] == pytest.approx(pv, rel=1e-9)
    repeated = pl.from_pandas(df.to_pandas().loc[lambda d: d.index.repeat(d["w"])]).drop("w")  # = repeated rows
    again = calframe.hosmer_lemeshow(repeated, binning="uniform", bins=8).row(0, named=True)
    assert again["hl"] == pytest.approx(got["hl"], rel=1e-12)


def test_false_alarm_rate_and_power_by_simulation():
    """400 data sets of 1,000 rows (one call, a group each): exactly calibrated, the test rejects at 5% about 5%
    of the time (binomial band around its chi-squared approximation); against y ~ Bernoulli(p^1.5) nearly always.
    With G - 2 degrees of freedom (the fitted rows' law) the same held-out predictions are rejected about twice as
    often: why calframe uses G."""
    df = frame(400_000, seed=7, groups=400)
    got = calframe.hosmer_lemeshow(df, by="g")
    calibrated = got["hl_p_value"]
    rate = float((calibrated < 0.05).mean())
    assert 0.025 <= rate <= 0.085, rate
    fitted_rate = float((chi2.sf(got["hl"].to_numpy(), 8) < 0.05).mean())
    assert fitted_rate > 1.5 * rate
    assert 0.35 <= float(calibrated.median()) <= 0.65  # p-values about uniform
    miscalibrated = calframe.hosmer_lemeshow(frame(400_000, seed=8, power=1.5, groups=400), by="g")["hl_p_value"]
    assert float((miscalibrated < 0.05).mean()) >= 0.95


def test_two_groups_have_two_degrees_of_freedom():
    df = pl.DataFrame({"prob": [0.2, 0.8, 0.2, 0.8], "label": [0, 1, 1, 1]})
    got = calframe.hosmer_lemeshow(df, binning="uniform", bins=2).row(0, named=True)
    assert got["hl"] == pytest.approx(by_hand(df["prob"].to_numpy(), df["label"].to_numpy(), np.array([0, 1, 0, 1]))[0])
    assert got["hl_p_value"] == pytest.approx(chi2.sf(got["hl"], 2))
