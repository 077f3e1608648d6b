"""Weights are frequency weights in the statistics too (docs/spec.md §8 "Weights"): a row of integer weight k
behaves like k repeated rows in the bootstrap from moments (``ci=``), in ``calibration_test``'s null noise and in
``disparity``'s ``min_n``.

The references are the frame with each row repeated ``w`` times (Polars' ``repeat_by``), the row bootstrap of
those repeated rows written here in numpy, and the exact law of a three-row resample enumerated by hand, not
calframe's own weighted code.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

import calframe
from calframe import moments as M


def repeated(df: pl.DataFrame, w: str = "w") -> pl.DataFrame:
    """``df`` with each row repeated its weight times (weight 0: gone), without the weight column."""
    return df.select(pl.exclude(w).repeat_by(pl.col(w)).explode()).drop_nulls()


def framed(n: int, seed: int, groups: int = 3, top: int = 4, a: float = 1.3) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    return pl.DataFrame({"prob": p, "label": (rng.uniform(size=n) < p ** a).astype(np.int8),
                         "g": rng.integers(0, groups, n), "w": rng.integers(0, top + 1, n)})


rows = st.integers(min_value=1, max_value=60)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=rows, seed=st.integers(0, 2**16), bins=st.sampled_from([1, 3, 10]))
def test_the_moment_state_of_integer_weights_is_that_of_the_repeated_rows(n, seed, bins):
    """Per (group, bin, split) cell: the frequency (sum of weights) is the repeated frame's row count, and the
    mean and spread of the values, each row counted its weight, are the repeated rows' (numpy on the repeated
    values: the reference)."""
    df = framed(n, seed).with_columns(w=pl.col("w") + (pl.int_range(pl.len()) == 0))  # a positive sum
    p, y, g, w = (df[c].to_numpy() for c in ("prob", "label", "g", "w"))
    b = np.minimum((p * bins).astype(np.int64), bins - 1)
    m = M.moments(p, y, b, g, 3, bins, w.astype(np.float64))
    rp, ry, rg, rb = (np.repeat(x, w) for x in (p, y, g, b))
    for c in range(m.n.size):
        sel = (rg == m.group[c]) & (rb == m.bin[c]) & (ry == m.split[c])
        assert m.freq[c] == sel.sum()
        if sel.any():
            np.testing.assert_allclose(m.mean[c], rp[sel].mean(), rtol=1e-12)
            np.testing.assert_allclose(m.sd[c], rp[sel].std(), atol=1e-7)


def test_the_engines_hold_the_same_moment_state():
    """A LazyFrame's and DuckDB's moments pass (exact fixed-point sums) give the eager state of the weighted
    frame; with integer weights its frequencies are the repeated frame's row counts."""
    import duckdb

    from calframe import request as R
    from calframe.engines import moment_sums

    df = framed(3000, 7)
    req = R.ce("ece", "ece", "prob", "label", by="g", weights="w", ci=0.9, n_boot=10, lens="class:1")
    lazy = moment_sums(req, df.lazy())
    duck = moment_sums(req, duckdb.from_arrow(df.to_arrow()))
    rep = moment_sums(R.ce("ece", "ece", "prob", "label", by="g", ci=0.9, n_boot=10, lens="class:1"),
                      repeated(df).lazy())
    for got in (lazy, duck):
        m, scale = got[4], got[3]
        held = m.freq > 0  # a cell of weight-0 rows only is no cell of the repeated frame
        freq = m.freq * np.broadcast_to(np.asarray(scale, dtype=np.float64), (m.start.size - 1,))[m.group]
        np.testing.assert_array_equal(freq[held], rep[4].n)
        np.testing.assert_allclose(m.mean[held], rep[4].mean, rtol=1e-13)
        np.testing.assert_allclose(m.sd[held], rep[4].sd, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(lazy[4].sd, duck[4].sd)  # exact sums: the same bits


def test_small_weighted_cells_are_drawn_exactly_as_the_repeated_rows():
    """Three rows of weights 2, 1 and 1 are the four rows (0.25, 0), (0.25, 0), (0.25, 1), (0.75, 1): 256 equally
    likely resamples. The weighted frame's drawn ECEs follow that law (chi-square)."""
    df = pl.DataFrame({"prob": [0.25, 0.25, 0.75], "label": [0, 1, 1], "w": [2, 1, 1]})
    p, y = np.array([0.25, 0.25, 0.25, 0.75]), np.array([0.0, 0.0, 1.0, 1.0])
    law: dict[float, float] = {}
    for idx in np.ndindex(4, 4, 4, 4):
        i = np.array(idx)
        b = (p[i] >= 0.5).astype(int)
        v = round(float(np.abs(np.bincount(b, p[i], 2) - np.bincount(b, y[i], 2)).sum() / 4), 12)
        law[v] = law.get(v, 0.0) + 1 / 256
    r = calframe.ece(df, weights="w", lens="class:1", bins=2, ci=0.9, n_boot=5000, ci_method="percentile",
                     bootstrap="moments", seed=3)
    assert r["n"][0] == 3  # the column n counts rows
    from calframe._columns import resolve
    from calframe.families.plan import PLANNING

    token = PLANNING.set(True)
    try:
        plan = calframe.ece(df, weights="w", lens="class:1", bins=2, ci=0.9, n_boot=5000)
    finally:
        PLANNING.reset(token)
    scored = resolve(df, func="ece", prob="prob", label="label", weights="w")
    draws = np.round(M.draws(M.of_rows(scored), plan.figures, 5000, 3, [()], scored.weight_scale)["ece"][:, 0], 12)
    values = sorted(law)
    assert set(np.unique(draws)) <= set(values)
    observed = np.array([(draws == v).sum() for v in values])
    assert stats.chisquare(observed, np.array([law[v] for v in values]) * draws.size).pvalue > 1e-3


@pytest.mark.parametrize("n, bins", [(3000, 10), (200, 10), (3000, 1)])
def test_weighted_intervals_are_the_repeated_frames_in_distribution(n, bins):
    """Quantiles of 2,000 draws of the weighted frame against the numpy row bootstrap of the repeated frame
    (within 0.25 draw sd: a quantile's Monte Carlo error is under 0.06 sd)."""
    df = framed(n, 2, groups=1)
    rep = repeated(df)
    p, y = rep["prob"].to_numpy(), rep["label"].to_numpy().astype(float)
    rng = np.random.default_rng(11)
    hand = np.empty(2000)
    for r in range(2000):
        i = rng.integers(0, p.size, p.size)
        b = np.minimum((p[i] * bins).astype(np.int64), bins - 1)
        hand[r] = np.abs(np.bincount(b, p[i], bins) - np.bincount(b, y[i], bins)).sum() / p.size
    got = []
    for level in (0.9, 0.5, 1e-9):
        r = calframe.ece(df, weights="w", lens="class:1", bins=bins, ci=level, n_boot=2000, seed=5,
                         ci_method="percentile")
        got += [r["ece_lo"][0], r["ece_hi"][0]]
    q05, q95, q25, q75, mid, _ = got
    np.testing.assert_allclose([q05, q25, mid, q75, q95], np.quantile(hand, [0.05, 0.25, 0.5, 0.75, 0.95]),
                               atol=0.25 * hand.std())


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16), n=st.integers(20, 400), top=st.integers(1, 6))
def test_verdicts_of_integer_weights_are_the_repeated_frames(seed, n, top):
    """calibration_test's null noise counts a bin's rows as its sum of weights: the same verdicts and p-values
    as on the repeated frame (the same seeds per group, the same bins and rows)."""
    df = framed(n, seed, top=top).with_columns(w=pl.col("w") + 1)
    a = calframe.calibration_test(df, by="g", weights="w", n_sim=200).sort("g")
    b = calframe.calibration_test(repeated(df), by="g", n_sim=200).sort("g")
    assert a["verdict"].to_list() == b["verdict"].to_list()
    for c in ("p_not_calibrated", "p_calibrated", "noise_ece"):
        np.testing.assert_allclose(a[c], b[c], rtol=1e-9)
    assert a["small"].to_list() == b["small"].to_list()


def test_a_single_heavy_row_is_not_called_calibrated_and_weight_counts_for_small():
    """One row of weight 1 is one row (never "calibrated", as unweighted); 30 rows of weight 40 are 1,200 rows."""
    one = calframe.calibration_test(pl.DataFrame({"prob": [0.01], "label": [0], "w": [1.0]}), weights="w")
    assert one["verdict"][0] != "calibrated"
    rng = np.random.default_rng(0)
    p = rng.uniform(size=30)
    df = pl.DataFrame({"prob": p, "label": (rng.uniform(size=30) < p).astype(int), "w": np.full(30, 40)})
    heavy = calframe.calibration_test(df, weights="w", bins=5)
    light = calframe.calibration_test(df.with_columns(w=pl.lit(1)), weights="w", bins=5)
    assert heavy["noise_ece"][0] < light["noise_ece"][0] / 3  # the noise of 1,200 rows, not of 30


@pytest.mark.parametrize("ci", [None, 0.9])
def test_disparity_min_n_compares_the_sum_of_weights(ci):
    """30 rows of weight 2 are 60 rows: ranked at min_n=50 as the repeated frame is (the issue's example)."""
    rng = np.random.default_rng(4)
    n = 400
    g = np.where(np.arange(n) < 30, "small", np.where(np.arange(n) < 215, "a", "b"))
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < np.where(g == "b", p ** 2, p)).astype(int)
    df = pl.DataFrame({"prob": p, "label": y, "g": g, "w": np.where(g == "small", 2, 1)})
    kw = dict(by="g", min_n=50, ci=ci, n_boot=200)
    a = calframe.disparity(df, "ece", weights="w", **kw).row(0, named=True)
    b = calframe.disparity(repeated(df), "ece", **kw).row(0, named=True)
    assert a["below_min_n"] == b["below_min_n"] == []
    assert a["n_ranked"] == b["n_ranked"] == 3
    if ci is None:  # with ci the worst is the highest lower bound: "small" and "b" are 0.005 apart, a coin flip of
        # the draws (the two frames draw different random numbers: 18 of 20 seeds agree)
        assert (a["worst_group"], a["best_group"]) == (b["worst_group"], b["best_group"])
    c = calframe.disparity(df.with_columns(w=pl.lit(1)), "ece", weights="w", **kw).row(0, named=True)
    assert c["below_min_n"] == ["g=small"]


def test_non_integer_weights_are_frequencies_too():
    """Weights of one half on every row of a frame twice repeated are the frame itself: the intervals' widths
    agree (within Monte Carlo error of 400 draws); and the whole number of rows drawn has the weights' sum as
    its mean."""
    df = framed(2000, 9, groups=1).with_columns(w=pl.lit(1))
    half = pl.concat([df, df]).with_columns(w=pl.lit(0.5))
    kw = dict(lens="class:1", ci=0.9, n_boot=400, seed=2)
    a = calframe.ece(df, **kw)
    b = calframe.ece(half, weights="w", **kw)
    width = lambda r: r["ece_hi"][0] - r["ece_lo"][0]  # noqa: E731
    assert abs(width(a) / width(b) - 1) < 0.15, (width(a), width(b))
    # the whole number of rows drawn per draw: floor or ceil of the weights' sum, with that sum as its mean (every
    # cell small: the drawn sums of weight are the drawn rows, in the caller's units)
    m = M.moments(np.array([0.2, 0.7, 0.4]), np.array([0, 1, 1]), np.array([0, 1, 1]), None, 1, 2,
                  np.array([4.5, 2.8, 3.0]))
    table = M.DK.draw(np.array([7], dtype=np.uint64), m.start, m.n, m.freq, m.mean, m.sd, m.split, m.bin * 2 + 1,
                      m.small_rows, m.small_start, np.ones(1), True, 20000, 2, (0.0, 1.0), range(1), np.zeros((0, 3)))
    t = table[:, 0, :, 0].sum(axis=1)
    assert set(np.unique(t)) == {10.0, 11.0} and abs(t.mean() - 10.3) < 0.02
