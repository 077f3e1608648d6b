"""The Dask engine's partitions (:mod:`calframe.engines.partitions.client`): the internal columns of the per-partition frames,
the request shipped to every partition (``Spec``) and what a worker runs on one partition: resolve, lens, bin and
accumulate (the sums), the histograms and gathered values of exact edges, the generalized ECE's cell sums, apply's
rows, and the counts of the input checks (merged on the client, :func:`calframe.engines.partitions.client._raise_totals`).
Nothing here imports Dask."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from ..._imports import pd  # imported at first use
import polars as pl
import pyarrow as pa

from ..streaming import streamed as LZ
from .. import eager as E_
from ...families.applying import apply_rows
from ...request import Request
from ... import lenses as L
from ... import row_sums as RS
from ..._columns import Scored, resolve
from ...frames.convert import select
from ..._names import key_names
from ..._errors import CalframeError, ColumnTypeError, error_text, list_lengths_differ
from ..._imports import LazyModule
from ..._limits import check_cells

K = LazyModule("calframe._kernels.accumulate")  # numba kernels: imported at first use
from ...binning import Binning, Bins, check_variable, make_binning, uniform_edges

# internal columns of the per-partition frames; the group keys travel in them under positional names
# (keys_of: __cf_key0, ...), so no user column, whatever its name, meets an internal one
FIG, CLS, BIN, CAT, FIRST = "__cf_fig", "__cf_cls", "__cf_bin", "__cf_cat", "__cf_first"
ROWS, N, SC, SA, VMIN, VMAX, DROP = "__cf_rows", "__cf_n", "__cf_sc", "__cf_sa", "__cf_vmin", "__cf_vmax", "__cf_drop"
#: the exponent e of the power of two 2^e a partition divided a group's weights by (a key of the merge, not summed)
EXP = "__cf_exp"
PAR, CELL, CNT, SHIFT, VAL = "__cf_par", "__cf_cell", "__cf_cnt", "__cf_shift", "__cf_val"
#: a partition's input error (JSON text, :func:`~calframe._errors.error_text`) on a marker row (fig = -2): the client
#: raises it, counted over every partition (:meth:`dask.Runner.checked`)
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
#: category first-appearance position = partition number << POS_BITS | row within the partition
POS_BITS = 40


# --------------------------------------------------------------------------- request


@dataclass(frozen=True)
class Spec:
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


def key_tuples(keys: pd.DataFrame) -> list[tuple]:
    cols = [keys[c].tolist() for c in keys.columns]
    return [tuple(_norm(v) for v in row) for row in zip(*cols)] if cols else [()] * len(keys)


def scored_partition(pdf: pd.DataFrame, spec: Spec) -> tuple[Scored | None, pd.DataFrame, int]:
    """calframe's resolve on one partition: (Scored or None when no rows remain, the kept rows, rows dropped)."""
    dropped = 0
    if len(pdf) and spec.nulls == "drop":
        w = [spec.weights] if spec.weights else []
        checked = list(dict.fromkeys(spec.prob_cols + [spec.label] + w + list(spec.variables)))
        isnull = select(pdf, checked, spec.func, nan_null=[spec.label]).select(pl.any_horizontal(pl.all().is_null())).to_series().to_numpy()
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


def keys_of(frame: pd.DataFrame, by: tuple[str, ...], rows: Any = slice(None)) -> pd.DataFrame:
    """The ``by`` columns of ``frame``'s ``rows`` under their positional internal names (key_names), index 0..n-1.

    An Arrow dictionary column (a Polars Categorical converted to Arrow-backed pandas) becomes its values'
    Arrow type: Dask's merge cannot concatenate dictionary columns holding nulls. (The key table gets the
    eager path's Categorical back from ``Spec.key_types``.) A float key takes calframe's one key value
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


def refuse_nested_keys(func: str, keys: dict[str, Any]) -> None:
    """Struct, List and Array group keys (``keys``: name -> Polars dtype) are for eager and lazy frames only."""
    for name, dtype in keys.items():
        if isinstance(dtype, (pl.Struct, pl.List, pl.Array)):
            raise ColumnTypeError(
                f"{func}: group key column {name!r} has dtype {dtype}; Struct, List and Array keys work on eager "
                "and lazy frames, not on Dask DataFrames (Dask cannot merge the partitions' groups by them). "
                f"Turn the key into strings first (e.g. ddf = ddf.assign(**{{{name!r}: ddf[{name!r}].astype(str)}})), or "
                "compute the frame (ddf.compute()) and pass that."
            )


def local_keys(pdf: pd.DataFrame, scored: Scored, by: tuple[str, ...]) -> tuple[pd.DataFrame | None, list[tuple]]:
    """Key values of the partition's groups (row g = local code g), in the partition's own dtypes."""
    if not by:
        return None, [()]
    codes, first = _first_rows(scored.groups)  # group codes are 0..n_groups - 1, all present
    keys = keys_of(pdf, by, first)
    return keys, key_tuples(keys)


def partition_frame(meta: pd.DataFrame, keys: pd.DataFrame | None, g: np.ndarray, cols: dict[str, Any]) -> pd.DataFrame:
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


def finish(frames: list[pd.DataFrame], meta: pd.DataFrame) -> pd.DataFrame:
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else meta.copy()


def partition_marker(pdf: pd.DataFrame, spec: Spec, meta: pd.DataFrame, dropped: int) -> list[pd.DataFrame]:
    """A row carrying the partition's count of null-dropped rows (fig = -1; keys of its first row for valid dtypes)."""
    if not dropped:
        return []
    keys = keys_of(pdf, spec.by, slice(0, 1)) if spec.by else None
    return [partition_frame(meta, keys, np.zeros(1, dtype=np.int64), {FIG: -1, DROP: dropped})]


def _lens_outputs(scored: Scored, spec: Spec) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """(class, conf, acc) per binned lens output: one for top1/class:c, K for the marginal average."""
    lens = spec.lens
    if lens.kind != "marginal":
        return [(0, *L.scalar(scored, lens, spec.func))]
    return [(c, *L.class_lens(scored, c)) for c in range(scored.n_classes)]


def _variable(scored: Scored, spec: Spec, f: int) -> np.ndarray:
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


def dd_sources(scored: Scored, spec: Spec) -> list[tuple[int, int, np.ndarray]]:
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


def guarded_partition(rows: Any, pdf: pd.DataFrame, spec: Spec, meta: pd.DataFrame, *args: Any) -> pd.DataFrame:
    """``rows(pdf, spec, meta, *args)``; a calframe input error becomes a marker row (fig = -2, the error in ERR),
    so that the client raises it with the counts of every partition instead of Dask raising this partition's."""
    try:
        return rows(pdf, spec, meta, *args)
    except CalframeError as exc:
        if not len(pdf):
            raise
        keys = keys_of(pdf, spec.by, slice(0, 1)) if spec.by else None
        return partition_frame(meta, keys, np.zeros(1, dtype=np.int64), {FIG: -2, ERR: error_text(exc)})


def hist_partition(pdf, spec, meta, level, parents, partition_info=None) -> pd.DataFrame:
    """:func:`_hist_rows`, guarded (:func:`guarded_partition`)."""
    return guarded_partition(_hist_rows, pdf, spec, meta, level, parents)


def _hist_rows(pdf, spec, meta, level, parents) -> pd.DataFrame:
    """Per (group, source, cell): value count, min and max, for the cells of level ``level``.

    Level 0 covers every value; a deeper level only the values inside ``parents``
    (per (figure, class): {key tuple: uint64 cell prefixes of the previous level}).
    """
    scored, kept, dropped = scored_partition(pdf, spec)
    out = partition_marker(pdf, spec, meta, dropped)
    if scored is None:
        return finish(out, meta)
    keys, tuples = local_keys(kept, scored, spec.by)
    for f, c, values in dd_sources(scored, spec):
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
        out.append(partition_frame(meta, keys, g, {
            FIG: f, CLS: c, PAR: par.view(np.int64), CELL: cell.view(np.int64), CNT: agg["size"].to_numpy(),
            VMIN: agg["min"].to_numpy(), VMAX: agg["max"].to_numpy()}))
    return finish(out, meta)


def gather_partition(pdf, spec, meta, targets, partition_info=None) -> pd.DataFrame:
    """The values inside the target cells: ``targets[(fig, cls)][shift]`` = {key tuple: uint64 cell prefixes}."""
    scored, kept, _ = scored_partition(pdf, spec)
    if scored is None:
        return meta.copy()
    keys, tuples = local_keys(kept, scored, spec.by)
    out = []
    for f, c, values in dd_sources(scored, spec):
        per_shift = targets.get((f, c))
        if not per_shift:
            continue
        bits = _ordered_bits(values)
        for shift, wanted in per_shift.items():
            sel = np.flatnonzero(_rows_in(scored.group_codes, bits, tuples, wanted, shift))
            if not len(sel):
                continue
            g = scored.group_codes[sel].astype(np.int64)
            out.append(partition_frame(meta, keys, g, {FIG: f, CLS: c, SHIFT: shift,
                                              CELL: (bits[sel] >> np.uint64(shift)).view(np.int64),
                                              VAL: np.asarray(values, dtype=np.float64)[sel]}))
    return finish(out, meta)


def _dd_bins(values: np.ndarray, scored: Scored, tuples: list[tuple], spec: Spec, plan: dict, f: int, c: int) -> Bins:
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
    if qcut and spec.weights:  # as binning.bin_values: a row above its group's top edge (weight 0) in the last bin
        last = np.maximum(np.diff(offsets) - 2, 0)
        ids = np.minimum(ids, last[scored.group_codes]).astype(np.int32)
    width = max(len(s) for s in segs)
    return Bins(ids, max(width - 1, 1) if qcut else width, edges, offsets, spec.binning)


def _companion_values(name: str, scored: Scored, lens: Any = None, func: str = "calframe") -> np.ndarray:
    if name in RS.VALUES:  # a row value of the row sums (bias, spiegelhalter): of the request's lens
        return RS.VALUES[name](*L.scalar(scored, lens or L.AUTO, func))
    if name == "brier":
        return E_.brier_rows(scored)
    if name == "log_loss":
        return E_.log_loss_rows(scored)
    return L.top1(scored)[1].astype(np.float64)


def sums_partition(pdf, spec, meta, plan, partition_info=None) -> pd.DataFrame:
    """:func:`_sums_rows`, guarded (:func:`guarded_partition`)."""
    part = 0 if partition_info is None else int(partition_info["number"])
    return guarded_partition(_sums_rows, pdf, spec, meta, plan, part)


def _sums_rows(pdf, spec, meta, plan, part) -> pd.DataFrame:
    """Per (group key, figure, class, bin): rows, sum w, sum w*conf, sum w*acc (calframe's binned_sums)."""
    scored, kept, dropped = scored_partition(pdf, spec)
    out = partition_marker(pdf, spec, meta, dropped)
    if scored is None:
        return finish(out, meta)
    if scored.keys is not None:  # an object column of dicts or lists, which the metadata did not show
        refuse_nested_keys(spec.func, dict(scored.keys.schema))
    keys, tuples = local_keys(kept, scored, spec.by)
    # each group's weights are divided by a power of two of this partition's (resolve); the client brings
    # every partition's sums to the group's own scale (_rescale)
    exps = np.broadcast_to(np.frexp(scored.weight_scale)[1] - 1, (scored.n_groups,)).astype(np.int64)
    if spec.companion is not None:
        values = np.ascontiguousarray(_companion_values(spec.companion, scored, spec.lens, spec.func), dtype=np.float64)
        # as eager.group_means: a one-bin accumulate of the row values
        s = K.accumulate(scored.groups, None, values, values, scored.weights, np.array([0.0, 1.0]), False,
                         scored.n_groups, 1)
        counts = np.bincount(scored.group_codes, minlength=scored.n_groups).astype(np.int64)
        out.append(partition_frame(meta, keys, np.arange(scored.n_groups), {ROWS: counts, N: s[:, 0, 0], SC: s[:, 0, 1],
                                                                           EXP: exps}))
        return finish(out, meta)
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
            out.append(partition_frame(meta, keys, g_idx, cols))
    return finish(out, meta)


def gece_partition(pdf, spec, meta, gece, partition_info=None) -> pd.DataFrame:
    """:func:`_gece_rows`, guarded (:func:`guarded_partition`)."""
    return guarded_partition(_gece_rows, pdf, spec, meta, gece)


def _gece_rows(pdf, spec, meta, gece) -> pd.DataFrame:
    """The generalized ECE's per (group, class, cell) sums on one partition, in the sums frame's columns: a cell
    of uniform(bins) on the first K' - 1 lensed coordinates (generalized.uniform_grid's cells, keyed by their
    mixed-radix index in BIN), one row per lensed coordinate j (FIG = j: SC = sum w g'_j, SA = sum w y'_j, N and
    ROWS the cell's), CLS the class of the marginal lens. ``gece``: (lensed, bins, marginal), api.gece's lens."""
    from ... import generalized as G
    from ..._kernels import vector as VK

    lensed, bins, marginal = gece
    scored, kept, dropped = scored_partition(pdf, spec)
    out = partition_marker(pdf, spec, meta, dropped)
    if scored is None:
        return finish(out, meta)
    keys, _ = local_keys(kept, scored, spec.by)
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
            out.append(partition_frame(meta, keys, g, {FIG: j, CLS: 0 if c is None else c, BIN: uniq[:, 1], ROWS: rows,
                                              N: sums[:, 0], SC: sums[:, 1 + j], SA: sums[:, 1 + m + j],
                                              EXP: exps[g]}))
    return finish(out, meta)


def _checked_edges_binner(spec: Spec, var: str, v: np.ndarray):
    """families.variable._checked_variable_binner's edge checks, per partition (the single-value check is global, on the client)."""
    edges = spec.binning.edges
    check_variable(spec.func, var, spec.binning, single=False, outside=int(((v < edges[0]) | (v > edges[-1])).sum()))
    return E_.variable_binner(var, spec.binning)


def apply_partition(pdf: pd.DataFrame, rec: Any, kwargs: dict, meta: pd.DataFrame) -> pd.DataFrame:
    if len(pdf) == 0:
        out = pdf.copy()
        for c in meta.columns[len(pdf.columns):]:
            out[c] = pd.Series([], dtype=meta.dtypes[c], index=pdf.index)
        return out
    return apply_rows(pdf, rec, **kwargs, progress=False, part="partition")  # a task: no bar (calframe._progress)


# --------------------------------------------------------------------------- input errors, counted per partition


def _list_lengths(spec: Spec, df: pl.DataFrame) -> dict[int, int] | None:
    """Rows per length of a List probability column (None for another column): over the rows whose checked
    columns hold no null, those the eager path measures (a null is raised, or dropped, first)."""
    name = spec.prob if isinstance(spec.prob, str) else None
    if name is None or not isinstance(df.schema.get(name), pl.List):
        return None
    w = [spec.weights] if spec.weights else []
    checked = [c for c in dict.fromkeys(spec.prob_cols + [spec.label] + w + list(spec.variables)) if c in df.columns]
    lengths = df.filter(~pl.any_horizontal(pl.col(checked).is_null())).get_column(name).list.len()
    return {int(n): int(k) for n, k in lengths.value_counts().iter_rows()}


def check_plan(spec: Spec, frame: pd.DataFrame, variable: str | None,
                lengths: dict[int, int] | None = None) -> tuple[Any, pl.LazyFrame, dict[int, int] | None]:
    """The LazyFrame engine's check plan (:func:`.lazy.make_plan`) of ``spec`` on ``frame``'s columns, and the
    rows per length of a List probability column (:func:`_list_lengths`; ``lengths``: those over every
    partition, on the client). The LazyFrame engine streams no List column: it is checked as the Array of its
    longest rows' length, and rows of another length are the eager path's error, in the place of a dtype error
    (after the nulls)."""
    lens = spec.lens if spec.lens is not None and spec.lens.kind != "marginal" else L.Lens("top1")
    binning = spec.binning or make_binning(spec.func, "uniform", 15, "left")
    df = select(frame, list(frame.columns), spec.func, nan_null=[spec.label])  # as resolve converts
    own = _list_lengths(spec, df)
    lengths = own if lengths is None else lengths
    k = max(lengths or (), default=2)
    if own is not None:  # every row k long (a shorter one padded with nulls: its rows are an error anyway)
        df = df.with_columns(pl.col(spec.prob).list.gather(list(range(k)), null_on_oob=True).list.to_array(k))
    lf = df.lazy()
    req = Request(spec.func, "ce", spec.func, spec.prob if isinstance(spec.prob, str) else list(spec.prob),
                  spec.label, list(spec.by) or None, spec.weights, spec.nulls, lens, binning,
                  variables=() if variable is None else (variable,))
    plan = LZ.make_plan(lf, req)
    plan.variables = list(spec.variables) or None
    bad = sum(n for length, n in (lengths or {}).items() if length != k)
    if bad:
        plan.schema_errors["prob_dtype"] = list_lengths_differ(spec.func, spec.prob, bad, k)
    return plan, lf, lengths


def partition_stats(pdf: pd.DataFrame, spec: Spec) -> list[dict[str, Any]]:
    """Per variable (one entry without variables): the counts calframe's ordered checks read, on one partition
    (with the rows per length of a List probability column, ``list_lengths``)."""
    out = []
    for v in spec.variables or (None,):
        plan, lf, lengths = check_plan(spec, pdf, v)
        st = LZ.detail_stats(plan, lf)
        st["outside_labels"] = LZ.outside_label_rows(plan, lf) if st.get("label_outside") else []
        if lengths is not None:
            st["list_lengths"] = lengths
        out.append(st)
    return out


def merge_stats(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Partition stats combined: counts added, minima / maxima / worst row sums and the first labels kept."""
    lowest, highest = {"prob_lo", "var_min"}, {"prob_hi", "var_max"}
    out: dict[str, Any] = {"nulls": {}, "outside_labels": []}
    for st in parts:
        for k, v in st.items():
            if k in ("nulls", "list_lengths"):  # per column / per length: added
                for c, n in v.items():
                    out.setdefault(k, {})[c] = out.get(k, {}).get(c, 0) + n
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


def gece_value(req: Any, m: Any, marginal: bool) -> np.ndarray:
    """GECE per group from the merged cell sums ``m`` (the Dask engine's ``Merged`` of :func:`gece_partition`); the
    marginal lens combines the classes'."""
    from ... import generalized as G

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
