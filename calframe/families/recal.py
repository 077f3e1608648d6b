"""Recalibration columns: ``fit``, ``apply`` and ``load``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import polars as pl

from .. import _errors as E
from .. import request as R
from .._columns import Scored, as_names, resolve
from .._errors import (
    CalframeError,
    InvalidValueError,
    ParameterError,
    bad_param,
)
from .._errors import rows as _rows
from .._keywords import Columns
from .. import engines
from ..engines.eager import Frame, group_counts
from ..frames.dispatch import public
from ..request import Request
from .applying import apply_eager, json_key, rec_module, apply_columns, apply_rows
from .features import feature_matrix, feature_columns

# --------------------------------------------------------------------------- recalibration columns


@public(state="fit")
@R.with_progress
def fit(
    frame: Frame,
    method: str,
    prob: Columns = None,
    label: str | None = None,
    *,
    variable: str | None = None,
    features: str | Sequence[str] | None = None,
    by: Columns = None,
    weights: str | None = None,
    nulls: Literal["raise", "drop"] = "raise",
    progress: bool | None = None,
    **params: Any,
) -> Any:
    """Fit a recalibrator on a calibration frame; apply it with :func:`apply`, save it with ``.save(path)``.

    Methods (SPEC §6): ``platt``, ``temperature``, ``histogram``,
    ``isotonic``, ``beta``, ``scaling_binning``, ``venn_abers`` (inductive
    Venn-Abers; ``interval=True``: ``apply`` also writes ``[p0, p1]``),
    ``tree`` (needs ``variable``), ``beta_v`` (needs ``variable``) and
    ``lore`` (needs ``features``; ``gamma``). ``params`` go to the method (see
    ``calframe.recalibrate``). With ``by``, one recalibrator is fitted per
    group (the paper's per-group baseline); applying it needs the same group
    columns. ``progress``: a bar over the groups, and a tree's leaves, when the
    fit takes seconds (spec section 8, "Progress bars"). ``weights``: a column
    of row weights (finite, non-negative; a row of weight 2 counts as two
    rows: frequency weights, docs/spec.md "Weights"), for the methods whose
    fit takes them (``recalibrate.weighted_methods()``: platt, temperature,
    beta, beta_v, histogram, isotonic, venn_abers, tree, lore; not
    scaling_binning); the saved recalibrator holds the fitted function only
    (lore's: its stored rows with their weights).

    The column names are stored with the recalibrator, so ``apply`` finds them
    on a new frame by default. Saved files hold only data (JSON + Parquet).

    A ``pl.LazyFrame`` is collected (the columns the fit reads). On a Dask
    DataFrame the result is a lazy ``DaskResult`` (``.compute()`` gives the
    recalibrator): the columns the fit reads are collected into one pandas
    frame, all of them, in partition order, and the fit is the eager one on it,
    bit for bit. Nothing is sampled: when those columns do not fit in memory,
    sample explicitly, e.g. ``calframe.fit(ddf.sample(frac=0.05,
    random_state=0), "platt")`` (docs/scaling-out-dask.md).

    Examples
    --------
    >>> import calframe
    >>> cal = calframe.datasets.grouped_miscalibration(n=4000, seed=1)
    >>> rec = calframe.fit(cal, "tree", variable="age", max_depth=2)
    >>> new = calframe.apply(calframe.datasets.grouped_miscalibration(n=1000, seed=2), rec, name="p_tree")
    >>> new.columns[-1]
    'p_tree'
    """
    R = rec_module()
    func = "fit"
    if method not in R.METHODS or method == "per_group":
        raise bad_param(func, "method", f"one of {sorted(m for m in R.METHODS if m != 'per_group')}", method)
    params = R.REGISTRY[method].check_params(params)  # names and values, before reading any data
    if method in ("tree", "beta_v") and variable is None:
        raise ParameterError(f"fit: method {method!r} needs variable=<column> (the variable V it recalibrates along).",
                             "variable")
    if method == "lore" and features is None:
        raise ParameterError("fit: method 'lore' needs features=[...] (the columns of the kernel's feature map).",
                             "features")
    if variable is not None and method not in ("tree", "beta_v"):
        raise bad_param(func, "variable", f"None for method {method!r} (only 'tree' and 'beta_v' use a variable)",
                        variable)
    if features is not None and method != "lore":
        raise bad_param(func, "features", f"None for method {method!r} (only 'lore' uses features)", features)
    if weights is not None and not getattr(R.REGISTRY[method], "takes_weights", False):
        raise ParameterError(f"fit: method {method!r} does not take weights; methods that do: "
                             f"{R.weighted_methods()}.", "weights")
    feat_cols = [] if features is None else feature_columns(frame, features, func)
    extra = ([variable] if variable is not None else []) + feat_cols
    rows = Request(func, "rows", func, prob, label, by, weights, nulls, variables=tuple(extra))
    out = engines.collected(frame, rows, lambda pdf: fit(  # the fit needs the rows: the needed columns collected
        pdf, method, prob, label, variable=variable, features=features, by=by, weights=weights, nulls=nulls,
        progress=progress, **params))
    if out is not None:
        return out
    scored = resolve(frame, func=func, prob=prob, label=label, by=by, weights=weights, nulls=nulls, extra=extra,
                     allow_weights=weights is not None)
    meta = {"prob": scored.prob_name, "label": scored.label_name, "variable": variable, "features": feat_cols,
            "by": as_names(by), "n_classes": scored.n_classes, "binary": scored.binary}

    def fit_one(sc: Scored, g: int = 0) -> Any:
        kw = dict(params)
        args = []
        if variable is not None:
            if sc.extra_kind[variable] != "numeric":
                raise ParameterError(f"fit: variable {variable!r} must be numeric for method {method!r}.")
            args.append(sc.extra[variable])
        if feat_cols:
            args.append(feature_matrix(sc, feat_cols, func))
        if sc.weights is not None:  # the caller's weights (Scored.weight_scale undone, exactly: a power of two),
            # since a penalised logistic fit (platt, beta with a finite C) depends on their scale
            ws = sc.weight_scale
            kw["weights"] = sc.weights * (float(ws[g]) if isinstance(ws, np.ndarray) else float(ws))
        try:
            return R.fit(method, sc.probs, sc.labels.astype(np.int64), *args, **kw)
        except R.OneClassError as exc:  # the arrays' message, naming the label column
            inner, lens_, value, n = exc.detail or (method, "class:1", 0, sc.n)
            where = f"fit (method {method!r}" + ("" if inner == f"{method}.fit" else f", its {inner}") + ")"
            raise R.one_class_error(where, lens_, value, n, scored.label_name) from None

    if by is None:
        rec = fit_one(scored)
        rec.meta.update(meta)
        return rec
    _check_storable_keys(scored)
    children, keys = [], []
    from .._progress import iterate

    for g in iterate(range(scored.n_groups), func, unit="group"):
        sub = scored.subset(scored.group_codes == g)
        try:
            children.append(fit_one(sub, g))
        except ParameterError:  # a parameter, not a group, is to blame
            raise
        except CalframeError as exc:
            raise type(exc)(f"{exc} (group {scored.keys.row(g)})") from None  # type: ignore[union-attr]
        keys.append([json_key(v) for v in scored.keys.row(g)])  # type: ignore[union-attr]
    from ..recalibrate.grouped import PerGroup

    return PerGroup(params={"keys": keys, "method": method}, meta=meta, children=children)


def _check_storable_keys(scored: Scored) -> None:
    """fit(by=): a saved recalibrator stores its keys as JSON, so no key may be infinite (NaN keys are nulls)."""
    keys = scored.keys
    for c in keys.columns:  # type: ignore[union-attr]
        if keys[c].dtype.is_float():  # type: ignore[index]
            inf = np.isinf(keys[c].to_numpy())  # type: ignore[index]
            if inf.any():
                n = int(group_counts(scored)[inf].sum())
                raise InvalidValueError(
                    f"fit: group key column {c!r} (by=) is infinite in {_rows(n)}; a per-group recalibrator "
                    "stores its keys as JSON, which holds finite numbers only. Replace those keys (e.g. by null, "
                    f"which is a group of its own) or cast {c!r} to String before fitting."
                )


@public(state="batches")
@R.with_progress
def apply(
    frame: Frame,
    recalibrator: Any,
    *,
    name: str | None = None,
    prob: Columns = None,
    variable: str | None = None,
    features: str | Sequence[str] | None = None,
    unknown: Literal["raise", "keep"] = "raise",
    progress: bool | None = None,
) -> Any:
    """Add the recalibrated column(s) to a frame (a new frame; the input is not changed).

    Adds ``name`` (default ``p_<method>``): the recalibrated positive-class
    probability for binary input (a method that resets the top-label
    confidence, such as ``lore``, keeps the predicted class: p = conf where
    p > 0.5, else 1 - conf), or the recalibrated confidence for multiclass methods that
    reset the top-label confidence (the predicted class is unchanged); for
    multiclass methods that rescale the whole vector (``temperature``, ...)
    ``name`` is the probability Array and ``<name>_conf`` its top-label
    confidence. Columns default to those the recalibrator was fitted on. A
    LazyFrame stays lazy, and so do a PySpark DataFrame and a DuckDB relation
    (recalibrated batch by batch inside the engine: :mod:`calframe.engines.batches`).
    With a per-group recalibrator, rows of a group it
    has not seen raise an error, or keep their probability with
    ``unknown="keep"`` (on DuckDB and Spark the engine counts each group's
    rows at the call, so the error comes there, with the eager count; a
    LazyFrame and Dask raise it from a batch or partition, and say so). ``progress``: the bar of a LoRe recalibrator's kernel
    sums when they take seconds (spec section 8, "Progress bars").

    Examples
    --------
    >>> import calframe
    >>> cal = calframe.datasets.grouped_miscalibration(n=3000, seed=1)
    >>> rec = calframe.fit(cal, "platt")
    >>> out = calframe.apply(cal, rec)
    >>> calframe.ece(out, prob="p_platt", lens="class:1") < calframe.ece(cal, lens="class:1")
    True
    """
    R = rec_module()
    if not isinstance(recalibrator, R.Recalibrator):
        raise E.not_a_recalibrator("apply", recalibrator)
    if unknown not in ("raise", "keep"):
        raise bad_param("apply", "unknown", "'raise' or 'keep'", unknown)
    meta = recalibrator.meta
    method = recalibrator.params.get("method", recalibrator.method) if recalibrator.method == "per_group" \
        else recalibrator.method
    name = name or f"p_{method}"
    kwargs = {"name": name, "prob": prob, "variable": variable, "features": features, "unknown": unknown}

    def batch(df: pl.DataFrame) -> pl.DataFrame:  # a LazyFrame's batch, as Polars streams them
        return apply_rows(df, recalibrator, **kwargs, part="batch")

    return engines.apply(frame, recalibrator, kwargs, apply_columns(recalibrator, name), batch, lambda: apply_eager(
        frame, recalibrator, meta, name, prob, variable, features, unknown, R))


@public
def load(path: Any, *, key: bytes | str | None = None) -> Any:
    """Read a recalibrator saved with ``rec.save(path)`` (JSON + Parquet; validated, never unpickled).

    Every value is checked (finite numbers, probabilities in [0, 1], sorted
    edges, consistent shapes, known format version and method), and a file
    that fails raises :class:`RecalibratorFileError` naming the file, the field
    and the problem. The checksum only catches accidents. To trust a file
    from elsewhere, have it saved with ``rec.save(path, key=secret)`` and
    load it with the same ``key`` (HMAC-SHA256): a wrong key, a modified
    file, a signed file without a key or an unsigned one with a key is an
    error.

    Examples
    --------
    >>> import calframe, tempfile, os
    >>> cal = calframe.datasets.grouped_miscalibration(n=1000, seed=1)
    >>> path = calframe.fit(cal, "platt").save(os.path.join(tempfile.mkdtemp(), "platt.calib"), key=b"k3y")
    >>> calframe.load(path, key=b"k3y").method
    'platt'
    """
    return rec_module().load(path, key=key)


