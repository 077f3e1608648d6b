"""The smooth ECE (calframe.smece) against relplot's smECE, its own reference (issue 14, part 2)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pytest

import calframe
from calframe import smooth as S

relplot = pytest.importorskip("relplot")

TOL = 1e-9


def _binary(n: int, seed: int, power: float = 1.0, ties: int | None = None, ends: bool = False) -> pl.DataFrame:
    """``n`` rows, labels drawn from p ** power (1: calibrated); ``ties``: p on that many distinct values;
    ``ends``: a fifth of the rows at exactly 0 or 1."""
    rng = np.random.default_rng(seed)
    p = rng.random(n)
    if ties is not None:
        p = np.round(p * ties) / ties
    if ends:
        p[: n // 5] = (rng.random(n // 5) < 0.5).astype(float)
    y = (rng.random(n) < p**power).astype(np.int64)
    return pl.DataFrame({"prob": p, "label": y})


CASES = {
    "tiny": dict(n=3, seed=1),
    "small": dict(n=40, seed=2, power=2.0),
    "miscalibrated": dict(n=5000, seed=3, power=3.0),
    "calibrated": dict(n=5000, seed=4),
    "ties": dict(n=3000, seed=5, ties=7, power=0.5),
    "ends": dict(n=2000, seed=6, ends=True, power=1.5),
    # a small smECE: the bisection tries bandwidths below 11/1024 (grids finer than 1001 nodes)
    "fine_grids": dict(n=300_000, seed=7),
}


def _relplot(df: pl.DataFrame) -> tuple[float, float]:
    return relplot.metrics.smECE(df["prob"].to_numpy(), df["label"].to_numpy().astype(float), return_width=True)


@pytest.mark.parametrize("case", CASES)
def test_equals_relplot(case):
    df = _binary(**CASES[case])
    want, width = _relplot(df)
    assert abs(calframe.smece(df) - want) < TOL
    if case == "fine_grids":
        assert width < 11 / 1024  # the case does reach the finer grids


@pytest.mark.parametrize("seed", range(5))
def test_equals_relplot_random(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(2, 20_000))
    df = _binary(n, seed, power=float(rng.uniform(0.3, 3.0)))
    assert abs(calframe.smece(df) - _relplot(df)[0]) < TOL


@pytest.mark.parametrize("sigma", [0.003, 0.02, 0.1, 0.7])
def test_fixed_sigma_equals_relplot(sigma):
    df = _binary(4000, 8, power=2.0)
    want = relplot.metrics.smECE_sigma(df["prob"].to_numpy(), df["label"].to_numpy().astype(float), sigma)
    assert abs(calframe.smece(df, sigma=sigma) - want) < TOL


def test_lenses():
    """class:1 (the default for one column) is relplot's (p, y); class:0 is (1 - p, 1 - y); top1 on class
    probabilities is relplot's multiclass_logits_to_confidences(probs=True)."""
    df = _binary(3000, 9, power=2.0)
    p, y = df["prob"].to_numpy(), df["label"].to_numpy().astype(float)
    assert abs(calframe.smece(df, lens="class:0") - relplot.metrics.smECE(1 - p, 1 - y)) < TOL
    rng = np.random.default_rng(10)
    logits = rng.normal(size=(4000, 4)) * 2
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    labels = np.array([rng.choice(4, p=row**1.5 / (row**1.5).sum()) for row in probs])
    mc = pl.DataFrame({"probs": probs, "label": labels})
    f, acc = relplot.metrics.multiclass_logits_to_confidences(probs, labels, probs=True)
    assert abs(calframe.smece(mc) - relplot.metrics.smECE(f, acc)) < TOL
    assert abs(calframe.smece(mc, lens="class:2") - relplot.metrics.smECE(probs[:, 2], (labels == 2) * 1.0)) < TOL


def test_by_equals_each_group():
    """by= equals the call on each group's rows, groups on the 1001-node grid and on the finer ones alike."""
    parts = [_binary(200, 11, power=3.0), _binary(300_000, 12), _binary(5000, 13, power=0.5), _binary(1, 14)]
    df = pl.concat([d.with_columns(g=pl.lit(f"g{i}")) for i, d in enumerate(parts)])
    out = calframe.smece(df, by="g").sort("g")
    assert out["n"].to_list() == [len(d) for d in parts]
    for got, d in zip(out["smece"].to_list(), parts):
        assert abs(got - _relplot(d)[0]) < TOL


def test_integer_weights_are_repeated_rows():
    df = _binary(3000, 15, power=2.0)
    rng = np.random.default_rng(16)
    w = rng.integers(0, 4, len(df))
    repeated = df.select(pl.all().repeat_by(pl.Series(w)).explode()).drop_nulls()
    weighted = df.with_columns(w=pl.Series(w.astype(float) * 1.0))
    assert abs(calframe.smece(weighted, weights="w") - _relplot(repeated)[0]) < TOL
    g = np.where(np.arange(len(df)) % 3 == 0, 1, 0)
    grouped = calframe.smece(weighted.with_columns(g=pl.Series(g)), weights="w", by="g").sort("g")
    for k in (0, 1):
        assert abs(grouped["smece"][k] - _relplot(repeated.filter(pl.Series(np.repeat(g, w)) == k))[0]) < TOL


@pytest.mark.filterwarnings("error")  # numpy's overflow warnings included
def test_weights_up_to_1e308():
    """Weights near 1.8e308 (issue 22, 5): the figure is relplot's on the rows repeated in proportion to them
    (1e-4 in the density is absolute: the rows repeated 100 k times are 1e-305 of the weights), equals the one
    on the weights / 1e300 (the same ratios), per group too beside a group of integer weights, and the
    smoothed curve of SmoothReliabilityDisplay is the one on the weights / 1e300."""
    import calframe.plot

    df = _binary(200, 21, power=2.0)
    k = np.random.default_rng(22).integers(1, 4, len(df))  # weights k * 5e307: up to 1.5e308
    big = df.with_columns(w=pl.Series(k * 5e307))
    want = _relplot(df.select(pl.all().repeat_by(pl.Series(k * 100)).explode()))[0]
    got = calframe.smece(big, weights="w")
    assert abs(got - want) < TOL
    assert got == pytest.approx(calframe.smece(big.with_columns(pl.col("w") / 1e300), weights="w"), rel=1e-12)
    g = np.arange(len(df)) % 2
    mixed = df.with_columns(w=pl.Series(np.where(g == 0, k * 5e307, k * 1.0)), g=pl.Series(g))
    grouped = calframe.smece(mixed, weights="w", by="g").sort("g")["smece"]
    rows = df.with_columns(k=pl.Series(k)).filter(pl.Series(g) == 1)
    assert abs(grouped[0] - calframe.smece(big.filter(pl.Series(g) == 0), weights="w")) < 1e-12
    assert abs(grouped[1] - _relplot(rows.select(pl.all().repeat_by("k").explode()).drop("k"))[0]) < TOL
    shown = calframe.plot.SmoothReliabilityDisplay.compute(big, weights="w", n_boot=10)
    scaled = calframe.plot.SmoothReliabilityDisplay.compute(big.with_columns(pl.col("w") / 1e300), weights="w",
                                                             n_boot=10)
    assert shown.smece == pytest.approx(scaled.smece, rel=1e-12)
    for a, b in [(shown.mu, scaled.mu), (shown.lower, scaled.lower), (shown.density, scaled.density)]:
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)


def test_surfaces_agree():
    df = _binary(2000, 17, power=2.0)
    want = calframe.smece(df)
    assert calframe.smece(df.to_pandas()) == want
    assert df.calib.smece() == want
    assert calframe.smece(df.lazy()).collect()["smece"][0] == want
    assert calframe.smece(df.lazy(), by=None, ci=None).collect()["n"][0] == len(df)


def test_grids_are_relplots():
    """Every grid the bisection can use (bandwidths k / 1024, k = 2..1024) is relplot's smooth_round_to_grid of the
    rows: the 1001-node one of the first pass for k >= 11, the finer ones of their own passes."""
    from relplot.kernels import smooth_round_to_grid

    df = _binary(5000, 20, power=2.0, ends=True)
    f, y = df["prob"].to_numpy(), df["label"].to_numpy().astype(float)
    assert {S.grid_nodes(k / 1024) for k in range(11, 1025)} == {S.COARSE_NODES}
    for m in sorted({S.grid_nodes(k / 1024) for k in range(2, 1025)}):
        grid = S.node_grids(f, y, None, None, 1, np.zeros(1, dtype=np.int64), m)[0]
        assert np.abs(grid[:, 0] - smooth_round_to_grid(f, np.ones_like(f), m)).max() < 1e-10, m
        assert np.abs(grid[:, 1] - smooth_round_to_grid(f, f - y, m)).max() < 1e-10, m


@pytest.mark.parametrize("k", [3, 10, 20, 30, 40, 60, 64, 80, 128, 512, 1024])
def test_basis_and_bounds_hold_the_fft_value(k):
    """Where the kernel's spectrum is negligible past a few coefficients, smooth_ece sums only those (the same
    value as the inverse FFT of every coefficient); where it is not, they bound it without an FFT."""
    from dataclasses import replace

    df = pl.concat([_binary(3000, 21, power=3.0), _binary(20_000, 22), _binary(500, 23, ends=True)])
    g = np.repeat(np.arange(3), [3000, 20_000, 500])
    rows = S.Rows(df["prob"].to_numpy(), df["label"].to_numpy().astype(float), None, g, 3)
    sm = S.smoother(k / 1024)
    assert (sm.basis is not None, sm.exact) == (k >= 40, 40 <= k <= 60)  # long grids below: an FFT each
    grids = rows.node_grids(np.arange(3), sm.m)
    spec = S.spectra(grids[..., 1])
    every = np.arange(3)
    want = replace(sm, exact=False).values(grids, spec, every)
    assert np.abs(sm.values(grids, spec, every) - want).max() < 1e-12
    if sm.basis is not None:
        b = sm.bounds(grids, spec, every)
        assert (np.abs(b.estimate - want) <= b.radius + 1e-13).all() and (want <= b.most + 1e-13).all()
        decided = (b.radius < (1e-13 if k <= 64 else 0.5 * want.min())) | (b.most < k / 1024)
        assert decided.all() or k > 128  # wider kernels: "most" (sum |r| smoothed) decides where it can


def test_fixed_sigma_off_the_bisection_grid():
    """A caller's sigma below 0.01 that is not k / 1024 gets a grid of its own (still relplot's value)."""
    df = _binary(20_000, 18, power=1.2)
    want = relplot.metrics.smECE_sigma(df["prob"].to_numpy(), df["label"].to_numpy().astype(float), 0.0043)
    assert abs(calframe.smece(df, sigma=0.0043) - want) < TOL


BAD = {
    "prob above 1": pl.DataFrame({"prob": [0.2, 1.5], "label": [0, 1]}),
    "null prob": pl.DataFrame({"prob": [0.2, None], "label": [0, 1]}),
    "label 2": pl.DataFrame({"prob": [0.2, 0.4], "label": [0, 2]}),
    "string prob": pl.DataFrame({"prob": ["a", "b"], "label": [0, 1]}),
    "no rows": pl.DataFrame({"prob": [], "label": []}, schema={"prob": pl.Float64, "label": pl.Int64}),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_input_as_ece(case):
    """Bad data gets ece's error (calframe._columns), naming smece."""
    with pytest.raises(calframe.CalframeError) as ece_err:
        calframe.ece(BAD[case])
    with pytest.raises(type(ece_err.value)) as err:
        calframe.smece(BAD[case])
    assert str(err.value) == str(ece_err.value).replace("ece", "smece")


def test_bad_weights_and_columns_as_ece():
    df = pl.DataFrame({"prob": [0.2, 0.4], "label": [0, 1], "w": [1.0, -1.0]})
    for kwargs in (dict(weights="w"), dict(label="nope"), dict(by="nope")):
        with pytest.raises(calframe.CalframeError) as ece_err:
            calframe.ece(df, **kwargs)
        with pytest.raises(type(ece_err.value)) as err:
            calframe.smece(df, **kwargs)
        assert str(err.value) == str(ece_err.value).replace("ece", "smece")


@pytest.mark.parametrize("kwargs, param", [(dict(sigma=0), "sigma"), (dict(sigma="wide"), "sigma"),
                                           (dict(sigma=float("nan")), "sigma"), (dict(lens="marginal"), "lens"),
                                           (dict(ci=2), "ci")])
def test_bad_parameters(kwargs, param):
    with pytest.raises(calframe.ParameterError, match=f"'{param}' parameter of smece"):
        calframe.smece(_binary(10, 0), **kwargs)


def test_pandas_by_result():
    df = _binary(500, 19).to_pandas()
    df["g"] = np.arange(len(df)) % 2
    out = calframe.smece(df, by="g")
    assert isinstance(out, pd.DataFrame) and list(out.columns) == ["g", "n", "smece"]


def test_expression_equals_by():
    df = calframe.datasets.grouped_miscalibration(n=4000, seed=1)
    got = df.group_by("region").agg(calframe.expr.smece("prob", "label", lens="top1")).sort("region")
    want = calframe.smece(df, by="region", lens="top1").sort("region")
    assert np.abs(got["smece"].to_numpy() - want["smece"].to_numpy()).max() < 1e-12  # other groups share a batch
    assert df.select(pl.col("prob").calib.smece(label="label")).item() == pytest.approx(calframe.smece(df), abs=1e-12)


_THREADS_SCRIPT = """
import numpy as np, polars as pl, calframe
rng = np.random.default_rng(24)
n = 200_003  # several row chunks of the grids' pass
p = rng.random(n)
df = pl.DataFrame({"prob": p, "label": (rng.random(n) < p**1.5).astype(np.int64), "g": rng.integers(0, 40, n),
                   "w": rng.uniform(0, 2, n)})
vals = [calframe.smece(df), calframe.smece(df, sigma=0.004)]
vals += calframe.smece(df, by="g", weights="w").sort("g")["smece"].to_list()
print(" ".join(float(v).hex() for v in vals))
"""


def test_same_bits_on_one_and_two_threads():
    """The grids' pass sums its rows in chunks fixed by the sizes: the same bits on any number of threads."""
    import os
    import subprocess
    import sys

    out = []
    for threads in ("1", "2"):
        env = {**os.environ, "NUMBA_NUM_THREADS": threads}
        run = subprocess.run([sys.executable, "-c", _THREADS_SCRIPT], env=env, capture_output=True, text=True,
                             check=True)
        out.append(run.stdout.split())
    assert len(out[0]) == 42 and out[0] == out[1]
