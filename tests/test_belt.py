"""calframe.calibration_belt and calibration_belt_bands against the calibration-belt package (0.1.41, Nattino et
al.'s GiViTI belt in Python): its values are stored in tests/oracles/calibration_belt.json with the script that
produced them (tests/oracles/calibration_belt.py; the package pulls in statsmodels)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import calframe
from calframe._errors import InvalidValueError, ParameterError
from calframe.families import belt as B
from tests.oracles.calibration_belt import CDF_AT, cases

ORACLE = json.loads((Path(__file__).parent / "oracles" / "calibration_belt.json").read_text())
CDF = ORACLE.pop("cdf")


def _frames() -> dict[str, pl.DataFrame]:
    out = {k: pl.DataFrame({"prob": p, "label": y}) for k, (p, y) in cases().items()}
    adult = calframe.datasets.adult_scored()
    out["adult"] = adult
    out["adult_male"] = adult.filter(pl.col("sex") == "Male")
    out["adult_female"] = adult.filter(pl.col("sex") == "Female")
    return out


FRAMES = _frames()


@pytest.mark.parametrize("name", sorted(ORACLE))
def test_test_matches_package(name: str) -> None:
    want = ORACLE[name]
    got = calframe.calibration_belt(FRAMES[name]).row(0, named=True)
    assert got["belt_degree"] == want["degree"]
    assert got["belt_statistic"] == pytest.approx(want["statistic"], rel=1e-9, abs=1e-9)
    assert got["belt_p_value"] == pytest.approx(want["p_value"], rel=1e-6, abs=1e-12)


#: the package clips the fitted probabilities to [1e-5, 1 - 1e-5] in the belt's likelihood: where predictions
#: lie beyond (Adult's men: 118 rows overall), its belt is wider than the exact one, by up to 0.013 (the exact one
#: is checked against scipy's SLSQP instead, test_belt_is_exact)
CLIPPED = {"adult", "adult_male"}


@pytest.mark.parametrize("name", sorted(ORACLE))
def test_belt_matches_package(name: str) -> None:
    """The package's trust-constr stops at a tolerance of 1e-5 inside the region (``keep_feasible``): its bounds
    lie inside the exact ones, close (median 1e-5 or less) and never far (a few 1e-4, once 3e-3)."""
    want = ORACLE[name]
    got = calframe.calibration_belt_bands(FRAMES[name], points=50)
    for c in (0.8, 0.95):
        part = got.filter(pl.col("confidence") == c)
        np.testing.assert_allclose(part["p"].to_numpy(), want[str(c)]["p"], rtol=1e-12, atol=0)
        lower = part["lower"].to_numpy() - np.asarray(want[str(c)]["lower"])
        upper = part["upper"].to_numpy() - np.asarray(want[str(c)]["upper"])
        if name in CLIPPED:  # the package's region is larger: its belt holds the exact one
            assert lower.min() > -1e-12 and upper.max() < 1e-12
            continue
        assert lower.max() < 1e-9 and upper.min() > -1e-9  # the package's bounds are inside
        gaps = np.abs(np.concatenate([lower, upper]))
        assert np.median(gaps) < 2e-5 and gaps.max() < 5e-3


@pytest.mark.parametrize("name", ["power", "quartic", "adult"])
def test_belt_is_exact(name: str) -> None:
    """The belt's bounds solve their problem: max / min of the curve at p over the curves whose log-likelihood is
    at least l(a_hat) - k / 2, as scipy's SLSQP finds it at tight tolerance (on the unclipped likelihood)."""
    from scipy.optimize import minimize

    p, y = (FRAMES[name][c].to_numpy().astype(np.float64) for c in ("prob", "label"))
    w = np.ones_like(p)
    fit = B.select(p, y, w, 0.95, 4)
    x = B._design(np.log(p) - np.log1p(-p), fit.degree)
    k = B.quantile(0.95, fit.degree, 0.95)
    at = B._design(B.grid(p, 50), fit.degree)[::9]
    target = fit.llf - k / 2
    for a in at:
        for side in (-1, 1):
            ours = B.bound(x, y, w, fit, k, a, side)
            res = minimize(lambda al: -side * (a @ al), fit.coef, method="SLSQP", options={"ftol": 1e-15,
                           "maxiter": 1000}, constraints=[{"type": "ineq",
                                                           "fun": lambda al: B._loglik(x @ al, y, w) - target}])
            assert ours == pytest.approx(float(a @ res.x), rel=1e-7, abs=1e-7)


@pytest.mark.parametrize("m", [1, 2, 3, 4])
def test_law_matches_package(m: int) -> None:
    """Nattino et al.'s distribution function of the statistic after the selection (eqs. 16-19), and the
    p-value as its upper tail."""
    got = [B._cdf(t, m, 0.95) for t in CDF_AT]
    np.testing.assert_allclose(got, CDF[str(m)], rtol=1e-12, atol=1e-14)
    tails = [B.p_value(t, m, 0.95) for t in CDF_AT]
    np.testing.assert_allclose(tails, 1 - np.asarray(CDF[str(m)]), rtol=1e-9, atol=1e-12)


def test_plot() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import calframe.plot

    d = calframe.plot.calibration_belt(FRAMES["adult"], by="sex", points=10, confidence=0.95)
    assert len(d.figure_.get_axes()) == 2
    assert d.figure_.get_axes()[0].get_title().startswith("sex = ")


def test_by_equals_filtering() -> None:
    adult = FRAMES["adult"]
    both = calframe.calibration_belt(adult, by="sex")
    for sex in ("Female", "Male"):
        one = calframe.calibration_belt(adult.filter(pl.col("sex") == sex))
        row = both.filter(pl.col("sex") == sex).drop("sex")
        assert row.rows() == one.rows()
    bands = calframe.calibration_belt_bands(adult, by="sex", confidence=0.95, points=10)
    alone = calframe.calibration_belt_bands(adult.filter(pl.col("sex") == "Male"), confidence=0.95, points=10)
    assert bands.filter(pl.col("sex") == "Male").drop("sex").rows() == alone.rows()


def test_row_order_and_weights() -> None:
    df = FRAMES["power"].head(600)
    a = calframe.calibration_belt(df)
    b = calframe.calibration_belt(df.reverse())
    assert a.rows() == b.rows()
    w = df.with_columns(w=pl.Series(np.arange(600) % 3 + 1))
    rep = pl.concat([df.slice(i, 1) for i in range(600) for _ in range(i % 3 + 1)])
    got, want = calframe.calibration_belt(w, weights="w").row(0), calframe.calibration_belt(rep).row(0)
    assert got[1] == want[1]
    np.testing.assert_allclose(got[2:], want[2:], rtol=1e-9)


def test_bad_input() -> None:
    df = pl.DataFrame({"prob": [0.0, 0.3, 0.6, 1.0], "label": [0, 0, 1, 1]})
    with pytest.raises(InvalidValueError, match=r"'prob' has 2 rows .* exactly 0 or 1"):
        calframe.calibration_belt(df)
    clipped = calframe.calibration_belt(df, clip=1e-6).row(0)
    want = calframe.calibration_belt(df.with_columns(prob=pl.Series([1e-6, 0.3, 0.6, 1 - 1e-6]))).row(0)
    assert clipped == want
    ok = FRAMES["calibrated"]
    with pytest.raises(ParameterError, match="clip"):
        calframe.calibration_belt(ok, clip=0.5)
    with pytest.raises(ParameterError, match="max_degree"):
        calframe.calibration_belt(ok, max_degree=5)
    with pytest.raises(ParameterError, match="confidence"):
        calframe.calibration_belt_bands(ok, confidence=(0.8, 1.0))
    with pytest.raises(ParameterError, match="q must"):
        calframe.calibration_belt(ok, q=0)
    one = pl.DataFrame({"prob": [0.3, 0.3], "label": [0, 1]})
    assert np.isnan(calframe.calibration_belt(one)["belt_p_value"][0])


def test_false_alarms_at_5_percent() -> None:
    """Under exact calibration the p-value is about uniform: 300 seeded samples of 400 rows reject at 5% about
    15 times (Nattino et al.'s law of the statistic after the forward selection)."""
    rng = np.random.default_rng(5)
    rejected = 0
    for _ in range(300):
        p = rng.uniform(0.02, 0.98, 400)
        y = (rng.uniform(size=400) < p).astype(int)
        rejected += calframe.calibration_belt(pl.DataFrame({"prob": p, "label": y}))["belt_p_value"][0] < 0.05
    assert 5 <= rejected <= 27  # a binomial(300, 0.05) lies here with chance above 0.999


def test_reaches_expr_and_monitor() -> None:
    """The figure table's row: the same numbers as an expression per group and per window of monitor."""
    import calframe.expr as ce

    adult = FRAMES["adult"]
    want = calframe.calibration_belt(adult, by="sex").sort("sex")
    got = adult.group_by("sex").agg(b=ce.calibration_belt("prob", "label")).sort("sex").unnest("b")
    for c in ("belt_degree", "belt_statistic", "belt_p_value"):
        assert got[c].to_list() == want[c].to_list()
    df = adult.with_columns(ts=pl.datetime(2024, 1, 1) + pl.duration(hours=pl.int_range(pl.len()) % 48))
    windows = calframe.monitor(df, "ts", every="1d", figures=["calibration_belt"])
    first = calframe.calibration_belt(df.filter(pl.col("ts") < pl.datetime(2024, 1, 2)))
    assert windows.row(0, named=True)["belt_p_value"] == first["belt_p_value"][0]
