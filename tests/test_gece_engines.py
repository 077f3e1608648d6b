"""gece with uniform bins where the rows are (calframe/engines/_vector_sums.py): streamed on a LazyFrame and in
the frame's own engine on DuckDB, Ibis and pyarrow (Spark: tests/test_surfaces.py), equal to eager Polars to
1e-12, with the eager errors; the lenses' expressions (generalized.lens_exprs) equal the numpy lenses bit for
bit, ties included."""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest

import calframe
from calframe import generalized as G

duckdb = pytest.importorskip("duckdb")
pytest.importorskip("narwhals")

K = 4
PROBS = [f"p{j}" for j in range(K)]


def _frame(n: int = 600, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(K), n)
    p[: n // 10] = [0.25, 0.25, 0.25, 0.25]  # ties: top-k's order, top-1's class
    p[n // 10: n // 5] = [0.4, 0.4, 0.2, 0.0]
    return pl.DataFrame({c: p[:, j] for j, c in enumerate(PROBS)}).with_columns(
        label=pl.Series(rng.integers(0, K, n)), w=pl.Series(rng.random(n) * 4),
        g=pl.Series([["a", "b", None][i] for i in rng.integers(0, 3, n)]))


@pytest.fixture(scope="module")
def df() -> pl.DataFrame:
    return _frame()


def _duck(frame: pl.DataFrame):
    return duckdb.connect().from_arrow(frame.to_arrow())


def _as_polars(res):
    if isinstance(res, pl.LazyFrame):
        return res.collect()
    if hasattr(res, "pl"):
        return res.pl()
    if hasattr(res, "to_polars"):
        return res.to_polars()
    return res if isinstance(res, (float, pl.DataFrame)) else pl.from_arrow(res)


def _same(got, expected) -> None:
    got = _as_polars(got)
    if isinstance(expected, float):
        if isinstance(got, pl.DataFrame):
            assert got.columns == ["n", "gece"]
            got = got["gece"][0]
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-15)
        return
    assert got.columns == expected.columns
    assert got["g"].to_list() == expected["g"].to_list() and got["n"].to_list() == expected["n"].to_list()
    np.testing.assert_allclose(got["gece"].to_numpy(), expected["gece"].to_numpy(), rtol=1e-12, atol=1e-15)


LENSES = [{}, {"lens": "class:2"}, {"lens": "full"}, {"lens": "grouping", "groups": [[0, 2], [1, 3]]},
          {"lens": "topk", "k": 2}, {"lens": "topk", "k": K}, {"lens": "marginal"},
          {"lens": "full", "distance": "l2", "p": 2}, {"lens": "topk", "k": 1, "p": float("inf")}]


@pytest.mark.parametrize("kw", LENSES, ids=lambda kw: "-".join(map(str, kw.values())) or "default")
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_lazy_and_duckdb_equal_eager(df, kw, weighted):
    kw = {**kw, "by": "g", "bins": 6} | ({"weights": "w"} if weighted else {})
    expected = calframe.gece(df, PROBS, "label", **kw)
    lazy = calframe.gece(df.lazy(), PROBS, "label", **kw)
    assert isinstance(lazy, pl.LazyFrame)
    _same(lazy, expected)
    _same(calframe.gece(_duck(df), PROBS, "label", **kw), expected)


@pytest.mark.parametrize("kw", [{}, {"lens": "full", "weights": "w"}, {"lens": "topk", "k": 2, "by": "g"}])
def test_ibis_and_pyarrow_equal_eager(df, kw):
    ibis = pytest.importorskip("ibis")
    expected = calframe.gece(df, PROBS, "label", **kw)
    _same(calframe.gece(ibis.memtable(df.to_arrow()), PROBS, "label", **kw), expected)
    _same(calframe.gece(df.to_arrow(), PROBS, "label", **kw), expected)


@pytest.mark.parametrize("label", ["label", "lb", "lf"])
@pytest.mark.parametrize("lens", [None, "top1", "class:0", "full", "marginal", "topk"])
def test_binary_input(lens, label):
    rng = np.random.default_rng(1)
    p = np.concatenate([rng.random(200), [0.5, 0.5, 0.0, 1.0]])
    frame = pl.DataFrame({"prob": p, "label": rng.integers(0, 2, p.size)}).with_columns(
        lb=pl.col("label").cast(pl.Boolean), lf=pl.col("label").cast(pl.Float64))
    kw = {"lens": lens, "label": label} | ({"k": 1} if lens == "topk" else {})
    expected = calframe.gece(frame, **kw)
    _same(calframe.gece(frame.lazy(), **kw), expected)
    _same(calframe.gece(_duck(frame), **kw), expected)


def test_nulls_drop_and_a_null_key(df):
    frame = df.with_columns(p1=pl.when(pl.col("w") < 0.3).then(None).otherwise(pl.col("p1")))
    kw = {"by": "g", "nulls": "drop", "lens": "full", "weights": "w"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = calframe.gece(frame, PROBS, "label", **kw)
        assert None in expected["g"].to_list()
        _same(calframe.gece(frame.lazy(), PROBS, "label", **kw), expected)
        _same(calframe.gece(_duck(frame), PROBS, "label", **kw), expected)


def test_array_column_streams_on_a_lazyframe(df):
    frame = df.select(pl.concat_arr(PROBS).alias("probs"), "label")
    for lens in (None, "full", "topk"):
        kw = {"lens": lens} | ({"k": 2} if lens == "topk" else {})
        out = calframe.gece(frame.lazy(), **kw)
        assert isinstance(out, pl.LazyFrame)
        _same(out, calframe.gece(frame, **kw))


def test_same_bits_on_every_run(df):
    kw = {"lens": "topk", "k": 2, "weights": "w", "by": "g"}
    lazy = [calframe.gece(df.lazy(), PROBS, "label", **kw).collect()["gece"].to_numpy() for _ in range(3)]
    duck = [calframe.gece(_duck(df), PROBS, "label", **kw).pl()["gece"].to_numpy() for _ in range(3)]
    assert all(np.array_equal(a, lazy[0]) for a in lazy + duck)


def _error(fn):
    try:
        out = fn()
        if isinstance(out, pl.LazyFrame):
            out.collect()
    except Exception as exc:  # noqa: BLE001 - the class and message are compared
        return type(exc), str(exc)
    return None


BAD = [
    (lambda f: f, {"lens": "topk", "k": 5}),
    (lambda f: f, {"lens": "grouping", "groups": [[0], [1, 1], [2, 3]]}),
    (lambda f: f, {"lens": "class:4"}),
    (lambda f: f, {"lens": "full", "distance": ("mahalanobis", np.eye(2))}),
    (lambda f: f, {"lens": "full", "distance": ("interval", 0.1, 0.5)}),
    (lambda f: f.with_columns(p0=pl.lit(2.0)), {}),
    (lambda f: f.with_columns(label=pl.lit(7)), {"lens": "topk", "k": 9}),
    (lambda f: f.with_columns(w=pl.lit(-1.0)), {"weights": "w"}),
    (lambda f: f.with_columns(w=pl.when(pl.col("g") == "a").then(0.0).otherwise(pl.col("w"))),
     {"weights": "w", "by": "g", "lens": "full"}),
    (lambda f: f.with_columns(p1=pl.when(pl.col("w") < 0.2).then(None).otherwise(pl.col("p1"))), {"lens": "full"}),
    (lambda f: f.with_columns(p1=pl.col("p1").cast(pl.String)), {}),
    (lambda f: f, {"by": "nope"}),
]


@pytest.mark.parametrize("case", range(len(BAD)))
def test_errors_are_the_eager_ones(df, case):
    change, kw = BAD[case]
    frame = change(df)
    expected = _error(lambda: calframe.gece(frame, PROBS, "label", **kw))
    assert expected is not None
    assert _error(lambda: calframe.gece(frame.lazy(), PROBS, "label", **kw)) == expected
    assert _error(lambda: calframe.gece(_duck(frame), PROBS, "label", **kw)) == expected


@pytest.mark.parametrize("kw", [{"binning": "adaptive"}, {"ci": 0.9, "n_boot": 5}, {"labels_in": [1, 2]},
                                {"where": "p0 > 0.1"}, {"output_between": (0.3, 1.0)}])
def test_calls_that_need_the_rows(df, kw):
    """Collected on a LazyFrame and a pyarrow Table, refused on DuckDB with the engine's message."""
    expected = calframe.gece(df, PROBS, "label", **kw)
    if isinstance(expected, pl.DataFrame):  # ci: the bounds beside the figure
        got = calframe.gece(df.lazy(), PROBS, "label", **kw).collect()
        assert got.columns == expected.columns and got.row(0) == pytest.approx(expected.row(0), rel=1e-12)
    else:
        _same(calframe.gece(df.lazy(), PROBS, "label", **kw), expected)
        _same(calframe.gece(df.to_arrow(), PROBS, "label", **kw), expected)
    with pytest.raises(calframe.ParameterError, match="is not supported on a DuckDB relation"):
        calframe.gece(_duck(df), PROBS, "label", **kw)


def test_topk_of_many_classes_is_collected_or_refused():
    rng = np.random.default_rng(2)
    k = G.TOPK_EXPR_MAX + 1
    frame = pl.DataFrame({f"c{j}": col for j, col in enumerate(rng.dirichlet(np.ones(k), 100).T)}).with_columns(
        label=pl.Series(rng.integers(0, k, 100)))
    cols = [f"c{j}" for j in range(k)]
    expected = calframe.gece(frame, cols, "label", lens="topk", k=3)
    _same(calframe.gece(frame.lazy(), cols, "label", lens="topk", k=3), expected)
    with pytest.raises(calframe.ParameterError, match="lens='topk' on more than 16 classes is not supported"):
        calframe.gece(_duck(frame), cols, "label", lens="topk", k=3)
    _same(calframe.gece(_duck(frame), cols, "label", lens="full"), calframe.gece(frame, cols, "label", lens="full"))


@pytest.mark.parametrize("choice", [G.LensChoice("top1"), G.LensChoice("class", 3), G.LensChoice("topk", k=2),
                                    G.LensChoice("topk", k=K), G.LensChoice("full"),
                                    G.LensChoice("grouping", groups=((3, 0), (1,), (2,)))])
def test_lens_expressions_are_the_numpy_lenses_bit_for_bit(df, choice):
    """generalized.lens_exprs in Polars and in narwhals (DuckDB) against generalized.lensed, ties included."""
    import narwhals as nw

    probs, labels = df.select(PROBS).to_numpy(), df["label"].to_numpy()
    gp, yp = G.lensed(probs, labels, choice)
    if yp.ndim == 1:  # full / grouping: y' by the position of its 1
        yp = np.eye(gp.shape[1])[yp]
    for ns, run in ((pl, lambda e: df.select(e)), (nw, lambda e: nw.from_native(_duck(df)).select(e).to_native().pl())):
        g_e, y_e = G.lens_exprs(choice, [ns.col(c) for c in PROBS], ns.col("label"), "int", ns)
        got = run([e.alias(f"g{j}") for j, e in enumerate(g_e)] + [e.alias(f"y{j}") for j, e in enumerate(y_e)])
        m = len(g_e)
        assert np.array_equal(got.select([f"g{j}" for j in range(m)]).to_numpy(), gp)
        assert np.array_equal(got.select([f"y{j}" for j in range(m)]).to_numpy(), yp)
