"""calframe.plot: every display renders to a valid PNG and shows the API's figures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import calframe  # noqa: E402
from calframe import plot as P  # noqa: E402
from calframe.plot import (  # noqa: E402
    MLCECurveDisplay,
    ReliabilityDisplay,
    SmoothReliabilityDisplay,
    VariableCurveDisplay,
    VeceRankDisplay,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def df() -> pl.DataFrame:
    return calframe.datasets.grouped_miscalibration(n=3000, seed=0)


def save_png(disp, path: Path) -> Path:
    disp.figure_.savefig(path, dpi=60)
    data = path.read_bytes()
    assert len(data) > 1000 and data[:8] == PNG_MAGIC
    img = plt.imread(path)
    assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100
    return path


def fmt(x: float) -> str:
    return f"{x:.4f}"


# --------------------------------------------------------------------------- reliability


def test_reliability_single(df, tmp_path):
    disp = ReliabilityDisplay.from_frame(df, bins=10)
    save_png(disp, tmp_path / "rel.png")
    table = calframe.reliability(df, bins=10)
    ece = calframe.ece(df, bins=10)
    assert disp.ece_ == pytest.approx(ece, abs=1e-12)
    assert fmt(ece) in disp.ax_.get_title()
    assert len(disp.figure_.axes) == 2  # diagram + count histogram
    assert len(disp.bars_) == table.height
    assert [b.get_height() for b in disp.bars_] == pytest.approx(table["acc"].to_list())
    assert len(disp.hist_ax_.patches) == table.height
    assert [p.get_height() for p in disp.hist_ax_.patches] == table["n"].to_list()
    assert disp.ax_.get_ylabel() == "Frequency of class 1"  # one probability column: the positive class
    assert disp.hist_ax_.get_xlabel() == "Mean predicted probability of class 1"
    assert disp.hist_ax_.get_ylabel() == "Count"
    assert disp.ax_.get_xlim() == (0, 1) and disp.ax_.get_ylim() == (0, 1)
    labels = disp.ax_.get_legend_handles_labels()[1]
    assert labels == ["Perfectly calibrated", "Frequency of class 1", "Gap"]
    assert disp.groups_ == []


def test_reliability_by_small_multiples(df, tmp_path):
    disp = ReliabilityDisplay.from_frame(df, by="region", bins=10)
    save_png(disp, tmp_path / "rel_by.png")
    per_group = calframe.ece(df, by="region", bins=10)
    assert disp.ax_.shape == (4,) and disp.hist_ax_.shape == (4,)
    assert len(disp.figure_.axes) == 8
    assert disp.groups_ == [f"region = {r}" for r in per_group["region"].to_list()]
    for ax, region, ece in zip(disp.ax_, per_group["region"], per_group["ece"]):
        assert ax.get_title() == f"region = {region}: ECE = {fmt(ece)}"
        assert disp.ece_[f"region = {region}"] == pytest.approx(ece, abs=1e-12)
    # shared axes: one y range, one x range for diagrams and histograms
    first = disp.ax_[0]
    assert all(first.get_shared_y_axes().joined(first, a) for a in disp.ax_[1:])
    assert all(first.get_shared_x_axes().joined(first, a) for a in list(disp.ax_[1:]) + list(disp.hist_ax_))
    assert "region" in disp.figure_._suptitle.get_text()


def test_reliability_grid_layout_two_keys(df):
    disp = ReliabilityDisplay.from_frame(df, by=["region", "device"], bins=5, hist=False)
    assert len(disp.ax_) == 12 and disp.hist_ax_ is None
    assert len(disp.figure_.axes) == 12
    gs = disp.ax_[0].get_gridspec()
    assert (gs.nrows, gs.ncols) == (4, 3)
    assert disp.groups_[0].startswith("region = ") and ", device = " in disp.groups_[0]


def test_reliability_points_pandas_lazy_and_user_ax(df, tmp_path):
    ece = calframe.ece(df, bins=8)
    for frame in (df.to_pandas(), df.lazy()):
        fig, ax = plt.subplots()
        disp = ReliabilityDisplay.from_frame(frame, bins=8, kind="points", ax=ax)
        assert disp.ax_ is ax and disp.figure_ is fig
        assert fmt(ece) in ax.get_title()
        assert len(disp.figure_.axes) == 2  # the histogram is appended below the given Axes
    line = disp.bars_
    assert list(line.get_xdata()) == pytest.approx(calframe.reliability(df, bins=8)["conf"].to_list())
    save_png(disp, tmp_path / "rel_points.png")


def test_reliability_from_precomputed_table_pandas(df):
    table = calframe.reliability(df.to_pandas(), by="region", lens="class:1", binning="quantile", bins=5)
    disp = ReliabilityDisplay(table, by="region", lens="class:1").plot()  # as calframe.report calls it
    assert len(disp.ax_) == 4
    assert disp.hist_ax_[0].get_xlabel() == "Mean predicted probability of class 1"
    assert disp.ax_[0].get_ylabel() == "Frequency of class 1"
    ece = calframe.ece(df, by="region", lens="class:1", binning="quantile", bins=5)
    assert [disp.ece_[f"region = {r}"] for r in ece["region"]] == pytest.approx(ece["ece"].to_list())
    # group columns are inferred when by is not given
    assert ReliabilityDisplay(table).by == ["region"]


def test_reliability_weights_and_name(df):
    w = df.with_columns(w=pl.Series(np.linspace(0.5, 2.0, df.height)))
    disp = ReliabilityDisplay.from_frame(w, weights="w", name="model A")
    ece = calframe.ece(w, weights="w")
    assert disp.ax_.get_title() == f"model A (ECE = {fmt(ece)})"


def test_reliability_errors(df):
    with pytest.raises(calframe.ParameterError, match="calframe.reliability"):
        ReliabilityDisplay(pl.DataFrame({"conf": [0.5]}))
    with pytest.raises(calframe.ParameterError, match="kind"):
        ReliabilityDisplay.from_frame(df, kind="pie")
    fig, ax = plt.subplots()
    with pytest.raises(calframe.ParameterError, match="4 panels"):
        ReliabilityDisplay.from_frame(df, by="region", ax=ax)
    with pytest.raises(TypeError):
        ReliabilityDisplay({"bin": [0]})


# --------------------------------------------------------------------------- variable curves


def test_variable_curve_single(df, tmp_path):
    res = calframe.vce_curve(df, "age", n_points=60)
    disp = VariableCurveDisplay(res, level=0.95).plot()
    save_png(disp, tmp_path / "vce.png")
    assert disp.vce_ == pytest.approx(res.vce) and disp.v_star_ == pytest.approx(res.v_star)
    title = disp.ax_.get_title()
    assert f"VCE = {fmt(res.vce)}" in title and "age" in title
    assert disp.ax_.get_xlabel() == "age"
    assert disp.ax_.get_ylabel() == "Frequency / probability of class 1"  # the lens vce_curve used
    assert list(disp.acc_line_.get_ydata()) == pytest.approx(res.curve["acc"].to_list())
    assert list(disp.conf_line_.get_ydata()) == pytest.approx(res.curve["conf"].to_list())
    assert len(disp.ax_.collections) == 2  # the two bands
    # two curves, the v* line and the gap segment at v*
    assert len(disp.ax_.get_lines()) == 4
    vline = [ln for ln in disp.ax_.get_lines() if ln.get_label().startswith("v*")][0]
    assert vline.get_xdata()[0] == pytest.approx(res.v_star)
    legend = [t.get_text() for t in disp.figure_.legends[0].get_texts()]
    assert "Frequency of class 1 95% band" in legend and "Probability of class 1" in legend


def test_variable_curve_by_panels_from_pandas(df, tmp_path):
    disp = VariableCurveDisplay.from_frame(df.to_pandas(), "age", by="region", n_points=40)
    save_png(disp, tmp_path / "vce_by.png")
    summ = calframe.vce_curve(df, "age", by="region", n_points=40).summary
    assert len(disp.ax_) == 4 and len(disp.figure_.axes) == 4
    for ax, region, vce in zip(disp.ax_, summ["region"], summ["vce"]):
        assert ax.get_title().startswith(f"region = {region}: VCE = {fmt(vce)}")
        assert len(ax.collections) == 2
    first = disp.ax_[0]
    assert all(first.get_shared_y_axes().joined(first, a) for a in disp.ax_[1:])


def test_variable_curve_from_frames_and_errors(df):
    res = calframe.vce_curve(df, "age", n_points=30)
    disp = VariableCurveDisplay(res.curve, res.summary, variable="age").plot(bands=False, mark_v_star=False)
    assert len(disp.ax_.collections) == 0 and len(disp.ax_.get_lines()) == 2
    with pytest.raises(calframe.ParameterError, match="summary"):
        VariableCurveDisplay(res.curve)


# --------------------------------------------------------------------------- VECE ranking


def test_vece_rank_chart(df, tmp_path):
    disp = VeceRankDisplay.from_frame(df)
    save_png(disp, tmp_path / "rank.png")
    rank = calframe.vece_rank(df)
    assert len(disp.bars_) == rank.height
    assert [t.get_text() for t in disp.ax_.get_yticklabels()] == rank["variable"].to_list()
    assert [b.get_width() for b in disp.bars_] == pytest.approx(rank["vece"].to_list())
    assert list(disp.markers_.get_xdata()) == pytest.approx(rank["vmce"].to_list())
    assert disp.ax_.get_xlabel().startswith("Calibration error")
    assert disp.ax_.get_title() == "VECE by variable"
    texts = [t.get_text() for t in disp.ax_.texts]
    assert texts == [fmt(v) for v in rank["vece"]]
    # categorical and numeric bars differ in color
    colors = {k: b.get_facecolor() for k, b in zip(rank["kind"], disp.bars_)}
    assert colors["numeric"] != colors["categorical"]


def test_vece_rank_by_group(df, tmp_path):
    table = calframe.vece_rank(df.to_pandas(), ["age", "region"], by="device")
    disp = VeceRankDisplay(table).plot()
    save_png(disp, tmp_path / "rank_by.png")
    assert disp.by == ["device"] and len(disp.ax_) == 3
    for ax, bars, label in zip(disp.ax_, disp.bars_, disp.groups_):
        assert len(bars) == 2 and ax.get_title() == label
        widths = [b.get_width() for b in bars]
        assert widths == sorted(widths, reverse=True)


# --------------------------------------------------------------------------- MLCE


def test_mlce_from_arrays(tmp_path):
    gammas = np.logspace(-2, 2, 9)
    mlce = 0.1 + 0.3 / (1 + 3 * gammas)
    disp = MLCECurveDisplay(gammas, mlce, 0.1).plot()
    save_png(disp, tmp_path / "mlce.png")
    assert disp.ax_.get_xscale() == "log"
    assert disp.ax_.get_ylabel() == "MLCE" and "γ" in disp.ax_.get_xlabel()
    assert len(disp.ax_.get_lines()) == 2
    assert list(disp.lines_[None].get_ydata()) == pytest.approx(mlce.tolist())
    assert disp.mce_lines_[None].get_ydata()[0] == pytest.approx(0.1)
    assert "MCE = 0.1000" in disp.ax_.get_title()


def test_mlce_from_curve_groups_and_validation():
    curve = pl.DataFrame({
        "g": ["a"] * 3 + ["b"] * 3,
        "gamma": [0.1, 1.0, 10.0] * 2,
        "mlce": [0.3, 0.2, 0.15, 0.4, 0.3, 0.25],
        "mce": [0.14] * 3 + [0.2] * 3,
    })
    disp = MLCECurveDisplay.from_curve(curve.to_pandas()).plot()
    assert set(disp.lines_) == {"a", "b"} and len(disp.ax_.get_lines()) == 4
    assert disp.mce_lines_["b"].get_ydata()[0] == pytest.approx(0.2)
    with pytest.raises(calframe.ParameterError, match="gamma"):
        MLCECurveDisplay([0.0, 1.0], [0.1, 0.2])
    with pytest.raises(calframe.ParameterError):
        MLCECurveDisplay([1.0, 2.0], [0.1])


def test_mlce_from_frame_needs_mlce_curve(df, monkeypatch):
    import calframe.api

    monkeypatch.delattr(calframe, "mlce_curve", raising=False)
    monkeypatch.delattr(calframe.api, "mlce_curve", raising=False)
    with pytest.raises(NotImplementedError, match="mlce_curve"):
        MLCECurveDisplay.from_frame(df)
    with pytest.raises(NotImplementedError):
        P.mlce_curve_plot(df)

    def fake(frame, gammas=(0.1, 1.0, 10.0)):
        return pl.DataFrame({"gamma": list(gammas), "mlce": [0.3, 0.2, 0.1], "mce": [0.1] * 3})

    monkeypatch.setattr(calframe, "mlce_curve", fake, raising=False)
    disp = P.mlce_curve_plot(df, gammas=(0.5, 1.0, 2.0))
    assert list(disp.lines_[None].get_xdata()) == [0.5, 1.0, 2.0]


# --------------------------------------------------------------------------- shortcuts, laziness


def test_shortcuts_return_displays(df):
    assert isinstance(P.reliability_diagram(df, bins=5), ReliabilityDisplay)
    assert isinstance(P.vce_curve_plot(df, "age", n_points=20), VariableCurveDisplay)
    assert isinstance(P.vece_rank_plot(df, ["age", "device"]), VeceRankDisplay)


def test_matplotlib_imported_lazily():
    code = "import sys, calframe.plot; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_null_group_gets_its_own_panel(df):
    nulled = df.with_columns(r=pl.when(pl.col("region") == "east").then(None).otherwise(pl.col("region")))
    disp = ReliabilityDisplay.from_frame(nulled, by="r", bins=5, hist=False)
    ece = calframe.ece(nulled, by="r", bins=5)
    assert "r = null" in disp.groups_ and len(disp.ax_) == 4
    for r, e in zip(ece["r"], ece["ece"]):
        assert disp.ece_[f"r = {'null' if r is None else r}"] == pytest.approx(e)


# --------------------------------------------------------------------------- smooth reliability diagram


def test_smooth_curve_is_relplots():
    """The curve is relplot's KernelSmoother at the bandwidth, the density its kde (relplot's own objects)."""
    relplot = pytest.importorskip("relplot")
    from relplot.estimators import KernelSmoother
    from relplot.kernels import ReflectedGaussianKernel

    from calframe import smooth as S

    rng = np.random.default_rng(0)
    f = rng.random(4000)
    y = (rng.random(4000) < f**2).astype(np.uint8)
    sigma = relplot.metrics.smECE(f, y * 1.0, return_width=True)[1]
    t, mu, dens = S.curve(f, y, None, sigma)
    ker = ReflectedGaussianKernel(sigma)
    want = KernelSmoother(ker).fit(f.reshape(-1, 1), y * 1.0).predict(t.reshape(-1, 1))
    assert np.abs(mu - want).max() < 1e-9
    assert np.abs(dens - ker.kde(f, t)).max() < 1e-9


def test_smooth_display(df, tmp_path):
    disp = SmoothReliabilityDisplay.from_frame(df, n_boot=30)
    save_png(disp, tmp_path / "smooth.png")
    assert disp.smece == pytest.approx(calframe.smece(df), abs=1e-12)
    assert fmt(disp.smece) in disp.ax_.get_title()
    assert disp.ax_.get_ylabel() == "Frequency of class 1"
    assert disp.density_ax_.get_xlabel() == "Predicted probability of class 1"
    inside = (disp.lower <= disp.mu + 1e-12) & (disp.mu <= disp.upper + 1e-12)
    assert inside.mean() > 0.9  # the band is around the curve


def test_smooth_display_top1_no_band_lazy_user_ax(df):
    fig, ax = plt.subplots()
    disp = SmoothReliabilityDisplay.from_frame(df.lazy(), lens="top1", band=False, density=False, ax=ax,
                                               name="model A")
    assert disp.ax_ is ax and disp.band_ is None and disp.lower is None
    assert (disp.ax_.get_xlabel(), disp.ax_.get_ylabel()) == ("Confidence (top-1)", "Accuracy")
    assert disp.ax_.get_title().startswith("model A: ")
    with pytest.raises(calframe.ParameterError, match="'sigma' parameter"):
        SmoothReliabilityDisplay.from_frame(df, sigma=-1)
    with pytest.raises(calframe.ParameterError):
        SmoothReliabilityDisplay([0, 1], [0.2], [1, 1])
