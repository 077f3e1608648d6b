"""Streaming per (group, bin) sums for Polars LazyFrames (DESIGN: "lazy frames push the sums down").

:func:`lazy_sums` builds one lazy query that computes, per (group keys, bin),
``n`` (sum of weights), ``sum w*conf`` and ``sum w*acc`` with native Polars
expressions, runs it with the streaming engine (``collect(engine="streaming")``)
and returns the same ``(n_groups, n_bins, 3)`` array the eager pipeline
(:func:`calframe.engines.eager.binned_sums`) builds, with the sorted key table and the
per-group row counts. :func:`calframe.metrics.ce_from_sums` finalizes it. The
frame is never collected.

The sums are exact integers (``_fixed_sum``: fixed point, summed as Int128), so
the same query gives the same bits on every run and thread count (docs/spec.md
section 8, "Exact sums"); :func:`make_plan` reads the plan from the schema
alone, which the API does at call time before it defers the sums to collect
(:func:`run`, "Lazy in, lazy out").

Validation (the same errors as the eager path)
----------------------------------------------
In the same pass, every row gets a validity flag, false or null for: a null
in a checked column (``nulls="raise"``), a NaN / infinite / out of [0, 1]
probability, a multiclass row whose sum is more than
:data:`calframe._columns.SUM_TOLERANCE` from 1 (summed in numpy's pairwise
order, so rows on the tolerance decide as the eager path does), a label
outside the classes or not a whole number, a negative / NaN / infinite
weight, a non-finite numeric variable, a variable outside explicit edges.
The valid rows are counted per cell. Only if some row is not valid does a
second streaming pass compute the detailed counts (per column nulls, rows
per kind of problem, min / max, worst row sum, first offending labels); the
first failing check, in the eager path's order, then raises the eager
path's exception class with its exact message. Dtype problems are found from
the schema but are raised at their place in that order too (a null count,
for example, is reported before a String probability column).
``nulls="drop"`` sends rows with a null in a checked column to a sentinel
bin (-1; null for a categorical variable) of their group, so they are
counted (for the warning) and ignored.

Bins (SPEC §1.3), exact on every edge
-------------------------------------
The lens and the bin of a value are the Polars renderings of their one
definition (:func:`calframe.lenses.lens_exprs`, :func:`calframe.binning.edge_bins_expr`
and :func:`calframe.binning.uniform_bin_expr`), exact on every edge. A categorical VECE
variable is its own bin key (one bin per category).

Quantile / equal-mass bins are exact, in streaming passes:
1. validation, and per group: count, min, max;
2. the order statistics that :func:`calframe.binning.edge_table` (the one
   edge rule of every engine) asks its ``take`` for are
   located by histograms: each group's range is cut into a grid of cells
   (the cell of a value is monotone in the value), and each wanted rank is
   followed into its cell through the cumulative counts; a cell whose min
   equals its max gives the value outright. While the values in the target
   cells exceed :data:`COLLECT_BUDGET`, those cells are cut again (one more
   pass each time; at most :data:`HIST_CELLS` cells per pass, where Polars'
   streaming group-by stays small). With few rows this step is skipped;
3. the values in the target cells are collected and sorted (only them), and
   ``edge_table`` builds the edges from those values;
4. the accumulate pass joins each row to its group's edges.
Memory: the per (group, bin) table, plus the histograms and at most about
COLLECT_BUDGET values for data-dependent bins. (1e8 rows, 1000 groups,
quantile(10): 5 passes, 12.5 s, 0.59 GB peak; eager 8.2 s, 5.5 GB.)

Inputs: a binary probability column (float or integer), a list of class
columns, or an ``Array`` column of class probabilities (``arr.max()`` /
``arr.arg_max()``, whose ties go to the lowest index like numpy's argmax).
``List`` columns, the ``marginal`` lens and several variables at once are not
streamed (:func:`supports` says False; use the eager path).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from .. import figures as F
from .. import lenses as L
from .._columns import (PROB_CANDIDATES, SUM_TOLERANCE, check_group_weights, check_key_dtype, key_expr,
                        resolve_names, weight_exponents)
from .. import _errors as E
from .._errors import CalframeError, bad_param
from .._lazy import lazy_function

fixed_to_floats = lazy_function("calframe._kernels.accumulate", "fixed_to_floats")
from .._limits import check_cells
from .._names import PREFIX, key_names
from ..request import Request
from ..binning import Binning, edge_bins_expr, edge_table, pack_edges, take_each, uniform_bin_expr, uniform_k0_expr

__all__ = ["lazy_sums", "make_plan", "run", "supports", "ENGINE", "COLLECT_BUDGET", "HIST_CELLS"]

#: the engine every query here runs on
ENGINE = "streaming"
#: quantile / equal-mass bins: refine the histogram while the values to collect exceed this
COLLECT_BUDGET = 4_000_000
#: quantile / equal-mass bins: cells per node (at most) in one histogram pass
_GRID_CELLS = 4096
#: quantile / equal-mass bins: cells in one histogram pass, over all nodes (at least 2 per node).
#: Polars' streaming group-by jumps from ~0.3 GB to 2-3 GB between 64k and 256k groups
#: (measured on 1e8 rows), so a histogram stays under it and refines in more passes instead.
HIST_CELLS = 1 << 16

# The queries' own columns start with _P. The group keys enter them renamed to positional names
# (_Plan.keys: __cf_key0, ...) and the key table gets the user's names back at the end, so a
# user column can never meet an internal one, whatever its name (docs/spec.md section 8).
_P = PREFIX
#: exact sums (``_fixed_sum``): a row's value x counts as the integer trunc(x * 2^FIXED_BITS) without weights, and
#: trunc(x * 2^(WEIGHTED_BITS + BUCKET_BITS * k)) with them, k its weight's bucket; 2^64 splits an Int128 in two
FIXED_BITS, WEIGHTED_BITS, BUCKET_BITS, _MAX_BUCKET, _TWO64 = 62, 60, 8, 134, 2**64
_BIN, _LEN, _W, _SC, _SA, _BAD, _VMIN, _VMAX = (
    f"{_P}bin", f"{_P}len", f"{_P}w", f"{_P}sc", f"{_P}sa", f"{_P}bad", f"{_P}vmin", f"{_P}vmax"
)


# --------------------------------------------------------------------------- plan (schema only)


@dataclass
class _Plan:
    """What a call needs, resolved from the schema alone (no data read)."""

    func: str
    prob_cols: list[str]
    multi_cols: bool
    label_col: str
    by_cols: list[str]
    weight_col: str | None
    var_col: str | None
    nulls: str
    lens: L.Lens
    binning: Binning
    schema: dict[str, pl.DataType]
    array: bool = False  # multiclass as one Array column
    k: int = 2
    prob_ok: bool = True  # the probability dtypes are usable
    label_kind: str | None = None  # "bool" / "int" / "float", None if unusable
    weights_ok: bool = True
    #: the weights are divided by this power of two: the one eager frames use (``_columns.scale_weights``)
    weight_scale: float = 1.0
    #: with ``by`` and groups of different scales: per group (``keys`` columns) its power of two 2^e as the
    #: factors ``_F1 * _F2`` = 2^-e each row is multiplied by (joined onto the rows), and 2^e (``_SCALE``)
    scale_table: pl.DataFrame | None = None
    var_kind: str | None = None  # "numeric" / "categorical", None if unusable / no variable
    #: step name -> exception, raised when the ordered checks reach that step
    schema_errors: dict[str, CalframeError] = field(default_factory=dict)
    #: every variable of the call, when there are several (their nulls are checked together)
    variables: list[str] | None = None

    @property
    def binary(self) -> bool:
        return not (self.multi_cols or self.array)

    @property
    def keys(self) -> list[str]:
        """The group key columns' names inside the queries (positional: never a user's name)."""
        return key_names(len(self.by_cols))

    def user_keys(self, table: pl.DataFrame) -> pl.DataFrame:
        """The key columns of ``table`` under the user's names."""
        return table.select([pl.col(k).alias(c) for c, k in zip(self.by_cols, self.keys)])

    @property
    def checked(self) -> list[str]:
        """Columns whose nulls are checked (eager: probability, label, weights, variable)."""
        extra = self.variables or ([self.var_col] if self.var_col is not None else [])
        w = [self.weight_col] if self.weight_col is not None else []
        return list(dict.fromkeys(self.prob_cols + [self.label_col] + w + extra))

    @property
    def prob_name(self) -> str | list[str]:
        return self.prob_cols if self.multi_cols else self.prob_cols[0]

    @property
    def data_binned(self) -> bool:
        """Quantile / equal-mass bins (data-dependent edges) on a numeric value."""
        if self.binning.edges is not None or self.binning.scheme == "uniform":
            return False
        return self.var_col is None or self.var_kind == "numeric"


def _is_num(dt: Any) -> bool:
    return dt.is_float() or dt.is_integer()


def make_plan(lf: pl.LazyFrame, req: Request) -> _Plan:
    """What :func:`lazy_sums` will compute for ``req``, from the schema alone (no data read): the parameter /
    column checks of ``_columns.resolve`` (same order, same messages) raise now; the data's errors are raised
    when the sums are computed."""
    func, prob, label, by, weights, nulls = req.func, req.prob, req.label, req.by, req.weights, req.nulls
    binning, variable = req.binning, req.variable
    if nulls not in ("raise", "drop"):
        raise bad_param(func, "nulls", "'raise' or 'drop'", nulls)
    extra = [] if variable is None else [variable]
    for pname, pval in (("prob", prob), ("label", label), ("by", by), ("weights", weights), ("variable", extra)):
        vals = [pval] if not isinstance(pval, (list, tuple)) else list(pval)
        bad = [v for v in vals if v is not None and not isinstance(v, str)]
        if bad:
            raise E.names_not_strings(func, pname, bad[0])
    schema = dict(lf.collect_schema())
    names = list(schema)
    prob_cols, multi_cols, label_col, by_cols, _, _ = resolve_names(names, func, prob, label, by, weights, extra)
    for c in by_cols:
        check_key_dtype(func, c, schema[c])
    lens_ = req.lens
    plan = _Plan(func, prob_cols, multi_cols, label_col, by_cols, weights, variable, nulls, lens_, binning, schema)
    err = plan.schema_errors

    # probabilities (eager: _probabilities / _float_column)
    if multi_cols:
        plan.k = len(prob_cols)
        for c in prob_cols:
            if not _is_num(schema[c]):
                err["prob_dtype"] = E.not_numeric(func, c, "class probability", schema[c])
                break
    else:
        c = prob_cols[0]
        dt = schema[c]
        if isinstance(dt, pl.List):
            raise NotImplementedError(f"{func}: List probability columns are not streamed; use the eager path.")
        if isinstance(dt, pl.Array):
            plan.array = True
            inner = dt.inner
            if not _is_num(inner):  # type: ignore[arg-type]
                err["prob_dtype"] = E.class_probabilities_not_numbers(func, c, inner)
            else:
                plan.k = int(dt.size)
                if plan.k < 2:
                    err["prob_dtype"] = E.too_few_classes(func, c, plan.k)
        elif not _is_num(dt):
            err["prob_dtype"] = E.not_numeric(func, c, "probability", dt)
    plan.prob_ok = "prob_dtype" not in err
    binary, k = plan.binary, plan.k
    lens_ = plan.lens = L.resolve_lens(lens_, binary)  # the default lens, now that the shape is known

    # labels (eager: _labels)
    dt = schema[label_col]
    if dt == pl.Boolean:
        if binary:
            plan.label_kind = "bool"
        else:
            err["label_dtype"] = E.boolean_multiclass_labels(func, label_col, k)
    elif dt.is_integer():
        plan.label_kind = "int"
    elif dt.is_float():
        plan.label_kind = "float"
    else:
        err["label_dtype"] = E.label_dtype(func, label_col, dt, binary, k)

    # weights (eager: _weights)
    if weights is not None and not _is_num(schema[weights]):
        err["weights_dtype"] = E.not_numeric(func, weights, "weights", schema[weights])
        plan.weights_ok = False

    # variable (eager: _variable)
    if variable is not None:
        vdt = schema[variable]
        if _is_num(vdt):
            plan.var_kind = "numeric"
        elif vdt == pl.Boolean or vdt in (pl.String, pl.Categorical, pl.Enum) or isinstance(vdt, (pl.Categorical, pl.Enum)):
            plan.var_kind = "categorical"
        else:
            err["var_dtype"] = E.variable_dtype(func, variable, vdt)

    # after resolve: the lens's class range (eager._ce_figure), then the variable binner's checks
    if lens_.kind == "marginal":
        raise NotImplementedError(f"{func}: the marginal lens is not streamed; use the eager path.")
    if lens_.kind == "class" and plan.prob_ok and lens_.c >= k:
        try:
            L.parse_lens(func, lens_, k)
        except CalframeError as e:
            err["lens_class"] = e
    if variable is not None and binning.edges is not None and plan.var_kind == "categorical":
        err["var_edges_cat"] = E.edges_need_numeric_variable(func, variable)
    return plan


# --------------------------------------------------------------------------- expressions


def _pairwise_sum(terms: list[pl.Expr]) -> pl.Expr:
    """The sum of ``terms`` in numpy's pairwise order (``numpy.sum`` of a row), bit for bit."""
    n = len(terms)
    if n < 8:
        out = terms[0]
        for t in terms[1:]:
            out = out + t
        return out
    if n <= 128:
        r = list(terms[:8])
        for i in range(8, n - n % 8, 8):
            for j in range(8):
                r[j] = r[j] + terms[i + j]
        out = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for i in range(n - n % 8, n):
            out = out + terms[i]
        return out
    n2 = n // 2
    n2 -= n2 % 8
    return _pairwise_sum(terms[:n2]) + _pairwise_sum(terms[n2:])


def _class_probs(plan: _Plan) -> list[pl.Expr]:
    """The K class probabilities as float64 expressions (multiclass)."""
    if plan.multi_cols:
        return [pl.col(c).cast(pl.Float64) for c in plan.prob_cols]
    a = _array(plan)
    return [a.arr.get(j) for j in range(plan.k)]


def _array(plan: _Plan) -> pl.Expr:
    c = plan.prob_cols[0]
    a = pl.col(c)
    if plan.schema[c].inner != pl.Float64:  # type: ignore[attr-defined]
        a = a.cast(pl.Array(pl.Float64, plan.k))
    return a


def _binary_prob(plan: _Plan) -> pl.Expr:
    return pl.col(plan.prob_cols[0]).cast(pl.Float64)


def _row_sum(plan: _Plan) -> pl.Expr:
    return _pairwise_sum(_class_probs(plan))


def _prob_ok(plan: _Plan) -> pl.Expr:
    """True where the row's probabilities are valid (null / False otherwise)."""
    if plan.binary:
        p = _binary_prob(plan)
        return (p >= 0.0) & (p <= 1.0)
    ps = _class_probs(plan)
    if plan.array and plan.k > 16:
        a = _array(plan)
        in_unit = (a.arr.min() >= 0.0) & (a.arr.max() <= 1.0)  # NaN rows fail the sum test below
    else:
        in_unit = pl.all_horizontal([(p >= 0.0) & (p <= 1.0) for p in ps])
    # Polars orders NaN above every number: a NaN sum fails "<= tol"; a null element makes the sum null
    return in_unit & ((_pairwise_sum(ps) - 1.0).abs() <= SUM_TOLERANCE)


def _label_ok(plan: _Plan, y: Any = None) -> pl.Expr:
    """True where the label is one of the classes; ``y``: the label column as a Polars (default) or narwhals
    expression (the narwhals engine)."""
    y = pl.col(plan.label_col) if y is None else y
    if plan.label_kind == "bool":
        return ~y.is_null()
    if plan.binary:
        return (y == 0) | (y == 1)
    ok = (y >= 0) & (y < plan.k)
    if plan.label_kind == "float":
        ok = ok & (y.floor() == y)
    return ok


def _raw_weights(plan: _Plan) -> pl.Expr:
    """The caller's weights as Float64 (their checks: finite, non-negative, positive total do not depend on a
    scale)."""
    return pl.col(plan.weight_col).cast(pl.Float64)  # type: ignore[arg-type]


def _factors(e: int) -> tuple[float, float]:
    """(f1, f2), powers of two with f1 * f2 = 2^-e, each finite: w * f1 * f2 rounds as ``numpy.ldexp(w, -e)``."""
    return (2.0**1022, float(np.ldexp(1.0, -(e + 1022)))) if e < -1022 else (1.0, float(np.ldexp(1.0, -e)))


def _weights_expr(plan: _Plan) -> pl.Expr:
    """The weights divided by their group's power of two (``plan.weight_scale``, or per group the factors of
    ``plan.scale_table``, joined onto the rows by ``_with_scales``), exactly as ``numpy.ldexp(w, -e)`` rounds."""
    w = _raw_weights(plan)
    if plan.scale_table is not None:
        return w * pl.col(_F1) * pl.col(_F2)
    f1, f2 = _factors(int(np.frexp(plan.weight_scale)[1]) - 1)
    w = w * f1 if f1 != 1.0 else w  # 2^-e past float64: scale up in two exact steps (a subnormal times 2^1022)
    return w * f2 if f2 != 1.0 else w


def _set_weight_scale(plan: _Plan, lf: pl.LazyFrame) -> None:
    """One aggregation: the largest kept weight of each group, and from it the eager path's power of two (1.0
    when it is not a positive finite number: the checks then report the bad weights or their zero total).
    One scale for all (``plan.weight_scale``) when every group has the same; else ``plan.scale_table``."""
    w = _raw_weights(plan)
    keep = _keep(plan)
    w = w if keep is None else w.filter(keep)
    if plan.by_cols:
        tops = _collect(lf.group_by(_key_cols(plan)).agg(w.max().alias(_W)))
    else:
        tops = _collect(lf.select(w.max().alias(_W)))
    e = weight_exponents(tops[_W].to_numpy())  # a null maximum (no kept row) reads as NaN: scale 1.0
    if e.size == 0 or (e == e[0]).all():
        plan.weight_scale = float(np.ldexp(1.0, int(e[0]))) if e.size else 1.0
        return
    f = [_factors(int(x)) for x in e]
    plan.scale_table = tops.select(plan.keys).with_columns(
        pl.Series(_F1, [a for a, _ in f]), pl.Series(_F2, [b for _, b in f]), pl.Series(_SCALE, np.ldexp(1.0, e)))


def _with_scales(plan: _Plan, lf: pl.LazyFrame) -> pl.LazyFrame:
    """``lf`` with each row's scale factors (``_weights_expr``) beside it, when the groups have different scales."""
    if plan.scale_table is None:
        return lf
    return lf.with_columns(_key_cols(plan)).join(plan.scale_table.lazy(), on=plan.keys, how="left", nulls_equal=True,
                                               maintain_order="left")


def _group_scales(plan: _Plan, keys: pl.DataFrame | None) -> float | np.ndarray:
    """The power of two of each group of ``keys`` (the user-named key table), or the one for all."""
    if plan.scale_table is None or keys is None:
        return plan.weight_scale
    table = plan.user_keys(plan.scale_table).with_columns(plan.scale_table[_SCALE])
    return keys.join(table, on=plan.by_cols, how="left", nulls_equal=True, maintain_order="left")[_SCALE].to_numpy()


def _var_expr(plan: _Plan) -> pl.Expr:
    return pl.col(plan.var_col).cast(pl.Float64)  # type: ignore[arg-type]


def _var_ok(plan: _Plan) -> pl.Expr | None:
    if plan.var_col is None or plan.var_kind != "numeric":
        return None
    v = _var_expr(plan)
    ok = v.is_finite()
    if plan.binning.edges is not None:
        e = plan.binning.edges
        ok = ok & (v >= e[0]) & (v <= e[-1])
    return ok


def _keep(plan: _Plan) -> pl.Expr | None:
    """nulls='drop': rows without a null in a checked column."""
    if plan.nulls != "drop":
        return None
    return pl.all_horizontal([pl.col(c).is_not_null() for c in plan.checked])


def _row_ok(plan: _Plan) -> pl.Expr:
    parts = [_prob_ok(plan), _label_ok(plan)]
    if plan.weight_col is not None:
        w = _raw_weights(plan)
        parts.append(w.is_finite() & (w >= 0.0))
    v = _var_ok(plan)
    if v is not None:
        parts.append(v)
    elif plan.var_col is not None:
        parts.append(pl.col(plan.var_col).is_not_null())
    return pl.all_horizontal(parts)


def _lensed(plan: _Plan) -> tuple[pl.Expr, pl.Expr]:
    """(conf, acc) float64 expressions of the plan's scalar lens (:func:`calframe.lenses.lens_exprs`)."""
    probs = _binary_prob(plan) if plan.binary else _array(plan) if plan.array else _class_probs(plan)
    return L.lens_exprs(plan.lens, probs, pl.col(plan.label_col), k=plan.k if plan.array else None,
                        label_kind=plan.label_kind or "int", func=plan.func)


def _bin_stages(plan: _Plan, conf_col: str) -> list[dict[str, pl.Expr]]:
    """Bin of a row for uniform / explicit edges / categorical variables, as successive with_columns stages.

    Stages (not one nested expression) so that the engine computes the lensed
    confidence and ``k0`` once each (common subexpressions inside other ones
    are evaluated again otherwise).
    """
    b = plan.binning
    if plan.var_col is not None:
        if plan.var_kind == "categorical":
            return [{_BIN: pl.col(_CATV)}]
        x = pl.col(f"{_P}v")
    else:
        x = pl.col(conf_col)
    if b.edges is not None:
        return [{_BIN: edge_bins_expr(x, [float(e) for e in b.edges[1:-1]], b.closed)}]
    k0 = uniform_k0_expr(x, b.bins, b.closed)
    if k0 is not None:
        name = f"{_P}k0"
        return [{name: k0}, {_BIN: uniform_bin_expr(x, b.bins, b.closed, pl.col(name))}]
    return [{_BIN: uniform_bin_expr(x, b.bins, b.closed)}]


# --------------------------------------------------------------------------- the passes


def _collect(q: pl.LazyFrame) -> pl.DataFrame:
    return q.collect(engine=ENGINE)


def _fixed_sum(x: pl.Expr, bucket: pl.Expr | None) -> pl.Expr:
    """The exact sum of the integers trunc(x * 2^62) (no weights: x in [0, 1]) or, with ``bucket`` k (the
    row's weight bucket), trunc(x * 2^(60 + 8 k)) of the rows, as Int128 (``_exact_floats`` converts it).

    Integers add up exactly in any order: the same sum, hence the same bits, for any thread count or
    morsel layout (Polars' float sums are merged in an order that varies from run to run). Each integer fits
    an Int64 (a weighted value is below twice its weight, which is below 2^(1 - 8 k)), whose sum as Int128
    costs ~1.2x a float sum (a float cast straight to Int128 costs ~1.6x); 2^65 rows fit. The bucket's power
    of two is applied as two equal factors (each finite, the product exact). NaN, infinite and out-of-range
    values (bad rows, which the checks report) count as null.
    """
    if bucket is None:
        scaled = x * 2.0**FIXED_BITS
    else:
        f = pl.lit(2.0).pow(bucket * (BUCKET_BITS // 2) + WEIGHTED_BITS // 2)
        scaled = x * f * f
    return scaled.cast(pl.Int64, strict=False).cast(pl.Int128).sum()


def _weight_bucket(w: pl.Expr) -> pl.Expr:
    """k = floor(-log2(w) / 8) in [0, 134]: weights spanning any range keep 52 bits each in their bucket's
    fixed point (a scaled weight is below 2; a 0 weight adds 0 in any bucket)."""
    return (-w.log(2.0) / float(BUCKET_BITS)).floor().clip(0.0, float(_MAX_BUCKET)).cast(pl.Int32, strict=False)


def _sum_aggs(plan: _Plan) -> list[pl.Expr]:
    """Per cell: rows, and the exact sums of w, w*conf and w*acc (unweighted: conf and acc; n is the rows).
    Weighted rows are grouped by their weight bucket too (``_EB``). Unweighted acc is 0 or 1: its float sum is
    an exact integer in any order already."""
    aggs = [pl.len().alias(_LEN)]
    if plan.weight_col is None:
        return aggs + [_fixed_sum(pl.col(_CONF), None).alias(_SC), pl.col(_ACC).sum().alias(_SA)]
    w, k = pl.col(_WT), pl.col(_EB)
    return aggs + [_fixed_sum(w, k).alias(_W), _fixed_sum(w * pl.col(_CONF), k).alias(_SC),
                   _fixed_sum(w * pl.col(_ACC), k).alias(_SA)]


def _exact_floats(res: pl.DataFrame) -> pl.DataFrame:
    """``res`` with its Int128 sums as float64, each correctly rounded (``fixed_to_float``). Weighted: the
    buckets of a cell are then one row each, smallest weights first, so that adding them up
    (``_assemble``) goes in one order."""
    ints = [c for c, dt in res.schema.items() if dt == pl.Int128]
    if _EB in res.columns:
        exp = (-WEIGHTED_BITS - BUCKET_BITS * res[_EB].fill_null(0).to_numpy()).astype(np.int64)
    else:
        exp = np.full(res.height, -FIXED_BITS, dtype=np.int64)
    parts = res.select([pl.col(c).floordiv(_TWO64).cast(pl.Int64).alias(f"{c}hi") for c in ints]
                       + [(pl.col(c) % _TWO64).cast(pl.UInt64).alias(f"{c}lo") for c in ints])
    out = res.with_columns(
        pl.Series(c, fixed_to_floats(parts[f"{c}hi"].to_numpy(), parts[f"{c}lo"].to_numpy(), exp)) for c in ints
    )
    return out.sort(_EB, descending=True, maintain_order=True) if _EB in res.columns else out


_OK, _CATV = f"{_P}ok", f"{_P}catv"


def _key_cols(plan: _Plan) -> list[pl.Expr]:
    """The group key columns as the eager path groups them (``_columns.key_expr``), renamed to ``plan.keys``."""
    return [key_expr(c, plan.schema[c]).alias(k) for c, k in zip(plan.by_cols, plan.keys)]


def _main_query(plan: _Plan, lf: pl.LazyFrame, conf: pl.Expr, acc: pl.Expr) -> pl.LazyFrame:
    """One query: per (keys, bin) row count, sum w, sum w*conf, sum w*acc, valid rows (+ variable range).

    nulls='drop': the dropped rows go to bin -1 of their group (a null bin for a
    categorical variable), so they are counted and ignored.
    """
    keep = _keep(plan)
    cols: list[pl.Expr] = _key_cols(plan)
    cols += [conf.alias(_CONF), acc.alias(_ACC), _row_ok(plan).alias(_OK)]
    if keep is not None:
        cols.append(keep.alias(_KEEP))
    if plan.weight_col is not None:
        cols.append(_weights_expr(plan).alias(_WT))
    aggs = _sum_aggs(plan)
    cell = plan.keys + [_BIN] + ([_EB] if plan.weight_col is not None else [])
    aggs.append(pl.col(_OK).sum().alias(_OK))  # a null (bad) flag is not counted
    if plan.var_col is not None:
        if plan.var_kind == "numeric":
            cols.append(_var_expr(plan).alias(f"{_P}v"))
            aggs += [pl.col(f"{_P}v").min().alias(_VMIN), pl.col(f"{_P}v").max().alias(_VMAX)]
        else:
            cols.append(pl.col(plan.var_col).alias(_CATV))
    q = _with_scales(plan, lf).select(cols)
    if plan.weight_col is not None:
        q = q.with_columns(_weight_bucket(pl.col(_WT)).alias(_EB))
    stages = _bin_stages(plan, _CONF)
    for stage in stages:
        q = q.with_columns(**stage)
    if keep is not None:
        dropped = pl.lit(None) if plan.var_kind == "categorical" else pl.lit(-1, pl.Int32)
        q = q.with_columns(pl.when(pl.col(_KEEP)).then(pl.col(_BIN)).otherwise(dropped).alias(_BIN))
    return q.group_by(cell).agg(aggs)


def _detail_stats(plan: _Plan, lf: pl.LazyFrame) -> dict[str, Any]:
    """Every count the ordered checks need (the error path: a second streaming pass)."""
    keep = _keep(plan)

    def kept(e: pl.Expr) -> pl.Expr:
        return e if keep is None else e.filter(keep)

    aggs: dict[str, pl.Expr] = {"n_total": pl.len()}
    for i, c in enumerate(plan.checked):
        aggs[f"null{i}"] = pl.col(c).null_count()
    aggs["n_kept"] = pl.len() if keep is None else keep.sum()
    if plan.prob_ok:
        if plan.binary:
            p = _binary_prob(plan)
            fin = p.is_finite()
            aggs["prob_nonfinite"] = kept((~fin).fill_null(False)).sum()
            aggs["prob_outside"] = kept((fin & ((p < 0.0) | (p > 1.0))).fill_null(False)).sum()
            aggs["prob_lo"] = kept(p.filter(fin)).min() if keep is None else p.filter(fin & keep).min()
            aggs["prob_hi"] = kept(p.filter(fin)).max() if keep is None else p.filter(fin & keep).max()
        else:
            ps = _class_probs(plan)
            fins = [p.is_finite().fill_null(False) for p in ps]
            aggs["prob_nonfinite"] = kept(~pl.all_horizontal(fins)).sum()
            aggs["prob_outside"] = kept(pl.any_horizontal([f & ((p < 0.0) | (p > 1.0)) for p, f in zip(ps, fins)])).sum()
            fin_only = [pl.when(f).then(p) for p, f in zip(ps, fins)]
            aggs["prob_lo"] = kept(pl.min_horizontal(fin_only)).min()
            aggs["prob_hi"] = kept(pl.max_horizontal(fin_only)).max()
            s = _row_sum(plan)
            dev = (s - 1.0).abs()
            off = (dev > SUM_TOLERANCE).fill_null(False)
            sel = off if keep is None else off & keep
            aggs["sum_bad"] = sel.sum()
            aggs["sum_worst"] = s.filter(sel).get(dev.filter(sel).arg_max(), null_on_oob=True)
    if plan.label_kind is not None:
        y = pl.col(plan.label_col)
        if plan.label_kind == "float":
            frac = (~y.is_finite() | (y != y.floor())).fill_null(False)
            aggs["label_nonwhole"] = kept(frac).sum()
        if plan.label_kind != "bool":
            aggs["label_outside"] = kept(_label_outside(plan)).sum()
    if plan.weight_col is not None and plan.weights_ok:
        w = _raw_weights(plan)
        aggs["w_bad"] = kept((~w.is_finite() | (w < 0.0)).fill_null(False)).sum()
        aggs["w_sum"] = kept(w).sum()
    if plan.var_col is not None and plan.var_kind is not None:
        if plan.var_kind == "numeric":
            v = _var_expr(plan)
            aggs["var_nonfinite"] = kept((~v.is_finite()).fill_null(False)).sum()
            aggs["var_min"] = kept(v).min()
            aggs["var_max"] = kept(v).max()
            if plan.binning.edges is not None:
                e = plan.binning.edges
                aggs["var_outside"] = kept(((v < e[0]) | (v > e[-1])).fill_null(False)).sum()
        else:
            aggs["var_unique"] = kept(pl.col(plan.var_col)).drop_nulls().n_unique()
    row = _collect(lf.select(**aggs)).row(0, named=True)
    row["nulls"] = {c: int(row[f"null{i}"] or 0) for i, c in enumerate(plan.checked)}
    return row


def _label_outside(plan: _Plan) -> pl.Expr:
    y = pl.col(plan.label_col)
    return ((y < 0) | (y >= plan.k)).fill_null(False)


def _outside_labels(plan: _Plan, lf: pl.LazyFrame) -> list[Any]:
    keep = _keep(plan)
    sel = _label_outside(plan) if keep is None else _label_outside(plan) & keep
    vals = _collect(lf.filter(sel).select(pl.col(plan.label_col).unique()))[plan.label_col].sort()
    return vals.head(5).to_list()


def _run_checks(plan: _Plan, st: dict[str, Any], lf: pl.LazyFrame) -> None:
    """The eager path's checks in its order: raise the first that fails (warn on dropped nulls).

    ``st["outside_labels"]``, when given, holds the out-of-range labels to report
    (else they are read from ``lf``).
    """
    func = plan.func
    if not st.get("n_total"):
        raise E.no_rows(func)
    null_counts = st.get("nulls") or {}
    if plan.nulls == "raise":
        if any(null_counts.values()):
            raise E.null_values(func, null_counts)
    else:
        E.warn_nulls_dropped(func, int(st["n_total"]) - int(st["n_kept"]), int(st["n_kept"]))
        if int(st["n_kept"]) == 0:
            raise E.all_rows_null(func)
    err = plan.schema_errors
    if "prob_dtype" in err:
        raise err["prob_dtype"]
    nonfinite, outside = int(st.get("prob_nonfinite") or 0), int(st.get("prob_outside") or 0)
    if nonfinite or outside:
        lo, hi = (float(st["prob_lo"]), float(st["prob_hi"])) if outside else (0.0, 1.0)
        raise E.not_probabilities(func, plan.prob_name, nonfinite, outside, lo, hi)
    if st.get("sum_bad"):
        raise E.sums_not_one(func, plan.prob_name, int(st["sum_bad"]), float(st["sum_worst"]), SUM_TOLERANCE)
    if "label_dtype" in err:
        raise err["label_dtype"]
    binary, k, name = plan.binary, plan.k, plan.label_col
    if st.get("label_nonwhole"):
        raise E.labels_not_whole(func, name, int(st["label_nonwhole"]), binary, k)
    if st.get("label_outside"):
        raise E.labels_outside(func, name, int(st["label_outside"]), binary, k,
                               st.get("outside_labels") or _outside_labels(plan, lf))
    if "weights_dtype" in err:
        raise err["weights_dtype"]
    if plan.weight_col is not None:
        if st.get("w_bad"):
            raise E.bad_weights(func, plan.weight_col, int(st["w_bad"]))
        if not (st.get("w_sum") or 0.0) > 0.0:
            raise E.zero_weights(func, plan.weight_col)
    if "var_dtype" in err:
        raise err["var_dtype"]
    if st.get("var_nonfinite"):
        raise E.variable_not_finite(func, plan.var_col, int(st["var_nonfinite"]))
    if "lens_class" in err:
        raise err["lens_class"]
    if plan.var_col is not None:
        single = (st.get("var_unique") == 1) if plan.var_kind == "categorical" else (st.get("var_min") == st.get("var_max"))
        if single:
            raise E.single_value_variable(func, plan.var_col)
        if "var_edges_cat" in err:
            raise err["var_edges_cat"]
        if st.get("var_outside"):
            e = plan.binning.edges
            raise E.outside_edges(func, plan.var_col, st["var_outside"], e[0], e[-1])  # type: ignore[index]


# --------------------------------------------------------------------------- public


#: the public functions that Polars' engine computes on a LazyFrame, the result a LazyFrame: the CE family's sums
#: streamed (:func:`supports` says which calls: no ``ci``, not the sweep, a scalar lens), ``monitor``'s windows
#: (calframe.expr in ``group_by_dynamic``, without ``ci``) and ``apply``'s batches; the others collect the needed
#: columns
STREAMED = ("ce", "ece", "mce", "rmsce", "vece", "vmce", "monitor", "apply")
#: the public functions whose result on a LazyFrame is not a LazyFrame (an eager frame or a float): none, since
#: every public function gives a collected result back lazy (calframe.frames.dispatch.lazy_out)
EAGER_OUT: tuple[str, ...] = ()


def supports(frame: Any, req: Request) -> bool:
    """Whether :func:`lazy_sums` can compute ``req`` by streaming.

    True for a Polars LazyFrame and a CE_p request without ``ci`` whose probabilities are one
    column (binary or ``Array``) or a list of class columns, with the
    ``top1`` or ``class:c`` lens, uniform / explicit-edge / quantile /
    equal-mass bins (not the sweep: it sorts each group's rows, and the
    frame is collected) and at most one variable. Bad column names or values do
    not make it False: :func:`lazy_sums` raises the eager path's errors for them.
    """
    if not isinstance(frame, pl.LazyFrame) or req.kind != "ce" or req.ci is not None or req.sweep:
        return False
    if (req.variables and req.variable is None) or req.lens.kind == "marginal":
        return False
    if req.prob is None or isinstance(req.prob, str):
        try:
            schema = frame.collect_schema()
        except Exception:
            return False
        names = list(schema)
        name = req.prob
        if name is None:
            found = [c for c in PROB_CANDIDATES if c in names]
            name = found[0] if len(found) == 1 else None
        if name is not None and name in schema and isinstance(schema[name], pl.List):
            return False
    return True


def lazy_sums(lf: pl.LazyFrame,
              req: Request) -> tuple[np.ndarray, pl.DataFrame | None, np.ndarray, float | np.ndarray]:
    """Per (group, bin) sums of a LazyFrame for ``req``, computed by the streaming engine.

    Returns ``(sums, keys, counts, scale)``: ``sums`` has shape ``(n_groups, n_bins, 3)``
    holding ``[sum w, sum w*conf, sum w*acc]`` per cell (what
    :func:`calframe.engines.eager.binned_sums` returns for the collected frame, to
    rounding), ``keys`` the group key table sorted like calframe's eager
    output (ascending, nulls last, original dtypes; None without ``by``) and
    ``counts`` the rows per group (int64, the ``n`` column). With
    ``req.variable``, rows are binned on that column (VECE) instead of the lensed
    confidence. Bad input raises the eager path's exception and message.
    Weights are summed divided by the eager path's power of two (``Scored.weight_scale``), so
    they neither overflow nor lose bits as subnormals; ``scale`` is that power of two (one per
    group with ``by``; 1.0 without weights), what ``ce_from_sums``' ``count_scale`` takes.
    """
    func = req.func
    plan = make_plan(lf, req)
    if plan.schema_errors:
        _run_checks(plan, _detail_stats(plan, lf), lf)
        raise AssertionError(f"{func}: a schema error was not raised")  # pragma: no cover
    if plan.weight_col is not None:
        _set_weight_scale(plan, lf)
    if plan.data_binned:
        out = _data_binned_sums(plan, lf)
    else:
        conf, acc = _lensed(plan)
        res = _exact_floats(_collect(_main_query(plan, lf, conf, acc)))
        st = _light_stats(plan, res)
        if st["bad"]:
            _run_checks(plan, _detail_stats(plan, lf), lf)
            raise AssertionError(f"{func}: the streaming pass found bad rows that no check reports")  # pragma: no cover
        _run_checks(plan, st, lf)
        out = _assemble(plan, res)
    sums, keys, counts = out
    if plan.weight_col is not None:
        check_group_weights(func, plan.weight_col, sums[..., 0].sum(axis=1), counts, keys)
    return sums, keys, counts, _group_scales(plan, keys)


def _light_stats(plan: _Plan, res: pl.DataFrame) -> dict[str, Any]:
    """The checks' inputs from the main pass's table (every bad-row count is zero when ``bad`` is)."""
    kept = _kept_cells(plan, res)
    st: dict[str, Any] = {
        "n_total": int(res[_LEN].sum()),
        "n_kept": int(kept[_LEN].sum()),
        "bad": int(kept[_LEN].sum()) - int(kept[_OK].sum()),
        "nulls": {},
    }
    if plan.weight_col is not None:
        st["w_sum"] = float(kept[_W].sum())
    if plan.var_col is not None:
        if plan.var_kind == "categorical":
            st["var_unique"] = kept[_BIN].n_unique()
        else:
            st["var_min"], st["var_max"] = kept[_VMIN].min(), kept[_VMAX].max()
    return st


def _kept_cells(plan: _Plan, res: pl.DataFrame) -> pl.DataFrame:
    if plan.nulls != "drop":
        return res
    if plan.var_kind == "categorical":
        return res.filter(pl.col(_BIN).is_not_null())
    return res.filter(pl.col(_BIN).is_null() | (pl.col(_BIN) != -1))  # (a null bin: a NaN row, reported)


def _group_index(plan: _Plan, cells: pl.DataFrame) -> tuple[np.ndarray, pl.DataFrame | None, int]:
    """Group code of each cell (keys sorted ascending, nulls last) and the key table."""
    if not plan.by_cols:
        return np.zeros(cells.height, dtype=np.int64), None, 1
    keys = cells.select(plan.keys).unique().sort(plan.keys, nulls_last=True, maintain_order=True)
    idx = keys.with_row_index(f"{_P}g")
    g = cells.select(plan.keys).with_row_index(f"{_P}row").join(
        idx, on=plan.keys, how="left", nulls_equal=True
    ).sort(f"{_P}row")[f"{_P}g"].to_numpy().astype(np.int64)
    return g, plan.user_keys(keys), keys.height


def _assemble(plan: _Plan, res: pl.DataFrame, bin_codes: np.ndarray | None = None,
              n_bins: int | None = None) -> tuple[np.ndarray, pl.DataFrame | None, np.ndarray]:
    cells = _kept_cells(plan, res)
    g, keys, n_groups = _group_index(plan, cells)
    if bin_codes is None:
        if plan.var_kind == "categorical":
            cats = cells.select(pl.col(_BIN).unique(maintain_order=True)).with_row_index(f"{_P}code")
            bin_codes = (
                cells.select(_BIN).with_row_index(f"{_P}row").join(cats, on=_BIN, how="left", nulls_equal=True)
                .sort(f"{_P}row")[f"{_P}code"].to_numpy().astype(np.int64)
            )
            n_bins = max(cats.height, 1)
        else:
            bin_codes = cells[_BIN].to_numpy().astype(np.int64)
            n_bins = plan.binning.bins
    assert n_bins is not None
    check_cells(n_groups, n_bins, func=plan.func)
    sums = np.zeros((n_groups, n_bins, 3))
    n = cells[_W].to_numpy() if plan.weight_col is not None else cells[_LEN].to_numpy().astype(np.float64)
    np.add.at(sums, (g, bin_codes, 0), n)
    np.add.at(sums, (g, bin_codes, 1), cells[_SC].to_numpy())
    np.add.at(sums, (g, bin_codes, 2), cells[_SA].to_numpy())
    counts = np.bincount(g, weights=cells[_LEN].to_numpy().astype(np.float64), minlength=n_groups).astype(np.int64)
    return sums, keys, counts


# --------------------------------------------------------------------------- quantile / equal-mass bins

_ONE, _X, _CONF, _ACC, _KEEP, _WT = f"{_P}one", f"{_P}x", f"{_P}conf", f"{_P}acc", f"{_P}keep", f"{_P}wt"
_F1, _F2, _SCALE, _EB = f"{_P}f1", f"{_P}f2", f"{_P}scale", f"{_P}eb"
_NODE, _CNT, _MIN, _MAX = f"{_P}node", f"{_P}cnt", f"{_P}min", f"{_P}max"
#: at most this many refinement levels of the histogram
_MAX_LEVELS = 8


def _cell(x: pl.Expr, lo: str, sc: str, g: str) -> pl.Expr:
    """A grid cell, monotone in x: clip(floor((x - lo) * sc), 0, g - 1)."""
    return ((x - pl.col(lo)) * pl.col(sc)).floor().clip(0.0, pl.col(g).cast(pl.Float64) - 1.0).cast(pl.Int32)


def _grid_size(cnt: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Cells per node: about sqrt(targets * rows) (histogram size ~ values collected), at most
    HIST_CELLS over all nodes, 2..4096 each."""
    share = max(2, HIST_CELLS // max(cnt.shape[0], 1))
    g = np.minimum(np.ceil(np.sqrt(np.maximum(targets, 1) * cnt.astype(np.float64))), share)
    return np.clip(g, 2, _GRID_CELLS).astype(np.int64)


def _data_binned_sums(plan: _Plan, lf: pl.LazyFrame) -> tuple[np.ndarray, pl.DataFrame | None, np.ndarray]:
    """Quantile / equal-mass bins per group, exact, in streaming passes (see the module docstring)."""
    conf, acc = _lensed(plan)
    x = conf if plan.var_col is None else _var_expr(plan)
    gk = plan.keys or [_ONE]
    keep = _keep(plan)
    bad = ~_row_ok(plan).fill_null(False)
    if keep is not None:
        bad = bad & keep
    cols = _key_cols(plan) or [pl.lit(0, pl.Int8).alias(_ONE)]
    cols += [x.alias(_X), conf.alias(_CONF), acc.alias(_ACC), bad.alias(_BAD),
             (keep if keep is not None else pl.lit(True)).alias(_KEEP)]
    if plan.weight_col is not None:
        cols.append(_weights_expr(plan).alias(_WT))
    base = _with_scales(plan, lf).select(cols)

    # pass 1: validation, and per group count / min / max
    aggs = [pl.len().alias(_LEN), pl.col(_BAD).sum().alias(_BAD), pl.col(_X).min().alias(_MIN),
            pl.col(_X).max().alias(_MAX)]
    if plan.weight_col is not None:
        aggs.append(pl.col(_WT).sum().alias(_W))
    res = _collect(base.group_by(gk + [_KEEP]).agg(aggs))
    kept = res.filter(pl.col(_KEEP))
    st: dict[str, Any] = {"n_total": int(res[_LEN].sum()), "n_kept": int(kept[_LEN].sum()),
                          "bad": int(res[_BAD].sum()), "nulls": {}}
    if st["bad"]:
        _run_checks(plan, _detail_stats(plan, lf), lf)
        raise AssertionError(f"{plan.func}: the streaming pass found bad rows that no check reports")  # pragma: no cover
    if plan.weight_col is not None:
        st["w_sum"] = float(kept[_W].sum())
    if plan.var_col is not None:
        st["var_min"], st["var_max"] = kept[_MIN].min(), kept[_MAX].max()
    _run_checks(plan, st, lf)

    groups = kept.drop(_KEEP).sort(gk, nulls_last=True, maintain_order=True)
    rows_ = base.filter(pl.col(_KEEP)) if keep is not None else base

    def hist(path: list[str], grids: list[pl.DataFrame], c_name: str) -> pl.DataFrame:
        return _collect(_cells_query(rows_, gk, path, grids).group_by(gk + path + [c_name]).agg(
            pl.len().alias(_CNT), pl.col(_X).min().alias(_MIN), pl.col(_X).max().alias(_MAX)))

    def values(path: list[str], grids: list[pl.DataFrame], want: pl.DataFrame) -> pl.DataFrame:
        q = _cells_query(rows_, gk, path, grids)
        return _collect(q.join(want.lazy(), on=gk + path, how="inner", nulls_equal=True).select(_NODE, _X))

    etab, ecols, n_bins = edge_columns(groups, gk, plan.binning,
                                       lambda seg, rank: order_statistics(groups, gk, seg, rank, hist, values))
    qcut = plan.binning.scheme == "quantile"
    below = pl.sum_horizontal([pl.col(c) < pl.col(_X) for c in ecols]).cast(pl.Int32)
    if qcut:
        bin_expr = pl.max_horizontal(below, pl.lit(1, pl.Int32)) - 1
    else:
        bin_expr = pl.min_horizontal(below, pl.col(f"{_P}ne") - 1)
    aggs = _sum_aggs(plan)
    q = (
        rows_.join(etab.lazy(), on=gk, how="inner", nulls_equal=True)
        .with_columns(bin_expr.alias(_BIN))
        .group_by(gk + [_BIN])
        .agg(aggs)
    )
    return cell_sums(plan, _exact_floats(_collect(q)), groups, gk, n_bins)


def cell_sums(plan: _Plan, cells: pl.DataFrame, groups: pl.DataFrame, gk: list[str],
              n_bins: int) -> tuple[np.ndarray, pl.DataFrame | None, np.ndarray]:
    """(sums, keys, counts) of the accumulate pass's cells (``gk``, ``_BIN``, the exact sums) for ``groups``
    (sorted; ``gk`` and ``_LEN``)."""
    gidx = groups.select(gk).with_row_index(f"{_P}g")
    g = (
        cells.select(gk).with_row_index(f"{_P}row").join(gidx, on=gk, how="left", nulls_equal=True)
        .sort(f"{_P}row")[f"{_P}g"].to_numpy().astype(np.int64)
    )
    b = cells[_BIN].to_numpy().astype(np.int64)
    sums = np.zeros((groups.height, n_bins, 3))
    n = cells[_W].to_numpy() if plan.weight_col is not None else cells[_LEN].to_numpy().astype(np.float64)
    np.add.at(sums, (g, b, 0), n)
    np.add.at(sums, (g, b, 1), cells[_SC].to_numpy())
    np.add.at(sums, (g, b, 2), cells[_SA].to_numpy())
    keys = plan.user_keys(groups) if plan.by_cols else None
    return sums, keys, groups[_LEN].to_numpy().astype(np.int64)


def edge_columns(groups: pl.DataFrame, gk: list[str], binning: Binning,
                 fetch: Any) -> tuple[pl.DataFrame, list[str], int]:
    """Each group's quantile / equal-mass edges as columns beside its keys (``gk``), for the accumulate pass:
    binning's edge rule (``edge_table``) on the order statistics ``fetch(segment, rank)`` finds
    (:func:`calframe.binning.take_each`); kept edges first, in order, +inf pads; ``_P ne`` the number of
    edges. Returns (table, edge column names, bins)."""
    counts = groups[_LEN].to_numpy().astype(np.int64)
    table = edge_table(counts, binning, take_each(counts, fetch))
    edges, offsets, n_bins = pack_edges(table, binning)
    n_edges = np.diff(offsets)
    width = int(n_edges.max())
    padded = np.full((groups.height, width), np.inf)
    row = np.repeat(np.arange(groups.height), n_edges)
    padded[row, np.arange(edges.shape[0]) - offsets[row]] = edges
    ecols = [f"{_P}e{j}" for j in range(width)]
    etab = groups.select(gk).with_columns(
        [pl.Series(c, padded[:, j]) for j, c in enumerate(ecols)]
        + [pl.Series(f"{_P}ne", n_edges.astype(np.int32))]
    )
    return etab, ecols, n_bins


def order_statistics(groups: pl.DataFrame, gk: list[str], tgt_group: np.ndarray, rank: np.ndarray,
                     hist: Any, values: Any) -> np.ndarray:
    """The ``rank``-th smallest value (0-based) of group ``tgt_group``, exactly, for each pair.

    Histogram passes narrow each wanted rank down to one cell (a node); a node
    whose min equals its max is resolved without reading values; the values of
    the remaining nodes are collected once the total is within COLLECT_BUDGET.
    The engine runs the passes: ``hist(path, grids, c)`` is the per (``gk + path + [c]``) count / min / max
    (``_CNT``, ``_MIN``, ``_MAX``) of the rows with their cell at every level of ``grids``
    (:func:`_cells_query`), ``values(path, grids, want)`` the (``_NODE``, ``_X``) of the rows in the nodes of
    ``want`` (``gk + path + [_NODE]``). ``groups`` holds ``gk``, ``_LEN``, ``_MIN`` and ``_MAX``.
    """
    out = np.full(rank.shape[0], np.nan)
    if rank.shape[0] == 0:
        return out
    rank = rank.copy()
    # level-0 nodes are the groups: grid between each group's min and max
    nodes = groups.select(gk)
    node_of = tgt_group.copy()
    cnt = groups[_LEN].to_numpy().astype(np.int64)
    mn, mx = groups[_MIN].to_numpy(), groups[_MAX].to_numpy()
    open_ = np.ones(rank.shape[0], dtype=bool)
    path: list[str] = []
    grids: list[pl.DataFrame] = []
    for level in range(_MAX_LEVELS + 1):
        same = mn[node_of] == mx[node_of]
        out[open_ & same] = mn[node_of][open_ & same]
        open_ &= ~same
        if not open_.any():
            return out
        live = np.unique(node_of[open_])
        if cnt[live].sum() <= COLLECT_BUDGET or level == _MAX_LEVELS:
            break
        # refine: a grid inside each live node
        per_node = np.bincount(node_of[open_], minlength=nodes.height)[live]
        size = _grid_size(cnt[live], per_node)
        span = mx[live] - mn[live]
        lo_c, sc_c, g_c = f"{_P}lo{level}", f"{_P}sc{level}", f"{_P}gn{level}"
        grid = nodes[live].with_columns(
            pl.Series(lo_c, mn[live]), pl.Series(sc_c, size / span), pl.Series(g_c, size)
        )
        grids.append(grid)
        c_name = f"{_P}c{level}"
        h = hist(path, grids, c_name).sort(gk + path + [c_name], nulls_last=True, maintain_order=True)
        # parent node of each histogram row
        parent_idx = nodes.select(gk + path).with_row_index(_NODE)
        par = (
            h.select(gk + path).with_row_index(f"{_P}row")
            .join(parent_idx, on=gk + path, how="left", nulls_equal=True)
            .sort(f"{_P}row")[_NODE].to_numpy().astype(np.int64)
        )
        h_cnt = h[_CNT].to_numpy().astype(np.int64)
        order = np.lexsort((h[c_name].to_numpy(), par))
        h, par, h_cnt = h[order], par[order], h_cnt[order]
        cum = np.concatenate([[0], np.cumsum(h_cnt)])
        seg_start = np.searchsorted(par, np.arange(nodes.height), side="left")
        base = cum[seg_start[node_of[open_]]]
        i = np.searchsorted(cum[1:], base + rank[open_], side="right")
        rank[open_] -= cum[i] - base
        new_node = node_of.copy()
        new_node[open_] = i
        node_of = np.where(open_, new_node, -1)
        path = path + [c_name]
        nodes = h.select(gk + path)
        cnt, mn, mx = h_cnt, h[_MIN].to_numpy(), h[_MAX].to_numpy()
    # collect the values of the live nodes and pick the ranks
    live = np.unique(node_of[open_])
    want = nodes[live].with_columns(pl.Series(_NODE, live))
    vals = values(path, grids, want).sort([_NODE, _X])
    v_node = vals[_NODE].to_numpy().astype(np.int64)
    v_x = vals[_X].to_numpy()
    first = np.searchsorted(v_node, node_of[open_], side="left")
    out[open_] = v_x[first + rank[open_]]
    return out


def _cells_query(rows_: pl.LazyFrame, gk: list[str], path: list[str], grids: list[pl.DataFrame]) -> pl.LazyFrame:
    """Rows with their cell at every level of ``grids`` (inner joins keep only the rows in refined nodes)."""
    q = rows_
    for level, grid in enumerate(grids):
        on = gk + path[:level]
        lo_c, sc_c, g_c = f"{_P}lo{level}", f"{_P}sc{level}", f"{_P}gn{level}"
        q = q.join(grid.lazy(), on=on, how="inner", nulls_equal=True)
        q = q.with_columns(_cell(pl.col(_X), lo_c, sc_c, g_c).alias(f"{_P}c{level}")).drop(lo_c, sc_c, g_c)
    return q


# --------------------------------------------------------------------------- lazy out


def run(frame: Any, req: Request) -> pl.LazyFrame | None:
    """A LazyFrame's figure as a LazyFrame (spec section 8, "Lazy in, lazy out"), or None when the call needs the
    rows in memory.

    The plan is read from the schema now (a missing column raises here, as the parameters already have); when
    the result is collected, Polars' streaming engine computes the per (group, bin) sums (this module:
    uniform, explicit-edge, quantile and equal-mass bins, scalar lenses, one variable, no bootstrap; bad data
    raises the eager path's errors there) and :func:`figures.binned` finalizes them. The result has the group
    columns (with ``by``), ``n`` and the figure: one row without ``by``.
    """
    if not supports(frame, req):
        return None
    plan = make_plan(frame, req)
    schema = {c: plan.schema[c] for c in plan.by_cols} | {"n": pl.Int64, req.name: pl.Float64}

    def run() -> pl.DataFrame:
        sums, keys, counts, scale = lazy_sums(frame, req)
        return F.shape(req, {req.name: F.binned(req, lambda c: sums, 1, scale)}, counts, keys, "polars",
                       scalar=False)

    return pl.defer(run, schema=schema)
