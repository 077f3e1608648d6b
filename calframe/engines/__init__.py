"""The engines behind the seam (docs/design.md): each turns a frame and a parsed
:class:`~calframe.request.Request` into per (group, bin) sums and hands them to
:mod:`calframe.figures`.

- :mod:`.eager`: numba kernels over numpy / Arrow buffers (Polars and pandas frames);
- :mod:`.lazy`: Polars' streaming engine (LazyFrames; the result is a LazyFrame);
- :mod:`.dask`: the eager kernels per partition, sums added by Dask;
- :mod:`.narwhals`: DuckDB relations, PySpark DataFrames, Ibis tables and pyarrow Tables, summed in their own
  engine through narwhals (the result in the input's type).

:func:`run_binned` asks the registry (:mod:`calframe.registry`) for the engine of the frame's kind; each engine
module has ``CAPABILITIES`` and ``binned(req, frame, figures)`` (and may have ``call``, its entry for a public
function). :func:`run_grid` does the same for the smooth ECE's grid sums (``_grid_sums.py``, ``_grid_dask.py``).
"""

from __future__ import annotations

from typing import Any

from .. import registry
from .. import request as R
from . import _grid_sums
from . import eager


def run_binned(req: R.Request, frame: Any, figures: dict[str, eager.Figure] | None = None) -> Any:
    """A request whose figure comes from bin sums (:data:`figures.BINNED`), on any frame: the ``binned`` of the
    engine the registry (:mod:`calframe.registry`) names for the frame's kind: Dask's partitions, the narwhals
    engine (DuckDB, Spark, Ibis, pyarrow), streamed sums for a LazyFrame that can stream, else the eager engine."""
    kind = registry.kind_of(frame)
    engine = eager if kind is None else registry.engine(kind)
    return engine.binned(req, frame, figures)


def run_grid(req: R.Request, frame: Any, figures: dict[str, eager.Figure]) -> Any:
    """A request whose figure comes from grid sums (the smooth ECE's state, ``grid_sums``), on any frame: those of
    the engine the registry names for the frame's kind (``_grid_sums.py``: a LazyFrame, streamed, and the narwhals
    engine's frames; ``_grid_dask.py``: Dask's partitions), else the eager engine (``figures``: its figure, which
    a bootstrap or a collected frame runs)."""
    kind = registry.kind_of(frame)
    engine = None if kind is None else registry.engine(kind).__name__.rsplit(".", 1)[1]
    if engine == "dask":
        from . import _grid_dask

        return _grid_dask.run(frame, req, figures)
    if engine == "narwhals":
        return _grid_sums.run_native(frame, req)
    if engine == "lazy":
        return _grid_sums.streamed(req, frame, figures)
    return eager._evaluate(req, frame, figures)


def dask_engine() -> Any:
    """The Dask engine (imported when a Dask frame arrives: importing calframe never imports Dask)."""
    from . import dask

    return dask
