"""Quantile / equal-mass edges: one driver (``binning.edge_table``), and every engine's edges are its edges.

The driver is first checked against code we did not write (pandas.qcut and the
Series.quantile call it makes, uncertainty-calibration's get_equal_bins),
fed by a plain sort. Then each engine's edges, built from the order statistics
it finds its own way (eager quickselect and histogram, the lazy engine's and
Dask's histogram passes, SQL window functions), must equal the driver's bit
for bit: on ties, groups with fewer rows than bins, all-equal values and large
random data.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pytest

import calframe
from calframe import sql
from calframe.binning import Binning, bin_values, edge_table, pack_edges
from calframe.engines.plan import order_stats as OS
from calframe.engines.streaming import streamed as LZ

SCHEMES = [("quantile", 10), ("equal_mass", 15), ("quantile", 4)]


def _case(name: str) -> pl.DataFrame:
    """prob (the value binned: lens class:1 bins prob itself), label, g (groups 0..k-1, all present)."""
    rng = np.random.default_rng(11)
    if name == "ties":  # five distinct values, most of them tied
        p, g = rng.integers(0, 5, 3000) / 4.0, rng.integers(0, 3, 3000)
    elif name == "tiny":  # groups of 1, 2, 3, 5 and 9 rows (fewer than bins), and one of 400
        sizes = [1, 2, 3, 5, 9, 400]
        g = np.repeat(np.arange(len(sizes)), sizes)
        p = np.round(rng.random(g.shape[0]), 1)
    elif name == "equal":  # every value of a group equal (0.3, 1.0, 0.0), beside a random group
        g = np.repeat(np.arange(4), [50, 40, 7, 300])
        p = np.concatenate([np.full(50, 0.3), np.ones(40), np.zeros(7), rng.random(300)])
    else:  # large random data, some ties
        n = 200_000
        p, g = rng.random(n), rng.integers(0, 4, n)
        p[:5000] = 0.5
    perm = rng.permutation(p.shape[0])
    return pl.DataFrame({"prob": p[perm], "label": rng.integers(0, 2, p.shape[0]), "g": g[perm].astype(np.int64)})


CASES = ["ties", "tiny", "equal", "large"]


def _driver(df: pl.DataFrame, binning: Binning) -> np.ndarray:
    """The driver's edge table, its take reading a fully sorted copy of each group's values."""
    g, p = df["g"].to_numpy(), df["prob"].to_numpy()
    order = np.lexsort((p, g))
    counts = np.bincount(g)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    return edge_table(counts, binning, lambda ranks: p[order][starts[:, None] + np.maximum(ranks, 0)])


def _spy(monkeypatch, module) -> list[np.ndarray]:
    """Record every edge table ``module`` builds."""
    seen: list[np.ndarray] = []
    real = module.edge_table
    monkeypatch.setattr(module, "edge_table", lambda *a: seen.append(real(*a)) or seen[-1])
    return seen


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("scheme,bins", SCHEMES)
def test_driver_equals_numpy_pandas_and_kumar(case, scheme, bins):
    df = _case(case)
    table = _driver(df, Binning(scheme, bins))
    edges, offsets, _ = pack_edges(table, Binning(scheme, bins))
    levels = np.linspace(0, 1, bins + 1)  # pandas.qcut: rounded up where not representable
    np.putmask(levels, bins * levels != np.arange(bins + 1), np.nextafter(levels, 1))
    for k in range(table.shape[0]):
        v = df.filter(pl.col("g") == k)["prob"].to_numpy()
        got = edges[offsets[k] : offsets[k + 1]]
        if scheme == "quantile":
            # pandas.qcut's edges before dropping duplicates: its Series.quantile call at its levels
            np.testing.assert_array_equal(table[k], pd.Series(v).quantile(levels).to_numpy())
            if np.unique(v).size > 1:
                np.testing.assert_array_equal(got, pd.qcut(v, bins, retbins=True, duplicates="drop")[1])
        else:
            kumar = pytest.importorskip("calibration.utils")
            np.testing.assert_array_equal(got, kumar.get_equal_bins(list(v), num_bins=bins))


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("scheme,bins", SCHEMES)
def test_eager_edges_are_the_drivers(case, scheme, bins):
    df = _case(case)
    binning = Binning(scheme, bins)
    want, want_off, want_bins = pack_edges(_driver(df, binning), binning)
    g = df["g"].to_numpy().astype(np.int32)
    for groups, n_groups in ((g, int(g.max()) + 1), (None, 1)):
        p = df["prob"].to_numpy()
        res = bin_values(p, groups, n_groups, binning)
        if groups is None:  # one group: compare with the driver on every row as one group
            one = df.with_columns(pl.lit(0, pl.Int64).alias("g"))
            want, want_off, want_bins = pack_edges(_driver(one, binning), binning)
        np.testing.assert_array_equal(res.edges, want)
        np.testing.assert_array_equal(res.offsets, want_off)
        assert res.n_bins == want_bins


@pytest.mark.parametrize("budget", [10**9, 50])
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("scheme,bins", SCHEMES)
def test_lazy_edges_are_the_drivers(monkeypatch, budget, case, scheme, bins):
    """The streaming engine's order statistics (histogram passes when the budget is small) give the driver's edges."""
    monkeypatch.setattr(LZ, "COLLECT_BUDGET", budget)
    seen = _spy(monkeypatch, OS)  # the order statistics' module builds the streaming engine's edge table
    df = _case(case)
    calframe.ece(df.lazy(), by="g", binning=scheme, bins=bins).collect()  # lazy out: the sums run at collect
    assert len(seen) == 1
    np.testing.assert_array_equal(seen[0], _driver(df, Binning(scheme, bins)))


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("scheme,bins", SCHEMES)
def test_dask_edges_are_the_drivers(monkeypatch, case, scheme, bins):
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    import calframe.engines.partitions.client as cfd
    import calframe.frames.dask  # noqa: F401  (registers ddf.calib)

    monkeypatch.setattr(cfd, "GATHER_CELL", 4)  # crowded cells go through the finer histogram levels
    seen = _spy(monkeypatch, cfd)
    df = _case(case)
    if case == "large":
        df = df.head(30_000)
    with dask.config.set(scheduler="synchronous"):
        dd.from_pandas(df.to_pandas(), npartitions=3).calib.ece(by="g", binning=scheme, bins=bins).compute()
    assert len(seen) == 1
    np.testing.assert_array_equal(seen[0], _driver(df, Binning(scheme, bins)))


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("bins", [10, 4])
def test_sql_edges_are_the_drivers(engine, case, bins):
    """quantile_edges_query's e0..eB (duplicates kept) are the driver's table rows."""
    df = _case(case)
    q = sql.quantile_edges_query("t", "prob", bins=bins, by="g")
    if engine == "polars":
        got = pl.SQLContext(frames={"t": df}).execute(q, eager=True)
    else:
        duckdb = pytest.importorskip("duckdb")
        with duckdb.connect() as con:
            con.register("t", df.to_arrow())
            got = pl.from_arrow(con.sql(q).to_arrow_table())
    assert got["g"].to_list() == list(range(int(df["g"].max()) + 1))
    np.testing.assert_array_equal(got.drop("g").to_numpy(), _driver(df, Binning("quantile", bins)))
