"""Frequency weights with quantile / equal-mass bins (spec §3, §8 "Weights"): a row of weight k counts as k rows.

The edges of a weighted frame are those of the frame with each row repeated w_i times: for integer weights bit
for bit, checked against pandas.qcut (quantile) and uncertainty-calibration's get_equal_bins (equal_mass) run on
the repeated values, code we did not write. The figures on those bins then equal the repeated frame's. The
LazyFrame engine (streamed) and the narwhals engine (DuckDB, pyarrow, Ibis; Spark in tests/test_spark.py) find
the same edges by histogram passes where the rows are, and Dask on its partitions (tests/test_dask_weighted.py).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pandas as pd
import polars as pl
import pytest
from hypothesis import given, settings, strategies as st

import calframe
from calframe.binning import Binning, bin_values, edge_table, weighted_take
from calframe.recalibrate.binned import weighted_equal_mass_edges

SETTINGS = settings(max_examples=60, deadline=None)


@st.composite
def weighted_frames(draw, max_rows: int = 40, n_groups: int = 3):
    """(values rounded to force ties, integer weights 0..4 with at least one positive per group, groups)."""
    n = draw(st.integers(1, max_rows))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    v = np.round(rng.random(n), draw(st.integers(1, 3)))
    w = rng.integers(0, 5, n).astype(np.float64)
    g = rng.integers(0, n_groups, n).astype(np.int32)
    for k in range(n_groups):  # every group present, with some positive weight
        if not (g == k).any():
            g = np.append(g, np.int32(k))
            v, w = np.append(v, rng.random()), np.append(w, 0.0)
        sel = np.flatnonzero(g == k)
        if not (w[sel] > 0).any():
            w[sel[0]] = 1.0
    return v, w, g


def _edges(bins_) -> list[np.ndarray]:
    return [bins_.edges[bins_.offsets[k]: bins_.offsets[k + 1]] for k in range(len(bins_.offsets) - 1)]


@SETTINGS
@given(weighted_frames(), st.sampled_from([("quantile", 4), ("quantile", 10), ("equal_mass", 3), ("equal_mass", 15)]))
def test_integer_weights_give_the_repeated_frames_edges(frame, scheme):
    v, w, g = frame
    binning = Binning(scheme[0], scheme[1])
    rep_v, rep_g = np.repeat(v, w.astype(np.int64)), np.repeat(g, w.astype(np.int64))
    got = bin_values(v, g, 3, binning, weights=w)
    want = bin_values(rep_v, rep_g, 3, binning)
    assert got.n_bins == want.n_bins
    for k, (a, b) in enumerate(zip(_edges(got), _edges(want))):
        np.testing.assert_array_equal(a, b)  # bit for bit
        x = rep_v[rep_g == k]
        if scheme[0] == "quantile":
            if np.unique(x).size > 1:  # pandas.qcut on the repeated values
                np.testing.assert_array_equal(a, pd.qcut(x, scheme[1], retbins=True, duplicates="drop")[1])
        else:
            kumar = pytest.importorskip("calibration.utils")
            np.testing.assert_array_equal(a, kumar.get_equal_bins(list(x), num_bins=scheme[1]))
    # each row of positive weight is in the bin its repeats are in
    pos = w > 0
    np.testing.assert_array_equal(np.repeat(got.ids, w.astype(np.int64)), want.ids)
    assert (got.ids[pos] >= 0).all() and (got.ids < got.n_bins).all()


@SETTINGS
@given(weighted_frames(n_groups=1), st.integers(1, 12), st.floats(0.05, 20.0))
def test_fractional_weights_follow_the_documented_positions(frame, bins, scale):
    """Non-integer weights: position p reads the row whose stretch [C_{i-1}, C_i) of the running sum holds p,
    checked against a direct reading of that formula (spec §3), C_i the exact sum correctly rounded (Python's
    fractions, then float())."""
    v, w, _ = frame
    w = w * scale
    W, take = weighted_take(v, w, None, 1)
    keep = w > 0
    order = np.argsort(v[keep], kind="stable")
    sv = v[keep][order]
    cw = np.array([float(c) for c in itertools.accumulate(Fraction(float(x)) for x in w[keep][order])])
    assert W[0] == cw[-1]
    q = np.linspace(0, 1, bins + 1)
    np.putmask(q, bins * q != np.arange(bins + 1), np.nextafter(q, 1))
    table = edge_table(W, Binning("quantile", bins), take)[0]

    def at(p: float) -> float:
        i = 0
        while i < len(cw) - 1 and cw[i] <= p:
            i += 1
        return sv[i]

    last = cw[-1] - 1.0
    for j, level in enumerate(q):
        virtual = last * level
        prev = np.floor(virtual)
        nxt = min(prev + 1, last)
        gamma = virtual - prev
        a, b = at(prev), at(nxt)
        want = b - (b - a) * (1 - gamma) if gamma >= 0.5 else a + (b - a) * gamma
        assert table[j] == want
    # every row lands in a bin (rows above the top edge: the last one)
    res = bin_values(v, None, 1, Binning("quantile", bins), weights=w)
    assert (res.ids >= 0).all() and (res.ids < res.n_bins).all()


@SETTINGS
@given(weighted_frames(), st.sampled_from([("quantile", 4), ("quantile", 10), ("equal_mass", 3), ("equal_mass", 15)]),
       st.integers(0, 2**32 - 1))
def test_decimal_weights_give_the_same_edges_in_any_row_order(frame, scheme, seed):
    """Weights such as 0.1 ... 0.9, which float64 holds inexactly: the running sums are exact sums correctly
    rounded, so W (10 rows of 0.1 weigh 1.0, not numpy.cumsum's 0.9999999999999999) and every edge are the same
    bits whatever the order of the rows."""
    v, w, g = frame
    w = np.where(w > 0, np.round(w * 0.23 + 0.1, 1), 0.0)
    perm = np.random.default_rng(seed).permutation(v.shape[0])
    a = bin_values(v, g, 3, Binning(*scheme), weights=w)
    b = bin_values(v[perm], g[perm], 3, Binning(*scheme), weights=w[perm])
    for x, y in zip(_edges(a), _edges(b)):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(a.ids[perm], b.ids)
    assert weighted_take(np.zeros(10), np.full(10, 0.1), None, 1)[0][0] == 1.0


def test_recalibration_edges_are_the_metrics():
    """Histogram binning's weighted edges come from the same rule: the metrics' equal-mass inner edges."""
    rng = np.random.default_rng(3)
    v, w = rng.random(50), rng.integers(0, 4, 50).astype(float)
    got = weighted_equal_mass_edges(v, 7, w)
    res = bin_values(v, None, 1, Binning("equal_mass", 7), weights=w)
    np.testing.assert_array_equal(got[:-1], res.edges[:-1])
    assert got[-1] == 1.0 and got.shape == res.edges.shape


FIGURES = {
    "ece": lambda f, **k: calframe.ece(f, **k),
    "mce": lambda f, **k: calframe.mce(f, **k),
    "rmsce": lambda f, **k: calframe.rmsce(f, **k),
    "ce_debiased": lambda f, **k: calframe.ce(f, p=2, estimator="debiased", **k).rename({"ce": "ce_debiased"}),
}


def _frame(frame) -> pl.DataFrame:
    v, w, g = frame
    rng = np.random.default_rng(int(v.shape[0]))
    return pl.DataFrame({"prob": v, "label": (rng.random(v.shape[0]) < v).astype(np.int64), "w": w,
                         "g": g.astype(np.int64), "x": np.round(rng.normal(size=v.shape[0]), 1)})


def _repeated(df: pl.DataFrame) -> pl.DataFrame:
    return df.select(pl.all().repeat_by(pl.col("w").cast(pl.Int64)).explode()).drop("w")


@settings(max_examples=25, deadline=None)
@given(weighted_frames(max_rows=60), st.sampled_from(["quantile", "equal_mass"]), st.integers(2, 8))
def test_figures_equal_the_repeated_frames(frame, binning, bins):
    df = _frame(frame)
    rep = _repeated(df)
    for name, fig in FIGURES.items():
        kw = {} if name == "ce_debiased" and binning == "equal_mass" else {"binning": binning}
        got = fig(df, weights="w", by="g", bins=bins, **kw).sort("g")[name].to_numpy()
        want = fig(rep, by="g", bins=bins, **kw).sort("g")[name].to_numpy()
        if name == "ce_debiased":  # a square root: a rounding residue of 3.5e-17 under it is 5.9e-9 (seen once)
            got, want = got**2, want**2
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12, err_msg=name)
    got = calframe.reliability(df, weights="w", binning=binning, bins=bins, lens="class:1")
    want = calframe.reliability(rep, binning=binning, bins=bins, lens="class:1")
    for c in ("bin", "lower", "upper"):  # the same bins, bit for bit
        assert got[c].to_list() == want[c].to_list()
    for c in ("weight", "conf", "acc", "gap"):
        np.testing.assert_allclose(got[c].to_numpy(), want[c].to_numpy(), rtol=0, atol=1e-12, err_msg=c)
    if np.unique(rep["x"].to_numpy()).size > 1:
        got = calframe.vece(df, "x", weights="w", binning=binning, bins=bins)
        want = calframe.vece(rep, "x", binning=binning, bins=bins)
        assert abs(got - want) <= 1e-12


def test_summary_and_pandas():
    rng = np.random.default_rng(5)
    df = _frame((np.round(rng.random(300), 2), rng.integers(0, 4, 300).astype(float), rng.integers(0, 2, 300)))
    rep = _repeated(df)
    got, want = calframe.summary(df, weights="w", by="g").sort("g"), calframe.summary(rep, by="g").sort("g")
    for c in ("ece", "mce", "rmsce", "brier"):
        np.testing.assert_allclose(got[c].to_numpy(), want[c].to_numpy(), rtol=0, atol=1e-12, err_msg=c)
    # summary's debiased figure keeps uniform bins with weights (every engine computes it from sums)
    deb = calframe.ce(rep, p=2, estimator="debiased", binning="uniform", by="g").sort("g")["ce"].to_numpy()
    np.testing.assert_allclose(got["ce_debiased"].to_numpy(), deb, rtol=0, atol=1e-12)
    a = calframe.ece(df.to_pandas(), weights="w", binning="quantile", by="g").sort_values("g")["ece"].to_numpy()
    b = calframe.ece(df, weights="w", binning="quantile", by="g").sort("g")["ece"].to_numpy()
    np.testing.assert_array_equal(a, b)


def _df() -> pl.DataFrame:
    rng = np.random.default_rng(8)
    return _frame((np.round(rng.random(200), 2), rng.integers(0, 4, 200).astype(float), rng.integers(0, 2, 200)))


class _Rows:
    """The largest frame brought into Python (a LazyFrame's or a narwhals frame's collect, a pyarrow Table made a
    Polars frame) while a call runs, with the exact order statistics' budget small, so that the histogram passes
    refine as they do at scale (tests/test_surfaces.py's RowSpy, in short)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, budget: int) -> None:
        import narwhals as nw

        from calframe.engines.streaming import streamed as lazy

        monkeypatch.setattr(lazy, "COLLECT_BUDGET", budget)
        self.most = 0
        for owner, name in ((pl.LazyFrame, "collect"), (nw.LazyFrame, "collect"), (pl, "from_arrow")):
            self._wrap(monkeypatch, owner, name)

    def _wrap(self, monkeypatch, owner, name):
        original, spy = getattr(owner, name), self

        def wrapper(*args, **kwargs):
            out = original(*args, **kwargs)
            spy.most = max(spy.most, getattr(out, "height", 0) or 0)
            return out

        monkeypatch.setattr(owner, name, wrapper)


ENGINES = ["lazy", "duckdb", "pyarrow", "ibis"]


def _engine_result(kind, fig, df, **kw):
    from _engine_checks import native_frame, result_to_polars

    out = fig(native_frame(kind, df), **kw)
    return pl.DataFrame({"v": [out]}) if isinstance(out, float) else result_to_polars(out)


def _big(seed: int = 8, n: int = 4000) -> pl.DataFrame:
    """Ties (rounded values), integer weights 0..3, gamma weights and decimal weights 0.0 ... 0.9 (which float64
    holds inexactly), three groups, a variable."""
    rng = np.random.default_rng(seed)
    df = _frame((np.round(rng.random(n), 2), rng.integers(0, 4, n).astype(float), rng.integers(0, 3, n)))
    return df.with_columns(wf=pl.Series(rng.gamma(2.0, 1.0, n)), wd=pl.Series(rng.integers(0, 10, n) / 10))


@pytest.mark.parametrize("kind", ENGINES)
@pytest.mark.parametrize("binning", ["quantile", "equal_mass"])
def test_engines_compute_weighted_edges_where_the_rows_are(monkeypatch, kind, binning):
    """A LazyFrame (streamed) and DuckDB, pyarrow and Ibis (the narwhals engine) find the weighted edges by
    histogram passes on exact sums of the weights (calframe/engines/_order_stats.py), as the unweighted ones: no
    engine brings the rows into Python (the eager engine is not reached), and the figures are eager Polars' to
    1e-12 (decimal weights included: the running sums are exact sums on both sides), for integer weights also the
    repeated frame's (its edges: pandas.qcut / get_equal_bins, above)."""
    pytest.importorskip({"lazy": "polars", "pyarrow": "pyarrow"}.get(kind, kind))
    from _engine_checks import assert_same, refuse_rows

    from calframe.engines import eager
    from calframe.engines.streaming import streamed as lazy

    df = _big()
    rep = _repeated(df.drop("wf", "wd"))
    calls = [(calframe.ece, {"by": "g"}, "ece"), (calframe.ce, {"p": 2, "estimator": "debiased"}, "ce"),
             (lambda f, **k: calframe.vece(f, "x", **k), {"by": "g"}, "vece")]
    cases = [(fig, dict(kw, weights=w, binning=binning, bins=7), name, w) for fig, kw, name in calls
             for w in ("w", "wf", "wd")]
    wants = [fig(df, **kw) for fig, kw, _, _ in cases]  # eager Polars
    refs = [fig(rep, **{k: v for k, v in kw.items() if k != "weights"}) if w == "w" else None
            for fig, kw, _, w in cases]  # the repeated frame
    monkeypatch.setattr(eager, "evaluate", refuse_rows)
    monkeypatch.setattr(lazy, "evaluate", refuse_rows)
    spy = _Rows(monkeypatch, budget=50)
    for (fig, kw, name, w), want, ref in zip(cases, wants, refs):
        got = _engine_result(kind, fig, df, **kw)
        if isinstance(want, float):
            value = got[got.columns[-1]].item()
            assert abs(value - want) <= 1e-12 * max(1.0, abs(want)), (name, w)
            assert ref is None or abs(value - ref) <= 1e-12, (name, w)
            continue
        got = got.sort("g")
        assert_same(got, want.sort("g"))
        if ref is not None:
            np.testing.assert_allclose(got[name].to_numpy(), ref.sort("g")[name].to_numpy(), rtol=0, atol=1e-12)
    assert spy.most < df.height // 2


@settings(max_examples=8, deadline=None)
@given(weighted_frames(max_rows=60), st.sampled_from(["quantile", "equal_mass"]), st.integers(2, 8),
       st.sampled_from([10**9, 3]))
def test_streamed_weighted_edges_are_the_repeated_frames(frame, binning, bins, budget):
    """Small frames (ties, weights 0..4, rows of weight 0 beyond a group's other values) on a LazyFrame and DuckDB,
    with and without histogram refinement: the repeated frame's figures, per group, to 1e-12; with decimal
    weights, eager Polars'."""
    from calframe.engines.streaming import streamed as lazy

    old = lazy.COLLECT_BUDGET
    lazy.COLLECT_BUDGET = budget
    try:
        df = _frame(frame)
        rep = _repeated(df)
        for kind in ("lazy", "duckdb"):
            for fig, name in ((calframe.ece, "ece"), (lambda f, **k: calframe.vece(f, "x", **k), "vece")):
                if name == "vece" and np.unique(rep["x"].to_numpy()).size < 2:
                    continue
                got = _engine_result(kind, fig, df, weights="w", by="g", binning=binning, bins=bins).sort("g")
                want = fig(rep, by="g", binning=binning, bins=bins).sort("g")
                np.testing.assert_allclose(got[name].to_numpy(), want[name].to_numpy(), rtol=0, atol=1e-12,
                                           err_msg=f"{kind} {name}")
                dec = df.with_columns(w=pl.col("w") / 10 + pl.col("x").abs().round(1))  # weights such as 0.3
                got = _engine_result(kind, fig, dec, weights="w", by="g", binning=binning, bins=bins).sort("g")
                want = fig(dec, weights="w", by="g", binning=binning, bins=bins).sort("g")
                np.testing.assert_allclose(got[name].to_numpy(), want[name].to_numpy(), rtol=0, atol=1e-12,
                                           err_msg=f"{kind} {name} decimal")
    finally:
        lazy.COLLECT_BUDGET = old


def test_dask_computes_them():
    """Dask finds the weighted edges on its partitions (engines/partitions/order_stats.py): eager Polars' figure
    (tests/test_dask_weighted.py checks the edges bit for bit)."""
    df = _df()
    dd = pytest.importorskip("dask.dataframe")
    ddf = dd.from_pandas(df.to_pandas(), npartitions=2)
    got = calframe.ece(ddf, weights="w", binning="equal_mass").compute()
    assert abs(got - calframe.ece(df, weights="w", binning="equal_mass")) <= 1e-12


def test_sweep_refuses_weights():
    with pytest.raises(calframe.ParameterError, match="no weighted sweep"):
        calframe.ece(_df(), weights="w", binning="sweep")
