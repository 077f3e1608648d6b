"""The default lens (SPEC §8 "Default lens"): class:1 for one probability column, top1 for class probabilities.

References are computed here by hand (numpy / pandas) or by the peers that
measure the positive class of a binary model (scikit-learn's
calibration_curve, uncertainty-calibration's get_ece on 1-D input, relplot's
binnedECE) and the top label of class probabilities (get_ece on 2-D input).
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import polars as pl
import pytest

import calframe
from conftest import figure
from calframe import sql


@pytest.fixture(scope="module")
def aged() -> pl.DataFrame:
    """The issue's data: quickstart-style, with an age effect the top-label lens cancels."""
    return calframe.datasets.grouped_miscalibration(n=20_000, seed=0, age_shift=0.15)


def qcut_vece(p: np.ndarray, y: np.ndarray, v: np.ndarray, bins: int = 10) -> float:
    """VECE by hand: pandas.qcut of the variable, bin-weighted |mean(y) - mean(p)|."""
    b = pd.qcut(pd.Series(v), bins, labels=False, duplicates="drop")
    t = pd.DataFrame({"b": b, "p": p, "y": y.astype(float)}).groupby("b").agg(["mean", "size"])
    return float((t[("p", "size")] / len(p) * (t[("y", "mean")] - t[("p", "mean")]).abs()).sum())


def uniform_ece(conf: np.ndarray, acc: np.ndarray, bins: int = 15) -> float:
    """Binned ECE by hand: numpy.digitize on linspace(0, 1, B + 1)'s inner edges (left-closed bins)."""
    ids = np.digitize(conf, np.linspace(0, 1, bins + 1)[1:-1])
    total = 0.0
    for b in np.unique(ids):
        m = ids == b
        total += m.sum() / conf.size * abs(acc[m].mean() - conf[m].mean())
    return total


def top1_binary(p: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    pred = p > 0.5
    return np.where(pred, p, 1 - p), (pred == (y == 1)).astype(float)


# --------------------------------------------------------------------------- binary: the positive class


def test_vece_default_is_the_positive_class_on_every_frame(aged, constructor):
    p, y, age = aged["prob"].to_numpy(), aged["label"].to_numpy(), aged["age"].to_numpy()
    ref = qcut_vece(p, y, age)
    top = qcut_vece(*top1_binary(p, y), age)
    assert ref > 0.1 > 10 * top  # the top-label lens hides the age effect: the reason for the default
    frame = constructor(aged.to_dict(as_series=False))
    assert figure(calframe.vece(frame, "age")) == pytest.approx(ref, rel=1e-12)
    assert figure(calframe.calib(frame).vece("age")) == pytest.approx(ref, rel=1e-12)
    assert figure(calframe.vece(frame, "age", lens="top1")) == pytest.approx(top, rel=1e-12)


def test_ece_default_is_the_positive_class_on_every_frame(aged, constructor):
    p, y = aged["prob"].to_numpy(), aged["label"].to_numpy()
    frame = constructor(aged.to_dict(as_series=False))
    assert figure(calframe.ece(frame)) == pytest.approx(uniform_ece(p, y.astype(float)), rel=1e-12)
    assert figure(calframe.ece(frame, lens="top1")) == pytest.approx(uniform_ece(*top1_binary(p, y)), rel=1e-12)


def test_binary_default_matches_the_positive_class_peers(aged):
    """Every peer measures the positive class of a binary model; so does calframe by default."""
    import calibration
    import relplot
    from sklearn.calibration import calibration_curve

    p, y = aged["prob"].to_numpy(), aged["label"].to_numpy()
    assert calframe.ece(aged, closed="right") == pytest.approx(calibration.get_ece(p, y, num_bins=15), rel=1e-12)
    assert calframe.ece(aged, binning="equal_mass") == pytest.approx(calibration.get_ece_em(p, y, num_bins=15),
                                                                     rel=1e-12)
    assert calframe.ece(aged, bins=10) == pytest.approx(relplot.metrics.binnedECE(p, y.astype(float), nbins=10),
                                                        rel=1e-12)
    prob_true, prob_pred = calibration_curve(y, p, n_bins=10)
    rel = calframe.reliability(aged, bins=np.linspace(0, 1, 11), closed="right")
    np.testing.assert_allclose(rel["acc"].to_numpy(), prob_true, rtol=1e-12)
    np.testing.assert_allclose(rel["conf"].to_numpy(), prob_pred, rtol=1e-12)


def test_every_lens_taking_function_defaults_to_class_1_on_binary_input(aged):
    df = aged.head(3000)
    c1 = dict(lens="class:1")
    for f in (calframe.ece, calframe.mce, calframe.rmsce, calframe.gece):
        assert f(df) == f(df, **c1), f.__name__
        assert f(df) != f(df, lens="top1"), f.__name__
    assert calframe.ce(df, p=2, estimator="debiased") == calframe.ce(df, p=2, estimator="debiased", **c1)
    assert calframe.summary(df, by="region").equals(calframe.summary(df, by="region", **c1))
    assert calframe.reliability(df).equals(calframe.reliability(df, **c1))
    assert calframe.vmce(df, "age") == calframe.vmce(df, "age", **c1)
    assert calframe.vece_rank(df).equals(calframe.vece_rank(df, **c1))
    curve = calframe.vce_curve(df, "age", n_points=30)
    assert curve.lens == "class:1" and curve.summary.equals(calframe.vce_curve(df, "age", n_points=30, **c1).summary)
    assert calframe.lce(df, ["age"]).equals(calframe.lce(df, ["age"], **c1))
    assert calframe.mlce(df, ["age"]) == calframe.mlce(df, ["age"], **c1)
    assert calframe.mlce_curve(df, ["age"], gammas=[0.5]).equals(calframe.mlce_curve(df, ["age"], gammas=[0.5], **c1))
    from calframe.lenses import lens_used

    # accuracy is top-label correctness whatever the lens
    p, y = df["prob"].to_numpy(), df["label"].to_numpy()
    assert calframe.summary(df)["accuracy"][0] == pytest.approx(top1_binary(p, y)[1].mean(), rel=1e-15)
    assert lens_used(df) == lens_used(df.to_pandas()) == lens_used(df.lazy()) == "class:1"
    assert lens_used(df, lens="top1") == "top1"
    with pytest.raises(calframe.ParameterError, match="lens"):
        calframe.ece(df, lens="class1")
    with pytest.raises(calframe.ParameterError, match="of summary asks for class 7"):
        calframe.summary(df, lens="class:7")
    with pytest.raises(calframe.ColumnNotFoundError, match="nope"):
        lens_used(df.to_pandas(), "nope")


def test_sql_default_is_the_positive_class(aged):
    p, y = aged["prob"].to_numpy(), aged["label"].to_numpy()
    q = sql.ece_query("scores", prob="prob", label="label")
    got = pl.SQLContext(frames={"scores": aged}).execute(q, eager=True)["ece"][0]
    assert got == pytest.approx(uniform_ece(p, y.astype(float)), rel=1e-12)
    q = sql.vece_query("scores", "age", prob="prob", label="label")
    got = pl.SQLContext(frames={"scores": aged}).execute(q, eager=True)["vece"][0]
    assert got == pytest.approx(qcut_vece(p, y, aged["age"].to_numpy()), rel=1e-12)
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    con.register("scores", aged.to_arrow())
    sql.install_duckdb_macros(con)
    got = con.execute("SELECT ece FROM calframe_ece('scores', 'prob', 'label')").fetchone()[0]
    assert got == pytest.approx(uniform_ece(p, y.astype(float)), rel=1e-12)
    top = con.execute("SELECT ece FROM calframe_ece('scores', 'prob', 'label', lens := 'top1')").fetchone()[0]
    assert top == pytest.approx(uniform_ece(*top1_binary(p, y)), rel=1e-12)


def test_dask_default_is_the_positive_class(aged):
    dd = pytest.importorskip("dask.dataframe")
    import dask

    import calframe.frames.dask  # noqa: F401  (registers ddf.calib)

    pdf = aged.to_pandas()
    p, y = aged["prob"].to_numpy(), aged["label"].to_numpy()
    with dask.config.set(scheduler="synchronous"):
        ddf = dd.from_pandas(pdf, npartitions=3)
        assert ddf.calib.vece("age").compute() == pytest.approx(qcut_vece(p, y, aged["age"].to_numpy()), rel=1e-12)
        assert ddf.calib.ece().compute() == pytest.approx(uniform_ece(p, y.astype(float)), rel=1e-12)


# --------------------------------------------------------------------------- class probabilities: the top label


def test_class_probabilities_keep_top1(constructor):
    import calibration

    from calframe.lenses import lens_used

    mc = calframe.datasets.multiclass(n=5000, k=4, seed=0)
    P, y = np.stack(mc["probs"].to_numpy()), mc["label"].to_numpy()
    conf, acc = P.max(axis=1), (P.argmax(axis=1) == y).astype(float)
    two = pl.DataFrame({"p0": 1 - P[:, 0], "p1": P[:, 0], "label": (y == 0).astype(np.int64)})
    for frame, prob, ref in (
        (constructor({f"p{j}": P[:, j] for j in range(4)} | {"label": y}), [f"p{j}" for j in range(4)],
         uniform_ece(conf, acc)),
        (mc, None, uniform_ece(conf, acc)),
        # two class columns are class probabilities too: top1, not class:1
        (constructor(two.to_dict(as_series=False)), ["p0", "p1"],
         uniform_ece(*top1_binary(two["p1"].to_numpy(), two["label"].to_numpy()))),
    ):
        assert figure(calframe.ece(frame, prob=prob)) == pytest.approx(ref, rel=1e-12)
        assert lens_used(frame, prob) == "top1"
    assert calframe.ece(mc, closed="right") == pytest.approx(calibration.get_ece(P, y, num_bins=15), rel=1e-12)
    assert calframe.gece(mc) == pytest.approx(uniform_ece(conf, acc), rel=1e-12)


# --------------------------------------------------------------------------- what the outputs say


def test_report_and_cli_name_the_lens(aged, tmp_path, capsys):
    from calframe.cli import main
    from calframe.report import build_report

    rep = build_report(aged.head(3000), by="region", variables=["age"], ci=None)
    assert rep.options["lens"] == "class:1"
    assert rep.summary["ece"][0] == pytest.approx(calframe.ece(aged.head(3000), lens="class:1"), rel=1e-12)
    assert "lens class:1 (probability of the positive class" in rep.to_html()
    path = tmp_path / "scores.parquet"
    aged.head(3000).write_parquet(path)

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "calframe", "report", str(path), "--no-ci", *args],
                              capture_output=True, text=True)

    res = run()
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("Lens class:1 (probability of the positive class")

    def in_process(*args: str) -> tuple[str, str]:  # the same command through calframe.cli.main (no new process)
        capsys.readouterr()
        assert main(["report", str(path), "--no-ci", *args]) == 0
        out = capsys.readouterr()
        return out.out, out.err

    out, err = in_process("--json", "-")
    assert json.loads(out)["options"]["lens"] == "class:1" and "lens class:1" in err
    out, err = in_process("--lens", "top1", "--json", "-")
    figs = json.loads(out)
    assert figs["options"]["lens"] == "top1" and "lens top1" in err
    assert figs["summary"][0]["ece"] == pytest.approx(calframe.ece(aged.head(3000), lens="top1"), rel=1e-12)


def test_plots_label_the_lens_used(aged):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from calframe.plot import ReliabilityDisplay, VariableCurveDisplay

    df = aged.head(2000)
    disp = ReliabilityDisplay.from_frame(df, bins=10)
    assert (disp.hist_ax_.get_xlabel(), disp.ax_.get_ylabel()) == (
        "Mean predicted probability of class 1", "Frequency of class 1")
    disp = ReliabilityDisplay.from_frame(df, bins=10, lens="top1")
    assert (disp.hist_ax_.get_xlabel(), disp.ax_.get_ylabel()) == ("Mean confidence (top-1)", "Accuracy")
    mc = calframe.datasets.multiclass(n=2000, k=3, seed=0)
    assert ReliabilityDisplay.from_frame(mc, bins=10).ax_.get_ylabel() == "Accuracy"
    curve = VariableCurveDisplay(calframe.vce_curve(df, "age", n_points=30)).plot()
    assert curve.ax_.get_ylabel() == "Frequency / probability of class 1"
    assert curve.acc_line_.get_label() == "Frequency of class 1"
    plt.close("all")
