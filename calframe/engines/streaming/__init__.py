"""The engine of a Polars LazyFrame: Polars' streaming engine sums where the rows are, and the result is a
LazyFrame (spec section 8, "Lazy in, lazy out"). The engine protocol (docs/design.md, "Recipe: add an engine"):

- ``CAPABILITIES``, ``supports``, ``refuse``, ``collect``: :mod:`calframe.engines.streaming.streamed`'s (the route's answers);
- ``binned``, ``grid``, ``vector``, ``table``, ``moment_sums``: one per state, the passes of
  :mod:`calframe.engines.streaming.streamed` (bin sums, their moments), :mod:`calframe.engines.plan.row_means` (row means, disparity's
  figures per group), :mod:`calframe.engines.plan.grid_sums` (the smooth ECE's grids) and
  :mod:`calframe.engines.plan.vector_sums` (GECE's cells).

>>> import polars as pl, calframe
>>> lf = pl.LazyFrame({"prob": [0.2, 0.9], "label": [0, 1]})
>>> type(calframe.ece(lf)).__name__
'LazyFrame'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl

from ...request import Request
from ..plan import grid_sums as _grid_sums, row_means as _row_means, vector_sums as _vector_sums
from . import streamed as LZ
from .streamed import CAPABILITIES, collect, refuse, supports

__all__ = ["NAME", "CAPABILITIES", "supports", "refuse", "collect", "binned", "grid", "vector", "table",
           "moment_sums", "moment_means"]

#: the engine's short name (the families' steps: ``engines.route(frame, here, lazy=...)``)
NAME = "lazy"


def binned(req: Request, frame: pl.LazyFrame, figures: dict | None = None) -> Any:
    """Bin sums (a CE figure, the reliability table) or row means (the companions, summary), streamed."""
    if req.kind in _row_means.KINDS:
        return _row_means.binned(req, frame, figures)
    return LZ.binned(req, frame, figures)


def grid(req: Request, frame: pl.LazyFrame, figures: dict) -> Any:
    """The smooth ECE's grid sums, streamed."""
    return _grid_sums.streamed(req, frame, figures)


def vector(req: Request, frame: pl.LazyFrame, here: Callable[[Any], Any], selects: bool,
           dask: Callable[[Any], Any]) -> Any:
    """GECE's cell sums, streamed (``here(frame)``, the eager call on the collected columns, when the plan cannot
    stream them: a List column of probabilities, top-k of many classes)."""
    out = _vector_sums.run_lazy(frame, req, selects)
    return out if out is not None else here(frame)


def table(req: Request, frame: pl.LazyFrame, finish: Callable[..., Any], schema: dict[str, Any],
          rows: Callable[[Any], Any], native: bool) -> Any:
    """Disparity's figures per group as a LazyFrame: with ``ci=`` the table of ``rows`` (its sums and moments
    streamed: :func:`moment_sums`) deferred to the collect; else ``finish`` of the streamed figures."""
    if req.ci is not None:
        from ..._progress import carry  # the call's progress= holds where the result is computed (at collect)

        return pl.defer(carry(lambda: rows(frame)), schema=schema)
    out = _row_means.table("lazy", frame, req, finish, schema, True, native)
    return out if out is not None else rows(frame)


def moment_means(req: Request, frame: pl.LazyFrame, figures: dict, keep: dict | None = None) -> tuple:
    """``(values, counts, keys, bounds, sizes)`` of a companion's or summary's ``ci=``, each figure from the moments
    of its own state, streamed (:func:`calframe.engines.plan.row_means.moment_state`)."""
    return _row_means.moment_state(req, figures, *_row_means.lazy_states(frame, req), keep)


def moment_sums(req: Request, frame: pl.LazyFrame) -> tuple:
    """``(sums, keys, counts, scale, moments)`` of ``req``'s bins, streamed."""
    return LZ.sums_and_moments(frame, req, moments=True)
