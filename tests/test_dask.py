"""ddf.calib on Dask DataFrames equals calframe on the collected pandas frame (to 1e-12).

The data is split into uneven partitions, one of them empty. Most tests compute with Dask's synchronous
scheduler: the same partition passes in this process, without the round trips (this file took 107 s all on
the cluster, 65 s so). The tests marked ``on_cluster`` compute on a tiny distributed LocalCluster (2 worker
processes, 1 thread each): where a result is finalized on a worker, its later passes go through the worker's
client, its warnings are forwarded and its errors sent back.
"""

from __future__ import annotations

import os
import time

import numpy as np
import pandas as pd
import polars as pl
import pytest
from conftest import as_flavour, signed_zero_keys_frame
from polars.testing import assert_frame_equal as assert_polars_equal

dask = pytest.importorskip("dask", reason="dask is not installed (pip install 'calframe[dask]')")
dd = pytest.importorskip("dask.dataframe", reason="dask[dataframe] is not installed (pip install 'calframe[dask]')")
distributed = pytest.importorskip("distributed", reason="distributed is not installed (pip install 'calframe[dask]')")

import calframe  # noqa: E402
import calframe.frames.dask  # noqa: E402,F401  (registers ddf.calib)
import calframe.engines.partitions.client as cfd  # noqa: E402
import calframe.engines.partitions.workers as cfd_parts  # noqa: E402

TOL = 1e-12
#: uneven partition bounds; [37:37] is an empty partition
CUTS = [0, 37, 37, 700, 712, 1500]


@pytest.fixture(scope="module")
def cluster():
    # the workers must import calframe from this checkout
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                       dashboard_address=None)
    c = distributed.Client(cluster, set_as_default=False)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(autouse=True)
def scheduler(request):
    """The synchronous scheduler, or the cluster for a test marked ``on_cluster``."""
    if request.node.get_closest_marker("on_cluster") is None:
        with dask.config.set(scheduler="synchronous"):
            yield None
        return
    c = request.getfixturevalue("cluster")
    with c.as_current(), dask.config.set(scheduler="dask.distributed"):
        assert distributed.get_client() is c
        yield c


on_cluster = pytest.mark.on_cluster


def _data(n: int = CUTS[-1], seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.random(n)
    p[:40] = 0.75  # ties across partitions
    probs = rng.dirichlet(np.ones(3) * 0.7, n)
    return pd.DataFrame({
        "prob": p,
        "label": (rng.random(n) < p**1.4).astype(np.int64),
        "p0": probs[:, 0], "p1": probs[:, 1], "p2": probs[:, 2],
        "cls": rng.integers(0, 3, n),
        "g": rng.integers(0, 4, n),
        "gn": pd.array(rng.choice(np.array([10, 20, None], dtype=object), n), dtype="Int64"),
        "s": pd.array(rng.choice(np.array(["north", "south", "east", None], dtype=object), n), dtype="string"),
        "age": np.round(rng.normal(45, 15, n)),          # heavily tied numeric variable
        "score": rng.normal(0, 1, n),                     # continuous variable
        "region": rng.choice(["n", "s", "e", "w"], n),
        "flag": rng.random(n) < 0.3,
        "w": rng.random(n) * 2,
    })


def _ddf(df: pd.DataFrame) -> "dd.DataFrame":
    parts = [df.iloc[a:b] for a, b in zip(CUTS[:-1], CUTS[1:])]
    return dd.from_delayed([dask.delayed(p) for p in parts], meta=df.iloc[:0], verify_meta=False)


@pytest.fixture(scope="module")
def data():
    df = _data()
    ddf = _ddf(df)
    assert ddf.map_partitions(len).compute().tolist() == [37, 0, 663, 12, 788]
    return df, ddf


def _same(got, want):
    assert isinstance(got, cfd.DaskResult), type(got)  # lazy: computed here
    got = got.compute()
    if isinstance(want, float):
        assert isinstance(got, float)
        assert abs(got - want) <= TOL or (np.isnan(got) and np.isnan(want)), (got, want)
        return
    assert isinstance(got, pd.DataFrame), type(got)
    pd.testing.assert_frame_equal(got, want, check_exact=False, rtol=0, atol=TOL)


BINARY = {"prob": "prob", "label": "label"}
MULTI = {"prob": ["p0", "p1", "p2"], "label": "cls"}


# --------------------------------------------------------------------------- CE family


@pytest.mark.parametrize("by", [None, "s", ["g", "gn"]])
@pytest.mark.parametrize("binning", ["uniform", "quantile", "equal_mass"])
def test_ece_binary(data, binning, by):
    df, ddf = data
    _same(ddf.calib.ece(**BINARY, binning=binning, by=by), calframe.ece(df, **BINARY, binning=binning, by=by))


@pytest.mark.parametrize("by", [None, ["gn", "s"]])
@pytest.mark.parametrize("binning", ["uniform", "equal_mass"])
@pytest.mark.parametrize("func", ["mce", "rmsce"])
def test_mce_rmsce_binary(data, func, binning, by):
    df, ddf = data
    got = getattr(ddf.calib, func)(**BINARY, binning=binning, by=by)
    _same(got, getattr(calframe, func)(df, **BINARY, binning=binning, by=by))


@pytest.mark.parametrize("by", [None, "s"])
@pytest.mark.parametrize("kw", [
    {"binning": "uniform", "lens": "top1"},
    {"binning": "quantile", "lens": "class:2"},
    {"binning": "equal_mass", "lens": "marginal"},
    {"binning": "uniform", "lens": "marginal", "p": 2},
])
def test_ce_multiclass(data, kw, by):
    df, ddf = data
    _same(ddf.calib.ce(**MULTI, by=by, **kw), calframe.ce(df, **MULTI, by=by, **kw))


@pytest.mark.parametrize("by", [None, "gn"])
@pytest.mark.parametrize("kw", [
    {"p": 2, "estimator": "debiased"},                               # equal-mass bins (the default)
    {"p": 2, "estimator": "debiased", "squared": True, "binning": "quantile"},
    {"p": 1, "estimator": "debiased", "n_resamples": 50},            # Gaussian resampling from the same sums
])
def test_ce_debiased(data, kw, by):
    df, ddf = data
    _same(ddf.calib.ce(**BINARY, by=by, **kw), calframe.ce(df, **BINARY, by=by, **kw))


def test_ce_debiased_marginal_multiclass(data):
    df, ddf = data
    kw = {"p": 2, "estimator": "debiased", "lens": "marginal", "by": "g"}
    _same(ddf.calib.ce(**MULTI, **kw), calframe.ce(df, **MULTI, **kw))


def test_explicit_edges_weights_and_closed(data):
    df, ddf = data
    kw = {"bins": [0.0, 0.2, 0.5, 0.55, 0.9, 1.0], "closed": "right", "weights": "w", "by": "s"}
    _same(ddf.calib.ece(**BINARY, **kw), calframe.ece(df, **BINARY, **kw))
    _same(ddf.calib.mce(**BINARY, weights="w"), calframe.mce(df, **BINARY, weights="w"))


# --------------------------------------------------------------------------- companions


@pytest.mark.parametrize("cols", [BINARY, MULTI], ids=["binary", "multiclass"])
@pytest.mark.parametrize("by", [None, ["s", "gn"]])
@pytest.mark.parametrize("func", ["brier", "log_loss", "accuracy"])
def test_companions(data, func, by, cols):
    df, ddf = data
    _same(getattr(ddf.calib, func)(**cols, by=by), getattr(calframe, func)(df, **cols, by=by))


def test_companion_weights(data):
    df, ddf = data
    _same(ddf.calib.brier(**BINARY, by="g", weights="w"), calframe.brier(df, **BINARY, by="g", weights="w"))


# --------------------------------------------------------------------------- variable-based


@pytest.mark.parametrize("by", [None, "s"])
@pytest.mark.parametrize("kw", [
    {"variable": "age"},                                       # quantile(10), heavy ties
    {"variable": "score", "binning": "equal_mass", "bins": 7},
    {"variable": "age", "bins": [-100.0, 30.0, 45.0, 60.0, 200.0]},
    {"variable": "region"},                                    # categorical: one bin per category
    {"variable": "flag"},                                      # Boolean: categorical
])
def test_vece(data, kw, by):
    df, ddf = data
    kw = dict(kw, **BINARY, by=by)
    _same(ddf.calib.vece(**kw), calframe.vece(df, **kw))


def test_vece_list_multiclass_marginal(data):
    df, ddf = data
    kw = {**MULTI, "variable": ["age", "region", "score"], "by": "s", "lens": "marginal"}
    _same(ddf.calib.vece(**kw), calframe.vece(df, **kw))


def test_vece_debiased_resampling_categorical(data):
    # bin order matters to the resampling draws: categories are numbered by first appearance, as calframe
    df, ddf = data
    kw = {**BINARY, "variable": "region", "estimator": "debiased", "by": "g"}
    _same(ddf.calib.vece(**kw), calframe.vece(df, **kw))


@pytest.mark.parametrize("variable", ["age", "region", ["score", "region"]])
def test_vmce(data, variable):
    df, ddf = data
    _same(ddf.calib.vmce(variable, by="gn"), calframe.vmce(df, variable, by="gn"))


# --------------------------------------------------------------------------- reliability


@pytest.mark.parametrize("kw", [
    {"binning": "uniform", "bins": 10},
    {"binning": "quantile", "by": "s"},
    {"binning": "equal_mass", "by": "gn", "lens": "class:1"},
    {"bins": [0.0, 0.3, 0.7, 1.0], "weights": "w", "by": "g"},
])
def test_reliability(data, kw):
    df, ddf = data
    _same(ddf.calib.reliability(**BINARY, **kw), calframe.reliability(df, **BINARY, **kw))


def test_reliability_multiclass(data):
    df, ddf = data
    _same(ddf.calib.reliability(**MULTI, binning="quantile", by="g"),
          calframe.reliability(df, **MULTI, binning="quantile", by="g"))


# --------------------------------------------------------------------------- exact edges, refinement


def test_refinement_levels_give_the_same_edges(data, monkeypatch):
    # a tiny gather budget forces every target cell through the finer histogram levels
    df, ddf = data
    calls = []
    real = cfd.Runner.hist
    monkeypatch.setattr(cfd, "GATHER_CELL", 2)
    monkeypatch.setattr(cfd.Runner, "hist", lambda self, level, parents: calls.append(level) or real(self, level, parents))
    with dask.config.set(scheduler="synchronous"):  # the patches hold in this process (a result's later passes run
        # where Dask finalizes it: on a worker under distributed)
        _same(ddf.calib.ece(**BINARY, binning="equal_mass", by="s"),
              calframe.ece(df, **BINARY, binning="equal_mass", by="s"))
        _same(ddf.calib.vece("score", **BINARY, by="g"), calframe.vece(df, "score", **BINARY, by="g"))
    assert max(calls) >= 1


def test_concentrated_values(monkeypatch):
    # most confidences within a few ulps of 1: with a tiny gather budget they resolve at the finest levels only
    calls = []
    real = cfd.Runner.hist
    monkeypatch.setattr(cfd, "GATHER_CELL", 2)
    monkeypatch.setattr(cfd.Runner, "hist", lambda self, level, parents: calls.append(level) or real(self, level, parents))
    rng = np.random.default_rng(3)
    n = 900
    p = 1.0 - rng.integers(0, 50, n) * np.finfo(float).eps
    p[:300] = rng.random(300)
    df = pd.DataFrame({"prob": p, "label": rng.integers(0, 2, n), "g": rng.integers(0, 2, n)})
    ddf = dd.from_pandas(df, npartitions=3)
    with dask.config.set(scheduler="synchronous"):  # the patches hold in this process
        for binning in ("quantile", "equal_mass"):
            _same(ddf.calib.rmsce(binning=binning, by="g"), calframe.rmsce(df, binning=binning, by="g"))
    assert max(calls) == len(cfd.SHIFTS) - 1


# --------------------------------------------------------------------------- nulls, errors


@on_cluster
def test_nulls_drop(data):
    df, ddf = data
    df = df.assign(prob=df["prob"].astype("Float64"))
    df.loc[df.index[[3, 500, 1499]], "prob"] = pd.NA
    ddf = _ddf(df)
    with pytest.warns(calframe.CalframeWarning, match="dropped 3 rows") as caught:
        got = ddf.calib.ece(by="s", nulls="drop").compute()  # the warning comes when computed
        for _ in range(100):  # finalized on a worker: distributed forwards its warning to the client
            if caught.list:
                break
            time.sleep(0.05)
    with pytest.warns(calframe.CalframeWarning):
        want = calframe.ece(df, by="s", nulls="drop")
    pd.testing.assert_frame_equal(got, want, check_exact=False, rtol=0, atol=TOL)
    with pytest.raises(calframe.InvalidValueError, match="null"):
        ddf.calib.ece(by="s").compute()


@on_cluster
def test_bad_probability_raises_calframe_error(data):
    df, _ = data
    bad = df.copy()
    bad.loc[bad.index[1000], "prob"] = 1.5  # in the fourth partition only
    with pytest.raises(calframe.InvalidValueError, match="outside"):
        _ddf(bad).calib.ece().compute()
    with pytest.raises(calframe.InvalidValueError, match="outside"):
        _ddf(bad).calib.vece("age").compute()


def _list_frame(probs: list, labels: list) -> pd.DataFrame:
    import pyarrow as pa

    return pd.DataFrame({"probs": pd.Series(probs, dtype=pd.ArrowDtype(pa.list_(pa.float64()))),
                         "label": pd.array(labels, dtype="Int64")})


@pytest.mark.parametrize("func", ["ece", "brier", "log_loss", "accuracy", "summary"])
@pytest.mark.parametrize("case", ["null labels", "lengths differ"])
def test_list_probability_errors_are_the_eager_ones(func, case):
    """Class probabilities in one List column: a null label (one per partition), or rows shorter than the longest
    (in the first partition; the longest rows also in the second), raise the eager Polars error with the counts
    over all partitions (issue 31: NotImplementedError "List probability columns are not streamed")."""
    if case == "null labels":
        pdf = _list_frame([[0.2, 0.8], [0.6, 0.4], [0.5, 0.5], [0.1, 0.9], [0.3, 0.7], [0.9, 0.1]],
                          [1, None, 0, 1, None, 0])
    else:
        pdf = _list_frame([[0.2, 0.8], [0.1, 0.2, 0.7], [0.5, 0.5], [0.1, 0.2, 0.7], [0.3, 0.3, 0.4], [0.8, 0.1, 0.1]],
                          [1, 1, 0, 2, 0, 0])
    with pytest.raises(calframe.InvalidValueError) as eager:
        getattr(calframe, func)(pl.from_pandas(pdf), prob="probs")
    ddf = dd.from_pandas(pdf, npartitions=2)
    with dask.config.set(scheduler="sync"):  # in this process: the same partition passes, without the round trips
        assert ddf.map_partitions(len).compute().tolist() == [3, 3]
        with pytest.raises(calframe.InvalidValueError) as got:
            getattr(calframe, func)(ddf, prob="probs").compute()
    assert str(got.value) == str(eager.value) and "'label': 2 rows" in str(got.value) or "(2 rows differ" in str(got.value)


def test_nulls_in_a_fixed_size_list_column_raise_the_eager_error():
    """Issue 31, 7: every partition of an Arrow-backed frame is a slice, whose fixed_size_list column with a null
    Polars misread ("validity mask length ...", reported as a column calframe cannot read): the null error of the
    eager call, with the count over both partitions."""
    import pyarrow as pa

    probs = [[0.2, 0.8], None, [0.5, 0.5], [0.1, 0.9], None, [0.9, 0.1]]
    pdf = pd.DataFrame({"probs": pd.arrays.ArrowExtensionArray(pa.array(probs, type=pa.list_(pa.float64(), 2))),
                        "label": [1, 0, 0, 1, 1, 0]})
    with pytest.raises(calframe.InvalidValueError) as eager:
        calframe.ece(pdf, prob="probs")
    with dask.config.set(scheduler="sync"):
        with pytest.raises(calframe.InvalidValueError) as got:
            calframe.ece(dd.from_pandas(pdf, npartitions=2), prob="probs").compute()
    assert str(got.value) == str(eager.value) and "'probs': 2 rows" in str(got.value)


def test_eager_errors(data):
    df, ddf = data
    with pytest.raises(calframe.ColumnNotFoundError):
        ddf.calib.ece(prob="nope")
    with pytest.raises(calframe.ColumnNotFoundError):
        ddf.calib.ece(by="nope")
    with pytest.raises(calframe.ParameterError):
        ddf.calib.ece(bins=0)
    with pytest.raises(calframe.ParameterError, match="'ci' parameter"):
        ddf.calib.ece(ci=1.5)


@pytest.mark.parametrize("binning", [pytest.param("quantile", marks=on_cluster), "equal_mass"])
def test_weighted_data_dependent_edges(data, binning):
    """Weights with quantile / equal-mass bins (quantile on the cluster): the edges of the rows repeated w_i
    times, eager's (the edge passes run on a worker, through its client; tests/test_dask_weighted.py checks them
    bit for bit)."""
    df, ddf = data
    kw = {**BINARY, "weights": "w", "binning": binning}
    _same(ddf.calib.ece(**kw, by="s"), calframe.ece(df, **kw, by="s"))
    _same(ddf.calib.reliability(**kw, by="g", bins=6), calframe.reliability(df, **kw, by="g", bins=6))
    _same(ddf.calib.vece("score", **kw), calframe.vece(df, "score", **kw))


def test_constant_variable(data):
    df, ddf = data
    ddf = _ddf(df.assign(k=1.0, c="x"))
    for v in ("k", "c"):
        with pytest.raises(calframe.InvalidValueError, match="single distinct value"):
            ddf.calib.vece(v).compute()


def test_empty_frame():
    df = _data(10)
    ddf = dd.from_pandas(df, npartitions=2)
    with pytest.raises(calframe.EmptyInputError):
        ddf[ddf["prob"] > 2].calib.ece().compute()


# --------------------------------------------------------------------------- lazy results, computed together


@on_cluster
def test_results_are_lazy_and_compute_together(data, monkeypatch):
    df, ddf = data
    calls = []
    real = cfd_parts._sums_rows
    monkeypatch.setattr(cfd_parts, "_sums_rows", lambda *a: calls.append(1) or real(*a))  # (runs on the workers)
    a, b, s = ddf.calib.ece(by="s"), ddf.calib.brier(), ddf.calib.summary(by="g")
    assert all(isinstance(r, cfd.DaskResult) for r in (a, b, s))
    assert dask.is_dask_collection(a) and not calls  # nothing computed by the calls
    got_a, got_b, got_s = dask.compute(a, b, s)
    _same(cfd.DaskResult(dask.delayed(got_a), lambda v: v, "x"), calframe.ece(df, by="s"))
    assert got_b == pytest.approx(calframe.brier(df), abs=TOL)
    pd.testing.assert_frame_equal(got_s, calframe.summary(df, by="g"), check_exact=False, rtol=0, atol=TOL)


# --------------------------------------------------------------------------- summary, gece, ci, vece_rank, vce_curve, fit


def _uniform_ece(conf, acc, bins=15):
    """ECE by hand: numpy.digitize on linspace edges (left-closed bins), bin-weighted |mean conf - mean acc|."""
    b = np.digitize(conf, np.linspace(0, 1, bins + 1)[1:-1])
    return sum(np.mean(b == k) * abs(conf[b == k].mean() - acc[b == k].mean()) for k in np.unique(b))


@pytest.mark.parametrize("kw", [{}, {"by": "s"}, {"by": ["g", "gn"], "weights": "w"}, {"lens": "top1", "bins": 7}])
def test_summary(data, kw):
    df, ddf = data
    _same(ddf.calib.summary(**BINARY, **kw), calframe.summary(df, **BINARY, **kw))


def test_summary_multiclass_and_by_hand(data):
    df, ddf = data
    _same(ddf.calib.summary(**MULTI, by="s"), calframe.summary(df, **MULTI, by="s"))
    got = ddf.calib.summary(**BINARY).compute().iloc[0]
    p, y = df["prob"].to_numpy(), df["label"].to_numpy()
    assert got["n"] == len(df)
    assert got["accuracy"] == pytest.approx(np.mean((p > 0.5) == (y == 1)), abs=TOL)
    assert got["brier"] == pytest.approx(np.mean((p - y) ** 2), abs=TOL)
    assert got["ece"] == pytest.approx(_uniform_ece(p, y.astype(float)), abs=TOL)


@pytest.mark.parametrize("kw", [
    {**MULTI},
    {**MULTI, "by": "s", "lens": "full", "bins": 4},
    {**MULTI, "lens": "topk", "k": 2, "distance": "l2", "p": 2},
    {**MULTI, "by": "g", "lens": "marginal", "p": "inf"},
    {**MULTI, "lens": "grouping", "groups": [[0], [1, 2]], "weights": "w", "by": "gn"},
    {**BINARY, "by": "s", "distance": ("interval", 0.1, 0.3)},
])
def test_gece_uniform_from_sums(data, kw):
    df, ddf = data
    _same(ddf.calib.gece(**kw), calframe.gece(df, **kw))


def test_gece_by_hand(data):
    # the full lens on 3 classes, uniform(2) cells on the first two probabilities: 1/2 L1 between the cell's mean
    # probabilities and its class frequencies, weighted by the cell's share of the rows
    df, ddf = data
    g = df[["p0", "p1", "p2"]].to_numpy()
    y = np.eye(3)[df["cls"].to_numpy()]
    cell = (g[:, 0] >= 0.5) * 2 + (g[:, 1] >= 0.5)
    want = sum(np.mean(cell == c) * 0.5 * np.abs(g[cell == c].mean(0) - y[cell == c].mean(0)).sum()
               for c in np.unique(cell))
    assert ddf.calib.gece(**MULTI, lens="full", bins=2).compute() == pytest.approx(want, abs=TOL)


@pytest.mark.parametrize("kw", [
    {"binning": "adaptive", "gamma": 0.1, "by": "s"},
    {"labels_in": [0, 2], "by": "g"},
    {"where": "cls > 0", "lens": "top1"},
    {"output_between": (0.4, 0.9)},
])
def test_gece_on_the_rows(data, kw):
    # adaptive bins and row selections need the rows: the needed columns are collected, the same result
    df, ddf = data
    _same(ddf.calib.gece(**MULTI, **kw), calframe.gece(df, **MULTI, **kw))


@pytest.mark.parametrize("func, kw", [
    pytest.param("ece", {**BINARY, "by": "s"}, marks=on_cluster),
    ("rmsce", {**MULTI, "binning": "equal_mass", "by": "g"}),
    ("vece", {**BINARY, "variable": ["age", "region"], "by": "s"}),
    ("brier", {**BINARY, "by": "gn", "weights": "w"}),
    pytest.param("summary", {**BINARY, "by": "s"}, marks=on_cluster),
    ("gece", {**MULTI, "lens": "topk", "k": 2}),
])
def test_ci_equals_eager_bounds(data, func, kw):
    # the bootstrap resamples rows within groups: the needed columns, collected, give eager's draws for the seed
    df, ddf = data
    kw = dict(kw, ci=0.9, n_boot=40, seed=3)
    got, want = getattr(ddf.calib, func)(**kw).compute(), getattr(calframe, func)(df, **kw)
    # the CE family on uniform bins and the companions draw from the partitions' moments (exact sums; eager's are
    # float sums): to rounding (tests/test_dask_moments.py, tests/test_dask_companions.py); the others collect the
    # rows: eager's bits
    pd.testing.assert_frame_equal(got, want, check_exact=func not in ("ece", "brier"), rtol=1e-12)


@pytest.mark.parametrize("kw", [{"exclude": ["gn", "s"]}, {"variables": ["age", "score", "region"], "by": "s"},
                                {"variables": ["age", "score"], "vce": True}])
def test_vece_rank(data, kw):
    df, ddf = data
    _same(ddf.calib.vece_rank(**BINARY, **kw), calframe.vece_rank(df, **BINARY, **kw))


def test_vece_rank_by_hand(data):
    # quantile(10) bins of score by hand (pandas.qcut), VECE = sum_b n_b/N |mean p_b - mean y_b|
    df, ddf = data
    got = ddf.calib.vece_rank(["score"], **BINARY).compute()
    b = pd.qcut(df["score"], 10, labels=False).to_numpy()
    p, y = df["prob"].to_numpy(), df["label"].to_numpy()
    want = sum(np.mean(b == k) * abs(p[b == k].mean() - y[b == k].mean()) for k in range(10))
    assert got["vece"].item() == pytest.approx(want, abs=TOL)


def test_vce_curve(data):
    df, ddf = data
    # n_boot=20 (default 200): the bootstrap interval of v* is still drawn on both sides and compared bit for bit
    got = ddf.calib.vce_curve("score", **BINARY, by="s", n_points=40, n_boot=20).compute()
    want = calframe.vce_curve(df, "score", **BINARY, by="s", n_points=40, n_boot=20)
    pd.testing.assert_frame_equal(got.curve, want.curve, check_exact=True)
    pd.testing.assert_frame_equal(got.summary, want.summary, check_exact=True)


@pytest.mark.parametrize("method, kw", [pytest.param("platt", {}, marks=on_cluster), ("histogram", {"by": "s"}),
                                        ("temperature", MULTI),
                                        ("beta", {}), ("tree", {"variable": "age", "max_depth": 2})])
def test_fit_equals_eager_on_the_same_rows(data, method, kw):
    df, ddf = data
    kw = {**BINARY, **kw} if "prob" not in kw else kw
    rec = ddf.calib.fit(method, **kw).compute()
    want = calframe.fit(df, method, **kw)
    got_out, want_out = ddf.calib.apply(rec, name="q").compute(), calframe.apply(df, want, name="q")
    pd.testing.assert_frame_equal(got_out, want_out, check_exact=True)


@on_cluster
def test_new_functions_raise_eager_errors_with_totals(data):
    df, _ = data
    bad = df.copy()
    bad.loc[bad.index[[10, 1000, 1400]], "prob"] = 1.5  # in three partitions
    for func, kw in [("summary", {"by": "s"}), ("gece", {}), ("vece_rank", {"variables": ["age"]}),
                     ("fit", {"method": "platt"}), ("ece", {"ci": 0.9, "n_boot": 5})]:
        with pytest.raises(calframe.InvalidValueError) as eager:
            getattr(calframe, func)(bad, **BINARY, **kw)
        with pytest.raises(calframe.InvalidValueError) as lazy:
            getattr(_ddf(bad).calib, func)(**BINARY, **kw).compute()
        assert str(lazy.value) == str(eager.value) and "3 rows" in str(eager.value), (func, str(lazy.value))


# --------------------------------------------------------------------------- apply


@on_cluster
def test_apply_binary(data):
    df, ddf = data
    rec = calframe.fit(df.iloc[:800], "platt", **BINARY)
    out = ddf.calib.apply(rec, name="p_cal")
    assert "p_cal" in out.columns  # lazy: a Dask DataFrame
    pd.testing.assert_frame_equal(out.compute(), calframe.apply(df, rec, name="p_cal"), check_exact=False, atol=TOL, rtol=0)


def test_apply_per_group_variable(data):
    df, ddf = data
    rec = calframe.fit(df, "histogram", **BINARY, by="g")
    pd.testing.assert_frame_equal(ddf.calib.apply(rec).compute(), calframe.apply(df, rec), check_exact=False,
                                  atol=TOL, rtol=0)


def test_apply_multiclass(data):
    df, ddf = data
    rec = calframe.fit(df, "temperature", **MULTI)
    got = ddf.calib.apply(rec, name="q").compute()
    want = calframe.apply(df, rec, name="q")
    np.testing.assert_allclose(np.stack(got["q"].to_numpy()), np.stack(want["q"].to_numpy()), atol=TOL, rtol=0)
    np.testing.assert_allclose(got["q_conf"], want["q_conf"], atol=TOL, rtol=0)


def test_apply_bad_input(data):
    df, ddf = data
    rec = calframe.fit(df, "platt", **BINARY)
    bad = df.copy()
    bad.loc[bad.index[900], "prob"] = -0.1
    with pytest.raises(calframe.InvalidValueError):
        _ddf(bad).calib.apply(rec).compute()
    rec_v = calframe.fit(df, "tree", **BINARY, variable="age", max_depth=2)
    with pytest.raises(calframe.ColumnNotFoundError):
        ddf[["prob", "label"]].calib.apply(rec_v)


# --------------------------------------------------------------------------- float keys: -0.0 is 0.0, NaN is null


@pytest.mark.parametrize("flavour", ["pandas[pyarrow]", "pandas", "pandas[nullable]"])
@pytest.mark.parametrize("func, kw", [
    ("ece", {}),                                                     # fixed bins: the sums pass alone
    ("ece", {"binning": "quantile", "lens": "class:2"}),             # exact edges: the histogram passes
    ("vece", {"variable": "v", "bins": 12, "lens": "class:2"}),
    ("reliability", {"binning": "equal_mass"}),
    ("brier", {}), ("log_loss", {}), ("accuracy", {}),
], ids=["ece", "ece-quantile", "vece", "reliability", "brier", "log_loss", "accuracy"])
def test_signed_zero_and_nan_float_keys(func, kw, flavour):
    # Arrow-backed pandas groups 0.0 and -0.0 apart, and a Dask merge of partitions whose key levels held both
    # signs raised pandas' "cannot reindex on an axis with duplicate labels"
    df = signed_zero_keys_frame()
    ddf = dd.from_pandas(as_flavour(df, flavour), npartitions=3, sort=False)
    args = {**MULTI, "by": ["s", "x"], **kw}
    got, want = getattr(ddf.calib, func)(**args).compute(), getattr(calframe, func)(df, **args)
    assert isinstance(got, pd.DataFrame)
    assert_polars_equal(pl.from_pandas(got), want, check_dtypes=False, abs_tol=TOL, rel_tol=0)
    # the groups by hand: -0.0 is 0.0 (shown as 0.0), NaN and null one missing key; one row each (reliability: per bin)
    x = df["x"].fill_nan(None).to_numpy() + 0.0  # IEEE: -0.0 + 0.0 == +0.0
    keys = {(s, None if v != v else float(v)) for s, v in zip(df["s"].to_list(), x)}
    got_keys = [tuple(None if pd.isna(v) else v for v in row) for row in zip(got["s"].tolist(), got["x"].tolist())]
    assert set(got_keys) == keys
    assert len(got_keys) == len(keys) or func == "reliability"
    assert not np.signbit(got["x"].to_numpy(dtype=np.float64, na_value=np.nan)).any()


def test_what_dask_refuses_is_refused_with_what_to_do():
    """docs/spec.md section 8 points at the support matrix: every public function of a frame that the matrix says
    Dask does not run (the registry's choice, calframe.registry.how) is refused with the ColumnTypeError that says
    what to do, and the others are ddf.calib's methods."""
    import pathlib

    from calframe import registry

    text = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "spec.md").read_text()
    assert "`calframe.engines.partitions.client.supported()`" in text
    refused = {n for n in registry.functions() if registry.how(n, "dask") == "refused"}
    assert refused and refused.isdisjoint(cfd.supported())
    assert set(registry.functions()) == refused | set(cfd.supported())
    assert "lce" in refused  # local calibration needs the rows
    ddf = dd.from_pandas(_data(60), npartitions=2)
    for name in sorted(refused):
        args = ("ts",) if name == "monitor" else ()
        with pytest.raises(calframe.ColumnTypeError, match=rf"^{name}: Dask DataFrames are not supported here .*"
                                                           r"Compute a pandas frame first"):
            getattr(calframe, name)(ddf, *args, **({"features": ["age"]} if "lce" in name else {}))
