"""calframe.ks_calibration against numpy written from Gupta et al. (2021), its invariances, and its population
value in closed form (p ~ U(0, 1), y ~ Bernoulli(p^a): D(t) = t^2 / 2 - t^(a + 1) / (a + 1))."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings, strategies as st

import calframe


def by_hand(p: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> tuple[float, float]:
    """KS = max |D| and Kuiper = max D - min D (D from 0) of D(t) = sum_{p_i <= t} w_i (p_i - y_i) / W, at every
    distinct prediction t."""
    w = np.ones_like(p) if w is None else w
    ts = np.unique(p)
    d = np.array([(w * (p - y))[p <= t].sum() for t in ts]) / w.sum()
    return float(np.abs(d).max()), float(max(d.max(), 0.0) - min(d.min(), 0.0))


def test_equals_the_definition_per_group_with_weights_and_ties():
    rng = np.random.default_rng(0)
    n = 3000
    p = np.round(rng.uniform(size=n), 2)  # many ties
    df = pl.DataFrame({"g": rng.integers(0, 3, n), "prob": p, "label": (rng.uniform(size=n) < p**1.3).astype(int),
                       "w": rng.uniform(0.5, 2.0, n)})
    for weights in (None, "w"):
        got = calframe.ks_calibration(df, by="g", weights=weights)
        for row in got.iter_rows(named=True):
            part = df.filter(pl.col("g") == row["g"])
            want = by_hand(part["prob"].to_numpy(), part["label"].to_numpy().astype(float),
                           None if weights is None else part["w"].to_numpy())
            assert (row["ks"], row["kuiper"]) == pytest.approx(want, rel=1e-12, abs=1e-15)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.1, 0.3, 0.5, 0.7, 0.9]), st.booleans()), min_size=1, max_size=40),
       st.randoms(use_true_random=False))
def test_row_order_does_not_matter_and_kuiper_bounds_ks(rows, rnd):
    df = pl.DataFrame({"prob": [r[0] for r in rows], "label": [int(r[1]) for r in rows]})
    got = calframe.ks_calibration(df).row(0, named=True)
    shuffled = df[rnd.sample(range(df.height), df.height)]
    assert calframe.ks_calibration(shuffled).row(0, named=True) == got
    assert 0.0 <= got["ks"] <= got["kuiper"] <= 2 * got["ks"] + 1e-15


@pytest.mark.parametrize("a", [1.0, 1.5, 0.6])
def test_the_population_value_in_closed_form(a):
    """200,000 rows: both figures within 0.005 of the population's (0 for a calibrated model, a = 1)."""
    rng = np.random.default_rng(1)
    p = rng.uniform(size=200_000)
    df = pl.DataFrame({"prob": p, "label": (rng.uniform(size=p.size) < p**a).astype(np.int8)})
    t = np.linspace(0, 1, 100_001)
    d = t**2 / 2 - t ** (a + 1) / (a + 1)
    got = calframe.ks_calibration(df).row(0, named=True)
    assert got["ks"] == pytest.approx(np.abs(d).max(), abs=0.005)
    assert got["kuiper"] == pytest.approx(d.max() - min(d.min(), 0.0), abs=0.005)
