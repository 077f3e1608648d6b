"""The streaming LazyFrame path (calframe.engines.streaming.streamed) against the eager path on the collected frame.

Every comparison reads the frame back with ``pl.scan_parquet`` from a
temporary file, so the queries really run on the streaming engine over a
scan, and checks that the numba accumulate kernel never runs on that path.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pytest

import calframe
from calframe import CalframeError, CalframeWarning
from calframe._kernels import accumulate as _K
from calframe import figures as F
from calframe import request as R
from calframe.binning import make_binning, uniform_bin_expr, uniform_edges
from calframe.engines.streaming import streamed as LZ
from calframe.metrics import Distance, ce_from_sums
from conftest import signed_zero_keys_frame

B = 5
K3 = ["p0", "p1", "p2"]


# --------------------------------------------------------------------------- helpers


@pytest.fixture
def scan(tmp_path):
    """Write a frame to Parquet and scan it back (a fresh file per call)."""
    count = [0]

    def make(df: pl.DataFrame) -> pl.LazyFrame:
        count[0] += 1
        path = tmp_path / f"frame{count[0]}.parquet"
        df.write_parquet(path, row_group_size=97)  # several row groups: several morsels
        return pl.scan_parquet(path)

    return make


@pytest.fixture
def no_kernels(monkeypatch):
    """The streaming path must not fall back to the eager numba pass."""

    def boom(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the streaming path ran a numba kernel")

    def install() -> None:
        for name in ("accumulate", "group_order", "sort_within_groups", "assign_bins"):
            monkeypatch.setattr(_K, name, boom)

    def undo() -> None:
        monkeypatch.undo()

    return install, undo


def streamed(func: str, lf: pl.LazyFrame, **kw: Any) -> Any:
    """What calframe.<func>(lf, ...) returns through the streaming engine: the call parsed as api does
    (calframe.request), its sums from lazy_sums, finalized by ce_from_sums and shaped by figures.shape."""
    p = {"ece": 1, "mce": "inf", "rmsce": 2}.get(func, kw.pop("p", 1))
    variable = kw.pop("variable", None)
    prob, label = kw.pop("prob", None), kw.pop("label", None)
    if variable is None:
        req = R.ce(func, func, prob, label, p=p, **kw)
    else:
        req = R.vece(func, func, variable, prob, label, p=p, **kw)
    sums, keys, counts, scale = LZ.lazy_sums(lf, req)
    values = ce_from_sums(sums, req.p, Distance(), req.estimator, count_scale=scale)
    return F.shape(req, {func: values}, counts, keys, "polars")


def eager(func: str, df: pl.DataFrame, **kw: Any) -> Any:
    kw = dict(kw)
    variable = kw.pop("variable", None)
    if variable is not None:
        return getattr(calframe, func)(df, variable, **kw)
    return getattr(calframe, func)(df, **kw)


def assert_same(got: Any, want: Any) -> None:
    if isinstance(want, float):
        assert isinstance(got, float)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
        return
    assert isinstance(got, pl.DataFrame)
    assert got.columns == want.columns
    assert got.schema == want.schema
    value = want.columns[-1]
    keys = want.columns[:-2]
    if keys:
        assert got.select(keys).equals(want.select(keys))
    assert got["n"].to_list() == want["n"].to_list()
    np.testing.assert_allclose(got[value].to_numpy(), want[value].to_numpy(), rtol=0, atol=1e-12)


def edge_values(bins: int) -> np.ndarray:
    """0, 1, 0.5, every left- and right-closed edge, and the floats just around each."""
    e = np.unique(np.concatenate([uniform_edges(bins, "left"), uniform_edges(bins, "right"), [0.5]]))
    around = np.concatenate([np.nextafter(e, -1.0), e, np.nextafter(e, 2.0)])
    return np.unique(np.clip(around, 0.0, 1.0))


def frame(kind: str, n: int = 700, seed: int = 0) -> pl.DataFrame:
    """Scored rows with conf on every edge, int and string keys with nulls, weights and two variables."""
    rng = np.random.default_rng(seed)
    vals = np.concatenate([edge_values(B), edge_values(15), rng.random(40)])
    cols: dict[str, Any] = {}
    if kind == "binary":
        cols["prob"] = rng.choice(vals, n)
        cols["label"] = (rng.random(n) < cols["prob"]).astype(np.int64)
    else:
        top = rng.choice(vals[vals >= 1.0 / 3.0], n)
        rest = (1.0 - top) / 2.0
        p = np.column_stack([top, rest, rest])
        tie = rng.random(n) < 0.2  # ties for the top class: [a, a, 1 - 2a]
        a = rng.choice([0.4, 0.45, 1.0 / 3.0], n)
        p[tie] = np.column_stack([a, a, 1.0 - 2.0 * a])[tie]
        p = np.take_along_axis(p, np.argsort(rng.random((n, 3)), axis=1), axis=1)
        cols["label"] = rng.integers(0, 3, n)
        if kind == "cols":
            cols.update({c: p[:, j] for j, c in enumerate(K3)})
        else:
            cols["probs"] = pl.Series("probs", p, dtype=pl.Array(pl.Float64, 3))
    cols["g"] = pl.Series("g", [None if r < 0.1 else int(r * 10) for r in rng.random(n)], dtype=pl.Int64)
    cols["s"] = pl.Series("s", [None if r < 0.1 else "abc"[int(r * 3)] for r in rng.random(n)], dtype=pl.String)
    cols["w"] = rng.random(n) * 3.0
    cols["age"] = rng.choice(np.array([0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 17.5, 33.3]), n)
    cols["region"] = rng.choice(["north", "south", "east"], n)
    return pl.DataFrame(cols)


def prob_of(kind: str) -> Any:
    return {"binary": "prob", "cols": K3, "array": "probs"}[kind]


BYS = [None, "g", "s", ["g", "s"]]
BY_IDS = ["none", "int", "str", "int+str"]

METRICS = {
    "ece": ("ece", {}),
    "mce": ("mce", {}),
    "rmsce": ("rmsce", {}),
    "ce_debiased": ("ce", {"p": 2, "estimator": "debiased", "binning": "uniform"}),
    "ce_equal_mass": ("ce", {"p": 2, "estimator": "debiased", "binning": "equal_mass", "bins": 7}),
    "ece_quantile": ("ece", {"binning": "quantile", "bins": 6}),
    "vece_cat": ("vece", {"variable": "region"}),
    "vece_edges": ("vece", {"variable": "age", "bins": [0.0, 10.0, 20.0, 30.0, 50.0]}),
    "vece_quantile": ("vece", {"variable": "age", "bins": 4}),
}


# --------------------------------------------------------------------------- equal to eager


@pytest.mark.parametrize("kind", ["binary", "cols", "array"])
@pytest.mark.parametrize("closed", ["left", "right"])
@pytest.mark.parametrize("by", BYS, ids=BY_IDS)
@pytest.mark.parametrize("metric", list(METRICS))
def test_equals_eager(scan, no_kernels, metric, by, closed, kind):
    func, kw = METRICS[metric]
    kw = dict(kw, closed=closed, prob=prob_of(kind), label="label", by=by)
    if "bins" not in kw and func != "vece":
        kw["bins"] = B
    df = frame(kind)
    want = eager(func, df, **kw)
    lf = scan(df)
    install, undo = no_kernels
    install()
    got = streamed(func, lf, **kw)
    undo()
    assert_same(got, want)


@pytest.mark.parametrize("lens", ["top1", "class:0", "class:1", "class:2"])
@pytest.mark.parametrize("kind", ["binary", "cols", "array"])
def test_lenses(scan, lens, kind):
    if kind == "binary" and lens == "class:2":
        pytest.skip("binary input has classes 0 and 1")
    df = frame(kind, seed=1)
    kw = dict(prob=prob_of(kind), label="label", by="g", lens=lens, bins=B)
    assert_same(streamed("ece", scan(df), **kw), eager("ece", df, **kw))


@pytest.mark.parametrize("closed", ["left", "right"])
@pytest.mark.parametrize("bins", [1, 2, 15, 40, [0.0, 0.25, 0.5, 0.6, 1.0], list(np.linspace(0, 1, 41))])
def test_bin_counts_and_edges(scan, bins, closed):
    """One bin, many bins (search_sorted beyond 32 inner edges) and explicit edges, values on every edge."""
    df = frame("binary", seed=2)
    kw = dict(by="s", bins=bins, closed=closed)
    for func in ("ece", "mce"):
        assert_same(streamed(func, scan(df), **kw), eager(func, df, **kw))


def test_uniform_bin_expression_exact_for_many_bin_counts():
    """floor + one correction against edges built as numpy builds them (or the literal comparisons)."""
    for bins in list(range(1, 41)) + [50, 64, 100, 128, 1000]:
        x = np.concatenate([edge_values(bins), edge_values(7), np.random.default_rng(bins).random(500)])
        for closed in ("left", "right"):
            e = uniform_edges(bins, closed)
            want = np.searchsorted(e[1:-1], x, side="right" if closed == "left" else "left")
            got = pl.DataFrame({"x": x}).with_columns(b=uniform_bin_expr(pl.col("x"), bins, closed))["b"].to_numpy()
            np.testing.assert_array_equal(got, want, err_msg=f"bins={bins} closed={closed}")


def test_weights(scan):
    df = frame("binary", seed=3)
    kw = dict(by=["g", "s"], weights="w", bins=B)
    assert_same(streamed("ece", scan(df), **kw), eager("ece", df, **kw))
    kw = dict(by="g", weights="w", variable="age", bins=[0.0, 25.0, 50.0])
    assert_same(streamed("vece", scan(df), **kw), eager("vece", df, **kw))


def test_sums_equal_eager_sums(scan):
    """The (n_groups, n_bins, 3) table itself: counts exact, sums to rounding."""
    df = frame("cols", seed=4)
    scored = calframe._columns.resolve(df, func="ece", prob=K3, label="label", by="s")
    conf, acc = calframe.lenses.top1(scored)
    for closed in ("left", "right"):
        binning = make_binning("ece", "uniform", B, closed)
        want, _ = calframe.engines.eager.binned_sums(conf, acc, scored, binning)
        got, keys, counts, _ = LZ.lazy_sums(scan(df), R.ce("ece", "ece", K3, "label", by="s", bins=B, closed=closed))
        assert got.shape == want.shape
        np.testing.assert_array_equal(got[..., 0], want[..., 0])
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-12)
        assert keys.equals(scored.keys)
        np.testing.assert_array_equal(counts, np.bincount(scored.groups, minlength=scored.n_groups))


def test_keys_keep_dtypes_and_sort_nulls_last(scan):
    df = pl.DataFrame({
        "prob": [0.9, 0.2, 0.7, 0.6, 0.1, 0.8, 0.3],
        "label": [1, 0, 1, 0, 0, 1, 1],
        "k8": pl.Series([3, None, -1, 3, None, 0, -1], dtype=pl.Int8),
        "u": pl.Series([None, 7, 7, 2, 2, None, 9], dtype=pl.UInt16),
        "c": pl.Series(["b", "a", None, "b", "a", "c", None], dtype=pl.Categorical),
        "flag": [True, None, False, True, False, None, True],
    })
    for by in ("k8", "u", "c", "flag", ["k8", "u"], ["flag", "c"]):
        assert_same(streamed("ece", scan(df), by=by), eager("ece", df, by=by))


@pytest.mark.parametrize("func, kw", [
    ("ece", {"lens": "class:2"}),
    ("ece", {"binning": "quantile", "bins": 6}),
    ("vece", {"variable": "v", "bins": 12, "lens": "class:2"}),
], ids=["ece", "ece-quantile", "vece"])
def test_signed_zero_and_nan_float_keys(scan, no_kernels, func, kw):
    """A float key with 0.0, -0.0, NaN and null beside a String key with null and "": -0.0 is 0.0 (shown as
    0.0), NaN is the null key, in the streaming queries as on the eager path (the keys that broke Dask)."""
    df = signed_zero_keys_frame()
    kw = dict(kw, prob=K3, label="cls", by=["s", "x"])
    lf = scan(df)
    install, undo = no_kernels
    install()
    got = streamed(func, lf, **kw)
    undo()
    assert_same(got, eager(func, df, **kw))
    assert not np.signbit(got["x"].drop_nulls().to_numpy()).any() and not got["x"].is_nan().any()


def test_array_argmax_ties_lowest_index():
    """arr.arg_max (and the class-columns chain) send ties to the lowest index, as numpy.argmax."""
    rng = np.random.default_rng(5)
    for k in (2, 3, 4, 7, 20):
        p = rng.integers(0, 3, size=(3000, k)).astype(np.float64)
        df = pl.DataFrame({"a": pl.Series(p, dtype=pl.Array(pl.Float64, k))})
        np.testing.assert_array_equal(df.select(pl.col("a").arr.arg_max())["a"].to_numpy(), np.argmax(p, axis=1))


def test_many_class_columns_and_wide_array(scan):
    """K > 16: concat_arr / arr.min-max paths and numpy's pairwise row sums."""
    rng = np.random.default_rng(6)
    n, k = 400, 20
    p = rng.dirichlet(np.full(k, 0.3), n)
    p[:50] = np.round(p[:50], 1)
    p[:50] /= p[:50].sum(axis=1, keepdims=True)
    cols = [f"c{j}" for j in range(k)]
    df = pl.DataFrame({c: p[:, j] for j, c in enumerate(cols)}).with_columns(
        label=pl.Series(rng.integers(0, k, n)), probs=pl.Series(p, dtype=pl.Array(pl.Float64, k)),
        g=pl.Series(rng.integers(0, 3, n)),
    )
    for prob in (cols, "probs"):
        kw = dict(prob=prob, label="label", by="g", bins=B)
        assert_same(streamed("ece", scan(df), **kw), eager("ece", df, **kw))


def test_integer_probabilities_and_label_dtypes(scan):
    df = pl.DataFrame({
        "prob": pl.Series([0, 1, 1, 0, 1], dtype=pl.Int32),
        "yb": [True, False, True, False, True],
        "yf": [1.0, 0.0, 1.0, 0.0, 0.0],
        "yu": pl.Series([1, 0, 1, 1, 0], dtype=pl.UInt8),
    })
    for label in ("yb", "yf", "yu"):
        assert_same(streamed("ece", scan(df), label=label), eager("ece", df, label=label))
    arr = pl.DataFrame({"probs": pl.Series([[1, 0], [0, 1], [1, 0]], dtype=pl.Array(pl.Int64, 2)), "label": [0, 1, 1]})
    assert_same(streamed("ece", scan(arr)), eager("ece", arr))


@pytest.mark.parametrize("budget", [10**9, 40, 3])
@pytest.mark.parametrize("scheme,bins", [("quantile", 10), ("equal_mass", 15), ("quantile", 3), ("equal_mass", 1)])
def test_quantile_bins_exact(scan, monkeypatch, budget, scheme, bins):
    """Data-dependent edges in streaming passes, with and without histogram refinement (small budgets)."""
    monkeypatch.setattr(LZ, "COLLECT_BUDGET", budget)
    rng = np.random.default_rng(7)
    n = 1500
    p = np.concatenate([np.round(rng.random(n // 2), 2), rng.random(n - n // 2)])
    df = pl.DataFrame({
        "prob": p,
        "label": (rng.random(n) < p).astype(np.int64),
        "g": pl.Series([None if r < 0.2 else int(r * 4) for r in rng.random(n)], dtype=pl.Int64),
        "age": np.where(rng.random(n) < 0.3, 5.0, rng.lognormal(2.0, 3.0, n)),
        "one": np.ones(n),
    })
    for by in (None, "g"):
        kw = dict(by=by, binning=scheme, bins=bins)
        assert_same(streamed("ce", scan(df), p=2, estimator="debiased", **kw),
                    eager("ce", df, p=2, estimator="debiased", **kw))
        assert_same(streamed("vece", scan(df), variable="age", **kw), eager("vece", df, variable="age", **kw))
        # every engine builds these edges in binning.edge_table: the streamed figures against the spec's rule by hand
        for func, on in (("ece", "prob"), ("vece", "age")):
            extra = {"variable": "age"} if func == "vece" else {}
            got = streamed(func, scan(df), lens="class:1", **extra, **kw)
            assert_binned_by_hand(got, df, on, scheme, bins, by, func)


def binned_by_hand(x: np.ndarray, p: np.ndarray, y: np.ndarray, scheme: str, bins: int) -> float:
    """sum over bins of |sum(p - y)| / n, the bins of ``x`` by docs/spec.md section 1 with numpy and pandas alone:
    ``quantile`` is pandas.qcut (duplicate edges dropped); ``equal_mass`` sorts x, splits it as numpy.array_split
    into min(n, B) chunks, puts each inner edge at the midpoint of one chunk's last value and the next one's first,
    the last edge at max(1, the top value) (1.0 for a probability: Kumar's get_equal_bins), and bins right-closed."""
    if scheme == "quantile":
        ids = pd.qcut(x, bins, labels=False, duplicates="drop")
    else:
        chunks = np.array_split(np.sort(x), min(bins, x.size))
        inner = [(a[-1] + b[0]) / 2.0 for a, b in zip(chunks, chunks[1:])]
        ids = np.searchsorted(np.unique(inner + [max(1.0, x.max())]), x, side="left")
    gaps = np.bincount(ids, weights=p - y)
    return float(np.abs(gaps).sum() / x.size)


def assert_binned_by_hand(got: Any, df: pl.DataFrame, on: str, scheme: str, bins: int, by: str | None,
                          func: str) -> None:
    """``got`` (a figure without ``by``, a frame by ``by``) equals :func:`binned_by_hand` on each group's rows."""
    rows = [(None, df)] if by is None else [(key, df.filter(pl.col(by).eq_missing(key))) for key in got[by]]
    figures = [got] if by is None else got[func].to_list()
    assert len(figures) == len(rows) and sum(part.height for _, part in rows) == df.height
    for (key, part), figure in zip(rows, figures):
        want = binned_by_hand(part[on].to_numpy(), part["prob"].to_numpy(), part["label"].to_numpy(), scheme, bins)
        assert figure == pytest.approx(want, rel=1e-12, abs=1e-15), (by, key)


def test_nulls_drop_equals_eager(scan):
    df = frame("cols", seed=8)
    rng = np.random.default_rng(8)
    df = df.with_columns(
        pl.when(pl.Series(rng.random(df.height) < 0.05)).then(None).otherwise(pl.col("p1")).alias("p1"),
        pl.when(pl.Series(rng.random(df.height) < 0.05)).then(None).otherwise(pl.col("label")).alias("label"),
        pl.when(pl.Series(rng.random(df.height) < 0.05)).then(None).otherwise(pl.col("region")).alias("region"),
        pl.when(pl.Series(rng.random(df.height) < 0.05)).then(None).otherwise(pl.col("age")).alias("age"),
    )
    for func, kw in [("ece", {"by": "s"}), ("rmsce", {}), ("vece", {"variable": "region", "by": "g"}),
                     ("vece", {"variable": "age", "bins": 3}), ("ece", {"binning": "quantile", "bins": 4})]:
        kw = dict(kw, prob=K3, label="label", nulls="drop")
        with pytest.warns(CalframeWarning) as w_eager:
            want = eager(func, df, **kw)
        with pytest.warns(CalframeWarning) as w_lazy:
            got = streamed(func, scan(df), **kw)
        assert [str(w.message) for w in w_lazy] == [str(w.message) for w in w_eager]
        assert_same(got, want)


def test_supports():
    lf = pl.LazyFrame({"prob": [0.1], "label": [0], "probs": [[0.5, 0.5]]})
    assert LZ.streams(lf, R.ce("ece", "ece"))
    assert LZ.streams(lf, R.vece("vece", "vece", "prob"))
    assert not LZ.streams(lf.collect(), R.ce("ece", "ece"))
    assert LZ.streams(lf, R.ce("ece", "ece", ci=0.95))  # drawn from the moments of its bins (calframe.moments)
    assert not LZ.streams(lf, R.ce("ece", "ece", ci=0.95, bootstrap="rows"))
    assert LZ.streams(lf, R.ce("ece", "ece", ci=0.95, binning="quantile"))  # its edges streamed, then held fixed
    assert not LZ.streams(lf, R.ce("ece", "ece", ci=0.95, binning="quantile", bootstrap="rows"))
    assert not LZ.streams(lf, R.ce("ece", "ece", ci=0.95, binning="sweep"))
    assert not LZ.streams(lf, R.ce("ece", "ece", lens="marginal"))
    assert not LZ.streams(lf, R.ce("ece", "ece", "probs"))  # List columns go the eager way
    assert not LZ.streams(lf, R.vece("vece", "vece", ["a", "b"]))
    assert not LZ.streams(lf, R.companion("brier"))  # no bins
    assert LZ.streams(lf, R.ce("ece", "ece", "missing"))  # lazy_sums raises the eager error


# --------------------------------------------------------------------------- bad input: same error


NAN, INF = float("nan"), float("inf")


def _bin(prob, label=None, **extra):
    label = label if label is not None else [i % 2 for i in range(len(prob))]
    return pl.DataFrame({"prob": prob, "label": label, **extra}, strict=False)


def _multi(rows_, label=None, **extra):
    arr = np.array(rows_, dtype=np.float64)
    label = label if label is not None else [i % 3 for i in range(len(rows_))]
    return pl.DataFrame({"p0": arr[:, 0], "p1": arr[:, 1], "p2": arr[:, 2], "label": label, **extra}, strict=False)


def _arr(rows_, label=None):
    label = label if label is not None else [i % 3 for i in range(len(rows_))]
    return pl.DataFrame({"probs": rows_, "label": label},
                        schema={"probs": pl.Array(pl.Float64, len(rows_[0])), "label": pl.Int64})


GOOD3 = [[0.2, 0.3, 0.5], [0.6, 0.3, 0.1], [0.1, 0.1, 0.8], [0.3, 0.4, 0.3], [0.5, 0.25, 0.25], [0.0, 1.0, 0.0]]
NUM = {"v": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]}

BAD: dict[str, tuple[pl.DataFrame, str, dict[str, Any]]] = {
    "empty": (pl.DataFrame({"prob": [], "label": []}, schema={"prob": pl.Float64, "label": pl.Int64}), "ece", {}),
    "null_prob": (_bin([0.1, None, 0.3, None]), "ece", {}),
    "null_label_and_prob": (_bin([0.1, None, 0.3, 0.4], [1, 0, None, None]), "mce", {}),
    "null_all_drop": (_bin([None, None], [1, None]), "ece", {"nulls": "drop"}),
    "bad_nulls_param": (_bin([0.1, 0.2]), "ece", {"nulls": "keep"}),
    "nan_prob": (_bin([0.1, NAN, 0.3, NAN]), "ece", {}),
    "inf_and_outside": (_bin([0.1, INF, 1.3, -0.2, 0.5]), "ece", {}),
    "outside": (_bin([0.1, 2.5, 0.3, -1.25]), "rmsce", {}),
    "drop_then_nan": (_bin([0.1, None, NAN, 0.4], [1, 0, 1, 0]), "ece", {"nulls": "drop"}),
    "string_prob": (pl.DataFrame({"prob": ["0.1", "0.2"], "label": [0, 1]}), "ece", {}),
    "string_prob_with_null": (pl.DataFrame({"prob": ["0.1", None], "label": [0, 1]}), "ece", {}),
    "bool_prob": (pl.DataFrame({"prob": [True, False], "label": [0, 1]}), "ece", {}),
    "string_class_col": (_multi(GOOD3).with_columns(pl.col("p1").cast(pl.String)), "ece", {"prob": K3}),
    "one_class_list": (_bin([0.1, 0.2]), "ece", {"prob": ["prob"]}),
    "array_k1": (_arr([[1.0], [1.0]]), "ece", {}),
    "array_strings": (pl.DataFrame({"probs": [["a", "b"]], "label": [0]},
                                   schema={"probs": pl.Array(pl.String, 2), "label": pl.Int64}), "ece", {}),
    "multi_nan": (_multi([[0.2, NAN, 0.5], [0.6, 0.3, 0.1], [INF, 0.1, 0.8]]), "ece", {"prob": K3}),
    "multi_outside": (_multi([[0.2, 1.3, -0.5], [0.6, 0.3, 0.1], [0.1, 0.1, 0.8]]), "ece", {"prob": K3}),
    "multi_sums": (_multi([[0.2, 0.3, 0.4], [0.6, 0.3, 0.1], [0.5, 0.5, 0.5], [0.2, 0.2, 0.2]]), "ece", {"prob": K3}),
    "array_sums": (_arr([[0.2, 0.3, 0.4], [0.6, 0.3, 0.1], [0.5, 0.5, 0.5]]), "ece", {}),
    "array_nan": (_arr([[0.2, NAN, 0.8], [0.6, 0.3, 0.1]]), "ece", {}),
    "wide_sums": (pl.DataFrame({"probs": [[0.05] * 20, [0.06] * 20], "label": [0, 1]},
                               schema={"probs": pl.Array(pl.Float64, 20), "label": pl.Int64}), "ece", {}),
    "label_outside": (_bin([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7], [0, 1, 2, -1, 7, 2, 9]), "ece", {}),
    "label_outside_many": (_bin([0.5] * 8, [2, 3, 4, 5, 6, 7, 8, 0]), "ece", {}),
    "label_outside_multi": (_multi(GOOD3, [0, 1, 3, 2, 5, 3]), "ece", {"prob": K3}),
    "label_float_nonwhole": (_bin([0.1, 0.2, 0.3], [0.0, 0.5, 1.0]), "ece", {}),
    "label_float_nan": (_bin([0.1, 0.2, 0.3], [0.0, NAN, 1.0]), "ece", {}),
    "label_float_outside": (_multi(GOOD3, [0.0, 1.0, 2.0, 3.0, 2.0, 1.0]), "ece", {"prob": K3}),
    "label_string": (_bin([0.1, 0.2], ["a", "b"]), "ece", {}),
    "label_string_multi": (_multi(GOOD3[:2], ["a", "b"]), "ece", {"prob": K3}),
    "label_bool_multi": (_multi(GOOD3[:2], [True, False]), "ece", {"prob": K3}),
    "label_string_after_bad_prob": (_bin([0.1, 1.5], ["a", "b"]), "ece", {}),
    "weights_negative": (_bin([0.1, 0.2, 0.3], w=[1.0, -1.0, NAN]), "ece", {"weights": "w"}),
    "weights_zero": (_bin([0.1, 0.2, 0.3], w=[0.0, 0.0, 0.0]), "ece", {"weights": "w"}),
    "weights_string": (_bin([0.1, 0.2], w=["1", "2"]), "ece", {"weights": "w"}),
    "weights_null": (_bin([0.1, 0.2], w=[1.0, None]), "ece", {"weights": "w"}),
    "lens_class_range": (_multi(GOOD3), "ece", {"prob": K3, "lens": "class:3"}),
    "lens_class_range_binary": (_bin([0.1, 0.2]), "ece", {"lens": "class:2"}),
    "missing_prob": (_bin([0.1]), "ece", {"prob": "nope"}),
    "no_default_label": (pl.DataFrame({"prob": [0.1], "lbl": [1]}), "ece", {}),
    "by_is_label": (_bin([0.1, 0.2]), "ece", {"by": "label"}),
    "variable_nan": (_bin([0.1, 0.2, 0.3], v=[1.0, NAN, INF]), "vece", {"variable": "v", "bins": [0, 1, 2]}),
    "variable_single": (_bin([0.1, 0.2, 0.3], v=[2.0, 2.0, 2.0]), "vece", {"variable": "v", "bins": [0, 1, 3]}),
    "variable_single_quantile": (_bin([0.1, 0.2, 0.3], v=[2.0, 2.0, 2.0]), "vece", {"variable": "v"}),
    "variable_single_cat": (_bin([0.1, 0.2, 0.3], v=["a", "a", "a"]), "vece", {"variable": "v"}),
    "variable_outside": (_bin([0.1, 0.2, 0.3, 0.4], v=[1.0, 5.0, 9.0, -3.0]), "vece", {"variable": "v", "bins": [0, 2, 6]}),
    "variable_edges_cat": (_bin([0.1, 0.2, 0.3], v=["a", "b", "a"]), "vece", {"variable": "v", "bins": [0, 1, 2]}),
    "variable_dtype": (_bin([0.1, 0.2], v=[[1], [2]]), "vece", {"variable": "v", "bins": [0, 1, 2]}),
    "variable_null": (_bin([0.1, 0.2, 0.3], v=["a", None, "b"]), "vece", {"variable": "v"}),
    "variable_null_num": (_bin([0.1, 0.2, 0.3], v=[1.0, None, 2.0]), "vece", {"variable": "v"}),
    "group_all_bad": (_bin([0.1, 0.2, 5.0], g=[1, 1, 2]), "ece", {"by": "g"}),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_same_error(scan, case):
    df, func, kw = BAD[case]
    kw = dict(kw)
    with warnings.catch_warnings(record=True) as w_eager:
        warnings.simplefilter("always")
        with pytest.raises(CalframeError) as e_eager:
            eager(func, df, **kw)
    lf = scan(df)
    with warnings.catch_warnings(record=True) as w_lazy:
        warnings.simplefilter("always")
        with pytest.raises(CalframeError) as e_lazy:
            streamed(func, lf, **kw)
    assert type(e_lazy.value) is type(e_eager.value)
    assert str(e_lazy.value) == str(e_eager.value)
    assert [str(w.message) for w in w_lazy] == [str(w.message) for w in w_eager]


# --------------------------------------------------------------------------- determinism (exact sums)

_RUN = """
import sys
import polars as pl, calframe
lf = pl.scan_parquet(sys.argv[1])
calls = [calframe.ece(lf), calframe.ece(lf, by="g"), calframe.rmsce(lf, by="g", weights="w"),
         calframe.ce(lf, p=2, estimator="debiased", by="g"), calframe.vece(lf, "v", bins=[0.0, 0.3, 0.7, 1.0]),
         calframe.ece(lf, binning="quantile", bins=10)]
for r in calls:
    r = r.collect() if isinstance(r, pl.LazyFrame) else r
    print(*[float(v).hex() for v in (r.to_series(r.width - 1) if isinstance(r, pl.DataFrame) else [r])])
"""


def _deterministic_frame(n: int = 400_000) -> pl.DataFrame:
    """Many rows per (group, bin) cell, in many row groups (morsels the engine merges in varying order)."""
    rng = np.random.default_rng(12)
    p = rng.random(n)
    return pl.DataFrame({"prob": p, "label": (rng.random(n) < p ** 1.3).astype(np.int64),
                         "g": rng.integers(0, 3, n), "w": rng.random(n) * 7.0, "v": rng.random(n)})


def test_streaming_bits_same_for_every_run_and_thread_count(tmp_path):
    """The same LazyFrame gives the same bits in fresh processes with 1, 2 and 4 Polars threads, and again with 4
    (Polars' own float sums differed by up to 3e-15), and the eager numbers to 1e-15."""
    import os
    import subprocess
    import sys

    df = _deterministic_frame()
    path = tmp_path / "det.parquet"
    df.write_parquet(path, row_group_size=5_000)
    outs = set()
    for threads in (1, 2, 4, 4):
        env = dict(os.environ, POLARS_MAX_THREADS=str(threads))
        outs.add(subprocess.run([sys.executable, "-c", _RUN, str(path)], env=env, check=True, capture_output=True,
                                text=True).stdout)
    assert len(outs) == 1, outs
    lines = outs.pop().splitlines()
    eager = [calframe.ece(df), calframe.ece(df, by="g")["ece"], calframe.rmsce(df, by="g", weights="w")["rmsce"],
             calframe.ce(df, p=2, estimator="debiased", by="g")["ce"],
             calframe.vece(df, "v", bins=[0.0, 0.3, 0.7, 1.0]), calframe.ece(df, binning="quantile", bins=10)]
    for line, want in zip(lines, eager):
        got = [float.fromhex(v) for v in line.split()]
        np.testing.assert_allclose(got, want.to_list() if isinstance(want, pl.Series) else [want], rtol=0, atol=1e-15)


def _exact(values: np.ndarray, cells: list[tuple[int, int]]) -> dict[tuple[int, int], float]:
    """Each cell's exact sum of float64 values (Python Fractions), rounded once."""
    from fractions import Fraction

    tot: dict[tuple[int, int], Fraction] = {}
    for c, v in zip(cells, values):
        tot[c] = tot.get(c, Fraction(0)) + Fraction(float(v))
    return {c: float(t) for c, t in tot.items()}


def test_streamed_sums_are_exact_for_any_weight_range():
    """The streamed per (group, bin) sums are the exact sums (to 2^-54 of each row's weight, its bucket's
    fixed point), weights from 1e-300 to 1e300 in one group included, against Python Fractions; the figure
    equals the eager one to 1e-15 (a bin of only tiny weights is not empty: MCE sees it)."""
    rng = np.random.default_rng(13)
    n = 3000
    conf = np.concatenate([rng.random(n - 30), rng.random(10) * 1e-30, np.ones(10), np.zeros(10)])
    label = (rng.random(n) < conf).astype(np.int64)
    groups = rng.integers(0, 3, n)
    w = rng.random(n) * 5.0
    w[groups == 1] *= 1e-300
    w[(groups == 2) & (conf < 0.2)] *= 1e-200  # one group's low bins hold only tiny weights
    w[np.flatnonzero(groups == 2)[:3]] = 1e300
    lf = pl.LazyFrame({"prob": conf, "label": label, "g": groups, "w": w})
    bins = np.searchsorted(uniform_edges(B, "left")[1:-1], conf, side="right")
    for weights in (None, "w"):
        got, _, counts, scale = LZ.lazy_sums(lf, R.ce("ece", "ece", by="g", weights=weights, lens="class:1",
                                                      bins=B))
        scale = np.broadcast_to(np.asarray(scale, dtype=np.float64), (3,))
        ww = np.ones(n) if weights is None else np.ldexp(w, -np.frexp(scale)[1][groups] + 1)
        cells = list(zip(groups.tolist(), bins.tolist()))
        for q, vals in enumerate([ww, ww * conf, ww * label]):
            for (g, b), want in _exact(vals, cells).items():
                assert got[g, b, q] == pytest.approx(want, rel=2.0**-52, abs=0), (weights, q, g, b)
        for func in ("ece", "mce"):
            eager = getattr(calframe, func)(lf.collect(), by="g", weights=weights, lens="class:1", bins=B)
            lazy = getattr(calframe, func)(lf, by="g", weights=weights, lens="class:1", bins=B).collect()
            np.testing.assert_allclose(lazy[func].to_numpy(), eager[func].to_numpy(), rtol=0, atol=1e-15)


def test_fixed_to_float_rounds_correctly():
    """Integers past 2^53 (ties, sticky bits, carries across the 2^64 limb) round as Python's exact int -> float."""
    from fractions import Fraction

    rng = np.random.default_rng(14)
    vals = [int(rng.integers(0, 2**62)) * 2 ** int(rng.integers(0, 64)) + int(rng.integers(0, 2**63)) for _ in range(3000)]
    vals += [2**k + d for k in range(126) for d in (-1, 0, 1)] + [(2**53 + 1) * 2**j for j in range(70)]
    vals = [v for v in vals if 0 <= v < 2**127]
    hi = np.array([v >> 64 for v in vals], dtype=np.int64)
    lo = np.array([v & (2**64 - 1) for v in vals], dtype=np.uint64)
    want = np.array([float(Fraction(v, 2**84)) for v in vals])
    np.testing.assert_array_equal(_K.fixed_to_floats(hi, lo, np.full(len(vals), -84)), want)


def test_spec_names_every_function_that_takes_a_lazyframe():
    """docs/spec.md section 8, "Lazy in, lazy out", says what each public function whose docstring speaks of a
    LazyFrame does with one (streams, collects, or builds a query)."""
    import inspect
    from pathlib import Path

    spec = (Path(__file__).parents[1] / "docs" / "spec.md").read_text()
    section = spec.split("### Lazy in, lazy out")[1].split("\n### ")[0]
    lazy = [n for n in calframe.__all__ if inspect.isfunction(getattr(calframe, n))
            and "LazyFrame" in (inspect.getdoc(getattr(calframe, n)) or "")]
    assert {"monitor", "smece", "disparity", "fit", "apply"} <= set(lazy)
    assert [n for n in lazy if f"`{n}`" not in section] == []


def test_ci_on_a_lazyframe_streams_from_the_moments_and_rows_collect(scan):
    """ci= on uniform bins streams (spec section 8, "Lazy in, lazy out"): the moments of the bins come from the
    streaming pass, the draws from them, the eager call's bounds to rounding (eager sums its moments as floats).
    bootstrap="rows" needs the rows: the LazyFrame is collected, the eager bootstrap runs, the result comes back
    as a LazyFrame with the eager numbers, bit for bit."""
    df = frame("binary", seed=15)
    lf = scan(df)
    for kw in ({}, {"by": "g"}):
        got = calframe.ece(lf, ci=0.9, n_boot=30, **kw)
        assert isinstance(got, pl.LazyFrame)
        want = calframe.ece(df, ci=0.9, n_boot=30, **kw)
        got = got.collect()
        floats = ["ece", "ece_lo", "ece_hi"]
        assert got.drop(floats).equals(want.drop(floats))
        np.testing.assert_allclose(got.select(floats).to_numpy(), want.select(floats).to_numpy(), rtol=1e-12,
                                   atol=1e-15)
        rows = calframe.ece(lf, ci=0.9, n_boot=30, bootstrap="rows", **kw)
        assert rows.collect().equals(calframe.ece(df, ci=0.9, n_boot=30, bootstrap="rows", **kw))


def test_lazy_result_composes_and_raises_at_collect(scan, tmp_path):
    """A LazyFrame in gives a LazyFrame out: joined, sorted, sunk to Parquet; without by= one row (n, figure).
    A bad parameter or a missing column raises at the call; bad data at collect, with calframe's class."""
    df = frame("binary", seed=16)
    lf = scan(df)
    per = calframe.ece(lf, by="g")
    assert isinstance(per, pl.LazyFrame)
    joined = per.join(lf.group_by("g").agg(pl.len().alias("rows")), on="g", how="left", nulls_equal=True).sort("g", nulls_last=True).collect()
    want = calframe.ece(df, by="g")
    np.testing.assert_array_equal(joined["n"].to_numpy(), joined["rows"].to_numpy())
    np.testing.assert_allclose(joined["ece"].to_numpy(), want["ece"].to_numpy(), rtol=0, atol=1e-15)
    per.sink_parquet(tmp_path / "ece.parquet")
    assert pl.read_parquet(tmp_path / "ece.parquet").columns == ["g", "n", "ece"]
    one = calframe.vmce(lf, "age", bins=[0.0, 30.0, 60.0, 200.0]).collect(engine="streaming")
    assert one.columns == ["n", "vmce"] and one["n"].to_list() == [df.height]
    assert one["vmce"][0] == pytest.approx(calframe.vmce(df, "age", bins=[0.0, 30.0, 60.0, 200.0]), abs=1e-15)
    with pytest.raises(calframe.ColumnNotFoundError):
        calframe.ece(lf, prob="nope")
    with pytest.raises(calframe.ParameterError):
        calframe.ece(lf, bins=0)
    bad = calframe.ece(pl.LazyFrame({"prob": [0.2, 1.5], "label": [0, 1]}))
    with pytest.raises(calframe.InvalidValueError, match="outside"):
        bad.collect()
