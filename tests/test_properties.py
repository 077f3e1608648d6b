"""Properties of calframe's figures, checked against independent computations.

Every assertion compares calframe with something computed another way: a
hand-built numpy reference (``ref_*`` below, written from SPEC §1-§3 and §7,
with pandas.qcut for quantile bins), the same call on a shuffled / filtered /
row-repeated frame, or a value known by construction.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
import pandas as pd
import polars as pl
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import calframe
from conftest import collected, figure

EPS = np.finfo(np.float64).eps
TOL = 1e-12

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: for tests parametrised over many cases: fewer examples each
PER_CASE = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FIXTURE_OK = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


# each test runs with one numba thread (tests/conftest.py explains why)
pytestmark = pytest.mark.usefixtures("one_numba_thread")


# =========================================================================== numpy reference


def ref_top1(prob: np.ndarray, label: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """SPEC §1.2 top1: binary conf = max(p, 1-p), class 1 predicted iff p > 0.5; ties -> lowest index."""
    if prob.ndim == 1:
        pred = (prob > 0.5).astype(np.int64)
        conf = np.where(pred == 1, prob, 1.0 - prob)
    else:
        pred = np.argmax(prob, axis=1)
        conf = prob[np.arange(len(prob)), pred]
    return conf, (pred == label).astype(np.float64)


def ref_class(prob: np.ndarray, label: np.ndarray, c: int) -> tuple[np.ndarray, np.ndarray]:
    if prob.ndim == 1:
        g = prob if c == 1 else 1.0 - prob
    else:
        g = prob[:, c]
    return g, (label == c).astype(np.float64)


def ref_lensed(prob: np.ndarray, label: np.ndarray, lens: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(conf, acc) of a scalar lens; SPEC §8 default (None): class:1 for one probability column, else top1."""
    if lens is None:
        lens = "class:1" if prob.ndim == 1 else "top1"
    return ref_top1(prob, label) if lens == "top1" else ref_class(prob, label, int(lens.split(":")[1]))


def ref_bin_ids(conf: np.ndarray, binning: str, bins: int, closed: str) -> np.ndarray:
    """Bin ids per SPEC §1.3 (numpy.digitize / pandas.qcut / Kumar's equal-mass)."""
    if binning == "uniform":
        if closed == "left":
            inner = np.linspace(0.0, 1.0, bins + 1)[1:-1]
            return np.digitize(conf, inner)  # number of inner edges <= x
        inner = np.array([i / bins for i in range(bins + 1)])[1:-1]
        return np.digitize(conf, inner, right=True)  # number of inner edges < x
    if binning == "quantile":
        if np.unique(conf).size == 1:
            return np.zeros(conf.shape[0], dtype=np.int64)  # one edge: a single bin (pandas gives NaN)
        ids = pd.qcut(conf, bins, labels=False, duplicates="drop")
        return np.asarray(ids, dtype=np.int64)
    if binning == "equal_mass":
        s = np.sort(conf)
        chunks = np.array_split(s, min(bins, s.size))
        edges = [(chunks[i][-1] + chunks[i + 1][0]) / 2.0 for i in range(len(chunks) - 1)] + [1.0]
        edges = np.array(sorted(set(edges)))
        return np.searchsorted(edges, conf, side="left")  # (e_{i-1}, e_i], as bisect_left
    raise AssertionError(binning)


def ref_bin_table(conf: np.ndarray, acc: np.ndarray, ids: np.ndarray, w: np.ndarray | None = None):
    """(bin id, weight sum, mean conf, mean acc) of every non-empty bin, sorted by bin id."""
    w = np.ones_like(conf) if w is None else w
    out = []
    for b in np.unique(ids):
        m = (ids == b) & (w > 0)
        if not m.any():
            continue
        n = w[m].sum()
        out.append((int(b), n, (w[m] * conf[m]).sum() / n, (w[m] * acc[m]).sum() / n))
    return out


def ref_ce_binned(conf, acc, ids, p, estimator="plugin", w=None) -> float:
    table = ref_bin_table(conf, acc, ids, w)
    total = sum(n for _, n, _, _ in table)
    if p == "inf":
        return max(abs(c - a) for _, _, c, a in table)
    if estimator == "debiased":
        e2 = 0.0
        for _, n, c, a in table:
            if n >= 2:
                e2 += n / total * ((c - a) ** 2 - a * (1 - a) / (n - 1))
        return math.sqrt(max(e2, 0.0))
    e = sum(n / total * abs(c - a) ** p for _, n, c, a in table)
    return e ** (1.0 / p)


def ref_ce(prob, label, *, p=1, lens=None, binning="uniform", bins=15, closed="left", estimator="plugin", w=None):
    k = 2 if prob.ndim == 1 else prob.shape[1]
    if lens == "marginal":
        per = []
        for c in range(k):
            conf, acc = ref_class(prob, label, c)
            ids = ref_bin_ids(conf, binning, bins, closed)
            if estimator == "debiased":
                per.append(ref_ce_binned(conf, acc, ids, 2, "debiased", w) ** 2)
            else:
                per.append(ref_ce_binned(conf, acc, ids, p, estimator, w))
        if estimator == "debiased":
            return math.sqrt(np.mean(per))
        if p == "inf":
            return max(per)
        return float(np.mean(np.array(per) ** p) ** (1.0 / p))
    conf, acc = ref_lensed(prob, label, lens)
    ids = ref_bin_ids(conf, binning, bins, closed)
    return ref_ce_binned(conf, acc, ids, p, estimator, w)


def ref_brier(prob, label, w=None) -> float:
    if prob.ndim == 1:
        r = (prob - label) ** 2
    elif prob.shape[1] == 2:
        r = (prob[:, 1] - (label == 1)) ** 2
    else:
        r = ((prob - np.eye(prob.shape[1])[label]) ** 2).sum(axis=1)
    return float(np.average(r, weights=w))


def ref_log_loss(prob, label, w=None) -> float:
    py = np.where(label == 1, prob, 1 - prob) if prob.ndim == 1 else prob[np.arange(len(prob)), label]
    return float(np.average(-np.log(np.clip(py, EPS, 1 - EPS)), weights=w))


def ref_accuracy(prob, label, w=None) -> float:
    return float(np.average(ref_top1(prob, label)[1], weights=w))


#: name -> (calframe call on a frame, reference on arrays). Columns: prob/label, or p0..p{K-1}.
def _cases() -> dict[str, tuple[Callable[..., Any], Callable[..., float]]]:
    cases: dict[str, tuple[Callable[..., Any], Callable[..., float]]] = {}
    for binning in ("uniform", "quantile", "equal_mass"):
        kw = {"binning": binning, "bins": 7}
        cases[f"ece-{binning}"] = (lambda f, kw=kw, **o: calframe.ece(f, **kw, **o),
                                   lambda p, y, kw=kw, **o: ref_ce(p, y, p=1, **kw, **o))
        cases[f"mce-{binning}"] = (lambda f, kw=kw, **o: calframe.mce(f, **kw, **o),
                                   lambda p, y, kw=kw, **o: ref_ce(p, y, p="inf", **kw, **o))
        cases[f"rmsce-{binning}"] = (lambda f, kw=kw, **o: calframe.rmsce(f, **kw, **o),
                                     lambda p, y, kw=kw, **o: ref_ce(p, y, p=2, **kw, **o))
        cases[f"ce_debiased-{binning}"] = (
            lambda f, kw=kw, **o: calframe.ce(f, p=2, estimator="debiased", **kw, **o),
            lambda p, y, kw=kw, **o: ref_ce(p, y, p=2, estimator="debiased", **kw, **o),
        )
    cases["ece-right-B4"] = (lambda f, **o: calframe.ece(f, bins=4, closed="right", **o),
                             lambda p, y, **o: ref_ce(p, y, p=1, bins=4, closed="right", **o))
    cases["ece-class1"] = (lambda f, **o: calframe.ece(f, lens="class:1", bins=5, **o),
                           lambda p, y, **o: ref_ce(p, y, p=1, lens="class:1", bins=5, **o))
    cases["ce_debiased-marginal"] = (
        lambda f, **o: calframe.ce(f, p=2, estimator="debiased", lens="marginal", bins=4, **o),
        lambda p, y, **o: ref_ce(p, y, p=2, estimator="debiased", lens="marginal", binning="equal_mass", bins=4, **o),
    )
    cases["rmsce-marginal"] = (lambda f, **o: calframe.rmsce(f, lens="marginal", bins=5, **o),
                               lambda p, y, **o: ref_ce(p, y, p=2, lens="marginal", bins=5, **o))
    cases["brier"] = (lambda f, **o: calframe.brier(f, **o), lambda p, y, **o: ref_brier(p, y))
    cases["log_loss"] = (lambda f, **o: calframe.log_loss(f, **o), lambda p, y, **o: ref_log_loss(p, y))
    cases["accuracy"] = (lambda f, **o: calframe.accuracy(f, **o), lambda p, y, **o: ref_accuracy(p, y))
    return cases


CASES = _cases()
#: the figure column each case writes in grouped output
FIGURE = {
    name: ("ece" if name.startswith("ece") else "mce" if name.startswith("mce")
           else "rmsce" if name.startswith("rmsce") else "ce" if name.startswith("ce_") else name)
    for name in CASES
}


def test_reference_matches_spec_examples() -> None:
    # The docstring example (SPEC §1.5 by hand): bins of width 1/15, rows 0.9 / 0.8 / 0.3->0.7 / 0.6
    p = np.array([0.9, 0.8, 0.3, 0.6])
    y = np.array([1, 0, 0, 1])
    # top1: conf [0.9, 0.8, 0.7, 0.6], correct [1, 0, 1, 1]: four singleton bins
    assert ref_ce(p, y) == pytest.approx((0.1 + 0.8 + 0.3 + 0.4) / 4, abs=1e-15)
    assert ref_brier(p, y) == pytest.approx((0.01 + 0.64 + 0.09 + 0.16) / 4, abs=1e-15)
    assert ref_ce(p, y) == pytest.approx(calframe.ece(pl.DataFrame({"prob": p, "label": y})), abs=1e-15)


# =========================================================================== strategies

#: values on or next to bin edges, 0, 1 and 0.5 (the binary top1 tie)
SPECIAL = sorted(
    {0.0, 1.0, 0.5, 0.25, 0.75}
    | {float(v) for b in (4, 5, 7, 15) for v in np.linspace(0, 1, b + 1)}
    | {i / b for b in (4, 5, 7, 15) for i in range(b + 1)}
)
prob_value = st.one_of(st.floats(0.0, 1.0), st.sampled_from(SPECIAL))


@st.composite
def binary_arrays(draw, min_size: int = 1, max_size: int = 40) -> tuple[np.ndarray, np.ndarray]:
    n = draw(st.integers(min_size, max_size))
    p = np.array(draw(st.lists(prob_value, min_size=n, max_size=n)), dtype=np.float64)
    y = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)), dtype=np.int64)
    return p, y


@st.composite
def multiclass_arrays(draw, min_size: int = 1, max_size: int = 40) -> tuple[np.ndarray, np.ndarray]:
    n = draw(st.integers(min_size, max_size))
    k = draw(st.integers(2, 4))  # K = 2 as class columns: Brier is the binary (p_1 - y)^2 (SPEC §7)
    # small integer weights normalised: many exact ties in argmax (ties -> lowest index)
    raw = np.array(
        draw(st.lists(st.lists(st.integers(0, 6), min_size=k, max_size=k).filter(any), min_size=n, max_size=n)),
        dtype=np.float64,
    )
    p = raw / raw.sum(axis=1, keepdims=True)
    y = np.array(draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)), dtype=np.int64)
    return p, y


scored_arrays = st.one_of(binary_arrays(), multiclass_arrays())


def to_dict(p: np.ndarray, y: np.ndarray, **extra: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(column dict, prob= kwargs) for binary (prob) or multiclass (p0..p{K-1}) arrays."""
    if p.ndim == 1:
        cols: dict[str, Any] = {"prob": p, "label": y}
        kw: dict[str, Any] = {}
    else:
        cols = {f"p{j}": p[:, j] for j in range(p.shape[1])}
        cols["label"] = y
        kw = {"prob": [f"p{j}" for j in range(p.shape[1])]}
    cols.update(extra)
    return cols, kw


def close(a: float, b: float, tol: float = TOL) -> bool:
    return abs(a - b) <= tol


# =========================================================================== row order


@pytest.mark.parametrize("case", list(CASES))
@PER_CASE
@given(data=scored_arrays, seed=st.integers(0, 2**32 - 1))
def test_row_order_does_not_matter(data, case: str, seed: int) -> None:
    p, y = data
    call, ref = CASES[case]
    perm = np.random.default_rng(seed).permutation(len(y))
    cols, kw = to_dict(p, y)
    shuffled, _ = to_dict(p[perm], y[perm])
    a = call(pl.DataFrame(cols), **kw)
    b = call(pl.DataFrame(shuffled), **kw)
    assert close(a, b), (a, b)
    assert close(a, ref(p, y)), (a, ref(p, y))


@FAST
@given(data=binary_arrays(min_size=2), seed=st.integers(0, 2**32 - 1))
def test_row_order_does_not_matter_grouped_reliability(data, seed: int) -> None:
    p, y = data
    g = np.arange(len(y)) % 3
    perm = np.random.default_rng(seed).permutation(len(y))
    a = calframe.reliability(pl.DataFrame({"prob": p, "label": y, "g": g}), by="g", bins=6)
    b = calframe.reliability(pl.DataFrame({"prob": p[perm], "label": y[perm], "g": g[perm]}), by="g", bins=6)
    assert a.select("g", "bin", "n").equals(b.select("g", "bin", "n"))
    for c in ("weight", "conf", "acc", "gap"):
        np.testing.assert_allclose(a[c].to_numpy(), b[c].to_numpy(), rtol=0, atol=TOL)


@FAST
@given(data=scored_arrays, bins=st.integers(1, 12))
def test_summary_columns_match_reference(data, bins: int) -> None:
    p, y = data
    cols, kw = to_dict(p, y)
    out = calframe.summary(pl.DataFrame(cols), bins=bins, **kw)
    assert out.columns == ["n", "accuracy", "ece", "mce", "rmsce", "ce_debiased", "brier", "log_loss"]
    row = out.row(0, named=True)
    assert row["n"] == len(y)
    expected = {
        "accuracy": ref_accuracy(p, y),
        "ece": ref_ce(p, y, p=1, bins=bins),
        "mce": ref_ce(p, y, p="inf", bins=bins),
        "rmsce": ref_ce(p, y, p=2, bins=bins),
        "ce_debiased": ref_ce(p, y, p=2, estimator="debiased", binning="equal_mass", bins=bins),
        "brier": ref_brier(p, y),
        "log_loss": ref_log_loss(p, y),
    }
    for name, value in expected.items():
        assert close(row[name], value), (name, row[name], value)


# =========================================================================== by = filtered frames


@st.composite
def grouped_frames(draw):
    p, y = draw(scored_arrays)
    n = len(y)
    g = draw(st.lists(st.sampled_from([0, 1, 2, None]), min_size=n, max_size=n))
    h = draw(st.lists(st.sampled_from(["a", "b"]), min_size=n, max_size=n))
    cols, kw = to_dict(p, y)
    df = pl.DataFrame(cols).with_columns(g=pl.Series(g, dtype=pl.Int64), h=pl.Series(h))
    by = draw(st.sampled_from(["g", ["g", "h"]]))
    return df, kw, by


@pytest.mark.parametrize("case", list(CASES))
@PER_CASE
@given(frame=grouped_frames())
def test_by_equals_each_filtered_group(frame, case: str) -> None:
    df, kw, by = frame
    call, _ = CASES[case]
    keys = [by] if isinstance(by, str) else by
    out = call(df, by=by, **kw)
    assert isinstance(out, pl.DataFrame)
    expected_groups = df.select(keys).unique()
    assert out.height == expected_groups.height
    assert out.select(keys).unique().height == out.height
    for row in out.iter_rows(named=True):
        cond = pl.lit(True)
        for k in keys:
            cond = cond & (pl.col(k).is_null() if row[k] is None else pl.col(k) == row[k])
        sub = df.filter(cond)
        assert row["n"] == sub.height
        expected = call(sub, **kw)
        got = row[FIGURE[case]]
        assert close(got, expected), (row, expected)


def test_by_equals_filtered_for_resampled_debiased_ce() -> None:
    rng = np.random.default_rng(0)
    n = 400
    p = rng.uniform(0, 1, n)
    y = (rng.uniform(0, 1, n) < p).astype(np.int64)
    df = pl.DataFrame({"prob": p, "label": y, "g": rng.integers(0, 3, n)})
    out = calframe.ce(df, p=1, estimator="debiased", by="g", seed=0)
    for row in out.iter_rows(named=True):
        alone = calframe.ce(df.filter(pl.col("g") == row["g"]), p=1, estimator="debiased", seed=0)
        assert row["ce"] == pytest.approx(alone, abs=TOL), row


def test_by_keys_are_sorted_with_nulls_last() -> None:
    df = pl.DataFrame({"prob": [0.1, 0.9, 0.6, 0.3, 0.8], "label": [0, 1, 1, 0, 1], "g": [2, None, 0, 2, 1]})
    out = calframe.brier(df, by="g")
    assert out["g"].to_list() == [0, 1, 2, None]
    assert out["n"].to_list() == [1, 1, 2, 1]
    assert out["brier"].to_list() == pytest.approx([0.16, 0.04, (0.01 + 0.09) / 2, 0.01], abs=1e-15)


# =========================================================================== weights = repeated rows

WEIGHTED_CASES = {
    "ece-left": lambda f, **o: calframe.ece(f, bins=7, **o),
    "ece-right": lambda f, **o: calframe.ece(f, bins=4, closed="right", **o),
    "mce": lambda f, **o: calframe.mce(f, bins=7, **o),
    "rmsce": lambda f, **o: calframe.rmsce(f, bins=5, **o),
    "ce_debiased-uniform": lambda f, **o: calframe.ce(f, p=2, estimator="debiased", binning="uniform", bins=5, **o),
    "ece-class0": lambda f, **o: calframe.ece(f, lens="class:0", bins=5, **o),
    "rmsce-marginal": lambda f, **o: calframe.rmsce(f, lens="marginal", bins=5, **o),
    "brier": lambda f, **o: calframe.brier(f, **o),
    "log_loss": lambda f, **o: calframe.log_loss(f, **o),
    "accuracy": lambda f, **o: calframe.accuracy(f, **o),
}


@pytest.mark.parametrize("case", list(WEIGHTED_CASES))
@PER_CASE
@given(data=scored_arrays, wdata=st.data())
def test_integer_weights_equal_repeated_rows(data, case: str, wdata) -> None:
    p, y = data
    w = np.array(wdata.draw(st.lists(st.integers(0, 3), min_size=len(y), max_size=len(y))), dtype=np.int64)
    assume(w.sum() > 0)
    call = WEIGHTED_CASES[case]
    cols, kw = to_dict(p, y, w=w.astype(np.float64))
    rep, _ = to_dict(np.repeat(p, w, axis=0), np.repeat(y, w))
    got = call(pl.DataFrame(cols), weights="w", **kw)
    expected = call(pl.DataFrame(rep), **kw)
    assert close(got, expected), (got, expected)


@FAST
@given(data=binary_arrays(min_size=3), wdata=st.data())
def test_integer_weights_equal_repeated_rows_grouped(data, wdata) -> None:
    p, y = data
    n = len(y)
    w = np.array(wdata.draw(st.lists(st.integers(1, 3), min_size=n, max_size=n)), dtype=np.int64)
    g = np.arange(n) % 2
    got = calframe.rmsce(pl.DataFrame({"prob": p, "label": y, "g": g, "w": w.astype(float)}), by="g", weights="w", bins=6)
    exp = calframe.rmsce(pl.DataFrame({"prob": np.repeat(p, w), "label": np.repeat(y, w), "g": np.repeat(g, w)}), by="g", bins=6)
    assert got["g"].to_list() == exp["g"].to_list()
    assert got["n"].to_list() == [int((g == k).sum()) for k in (0, 1)]  # n counts rows, not weights
    np.testing.assert_allclose(got["rmsce"].to_numpy(), exp["rmsce"].to_numpy(), rtol=0, atol=TOL)
    # the reliability table: same bins, weights, means; n counts rows (not weights)
    wt = calframe.reliability(pl.DataFrame({"prob": p, "label": y, "g": g, "w": w.astype(float)}), by="g", weights="w", bins=6)
    rp = calframe.reliability(pl.DataFrame({"prob": np.repeat(p, w), "label": np.repeat(y, w), "g": np.repeat(g, w)}), by="g", bins=6)
    assert wt.select("g", "bin", "lower", "upper").equals(rp.select("g", "bin", "lower", "upper"))
    for c in ("weight", "conf", "acc", "gap"):
        np.testing.assert_allclose(wt[c].to_numpy(), rp[c].to_numpy(), rtol=0, atol=TOL)
    conf, _ = ref_lensed(p, y)
    ids = ref_bin_ids(conf, "uniform", 6, "left")
    rows_per_cell = {(k, b): int(((g == k) & (ids == b)).sum()) for k, b in zip(wt["g"].to_list(), wt["bin"].to_list())}
    assert wt["n"].to_list() == list(rows_per_cell.values())


def test_fractional_weights_against_reference() -> None:
    rng = np.random.default_rng(11)
    p = rng.uniform(0, 1, 300)
    y = (rng.uniform(0, 1, 300) < p**2).astype(np.int64)
    w = rng.exponential(1.0, 300)
    df = pl.DataFrame({"prob": p, "label": y, "w": w})
    assert close(calframe.ece(df, weights="w", bins=10), ref_ce(p, y, bins=10, w=w))
    assert close(calframe.mce(df, weights="w", bins=10), ref_ce(p, y, p="inf", bins=10, w=w))
    assert close(calframe.brier(df, weights="w"), ref_brier(p, y, w))
    assert close(calframe.log_loss(df, weights="w"), ref_log_loss(p, y, w))
    assert close(calframe.accuracy(df, weights="w"), ref_accuracy(p, y, w))


# =========================================================================== threads


def _thread_calls(df: pl.DataFrame) -> dict[str, Any]:
    return {
        "ece": calframe.ece(df),
        "mce": calframe.mce(df, bins=20),
        "rmsce_right": calframe.rmsce(df, closed="right", bins=10),
        "ece_quantile": calframe.ece(df, binning="quantile", bins=10),
        "ce_debiased": calframe.ce(df, p=2, estimator="debiased"),
        "brier": calframe.brier(df),
        "summary_by": calframe.summary(df, by="g"),
        "ece_w": calframe.ece(df, weights="w"),
        "reliability_by": calframe.reliability(df, by="g"),
        "ece_ci": calframe.ece(df.head(3000), ci=0.9, n_boot=60, seed=5),
    }


def test_one_and_two_numba_threads_give_identical_bits() -> None:
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba was started with fewer than 2 threads")
    # > 2 * 65536 rows: the accumulate pass cuts rows into several chunks (run in parallel)
    n = 200_003
    rng = np.random.default_rng(7)
    p = rng.uniform(0, 1, n)
    y = (rng.uniform(0, 1, n) < p).astype(np.int64)
    df = pl.DataFrame({"prob": p, "label": y, "g": rng.integers(0, 5, n), "w": rng.uniform(0, 2, n)})
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = _thread_calls(df)
        numba.set_num_threads(2)
        two = _thread_calls(df)
    finally:
        numba.set_num_threads(old)
    for name in one:
        a, b = one[name], two[name]
        if isinstance(a, float):
            assert a == b or (math.isnan(a) and math.isnan(b)), name
        else:
            assert a.equals(b), name
    # and the values are right (independent reference)
    assert close(one["ece"], ref_ce(p, y), 1e-11)
    assert close(one["mce"], ref_ce(p, y, p="inf", bins=20), 1e-11)
    assert close(one["rmsce_right"], ref_ce(p, y, p=2, bins=10, closed="right"), 1e-11)
    assert close(one["ece_quantile"], ref_ce(p, y, binning="quantile", bins=10), 1e-11)
    assert close(one["ce_debiased"], ref_ce(p, y, p=2, binning="equal_mass", estimator="debiased"), 1e-11)
    assert close(one["brier"], ref_brier(p, y), 1e-11)
    assert close(one["ece_w"], ref_ce(p, y, w=df["w"].to_numpy()), 1e-11)


# =========================================================================== frame flavours


@FIXTURE_OK
@given(data=scored_arrays, case=st.sampled_from(list(CASES)), gdata=st.data())
def test_same_numbers_for_every_frame_flavour(constructor, data, case: str, gdata) -> None:
    p, y = data
    n = len(y)
    g = np.array(gdata.draw(st.lists(st.sampled_from(["x", "y", "z"]), min_size=n, max_size=n)))
    call, ref = CASES[case]
    cols, kw = to_dict(p, y, g=g)
    frame = constructor(cols)
    got = figure(call(frame, **kw))
    assert isinstance(got, float)
    assert close(got, ref(p, y)), (got, ref(p, y))
    grouped = collected(call(frame, by="g", **kw))
    is_polars = isinstance(frame, (pl.DataFrame, pl.LazyFrame))
    assert isinstance(grouped, pl.DataFrame if is_polars else pd.DataFrame)
    table = grouped if is_polars else pl.from_pandas(grouped)
    assert table["g"].to_list() == sorted(set(g.tolist()))
    for key, n_, value in zip(table["g"].to_list(), table["n"].to_list(), table[FIGURE[case]].to_list()):
        m = g == key
        assert n_ == int(m.sum())
        assert close(value, ref(p[m], y[m])), (key, value, ref(p[m], y[m]))


@pytest.mark.parametrize("method", ["ece", "mce", "rmsce", "brier", "log_loss", "accuracy"])
def test_accessor_forwards(constructor, method: str) -> None:
    rng = np.random.default_rng(2)
    p = rng.uniform(0, 1, 50)
    y = (rng.uniform(0, 1, 50) < p).astype(np.int64)
    frame = constructor({"prob": p, "label": y})
    ref = {
        "ece": lambda: ref_ce(p, y),
        "mce": lambda: ref_ce(p, y, p="inf"),
        "rmsce": lambda: ref_ce(p, y, p=2),
        "brier": lambda: ref_brier(p, y),
        "log_loss": lambda: ref_log_loss(p, y),
        "accuracy": lambda: ref_accuracy(p, y),
    }[method]()
    assert close(figure(getattr(frame.calib, method)()), ref)


def test_array_and_list_columns_equal_class_columns() -> None:
    rng = np.random.default_rng(4)
    z = rng.normal(0, 2, (120, 4))
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    y = rng.integers(0, 4, 120)
    arr = pl.DataFrame({"probs": p, "label": y})
    assert isinstance(arr.schema["probs"], pl.Array)
    lst = arr.with_columns(pl.col("probs").arr.to_list())
    expected = ref_ce(p, y, bins=10)
    for frame in (arr, lst, arr.to_pandas(), lst.to_pandas(use_pyarrow_extension_array=True)):
        assert close(calframe.ece(frame, bins=10), expected)
    assert close(calframe.brier(arr), ref_brier(p, y))


# =========================================================================== debiased estimator


def test_debiased_ce_near_zero_and_plugin_biased_upward_on_calibrated_data() -> None:
    # Perfectly calibrated binary data: p ~ U(0, 1), y ~ Bernoulli(p). On the default lens
    # (class:1: conf = p) given the confs every bin's expected label frequency equals its mean
    # conf: the true binned CE is exactly 0 (equal-mass bins depend on the confs only, not on
    # the labels). (On the top1 lens, conf = max(p, 1 - p) ~ U(0.5, 1) with Bernoulli(conf)
    # correctness, the same holds with the same v below.)
    #
    # Bound. With B = 15 bins of n_b ~ N/B rows, ybar_b - s_b has variance
    # sigma_b^2 ~ v / n_b, v = E[c(1 - c)] = 1/6 for c ~ U(0, 1) (and for c ~ U(0.5, 1)). Hence
    #   E[plugin E2]   = sum_b w_b sigma_b^2 ~ B v / N = 5.0e-4   (N = 5000),
    #   E[debiased E2] = 0,
    # and either estimator's per-seed standard deviation is about sqrt(2 B) v / N = 1.8e-4
    # (sum of B weighted, centred chi-square(1) terms; 1.9e-4 in a 200-seed simulation).
    # The mean over S = 20 seeds has sd ~ 4.3e-5, so the thresholds below (2.5e-4) sit more than
    # 5.5 sd away from both expected values: a failure has probability < 1e-7, i.e. it would
    # mean a real bias, not bad luck.
    n, seeds = 5000, 20
    db, pl_ = [], []
    for seed in range(seeds):
        rng = np.random.default_rng(1000 + seed)
        p = rng.uniform(0, 1, n)
        y = (rng.uniform(0, 1, n) < p).astype(np.int64)
        df = pl.DataFrame({"prob": p, "label": y})
        db.append(calframe.ce(df, p=2, estimator="debiased", binning="equal_mass", squared=True))
        pl_.append(calframe.ce(df, p=2, estimator="plugin", binning="equal_mass", squared=True))
        # each seed: the debiased correction is positive (every bin has 0 < ybar < 1 and n_b >= 2)
        assert db[-1] < pl_[-1]
    db_mean, pl_mean = float(np.mean(db)), float(np.mean(pl_))
    assert abs(db_mean) < 2.5e-4, db_mean
    assert pl_mean > 2.5e-4, pl_mean
    # the un-squared figures: sqrt(max(E2, 0)) for the debiased one
    df = pl.DataFrame({"prob": p, "label": y})
    assert calframe.ce(df, p=2, estimator="debiased") == pytest.approx(math.sqrt(max(db[-1], 0.0)), abs=1e-15)
    assert calframe.ce(df, p=2, estimator="plugin", binning="equal_mass") == pytest.approx(math.sqrt(pl_[-1]), abs=1e-15)


@FAST
@given(data=binary_arrays(min_size=2, max_size=60), binning=st.sampled_from(["uniform", "quantile", "equal_mass"]))
def test_debiased_squared_matches_reference_formula(data, binning: str) -> None:
    # SPEC §3: E2_db = sum_b p_b [(s_b - ybar_b)^2 - ybar_b (1 - ybar_b) / (n_b - 1)], n_b < 2 -> 0
    p, y = data
    conf, acc = ref_lensed(p, y)  # the default lens: class:1 for one probability column
    ids = ref_bin_ids(conf, binning, 6, "left")
    table = ref_bin_table(conf, acc, ids)
    total = len(y)
    e2 = sum(nb / total * ((c - a) ** 2 - a * (1 - a) / (nb - 1)) for _, nb, c, a in table if nb >= 2)
    got = calframe.ce(pl.DataFrame({"prob": p, "label": y}), p=2, estimator="debiased", binning=binning, bins=6, squared=True)
    assert close(got, e2)


# =========================================================================== ECE = 0 by construction


@st.composite
def calibrated_by_construction(draw):
    """A binary frame whose every uniform bin has mean conf == accuracy exactly (up to rounding).

    In bin b = [lo, hi) we put m rows, j of them correct, with conf values c + d and c - d in
    pairs (and one at c when m is odd), c = j / m strictly inside the bin.
    """
    bins = draw(st.integers(2, 12))
    lens = draw(st.sampled_from(["class:1", "top1"]))
    edges = np.linspace(0, 1, bins + 1)
    conf, correct, bin_of = [], [], []
    for b in range(bins):
        lo, hi = edges[b], edges[b + 1]
        if lens == "top1" and lo < 0.5:
            continue  # top1 conf is >= 0.5
        m = draw(st.integers(0, 12))
        js = [j for j in range(m + 1) if lo + 1e-9 < j / m < hi - 1e-9] if m else []
        if not js:
            continue
        j = draw(st.sampled_from(js))
        c = j / m
        room = min(c - lo, hi - c) * 0.5
        vals = []
        for _ in range(m // 2):
            d = draw(st.floats(0.0, 1.0)) * room
            vals += [c + d, c - d]
        if m % 2:
            vals.append(c)
        labels = [1] * j + [0] * (m - j)
        labels = draw(st.permutations(labels))
        conf += vals
        correct += labels
        bin_of += [b] * m
    assume(len(conf) > 0)
    conf = np.array(conf)
    assert (ref_bin_ids(conf, "uniform", bins, "left") == np.array(bin_of)).all()
    correct = np.array(correct, dtype=np.int64)
    if lens == "class:1":
        prob, label = conf, correct
    else:
        # binary top1: conf = p for p > 0.5 (all our confs are > 0.5), correct iff label == 1
        assert (conf > 0.5).all()
        prob, label = conf, correct
    return prob, label, np.array(bin_of), bins, lens


@FAST
@given(case=calibrated_by_construction(), flip=st.data())
def test_ece_is_zero_when_each_bin_is_calibrated(case, flip) -> None:
    prob, label, bin_of, bins, lens = case
    n = len(label)
    df = pl.DataFrame({"prob": prob, "label": label})
    assert calframe.ece(df, bins=bins, lens=lens) < 1e-12
    assert calframe.rmsce(df, bins=bins, lens=lens) < 1e-7  # sqrt of a ~1e-16 rounding residue
    assert calframe.mce(df, bins=bins, lens=lens) < 1e-12
    # Flip one label in bin b (m rows): acc moves by 1/m, conf does not, so
    # ECE = (m / N)(1 / m) = 1 / N, MCE = 1 / m, RMSCE = sqrt((m / N) / m^2).
    i = flip.draw(st.integers(0, n - 1))
    m = int((bin_of == bin_of[i]).sum())
    flipped = label.copy()
    flipped[i] = 1 - flipped[i]
    df2 = pl.DataFrame({"prob": prob, "label": flipped})
    assert close(calframe.ece(df2, bins=bins, lens=lens), 1 / n)
    assert close(calframe.mce(df2, bins=bins, lens=lens), 1 / m)
    assert close(calframe.rmsce(df2, bins=bins, lens=lens), math.sqrt(1 / (n * m)))


# =========================================================================== ordering of the CE family


@FAST
@given(
    data=scored_arrays,
    binning=st.sampled_from(["uniform", "quantile", "equal_mass"]),
    closed=st.sampled_from(["left", "right"]),
    bins=st.integers(1, 12),
    lens=st.sampled_from(["top1", "class:0", "class:1", "marginal"]),
)
def test_mce_ge_rmsce_ge_ece(data, binning: str, closed: str, bins: int, lens: str) -> None:
    p, y = data
    cols, kw = to_dict(p, y)
    df = pl.DataFrame(cols)
    o = dict(binning=binning, closed=closed, bins=bins, lens=lens, **kw)
    e, r, m = calframe.ece(df, **o), calframe.rmsce(df, **o), calframe.mce(df, **o)
    assert 0.0 <= e <= r + TOL
    assert r <= m + TOL
    assert m <= 1.0
    assert close(e, ref_ce(p, y, p=1, lens=lens, binning=binning, bins=bins, closed=closed))
    assert close(m, ref_ce(p, y, p="inf", lens=lens, binning=binning, bins=bins, closed=closed))


# =========================================================================== reliability table


@FAST
@given(
    data=scored_arrays,
    binning=st.sampled_from(["uniform", "quantile", "equal_mass"]),
    closed=st.sampled_from(["left", "right"]),
    bins=st.integers(1, 12),
    lens=st.sampled_from(["top1", "class:0", "class:1"]),
)
def test_reliability_table_matches_reference_and_ece(data, binning, closed, bins, lens) -> None:
    p, y = data
    cols, kw = to_dict(p, y)
    df = pl.DataFrame(cols)
    o = dict(binning=binning, closed=closed, bins=bins, lens=lens, **kw)
    conf, acc = ref_lensed(p, y, lens)
    table = calframe.reliability(df, **o)
    ref = ref_bin_table(conf, acc, ref_bin_ids(conf, binning, bins, closed))
    assert table.height == len(ref)
    assert table["n"].to_list() == [int(nb) for _, nb, _, _ in ref]
    np.testing.assert_allclose(table["conf"].to_numpy(), [c for *_, c, _ in ref], rtol=0, atol=TOL)
    np.testing.assert_allclose(table["acc"].to_numpy(), [a for *_, a in ref], rtol=0, atol=TOL)
    np.testing.assert_allclose(table["weight"].to_numpy(), [nb / len(y) for _, nb, _, _ in ref], rtol=0, atol=TOL)
    assert (table["lower"] <= table["conf"] + TOL).all() and (table["conf"] <= table["upper"] + TOL).all()
    # the weighted mean |gap| is the ECE with the same options
    weighted_gap = float((table["weight"] * table["gap"].abs()).sum())
    assert close(weighted_gap, calframe.ece(df, **o))
    assert close(weighted_gap, ref_ce(p, y, p=1, lens=lens, binning=binning, bins=bins, closed=closed))


@FAST
@given(frame=grouped_frames(), binning=st.sampled_from(["uniform", "quantile", "equal_mass"]))
def test_grouped_reliability_weighted_gap_equals_grouped_ece(frame, binning: str) -> None:
    df, kw, by = frame
    keys = [by] if isinstance(by, str) else by
    table = calframe.reliability(df, by=by, binning=binning, bins=5, **kw)
    ece = calframe.ece(df, by=by, binning=binning, bins=5, **kw)
    per_group = (
        table.with_columns(wg=pl.col("weight") * pl.col("gap").abs(), wsum=pl.col("weight"))
        .group_by(keys, maintain_order=True)
        .agg(pl.col("wg").sum(), pl.col("wsum").sum(), pl.col("n").sum())
    )
    joined = ece.join(per_group, on=keys, how="left", nulls_equal=True)
    assert joined.height == ece.height
    np.testing.assert_allclose(joined["wg"].to_numpy(), joined["ece"].to_numpy(), rtol=0, atol=TOL)
    np.testing.assert_allclose(joined["wsum"].to_numpy(), 1.0, rtol=0, atol=TOL)
    assert joined["n"].to_list() == joined["n_right"].to_list()


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frame=grouped_frames(), binning=st.sampled_from(["uniform", "equal_mass"]), seed=st.integers(0, 2**32 - 1),
       bootstrap=st.sampled_from(["moments", "rows"]))
def test_bootstrap_interval_of_each_group_equals_the_filtered_frames(frame, binning: str, seed: int,
                                                                     bootstrap: str) -> None:
    """docs/design.md, "Bootstrap": each group's draws depend on the seed and its own rows only, so ``by=g`` equals
    filtering: each group's figure and interval equal the call's on that group's rows alone (same seed), whatever
    the other groups hold. The rows: resampled within each group from a stream seeded by (seed, draw) and indexed
    by the row's position in its group (equal-mass edges recomputed on each draw), so the group's rows alone
    without ``by`` give them. The moments: drawn from a stream seeded by (seed, the group's key), so the group's
    rows alone with the same ``by`` give them (calframe.moments)."""
    df, kw, by = frame
    keys = [by] if isinstance(by, str) else by
    options = dict(binning=binning, bins=5, ci=0.8, n_boot=12, seed=seed, bootstrap=bootstrap, **kw)
    out = calframe.ece(df, by=by, **options)
    assert out.height == df.select(keys).unique().height
    for row in out.iter_rows(named=True):
        alone = calframe.ece(df.filter(*[pl.col(k).eq_missing(row[k]) for k in keys]), **options,
                             **({"by": by} if bootstrap == "moments" else {}))
        assert alone.height == 1 and alone["n"][0] == row["n"]
        for col in ("ece", "ece_lo", "ece_hi"):  # a group of one row has no interval either way: NaN bounds
            both_nan = math.isnan(row[col]) and math.isnan(alone[col][0])
            assert both_nan or close(row[col], alone[col][0]), (col, row, alone.row(0, named=True))


@pytest.mark.parametrize(
    ("prob", "label", "g"),
    [
        ([0.3, 0.3, 0.3], [1, 0, 1], None),  # constant frame
        ([0.3], [1], None),  # single row
        ([0.3, 0.3, 0.1, 0.6, 0.8], [1, 0, 1, 0, 1], [0, 0, 1, 1, 1]),  # one constant group
    ],
    ids=["constant", "single-row", "constant-group"],
)
def test_reliability_quantile_constant_values(prob, label, g) -> None:
    # was a bug (IndexError in binning.Bins.bounds: one quantile edge left), fixed in 6d80e73
    df = pl.DataFrame({"prob": prob, "label": label})
    if g is not None:
        df = df.with_columns(g=pl.Series(g))
    # ece treats the single value as one bin (pandas.qcut would drop every row): [0.3, 0.3]
    p0, y0 = np.array(prob[:2] if g else prob), np.array(label[:2] if g else label)
    expected_acc = y0.mean()
    assert close(calframe.ece(df.filter(pl.col("prob") == 0.3), binning="quantile", lens="class:1"),
                 abs(0.3 - expected_acc))
    table = calframe.reliability(df, binning="quantile", lens="class:1", by="g" if g else None)
    first = table.row(0, named=True)
    assert first["n"] == len(p0)
    assert first["lower"] == first["upper"] == 0.3
    assert close(first["conf"], 0.3) and close(first["acc"], expected_acc)


# =========================================================================== bootstrap


def _miscalibrated(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.uniform(0, 1, n)
    y = (rng.uniform(0, 1, n) < p**2).astype(np.int64)  # over-confident: true ECE ~ 0.17
    return p, y, rng.integers(0, 3, n)


def test_bootstrap_ci_contains_estimate_and_is_reproducible() -> None:
    p, y, g = _miscalibrated(3000, 21)
    df = pl.DataFrame({"prob": p, "label": y, "g": g})
    point = {
        "ece": ref_ce(p, y, bins=10),
        "rmsce": ref_ce(p, y, p=2, bins=10),
        "brier": ref_brier(p, y),
        "log_loss": ref_log_loss(p, y),
        "accuracy": ref_accuracy(p, y),
    }
    calls = {
        "ece": lambda f, **o: calframe.ece(f, bins=10, **o),
        "rmsce": lambda f, **o: calframe.rmsce(f, bins=10, **o),
        "brier": calframe.brier,
        "log_loss": calframe.log_loss,
        "accuracy": calframe.accuracy,
    }
    for name, call in calls.items():
        out = call(df, ci=0.9, n_boot=200, seed=3)
        assert isinstance(out, pl.DataFrame) and out.height == 1
        row = out.row(0, named=True)
        assert row["n"] == 3000
        assert close(row[name], point[name]), name
        assert row[f"{name}_lo"] < point[name] < row[f"{name}_hi"], (name, row)
        # bounds are plausible: the sd of a mean of 3000 rows is small
        assert row[f"{name}_hi"] - row[f"{name}_lo"] < 0.1, (name, row)
        again = call(df, ci=0.9, n_boot=200, seed=3)
        assert again.equals(out), name
        assert call(df.to_pandas(), ci=0.9, n_boot=200, seed=3).equals(out.to_pandas()), name
        if name != "accuracy":  # a mean of 0/1 values: bounds are multiples of 1/3000 and may coincide
            other = call(df, ci=0.9, n_boot=200, seed=4).row(0, named=True)
            assert (other[f"{name}_lo"], other[f"{name}_hi"]) != (row[f"{name}_lo"], row[f"{name}_hi"]), name


def test_bootstrap_ci_by_group_contains_each_group_estimate() -> None:
    p, y, g = _miscalibrated(4500, 22)
    df = pl.DataFrame({"prob": p, "label": y, "g": g})
    out = calframe.ece(df, by="g", bins=10, ci=0.9, n_boot=200, seed=1)
    assert out["g"].to_list() == [0, 1, 2]
    for row in out.iter_rows(named=True):
        m = g == row["g"]
        est = ref_ce(p[m], y[m], bins=10)
        assert close(row["ece"], est)
        assert row["ece_lo"] < est < row["ece_hi"], row
    assert calframe.ece(df, by="g", bins=10, ci=0.9, n_boot=200, seed=1).equals(out)


def test_bootstrap_ci_level_orders_intervals() -> None:
    # a wider level gives a wider interval from the same draws (same seed)
    p, y, _ = _miscalibrated(2000, 23)
    df = pl.DataFrame({"prob": p, "label": y})
    narrow = calframe.brier(df, ci=0.5, n_boot=300, seed=9).row(0, named=True)
    wide = calframe.brier(df, ci=0.95, n_boot=300, seed=9).row(0, named=True)
    assert wide["brier_lo"] <= narrow["brier_lo"] < narrow["brier_hi"] <= wide["brier_hi"]
    # and the bootstrap sd of a mean is about the row sd / sqrt(n): the 95% interval's width ~ 3.92 sd
    rows = (p - y) ** 2
    sd = rows.std() / math.sqrt(len(rows))
    assert 2.5 * sd < wide["brier_hi"] - wide["brier_lo"] < 5.5 * sd
