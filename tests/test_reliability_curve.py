"""calframe.reliability_curve (the CORP reliability diagram) against model-diagnostics 1.5's
``plot_reliability_diagram``: its isotonic curve (the line it draws, scikit-learn's thresholds) to 1e-12, and its
bootstrap band (``n_bootstrap``: scipy's basic interval over row resamples, made monotone) to 1e-12 with the same
draws (scipy draws them from numpy's global RandomState); the consistency band (Dimitriadis, Gneiting and Jordan
2021, Section 4) by its coverage on calibrated data."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import calframe
import calframe.plot
from calframe.families.corp_curve import confidence_band

md = pytest.importorskip("model_diagnostics.calibration")
mpl = pytest.importorskip("matplotlib")
mpl.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def _md(y, p, w=None, n_bootstrap=None, seed=0):
    """model-diagnostics' curve and band, read off the figure it draws."""
    fig, ax = plt.subplots()
    np.random.seed(seed)
    md.plot_reliability_diagram(y, p, weights=w, n_bootstrap=n_bootstrap, confidence_level=0.9, ax=ax)
    curve = ax.lines[-1].get_xydata()
    band = None
    if n_bootstrap is not None:
        verts = ax.collections[0].get_paths()[0].vertices
        band = verts
    plt.close(fig)
    return curve[:, 0], curve[:, 1], band


def _data(n, seed, tied=False):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.02, 0.98, n)
    if tied:
        p = np.round(p, 2)
    y = (rng.uniform(size=n) < p ** 1.3).astype(np.float64)
    w = rng.uniform(0.2, 3.0, n)
    return p, y, w


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("tied", [False, True])
def test_the_curve_is_model_diagnostics(weighted, tied):
    p, y, w = _data(700, 1 + tied, tied)
    x_md, f_md, _ = _md(y, p, w if weighted else None)
    df = pl.DataFrame({"prob": p, "label": y.astype(np.int8), "w": w})
    t = calframe.reliability_curve(df, weights="w" if weighted else None, bands=None)
    np.testing.assert_allclose(t["x"].to_numpy(), x_md, rtol=0, atol=1e-12)
    np.testing.assert_allclose(t["fit"].to_numpy(), f_md, rtol=0, atol=1e-12)


def test_per_group_the_curve_is_model_diagnostics_on_each_group_and_by_equals_filtering():
    p, y, w = _data(1500, 3, True)
    g = np.array(["a", "b", "c"])[np.random.default_rng(4).integers(0, 3, p.size)]
    df = pl.DataFrame({"prob": p, "label": y.astype(np.int8), "w": w, "g": g})
    t = calframe.reliability_curve(df, by="g", weights="w", n_boot=50, seed=7)
    assert t.columns[:3] == ["g", "x", "fit"]
    for key in ("a", "b", "c"):
        m = g == key
        x_md, f_md, _ = _md(y[m], p[m], w[m])
        part = t.filter(pl.col("g") == key)
        np.testing.assert_allclose(part["x"].to_numpy(), x_md, rtol=0, atol=1e-12)
        np.testing.assert_allclose(part["fit"].to_numpy(), f_md, rtol=0, atol=1e-12)
        alone = calframe.reliability_curve(df.filter(pl.col("g") == key), by="g", weights="w", n_boot=50, seed=7)
        assert part.equals(alone)  # the draws are seeded by the group's key: by= is filtering (with the same by)


def test_the_same_bits_for_any_row_order():
    p, y, w = _data(400, 5, True)
    df = pl.DataFrame({"prob": p, "label": y.astype(np.int8), "w": w})
    a = calframe.reliability_curve(df, weights="w", n_boot=100)
    b = calframe.reliability_curve(df.reverse(), weights="w", n_boot=100)
    assert a.equals(b)


@pytest.mark.parametrize("weighted", [False, True])
def test_the_confidence_band_is_model_diagnostics_with_its_draws(weighted):
    p, y, w = _data(300, 6, True)
    ww = w if weighted else None
    n_boot, seed = 60, 11
    x_md, f_md, verts = _md(y, p, ww, n_bootstrap=n_boot, seed=seed)
    idx = np.random.RandomState(seed).randint(0, p.size, (n_boot, p.size))  # scipy.stats.bootstrap's draws
    lo, hi = confidence_band(p, y, np.ones(p.size) if ww is None else w, x_md, f_md, 0.9, [idx])
    # fill_between's polygon: the lower bound along x, then the upper bound back
    for i, xv in enumerate(x_md):
        ys = verts[verts[:, 0] == xv, 1]
        assert min(ys) == pytest.approx(lo[i], abs=1e-12) and max(ys) == pytest.approx(hi[i], abs=1e-12)


def test_the_consistency_band_covers_a_calibrated_curve_about_level_of_the_time():
    """Pointwise: at a fixed prediction, the curve of calibrated data lies in its 0.9 consistency band in about
    90% of data sets (the band's definition, Dimitriadis et al. 2021, Section 4)."""
    rng = np.random.default_rng(2021)
    inside, n_sets = 0, 200
    x = np.round(np.linspace(0.05, 0.95, 400), 2)
    for s in range(n_sets):
        y = (rng.uniform(size=x.size) < x).astype(np.int8)
        t = calframe.reliability_curve(pl.DataFrame({"prob": x, "label": y}), bands="consistency", n_boot=200,
                                       seed=s)
        xs, fit = t["x"].to_numpy(), t["fit"].to_numpy()
        at = 0.5  # the curve and the band (linear between their points) at 0.5
        f, lo, hi = (np.interp(at, xs, t[c].to_numpy()) for c in ("fit", "consistency_lo", "consistency_hi"))
        inside += lo <= f <= hi
    assert 0.84 <= inside / n_sets <= 0.97


def test_bad_input():
    df = pl.DataFrame({"prob": [0.2, 0.7], "label": [0, 1], "w": [0.0, 0.0], "g": ["a", "a"]})
    with pytest.raises(calframe.ParameterError, match="bands"):
        calframe.reliability_curve(df, bands="belt")
    with pytest.raises(calframe.ParameterError, match="level"):
        calframe.reliability_curve(df, level=1.5)
    with pytest.raises(calframe.ParameterError, match="n_boot"):
        calframe.reliability_curve(df, n_boot=0)
    with pytest.raises(calframe.CalframeError, match="'w' sums to 0"):
        calframe.reliability_curve(df, weights="w", by="g", bands=None)
    two = pl.concat([df, pl.DataFrame({"prob": [0.4], "label": [1], "w": [1.0], "g": ["b"]})])
    with pytest.raises(calframe.CalframeError, match="'w' is 0 in every row of group g='a' \\(2 rows\\)"):
        calframe.reliability_curve(two, weights="w", by="g", bands=None)
    with pytest.raises(calframe.CalframeError, match="prob"):
        calframe.reliability_curve(pl.DataFrame({"prob": [0.2, 1.7], "label": [0, 1]}))
    with pytest.raises(calframe.CalframeError, match="fit"):
        calframe.reliability_curve(df.rename({"g": "fit"}), by="fit")


def test_the_display_draws_a_panel_per_group_with_both_bands():
    df = calframe.datasets.grouped_miscalibration(n=1500, seed=0)
    disp = calframe.plot.reliability_curve(df, by="region", n_boot=50)
    assert len(disp.ax_) == 4 and disp.groups_[0] == "region = east"
    labels = disp.ax_[0].get_legend_handles_labels()[1]
    assert {"Consistency band", "Confidence band", "CORP (isotonic)"} <= set(labels)
    table = calframe.reliability_curve(df, by="region", n_boot=50).filter(pl.col("region") == "east")
    np.testing.assert_array_equal(disp.line_[0].get_xydata()[:, 1], table["fit"].to_numpy())
    plt.close(disp.figure_)


def test_the_report_holds_the_table_and_draws_it():
    from calframe.report import build_report

    df = calframe.datasets.grouped_miscalibration(n=1500, seed=0)
    rep = build_report(df, by="region", ci=None)
    assert rep.corp.equals(calframe.reliability_curve(df, by="region", bands=None))  # no intervals, no bands
    assert "CORP reliability" in rep.to_html() and len(rep.to_dict()["corp"]) == rep.corp.height
