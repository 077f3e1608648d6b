"""The narwhals engine: per (group, bin) sums inside DuckDB, Spark, Ibis or pyarrow (docs/spec.md section 8).

A DuckDB relation, a PySpark DataFrame, an Ibis table or a pyarrow Table goes
through `narwhals <https://narwhals-dev.github.io/narwhals/>`_ (``nw.from_native``):
the rows are lensed, validated and binned by the user's engine, which sums them
per (group, bin); only that small table comes back (collected into Polars), and
:mod:`calframe.figures` finalizes it as for every engine. The result has the
input's type: a DuckDB relation (on the input's connection), a PySpark
DataFrame (the input's session), an Ibis table (``ibis.memtable``) or a pyarrow
Table; without ``by`` a one-row frame (``n`` and the figure), as for a Polars
LazyFrame, except that a pyarrow Table (eager) gives a float as a Polars
DataFrame does. The sums are computed when the function is called (the engines'
own laziness ends there: several passes may be needed).

The plan (columns, dtypes, the checks the schema decides) is
:func:`calframe.engines.streaming.streamed.make_plan` on an empty Polars LazyFrame of the
input's schema, and the checks, cell tables and exact floats are the lazy
engine's (``light_stats``, ``run_checks``, ``assemble``, ``exact_floats``,
``order_statistics``, ``edge_columns``, ``cell_sums``): only the queries are
rendered here, in narwhals expressions, from the one definition of the lens
(:func:`calframe.lenses.lens_nw`) and of the bin (:func:`calframe.binning.uniform_bin_nw`,
:func:`calframe.binning.edge_bins_nw`).

Exact sums on every engine: a value x in [0, 1] counts as the integer trunc(x * 2^62)
(weighted: trunc(x * 2^(60 + 8 k)), k the weight's bucket), split into two Int64 parts
hi * 2^31 + lo that each sum exactly (Spark has no 128-bit integer; up to 2^32 rows per
cell), recombined exactly in Python: the same bits as the lazy engine, on every run. DuckDB
sums an Int64 column into a 128-bit integer: there the value is one Int64 column (one sum
instead of two: measured ~7% of the query).

Quantile / equal-mass edges are exact order statistics (histogram passes in the
engine, then the few values of the cells holding the wanted ranks), never the
engine's approximate quantile; with ``ci=`` they are found once and held fixed under the draws from the
moments of their bins, as in memory (:func:`calframe.moments.edges_ci`). Calls this engine does not run
(``bootstrap="rows"``, the sweep, the marginal lens, several variables, Array / List probability columns, and the functions
outside :data:`CAPABILITIES`) raise a ParameterError saying what it runs, except on
a pyarrow Table, which is then handed to the eager engine as a Polars DataFrame
(zero-copy) and the result given back as a pyarrow Table.
"""

from __future__ import annotations

import datetime
import itertools
from typing import Any, Callable

import numpy as np
import polars as pl

from ... import figures as F
from ..._columns import check_group_weights
from ..._errors import ParameterError
from ...binning import Bins, edge_bins_nw, uniform_bin_nw, uniform_edges
from ...frames import convert
from ...frames.kinds import native_kind
from ...registry import Capabilities, functions_on
from ...request import Request
from ..plan import base as P
from ..streaming import streamed as LZ
from ..plan import order_stats as OS
from ..plan.base import (BAD, BIN, CATV, CNT, CONF, ACC, EB, KEEP, LEN, MAX, MIN, NODE, OK, ONE, COL_PREFIX, SA, SC,
                         VMAX, VMIN, W, WT, X, BUCKET_BITS, WEIGHTED_BITS, MAX_BUCKET, scale_factors)

__all__ = ["CAPABILITIES", "native_kind", "returned", "run", "Unsupported"]

#: what this engine computes in the frame's own engine (calframe.registry): the bin, grid, row-mean and GECE cell
#: sums everywhere (the grid sums in engines/plan/grid_sums.py, the row means in engines/plan/row_means.py, the cell sums in
#: engines/plan/vector_sums.py), and disparity's groups of them, ``apply``'s batches on DuckDB and Spark; a pyarrow
#: Table collects the rest (the eager engine on it as a Polars frame), the others refuse it
_SUMS = frozenset({"bin_sums", "bin_table", "grid_sums", "row_means", "groups", "vector_sums"})
CAPABILITIES = {"duckdb": Capabilities(_SUMS | {"batches", "windows"}),
                "spark": Capabilities(_SUMS | {"batches", "windows"}),
                "ibis": Capabilities(_SUMS | {"windows"}), "pyarrow": Capabilities(_SUMS | {"windows"}, collects=None)}
#: the frame types this engine takes, by the name ``native_kind`` gives them
KINDS = {"duckdb": "a DuckDB relation", "pyarrow": "a pyarrow Table", "ibis": "an Ibis table",
         "spark": "a PySpark DataFrame"}
#: the two Int64 parts of a fixed-point value: hi * 2^SPLIT + lo
SPLIT = 31
HI, LO = "_hi", "_lo"
_V = f"{COL_PREFIX}v"


class Unsupported(ParameterError):
    """A call this engine does not run (a pyarrow Table is then run by the eager engine)."""


def _nw() -> Any:
    try:
        import narwhals
    except ImportError:  # pragma: no cover - an optional dependency
        raise ParameterError("calframe runs on DuckDB relations, PySpark DataFrames, Ibis tables and pyarrow Tables "
                             "through narwhals: pip install 'calframe[engines]' (or pip install narwhals).") from None
    return narwhals


def refusal(kind: str, what: str) -> str:
    runs = ", ".join(functions_on(kind, "native"))
    return (f"{what} is not supported on {KINDS[kind]} (its engine runs {runs} with uniform, "
            f"explicit-edge, quantile and equal-mass bins, a scalar lens (top1, class:c) and one variable, and "
            f"their ci= from the moments of those bins (bootstrap='moments'; quantile and equal-mass edges held "
            f"fixed); "
            f"probabilities as one column or a list of class columns; gece with uniform bins, no ci and no row "
            f"selection). Compute it on a Polars frame instead, e.g. "
            f"pl.from_arrow(...) of the frame's rows, or a sample of them.")


def returned(out: Any, kind: str) -> Any:
    """A public function's result on a frame of ``kind``: a Polars frame (a call that ran on a pyarrow Table's
    rows collected) comes back as a pyarrow Table; the other results are already in the input's type."""
    return out.to_arrow() if kind == "pyarrow" and isinstance(out, pl.DataFrame) else out


def supports(req: Request, state: str, frame: Any) -> str | None:
    """What of ``req`` (of ``state``) this engine does not compute in the frame's own engine, None when it does
    (the engine's answer to :func:`calframe.registry.route`: a pyarrow Table is then collected, the other frames
    refuse it): :func:`calframe.engines.plan.base.outside`, and probabilities in one List or Array column."""
    what = P.outside(req, state)
    if what is None and frame is not None and req.kind != "rows":
        shape = P.prob_shape(polars_schema(Engine(frame).lf.collect_schema()), req)
        what = None if shape is None else f"a{'n' if shape == 'array' else ''} {shape.title()} probability column"
    return what


def polars_schema(schema: Any) -> pl.Schema:
    """A narwhals schema as Polars' (the plan reads Polars types)."""
    return pl.Schema({c: dt.to_polars() if hasattr(dt, "to_polars") else dt for c, dt in schema.to_polars().items()})


def refuse(func: str, kind: str, why: str) -> Exception:
    """The error of a call this engine refuses (:meth:`calframe.registry.Route.refusal`)."""
    return Unsupported(f"{func}: " + refusal(kind, why))


def collect(frame: Any) -> pl.DataFrame:
    """The frame the eager engine reads for a call collected here (a pyarrow Table's: the others refuse it)."""
    return convert.from_arrow(frame)


# --------------------------------------------------------------------------- tables in the user's engine


class Engine:
    """The user's frame as a narwhals LazyFrame, and small Polars tables put into the same engine (joins)."""

    _ids = itertools.count()

    def __init__(self, frame: Any) -> None:
        nw = _nw()
        self.kind = native_kind(frame)
        self.native = frame
        f = nw.from_native(frame)
        self.lf = f.lazy() if isinstance(f, nw.DataFrame) else f
        #: a moments pass's :class:`calframe.moments.Moments` (:func:`binned_sums`)
        self.moments: Any = None

    def table(self, df: pl.DataFrame) -> Any:
        """``df`` in the user's engine (same DuckDB connection, same Spark session), as a narwhals LazyFrame."""
        nw = _nw()
        arrow = df.to_arrow()
        if self.kind == "duckdb":
            native = _duckdb_table(self.native, arrow, f"{COL_PREFIX}t{next(self._ids)}")
        elif self.kind == "spark":
            native = self.native.sparkSession.createDataFrame(arrow)
        elif self.kind == "ibis":
            import ibis

            native = ibis.memtable(arrow)
        else:
            native = arrow
        f = nw.from_native(native)
        return f.lazy() if isinstance(f, nw.DataFrame) else f

    @staticmethod
    def back(native: Any) -> pl.DataFrame:
        """A (small) result of :meth:`out` as a Polars frame again."""
        nw = _nw()
        f = nw.from_native(native)
        return (f.collect(backend="polars") if isinstance(f, nw.LazyFrame) else f).to_polars()

    def out(self, df: pl.DataFrame) -> Any:
        """A (small) result in the input's type."""
        if self.kind == "pyarrow":
            return df.to_arrow()
        return self.table(df).to_native()


def _duckdb_table(rel: Any, arrow: Any, alias: str) -> Any:
    """``arrow`` as a relation on ``rel``'s connection (kept by DuckDB's relation as ``_con``; a relation has no
    public way to reach it), else on DuckDB's default connection (where ``duckdb.sql`` / ``duckdb.read_parquet``
    put relations)."""
    import duckdb

    con = getattr(rel, "_con", None)
    return (con.from_arrow(arrow) if con is not None else duckdb.from_arrow(arrow)).set_alias(alias)


def collect_frame(q: Any) -> pl.DataFrame:
    return q.collect("polars").to_native()


# --------------------------------------------------------------------------- expressions


# the row expressions of the lazy engine's plan (engines/plan/base.py), in narwhals


def _class_probs(plan: LZ.EnginePlan) -> list[Any]:
    return P.class_probs(plan, _nw())


def _binary_prob(plan: LZ.EnginePlan) -> Any:
    return P.binary_prob(plan, _nw())


def _raw_weights(plan: LZ.EnginePlan) -> Any:
    return P.raw_weights(plan, _nw())


def _var(plan: LZ.EnginePlan) -> Any:
    return P.var_expr(plan, _nw())


def keep_expr(plan: LZ.EnginePlan) -> Any:
    """nulls='drop': rows without a null in a checked column (None: every row is kept)."""
    return P.keep_expr(plan, _nw())


def row_ok(plan: LZ.EnginePlan) -> Any:
    """True where the row passes every row check (False for a bad or a null row)."""
    return P.row_ok(plan, _nw()).fill_null(False)


def lensed_exprs(plan: LZ.EnginePlan) -> tuple[Any, Any]:
    return P.lensed_exprs(plan, _nw())


def key_cols(plan: LZ.EnginePlan, schema: Any) -> list[Any]:
    """The group keys as calframe groups them (float -0.0 is 0.0, NaN is null), named ``plan.keys``."""
    nw = _nw()
    out = []
    for c, k in zip(plan.by_cols, plan.keys):
        e = nw.col(c)
        if plan.schema[c].is_float():
            e = nw.when(~e.is_nan()).then(nw.when(e == 0).then(nw.lit(0.0)).otherwise(e)).cast(schema[c])
        out.append(e.alias(k))
    return out


#: the fill of a null date / datetime key in a null-safe join (any value: a null matches only a null)
_EPOCH_DAY, _EPOCH = datetime.date(1970, 1, 1), datetime.datetime(1970, 1, 1)
_EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def join_keys(plan: LZ.EnginePlan, gk: list[str]) -> tuple[list[Any], list[str]]:
    """Null-safe join columns for the key columns ``gk`` (narwhals joins never match nulls): per key, whether it
    is null and its value with nulls filled. (expressions, their names)"""
    nw = _nw()
    exprs, names = [], []
    for k, c in zip(plan.keys, plan.by_cols):
        if k not in gk:
            continue
        dt = plan.schema[c]
        if dt.is_numeric():
            fill: Any = 0
        elif dt == pl.String:
            fill = ""
        elif dt == pl.Boolean:
            fill = False
        elif dt in (pl.Date, pl.Datetime):  # monitor's windows
            fill = _EPOCH_DAY if dt == pl.Date else _EPOCH if dt.time_zone is None else _EPOCH_UTC
        else:
            raise Unsupported(f"{plan.func}: " + "group keys of dtype " + str(dt) + " with weights and several "
                              "groups or quantile / equal-mass bins " + "are not supported here: cast the "
                              "key to a string or a number first.")
        exprs += [nw.col(k).is_null().alias(f"{k}_n"), nw.col(k).fill_null(nw.lit(fill)).alias(f"{k}_f")]
        names += [f"{k}_n", f"{k}_f"]
    return exprs, names


def polars_join_keys(df: pl.DataFrame, gk: list[str], names: list[str]) -> pl.DataFrame:
    """The :func:`join_keys` columns of a small Polars table (same fill values: the first row of each key's
    engine-side fill is irrelevant, a null matches only a null)."""
    cols = []
    for name in names:
        k = name[:-2]
        if name.endswith("_n"):
            cols.append(pl.col(k).is_null().alias(name))
        else:
            dt = df.schema[k]
            fill: Any = (0 if dt.is_numeric() else "" if dt == pl.String else _EPOCH_DAY if dt == pl.Date
                         else _EPOCH if dt == pl.Datetime else False)
            cols.append(pl.col(k).fill_null(pl.lit(fill).cast(dt)).alias(name))
    return df.with_columns(cols)


# --------------------------------------------------------------------------- exact sums


def fixed_parts(name: str, x: Any, bucket: Any | None, wide: bool) -> list[Any]:
    """trunc(x * 2^62) (``bucket`` None; x in [0, 1]) or trunc(x * 2^(60 + 8 k)) (``bucket`` k) as Int64 columns
    (:func:`part_names`): ``wide`` (an engine whose Int64 sums are 128-bit), one column ``name``; else two,
    hi = floor(x * 2^(e - 31)) and lo = trunc((that - hi) * 2^31). Every operation is exact in float64.
    ``x`` is null on rows the checks report (they add nothing)."""
    nw = _nw()
    if bucket is None:
        scaled = x * float(2.0 ** (LZ.FIXED_BITS - SPLIT))
    else:  # 2^(29 + 8 k) as two finite factors
        scaled = x * (nw.lit(2.0) ** (bucket * (BUCKET_BITS // 2) + 14)) * (
            nw.lit(2.0) ** (bucket * (BUCKET_BITS // 2) + WEIGHTED_BITS - SPLIT - 14))
    if wide:
        return [(scaled * float(2.0**SPLIT)).floor().cast(nw.Int64).alias(name)]
    hi = scaled.floor()
    return [hi.cast(nw.Int64).alias(name + HI), ((scaled - hi) * float(2.0**SPLIT)).floor().cast(nw.Int64).alias(
        name + LO)]


def part_names(name: str, wide: bool) -> list[str]:
    """The summed columns of the value ``name`` (:func:`fixed_parts`)."""
    return [name] if wide else [name + HI, name + LO]


def exact_sums(res: pl.DataFrame, names: list[str], wide: bool) -> pl.DataFrame:
    """The collected cells with each summed value as correctly rounded floats (``lazy.exact_floats`` of
    :func:`_int128`)."""
    return LZ.exact_floats(_int128(res, names, wide))


def _int128(res: pl.DataFrame, names: list[str], wide: bool) -> pl.DataFrame:
    """The collected cells with each summed value as the lazy engine's Int128 (``wide``: the engine's 128-bit sum;
    else hi * 2^31 + lo)."""
    if wide:
        big = [pl.col(n).cast(pl.Int128).fill_null(0) for n in names]
    else:
        big = [(pl.col(n + HI).cast(pl.Int128).fill_null(0) * (2**SPLIT)
                + pl.col(n + LO).cast(pl.Int128).fill_null(0)).alias(n) for n in names]
    return res.with_columns(big).drop([n + p for n in names for p in (HI, LO)] if not wide else [])


#: :func:`_int128` by its public name (calframe.engines.plan.row_means' moments pass adds its cells up with it)
int128_sums = _int128


def _moment_columns(plan: LZ.EnginePlan, wide: bool, conf: Any, w: Any = None, k: Any = None) -> tuple[list[Any], list[str]]:
    """The second moment's fixed-point column (``lazy._moment_aggs``: sum w conf^2, in the weight's bucket)."""
    if plan.weight_col is None:
        return fixed_parts(LZ.Q[2], conf * conf, None, wide), [LZ.Q[2]]
    return fixed_parts(LZ.Q[2], (w * conf) * conf, k, wide), [LZ.Q[2]]


def _sum_columns(plan: LZ.EnginePlan, wide: bool, conf: Any, acc: Any, w: Any = None,
                 k: Any = None) -> tuple[list[Any], list[str]]:
    """Row columns whose sums are the cell's exact sums: (expressions, names of the summed values). ``conf`` is
    null on a bad row (its fixed-point parts add nothing: its value could break their casts); weighted: ``w``
    the scaled weights (null on a bad row) and ``k`` their bucket. Unweighted, the accuracies (0 or 1 on a good
    row) are summed as floats: exact below 2^53 rows, in any order."""
    if plan.weight_col is None:
        return fixed_parts(SC, conf, None, wide) + [acc.alias(SA)], [SC]
    cols = []
    for name, x in ((W, w), (SC, w * conf), (SA, w * acc)):
        cols += fixed_parts(name, x, k, wide)
    return cols, [W, SC, SA]


def bucket_expr(w: Any) -> Any:
    """The weight's bucket k = floor(-log2(w) / 8) in [0, 134] (``lazy.weight_bucket``): clipped before the floor,
    so a 0 weight (-log2 0 = inf) is bucket 134, not the floor of inf (which Ibis's integer FLOOR cannot cast)."""
    nw = _nw()
    return (-w.log(2.0) / float(BUCKET_BITS)).clip(0.0, float(MAX_BUCKET)).floor().cast(nw.Int32)


def _aggs(plan: LZ.EnginePlan, summed: list[str], wide: bool) -> list[Any]:
    nw = _nw()
    parts = [c for n in summed for c in part_names(n, wide)]
    out = [nw.len().alias(LEN)] + [nw.col(c).sum().alias(c) for c in parts]
    if plan.weight_col is None:
        out.append(nw.col(SA).sum().alias(SA))
    return out


# --------------------------------------------------------------------------- the passes


class Run:
    """One call on one frame: the plan, the weights' scales, the passes."""

    def __init__(self, eng: Engine, req: Request) -> None:
        nw = _nw()
        self.eng, self.req = eng, req
        self.schema = eng.lf.collect_schema()
        pl_schema = polars_schema(self.schema)
        try:
            self.plan = plan = LZ.make_plan(pl.LazyFrame(schema=pl_schema), req)
        except NotImplementedError:
            raise Unsupported(f"{req.func}: " + refusal(eng.kind, "a List probability column")) from None
        if plan.array:
            raise Unsupported(f"{req.func}: " + refusal(eng.kind, "an Array probability column"))
        self.scale_table: pl.DataFrame | None = None
        self.moment_cells: pl.DataFrame | None = None  # quantile / equal-mass bins' moments (data_binned)
        self.nw = nw
        #: the engine sums Int64 into a 128-bit integer (DuckDB's HUGEINT; not Ibis, which types the sum Int64)
        self.wide = eng.kind == "duckdb"

    def prepared(self) -> LZ.EnginePlan:
        """The plan, its schema's errors raised and the weights' scale set (``lazy.prepared``)."""
        if self.plan.schema_errors:
            self.fail()
        if self.plan.weight_col is not None:
            self.set_weight_scale()
        return self.plan

    def checked(self, res: pl.DataFrame) -> pl.DataFrame:
        """A pass's cells after the checks (``lazy.checked``)."""
        st = LZ.light_stats(self.plan, res)
        if st["bad"]:
            self.fail()
        LZ.run_checks(self.plan, st, None)
        return res

    # the rows of the main passes

    def base(self, cols: list[Any], staged: dict[str, Any] | None = None) -> Any:
        """The user's rows with the scale factors of their group joined (when the groups' scales differ);
        ``staged``: columns computed first, beside the user's, that ``cols`` read."""
        lf = self.eng.lf if not staged else self.eng.lf.with_columns(**staged)
        if self.scale_table is None:
            return lf.select(cols)
        plan = self.plan
        exprs, names = join_keys(plan, plan.keys)
        rows = lf.with_columns(key_cols(plan, self.schema)).with_columns(exprs)
        small = self.eng.table(polars_join_keys(self.scale_table, plan.keys, names).drop(plan.keys + [P._SCALE]))
        return rows.join(small, on=names, how="left").select(cols)

    def weights(self) -> Any:
        nw = self.nw
        w = _raw_weights(self.plan)
        if self.scale_table is not None:
            return w * nw.col(P._F1) * nw.col(P._F2)
        f1, f2 = scale_factors(int(np.frexp(self.plan.weight_scale)[1]) - 1)
        w = w * f1 if f1 != 1.0 else w
        return w * f2 if f2 != 1.0 else w

    def set_weight_scale(self) -> None:
        """``lazy._set_weight_scale``: each group's largest kept weight, read by :func:`~calframe.engines.plan.base.set_scales`."""
        nw, plan = self.nw, self.plan
        w = _raw_weights(plan)
        keep = keep_expr(plan)
        w = w if keep is None else nw.when(keep).then(w)
        if plan.by_cols:
            q = self.eng.lf.select(key_cols(plan, self.schema) + [w.alias(W)]).group_by(plan.keys).agg(
                nw.col(W).max())
        else:
            q = self.eng.lf.select(w.alias(W)).select(nw.col(W).max())
        P.set_scales(plan, collect_frame(q))
        self.scale_table = plan.scale_table

    def row_columns(self) -> list[Any]:
        """Keys, lensed conf / acc, the row flag (OK), keep, weights, the variable."""
        nw, plan = self.nw, self.plan
        conf, acc = lensed_exprs(plan)
        cols = key_cols(plan, self.schema) + [conf.alias(CONF), acc.alias(ACC), row_ok(plan).alias(OK)]
        keep = keep_expr(plan)
        cols.append((keep if keep is not None else nw.lit(True)).alias(KEEP))
        if plan.weight_col is not None:
            cols.append(self.weights().alias(WT))
        if plan.var_col is not None:
            cols.append((_var(plan) if plan.var_kind == "numeric" else nw.col(plan.var_col)).alias(
                _V if plan.var_kind == "numeric" else CATV))
        return cols

    def main(self, moments: bool = False) -> Any:
        """One query: per (keys, bin[, weight bucket]) rows, exact sums (+ variable range). ``moments``: per
        (keys, bin, acc[, bucket]) with the second moments beside; then (the main pass's cells, the kept cells
        of the moments: ``lazy.split_moments``).

        Two projections of the user's rows then the group-by: the row values (a bad row's, one the checks
        report, null), then the bin and the fixed-point parts of those columns. A bad row goes to bin -2 of
        its group, so the cells count the bad rows without a column of their own (a categorical variable has
        no spare bin: a summed row flag instead); nulls='drop': a dropped row goes to bin -1 (a null bin for a
        categorical variable). Measured: on Spark the staging halves the expression nodes built over py4j
        (~1.4x -> ~1.2x of a hand-written groupBy at 2e6 rows); on DuckDB it costs nothing."""
        nw, plan = self.nw, self.plan
        conf, acc = lensed_exprs(plan)
        ok, keep = row_ok(plan), keep_expr(plan)
        categorical = plan.var_kind == "categorical"
        weighted = plan.weight_col is not None
        rows = key_cols(plan, self.schema) + [nw.when(ok).then(conf).alias(CONF), acc.alias(ACC)]
        if weighted:
            w = nw.when(ok).then(self.weights())
            rows += [w.alias(WT), bucket_expr(w).alias(EB)]
        if categorical:
            rows += [nw.col(plan.var_col).alias(CATV), ok.cast(nw.Int64).alias(OK)]
        elif plan.var_col is not None:
            rows.append(nw.when(ok).then(_var(plan)).alias(X))
        if plan.var_kind == "numeric":
            rows.append(_var(plan).alias(_V))
        if keep is not None:
            rows.append(keep.alias(KEEP))
        b = plan.binning
        if categorical:
            bin_ = nw.col(CATV)
        else:
            x = nw.col(X if plan.var_col is not None else CONF)
            bin_ = (edge_bins_nw(x, [float(e) for e in b.edges[1:-1]], b.closed) if b.edges is not None
                    else uniform_bin_nw(x, b.bins, b.closed)).fill_null(nw.lit(-2))
        if keep is not None:
            bin_ = nw.when(nw.col(KEEP)).then(bin_).otherwise(nw.lit(None) if categorical else nw.lit(-1))
        if not categorical:
            bin_ = bin_.cast(nw.Int32)
        sums, summed = _sum_columns(plan, self.wide, nw.col(CONF), nw.col(ACC), nw.col(WT), nw.col(EB))
        cell = plan.keys + [BIN] + ([EB] if weighted else [])
        if moments:
            more, names = _moment_columns(plan, self.wide, nw.col(CONF), nw.col(WT), nw.col(EB))
            sums, summed, cell = sums + more, summed + names, cell + [ACC]
            self.rows_of = lambda fetch: self.small_rows(self.base(rows).with_columns(bin_.alias(BIN)), fetch)
        cols = [nw.col(c) for c in cell if c != BIN] + [bin_.alias(BIN), *sums]
        aggs = _aggs(plan, summed, self.wide)
        if categorical:
            cols.append(nw.col(OK))
            aggs.append(nw.col(OK).sum().alias(OK))
        if plan.var_kind == "numeric":
            cols.append(nw.col(_V))
            aggs += [nw.col(_V).min().alias(VMIN), nw.col(_V).max().alias(VMAX)]
        res = collect_frame(self.base(rows).select(cols).group_by(cell).agg(*aggs))
        good = pl.col(OK) if categorical else pl.when(pl.col(BIN) == -2).then(0).otherwise(pl.col(LEN))
        res = res.with_columns(pl.col(LEN).cast(pl.Int64), good.cast(pl.Int64).alias(OK))
        if not weighted:
            res = res.with_columns(pl.col(SA).cast(pl.Float64))
        if moments:
            point, cells = LZ.split_moments(plan, _int128(res, summed, self.wide))
            return LZ.exact_floats(point), cells
        return exact_sums(res, summed, self.wide)

    def small_rows(self, rows: Any, fetch: pl.DataFrame) -> tuple:
        """The small cells' rows, (cell, w, w conf), of ``rows`` (the kept rows with the plan's keys, ``BIN``,
        ``ACC``, ``CONF`` and ``WT``): one bounded query (``lazy._small_rows``)."""
        nw, plan = self.nw, self.plan
        w = nw.col(WT) if plan.weight_col is not None else nw.lit(1.0)
        exprs, names = join_keys(plan, plan.keys)
        picked = [nw.col(k) for k in plan.keys] + [nw.col(BIN), nw.col(ACC).cast(nw.Int64), w.alias(W),
                                                   (w * nw.col(CONF)).alias(SC)]
        table = polars_join_keys(fetch, plan.keys, names).drop(plan.keys).with_columns(
            pl.col(BIN).cast(pl.Int32), pl.col(ACC).cast(pl.Int64))
        q = rows.select(picked).with_columns(exprs).join(self.eng.table(table), on=names + [BIN, ACC], how="inner")
        got = collect_frame(q.select(nw.col(f"{COL_PREFIX}cell"), nw.col(W), nw.col(SC)))
        return got[f"{COL_PREFIX}cell"].to_numpy(), got[W].to_numpy().astype(np.float64), got[SC].to_numpy().astype(
            np.float64)

    # the error path

    def detail(self) -> dict[str, Any]:
        """Every count the ordered checks need (:func:`~calframe.engines.plan.base.detail_aggs`), and the labels outside."""
        nw, plan = self.nw, self.plan
        row = P.detail_row(plan, collect_frame(self.eng.lf.select(*P.detail_aggs(plan, nw).values())).row(0, named=True))
        if row.get("label_outside"):
            keep = keep_expr(plan)
            sel = P._label_outside(plan, nw) if keep is None else P._label_outside(plan, nw) & keep
            vals = collect_frame(self.eng.lf.filter(sel).select(nw.col(plan.label_col)).unique())[plan.label_col]
            row["outside_labels"] = vals.sort().head(5).to_list()
        return row

    def fail(self) -> None:
        LZ.run_checks(self.plan, self.detail(), None)
        raise AssertionError(f"{self.plan.func}: a bad row that no check reports")  # pragma: no cover

    # quantile / equal-mass bins (lazy._data_binned_sums, in narwhals)

    def data_binned(self, moments: bool = False) -> tuple[np.ndarray, pl.DataFrame | None, np.ndarray, int, Bins]:
        """(sums, keys, counts, cell counts, bins) of quantile / equal-mass bins; ``moments``: the last pass per
        (keys, bin, acc) with the second moments, its cells left in ``self.moment_cells`` (and ``self.rows_of``)."""
        nw, plan = self.nw, self.plan
        gk = plan.keys or [ONE]
        cols = self.row_columns()
        if not plan.keys:
            cols.append(nw.lit(0).cast(nw.Int8).alias(ONE))
        weighted = plan.weight_col is not None  # the edges of the rows repeated w_i times (plan/order_stats.py)
        if weighted:
            cols.append(_raw_weights(plan).alias(OS.RW))
        base = self.base(cols)
        x = nw.col(_V if plan.var_col is not None else CONF)
        base = base.with_columns(nw.when(nw.col(OK)).then(x).alias(X),
                                 (~nw.col(OK) & nw.col(KEEP)).cast(nw.Int64).alias(BAD))
        base = base.with_columns(*OS.positive_columns(nw)) if weighted else base
        aggs = [nw.len().alias(LEN), nw.col(BAD).sum().alias(BAD), nw.col(X).min().alias(MIN),
                nw.col(X).max().alias(MAX)]
        if weighted:
            aggs += [nw.col(WT).sum().alias(W)] + OS.positive_aggs(nw)
        res = collect_frame(base.group_by(gk + [KEEP]).agg(*aggs))
        kept = res.filter(pl.col(KEEP))
        st: dict[str, Any] = {"n_total": int(res[LEN].sum()), "n_kept": int(kept[LEN].sum()),
                              "bad": int(res[BAD].sum()), "nulls": {}}
        if st["bad"]:
            self.fail()
        if plan.weight_col is not None:
            st["w_sum"] = float(kept[W].sum())
        if plan.var_col is not None:
            st["var_min"], st["var_max"] = kept[MIN].min(), kept[MAX].max()
        LZ.run_checks(plan, st, None)
        groups = kept.drop(KEEP).sort(gk, nulls_last=True, maintain_order=True)
        rows_ = base.filter(nw.col(KEEP)) if plan.nulls == "drop" else base
        jexprs, jnames = join_keys(plan, gk) if plan.keys else ([], [ONE])
        rows_ = rows_.with_columns(jexprs) if jexprs else rows_

        def small(df: pl.DataFrame) -> Any:
            if not plan.keys:
                return self.eng.table(df)
            return self.eng.table(polars_join_keys(df, gk, jnames).drop(gk))

        erows = rows_  # weighted: the rows of positive weight, their bucket and exact weight parts
        if weighted:
            erows = rows_.filter(nw.col(OS.RW) > 0).with_columns(bucket_expr(nw.col(WT)).alias(EB))
            erows = erows.with_columns(*fixed_parts(OS.FX, nw.col(WT), nw.col(EB), self.wide))
        exact_w = [nw.col(c).sum().alias(c) for c in part_names(OS.FX, self.wide)]

        def cells(path: list[str], grids: list[pl.DataFrame]) -> Any:
            q = erows
            for level, grid in enumerate(grids):
                lo, sc, g = f"{COL_PREFIX}lo{level}", f"{COL_PREFIX}sc{level}", f"{COL_PREFIX}gn{level}"
                q = q.join(small(grid), on=jnames + path[:level], how="inner")
                cell = ((nw.col(X) - nw.col(lo)) * nw.col(sc)).floor().clip(0.0, nw.col(g).cast(nw.Float64) - 1.0)
                q = q.with_columns(cell.cast(nw.Int32).alias(f"{COL_PREFIX}c{level}")).drop(lo, sc, g)
            return q

        def hist(path: list[str], grids: list[pl.DataFrame], c: str) -> pl.DataFrame:
            res = collect_frame(cells(path, grids).group_by(gk + path + [c] + ([EB] if weighted else [])).agg(
                nw.len().alias(CNT), nw.col(X).min().alias(MIN), nw.col(X).max().alias(MAX),
                *(exact_w if weighted else [])))
            return _int128(res, [OS.FX], self.wide) if weighted else res

        def values(path: list[str], grids: list[pl.DataFrame], want: pl.DataFrame) -> pl.DataFrame:
            return collect_frame(cells(path, grids).join(small(want), on=jnames + path, how="inner").select(
                NODE, X, *([OS.RW] if weighted else [])))

        egroups, exact = groups, None
        if weighted:  # each group's exact sum of weights (the eager W), in one more pass
            totals = collect_frame(erows.group_by(gk + [EB]).agg(
                *exact_w, nw.col(OS.RW).max().alias(OS.MRW), nw.col(WT).max().alias(OS.MWT)))
            egroups, *exact = OS.weighted_groups(OS.positive_groups(groups), gk, _int128(totals, [OS.FX],
                                                                                         self.wide))
        etab, ecols, n_bins = LZ.edge_columns(egroups, gk, plan.binning, lambda seg, rank: LZ.order_statistics(
            egroups, gk, seg, rank, hist, values, weighted=weighted, exact=exact), weighted)
        below = _sum_ints([(nw.col(c) < nw.col(X)).cast(nw.Int32) for c in ecols])
        ne = nw.col(f"{COL_PREFIX}ne")
        if plan.binning.scheme == "quantile":  # weighted: a row above the top edge (weight 0) in the last bin
            bin_ = nw.max_horizontal(below, nw.lit(1)) - 1
            if weighted:
                bin_ = nw.min_horizontal(bin_, nw.max_horizontal(ne - 2, nw.lit(0)))
        else:
            bin_ = nw.min_horizontal(below, ne - 1)
        q = rows_.join(small(etab), on=jnames, how="inner")
        if plan.weight_col is not None:
            q = q.with_columns(bucket_expr(nw.col(WT)).alias(EB))
        ok = nw.col(OK)
        sums, summed = _sum_columns(plan, self.wide, nw.when(ok).then(nw.col(CONF)), nw.col(ACC),
                                    nw.when(ok).then(nw.col(WT)), nw.col(EB))
        q = q.with_columns(bin_.cast(nw.Int32).alias(BIN), *sums)
        cell = gk + [BIN] + ([EB] if plan.weight_col is not None else [])
        names: list[str] = []
        if moments:
            more, names = _moment_columns(plan, self.wide, nw.when(ok).then(nw.col(CONF)), nw.col(WT), nw.col(EB))
            q = q.with_columns(*more)
        res = collect_frame(q.group_by(cell + ([ACC] if moments else [])).agg(
            *_aggs(plan, summed + names, self.wide)))
        res = res.with_columns(pl.col(LEN).cast(pl.Int64))
        if plan.weight_col is None:
            res = res.with_columns(pl.col(SA).cast(pl.Float64))
        if moments:  # the point sums: the moments' cells added up over the label (exact integers)
            big = _int128(res, summed + names, self.wide)
            self.moment_cells = big
            res = LZ.exact_floats(big.group_by(cell).agg(
                pl.col(c).sum() for c in big.columns if c not in cell and c not in (ACC, *LZ.Q)))
            self.rows_of = lambda fetch: self.small_rows(q, fetch)
        else:
            res = exact_sums(res, summed, self.wide)
        sums_, keys, counts = LZ.cell_sums(plan, res, groups, gk, n_bins)
        cnt = np.zeros((groups.height, n_bins))
        gi = _cell_groups(res, groups, gk)
        np.add.at(cnt, (gi, res[BIN].to_numpy().astype(np.int64)), res[LEN].to_numpy().astype(np.float64))
        padded = etab.select(ecols).to_numpy()
        n_edges = etab[f"{COL_PREFIX}ne"].to_numpy().astype(np.int64)
        offsets = np.zeros(groups.height + 1, dtype=np.int64)
        np.cumsum(n_edges, out=offsets[1:])
        edges = np.concatenate([padded[g, : n_edges[g]] for g in range(groups.height)])
        bins = Bins(None, n_bins, edges, offsets, plan.binning)
        return sums_, keys, counts, cnt, bins


def _sum_ints(parts: list[Any]) -> Any:
    out = parts[0]
    for p in parts[1:]:
        out = out + p
    return out


def _cell_groups(cells: pl.DataFrame, groups: pl.DataFrame, gk: list[str]) -> np.ndarray:
    """The group index (row of ``groups``) of each cell."""
    gidx = groups.select(gk).with_row_index(f"{COL_PREFIX}g")
    return (cells.select(gk).with_row_index(f"{COL_PREFIX}row").join(gidx, on=gk, how="left", nulls_equal=True)
            .sort(f"{COL_PREFIX}row")[f"{COL_PREFIX}g"].to_numpy().astype(np.int64))


# --------------------------------------------------------------------------- run


def unsupported(req: Request) -> str | None:
    """What of ``req`` this engine does not run (None: it runs it)."""
    if req.kind not in ("ce", "reliability"):
        return f"calframe.{req.func}"
    return P.outside(req, "bin_sums")


def binned(req: Request, frame: Any, figures: dict | None = None) -> Any:
    """A request of bin sums on a frame of :func:`native_kind` (the registry's entry,
    :func:`calframe.engines.run_binned`): :func:`run`."""
    return run(frame, req)


def run(frame: Any, req: Request) -> Any:
    """``req`` (a CE_p figure or a reliability table) on a frame of :func:`native_kind`: the sums in its engine,
    the figures by :mod:`calframe.figures`, the result in the frame's type (module docstring)."""
    eng = Engine(frame)
    admit(eng, req, F.result_columns(req))
    if req.ci is not None:
        return eng.out(LZ.moment_result(req, *binned_sums(eng, req, moments=True)[:4], eng.moments))
    sums, keys, counts, scale, cells = binned_sums(eng, req)
    if req.kind == "reliability":
        return eng.out(F.reliability_table(sums, *cells, keys))
    return shaped(eng, req, F.binned_values(req, lambda c: sums, 1, scale), counts, keys)


def admit(eng: Engine, req: Request, columns: list[str]) -> None:
    """Refuse a call this engine does not run (:class:`Unsupported`), and ``by`` named like a result column."""
    what = unsupported(req)
    if what is not None:
        raise Unsupported(f"{req.func}: " + refusal(eng.kind, what))
    F.check_by_names(req.func, req.by, columns, frame=None if not req.by else Columns(eng))


def binned_sums(eng: Engine, req: Request, moments: bool = False
                ) -> tuple[np.ndarray, pl.DataFrame | None, np.ndarray, Any, tuple]:
    """(sums, keys, counts, the weights' scale, a reliability table's (cell counts, bins)) of the checked rows.
    ``moments``: the bins' :class:`calframe.moments.Moments` from the same pass too, left in ``eng.moments``."""
    r = Run(eng, req)
    plan = r.prepared()
    cells: tuple = ()
    if plan.data_binned:  # with moments: the edges found once, then held fixed (moments.edges_ci)
        sums, keys, counts, cell_counts, bins = r.data_binned(moments)
        cells = (cell_counts, bins)
        if moments:
            eng.moments = _moments(plan, r.moment_cells, r, bins.n_bins)
    else:
        res = r.main(moments)
        if moments:
            res, moment_cells = res
        sums, keys, counts = LZ.assemble(plan, r.checked(res))
        if moments:
            eng.moments = _moments(plan, moment_cells, r)
        if req.kind == "reliability":
            cells = _uniform_counts(plan, res, sums)
    if plan.weight_col is not None:
        check_group_weights(req.func, plan.weight_col, sums[..., 0].sum(axis=1), counts, keys)
    return sums, keys, counts, LZ.group_scales(plan, keys), cells


def _moments(plan: LZ.EnginePlan, cells: pl.DataFrame, r: Run, n_bins: int | None = None) -> Any:
    """The :class:`calframe.moments.Moments` of a moments pass's kept cells, the small cells' rows fetched
    (``n_bins``: quantile / equal-mass bins, as many as their edges)."""
    from ... import moments as M

    merged, fetch = LZ.cell_moments(plan, cells, LZ.int128_float, n_bins)
    small = r.rows_of(fetch) if fetch is not None else M.NO_ROWS
    return M.from_cells(*merged, small, plan.weight_col is not None)


def shaped(eng: Engine, req: Request, values: dict[str, np.ndarray], counts: np.ndarray,
           keys: pl.DataFrame | None) -> Any:
    """The result in the input's type (a float without ``by`` only on a pyarrow Table: lazy in, lazy out)."""
    out = F.shape(req, values, counts, keys, "polars", scalar=eng.kind == "pyarrow")
    return out if isinstance(out, float) else eng.out(out)


class Columns:
    """The column names of the user's frame, for :func:`figures.check_by_names`."""

    def __init__(self, eng: Engine) -> None:
        self.columns = list(eng.lf.collect_schema().names())


def _uniform_counts(plan: LZ.EnginePlan, res: pl.DataFrame, sums: np.ndarray) -> tuple[np.ndarray, Bins]:
    """Rows per (group, bin) of the main pass's cells, and the bins (reliability tables)."""
    cells = LZ.kept_cells(plan, res)
    g, _, n_groups = LZ.group_index(plan, cells)
    cnt = np.zeros(sums.shape[:2])
    if plan.var_kind != "categorical":
        np.add.at(cnt, (g, cells[BIN].to_numpy().astype(np.int64)), cells[LEN].to_numpy().astype(np.float64))
    b = plan.binning
    edges = np.asarray(b.edges) if b.edges is not None else uniform_edges(b.bins, b.closed)
    return cnt, Bins(None, b.bins, edges, None, b)
