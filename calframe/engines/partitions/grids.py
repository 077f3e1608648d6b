"""The smooth ECE's state, ``grid_sums``, on a Dask DataFrame: every partition spreads its rows on the node grids
with the eager kernel (:func:`calframe.smooth.node_grids`, its weights divided by the partition's power of two
per group), Dask adds the per (group, node) sums, and the client brings them to each group's scale
(``dask._rescale``, exact) and runs :class:`calframe.smooth.Grids` on them. A finer grid the bisection asks for is
another pass over the partitions, for the groups that need it. Input errors are the Dask engine's (a
partition's, raised again with the counts over every partition). ``ci=`` collects the needed columns."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from ... import figures as F
from ... import lenses as L
from ... import smooth as S
from ..._imports import pd  # imported at first use
from ...request import Request
from . import client as D
from .workers import (BIN, EXP, FIG, N, ROWS, SC, SUMS_AGG, SUMS_COLS, Spec, finish, partition_frame,
                      guarded_partition, local_keys, partition_marker, refuse_nested_keys, scored_partition)
from ..plan.grid_sums import first_nodes

__all__ = ["run"]

#: the rows of the sums frame: a group's rows and weight (the checks', ``dask.merged_partitions``), a node of its grid
_GROUP, _NODE = 0, 1


def run(ddf: Any, req: Request, figures: dict) -> D.DaskResult:
    """:func:`calframe.smece` on a Dask DataFrame, lazy (:class:`~calframe.engines.partitions.client.DaskResult`); ``figures``:
    the eager engine's, which ``ci=`` runs on the collected columns."""
    spec = D.dask_spec(ddf, req)
    if req.ci is not None:
        return D.collected(req.func, ddf, spec.needed, partial(D.eager_figures, req, figures))
    runner = D.Runner(ddf, spec)
    m = first_nodes(req.options.sigma)

    def then(frame: pd.DataFrame) -> Any:
        merged = D.merged_partitions(spec, runner.merged(frame), None, {})

        def more(sel: np.ndarray, m: int) -> np.ndarray:
            tuples = merged.groups.tuples()
            wanted = {t for g in sel.tolist() for t in tuples[g]}
            again = D.merged_partitions(spec, runner.merged(runner._compute(runner._lazy(_grid_partition, SUMS_COLS, SUMS_AGG,
                                                                              m, wanted))), merged.groups, {})
            return _grids(again, S.places(sel, merged.groups.n), sel.shape[0], m)

        def known(sel: np.ndarray) -> np.ndarray:  # dense for some groups at a time (Grids' chunks)
            return _grids(merged, S.places(sel, merged.groups.n), sel.shape[0], m)

        grids = S.Grids(more, merged.groups.n, merged.weight_scale, {m: known})
        return F.shape(req, {req.name: grids.smece(req.options.sigma)[0]}, merged.counts, merged.groups.keys,
                       "pandas")

    return D.result(req.func, [(runner._lazy(_grid_partition, SUMS_COLS, SUMS_AGG, m, None), then)], lambda v: v)


def _grids(merged: D.Merged, place: np.ndarray, n: int, m: int) -> np.ndarray:
    """The ``(n, m, 2)`` grids of the merged node rows (group g at ``place[g]``; -1: not wanted), added in the
    merged frame's order."""
    frame = merged.frame
    rows = np.flatnonzero((frame[FIG].to_numpy() == _NODE) & (place[merged.g] >= 0))
    at = (place[merged.g[rows]], frame[BIN].to_numpy()[rows])
    out = np.zeros((n, m, 2))
    np.add.at(out[..., 0], at, frame[N].to_numpy()[rows])
    np.add.at(out[..., 1], at, frame[SC].to_numpy()[rows])
    return out


def _grid_partition(pdf: pd.DataFrame, spec: Spec, meta: pd.DataFrame, m: int, wanted: set | None,
                    partition_info: Any = None) -> pd.DataFrame:
    """:func:`_grid_rows`, guarded (``workers.guarded_partition``)."""
    return guarded_partition(_grid_rows, pdf, spec, meta, m, wanted)


def _grid_rows(pdf: pd.DataFrame, spec: Spec, meta: pd.DataFrame, m: int, wanted: set | None) -> pd.DataFrame:
    """One partition's sums frame: per group its rows and weight (FIG 0), and per (group, node) of its ``m``-node
    grid the weights (N) and residuals (SC) spread there (FIG 1, the node in BIN); ``wanted``: the key tuples of
    the groups whose grids are wanted (None: every group; a later pass, whose dropped rows were counted)."""
    scored, kept, dropped = scored_partition(pdf, spec)
    out = partition_marker(pdf, spec, meta, dropped) if wanted is None else []
    if scored is None:
        return finish(out, meta)
    if scored.keys is not None:  # an object column of dicts or lists, which the metadata did not show
        refuse_nested_keys(spec.func, dict(scored.keys.schema))
    keys, tuples = local_keys(kept, scored, spec.by)
    n_groups = scored.n_groups
    exps = np.broadcast_to(np.frexp(scored.weight_scale)[1] - 1, (n_groups,)).astype(np.int64)
    groups = scored.group_codes
    rows = np.bincount(groups, minlength=n_groups).astype(np.int64)
    weight = rows.astype(np.float64) if scored.weights is None else np.bincount(groups, scored.weights, n_groups)
    out.append(partition_frame(meta, keys, np.arange(n_groups), {FIG: _GROUP, ROWS: rows, N: weight, EXP: exps}))
    sel = np.arange(n_groups) if wanted is None else np.array(
        [g for g, t in enumerate(tuples) if t in wanted], dtype=np.int64)
    if sel.size:
        conf, acc = L.scalar(scored, spec.lens, spec.func)
        for part in S.budget_parts(sel, m):  # the grids of one pass at a time: bounded, whatever the groups
            grids = S.node_grids(conf, acc, scored.weights, scored.groups, n_groups, part, m)
            g, node = np.nonzero((grids[..., 0] != 0) | (grids[..., 1] != 0))
            out.append(partition_frame(meta, keys, part[g], {FIG: _NODE, BIN: node, N: grids[g, node, 0],
                                                      SC: grids[g, node, 1], EXP: exps[part[g]]}))
    return finish(out, meta)
