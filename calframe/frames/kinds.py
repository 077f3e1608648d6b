"""What kind of frame an object is, as the engines' registry (:mod:`calframe.registry`) detects it: the one
frame detector of calframe (engines and surfaces ask it).

>>> import polars as pl
>>> from calframe.frames.kinds import native_kind, is_dask_frame
>>> native_kind(pl.DataFrame({"a": [1]})), is_dask_frame(pl.DataFrame())
(None, False)
"""

from __future__ import annotations

from typing import Any

from ..registry import ENGINES, instance, kind_of

__all__ = ["is_dask_frame", "is_duckdb_relation", "is_pandas_frame", "is_spark_frame", "kind_of", "native_kind"]

#: the kinds of frame the narwhals engine takes
NARWHALS = tuple(dict.fromkeys(e.kind for e in ENGINES if e.engine == "calframe.engines.native"))


def native_kind(frame: Any) -> str | None:
    """"duckdb", "pyarrow", "ibis" or "spark" for a frame of the narwhals engine, else None."""
    kind = kind_of(frame)
    return kind if kind in NARWHALS else None


def is_dask_frame(frame: Any) -> bool:
    """Whether ``frame`` is a Dask DataFrame (False whenever Dask has not been imported)."""
    return instance(frame, "dask.dataframe", "DataFrame")


def is_pandas_frame(frame: Any) -> bool:
    """Whether ``frame`` is a pandas DataFrame, without importing pandas (False whenever pandas has not been
    imported)."""
    return instance(frame, "pandas", "DataFrame")


def is_spark_frame(frame: Any) -> bool:
    """Whether ``frame`` is a PySpark DataFrame (classic or Spark Connect)."""
    return native_kind(frame) == "spark"


def is_duckdb_relation(frame: Any) -> bool:
    """Whether ``frame`` is a DuckDB relation."""
    return instance(frame, "duckdb", "DuckDBPyRelation")
