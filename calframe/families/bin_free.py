"""Bin-free calibration errors from the rows in order of the prediction: the KS and Kuiper calibration errors
(Gupta et al. 2021, "Calibration of neural networks using splines") and the MMCE (Kumar et al. 2018, "Trainable
calibration measures for neural networks from kernel mean embeddings").

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

The MMCE of a group is ``sqrt(sum_ij w_i w_j (acc_i - conf_i)(acc_j - conf_j) k(conf_i, conf_j)) / W`` with the
Laplacian kernel ``k(r, s) = exp(-|r - s| / 0.4)``: Kumar et al.'s biased (V-statistic) estimate, i = j included,
as netcal's ``MMCE`` reports it (docs/binned-metrics.md, "MMCE"). In order of the prediction the kernel factorises,
so the pairs are summed in one pass (:func:`calframe._kernels.mmce.pair_sums`), exactly, in O(n log n).
"""

from __future__ import annotations

from typing import Any, Unpack

import numpy as np

from .. import lenses as L
from .. import request as R
from .._imports import lazy_function
from .._columns import Scored
from .._keywords import Columns
from ..engines.eager import Figure, Frame, Result
from ..frames.dispatch import public
from ..registry import Column, Figure as TableRow
from .plan import run_plan

pair_sums = lazy_function("calframe._kernels.mmce", "pair_sums")  # numba: imported at first use

#: the Laplacian kernel's width in the MMCE, Kumar et al.'s 0.4 (netcal's ``exp(-2.5 |r_i - r_j|)``)
MMCE_WIDTH = 0.4


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


def mmce_values(scored: Scored, req: R.Request) -> np.ndarray:
    """Per group: the MMCE (module docstring), from the rows in a canonical order (by prediction, then outcome and
    weight), so the row order of the frame does not change it, to the bit."""
    conf, acc = L.scalar(scored, req.lens, req.func)
    conf, acc = np.asarray(conf, dtype=np.float64), np.asarray(acc, dtype=np.float64)
    w = np.ones(scored.n) if scored.weights is None else np.asarray(scored.weights, dtype=np.float64)
    g = np.zeros(scored.n, dtype=np.int64) if scored.groups is None else scored.groups.astype(np.int64)
    order = np.lexsort((w, acc, conf, g))
    starts = np.searchsorted(g[order], np.arange(scored.n_groups + 1))
    sums = np.empty(scored.n_groups)
    pair_sums(np.ascontiguousarray(conf[order]), np.ascontiguousarray((w * (acc - conf))[order]), starts,
              1.0 / MMCE_WIDTH, sums)
    total = np.bincount(g, weights=w, minlength=scored.n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.sqrt(np.maximum(sums, 0.0)) / total  # the sum is >= 0 (a positive definite kernel) but rounding


@public(state="sorted_rows", figure=TableRow((
    Column("mmce", "MMCE", "the kernel (RKHS) distance between predictions and outcomes, Laplacian kernel of "
           "width 0.4 on the prediction, with no bins; 0 is perfect"),),
    lensed=True, on=frozenset({"disparity", "monitor", "expr", "sklearn"})))
@R.keywords(R.Scalar)
def mmce(frame: Frame, prob: Columns = None, label: str | None = None, **options: Unpack[R.Scalar]) -> Result:
    """The maximum mean calibration error (Kumar et al. 2018), as netcal's ``MMCE`` reports it: the kernel mean
    embedding distance of the residuals ``acc - conf`` under a Laplacian kernel of width 0.4 on the prediction,
    ``sqrt(sum_ij w_i w_j (acc_i - conf_i)(acc_j - conf_j) exp(-|conf_i - conf_j| / 0.4)) / W`` (module
    docstring). Bin-free; exact (no row cap: the kernel factorises along the sorted prediction). A float, or
    with ``by`` a frame: ``n``, ``mmce``, one row per group; ``ci`` resamples the rows.

    Examples
    --------
    >>> import polars as pl, calframe
    >>> df = pl.DataFrame({"prob": [0.9, 0.8, 0.3, 0.6], "label": [1, 0, 0, 1]})
    >>> round(calframe.mmce(df), 6)
    0.165032
    """
    req = R.scalar_rows("mmce", prob, label, **options)
    return run_plan(req, frame, {"mmce": lambda scored: mmce_values(scored, req)})
