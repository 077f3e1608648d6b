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
Each partition is a pandas frame; a worker runs calframe's own pipeline on it (``resolve`` -> lens -> bin ->
``binned_sums``, the numba accumulate pass) and returns a small pandas frame of per (group key, bin) sums ``[*by,
fig, cls, bin, rows, n, sum_conf, sum_acc]`` (group keys as values: codes differ per partition). Dask adds them with
``groupby(...).agg(..., split_out=1)`` and the client finalizes with :func:`calframe.metrics.ce_from_sums`,
returning what calframe returns for a pandas frame (a float without ``by``, else a pandas frame with the group
columns sorted by key, nulls last, ``n`` and the figure). Input errors are found per partition by calframe's own
``resolve``; the client then gathers every partition's counts and raises the eager path's first failing check with
its message and the counts over all partitions. The top-level functions send a Dask DataFrame here (:func:`call`).

Data-dependent bins (``quantile``, ``equal_mass``) need each group's exact order statistics. They come from
mergeable passes (see :meth:`Runner.order_stats`): a histogram of the values on a fixed grid (the top 20 bits of an
order-preserving integer image of the float64, so any range works), the cells holding the target ranks found from
cumulative counts, and the values of only those cells gathered (a cell holding a single distinct value needs no
gathering; a crowded cell is refined with the next 20 bits first). calframe's one edge rule
(:func:`calframe.binning.edge_table`: every source and group in one call of its ``take``, then ``pack_edges``)
builds the edges from the gathered order statistics, and a last pass bins with those edges (``assign_bins``) and
accumulates. Results equal calframe's in-memory results up to float summation order (< 1e-12). With weights, the
edges of the rows repeated w_i times: the shared plan's passes on the partitions (engines/partitions/order_stats.py).

Every figure is a lazy :class:`DaskResult`: its graph holds the first pass, the finalize (and the later passes of
exact edges) runs where Dask finalizes. ``summary``, uniform-bin ``gece`` and ``smece`` (its grids: _grid_dask.py)
come from sums too; ``ci=``, ``vce_curve``, ``fit``, ``vece_rank`` and ``gece`` on the rows (adaptive bins,
selections) collect the needed columns and run the eager function (:func:`collected`). Not on Dask: local
calibration (``lce``, ``mlce``, ``mlce_curve``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
import inspect
from dataclasses import dataclass
from functools import partial
from typing import Any, Sequence

import numpy as np
from ..._imports import pd  # imported at first use
import polars as pl

try:
    from dask.base import DaskMethodsMixin
except ImportError:  # without Dask this module only declares CAPABILITIES (calframe.frames.dask registers nothing)
    DaskMethodsMixin = object  # type: ignore[assignment,misc]

from ..streaming import streamed as LZ
from ...families.applying import apply_columns, apply_rows
from ... import figures as F
from ... import row_sums as RS
from ...frames.convert import select
from ...registry import Capabilities, functions_on
from ...request import Request
from ..._columns import LABEL_CANDIDATES, PROB_CANDIDATES, pick_default, check_group_weights, group_codes, resolve
from ..._names import key_names
from ... import _errors as E
from ..._errors import EmptyInputError, ParameterError, error_from_text
from ..._limits import check_cells
from ...binning import Bins, check_variable, edge_table, pack_edges, take_each, uniform_edges
from ...metrics import check_weight_sums
# the per-partition side (workers): the frames' internal columns, the shipped request, the partition functions
from . import order_stats as OSW  # weighted edges
from .workers import (BIN, CAT, CELL, CLS, CNT, DROP, ERR, EXP, FIG, FIRST, GATHER_COLS, HIST_AGG, HIST_COLS, N, PAR,
                      ROWS, SA, SC, SHIFT, SHIFTS, SUMS_AGG, SUMS_COLS, VAL, VMAX, VMIN, Spec, apply_partition,
                      check_plan, gather_partition, gece_partition, hist_partition, gece_value, key_tuples, keys_of,
                      merge_stats, partition_stats, refuse_nested_keys, sums_partition)

__all__ = ["CAPABILITIES", "DaskResult", "apply", "call", "collected", "compute_now", "result", "run", "supported"]

#: a target cell with at most this many values is gathered; a larger one is refined by the next level
GATHER_CELL = 1 << 18


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
    def of(cls, frame: pd.DataFrame, spec: Spec) -> "_Groups":
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
        df = select(uniq.set_axis(list(by), axis=1), list(by))
        df = df.with_columns(pl.col(c).cast(t) for c, t in zip(by, spec.key_types)
                             if isinstance(t, (pl.Categorical, pl.Enum)) and df.schema[c] != t)
        codes, n, keys = group_codes(df, list(by))
        index = {t: int(g) for t, g in zip(key_tuples(uniq), codes)}
        return cls(n, keys, index)

    def codes(self, frame: pd.DataFrame, by: tuple[str, ...]) -> np.ndarray:
        if not by:
            return np.zeros(len(frame), dtype=np.int64)
        cols = key_names(len(by))
        gid = frame.groupby(cols, dropna=False, sort=False, observed=True).ngroup().to_numpy()
        first = np.full(gid.max() + 1 if len(gid) else 0, -1, dtype=np.int64)
        first[gid[::-1]] = np.arange(len(gid))[::-1]
        per = np.array([self.index[t] for t in key_tuples(frame[cols].iloc[first])], dtype=np.int64)
        return per[gid] if len(gid) else gid.astype(np.int64)

    def tuples(self) -> list[list[tuple]]:
        out: list[list[tuple]] = [[] for _ in range(self.n)]
        for t, g in self.index.items():
            out[g].append(t)
        return out


class Runner:
    """The passes over one Dask DataFrame for one request."""

    def __init__(self, ddf: Any, spec: Spec) -> None:
        self.ddf = ddf[spec.needed]  # column projection reaches the reader (read_parquet reads only these)
        self.spec = spec
        self.key_meta = keys_of(ddf._meta, spec.by)

    def checked(self, frame: pd.DataFrame) -> pd.DataFrame:
        """A computed pass: a partition's input error (a marker row, :func:`~.workers.guarded_partition`) is raised again with the
        counts over every partition (:func:`_raise_totals`), else as the partition raised it."""
        err = frame[ERR].to_numpy() if ERR in frame.columns else np.empty(0, dtype=object)
        failed = [e for e in err if isinstance(e, str) and e]
        if failed:
            _raise_totals(self.ddf, self.spec)
            raise error_from_text(failed[0])
        return frame

    @staticmethod
    def _compute(coll: Any) -> pd.DataFrame:
        """``coll`` computed now: a later pass, run while the caller computes a result (:func:`compute_now`)."""
        return compute_now(coll)[0]

    def _lazy(self, fn, cols: dict, agg: dict, *args: Any) -> Any:
        """The merged per-partition frames of ``fn``: a Delayed of one small pandas frame (computes nothing)."""
        meta = _meta(self.key_meta, cols)
        parts = self.ddf.map_partitions(fn, self.spec, meta, *args, meta=meta, clear_divisions=True,
                                        enforce_metadata=False)
        keys = key_names(len(self.spec.by)) + [c for c in cols if c not in agg]
        merged = parts.groupby(keys, dropna=False, sort=False, observed=True).agg(agg, split_out=1)
        return merged.to_delayed(optimize_graph=True)[0]

    def sums_lazy(self, plan: dict | None) -> Any:
        return self._lazy(sums_partition, SUMS_COLS, SUMS_AGG, plan)

    def hist_lazy(self, level: int, parents: dict | None) -> Any:
        return self._lazy(hist_partition, HIST_COLS, HIST_AGG, level, parents)

    def merged(self, frame: pd.DataFrame) -> pd.DataFrame:
        """A computed merged pass as a plain frame (the group-by keys as columns), its errors raised."""
        return self.checked(frame.reset_index())

    def hist(self, level: int, parents: dict | None) -> pd.DataFrame:
        return self.merged(self._compute(self.hist_lazy(level, parents)))

    def gather(self, targets: dict) -> pd.DataFrame:
        meta = _meta(self.key_meta, GATHER_COLS)
        parts = self.ddf.map_partitions(gather_partition, self.spec, meta, targets, meta=meta, clear_divisions=True,
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
                check_variable(spec.func, spec.variables[f], spec.binning,
                               single=bool(hist.loc[sel, VMIN].min() == hist.loc[sel, VMAX].max()))
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

    def weighted_edges(self, stats0: pd.DataFrame) -> tuple[dict, _Groups, dict[tuple[int, int], Bins]]:
        """:meth:`exact_edges` with weights: the edges of the rows repeated w_i times (:mod:`.order_stats`)."""
        stats, dropped = _split_markers(stats0)
        if stats.empty:
            _raise_empty(self.spec.func, dropped)
        groups = _Groups.of(stats, self.spec)
        sources = sorted({(int(f), int(c)) for f, c in zip(stats[FIG], stats[CLS])})
        edges, bins = OSW.weighted_edges(self, self._compute, stats, groups.codes(stats, self.spec.by), groups,
                                         _source_index(stats, sources), sources)
        return {"key_index": groups.index, "edges": edges}, groups, bins

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


def _raise_totals(ddf: Any, spec: Spec) -> None:
    """Raise calframe's first input error for the whole Dask frame, with counts over every partition.

    A partition's own check only sees its rows; this pass gathers every partition's counts (a small dict each)
    and runs the eager path's checks, in its order and with its messages, on the totals. Returns if they all pass.
    """
    import dask

    parts = compute_now(*[dask.delayed(partition_stats)(p, spec) for p in ddf.to_delayed()])
    for i, v in enumerate(spec.variables or (None,)):
        st = merge_stats([p[i] for p in parts])  # with a List column's rows per length, over every partition
        plan, lf, _ = check_plan(spec, ddf._meta, v, st.get("list_lengths"))
        LZ.run_checks(plan, st, lf)


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

#: what this engine computes (calframe.registry): every partition's sums, added (grids: _grid_dask.py); fits and
#: vece_rank / vce_curve collect their columns into one pandas frame (:func:`collected`), as ci= does. Others: refused.
#: "groups": disparity's default ci= from the moments of the partitions' bins (engines/partitions/moments.py); weights collect
CAPABILITIES = {"dask": Capabilities(frozenset({"bin_sums", "bin_table", "row_means", "grid_sums", "vector_sums",
                                                "batches", "windows", "groups"}), collects=frozenset({"variables", "fit"}))}


def supported() -> tuple[str, ...]:
    """The public functions this engine runs (natively or collected): ``ddf.calib``'s methods."""
    return functions_on("dask", "native", "collected")


def supports(req: Request, state: str, frame: Any) -> str | None:
    """None: this engine's passes decide which parameters they collect (:func:`run`)."""
    return None


def refuse(func: str, kind: str, why: str) -> Exception:
    """The error of a function this engine does not run, saying what to do instead."""
    on = ", ".join(sorted(supported()))
    return E.ColumnTypeError(f"{func}: Dask DataFrames are not supported here (on Dask: {on}). Compute a pandas "
                             f"frame first, e.g. calframe.{func}(ddf.compute()) or on a sample, "
                             "ddf.sample(frac=0.1).compute().")


def call(name: str, fn: Any, args: tuple, kwargs: dict) -> Any:
    """``fn`` (the public function ``name``, which :func:`calframe.registry.route` let through) on a Dask
    DataFrame, its arguments bound first (a wrong keyword named before any graph is built)."""
    try:
        inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as exc:
        raise ParameterError(f"{name} on a Dask DataFrame (ddf.calib.{name}): {exc}.") from None
    return fn(*args, **kwargs)


def dask_spec(ddf: Any, req: Request, **kw: Any) -> Spec:
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
    prob = req.prob if req.prob is not None else pick_default(names, PROB_CANDIDATES, "probability", "prob", func)
    label = req.label if req.label is not None else pick_default(names, LABEL_CANDIDATES, "label", "label", func)
    by_ = () if by is None else ((by,) if isinstance(by, str) else tuple(by))
    prob_ = prob if isinstance(prob, str) else tuple(prob)
    key_types = select(meta, list(by_), func).schema if by_ else {}
    refuse_nested_keys(func, dict(key_types))
    return Spec(func, prob_, label, by_, req.weights, req.nulls, variables=req.variables,
                 key_types=tuple(key_types.values()), lens=req.lens, binning=req.binning, **kw)


@dataclass
class Merged:
    """The merged per (group, figure, class, bin) sums of one request (weights divided by ``weight_scale``, one
    power of two per group), their global groups, row counts per group and data-dependent Bins."""

    spec: Spec
    frame: pd.DataFrame
    groups: _Groups
    counts: np.ndarray
    g: np.ndarray
    bins: dict
    weight_scale: np.ndarray

    def figure_sums(self, f: int, c: int) -> tuple[np.ndarray, np.ndarray, Bins]:
        return _figure_sums(self.spec, self.frame, self.groups, self.g, self.bins, f, c)


def _pass(ddf: Any, spec: Spec, gece: Any = None) -> tuple[Any, Callable[[pd.DataFrame], Merged]]:
    """A request's first pass over the partitions, lazy (a Delayed of a small merged frame), and the client's
    continuation from its value to the :class:`Merged` sums. Fixed bins: the sums pass itself. Data-dependent
    bins: the level-0 histogram; the continuation computes the edges and the sums pass (further passes, run
    while the caller computes). ``gece``: the generalized ECE's cell sums instead (:func:`_gece_rows`)."""
    runner = Runner(ddf, spec)
    if gece is not None:
        first = runner._lazy(gece_partition, SUMS_COLS, SUMS_AGG, gece)
        return first, lambda frame: merged_partitions(spec, runner.merged(frame), None, {})
    if "dd" not in spec.modes:
        return runner.sums_lazy(None), lambda frame: merged_partitions(spec, runner.merged(frame), None, {})

    edges = runner.weighted_edges if spec.weights else runner.exact_edges

    def then(first: pd.DataFrame) -> Merged:
        plan, groups, dd_bins = edges(runner.merged(first))
        return merged_partitions(spec, runner.merged(runner._compute(runner.sums_lazy(plan))), groups, dd_bins)

    if spec.weights:  # the weights' exact sums per bucket first (engines/partitions/order_stats.py)
        return runner._lazy(OSW.stats_partition, OSW.STATS_COLS, OSW.STATS_AGG), then
    return runner.hist_lazy(0, None), then


def merged_partitions(spec: Spec, frame: pd.DataFrame, groups: _Groups | None, dd_bins: dict) -> Merged:
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
    return Merged(spec, frame, groups, counts, g, dd_bins, scale)


def _figure_sums(spec: Spec, frame: pd.DataFrame, groups: _Groups, g: np.ndarray, dd_bins: dict, f: int,
                 c: int) -> tuple[np.ndarray, np.ndarray, Bins]:
    sel = (frame[FIG].to_numpy() == f) & (frame[CLS].to_numpy() == c)
    part = frame[sel]
    mode = spec.modes[f]
    if mode == "cat":
        first = part.groupby(CAT, sort=False)[FIRST].min().sort_values(kind="stable")
        if spec.variables:
            check_variable(spec.func, spec.variables[f], spec.binning, single=len(first) == 1, numeric=False)
        rank = pd.Series(np.arange(len(first)), index=first.index)
        b = rank.loc[part[CAT]].to_numpy()
        bins = Bins(None, len(first), np.empty(0), None, spec.binning)
    elif mode == "dd":
        bins = dd_bins[(f, c if not spec.variables else 0)]
        b = part[BIN].to_numpy()
    else:
        if spec.variables:
            check_variable(spec.func, spec.variables[f], spec.binning, single=bool(part[VMIN].min() == part[VMAX].max()))
        edges = np.asarray(spec.binning.edges) if spec.binning.edges is not None else uniform_edges(
            spec.binning.bins, spec.binning.closed)
        bins = Bins(None, spec.binning.bins, edges, None, spec.binning)
        b = part[BIN].to_numpy()
    sums, counts = _sums_array(part, g[sel], groups.n, max(bins.n_bins, int(b.max()) + 1 if len(b) else 1), b)
    return sums, counts, bins


def _modes(ddf: Any, req: Request) -> tuple[str, ...]:
    """Per figure: "fixed" (uniform or explicit edges), "cat" (a categorical variable), "dd" (data-dependent)."""
    if not req.variables:
        return ("fixed" if req.binning.scheme == "uniform" else "dd",)
    meta = ddf._meta
    modes = []
    for v in req.variables:
        if v not in meta.columns:
            modes.append("fixed")  # dask_spec raises calframe's missing-column error
            continue
        dt = meta[v].dtype
        numeric = pd.api.types.is_numeric_dtype(dt) and not pd.api.types.is_bool_dtype(dt)
        modes.append("cat" if not numeric else "fixed" if req.binning.edges is not None else "dd")
    if req.binning.edges is not None and "cat" in modes:
        cat = req.variables[modes.index("cat")]
        dask_spec(ddf, req)  # column errors first
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


def compute_now(*colls: Any) -> tuple:
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

    from ..._progress import carry  # the call's progress= holds where the result is computed (off on a worker)

    return DaskResult(dask.delayed(_identity)(ddf[list(dict.fromkeys(columns))]), carry(eager), what)


def needed(ddf: Any, req: Request) -> list[str]:
    """The columns ``req`` reads (its columns checked against the Dask metadata now)."""
    return dask_spec(ddf, req).needed


def _identity(frame: pd.DataFrame) -> pd.DataFrame:
    return frame


def eager_figures(req: Request, figures: dict | None, frame: pd.DataFrame, **kw: Any) -> Any:
    """The eager engine's run of ``req`` on a pandas frame (what calframe's functions do for pandas)."""
    from ..eager import evaluate, ce_figures

    return evaluate(req, frame, figures or ce_figures(req), **kw)


def binned(req: Request, ddf: Any, figures: dict | None = None, finish: Callable[..., Any] | None = None) -> Any:
    """The registry's entry (calframe.engines.run_binned): :func:`summary` or :func:`run`."""
    return summary(ddf, req, figures or {}, finish) if req.kind == "summary" else run(ddf, req, figures, finish)


def run(ddf: Any, req: Request, figures: dict | None = None, finish: Callable[..., Any] | None = None) -> DaskResult:
    """A parsed request on a Dask DataFrame, lazy: sums per partition, added by Dask, finalized by
    :mod:`calframe.figures` on the client. ``figures``: the eager engine's figures of the request, for ``ci=``
    (the bootstrap resamples rows within groups: the needed columns are collected, :func:`collected`).
    ``finish(values, counts, keys)``: the result from the figures per group (default: :func:`figures.shape`)."""
    finish = finish or partial(F.shape, req, flavor="pandas")
    if req.ci is not None:
        return collected(req.func, ddf, dask_spec(ddf, req).needed, partial(eager_figures, req, figures))
    if req.sweep:
        raise ParameterError(
            f"The 'binning' parameter of {req.func}: 'sweep' is not available on Dask DataFrames (it sorts each "
            "group's rows and tries bin counts one by one); there: 'uniform', 'quantile', 'equal_mass' or explicit "
            f"edges. Sweep on the collected frame (calframe.{req.func}(ddf.compute(), binning='sweep')) or on a "
            "sample.", "binning")
    if req.kind in ("companion", "row_sums"):  # one pass per row value: their weighted means per group
        names = req.options.values if req.kind == "row_sums" else (req.func,)
        return result(req.func, [_pass(ddf, dask_spec(ddf, req, companion=c)) for c in names],
                      lambda *ms: finish(_row_figures(req, names, ms), *_by(ms[0])))
    spec = dask_spec(ddf, req, modes=_modes(ddf, req))
    if req.kind == "reliability":
        return result(req.func, [_pass(ddf, spec)], _reliability_result)
    return result(req.func, [_pass(ddf, spec)], lambda m: finish(_ce_values(req, m), *_by(m)))


def _companion_figure(m: Merged, total: bool = False) -> np.ndarray:
    sums, _ = _sums_array(m.frame, m.g, m.groups.n, 1, np.zeros(len(m.frame), dtype=np.int64))
    with np.errstate(over="ignore"):  # a total of weights past float64 is inf, as eager's
        return sums[:, 0, 0] * m.weight_scale if total else F.companion(sums)  # the weights' total, caller's units


def _row_figures(req: Request, names: tuple[str, ...], ms: tuple[Merged, ...]) -> dict[str, np.ndarray]:
    """A companion, or the figure of several row values' means (calframe.row_sums), from one pass per value."""
    means = {name: _companion_figure(m) for name, m in zip(names, ms)}
    if req.kind == "row_sums":
        means[RS.WEIGHT] = _companion_figure(ms[0], total=True)
    return RS.finalize(req.options, means, ms[0].counts) if req.kind == "row_sums" else {req.name: means[req.func]}


def _by(m: Merged) -> tuple[np.ndarray, pl.DataFrame | None]:
    return m.counts, m.groups.keys  # the rows and the key table of the groups


def _reliability_result(m: Merged) -> pd.DataFrame:
    sums, counts, bins_ = m.figure_sums(0, 0)
    return F.to_flavor(F.reliability_table(sums, counts, bins_, m.groups.keys), "pandas")


def _ce_value(req: Request, m: Merged, f: int = 0) -> dict[str, np.ndarray]:
    """The figure of ``req`` (its columns) on figure ``f``'s merged sums (a variable's, for several variables)."""
    n_classes = int(m.frame[CLS].max()) + 1
    return F.binned_values(req, lambda c: m.figure_sums(f, c)[0], n_classes, m.weight_scale)


def _ce_values(req: Request, m: Merged) -> dict[str, np.ndarray]:
    """The figures of ``req`` (one per variable for several; a figure's columns) from the merged sums."""
    if req.several:
        return {name: _ce_value(req, m, f)[req.name] for f, name in enumerate(req.figure_names)}
    return _ce_value(req, m)


def summary(ddf: Any, req: Request, figures: dict, finish: Callable[..., Any] | None = None) -> DaskResult:
    """:func:`calframe.summary` (``figures``: the eager engine's, for ``ci=``, which collects the needed columns).
    Its figures come from exact sums, in one graph: the uniform bins' sums (ECE, MCE, RMSCE and, with weights,
    the debiased figure), the equal-mass sums of the debiased figure (its exact edges: further passes when
    computed), and the one-bin sums of accuracy, Brier score and log loss."""
    from ...request import summary_parts

    F.check_by_names(req.func, req.by, F.output_columns(list(figures), req.ci), ddf._meta)
    if req.ci is not None:
        return collected(req.func, ddf, dask_spec(ddf, req).needed, partial(eager_figures, req, figures, scalar=False))
    parts = summary_parts(req)
    debiased = parts["ce_debiased"]
    passes = [_pass(ddf, dask_spec(ddf, req, modes=("fixed",)))]
    if debiased.binning != req.binning:
        passes.append(_pass(ddf, dask_spec(ddf, debiased, modes=("dd",))))
    companions = ("accuracy", "brier", "log_loss")
    passes += [_pass(ddf, dask_spec(ddf, req, companion=c)) for c in companions]

    def assemble(uniform: Merged, *rest: Merged) -> Any:
        ms = dict(zip(companions, rest[-3:]))
        values = {"accuracy": _companion_figure(ms["accuracy"])}
        for name, sub in parts.items():
            values[name] = _ce_value(sub, rest[0] if name == "ce_debiased" and len(rest) == 4 else uniform)[sub.name]
        values.update(brier=_companion_figure(ms["brier"]), log_loss=_companion_figure(ms["log_loss"]))
        return (finish or partial(F.shape, req, flavor="pandas", scalar=False))(values, *_by(uniform))

    return result(req.func, passes, assemble)


def gece(ddf: Any, req: Request, figures: dict, lensed: Callable[..., Any], rows: Callable[[pd.DataFrame], Any],
         needs_rows: bool) -> DaskResult:
    """:func:`calframe.gece`: uniform bins from exact per (group, cell) sums (:func:`_gece_rows`, finalized by
    :func:`calframe.generalized.gece_from_sums`). Adaptive bins, row selections (``where``, ``labels_in``,
    ``output_between``: ``needs_rows``), ``ci=`` and class probabilities in one Array/List column collect the
    needed columns (all columns with ``where``) and run ``rows`` (the eager call) on them."""
    spec = dask_spec(ddf, req)
    F.check_by_names(req.func, req.by, F.output_columns(list(figures), req.ci), ddf._meta)
    scheme, bins = req.options.binning
    one_column = isinstance(spec.prob, str) and not pd.api.types.is_numeric_dtype(ddf._meta[spec.prob].dtype)
    if needs_rows or req.ci is not None or scheme != "uniform" or one_column:
        return collected(req.func, ddf, list(ddf.columns) if needs_rows else spec.needed, rows)
    marginal = req.options.lens == "marginal"
    return result(req.func, [_pass(ddf, spec, (lensed, int(bins), marginal))],
                  lambda m: F.shape(req, {"gece": gece_value(req, m, marginal)}, m.counts, m.groups.keys, "pandas"))


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
    for column, dtype in apply_columns(recalibrator, name).items():  # an Array of probabilities: objects
        out_meta[column] = pd.Series([], dtype=np.float64 if dtype == pl.Float64 else object)
    return ddf.map_partitions(apply_partition, recalibrator, kwargs, out_meta, meta=out_meta)
