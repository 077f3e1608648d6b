"""The Dask engine: calframe's figures computed partition by partition (``ddf.calib``: calframe.frames.dask).

``calframe.ece(ddf, ...)`` needs nothing more; ``import calframe.frames.dask`` (after
``pip install "calframe[dask]"``) also registers ``ddf.calib``. Importing calframe alone never
imports Dask. Then::

    >>> import dask.dataframe as dd, calframe, calframe.frames.dask   # doctest: +SKIP
    >>> ddf = dd.read_parquet("scores/")                               # doctest: +SKIP
    >>> ddf.calib.ece(by="region").compute()  # a pandas frame, as calframe.ece(pandas_df, by="region")  # doctest: +SKIP
    >>> dask.compute(ddf.calib.vece("age"), ddf.calib.summary())  # computed together                # doctest: +SKIP

What runs where
---------------
Each partition is a pandas frame; a worker runs calframe's own pipeline on it
(``resolve`` -> lens -> bin -> ``binned_sums``, the numba accumulate pass) and
returns a small pandas frame of per (group key, bin) sums
``[*by, fig, cls, bin, rows, n, sum_conf, sum_acc]`` (group keys as values: codes
differ per partition). Dask adds them with ``groupby(...).agg(..., split_out=1)``
and the client finalizes with :func:`calframe.metrics.ce_from_sums`, returning
what calframe returns for a pandas frame (a float without ``by``, else a pandas
frame with the group columns sorted by key, nulls last, ``n`` and the figure).
Input errors are found per partition by calframe's own ``resolve``; the client
then gathers every partition's counts and raises the eager path's first
failing check with its message and the counts over all partitions.
``calframe.ece(ddf, ...)`` and the other top-level functions send a Dask
DataFrame here (:mod:`calframe.frames.dispatch`).

Data-dependent bins (``quantile``, ``equal_mass``) need each group's exact
order statistics. They come from mergeable passes (see :meth:`_Runner.order_stats`):
a histogram of the values on a fixed grid (the top 20 bits of an order-preserving
integer image of the float64, so any range works), the cells holding the target
ranks found from cumulative counts, and the values of only those cells gathered
(a cell holding a single distinct value needs no gathering; a crowded cell is
refined with the next 20 bits first). calframe's one edge rule
(:func:`calframe.binning.edge_table`: every source and group in one call of its
``take``, then ``pack_edges``) builds the edges from the gathered order
statistics, and a last pass bins with those edges (``assign_bins``) and
accumulates. Results equal calframe's in-memory results up to float summation
order (< 1e-12).

Every figure is a lazy :class:`DaskResult`: its graph holds the first pass, the
finalize (and the later passes of exact edges) runs where Dask finalizes. ``summary``
and uniform-bin ``gece`` come from exact sums too; ``ci=``, ``vce_curve``, ``fit``,
``vece_rank`` and ``gece`` on the rows (adaptive bins, selections) collect the needed
columns and run the eager function (:func:`collected`). Not on Dask: local calibration
(``lce``, ``mlce``, ``mlce_curve``).
"""

from __future__ import annotations

import base64
import pickle
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Sequence

import numpy as np
from .._lazy import pd  # imported at first use
import polars as pl
import pyarrow as pa

try:
    from dask.base import DaskMethodsMixin
except ImportError:  # without Dask this module only lists SUPPORTED (calframe.frames.dask registers nothing)
    DaskMethodsMixin = object  # type: ignore[assignment,misc]

from . import lazy as LZ
from . import eager as E_
from ..families.applying import apply_rows
from .. import figures as F
from ..request import Request
from .. import lenses as L
from .._columns import (LABEL_CANDIDATES, PROB_CANDIDATES, Scored, _pick_default, _select, check_group_weights,
                        group_codes, resolve)
from .._names import key_names
from .. import _errors as E
from .._errors import CalframeError, ColumnTypeError, EmptyInputError, ParameterError
from .._lazy import LazyModule

K = LazyModule("calframe._kernels.accumulate")  # numba kernels: imported at first use
from .._limits import check_cells
from ..binning import Binning, Bins, edge_table, make_binning, pack_edges, take_each, uniform_edges
from ..metrics import check_weight_sums

__all__ = ["SUPPORTED", "DaskResult", "apply", "collected", "result", "run"]

Columns = str | Sequence[str] | None

# internal columns of the per-partition frames; the group keys travel in them under positional names
# (_keys_of: __cf_key0, ...), so no user column, whatever its name, meets an internal one
FIG, CLS, BIN, CAT, FIRST = "__cf_fig", "__cf_cls", "__cf_bin", "__cf_cat", "__cf_first"
ROWS, N, SC, SA, VMIN, VMAX, DROP = "__cf_rows", "__cf_n", "__cf_sc", "__cf_sa", "__cf_vmin", "__cf_vmax", "__cf_drop"
#: the exponent e of the power of two 2^e a partition divided a group's weights by (a key of the merge, not summed)
EXP = "__cf_exp"
PAR, CELL, CNT, SHIFT, VAL = "__cf_par", "__cf_cell", "__cf_cnt", "__cf_shift", "__cf_val"
#: a partition's input error (pickled, base64) on a marker row (fig = -2): the client raises it, counted over
#: every partition (:meth:`_Runner.checked`)
ERR = "__cf_err"

_I8, _F8, _STR = np.dtype(np.int64), np.dtype(np.float64), pd.StringDtype()
SUMS_COLS = {FIG: _I8, CLS: _I8, BIN: _I8, CAT: _STR, FIRST: _I8, ROWS: _I8, N: _F8, SC: _F8, SA: _F8,
             VMIN: _F8, VMAX: _F8, DROP: _I8, EXP: _I8, ERR: _STR}
SUMS_AGG = {ROWS: "sum", N: "sum", SC: "sum", SA: "sum", FIRST: "min", VMIN: "min", VMAX: "max", DROP: "sum"}
HIST_COLS = {FIG: _I8, CLS: _I8, PAR: _I8, CELL: _I8, CNT: _I8, VMIN: _F8, VMAX: _F8, DROP: _I8, ERR: _STR}
HIST_AGG = {CNT: "sum", VMIN: "min", VMAX: "max", DROP: "sum"}
GATHER_COLS = {FIG: _I8, CLS: _I8, SHIFT: _I8, CELL: _I8, VAL: _F8}
_DEFAULTS = {CAT: "", ERR: "", VMIN: np.inf, VMAX: -np.inf}

#: histogram levels: level L's cell of a value is (its order-preserving uint64 image) >> SHIFTS[L]
SHIFTS = (44, 24, 4, 0)
#: a target cell with at most this many values is gathered; a larger one is refined by the next level
GATHER_CELL = 1 << 18
#: category first-appearance position = partition number << POS_BITS | row within the partition
POS_BITS = 40


# --------------------------------------------------------------------------- request


@dataclass(frozen=True)
class _Spec:
    """One request, shipped to every partition (picklable, no frame inside)."""

    func: str
    prob: str | tuple[str, ...]
    label: str
    by: tuple[str, ...]
    weights: str | None
    nulls: str
    lens: L.Lens | None = None
    #: VECE: the binned variables, one figure each; () = ECE family (the lensed confidence is binned)
    variables: tuple[str, ...] = ()
    #: per figure: "fixed" (uniform bins or explicit edges), "cat" (one bin per category), "dd" (quantile / equal_mass)
    modes: tuple[str, ...] = ("fixed",)
    binning: Binning | None = None
    #: brier / log_loss / accuracy: per-row values averaged per group
    companion: str | None = None
    #: the Polars dtypes calframe reads the ``by`` columns as (the eager path's, for the key table)
    key_types: tuple[Any, ...] = ()

    @property
    def prob_cols(self) -> list[str]:
        return [self.prob] if isinstance(self.prob, str) else list(self.prob)

    @property
    def needed(self) -> list[str]:
        w = [self.weights] if self.weights else []
        return list(dict.fromkeys(self.prob_cols + [self.label] + list(self.by) + w + list(self.variables)))


# --------------------------------------------------------------------------- per partition (workers)


def _norm(v: Any) -> Any:
    """A group key value as a hashable, partition-independent Python value (every missing value -> None)."""
    if v is None or v is pd.NA or v is pd.NaT or (isinstance(v, float) and v != v):
        return None
    return v.item() if isinstance(v, np.generic) else v


def _key_tuples(keys: pd.DataFrame) -> list[tuple]:
    cols = [keys[c].tolist() for c in keys.columns]
    return [tuple(_norm(v) for v in row) for row in zip(*cols)] if cols else [()] * len(keys)


def _scored(pdf: pd.DataFrame, spec: _Spec) -> tuple[Scored | None, pd.DataFrame, int]:
    """calframe's resolve on one partition: (Scored or None when no rows remain, the kept rows, rows dropped)."""
    dropped = 0
    if len(pdf) and spec.nulls == "drop":
        w = [spec.weights] if spec.weights else []
        checked = list(dict.fromkeys(spec.prob_cols + [spec.label] + w + list(spec.variables)))
        isnull = _select(pdf, checked, spec.func, nan_null=[spec.label]).select(pl.any_horizontal(pl.all().is_null())).to_series().to_numpy()
        if isnull.any():
            dropped = int(isnull.sum())
            pdf = pdf.iloc[np.flatnonzero(~isnull)]
    if len(pdf) == 0:
        return None, pdf, dropped
    scored = resolve(
        pdf,
        func=spec.func,
        prob=spec.prob if isinstance(spec.prob, str) else list(spec.prob),
        label=spec.label,
        by=list(spec.by) or None,
        weights=spec.weights,
        nulls="raise",  # with nulls="drop" they are gone already (and counted once, on the client)
        extra=list(spec.variables),
        check_weights=False,  # weight totals: checked on the client, over every partition
    )
    return scored, pdf, dropped


def _first_rows(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes present, ascending; the row of each one's first occurrence) - hash-based, linear."""
    seen = pd.Series(codes).drop_duplicates()
    order = np.argsort(seen.to_numpy(), kind="stable")
    return seen.to_numpy()[order], seen.index.to_numpy()[order]


def _keys_of(frame: pd.DataFrame, by: tuple[str, ...], rows: Any = slice(None)) -> pd.DataFrame:
    """The ``by`` columns of ``frame``'s ``rows`` under their positional internal names (key_names), index 0..n-1.

    An Arrow dictionary column (a Polars Categorical converted to Arrow-backed pandas) becomes its values'
    Arrow type: Dask's merge cannot concatenate dictionary columns holding nulls. (The key table gets the
    eager path's Categorical back from ``_Spec.key_types``.) A float key takes calframe's one key value
    (``_columns.key_expr``): -0.0 is 0.0 and NaN is missing. Arrow-backed pandas groups 0.0 and -0.0 (and NaN
    and null) apart, and Dask's merge of partitions whose keys held both zeros failed in pandas' index union.
    """
    keys = frame[list(by)].iloc[rows].set_axis(key_names(len(by)), axis=1).reset_index(drop=True)
    for c in keys.columns:
        dt = keys[c].dtype
        if isinstance(dt, pd.ArrowDtype) and pa.types.is_dictionary(dt.pyarrow_dtype):
            keys[c] = keys[c].astype(pd.ArrowDtype(dt.pyarrow_dtype.value_type))
        elif pd.api.types.is_float_dtype(dt):
            v = keys[c].to_numpy(dtype=np.float64, na_value=np.nan)
            keys[c] = keys[c].where(v != 0, 0.0).where(~np.isnan(v), None)
    return keys


def _refuse_nested_keys(func: str, keys: dict[str, Any]) -> None:
    """Struct, List and Array group keys (``keys``: name -> Polars dtype) are for eager and lazy frames only."""
    for name, dtype in keys.items():
        if isinstance(dtype, (pl.Struct, pl.List, pl.Array)):
            raise ColumnTypeError(
                f"{func}: group key column {name!r} has dtype {dtype}; Struct, List and Array keys work on eager "
                "and lazy frames, not on Dask DataFrames (Dask cannot merge the partitions' groups by them). "
                f"Turn the key into strings first (e.g. ddf = ddf.assign(**{{{name!r}: ddf[{name!r}].astype(str)}})), or "
                "compute the frame (ddf.compute()) and pass that."
            )


def _local_keys(pdf: pd.DataFrame, scored: Scored, by: tuple[str, ...]) -> tuple[pd.DataFrame | None, list[tuple]]:
    """Key values of the partition's groups (row g = local code g), in the partition's own dtypes."""
    if not by:
        return None, [()]
    codes, first = _first_rows(scored.groups)  # group codes are 0..n_groups - 1, all present
    keys = _keys_of(pdf, by, first)
    return keys, _key_tuples(keys)


def _frame(meta: pd.DataFrame, keys: pd.DataFrame | None, g: np.ndarray, cols: dict[str, Any]) -> pd.DataFrame:
    """Rows ``keys[g]`` beside ``cols`` (arrays or scalars), in meta's columns and dtypes."""
    n = len(g)
    out = keys.iloc[g].reset_index(drop=True) if keys is not None else pd.DataFrame(index=pd.RangeIndex(n))
    for name, dtype in meta.dtypes.items():
        if name in out.columns:
            continue
        v = cols.get(name, _DEFAULTS.get(name, 0))
        if dtype == _STR:
            out[name] = pd.array(list(np.broadcast_to(np.asarray(v, dtype=object), (n,))), dtype=_STR)
        else:
            out[name] = np.array(np.broadcast_to(np.asarray(v, dtype=dtype), (n,)))
    return out


def _finish(frames: list[pd.DataFrame], meta: pd.DataFrame) -> pd.DataFrame:
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else meta.copy()


def _marker(pdf: pd.DataFrame, spec: _Spec, meta: pd.DataFrame, dropped: int) -> list[pd.DataFrame]:
    """A row carrying the partition's count of null-dropped rows (fig = -1; keys of its first row for valid dtypes)."""
    if not dropped:
        return []
    keys = _keys_of(pdf, spec.by, slice(0, 1)) if spec.by else None
    return [_frame(meta, keys, np.zeros(1, dtype=np.int64), {FIG: -1, DROP: dropped})]


def _lens_outputs(scored: Scored, spec: _Spec) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """(class, conf, acc) per binned lens output: one for top1/class:c, K for the marginal average."""
    lens = spec.lens
    if lens.kind != "marginal":
        return [(0, *L.scalar(scored, lens, spec.func))]
    return [(c, *L.class_lens(scored, c)) for c in range(scored.n_classes)]


def _variable(scored: Scored, spec: _Spec, f: int) -> np.ndarray:
    """The values of figure f's variable, checked against the kind the plan expects."""
    var = spec.variables[f]
    kind = scored.extra_kind[var]
    want = "categorical" if spec.modes[f] == "cat" else "numeric"
    if kind != want:
        raise ColumnTypeError(
            f"{spec.func}: variable {var!r} is {kind} in the data but its Dask metadata dtype says {want}; "
            f"cast the column (e.g. ddf[{var!r}].astype(float) or .astype(str)) so that every partition agrees."
        )
    return scored.extra[var]


def _dd_sources(scored: Scored, spec: _Spec) -> list[tuple[int, int, np.ndarray]]:
    """(figure, class, values) of every data-dependent binning: the lensed confidence or a numeric variable."""
    out = []
    for f, mode in enumerate(spec.modes):
        if mode != "dd":
            continue
        if spec.variables:
            out.append((f, 0, _variable(scored, spec, f)))
        else:
            out.extend((f, c, conf) for c, conf, _ in _lens_outputs(scored, spec))
    return out


def _ordered_bits(values: np.ndarray) -> np.ndarray:
    """An order-preserving uint64 image of float64 values (sign bit flipped for >= 0, all bits for < 0)."""
    b = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    return np.where(b >> np.uint64(63), ~b, b | np.uint64(1 << 63))


def _rows_in(groups: np.ndarray, bits: np.ndarray, tuples: list[tuple], wanted: dict, shift: int) -> np.ndarray:
    """Mask of rows whose (group, bits >> shift) is one of ``wanted[key tuple]`` (uint64 prefixes)."""
    pairs_g, pairs_p = [], []
    for lg, t in enumerate(tuples):
        w = wanted.get(t)
        if w is not None and len(w):
            pairs_g.append(np.full(len(w), lg, dtype=np.int64))
            pairs_p.append(np.asarray(w, dtype=np.uint64))
    if not pairs_g:
        return np.zeros(bits.shape[0], dtype=bool)
    pg, pp = np.concatenate(pairs_g), np.concatenate(pairs_p)
    prefix = bits >> np.uint64(shift)
    mask = np.isin(prefix, pp)
    if len(tuples) > 1 and mask.any():
        idx = np.flatnonzero(mask)
        have = pd.MultiIndex.from_arrays([groups[idx].astype(np.int64), prefix[idx].view(np.int64)])
        mask[idx] = have.isin(pd.MultiIndex.from_arrays([pg, pp.view(np.int64)]))
    return mask


def _guarded(rows: Any, pdf: pd.DataFrame, spec: _Spec, meta: pd.DataFrame, *args: Any) -> pd.DataFrame:
    """``rows(pdf, spec, meta, *args)``; a calframe input error becomes a marker row (fig = -2, the error in ERR),
    so that the client raises it with the counts of every partition instead of Dask raising this partition's."""
    try:
        return rows(pdf, spec, meta, *args)
    except CalframeError as exc:
        if not len(pdf):
            raise
        keys = _keys_of(pdf, spec.by, slice(0, 1)) if spec.by else None
        return _frame(meta, keys, np.zeros(1, dtype=np.int64), {FIG: -2, ERR: base64.b64encode(pickle.dumps(exc)).decode()})


def _hist_partition(pdf, spec, meta, level, parents, partition_info=None) -> pd.DataFrame:
    """:func:`_hist_rows`, guarded (:func:`_guarded`)."""
    return _guarded(_hist_rows, pdf, spec, meta, level, parents)


def _hist_rows(pdf, spec, meta, level, parents) -> pd.DataFrame:
    """Per (group, source, cell): value count, min and max, for the cells of level ``level``.

    Level 0 covers every value; a deeper level only the values inside ``parents``
    (per (figure, class): {key tuple: uint64 cell prefixes of the previous level}).
    """
    scored, kept, dropped = _scored(pdf, spec)
    out = _marker(pdf, spec, meta, dropped)
    if scored is None:
        return _finish(out, meta)
    keys, tuples = _local_keys(kept, scored, spec.by)
    for f, c, values in _dd_sources(scored, spec):
        bits = _ordered_bits(values)
        groups = scored.group_codes
        values = np.asarray(values, dtype=np.float64)
        if level > 0:
            sel = _rows_in(groups, bits, tuples, parents.get((f, c), {}), SHIFTS[level - 1])
            groups, bits, values = groups[sel], bits[sel], values[sel]
        if not len(values):
            continue
        cell = bits >> np.uint64(SHIFTS[level])
        if level == 0:  # cells have 20 bits: one int64 key (group, cell) hashes fastest
            agg = pd.Series(values).groupby((groups.astype(np.int64) << 20) | cell.view(np.int64), sort=False)
            agg = agg.agg(["size", "min", "max"])
            k = agg.index.to_numpy()
            g, cell = k >> 20, (k & ((1 << 20) - 1)).astype(np.uint64)
        else:
            agg = pd.Series(values).groupby([groups.astype(np.int64), cell.view(np.int64)], sort=False)
            agg = agg.agg(["size", "min", "max"])
            g, cell = agg.index.get_level_values(0).to_numpy(), agg.index.get_level_values(1).to_numpy().view(np.uint64)
        par = cell >> np.uint64(SHIFTS[level - 1] - SHIFTS[level]) if level else np.zeros_like(cell)
        out.append(_frame(meta, keys, g, {
            FIG: f, CLS: c, PAR: par.view(np.int64), CELL: cell.view(np.int64), CNT: agg["size"].to_numpy(),
            VMIN: agg["min"].to_numpy(), VMAX: agg["max"].to_numpy()}))
    return _finish(out, meta)


def _gather_partition(pdf, spec, meta, targets, partition_info=None) -> pd.DataFrame:
    """The values inside the target cells: ``targets[(fig, cls)][shift]`` = {key tuple: uint64 cell prefixes}."""
    scored, kept, _ = _scored(pdf, spec)
    if scored is None:
        return meta.copy()
    keys, tuples = _local_keys(kept, scored, spec.by)
    out = []
    for f, c, values in _dd_sources(scored, spec):
        per_shift = targets.get((f, c))
        if not per_shift:
            continue
        bits = _ordered_bits(values)
        for shift, wanted in per_shift.items():
            sel = np.flatnonzero(_rows_in(scored.group_codes, bits, tuples, wanted, shift))
            if not len(sel):
                continue
            g = scored.group_codes[sel].astype(np.int64)
            out.append(_frame(meta, keys, g, {FIG: f, CLS: c, SHIFT: shift,
                                              CELL: (bits[sel] >> np.uint64(shift)).view(np.int64),
                                              VAL: np.asarray(values, dtype=np.float64)[sel]}))
    return _finish(out, meta)


def _dd_bins(values: np.ndarray, scored: Scored, tuples: list[tuple], spec: _Spec, plan: dict, f: int, c: int) -> Bins:
    """Bins of one partition's rows on the exact global per-group edges computed on the client."""
    key_index, table = plan["key_index"], plan["edges"][(f, c)]
    segs = []
    for t in tuples:
        if t not in key_index:
            raise RuntimeError(f"{spec.func}: group {t} appeared after the edges were computed (was the data changed?)")
        segs.append(table[key_index[t]])
    offsets = np.zeros(len(segs) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in segs], out=offsets[1:])
    edges = np.concatenate(segs)
    qcut = spec.binning.scheme == "quantile"
    ids = K.assign_bins(np.ascontiguousarray(values, dtype=np.float64), scored.groups, edges, offsets, qcut)
    width = max(len(s) for s in segs)
    return Bins(ids, max(width - 1, 1) if qcut else width, edges, offsets, spec.binning)


def _companion_values(name: str, scored: Scored) -> np.ndarray:
    if name == "brier":
        return E_.brier_rows(scored)
    if name == "log_loss":
        return E_.log_loss_rows(scored)
    return L.top1(scored)[1].astype(np.float64)


def _sums_partition(pdf, spec, meta, plan, partition_info=None) -> pd.DataFrame:
    """:func:`_sums_rows`, guarded (:func:`_guarded`)."""
    part = 0 if partition_info is None else int(partition_info["number"])
    return _guarded(_sums_rows, pdf, spec, meta, plan, part)


def _sums_rows(pdf, spec, meta, plan, part) -> pd.DataFrame:
    """Per (group key, figure, class, bin): rows, sum w, sum w*conf, sum w*acc (calframe's binned_sums)."""
    scored, kept, dropped = _scored(pdf, spec)
    out = _marker(pdf, spec, meta, dropped)
    if scored is None:
        return _finish(out, meta)
    if scored.keys is not None:  # an object column of dicts or lists, which the metadata did not show
        _refuse_nested_keys(spec.func, dict(scored.keys.schema))
    keys, tuples = _local_keys(kept, scored, spec.by)
    # each group's weights are divided by a power of two of this partition's (resolve); the client brings
    # every partition's sums to the group's own scale (_rescale)
    exps = np.broadcast_to(np.frexp(scored.weight_scale)[1] - 1, (scored.n_groups,)).astype(np.int64)
    if spec.companion is not None:
        values = np.ascontiguousarray(_companion_values(spec.companion, scored), dtype=np.float64)
        # as eager.group_means: a one-bin accumulate of the row values
        s = K.accumulate(scored.groups, None, values, values, scored.weights, np.array([0.0, 1.0]), False,
                         scored.n_groups, 1)
        counts = np.bincount(scored.group_codes, minlength=scored.n_groups).astype(np.int64)
        out.append(_frame(meta, keys, np.arange(scored.n_groups), {ROWS: counts, N: s[:, 0, 0], SC: s[:, 0, 1],
                                                                           EXP: exps}))
        return _finish(out, meta)
    unweighted = replace(scored, weights=None)
    for f, mode in enumerate(spec.modes):
        var = spec.variables[f] if spec.variables else None
        extra: dict[str, Any] = {}
        binner: Any = spec.binning
        if var is not None:
            v = _variable(scored, spec, f)
            if mode == "fixed":
                binner = _checked_edges_binner(spec, var, v)
            elif mode == "cat":
                binner = E_.variable_binner(var, spec.binning)
                codes, first = _first_rows(v)
                cats = np.empty(int(codes[-1]) + 1, dtype=object)
                cats[codes] = [str(x) for x in kept[var].iloc[first].tolist()]
                pos = np.zeros(cats.shape[0], dtype=np.int64)
                pos[codes] = (part << POS_BITS) | first.astype(np.int64)
            elif mode == "dd":  # one binning of the variable, shared by every class of a marginal lens
                var_bins = _dd_bins(v, scored, tuples, spec, plan, f, 0)
                binner = lambda _s, _c, b=var_bins: b  # noqa: E731
            if mode != "cat":
                extra = {VMIN: float(v.min()), VMAX: float(v.max())}
        for c, conf, acc in _lens_outputs(scored, spec):
            if mode == "dd" and var is None:  # each class's confidence has its own edges
                conf_bins = _dd_bins(conf, scored, tuples, spec, plan, f, c)
                binner = lambda _s, _c, b=conf_bins: b  # noqa: E731
            sums, _ = E_.binned_sums(conf, acc, scored, binner)
            counts = sums[..., 0] if scored.weights is None else E_.binned_sums(conf, acc, unweighted, binner)[0][..., 0]
            g_idx, b_idx = np.nonzero(counts > 0)
            cols = {FIG: f, CLS: c, BIN: b_idx, ROWS: counts[g_idx, b_idx].astype(np.int64), N: sums[g_idx, b_idx, 0],
                    SC: sums[g_idx, b_idx, 1], SA: sums[g_idx, b_idx, 2], EXP: exps[g_idx], **extra}
            if mode == "cat":
                cols.update({BIN: 0, CAT: cats[b_idx], FIRST: pos[b_idx]})
            out.append(_frame(meta, keys, g_idx, cols))
    return _finish(out, meta)


def _gece_partition(pdf, spec, meta, gece, partition_info=None) -> pd.DataFrame:
    """:func:`_gece_rows`, guarded (:func:`_guarded`)."""
    return _guarded(_gece_rows, pdf, spec, meta, gece)


def _gece_rows(pdf, spec, meta, gece) -> pd.DataFrame:
    """The generalized ECE's per (group, class, cell) sums on one partition, in the sums frame's columns: a cell
    of uniform(bins) on the first K' - 1 lensed coordinates (generalized.uniform_grid's cells, keyed by their
    mixed-radix index in BIN), one row per lensed coordinate j (FIG = j: SC = sum w g'_j, SA = sum w y'_j, N and
    ROWS the cell's), CLS the class of the marginal lens. ``gece``: (lensed, bins, marginal), api.gece's lens."""
    from .. import generalized as G
    from .._kernels import vector as VK

    lensed, bins, marginal = gece
    scored, kept, dropped = _scored(pdf, spec)
    out = _marker(pdf, spec, meta, dropped)
    if scored is None:
        return _finish(out, meta)
    keys, _ = _local_keys(kept, scored, spec.by)
    exps = np.broadcast_to(np.frexp(scored.weight_scale)[1] - 1, (scored.n_groups,)).astype(np.int64)
    groups = scored.group_codes.astype(np.int64)
    for c in range(scored.n_classes) if marginal else (None,):
        gp, yp = lensed(scored) if c is None else lensed(scored, c)
        gp = np.ascontiguousarray(gp, dtype=np.float64)
        m = gp.shape[1]
        if m > 1 and bins > 1:
            cell = VK.mixed_radix_keys(VK.digitize_uniform(gp, m - 1, uniform_edges(bins, "left")), None, bins)
        else:
            cell = np.zeros(gp.shape[0], dtype=np.int64)
        uniq, inv = np.unique(np.stack([groups, cell], axis=1), axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        sums = G.accumulate(gp, yp, inv, len(uniq), None, 1, scored.weights)[0]
        rows = np.bincount(inv, minlength=len(uniq)).astype(np.int64)
        g = uniq[:, 0]
        for j in range(m):
            out.append(_frame(meta, keys, g, {FIG: j, CLS: 0 if c is None else c, BIN: uniq[:, 1], ROWS: rows,
                                              N: sums[:, 0], SC: sums[:, 1 + j], SA: sums[:, 1 + m + j],
                                              EXP: exps[g]}))
    return _finish(out, meta)


def _checked_edges_binner(spec: _Spec, var: str, v: np.ndarray):
    """families.variable._checked_variable_binner's edge checks, per partition (the single-value check is global, on the client)."""
    edges = spec.binning.edges
    outside = int(((v < edges[0]) | (v > edges[-1])).sum())
    if outside:
        raise E.outside_edges(spec.func, var, outside, edges[0], edges[-1])
    return E_.variable_binner(var, spec.binning)


def _apply_partition(pdf: pd.DataFrame, rec: Any, kwargs: dict, meta: pd.DataFrame) -> pd.DataFrame:
    if len(pdf) == 0:
        out = pdf.copy()
        for c in meta.columns[len(pdf.columns):]:
            out[c] = pd.Series([], dtype=meta.dtypes[c], index=pdf.index)
        return out
    return apply_rows(pdf, rec, **kwargs, progress=False)  # a partition's task: no bar (calframe._progress)


# --------------------------------------------------------------------------- client


def _meta(key_meta: pd.DataFrame, cols: dict[str, Any]) -> pd.DataFrame:
    out = key_meta.iloc[:0].reset_index(drop=True)
    for name, dtype in cols.items():
        out[name] = pd.Series([], dtype=dtype)
    return out


def _split_markers(frame: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    marker = frame[FIG].to_numpy() < 0
    return frame[~marker].reset_index(drop=True), int(frame.loc[marker, DROP].sum())


def _raise_empty(func: str, dropped: int) -> None:
    raise E.all_rows_null(func) if dropped else E.no_rows(func)


@dataclass
class _Groups:
    """The global groups: sorted key table (as calframe builds it) and key tuple -> group index."""

    n: int
    keys: pl.DataFrame | None
    index: dict[tuple, int]

    @classmethod
    def of(cls, frame: pd.DataFrame, spec: _Spec) -> "_Groups":
        by = spec.by
        if not by:
            return cls(1, None, {(): 0})
        cols = key_names(len(by))
        gid = frame.groupby(cols, dropna=False, sort=False, observed=True).ngroup().to_numpy()
        first = np.full(gid.max() + 1, -1, dtype=np.int64)
        first[gid[::-1]] = np.arange(len(gid))[::-1]
        uniq = frame[cols].iloc[first].reset_index(drop=True)
        for c in cols:  # Dask's merge fills a missing object key (a date, ...) with NaN: the missing value is None
            if uniq[c].dtype == object:
                uniq[c] = uniq[c].where(uniq[c].notna(), None)
        # calframe's own key table, under the user's names: the same pandas -> Polars conversion as
        # resolve, then group_codes (a Categorical key, merged as strings, is a Categorical again)
        df = _select(uniq.set_axis(list(by), axis=1), list(by))
        df = df.with_columns(pl.col(c).cast(t) for c, t in zip(by, spec.key_types)
                             if isinstance(t, (pl.Categorical, pl.Enum)) and df.schema[c] != t)
        codes, n, keys = group_codes(df, list(by))
        index = {t: int(g) for t, g in zip(_key_tuples(uniq), codes)}
        return cls(n, keys, index)

    def codes(self, frame: pd.DataFrame, by: tuple[str, ...]) -> np.ndarray:
        if not by:
            return np.zeros(len(frame), dtype=np.int64)
        cols = key_names(len(by))
        gid = frame.groupby(cols, dropna=False, sort=False, observed=True).ngroup().to_numpy()
        first = np.full(gid.max() + 1 if len(gid) else 0, -1, dtype=np.int64)
        first[gid[::-1]] = np.arange(len(gid))[::-1]
        per = np.array([self.index[t] for t in _key_tuples(frame[cols].iloc[first])], dtype=np.int64)
        return per[gid] if len(gid) else gid.astype(np.int64)

    def tuples(self) -> list[list[tuple]]:
        out: list[list[tuple]] = [[] for _ in range(self.n)]
        for t, g in self.index.items():
            out[g].append(t)
        return out


class _Runner:
    """The passes over one Dask DataFrame for one request."""

    def __init__(self, ddf: Any, spec: _Spec) -> None:
        self.ddf = ddf[spec.needed]  # column projection reaches the reader (read_parquet reads only these)
        self.spec = spec
        self.key_meta = _keys_of(ddf._meta, spec.by)

    def checked(self, frame: pd.DataFrame) -> pd.DataFrame:
        """A computed pass: a partition's input error (a marker row, :func:`_guarded`) is raised again with the
        counts over every partition (:func:`_raise_totals`), else as the partition raised it."""
        err = frame[ERR].to_numpy() if ERR in frame.columns else np.empty(0, dtype=object)
        failed = [e for e in err if isinstance(e, str) and e]
        if failed:
            _raise_totals(self.ddf, self.spec)
            raise pickle.loads(base64.b64decode(failed[0]))
        return frame

    @staticmethod
    def _compute(coll: Any) -> pd.DataFrame:
        """``coll`` computed now: a later pass, run while the caller computes a result (:func:`_compute_now`)."""
        return _compute_now(coll)[0]

    def _lazy(self, fn, cols: dict, agg: dict, *args: Any) -> Any:
        """The merged per-partition frames of ``fn``: a Delayed of one small pandas frame (computes nothing)."""
        meta = _meta(self.key_meta, cols)
        parts = self.ddf.map_partitions(fn, self.spec, meta, *args, meta=meta, clear_divisions=True,
                                        enforce_metadata=False)
        keys = key_names(len(self.spec.by)) + [c for c in cols if c not in agg]
        merged = parts.groupby(keys, dropna=False, sort=False, observed=True).agg(agg, split_out=1)
        return merged.to_delayed(optimize_graph=True)[0]

    def sums_lazy(self, plan: dict | None) -> Any:
        return self._lazy(_sums_partition, SUMS_COLS, SUMS_AGG, plan)

    def hist_lazy(self, level: int, parents: dict | None) -> Any:
        return self._lazy(_hist_partition, HIST_COLS, HIST_AGG, level, parents)

    def merged(self, frame: pd.DataFrame) -> pd.DataFrame:
        """A computed merged pass as a plain frame (the group-by keys as columns), its errors raised."""
        return self.checked(frame.reset_index())

    def hist(self, level: int, parents: dict | None) -> pd.DataFrame:
        return self.merged(self._compute(self.hist_lazy(level, parents)))

    def gather(self, targets: dict) -> pd.DataFrame:
        meta = _meta(self.key_meta, GATHER_COLS)
        parts = self.ddf.map_partitions(_gather_partition, self.spec, meta, targets, meta=meta, clear_divisions=True,
                                        enforce_metadata=False)
        return self._compute(parts).reset_index(drop=True)

    # ----------------------------------------------------------------- exact edges

    def exact_edges(self, hist0: pd.DataFrame) -> tuple[dict, _Groups, dict[tuple[int, int], Bins]]:
        """Per-group edges of every data-dependent binning, computed from exact order statistics; ``hist0``: the
        level-0 histogram (:meth:`merged`)."""
        spec = self.spec
        hist, dropped = _split_markers(hist0)
        if hist.empty:
            _raise_empty(spec.func, dropped)
        groups = _Groups.of(hist, spec)
        hist["g"] = groups.codes(hist, spec.by)
        sources = sorted({(int(f), int(c)) for f, c in zip(hist[FIG], hist[CLS])})
        for f in sorted({f for f, _ in sources}):
            if spec.variables:
                sel = hist[FIG].to_numpy() == f
                if hist.loc[sel, VMIN].min() == hist.loc[sel, VMAX].max():
                    raise E.single_value_variable(spec.func, spec.variables[f])
        hist["src"] = _source_index(hist, sources) * groups.n + hist["g"].to_numpy()
        # binning's edge rule for every (source, group) segment at once: one round of histogram passes
        counts = np.bincount(hist["src"], weights=hist[CNT], minlength=len(sources) * groups.n).astype(np.int64)
        table = edge_table(counts, spec.binning,
                           take_each(counts, lambda seg, rank: self.order_stats(hist, groups, sources, seg, rank)))
        edges_plan, bins = {}, {}
        for s, (f, c) in enumerate(sources):
            edges, offsets, n_bins = pack_edges(table[s * groups.n : (s + 1) * groups.n], spec.binning)
            edges_plan[(f, c)] = [edges[offsets[g] : offsets[g + 1]] for g in range(groups.n)]
            bins[(f, c)] = Bins(None, n_bins, edges, offsets, spec.binning)
        return {"key_index": groups.index, "edges": edges_plan}, groups, bins

    def order_stats(self, hist: pd.DataFrame, groups: _Groups, sources: list, src: np.ndarray,
                    rank: np.ndarray) -> np.ndarray:
        """Exact order statistics ``rank`` (0-based) of the values of source-group ``src``.

        A node is a set of values known by its histogram (level 0: a whole
        source-group); each request is located in the cell holding its rank by
        cumulative counts. A cell whose min equals its max answers at once; a
        cell of at most GATHER_CELL values is gathered; a larger one becomes a
        node of the next, 2^20-times finer level (at most 4 levels: the last
        has one float per cell).
        """
        n_req = src.shape[0]
        out = np.full(n_req, np.nan)
        node = src.copy()  # level-0 node ids are the source-group ids
        r = rank.copy()
        active = np.arange(n_req)
        tuples = groups.tuples()
        gathers = []  # (request ids, shift, cell, rank inside the cell)
        h = hist.assign(node=hist["src"])
        for level in range(len(SHIFTS)):
            h = h.sort_values(["node", CELL], kind="stable")
            hn, cell, cnt = h["node"].to_numpy(), h[CELL].to_numpy(), h[CNT].to_numpy()
            vmin, vmax = h[VMIN].to_numpy(), h[VMAX].to_numpy()
            cum = np.cumsum(cnt)
            first = np.searchsorted(hn, node[active], side="left")
            R = cum[first] - cnt[first] + r[active]
            i = np.searchsorted(cum, R, side="right")
            inner = R - (cum[i] - cnt[i])
            done = vmin[i] == vmax[i]
            out[active[done]] = vmin[i][done]
            take = ~done & ((cnt[i] <= GATHER_CELL) | (level == len(SHIFTS) - 1))
            if take.any():
                gathers.append((active[take], SHIFTS[level], cell[i][take], inner[take], cnt[i][take]))
            refine = ~done & ~take
            if not refine.any():
                break
            ids = active[refine]
            pairs = pd.DataFrame({"src": src[ids], "par": cell[i][refine]})
            nodes = pairs.drop_duplicates().reset_index(drop=True)
            nodes["node"] = np.arange(len(nodes))
            node[ids] = pairs.merge(nodes, on=["src", "par"], how="left")["node"].to_numpy()
            r[ids] = inner[refine]
            active = ids
            parents: dict = {}
            for s, p in zip(nodes["src"], nodes["par"]):
                f, c = sources[s // groups.n]
                for t in tuples[s % groups.n]:
                    parents.setdefault((f, c), {}).setdefault(t, []).append(np.int64(p).view(np.uint64))
            h, _ = _split_markers(self.hist(level + 1, parents))
            h["src"] = self._src(h, groups, sources)
            h = h.merge(nodes.rename(columns={"par": PAR}), on=["src", PAR], how="inner")
        if gathers:
            self._gather_values(gathers, out, src, groups, sources, tuples)
        return out

    def _src(self, frame: pd.DataFrame, groups: _Groups, sources: list) -> np.ndarray:
        """Source-group id of each row: index of (figure, class) in ``sources`` * n_groups + group."""
        return _source_index(frame, sources) * groups.n + groups.codes(frame, self.spec.by)

    def _gather_values(self, gathers, out, src, groups, sources, tuples) -> None:
        ids = np.concatenate([g[0] for g in gathers])
        req = pd.DataFrame({
            "src": src[ids],
            SHIFT: np.concatenate([np.full(len(g[0]), g[1]) for g in gathers]).astype(np.int64),
            CELL: np.concatenate([g[2] for g in gathers]),
            "inner": np.concatenate([g[3] for g in gathers]),
            CNT: np.concatenate([g[4] for g in gathers]),
        })
        cells = req[["src", SHIFT, CELL, CNT]].drop_duplicates(["src", SHIFT, CELL]).reset_index(drop=True)
        cells["t"] = np.arange(len(cells))
        targets: dict = {}
        for s, sh, ce in zip(cells["src"], cells[SHIFT], cells[CELL]):
            f, c = sources[s // groups.n]
            for t in tuples[s % groups.n]:
                targets.setdefault((f, c), {}).setdefault(int(sh), {}).setdefault(t, []).append(
                    np.int64(ce).view(np.uint64))
        got = self.gather(targets)
        got["src"] = self._src(got, groups, sources)
        got = got.merge(cells[["src", SHIFT, CELL, "t"]], on=["src", SHIFT, CELL], how="inner")
        got = got.sort_values(["t", VAL], kind="stable")
        starts = np.searchsorted(got["t"].to_numpy(), np.arange(len(cells) + 1), side="left")
        if not np.array_equal(np.diff(starts), cells[CNT].to_numpy()):
            raise RuntimeError(
                f"{self.spec.func}: the data changed between passes over the Dask DataFrame (a cell held a different "
                "number of values); exact edges need the same rows on every pass: persist() a random or live source."
            )
        t_req = req.merge(cells[["src", SHIFT, CELL, "t"]], on=["src", SHIFT, CELL], how="left")["t"].to_numpy()
        out[ids] = got[VAL].to_numpy()[starts[t_req] + req["inner"].to_numpy()]


# --------------------------------------------------------------------------- input errors, counted over all partitions


def _check_plan(spec: _Spec, frame: pd.DataFrame, variable: str | None) -> Any:
    """The LazyFrame engine's check plan (:func:`.lazy.make_plan`) of ``spec`` on ``frame``'s columns."""
    lens = spec.lens if spec.lens is not None and spec.lens.kind != "marginal" else L.Lens("top1")
    binning = spec.binning or make_binning(spec.func, "uniform", 15, "left")
    lf = _select(frame, list(frame.columns), spec.func, nan_null=[spec.label]).lazy()  # as resolve converts
    req = Request(spec.func, "ce", spec.func, spec.prob if isinstance(spec.prob, str) else list(spec.prob),
                  spec.label, list(spec.by) or None, spec.weights, spec.nulls, lens, binning,
                  variables=() if variable is None else (variable,))
    plan = LZ.make_plan(lf, req)
    plan.variables = list(spec.variables) or None
    return plan, lf


def _partition_stats(pdf: pd.DataFrame, spec: _Spec) -> list[dict[str, Any]]:
    """Per variable (one entry without variables): the counts calframe's ordered checks read, on one partition."""
    out = []
    for v in spec.variables or (None,):
        plan, lf = _check_plan(spec, pdf, v)
        st = LZ._detail_stats(plan, lf)
        st["outside_labels"] = LZ._outside_labels(plan, lf) if st.get("label_outside") else []
        out.append(st)
    return out


def _merge_stats(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Partition stats combined: counts added, minima / maxima / worst row sums and the first labels kept."""
    lowest, highest = {"prob_lo", "var_min"}, {"prob_hi", "var_max"}
    out: dict[str, Any] = {"nulls": {}, "outside_labels": []}
    for st in parts:
        for k, v in st.items():
            if k == "nulls":
                for c, n in v.items():
                    out["nulls"][c] = out["nulls"].get(c, 0) + n
            elif k == "outside_labels":
                out[k] = sorted(set(out[k]) | set(v))[:5]
            elif k == "var_unique" or v is None:
                continue  # distinct counts do not add (the single-value check runs on the merged sums)
            elif k == "sum_worst":
                if out.get(k) is None or abs(v - 1.0) > abs(out[k] - 1.0):
                    out[k] = v
            elif k in lowest or k in highest:
                out[k] = v if out.get(k) is None else (min if k in lowest else max)(out[k], v)
            else:
                out[k] = out.get(k, 0) + v
    return out


def _raise_totals(ddf: Any, spec: _Spec) -> None:
    """Raise calframe's first input error for the whole Dask frame, with counts over every partition.

    A partition's own check only sees its rows; this pass gathers every
    partition's counts (a small dict each) and runs the eager path's checks, in
    its order and with its messages, on the totals. Returns if they all pass.
    """
    import dask

    parts = _compute_now(*[dask.delayed(_partition_stats)(p, spec) for p in ddf.to_delayed()])
    for i, v in enumerate(spec.variables or (None,)):
        plan, lf = _check_plan(spec, ddf._meta, v)
        LZ._run_checks(plan, _merge_stats([p[i] for p in parts]), lf)


def _source_index(frame: pd.DataFrame, sources: list[tuple[int, int]]) -> np.ndarray:
    """Index in ``sources`` of each row's (figure, class)."""
    f, c = frame[FIG].to_numpy(), frame[CLS].to_numpy()
    lut = np.full((max(s[0] for s in sources) + 1, max(s[1] for s in sources) + 1), -1, dtype=np.int64)
    for i, (sf, sc) in enumerate(sources):
        lut[sf, sc] = i
    return lut[f, c]


def _sums_array(frame: pd.DataFrame, g: np.ndarray, n_groups: int, n_bins: int, b: np.ndarray):
    """(sums (n_groups, n_bins, 3), row counts (n_groups, n_bins)) from merged rows."""
    check_cells(n_groups, n_bins)
    sums = np.zeros((n_groups, n_bins, 3))
    counts = np.zeros((n_groups, n_bins), dtype=np.int64)
    for j, col in enumerate((N, SC, SA)):
        np.add.at(sums[..., j], (g, b), frame[col].to_numpy())
    np.add.at(counts, (g, b), frame[ROWS].to_numpy())
    check_weight_sums(sums)
    return sums, counts


def _rescale(frame: pd.DataFrame, g: np.ndarray, n_groups: int) -> np.ndarray:
    """Bring every partition's weighted sums (in place) to its group's scale, the eager one: 2^E with E the largest
    exponent of the group's partitions that hold weight (the exponent of the group's maximum weight). Returns the
    per-group scales 2^E (``Scored.weight_scale``). Multiplying by a power of two is exact (but where a partition's
    sum falls below float64's normal range at the group's scale, as eager sums of such weights do)."""
    e = frame[EXP].to_numpy().astype(np.int64)
    top = np.full(n_groups, np.iinfo(np.int64).min)
    np.maximum.at(top, g, np.where(frame[N].to_numpy() > 0, e, np.iinfo(np.int64).min))
    top = np.where(top == np.iinfo(np.int64).min, 0, top)
    shift = e - top[g]
    if shift.any():
        for col in (N, SC, SA):
            frame[col] = np.ldexp(frame[col].to_numpy(), shift)
    return np.ldexp(1.0, top)


# --------------------------------------------------------------------------- the engine

#: the public functions this engine runs; calframe.frames.dispatch refuses the others on a Dask frame
SUPPORTED = ("ce", "ece", "mce", "rmsce", "vece", "vmce", "reliability", "brier", "log_loss", "accuracy", "summary",
             "gece", "vece_rank", "vce_curve", "fit", "apply")
#: those of SUPPORTED that need the rows themselves: their needed columns are computed into one pandas frame
#: (:func:`collected`); so are bootstrap intervals (``ci=``) of any figure
COLLECTED = ("vece_rank", "vce_curve", "fit")


def _spec(ddf: Any, req: Request, **kw: Any) -> _Spec:
    """Validate the request's columns against the Dask metadata (names, duplicates; ``by`` against the result's
    columns) and fix the default column names."""
    func, by = req.func, req.by
    meta = ddf._meta
    F.check_by_names(func, by, F.result_columns(req), meta)
    try:
        resolve(meta, func=func, prob=req.prob, label=req.label, by=by, weights=req.weights, nulls=req.nulls,
                extra=list(req.variables))
    except EmptyInputError:
        pass  # metadata has no rows: everything up to the row checks passed
    names = [str(c) for c in meta.columns]
    prob = req.prob if req.prob is not None else _pick_default(names, PROB_CANDIDATES, "probability", "prob", func)
    label = req.label if req.label is not None else _pick_default(names, LABEL_CANDIDATES, "label", "label", func)
    by_ = () if by is None else ((by,) if isinstance(by, str) else tuple(by))
    prob_ = prob if isinstance(prob, str) else tuple(prob)
    key_types = _select(meta, list(by_), func).schema if by_ else {}
    _refuse_nested_keys(func, dict(key_types))
    return _Spec(func, prob_, label, by_, req.weights, req.nulls, variables=req.variables,
                 key_types=tuple(key_types.values()), lens=req.lens, binning=req.binning, **kw)


@dataclass
class _Merged:
    """The merged per (group, figure, class, bin) sums of one request (weights divided by ``weight_scale``, one
    power of two per group), their global groups, row counts per group and data-dependent Bins."""

    spec: _Spec
    frame: pd.DataFrame
    groups: _Groups
    counts: np.ndarray
    g: np.ndarray
    bins: dict
    weight_scale: np.ndarray

    def figure_sums(self, f: int, c: int) -> tuple[np.ndarray, np.ndarray, Bins]:
        return _figure_sums(self.spec, self.frame, self.groups, self.g, self.bins, f, c)


def _pass(ddf: Any, spec: _Spec, gece: Any = None) -> tuple[Any, Callable[[pd.DataFrame], _Merged]]:
    """A request's first pass over the partitions, lazy (a Delayed of a small merged frame), and the client's
    continuation from its value to the :class:`_Merged` sums. Fixed bins: the sums pass itself. Data-dependent
    bins: the level-0 histogram; the continuation computes the edges and the sums pass (further passes, run
    while the caller computes). ``gece``: the generalized ECE's cell sums instead (:func:`_gece_rows`)."""
    runner = _Runner(ddf, spec)
    if gece is not None:
        first = runner._lazy(_gece_partition, SUMS_COLS, SUMS_AGG, gece)
        return first, lambda frame: _merged(spec, runner.merged(frame), None, {})
    if "dd" not in spec.modes:
        return runner.sums_lazy(None), lambda frame: _merged(spec, runner.merged(frame), None, {})

    def then(hist0: pd.DataFrame) -> _Merged:
        plan, groups, dd_bins = runner.exact_edges(runner.merged(hist0))
        return _merged(spec, runner.merged(runner._compute(runner.sums_lazy(plan))), groups, dd_bins)

    return runner.hist_lazy(0, None), then


def _merged(spec: _Spec, frame: pd.DataFrame, groups: _Groups | None, dd_bins: dict) -> _Merged:
    frame, dropped = _split_markers(frame)
    if frame.empty:
        _raise_empty(spec.func, dropped)
    if groups is None:
        groups = _Groups.of(frame, spec)
    g = groups.codes(frame, spec.by)
    first = (frame[FIG].to_numpy() == 0) & (frame[CLS].to_numpy() == 0)
    counts = np.bincount(g[first], weights=frame.loc[first, ROWS].to_numpy(), minlength=groups.n).astype(np.int64)
    E.warn_nulls_dropped(spec.func, dropped, int(counts.sum()))
    scale = _rescale(frame, g, groups.n)
    if spec.weights:  # the eager rule on the totals over every partition
        totals = np.bincount(g[first], weights=frame.loc[first, N].to_numpy(), minlength=groups.n)
        check_group_weights(spec.func, spec.weights, totals, counts, groups.keys)
    return _Merged(spec, frame, groups, counts, g, dd_bins, scale)


def _figure_sums(spec: _Spec, frame: pd.DataFrame, groups: _Groups, g: np.ndarray, dd_bins: dict, f: int,
                 c: int) -> tuple[np.ndarray, np.ndarray, Bins]:
    sel = (frame[FIG].to_numpy() == f) & (frame[CLS].to_numpy() == c)
    part = frame[sel]
    mode = spec.modes[f]
    if mode == "cat":
        first = part.groupby(CAT, sort=False)[FIRST].min().sort_values(kind="stable")
        if len(first) == 1 and spec.variables:
            raise E.single_value_variable(spec.func, spec.variables[f])
        rank = pd.Series(np.arange(len(first)), index=first.index)
        b = rank.loc[part[CAT]].to_numpy()
        bins = Bins(None, len(first), np.empty(0), None, spec.binning)
    elif mode == "dd":
        bins = dd_bins[(f, c if not spec.variables else 0)]
        b = part[BIN].to_numpy()
    else:
        if spec.variables and part[VMIN].min() == part[VMAX].max():
            raise E.single_value_variable(spec.func, spec.variables[f])
        edges = np.asarray(spec.binning.edges) if spec.binning.edges is not None else uniform_edges(
            spec.binning.bins, spec.binning.closed)
        bins = Bins(None, spec.binning.bins, edges, None, spec.binning)
        b = part[BIN].to_numpy()
    sums, counts = _sums_array(part, g[sel], groups.n, max(bins.n_bins, int(b.max()) + 1 if len(b) else 1), b)
    return sums, counts, bins


def _modes(ddf: Any, req: Request) -> tuple[str, ...]:
    """Per figure: "fixed" (uniform bins or explicit edges), "cat" (a categorical variable), "dd" (quantile /
    equal-mass edges)."""
    if not req.variables:
        return ("fixed" if req.binning.scheme == "uniform" else "dd",)
    meta = ddf._meta
    modes = []
    for v in req.variables:
        if v not in meta.columns:
            modes.append("fixed")  # _spec raises calframe's missing-column error
            continue
        dt = meta[v].dtype
        numeric = pd.api.types.is_numeric_dtype(dt) and not pd.api.types.is_bool_dtype(dt)
        modes.append("cat" if not numeric else "fixed" if req.binning.edges is not None else "dd")
    if req.binning.edges is not None and "cat" in modes:
        cat = req.variables[modes.index("cat")]
        _spec(ddf, req)  # column errors first
        raise E.edges_need_numeric_variable(req.func, cat)
    return tuple(modes)


class DaskResult(DaskMethodsMixin):
    """A calframe result on a Dask DataFrame, not computed yet: ``.compute()``, or ``dask.compute(a, b, ...)`` to
    compute several in one run (their passes share the reads of the partitions).

    The graph holds the first pass over the partitions (per-partition sums, merged by Dask into one small
    frame); the rest (finalizing the figures, and for exact quantile / equal-mass edges the further passes) runs
    where Dask finalizes the computation (the calling process, or a worker under ``distributed``), with
    calframe's warnings and errors (counts over every partition) raised there. Computes to what calframe
    returns for the computed pandas frame.
    """

    __slots__ = ("_first", "_then", "_what")

    def __init__(self, first: Any, then: Callable[[Any], Any], what: str) -> None:
        self._first, self._then, self._what = first, then, what

    def __dask_graph__(self) -> Any:
        return self._first.__dask_graph__()

    def __dask_keys__(self) -> Any:
        return self._first.__dask_keys__()

    def __dask_layers__(self) -> Any:
        return self._first.__dask_layers__()

    def __dask_tokenize__(self) -> Any:
        return ("calframe.DaskResult", self._first.key, id(self))

    def __dask_optimize__(self, dsk: Any, keys: Any, **kwargs: Any) -> Any:
        return self._first.__dask_optimize__(dsk, keys, **kwargs)

    @staticmethod
    def __dask_scheduler__(*args: Any, **kwargs: Any) -> Any:
        import dask.threaded

        return dask.threaded.get(*args, **kwargs)

    def __dask_postcompute__(self) -> Any:
        finish, args = self._first.__dask_postcompute__()
        return _then, (finish, args, self._then)

    def __repr__(self) -> str:
        return f"DaskResult({self._what}: not computed yet; .compute() or dask.compute(...))"


def _then(results: Any, finish: Any, args: tuple, then: Callable[[Any], Any]) -> Any:
    """A result's continuation, where Dask finalizes a computation: in the caller's process on the threaded and
    synchronous schedulers, on a worker under ``distributed`` (whose warnings are then sent to the client)."""
    value = finish(results, *args)
    if not _on_worker():
        return then(value)
    import distributed

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = then(value)
    for w in caught:
        distributed.warn(w.message, w.category)
    return out


def _on_worker() -> bool:
    """Whether this runs in a task on a ``distributed`` worker."""
    try:
        from distributed import get_worker

        get_worker()
    except (ImportError, ValueError):
        return False
    return True


def _compute_now(*colls: Any) -> tuple:
    """``dask.compute(*colls)`` from a result's continuation: on a ``distributed`` worker, through the worker's
    client, the task seceding from the worker's threads while it waits (so the passes it starts can run)."""
    import dask

    if not _on_worker():
        return dask.compute(*colls)
    from distributed import worker_client

    with worker_client() as client:
        return tuple(client.gather(client.compute(list(colls))))


def result(what: str, parts: Sequence[tuple[Any, Callable[[Any], Any]]], assemble: Callable[..., Any]) -> DaskResult:
    """One lazy result from the first passes ``parts`` (``(Delayed, continuation)`` each, :func:`_pass`):
    ``assemble(*continued values)`` when computed."""
    import dask

    def then(values: list) -> Any:
        return assemble(*[cont(v) for (_, cont), v in zip(parts, values)])

    return DaskResult(dask.delayed(list)([d for d, _ in parts]), then, what)


def collected(what: str, ddf: Any, columns: Sequence[Any], eager: Callable[[pd.DataFrame], Any]) -> DaskResult:
    """``eager`` (calframe on pandas) run on ``ddf[columns]`` computed into one pandas frame: the
    figures that need the rows themselves (bootstrap intervals, LOESS curves, fits). The same rows in the same
    order as ``ddf.compute()``, so the same result, bit for bit."""
    import dask

    from .._progress import carry  # the call's progress= holds where the result is computed (off on a worker)

    return DaskResult(dask.delayed(_identity)(ddf[list(dict.fromkeys(columns))]), carry(eager), what)


def needed(ddf: Any, req: Request) -> list[str]:
    """The columns ``req`` reads (its columns checked against the Dask metadata now)."""
    return _spec(ddf, req).needed


def _identity(frame: pd.DataFrame) -> pd.DataFrame:
    return frame


def _eager_figures(req: Request, figures: dict | None, frame: pd.DataFrame, **kw: Any) -> Any:
    """The eager engine's run of ``req`` on a pandas frame (what calframe's functions do for pandas)."""
    from .eager import _evaluate, ce_figures

    return _evaluate(req, frame, figures or ce_figures(req), **kw)


def run(ddf: Any, req: Request, figures: dict | None = None) -> DaskResult:
    """A parsed request on a Dask DataFrame, lazy: sums per partition, added by Dask, finalized by
    :mod:`calframe.figures` on the client. ``figures``: the eager engine's figures of the request, for ``ci=``
    (the bootstrap resamples rows within groups: the needed columns are collected, :func:`collected`)."""
    if req.ci is not None:
        return collected(req.func, ddf, _spec(ddf, req).needed, partial(_eager_figures, req, figures))
    if req.sweep:
        raise ParameterError(
            f"The 'binning' parameter of {req.func}: 'sweep' is not available on Dask DataFrames (it sorts each "
            "group's rows and tries bin counts one by one); there: 'uniform', 'quantile', 'equal_mass' or explicit "
            f"edges. Sweep on the collected frame (calframe.{req.func}(ddf.compute(), binning='sweep')) or on a "
            "sample.", "binning")
    if req.kind == "companion":
        spec = _spec(ddf, req, companion=req.func)
        return result(req.func, [_pass(ddf, spec)], partial(_companion_result, req))
    spec = _spec(ddf, req, modes=_modes(ddf, req))
    if req.kind == "reliability":
        return result(req.func, [_pass(ddf, spec)], _reliability_result)
    return result(req.func, [_pass(ddf, spec)], partial(_ce_result, req))


def _companion_figure(m: _Merged) -> np.ndarray:
    sums, _ = _sums_array(m.frame, m.g, m.groups.n, 1, np.zeros(len(m.frame), dtype=np.int64))
    return F.companion(sums)


def _companion_result(req: Request, m: _Merged) -> Any:
    return F.shape(req, {req.name: _companion_figure(m)}, m.counts, m.groups.keys, "pandas")


def _reliability_result(m: _Merged) -> pd.DataFrame:
    sums, counts, bins_ = m.figure_sums(0, 0)
    return F.to_flavor(F.reliability_table(sums, counts, bins_, m.groups.keys), "pandas")


def _ce_value(req: Request, m: _Merged, f: int = 0) -> np.ndarray:
    """The CE_p figure of ``req`` on figure ``f``'s merged sums (a variable's, for several variables)."""
    n_classes = int(m.frame[CLS].max()) + 1
    return F.binned(req, lambda c: m.figure_sums(f, c)[0], n_classes, m.weight_scale)


def _ce_values(req: Request, m: _Merged) -> dict[str, np.ndarray]:
    """The CE_p figures of ``req`` (one per variable for several) from the merged sums."""
    return {name: _ce_value(req, m, f) for f, name in enumerate(req.figure_names)}


def _ce_result(req: Request, m: _Merged) -> Any:
    return F.shape(req, _ce_values(req, m), m.counts, m.groups.keys, "pandas")


def summary(ddf: Any, req: Request, figures: dict) -> DaskResult:
    """:func:`calframe.summary` (``figures``: the eager engine's, for ``ci=``, which collects the needed columns).
    Its figures come from exact sums, in one graph: the uniform bins' sums (ECE, MCE, RMSCE and, with weights,
    the debiased figure), the equal-mass sums of the debiased figure (its exact edges: further passes when
    computed), and the one-bin sums of accuracy, Brier score and log loss."""
    from ..request import summary_parts

    F.check_by_names(req.func, req.by, F.output_columns(list(figures), req.ci), ddf._meta)
    if req.ci is not None:
        return collected(req.func, ddf, _spec(ddf, req).needed, partial(_eager_figures, req, figures, scalar=False))
    parts = summary_parts(req)
    debiased = parts["ce_debiased"]
    passes = [_pass(ddf, _spec(ddf, req, modes=("fixed",)))]
    if debiased.binning != req.binning:
        passes.append(_pass(ddf, _spec(ddf, debiased, modes=("dd",))))
    companions = ("accuracy", "brier", "log_loss")
    passes += [_pass(ddf, _spec(ddf, req, companion=c)) for c in companions]

    def assemble(uniform: _Merged, *rest: _Merged) -> Any:
        ms = dict(zip(companions, rest[-3:]))
        values = {"accuracy": _companion_figure(ms["accuracy"])}
        for name, sub in parts.items():
            values[name] = _ce_value(sub, rest[0] if name == "ce_debiased" and len(rest) == 4 else uniform)
        values.update(brier=_companion_figure(ms["brier"]), log_loss=_companion_figure(ms["log_loss"]))
        return F.shape(req, values, uniform.counts, uniform.groups.keys, "pandas", scalar=False)

    return result(req.func, passes, assemble)


def gece(ddf: Any, req: Request, figures: dict, lensed: Callable[..., Any], rows: Callable[[pd.DataFrame], Any],
         needs_rows: bool) -> DaskResult:
    """:func:`calframe.gece`: uniform bins from exact per (group, cell) sums (:func:`_gece_rows`, finalized by
    :func:`calframe.generalized.gece_from_sums`). Adaptive bins, row selections (``where``, ``labels_in``,
    ``output_between``: ``needs_rows``), ``ci=`` and class probabilities in one Array/List column collect the
    needed columns (all columns with ``where``) and run ``rows`` (the eager call) on them."""
    spec = _spec(ddf, req)
    F.check_by_names(req.func, req.by, F.output_columns(list(figures), req.ci), ddf._meta)
    scheme, bins = req.options.binning
    one_column = isinstance(spec.prob, str) and not pd.api.types.is_numeric_dtype(ddf._meta[spec.prob].dtype)
    if needs_rows or req.ci is not None or scheme != "uniform" or one_column:
        return collected(req.func, ddf, list(ddf.columns) if needs_rows else spec.needed, rows)
    marginal = req.options.lens == "marginal"
    return result(req.func, [_pass(ddf, spec, (lensed, int(bins), marginal))],
                  lambda m: F.shape(req, {"gece": _gece_value(req, m, marginal)}, m.counts, m.groups.keys, "pandas"))


def _gece_value(req: Request, m: _Merged, marginal: bool) -> np.ndarray:
    """GECE per group from the merged cell sums (:func:`_gece_rows`); the marginal lens combines the classes'."""
    from .. import generalized as G

    frame, per = m.frame, []
    for c in np.unique(frame[CLS].to_numpy()):
        sel = frame[CLS].to_numpy() == c
        part, g = frame[sel], m.g[sel]
        j = part[FIG].to_numpy()
        width = int(j.max()) + 1
        uniq, inv = np.unique(np.stack([g, part[BIN].to_numpy()], axis=1), axis=0, return_inverse=True)
        rank = np.arange(len(uniq)) - np.searchsorted(uniq[:, 0], uniq[:, 0], side="left")  # the cell in its group
        b = rank[inv.reshape(-1)]
        n_bins = int(b.max()) + 1
        check_cells(m.groups.n, n_bins, 1 + 2 * width)
        sums = np.zeros((m.groups.n, n_bins, 1 + 2 * width))
        first = j == 0
        np.add.at(sums[..., 0], (g[first], b[first]), part[N].to_numpy()[first])
        np.add.at(sums, (g, b, 1 + j), part[SC].to_numpy())
        np.add.at(sums, (g, b, 1 + width + j), part[SA].to_numpy())
        per.append(G.gece_from_sums(sums, req.p, req.options.distance))
    return G.gece_marginal(np.stack(per), req.p) if marginal else per[0]


def apply(ddf: Any, recalibrator: Any, kwargs: dict[str, Any]) -> Any:
    """:func:`calframe.apply` (which checked ``recalibrator`` and named the output) per partition: a lazy Dask
    DataFrame with the recalibrated column(s) added."""
    name = kwargs["name"]
    meta = ddf._meta
    try:  # missing columns are reported now, not at compute time
        apply_rows(meta, recalibrator, **kwargs)
    except EmptyInputError:
        pass
    out_meta = meta.copy()
    if recalibrator.output == "probs" and not recalibrator.meta.get("binary", True):
        out_meta[name] = pd.Series([], dtype=object)
        out_meta[f"{name}_conf"] = pd.Series([], dtype=np.float64)
    else:
        out_meta[name] = pd.Series([], dtype=np.float64)
    return ddf.map_partitions(_apply_partition, recalibrator, kwargs, out_meta, meta=out_meta)
