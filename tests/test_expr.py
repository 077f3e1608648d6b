"""calframe.expr: the figures as Polars expressions (docs/expressions.md).

The same numbers as the eager functions with ``by=`` (1e-15) over many groups, in
every context an aggregation goes (select, group_by().agg() beside other
aggregations, over(), group_by_dynamic(); eager, lazy, streaming), and the rules
for bad input: parameters checked when the expression is built, bad data raising
the eager function's error, null for a group without rows.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import numpy as np
import polars as pl
import pytest

import calframe
from calframe import expr as E

N_GROUPS = 60


def binary_frame(n: int = 6000, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.beta(2.0, 2.0, n)
    p[: 16 * 4] = np.tile(np.linspace(0, 1, 16), 4)  # values exactly on uniform(15) edges, 0 and 1
    p[64:80] = np.arange(16) / 15  # i / 15: the right-closed edges
    y = (rng.random(n) < 0.8 * p + 0.1).astype(np.int8)
    return pl.DataFrame({
        "g": rng.integers(0, N_GROUPS, n), "p": p, "y": y, "w": rng.exponential(1.0, n),
        "age": rng.integers(18, 80, n), "region": rng.choice(["n", "s", "e", "w"], n),
    })


def multi_frame(n: int = 6000, k: int = 4, seed: int = 1) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k), n)
    y = np.array([rng.choice(k, p=row) for row in p])
    cols = {"g": rng.integers(0, N_GROUPS, n), "probs": pl.Series(p, dtype=pl.Array(pl.Float64, k)), "y": y}
    cols.update({f"p{j}": p[:, j] for j in range(k)})
    return pl.DataFrame(cols)


def same(got: pl.DataFrame, want: pl.DataFrame, name: str) -> None:
    """``got`` (group_by("g").agg(expr)) has ``want``'s (the by= result) figure per group, to 1e-15."""
    got = got.sort("g")
    assert got["g"].to_list() == want["g"].to_list()
    assert got[name].null_count() == 0
    np.testing.assert_allclose(got[name].to_numpy(), want[name].to_numpy(), rtol=0, atol=1e-15)


# --------------------------------------------------------------------------- same numbers as by=


BINARY = {
    "ece": ("ece", {}),
    "ece_right": ("ece", {"closed": "right"}),
    "ece_edges": ("ece", {"bins": [0.0, 0.1, 0.25, 0.5, 0.9, 1.0]}),
    "ece_edges_right": ("ece", {"bins": list(np.linspace(0, 1, 11)), "closed": "right"}),
    "ece_top1_weights": ("ece", {"lens": "top1", "weights": "w"}),
    "ece_class0_right_weights": ("ece", {"lens": "class:0", "closed": "right", "weights": "w"}),
    "ece_quantile": ("ece", {"binning": "quantile", "bins": 10}),
    "ece_equal_mass": ("ece", {"binning": "equal_mass"}),
    "mce": ("mce", {"bins": 10}),
    "rmsce_weights": ("rmsce", {"weights": "w", "closed": "right"}),
    "ce_debiased_l2": ("ce", {"p": 2, "estimator": "debiased"}),
    "ce_debiased_l1": ("ce", {"p": 1, "estimator": "debiased", "n_resamples": 50, "seed": 3}),
    "ce_l2_distance": ("ce", {"distance": "l2", "p": 2}),
    "brier": ("brier", {}),
    "log_loss_weights": ("log_loss", {"weights": "w"}),
    "accuracy": ("accuracy", {}),
}


@pytest.mark.parametrize("case", list(BINARY))
def test_binary_same_as_by(case):
    fn, kw = BINARY[case]
    df = binary_frame()
    want = getattr(calframe, fn)(df, prob="p", label="y", by="g", **kw)
    got = df.group_by("g").agg(getattr(E, fn)("p", "y", **kw))
    same(got, want, fn)


MULTI = {
    "ece_top1": ("ece", {}),
    "ece_class2_right": ("ece", {"lens": "class:2", "closed": "right"}),
    "ece_marginal": ("ece", {"lens": "marginal"}),
    "mce_edges": ("mce", {"bins": [0.0, 0.3, 0.6, 1.0], "lens": "top1"}),
    "ce_marginal_debiased": ("ce", {"lens": "marginal", "p": 2, "estimator": "debiased"}),
    "brier": ("brier", {}),
    "log_loss": ("log_loss", {}),
    "accuracy": ("accuracy", {}),
}


@pytest.mark.parametrize("prob", ["array", "columns"])
@pytest.mark.parametrize("case", list(MULTI))
def test_multiclass_same_as_by(case, prob):
    fn, kw = MULTI[case]
    df = multi_frame()
    probs: Any = "probs" if prob == "array" else [f"p{j}" for j in range(4)]
    want = getattr(calframe, fn)(df, prob=probs, label="y", by="g", **kw)
    got = df.group_by("g").agg(getattr(E, fn)(probs, "y", **kw))
    same(got, want, fn)


@pytest.mark.parametrize("kw", [{}, {"binning": "equal_mass", "bins": 5}, {"bins": [18, 30, 50, 80], "weights": "w"}])
def test_vece_numeric_same_as_by(kw):
    df = binary_frame()
    want = calframe.vece(df, "age", prob="p", label="y", by="g", **kw)
    same(df.group_by("g").agg(E.vece("age", "p", "y", **kw)), want, "vece")


def test_vece_categorical_and_vmce_same_as_by():
    df = binary_frame()
    same(df.group_by("g").agg(E.vece("region", "p", "y", lens="top1")),
         calframe.vece(df, "region", prob="p", label="y", by="g", lens="top1"), "vece")
    same(df.group_by("g").agg(E.vmce("age", "p", "y")), calframe.vmce(df, "age", prob="p", label="y", by="g"), "vmce")


def test_ece_by_hand():
    """One group's ECE written out in numpy (uniform(15), left-closed: numpy.digitize on the inner edges)."""
    df = binary_frame()
    got = df.group_by("g").agg(E.ece("p", "y")).sort("g")
    for g in (0, 17, N_GROUPS - 1):
        part = df.filter(pl.col("g") == g)
        p, y = part["p"].to_numpy(), part["y"].to_numpy()
        b = np.digitize(p, np.linspace(0, 1, 16)[1:-1])
        want = sum(abs(p[b == k].sum() - y[b == k].sum()) for k in range(15)) / p.size
        assert got["ece"][g] == pytest.approx(want, abs=1e-15)


# --------------------------------------------------------------------------- contexts


def test_select_is_the_whole_frame():
    df = binary_frame()
    row = df.select(E.ece("p", "y"), E.brier("p", "y"), pl.len())
    assert row["ece"].item() == pytest.approx(calframe.ece(df, prob="p", label="y"), abs=1e-15)
    assert row["brier"].item() == pytest.approx(calframe.brier(df, prob="p", label="y"), abs=1e-15)


def test_agg_beside_other_aggregations_lazy_and_streaming():
    df = binary_frame()
    want = calframe.summary(df, prob="p", label="y", by="g")
    q = df.lazy().group_by("g").agg(
        pl.len(), E.ece("p", "y"), pl.col("p").mean().alias("mean_p"), E.mce("p", "y"), E.accuracy("p", "y"),
        E.log_loss("p", "y"))
    for engine in ("in-memory", "streaming"):
        got = q.collect(engine=engine).sort("g")
        assert got["len"].to_list() == want["n"].to_list()
        for name in ("ece", "mce", "accuracy", "log_loss"):
            same(got, want, name)
        np.testing.assert_allclose(got["mean_p"].to_numpy(), df.group_by("g").agg(pl.col("p").mean()).sort("g")["p"])


def test_over_broadcasts_each_groups_value():
    df = binary_frame()
    want = calframe.ece(df, prob="p", label="y", by="g")
    for out in (df.with_columns(E.ece("p", "y").over("g")),
                df.lazy().with_columns(E.ece("p", "y").over("g")).collect(engine="streaming")):
        expected = df.join(want, on="g", how="left", maintain_order="left")["ece"].to_numpy()
        np.testing.assert_allclose(out["ece"].to_numpy(), expected, rtol=0, atol=1e-15)


def weekly(n: int = 3000, seed: int = 2) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.random(n)
    seconds = pl.Series(np.sort(rng.integers(0, 70 * 24 * 3600, n)))
    t = pl.select(pl.datetime(2024, 1, 1) + pl.duration(seconds=seconds)).to_series()
    return pl.DataFrame({"t": t, "p": p, "y": (rng.random(n) < p).astype(np.int8)})


def test_group_by_dynamic_weekly_monitor():
    df = weekly()
    q = df.lazy().group_by_dynamic("t", every="1w").agg(pl.len(), E.ece("p", "y", bins=10), E.brier("p", "y"))
    want = calframe.ece(df.with_columns(week=pl.col("t").dt.truncate("1w")), prob="p", label="y", by="week", bins=10)
    for engine in ("in-memory", "streaming"):
        got = q.collect(engine=engine)
        assert got["t"].to_list() == want["week"].to_list()
        np.testing.assert_allclose(got["ece"].to_numpy(), want["ece"].to_numpy(), rtol=0, atol=1e-15)


def test_group_by_dynamic_overlapping_windows():
    """A row in two windows counts in both: a 2-week window every week is the ECE of its two weeks."""
    df = weekly()
    got = df.group_by_dynamic("t", every="1w", period="2w").agg(E.ece("p", "y"))
    for start, value in zip(got["t"].to_list()[:3], got["ece"].to_list()[:3]):
        window = df.filter((pl.col("t") >= start) & (pl.col("t") < start + dt.timedelta(weeks=2)))
        assert value == pytest.approx(calframe.ece(window, prob="p", label="y"), abs=1e-15)


def test_rolling_windows():
    df = weekly(400)
    got = df.rolling("t", period="3d").agg(E.ece("p", "y"))
    for i in (0, 57, 399):
        end = df["t"][i]
        window = df.filter((pl.col("t") > end - dt.timedelta(days=3)) & (pl.col("t") <= end))
        assert got["ece"][i] == pytest.approx(calframe.ece(window, prob="p", label="y"), abs=1e-15)


def test_namespace_is_the_function():
    df = binary_frame()
    got = df.group_by("g").agg(pl.col("p").calib.ece(label="y", bins=10, closed="right"),
                               pl.col("p").calib.vece("age", label="y"), pl.col("p").calib.brier("y"))
    want = df.group_by("g").agg(E.ece("p", "y", bins=10, closed="right"), E.vece("age", "p", "y"), E.brier("p", "y"))
    assert got.sort("g").equals(want.sort("g"))


def test_expressions_as_inputs():
    """Columns may be expressions: a recalibrated probability, a label computed on the fly."""
    df = binary_frame()
    df2 = df.with_columns(q=pl.col("p") ** 2, hit=pl.col("y") == 1)
    want = calframe.ece(df2, prob="q", label="hit", by="g")
    same(df.group_by("g").agg(E.ece(pl.col("p") ** 2, pl.col("y") == 1)), want, "ece")
    same(df.group_by("g").agg((pl.col("p") ** 2).calib.ece(label=pl.col("y") == 1)), want, "ece")


# --------------------------------------------------------------------------- bad input


def test_parameters_checked_when_built_with_the_eager_message():
    for build, eager in [
        (lambda: E.ece("p", "y", bins=0), lambda df: calframe.ece(df, bins=0)),
        (lambda: E.ce("p", "y", p=3), lambda df: calframe.ce(df, p=3)),
        (lambda: E.ece("p", "y", closed="both"), lambda df: calframe.ece(df, closed="both")),
        (lambda: E.ece("p", "y", lens="top2"), lambda df: calframe.ece(df, lens="top2")),
        (lambda: E.ece("p", "y", binning="sweep", weights="w"), lambda df: calframe.ece(df, binning="sweep",
                                                                                      weights="w")),
        (lambda: E.brier("p", "y", nulls="keep"), lambda df: calframe.brier(df, nulls="keep")),
        (lambda: E.vece("age", "p", "y", binning="uniform", bins=5), lambda df: calframe.vece(df, "age",
                                                                                             binning="uniform", bins=5)),
    ]:
        with pytest.raises(calframe.ParameterError) as built:
            build()
        with pytest.raises(calframe.ParameterError) as direct:
            eager(pl.DataFrame({"prob": [0.5], "label": [1], "w": [1.0], "age": [3.0]}))
        assert str(built.value) == str(direct.value)
    with pytest.raises(calframe.ParameterError, match="'prob' parameter of ece"):
        E.ece(3, "y")
    with pytest.raises(calframe.ParameterError, match="'label' parameter of brier"):
        E.brier("p", None)  # type: ignore[arg-type]


BAD = {
    "nan_prob": ({"p": [0.2, float("nan"), 0.7, 0.4]}, calframe.InvalidValueError),
    "prob_above_1": ({"p": [0.2, 1.5, 0.7, 0.4]}, calframe.InvalidValueError),
    "label_2": ({"y": [0, 2, 1, 1]}, calframe.InvalidValueError),
    "null_label": ({"y": [0, None, 1, 1]}, calframe.InvalidValueError),
    "string_prob": ({"p": ["a", "b", "c", "d"]}, calframe.ColumnTypeError),
    "negative_weight": ({"w": [1.0, -1.0, 1.0, 1.0]}, calframe.InvalidValueError),
    "zero_weights_group": ({"w": [0.0, 0.0, 1.0, 1.0]}, calframe.InvalidValueError),
}


@pytest.mark.parametrize("case", list(BAD))
@pytest.mark.parametrize("engine", ["eager", "in-memory", "streaming"])
def test_bad_data_raises_the_eager_error(case, engine):
    cols, exc = BAD[case]
    df = pl.DataFrame({"g": [0, 0, 1, 1], "p": [0.2, 0.9, 0.7, 0.4], "y": [0, 1, 1, 1], "w": [1.0, 2.0, 1.0, 1.0]})
    df = df.with_columns(**{k: pl.Series(v) for k, v in cols.items()})
    with pytest.raises(exc) as direct:
        calframe.ece(df, prob="p", label="y", by="g", weights="w")
    message = str(direct.value).split(" of group")[0]  # a group is named by its position in the expression
    expr = E.ece("p", "y", weights="w")
    with pytest.raises(exc, match=re.escape(message)):
        if engine == "eager":
            df.group_by("g").agg(expr)
        else:
            df.lazy().group_by("g").agg(expr).collect(engine=engine)


def test_nulls_drop_and_empty_groups_give_null():
    df = pl.DataFrame({"g": [0, 0, 1, 1, 2, 2], "p": [0.2, 0.9, None, None, 0.3, 0.6], "y": [0, 1, 1, 1, 1, 0]})
    with pytest.raises(calframe.InvalidValueError, match="null values"):
        df.group_by("g").agg(E.ece("p", "y"))
    with pytest.warns(calframe.CalframeWarning, match="dropped 2 rows"):
        got = df.group_by("g", maintain_order=True).agg(E.ece("p", "y", nulls="drop"))
    assert got["ece"][1] is None  # every row of group 1 was dropped
    want = calframe.ece(df.drop_nulls(), prob="p", label="y", by="g")["ece"].to_list()
    assert [got["ece"][0], got["ece"][2]] == pytest.approx(want, abs=1e-15)
    keep = pl.col("p") > 0.5  # a filter inside the expression that leaves group 2 without rows
    got = df.fill_null(0.1).group_by("g", maintain_order=True).agg(E.ece(pl.col("p").filter(keep),
                                                                         pl.col("y").filter(keep)))
    assert got["ece"][1] is None
    assert [got["ece"][0], got["ece"][2]] == pytest.approx([0.1, 0.6], abs=1e-15)  # |0.9 - 1|, |0.6 - 0|


def test_inputs_of_different_lengths_raise():
    df = binary_frame(200)
    with pytest.raises(calframe.InvalidValueError, match="label expression gives a different number of rows"):
        df.group_by("g").agg(E.ece(pl.col("p").filter(pl.col("p") > 0.5), "y"))


def test_never_nan():
    """Constant predictions, one row, a single class present: numbers, never NaN."""
    df = pl.DataFrame({"g": [0, 1, 1, 2, 2], "p": [0.3, 0.5, 0.5, 1.0, 0.0], "y": [1, 0, 0, 1, 0]})
    got = df.group_by("g", maintain_order=True).agg(E.ece("p", "y"), E.rmsce("p", "y"), E.brier("p", "y"),
                                                    E.ce("p", "y", p=2, estimator="debiased"))
    for name in ("ece", "rmsce", "brier", "ce"):
        assert not got[name].is_nan().any() and got[name].null_count() == 0
    assert got["ece"].to_list() == pytest.approx([0.7, 0.5, 0.0], abs=1e-15)


# --------------------------------------------------------------------------- edge values in every context


def edge_frame() -> pl.DataFrame:
    """Groups 0-3: p on every edge of uniform(10) both ways (numpy.linspace's k * 0.1 and k / 10), 0 and 1, and
    on the explicit edges below; group 4: every p null (empty after nulls="drop"); one day per group (``t``)."""
    rng = np.random.default_rng(7)
    on_edges = np.concatenate([np.linspace(0, 1, 11), np.arange(11) / 10, [0.0, 1.0, 0.2, 0.5, 0.7]])
    rows = []
    for g in range(4):
        p = np.concatenate([on_edges, rng.random(40)])
        y = (rng.random(p.size) < p).astype(np.int8)
        rows.append(pl.DataFrame({"g": g, "p": p, "y": y, "w": rng.exponential(1.0, p.size)}))
    rows.append(pl.DataFrame({"g": 4, "p": [None] * 5, "y": [0, 1, 1, 0, 1], "w": [1.0] * 5},
                             schema={"g": pl.Int64, "p": pl.Float64, "y": pl.Int8, "w": pl.Float64}))
    df = pl.concat(rows, how="vertical_relaxed")
    return df.with_columns(t=pl.datetime(2024, 1, 1) + pl.duration(days=pl.col("g")))


EDGE_CASES = {
    "uniform_left": {"bins": 10},
    "uniform_right_weights": {"bins": 10, "closed": "right", "weights": "w"},
    "edges_right": {"bins": [0.0, 0.2, 0.5, 0.7, 1.0], "closed": "right"},
    "edges_left_top1_weights": {"bins": [0.0, 0.2, 0.5, 0.7, 1.0], "lens": "top1", "weights": "w"},
    "class0_right": {"lens": "class:0", "bins": 5, "closed": "right"},
}


@pytest.mark.filterwarnings("ignore::calframe.CalframeWarning")  # nulls="drop" warns about group 4's rows
@pytest.mark.parametrize("fn", ["ece", "mce", "rmsce", "ce"])
@pytest.mark.parametrize("case", list(EDGE_CASES))
def test_edge_values_in_every_context(case, fn):
    """Values exactly on bin edges, p = 0 and 1, both closed sides, weights, and a group emptied by
    nulls="drop" (null), in group_by().agg(), over() and group_by_dynamic(): by='s numbers."""
    df = edge_frame()
    kw = dict(EDGE_CASES[case], nulls="drop", **({"p": 2} if fn == "ce" else {}))
    want = dict(getattr(calframe, fn)(df, prob="p", label="y", by="g", **kw).select("g", fn).iter_rows())
    expected = np.array([want.get(g, np.nan) for g in range(5)])
    expr = getattr(E, fn)("p", "y", **kw)
    by_group = df.group_by("g", maintain_order=True).agg(expr)[fn]
    dynamic = df.group_by_dynamic("t", every="1d").agg(expr)[fn]
    over = df.with_columns(expr.over("g")).group_by("g", maintain_order=True).agg(pl.col(fn).first())[fn]
    for got in (by_group, dynamic, over):
        assert got[4] is None  # every row of group 4 was dropped
        np.testing.assert_allclose(got.to_numpy()[:4], expected[:4], rtol=0, atol=1e-15)
