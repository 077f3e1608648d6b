"""The CORP reliability diagram (Dimitriadis, Gneiting and Jordan 2021, PNAS, "Stable reliability diagrams"): the
isotonic recalibration curve of a model, with no bins to choose, and its consistency and confidence bands.

In a group, with the lens's prediction ``x``, outcome ``y`` and weight ``w`` of each row (rows of weight 0 left
out, as scikit-learn's ``IsotonicRegression`` leaves them):

- the **curve** is the weighted isotonic (PAV) regression of ``y`` on ``x``, tied predictions pooled (the kernel of
  :mod:`calframe._kernels.isotonic`, shared with :func:`calframe.corp_decomposition`), given as scikit-learn's
  ``X_thresholds_`` / ``y_thresholds_`` and as model-diagnostics' ``plot_reliability_diagram`` draws it: the first
  and the last distinct prediction of each constant piece (``x``) with the piece's value (``fit``), the curve
  being linear between consecutive points;
- the **consistency band** (the paper's Section 4) is where the curve of a *calibrated* model would lie: each
  draw replaces every outcome by ``y* ~ Bernoulli(x)`` (the calibrated null) at the same predictions and weights
  and refits the curve; the band at each ``x`` is the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles
  (numpy's linear quantile, R's type 7) of the refitted values there. A curve outside it is evidence of
  miscalibration at that prediction;
- the **confidence band** is where the model's true recalibration curve lies: each draw resamples the group's
  rows with replacement and refits; the value at each ``x`` is the draw's curve there (linear between its
  points, constant beyond its ends, as scikit-learn's ``predict`` with ``out_of_bounds="clip"``), and the band is
  the basic ("reverse") bootstrap interval ``2 fit - q_hi, 2 fit - q_lo``, made monotone conservatively (running
  maximum of the lower, running minimum from the right of the upper bound): model-diagnostics' band exactly (its
  ``n_bootstrap``, ``scipy.stats.bootstrap(method="basic")``).

Both bands are pointwise, not simultaneous. The draws of each group come from
``numpy.random.default_rng([seed, stable_hash(key), stream])`` (``stream`` 0 for the consistency band, 1 for the
confidence band; the key the group's, ``()`` without ``by``), on the group's rows put in order of (prediction,
outcome, weight): the same bits for every order of the frame's rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from .. import figures as F
from .. import lenses as L
from .. import request as R
from .._columns import resolve
from .._errors import ParameterError
from .._keywords import Columns
from ..engines.eager import Frame
from ..figures import check_by_names, with_keys
from ..frames.dispatch import public
from ..moments import stable_hash

#: the bands, each as its two columns ``<band>_lo`` and ``<band>_hi``
BANDS = ("consistency", "confidence")
CURVE_COLUMNS = ("x", "fit") + tuple(f"{b}_{s}" for b in BANDS for s in ("lo", "hi"))
#: draws per chunk: at most this many (draw, row) values at once
_CHUNK = 2_000_000


def cells(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rows sorted by ``x``: (the distinct predictions, the first row of each, their weighted mean outcome, their
    weight), rows of weight 0 kept (the caller drops them)."""
    new = np.ones(x.shape[0], dtype=bool)
    new[1:] = x[1:] != x[:-1]
    start = np.flatnonzero(new)
    cw = np.add.reduceat(w, start)
    mean = np.add.reduceat(w * y, start) / cw
    return x[start], start, mean, cw


def curve(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The CORP curve of one group's rows (any order, weights > 0): scikit-learn's ``(X_thresholds_,
    y_thresholds_)``, the first and last distinct prediction of each constant piece of the isotonic fit."""
    from .._kernels.isotonic import pav_segments

    order = np.lexsort((y, x))
    ux, _, mean, cw = cells(x[order], y[order], w[order])
    fit = pav_segments(mean, cw, np.array([0, ux.shape[0]], dtype=np.int64))
    keep = np.ones(fit.shape[0], dtype=bool)
    keep[1:-1] = (fit[1:-1] != fit[:-2]) | (fit[1:-1] != fit[2:])
    return ux[keep], fit[keep]


def _chunks(n_boot: int, m: int) -> list[tuple[int, int]]:
    step = max(1, _CHUNK // max(m, 1))
    return [(b, min(n_boot, b + step)) for b in range(0, n_boot, step)]


def consistency_band(x: np.ndarray, w: np.ndarray, at: np.ndarray, level: float, n_boot: int,
                     rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The consistency band at the predictions ``at`` (some of ``x``'s): rows sorted by ``x``, weights > 0;
    ``n_boot`` draws of ``y* ~ Bernoulli(x)`` from ``rng`` (one ``rng.random((chunk, m))`` per chunk of draws)."""
    from .._kernels.isotonic import pav_segments

    m = x.shape[0]
    ux, start, _, cw = cells(x, np.zeros(m), w)
    where = np.searchsorted(ux, at)
    k = ux.shape[0]
    values = np.empty((n_boot, at.shape[0]))
    for b0, b1 in _chunks(n_boot, m):
        ystar = (rng.random((b1 - b0, m)) < x).astype(np.float64)
        mean = np.add.reduceat(ystar * w, start, axis=1) / cw
        fit = pav_segments(mean.ravel(), np.tile(cw, b1 - b0), np.arange(b1 - b0 + 1, dtype=np.int64) * k)
        values[b0:b1] = fit.reshape(b1 - b0, k)[:, where]
    a = (1.0 - level) / 2.0
    lo, hi = np.quantile(values, [a, 1.0 - a], axis=0)
    return lo, hi


def confidence_band(x: np.ndarray, y: np.ndarray, w: np.ndarray, at: np.ndarray, fit_at: np.ndarray, level: float,
                    draws: Any) -> tuple[np.ndarray, np.ndarray]:
    """The confidence band at ``at`` (the curve's points, ``fit_at`` its values) from the row resamples
    ``draws``: an iterable of index arrays ``(chunk, m)`` into the rows (any order, weights > 0); model-diagnostics'
    basic bootstrap interval, made monotone."""
    from .._kernels.isotonic import pav_segments

    m = x.shape[0]
    order = np.argsort(x, kind="stable")
    xs, ys, ws = x[order], y[order], w[order]
    rank = np.empty(m, dtype=np.int64)
    rank[order] = np.arange(m)
    ux, start, _, _ = cells(xs, ys, ws)
    k = ux.shape[0]
    values = []
    for idx in draws:
        c = idx.shape[0]
        flat = (np.arange(c)[:, None] * m + rank[idx]).ravel()
        counts = np.bincount(flat, minlength=c * m).reshape(c, m).astype(np.float64)
        cw = np.add.reduceat(counts * ws, start, axis=1)
        cwy = np.add.reduceat(counts * (ws * ys), start, axis=1)
        present = cw > 0
        mean = cwy[present] / cw[present]
        segments = np.concatenate([[0], np.cumsum(present.sum(axis=1))]).astype(np.int64)
        fit = pav_segments(mean, cw[present], segments)
        part = np.empty((c, at.shape[0]))
        for b in range(c):
            part[b] = np.interp(at, ux[present[b]], fit[segments[b]:segments[b + 1]])
        values.append(part)
    theta = np.concatenate(values)
    a = (1.0 - level) / 2.0
    q_lo, q_hi = np.quantile(theta, [a, 1.0 - a], axis=0)
    lower, upper = 2.0 * fit_at - q_hi, 2.0 * fit_at - q_lo
    return np.maximum.accumulate(lower), np.minimum.accumulate(upper[::-1])[::-1]


def _bands(bands: Any, func: str) -> tuple[str, ...]:
    if bands is None:
        return ()
    chosen = (bands,) if isinstance(bands, str) else tuple(bands) if isinstance(bands, (list, tuple)) else None
    if chosen is None or any(b not in BANDS for b in chosen):
        raise ParameterError(f"{func}: bands must be None or some of {BANDS!r}, got {bands!r}.", "bands")
    return chosen


@public(state="sorted_rows")
def reliability_curve(frame: Frame, prob: Columns = None, label: str | None = None, *, by: Columns = None,
                      weights: str | None = None, lens: str | None = None, nulls: str = "raise",
                      bands: str | Sequence[str] | None = BANDS, level: float = 0.9, n_boot: int = 1000,
                      seed: int | None = 0) -> Any:
    """The CORP reliability diagram as a table (Dimitriadis, Gneiting and Jordan 2021): the isotonic
    recalibration curve, with no bins to choose, and its consistency and confidence bands, per group.

    One row per point of the curve (the first and last prediction of each of its constant pieces, the curve
    linear between them): ``x``, ``fit`` (the recalibrated probability there: scikit-learn's and
    model-diagnostics' isotonic curve) and, for each of ``bands``, ``<band>_lo`` and ``<band>_hi`` at ``level``
    from ``n_boot`` draws (``seed``): ``consistency`` (where a calibrated model's curve would lie: outcomes redrawn
    as Bernoulli(x)) and ``confidence`` (where the true curve lies: rows resampled; model-diagnostics'
    ``n_bootstrap`` band). ``weights``: row weights in the fit and the draws (rows of weight 0 are left out).
    Module docstring: the definitions. The rows are needed: a LazyFrame, a pyarrow Table or
    a narwhals frame is collected (docs/engines.md).

    Examples
    --------
    >>> import polars as pl, calframe
    >>> df = pl.DataFrame({"prob": [0.1, 0.3, 0.4, 0.6, 0.8, 0.9], "label": [0, 1, 0, 1, 1, 1]})
    >>> calframe.reliability_curve(df, bands=None).rows()  # the pieces 0 | 0.5, 0.5 | 1, 1, 1
    [(0.1, 0.0), (0.3, 0.5), (0.4, 0.5), (0.6, 1.0), (0.9, 1.0)]
    >>> t = calframe.reliability_curve(df, n_boot=200)
    >>> t.columns, bool((t["consistency_lo"] <= t["consistency_hi"]).all())
    (['x', 'fit', 'consistency_lo', 'consistency_hi', 'confidence_lo', 'confidence_hi'], True)
    """
    func = "reliability_curve"
    chosen = _bands(bands, func)
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0.0 < level < 1.0:
        raise ParameterError(f"{func}: level must be a number between 0 and 1 (exclusive), got {level!r}.", "level")
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or (chosen and n_boot < 1):
        raise ParameterError(f"{func}: n_boot must be a positive integer with bands, got {n_boot!r}.", "n_boot")
    req = R.scalar_rows(func, prob, label, by=by, weights=weights, lens=lens, nulls=nulls)
    check_by_names(func, by, CURVE_COLUMNS, frame)
    scored = resolve(frame, func=func, prob=prob, label=label, by=by, weights=weights, nulls=nulls)
    conf, acc = L.scalar(scored, req.lens, func)
    x_all = np.asarray(conf, dtype=np.float64)
    y_all = np.asarray(acc, dtype=np.float64)
    w_all = np.ones(scored.n) if scored.weights is None else np.asarray(scored.weights, dtype=np.float64)
    g_all = scored.group_codes.astype(np.int64)
    order = np.lexsort((w_all, y_all, x_all, g_all))
    g_all, x_all, y_all, w_all = g_all[order], x_all[order], y_all[order], w_all[order]
    bounds = np.searchsorted(g_all, np.arange(scored.n_groups + 1))
    columns = ("x", "fit") + tuple(f"{b}_{s}" for b in chosen for s in ("lo", "hi"))
    parts = []
    for j in range(scored.n_groups):
        sl = slice(int(bounds[j]), int(bounds[j + 1]))
        pos = w_all[sl] > 0
        x, y, w = x_all[sl][pos], y_all[sl][pos], w_all[sl][pos]
        key = None if scored.keys is None else scored.keys[j]
        at, fit = curve(x, y, w)
        values = {"x": at, "fit": fit}
        hashed = stable_hash(() if key is None else scored.keys.row(j))
        if "consistency" in chosen:
            rng = np.random.default_rng(None if seed is None else [seed, hashed, 0])
            values["consistency_lo"], values["consistency_hi"] = consistency_band(x, w, at, level, n_boot, rng)
        if "confidence" in chosen:
            rng = np.random.default_rng(None if seed is None else [seed, hashed, 1])
            m = x.shape[0]
            draws = (rng.integers(0, m, (b1 - b0, m)) for b0, b1 in _chunks(n_boot, m))
            values["confidence_lo"], values["confidence_hi"] = confidence_band(x, y, w, at, fit, level, draws)
        part = pl.DataFrame({c: values[c] for c in columns}, schema={c: pl.Float64 for c in columns})
        parts.append(with_keys(func, None if key is None else pl.concat([key] * at.shape[0]), part))
    return F.to_flavor(pl.concat(parts), scored.flavor)
