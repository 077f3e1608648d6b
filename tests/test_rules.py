"""Each rule in one place: every rendering of the lens and of the bin of a value gives the same answer.

The lens (calframe.lenses) and the bin (calframe.binning) are written once; numpy, the numba
kernels, Polars expressions, SQL queries and the DuckDB macros render them. The expected values
here come from numpy by hand (numpy.digitize on edges built in this file, a loop for the first
maximum), on adversarial values: every edge, its neighbouring floats, 0, 1, ties between classes.
"""

from __future__ import annotations

import numba
import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calframe._columns import resolve
from calframe._kernels import accumulate as K
from calframe._kernels import fused as FK
from calframe._kernels import vector as VK
from calframe import generalized as G
from calframe._render import Sql
from calframe.binning import (edge_bins, edge_bins_expr, edge_bins_nw, edge_bins_sql, uniform_bin_expr, uniform_bin_nw,
                              uniform_bin_sql, uniform_bins, uniform_edges, uniform_k0)
from calframe.lenses import Lens, class_lens, lens_exprs, lens_nw, lens_sql, predicted, top1
from calframe.recalibrate._inputs import as_probs
from calframe.recalibrate._inputs import top1 as recal_top1

duckdb = pytest.importorskip("duckdb")
nw = pytest.importorskip("narwhals")

SIDES = ("left", "right")
ALL_BINS = range(1, 201)


# --------------------------------------------------------------------------- references, by hand


def ref_edges(bins: int, closed: str) -> np.ndarray:
    if closed == "left":
        return np.linspace(0.0, 1.0, bins + 1)
    return np.array([i / bins for i in range(bins + 1)])


def ref_bins(x: np.ndarray, inner: np.ndarray, closed: str) -> np.ndarray:
    """numpy.digitize: left = number of inner edges <= x, right = number of inner edges < x."""
    return np.digitize(x, inner, right=closed == "right")


def near(edges: np.ndarray, ulps: int = 2) -> np.ndarray:
    """Every edge and its ``ulps`` neighbouring floats on each side."""
    out = [edges]
    lo = hi = edges
    for _ in range(ulps):
        lo, hi = np.nextafter(lo, -np.inf), np.nextafter(hi, np.inf)
        out += [lo, hi]
    return np.concatenate(out)


def adversarial(bins: int) -> np.ndarray:
    """Values in [0, 1] on and next to the edges of both closed sides (which differ by an ulp for some B)."""
    x = near(np.concatenate([ref_edges(bins, "left"), ref_edges(bins, "right"), [0.5, 5e-324]]))
    return np.unique(np.clip(x, 0.0, 1.0))


# --------------------------------------------------------------------------- renderings of the uniform bin


def numba_kernel(x: np.ndarray, bins: int, closed: str) -> np.ndarray:
    """The accumulate pass's own uniform bin (bins=None): one value per group, its bin is the non-empty cell."""
    n = x.shape[0]
    out = K.accumulate(np.arange(n, dtype=np.int32), None, x, np.zeros(n), None, uniform_edges(bins, closed),
                       closed == "right", n, bins)
    counts = out[:, :, 0]
    assert (counts.sum(axis=1) == 1).all()
    return counts.argmax(axis=1)


def fused_kernel(x: np.ndarray, bins: int, closed: str) -> np.ndarray:
    """The eager engine's fused pass (calframe/_kernels/fused.py): each value in a slot of its own."""
    n = x.shape[0]
    flat, _, bad = FK.binned_pass(x, np.zeros(n, dtype=np.int8), np.arange(n), 0, None, np.ones(n),
                                  uniform_edges(bins, closed), closed == "right", FK.CLASS1, bins, n, 1)
    counts = flat.reshape(n, bins, 3)[:, :, 0]
    assert bad == 0 and (counts.sum(axis=1) == 1).all()
    return counts.argmax(axis=1)


def polars_bins(x: np.ndarray, bins: int, closed: str) -> np.ndarray:
    return pl.DataFrame({"x": x}).select(uniform_bin_expr(pl.col("x"), bins, closed).alias("b"))["b"].to_numpy()


def duckdb_macro_bins(con, xs: np.ndarray, bs: np.ndarray, closed: str) -> np.ndarray:
    """The DuckDB macros' run-time uniform bin (bins a column here), rows in the order given."""
    t = pl.DataFrame({"i": np.arange(xs.shape[0]), "x": xs, "b": bs.astype(np.int64)})
    k0 = uniform_k0(Sql("x"), Sql("b"))
    q = (f"SELECT i, {uniform_bin_sql('x', 'k0', 'b', closed)} AS bin "
         f"FROM (SELECT *, {k0} AS k0 FROM t) ORDER BY i")
    return run_duckdb(con, q, t)["bin"]


def run_duckdb(con, q: str, t: pl.DataFrame) -> dict[str, np.ndarray]:
    """``q`` in DuckDB over the table ``t``."""
    con.register("t", t.to_arrow())
    return con.execute(q).fetchnumpy()


#: the engines the narwhals renderings are checked on (calframe.engines.native.sums)
NW_BACKENDS = ("duckdb", "pyarrow", "ibis")


def run_nw(con, t: pl.DataFrame, backend: str, **exprs) -> dict[str, np.ndarray]:
    """narwhals expressions evaluated on ``t`` as a DuckDB relation, a pyarrow Table or an Ibis table (DuckDB)."""
    arrow = t.to_arrow()
    if backend == "pyarrow":
        native = arrow
    else:
        con.register("nwsrc", arrow)
        con.execute("CREATE OR REPLACE TABLE nwt AS SELECT * FROM nwsrc")
        native = con.table("nwt")
        if backend == "ibis":
            ibis = pytest.importorskip("ibis")
            native = ibis.duckdb.from_connection(con).table("nwt")
    f = nw.from_native(native)
    out = f.lazy().select(**exprs).collect("polars").to_native()
    return {c: out[c].to_numpy() for c in out.columns}


@pytest.fixture(scope="module")
def con():
    c = duckdb.connect()
    yield c
    c.close()


@pytest.mark.parametrize("closed", SIDES)
def test_uniform_bin_every_rendering_every_bin_count(con, closed):
    """B = 1..200: numpy, the numba kernels, Polars, DuckDB (query and macro), on and next to every edge."""
    xs, bs = [], []
    for bins in ALL_BINS:
        x = adversarial(bins)
        want = ref_bins(x, ref_edges(bins, closed)[1:-1], closed)
        np.testing.assert_array_equal(uniform_bins(x, bins, closed), want, err_msg=f"numpy B={bins}")
        np.testing.assert_array_equal(numba_kernel(x, bins, closed), want, err_msg=f"numba B={bins}")
        np.testing.assert_array_equal(fused_kernel(x, bins, closed), want, err_msg=f"fused B={bins}")
        np.testing.assert_array_equal(polars_bins(x, bins, closed), want, err_msg=f"polars B={bins}")
        if closed == "left":  # GECE's uniform grid (left-closed only)
            got = VK.digitize_uniform(x[:, None], 1, uniform_edges(bins, "left"))[:, 0]
            np.testing.assert_array_equal(got, want, err_msg=f"digitize_uniform B={bins}")
        if bins % 7 == 1 or bins in (5, 10, 15, 100, 200):  # the query text per B: a sample of bin counts
            inner = [float(e) for e in uniform_edges(bins, closed)[1:-1]]
            got = run_duckdb(con, f"SELECT {edge_bins_sql('x', inner, closed)} AS b FROM t", pl.DataFrame({"x": x}))["b"]
            np.testing.assert_array_equal(got, want, err_msg=f"duckdb query B={bins}")
            for backend in NW_BACKENDS:  # the narwhals rendering, in each engine
                got = run_nw(con, pl.DataFrame({"x": x}), backend, b=uniform_bin_nw(nw.col("x"), bins, closed))["b"]
                np.testing.assert_array_equal(got, want, err_msg=f"narwhals on {backend} B={bins}")
        xs.append(x)
        bs.append(np.full(x.shape[0], bins))
    x, b = np.concatenate(xs), np.concatenate(bs)
    want = np.concatenate([ref_bins(v, ref_edges(int(bb[0]), closed)[1:-1], closed) for v, bb in zip(xs, bs)])
    np.testing.assert_array_equal(duckdb_macro_bins(con, x, b, closed), want)


@numba.njit(cache=True)
def _hot_bins(x, edges, n_bins, right):
    """The row loops' uniform bin (calframe._kernels.accumulate.uniform_bin) of each x."""
    out = np.empty(x.shape[0], dtype=np.int64)
    for i in range(x.shape[0]):
        out[i] = K.uniform_bin(x[i], edges, n_bins, right)
    return out


@pytest.mark.parametrize("closed", SIDES)
def test_uniform_bin_fast_path_at_its_bound(closed):
    """The hot bin's fast path (floor(x B) where x B is NEAR_EDGE from an integer) against numpy.digitize:
    values on, next to and NEAR_EDGE / B (+- ulps) from sampled edges, for bin counts up to past FAST_BINS."""
    rng = np.random.default_rng(5)
    for bins in (1, 2, 3, 7, 10, 15, 49, 100, 999, 65_537, K.FAST_BINS - 1, K.FAST_BINS, K.FAST_BINS + 1, 3_000_001):
        edges = uniform_edges(bins, closed)
        ks = np.unique(np.concatenate([[0, 1, bins // 2, bins - 1, bins], rng.integers(0, bins + 1, 40)]))
        base = ks / bins
        d = K.NEAR_EDGE / bins
        x = near(np.concatenate([edges[ks], base, base + d, base - d, base + d * (1 + 1e-7), base - d * (1 + 1e-7),
                                 base + 2 * d, base - 2 * d, rng.random(50)]), ulps=3)
        x = np.unique(np.clip(x, 0.0, 1.0))
        want = ref_bins(x, edges[1:-1], closed)
        np.testing.assert_array_equal(_hot_bins(x, edges, bins, closed == "right"), want, err_msg=f"B={bins}")


unit = st.floats(0.0, 1.0, allow_nan=False)


@st.composite
def bins_and_values(draw):
    bins = draw(st.integers(1, 200))
    edges = np.unique(np.concatenate([ref_edges(bins, "left"), ref_edges(bins, "right")]))
    k = st.integers(0, edges.shape[0] - 1)
    steps = st.integers(-3, 3)
    picks = draw(st.lists(st.tuples(k, steps), min_size=1, max_size=30))
    x = []
    for i, s in picks:
        v = edges[i]
        for _ in range(abs(s)):
            v = np.nextafter(v, np.inf if s > 0 else -np.inf)
        x.append(min(max(v, 0.0), 1.0))
    x += draw(st.lists(unit, max_size=10))
    return bins, np.array(x, dtype=np.float64)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bv=bins_and_values(), closed=st.sampled_from(SIDES))
def test_uniform_bin_renderings_agree_hypothesis(con, bv, closed):
    bins, x = bv
    want = ref_bins(x, ref_edges(bins, closed)[1:-1], closed)
    np.testing.assert_array_equal(uniform_bins(x, bins, closed), want)
    np.testing.assert_array_equal(numba_kernel(x, bins, closed), want)
    np.testing.assert_array_equal(fused_kernel(x, bins, closed), want)
    np.testing.assert_array_equal(polars_bins(x, bins, closed), want)
    np.testing.assert_array_equal(duckdb_macro_bins(con, x, np.full(x.shape[0], bins), closed), want)


@st.composite
def edges_and_values(draw):
    """Explicit edges (up to 60 inner ones: both the comparison and the search_sorted form in Polars)."""
    inner = sorted(set(draw(st.lists(st.floats(0.0, 1.0, allow_nan=False, exclude_min=True, exclude_max=True),
                                     min_size=0, max_size=60))))
    e = np.array(inner, dtype=np.float64)
    vals = near(e, 1) if e.size else np.array([0.5])
    x = np.concatenate([vals, [0.0, 1.0], draw(st.lists(unit, max_size=10))])
    return e, x


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ev=edges_and_values(), closed=st.sampled_from(SIDES))
def test_explicit_edge_renderings_agree_hypothesis(con, ev, closed):
    inner, x = ev
    want = ref_bins(x, inner, closed)
    np.testing.assert_array_equal(edge_bins(x, inner, closed), want)
    got = pl.DataFrame({"x": x}).select(edge_bins_expr(pl.col("x"), list(inner), closed).alias("b"))["b"].to_numpy()
    np.testing.assert_array_equal(got, want)
    t = pl.DataFrame({"x": x})
    sql = f"SELECT {edge_bins_sql('x', list(inner), closed)} AS b FROM t"
    np.testing.assert_array_equal(run_duckdb(con, sql, t)["b"], want)
    got = pl.SQLContext(frames={"t": t}).execute(sql, eager=True)["b"].to_numpy()
    np.testing.assert_array_equal(got, want)
    for backend in NW_BACKENDS[:2]:
        got = run_nw(con, t, backend, b=edge_bins_nw(nw.col("x"), list(inner), closed))["b"]
        np.testing.assert_array_equal(got, want, err_msg=backend)


# --------------------------------------------------------------------------- the lens


def ref_lens(p: np.ndarray, y: np.ndarray, lens: str) -> tuple[np.ndarray, np.ndarray]:
    """By hand, row by row: top1 = the first maximum (binary: class 1 only when p > 0.5)."""
    conf, acc = [], []
    for row, lab in zip(p, y):
        probs = [1.0 - row, row] if np.ndim(row) == 0 else list(row)
        if lens == "top1":
            pred = 1 if np.ndim(row) == 0 and row > 0.5 else 0
            if np.ndim(row) > 0:
                pred = next(j for j, v in enumerate(probs) if v == max(probs))
            conf.append(row if np.ndim(row) == 0 and pred == 1 else (1.0 - row if np.ndim(row) == 0 else probs[pred]))
            acc.append(float(pred == int(lab)))
        else:
            c = int(lens.split(":")[1])
            conf.append(probs[c])
            acc.append(float(int(lab) == c))
    return np.array(conf), np.array(acc)


HALF = [0.0, 1.0, 0.5, np.nextafter(0.5, 0.0), np.nextafter(0.5, 1.0), 5e-324, np.nextafter(1.0, 0.0), 0.25, 0.75]


@pytest.mark.parametrize("label_kind", ["int", "bool", "float"])
@pytest.mark.parametrize("lens", ["top1", "class:1", "class:0"])
def test_binary_lens_every_rendering(con, lens, label_kind):
    p = np.repeat(np.array(HALF), 2)
    y = np.tile([0, 1], len(HALF))
    want_conf, want_acc = ref_lens(p, y, lens)
    dtype = {"int": pl.Int64, "bool": pl.Boolean, "float": pl.Float64}[label_kind]
    df = pl.DataFrame({"p": p, "y": pl.Series(y).cast(dtype)})
    # numpy (the eager path)
    scored = resolve(df, func="t", prob="p", label="y")
    conf, acc = top1(scored) if lens == "top1" else class_lens(scored, int(lens[-1]))
    np.testing.assert_array_equal(conf, want_conf)
    np.testing.assert_array_equal(acc, want_acc)
    # Polars
    c, a = lens_exprs(Lens("top1") if lens == "top1" else Lens("class", int(lens[-1])), pl.col("p"), pl.col("y"),
                      label_kind=label_kind)
    got = df.select(c.alias("c"), a.alias("a"))
    np.testing.assert_array_equal(got["c"].to_numpy(), want_conf)
    np.testing.assert_array_equal(got["a"].to_numpy(), want_acc)
    # SQL, in DuckDB and Polars SQL
    c, a = lens_sql(Lens("top1") if lens == "top1" else Lens("class", int(lens[-1])), "p", "CAST(y AS DOUBLE)")
    q = f"SELECT {c} AS c, {a} AS a FROM t"
    for got in (run_duckdb(con, q, df), pl.SQLContext(frames={"t": df}).execute(q, eager=True)):
        np.testing.assert_array_equal(np.asarray(got["c"]), want_conf)
        np.testing.assert_array_equal(np.asarray(got["a"]), want_acc)
    # narwhals, in DuckDB, pyarrow and Ibis
    c, a = lens_nw(Lens("top1") if lens == "top1" else Lens("class", int(lens[-1])), nw.col("p"), nw.col("y"),
                   label_kind=label_kind)
    for backend in NW_BACKENDS:
        got = run_nw(con, df, backend, c=c, a=a)
        np.testing.assert_array_equal(got["c"], want_conf, err_msg=backend)
        np.testing.assert_array_equal(got["a"], want_acc, err_msg=backend)


def tied_probs(k: int, n: int, seed: int) -> np.ndarray:
    """Rows of class probabilities with many ties: small integers over their sum (exact ties, shared maxima)."""
    rng = np.random.default_rng(seed)
    w = rng.integers(0, 3, size=(n, k)).astype(np.float64)
    w[w.sum(axis=1) == 0, 0] = 1.0
    w[: min(n, 3)] = 1.0  # all classes tied
    return w / w.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("k", [2, 3, 17])  # 17: beyond the when-chain, the concat_arr form
@pytest.mark.parametrize("label_kind", ["int", "float"])
def test_multiclass_lens_numpy_and_polars(con, k, label_kind):
    n = 300
    p = tied_probs(k, n, k)
    y = np.random.default_rng(k + 1).integers(0, k, n)
    names = [f"p{j}" for j in range(k)]
    dtype = pl.Int64 if label_kind == "int" else pl.Float64
    df = pl.DataFrame({**{c: p[:, j] for j, c in enumerate(names)}, "y": pl.Series(y).cast(dtype)})
    df = df.with_columns(arr=pl.concat_arr(names))
    scored = resolve(df, func="t", prob=names, label="y")
    for lens in ["top1", "class:0", f"class:{k - 1}"]:
        want_conf, want_acc = ref_lens(p, y, lens)
        conf, acc = top1(scored) if lens == "top1" else class_lens(scored, int(lens.split(":")[1]))
        np.testing.assert_array_equal(conf, want_conf, err_msg=lens)
        np.testing.assert_array_equal(acc, want_acc, err_msg=lens)
        lens_ = Lens("top1") if lens == "top1" else Lens("class", int(lens.split(":")[1]))
        for probs, kk in (([pl.col(c) for c in names], None), (pl.col("arr"), k)):
            c, a = lens_exprs(lens_, probs, pl.col("y"), k=kk, label_kind=label_kind)
            got = df.select(c.alias("c"), a.alias("a"))
            np.testing.assert_array_equal(got["c"].to_numpy(), want_conf, err_msg=f"{lens} k={kk}")
            np.testing.assert_array_equal(got["a"].to_numpy(), want_acc, err_msg=f"{lens} k={kk}")
        c, a = lens_nw(lens_, [nw.col(c) for c in names], nw.col("y"), label_kind=label_kind)
        for backend in NW_BACKENDS[:2]:  # narwhals, in DuckDB and pyarrow
            got = run_nw(con, df.drop("arr"), backend, c=c, a=a)
            np.testing.assert_array_equal(got["c"], want_conf, err_msg=f"{lens} {backend}")
            np.testing.assert_array_equal(got["a"], want_acc, err_msg=f"{lens} {backend}")


@pytest.mark.parametrize("k", [1, 3, 17])  # 1: binary input, one probability per row
def test_top1_numba_and_recalibration_forms(k):
    """GECE's top1 vector lens (numba, first argmax) and the recalibrators' top1 give the lens's conf and class."""
    if k == 1:
        p = np.repeat(np.array(HALF), 2)
        y = np.tile([0, 1], len(HALF))
    else:
        p = tied_probs(k, 300, k)
        y = np.random.default_rng(k + 1).integers(0, k, p.shape[0])
    want_conf, want_acc = ref_lens(p, y, "top1")
    gp, yp = G.top1(p, y)
    np.testing.assert_array_equal(gp[:, 0], want_conf)
    np.testing.assert_array_equal(yp[:, 0], want_acc)
    for conf, cls in (predicted(p), recal_top1(as_probs(p, "t"))):
        np.testing.assert_array_equal(conf, want_conf)
        np.testing.assert_array_equal((cls == y).astype(np.float64), want_acc)


def test_apply_top1_recalibrator_on_binary_input_returns_the_predicted_class_back():
    """A top-1 recalibrator on one probability column: the new confidence belongs to the predicted class, class 1
    only when p > 0.5 (so p = 0.5 and the float below it get 1 - confidence, the float above it the confidence)."""
    import calframe

    rng = np.random.default_rng(0)
    p = rng.random(400)
    p[:9] = HALF
    df = pl.DataFrame({"prob": p, "label": (rng.random(400) < p).astype(int)})
    rec = calframe.fit(df, "histogram", lens="top1")
    r = rec.predict(p)
    want = np.array([r[i] if p[i] > 0.5 else 1.0 - r[i] for i in range(p.shape[0])])
    np.testing.assert_array_equal(calframe.apply(df, rec)["p_histogram"].to_numpy(), want)
