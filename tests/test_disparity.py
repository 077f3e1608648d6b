"""calframe.disparity and summary(by=, disparity=True): how far apart the groups of a by= figure are.

Expected values are computed by hand: max / min / difference / ratio with numpy from the by= result, and the
bootstrap bounds from draws reproduced independently (the scheme documented in engines/eager._bootstrap: draw r
takes uniforms from default_rng([seed, r]); the j-th row of a group's resample is row floor(u_j * n_g) of that
group, groups in key order, rows in frame order) with a numpy ECE.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
from polars.testing import assert_frame_equal
import pytest

import calframe
from calframe import ColumnNotFoundError, ColumnTypeError, InvalidValueError, ParameterError
from calframe.disparities import spread
from calframe import registry


@pytest.fixture(scope="module")
def df() -> pl.DataFrame:
    return calframe.datasets.grouped_miscalibration(n=3000, seed=0)


def by_hand(values: np.ndarray, higher_is_better: bool = False) -> dict[str, float | int]:
    """Worst / best index (first on a tie), max - min and min / max of one figure's group values."""
    worst = int(np.argmin(values) if higher_is_better else np.argmax(values))
    best = int(np.argmax(values) if higher_is_better else np.argmin(values))
    hi, lo = values.max(), values.min()
    return {"worst": worst, "best": best, "difference": hi - lo, "ratio": lo / hi if hi > 0 else 1.0}


def check_row(row: dict, grouped: pl.DataFrame, figure: str, by: list[str], higher_is_better: bool = False) -> None:
    values = grouped[figure].to_numpy()
    want = by_hand(values, higher_is_better)
    label = [", ".join(f"{c}={grouped[c][i]}" for c in by) for i in range(grouped.height)]
    assert row["n_groups"] == grouped.height
    assert row["worst_group"] == label[want["worst"]] and row["worst"] == values[want["worst"]]
    assert row["best_group"] == label[want["best"]] and row["best"] == values[want["best"]]
    assert row["difference"] == pytest.approx(want["difference"], rel=1e-15, abs=0)
    assert row["ratio"] == pytest.approx(want["ratio"], rel=1e-15, abs=0)


@pytest.mark.parametrize("figure, options", [("ece", {}), ("mce", {"bins": 5}), ("rmsce", {}), ("brier", {}),
                                             ("log_loss", {}), ("accuracy", {}), ("ce", {"p": 2, "lens": "top1"}),
                                             ("vece", {"variable": "age"}), ("gece", {})])
def test_values_are_max_min_difference_ratio_of_the_by_result(df, figure, options):
    d = calframe.disparity(df, figure, by="region", ci=None, min_n=1, **options)  # ranked on the values
    grouped = getattr(calframe, figure)(df, by="region", **options)
    name = "vece:age" if figure == "vece" else figure
    assert d.columns == ["figure", "n_groups", "n_ranked", "worst_group", "worst", "best_group", "best", "difference",
                         "ratio", "ranked_on", "below_min_n", "distinguishable_from_best"]
    assert d["ranked_on"][0] == "value" and d["distinguishable_from_best"][0] is None
    assert d.height == 1 and d["figure"][0] == name
    check_row(d.row(0, named=True), grouped.rename({"vece": "vece:age"}) if figure == "vece" else grouped,
              name, ["region"], higher_is_better=figure == "accuracy")


def test_several_by_columns_label_each_group_with_every_key(df):
    d = calframe.disparity(df, "ece", by=["region", "device"], ci=None, min_n=1)
    grouped = calframe.ece(df, by=["region", "device"])
    check_row(d.row(0, named=True), grouped, "ece", ["region", "device"])
    assert d["worst_group"][0].startswith("region=") and ", device=" in d["worst_group"][0]


def test_null_and_typed_keys_are_labelled_as_polars_writes_them():
    rng = np.random.default_rng(1)
    n = 600
    p = rng.uniform(0.05, 0.95, n)
    frame = pl.DataFrame({"prob": p, "label": (rng.uniform(size=n) < p ** 1.5).astype(np.int8),
                          "g": pl.Series([1, None, 3] * 200, dtype=pl.Int64)})
    grouped = calframe.ece(frame, by="g")
    labels = {"g=1", "g=3", "g=null"}
    d = calframe.disparity(frame, "ece", by="g", ci=None)
    assert {d["worst_group"][0], d["best_group"][0]} <= labels
    values = grouped["ece"].to_numpy()  # keys sorted, nulls last: 1, 3, null
    assert d["worst_group"][0] == ["g=1", "g=3", "g=null"][int(np.argmax(values))]


def test_duration_keys_are_labelled_in_iso_8601():
    """A Duration key cannot be cast to a string in Polars; its label is ISO 8601, as the report's JSON."""
    import datetime as dt

    p = np.r_[np.full(100, 0.3), np.full(100, 0.7)]
    frame = pl.DataFrame({"prob": p, "label": np.r_[np.zeros(70), np.ones(30), np.zeros(50), np.ones(50)],
                          "wait": [dt.timedelta(hours=26)] * 100 + [dt.timedelta(seconds=90)] * 100})
    d = calframe.disparity(frame, "ece", by="wait", ci=None).row(0, named=True)  # ECE 0 and |0.7 - 0.5| = 0.2
    assert (d["worst_group"], d["best_group"]) == ("wait=PT1M30S", "wait=P1DT2H")
    assert d["difference"] == pytest.approx(0.2, abs=1e-12)


def test_summary_disparity_has_one_row_per_summary_column(df):
    d = calframe.summary(df, by="region", disparity=True)
    grouped = calframe.summary(df, by="region")
    figures = ["accuracy", "ece", "mce", "rmsce", "ce_debiased", "brier", "log_loss"]
    assert d["figure"].to_list() == figures
    for i, figure in enumerate(figures):
        check_row(d.row(i, named=True), grouped, figure, ["region"], higher_is_better=figure == "accuracy")
    assert d.equals(calframe.disparity(df, "summary", by="region", ci=None))


def test_several_variables_give_one_row_per_variable(df):
    d = calframe.disparity(df, "vece", by="region", variable=["age", "device"], ci=None)
    assert d["figure"].to_list() == ["vece:age", "vece:device"]
    for i, v in enumerate(["age", "device"]):
        grouped = calframe.vece(df, v, by="region").rename({"vece": v})
        check_row(d.row(i, named=True), grouped, v, ["region"])


# --------------------------------------------------------------------------- the bootstrap


def numpy_ece(p: np.ndarray, y: np.ndarray, bins: int) -> float:
    """ECE of the positive class, uniform bins closed on the left (numpy.digitize on linspace edges)."""
    b = np.digitize(p, np.linspace(0.0, 1.0, bins + 1)[1:-1])
    gaps = [abs(p[b == k].sum() - y[b == k].sum()) for k in range(bins)]
    return float(np.sum(gaps) / p.size)


def hand_bootstrap(frame: pl.DataFrame, by: str, bins: int, n_boot: int, seed: int) -> np.ndarray:
    """Per draw and group (groups in key order), the ECE of the draw's resample of that group."""
    keys = sorted(frame[by].unique().to_list())
    p, y, g = frame["prob"].to_numpy(), frame["label"].to_numpy().astype(float), frame[by].to_numpy()
    rows = [np.flatnonzero(g == k) for k in keys]
    max_n = max(r.size for r in rows)
    out = np.empty((n_boot, len(keys)))
    for r in range(n_boot):
        u = np.random.default_rng([seed, r]).random(max_n)
        for j, idx in enumerate(rows):
            take = idx[np.minimum((u[: idx.size] * idx.size).astype(np.int64), idx.size - 1)]
            out[r, j] = numpy_ece(p[take], y[take], bins)
    return out


def test_intervals_are_percentiles_of_the_same_draws():
    frame = calframe.datasets.grouped_miscalibration(n=900, seed=3).select("prob", "label", "region")
    level, n_boot, seed, bins = 0.9, 60, 7, 6
    d = calframe.disparity(frame, "ece", by="region", ci=level, n_boot=n_boot, seed=seed, bins=bins,
                           ci_method="percentile", min_n=1, bootstrap="rows").row(0, named=True)
    draws = hand_bootstrap(frame, "region", bins, n_boot, seed)
    q = [(1 - level) / 2, 1 - (1 - level) / 2]
    grouped = calframe.ece(frame, by="region", ci=level, n_boot=n_boot, seed=seed, bins=bins, ci_method="percentile",
                           bootstrap="rows")
    keys = grouped["region"].to_list()
    lo, hi = np.quantile(draws, q, axis=0)
    # ranked on the bounds: the worst has the highest lower bound, the best the lowest upper bound
    w, b = int(np.argmax(lo)), int(np.argmin(hi))
    assert (d["worst_group"], d["best_group"]) == (f"region={keys[w]}", f"region={keys[b]}")
    diff = draws[:, w] - draws[:, b]
    ratio = draws[:, [w, b]].min(axis=1) / draws[:, [w, b]].max(axis=1)
    np.testing.assert_allclose([d["difference_lo"], d["difference_hi"]], np.quantile(diff, q), rtol=1e-12)
    np.testing.assert_allclose([d["ratio_lo"], d["ratio_hi"]], np.quantile(ratio, q), rtol=1e-12)
    # the worst and best groups' bounds: their own intervals, from the same draws as ece(by=, ci=)
    for end, j in (("worst", w), ("best", b)):
        np.testing.assert_allclose([d[f"{end}_lo"], d[f"{end}_hi"]], np.quantile(draws[:, j], q), rtol=1e-12)
        assert (d[f"{end}_lo"], d[f"{end}_hi"]) == (grouped["ece_lo"][j], grouped["ece_hi"][j])
    # not the groups' intervals combined
    assert d["difference_hi"] != pytest.approx(d["worst_hi"] - d["best_lo"])
    # distinguishable from the best: the percentile interval of the group's difference to the best excludes 0
    want = [f"region={keys[g]}" for g in range(len(keys)) if g != b
            and not (np.quantile(draws[:, g] - draws[:, b], q[0]) <= 0 <= np.quantile(draws[:, g] - draws[:, b], q[1]))]
    assert d["distinguishable_from_best"] == want


def test_summary_disparity_bounds_share_summary_draws(df):
    kw = dict(by="region", ci=0.8, n_boot=30, seed=5)
    d = calframe.summary(df, disparity=True, **kw)
    grouped = calframe.summary(df, **kw)
    keys = grouped["region"].to_list()
    for row in d.iter_rows(named=True):
        j = keys.index(row["worst_group"].removeprefix("region="))
        assert (row["worst_lo"], row["worst_hi"]) == (grouped[f"{row['figure']}_lo"][j],
                                                       grouped[f"{row['figure']}_hi"][j])
    bounds = [f"{v}_{e}" for v in ("worst", "best", "difference", "ratio") for e in ("lo", "hi")]
    assert d.columns[9:] == bounds + ["ranked_on", "below_min_n", "distinguishable_from_best", "ci_method"]


# --------------------------------------------------------------------------- ties, one group, zeros


def _frame(groups: dict[str, tuple[np.ndarray, np.ndarray]]) -> pl.DataFrame:
    return pl.concat([pl.DataFrame({"prob": p, "label": y.astype(np.int8), "g": [k] * p.size})
                      for k, (p, y) in groups.items()])


def test_ties_report_the_first_group_in_key_order():
    rng = np.random.default_rng(2)
    p = rng.uniform(0.1, 0.9, 200)
    bad = (p, (rng.uniform(size=200) < 0.5).astype(int))
    good = (p, (rng.uniform(size=200) < p).astype(int))
    frame = _frame({"c": bad, "a": bad, "b": good, "d": good})  # c and a tie for worst, b and d for best
    values = calframe.ece(frame, by="g")["ece"].to_numpy()
    assert values[0] == values[2] and values[1] == values[3] and values[0] > values[1]
    d = calframe.disparity(frame, "ece", by="g", ci=None).row(0, named=True)
    assert (d["worst_group"], d["best_group"]) == ("g=a", "g=b")


def test_one_group_has_difference_0_and_ratio_1(df):
    d = calframe.disparity(df.filter(pl.col("region") == "east"), "ece", by="region", ci=0.9, n_boot=20)
    row = d.row(0, named=True)
    assert row["n_groups"] == 1 and row["worst_group"] == row["best_group"] == "region=east"
    assert row["worst"] == row["best"] == calframe.ece(df.filter(pl.col("region") == "east"))
    assert (row["difference"], row["difference_lo"], row["difference_hi"]) == (0.0, 0.0, 0.0)
    assert (row["ratio"], row["ratio_lo"], row["ratio_hi"]) == (1.0, 1.0, 1.0)


def test_zero_values_give_a_defined_ratio():
    perfect = (np.array([0.0, 1.0] * 50), np.array([0, 1] * 50))  # every figure 0 on every resample
    rng = np.random.default_rng(4)
    p = rng.uniform(0.1, 0.9, 100)
    off = (p, (rng.uniform(size=100) < 0.5).astype(int))
    both_zero = calframe.disparity(_frame({"a": perfect, "b": perfect}), "brier", by="g", ci=0.9, n_boot=20)
    row = both_zero.row(0, named=True)
    assert (row["worst"], row["best"], row["difference"], row["ratio"]) == (0.0, 0.0, 0.0, 1.0)
    assert (row["ratio_lo"], row["ratio_hi"]) == (1.0, 1.0)
    one_zero = calframe.disparity(_frame({"a": perfect, "b": off}), "ece", by="g", ci=0.9, n_boot=20)
    row = one_zero.row(0, named=True)
    assert (row["best_group"], row["best"], row["ratio"]) == ("g=a", 0.0, 0.0)
    assert row["difference"] == row["worst"] > 0 and (row["ratio_lo"], row["ratio_hi"]) == (0.0, 0.0)
    assert np.isfinite(one_zero.select(pl.selectors.numeric()).to_numpy()).all()


def test_spread_of_replicates():
    diff, ratio = spread(np.array([[0.02, 0.08, 0.04], [0.0, 0.0, 0.0], [0.0, 0.05, 0.01], [0.1, np.nan, 0.2]]))
    np.testing.assert_allclose(diff[:3], [0.06, 0.0, 0.05])
    np.testing.assert_allclose(ratio[:3], [0.25, 1.0, 0.0])
    assert np.isnan(diff[3]) and np.isnan(ratio[3])  # a replicate with an undefined group: left out of percentiles


# --------------------------------------------------------------------------- surfaces


def test_flavours_and_handles_agree(df):
    want = calframe.disparity(df, "ece", by="region", ci=0.9, n_boot=20)
    pd_out = calframe.disparity(df.to_pandas(), "ece", by="region", ci=0.9, n_boot=20)
    assert isinstance(pd_out, pd.DataFrame)
    pd.testing.assert_frame_equal(pd_out, want.to_pandas())
    lazy = calframe.disparity(df.lazy(), "ece", by="region", ci=0.9, n_boot=20)
    assert isinstance(lazy, pl.LazyFrame)  # streamed: the moments' exact sums, eager's to rounding
    assert_frame_equal(lazy.collect(), want, check_exact=False, rel_tol=1e-12, abs_tol=1e-15)
    assert df.calib.disparity("ece", by="region", ci=0.9, n_boot=20).equals(want)
    assert calframe.calib(df.to_pandas()).disparity("ece", by="region", ci=0.9, n_boot=20).equals(pd_out)
    assert df.calib.summary(by="region", disparity=True).equals(calframe.summary(df, by="region", disparity=True))


def test_dask_frames_run_it():  # natively, its default ci=0.95 from the partitions' moments (test_dask_moments.py)
    dd = pytest.importorskip("dask.dataframe")
    assert registry.how("disparity", "dask") == "native"  # (weights and data-dependent bins collect)
    with pytest.raises(ColumnTypeError, match=r"lce: Dask DataFrames are not supported.*compute\(\)"):
        calframe.lce(dd.from_pandas(pd.DataFrame({"prob": [0.2], "label": [0]}), npartitions=1), "prob")


def test_the_caller_frame_is_not_modified(df):
    before = df.clone()
    pdf = df.to_pandas()
    pdf_before = pdf.copy()
    calframe.disparity(df, "vece", by="region", variable="age", ci=0.9, n_boot=10)
    calframe.disparity(pdf, "summary", by="region")
    assert df.equals(before)
    pd.testing.assert_frame_equal(pdf, pdf_before)


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("figure", ["reliability", "lce", "nope", None, 3])
def test_unknown_figure(df, figure):
    with pytest.raises(ParameterError, match=r"'figure' parameter of disparity must be the name of a figure.*ece") as e:
        calframe.disparity(df, figure, by="region")
    assert e.value.param == "figure"


@pytest.mark.parametrize("by", [None, []])
def test_by_is_needed(df, by):
    with pytest.raises(ParameterError, match=r"'by' parameter of disparity must be a group column") as e:
        calframe.disparity(df, "ece", by=by)
    assert e.value.param == "by"
    with pytest.raises(ParameterError, match=r"'by' parameter of summary must be a group column.*disparity=True"):
        calframe.summary(df, by=by, disparity=True)


def test_missing_by_column(df):
    with pytest.raises(ColumnNotFoundError, match="zone"):
        calframe.disparity(df, "ece", by="zone")


def test_options_the_figure_does_not_take(df):
    with pytest.raises(ParameterError, match=r"disparity: figure 'brier' takes no option 'bins'; its options are") as e:
        calframe.disparity(df, "brier", by="region", bins=10)
    assert e.value.param == "bins"
    with pytest.raises(ParameterError, match="disparity"):
        calframe.disparity(df, "summary", by="region", disparity=True)  # disparity's own, not the figure's


def test_figure_options_are_checked_by_the_figure(df):
    with pytest.raises(ParameterError, match=r"'bins' parameter of ece"):
        calframe.disparity(df, "ece", by="region", bins=0)
    with pytest.raises(ParameterError, match=r"'ci' parameter"):
        calframe.disparity(df, "ece", by="region", ci=1.5)
    with pytest.raises(ParameterError, match=r"'disparity' parameter of summary must be True or False"):
        calframe.summary(df, by="region", disparity="yes")


def test_negative_figures_are_refused(df):
    with pytest.raises(ParameterError, match=r"squared=True with estimator='debiased'.*non-negative") as e:
        calframe.disparity(df, "ce", by="region", p=2, estimator="debiased", squared=True)
    assert e.value.param == "squared"


def test_a_group_without_rows_is_an_error_not_a_nan(df):
    frame = df.with_columns(high=pl.col("prob") > 0.5)
    assert np.isnan(calframe.gece(frame, by="high", output_between=(0.0, 0.5))["gece"][1])  # group high=true: 0 rows
    with pytest.raises(InvalidValueError, match=r"disparity: the gece of group high=true \(0 rows\) is nan"):
        calframe.disparity(frame, "gece", by="high", output_between=(0.0, 0.5))


# --------------------------------------------------------------------------- min_n and tie-breaks by hand (issue 34)


def _hand_values(frame: pl.DataFrame, keys: list[str], bins: int = 15) -> np.ndarray:
    parts = [frame.filter(pl.col("g") == k) for k in keys]
    return np.array([numpy_ece(f["prob"].to_numpy(), f["label"].to_numpy().astype(float), bins) for f in parts])


def test_a_group_of_exactly_min_n_rows_is_ranked():
    """Groups of 50 and 49 rows, min_n=50: the 50-row group is ranked, the 49-row one listed (a planted
    ``counts > min_n`` left the 50-row group neither ranked nor listed, or ranked every group)."""
    rng = np.random.default_rng(34)
    parts = {}
    for k, n, a in (("a", 50, 3.0), ("b", 49, 1.0), ("c", 200, 1.0)):  # "a" miscalibrated: the largest ECE
        p = rng.random(n)
        parts[k] = (p, (rng.random(n) < p ** a).astype(int))
    values = _hand_values(_frame(parts), ["a", "b", "c"])
    assert values[0] == values.max()
    two = calframe.disparity(_frame({k: parts[k] for k in "ab"}), "ece", by="g", ci=None, min_n=50).row(0, named=True)
    assert (two["n_groups"], two["n_ranked"], list(two["below_min_n"])) == (2, 1, ["g=b"])
    assert two["worst_group"] == two["best_group"] == "g=a" and two["ranked_on"] == "value"
    assert two["worst"] == pytest.approx(values[0], rel=1e-12)
    three = calframe.disparity(_frame(parts), "ece", by="g", ci=None, min_n=50).row(0, named=True)
    assert (three["n_groups"], three["n_ranked"], list(three["below_min_n"])) == (3, 2, ["g=b"])
    assert (three["worst_group"], three["best_group"]) == ("g=a", "g=c")
    assert [three["worst"], three["best"]] == pytest.approx([values[0], values[2]], rel=1e-12)


def test_equal_lower_bounds_name_the_largest_value_worst():
    """Calibrated groups whose 90% symmetric lower bounds are all 0 (from the bootstrap redone by hand) but whose
    ECEs differ: the worst is the group with the largest ECE, the documented tie-break (a planted reversal went
    unseen)."""
    rng = np.random.default_rng([34, 0])
    parts = {}
    for k in "abc":
        p = rng.random(200)
        parts[k] = (p, (rng.random(200) < p).astype(int))
    frame = _frame(parts)
    bins, n_boot, level = 2, 100, 0.9
    values = _hand_values(frame, ["a", "b", "c"], bins)
    draws = hand_bootstrap(frame, "g", bins, n_boot, 0)
    q_lo, q_hi = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2], axis=0)
    half = np.maximum(q_hi - values, values - q_lo)
    lo, hi = np.maximum(values - half, 0.0), values + half
    assert (lo == 0).all() and np.unique(values).size == 3  # every lower bound ties: the values decide
    grouped = calframe.ece(frame, by="g", bins=bins, ci=level, n_boot=n_boot, bootstrap="rows")
    assert (grouped["ece_lo"] == 0).all()
    d = calframe.disparity(frame, "ece", by="g", bins=bins, ci=level, n_boot=n_boot, bootstrap="rows").row(
        0, named=True)
    worst, best = int(np.argmax(values)), int(np.argmin(hi))
    assert worst != int(np.argmin(values))
    assert (d["worst_group"], d["best_group"]) == (f"g={'abc'[worst]}", f"g={'abc'[best]}")
    assert [d["worst"], d["worst_lo"], d["worst_hi"]] == pytest.approx([values[worst], 0.0, hi[worst]], rel=1e-12)


# --------------------------------------------------------------------------- a group of one row (issue 31)


def _one_row_and_two_small(seed: int = 31) -> pl.DataFrame:
    """A group of one row (p = 0.9, y = 1: ECE 0.1) beside two calibrated groups of 20 rows: none has min_n rows."""
    rng = np.random.default_rng(seed)
    parts = {"one": (np.array([0.9]), np.array([1]))}
    for k in ("a", "b"):
        p = rng.random(20)
        parts[k] = (p, (rng.random(20) < p).astype(int))
    return _frame(parts)


@pytest.mark.parametrize("bootstrap", ["moments", "rows"])
def test_a_group_of_one_row_has_no_interval(bootstrap):
    """Issue 31: every resample of one row is that row, so its interval was [v, v]: NaN bounds instead."""
    frame = _one_row_and_two_small()
    r = calframe.ece(frame, by="g", ci=0.95, n_boot=100, bootstrap=bootstrap).sort("g")
    assert r["g"].to_list() == ["a", "b", "one"] and r["n"].to_list() == [20, 20, 1]
    assert r["ece"][2] == pytest.approx(0.1, abs=1e-12)  # |1 - 0.9|, the row's value stays
    assert np.isnan(r["ece_lo"][2]) and np.isnan(r["ece_hi"][2])
    assert np.isfinite(r["ece_lo"].to_numpy()[:2]).all() and (r["ece_lo"] < r["ece_hi"]).to_list()[:2] == [True, True]


@pytest.mark.parametrize("min_n", [50, 1])
def test_a_group_of_one_row_is_never_ranked(min_n):
    """Issue 31: with no group of min_n rows every group was ranked, and the one-row group's [0.1, 0.1] made it the
    best (its upper bound the lowest); with min_n=1 too. Now it is listed, with the reason in ranked_on."""
    frame = _one_row_and_two_small()
    d = calframe.disparity(frame, "ece", by="g", n_boot=100, min_n=min_n).row(0, named=True)
    assert d["best_group"] != "g=one" and d["worst_group"] != "g=one"
    assert (d["n_groups"], d["n_ranked"], d["below_min_n"]) == (3, 2, ["g=one"])
    assert d["ranked_on"].endswith("; no interval (1 row), not ranked: g=one")
    assert ("all ranked that have an interval" in d["ranked_on"]) == (min_n == 50)
    assert "g=one" not in d["distinguishable_from_best"]
    # the ranked groups' bounds are their own intervals, as before
    r = calframe.ece(frame, by="g", ci=0.95, n_boot=100).sort("g")
    best = ["g=a", "g=b"].index(d["best_group"])
    assert (d["best_lo"], d["best_hi"]) == (r["ece_lo"][best], r["ece_hi"][best])
    # without ci the values are ranked as given (min_n alone decides): the row's 0.1 is a value like any other
    values = calframe.disparity(frame, "ece", by="g", ci=None, min_n=min_n).row(0, named=True)
    assert values["n_ranked"] == 3 and values["below_min_n"] == []


def test_no_group_of_two_rows_is_an_error_with_ci():
    frame = _frame({"a": (np.array([0.2]), np.array([0])), "b": (np.array([0.7]), np.array([1]))})
    with pytest.raises(InvalidValueError, match="disparity: no group has 2 rows, so none has a bootstrap interval"):
        calframe.disparity(frame, "ece", by="g", n_boot=50)
    d = calframe.disparity(frame, "ece", by="g", ci=None).row(0, named=True)
    assert (d["worst_group"], d["best_group"]) == ("g=b", "g=a")  # ECE 0.3 and 0.2 on the values
