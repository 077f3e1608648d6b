"""binning="sweep": Roelofs et al.'s ECE_sweep (docs/spec.md section 1.3), against two references.

- ``caltrain_sweep``: the logic of google-research caltrain's ``em_monotonic_sweep`` and
  ``_calc_ece_postbin``, transcribed (see its comment);
- ``brute_force``: an independent numpy search over bin counts (bins by rank with the rule of
  docs/spec.md, stable sort, bin means by ``numpy.bincount``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import calframe
from calframe import ParameterError
from calframe._kernels import sweep as S
from calframe.binning import make_binning, sweep_bins

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------- references


# Transcribed from google-research caltrain (Apache-2.0), CalibrationMetric._calc_ece_postbin and
# CalibrationMetric.em_monotonic_sweep / _compute_error_monotonic_sweep with ce_type="em_ece_sweep":
# https://github.com/google-research/google-research/blob/master/caltrain/calibration_metrics.py
# (the class's ``norm`` is the argument ``norm`` here; the logic is the reference's, step for step).
def _caltrain_postbin(n_bins, bins, fx, y, norm):
    total, monotonic, last_ym = 0.0, True, -1000
    for i in range(n_bins):
        cur = bins == i
        if any(cur):
            fxm, ym = np.mean(fx[cur]), np.mean(y[cur])
            if ym < last_ym:
                monotonic = False
            last_ym = ym
            total += np.sum(cur) * pow(np.abs(ym - fxm), norm)
    return pow(total / fx.shape[0], 1.0 / norm), monotonic


def caltrain_sweep(fx, y, norm):
    """(ECE_sweep, chosen bin count) as caltrain computes them."""
    sort_ix = np.argsort(fx)
    n = fx.shape[0]
    bins = np.zeros(n, dtype=int)
    prev_bins = np.zeros(n, dtype=int)
    chosen = None
    for n_bins in range(2, n):
        bins[sort_ix] = np.minimum(n_bins - 1, np.floor((np.arange(n) / n) * n_bins)).astype(int)
        if not _caltrain_postbin(n_bins, bins, fx, y, norm)[1]:
            chosen = prev_bins
            break
        prev_bins = np.copy(bins)
    if chosen is None:
        chosen = bins
    k = int(np.max(chosen)) + 1
    return _caltrain_postbin(k, chosen, fx, y, norm)[0], k


def rank_bins(p: np.ndarray, b: int) -> np.ndarray:
    """Bins by rank (stable sort): the row of rank i among n goes to min(b - 1, floor((i / n) * b))."""
    n = p.shape[0]
    ids = np.empty(n, dtype=np.int64)
    ids[np.argsort(p, kind="stable")] = np.minimum(b - 1, np.floor((np.arange(n) / n) * b)).astype(np.int64)
    return ids


def bin_means(p: np.ndarray, y: np.ndarray, ids: np.ndarray, b: int):
    cnt = np.bincount(ids, minlength=b).astype(float)
    keep = cnt > 0
    return (cnt[keep], np.bincount(ids, p, minlength=b)[keep] / cnt[keep],
            np.bincount(ids, y, minlength=b)[keep] / cnt[keep])


def monotone(p: np.ndarray, y: np.ndarray, b: int) -> bool:
    return bool(np.all(np.diff(bin_means(p, y, rank_bins(p, b), b)[2]) >= 0))


def brute_force(p: np.ndarray, y: np.ndarray) -> tuple[dict[str, float], int]:
    """{ece, rmsce, mce} on the sweep's bins and the chosen count: b = 2, 3, ... until the bin accuracies
    first decrease somewhere; the count before is kept."""
    n = p.shape[0]
    chosen = 1
    for b in range(2, n):
        if not monotone(p, y, b):
            break
        chosen = b
    cnt, mp, my = bin_means(p, y, rank_bins(p, chosen), chosen)
    gap = np.abs(mp - my)
    w = cnt / n
    return {"ece": float(w @ gap), "rmsce": float(np.sqrt(w @ gap**2)), "mce": float(gap.max())}, chosen


def frame(p, y, **cols) -> pl.DataFrame:
    return pl.DataFrame({"prob": np.asarray(p, dtype=float), "label": np.asarray(y, dtype=np.int64), **cols})


def sweep(fn, df, **kw):
    """(figure, chosen count) without ``by``: the figure is a float, as for every binning; the count is the rows
    of ``reliability(binning="sweep")``, the chosen bins (docs/spec.md section 1.3)."""
    value = fn(df, binning="sweep", **kw)
    assert type(value) is float
    return value, calframe.reliability(df, binning="sweep", **kw).height


# --------------------------------------------------------------------------- the rule


@pytest.mark.parametrize("n, seed", [(5, 0), (44, 1), (60, 2), (137, 3), (250, 4)])
def test_equals_caltrain_transcription(n, seed):
    """Continuous probabilities (no ties, so caltrain's sort order is the only one): ECE (norm 1) and RMSCE
    (norm 2, caltrain's default) and the chosen count equal caltrain's."""
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 2, n)
    y = (rng.random(n) < p**1.3).astype(np.int64)
    df = frame(p, y)
    for fn, norm in ((calframe.ece, 1), (calframe.rmsce, 2)):
        ref, k = caltrain_sweep(p, y, norm)
        got, got_k = sweep(fn, df)
        assert got_k == k
        assert got == pytest.approx(ref, rel=1e-12, abs=1e-15)


def test_caltrain_float_rank_rule():
    """Rows go to bins by caltrain's float product floor((i / n) * b), which differs from the integer
    i * b // n for some (n, b): e.g. n = 44, b = 22, rank 30 is in bin 14, not 15. Ids and edges for every
    n <= 90 and every b < n."""
    seen_difference = False
    for n in range(1, 91):
        v = np.sort(np.random.default_rng(n).random(n))
        for b in range(1, max(n, 2)):
            ids, edges = S.sweep_assign(v, np.arange(n, dtype=np.int64), np.array([0, n], dtype=np.int64),
                                        np.array([b], dtype=np.int64), np.array([0, b], dtype=np.int64))
            want = np.minimum(b - 1, np.floor((np.arange(n) / n) * b)).astype(np.int64)
            np.testing.assert_array_equal(ids, want)
            first = np.searchsorted(want, np.arange(1, b))  # each bin's first rank
            np.testing.assert_array_equal(edges, np.r_[(v[first - 1] + v[first]) / 2.0, max(1.0, v[-1])])
            seen_difference |= bool((want != np.arange(n) * b // n).any())
    assert seen_difference


@FAST
@given(n=st.integers(1, 70), levels=st.integers(2, 12), seed=st.integers(0, 2**32 - 1))
def test_brute_force_with_ties(n, levels, seed):
    """Probabilities on a coarse grid (many ties, split across bins by row order) and random labels: the
    three figures and the count equal the brute-force search."""
    rng = np.random.default_rng(seed)
    p = rng.integers(0, levels + 1, n) / levels
    y = (rng.random(n) < p).astype(np.int64)
    ref, k = brute_force(p, y)
    df = frame(p, y)
    for fn in (calframe.ece, calframe.rmsce, calframe.mce):
        got, got_k = sweep(fn, df)
        assert got_k == k
        assert got == pytest.approx(ref[fn.__name__], rel=1e-12, abs=1e-15)


def test_first_break_stops_the_sweep():
    """The sweep keeps the count before the first non-monotone one, even where a larger count is monotone
    again (caltrain's rule, not the largest monotone count)."""
    for seed in range(500):
        rng = np.random.default_rng(seed)
        p = rng.random(40)
        y = (rng.random(40) < p).astype(np.int64)
        ref, k = brute_force(p, y)
        if any(monotone(p, y, b) for b in range(k + 2, 40)):
            break
    else:
        pytest.fail("no case with a monotone count past the first break")
    assert not monotone(p, y, k + 1)
    assert sweep(calframe.ece, frame(p, y)) == (pytest.approx(ref["ece"], rel=1e-12), k)


def test_ties_follow_row_order():
    """All probabilities equal: the bins split the rows in row order; with labels 0, 0, 1, 1, 1, 0 the sweep
    stops at 3 bins (means 0, 1, 0.5): 2 bins (1/3, 2/3), and reordering the rows changes the count."""
    df = frame([0.5] * 6, [0, 0, 1, 1, 1, 0])
    ref, k = brute_force(df["prob"].to_numpy(), df["label"].to_numpy())
    assert k == 2
    assert sweep(calframe.ece, df) == (pytest.approx(ref["ece"], rel=1e-12), 2)
    ordered = frame([0.5] * 6, [0, 0, 0, 1, 1, 1])
    assert sweep(calframe.ece, ordered)[1] == 5  # monotone up to n - 1 bins


@pytest.mark.parametrize("p, y, k", [([0.3], [1], 1), ([0.3, 0.8], [1, 0], 1), ([0.2, 0.4, 0.9], [0, 1, 1], 2),
                                     ([0.2, 0.4, 0.9], [1, 1, 0], 1)])
def test_tiny_groups(p, y, k):
    """n <= 2: one bin (no count is tried); n = 3: 2 bins if their accuracies rise, else 1."""
    ref, want_k = brute_force(np.array(p, dtype=float), np.array(y, dtype=float))
    assert want_k == k
    got, got_k = sweep(calframe.ece, frame(p, y))
    assert got_k == k and got == pytest.approx(ref["ece"], rel=1e-12)


def test_separable_labels_sweep_to_n_minus_1():
    """Labels sorted with the probabilities: every count is monotone, the sweep ends at n - 1 bins."""
    p = np.linspace(0.01, 0.99, 30)
    y = (p > 0.5).astype(np.int64)
    got, got_k = sweep(calframe.ece, frame(p, y))
    assert got_k == 29
    assert got == pytest.approx(brute_force(p, y)[0]["ece"], rel=1e-12)


def test_top1_lens():
    """Class probabilities: the sweep bins the top-1 confidence against correctness (caltrain's top_label)."""
    rng = np.random.default_rng(7)
    probs = rng.dirichlet([1.0, 1.0, 1.0], 300)
    label = np.array([rng.choice(3, p=r) for r in probs])
    df = pl.DataFrame({"p0": probs[:, 0], "p1": probs[:, 1], "p2": probs[:, 2], "label": label})
    conf, hit = probs.max(axis=1), (probs.argmax(axis=1) == label).astype(float)
    ref, k = caltrain_sweep(conf, hit, 1)
    assert sweep(calframe.ece, df, prob=["p0", "p1", "p2"], label="label") == (pytest.approx(ref, rel=1e-12), k)


# --------------------------------------------------------------------------- groups, engines, result


def grouped_frame(seed: int = 3) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 5, 900)
    n = g.shape[0]
    p = np.round(rng.random(n), 2)  # ties
    y = (rng.random(n) < np.clip(p + 0.1 * (g - 2) * p, 0, 1)).astype(np.int64)
    return frame(p, y, g=g)


def test_by_equals_per_group_calls_and_brute_force():
    df = grouped_frame()
    for fn in (calframe.ece, calframe.rmsce, calframe.mce):
        out = fn(df, by="g", binning="sweep").sort("g")
        assert out.columns == ["g", "n", fn.__name__, "n_bins"]
        for row in out.iter_rows(named=True):
            part = df.filter(pl.col("g") == row["g"])
            # equal up to the last bits: the finalize's numpy sum over a group's bins groups its terms by the
            # table's width (the largest count of any group), as for equal_mass with groups smaller than bins
            assert sweep(fn, part) == (pytest.approx(row[fn.__name__], rel=1e-14), row["n_bins"])
            ref, k = brute_force(part["prob"].to_numpy(), part["label"].to_numpy())
            assert row["n_bins"] == k
            assert row[fn.__name__] == pytest.approx(ref[fn.__name__], rel=1e-12)


def test_flavors_and_lazy():
    """pandas in, pandas out; a LazyFrame is collected and the result is a LazyFrame; same numbers."""
    df = grouped_frame()
    want = calframe.ece(df, by="g", binning="sweep").sort("g")
    got_pd = calframe.ece(df.to_pandas(), by="g", binning="sweep")
    assert isinstance(got_pd, pd.DataFrame)
    pd.testing.assert_frame_equal(got_pd.sort_values("g").reset_index(drop=True), want.to_pandas())
    lazy = calframe.ece(df.lazy(), by="g", binning="sweep")
    assert isinstance(lazy, pl.LazyFrame)
    assert lazy.collect().sort("g").equals(want)
    one = calframe.ece(df.lazy(), binning="sweep").collect()  # a LazyFrame result is a frame: the count in it
    assert one.columns == ["n", "ece", "n_bins"]
    assert (one["ece"][0], one["n_bins"][0]) == sweep(calframe.ece, df)


def test_a_float_without_by_as_every_binning():
    """Without by or ci a sweep figure is a float, as every figure is (issue 22, 5: a 1x3 frame before); the
    chosen count is in by= and ci= results (n_bins) and is the rows of reliability(binning="sweep"). Each equals
    caltrain's transcription, in every flavor and through calframe.sklearn and its scorer."""
    import calframe.sklearn as cs

    df = grouped_frame().filter(pl.col("g") == 2)
    p, y = df["prob"].to_numpy(), df["label"].to_numpy()
    for fn, norm in ((calframe.ece, 1), (calframe.rmsce, 2)):
        ref, k = caltrain_sweep(p, y, norm)
        for got in (fn(df, binning="sweep"), fn(df.to_pandas(), binning="sweep"),
                    getattr(df.calib, fn.__name__)(binning="sweep"), getattr(cs, fn.__name__)(y, p, binning="sweep")):
            assert type(got) is float and got == pytest.approx(ref, rel=1e-12)
        assert calframe.reliability(df, binning="sweep").height == k
        grouped = fn(df, binning="sweep", by="g")
        assert grouped["n_bins"].to_list() == [k] and grouped[fn.__name__][0] == pytest.approx(ref, rel=1e-12)
        with_ci = fn(df, binning="sweep", ci=0.9, n_boot=5)
        assert with_ci.columns[:2] == ["n", fn.__name__] and with_ci["n_bins"].to_list() == [k]
    ref, _ = caltrain_sweep(p, y, 1)
    assert calframe.ce(df, binning="sweep") == pytest.approx(ref, rel=1e-12)
    model = type("Fixed", (), {"classes_": np.array([0, 1]), "predict_proba": lambda self, X: np.c_[1 - p, p]})()
    assert cs.make_scorer("ece", binning="sweep")(model, None, y) == pytest.approx(-ref, rel=1e-12)


def test_the_sweep_runs_once_per_frame(monkeypatch):
    """The figure and the chosen count share one sweep per scored frame: the call's, and each batch of
    bootstrap draws' (3 draws of a small frame side by side: one batch). It ran twice per frame before;
    the numbers are checked against the brute force above."""
    from calframe.engines import eager

    calls = []
    real = eager.bin_values
    monkeypatch.setattr(eager, "bin_values", lambda *a, **k: calls.append(a[3].scheme) or real(*a, **k))
    df = grouped_frame()
    out = calframe.ece(df, by="g", binning="sweep")
    assert calls == ["sweep"] and out.columns == ["g", "n", "ece", "n_bins"]
    calls.clear()
    calframe.ece(df, by="g", binning="sweep", ci=0.9, n_boot=3, seed=1)
    assert calls == ["sweep"] * 2


def test_reliability_table_shows_the_chosen_bins():
    df = grouped_frame().filter(pl.col("g") == 1)
    p, y = df["prob"].to_numpy(), df["label"].to_numpy()
    _, k = brute_force(p, y)
    table = calframe.reliability(df, binning="sweep")
    cnt, mp, my = bin_means(p, y, rank_bins(p, k), k)
    assert table.height == k
    np.testing.assert_array_equal(table["n"].to_numpy(), cnt)
    np.testing.assert_allclose(table["conf"].to_numpy(), mp, rtol=1e-12)
    np.testing.assert_allclose(table["acc"].to_numpy(), my, rtol=1e-12)
    assert (np.diff(table["acc"].to_numpy()) >= 0).all()


def test_bins_is_not_read():
    df = grouped_frame()
    assert calframe.ece(df, binning="sweep", bins=3) == calframe.ece(df, binning="sweep")


def test_sweep_bins_counts_per_group():
    df = grouped_frame()
    g = df["g"].to_numpy()
    b = sweep_bins(df["prob"].to_numpy(), df["label"].to_numpy().astype(float), g, 5,
                   make_binning("f", "sweep", 15, "left"))
    for grp in range(5):
        sel = g == grp
        assert b.offsets[grp + 1] - b.offsets[grp] == brute_force(df["prob"].to_numpy()[sel],
                                                                  df["label"].to_numpy()[sel])[1]


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("call, param, match", [
    (lambda df: calframe.ece(df.with_columns(w=pl.lit(1.0)), binning="sweep", weights="w"), "binning",
     "weights are not supported with binning='sweep'"),
    (lambda df: calframe.rmsce(df, binning="sweep", estimator="debiased"), "estimator", "plugin estimate"),
    (lambda df: calframe.ce(df, binning="sweep", name="n_bins"), "name", "adds the chosen count"),
    (lambda df: calframe.vece(df, "prob", binning="sweep"), "binning", "chooses the number of confidence bins"),
    (lambda df: calframe.ece(df, binning="sweep", bins=[0.0, 0.5, 1.0]), "bins", "explicit edges go with"),
])
def test_refused(call, param, match):
    with pytest.raises(ParameterError, match=match) as info:
        call(grouped_frame())
    assert info.value.param == param


def test_marginal_lens_refused():
    df = pl.DataFrame({"p0": [0.2, 0.7], "p1": [0.8, 0.3], "label": [1, 0]})
    with pytest.raises(ParameterError, match="one bin count per binned output") as info:
        calframe.ece(df, ["p0", "p1"], "label", binning="sweep", lens="marginal")
    assert info.value.param == "lens"


def test_dask_refuses_naming_its_binnings():
    dd = pytest.importorskip("dask.dataframe")
    ddf = dd.from_pandas(grouped_frame().to_pandas(), npartitions=2)
    with pytest.raises(ParameterError, match="'uniform', 'quantile', 'equal_mass'") as info:
        calframe.ece(ddf, binning="sweep")
    assert info.value.param == "binning"
