"""The companions (brier, log_loss, accuracy) are the same bits on every engine and row order, and disparity breaks
its ties by one documented rule (issue 31, section 4.1).

The eager engine sums the row values as the LazyFrame and narwhals engines do: fixed-point integers, exactly
(calframe/_kernels/exact.py). The references are Python's own integers (``int`` of a float truncates it exactly;
``Fraction.__float__`` rounds an integer ratio correctly) and the other engines' results.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numba
import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import calframe
from calframe._kernels import exact as X
from calframe.engines.streaming import streamed as LZ
from conftest import collected

FIGURES = ("brier", "log_loss", "accuracy")
#: the issue's example: two groups with the same rows in another order (Brier 0.1344... each)
TIED = pl.DataFrame({"prob": [0.3] * 18, "label": [0] * 8 + [1] + [0] * 7 + [1, 0], "g": ["b"] * 9 + ["a"] * 9})


def _bits(a: np.ndarray) -> list[int]:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64).tolist()


def _polars(result: object) -> pl.DataFrame:
    result = collected(result)
    if isinstance(result, pl.DataFrame):
        return result
    return result.pl() if hasattr(result, "pl") else pl.from_arrow(result)  # DuckDB relation, pyarrow Table


def _engines(df: pl.DataFrame) -> dict[str, object]:
    out: dict[str, object] = {"eager": df, "eager reversed": df.reverse(), "lazy": df.lazy(), "pyarrow": df.to_arrow()}
    try:
        import duckdb
    except ImportError:
        return out
    con = duckdb.connect()
    con.register("src", df.to_arrow())
    out["duckdb"] = con.sql("SELECT * FROM src")
    return out


@pytest.mark.parametrize("figure", FIGURES)
def test_issue_example_ranks_the_same_on_every_engine_and_row_order(figure: str) -> None:
    # before the exact eager sums: eager named g=b best, difference 2.8e-17; the others g=a, difference 0
    rows = {}
    for name, frame in _engines(TIED).items():
        d = _polars(calframe.disparity(frame, figure, by="g", ci=None, min_n=1))
        rows[name] = d.select("worst_group", "best_group", "worst", "best", "difference").row(0)
    assert len(set(rows.values())) == 1, rows
    worst_group, best_group, worst, best, difference = rows["eager"]
    # the figures are equal bits, so the groups tie; the rule: the first group in key order is both
    assert (worst_group, best_group) == ("g=a", "g=a")
    assert worst == best and difference == 0.0 and math.copysign(1.0, difference) == 1.0  # not -0.0 (accuracy)


def test_issue_example_brier_by_group_is_exactly_tied() -> None:
    # each group: 8 rows of 0.09 and one of 0.49 -> (8 * 0.09 + 0.49) / 9, the same bits in either order
    got = calframe.brier(TIED, by="g")["brier"].to_numpy()
    assert got[0] == got[1]
    assert got[0] == calframe.brier(TIED.reverse(), by="g")["brier"][0]


# --------------------------------------------------------------------------- the kernel against Python integers


def _bucket(w: float) -> int:
    """Polars' weight bucket (calframe.engines.streaming.streamed.weight_bucket), evaluated by Polars."""
    return int(pl.DataFrame({"w": [w]}).select(LZ.weight_bucket(pl.col("w")))["w"][0])


def _python_sums(groups: np.ndarray, values: np.ndarray, weights: np.ndarray | None, n_groups: int,
                 span: float) -> tuple[list[float], list[float]]:
    """The exact engines' sums (docs/spec.md, "Exact sums") in Python integers: trunc(x / span 2^62), or per weight
    bucket k trunc(w 2^(60 + 8 k)) and trunc(w x / span 2^(60 + 8 k)); each (group, bucket) total rounded once
    (Fraction), a group's buckets added from the highest k down."""
    tw, tv = [0.0] * n_groups, [0.0] * n_groups
    cells: dict[tuple[int, int], list[int]] = {}
    for i in range(values.shape[0]):
        x = float(values[i]) * (1.0 / span)
        if weights is None:
            k, a, v = -1, 1, int(x * 2.0**62)
        else:
            w = float(weights[i])
            k = _bucket(w)
            f = 2.0 ** (4 * k + 30)
            a, v = int(w * f * f), int(w * x * f * f)
        cell = cells.setdefault((int(groups[i]), k), [0, 0])
        cell[0] += a
        cell[1] += v
    for (g, k), (a, v) in sorted(cells.items(), key=lambda c: (c[0][0], -c[0][1])):
        if k < 0:
            tw[g] += float(a)
            tv[g] += float(Fraction(v, 2**62))
        else:
            tw[g] += float(Fraction(a, 2 ** (60 + 8 * k)))
            tv[g] += float(Fraction(v, 2 ** (60 + 8 * k)))
    return tw, [t * span for t in tv]


def test_weight_bucket_is_polars_near_every_power_of_two() -> None:
    ws = [0.0, 5e-324, 2.0**-1060, 1.0, 1.5, 1.9999999999999998]
    for j in range(0, 135):
        for e in (-8 * j - 1, -8 * j, -8 * j + 1):
            if e < -1074:
                continue
            p = math.ldexp(1.0, e)
            ws += [p, math.nextafter(p, 0.0), math.nextafter(p, 1.0), p * (1 + 2.0**-31), p * (1 - 2.0**-32)]
    w = np.array(ws)
    want = pl.DataFrame({"w": w}).select(LZ.weight_bucket(pl.col("w")))["w"].to_numpy()
    buckets = np.empty(w.shape[0], dtype=np.uint8)
    X._buckets(w, buckets, np.zeros((1, X.MAX_BUCKET + 1), dtype=np.int64), np.zeros(1, dtype=np.int64))
    assert buckets.tolist() == want.tolist()


@pytest.mark.parametrize("weighted", [False, True])
def test_group_sums_equal_python_integers(weighted: bool) -> None:
    rng = np.random.default_rng(3)
    n, n_groups = 400, 7
    groups = rng.integers(0, n_groups, n).astype(np.int32)
    values = rng.random(n) * 2.0
    values[:40] = 2.0  # 40 rows of trunc(2^62): a group's sum passes 2^64 (the carry into the high limb)
    weights = np.ldexp(rng.random(n) + 0.5, rng.integers(-200, 1, n)) if weighted else None
    if weighted:
        weights[::9] = np.ldexp(1.0, -8 * rng.integers(0, 30, weights[::9].shape[0]))  # on a bucket's edge
        weights[::13] = 0.0
        weights[:40] = 1.9999999999999998
    tw, tv = X.group_sums(groups, values, weights, n_groups, 2.0)
    pw, pv = _python_sums(groups, values, weights, n_groups, 2.0)
    assert _bits(tw) == _bits(np.array(pw)) and _bits(tv) == _bits(np.array(pv))


def test_group_sums_sparse_layout_equals_python_integers() -> None:
    # many groups of few rows with weights over 100 buckets: the per-group bitmap layout
    rng = np.random.default_rng(4)
    n, n_groups = 300, 120
    groups = rng.integers(0, n_groups, n).astype(np.int64)
    values = rng.random(n)
    weights = np.ldexp(rng.random(n) + 0.5, rng.integers(-900, 1, n))
    tw, tv = X.group_sums(groups, values, weights, n_groups, 1.0)
    pw, pv = _python_sums(groups, values, weights, n_groups, 1.0)
    assert _bits(tw) == _bits(np.array(pw)) and _bits(tv) == _bits(np.array(pv))


# --------------------------------------------------------------------------- every row order, every engine


@st.composite
def _frames(draw: st.DrawFn) -> tuple[pl.DataFrame, list[str], bool, list[int]]:
    n = draw(st.integers(1, 60))
    k = draw(st.sampled_from([2, 3]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    cols: dict[str, object] = {"g": rng.integers(0, draw(st.integers(1, 4)), n), "label": rng.integers(0, k, n)}
    if k == 2:
        p = rng.random(n)
        p[rng.random(n) < 0.3] = draw(st.sampled_from([0.0, 0.3, 0.5, 1.0]))  # repeated values: near-ties
        cols["prob"], probs = p, ["prob"]
    else:
        p = rng.dirichlet(np.ones(k), n)
        probs = [f"p{j}" for j in range(k)]
        cols.update({c: p[:, j] for j, c in enumerate(probs)})
    weighted = draw(st.booleans())
    if weighted:
        w = np.ldexp(rng.random(n) + 0.5, rng.integers(-draw(st.sampled_from([1, 40, 700])), 1, n))
        w[rng.random(n) < 0.2] = draw(st.sampled_from([1.0, 0.25, 2.0**-24]))
        cols["w"] = w
    df = pl.DataFrame(cols)
    order = draw(st.permutations(range(n)))
    return df, probs, weighted, order


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=_frames())
def test_companions_same_bits_for_every_row_order_and_as_the_lazyframe(one_numba_thread, case) -> None:
    df, probs, weighted, order = case
    kw = {"prob": probs if len(probs) > 1 else "prob", "label": "label", "by": "g",
          "weights": "w" if weighted else None}
    shuffled = df[list(order)]
    for f in FIGURES:
        fn = getattr(calframe, f)
        eager = fn(df, **kw).sort("g")
        again = fn(shuffled, **kw).sort("g")
        lazy = fn(df.lazy(), **kw).collect().sort("g")
        assert _bits(eager[f].to_numpy()) == _bits(again[f].to_numpy()), f
        assert _bits(eager[f].to_numpy()) == _bits(lazy[f].to_numpy()), f


def test_companions_same_bits_for_one_and_two_threads() -> None:
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba was started with fewer than 2 threads")
    rng = np.random.default_rng(11)
    n = 300_001  # several row chunks, run in parallel
    df = pl.DataFrame({"prob": rng.random(n), "label": rng.integers(0, 2, n), "g": rng.integers(0, 50, n),
                       "w": np.ldexp(rng.random(n) + 0.5, rng.integers(-30, 1, n))})
    old = numba.get_num_threads()
    got = []
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            got.append([_bits(getattr(calframe, f)(df, by="g", weights=w)[f].to_numpy())
                        for f in FIGURES for w in (None, "w")])
    finally:
        numba.set_num_threads(old)
    assert got[0] == got[1]
