"""What the engine tests share: a frame with small cells, a stand-in that fails when the rows are collected, and
the comparison of an engine's result with eager Polars'."""

from __future__ import annotations

import numpy as np
import polars as pl


def small_cells_frame(*, power: float, top: float, last: float, n: int = 3000, seed: int = 0) -> pl.DataFrame:
    """``n`` rows in 3 groups (label ~ Bernoulli(prob ** power), gamma weights) with the probabilities clipped to
    ``top``, plus a group of one row and a bin of one row in group 0 (its only row, at ``last``): the small cells
    whose rows an engine brings back in a second, bounded pass."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    df = pl.DataFrame({"prob": p, "label": (rng.uniform(size=n) < p ** power).astype(np.int8),
                       "g": rng.integers(0, 3, n), "w": rng.gamma(2.0, 1.0, n)})
    extra = pl.DataFrame({"prob": [0.97, last], "label": [0, 1], "g": [9, 0], "w": [2.0, 0.5]}, schema=df.schema)
    return pl.concat([df.with_columns(pl.col("prob").clip(0.0, top)), extra])


def refuse_rows(*args: object, **kwargs: object) -> None:
    """Put in place of the function that would bring the rows into memory."""
    raise AssertionError("the rows were collected")


def assert_same(got: pl.DataFrame, want: pl.DataFrame, *, atol: float = 1e-14, as_text: bool = False) -> None:
    """The same columns; floats to 1e-12 (relative), the others equal (compared as text with ``as_text``)."""
    assert got.columns == want.columns
    for c in want.columns:
        if want[c].dtype == pl.Float64:
            np.testing.assert_allclose(got[c], want[c], rtol=1e-12, atol=atol, err_msg=c)
        elif as_text:
            assert [str(v) for v in got[c].to_list()] == [str(v) for v in want[c].to_list()], c
        else:
            assert got[c].to_list() == want[c].to_list(), c


def result_to_polars(out: object) -> pl.DataFrame:
    """An engine's result as a Polars frame: a LazyFrame collected, a Dask result computed, a DuckDB relation,
    an Ibis table, a Spark DataFrame or a pyarrow Table converted."""
    if isinstance(out, pl.LazyFrame):
        return out.collect()
    if hasattr(out, "compute"):
        return pl.from_pandas(out.compute())
    if hasattr(out, "pl"):
        return out.pl()
    if hasattr(out, "to_pyarrow"):
        return pl.from_arrow(out.to_pyarrow())
    if hasattr(out, "toArrow"):
        return pl.from_arrow(out.toArrow())
    return pl.from_arrow(out)


def native_frame(kind: str, df: pl.DataFrame) -> object:
    """``df`` as the frame of ``kind``: lazy, duckdb (a relation of its own connection), pyarrow, dask (3
    partitions) or ibis (a memtable)."""
    if kind == "lazy":
        return df.lazy()
    if kind == "duckdb":
        import duckdb

        return duckdb.connect().from_arrow(df.to_arrow())
    if kind == "pyarrow":
        return df.to_arrow()
    if kind == "dask":
        import dask.dataframe as dd

        return dd.from_pandas(df.to_pandas(), npartitions=3)
    import ibis

    return ibis.memtable(df.to_arrow())
