"""Frame -> :class:`Scored`: resolve and validate columns, once per call.

This is the only module that looks at user frames. It accepts Polars
DataFrame / LazyFrame and pandas DataFrame (numpy- or Arrow-backed), selects
only the columns a call needs, validates them, and hands numpy arrays to the
rest of the library. Every input error is raised here; nothing downstream
validates again. The caller's frame is only read, never modified.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal, Sequence

import numpy as np
from ._imports import pd  # pandas: imported at first use
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from ._imports import LazyModule

GK = LazyModule("calframe._kernels.groups")  # numba kernels: imported at first use
V = LazyModule("calframe._kernels.validate")
from ._names import fresh_name
from . import _errors as E
from .frames import convert
from .frames.kinds import is_pandas_frame
from ._errors import ColumnNotFoundError, ColumnTypeError, bad_param, rows

PROB_CANDIDATES = ("prob", "proba", "y_prob", "probs")
LABEL_CANDIDATES = ("label", "y", "y_true", "target")

#: Multiclass probability rows must sum to 1 within this absolute tolerance.
#: float32 softmax outputs (errors ~1e-7 per row for K = 10, ~1e-5 for K = 1000) pass.
SUM_TOLERANCE = 1e-4

Flavor = Literal["polars", "pandas"]


@dataclass(frozen=True)
class Scored:
    """Validated, numeric view of a scored frame.

    ``probs`` is ``(N,)`` float64 for binary input (positive-class
    probability) and ``(N, K)`` C-contiguous float64 for multiclass input.
    ``labels`` is ``(N,)`` uint8 for binary and int32 for multiclass input.
    ``groups`` holds int32 codes in ``[0, n_groups)`` ordered like the sorted
    ``keys`` table, or is None when there is no ``by``.
    """

    probs: np.ndarray
    labels: np.ndarray
    n_classes: int
    groups: np.ndarray | None
    n_groups: int
    keys: pl.DataFrame | None
    weights: np.ndarray | None
    flavor: Flavor
    prob_name: str | list[str]
    label_name: str
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    #: for each extra column: "numeric" (float64 values) or "categorical" (int32 codes)
    extra_kind: dict[str, str] = field(default_factory=dict)
    #: rows per group (computed with the group codes; None after subset/take)
    counts: np.ndarray | None = None
    #: ``weights`` are the caller's weights divided by this power of two (see ``scale_weights``): a float
    #: without ``by``, else one per group (``(n_groups,)``; each group is scaled by its own maximum)
    weight_scale: float | np.ndarray = 1.0

    @property
    def binary(self) -> bool:
        return self.probs.ndim == 1

    @property
    def n(self) -> int:
        return int(self.labels.shape[0])

    def frequencies(self) -> np.ndarray:
        """Each group's rows as frequency weights count them (docs/spec.md §8 "Weights"): its sum of weights in
        the caller's units (the power of two undone), its row count without weights. What ``min_n``, a group's
        size for an interval (``figures.MIN_ROWS``) and the bootstrap count."""
        if self.weights is None:
            return np.bincount(self.group_codes, minlength=self.n_groups).astype(np.float64)
        return np.bincount(self.group_codes, weights=self.weights, minlength=self.n_groups) * self.weight_scale

    @property
    def group_codes(self) -> np.ndarray:
        """Group codes, all zero when there is no ``by``."""
        if self.groups is None:
            return np.zeros(self.n, dtype=np.int32)
        return self.groups

    def subset(self, mask: np.ndarray) -> "Scored":
        """The rows where ``mask`` is True, under the same groups (a group may become empty)."""
        return replace(
            self,
            probs=np.ascontiguousarray(self.probs[mask]),
            labels=self.labels[mask],
            groups=None if self.groups is None else self.groups[mask],
            weights=None if self.weights is None else self.weights[mask],
            extra={k: v[mask] for k, v in self.extra.items()},
            counts=None,
        )

    def take(self, idx: np.ndarray, groups: np.ndarray, n_groups: int) -> "Scored":
        """Rows ``idx`` (with repetition) under new group codes (used by the bootstrap).

        Every new group draws its rows from one old group, whose weight scale it keeps.
        """
        scale = self.weight_scale
        if isinstance(scale, np.ndarray):
            scale = np.ones(n_groups)
            scale[groups] = self.weight_scale[self.group_codes[idx]]
        return replace(
            self,
            weight_scale=scale,
            probs=np.ascontiguousarray(self.probs[idx]),
            labels=self.labels[idx],
            groups=groups.astype(np.int32, copy=False),
            n_groups=n_groups,
            weights=None if self.weights is None else self.weights[idx],
            extra={k: v[idx] for k, v in self.extra.items()},
            extra_kind=self.extra_kind,
            counts=None,
        )


# --------------------------------------------------------------------------- frames


def flavor_of(frame: Any) -> Flavor:
    flavor = convert.flavor(frame)
    if flavor is None:
        raise ColumnTypeError(
            f"calframe works on Polars DataFrame/LazyFrame and pandas DataFrame; got {type(frame).__name__}. "
            "Convert it first, e.g. pl.DataFrame(data) or pl.from_arrow(table)."
        )
    return flavor  # type: ignore[return-value]


def columns_of(frame: Any) -> list[str]:
    """The column names a call can use: every Polars name; a pandas frame's string labels only.

    pandas labels are matched exactly: ``"1"`` is the column labelled with the
    string ``"1"``, never an integer label 1 (see :func:`non_string_hint`).
    """
    return convert.columns(frame)


def non_string_hint(frame: Any) -> str:
    """For a pandas frame with non-string column labels: how to make them usable ("" otherwise)."""
    if not is_pandas_frame(frame):
        return ""
    others = [c for c in frame.columns if not isinstance(c, str)]
    if not others:
        return ""
    return (f" This pandas frame has non-string column labels {others[:8]}, which calframe does not look up "
            "(column names are matched exactly, as strings): rename them, e.g. df.columns = df.columns.astype(str) "
            "(after making the names unique), and pass the names as strings.")


def pick_default(names: list[str], candidates: Sequence[str], what: str, param: str, func: str) -> str:
    found = [c for c in candidates if c in names]
    if len(found) == 1:
        return found[0]
    if not found:
        raise ColumnNotFoundError(
            f"{func}: no {what} column given and none of the conventional names "
            f"{list(candidates)} is in the frame. Pass {param}=<column name>; the frame has columns {names}."
        )
    raise ColumnNotFoundError(
        f"{func}: no {what} column given and several conventional names match: {found}. "
        f"Pass {param}=<column name> to choose one."
    )


def check_present(names: list[str], wanted: Sequence[str], func: str, param: str) -> None:
    missing = [c for c in wanted if c not in names]
    if missing:
        raise ColumnNotFoundError(
            f"{func}: column(s) {missing} given as {param}= are not in the frame; it has columns {names}."
        )


def as_names(x: Any) -> list:
    """A column parameter as a list: [] for None, the items of a list or tuple as given, else ``[x]``.

    Never their ``str()``: a pandas int label 1 is not the column ``"1"`` (spec section 8);
    :func:`column_names` refuses what is not a string.
    """
    if x is None:
        return []
    return list(x) if isinstance(x, (list, tuple)) else [x]


def column_names(func: str, param: str, x: Any, frame: Any) -> list[str]:
    """:func:`as_names`, each a string; else the ColumnNotFoundError naming ``param`` (with the pandas hint)."""
    names = as_names(x)
    bad = [v for v in names if not isinstance(v, str)]
    if bad:
        raise E.names_not_strings(func, param, bad[0], non_string_hint(frame))
    return names


# --------------------------------------------------------------------------- resolve


def resolve(frame: Any, *, check_finite: bool = True, check_weights: bool = True, **select: Any) -> Scored:
    """Validate ``frame`` and return its numeric :class:`Scored` view: :func:`select_rows` (``select``: its
    keyword arguments, ``func`` first), then :func:`score`.

    ``check_finite=False`` leaves the NaN/infinity check of numeric ``extra``
    columns to the caller (``check_finite_variable``), which may fold it into a pass of its own.
    ``check_weights=False`` leaves the checks of weight totals (the frame's, each group's) to the
    caller: a Dask partition is a part of the frame (its sums are merged, then checked).
    """
    return score(select_rows(frame, **select), check_finite, check_weights)


@dataclass(frozen=True)
class Selected:
    """A call's columns, looked up and selected (an eager Polars frame), rows with nulls dropped or refused:
    what :func:`score` validates (or the eager engine's fused pass, calframe/engines/eager.py)."""

    df: pl.DataFrame
    func: str
    flavor: Flavor
    prob_cols: list[str]
    multi_cols: bool
    label_col: str
    by_cols: list[str]
    weights: str | None
    extra_cols: list[str]


def select_rows(
    frame: Any,
    *,
    func: str,
    prob: str | Sequence[str] | None = None,
    label: str | None = None,
    by: str | Sequence[str] | None = None,
    weights: str | None = None,
    nulls: str = "raise",
    extra: Sequence[str] = (),
    allow_weights: bool = True,
) -> Selected:
    """The first half of :func:`resolve`: parameters and names checked, the needed columns selected, the
    key dtypes checked, rows with nulls refused (``nulls="raise"``) or dropped with a warning."""
    flavor = flavor_of(frame)
    if nulls not in ("raise", "drop"):
        raise bad_param(func, "nulls", "'raise' or 'drop'", nulls)
    for pname, pval in (("prob", prob), ("label", label), ("by", by), ("weights", weights), ("variable", extra)):
        column_names(func, pname, pval, frame)
    if is_pandas_frame(frame) and frame.columns.duplicated().any():
        dups = sorted({str(c) for c in frame.columns[frame.columns.duplicated()]})
        raise ColumnNotFoundError(
            f"{func}: the pandas frame has duplicate column names {dups}; calframe needs unique names. "
            "Rename or drop the duplicates first."
        )
    if weights is not None and not allow_weights:
        raise bad_param(func, "weights", "None (weights are not supported here)", weights)
    names = columns_of(frame)
    try:
        prob_cols, multi_cols, label_col, by_cols, weight_cols, extra_cols = resolve_names(
            names, func, prob, label, by, weights, extra
        )
    except ColumnNotFoundError as exc:
        hint = non_string_hint(frame)
        if not hint:
            raise
        raise ColumnNotFoundError(f"{exc}{hint}") from None

    needed = list(dict.fromkeys(prob_cols + [label_col] + by_cols + weight_cols + extra_cols))
    df = convert.select(frame, needed, func, nan_null=[label_col])
    for c in by_cols:
        check_key_dtype(func, c, df[c].dtype)
    if df.height == 0:
        raise E.no_rows(func)

    # Nulls: in probability, label, weight and variable columns (a null or NaN group key is its own group).
    checked = prob_cols + [label_col] + weight_cols + extra_cols
    null_counts = {c: df[c].null_count() for c in dict.fromkeys(checked)}
    if any(null_counts.values()):
        if nulls == "raise":
            raise E.null_values(func, null_counts)
        before = df.height
        df = df.drop_nulls(subset=list(null_counts))
        E.warn_nulls_dropped(func, before - df.height, df.height)
        if df.height == 0:
            raise E.all_rows_null(func)
    return Selected(df, func, flavor, prob_cols, multi_cols, label_col, by_cols, weights, extra_cols)


def score(sel: Selected, check_finite: bool = True, check_weights: bool = True) -> Scored:
    """The second half of :func:`resolve`: every value validated, group codes, weights scaled."""
    df, func, weights, by_cols = sel.df, sel.func, sel.weights, sel.by_cols
    prob_cols, multi_cols, label_col = sel.prob_cols, sel.multi_cols, sel.label_col
    probs = _probabilities(df, prob_cols, multi_cols, func)
    k = 2 if probs.ndim == 1 else probs.shape[1]
    labels = _labels(df[label_col], k, probs.ndim == 1, func)
    w = _weights(df[weights], func, check_weights) if weights is not None else None
    groups, n_groups, keys = group_codes(df, by_cols) if by_cols else (None, 1, None)
    w, w_scale = scale_weights(w, groups, n_groups) if w is not None else (None, 1.0)
    counts = None
    if groups is not None:
        counts = GK.int_histogram(groups, np.int32(0), n_groups, int(max(1, min(8, (1 << 23) // n_groups))))
        if w is not None and check_weights:
            check_group_weights(func, weights, np.bincount(groups, weights=w, minlength=n_groups), counts, keys)
    extras, extra_kind = {}, {}
    for c in sel.extra_cols:
        extras[c], extra_kind[c] = _variable(df[c], func, check_finite)
    return Scored(
        probs=probs,
        labels=labels,
        n_classes=k,
        groups=groups,
        n_groups=n_groups,
        keys=keys,
        weights=w,
        flavor=sel.flavor,
        prob_name=prob_cols if multi_cols else prob_cols[0],
        label_name=label_col,
        extra=extras,
        extra_kind=extra_kind,
        counts=counts,
        weight_scale=w_scale,
    )


def resolve_names(
    names: list[str],
    func: str,
    prob: str | Sequence[str] | None,
    label: str | None,
    by: str | Sequence[str] | None,
    weights: str | None,
    extra: Sequence[str] = (),
) -> tuple[list[str], bool, str, list[str], list[str], list[str]]:
    """Column names of a call, defaults looked up and every name checked against ``names``.

    Returns (prob columns, several class columns?, label, by, weights (0 or 1), extra).
    """
    if prob is None:
        prob_cols, multi_cols = [pick_default(names, PROB_CANDIDATES, "probability", "prob", func)], False
    elif isinstance(prob, str):
        prob_cols, multi_cols = [prob], False
    else:
        prob_cols, multi_cols = as_names(prob), True
        if len(prob_cols) < 2:
            raise bad_param(func, "prob", "a column name or a list of at least 2 class columns", prob)
    label_col = label if label is not None else pick_default(names, LABEL_CANDIDATES, "label", "label", func)
    by_cols = as_names(by)
    extra_cols = as_names(extra)
    weight_cols = [weights] if weights is not None else []
    check_present(names, prob_cols, func, "prob")
    check_present(names, [label_col], func, "label")
    check_present(names, by_cols, func, "by")
    check_present(names, weight_cols, func, "weights")
    check_present(names, extra_cols, func, "variable")
    overlap = set(by_cols) & (set(prob_cols) | {label_col})
    if overlap:
        raise bad_param(func, "by", "columns other than the probability and label columns", sorted(overlap))
    return prob_cols, multi_cols, label_col, by_cols, weight_cols, extra_cols


def _float_column(s: pl.Series, func: str, what: str) -> np.ndarray:
    dt = s.dtype
    if dt.is_float() or dt.is_integer():
        return np.asarray(s.to_numpy(), dtype=np.float64)
    raise E.not_numeric(func, s.name, what, dt)


def _probabilities(df: pl.DataFrame, cols: list[str], multi_cols: bool, func: str) -> np.ndarray:
    if multi_cols:
        mats = [_float_column(df[c], func, "class probability") for c in cols]
        p = np.ascontiguousarray(np.column_stack(mats))
        name: str | list[str] = cols
    else:
        s = df[cols[0]]
        name = cols[0]
        dt = s.dtype
        if isinstance(dt, pl.List):
            lens = s.list.len()
            k = int(lens.max())  # type: ignore[arg-type]
            bad = int((lens != k).sum())
            if bad:
                raise E.list_lengths_differ(func, name, bad, k)
            s = s.list.to_array(k)
            dt = s.dtype
        if isinstance(dt, pl.Array):
            inner = dt.inner
            if not (inner.is_float() or inner.is_integer()):  # type: ignore[union-attr]
                raise E.class_probabilities_not_numbers(func, name, inner)
            p = np.ascontiguousarray(s.to_numpy(), dtype=np.float64)
            if p.ndim != 2:
                raise ColumnTypeError(f"{func}: column {name!r} must be a 1-level Array of class probabilities.")
        else:
            p = _float_column(s, func, "probability")
    if p.ndim == 2 and p.shape[1] < 2:
        raise E.too_few_classes(func, name, p.shape[1])
    # one pass: values outside [0, 1] (NaN included) and, for class probabilities, row sums
    not_unit, bad_sums = V.count_bad_rows(p, SUM_TOLERANCE) if p.ndim == 2 else (V.count_not_unit(p), 0)
    if not_unit:
        per_row = (lambda m: m.any(axis=1)) if p.ndim == 2 else (lambda m: m)
        finite = np.isfinite(p)
        nonfinite = int(per_row(~finite).sum())
        outside = int(per_row(finite & ((p < 0.0) | (p > 1.0))).sum())
        lo, hi = (np.min(p[finite]), np.max(p[finite])) if outside else (0.0, 1.0)
        raise E.not_probabilities(func, name, nonfinite, outside, lo, hi)
    if bad_sums:
        sums = p.sum(axis=1)
        off = np.abs(sums - 1.0) > SUM_TOLERANCE
        worst = float(sums[off][np.argmax(np.abs(sums[off] - 1.0))])
        raise E.sums_not_one(func, name, int(off.sum()), worst, SUM_TOLERANCE)
    return p


def _labels(s: pl.Series, k: int, binary: bool, func: str) -> np.ndarray:
    dt = s.dtype
    name = s.name
    if dt == pl.Boolean:
        if not binary:
            raise E.boolean_multiclass_labels(func, name, k)
        return s.to_numpy().astype(np.uint8)
    if dt.is_integer():
        y = np.asarray(s.to_numpy())
        if binary and y.dtype.itemsize == 1 and not V.count_outside(y, 2):
            return y.view(np.uint8)
    elif dt.is_float():
        y = np.asarray(s.to_numpy(), dtype=np.float64)
        frac = ~np.isfinite(y) | (y != np.floor(np.where(np.isfinite(y), y, 0)))
        if frac.any():
            raise E.labels_not_whole(func, name, int(frac.sum()), binary, k)
    else:
        raise E.label_dtype(func, name, dt, binary, k)
    if V.count_outside(y, k):
        outside = (y < 0) | (y >= k)
        raise E.labels_outside(func, name, int(outside.sum()), binary, k, np.unique(y[outside])[:5].tolist())
    return y.astype(np.uint8 if binary else np.int32)


def check_finite_variable(values: np.ndarray, name: str, func: str) -> None:
    n_bad = int(values.shape[0] - np.count_nonzero(np.isfinite(values)))
    if n_bad:
        raise E.variable_not_finite(func, name, n_bad)


def _variable(s: pl.Series, func: str, check_finite: bool = True) -> tuple[np.ndarray, str]:
    """A variable column: float64 values (numeric) or int32 category codes (anything else)."""
    dt = s.dtype
    if dt.is_float() or dt.is_integer():
        v = np.asarray(s.to_numpy(), dtype=np.float64)
        if check_finite:
            check_finite_variable(v, s.name, func)
        kind = "numeric"
    elif dt == pl.Boolean or dt in (pl.String, pl.Categorical, pl.Enum) or isinstance(dt, (pl.Categorical, pl.Enum)):
        codes, _ = _encode(s)
        v, kind = codes.astype(np.int32), "categorical"
    else:
        raise E.variable_dtype(func, s.name, dt)
    return v, kind


def _weights(s: pl.Series, func: str, check_total: bool = True) -> np.ndarray:
    """The weights as float64, checked: finite and non-negative, and (``check_total``) not all 0."""
    w = _float_column(s, func, "weights")
    bad = ~np.isfinite(w) | (w < 0)
    if bad.any():
        raise E.bad_weights(func, s.name, int(bad.sum()))
    if check_total:
        check_group_weights(func, s.name, [w.max()], [w.size], None)  # max > 0 exactly when the sum is (no overflow)
    return w


def scale_weights(w: np.ndarray, groups: np.ndarray | None = None,
                  n_groups: int = 1) -> tuple[np.ndarray, float | np.ndarray]:
    """(weights / scale, scale): each group's weights divided by the power of two that puts the group's
    maximum in [1, 2) (``weight_scale``); without ``groups`` one scale (a float) for all.

    Dividing by a power of two is exact, so every sum and ratio of the scaled weights equals the
    one the caller's weights would give, except that it cannot overflow (weights near 1.8e308) or
    lose bits to subnormal products (weights below 2.2e-308). Every per-group figure depends on the
    ratios of the weights within its group only: scaling each group by its own maximum keeps a group
    whose weights sit far below another group's from underflowing to 0, and makes a group's result
    the same (bit for bit) when its weights are multiplied by any power of two.
    A group of all-zero weights keeps scale 1.0 (``check_group_weights`` refuses it).
    """
    if groups is None:
        e0 = int(weight_exponents([w.max() if w.size else 0.0])[0])
        return np.ldexp(w, -e0), float(np.ldexp(1.0, e0))
    tops = np.zeros(n_groups)
    np.maximum.at(tops, groups, w)
    e = weight_exponents(tops)
    scales = np.ldexp(1.0, e)
    if (e == e[0]).all():  # one exponent (always so without by): the scalar path, no per-row gather
        return np.ldexp(w, -int(e[0])), scales
    if e.min() >= -1022:  # 2^-e is a finite float64: one exact multiplication (rounds as ldexp does)
        return w * np.ldexp(1.0, -e).take(groups), scales
    return np.ldexp(w, -e.take(groups)), scales


def weight_exponents(tops: Any) -> np.ndarray:
    """For each group's largest weight ``top``: the e (int64) with top / 2^e in [1, 2), so 2^e is finite
    (e <= 1023) and nonzero (e >= -1074); 0 (scale 1.0) where top is not a positive finite number.
    The one rule behind ``Scored.weight_scale`` on every surface (eager, LazyFrame, Dask)."""
    tops = np.asarray(tops, dtype=np.float64)
    ok = np.isfinite(tops) & (tops > 0)
    return np.where(ok, np.frexp(np.where(ok, tops, 1.0))[1] - 1, 0).astype(np.int64)


def check_group_weights(func: str, weights: str, totals: np.ndarray, counts: np.ndarray,
                        keys: pl.DataFrame | None) -> None:
    """Refuse groups that have rows but whose weights are all 0 (every figure of theirs would be 0/0 = NaN).

    ``totals``: the weight sum of each group (any positive scale), ``counts`` its rows, ``keys`` the
    group key table (row g = group g; None: one group, the whole frame). One rule for every frame
    type: eager frames check it in ``resolve``, LazyFrame and Dask on their merged sums.
    """
    zero = np.flatnonzero(~(np.asarray(totals) > 0) & (np.asarray(counts) > 0))
    if zero.size == 0:
        return
    if keys is None:
        raise E.zero_weights(func, weights)
    shown = [", ".join(f"{c}={v!r}" for c, v in zip(keys.columns, keys.row(int(g)))) + f" ({rows(int(counts[g]))})"
             for g in zero[:5]]
    raise E.zero_weights(func, weights, shown, zero.size)


# --------------------------------------------------------------------------- groups


def check_key_dtype(func: str, name: str, dtype: pl.DataType) -> None:
    """Refuse a group key column whose values cannot be compared: Polars Object (arbitrary Python objects)."""
    if dtype == pl.Object or isinstance(dtype, pl.Object):
        raise ColumnTypeError(
            f"{func}: group key column {name!r} has dtype {dtype} (arbitrary Python objects), which cannot be "
            f"grouped or sorted. Cast it to a comparable type first, e.g. "
            f"pl.col({name!r}).map_elements(str, return_dtype=pl.String)."
        )


def key_expr(name: str, dtype: pl.DataType) -> pl.Expr:
    """A group key column as calframe groups it: float -0.0 becomes 0.0 and NaN becomes null (one missing key)."""
    c = pl.col(name)
    if not dtype.is_float():
        return c
    return pl.when(c.is_nan()).then(None).when(c == 0).then(pl.lit(0.0, dtype)).otherwise(c).alias(name)


def normalised_keys(df: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """The ``by`` columns of ``df`` with :func:`key_expr` applied."""
    return df.select([key_expr(c, df.schema[c]) for c in by])


def _nested(dtype: pl.DataType) -> bool:
    return isinstance(dtype, (pl.Struct, pl.List, pl.Array))


def _nested_group_codes(keys_df: pl.DataFrame) -> tuple[np.ndarray, int, pl.DataFrame]:
    """Group codes of key columns Arrow cannot hash (Struct, List, Array), by Polars' own equality and order."""
    by = keys_df.columns
    idx = fresh_name(by, "i")
    keys = keys_df.unique(maintain_order=True).sort(by, nulls_last=True, maintain_order=True)
    codes = keys_df.join(keys.with_row_index(idx), on=by, how="left", nulls_equal=True, maintain_order="left")[idx]
    return codes.to_numpy().astype(np.int32), keys.height, keys


#: integer keys spanning at most this many values are encoded by direct indexing instead of hashing
DIRECT_SPAN = 1 << 22


def _encode_direct(s: pl.Series) -> tuple[np.ndarray, pa.Array, np.ndarray] | None:
    """Integer keys over a small range: (int32 codes in ascending key order, sorted uniques, counts), or None."""
    if not s.dtype.is_integer() or s.null_count() or s.len() == 0:
        return None
    v = s.to_numpy()
    dtype = v.dtype
    lo, hi = int(v.min()), int(v.max())
    span = hi - lo + 1
    if span > DIRECT_SPAN:
        return None
    base = lo
    if dtype.kind == "u":  # offsets from the smallest key, taken in its own type: a UInt64 key >= 2**63 fits too
        v, base = (v - dtype.type(lo)).astype(np.int64), 0
    nchunks = int(max(1, min(8, (1 << 23) // span, v.shape[0] // (1 << 16) + 1)))
    hist = GK.int_histogram(v, v.dtype.type(base), span, nchunks)
    present = hist > 0
    remap = (np.cumsum(present) - 1).astype(np.int32)
    codes = GK.int_remap(v, v.dtype.type(base), remap)
    offsets = np.flatnonzero(present)
    uniques = offsets.astype(dtype) + dtype.type(lo) if dtype.kind == "u" else (offsets + lo).astype(dtype)
    return codes, pa.array(uniques), hist[present]


def _encode(s: pl.Series) -> tuple[np.ndarray, pa.Array]:
    """Hash-encode one key column: (int64 codes, arrow dictionary of values), nulls as a value of their own."""
    if s.dtype in (pl.Categorical, pl.Enum) or isinstance(s.dtype, (pl.Categorical, pl.Enum)):
        s = s.cast(pl.String)
    # (string_view, zero-copy from Polars, would save ~60 ms per 1e7 rows, but pyarrow 26's
    # dictionary_encode turns its nulls into "" there; large_string keeps them)
    arr = s.to_arrow()
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    enc = pc.dictionary_encode(arr, null_encoding="encode")
    codes = np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    return codes, enc.dictionary


def group_codes(df: pl.DataFrame, by: list[str]) -> tuple[np.ndarray, int, pl.DataFrame]:
    """Group codes for ``by`` columns, numbered in sorted key order.

    Returns ``(codes int32, n_groups, keys)`` where ``keys`` has one row per
    group, sorted by the key columns (nulls last), row ``g`` describing code ``g``.
    One integer column over a small range is encoded by direct indexing (no
    hashing, already in key order); anything else is hash-encoded and the
    small key table sorted. Float keys are normalised first (:func:`key_expr`);
    Struct / List / Array keys are grouped by Polars.
    """
    df = normalised_keys(df, by)
    if any(_nested(df.schema[c]) for c in by):
        return _nested_group_codes(df)
    if len(by) == 1:
        direct = _encode_direct(df[by[0]])
        if direct is not None:
            codes, uniques, _ = direct
            keys = pl.DataFrame([pl.Series(by[0], uniques).cast(df[by[0]].dtype)])
            return codes, keys.height, keys
    encoded = [_encode(df[c]) for c in by]
    codes, dicts = encoded[0][0], [encoded[0][1]]
    sizes = [len(encoded[0][1])]
    for c, d in encoded[1:]:
        codes = codes * len(d) + c
        dicts.append(d)
        sizes.append(len(d))
    if len(by) > 1:
        codes, uniques = pd.factorize(codes)
        # decode combined uniques into per-column codes
        parts = []
        rest = np.asarray(uniques, dtype=np.int64)
        for size in reversed(sizes):
            parts.append(rest % size)
            rest = rest // size
        col_codes = list(reversed(parts))
    else:
        col_codes = [np.arange(sizes[0], dtype=np.int64)]
    keys = pl.DataFrame(
        [pl.Series(name, d.take(pa.array(cc))).cast(df[name].dtype) for name, d, cc in zip(by, dicts, col_codes)]
    )
    n_groups = keys.height
    row = fresh_name(by, "i")
    order = keys.with_row_index(row).sort(by, nulls_last=True, maintain_order=True)[row]
    rank = np.empty(n_groups, dtype=np.int32)
    rank[order.to_numpy()] = np.arange(n_groups, dtype=np.int32)
    keys = keys[order.to_numpy()]
    return rank[codes], n_groups, keys
