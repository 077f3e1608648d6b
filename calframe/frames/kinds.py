"""What kind of frame an object is: the one frame detector of calframe (engines and surfaces ask it).

Nothing is imported here: a frame can only be of a library's type once that library has been imported, so an
object is tested against the classes of the modules already in ``sys.modules``.

>>> import polars as pl
>>> from calframe.frames.kinds import native_kind, is_dask_frame
>>> native_kind(pl.DataFrame({"a": [1]})), is_dask_frame(pl.DataFrame())
(None, False)
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["is_dask_frame", "is_duckdb_relation", "is_spark_frame", "native_kind"]

#: the frames the narwhals engine takes: (kind, module, class name)
NATIVE = (("pyarrow", "pyarrow", "Table"), ("duckdb", "duckdb", "DuckDBPyRelation"),
          ("ibis", "ibis.expr.types", "Table"), ("spark", "pyspark.sql", "DataFrame"),
          ("spark", "pyspark.sql.connect.dataframe", "DataFrame"))


def _instance(frame: Any, module: str, name: str) -> bool:
    cls = getattr(sys.modules.get(module), name, None)
    return isinstance(cls, type) and isinstance(frame, cls)


def native_kind(frame: Any) -> str | None:
    """"duckdb", "pyarrow", "ibis" or "spark" for a frame of the narwhals engine, else None."""
    for kind, module, name in NATIVE:
        if _instance(frame, module, name):
            return kind
    return None


def is_dask_frame(frame: Any) -> bool:
    """Whether ``frame`` is a Dask DataFrame (False whenever Dask has not been imported)."""
    return _instance(frame, "dask.dataframe", "DataFrame")


def is_spark_frame(frame: Any) -> bool:
    """Whether ``frame`` is a PySpark DataFrame (classic or Spark Connect)."""
    return native_kind(frame) == "spark"


def is_duckdb_relation(frame: Any) -> bool:
    """Whether ``frame`` is a DuckDB relation."""
    return _instance(frame, "duckdb", "DuckDBPyRelation")
