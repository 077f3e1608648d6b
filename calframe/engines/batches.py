"""``calframe.apply`` inside the engine that holds the rows: PySpark DataFrames and DuckDB relations.

The fitted recalibrator is sent to the engine's Python workers and every batch
of rows is recalibrated there by :func:`calframe.apply` on that batch (the
array code of an eager call, so the same numbers): PySpark runs it in
``DataFrame.mapInArrow`` (Arrow record batches), DuckDB in
``DuckDBPyRelation.map`` (chunks of rows as pandas frames). The result has the
input's type and stays lazy: a PySpark DataFrame or a DuckDB relation with the
recalibrated column(s) added (a column of the same name is replaced in place)
and every other column as it was. Nothing is collected to the client.

Missing columns are reported by the call, and so are rows of groups a
per-group recalibrator was not fitted on (``unknown="raise"``): the engine
counts the rows of each group at the call (one aggregate over the key columns,
:func:`_check_groups`), so the error is calframe's, with the eager call's count
(raised in a batch, it would reach the caller inside the engine's exception,
counting that batch's rows). Other errors in the data (a probability outside
[0, 1]) are raised when the engine runs the plan, with calframe's message
(Spark wraps it in its ``PythonException``, DuckDB in its
``InvalidInputException``).

Neither engine is imported here: a frame can only be a PySpark DataFrame or a
DuckDB relation once its package has been imported.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .._imports import pd  # imported at first use
import polars as pl
import pyarrow as pa

from .._names import fresh_name
from ..families.applying import apply_columns, apply_rows, group_index
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


def _check_groups(frame: Any, recalibrator: Any, kwargs: dict[str, Any]) -> None:
    """A per-group recalibrator with ``unknown="raise"``: the rows of each group counted now by the engine (one
    aggregate over the key columns; nothing else is read), and those of groups it was not fitted on raise the
    eager call's error (:func:`calframe.families.applying.group_index`)."""
    if recalibrator.method != "per_group" or kwargs["unknown"] != "raise":
        return
    by = list(recalibrator.meta.get("by") or [])
    rows = fresh_name(by, "rows")
    if is_spark_frame(frame):
        from pyspark.sql import functions as SF

        counts = pl.from_arrow(frame.groupBy(*by).agg(SF.count(SF.lit(1)).alias(rows)).toArrow())
    else:
        cols = ", ".join(_quoted(c) for c in by)
        counts = frame.aggregate(f"{cols}, count(*) AS {_quoted(rows)}", cols).pl()
    group_index(recalibrator, counts, "raise", counts[rows].to_numpy())


def _quoted(name: str) -> str:
    """A DuckDB identifier."""
    return '"' + name.replace('"', '""') + '"'


# --------------------------------------------------------------------------- PySpark


def _spark(sdf: Any, recalibrator: Any, kwargs: dict[str, Any], new: dict[str, pl.DataType]) -> Any:
    from pyspark.sql import types as T
    from pyspark.sql.pandas.types import to_arrow_schema

    zone = sdf.sparkSession.conf.get("spark.sql.session.timeZone")  # a timestamp column's Arrow type needs it
    _check(pl.from_arrow(to_arrow_schema(sdf.schema, timezone=zone).empty_table()), recalibrator, kwargs)
    _check_groups(sdf, recalibrator, kwargs)
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
    out = apply_rows(pl.from_arrow(batch), recalibrator, **kwargs, part="batch") if batch.num_rows else None
    for c, dtype in arrow.items():
        values = out[c].to_arrow().cast(dtype) if out is not None else pa.array([], type=dtype)
        i = batch.schema.get_field_index(c)
        batch = batch.set_column(i, c, values) if i >= 0 else batch.append_column(c, values)
    return batch


# --------------------------------------------------------------------------- DuckDB


def _duckdb(rel: Any, recalibrator: Any, kwargs: dict[str, Any], new: dict[str, pl.DataType]) -> Any:
    import duckdb  # a relation exists: imported

    empty = rel.limit(0).df()
    _check(empty, recalibrator, kwargs)
    _check_groups(rel, recalibrator, kwargs)
    # the types themselves: a type's name is refused for a relation of the default connection (duckdb 2.0)
    schema = dict(zip(rel.columns, rel.types))
    for c, dtype in new.items():
        schema[c] = duckdb.sqltype(f"DOUBLE[{dtype.size}]" if isinstance(dtype, pl.Array) else "DOUBLE")

    def chunk(df: pd.DataFrame) -> pd.DataFrame:
        if len(df):
            return apply_rows(df, recalibrator, **kwargs, part="batch")
        return df.assign(**{c: pd.Series([], dtype=object if isinstance(t, pl.Array) else "float64")
                            for c, t in new.items()})

    return rel.map(chunk, schema=schema)
