"""The eager engine: numba kernels over numpy / Arrow buffers, for Polars and pandas frames (and the LazyFrame
calls that need the rows in memory).

``resolve`` validates and reads the columns once (calframe._columns); each figure is then lens -> bin ->
``binned_sums`` (one numba pass, per (group, bin) sums) -> :mod:`calframe.figures`; :func:`evaluate` adds the
bootstrap and shapes the result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Union

import numpy as np
from .._imports import pd  # imported at first use
import polars as pl
import pyarrow as pa

from .. import figures as F
from .. import moments as M
from .. import lenses as L
from .. import request as R
from .._columns import Scored, Selected, check_group_weights, score, select_rows, weight_exponents
from .._imports import LazyModule

K = LazyModule("calframe._kernels.accumulate")  # numba kernels: imported at first use
KA = LazyModule("calframe._kernels.arrays")
XK = LazyModule("calframe._kernels.exact")
FK = LazyModule("calframe._kernels.fused")
from .._kernels import codes as CODES  # noqa: E402  (no numba)
from .._errors import ParameterError
from .._names import fresh_name
from .._limits import TableTooLargeError, check_cells
from ..binning import Binning, Bins, bin_values, bin_variable, edge_bins, uniform_edges, uniform_nudge
from ..figures import check_by_names, output_columns
from ..registry import EVERY_STATE, Capabilities

Frame = Union[pl.DataFrame, pl.LazyFrame, "pd.DataFrame"]
Result = Union[float, pl.DataFrame, "pd.DataFrame"]
#: the engine of Polars and pandas frames: every state, in memory (calframe.registry)
CAPABILITIES = {kind: Capabilities(EVERY_STATE, word="eager") for kind in ("polars", "pandas")}


def supports(req: R.Request, state: str, frame: Any) -> str | None:
    """The eager engine runs every call (:func:`calframe.registry.route`)."""
    return None


def collect(frame: Any) -> Any:
    """The frame the eager engine reads (it is one)."""
    return frame


#: the engine's short name (the families' steps: ``engines.route``)
NAME = "eager"


def grid(req: R.Request, frame: Frame, figures: dict[str, Figure]) -> Result:
    """The smooth ECE (its figure in ``figures``) on the rows."""
    return evaluate(req, frame, figures)


def vector(req: R.Request, frame: Frame, here: Callable[[Any], Any], selects: bool, dask: Callable[[Any], Any]) -> Any:
    """GECE on the rows: the family's own call, ``here(frame)``."""
    return here(frame)


def table(req: R.Request, frame: Frame, finish: Callable[..., Any], schema: dict[str, Any],
          rows: Callable[[Any], Any], native: bool) -> Any:
    """Disparity's table on the rows: ``rows(frame)``."""
    return rows(frame)


def moment_means(req: R.Request, frame: Frame, figures: dict, keep: dict | None = None) -> None:
    """None: in memory a companion's and summary's intervals are drawn from the rows' own moments (:func:`evaluate`)."""
    return None


def moment_sums(req: R.Request, frame: Frame) -> None:
    """None: in memory the intervals are drawn from the rows' own moments (:func:`evaluate`)."""
    return None
#: a figure of the eager engine: the validated rows -> one value per group
Figure = Callable[[Scored], np.ndarray]


# --------------------------------------------------------------------------- pipeline


#: bin key: (scored, lensed conf) -> Bins. ECE bins the confidence; VECE a variable.
Binner = Callable[[Scored, np.ndarray], Bins]


def caller_weights(scored: Scored) -> np.ndarray | None:
    """The caller's frequency weights (``scored.weights`` times their power-of-two scale, exact): what
    quantile / equal-mass edges read (a row of weight k counts as k rows; a scaled weight would not)."""
    if scored.weights is None:
        return None
    scale = scored.weight_scale
    if isinstance(scale, np.ndarray):
        return scored.weights * (scale if scored.groups is None else scale[scored.groups])
    return scored.weights * scale


def conf_binner(binning: Binning, acc: np.ndarray | None = None) -> Binner:
    """The confidence's bins (``acc``: the rows' accuracies, which ``binning="sweep"`` reads)."""
    return lambda scored, conf: bin_values(conf, scored.groups, scored.n_groups, binning, acc, caller_weights(scored))


def variable_binner(variable: str, binning: Binning) -> Binner:
    def binner(scored: Scored, conf: np.ndarray) -> Bins:
        return bin_variable(scored.extra[variable], scored.extra_kind[variable], scored.groups, scored.n_groups,
                            binning, caller_weights(scored))

    binner.key = ("variable", variable, binning)  # type: ignore[attr-defined]  (the moments' stream: moments.Summed)
    return binner


def binned_sums(
    conf: np.ndarray, acc: np.ndarray, scored: Scored, binning: Binning | Binner
) -> tuple[np.ndarray, Bins]:
    """bin -> accumulate: per (group, bin) sums of one scalar lens output."""
    binner = conf_binner(binning, acc) if isinstance(binning, Binning) else binning
    bins = binner(scored, conf)
    check_cells(scored.n_groups, bins.n_bins)  # before the table (and its partial copies) is allocated
    sums = K.accumulate(
        scored.groups,
        bins.ids,
        conf,
        acc,
        scored.weights,
        bins.edges,
        bins.binning.closed == "right",
        scored.n_groups,
        bins.n_bins,
    )
    return sums, bins


def group_means(values: np.ndarray, scored: Scored, span: float = 64.0) -> np.ndarray:
    """Weighted mean of a per-row value in each group, from the exact engines' fixed-point sums
    (:func:`calframe._kernels.exact.group_sums`; ``span``, a power of two, bounds the values): the same bits for
    any row order, and as on a LazyFrame or in DuckDB, with ``span`` their ``_row_means.SPAN`` of the figure."""
    total_w, total_v = XK.group_sums(scored.groups, np.ascontiguousarray(values, dtype=np.float64), scored.weights,
                                     scored.n_groups, span)
    with np.errstate(invalid="ignore", divide="ignore"):
        return total_v / total_w


def ce_figure(req: R.Request, binner: Binner | None = None, part: str | None = None) -> Figure:
    """The eager engine's figure of bin sums: the request's lens (each class's for the marginal lens), binned by
    ``binner`` (default: the request's binning of the lensed output), summed, then its finalize
    (:data:`figures.BINNED`, ``req.figure``: CE_p by default); ``part``: the column of a figure of several."""
    binning = binner if binner is not None else req.binning
    column = part or req.name

    def of(r: R.Request) -> Figure:
        def figure(scored: Scored) -> np.ndarray:
            def sums_of(c: int) -> np.ndarray:
                lensed = L.class_lens(scored, c) if r.lens.kind == "marginal" else L.scalar(scored, r.lens, r.func)
                return binned_sums(*lensed, scored, binning)[0]

            return F.binned_values(r, sums_of, scored.n_classes, scored.weight_scale)[column]

        if r.lens.kind == "marginal":  # the classes' sums move together: the rows are resampled
            return figure
        bins = binning if isinstance(binning, Binning) else getattr(binning, "key", "bins")
        return M.with_sums(figure, M.Summed((r.lens, bins), lambda scored: _cells(r, binning, scored),
                                            lambda sums, scale: F.binned_values(r, lambda c: sums, 1, scale)[column],
                                            stream=bins, plugin=_plugin(r)))

    figure = of(req)
    if req.estimator == "debiased":  # the bootstrap world's true value is the plug-in's (F.Scale)
        if req.p == 2 and req.lens.kind != "marginal":  # resampled as E2, which it estimates without bias
            root = None if req.squared else F.clipped_root
            F.with_scale(figure, F.Scale(of(replace(req, squared=True)),
                                         of(replace(req, estimator="plugin", squared=True)), root))
        else:  # other p: 0 is in the interval when E2's interval reaches it (F.Scale.zero)
            zero = None if req.lens.kind == "marginal" else (
                of(replace(req, p=2.0, squared=True)), of(replace(req, p=2.0, estimator="plugin", squared=True)))
            F.with_scale(figure, F.Scale(truth=of(replace(req, estimator="plugin")), zero=zero))
    return figure


def _plugin(req: R.Request) -> tuple[float, float, bool] | None:
    """``(p, distance factor, squared)`` when the request's figure is a plug-in CE_p the draws' kernel finalizes
    itself (:attr:`moments.Summed.plugin`: p 1, 2 or inf, the tvd or l2 distance), else None."""
    plugin = req.estimator == "plugin" or np.isinf(req.p)
    if req.figure != "ce" or not plugin or req.p not in (1.0, 2.0, np.inf) or req.distance.kind not in ("tvd", "l2"):
        return None
    return float(req.p), (1.0 if req.distance.kind == "tvd" else float(np.sqrt(2.0))), bool(req.sq)


def _cells(req: R.Request, binning: Binning | Binner, scored: Scored) -> M.Cells:
    """The rows of a scalar-lens figure as the moments read them: (conf, acc, bin, bins) (:class:`moments.Summed`;
    uniform bins as their edges, which the moments' pass bins on)."""
    conf, acc = L.scalar(scored, req.lens, req.func)
    binner = conf_binner(binning, acc) if isinstance(binning, Binning) else binning
    bins = binner(scored, conf)
    if bins.ids is not None:
        ids = bins.ids
    elif bins.binning.scheme == "uniform" and bins.offsets is None:
        ids = M.Uniform(np.asarray(bins.edges, dtype=np.float64), bins.binning.closed == "right")
    else:
        ids = edge_bins(conf, bins.edges[1:-1], bins.binning.closed)
    return conf, acc, ids, bins.n_bins


def _uniform_ids(x: np.ndarray, edges: np.ndarray, closed: str) -> np.ndarray:
    """:func:`calframe.binning.edge_bins` on uniform ``edges`` (B + 1) without a search: the bin ``floor(x B)``
    (within one bin of x's, :func:`calframe.binning.uniform_k0`) moved by one comparison with each neighbouring
    edge (:func:`calframe.binning.uniform_nudge`, the edges read from the table: the same bits).

    >>> _uniform_ids(np.array([0.0, 0.1, 0.2, 0.99, 1.0]), uniform_edges(10, "left"), "left").tolist()
    [0, 1, 2, 9, 9]
    """
    b = edges.size - 1
    k0 = np.minimum((np.asarray(x) * b).astype(np.int64), b - 1)  # x in [0, 1]: the cast floors
    return uniform_nudge(x, k0, b, closed, lambda k: edges[k]).astype(np.int32)


#: a power of two at least each companion's largest row value (Brier: 2 over K > 2 classes; log loss:
#: -ln(eps) < 37): the value / SPAN lies in [0, 1], what the exact fixed-point sums take (eager:
#: :func:`group_means`; the LazyFrame and narwhals engines: :mod:`calframe.engines.plan.row_means`)
SPAN = {"accuracy": 1.0, "brier": 2.0, "log_loss": 64.0}


def mean_figure(func: str, rows: Callable[[Scored], np.ndarray], bounds: tuple[float, float] = (0.0, np.inf)
                ) -> Figure:
    """The weighted mean of ``rows`` per group (a companion: ``func`` one of :data:`SPAN`), the exact sums of
    :func:`group_means`, drawn by the moments as one bin split by the top-1 prediction's correctness
    (:class:`moments.Summed`)."""
    span = SPAN[func]

    def figure(scored: Scored) -> np.ndarray:
        return group_means(rows(scored), scored, span)

    def cells(scored: Scored) -> M.Cells:
        return rows(scored), L.top1(scored)[1], np.zeros(scored.n, dtype=np.int32), 1

    def finalize(sums: np.ndarray, scale: object) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return sums[:, 0, 1] / sums[:, 0, 0]

    return M.with_sums(figure, M.Summed(("mean", func), cells, finalize, bounds))


def part_figures(req: R.Request) -> dict[str, Figure]:
    """The eager figures of a request of bin sums, by column: its one figure, or each column of a figure of
    several (``req.parts``)."""
    return {p: ce_figure(req, part=p) for p in req.parts} if req.parts else {req.name: ce_figure(req)}


def ce_figures(req: R.Request) -> dict[str, Figure]:
    """The eager figures of a CE_p request on the confidence: the figure, and with ``binning="sweep"`` the bin
    count each group's sweep chose (:data:`request.SWEEP_COUNT`).

    The sweep runs once per scored frame (the call's, then each bootstrap draw's) for both figures: its bins
    are kept with the frame they belong to until the next one (sweep takes a scalar lens only, so one set of
    bins serves the figure)."""
    if not req.sweep:
        return part_figures(req)
    last: dict[str, object] = {}

    def sweep_bins(scored: Scored) -> Bins:
        if last.get("scored") is not scored:  # the frame itself is kept, so its identity is not reused
            conf, acc = L.scalar(scored, req.lens, req.func)
            last.update(scored=scored, bins=bin_values(conf, scored.groups, scored.n_groups, req.binning, acc))
        return last["bins"]  # type: ignore[return-value]

    return {req.name: ce_figure(req, lambda scored, conf: sweep_bins(scored)),
            R.SWEEP_COUNT: lambda scored: np.diff(sweep_bins(scored).offsets)}


# --------------------------------------------------------------------------- the fused pass

#: the scalar lenses of binary input the fused pass computes (calframe.lenses.binary_rule)
_FUSED_LENS = {"class:1": CODES.CLASS1, "class:0": CODES.CLASS0, "top1": CODES.TOP1}


def _real(dtype: pl.DataType) -> bool:
    return dtype.is_float() or dtype.is_integer()


def label_values(s: pl.Series) -> np.ndarray:
    """A label column as numpy, a Boolean one (no nulls: the caller refused them) as int8 0/1 unpacked from its
    Arrow bitmap with numpy (0.6 ms at 1e7 rows, where Polars' ``to_numpy`` took 13.5 ms: docs/benchmarks.md,
    "One call").

    >>> label_values(pl.Series([True, False, True])).tolist()
    [1, 0, 1]
    """
    if s.dtype != pl.Boolean or s.null_count():
        return s.to_numpy()
    arr = s.to_arrow()
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.buffers()[1] is None:
        return s.to_numpy()
    bits = np.frombuffer(arr.buffers()[1], dtype=np.uint8)
    return np.unpackbits(bits, count=arr.offset + len(arr), bitorder="little")[arr.offset:].view(np.int8)


def _direct_keys(s: pl.Series, n_bins: int) -> tuple[np.ndarray, int, int] | None:
    """An integer key column as direct table slots (key - lo): (values, lo, n_slots), or None (nulls, UInt64,
    or a range whose partial tables would pass accumulate.PARTIAL_BUDGET)."""
    if not s.dtype.is_integer() or s.dtype == pl.UInt64 or s.null_count():
        return None
    lo, hi = s.min(), s.max()  # Polars' SIMD min and max: 4 ms at 1e7 rows (a numba pass took 15)
    if lo is None:
        return None
    span = int(hi) - int(lo) + 1
    if 3 * span * n_bins > K.PARTIAL_BUDGET:
        return None
    return s.to_numpy(), int(lo), span


def string_views(arr: pa.StringViewArray) -> tuple[np.ndarray, np.ndarray]:
    """(views: two uint64 words per row, addrs: the data buffers' addresses) of an Arrow string_view array,
    the input of :func:`calframe._kernels.fused.string_codes`: zero-copy (``arr`` must outlive its use)."""
    bufs = arr.buffers()
    off = arr.offset
    views = np.frombuffer(bufs[1], dtype=np.uint64)[2 * off : 2 * (off + len(arr))]
    addrs = np.array([0 if b is None else b.address for b in bufs[2:]] or [0], dtype=np.int64)
    return views, addrs


def _string_keys(s: pl.Series) -> tuple[np.ndarray, int, pl.DataFrame] | None:
    """A String (or Categorical / Enum, read as its strings) key column: (int32 codes in order of first
    appearance, number of codes, key table: row c the key of code c), or None for any other dtype.

    The codes come from the column's Arrow string_view buffers (zero-copy): strings of at most 12 bytes
    are matched on their views alone; a column with a longer one is placed by Polars' own hash and compared
    in full, 8 bytes at a time (:func:`calframe._kernels.fused.string_codes`)."""
    dt = s.dtype
    if isinstance(dt, (pl.Categorical, pl.Enum)):
        s = s.cast(pl.String)
    elif dt != pl.String:
        return None
    s = s.rechunk()
    arr = s.to_arrow(compat_level=pl.CompatLevel.newest())
    if not isinstance(arr, pa.StringViewArray):
        return None
    views, addrs = string_views(arr)
    valid = s.is_not_null().to_numpy() if s.null_count() else None
    n = len(s)
    nchunks = int(min(4, max(1, n >> 16)))
    codes = np.empty(n, dtype=np.int32)  # numpy's allocation (string_codes says why)
    reps = np.empty(0, dtype=np.int64)
    if n <= FK.INLINE_ROWS:  # strings of at most 12 bytes: matched on their views, no hash column
        _, reps = FK.string_codes(views, addrs, valid, None, nchunks, codes)  # fills codes
    if n and not reps.shape[0]:
        _, reps = FK.string_codes(views, addrs, valid, s.hash().to_numpy(), nchunks, codes)
    return codes, reps.shape[0], pl.DataFrame([s.gather(reps).cast(dt)])


def fused_sums(
    req: R.Request, sel: Selected
) -> tuple[np.ndarray, np.ndarray, pl.DataFrame | None, float | np.ndarray] | None:
    """(per (group, bin) sums, rows per group, keys, weight scale) of a binned CE of binary input from one fused
    pass (:func:`calframe._kernels.fused.binned_pass`: validation, lens, uniform bin and sums in one read of
    each column), or None where the pass does not apply or some value is bad: the caller then runs
    :func:`calframe._columns.score` and the figure as usual, which raise the detailed errors.

    It applies to the CE family with uniform bins (no explicit edges), a scalar lens, no ``ci`` and no
    variable; one real probability column, a 0/1 label (integer, float or Boolean), real weights, and no
    ``by`` or one key column: integers (no nulls, a range that fits the table: direct slots), Categorical or
    Enum without nulls (their physical codes as direct slots; the keys read from each one's first row) or
    strings (String, and Categorical, Enum otherwise: :func:`_string_keys`). Its sums are those of
    ``score`` -> :func:`binned_sums` up to the order of additions (chunks by sizes only, so the same bits
    on every thread count), and the weights are scaled per group as :func:`calframe._columns.scale_weights`.
    """
    b = req.binning
    if req.kind != "ce" or req.ci is not None or req.variables or b is None or b.scheme != "uniform" or b.edges:
        return None
    df = sel.df
    if sel.multi_cols or not _real(df[sel.prob_cols[0]].dtype) or len(sel.by_cols) > 1:
        return None
    ydt = df[sel.label_col].dtype
    if not (_real(ydt) or ydt == pl.Boolean) or (sel.weights is not None and not _real(df[sel.weights].dtype)):
        return None
    lens = _FUSED_LENS.get(str(L.resolve_lens(req.lens, True)))
    if lens is None:
        return None
    keys, lo, n_slots, key_table, categories = None, 0, 1, None, False
    if sel.by_cols:
        col = df[sel.by_cols[0]]
        direct = _direct_keys(col, b.bins)
        if direct is None and isinstance(col.dtype, (pl.Categorical, pl.Enum)) and not col.null_count():
            # categories: their physical codes as slots (no strings read); the keys from a row of each
            direct = _direct_keys(col.to_physical(), b.bins)
            categories = direct is not None
        if direct is not None:
            keys, lo, n_slots = direct
        else:
            hashed = _string_keys(col)
            if hashed is None:
                return None
            keys, n_slots, key_table = hashed
    keys = KA.codes(keys)  # the types binned_pass brings its columns to: weight_tops reads keys and w first
    p = df[sel.prob_cols[0]].to_numpy()
    y = label_values(df[sel.label_col])
    nchunks = FK.n_chunks(p.shape[0], n_slots * b.bins)
    w = None
    mult = np.ones(n_slots)
    if sel.weights is not None:
        w = KA.real(df[sel.weights].to_numpy())
        tops, bad = FK.weight_tops(keys, lo, w, n_slots, nchunks)
        e = weight_exponents(tops)
        if bad or e.min() < -1022:  # bad weights (the detailed error), or a scale 2^-e past float64
            return None
        mult, scales = np.ldexp(1.0, -e), np.ldexp(1.0, e)
    edges = uniform_edges(b.bins, b.closed)
    flat, rows, bad = FK.binned_pass(p, y, keys, lo, w, mult, edges, b.closed == "right", lens, b.bins, n_slots,
                                     nchunks)
    if bad:
        return None
    table = flat.reshape((n_slots, b.bins, 3))
    if w is None:
        rows = table[:, :, 0].sum(axis=1).astype(np.int64)
    present = np.flatnonzero(rows)
    if categories:
        key_table = pl.DataFrame([col.gather(FK.first_rows(keys, lo, n_slots, present.shape[0])[present])])
    if key_table is not None:  # string codes (every one present) or categories: the keys sorted, nulls last
        i = fresh_name(key_table.columns, "i")
        order = key_table.with_row_index(i).sort(key_table.columns, nulls_last=True, maintain_order=True)[i]
        order = order.to_numpy()
        present, key_table = present[order], key_table[order]
    elif keys is not None:
        name = sel.by_cols[0]
        key_table = pl.DataFrame([pl.Series(name, (present + lo).astype(keys.dtype)).cast(df[name].dtype)])
    if keys is not None:
        table, rows = table[present], rows[present]
        if w is not None:
            scales = scales[present]
    check_cells(rows.shape[0], b.bins)
    if w is not None:
        if not (table[:, :, 0].sum(axis=1) > 0).all():  # a group of zero weights: the detailed error
            return None
        scale: float | np.ndarray = scales if keys is not None else float(scales[0])
    else:
        scale = 1.0
    return np.ascontiguousarray(table), rows, key_table, scale


# --------------------------------------------------------------------------- run and shape


def group_counts(scored: Scored) -> np.ndarray:
    if scored.groups is None:
        return np.array([scored.n], dtype=np.int64)
    if scored.counts is not None:
        return scored.counts
    return np.bincount(scored.groups, minlength=scored.n_groups).astype(np.int64)


def binned(req: R.Request, frame: Frame, figures: dict[str, Figure] | None = None) -> Result:
    """A request of bin sums on a Polars or pandas frame (the registry's entry, :func:`calframe.engines.run_binned`)."""
    return evaluate(req, frame, figures)


def evaluate(
    req: R.Request,
    frame: Frame,
    figures: dict[str, Figure] | None = None,
    *,
    scalar: bool = True,
    prepare: Callable[[Scored], Scored] | None = None,
    keep: dict[str, F.Draws] | None = None,
) -> Result:
    """The eager engine: resolve -> figures (-> bootstrap) -> :func:`figures.shape`. A LazyFrame is collected
    (its needed columns) and the result returned as a LazyFrame (one row, ``n`` and the figure, for a float).

    ``figures`` None: the request's own CE figure, from the fused pass (:func:`fused_sums`) where it applies.
    ``keep``: filled with each figure's bootstrap draws (:func:`_bootstrap`)."""
    own = figures is None
    figures = figures if figures is not None else ce_figures(req)
    check_by_names(req.func, req.by, output_columns(list(figures), req.ci, req.long), frame)
    sel = select_rows(frame, func=req.func, prob=req.prob, label=req.label, by=req.by, weights=req.weights,
                      nulls=req.nulls, extra=list(req.variables))
    lazy = isinstance(frame, pl.LazyFrame)  # collected for these figures: the result is a LazyFrame again
    fused = fused_sums(req, sel) if own else None
    if fused is not None:
        sums, counts, keys, scale = fused
        out = F.shape(req, F.binned_values(req, lambda c: sums, 1, scale), counts, keys, sel.flavor,
                      scalar=scalar and not lazy)
        return out.lazy() if lazy else out
    scored = score(sel)
    if prepare is not None:
        scored = prepare(scored)
        if req.weights is not None:  # a selection can leave a group only rows of weight 0
            totals = np.bincount(scored.group_codes, weights=scored.weights, minlength=scored.n_groups)
            check_group_weights(req.func, req.weights, totals, group_counts(scored), scored.keys)
    values = {name: f(scored) for name, f in figures.items()}
    bounds = _bootstrap(scored, figures, req.ci, req.n_boot, req.seed, req.ci_method, values, keep,
                        req.bootstrap) if req.ci is not None else {}
    out = F.shape(req, values, group_counts(scored), scored.keys, scored.flavor, bounds, scalar and not lazy)
    return out.lazy() if lazy else out


#: rows processed per batch of bootstrap replicates
_BOOT_BATCH_ROWS = 4_000_000


def _bootstrap(
    scored: Scored, figures: dict[str, Figure], level: float, n_boot: int, seed: int | None,
    method: str = "symmetric", values: dict[str, np.ndarray] | None = None, keep: dict[str, F.Draws] | None = None,
    how: str = "auto",
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Bootstrap intervals of every figure: draw the figures again under the row bootstrap (from the moments of
    their per (group, bin) sums, :mod:`calframe.moments`, or by resampling the rows within each group:
    :func:`_by_moments` chooses by ``how``), and turn the draws into bounds by ``method``
    (:func:`calframe.figures.interval`; docs/statistics.md). The one bootstrap of calframe: every ``ci=`` (and
    ``summary``, ``disparity``) comes here.

    A group's draws do not depend on the other groups: ``by=g`` gives each group the intervals of its filtered
    frame. ``values``: the
    figures on ``scored`` (computed again when not given); ``keep``: filled
    with each figure's :class:`~calframe.figures.Draws` (what
    :func:`calframe.disparity` compares groups on).
    """
    scales, resampled = F.resampled(figures, method)
    if _by_moments(resampled, how):
        keys = scored.keys.rows() if scored.keys is not None else [()]
        from .._progress import steps

        draws = M.draws(M.of_rows(scored), resampled, n_boot, seed, keys, scored.weight_scale,
                        steps(n_boot, "bootstrap", unit="draw"))
    else:
        draws = _row_draws(scored, resampled, n_boot, seed)
    values = values if values is not None else {}
    return F.bounds(figures, scales, draws, lambda name, f: values[name] if name in values else f(scored),
                    lambda f: f(scored), level, method, keep, scored.frequencies())


def _by_moments(resampled: dict[str, Figure], how: str) -> bool:
    """Whether the draws come from the moments (:mod:`calframe.moments`): ``how="auto"`` when every figure reads
    its rows through per (group, bin) sums; ``"moments"`` insists (else a ParameterError); ``"rows"`` never."""
    if how == "rows":
        return False
    able = all(M.sums_of(f) is not None for f in resampled.values())
    if how == "moments" and not able:
        raise ParameterError("bootstrap='moments' draws figures of per (group, bin) sums of one scalar lens; this "
                             "call's figures need the rows themselves (the marginal lens, the sweep binning, a "
                             "smooth or row-selected figure). Pass bootstrap='rows' or 'auto'.", "bootstrap")
    return able


def _row_draws(scored: Scored, resampled: dict[str, Figure], n_boot: int, seed: int | None
               ) -> dict[str, np.ndarray]:
    """``(n_boot, groups)`` draws of every figure by resampling the rows within each group.

    Draw r takes uniforms from its own stream ``default_rng([seed, r])``; the j-th row of a group's resample is
    row ``floor(u_j * n_g)`` of that group."""
    n_groups = scored.n_groups
    order, starts = K.group_order(scored.group_codes, n_groups)
    counts = np.diff(starts)
    row_group = np.repeat(np.arange(n_groups, dtype=np.int64), counts)
    pos = np.arange(scored.n, dtype=np.int64) - starts[row_group]
    base, size = starts[row_group], counts[row_group]
    n = scored.n
    max_n = int(counts.max())
    batch = int(max(1, min(n_boot, _BOOT_BATCH_ROWS // max(n, 1))))
    draws = {name: np.empty((n_boot, n_groups)) for name in resampled}
    from .._progress import steps

    bar = steps(n_boot, "bootstrap", unit="draw")  # calframe._progress decides whether anyone sees it
    r0 = 0
    while r0 < n_boot:
        r = min(batch, n_boot - r0)
        idx = np.empty((r, n), dtype=np.int64)
        for i in range(r):
            u = np.random.default_rng(None if seed is None else [seed, r0 + i]).random(max_n)
            idx[i] = order[base + np.minimum((u[pos] * size).astype(np.int64), size - 1)]
        new_groups = (np.arange(r, dtype=np.int64)[:, None] * n_groups + row_group[None, :]).ravel()
        sub = scored.take(idx.ravel(), new_groups, r * n_groups)
        try:
            drawn = {name: f(sub).reshape(r, n_groups) for name, f in resampled.items()}
        except TableTooLargeError:
            if r == 1:  # the table of one draw is the caller's own table (already accepted): not reached
                raise
            batch = max(1, r // 2)  # r draws side by side pass the limit: fewer per batch (same values)
            continue
        for name, v in drawn.items():
            draws[name][r0 : r0 + r] = v
        r0 += r
        bar.update(r)
    return draws


# --------------------------------------------------------------------------- the companions' rows


def brier_rows(scored: Scored) -> np.ndarray:
    p, y = scored.probs, scored.labels
    if scored.binary:
        return (p - y) ** 2
    if scored.n_classes == 2:
        return (p[:, 1] - (y == 1)) ** 2
    onehot = np.zeros_like(p)
    onehot[np.arange(p.shape[0]), y] = 1.0
    return ((p - onehot) ** 2).sum(axis=1)


def log_loss_rows(scored: Scored) -> np.ndarray:
    eps = np.finfo(np.float64).eps
    p, y = scored.probs, scored.labels
    if scored.binary:
        return -np.log(np.clip(np.where(y == 1, p, 1.0 - p), eps, 1 - eps))
    return -np.log(np.clip(p[np.arange(p.shape[0]), y], eps, 1 - eps))
