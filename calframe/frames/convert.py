"""The frames calframe reads in this process (a Polars DataFrame or LazyFrame, a pandas DataFrame) read,
measured and converted, whatever their kind: the one place outside the engines that asks what kind of
in-memory frame it holds (issue 24). :mod:`calframe.frames.kinds` says what kind a frame is; this module acts
on it. It sits at the bottom of the layers (docs/design.md, "Layers"): it imports Polars, pyarrow, numpy,
:mod:`calframe._imports`, :mod:`calframe._errors` and :mod:`.kinds` only.

>>> import polars as pl
>>> from calframe.frames import convert
>>> lf = pl.LazyFrame({"prob": [0.2, 0.7], "label": [0, 1]})
>>> convert.height(lf), convert.columns(lf), convert.flavor(lf)
(2, ['prob', 'label'], 'polars')
>>> convert.to_polars(lf).shape
(2, 2)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from .._errors import ColumnTypeError
from .._imports import pd  # pandas: imported at first use
from .kinds import is_pandas_frame

__all__ = ["flavor", "gives_floats", "columns", "schema", "height", "collect", "to_polars", "in_flavor_of",
           "select", "from_pandas", "from_arrow", "as_polars", "lazy_select", "rows_where", "drop_nulls", "with_columns"]


def flavor(frame: Any) -> str | None:
    """``"polars"`` for a Polars DataFrame or LazyFrame, ``"pandas"`` for a pandas DataFrame, else None."""
    if isinstance(frame, (pl.DataFrame, pl.LazyFrame)):
        return "polars"
    return "pandas" if is_pandas_frame(frame) else None


def gives_floats(frame: Any) -> bool:
    """Whether a figure without ``by`` is a float on ``frame``: not on a LazyFrame, whose figures come back as
    one row (``n`` and the figure), lazy (spec section 8, "Lazy in, lazy out")."""
    return not isinstance(frame, pl.LazyFrame)


def columns(frame: Any) -> list[str]:
    """The column names a call can use: every Polars name; a pandas frame's string labels only."""
    if isinstance(frame, pl.LazyFrame):
        return list(frame.collect_schema().names())
    if isinstance(frame, pl.DataFrame):
        return list(frame.columns)
    return [c for c in frame.columns if isinstance(c, str)]


def schema(frame: Any, cols: Sequence[str], func: str = "calframe") -> dict[str, pl.DataType]:
    """The Polars types of ``cols`` as calframe reads them (a pandas frame's: its first row converted)."""
    if isinstance(frame, (pl.DataFrame, pl.LazyFrame)):
        full = frame.collect_schema()
        return {c: full[c] for c in cols}
    return dict(select(frame.head(1), list(cols), func).schema)


def height(frame: Any) -> int:
    """The number of rows (a LazyFrame's counted by Polars)."""
    return frame.select(pl.len()).collect().item() if isinstance(frame, pl.LazyFrame) else len(frame)


def collect(x: Any) -> Any:
    """A LazyFrame's result as a DataFrame; anything else as it is."""
    return x.collect() if isinstance(x, pl.LazyFrame) else x


def to_polars(x: Any, what: str = "calframe") -> pl.DataFrame:
    """A Polars or pandas frame (a result) as an eager Polars frame: a LazyFrame collected, pandas converted."""
    if isinstance(x, (pl.DataFrame, pl.LazyFrame)):
        return collect(x)
    if is_pandas_frame(x):
        return pl.from_pandas(x)
    raise TypeError(f"{what}: expected a Polars or pandas DataFrame, got {type(x).__name__}.")


def in_flavor_of(frame: Any, out: pl.DataFrame | pl.LazyFrame) -> Any:
    """A Polars result ``out`` in ``frame``'s flavor: as it is for a LazyFrame, else collected (pandas: converted
    with ``to_pandas()``)."""
    if isinstance(frame, pl.LazyFrame):
        return out
    got = collect(out)
    return got.to_pandas() if is_pandas_frame(frame) else got


def _pandas_order_key(s: pd.Series) -> pd.Series | None:
    """A pandas Period or Interval column (or a Categorical of them) as ordered string categories, else None."""
    dt = s.dtype
    inner = dt.categories.dtype if isinstance(dt, pd.CategoricalDtype) else dt
    if not isinstance(inner, (pd.PeriodDtype, pd.IntervalDtype)):
        return None
    cat = s if isinstance(dt, pd.CategoricalDtype) else s.astype("category")  # categories sorted
    return cat.cat.rename_categories([str(c) for c in cat.cat.categories])


def _sliced_with_nulls(chunk: pa.FixedSizeListArray) -> bool:
    """Whether a fixed-size list array holding nulls is a slice of its values (an offset, or fewer rows than
    its values hold), which Polars misreads: it measures the validity against all the values ("validity mask
    length must be equal to the number of values divided by size")."""
    whole = chunk.offset == 0 and len(chunk.values) == len(chunk) * chunk.type.list_size
    return chunk.null_count > 0 and not whole


def _rebased(arr: pa.ChunkedArray) -> pa.ChunkedArray | None:
    """A fixed-size list column with chunks that are slices holding nulls (:func:`_sliced_with_nulls`), those
    chunks copied (their own values, from offset 0); None for any other column (read as it is). Every Dask
    partition of an Arrow-backed pandas frame is such a slice, and so are ``df.iloc[3:]`` and ``table.slice(3)``."""
    if not pa.types.is_fixed_size_list(arr.type) or not any(map(_sliced_with_nulls, arr.chunks)):
        return None
    return pa.chunked_array([pa.concat_arrays([c]) if _sliced_with_nulls(c) else c for c in arr.chunks],
                            type=arr.type)


def from_arrow(table: pa.Table) -> pl.DataFrame:
    """A pyarrow Table as Polars, its sliced fixed-size list columns with nulls copied first (:func:`_rebased`)."""
    for i, arr in enumerate(table.columns):
        copied = _rebased(arr)
        if copied is not None:
            table = table.set_column(i, table.field(i), copied)
    return pl.from_arrow(table)


def from_pandas(frame: pd.DataFrame, cols: list[str], func: str) -> pl.DataFrame:
    """pandas columns -> Polars (NaN kept as NaN), Period / Interval columns as Enum of their strings in order, the
    sliced fixed-size list columns with nulls of Arrow-backed ones copied first (:func:`_rebased`)."""
    sub = frame.loc[:, cols]
    special = {c: _pandas_order_key(sub[c]) for c in cols}
    special = {c: v for c, v in special.items() if v is not None}
    copied = {c: _rebased(sub[c].array.__arrow_array__()) for c in cols if isinstance(sub[c].dtype, pd.ArrowDtype)}
    copied = {c: pd.Series(pd.arrays.ArrowExtensionArray(v), index=sub.index) for c, v in copied.items()
              if v is not None}
    if special or copied:
        sub = sub.assign(**special, **copied)
    try:
        out = pl.from_pandas(sub, nan_to_null=False)
    except Exception:
        for c in cols:  # find the column Polars / pyarrow cannot read
            try:
                pl.from_pandas(sub[[c]], nan_to_null=False)
            except Exception as exc:
                kinds = ""
                if sub[c].dtype == object:
                    kinds = f" holding Python values of types {sorted({type(v).__name__ for v in sub[c].dropna()})}"
                raise ColumnTypeError(
                    f"{func}: column {c!r} has pandas dtype {sub[c].dtype}{kinds}, which calframe cannot read "
                    f"({type(exc).__name__}: {str(exc)[:120]}). Convert it first, e.g. "
                    f"df[{c!r}].astype(str) for a group key, or df[{c!r}].astype(float) for numbers."
                ) from None
        raise
    for c, v in special.items():
        out = out.with_columns(out[c].cast(pl.Enum(list(v.cat.categories))))
    return out


def select(frame: Any, cols: list[str], func: str = "calframe", nan_null: Sequence[str] = ()) -> pl.DataFrame:
    """The needed columns as an eager Polars frame (zero-copy where Polars allows).

    ``nan_null``: columns whose NaN, in a numpy-backed pandas float column (pandas' missing value
    there), become nulls.
    """
    if isinstance(frame, pl.LazyFrame):
        return frame.select(cols).collect()
    if isinstance(frame, pl.DataFrame):
        return frame.select(cols)
    out = from_pandas(frame, cols, func)
    nan = [c for c in dict.fromkeys(nan_null) if isinstance(frame[c].dtype, np.dtype) and frame[c].dtype.kind == "f"]
    return out.with_columns(pl.col(nan).fill_nan(None)) if nan else out


def as_polars(frame: Any, cols: list[str], func: str = "calframe",
              nan_null: Sequence[str] = ()) -> pl.DataFrame | pl.LazyFrame:
    """A Polars frame as it is (every column; a LazyFrame stays lazy); a pandas frame's ``cols`` converted as
    :func:`select` converts them."""
    if isinstance(frame, (pl.DataFrame, pl.LazyFrame)):
        return frame
    return select(frame, cols, func, nan_null)


def lazy_select(frame: Any, cols: list[str], func: str) -> pl.LazyFrame:
    """The needed columns as a LazyFrame (pandas converted as every calframe function converts it)."""
    if isinstance(frame, pl.LazyFrame):
        return frame.select(cols)
    if isinstance(frame, pl.DataFrame):
        return frame.lazy().select(cols)
    if is_pandas_frame(frame):
        return from_pandas(frame, cols, func).lazy()
    raise ColumnTypeError(f"{func}: expected a Polars DataFrame / LazyFrame or a pandas DataFrame; got "
                          f"{type(frame).__name__}.")


def rows_where(frame: Any, mask: pl.Series) -> Any:
    """The rows of ``frame`` where the Boolean ``mask`` (one entry per row) is True (null is not), in ``frame``'s
    kind."""
    if is_pandas_frame(frame):
        return frame.iloc[np.flatnonzero(mask.fill_null(False).to_numpy())]
    return frame.filter(mask)


def drop_nulls(frame: Any, subset: list[str]) -> Any:
    """``frame`` without the rows with a missing value in ``subset`` (pandas: ``dropna``)."""
    return frame.dropna(subset=subset) if is_pandas_frame(frame) else frame.drop_nulls(subset=subset)


def with_columns(frame: Any, cols: Sequence[pl.Series]) -> Any:
    """An eager Polars or pandas frame with the columns ``cols`` added (replaced when present): a pandas frame's
    copy, an Array column as a column of numpy arrays."""
    if not is_pandas_frame(frame):
        return frame.with_columns(cols)
    out = frame.copy()
    for s in cols:
        out[s.name] = list(s.to_numpy()) if s.dtype == pl.Array or isinstance(s.dtype, pl.Array) else s.to_numpy()
    return out
