"""Every bad input raises a calframe error that says what, where and how many.

Each test asserts
- the exception class (a :class:`calframe.CalframeError` subclass),
- that the message names the column or parameter, the problem, and (for value
  problems) the number of offending rows,
- that no numba kernel ran (the kernels are replaced by functions that fail
  the test) and no numba frame is in the traceback,
- that the caller's frame is unchanged afterwards.
"""

from __future__ import annotations

import copy
import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pytest

import calframe
from conftest import as_flavour, collected
from calframe import (
    CalframeError,
    CalframeWarning,
    ColumnNotFoundError,
    ColumnTypeError,
    EmptyInputError,
    InvalidValueError,
    ParameterError,
)
from calframe._kernels import accumulate as _K

NAN = float("nan")
INF = float("inf")

FLAVOURS = ["polars", "lazy", "pandas", "pandas[pyarrow]"]
#: flavours that can hold a null distinct from NaN (numpy-backed pandas cannot: see
#: test_pandas_numpy_nan_is_not_a_null)
NULL_FLAVOURS = ["polars", "lazy", "pandas[pyarrow]", "pandas[nullable]"]


# --------------------------------------------------------------------------- helpers






def snapshot(frame: Any) -> Any:
    if isinstance(frame, pl.LazyFrame):
        return frame.collect().clone()
    if isinstance(frame, pl.DataFrame):
        return frame.clone()
    return copy.deepcopy(frame)


def assert_unchanged(frame: Any, before: Any) -> None:
    if isinstance(frame, pl.LazyFrame):
        frame = frame.collect()
    if isinstance(frame, pl.DataFrame):
        assert frame.schema == before.schema
        assert frame.equals(before)
        return
    assert list(frame.columns) == list(before.columns)
    assert frame.dtypes.equals(before.dtypes)
    assert frame.index.equals(before.index)
    if not any(isinstance(t, pd.ArrowDtype) for t in frame.dtypes):
        # (DataFrame.equals is False for Arrow-backed columns holding NaN, even frame.equals(frame))
        assert frame.equals(before)
    pd.testing.assert_frame_equal(frame, before, check_exact=True)


def _all_parts(*parts: str) -> str:
    """A regex that matches when every part occurs somewhere (any order)."""
    return "(?s)" + "".join(f"(?=.*{p})" for p in parts)


def col(name: str) -> str:
    return re.escape(repr(name))


def nrows(k: int) -> str:
    return rf"\b{k} rows?\b"


def param(name: str) -> str:
    return re.escape(f"'{name}'")


def assert_no_numba(excinfo: pytest.ExceptionInfo) -> None:
    for entry in excinfo.traceback:
        path = str(entry.path)
        assert "numba" not in path and "_kernels" not in path, path
    e: BaseException | None = excinfo.value
    seen = 0
    while e is not None and seen < 20:
        assert not type(e).__module__.startswith("numba"), type(e)
        assert "numba" not in str(e).lower()
        e = e.__cause__ or e.__context__
        seen += 1


@pytest.fixture
def no_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    """Replace every numba kernel by one that fails: errors must come before any kernel runs."""

    def boom(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a numba kernel ran before the input was rejected")

    for name in ("accumulate", "group_order", "sort_within_groups", "assign_bins"):
        monkeypatch.setattr(_K, name, boom)


def check_raises(
    exc: type[CalframeError],
    frame: Any,
    call: Callable[[Any], Any],
    *parts: str,
) -> pytest.ExceptionInfo:
    """``call(frame)`` raises ``exc`` whose message matches every regex in ``parts``; frame unchanged."""
    assert issubclass(exc, CalframeError)
    before = snapshot(frame)
    with pytest.raises(exc, match=_all_parts(*parts)) as excinfo:
        collected(call(frame))
    assert isinstance(excinfo.value, CalframeError)
    assert_no_numba(excinfo)
    assert_unchanged(frame, before)
    return excinfo


# one numba thread per test (tests/conftest.py explains why); no kernel may run before the error
pytestmark = pytest.mark.usefixtures("one_numba_thread", "no_kernels")

METRICS = {
    "ece": calframe.ece,
    "mce": calframe.mce,
    "rmsce": calframe.rmsce,
    "ce": calframe.ce,
    "reliability": calframe.reliability,
    "brier": calframe.brier,
    "log_loss": calframe.log_loss,
    "accuracy": calframe.accuracy,
    "summary": calframe.summary,
}


def binary(prob: list[float], label: list[Any] | None = None) -> pl.DataFrame:
    label = label if label is not None else [i % 2 for i in range(len(prob))]
    return pl.DataFrame({"prob": prob, "label": label}, strict=False)


GOOD3 = [[0.2, 0.3, 0.5], [0.6, 0.3, 0.1], [0.1, 0.1, 0.8], [0.3, 0.4, 0.3], [0.5, 0.25, 0.25], [0.0, 1.0, 0.0]]


def multiclass_array(rows_: list[list[float]], label: list[Any] | None = None) -> pl.DataFrame:
    label = label if label is not None else [i % 3 for i in range(len(rows_))]
    return pl.DataFrame(
        {"probs": rows_, "label": label},
        schema={"probs": pl.Array(pl.Float64, len(rows_[0])), "label": pl.Int64},
    )


def multiclass_cols(rows_: list[list[float]], label: list[Any] | None = None) -> pl.DataFrame:
    label = label if label is not None else [i % 3 for i in range(len(rows_))]
    arr = np.array(rows_, dtype=np.float64)
    return pl.DataFrame({"p0": arr[:, 0], "p1": arr[:, 1], "p2": arr[:, 2], "label": label})


P3 = ["p0", "p1", "p2"]


# --------------------------------------------------------------------------- probabilities, binary


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("metric", list(METRICS))
def test_binary_nan_probability(flavour: str, metric: str) -> None:
    df = as_flavour(binary([0.2, NAN, 0.7, NAN, 0.4, NAN, 0.9]), flavour)
    check_raises(InvalidValueError, df, lambda f: METRICS[metric](f), col("prob"), "NaN", nrows(3))


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("value", [INF, -INF])
def test_binary_infinite_probability(flavour: str, value: float) -> None:
    df = as_flavour(binary([0.2, value, 0.7, 0.1, value]), flavour)
    check_raises(InvalidValueError, df, lambda f: calframe.ece(f), col("prob"), "infinite", nrows(2))


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_binary_negative_probability(flavour: str) -> None:
    df = as_flavour(binary([0.2, -0.1, 0.7, -1e-9, -3.0, 0.5]), flavour)
    check_raises(InvalidValueError, df, lambda f: calframe.ece(f), col("prob"), re.escape("outside [0, 1]"), nrows(3))


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("metric", ["ece", "brier", "log_loss", "accuracy", "reliability"])
def test_binary_probability_above_one(flavour: str, metric: str) -> None:
    df = as_flavour(binary([0.2, 1.0000001, 0.7, 5.0]), flavour)
    check_raises(InvalidValueError, df, lambda f: METRICS[metric](f), col("prob"), re.escape("outside [0, 1]"), nrows(2))


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("value", [1 + 2**-52, 1 + 1e-9])
def test_an_extreme_just_outside_is_shown_outside(flavour: str, value: float) -> None:
    """1 + 2**-52 is not shown as "max 1" (issue 31): the offending extreme has the digits that show it is outside
    (its shortest repr); the in-range one keeps 6."""
    df = as_flavour(binary([0.25, value, 0.5]), flavour)
    shown = f"min 0.25, max {value!r}"  # 1.0000000000000002, 1.000000001: 6 digits would read 1
    check_raises(InvalidValueError, df, lambda f: calframe.ece(f), col("prob"), re.escape(shown), nrows(1))


def test_a_row_sum_just_outside_the_tolerance_is_shown_outside() -> None:
    """The worst row sum of class probabilities, off 1 by just more than the tolerance, with the digits that show it
    (1.0001000001, not 1.0001)."""
    from calframe._columns import SUM_TOLERANCE

    worst = 0.5 + SUM_TOLERANCE * 1.00001 + 0.25 + 0.25
    df = multiclass_cols([[0.2, 0.3, 0.5], [0.5 + SUM_TOLERANCE * 1.00001, 0.25, 0.25], [0.6, 0.3, 0.1]])
    check_raises(InvalidValueError, df, lambda f: calframe.ece(f, prob=P3), "sum to 1", re.escape(f"sums to {worst!r}"))


def test_integer_logits_are_rejected_as_out_of_range() -> None:
    df = binary([3, -2, 1, 0, 7])  # integer scores, not probabilities
    check_raises(InvalidValueError, df, lambda f: calframe.ece(f), col("prob"), re.escape("outside [0, 1]"), nrows(3))


# --------------------------------------------------------------------------- probabilities, multiclass


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_multiclass_array_nan(flavour: str) -> None:
    rows_ = [r[:] for r in GOOD3]
    rows_[1] = [NAN, 0.5, NAN]  # two NaNs in one row: still one row
    rows_[4] = [0.5, NAN, 0.5]
    df = as_flavour(multiclass_array(rows_), flavour)
    check_raises(InvalidValueError, df, lambda f: calframe.ece(f), col("probs"), "NaN", nrows(2))


def test_multiclass_array_inf() -> None:
    rows_ = [r[:] for r in GOOD3]
    rows_[2] = [0.1, INF, 0.8]
    df = multiclass_array(rows_)
    check_raises(InvalidValueError, df, lambda f: calframe.brier(f), col("probs"), "infinite", nrows(1))


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_multiclass_columns_nan(flavour: str) -> None:
    rows_ = [r[:] for r in GOOD3]
    rows_[0] = [NAN, 0.5, 0.5]
    rows_[3] = [0.5, 0.5, NAN]
    rows_[5] = [NAN, NAN, NAN]
    df = as_flavour(multiclass_cols(rows_), flavour)
    check_raises(InvalidValueError, df, lambda f: calframe.ece(f, prob=P3), "p0", "p2", "NaN", nrows(3))


@pytest.mark.parametrize("value", [INF, -INF])
def test_multiclass_columns_inf(value: float) -> None:
    rows_ = [r[:] for r in GOOD3]
    rows_[2] = [0.1, value, 0.8]
    rows_[3] = [value, 0.4, 0.3]
    df = multiclass_cols(rows_)
    check_raises(InvalidValueError, df, lambda f: calframe.accuracy(f, prob=P3), "p1", "infinite", nrows(2))


@pytest.mark.parametrize("layout", ["array", "columns"])
def test_multiclass_negative(layout: str) -> None:
    rows_ = [r[:] for r in GOOD3]
    rows_[1] = [-0.1, 0.6, 0.5]
    rows_[2] = [0.6, 0.6, -0.2]
    if layout == "array":
        df, kw, name = multiclass_array(rows_), {}, col("probs")
    else:
        df, kw, name = multiclass_cols(rows_), {"prob": P3}, "p0"
    check_raises(InvalidValueError, df, lambda f: calframe.ece(f, **kw), name, re.escape("outside [0, 1]"), nrows(2))


@pytest.mark.parametrize("layout", ["array", "columns"])
def test_multiclass_above_one(layout: str) -> None:
    rows_ = [r[:] for r in GOOD3]
    rows_[3] = [1.5, -0.25, -0.25]  # sums to 1, but out of range
    if layout == "array":
        df, kw, name = multiclass_array(rows_), {}, col("probs")
    else:
        df, kw, name = multiclass_cols(rows_), {"prob": P3}, "p1"
    check_raises(InvalidValueError, df, lambda f: calframe.log_loss(f, **kw), name, re.escape("outside [0, 1]"), nrows(1))


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("layout", ["array", "columns"])
def test_multiclass_rows_not_summing_to_one(flavour: str, layout: str) -> None:
    rows_ = [r[:] for r in GOOD3]
    rows_[0] = [0.2, 0.3, 0.6]  # 1.1
    rows_[2] = [0.1, 0.1, 0.1]  # 0.3
    rows_[4] = [0.5, 0.25, 0.26]  # 1.01
    if layout == "array":
        df, kw, name = multiclass_array(rows_), {}, col("probs")
    else:
        df, kw, name = multiclass_cols(rows_), {"prob": P3}, "p0"
    df = as_flavour(df, flavour)
    check_raises(InvalidValueError, df, lambda f: calframe.ece(f, **kw), name, "sum to 1", nrows(3))


def test_multiclass_sum_within_float32_tolerance_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.undo()  # this test computes: let the kernels run
    # float32 softmax outputs are off by ~1e-7 per row: accepted, and used as given
    rows_ = np.array(GOOD3, dtype=np.float32).astype(np.float64)
    rows_[:, 0] += 3e-7
    label = np.array([0, 1, 2, 1, 0, 1])
    onehot = np.eye(3)[label]
    expected = float(((rows_ - onehot) ** 2).sum(axis=1).mean())
    got = calframe.brier(multiclass_cols(rows_.tolist(), label.tolist()), prob=P3)
    assert got == pytest.approx(expected, abs=1e-14)


# --------------------------------------------------------------------------- labels


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("metric", ["ece", "brier", "log_loss", "accuracy", "summary"])
def test_binary_labels_outside_classes(flavour: str, metric: str) -> None:
    df = as_flavour(binary([0.1, 0.2, 0.3, 0.4, 0.5], [0, 2, 1, -1, 2]), flavour)
    check_raises(InvalidValueError, df, lambda f: METRICS[metric](f), col("label"), "outside the classes", nrows(3))


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("layout", ["array", "columns"])
def test_multiclass_label_equal_to_k(flavour: str, layout: str) -> None:
    label = [0, 3, 2, 1, 3, 0]
    if layout == "array":
        df, kw = multiclass_array(GOOD3, label), {}
    else:
        df, kw = multiclass_cols(GOOD3, label), {"prob": P3}
    df = as_flavour(df, flavour)
    check_raises(InvalidValueError, df, lambda f: calframe.ece(f, **kw), col("label"), "outside the classes", nrows(2))


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_binary_float_labels_not_whole(flavour: str) -> None:
    df = as_flavour(binary([0.1, 0.2, 0.3, 0.4], [0.0, 0.5, 1.0, 0.9]), flavour)
    check_raises(InvalidValueError, df, lambda f: calframe.ece(f), col("label"), "not whole numbers", nrows(2))


def test_multiclass_float_labels_not_whole() -> None:
    df = multiclass_cols(GOOD3, [0.0, 1.0, 2.0, 1.5, 0.25, 2.0])
    check_raises(InvalidValueError, df, lambda f: calframe.ece(f, prob=P3), col("label"), "not whole numbers", nrows(2))


def test_boolean_labels_with_multiclass_probabilities() -> None:
    df = multiclass_cols(GOOD3, [True, False, True, True, False, False])
    check_raises(ColumnTypeError, df, lambda f: calframe.ece(f, prob=P3), col("label"), "Boolean", "3 classes")


# --------------------------------------------------------------------------- nulls


@pytest.mark.parametrize("flavour", NULL_FLAVOURS)
@pytest.mark.parametrize("metric", list(METRICS))
def test_nulls_raise_by_default(flavour: str, metric: str) -> None:
    df = as_flavour(binary([0.1, None, 0.3, None, 0.5, 0.6], [1, 0, None, 1, None, None]), flavour)
    exc = check_raises(InvalidValueError, df, lambda f: METRICS[metric](f), "null", col("prob"), col("label"))
    msg = str(exc.value)
    assert re.search(r"'prob': 2 rows", msg), msg
    assert re.search(r"'label': 3 rows", msg), msg
    assert "nulls='drop'" in msg


def test_nulls_raise_in_weights() -> None:
    df = binary([0.1, 0.2, 0.3]).with_columns(w=pl.Series([1.0, None, 2.0]))
    check_raises(InvalidValueError, df, lambda f: calframe.ece(f, weights="w"), "null", col("w"), nrows(1))


def test_nulls_raise_pandas_nullable() -> None:
    df = pd.DataFrame({"prob": [0.1, None, 0.3, 0.4], "label": [1, 0, None, 1]}).convert_dtypes()
    assert isinstance(df["label"].dtype, pd.Int64Dtype)
    exc = check_raises(InvalidValueError, df, lambda f: calframe.brier(f), "null", col("prob"), col("label"))
    assert re.search(r"'prob': 1 row\b", str(exc.value))


def test_nulls_raise_in_array_column() -> None:
    df = pl.DataFrame(
        {"probs": [GOOD3[0], None, GOOD3[2], None], "label": [0, 1, 2, 0]},
        schema={"probs": pl.Array(pl.Float64, 3), "label": pl.Int64},
    )
    check_raises(InvalidValueError, df, lambda f: calframe.ece(f), "null", col("probs"), nrows(2))


def _sliced_fixed_size_list(kind: str, rows_: slice) -> Any:
    """Rows ``rows_`` of 10 three-class rows in an Arrow fixed_size_list column with nulls at rows 6 and 8 (a
    slice: an offset, or fewer rows than its values), as Arrow-backed pandas (``df.iloc[rows_]``) or a pyarrow
    Table (``table.slice``)."""
    import pyarrow as pa

    probs: list[Any] = [GOOD3[i % 6] for i in range(10)]
    probs[6] = probs[8] = None
    arr = pa.array(probs, type=pa.list_(pa.float64(), 3))
    labels = [i % 3 for i in range(10)]
    if kind == "pandas":
        return pd.DataFrame({"probs": pd.arrays.ArrowExtensionArray(arr), "label": labels}).iloc[rows_]
    return pa.table({"probs": arr, "label": labels}).slice(rows_.start, rows_.stop - rows_.start)


@pytest.mark.parametrize(("kind", "rows_"), [("pandas", slice(3, 10)), ("pandas", slice(0, 9)),
                                             ("pyarrow", slice(3, 10))], ids=["pandas tail", "pandas head", "pyarrow"])
def test_nulls_raise_in_a_sliced_arrow_array_column(kind: str, rows_: slice, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 31, 7: a slice of an Arrow fixed-size list column holding nulls (``df.iloc[3:]``; every Dask
    partition of an Arrow-backed frame is one) raises the null error naming the column, as the whole column does:
    Polars misreads such a slice's validity ("validity mask length ..."), which calframe reported as a column it
    cannot read (pandas) or let through (a pyarrow Table); the slice is copied first. With nulls="drop", the other
    rows' figure."""
    frame = _sliced_fixed_size_list(kind, rows_)
    if kind == "pandas":
        check_raises(InvalidValueError, frame, lambda f: calframe.ece(f, prob="probs"), "null", col("probs"),
                     nrows(2))
    else:
        with pytest.raises(InvalidValueError, match=_all_parts("null", col("probs"), nrows(2))):
            calframe.ece(frame, prob="probs")
    monkeypatch.undo()  # this part computes: let the kernels run
    rest = [i for i in range(rows_.start, rows_.stop) if i not in (6, 8)]
    kept = pl.DataFrame({"probs": [GOOD3[i % 6] for i in rest], "label": [i % 3 for i in rest]},
                        schema={"probs": pl.Array(pl.Float64, 3), "label": pl.Int64})
    with pytest.warns(CalframeWarning):
        assert calframe.ece(frame, prob="probs", nulls="drop") == calframe.ece(kept, prob="probs")


def _drop_case() -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(3)
    n = 200
    prob = rng.uniform(0, 1, n)
    label = (rng.uniform(0, 1, n) < prob).astype(np.int64)
    g = rng.integers(0, 3, n)
    df = pl.DataFrame({"prob": prob, "label": label, "g": g})
    null_p = np.zeros(n, bool)
    null_p[[3, 17, 50, 51, 120]] = True
    null_y = np.zeros(n, bool)
    null_y[[17, 60, 199]] = True  # row 17 null in both: 7 distinct rows
    dirty = df.with_columns(
        prob=pl.when(pl.Series(null_p)).then(None).otherwise(pl.col("prob")),
        label=pl.when(pl.Series(null_y)).then(None).otherwise(pl.col("label")),
    )
    clean = df.filter(~pl.Series(null_p | null_y))
    assert clean.height == n - 7
    return dirty, clean


DROP_CALLS: dict[str, tuple[Callable[..., Any], dict[str, Any]]] = {
    "ece": (calframe.ece, {}),
    "mce_quantile": (calframe.mce, {"binning": "quantile", "bins": 7}),
    "ce_debiased": (calframe.ce, {"p": 2, "estimator": "debiased"}),
    "brier": (calframe.brier, {}),
    "log_loss": (calframe.log_loss, {}),
    "accuracy": (calframe.accuracy, {}),
    "ece_by": (calframe.ece, {"by": "g"}),
    "summary_by": (calframe.summary, {"by": "g"}),
    "reliability": (calframe.reliability, {"bins": 5}),
}


@pytest.mark.parametrize("flavour", NULL_FLAVOURS)
@pytest.mark.parametrize("call", list(DROP_CALLS))
def test_nulls_drop_warns_and_equals_dropping_by_hand(
    flavour: str, call: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.undo()  # this test computes: let the kernels run
    func, kwargs = DROP_CALLS[call]
    dirty, clean = _drop_case()
    frame = as_flavour(dirty, flavour)
    before = snapshot(frame)
    with pytest.warns(CalframeWarning, match=r"\b7 rows\b.*null") as record:
        got = collected(func(frame, nulls="drop", **kwargs))
    assert len([w for w in record if issubclass(w.category, CalframeWarning)]) == 1
    assert_unchanged(frame, before)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CalframeWarning)  # nothing to drop: no warning
        expected = collected(func(as_flavour(clean, flavour), **kwargs))
    rel = 0.0  # bit for bit, LazyFrames too (their sums are exact: spec section 8, "Exact sums")
    if isinstance(got, float):
        assert isinstance(expected, float)
        assert got == pytest.approx(expected, rel=rel, abs=0)
    elif isinstance(got, pl.DataFrame):
        from polars.testing import assert_frame_equal

        assert_frame_equal(got, expected, rel_tol=max(rel, 1e-300), abs_tol=0, check_exact=rel == 0)
    else:
        assert isinstance(got, pd.DataFrame)
        pd.testing.assert_frame_equal(got, expected)


def test_pandas_numpy_nan_is_not_a_null() -> None:
    # calframe reads pandas with nan_to_null=False: a NaN in a numpy-backed float column is a bad
    # value, not a null, so nulls="drop" does not drop it (the message says so).
    df = pd.DataFrame({"prob": [0.2, np.nan, 0.5, 0.7], "label": [0, 1, 1, 1]})
    with warnings.catch_warnings():
        warnings.simplefilter("error", CalframeWarning)
        exc = check_raises(InvalidValueError, df, lambda f: calframe.ece(f, nulls="drop"), col("prob"), "NaN", nrows(1))
    msg = str(exc.value)
    assert "nulls='drop' drops nulls, not NaN" in msg and "dropna(subset=['prob'])" in msg, msg
    # the remedies the message names work, and give the figure of the rows without the NaN (issue 31, section 5)
    want = calframe.ece(pl.DataFrame({"prob": [0.2, 0.5, 0.7], "label": [0, 1, 1]}))
    assert calframe.ece(df.dropna(subset=["prob"])) == want
    assert calframe.ece(pl.from_pandas(df, nan_to_null=False).filter(pl.col("prob").is_finite())) == want


# --------------------------------------------------------------------------- empty input


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("metric", list(METRICS))
def test_empty_frame(flavour: str, metric: str) -> None:
    df = as_flavour(pl.DataFrame(schema={"prob": pl.Float64, "label": pl.Int64}), flavour)
    check_raises(EmptyInputError, df, lambda f: METRICS[metric](f), "no rows")


@pytest.mark.parametrize("flavour", NULL_FLAVOURS)
@pytest.mark.parametrize("metric", ["ece", "brier", "summary"])
def test_all_null_frame_with_drop(flavour: str, metric: str) -> None:
    df = as_flavour(
        pl.DataFrame({"prob": [None, 0.3, None], "label": [1, None, None]}, schema={"prob": pl.Float64, "label": pl.Int64}),
        flavour,
    )
    with pytest.warns(CalframeWarning, match=r"\b3 rows\b"):
        exc = check_raises(EmptyInputError, df, lambda f: METRICS[metric](f, nulls="drop"), "null")
    assert "nothing" in str(exc.value)


# --------------------------------------------------------------------------- dtypes


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("dtype", [pl.String, pl.Categorical])
def test_string_probability_column(flavour: str, dtype: pl.DataType) -> None:
    df = as_flavour(pl.DataFrame({"prob": ["0.1", "0.9"], "label": [0, 1]}, schema={"prob": dtype, "label": pl.Int64}), flavour)
    check_raises(ColumnTypeError, df, lambda f: calframe.ece(f), col("prob"), "dtype", "numeric")


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("dtype", [pl.String, pl.Categorical])
def test_string_label_column(flavour: str, dtype: pl.DataType) -> None:
    df = as_flavour(pl.DataFrame({"prob": [0.1, 0.9], "label": ["no", "yes"]}, schema={"prob": pl.Float64, "label": dtype}), flavour)
    check_raises(ColumnTypeError, df, lambda f: calframe.brier(f), col("label"), "dtype", "integers")


def test_string_class_column_in_list() -> None:
    df = multiclass_cols(GOOD3).with_columns(pl.col("p1").cast(pl.String))
    check_raises(ColumnTypeError, df, lambda f: calframe.ece(f, prob=P3), col("p1"), "dtype", "numeric")


def test_string_array_column() -> None:
    df = pl.DataFrame({"probs": [["0.5", "0.5"], ["0.2", "0.8"]], "label": [0, 1]},
                      schema={"probs": pl.Array(pl.String, 2), "label": pl.Int64})
    check_raises(ColumnTypeError, df, lambda f: calframe.ece(f), col("probs"), "floats")


def test_not_a_frame() -> None:
    with pytest.raises(ColumnTypeError, match="list") as excinfo:
        calframe.ece([[0.1, 1]])  # type: ignore[arg-type]
    assert_no_numba(excinfo)


# --------------------------------------------------------------------------- missing columns


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_missing_explicit_prob_column(flavour: str) -> None:
    df = as_flavour(binary([0.1, 0.9]), flavour)
    check_raises(ColumnNotFoundError, df, lambda f: calframe.ece(f, prob="score"), "score", "prob=", "not in the frame")


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_missing_explicit_label_column(flavour: str) -> None:
    df = as_flavour(binary([0.1, 0.9]), flavour)
    check_raises(ColumnNotFoundError, df, lambda f: calframe.ece(f, label="truth"), "truth", "label=", "not in the frame")


def test_missing_one_of_the_class_columns() -> None:
    df = multiclass_cols(GOOD3)
    check_raises(ColumnNotFoundError, df, lambda f: calframe.ece(f, prob=["p0", "p1", "p9"]), "p9", "prob=")


@pytest.mark.parametrize("param_name", ["by", "weights"])
def test_missing_by_or_weights_column(param_name: str) -> None:
    df = binary([0.1, 0.9])
    check_raises(ColumnNotFoundError, df, lambda f: calframe.ece(f, **{param_name: "zzz"}), "zzz", f"{param_name}=")


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_no_default_prob_column(flavour: str) -> None:
    df = as_flavour(pl.DataFrame({"score": [0.1, 0.9], "label": [0, 1]}), flavour)
    check_raises(ColumnNotFoundError, df, lambda f: calframe.ece(f), "probability", "prob=", re.escape("'proba'"), "score")


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_no_default_label_column(flavour: str) -> None:
    df = as_flavour(pl.DataFrame({"prob": [0.1, 0.9], "truth": [0, 1]}), flavour)
    check_raises(ColumnNotFoundError, df, lambda f: calframe.ece(f), "label", "label=", re.escape("'y_true'"), "truth")


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_ambiguous_default_prob_column(flavour: str) -> None:
    df = as_flavour(pl.DataFrame({"prob": [0.1, 0.9], "proba": [0.2, 0.8], "label": [0, 1]}), flavour)
    check_raises(ColumnNotFoundError, df, lambda f: calframe.ece(f), "several", re.escape("'prob', 'proba'"), "prob=")


def test_ambiguous_default_label_column() -> None:
    df = pl.DataFrame({"prob": [0.1, 0.9], "y": [0, 1], "target": [0, 1]})
    check_raises(ColumnNotFoundError, df, lambda f: calframe.brier(f), "several", re.escape("'y', 'target'"), "label=")


def test_ambiguous_default_is_resolved_by_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.undo()
    df = pl.DataFrame({"prob": [0.1, 0.9, 0.6], "proba": [0.9, 0.1, 0.6], "label": [0, 1, 0]})
    # by hand: brier of 'proba' = mean((0.9-0)^2, (0.1-1)^2, (0.6-0)^2)
    assert calframe.brier(df, prob="proba") == pytest.approx((0.81 + 0.81 + 0.36) / 3, abs=1e-15)
    assert calframe.brier(df, prob="prob") == pytest.approx((0.01 + 0.01 + 0.36) / 3, abs=1e-15)


def test_by_overlapping_label() -> None:
    df = binary([0.1, 0.9])
    check_raises(ParameterError, df, lambda f: calframe.ece(f, by="label"), param("by"), "label")


# --------------------------------------------------------------------------- parameters

PARAM_CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("bins=0", {"bins": 0}, [param("bins"), "int >= 1", "Got 0"]),
    ("bins=1.5", {"bins": 1.5}, [param("bins"), "int >= 1", re.escape("Got 1.5")]),
    ("bins=True", {"bins": True}, [param("bins"), "int >= 1"]),
    ("binning=foo", {"binning": "foo"}, [param("binning"), "uniform", "quantile", "equal_mass", "'foo'"]),
    ("closed=middle", {"closed": "middle"}, [param("closed"), "'left'", "'right'", "'middle'"]),
    ("lens=foo", {"lens": "foo"}, [param("lens"), "top1", "marginal", "'foo'"]),
    ("p=3", {"p": 3}, [param("p"), "Got 3"]),
    ("p=0.5", {"p": 0.5}, [param("p"), "Got 0.5"]),
    ("estimator=foo", {"estimator": "foo"}, [param("estimator"), "plugin", "debiased", "'foo'"]),
    ("debiased p=inf", {"estimator": "debiased", "p": "inf"}, [param("estimator"), "debiased", "p=inf"]),
    ("debiased l2", {"estimator": "debiased", "p": 2, "distance": "l2"}, [param("estimator"), "tvd", "'l2'"]),
    ("ci=1.5", {"ci": 1.5}, [param("ci"), re.escape("(0, 1)"), re.escape("1.5")]),
    ("ci=0", {"ci": 0}, [param("ci"), re.escape("(0, 1)"), "Got 0"]),
    ("n_boot=1", {"ci": 0.9, "n_boot": 1}, [param("n_boot"), "int >= 2", "Got 1"]),
    ("n_boot=1 without ci", {"n_boot": 1}, [param("n_boot"), "int >= 2", "Got 1"]),
    ("nulls=keep", {"nulls": "keep"}, [param("nulls"), "'raise'", "'drop'", "'keep'"]),
    ("interval l>h", {"distance": ("interval", 0.8, 0.2)}, [param("distance"), "interval", "low=0.8", "high=0.2"]),
    ("interval l<0", {"distance": ("interval", -0.1, 0.2)}, [param("distance"), "interval", re.escape("low=-0.1")]),
    ("mahalanobis not PSD", {"distance": ("mahalanobis", [[1.0, 2.0], [2.0, 1.0]])},
     [param("distance"), "positive semi-definite", re.escape("[[1.0, 2.0], [2.0, 1.0]]")]),
    ("mahalanobis not symmetric", {"distance": ("mahalanobis", [[1.0, 0.5], [0.2, 1.0]])},
     [param("distance"), "symmetric"]),
    ("mahalanobis 3x3", {"distance": ("mahalanobis", np.eye(3))}, [param("distance"), "2x2"]),
    ("distance=foo", {"distance": "foo"}, [param("distance"), "tvd", "'foo'"]),
]


@pytest.mark.parametrize("flavour", ["polars", "pandas"])
@pytest.mark.parametrize(("kwargs", "parts"), [(k, p) for _, k, p in PARAM_CASES], ids=[i for i, _, _ in PARAM_CASES])
def test_bad_parameter(flavour: str, kwargs: dict[str, Any], parts: list[str]) -> None:
    df = as_flavour(binary([0.1, 0.2, 0.7, 0.95]), flavour)
    check_raises(ParameterError, df, lambda f: calframe.ce(f, **kwargs), *parts)


@pytest.mark.parametrize(
    ("metric", "kwargs"),
    [
        ("ece", {"bins": 0}),
        ("mce", {"binning": "foo"}),
        ("rmsce", {"closed": "middle"}),
        ("reliability", {"lens": "foo"}),
        ("reliability", {"bins": 2.0}),
        ("summary", {"bins": -3}),
        ("brier", {"ci": 1.5}),
        ("accuracy", {"ci": 0.9, "n_boot": 1}),
        ("log_loss", {"nulls": "ignore"}),
    ],
)
def test_bad_parameter_every_function(metric: str, kwargs: dict[str, Any]) -> None:
    df = binary([0.1, 0.2, 0.7, 0.95])
    name = next(iter(kwargs)) if "n_boot" not in kwargs else "n_boot"
    check_raises(ParameterError, df, lambda f: METRICS[metric](f, **kwargs), param(name), "Got")


def test_reliability_rejects_marginal_lens() -> None:
    df = binary([0.1, 0.2, 0.7, 0.95])
    check_raises(ParameterError, df, lambda f: calframe.reliability(f, lens="marginal"), param("lens"), "marginal")


@pytest.mark.parametrize("metric", ["ece", "ce", "mce", "reliability"])
@pytest.mark.parametrize("layout", ["array", "columns"])
def test_lens_class_out_of_range(metric: str, layout: str) -> None:
    if layout == "array":
        df, kw = multiclass_array(GOOD3), {}
    else:
        df, kw = multiclass_cols(GOOD3), {"prob": P3}
    check_raises(ParameterError, df, lambda f: METRICS[metric](f, lens="class:5", **kw),
                 param("lens"), "class 5", "3 classes")


def test_lens_class_out_of_range_binary_with_ci() -> None:
    df = binary([0.1, 0.2, 0.7, 0.95])
    check_raises(ParameterError, df, lambda f: calframe.ece(f, lens="class:2", ci=0.9, n_boot=10),
                 param("lens"), "class 2", "2 classes")


@pytest.mark.parametrize("metric", ["ece", "ce", "reliability"])
def test_weights_with_sweep_binning(metric: str) -> None:
    # quantile / equal-mass bins take weights (the rows repeated w_i times); the sweep does not
    df = binary([0.1, 0.2, 0.7, 0.95]).with_columns(w=pl.lit(1.0))
    check_raises(ParameterError, df, lambda f: METRICS[metric](f, weights="w", binning="sweep"),
                 "weights", "sweep", "no weighted sweep")


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("metric", ["ece", "brier", "accuracy", "summary"])
def test_negative_weights(flavour: str, metric: str) -> None:
    df = as_flavour(binary([0.1, 0.2, 0.7, 0.95, 0.5]).with_columns(w=pl.Series([1.0, -2.0, 0.5, -1e-12, 1.0])), flavour)
    check_raises(InvalidValueError, df, lambda f: METRICS[metric](f, weights="w"), col("w"), "negative", nrows(2))


def test_nan_weights() -> None:
    df = binary([0.1, 0.2, 0.7]).with_columns(w=pl.Series([1.0, NAN, INF]))
    check_raises(InvalidValueError, df, lambda f: calframe.ece(f, weights="w"), col("w"), "NaN", nrows(2))


def test_all_zero_weights() -> None:
    df = binary([0.1, 0.2, 0.7]).with_columns(w=pl.lit(0.0))
    check_raises(InvalidValueError, df, lambda f: calframe.ece(f, weights="w"), col("w"), "sums to 0")


def test_string_weights() -> None:
    df = binary([0.1, 0.2, 0.7]).with_columns(w=pl.lit("1"))
    check_raises(ColumnTypeError, df, lambda f: calframe.ece(f, weights="w"), col("w"), "dtype")


# --------------------------------------------------------------------------- list columns


@pytest.mark.parametrize("flavour", ["polars", "lazy", "pandas", "pandas[pyarrow]"])
def test_ragged_list_column(flavour: str) -> None:
    df = pl.DataFrame(
        {"probs": [[0.2, 0.3, 0.5], [0.5, 0.5], [0.1, 0.1, 0.8], [1.0], [0.3, 0.3, 0.4]], "label": [0, 1, 2, 0, 1]},
        schema={"probs": pl.List(pl.Float64), "label": pl.Int64},
    )
    df = as_flavour(df, flavour)
    check_raises(InvalidValueError, df, lambda f: calframe.ece(f), col("probs"), "different lengths", nrows(2))


def test_single_class_array_column() -> None:
    df = pl.DataFrame({"probs": [[1.0], [1.0]], "label": [0, 0]}, schema={"probs": pl.Array(pl.Float64, 1), "label": pl.Int64})
    check_raises(InvalidValueError, df, lambda f: calframe.ece(f), col("probs"), "K >= 2")


def test_single_column_list_for_prob() -> None:
    df = binary([0.1, 0.9])
    check_raises(ParameterError, df, lambda f: calframe.ece(f, prob=["prob"]), param("prob"), "at least 2")


# --------------------------------------------------------------------------- accessor


@pytest.mark.parametrize("flavour", ["polars", "lazy", "pandas"])
def test_accessor_raises_the_same(flavour: str) -> None:
    df = as_flavour(binary([0.2, NAN, 0.7]), flavour)
    check_raises(InvalidValueError, df, lambda f: f.calib.ece(), col("prob"), "NaN", nrows(1))
    check_raises(ParameterError, df, lambda f: f.calib.ce(p=3), param("p"))


# --------------------------------------------------------------------------- frame never changed


def _rich_frame() -> pl.DataFrame:
    rng = np.random.default_rng(8)
    n = 60
    z = rng.normal(0, 2, (n, 3))
    p3 = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    p = rng.uniform(0, 1, n)
    return pl.DataFrame(
        {
            "prob": p,
            "label": (rng.uniform(0, 1, n) < p).astype(np.int64),
            "p0": p3[:, 0],
            "p1": p3[:, 1],
            "p2": p3[:, 2],
            "y3": rng.integers(0, 3, n),
            "g": rng.choice(["a", "b", "c"], n),
            "w": rng.uniform(0, 2, n),
        }
    )


SUCCESS_CALLS: dict[str, Callable[[Any], Any]] = {
    "ece": lambda f: calframe.ece(f),
    "ece_by_ci": lambda f: calframe.ece(f, by="g", ci=0.9, n_boot=20),
    "mce_quantile": lambda f: calframe.mce(f, binning="quantile", bins=5),
    "rmsce_weights": lambda f: calframe.rmsce(f, weights="w"),
    "ce_debiased_by": lambda f: calframe.ce(f, p=2, estimator="debiased", by="g"),
    "ce_marginal_multiclass": lambda f: calframe.ce(f, P3, "y3", lens="marginal"),
    "reliability_by": lambda f: calframe.reliability(f, by="g", bins=5),
    "brier_multiclass": lambda f: calframe.brier(f, P3, "y3"),
    "log_loss": lambda f: calframe.log_loss(f),
    "accuracy_by": lambda f: calframe.accuracy(f, by="g"),
    "summary_by_weights": lambda f: calframe.summary(f, by="g", weights="w"),
    "accessor": lambda f: f.calib.ece(by="g"),
}


@pytest.mark.parametrize("flavour", ["polars", "lazy", "pandas", "pandas[pyarrow]", "pandas[nullable]", "pandas[category]"])
@pytest.mark.parametrize("call", list(SUCCESS_CALLS))
def test_frame_unchanged_after_successful_call(flavour: str, call: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.undo()  # these calls compute
    df = _rich_frame()
    if flavour == "pandas[category]":
        frame = df.to_pandas()
        frame["g"] = frame["g"].astype("category")
        frame.index = pd.RangeIndex(100, 160)  # a non-default index, too
    else:
        frame = as_flavour(df, flavour)
    before = snapshot(frame)
    out = SUCCESS_CALLS[call](frame)
    assert_unchanged(frame, before)
    assert out is not frame


# --------------------------------------------------------------------------- known bugs


def test_non_string_pandas_column_names() -> None:
    df = pd.DataFrame({0: [0.1, 0.8, 0.6], 1: [0, 1, 0]})
    before = snapshot(df)
    with pytest.raises(CalframeError, match="prob"):
        calframe.ece(df, prob=0, label=1)  # type: ignore[arg-type]
    assert_unchanged(df, before)


def test_duplicate_pandas_column_names() -> None:
    df = pd.DataFrame([[0.1, 1, 0.2], [0.7, 0, 0.3]], columns=["prob", "label", "prob"])
    with pytest.raises(CalframeError, match="prob"):
        calframe.ece(df)


def test_bool_p_is_rejected() -> None:
    df = binary([0.1, 0.2, 0.7, 0.95])
    check_raises(ParameterError, df, lambda f: calframe.ce(f, p=True), param("p"))


@pytest.mark.parametrize("func", [calframe.ece, calframe.ce, calframe.brier])
def test_nulls_drop_warning_points_at_the_caller(func: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.undo()
    df = binary([0.1, None, 0.7, 0.9])
    with pytest.warns(CalframeWarning) as record:
        func(df, nulls="drop")
    assert record[0].filename == __file__


@pytest.mark.parametrize("func", ["ce", "vece"])
def test_debiased_estimator_limits_are_checked_by_every_ce_figure(func) -> None:
    """The debiased estimator has no p=inf form and is defined for tvd only: vece refuses both as ce does
    (it used to compute the plugin max silently)."""
    df = pl.DataFrame({"prob": [0.1, 0.4, 0.6, 0.9] * 5, "label": [0, 1, 0, 1] * 5, "v": list(range(20))})
    call = (lambda **kw: calframe.ce(df, **kw)) if func == "ce" else (lambda **kw: calframe.vece(df, "v", **kw))
    with pytest.raises(calframe.ParameterError, match=f"'estimator' parameter of {func}: there is no debiased max"):
        call(p="inf", estimator="debiased")
    with pytest.raises(calframe.ParameterError, match="defined for distance='tvd'"):
        call(p=2, estimator="debiased", distance="l2")
