"""The bootstrap from moments (calframe.moments): its draws follow the row bootstrap's law, exactly where every
cell is small, and its intervals cover the population ECE (docs/statistics.md, "The bootstrap from moments").

The references are the row bootstrap written here in numpy (the rows of a group drawn again with replacement)
and population figures in closed form or by quadrature (scipy), not calframe's own code.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats

import calframe
from calframe import ParameterError

from test_intervals import PAGE  # benchmarks/statistics_page.py: the designs of docs/statistics.md


def numpy_ece(p: np.ndarray, y: np.ndarray, bins: int, w: np.ndarray | None = None) -> float:
    """The plug-in ECE on uniform left-closed bins (class 1), by hand."""
    w = np.ones_like(p) if w is None else w
    b = np.minimum((p * bins).astype(np.int64), bins - 1)
    return float(np.abs(np.bincount(b, w * p, bins) - np.bincount(b, w * y, bins)).sum() / w.sum())


def row_bootstrap(p, y, bins, n_boot, seed, w=None) -> np.ndarray:
    """The ECE of n_boot resamples of the rows (with replacement), by hand."""
    rng = np.random.default_rng(seed)
    out = np.empty(n_boot)
    for r in range(n_boot):
        idx = rng.integers(0, p.size, p.size)
        out[r] = numpy_ece(p[idx], y[idx], bins, None if w is None else w[idx])
    return out


def frame(n: int, seed: int, a: float = 1.3, weights: bool = False) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    cols = {"prob": p, "label": (rng.uniform(size=n) < p ** a).astype(np.int8)}
    if weights:
        cols["w"] = rng.integers(0, 5, size=n)  # frequency weights (0 included: an absent row)
    return pl.DataFrame(cols)


def quantiles(x: np.ndarray) -> np.ndarray:
    return np.quantile(x, [0.05, 0.25, 0.5, 0.75, 0.95])


def drawn_quantiles(df: pl.DataFrame, bins: int, n_boot: int, **kw) -> np.ndarray:
    """The 5/25/50/75/95% quantiles of the moment bootstrap's ECE draws, read from percentile intervals."""
    out = []
    for level in (0.9, 0.5):
        r = calframe.ece(df, lens="class:1", bins=bins, ci=level, n_boot=n_boot, ci_method="percentile",
                         bootstrap="moments", seed=5, **kw)
        out.append((r["ece_lo"][0], r["ece_hi"][0]))
    mid = calframe.ece(df, lens="class:1", bins=bins, ci=1e-9, n_boot=n_boot, ci_method="percentile",
                       bootstrap="moments", seed=5, **kw)["ece_lo"][0]
    (q05, q95), (q25, q75) = out
    return np.array([q05, q25, mid, q75, q95])


@pytest.mark.parametrize("n, bins, weights", [(4000, 10, False), (2000, 10, True), (4000, 1, False),
                                              (2000, 1, True), (120, 10, False), (120, 10, True)])
def test_the_draws_follow_the_row_bootstrap(n, bins, weights):
    """Large cells (normal sums given exact counts; one bin: the confidence's spread matters as much as the
    labels') and small ones (exact resampling): the quantiles of the
    draws agree with the row bootstrap's within Monte Carlo error (2000 draws each: a quantile's standard error
    is under 0.06 draw sd; the tolerance is 0.25 sd). Weights are frequency weights: the reference is the row
    bootstrap of the frame with each row repeated w times (docs/spec.md §8 "Weights")."""
    df = frame(n, 1, weights=weights)
    p, y = df["prob"].to_numpy(), df["label"].to_numpy().astype(float)
    if weights:
        reps = df["w"].to_numpy()
        p, y = np.repeat(p, reps), np.repeat(y, reps)
    hand = row_bootstrap(p, y, bins, 2000, 11)
    got = drawn_quantiles(df, bins, 2000, weights="w" if weights else None)
    np.testing.assert_allclose(got, quantiles(hand), atol=0.25 * hand.std())


def _moment_draws(df: pl.DataFrame, n_boot: int, **kw) -> np.ndarray:
    """The moment bootstrap's ECE draws of a frame without groups (calframe.moments.draws on the call's plan)."""
    from calframe import moments
    from calframe._columns import resolve
    from calframe.families.plan import PLANNING

    token = PLANNING.set(True)
    try:
        plan = calframe.ece(df, lens="class:1", ci=0.9, n_boot=n_boot, **kw)
    finally:
        PLANNING.reset(token)
    scored = resolve(df, func="ece", prob="prob", label="label")
    return moments.draws(moments.of_rows(scored), plan.figures, n_boot, 3, [()])["ece"][:, 0]


def test_small_cells_are_drawn_exactly():
    """Every cell under calframe.moments.SMALL rows: the draws follow the row bootstrap's law exactly. Three rows
    have 27 equally likely resamples; the drawn ECEs' frequencies match that law (chi-square)."""
    df = pl.DataFrame({"prob": [0.25, 0.25, 0.75], "label": [0, 1, 1]})
    p, y = df["prob"].to_numpy(), df["label"].to_numpy().astype(float)
    law: dict[float, float] = {}
    for i in range(3):
        for j in range(3):
            for k in range(3):
                idx = np.array([i, j, k])
                v = round(numpy_ece(p[idx], y[idx], 2), 12)
                law[v] = law.get(v, 0.0) + 1 / 27
    draws = np.round(_moment_draws(df, 5000, bins=2), 12)
    values = sorted(law)
    assert set(np.unique(draws)) <= set(values)
    observed = np.array([(draws == v).sum() for v in values])
    expected = np.array([law[v] for v in values]) * draws.size
    assert stats.chisquare(observed, expected).pvalue > 1e-3, (observed, expected)


def test_same_bits_every_run_and_row_order_and_independent_of_other_groups():
    df = frame(3000, 4).with_columns(g=pl.Series(np.arange(3000) % 3))
    a = calframe.ece(df, by="g", ci=0.9, n_boot=200)
    b = calframe.ece(df.reverse(), by="g", ci=0.9, n_boot=200)
    assert a.equals(calframe.ece(df, by="g", ci=0.9, n_boot=200))
    np.testing.assert_allclose(a["ece_lo"], b["ece_lo"], rtol=1e-12)
    one = calframe.ece(df.filter(pl.col("g") != 1), by="g", ci=0.9, n_boot=200)
    assert one.filter(pl.col("g") == 2).equals(a.filter(pl.col("g") == 2))  # group 1 gone: group 2's draws kept
    other = calframe.ece(df, by="g", ci=0.9, n_boot=200, seed=1)
    assert not other["ece_lo"].equals(a["ece_lo"])


def test_auto_falls_back_to_the_rows_and_moments_says_why():
    df = pl.DataFrame({"p0": [0.2, 0.5, 0.3] * 20, "p1": [0.5, 0.2, 0.3] * 20, "p2": [0.3, 0.3, 0.4] * 20,
                       "label": [0, 1, 2] * 20})
    kw = dict(prob=["p0", "p1", "p2"], label="label", lens="marginal", ci=0.9, n_boot=20)
    assert calframe.ece(df, **kw).columns[-1] == "ci_method"  # auto: the rows
    with pytest.raises(ParameterError, match="bootstrap='moments'.*marginal lens.*bootstrap='rows'"):
        calframe.ece(df, bootstrap="moments", **kw)
    with pytest.raises(ParameterError, match="The 'bootstrap' parameter of ece"):
        calframe.ece(df, ci=0.9, bootstrap="poisson")


def test_summary_and_disparity_draw_from_the_moments_as_each_figure_alone():
    df = frame(2000, 6).with_columns(g=pl.Series(np.arange(2000) % 4))
    s = calframe.summary(df, by="g", ci=0.9, n_boot=100)
    for fig in ("ece", "brier", "accuracy"):
        alone = getattr(calframe, fig)(df, by="g", ci=0.9, n_boot=100)
        np.testing.assert_array_equal(s[f"{fig}_lo"], alone[f"{fig}_lo"])
    d = calframe.disparity(df, "ece", by="g", n_boot=100, ci=0.9).row(0, named=True)
    e = calframe.ece(df, by="g", ci=0.9, n_boot=100)
    worst = e.filter(pl.format("g={}", pl.col("g")) == d["worst_group"])
    assert (d["worst_lo"], d["worst_hi"]) == (worst["ece_lo"][0], worst["ece_hi"][0])


# --------------------------------------------------------------------------- coverage, by simulation


@pytest.mark.parametrize("n", [500, 5000])
def test_coverage_on_skewed_scores_is_not_below_90_percent(n):
    """Beta(2, 5) scores (most mass below 0.3: sparse upper bins), a miscalibrated model: 40 seeds per cell."""
    seeds, a, bins = 40, 0.8, 15
    pop = PAGE.beta_population_ece(a, bins)
    r = calframe.ece(PAGE.skewed(a, n, seeds, 2024), lens="class:1", bins=bins, by="seed", ci=0.95, n_boot=200, seed=1)
    covered = int(((r["ece_lo"] <= pop) & (pop <= r["ece_hi"])).sum())
    assert stats.binom.cdf(covered, seeds, 0.90) > 0.01, (n, covered, pop)


def test_coverage_of_the_top_label_ece_on_three_classes():
    """Three classes, softmax of tempered logits (temperature 0.6: overconfident); the population top-label ECE
    is computed on 1e6 rows drawn from the same model (its Monte Carlo error, about 1e-3, is a tenth of the
    intervals' half-width at 2,000 rows)."""
    pop = PAGE.tempered_population(rows=1_000_000)
    seeds = 40
    df = PAGE.tempered_frame(2000, seeds, 2024)
    r = calframe.ece(df, prob=["p0", "p1", "p2"], label="label", lens="top1", by="seed", ci=0.95, n_boot=200)
    covered = int(((r["ece_lo"] <= pop) & (pop <= r["ece_hi"])).sum())
    assert stats.binom.cdf(covered, seeds, 0.90) > 0.01, (covered, pop)


@pytest.mark.parametrize("closed", ["left", "right"])
def test_the_cells_uniform_bins_are_numpys_digitize(closed):
    """The moments' bin of a value on uniform edges (floor(x B), then one comparison with each neighbouring edge)
    is numpy.searchsorted's on the inner edges, on and next to every edge, for 1 to 80 bins."""
    from calframe.binning import uniform_edges
    from calframe.engines.eager import _uniform_ids

    rng = np.random.default_rng(0)
    for b in range(1, 81):
        e = uniform_edges(b, closed)
        x = np.clip(np.concatenate([rng.uniform(size=500), e, np.nextafter(e, 2), np.nextafter(e, -1)]), 0, 1)
        side = "right" if closed == "left" else "left"
        np.testing.assert_array_equal(_uniform_ids(x, e, closed), np.searchsorted(e[1:-1], x, side=side))
