"""The engine of DuckDB relations, PySpark DataFrames, Ibis tables and pyarrow Tables: the frame's own engine
sums where the rows are, through narwhals, and the result comes back in the input's type. The engine protocol
(docs/design.md, "Recipe: add an engine"):

- ``CAPABILITIES``, ``supports``, ``refuse``, ``collect``, ``returned``: :mod:`calframe.engines.native.sums`'s (the
  route's answers, and the public functions' entry);
- ``binned``, ``grid``, ``vector``, ``table``, ``moment_sums``: one per state, the passes of
  :mod:`calframe.engines.native.sums` (bin sums, their moments), :mod:`calframe.engines.plan.row_means` (row means,
  disparity's figures per group), :mod:`calframe.engines.plan.grid_sums` (the smooth ECE's grids) and
  :mod:`calframe.engines.plan.vector_sums` (GECE's cells);
- ``Engine``: the frame as a narwhals LazyFrame (the families' steps read small results back with it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...request import Request
from ..plan import grid_sums as _grid_sums, row_means as _row_means, vector_sums as _vector_sums
from . import sums as NW
from .sums import CAPABILITIES, Engine, collect, refuse, returned, supports

__all__ = ["NAME", "CAPABILITIES", "supports", "refuse", "collect", "returned", "binned", "grid", "vector", "table",
           "moment_sums", "moment_means", "Engine"]

#: the engine's short name (the families' steps: ``engines.route(frame, here, narwhals=...)``)
NAME = "narwhals"


def binned(req: Request, frame: Any, figures: dict | None = None) -> Any:
    """Bin sums (a CE figure, the reliability table) or row means (the companions, summary) in the frame's
    engine."""
    if req.kind in _row_means.KINDS:
        return _row_means.binned(req, frame, figures)
    return NW.run(frame, req)


def grid(req: Request, frame: Any, figures: dict) -> Any:
    """The smooth ECE's grid sums in the frame's engine."""
    return _grid_sums.run_native(frame, req)


def vector(req: Request, frame: Any, here: Callable[[Any], Any], selects: bool, dask: Callable[[Any], Any]) -> Any:
    """GECE's cell sums in the frame's engine."""
    return _vector_sums.run_native(frame, req, selects)


def table(req: Request, frame: Any, finish: Callable[..., Any], schema: dict[str, Any], rows: Callable[[Any], Any],
          native: bool) -> Any:
    """Disparity's figures per group in the frame's type: with ``ci=`` the table of ``rows`` (its sums and moments
    from the frame's engine: :func:`moment_sums`), else ``finish`` of the figures summed there."""
    if req.ci is not None:
        return Engine(frame).out(rows(frame))
    return _row_means.table(NW.native_kind(frame), frame, req, finish, schema, True, native)


def moment_means(req: Request, frame: Any, figures: dict, keep: dict | None = None) -> tuple:
    """``(values, counts, keys, bounds, sizes)`` of a companion's or summary's ``ci=``, each figure from the moments
    of its own state computed in the frame's engine (:func:`calframe.engines.plan.row_means.moment_state`)."""
    return _row_means.moment_state(req, figures, *_row_means.narwhals_states(NW.Engine(frame), req), keep)


def moment_sums(req: Request, frame: Any) -> tuple:
    """``(sums, keys, counts, scale, moments)`` of ``req``'s bins from the frame's engine."""
    eng = Engine(frame)
    return (*NW.binned_sums(eng, req, moments=True)[:4], eng.moments)
