"""Row means in the user's engine: the companions (Brier score, log loss, accuracy) and ``summary`` on a DuckDB
relation, PySpark DataFrame, Ibis table or pyarrow Table (the narwhals engine) and streamed on a Polars LazyFrame
(the lazy engine), and the per-group values any figure table over groups reads (:func:`calframe.disparity`).

A companion is the weighted mean of a row value per group: one pass sums, per group, the weight and the weight
times each value, exactly (the engines' fixed-point sums: ``lazy.fixed_sum``, ``narwhals.fixed_parts``; a value
is divided by :data:`SPAN`, a power of two, to lie in [0, 1]), in the same pass as the row checks of the CE
family's main pass (a bad row is counted, and the engine's error path raises the eager path's first failing
check). The row values are written once here for Polars and narwhals expressions (:func:`row_values`): Brier's
``(p - y)^2`` (two classes; over K > 2 classes the sum of ``(g_k - y_k)^2`` in numpy's pairwise order), the log
loss ``-ln(clip(g_y, eps, 1 - eps))`` and the accuracy, the top-1 lens's ``acc`` (:mod:`calframe.lenses`: its
tie rule). ``summary`` adds the CE figures from the engine's bin sums (uniform bins, and the debiased figure's
equal-mass bins). A companion's ``ci=`` is drawn from the moments of its row values where the rows are
(:func:`moment_companion` streamed on a LazyFrame, :func:`narwhals_states` in the narwhals engine), and so is
summary's, each figure from the moments of its own state (:func:`moment_state`); ``bootstrap="rows"`` needs the
rows: the narwhals engine refuses it (a pyarrow Table is then run eagerly), and a LazyFrame is collected.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import polars as pl

from ... import figures as F
from ... import lenses as L
from ... import row_sums as RS
from ...binning import Binning
from ..._columns import check_group_weights
from ..._render import flag, where
from ...request import Request, summary_parts
from . import base as LP
from ..streaming import streamed as LZ
from ..native import sums as NW
from ..eager import SPAN, evaluate
from .base import BIN, EB, LEN, OK, COL_PREFIX, W, WT, pairwise_sum

__all__ = ["KINDS", "SPAN", "companion_state", "lazy_states", "moment_query", "moment_ready", "moment_request",
           "moment_result", "moment_state", "narwhals_states", "row_values", "run", "small_arrays", "streamed",
           "values"]

#: the requests computed here beside the CE family's (``Request.kind``): ``row_sums`` are the figures of several
#: row values' sums (bias, spiegelhalter: calframe.row_sums), each value a function of the request's lens
KINDS = ("companion", "summary", "row_sums")
#: the kinds of frame (calframe.registry) whose row means are computed here: the lazy and narwhals engines'
ON = ("lazy", *NW.KINDS)
# SPAN (eager.SPAN, one definition): a power of two at least each companion's largest row value; the value / SPAN
# lies in [0, 1], what the exact fixed-point sums take, here and in the eager engine's sums
#: the log loss's clip: float64's machine epsilon (scikit-learn's, and the eager engine's)
EPS = float(np.finfo(np.float64).eps)
#: summary's row means
_SUMMARY_MEANS = ("accuracy", "brier", "log_loss")
#: (figures per group, rows per group, the key table)
Values = tuple[dict[str, np.ndarray], np.ndarray, "pl.DataFrame | None"]
#: the result from the values and the flavor of its frame (``"polars"`` or ``"pandas"``)
Finish = Callable[[dict[str, np.ndarray], np.ndarray, "pl.DataFrame | None", str], Any]


def _col(name: str) -> str:
    return f"{COL_PREFIX}m_{name}"


def _span(name: str) -> float:
    """The power of two at least the row value ``name``'s largest (the row sums' values lie in [0, 1])."""
    return SPAN.get(name, 1.0)


def _summed(names: tuple[str, ...]) -> tuple[str, ...]:
    """The row values of ``names`` a pass sums (not the weights' total, :data:`calframe.row_sums.WEIGHT`)."""
    return tuple(n for n in names if n != RS.WEIGHT)


def _lens_of(req: Request) -> L.Lens:
    """The lens a row-means pass is planned with: the request's for the row sums, else the default (the
    companions' row values read the classes themselves)."""
    return req.lens if req.kind == "row_sums" else L.AUTO


def row_values(plan: LP.EnginePlan, probs: Any, label: Any, acc: Any, names: tuple[str, ...]) -> dict[str, Any]:
    """Each companion of ``names`` as a row expression (Polars or narwhals, the same operations): ``probs`` the
    positive-class probability (binary input) or the list of the K class probabilities, ``label`` the label
    column, ``acc`` the top-1 lens's accuracy. The eager engine's ``brier_rows`` / ``log_loss_rows``, row by row;
    rows the checks report give any value."""
    kind = plan.label_kind or "int"

    def is_(k: int) -> Any:
        return L.label_is(label, k, kind)

    def square(d: Any) -> Any:
        return d * d

    if not isinstance(probs, list):  # binary: p the positive class's probability
        brier, g_y = square(probs - flag(is_(1))), where(is_(1), probs, 1.0 - probs)
    else:
        k = len(probs)
        brier = (square(probs[1] - flag(is_(1))) if k == 2 else
                 pairwise_sum([square(g - flag(is_(j))) for j, g in enumerate(probs)]))
        g_y = probs[k - 1]
        for j in range(k - 2, -1, -1):
            g_y = where(is_(j), probs[j], g_y)
    out = {"accuracy": acc, "brier": brier, "log_loss": -(g_y.clip(EPS, 1.0 - EPS).log())}
    return {n: out[n] for n in names}


def _means(plan: LP.EnginePlan, res: pl.DataFrame, names: tuple[str, ...]) -> Values:
    """The row means per group from a pass's checked cells (keys, ``BIN``, exact float sums)."""
    cells = LZ.kept_cells(plan, res)
    g, keys, n_groups = LZ.group_index(plan, cells)
    weight = cells[W].to_numpy() if plan.weight_col is not None else cells[LEN].to_numpy().astype(np.float64)
    sums = np.zeros((n_groups, 1, 3))
    np.add.at(sums[:, 0, 0], g, weight)
    counts = np.bincount(g, weights=cells[LEN].to_numpy().astype(np.float64), minlength=n_groups).astype(np.int64)
    if plan.weight_col is not None:
        check_group_weights(plan.func, plan.weight_col, sums[:, 0, 0], counts, keys)
    values = {}
    for name in _summed(names):
        sums[:, 0, 1] = 0.0
        np.add.at(sums[:, 0, 1], g, cells[_col(name)].to_numpy() * _span(name))  # a power of two: exact
        values[name] = F.companion(sums)
    if RS.WEIGHT in names:  # the weights' total in the caller's units
        values[RS.WEIGHT] = sums[:, 0, 0] * (LP.group_scales(plan, keys) if plan.weight_col is not None else 1.0)
    return values, counts, keys


def _row_exprs(plan: LP.EnginePlan, ns: Any, names: tuple[str, ...]) -> dict[str, Any]:
    """:func:`row_values` of the plan's columns in ``ns`` (Polars or narwhals: the plan's renderings), the
    accuracy the top-1 lens's; the row sums' values (:data:`calframe.row_sums.VALUES`) of the plan's lens."""
    names = _summed(names)
    lensed = [n for n in names if n in RS.VALUES]
    out = {}
    if lensed:
        conf, acc = LP.lensed_exprs(plan, ns)
        out = {n: RS.VALUES[n](conf, acc) for n in lensed}
    rest = tuple(n for n in names if n not in RS.VALUES)
    if rest:
        probs = LP.binary_prob(plan, ns) if plan.binary else LP.class_probs(plan, ns)
        acc = LP.lensed_exprs(replace(plan, lens=L.Lens("top1")), ns)[1]
        out.update(row_values(plan, probs, ns.col(plan.label_col), acc, rest))
    return {n: out[n] for n in names}


# --------------------------------------------------------------------------- the narwhals engine


def _narwhals_means(eng: NW.Engine, req: Request, names: tuple[str, ...]) -> Values:
    """One pass in the user's engine: per (keys, bin marker[, weight bucket]) rows and the exact sums of the
    weight and of the weighted row values (``narwhals.Run.main``'s layout: a bad row in bin -2, a dropped one
    in bin -1)."""
    r = NW.Run(eng, moment_request(req))
    plan = r.prepared()
    nw, weighted, wide = r.nw, plan.weight_col is not None, r.wide
    ok, keep = NW.row_ok(plan), NW.keep_expr(plan)
    rows = NW.key_cols(plan, r.schema) + [nw.when(ok).then(v).alias(_col(n))
                                          for n, v in _row_exprs(plan, nw, names).items()]
    marker = nw.when(ok).then(nw.lit(0)).otherwise(nw.lit(-2))
    rows.append((marker if keep is None else nw.when(keep).then(marker).otherwise(nw.lit(-1))).cast(nw.Int32)
                .alias(BIN))
    if weighted:
        w = nw.when(ok).then(r.weights())
        rows += [w.alias(WT), NW.bucket_expr(w).alias(EB)]
    bucket = nw.col(EB) if weighted else None
    summed = ([W] if weighted else []) + [_col(n) for n in _summed(names)]
    parts = NW.fixed_parts(W, nw.col(WT), bucket, wide) if weighted else []
    for n in _summed(names):
        x = nw.col(_col(n)) * (1.0 / _span(n))
        parts += NW.fixed_parts(_col(n), nw.col(WT) * x if weighted else x, bucket, wide)
    cell = plan.keys + [BIN] + ([EB] if weighted else [])
    aggs = [nw.col(c).sum().alias(c) for s in summed for c in NW.part_names(s, wide)]
    res = NW.collect_frame(r.base(rows).select(*[nw.col(c) for c in cell], *parts).group_by(cell).agg(
        nw.len().alias(LEN), *aggs))
    res = res.with_columns(pl.col(LEN).cast(pl.Int64),
                           pl.when(pl.col(BIN) == -2).then(0).otherwise(pl.col(LEN)).cast(pl.Int64).alias(OK))
    return _means(plan, r.checked(NW.exact_sums(res, summed, wide)), names)


def _narwhals_sums(eng: NW.Engine) -> Callable[[Request], tuple]:
    return lambda sub: NW.binned_sums(eng, sub)[:4]


# --------------------------------------------------------------------------- the lazy engine


def _lazy_means(lf: pl.LazyFrame, req: Request, names: tuple[str, ...]) -> Values:
    """One streaming pass: per (keys, bin marker[, weight bucket]) rows, valid rows and the exact sums of the
    weight and of the weighted row values (``lazy.main_query``'s layout: a dropped row in bin -1)."""
    plan = LZ.prepared(LZ.make_plan(lf, replace(req, kind="companion", lens=_lens_of(req))), lf)
    weighted, keep = plan.weight_col is not None, LP.keep_expr(plan)
    cols = LP.key_cols(plan) + [v.alias(_col(n)) for n, v in _row_exprs(plan, pl, names).items()]
    cols += [LP.row_ok(plan).alias(OK),
             (pl.lit(0, pl.Int32) if keep is None else pl.when(keep).then(0).otherwise(-1).cast(pl.Int32)).alias(BIN)]
    if weighted:
        cols.append(LP.weights_expr(plan).alias(WT))
    q = LP.with_scales(plan, lf).select(cols)
    bucket = None
    if weighted:
        q, bucket = q.with_columns(LZ.weight_bucket(pl.col(WT)).alias(EB)), pl.col(EB)
    aggs = [pl.len().alias(LEN), pl.col(OK).sum().alias(OK)]
    if weighted:
        aggs.append(LZ.fixed_sum(pl.col(WT), bucket).alias(W))
    for n in _summed(names):
        x = pl.col(_col(n)) * (1.0 / _span(n))
        aggs.append(LZ.fixed_sum(pl.col(WT) * x if weighted else x, bucket).alias(_col(n)))
    res = LZ.exact_floats(LZ.collect_frame(q.group_by(plan.keys + [BIN] + ([EB] if weighted else [])).agg(aggs)))
    return _means(plan, LZ.checked(plan, lf, res), names)


def _lazy_sums(lf: pl.LazyFrame) -> Callable[[Request], tuple]:
    return lambda sub: LZ.lazy_sums(lf, sub)


# --------------------------------------------------------------------------- the figures


def values(req: Request, means: Callable[[tuple[str, ...]], Values],
           sums: Callable[[Request], tuple]) -> Values:
    """``req``'s figures per group from the engine's ``means(names)`` (:func:`_means`) and ``sums(request)``
    (its bin sums: sums, keys, counts, the weights' scale)."""
    if req.kind == "companion":
        return means((req.func,))
    if req.kind == "row_sums":
        m, counts, keys = means((*req.options.values, RS.WEIGHT))
        return RS.finalize(req.options, m, counts), counts, keys
    if req.kind != "summary":
        s, keys, counts, scale = sums(req)
        return F.binned_values(req, lambda c: s, 1, scale), counts, keys
    parts = summary_parts(req)
    uniform = sums(replace(req, kind="ce"))
    with warnings.catch_warnings():  # the first pass warned of the rows nulls='drop' dropped: once, as eager
        warnings.filterwarnings("ignore", message=f"{req.func}: dropped ")
        binned = {name: uniform if sub.binning == req.binning else sums(sub) for name, sub in parts.items()}
        row, _, _ = means(_SUMMARY_MEANS)
    out = {"accuracy": row["accuracy"]}
    for name, sub in parts.items():
        s, _, _, scale = binned[name]
        out[name] = F.binned_values(sub, lambda c, s=s: s, 1, scale)[sub.name]
    out.update(brier=row["brier"], log_loss=row["log_loss"])
    return out, uniform[2], uniform[1]


def names(req: Request) -> list[str]:
    """The figures' columns of ``req``'s result."""
    if req.kind == "summary":
        return ["accuracy", *summary_parts(req), "brier", "log_loss"]
    return req.figure_names


def binned(req: Request, frame: Any, figures: dict | None = None) -> Any:
    """A companion or summary on a frame of :data:`ON` (:func:`calframe.engines.run_binned`): the narwhals engine,
    streamed on a LazyFrame, else (``ci=``, List probabilities) the eager engine on the collected columns."""
    if isinstance(frame, pl.LazyFrame):
        out = streamed(frame, req) if req.ci is None else moment_companion(frame, req, figures)
        return out if out is not None else evaluate(req, frame, figures)
    if _moment_ready(req, figures):  # the narwhals engine: its intervals from the moments, in its own engine
        eng = NW.Engine(frame)
        NW.admit(eng, replace(req, kind="ce", ci=None), F.output_columns(names(req), req.ci))
        return eng.out(moment_result(req, figures, *narwhals_states(eng, req)))
    return run(frame, req)


#: an engine's moments of one binning: ``sums(sub)`` -> ``(sums, keys, counts, scale, moments)``
Sums = Callable[[Request], tuple]
#: an engine's moments of companions' row values: ``means(names)`` -> :func:`_lazy_moment_means`' return
Means = Callable[[tuple[str, ...]], dict]


def narwhals_states(eng: NW.Engine, req: Request) -> tuple[Sums, Means]:
    """The ``sums`` and ``means`` of :func:`moment_state` in the narwhals engine."""
    def sums(sub: Request) -> tuple:
        out = NW.binned_sums(eng, sub, moments=True)[:4]
        return (*out, eng.moments)

    return sums, lambda names_: _narwhals_moment_means(eng, req, names_)


def lazy_states(lf: pl.LazyFrame, req: Request) -> tuple[Sums, Means]:
    """The ``sums`` and ``means`` of :func:`moment_state`, streamed on a LazyFrame."""
    return (lambda sub: LZ.sums_and_moments(lf, sub, moments=True),
            lambda names_: _lazy_moment_means(lf, req, names_))


def moment_result(req: Request, figures: dict, sums: Sums, means: Means) -> pl.DataFrame:
    """A companion's or summary's ``ci=`` result where the rows are (:func:`moment_state`), as a Polars frame:
    ``by``'s keys, ``n``, the figures, their bounds and ``ci_method``."""
    values, counts, keys, bounds, _ = moment_state(req, figures, sums, means)
    return F.shape(req, values, counts, keys, "polars", bounds, scalar=False)


def moment_state(req: Request, figures: dict, sums: Sums, means: Means, keep: dict | None = None) -> tuple:
    """A companion's or summary's values and ``ci=`` bounds where the rows are, drawn as eager draws them: every
    figure from the moments of its own state. A companion from the moments of its row values split by top-1
    correctness (``means(names)``: one pass for several); summary's CE figures from one moments pass per binning
    (``sums(sub)``: the uniform bins, and the debiased figure's equal-mass bins, their edges held fixed), its three
    companions from one pass. A figure's draws depend on its own state's stream only
    (:func:`calframe.moments.draws`), so drawing the states apart gives eager's bits (to the rounding of its float
    sums). ``keep``: filled with each figure's draws (:func:`calframe.disparity`). Returns (values in the result's
    order, rows per group, the key table, bounds, each group's sum of weights with weights: ``Spread.sizes``, else
    None)."""
    from ... import moments as M
    from ..._progress import steps

    def sizes(m: Any, n_groups: int, scale: Any) -> np.ndarray | None:
        return M.frequencies(m, n_groups, scale) if m is not None and m.weighted else None

    if req.kind == "companion":
        (vals, counts, keys), m, table, scale = means((req.func,))[req.func]
        bounds = M.bounds_from_moments(req, figures, table, m, keys, scale, keep=keep)
        return vals, counts, keys, bounds, sizes(m, table.shape[0], scale)
    parts = summary_parts(req)
    binnings: list[tuple[Binning, list[str]]] = []
    for name, sub in parts.items():
        same = [names_ for b, names_ in binnings if b == sub.binning]
        if same:
            same[0].append(name)
        else:
            binnings.append((sub.binning, [name]))
    values: dict[str, np.ndarray] = {}
    bounds: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    first: tuple | None = None
    bar = _Shared(steps(req.n_boot, "bootstrap", unit="draw"), len(binnings) + len(_SUMMARY_MEANS))
    for i, (_, group) in enumerate(binnings):
        with warnings.catch_warnings():  # the first pass warned of the rows nulls='drop' dropped: once, as eager
            if i:
                warnings.filterwarnings("ignore", message=f"{req.func}: dropped ")
            s, k, c, scale, m = sums(parts[group[0]])
        first = first or (c, k, sizes(m, s.shape[0], scale))
        for name in group:
            sub = parts[name]
            values[name] = F.binned_values(sub, lambda _, s=s: s, 1, scale)[sub.name]
        bounds.update(M.bounds_from_moments(req, {n: figures[n] for n in group}, s, m, k, scale, keep=keep,
                                            bar=bar))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=f"{req.func}: dropped ")
        states = means(_SUMMARY_MEANS)  # one pass for the three companions
    for name in _SUMMARY_MEANS:
        (vals, _, k), m, table, scale = states[name]
        values[name] = vals[name]
        bounds.update(M.bounds_from_moments(req, {name: figures[name]}, table, m, k, scale, keep=keep, bar=bar))
    counts, keys, weights = first  # type: ignore[misc]
    return {name: values[name] for name in names(req)}, counts, keys, bounds, weights


def table(kind: str, frame: Any, req: Request, finish: Finish, schema: dict[str, pl.DataType], plain: bool,
          native: bool) -> Any:
    """:func:`calframe.engines.run_table` on a frame of :data:`ON`: ``plain`` (no ``ci``, one variable, no row
    selection: ``native``), in the narwhals engine or streamed (None: the call needs the rows, a LazyFrame's
    to collect); else the narwhals engine refuses it (:class:`narwhals.Unsupported`)."""
    if kind == "lazy":
        return streamed(frame, req, finish, schema) if plain else None
    if not plain:
        what = "ci=" if req.ci is not None else "several variables at once" if native else "a row selection"
        raise NW.Unsupported(f"{req.func}: " + NW.refusal(kind, what))
    return run(frame, req, finish)


def run(frame: Any, req: Request, finish: Finish | None = None) -> Any:
    """``req`` (a companion, summary, or a CE_p figure) in the narwhals engine: ``finish`` of its values (default:
    the figures' result), in the input's type. A call it does not run raises :class:`narwhals.Unsupported`."""
    eng = NW.Engine(frame)
    if req.ci is not None:
        raise NW.Unsupported(f"{req.func}: " + NW.refusal(eng.kind, "ci="))
    NW.admit(eng, replace(req, kind="ce") if req.kind in KINDS else req, F.output_columns(names(req)))
    vals, counts, keys = values(req, lambda n: _narwhals_means(eng, req, n), _narwhals_sums(eng))
    if finish is None:
        return NW.shaped(eng, req, vals, counts, keys)
    return eng.out(finish(vals, counts, keys, "polars"))


def streamed(frame: Any, req: Request, finish: Finish | None = None,
             schema: dict[str, pl.DataType] | None = None) -> pl.LazyFrame | None:
    """``req`` on a LazyFrame as a LazyFrame, computed by Polars' streaming engine when collected (``finish`` of
    its values, a frame of ``schema``; default: the figures, one row without ``by``), or None when the call needs
    the rows (``lazy.streams``)."""
    if req.ci is not None or not LZ.streams(frame, replace(req, kind="ce") if req.kind in KINDS else req):
        return None  # the row means' intervals need the rows (the CE family's come from the moments of its bins)
    plan = LZ.make_plan(frame, req)  # the column errors now, the data's when collected
    F.check_by_names(req.func, req.by, F.output_columns(names(req)), frame)
    if finish is None:
        schema = {c: plan.schema[c] for c in plan.by_cols} | {"n": pl.Int64} | {n: pl.Float64 for n in names(req)}

        def finish(vals: dict, counts: np.ndarray, keys: pl.DataFrame | None, flavor: str) -> Any:
            return F.shape(req, vals, counts, keys, flavor, scalar=False)

    def compute() -> pl.DataFrame:
        return finish(*values(req, lambda n: _lazy_means(frame, req, n), _lazy_sums(frame)), "polars")

    return pl.defer(compute, schema=schema)


# --------------------------------------------------------------------------- intervals from moments


class _Shared:
    """One progress bar of ``n_boot`` draws advanced by ``parts`` drawings of ``n_boot`` each (summary's states:
    one bar per call, as in memory)."""

    def __init__(self, bar: Any, parts: int) -> None:
        self.bar, self.parts, self.done, self.shown = bar, parts, 0, 0

    def update(self, n: int) -> None:
        self.done += n
        now = self.done // self.parts
        if now > self.shown:
            self.bar.update(now - self.shown)
            self.shown = now


def _v(name: str) -> str:
    """A moments pass's column of the row value ``name`` over its :data:`SPAN`."""
    return f"{COL_PREFIX}v_{name}"


def _s(name: str) -> str:
    """A moments pass's sum of ``w v`` of the row value ``name`` (per cell; ``w v`` per row in the small rows)."""
    return f"{COL_PREFIX}s_{name}"


def _q(name: str) -> str:
    """A moments pass's sum of ``w v^2`` of the row value ``name``."""
    return f"{COL_PREFIX}q_{name}"


#: a companion's state from a moments pass: (its :data:`Values`, its cells' Moments, the groups' table, the scale)
State = tuple[Values, Any, np.ndarray, Any]


def moment_request(req: Request) -> Request:
    """The request a companion's moments pass is planned with (its lens: :func:`_lens_of`)."""
    return replace(req, kind="companion", lens=_lens_of(req))


def moment_query(plan: LP.EnginePlan, lf: pl.LazyFrame, name: str | tuple[str, ...]
                 ) -> tuple[pl.LazyFrame, list[str], list[pl.Expr], Callable[[pl.DataFrame], pl.LazyFrame]]:
    """The moments pass of companion ``name`` on ``lf`` (``plan``: :func:`moment_request`'s, its weights' scale
    set): (the rows' query, the cell keys (keys, ``BIN``, ``LZ.ACC``[, ``EB``]), the cells' aggregations, and
    ``small(fetch)``: the query of the rows of the cells of ``fetch``, their cell, ``W`` and ``LZ.SC``). Several
    companions (a tuple of names) in one pass: each one's sums :func:`_s` and :func:`_q` side by side (the cells,
    and so the small ones, are the same for all), ``small`` giving each one's :func:`_s` per row."""
    names_ = (name,) if isinstance(name, str) else name
    s_of, q_of = ((lambda n: LZ.SC), (lambda n: LZ.Q[2])) if isinstance(name, str) else (_s, _q)
    weighted, keep = plan.weight_col is not None, LP.keep_expr(plan)
    values_ = _row_exprs(plan, pl, names_)
    split = LP.lensed_exprs(replace(plan, lens=L.Lens("top1")), pl)[1]
    marker = pl.lit(0, pl.Int32) if keep is None else pl.when(keep).then(0).otherwise(-1).cast(pl.Int32)
    ok = LP.row_ok(plan)  # a bad row's correctness is 0 (a NaN label cannot be cast; the checks report the row)
    cols = LP.key_cols(plan) + [(values_[n] * (1.0 / _span(n))).alias(_v(n)) for n in names_] + [
        pl.when(ok).then(split).fill_null(0).cast(pl.Int8).alias(LZ.ACC), ok.alias(OK), marker.alias(BIN)]
    if weighted:
        cols.append(LP.weights_expr(plan).alias(WT))
    q = LP.with_scales(plan, lf).select(cols)
    w, bucket = (pl.col(WT), pl.col(EB)) if weighted else (pl.lit(1.0), None)
    if weighted:
        q = q.with_columns(LZ.weight_bucket(pl.col(WT)).alias(EB))
    aggs = [pl.len().alias(LEN), pl.col(OK).sum().alias(OK)]
    for n in names_:
        c = pl.col(_v(n))
        aggs += [LZ.fixed_sum(w * c if weighted else c, bucket).alias(s_of(n)),
                 LZ.fixed_sum((w * c) * c if weighted else c * c, bucket).alias(q_of(n))]
    if weighted:
        aggs.append(LZ.fixed_sum(w, bucket).alias(W))

    def small(fetch: pl.DataFrame) -> pl.LazyFrame:  # the small cells' rows: at most SMALL - 1 per cell
        return q.join(fetch.lazy(), on=plan.keys + [BIN, LZ.ACC], how="inner", nulls_equal=True).select(
            pl.col(f"{COL_PREFIX}cell"), w.alias(W), *[(w * pl.col(_v(n))).alias(s_of(n)) for n in names_])

    return q, plan.keys + [BIN, LZ.ACC] + ([EB] if weighted else []), aggs, small


def small_arrays(got: pl.DataFrame) -> tuple:
    """The small cells' rows (:func:`moment_query`'s ``small``, collected) as :func:`companion_state` reads them."""
    return got[f"{COL_PREFIX}cell"].to_numpy(), got[W].to_numpy(), got[LZ.SC].to_numpy()


def _lazy_moment_means(lf: pl.LazyFrame, req: Request, names_: tuple[str, ...]) -> dict[str, State]:
    """The companions' (``names_``) row means and the moments of their cells, streamed: one pass per (keys, top-1
    correctness [, weight bucket]) with the exact sums of w and, per companion, of w v and w v^2 (v its row value
    over its :data:`SPAN`, so in [0, 1]: ``lazy._moment_aggs``' layout; :func:`moment_query`), added up again
    exactly per group for the figures (``lazy.split_moments``), and one bounded query for the rows of the cells
    under :data:`calframe.moments.SMALL` rows (the same cells for every companion). Returns per companion (the
    values, counts and keys of :func:`_means`, the :class:`calframe.moments.Moments` of its row values, the
    groups' ``[sum w, sum w v, 0]`` table, the weights' scale)."""
    plan = LZ.prepared(LZ.make_plan(lf, moment_request(req)), lf)
    q, cell, aggs, small = moment_query(plan, lf, names_)
    point, cells = LZ.split_moments(plan, LZ.collect_frame(q.group_by(cell).agg(aggs)))
    return _companion_states(plan, LZ.checked(plan, lf, LZ.exact_floats(point)), cells, names_,
                             lambda fetch: LZ.collect_frame(small(fetch)))


def _companion_states(plan: LP.EnginePlan, point: pl.DataFrame, cells: pl.DataFrame, names_: tuple[str, ...],
                      rows_of: Callable[[pl.DataFrame], pl.DataFrame]) -> dict[str, State]:
    """Each companion's :func:`companion_state` from one moments pass (its columns :func:`_s`, :func:`_q`), the
    small cells' rows fetched once (``rows_of(fetch)``: ``cell``, ``W`` and each :func:`_s` per row)."""
    fetched: list[pl.DataFrame] = []

    def small(name: str) -> Callable[[pl.DataFrame], tuple]:
        def get(fetch: pl.DataFrame) -> tuple:
            if not fetched:  # the same cells are small for every companion: one query
                fetched.append(rows_of(fetch))
            got = fetched[0]
            return got[f"{COL_PREFIX}cell"].to_numpy(), got[W].to_numpy().astype(np.float64), got[_s(name)].to_numpy(
                ).astype(np.float64)
        return get

    return {n: companion_state(plan, point.rename({_s(n): LZ.SC}), cells.rename({_s(n): LZ.SC, _q(n): LZ.Q[2]}),
                                n, small(n)) for n in names_}


def companion_state(plan: LP.EnginePlan, point: pl.DataFrame, cells: pl.DataFrame, name: str,
                    rows_of: Callable[[pl.DataFrame], tuple]) -> State:
    """A companion's values from its checked cells per group (``point``) and the moments of its cells per (group,
    correctness) (``cells``, Int128 sums of the value over its :data:`SPAN`), the small cells' rows from
    ``rows_of(fetch)`` ((cell, w, w v / span) per row): :func:`_lazy_moment_means`' return."""
    from ... import moments as M

    span, weighted = _span(name), plan.weight_col is not None
    vals, counts, keys = _means(plan, point.rename({LZ.SC: _col(name)}), (name,))
    one_bin = replace(plan, binning=Binning("uniform", 1))  # the cells of one bin, split by correctness
    (g, b, a, n, sums, n_groups), fetch = LZ.cell_moments(one_bin, cells, LZ.int128_float)
    sums = sums * np.array([1.0, span, span * span])  # powers of two: exact
    small = M.NO_ROWS
    if fetch is not None:
        cell, w, wv = rows_of(fetch)
        small = (cell, w, wv * span)
    m = M.from_cells(g, b, a, n, sums, n_groups, small, weighted)
    table = np.zeros((n_groups, 1, 3))
    table[:, 0, 0] = np.bincount(g, sums[:, 0], n_groups)
    table[:, 0, 1] = np.bincount(g, sums[:, 1], n_groups)
    return (vals, counts, keys), m, table, LZ.group_scales(plan, keys) if weighted else 1.0


def _narwhals_moment_means(eng: NW.Engine, req: Request, names_: tuple[str, ...]) -> dict[str, State]:
    """:func:`_lazy_moment_means` in the narwhals engine (DuckDB, Spark, Ibis, pyarrow): the same cells and sums
    in one query of the user's engine (``narwhals.Run.main``'s layout), the small cells' rows in one more
    (``narwhals.Run.small_rows``' join, every companion's value)."""
    r = NW.Run(eng, replace(moment_request(req), ci=None))
    plan = r.prepared()
    nw, weighted, wide = r.nw, plan.weight_col is not None, r.wide
    ok, keep = NW.row_ok(plan), NW.keep_expr(plan)
    values_ = _row_exprs(plan, nw, names_)
    split = LP.lensed_exprs(replace(plan, lens=L.Lens("top1")), nw)[1]
    marker = nw.when(ok).then(nw.lit(0)).otherwise(nw.lit(-2))
    rows = NW.key_cols(plan, r.schema) + [
        nw.when(ok).then(values_[n] * (1.0 / _span(n))).alias(_v(n)) for n in names_] + [
        nw.when(ok).then(split).otherwise(nw.lit(0)).cast(nw.Int64).alias(LZ.ACC),
        (marker if keep is None else nw.when(keep).then(marker).otherwise(nw.lit(-1))).cast(nw.Int32).alias(BIN)]
    if weighted:
        w = nw.when(ok).then(r.weights())
        rows += [w.alias(WT), NW.bucket_expr(w).alias(EB)]
    bucket = nw.col(EB) if weighted else None
    parts = NW.fixed_parts(W, nw.col(WT), bucket, wide) if weighted else []
    for n in names_:
        x = nw.col(_v(n))
        wx = nw.col(WT) * x if weighted else x
        parts += NW.fixed_parts(_s(n), wx, bucket, wide) + NW.fixed_parts(_q(n), wx * x, bucket, wide)
    summed = ([W] if weighted else []) + [c for n in names_ for c in (_s(n), _q(n))]
    cell = plan.keys + [BIN, LZ.ACC] + ([EB] if weighted else [])
    aggs = [nw.col(c).sum().alias(c) for s in summed for c in NW.part_names(s, wide)]
    res = NW.collect_frame(r.base(rows).select(*[nw.col(c) for c in cell], *parts).group_by(cell).agg(
        nw.len().alias(LEN), *aggs))
    res = res.with_columns(pl.col(LEN).cast(pl.Int64), pl.col(LZ.ACC).cast(pl.Int64),
                           pl.when(pl.col(BIN) == -2).then(0).otherwise(pl.col(LEN)).cast(pl.Int64).alias(OK))
    point, cells = LZ.split_moments(plan, NW.int128_sums(res, summed, wide))

    def rows_of(fetch: pl.DataFrame) -> pl.DataFrame:  # Run.small_rows' join, every companion's w v
        wc = nw.col(WT) if weighted else nw.lit(1.0)
        exprs, jn = NW.join_keys(plan, plan.keys)
        picked = [nw.col(k) for k in plan.keys] + [nw.col(BIN), nw.col(LZ.ACC).cast(nw.Int64), wc.alias(W)] + [
            (wc * nw.col(_v(n))).alias(_s(n)) for n in names_]
        table = NW.polars_join_keys(fetch, plan.keys, jn).drop(plan.keys).with_columns(
            pl.col(BIN).cast(pl.Int32), pl.col(LZ.ACC).cast(pl.Int64))
        q = r.base(rows).select(picked).with_columns(exprs).join(eng.table(table), on=jn + [BIN, LZ.ACC], how="inner")
        return NW.collect_frame(q.select(nw.col(f"{COL_PREFIX}cell"), nw.col(W), *[nw.col(_s(n)) for n in names_]))

    return _companion_states(plan, r.checked(LZ.exact_floats(point)), cells, names_, rows_of)


def moment_ready(req: Request, figures: dict | None) -> bool:
    """Whether a companion's ``ci=`` is drawn from the moments of its row values where the rows are."""
    return req.kind == "companion" and _moment_ready(req, figures)


def _moment_ready(req: Request, figures: dict | None) -> bool:
    """Whether a companion's or summary's ``ci=`` is drawn from the moments of its figures' states where the rows
    are."""
    from ... import moments as M

    return (req.kind in ("companion", "summary") and req.ci is not None and req.bootstrap != "rows"
            and figures is not None and all(M.sums_of(f) is not None for f in figures.values()))


def moment_companion(frame: pl.LazyFrame, req: Request, figures: dict) -> pl.LazyFrame | None:
    """A companion's or summary's ``ci=`` on a LazyFrame, streamed (LazyFrame out): the values and the bootstrap
    from the moments of their states (:mod:`calframe.moments`, the eager figures' :class:`~calframe.moments.Summed`:
    the same law and streams; summary: :func:`moment_state`), or None when the call needs the rows
    (``bootstrap="rows"``, List probabilities, a row selection)."""
    if not _moment_ready(req, figures) or not LZ.streams(frame, replace(req, kind="ce", ci=None)):
        return None
    plan = LZ.make_plan(frame, replace(req, ci=None))  # the column errors now, the data's when collected
    F.check_by_names(req.func, req.by, F.output_columns(names(req), req.ci), frame)
    schema = {c: plan.schema[c] for c in plan.by_cols} | {"n": pl.Int64}
    schema |= {f"{f}{end}": pl.Float64 for f in names(req) for end in ("", "_lo", "_hi")} | {F.CI_METHOD: pl.String}

    def compute() -> pl.DataFrame:
        return moment_result(req, figures, *lazy_states(frame, req))

    from ..._progress import carry  # the call's progress= holds where the result is computed (at collect)

    return pl.defer(carry(compute), schema=schema)
