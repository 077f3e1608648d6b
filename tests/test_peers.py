"""calframe against code we did not write: uncertainty-calibration, scikit-learn, relplot, pandas.

Conventions of each peer, mapped to calframe options:

- uncertainty-calibration (Kumar et al.) ``get_ece``: edges i/B, bins (a, b],
  first bin [0, e1] -> ``closed="right"``. ``get_equal_bins`` -> ``equal_mass``.
  1-D (binary) input is the positive-class error in both of its modes ->
  ``lens="class:1"``. Its ``get_calibration_error`` picks binning by a hidden
  heuristic (``is_discrete``), so the continuous-score path
  ``lower_bound_scaling_ce`` is called explicitly. It casts nothing when given
  float64 probabilities; we pass float64.
- scikit-learn ``calibration_curve(strategy="uniform")``: linspace edges,
  ``searchsorted(side="left")`` on the inner edges -> (a, b] bins on
  linspace edges: ``bins=numpy.linspace(0, 1, B + 1), closed="right"``
  (``closed="right"`` with an int uses Kumar's i/B edges, which differ from
  linspace's in the last bit for some i, e.g. 0.6 vs 0.6000000000000001),
  ``lens="class:1"``.
- relplot ``binnedECE(f, y, nbins)``: bin = int(f / (1/nbins)) (left-closed)
  with a separate (nbins+1)-th bin for f == 1.0 exactly, ``lens="class:1"``,
  ``closed="left"``. Equal to calframe whenever no score is exactly 1.0 or
  within a few ulps of an edge (where division and linspace round apart).
- pandas ``qcut(duplicates="drop")`` -> ``binning="quantile"``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pytest

import calframe
from calframe.binning import Binning, bin_values
from conftest import as_flavour, collected, figure

calibration = pytest.importorskip("calibration", reason="uncertainty-calibration is a test extra")
sk_calibration = pytest.importorskip("sklearn.calibration", reason="scikit-learn is a test extra")
relplot = pytest.importorskip("relplot", reason="relplot is a test extra")


def edge_values(bins: int) -> np.ndarray:
    """0, 1, every uniform edge both ways (linspace and i/B), and their neighbours."""
    lin = np.linspace(0, 1, bins + 1)
    div = np.array([i * 1.0 / bins for i in range(bins + 1)])
    vals = np.concatenate([lin, div, np.nextafter(lin, 2), np.nextafter(div, -1)])
    return np.clip(vals, 0.0, 1.0)


def binary_frame(n: int, seed: int, with_edges: bool = True, bins: tuple[int, ...] = (10, 15)) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.beta(0.7, 0.7, n)
    if with_edges:
        extra = np.concatenate([edge_values(b) for b in bins] + [np.array([0.0, 1.0, 0.5] * 5)])
        p = np.concatenate([p, extra])
    y = (rng.random(p.shape[0]) < np.clip(p * 0.8 + 0.1, 0, 1)).astype(np.int64)
    return pl.DataFrame({"prob": p, "label": y, "g": rng.integers(0, 4, p.shape[0])})


def multiclass_arrays(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 2, (n, k))
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    # a few rows with ties and with edge-valued top probabilities
    p[:5] = 1.0 / k
    p[5:10] = 0.0
    p[5:10, 0] = 1.0
    y = rng.integers(0, k, n)
    return p, y


def mc_frame(p: np.ndarray, y: np.ndarray) -> pl.DataFrame:
    k = p.shape[1]
    return pl.DataFrame({"probs": p, "label": y}).with_columns(pl.col("probs").cast(pl.Array(pl.Float64, k)))


# --------------------------------------------------------------------------- uncertainty-calibration


@pytest.mark.parametrize("bins", [1, 2, 10, 15, 33])
@pytest.mark.parametrize("seed", [0, 1])
def test_binary_ece_matches_get_ece(bins, seed):
    df = binary_frame(3000, seed)
    p, y = df["prob"].to_numpy(), df["label"].to_numpy()
    ref = calibration.get_ece(p, y, num_bins=bins)
    got = calframe.ece(df, lens="class:1", closed="right", bins=bins)
    assert got == pytest.approx(ref, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("bins", [2, 10, 15])
def test_binary_equal_mass_matches_get_ece_em(bins):
    df = binary_frame(2000, 3)
    p, y = df["prob"].to_numpy(), df["label"].to_numpy()
    ref = calibration.get_ece_em(p, y, num_bins=bins)
    got = calframe.ece(df, lens="class:1", binning="equal_mass", bins=bins)
    assert got == pytest.approx(ref, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("debias", [True, False])
@pytest.mark.parametrize("binning_scheme", ["equal_mass", "uniform"])
def test_binary_l2_ce_matches_lower_bound_scaling_ce(debias, binning_scheme):
    df = binary_frame(2500, 4)
    p, y = df["prob"].to_numpy(), df["label"].to_numpy()
    scheme = calibration.get_equal_bins if binning_scheme == "equal_mass" else calibration.get_equal_prob_bins
    ref = calibration.lower_bound_scaling_ce(p, y, p=2, debias=debias, num_bins=15, binning_scheme=scheme)
    got = calframe.ce(
        df, p=2, lens="class:1", estimator="debiased" if debias else "plugin", binning=binning_scheme, closed="right"
    )
    assert got == pytest.approx(ref, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("mode", ["top-label", "marginal"])
@pytest.mark.parametrize("debias", [True, False])
@pytest.mark.parametrize("k", [3, 10])
def test_multiclass_l2_ce_matches(mode, debias, k):
    p, y = multiclass_arrays(3000, k, seed=k)
    ref = calibration.lower_bound_scaling_ce(p, y, p=2, debias=debias, num_bins=15, mode=mode)
    got = calframe.ce(
        mc_frame(p, y),
        p=2,
        lens="top1" if mode == "top-label" else "marginal",
        estimator="debiased" if debias else "plugin",
        binning="equal_mass",
    )
    assert got == pytest.approx(ref, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("mode", ["top-label", "marginal"])
@pytest.mark.parametrize("bins", [10, 15])
def test_multiclass_ece_matches(mode, bins):
    p, y = multiclass_arrays(3000, 5, seed=bins)
    lens = "top1" if mode == "top-label" else "marginal"
    df = mc_frame(p, y)
    assert calframe.ece(df, lens=lens, closed="right", bins=bins) == pytest.approx(
        calibration.get_ece(p, y, num_bins=bins, mode=mode), rel=1e-12, abs=1e-15
    )
    assert calframe.ece(df, lens=lens, binning="equal_mass", bins=bins) == pytest.approx(
        calibration.get_ece_em(p, y, num_bins=bins, mode=mode), rel=1e-12, abs=1e-15
    )


def test_list_of_class_columns_equals_array_column():
    p, y = multiclass_arrays(500, 4, seed=9)
    wide = pl.DataFrame({f"p{j}": p[:, j] for j in range(4)} | {"y": y})
    ref = calibration.get_ece(p, y)
    assert calframe.ece(wide, prob=[f"p{j}" for j in range(4)], label="y", closed="right") == pytest.approx(ref, rel=1e-12)


@pytest.mark.parametrize("flavour", ["polars", "lazy", "pandas", "pandas[pyarrow]", "pandas[nullable]", "dask"])
def test_debiased_rmsce_default_is_get_calibration_error(flavour):
    """rmsce is ce(p=2): with estimator="debiased" and no binning it bins equal-mass, as ce does and as
    uncertainty-calibration's get_calibration_error (debiased l2, 15 equal-mass bins; 1-D input: the positive
    class) does, on every frame type, in its df.calib and expression forms."""
    df = binary_frame(2000, 6, with_edges=False).drop("g")
    p, y = df["prob"].to_numpy(), df["label"].to_numpy()
    assert not calibration.utils.is_discrete(p)  # its continuous-score path: equal-mass bins
    ref = calibration.get_calibration_error(p, y)
    frame = as_flavour(df, flavour)
    assert figure(calframe.rmsce(frame, estimator="debiased")) == pytest.approx(ref, rel=1e-12, abs=1e-15)
    assert figure(frame.calib.rmsce(estimator="debiased")) == pytest.approx(ref, rel=1e-12, abs=1e-15)
    if flavour in ("polars", "lazy"):
        expr = frame.select(calframe.expr.rmsce("prob", "label", estimator="debiased"))
        assert collected(expr).item() == pytest.approx(ref, rel=1e-12, abs=1e-15)
    assert figure(calframe.rmsce(frame)) == figure(calframe.ce(frame, p=2, binning="uniform"))  # plugin: uniform


def test_kumar_unit_test_case():
    """uncertainty-calibration's hand-computed case: CE_2 = sqrt(4/9 * 0.25^2 + 5/9 * 0.2^2)."""
    df = pl.DataFrame({"prob": [0.5, 0.5, 0.5, 0.6, 0.5, 0.6, 0.6, 0.6, 0.6], "label": [0, 1, 0, 1, 0, 1, 1, 1, 0]})
    expected = np.sqrt(4 / 9 * 0.25**2 + 5 / 9 * 0.2**2)
    assert calframe.ce(df, p=2, lens="class:1") == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(0.2236068, abs=1e-7)


# --------------------------------------------------------------------------- scikit-learn


@pytest.mark.parametrize("bins", [5, 10, 15])
def test_reliability_matches_calibration_curve(bins):
    df = binary_frame(3000, 5, bins=(bins,))
    p, y = df["prob"].to_numpy(), df["label"].to_numpy()
    prob_true, prob_pred = sk_calibration.calibration_curve(y, p, n_bins=bins, strategy="uniform")
    rel = calframe.reliability(df, lens="class:1", bins=np.linspace(0, 1, bins + 1), closed="right")
    np.testing.assert_allclose(rel["acc"].to_numpy(), prob_true, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(rel["conf"].to_numpy(), prob_pred, rtol=1e-12, atol=1e-15)


def test_brier_and_log_loss_match_sklearn():
    from sklearn.metrics import brier_score_loss, log_loss

    df = binary_frame(2000, 6)
    p, y = df["prob"].to_numpy(), df["label"].to_numpy()
    assert calframe.brier(df) == pytest.approx(brier_score_loss(y, p), rel=1e-12)
    assert calframe.log_loss(df) == pytest.approx(log_loss(y, p), rel=1e-12)
    pm, ym = multiclass_arrays(2000, 4, seed=6)
    onehot = np.eye(4)[ym]
    assert calframe.brier(mc_frame(pm, ym)) == pytest.approx(((pm - onehot) ** 2).sum(1).mean(), rel=1e-12)
    assert calframe.log_loss(mc_frame(pm, ym)) == pytest.approx(log_loss(ym, pm, labels=range(4)), rel=1e-12)
    # K = 2 given as an Array column is scored like binary input
    p2 = np.column_stack([1 - p, p])
    assert calframe.brier(mc_frame(p2, y)) == pytest.approx(brier_score_loss(y, p), rel=1e-12)


def test_accuracy_matches_sklearn():
    from sklearn.metrics import accuracy_score

    pm, ym = multiclass_arrays(2000, 6, seed=7)
    assert calframe.accuracy(mc_frame(pm, ym)) == pytest.approx(accuracy_score(ym, pm.argmax(1)), rel=1e-15)


# --------------------------------------------------------------------------- relplot


@pytest.mark.parametrize("bins", [5, 10, 15])
def test_binned_ece_matches_relplot(bins):
    df = binary_frame(3000, 8, with_edges=False).filter(pl.col("prob") < 1.0)  # relplot gives 1.0 its own bin
    p, y = df["prob"].to_numpy(), df["label"].to_numpy().astype(float)
    ref = relplot.metrics.binnedECE(p, y, nbins=bins)
    assert calframe.ece(df, lens="class:1", bins=bins) == pytest.approx(ref, rel=1e-12, abs=1e-15)


# --------------------------------------------------------------------------- pandas.qcut


@pytest.mark.parametrize("bins", [1, 3, 10, 15])
@pytest.mark.parametrize("n", [7, 100, 1001, 2000])
def test_quantile_bins_equal_qcut(bins, n):
    rng = np.random.default_rng(n + bins)
    x = np.round(rng.random(n), 2)  # ties, so some edges coincide and are dropped
    x[:3] = [0.0, 1.0, 0.5]
    got = bin_values(x, None, 1, Binning("quantile", bins)).ids
    codes = pd.qcut(x, bins, labels=False, duplicates="drop")
    if np.isnan(codes).any():  # pandas gives NaN when all edges collapse to one; calframe keeps one bin
        assert np.unique(x).size == 1
        return
    np.testing.assert_array_equal(got, codes.astype(np.int64))


def test_quantile_bins_per_group_equal_qcut_per_group():
    rng = np.random.default_rng(11)
    n = 5000
    x = np.round(rng.random(n), 3)
    g = rng.integers(0, 7, n).astype(np.int32)
    got = bin_values(x, g, 7, Binning("quantile", 10)).ids
    for k in range(7):
        m = g == k
        np.testing.assert_array_equal(got[m], pd.qcut(x[m], 10, labels=False, duplicates="drop"))


def test_equal_mass_edges_equal_get_equal_bins_per_group():
    rng = np.random.default_rng(12)
    n = 4000
    x = rng.random(n)
    x[:50] = 0.5
    g = rng.integers(0, 5, n).astype(np.int32)
    res = bin_values(x, g, 5, Binning("equal_mass", 15))
    for k in range(5):
        m = g == k
        edges = calibration.utils.get_equal_bins(list(x[m]), num_bins=15)
        np.testing.assert_array_equal(res.edges[res.offsets[k] : res.offsets[k + 1]], edges)
        np.testing.assert_array_equal(res.ids[m], np.searchsorted(edges, x[m]))


def test_seeded_normal_debiasing_matches_kumar(monkeypatch):
    """Kumar App. G (``normal_debiased_ce``, p = 1) with the library's draws taken from calframe's seeded stream.

    The reference draws ``np.random.normal(loc=bin label means, scale=their sd)``
    once per resample; routing those calls to ``numpy.random.default_rng(seed)``
    makes both sides see the same Gaussian numbers, so the results must agree
    to rounding.
    """
    df = binary_frame(3000, 10, with_edges=False)
    prob, y = df["prob"].to_numpy(), df["label"].to_numpy()
    seed = 123
    rng = np.random.default_rng(seed)
    monkeypatch.setattr(calibration.utils.np.random, "normal", lambda loc, scale: rng.normal(loc=loc, scale=scale))
    ref = calibration.utils.lower_bound_scaling_ce(
        prob, y, p=1, debias=True, num_bins=15, binning_scheme=calibration.utils.get_equal_bins
    )
    got = calframe.ce(df, p=1, lens="class:1", estimator="debiased", seed=seed)
    assert got == pytest.approx(ref, rel=1e-10)
    assert got != pytest.approx(calframe.ce(df, p=1, lens="class:1", binning="equal_mass"), rel=1e-6)


@pytest.mark.parametrize("mode", ["binary", "top-label", "marginal"])
@pytest.mark.parametrize("bins", [2, 10, 15])
def test_ace_is_get_ece_em(mode, bins):
    """calframe.ace (added through the recipe of docs/design.md) is uncertainty-calibration's equal-mass ECE,
    ``get_ece_em``: binary (the positive class), top-label and class-averaged."""
    if mode == "binary":
        df = binary_frame(2000, bins)
        p, y, lens = df["prob"].to_numpy(), df["label"].to_numpy(), None
        ref = calibration.get_ece_em(p, y, num_bins=bins)
    else:
        p, y = multiclass_arrays(3000, 4, seed=bins)
        df, lens = mc_frame(p, y), "top1" if mode == "top-label" else "marginal"
        ref = calibration.get_ece_em(p, y, num_bins=bins, mode=mode)
    assert calframe.ace(df, lens=lens, bins=bins) == pytest.approx(ref, rel=1e-12, abs=1e-15)
    assert calframe.ace(df, lens=lens, bins=bins) == calframe.ece(df, lens=lens, bins=bins, binning="equal_mass")
