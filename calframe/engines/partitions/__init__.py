"""The engine of a Dask DataFrame: each partition's sums, added by Dask, finalized on the client; the result is
lazy (a ``DaskResult``). The engine protocol (docs/design.md, "Recipe: add an engine"):

- ``CAPABILITIES``, ``supports``, ``refuse``, ``call``: :mod:`calframe.engines.partitions.client`'s (the route's answers, and
  the public functions' entry; Dask's passes decide which parameters they collect);
- ``binned``, ``grid``, ``vector``, ``table``, ``moment_sums``: one per state, the passes of
  :mod:`calframe.engines.partitions.client` (bin sums, row means, GECE's cells; weighted quantile / equal-mass edges:
  :mod:`calframe.engines.partitions.order_stats`), :mod:`calframe.engines.partitions.moments` (the bins' moments for
  ``ci=``), :mod:`calframe.engines.partitions.companions` (the companions' ``ci=``: the moments of their row values)
  and :mod:`calframe.engines.partitions.grids` (the smooth ECE's grids);
- ``collected``, ``needed``, ``apply``, ``DaskResult``: a call's needed columns computed into one pandas frame, a
  recalibrator applied per partition, the lazy result (the families' steps).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from ...request import Request
from . import grids as _grid_dask
from . import client as D
from . import companions as DC
from . import moments as DM
from .client import CAPABILITIES, DaskResult, apply, call, collected, needed, refuse, supports

__all__ = ["NAME", "CAPABILITIES", "supports", "refuse", "call", "binned", "grid", "vector", "table", "moment_sums",
           "collected", "needed", "apply", "DaskResult"]

#: the engine's short name (the families' steps: ``engines.route(frame, here, dask=...)``)
NAME = "dask"


def collect(frame: Any) -> Any:
    """The Dask DataFrame itself: a function routed "collected" (a fit, vece_rank) computes its needed columns
    lazily in its body (:func:`calframe.engines.collected`), its result a ``DaskResult``."""
    return frame


def binned(req: Request, frame: Any, figures: dict | None = None) -> Any:
    """Bin sums or row means per partition; ``ci=`` from the moments of the partitions' bins (the CE family) or
    of their row values (the companions) where it can."""
    if DM.runs(req):
        return DM.deferred(frame, req, D.needed(frame, req), lambda rows: DM.result(req, rows, figures))
    if DC.runs(req, figures):  # a companion's ci= from the moments of its row values (partitions/companions.py)
        return DC.deferred(frame, req, figures, D.needed(frame, req))
    return D.binned(req, frame, figures)


def grid(req: Request, frame: Any, figures: dict) -> Any:
    """The smooth ECE's grid sums per partition."""
    return _grid_dask.run(frame, req, figures)


def vector(req: Request, frame: Any, here: Callable[[Any], Any], selects: bool, dask: Callable[[Any], Any]) -> Any:
    """GECE: the family's Dask step (``dask(engine)``: :func:`calframe.engines.partitions.client.gece`)."""
    return dask(D)


def table(req: Request, frame: Any, finish: Callable[..., Any], schema: dict[str, Any], rows: Callable[[Any], Any],
          native: bool) -> Any:
    """Disparity's figures per group, lazily: from the partitions' sums, the moments of their bins (``ci=``), or
    ``rows`` on the collected needed columns (several variables, a row selection, other intervals)."""
    plain = native and req.ci is None and not req.several
    if native and not plain and DM.runs(req):
        return DM.deferred(frame, req, D.needed(frame, req), rows)
    if not plain:
        return D.collected(req.func, frame, D.needed(frame, req), rows)
    return D.binned(req, frame, None, partial(finish, flavor="pandas"))


def moment_sums(req: Request, frame: Any) -> tuple | None:
    """``(sums, keys, counts, scale, moments)`` of ``req``'s bins from the partitions, or None where Dask does not
    draw them (weights, ...)."""
    return DM.moment_sums(frame, req, D.needed(frame, req)) if DM.runs(req) else None
