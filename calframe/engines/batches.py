"""``calframe.apply`` inside the engine that holds the rows: PySpark DataFrames and DuckDB relations.

The fitted recalibrator is sent to the engine's Python workers and every batch
of rows is recalibrated there by :func:`calframe.apply` on that batch (the
array code of an eager call, so the same numbers): PySpark runs it in
``DataFrame.mapInArrow`` (Arrow record batches), DuckDB in
``DuckDBPyRelation.map`` (chunks of rows as pandas frames). The result has the
input's type and stays lazy: a PySpark DataFrame or a DuckDB relation with the
recalibrated column(s) added (a column of the same name is replaced in place)
and every other column as it was. Nothing is collected to the client.

Missing columns are reported by the call; errors in the data (a probability
outside [0, 1], a row of a group the recalibrator was not fitted on) are
raised when the engine runs the plan, with calframe's message (Spark wraps it
in its ``PythonException``).

Neither engine is imported here: a frame can only be a PySpark DataFrame or a
DuckDB relation once its package has been imported.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .._imports import pd  # imported at first use
import polars as pl
import pyarrow as pa

from ..families.applying import apply_columns, apply_rows
from ..frames.kinds import is_duckdb_relation, is_spark_frame
from .._errors import EmptyInputError

__all__ = ["is_spark_frame", "is_duckdb_relation", "runs_apply", "apply"]


def runs_apply(frame: Any) -> bool:
    """Whether :func:`apply` takes ``frame``."""
    return is_spark_frame(frame) or is_duckdb_relation(frame)


def apply(frame: Any, recalibrator: Any, kwargs: dict[str, Any]) -> Any:
    """:func:`calframe.apply` (which checked ``recalibrator`` and named the output ``kwargs["name"]``) on a PySpark
    DataFrame or a DuckDB relation: a lazy frame of the same type with the recalibrated column(s)."""
    new = apply_columns(recalibrator, kwargs["name"])
    if is_spark_frame(frame):
        return _spark(frame, recalibrator, kwargs, new)
    return _duckdb(frame, recalibrator, kwargs, new)


def _check(empty: Any, recalibrator: Any, kwargs: dict[str, Any]) -> None:
    """Report now, on the frame's empty schema, what does not depend on the rows (missing columns, wrong width)."""
    try:
        apply_rows(empty, recalibrator, **kwargs)
    except EmptyInputError:
        pass


# --------------------------------------------------------------------------- PySpark


def _spark(sdf: Any, recalibrator: Any, kwargs: dict[str, Any], new: dict[str, pl.DataType]) -> Any:
    from pyspark.sql import types as T
    from pyspark.sql.pandas.types import to_arrow_schema

    zone = sdf.sparkSession.conf.get("spark.sql.session.timeZone")  # a timestamp column's Arrow type needs it
    _check(pl.from_arrow(to_arrow_schema(sdf.schema, timezone=zone).empty_table()), recalibrator, kwargs)
    fields = {f.name: f for f in sdf.schema.fields}
    arrow: dict[str, pa.DataType] = {}
    for c, dtype in new.items():
        is_array = isinstance(dtype, pl.Array)
        fields[c] = T.StructField(c, T.ArrayType(T.DoubleType()) if is_array else T.DoubleType())
        arrow[c] = pa.list_(pa.float64()) if is_array else pa.float64()

    def batches(it: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in it:
            yield _recalibrated(batch, recalibrator, kwargs, arrow)

    return sdf.mapInArrow(batches, T.StructType(list(fields.values())))


def _recalibrated(batch: pa.RecordBatch, recalibrator: Any, kwargs: dict[str, Any],
                  arrow: dict[str, pa.DataType]) -> pa.RecordBatch:
    """``batch`` with the recalibrated columns (of the Arrow types ``arrow``) set or appended."""
    out = apply_rows(pl.from_arrow(batch), recalibrator, **kwargs) if batch.num_rows else None
    for c, dtype in arrow.items():
        values = out[c].to_arrow().cast(dtype) if out is not None else pa.array([], type=dtype)
        i = batch.schema.get_field_index(c)
        batch = batch.set_column(i, c, values) if i >= 0 else batch.append_column(c, values)
    return batch


# --------------------------------------------------------------------------- DuckDB


def _duckdb(rel: Any, recalibrator: Any, kwargs: dict[str, Any], new: dict[str, pl.DataType]) -> Any:
    empty = rel.limit(0).df()
    _check(empty, recalibrator, kwargs)
    schema = dict(zip(rel.columns, map(str, rel.types)))
    for c, dtype in new.items():
        schema[c] = f"DOUBLE[{dtype.size}]" if isinstance(dtype, pl.Array) else "DOUBLE"

    def chunk(df: pd.DataFrame) -> pd.DataFrame:
        if len(df):
            return apply_rows(df, recalibrator, **kwargs)
        return df.assign(**{c: pd.Series([], dtype=object if isinstance(t, pl.Array) else "float64")
                            for c, t in new.items()})

    return rel.map(chunk, schema=schema)
