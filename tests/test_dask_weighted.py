"""Frequency weights with quantile / equal-mass bins on a Dask DataFrame (issue 32, item 6): the edges of the rows
repeated w_i times, found where the rows are (calframe/engines/partitions/order_stats.py).

The standard is eager Polars: the reliability table's edges bit for bit (``lower``, ``upper``, ``bin``) and the
figures to 1e-12 (the sums are float sums in another order), for integer, gamma and decimal weights (0.1 ... 0.9,
which float64 holds inexactly: the running sums are exact sums correctly rounded on both sides), ties, rows of
weight 0, with and without ``by``; for integer weights also the frame with each row repeated w_i times (code we did
not write checks those edges: tests/test_weighted_bins.py, pandas.qcut and get_equal_bins). The passes bring only
bounded sums into Python (a RowSpy, as tests/test_surfaces.py's), also when the histograms refine.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings, strategies as st

from _engine_checks import assert_same, refuse_rows

import calframe

dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")
import calframe.frames.dask  # noqa: E402,F401  (registers ddf.calib)
from calframe.engines.partitions import client as engine  # noqa: E402
from calframe.engines.streaming import streamed as lazy  # noqa: E402


@pytest.fixture(autouse=True)
def synchronous():
    """The passes in this process (the monkeypatches hold; tests/test_dask.py runs a distributed cluster)."""
    with dask.config.set(scheduler="synchronous"):
        yield


def _frame(n: int = 3000, seed: int = 8) -> pl.DataFrame:
    """Ties (rounded values), integer weights 0..3, gamma weights and decimal weights 0.0 ... 0.9, three groups
    (one of a single row), a variable, three class probabilities."""
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(3), n)
    df = pl.DataFrame({"prob": np.round(rng.random(n), 2), "label": rng.integers(0, 2, n),
                       "w": rng.integers(0, 4, n).astype(float), "wf": rng.gamma(2.0, 1.0, n),
                       "wd": rng.integers(0, 10, n) / 10, "g": rng.integers(0, 3, n),
                       "x": np.round(rng.normal(size=n), 1), "p0": probs[:, 0], "p1": probs[:, 1],
                       "p2": probs[:, 2], "cls": rng.integers(0, 3, n)})
    return df.with_columns(pl.when(pl.int_range(pl.len()) == 0).then(7).otherwise(pl.col("g")).alias("g"),
                           pl.when(pl.int_range(pl.len()) == 0).then(2.5).otherwise(pl.col("w")).alias("w"))


DF = _frame()


def _ddf(df: pl.DataFrame, parts: int = 3):
    return dd.from_pandas(df.to_pandas(), npartitions=parts)


def _polars(out) -> pl.DataFrame:
    return pl.from_pandas(out.compute())


def _repeated(df: pl.DataFrame, w: str = "w") -> pl.DataFrame:
    return df.select(pl.all().repeat_by(pl.col(w).cast(pl.Int64)).explode()).drop(w)


CALLS = {
    "ece": lambda f, **k: calframe.ece(f, **k),
    "mce": lambda f, **k: calframe.mce(f, **k),
    "rmsce": lambda f, **k: calframe.rmsce(f, **k),
    "ce_debiased": lambda f, **k: calframe.ce(f, p=2, estimator="debiased", **k),
    "vece": lambda f, **k: calframe.vece(f, "x", **k),
    "marginal": lambda f, **k: calframe.ece(f, prob=["p0", "p1", "p2"], label="cls", lens="marginal", **k),
}


def _check(got, want) -> None:
    if isinstance(want, float):
        got = got.compute()
        assert abs(got - want) <= 1e-12, (got, want)
    else:
        assert_same(_polars(got), want, atol=1e-12)


def _check_table(got, want: pl.DataFrame) -> None:
    got = _polars(got)
    assert got.columns == want.columns
    for c in want.columns:
        if c in ("weight", "conf", "acc", "gap"):
            np.testing.assert_allclose(got[c].to_numpy(), want[c].to_numpy(), rtol=0, atol=1e-12, err_msg=c)
        else:  # the keys, the bins and their edges: the same bits
            assert got[c].to_list() == want[c].to_list(), c


@pytest.mark.parametrize("w, budget, binning", [("w", None, "quantile"), ("wf", 40, "equal_mass"),
                                                ("wd", None, "equal_mass"), ("wd", 40, "quantile")],
                         ids=["integer-quantile", "gamma refined-equal_mass", "decimal-equal_mass",
                              "decimal refined-quantile"])
def test_weighted_edges_are_eager_polars(monkeypatch, budget, binning, w):
    """Every figure of the CE family, VECE, the marginal lens and the reliability table, by group (ECE and the
    table also without ``by``): eager Polars' numbers; with a budget of 40 values the histograms refine before
    anything is gathered. Each kind of weights with one binning, each binning with and without refinement (all
    8 pairs took 70 s of the suite; test_integer_weights_are_the_repeated_frame draws both binnings)."""
    if budget is not None:
        monkeypatch.setattr(lazy, "COLLECT_BUDGET", budget)
    ddf = _ddf(DF)
    for name, fig in CALLS.items():
        for by in (None, "g") if name == "ece" else ("g",):  # (ungrouped: ece and the tables)
            kw = {"weights": w, "binning": binning, "bins": 7, "by": by}
            _check(fig(ddf, **kw), fig(DF, **kw))
    for by in (None, "g"):
        kw = {"weights": w, "binning": binning, "bins": 9, "by": by}
        _check_table(calframe.reliability(_ddf(DF), **kw), calframe.reliability(DF, **kw))
    kw = {"weights": w, "binning": binning, "bins": 5, "by": "g", "lens": "top1"}
    _check_table(calframe.reliability(_ddf(DF, 5), prob=["p0", "p1", "p2"], label="cls", **kw),
                 calframe.reliability(DF, prob=["p0", "p1", "p2"], label="cls", **kw))


@st.composite
def _small(draw):
    """(values rounded to force ties, integer weights 0..4 with at least one positive per group, two groups)."""
    n = draw(st.integers(2, 40))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    v = np.round(rng.random(n), draw(st.integers(1, 3)))
    w = rng.integers(0, 5, n).astype(np.float64)
    g = np.arange(n) % 2
    for k in (0, 1):
        if not (w[g == k] > 0).any():
            w[np.flatnonzero(g == k)[0]] = 1.0
    return pl.DataFrame({"prob": v, "label": (rng.random(n) < v).astype(np.int64), "w": w, "g": g,
                         "x": np.round(rng.normal(size=n), 1)})


@settings(max_examples=6, deadline=None)
@given(_small(), st.sampled_from(["quantile", "equal_mass"]), st.integers(2, 8), st.sampled_from([10**9, 3]),
       st.integers(1, 4))
def test_integer_weights_are_the_repeated_frame(frame, binning, bins, budget, parts):
    """A row of weight k counts as k rows: the weighted Dask frame's reliability table is the repeated frame's
    (eager Polars on the rows repeated w_i times), its edges bit for bit, its ECE to 1e-12; with and without
    refinement, over 1 to 4 partitions."""
    old = lazy.COLLECT_BUDGET
    lazy.COLLECT_BUDGET = budget
    try:
        rep = _repeated(frame)
        kw = {"binning": binning, "bins": bins, "by": "g"}
        got = _polars(calframe.reliability(_ddf(frame, parts), weights="w", **kw))
        want = calframe.reliability(rep, **kw)
        for c in ("g", "bin", "lower", "upper"):
            assert got[c].to_list() == want[c].to_list(), c
        for c in ("weight", "conf", "acc"):  # (n: the rows, not their repeats)
            np.testing.assert_allclose(got[c].to_numpy(), want[c].to_numpy(), rtol=0, atol=1e-12, err_msg=c)
        got = _polars(calframe.ece(_ddf(frame, parts), weights="w", **kw))["ece"].to_numpy()
        np.testing.assert_allclose(got, calframe.ece(rep, **kw)["ece"].to_numpy(), rtol=0, atol=1e-12)
    finally:
        lazy.COLLECT_BUDGET = old


class _RowSpy:
    """Every ``dask.compute`` and every value a Dask result's graph hands to calframe (tests/test_surfaces.py's
    RowSpy): none of ``limit`` rows or more. The rows are never collected (``collected`` and the eager engine
    fail)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
        self.limit, self.most = limit, 0
        monkeypatch.setattr(engine, "collected", refuse_rows)
        from calframe.engines import eager

        monkeypatch.setattr(eager, "evaluate", refuse_rows)
        original, then, spy = dask.compute, engine._then, self

        def compute(*args, **kwargs):
            out = original(*args, **kwargs)
            spy.most = max([spy.most] + [len(o) for o in out if hasattr(o, "__len__")])
            return out

        def handed(results, finish, args, cont):
            def measured(*a):
                value = finish(*a)
                spy.most = max(spy.most, len(value) if hasattr(value, "__len__") else 0)
                return value

            return then(results, measured, args, cont)

        monkeypatch.setattr(dask, "compute", compute)
        monkeypatch.setattr(engine, "_then", handed)


def test_nothing_but_bounded_sums_comes_to_the_client(monkeypatch):
    """With the budget at 100 values the passes refine: no computed frame, and nothing a result's graph hands to
    calframe, holds a tenth of the rows (the histograms are per cell, the gathered values at most the budget)."""
    big = _frame(20_000, seed=3)
    wants = [fig(big, weights="wf", binning=b, bins=10, by="g") for fig in (CALLS["ece"], CALLS["vece"])
             for b in ("quantile", "equal_mass")]
    monkeypatch.setattr(lazy, "COLLECT_BUDGET", 100)
    spy = _RowSpy(monkeypatch, big.height // 10)
    gots = [fig(_ddf(big, 4), weights="wf", binning=b, bins=10, by="g") for fig in (CALLS["ece"], CALLS["vece"])
            for b in ("quantile", "equal_mass")]
    gots = [_polars(g) for g in gots]
    monkeypatch.undo()
    assert 0 < spy.most < big.height // 10, spy.most
    for got, want in zip(gots, wants):
        assert_same(got, want, atol=1e-12)


def test_bad_input_gives_the_eager_errors():
    """A group whose weights are all 0, all weights 0, a probability outside [0, 1], a null weight: the eager
    error, with its counts over every partition, when computed."""
    import warnings
    zero_g = DF.with_columns(pl.when(pl.col("g") == 1).then(0.0).otherwise(pl.col("w")).alias("w"))
    bad = DF.with_columns(pl.when(pl.int_range(pl.len()) == 5).then(1.5).otherwise(pl.col("prob")).alias("prob"))
    null = DF.with_columns(pl.when(pl.int_range(pl.len()) == 7).then(None).otherwise(pl.col("w")).alias("w"))
    for frame, by in ((zero_g, "g"), (DF.with_columns(w=pl.lit(0.0)), None), (bad, "g"), (null, None)):
        for binning in ("quantile", "equal_mass"):
            with pytest.raises(calframe.CalframeError) as want:  # (on the same pandas frame: a null weight is NaN)
                calframe.ece(frame.to_pandas(), weights="w", binning=binning, by=by)
            with pytest.raises(type(want.value), match=".") as got:
                calframe.ece(_ddf(frame), weights="w", binning=binning, by=by).compute()
            assert str(got.value) == str(want.value)


def test_nulls_dropped_and_weights_of_zero_beyond_the_values():
    """``nulls="drop"`` (a warning, the rows left out) and rows of weight 0 below and above a group's other
    values (outside its edges: the nearest bin, as eager): eager Polars' table."""
    df = DF.with_columns(pl.when(pl.int_range(pl.len()) % 97 == 3).then(None).otherwise(pl.col("prob")).alias("prob"))
    extra = df.head(3).with_columns(pl.Series("prob", [0.0, 1.0, 0.999]), pl.Series("w", [0.0, 0.0, 0.0]),
                                    pl.Series("g", [1, 1, 2]))
    df = pl.concat([df, extra.cast(df.schema)])
    pdf = df.with_columns(wd=pl.col("w")).to_pandas(use_pyarrow_extension_array=True)  # (the nulls kept)
    for binning in ("quantile", "equal_mass"):
        kw = {"weights": "wd", "binning": binning, "bins": 6, "by": "g", "nulls": "drop"}
        with pytest.warns(UserWarning, match="dropped"):
            want = pl.from_pandas(calframe.reliability(pdf, **kw))
        with pytest.warns(UserWarning, match="dropped"):
            got = calframe.reliability(dd.from_pandas(pdf, npartitions=3), **kw)
            _check_table(got, want)


@pytest.mark.parametrize("binning", ["quantile", "equal_mass"])
def test_several_variables(binning):
    """VECE over a numeric, a probability and a categorical variable at once (each numeric one its own weighted
    edges, the categorical one a bin per category) and VMCE: eager Polars'."""
    df = DF.with_columns(c=pl.col("cls").cast(pl.String))
    kw = {"weights": "wd", "binning": binning, "bins": 5, "by": "g"}
    assert_same(_polars(calframe.vece(_ddf(df), ["x", "p0", "c"], **kw)), calframe.vece(df, ["x", "p0", "c"], **kw),
                atol=1e-12)
    kw["by"] = None
    _check(calframe.vmce(_ddf(df), "p1", **kw), calframe.vmce(df, "p1", **kw))


def test_weights_of_every_magnitude():
    """Weights from 3e-310 (subnormal) to 1e300 in one group: each is exact in its bucket's fixed point, so the
    edges are still eager Polars' bits."""
    scales = np.random.default_rng(5).choice([1e300, 1e-300, 3e-310, 1.0, 2.0**-60], DF.height)
    df = DF.with_columns(wx=pl.Series(DF["wf"].to_numpy() * scales))
    for binning in ("quantile", "equal_mass"):
        for by in (None, "g"):
            kw = {"weights": "wx", "binning": binning, "by": by, "bins": 8}
            _check_table(calframe.reliability(_ddf(df, 4), **kw), calframe.reliability(df, **kw))
