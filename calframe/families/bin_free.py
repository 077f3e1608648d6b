"""Bin-free calibration errors from the rows in order of the prediction: the KS and Kuiper calibration errors
(Gupta et al. 2021, "Calibration of neural networks using splines").

Sort a group's rows by the lens's output (``class:1``, the positive class, for one probability column; ``top1``
for class probabilities) and walk the cumulative gap ``D(t) = sum_{conf_i <= t} w_i (conf_i - acc_i) / W``, W the
group's weight (rows without ``weights``). Then

- ``ks = max_t |D(t)|``: the largest gap between the cumulative predicted and observed outcomes, 0 for a
  calibrated model in the limit, with no bins to choose;
- ``kuiper = max_t D(t) - min_t D(t)`` (``D`` starts at 0): over- and under-prediction in different ranges of
  the prediction both count, where they can cancel in ``ks``.

``D`` is read at the end of each run of equal predictions, and tied rows are summed in a canonical order (by
outcome, then weight), so the row order of the frame does not change the figures, to the bit. The rows of each group are sorted, so these figures need the rows:
eager frames compute them, a LazyFrame and a pyarrow Table are collected first (docs/engines.md).
"""

from __future__ import annotations

from typing import Any, Unpack

import numpy as np

from .. import lenses as L
from .. import request as R
from .._columns import Scored
from .._keywords import Columns
from ..engines.eager import Figure, Frame, Result
from ..frames.dispatch import public
from ..registry import Column, Figure as TableRow
from .plan import run_plan


def paths(scored: Scored, req: R.Request) -> tuple[np.ndarray, np.ndarray]:
    """Per group: (the largest |D|, max D - min D) of the cumulative gap D (module docstring)."""
    conf, acc = L.scalar(scored, req.lens, req.func)
    w = np.ones(scored.n) if scored.weights is None else np.asarray(scored.weights, dtype=np.float64)
    g = np.zeros(scored.n, dtype=np.int64) if scored.groups is None else scored.groups.astype(np.int64)
    order = np.lexsort((w, acc, conf, g))  # ties in a canonical order: the same sums for any row order
    g, c = g[order], conf[order]
    d = (w * (conf - acc))[order]
    total = np.bincount(g, weights=w[order], minlength=scored.n_groups)
    cum = np.cumsum(d)
    starts = np.searchsorted(g, np.arange(scored.n_groups))  # the first row of each group (rows sorted by group)
    before = np.where(starts > 0, cum[np.maximum(starts - 1, 0)], 0.0)
    path = (cum - before[g]) / total[g]
    ends = np.ones(g.shape[0], dtype=bool)  # the last row of each run of equal predictions within a group
    ends[:-1] = (g[1:] != g[:-1]) | (c[1:] != c[:-1])
    ks = np.zeros(scored.n_groups)
    hi = np.zeros(scored.n_groups)  # D starts at 0
    lo = np.zeros(scored.n_groups)
    np.maximum.at(ks, g[ends], np.abs(path[ends]))
    np.maximum.at(hi, g[ends], path[ends])
    np.minimum.at(lo, g[ends], path[ends])
    return ks, hi - lo


def _figures(req: R.Request) -> dict[str, Figure]:
    """The two figures from one walk per scored frame (the call's, then each bootstrap draw's)."""
    last: dict[str, Any] = {}

    def walk(scored: Scored) -> tuple[np.ndarray, np.ndarray]:
        if last.get("scored") is not scored:  # the frame itself is kept, so its identity is not reused
            last.update(scored=scored, out=paths(scored, req))
        return last["out"]

    return {"ks": lambda scored: walk(scored)[0], "kuiper": lambda scored: walk(scored)[1]}


@public(state="sorted_rows", figure=TableRow((
    Column("ks", "KS calibration error", "the largest gap between cumulative predictions and outcomes, in order of "
           "the prediction, with no bins; 0 is perfect"),
    Column("kuiper", "Kuiper calibration error", "the range of that cumulative gap: over- and under-prediction in "
           "different ranges both count; 0 is perfect")),
    lensed=True, on=frozenset({"disparity", "monitor", "expr", "sklearn"})))
@R.keywords(R.Scalar)
def ks_calibration(frame: Frame, prob: Columns = None, label: str | None = None,
                   **options: Unpack[R.Scalar]) -> Result:
    """The KS and Kuiper calibration errors (Gupta et al. 2021): bin-free, from the cumulative gap between
    predictions and outcomes along the sorted prediction (module docstring). A frame: ``n``, ``ks``, ``kuiper``,
    one row per group with ``by``; ``ci`` resamples the rows.

    Examples
    --------
    >>> import polars as pl, calframe
    >>> df = pl.DataFrame({"prob": [0.9, 0.8, 0.3, 0.6], "label": [1, 0, 0, 1]})
    >>> calframe.ks_calibration(df).select(pl.all().round(6)).row(0)  # D: 0.075, -0.025, 0.175, 0.15
    (4, 0.175, 0.2)
    """
    req = R.scalar_rows("ks_calibration", prob, label, **options)
    return run_plan(req, frame, _figures(req), scalar=False)
