"""The figures added by the recipe (docs/design.md, "Recipe: add a figure"): ``oe``, ``ece_split`` and
``brier_decomposition`` against numpy written from the papers (Thulasidasan et al. 2019; Murphy 1973), Murphy's
identity against scikit-learn's Brier score, and on every surface that reads the figure table."""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings, strategies as st

import calframe


def by_hand(p: np.ndarray, y: np.ndarray, w: np.ndarray | None = None, bins: int = 15) -> dict[str, float]:
    """Each figure from its definition: bins by numpy.digitize on linspace edges (left-closed, as calframe's
    default), weight shares n_b / N (weights' sums with weights)."""
    w = np.ones_like(p) if w is None else w
    b = np.digitize(p, np.linspace(0.0, 1.0, bins + 1)[1:-1])
    total, a = w.sum(), (w * y).sum() / w.sum()
    out = dict.fromkeys(["oe", "ece_over", "ece_under", "reliability", "resolution"], 0.0)
    for k in np.unique(b):
        m = b == k
        share, conf, acc = w[m].sum() / total, np.average(p[m], weights=w[m]), np.average(y[m], weights=w[m])
        out["oe"] += share * conf * max(conf - acc, 0.0)
        out["ece_over"] += share * max(conf - acc, 0.0)
        out["ece_under"] += share * max(acc - conf, 0.0)
        out["reliability"] += share * (conf - acc) ** 2
        out["resolution"] += share * (acc - a) ** 2
    out["uncertainty"] = a * (1.0 - a)
    return out


def frame(n: int = 3000, seed: int = 0, weights: bool = False) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p**1.4).astype(np.int8)
    cols = {"prob": p, "label": y, "g": rng.integers(0, 3, n)}
    if weights:
        cols["w"] = rng.uniform(0.1, 3.0, n)
    return pl.DataFrame(cols)


@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("bins", [5, 15])
def test_the_figures_are_their_definitions(weights, bins):
    df = frame(weights=weights)
    opts = {"bins": bins, **({"weights": "w"} if weights else {})}
    oe = calframe.oe(df, by="g", **opts)
    split = calframe.ece_split(df, by="g", **opts)
    murphy = calframe.brier_decomposition(df, by="g", **opts)
    assert split.columns == ["g", "n", "ece_over", "ece_under"]
    assert murphy.columns == ["g", "n", "reliability", "resolution", "uncertainty"]
    for i, g in enumerate(oe["g"].to_list()):
        part = df.filter(pl.col("g") == g)
        want = by_hand(part["prob"].to_numpy(), part["label"].to_numpy().astype(float),
                       part["w"].to_numpy() if weights else None, bins)
        assert oe["oe"][i] == pytest.approx(want["oe"], rel=1e-12, abs=1e-15)
        for table in (split, murphy):
            for col in table.columns[2:]:
                assert table[col][i] == pytest.approx(want[col], rel=1e-12, abs=1e-15), col


def test_the_ece_split_adds_up_to_the_ece_and_oe_is_below_its_overconfident_part():
    df = calframe.datasets.grouped_miscalibration(n=5000, seed=3)
    for opts in ({}, {"lens": "top1"}, {"binning": "equal_mass", "bins": 10}):
        split = calframe.ece_split(df, by="region", **opts)
        ece = calframe.ece(df, by="region", **opts)
        np.testing.assert_allclose(split["ece_over"] + split["ece_under"], ece["ece"], rtol=1e-13)
        assert (calframe.oe(df, by="region", **opts)["oe"] <= split["ece_over"] + 1e-15).all()


def test_murphy_identity_against_scikit_learn_when_each_bin_holds_one_forecast():
    """REL - RES + UNC is the Brier score when the forecasts are constant within each bin (Murphy 1973):
    scikit-learn's brier_score_loss is the independent reference."""
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(5)
    levels = (np.arange(10) + 0.5) / 10  # one forecast value in the middle of each of 10 bins
    p = rng.choice(levels, size=4000)
    y = (rng.uniform(size=p.size) < np.clip(p + 0.07, 0, 1)).astype(int)
    d = calframe.brier_decomposition(pl.DataFrame({"prob": p, "label": y}), bins=10).row(0, named=True)
    assert d["reliability"] - d["resolution"] + d["uncertainty"] == pytest.approx(
        metrics.brier_score_loss(y, p), rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.booleans()), min_size=1, max_size=60), st.integers(1, 20))
def test_identities_hold_on_any_rows(rows, bins):
    df = pl.DataFrame({"prob": [r[0] for r in rows], "label": [int(r[1]) for r in rows]})
    split = calframe.ece_split(df, bins=bins).row(0, named=True)
    assert split["ece_over"] + split["ece_under"] == pytest.approx(calframe.ece(df, bins=bins), abs=1e-12)
    assert 0.0 <= calframe.oe(df, bins=bins) <= split["ece_over"] + 1e-15
    d = calframe.brier_decomposition(df, bins=bins).row(0, named=True)
    assert d["reliability"] == pytest.approx(calframe.rmsce(df, bins=bins) ** 2, abs=1e-12)
    assert 0.0 <= d["resolution"] <= d["uncertainty"] + 1e-12 <= 0.25 + 1e-12


def test_sweep_bins_are_refused_with_what_to_pass():
    with pytest.raises(calframe.ParameterError, match="'binning' parameter of oe"):
        calframe.oe(frame(), binning="sweep")


def test_the_surfaces_that_read_the_figure_table_have_them():
    """Declared once (families/decomposition.py): disparity, monitor, calframe.expr, calframe.sklearn and
    df.calib offer each, with the same numbers as the function by group."""
    df = frame(4000, seed=1).with_columns(
        ts=pl.datetime(2024, 1, 1) + pl.duration(minutes=pl.int_range(pl.len()) * 17 % 2880))
    murphy = calframe.brier_decomposition(df, by="g")
    table = calframe.disparity(df, "brier_decomposition", by="g", ci=None)
    assert table["figure"].to_list() == ["reliability", "resolution", "uncertainty"]
    top = murphy.sort("resolution", descending=True)["g"][0]  # resolution is better higher: the worst is lowest
    assert table.filter(pl.col("figure") == "resolution")["best_group"].item() == f"g={top}"
    agg = df.group_by("g").agg(calframe.expr.brier_decomposition("prob", "label"), calframe.expr.oe("prob", "label"))
    agg = agg.sort("g").unnest("brier_decomposition")
    for col in ("reliability", "resolution", "uncertainty"):
        np.testing.assert_allclose(agg[col], murphy[col], rtol=1e-13)
    np.testing.assert_allclose(agg["oe"], calframe.oe(df, by="g")["oe"], rtol=1e-13)
    windows = calframe.monitor(df, "ts", every="1d", figures=["oe", "ece_split"])
    first = df.filter(pl.col("ts") < dt.datetime(2024, 1, 2))
    assert windows["oe"][0] == pytest.approx(calframe.oe(first), rel=1e-13)
    assert windows["ece_over"][0] == pytest.approx(calframe.ece_split(first)["ece_over"][0], rel=1e-13)
    import calframe.sklearn as cs

    assert cs.oe(df["label"].to_numpy(), df["prob"].to_numpy()) == pytest.approx(calframe.oe(df), rel=1e-13)
    assert cs.make_scorer("oe").sign == -1
    assert df.calib.oe(by="g").equals(calframe.oe(df, by="g"))


@pytest.mark.parametrize("figure", ["ece", "mce", "rmsce", "oe", "ece_split", "brier_decomposition"])
def test_the_sql_of_the_figure_table_in_polars_sql_and_duckdb(figure):
    """calframe.sql.figure_query and the DuckDB macro of each figure on "sql" (its declared SQL finalize) give the
    figure's numbers, group by group."""
    from calframe import sql

    df = calframe.datasets.grouped_miscalibration(n=3000, seed=2)
    want = getattr(calframe, figure)(df, by="region", bins=10)
    q = sql.figure_query(figure, "scores", prob="prob", label="label", by="region", bins=10)
    got = [pl.SQLContext(frames={"scores": df}).execute(q, eager=True)]
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    con.register("scores", df.to_arrow())
    sql.install_duckdb_macros(con)
    got.append(con.sql(q).pl())
    got.append(con.sql(f"SELECT * FROM calframe_{figure}('scores', 'prob', 'label', bins := 10, "
                       "by_cols := ['region'])").pl())
    for g in got:
        assert g.columns == want.columns and g["n"].to_list() == want["n"].to_list()
        for col in want.columns[2:]:
            np.testing.assert_allclose(g[col], want[col], rtol=1e-12, atol=1e-15)


def test_figure_query_refuses_a_figure_without_sql():
    from calframe import sql

    with pytest.raises(calframe.ParameterError, match="'figure' parameter of figure_query"):
        sql.figure_query("brier", "scores", prob="prob", label="label")


def test_a_figure_row_is_on_every_surface_it_can_be():
    """registry.Figure: by default on every surface, "sql" only with a SQL finalize; "sql" without one, no
    columns, or an unknown surface or direction is refused where the figure is declared."""
    from calframe.registry import SURFACES, Column, Figure

    assert Figure((Column("x", "X"),)).on == frozenset(SURFACES) - {"sql"}
    assert Figure((Column("x", "X"),), sql=("SUM(n)",)).on == frozenset(SURFACES)
    for bad in (lambda: Figure((Column("x", "X"),), on=frozenset({"sql"})), lambda: Figure(()),
                lambda: Figure((Column("x", "X"),), on=frozenset({"nowhere"})),
                lambda: Column("x", "X", better="sideways")):
        with pytest.raises(ValueError):
            bad()
