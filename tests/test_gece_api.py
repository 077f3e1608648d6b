"""calframe.gece through the frame API: ORACLES.md B, the papers' identities, selections, bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pytest

import calframe

CIFAR = Path(__file__).parent / "data" / "cifar10_vgg16_test_probs.npz"


@pytest.fixture(scope="module")
def cifar() -> pl.DataFrame:
    d = np.load(CIFAR)
    return pl.DataFrame({"probs": d["probs"].astype(np.float64), "label": d["labels"]}).with_columns(
        pl.col("probs").cast(pl.Array(pl.Float64, 10))
    )


ORACLE_B = [
    (dict(), 0.03978006685674191),
    (dict(p="inf"), 0.2856856780351648),
    (dict(binning="adaptive", gamma=0.1), 0.039723024329543104),
    (dict(lens="full"), 0.05745289132274067),
    (dict(lens="full", binning="adaptive", gamma=0.1), 0.03965363733545313),
    (dict(lens="grouping", groups=[[0], list(range(1, 10))]), 0.008274094027521692),
    (dict(distance=("mahalanobis", np.eye(2))), 0.056257510060912876),
]


@pytest.mark.parametrize("options,value", ORACLE_B, ids=[str(o) for o, _ in ORACLE_B])
def test_oracles_b(cifar, options, value):
    assert calframe.gece(cifar, **options) == pytest.approx(value, rel=1e-12)


def mc(n=4000, k=6, seed=0) -> pl.DataFrame:
    return calframe.datasets.multiclass(n=n, k=k, seed=seed)


def test_identities():
    df = mc()
    assert calframe.gece(df) == pytest.approx(calframe.ece(df), rel=1e-12)  # TVD on top1 == ECE
    assert calframe.gece(df, lens="class:2") == pytest.approx(calframe.ece(df, lens="class:2"), rel=1e-12)
    full = calframe.gece(df, lens="full", bins=4)
    assert calframe.gece(df, lens="grouping", groups=[[c] for c in range(6)], bins=4) == pytest.approx(full, rel=1e-12)
    # topk(K): the full lens on each row's sorted probabilities, same figure with adaptive bins (order-free)
    p = np.sort(df["probs"].to_numpy(), axis=1)[:, ::-1]
    y = (df["probs"].to_numpy().argsort(axis=1, kind="stable")[:, ::-1] == df["label"].to_numpy()[:, None]).argmax(1)
    sorted_df = pl.DataFrame({"probs": p, "label": y}).with_columns(pl.col("probs").cast(pl.Array(pl.Float64, 6)))
    assert calframe.gece(df, lens="topk", k=6, binning="adaptive") == pytest.approx(
        calframe.gece(sorted_df, lens="full", binning="adaptive"), rel=1e-9)


def test_selection_equals_filtering_first():
    df = mc(seed=1)
    assert calframe.gece(df, labels_in=[1, 3], lens="full", bins=3) == pytest.approx(
        calframe.gece(df.filter(pl.col("label").is_in([1, 3])), lens="full", bins=3), rel=1e-12)
    conf = df["probs"].arr.max()
    kept = df.filter((conf >= 0.4) & (conf <= 0.7))
    assert calframe.gece(df, output_between=(0.4, 0.7)) == pytest.approx(calframe.gece(kept), rel=1e-12)
    kept = df.filter(pl.col("probs").arr.get(2).is_between(0.1, 0.5))
    assert calframe.gece(df, output_between=(0.1, 0.5), output_class=2) == pytest.approx(calframe.gece(kept), rel=1e-12)
    assert calframe.gece(df, where=pl.col("group") == "a") == pytest.approx(
        calframe.gece(df.filter(pl.col("group") == "a")), rel=1e-12)
    pdf = df.to_pandas()
    assert calframe.gece(pdf, where="\"group\" = 'a'") == pytest.approx(
        calframe.gece(df.filter(pl.col("group") == "a")), rel=1e-12)


def test_by_equals_each_group_and_empty_group_is_nan():
    df = mc(seed=2)
    res = calframe.gece(df, lens="topk", k=2, binning="adaptive", by="group")
    for row in res.iter_rows(named=True):
        alone = calframe.gece(df.filter(pl.col("group") == row["group"]), lens="topk", k=2, binning="adaptive")
        assert row["gece"] == pytest.approx(alone, rel=1e-12)
    # a label selection that empties group b: NaN there, with the group's n before selection
    df2 = df.with_columns(label=pl.when(pl.col("group") == "b").then(0).otherwise(pl.col("label")))
    res = calframe.gece(df2, labels_in=[1], by="group")
    b = res.filter(pl.col("group") == "b")
    assert np.isnan(b["gece"][0])


def test_bad_input():
    df = mc(k=3)
    with pytest.raises(calframe.ParameterError, match="k"):
        calframe.gece(df, lens="topk", k=4)
    with pytest.raises(calframe.ParameterError, match="needs k"):
        calframe.gece(df, lens="topk")
    with pytest.raises(calframe.ParameterError, match="partition|missing|class"):
        calframe.gece(df, lens="grouping", groups=[[0], [1]])
    with pytest.raises(calframe.ParameterError, match="semi-definite|PSD|symmetric"):
        calframe.gece(df, lens="full", distance=("mahalanobis", -np.eye(3)))
    with pytest.raises(calframe.ParameterError, match="low <= high"):
        calframe.gece(df, output_between=(0.8, 0.2))
    with pytest.raises(calframe.ParameterError, match="low <= high|0 <= low"):
        calframe.gece(df, distance=("interval", 0.9, 0.1))
    with pytest.raises(calframe.EmptyInputError, match="keeps no rows"):
        calframe.gece(df, output_between=(0.0, 0.0001))
    with pytest.raises(calframe.ParameterError, match="labels_in"):
        calframe.gece(df, labels_in=[7])
    with pytest.raises(calframe.ParameterError, match="gamma"):
        calframe.gece(df, binning="adaptive", gamma=0)
    with pytest.raises(calframe.ParameterError, match="where"):
        calframe.gece(df.to_pandas(), where=np.ones(3, dtype=bool))
