"""calframe.mmce against netcal 1.4.0's ``MMCE`` (values stored: netcal pulls in PyTorch; tests/oracles/netcal_mmce.py
produced them and says how), against the O(n^2) pairwise sum of Kumar et al. (2018) written with numpy, and its
invariances: row order, thread count, integer weights as repeated rows."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings, strategies as st

import calframe

sys.path.insert(0, str(Path(__file__).parent / "oracles"))
import netcal_mmce as O  # noqa: E402  (the data of the stored values, seeded; netcal is imported only by its main)

#: what tests/oracles/netcal_mmce.py printed (netcal 1.4.0, torch 2.13.0+cpu, numpy 2.4.6)
NETCAL = {
    'binary top1': 0.003287479680798483,
    'binary class:1': 0.06848264847864682,
    'binary netcal 1-d': 0.2288009495638521,
    'ties top1': 0.05450485260515832,
    'ties class:1': 0.03168449115881182,
    'three-class top1': 0.12076125113268148,
    'weighted class:1': 0.08792780270435645,
    'weighted top1': 0.04062637210765756,
    'cifar10 top1': 0.035314524218855115,
    'adult Female top1': 0.0036299054988074976,
    'adult Female class:1': 0.002231301846167941,
    'adult Male top1': 0.004481285671738182,
    'adult Male class:1': 0.0035682265212709564,
}
TOL = 1e-12


def _binary(p: np.ndarray, y: np.ndarray, **kw) -> pl.DataFrame:
    return pl.DataFrame({"prob": p, "label": y, **kw})


@pytest.mark.parametrize("case", ["binary", "ties"])
@pytest.mark.parametrize("lens", ["top1", "class:1"])
def test_netcal_binary(case, lens):
    p, y = getattr(O, case)()
    assert calframe.mmce(_binary(p, y), lens=lens) == pytest.approx(NETCAL[f"{case} {lens}"], rel=TOL)


def test_netcal_three_classes_top_label():
    P, y = O.three_class()
    assert calframe.mmce(pl.DataFrame({"probs": P, "label": y})) == pytest.approx(NETCAL["three-class top1"], rel=TOL)


@pytest.mark.parametrize("lens", ["top1", "class:1"])
def test_netcal_integer_weights_are_repeated_rows(lens):
    p, y, w = O.weighted()
    got = calframe.mmce(_binary(p, y, w=w), weights="w", lens=lens)
    assert got == pytest.approx(NETCAL[f"weighted {lens}"], rel=TOL)


def test_netcal_cifar10():
    d = np.load(Path(__file__).parent / "data" / "cifar10_vgg16_test_probs.npz")
    df = pl.DataFrame({"probs": d["probs"].astype(np.float64), "label": d["labels"]})
    assert calframe.mmce(df) == pytest.approx(NETCAL["cifar10 top1"], rel=TOL)


@pytest.mark.parametrize("lens", ["top1", "class:1"])
def test_netcal_adult_per_group(lens):
    got = calframe.mmce(calframe.datasets.adult_scored(), by="sex", lens=lens)
    assert got.columns == ["sex", "n", "mmce"]
    for row in got.iter_rows(named=True):
        assert row["mmce"] == pytest.approx(NETCAL[f"adult {row['sex']} {lens}"], rel=TOL)


def test_netcal_one_dimensional_input_is_neither_lens():
    """netcal's 1-d binary input pairs the positive-class probability with the correctness of the predicted class
    (p > 0.5): neither calframe lens, as docs/binned-metrics.md says. Reproduced here by hand to show it."""
    p, y = O.binary()
    assert by_hand(p, (y == (p > 0.5)).astype(float)) == pytest.approx(NETCAL["binary netcal 1-d"], rel=TOL)
    df = _binary(p, y)
    assert all(abs(calframe.mmce(df, lens=lens) - NETCAL["binary netcal 1-d"]) > 0.1 for lens in ("top1", "class:1"))


def test_the_stored_values_are_netcals():
    """Live, when netcal is installed (`make bench` installs it): guards against stale stored values."""
    import importlib.util

    if importlib.util.find_spec("netcal") is None:  # a bench extra (PyTorch), not a test extra: --require-extras
        pytest.skip("netcal is not installed (make bench installs it)")
    for name, value in O.main().items():
        assert value == pytest.approx(NETCAL[name], rel=1e-14), name


def by_hand(conf: np.ndarray, acc: np.ndarray, w: np.ndarray | None = None) -> float:
    """Kumar et al.'s MMCE, the O(n^2) pairs: sqrt(sum_ij w_i w_j r_i r_j exp(-|c_i - c_j| / 0.4)) / sum w."""
    w = np.ones_like(conf) if w is None else w
    r = w * (acc - conf)
    return float(np.sqrt(r @ np.exp(-np.abs(conf[:, None] - conf[None, :]) / 0.4) @ r) / w.sum())


def test_equals_the_pairs_per_group_with_weights():
    rng = np.random.default_rng(5)
    n = 4000
    p = np.where(rng.uniform(size=n) < 0.3, np.round(rng.uniform(size=n), 2), rng.uniform(size=n))  # ties too
    df = pl.DataFrame({"g": rng.integers(0, 4, n), "prob": p, "label": (rng.uniform(size=n) < p**1.3).astype(int),
                       "w": rng.uniform(0.2, 3.0, n)})
    for weights in (None, "w"):
        got = calframe.mmce(df, by="g", weights=weights)
        for row in got.iter_rows(named=True):
            part = df.filter(pl.col("g") == row["g"])
            want = by_hand(part["prob"].to_numpy(), part["label"].to_numpy().astype(float),
                           None if weights is None else part["w"].to_numpy())
            assert row["mmce"] == pytest.approx(want, rel=1e-12)


def test_far_apart_predictions_add_their_squares():
    """By hand: two predictions 1 apart (2.5 kernel widths) weigh their cross term by exp(-2.5)."""
    df = pl.DataFrame({"prob": [0.0, 0.0, 1.0, 1.0], "label": [1, 1, 1, 0]})
    assert calframe.mmce(df) == pytest.approx(np.sqrt(4 + 1 - 2 * 2 * np.exp(-2.5)) / 4, rel=1e-15)
    assert calframe.mmce(pl.DataFrame({"prob": [0.3, 0.7], "label": [0, 1]})) == pytest.approx(
        np.sqrt(0.09 + 0.09 + 2 * 0.3 * -0.3 * np.exp(-1.0)) / 2, rel=1e-15)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.1, 0.3, 0.5, 0.7, 0.9]), st.booleans(), st.integers(1, 3)),
                min_size=1, max_size=40), st.randoms(use_true_random=False))
def test_row_order_does_not_change_a_bit(rows, rnd):
    df = pl.DataFrame({"prob": [r[0] for r in rows], "label": [int(r[1]) for r in rows],
                       "w": [float(r[2]) for r in rows]})
    got = calframe.mmce(df, weights="w")
    assert calframe.mmce(df[rnd.sample(range(df.height), df.height)], weights="w") == got
    assert got >= 0.0


def test_same_bits_for_one_and_two_threads():
    import numba

    df = calframe.datasets.grouped_miscalibration(n=30_000, seed=2)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = calframe.mmce(df, by="region")
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = calframe.mmce(df, by="region")
    finally:
        numba.set_num_threads(before)
    assert one.equals(two)


def test_a_calibrated_model_scores_near_zero_and_a_shifted_one_does_not():
    rng = np.random.default_rng(9)
    p = rng.uniform(size=100_000)
    y = (rng.uniform(size=p.size) < p).astype(np.int8)
    assert calframe.mmce(_binary(p, y)) < 0.005
    assert calframe.mmce(_binary(np.clip(p + 0.1, 0, 1), y)) > 0.05
