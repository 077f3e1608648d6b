"""The rows' side of :func:`calframe.apply`: the recalibrated column(s) of an eager Polars or pandas frame (what every
engine runs per batch or partition) and their types."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from .. import _errors as E
from .. import lenses as L
from .._columns import Scored, columns_of, non_string_hint, normalised_keys, resolve
from .._errors import (
    ColumnNotFoundError,
    InvalidValueError,
)
from .._names import fresh_name
from ..frames import convert
from .features import feature_matrix


def rec_module():
    from .. import recalibrate
    from ..recalibrate import grouped  # noqa: F401  (registers per_group)

    return recalibrate


def json_key(v: Any) -> Any:
    if isinstance(v, (np.generic,)):
        return v.item()
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    return str(v)


def apply_columns(recalibrator: Any, name: str) -> dict[str, pl.DataType]:
    """The columns :func:`apply` adds, with their types: ``name`` (Float64), or for multiclass methods that rescale
    the whole vector ``name`` (an Array of the K probabilities) and ``<name>_conf`` (Float64)."""
    meta = recalibrator.meta
    if recalibrator.output == "probs" and not meta.get("binary", True):
        return {name: pl.Array(pl.Float64, int(meta.get("n_classes", 2))), f"{name}_conf": pl.Float64}
    if has_interval(recalibrator):
        return {name: pl.Float64, f"{name}_p0": pl.Float64, f"{name}_p1": pl.Float64}
    return {name: pl.Float64}


def has_interval(recalibrator: Any) -> bool:
    """Whether ``apply`` writes a Venn-Abers interval beside the probability (``fit("venn_abers",
    interval=True)``, per group too)."""
    one = recalibrator.children[0] if recalibrator.method == "per_group" and recalibrator.children else recalibrator
    return one.method == "venn_abers" and bool(one.params.get("interval"))


def apply_eager(frame, rec, meta, name, prob, variable, features, unknown, R, part=None):
    """``part``: what the frame is of the caller's (``"batch"``, ``"partition"``: :func:`group_index`), None the
    whole frame."""
    func = "apply"
    prob = prob if prob is not None else meta.get("prob")
    variable = variable if variable is not None else meta.get("variable")
    feat_cols = list(features) if isinstance(features, (list, tuple)) else (
        [features] if isinstance(features, str) else list(meta.get("features") or []))
    by = meta.get("by") or []
    extra = ([variable] if variable else []) + feat_cols
    names = columns_of(frame)
    missing = [c for c in extra + by if c not in names]
    if missing:
        raise ColumnNotFoundError(f"apply: the recalibrator needs column(s) {missing}, which the frame lacks "
                                  f"(it has {names}).{non_string_hint(frame)}")
    label_dummy = fresh_name(names, "label")  # apply reads no labels: a constant column no frame has
    prob_cols = [prob] if isinstance(prob, str) else list(prob or [])
    data = convert.as_polars(frame, list(dict.fromkeys([c for c in prob_cols if c in names] + extra + by)), func)
    work = data.with_columns(pl.lit(0, dtype=pl.Int8).alias(label_dummy))
    scored = resolve(work, func=func, prob=prob, label=label_dummy, extra=extra, allow_weights=False)
    if scored.n_classes != int(meta.get("n_classes", scored.n_classes)) or scored.binary != bool(
            meta.get("binary", scored.binary)):
        kind = "binary" if meta.get("binary") else f"{meta.get('n_classes')}-class"
        raise InvalidValueError(f"apply: this recalibrator was fitted on {kind} probabilities; the frame's "
                                f"{prob!r} gives {'binary' if scored.binary else f'{scored.n_classes}-class'} input.")
    kw: dict[str, Any] = {}
    if variable:
        kw["v"] = scored.extra[variable]
    if feat_cols:
        kw["features"] = feature_matrix(scored, feat_cols, func)
    bounds = None
    if rec.method == "per_group":
        idx = group_index(rec, data, unknown, part=part)
        fallback = _fallback(scored, rec.output)
        pred = rec.predict(scored.probs, group_index=idx, fallback=fallback, **kw)
        if has_interval(rec):
            bounds = rec.predict(scored.probs, group_index=idx, fallback=fallback, call="predict_interval")
    else:
        pred = rec.predict(scored.probs, **kw)
        if has_interval(rec):
            bounds = rec.predict_interval(scored.probs)
    flip = None
    if scored.binary and rec.output == "top1":
        # binary input gets a probability back: the reset confidence of the unchanged predicted class
        flip = L.predicted(scored.probs)[1] != 1
    elif scored.binary and rec.output == "class:0":
        flip = np.ones(len(pred), dtype=bool)
    if flip is not None:
        pred = np.where(flip, 1.0 - pred, pred)
        if bounds is not None:  # [p0, p1] of the other class: [1 - p1, 1 - p0]
            bounds = np.where(flip[:, None], 1.0 - bounds[:, ::-1], bounds)
    cols = _output_columns(name, pred, scored)
    if bounds is not None:
        cols += [pl.Series(f"{name}_p0", bounds[:, 0]), pl.Series(f"{name}_p1", bounds[:, 1])]
    return convert.with_columns(frame, cols)


def group_index(rec: Any, keys: pl.DataFrame, unknown: str, counts: np.ndarray | None = None,
                part: str | None = None) -> np.ndarray:
    """The child of a per-group recalibrator ``rec`` for each row of ``keys`` (its key columns, and maybe
    others; -1: a group it was not fitted on), which raise :func:`calframe._errors.unseen_groups` when ``unknown``
    is "raise". ``counts``: the rows each row of ``keys`` stands for (an engine's per-group counts; None: one
    each); ``part``: what the rows are of the caller's frame (a "batch", a "partition": the count is said to be
    its), None the whole frame."""
    by = list(rec.meta.get("by") or [])
    keys = normalised_keys(keys, by)
    idx = rec.key_index([tuple(json_key(v) for v in r) for r in keys.iter_rows()])
    bad = idx < 0
    if bad.any() and unknown == "raise":
        n_rows = int(bad.sum()) if counts is None else int(np.asarray(counts)[bad].sum())
        unseen = sorted({tuple(r) for r, b in zip(keys.iter_rows(), bad) if b}, key=str)
        raise E.unseen_groups("apply", by, n_rows, len(unseen), unseen[:5], part)
    return idx


def _fallback(scored: Scored, output: str) -> np.ndarray:
    if output == "top1":
        return L.top1(scored)[0]
    if output.startswith("class:"):
        return L.class_lens(scored, int(output[6:]))[0]
    return scored.probs


def _output_columns(name: str, pred: np.ndarray, scored: Scored) -> list[pl.Series]:
    if pred.ndim == 2:
        k = pred.shape[1]
        arr = pl.Series(name, pred).cast(pl.Array(pl.Float64, k))
        return [arr, pl.Series(f"{name}_conf", pred.max(axis=1))]
    return [pl.Series(name, np.asarray(pred, dtype=np.float64))]




def apply_rows(frame: Any, recalibrator: Any, *, name: str, prob: Any = None, variable: str | None = None,
               features: Any = None, unknown: str = "raise", progress: bool | None = None,
               part: str | None = None) -> Any:
    """:func:`calframe.apply` on an eager Polars or pandas frame whose call was checked (the recalibrator, the
    output's name): what the engines run per batch or partition (``part``: "batch", "partition", which an error
    counting rows says it counts), and ``apply`` itself on such a frame."""
    from .._progress import setting

    with setting("apply", progress):
        return apply_eager(frame, recalibrator, recalibrator.meta, name, prob, variable, features, unknown,
                            rec_module(), part)
