"""The engines behind the seam (docs/design.md): each turns a frame and a parsed
:class:`~calframe.request.Request` into per (group, bin) sums and hands them to
:mod:`calframe.figures`.

- :mod:`.eager`: numba kernels over numpy / Arrow buffers (Polars and pandas frames);
- :mod:`.lazy`: Polars' streaming engine (LazyFrames; the result is a LazyFrame);
- :mod:`.dask`: the eager kernels per partition, sums added by Dask;
- :mod:`.narwhals`: DuckDB relations, PySpark DataFrames, Ibis tables and pyarrow Tables, summed in their own
  engine through narwhals (the result in the input's type).

:func:`run_binned` picks the engine by the frame's type.
"""

from __future__ import annotations

from typing import Any

from .. import figures as F
from .. import request as R
from ..frames.kinds import is_dask_frame
from . import eager
from . import lazy
from . import narwhals


def run_binned(req: R.Request, frame: Any, figures: dict[str, eager.Figure] | None = None) -> Any:
    """A request whose figure comes from bin sums (:data:`figures.BINNED`), on any frame: the Dask engine, the
    narwhals engine (DuckDB, Spark, Ibis, pyarrow), streamed sums for a LazyFrame that can stream, else the eager
    engine."""
    if is_dask_frame(frame):
        return dask_engine().run(frame, req, figures)
    if narwhals.native_kind(frame) is not None:
        return narwhals.run(frame, req)
    if req.variable is not None or not req.variables:
        F.check_by_names(req.func, req.by, F.result_columns(req), frame)
        streamed = lazy.run(frame, req)
        if streamed is not None:
            return streamed
    return eager._evaluate(req, frame, figures)


def dask_engine() -> Any:
    """The Dask engine (imported when a Dask frame arrives: importing calframe never imports Dask)."""
    from . import dask

    return dask
