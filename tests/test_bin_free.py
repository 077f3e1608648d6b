"""calframe.ks_calibration against probmetrics 1.3.0's ``KolmogorovSmirnovCalibrationMetric`` and
``KuiperCalibrationMetric`` (values stored: probmetrics pulls in PyTorch; tests/oracles/probmetrics_ks.py produced
them and says how, and what differs: float32 as shipped, and where the cumulative gap is read among tied
predictions), against numpy written from Gupta et al. (2021), its invariances, and its population value in closed
form (p ~ U(0, 1), y ~ Bernoulli(p^a): D(t) = t^2 / 2 - t^(a + 1) / (a + 1))."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings, strategies as st

import calframe

sys.path.insert(0, str(Path(__file__).parent / "oracles"))
import probmetrics_ks as O  # noqa: E402  (the stored values' seeded data; probmetrics is imported only by its main)

#: what tests/oracles/probmetrics_ks.py printed (probmetrics 1.3.0, torch 2.13.0+cpu, numpy 2.4.6): probmetrics' code
#: run in float64 ("float64") and as shipped, in float32 ("float32")
PROBMETRICS = {
    'binary ks float64': 0.09083812976877714,
    'binary kuiper float64': 0.09083812976877714,
    'binary ks float32': 0.09083813428878784,
    'binary kuiper float32': 0.09083813428878784,
    'ties ks float64': 0.03342500000000054,
    'ties kuiper float64': 0.034374999999999656,
    'ties ks float32': 0.03342500329017639,
    'ties kuiper float32': 0.03437504172325134,
    'adult ks float64': 0.0025041776601552324,
    'adult kuiper float64': 0.004915820237950563,
    'adult ks float32': 0.0025041773915290833,
    'adult kuiper float32': 0.0049158260226249695,
    'adult Female ks float64': 0.00297640027628069,
    'adult Female kuiper float64': 0.005487918179144222,
    'adult Female ks float32': 0.002976400777697563,
    'adult Female kuiper float32': 0.005487916991114616,
    'adult Male ks float64': 0.0035000874198065635,
    'adult Male kuiper float64': 0.006544842747826324,
    'adult Male ks float32': 0.0035001039505004883,
    'adult Male kuiper float32': 0.00654485821723938,
}


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


def _peer(case: str, precision: str) -> tuple[float, float]:
    return PROBMETRICS[f"{case} ks {precision}"], PROBMETRICS[f"{case} kuiper {precision}"]


def test_probmetrics_seeded_data_without_ties():
    """Continuous predictions: the same figure as probmetrics' (its code run in float64) to 1e-12; as shipped it
    sums in float32, within 1e-6."""
    p, y = O.binary()
    got = calframe.ks_calibration(pl.DataFrame({"prob": p, "label": y})).row(0, named=True)
    assert (got["ks"], got["kuiper"]) == pytest.approx(_peer("binary", "float64"), rel=1e-12)
    assert (got["ks"], got["kuiper"]) == pytest.approx(_peer("binary", "float32"), abs=1e-6)


def test_probmetrics_adult_overall_and_per_group():
    """The bundled Adult data (88 tied predictions among 16,281, none where the maximum is reached): overall and per
    ``sex`` (probmetrics has no groups: it was run on each group's rows) to 1e-12."""
    df = calframe.datasets.adult_scored()
    got = calframe.ks_calibration(df).row(0, named=True)
    assert (got["ks"], got["kuiper"]) == pytest.approx(_peer("adult", "float64"), rel=1e-12)
    assert (got["ks"], got["kuiper"]) == pytest.approx(_peer("adult", "float32"), abs=1e-6)
    per = calframe.ks_calibration(df, by="sex")
    assert per["sex"].to_list() == ["Female", "Male"]
    for row in per.iter_rows(named=True):
        assert (row["ks"], row["kuiper"]) == pytest.approx(_peer(f"adult {row['sex']}", "float64"), rel=1e-12)
        assert (row["ks"], row["kuiper"]) == pytest.approx(_peer(f"adult {row['sex']}", "float32"), abs=1e-6)


def _tie_orders(p: np.ndarray, y: np.ndarray) -> tuple[tuple[float, float], tuple[float, float]]:
    """(KS, Kuiper) read at the end of each run of equal predictions (any order of the tied rows gives them), and
    the largest values a reading after every row can reach over all orders of the tied rows: within a run the gap
    rises furthest with its negatives first and falls furthest with its positives first."""
    n = p.size
    ts, first, counts = np.unique(p, return_index=True, return_counts=True)
    ones = np.bincount(np.searchsorted(ts, p), weights=y, minlength=ts.size)
    end = np.cumsum(counts * ts - ones) / n  # D at the end of each run
    start = np.r_[0.0, end[:-1]]
    up = start + (counts - ones) * ts / n
    down = start + ones * (ts - 1) / n
    ends = (float(np.abs(end).max()), float(max(end.max(), 0.0) - min(end.min(), 0.0)))
    every = (float(max(np.abs(up).max(), np.abs(down).max())), float(max(up.max(), 0.0) - min(down.min(), 0.0)))
    return ends, every


def test_probmetrics_ties_read_after_every_row():
    """Predictions on a grid of 0.05: probmetrics reads the cumulative gap after every row, in the order
    ``torch.sort`` gives the tied rows; calframe at the end of each run of ties, where no order of the tied rows
    matters. probmetrics' value lies between calframe's and the largest any order of the tied rows gives."""
    p, y = O.ties()
    got = calframe.ks_calibration(pl.DataFrame({"prob": p, "label": y})).row(0, named=True)
    ends, every = _tie_orders(p, y.astype(float))
    assert (got["ks"], got["kuiper"]) == pytest.approx(ends, rel=1e-12)
    for i, figure in enumerate(("ks", "kuiper")):
        peer = PROBMETRICS[f"ties {figure} float64"]
        assert got[figure] < peer <= every[i] + 1e-15
