"""The LazyFrame engine's plan (:mod:`calframe.engines.streaming.streamed`): the queries' internal column names, the plan of a
call read from the schema alone (:func:`make_plan`, the parameter and column checks of ``_columns.resolve``) and
the Polars expressions the passes are built from (probabilities, labels and weights checked per row, the weights'
scale, the lens, the bin of a row). Nothing here runs a query. The narwhals engine reads the same plan."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import polars as pl

from ... import lenses as L
from ..._columns import PROB_CANDIDATES, SUM_TOLERANCE, check_key_dtype, key_expr, resolve_names, weight_exponents
from ... import _errors as E
from ..._errors import CalframeError, bad_param
from ..._names import PREFIX, key_names
from ...moments import plan_ci
from ...request import Request
from ...binning import Binning, edge_bins_expr, uniform_bin_expr, uniform_k0_expr
from ..._kernels.codes import BUCKET_BITS, FIXED_BITS, MAX_BUCKET, WEIGHTED_BITS  # no numba


# The queries' own columns start with COL_PREFIX. The group keys enter them renamed to positional names
# (EnginePlan.keys: __cf_key0, ...) and the key table gets the user's names back at the end, so a
# user column can never meet an internal one, whatever its name (docs/spec.md section 8).
COL_PREFIX = PREFIX
#: exact sums (``lazy.fixed_sum``): a row's value x counts as the integer trunc(x * 2^FIXED_BITS) without weights, and
#: trunc(x * 2^(WEIGHTED_BITS + BUCKET_BITS * k)) with them, k its weight's bucket (one definition, shared with the
#: eager engine's kernel: calframe._kernels.codes); 2^64 splits an Int128 in two
MAX_BUCKET, TWO64 = MAX_BUCKET, 2**64
BIN, LEN, W, SC, SA, BAD, VMIN, VMAX = (
    f"{COL_PREFIX}bin", f"{COL_PREFIX}len", f"{COL_PREFIX}w", f"{COL_PREFIX}sc", f"{COL_PREFIX}sa", f"{COL_PREFIX}bad", f"{COL_PREFIX}vmin", f"{COL_PREFIX}vmax"
)
OK, CATV = f"{COL_PREFIX}ok", f"{COL_PREFIX}catv"
ONE, X, CONF, ACC, KEEP, WT = f"{COL_PREFIX}one", f"{COL_PREFIX}x", f"{COL_PREFIX}conf", f"{COL_PREFIX}acc", f"{COL_PREFIX}keep", f"{COL_PREFIX}wt"
_F1, _F2, _SCALE, EB = f"{COL_PREFIX}f1", f"{COL_PREFIX}f2", f"{COL_PREFIX}scale", f"{COL_PREFIX}eb"
NODE, CNT, MIN, MAX = f"{COL_PREFIX}node", f"{COL_PREFIX}cnt", f"{COL_PREFIX}min", f"{COL_PREFIX}max"


# --------------------------------------------------------------------------- plan (schema only)


@dataclass
class EnginePlan:
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


def outside(req: Any, state: str) -> str | None:
    """What of ``req`` (computed from ``state``) the engines that sum where the rows are from a plan (Polars'
    streaming engine, the narwhals engine) do not compute there, None when they do: their common answer to
    :func:`calframe.registry.route` (each engine adds its own: the column types it reads).

    >>> from calframe import request as R
    >>> outside(R.ce("ece", "ece"), "bin_sums"), outside(R.ce("ece", "ece", binning="sweep"), "bin_sums")
    (None, "binning='sweep'")
    """
    if state == "groups":  # disparity's figures per group (engines.run_table)
        if req.selects:
            return "a row selection"
        if req.several:
            return "several variables at once"
        if req.ci is not None and not (req.kind == "ce" and plan_ci(req)):
            return "ci="
        return outside(req, "bin_sums" if req.kind == "ce" else "row_means")
    if state == "row_means":  # the companions, summary, row sums: their intervals from moments (companions)
        if req.ci is not None and not (req.kind == "companion" and req.bootstrap != "rows"):
            return "ci="
        return outside(replace(req, kind="ce", ci=None), "bin_sums")
    if state == "grid_sums":
        return "ci=" if req.ci is not None else None
    if state == "vector_sums":
        if req.options.binning[0] != "uniform":
            return "binning='adaptive'"
        if req.ci is not None:
            return "ci="
        return "a row selection (where=, labels_in=, output_between=)" if req.selects else None
    if state not in ("bin_sums", "bin_table") or req.kind not in ("ce", "reliability"):
        return None
    if req.ci is not None and not plan_ci(req):
        if req.bootstrap == "rows":
            return "ci= with bootstrap='rows'"
        if req.variables and req.variable is not None:
            return "ci= on a variable's bins"
    if req.sweep:
        return "binning='sweep'"
    if req.lens.kind == "marginal":
        return "the marginal lens"
    if req.variables and req.variable is None:
        return "several variables at once"
    return "ci=" if req.ci is not None and not plan_ci(req) else None


def prob_shape(schema: Any, req: Any) -> str | None:
    """"list" or "array" when ``req``'s one probability column (named, or the one default candidate in
    ``schema``) is a List or an Array column, else None (class columns, a missing or scalar column)."""
    names = list(schema)
    name = req.prob
    if name is None:
        found = [c for c in PROB_CANDIDATES if c in names]
        name = found[0] if len(found) == 1 else None
    if not isinstance(name, str) or name not in schema:
        return None
    dt = schema[name]
    return "list" if isinstance(dt, pl.List) else "array" if isinstance(dt, pl.Array) else None


def make_plan(lf: pl.LazyFrame, req: Request) -> EnginePlan:
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
    plan = EnginePlan(func, prob_cols, multi_cols, label_col, by_cols, weights, variable, nulls, lens_, binning, schema)
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

    # after resolve: the lens's class range (eager.ce_figure), then the variable binner's checks
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


def pairwise_sum(terms: list[pl.Expr]) -> pl.Expr:
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
    return pairwise_sum(terms[:n2]) + pairwise_sum(terms[n2:])


# The row expressions below are written once for Polars (``ns=polars``, the default: the lazy engine) and
# narwhals (``ns=narwhals``: the narwhals engine), over the methods the two share.


def _f64(plan: EnginePlan, c: str, ns: Any = pl) -> Any:
    """Column ``c`` as Float64 (cast only when it is not one already: fewer nodes for the engine to build)."""
    return ns.col(c) if plan.schema[c] == pl.Float64 else ns.col(c).cast(ns.Float64)


def _all(parts: list[Any]) -> Any:
    """``parts[0] & parts[1] & ...`` (Kleene logic, as ``all_horizontal``)."""
    out = parts[0]
    for p in parts[1:]:
        out = out & p
    return out


def _any(parts: list[Any]) -> Any:
    """``parts[0] | parts[1] | ...``."""
    out = parts[0]
    for p in parts[1:]:
        out = out | p
    return out


def class_probs(plan: EnginePlan, ns: Any = pl) -> list[Any]:
    """The K class probabilities as float64 expressions (multiclass)."""
    if plan.multi_cols:
        return [_f64(plan, c, ns) for c in plan.prob_cols]
    a = _array(plan)
    return [a.arr.get(j) for j in range(plan.k)]


def _array(plan: EnginePlan) -> pl.Expr:
    c = plan.prob_cols[0]
    a = pl.col(c)
    if plan.schema[c].inner != pl.Float64:  # type: ignore[attr-defined]
        a = a.cast(pl.Array(pl.Float64, plan.k))
    return a


def binary_prob(plan: EnginePlan, ns: Any = pl) -> Any:
    return _f64(plan, plan.prob_cols[0], ns)


def _row_sum(plan: EnginePlan) -> pl.Expr:
    return pairwise_sum(class_probs(plan))


def _prob_ok(plan: EnginePlan, ns: Any = pl) -> Any:
    """True where the row's probabilities are valid (null / False otherwise)."""
    if plan.binary:
        p = binary_prob(plan, ns)
        return (p >= 0.0) & (p <= 1.0)
    ps = class_probs(plan, ns)
    if plan.array and plan.k > 16:
        a = _array(plan)
        in_unit = (a.arr.min() >= 0.0) & (a.arr.max() <= 1.0)  # NaN rows fail the sum test below
    else:
        in_unit = _all([(p >= 0.0) & (p <= 1.0) for p in ps])
    # Polars orders NaN above every number: a NaN sum fails "<= tol"; a null element makes the sum null
    return in_unit & ((pairwise_sum(ps) - 1.0).abs() <= SUM_TOLERANCE)


def _label_ok(plan: EnginePlan, y: Any = None) -> pl.Expr:
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


def raw_weights(plan: EnginePlan, ns: Any = pl) -> Any:
    """The caller's weights as Float64 (their checks: finite, non-negative, positive total do not depend on a
    scale)."""
    return _f64(plan, plan.weight_col, ns)  # type: ignore[arg-type]


def scale_factors(e: int) -> tuple[float, float]:
    """(f1, f2), powers of two with f1 * f2 = 2^-e, each finite: w * f1 * f2 rounds as ``numpy.ldexp(w, -e)``."""
    return (2.0**1022, float(np.ldexp(1.0, -(e + 1022)))) if e < -1022 else (1.0, float(np.ldexp(1.0, -e)))


def weights_expr(plan: EnginePlan) -> pl.Expr:
    """The weights divided by their group's power of two (``plan.weight_scale``, or per group the factors of
    ``plan.scale_table``, joined onto the rows by ``with_scales``), exactly as ``numpy.ldexp(w, -e)`` rounds."""
    w = raw_weights(plan)
    if plan.scale_table is not None:
        return w * pl.col(_F1) * pl.col(_F2)
    f1, f2 = scale_factors(int(np.frexp(plan.weight_scale)[1]) - 1)
    w = w * f1 if f1 != 1.0 else w  # 2^-e past float64: scale up in two exact steps (a subnormal times 2^1022)
    return w * f2 if f2 != 1.0 else w


def set_scales(plan: EnginePlan, tops: pl.DataFrame) -> None:
    """The weights' powers of two from ``tops``, the largest kept weight (column ``W``) of each group (key columns
    ``plan.keys``): the eager path's (``_columns.weight_exponents``; 1.0 when it is not a positive finite number:
    the checks then report the bad weights or their zero total). One scale for all (``plan.weight_scale``) when
    every group has the same; else ``plan.scale_table``."""
    e = weight_exponents(tops[W].to_numpy())  # a null maximum (no kept row) reads as NaN: scale 1.0
    if e.size == 0 or (e == e[0]).all():
        plan.weight_scale = float(np.ldexp(1.0, int(e[0]))) if e.size else 1.0
        return
    f = [scale_factors(int(x)) for x in e]
    plan.scale_table = tops.select(plan.keys).with_columns(
        pl.Series(_F1, [a for a, _ in f]), pl.Series(_F2, [b for _, b in f]), pl.Series(_SCALE, np.ldexp(1.0, e)))


def with_scales(plan: EnginePlan, lf: pl.LazyFrame) -> pl.LazyFrame:
    """``lf`` with each row's scale factors (``weights_expr``) beside it, when the groups have different scales."""
    if plan.scale_table is None:
        return lf
    return lf.with_columns(key_cols(plan)).join(plan.scale_table.lazy(), on=plan.keys, how="left", nulls_equal=True,
                                               maintain_order="left")


def group_scales(plan: EnginePlan, keys: pl.DataFrame | None) -> float | np.ndarray:
    """The power of two of each group of ``keys`` (the user-named key table), or the one for all."""
    if plan.scale_table is None or keys is None:
        return plan.weight_scale
    table = plan.user_keys(plan.scale_table).with_columns(plan.scale_table[_SCALE])
    return keys.join(table, on=plan.by_cols, how="left", nulls_equal=True, maintain_order="left")[_SCALE].to_numpy()


def var_expr(plan: EnginePlan, ns: Any = pl) -> Any:
    return _f64(plan, plan.var_col, ns)  # type: ignore[arg-type]


def _var_ok(plan: EnginePlan, ns: Any = pl) -> Any:
    if plan.var_col is None or plan.var_kind != "numeric":
        return None
    v = var_expr(plan, ns)
    ok = v.is_finite()
    if plan.binning.edges is not None:
        e = plan.binning.edges
        ok = ok & (v >= e[0]) & (v <= e[-1])
    return ok


def keep_expr(plan: EnginePlan, ns: Any = pl) -> Any:
    """nulls='drop': rows without a null in a checked column (None: every row is kept)."""
    if plan.nulls != "drop":
        return None
    return _all([~ns.col(c).is_null() for c in plan.checked])


def row_ok(plan: EnginePlan, ns: Any = pl) -> Any:
    """True where the row passes every row check (False or null for a bad row; null for a null one)."""
    parts = [_prob_ok(plan, ns), _label_ok(plan, ns.col(plan.label_col))]
    if plan.weight_col is not None:
        w = raw_weights(plan, ns)
        parts.append(w.is_finite() & (w >= 0.0))
    v = _var_ok(plan, ns)
    if v is not None:
        parts.append(v)
    elif plan.var_col is not None:
        parts.append(~ns.col(plan.var_col).is_null())
    return _all(parts)


def lensed_exprs(plan: EnginePlan, ns: Any = pl) -> tuple[Any, Any]:
    """(conf, acc) float64 expressions of the plan's scalar lens (:func:`calframe.lenses.lens_exprs`)."""
    probs = binary_prob(plan, ns) if plan.binary else _array(plan) if plan.array else class_probs(plan, ns)
    return L.lens_exprs(plan.lens, probs, ns.col(plan.label_col), k=plan.k if plan.array else None,
                        label_kind=plan.label_kind or "int", func=plan.func, ns=ns)


def _label_outside(plan: EnginePlan, ns: Any = pl) -> Any:
    y = ns.col(plan.label_col)
    return ((y < 0) | (y >= plan.k)).fill_null(False)


def detail_aggs(plan: EnginePlan, ns: Any = pl) -> dict[str, Any]:
    """The error path's one pass: every count the ordered checks (``lazy.run_checks``) need, as aggregations
    (Polars, or narwhals with ``ns=narwhals``); :func:`detail_row` reads the collected row."""
    keep = keep_expr(plan, ns)

    def kept(e: Any) -> Any:
        return e if keep is None else ns.when(keep).then(e)

    def count(e: Any) -> Any:
        return kept(e.fill_null(False)).cast(ns.Int64).sum()

    aggs: dict[str, Any] = {"n_total": ns.len()}
    for i, c in enumerate(plan.checked):
        aggs[f"null{i}"] = ns.col(c).is_null().cast(ns.Int64).sum()
    aggs["n_kept"] = ns.len() if keep is None else keep.cast(ns.Int64).sum()
    if plan.prob_ok:
        ps = [binary_prob(plan, ns)] if plan.binary else class_probs(plan, ns)
        fins = [p.is_finite().fill_null(False) for p in ps]
        aggs["prob_nonfinite"] = count(~_all(fins))
        aggs["prob_outside"] = count(_any([f & ((p < 0.0) | (p > 1.0)) for p, f in zip(ps, fins)]))
        fin_only = [kept(ns.when(f).then(p)) for p, f in zip(ps, fins)]
        aggs["prob_lo"] = ns.min_horizontal(*fin_only).min() if len(ps) > 1 else fin_only[0].min()
        aggs["prob_hi"] = ns.max_horizontal(*fin_only).max() if len(ps) > 1 else fin_only[0].max()
        if not plan.binary:
            s = pairwise_sum(ps)
            dev = (s - 1.0).abs()
            off = kept((dev > SUM_TOLERANCE).fill_null(False)).fill_null(False)
            aggs["sum_bad"] = off.cast(ns.Int64).sum()
            if ns is pl:  # the first row furthest from 1, as the eager check reports it
                aggs["sum_worst"] = s.filter(off).get(dev.filter(off).arg_max(), null_on_oob=True)
            else:  # no row order: the sum furthest from 1, above 1 in a tie (detail_row)
                aggs["sum_top"] = ns.when(off).then(s).max()
                aggs["sum_bottom"] = ns.when(off).then(s).min()
    if plan.label_kind is not None:
        y = ns.col(plan.label_col)
        if plan.label_kind == "float":
            aggs["label_nonwhole"] = count(~y.is_finite() | (y != y.floor()))
        if plan.label_kind != "bool":
            aggs["label_outside"] = count(_label_outside(plan, ns))
    if plan.weight_col is not None and plan.weights_ok:
        w = raw_weights(plan, ns)
        aggs["w_bad"] = count(~w.is_finite() | (w < 0.0))
        aggs["w_sum"] = kept(w).sum()
    if plan.var_col is not None and plan.var_kind is not None:
        if plan.var_kind == "numeric":
            v = var_expr(plan, ns)
            aggs["var_nonfinite"] = count(~v.is_finite())
            aggs["var_min"] = kept(v).min()
            aggs["var_max"] = kept(v).max()
            if plan.binning.edges is not None:
                e = plan.binning.edges
                aggs["var_outside"] = count((v < e[0]) | (v > e[-1]))
        else:  # n_unique counts a null (narwhals: detail_row takes it off)
            v = kept(ns.col(plan.var_col))
            aggs["var_unique"] = v.drop_nulls().n_unique() if ns is pl else v.n_unique()
            if ns is not pl:
                aggs["var_nulls"] = v.is_null().cast(ns.Int64).sum()
    return {k: e.alias(k) for k, e in aggs.items()}


def detail_row(plan: EnginePlan, row: dict[str, Any]) -> dict[str, Any]:
    """The collected row of :func:`detail_aggs`, as the checks read it."""
    if row.get("var_nulls"):
        row["var_unique"] -= 1
    if row.get("sum_bad") and "sum_worst" not in row:
        top, bottom = row["sum_top"], row["sum_bottom"]
        row["sum_worst"] = top if bottom is None or (top is not None and top - 1.0 >= 1.0 - bottom) else bottom
    row["nulls"] = {c: int(row[f"null{i}"] or 0) for i, c in enumerate(plan.checked)}
    return row


def bin_stages(plan: EnginePlan, conf_col: str) -> list[dict[str, pl.Expr]]:
    """Bin of a row for uniform / explicit edges / categorical variables, as successive with_columns stages.

    Stages (not one nested expression) so that the engine computes the lensed
    confidence and ``k0`` once each (common subexpressions inside other ones
    are evaluated again otherwise).
    """
    b = plan.binning
    if plan.var_col is not None:
        if plan.var_kind == "categorical":
            return [{BIN: pl.col(CATV)}]
        x = pl.col(f"{COL_PREFIX}v")
    else:
        x = pl.col(conf_col)
    if b.edges is not None:
        return [{BIN: edge_bins_expr(x, [float(e) for e in b.edges[1:-1]], b.closed)}]
    k0 = uniform_k0_expr(x, b.bins, b.closed)
    if k0 is not None:
        name = f"{COL_PREFIX}k0"
        return [{name: k0}, {BIN: uniform_bin_expr(x, b.bins, b.closed, pl.col(name))}]
    return [{BIN: uniform_bin_expr(x, b.bins, b.closed)}]


def key_cols(plan: EnginePlan) -> list[pl.Expr]:
    """The group key columns as the eager path groups them (``_columns.key_expr``), renamed to ``plan.keys``."""
    return [key_expr(c, plan.schema[c]).alias(k) for c, k in zip(plan.by_cols, plan.keys)]
