"""The SQL text of calframe.sql's queries: the helpers, the pipeline (rows -> bins -> sums -> figure) and the
public ``*_query`` functions (docs: :mod:`calframe.sql`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal, Union

import numpy as np

from .._errors import ColumnNotFoundError, ColumnTypeError, ParameterError, bad_param
from .._names import PREFIX, fresh_prefix
from .. import _render as R
from .. import registry
from .._render import Sql
from ..binning import (edge_bins_sql, lerp, linear_quantile, qcut_quantiles, uniform_edges)
from ..lenses import AUTO, lens_sql, resolve_lens
from ..metrics import plugin_ce
from ..request import Request, checked_keywords
from ..request import ce as ce_request
from ..request import vece as vece_request


Table = Union[str, Sequence[str]]
Columns = Union[str, Sequence[str], None]
Edges = Union[int, Sequence[float]]

#: prefix of the query's own column and CTE names as written here; :func:`_with` renames them to a
#: prefix that no identifier of the user's (table, columns, figure name) starts with
SQL_PREFIX = PREFIX
#: a double-quoted identifier or a single-quoted string, '' / "" escapes included
_QUOTED = re.compile(r"(\"(?:[^\"]|\"\")*\"|'(?:[^']|'')*')")
LENSES = ("top1", "class:1", "class:0")
#: the default lens of every query and macro: the input is binary (one probability column)
DEFAULT_LENS = str(resolve_lens(AUTO, binary=True))
_SUM_COLUMNS = ("bin", "n", "sum_conf", "sum_acc")


# --------------------------------------------------------------------------- text helpers


def quote_ident(name: str) -> str:
    """A double-quoted SQL identifier, embedded double quotes doubled: ``a"b`` -> ``"a""b"``."""
    if not isinstance(name, str) or not name or "\x00" in name:
        raise ParameterError(f"A SQL identifier must be a non-empty string without NUL characters. Got {name!r}.")
    return '"' + name.replace('"', '""') + '"'


def _table_ref(func: str, table: Table) -> str:
    """``"t"``, or ``"schema"."t"`` for a sequence of name parts."""
    if isinstance(table, str):
        return quote_ident(table)
    if isinstance(table, (list, tuple)) and table and all(isinstance(t, str) for t in table):
        return ".".join(quote_ident(t) for t in table)
    raise bad_param(func, "table", "a table name, or a sequence of name parts such as ('schema', 'table')", table)


def _column(func: str, what: str, name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise bad_param(func, what, "a column name (a non-empty string)", name)
    return quote_ident(name)


def _by_columns(func: str, by: Columns, reserved: Sequence[str]) -> list[str]:
    if by is None:
        return []
    names = [by] if isinstance(by, str) else list(by) if isinstance(by, (list, tuple)) else None
    if names is None or not names:
        raise bad_param(func, "by", "a column name, a non-empty list of column names, or None", by)
    for n in names:
        _column(func, "by", n)
        if n in reserved:
            raise ParameterError(
                f"The 'by' parameter of {func}: a group column may not be named {n!r} (an output column of the query)."
            )
    if len(set(names)) != len(names):
        raise bad_param(func, "by", "distinct column names", by)
    return [quote_ident(n) for n in names]


def _check_bins(func: str, name: str, bins: Any) -> int:
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins < 1:
        raise bad_param(func, name, "an int >= 1", bins)
    return int(bins)


def _with(ctes: Sequence[tuple[str, str]], final: str) -> str:
    body = ",\n".join(f"{name} AS (\n  {sql}\n)" for name, sql in ctes)
    return _own_names(f"WITH {body}\n{final}")


def _own_names(query: str) -> str:
    """``query`` with its own names (the unquoted ``__cf_...``) under :func:`calframe._names.fresh_prefix`
    of the user's identifiers (every one is double-quoted), so that none can equal a user's table or column.
    """
    parts = _QUOTED.split(query)  # odd parts are quoted
    idents = [p[1:-1].replace('""', '"') for p in parts[1::2] if p.startswith('"')]
    prefix = fresh_prefix(idents)
    if prefix == SQL_PREFIX:
        return query
    parts[0::2] = [p.replace(SQL_PREFIX, prefix) for p in parts[0::2]]
    return "".join(parts)


# --------------------------------------------------------------------------- the pipeline


def _quantile_ctes(keys: list[str], bins: int, carried: Sequence[str]) -> tuple[list[tuple[str, str]], str]:
    """CTEs binning __cf_v of __cf_lensed by pandas.qcut(bins) per group, with numpy's interpolation.

    The ranks and the interpolation are binning's own rule (``linear_quantile``, ``lerp``) at
    pandas.qcut's levels, written as SQL. ``carried`` columns of __cf_lensed are passed through.
    Returns (ctes, bin expression over the last CTE, ``__cf_qedges``, whose edges are ``__cf_e<i>``).
    """
    q = qcut_quantiles(bins)
    part = f"PARTITION BY {', '.join(keys)}" if keys else ""
    order = f"{part} ORDER BY __cf_v" if keys else "ORDER BY __cf_v"
    k = "".join(f"{c}, " for c in [*keys, *carried])
    carry = "__cf_v"
    ranked = (
        f"SELECT {k}{carry}, "
        f"ROW_NUMBER() OVER ({order}) - 1 AS __cf_r, "
        f"CAST(COUNT(*) OVER ({part}) - 1 AS DOUBLE) AS __cf_last FROM __cf_lensed"
    )
    ends = []
    for i, level in enumerate(q):
        prev, nxt, gamma = linear_quantile(Sql("__cf_last"), level, R)
        ends.append(f"{gamma} AS __cf_g{i}")
        ends.append(f"MAX(CASE WHEN __cf_r = {prev} THEN __cf_v END) OVER ({part}) AS __cf_a{i}")
        ends.append(f"MAX(CASE WHEN __cf_r = {nxt} THEN __cf_v END) OVER ({part}) AS __cf_b{i}")
    ends_sql = f"SELECT {k}{carry}, {', '.join(ends)} FROM __cf_ranked"
    lerps = ", ".join(
        f"{lerp(Sql(f'__cf_a{i}'), Sql(f'__cf_b{i}'), Sql(f'__cf_g{i}'), R)} AS __cf_e{i}"
        for i in range(len(q))
    )
    edges_sql = f"SELECT {k}{carry}, {lerps} FROM __cf_ends"
    # qcut: bin = (number of distinct edges < v) - 1, the minimum going to bin 0
    terms = ["CASE WHEN __cf_e0 < __cf_v THEN 1 ELSE 0 END"] + [
        f"CASE WHEN __cf_e{i} < __cf_v AND __cf_e{i} > __cf_e{i - 1} THEN 1 ELSE 0 END" for i in range(1, len(q))
    ]
    bin_expr = f"GREATEST({' + '.join(terms)}, 1) - 1"
    ctes = [("__cf_ranked", ranked), ("__cf_ends", ends_sql), ("__cf_qedges", edges_sql)]
    return ctes, bin_expr


def _column_types(func: str, schema: Any) -> dict[str, str]:
    """``{column: type name}`` of a table's ``schema=``: a mapping (a Polars schema, ``{name: dtype}``), a Polars
    frame, a pandas frame, a pyarrow table or schema, or a DuckDB relation."""
    if hasattr(schema, "collect_schema"):  # a Polars DataFrame / LazyFrame
        schema = schema.collect_schema()
    if hasattr(schema, "dtypes") and hasattr(schema, "iloc"):  # pandas: an object column shows its first value
        out = {}
        for name, dtype in schema.dtypes.items():
            first = schema[name].dropna().iloc[:1].tolist() if dtype == object else []
            out[name] = "List" if first and isinstance(first[0], (list, tuple, np.ndarray)) else str(dtype)
        return out
    if hasattr(schema, "schema") and not isinstance(schema, dict):  # a pyarrow Table
        schema = schema.schema
    if hasattr(schema, "types") and (hasattr(schema, "columns") or hasattr(schema, "names")):  # DuckDB / pyarrow
        names = schema.columns if hasattr(schema, "columns") else schema.names
        return {str(n): str(t) for n, t in zip(names, schema.types)}
    if hasattr(schema, "items"):
        return {str(n): str(t) for n, t in schema.items()}
    raise bad_param(func, "schema", "the table's columns and types (a Polars schema or frame, a {name: dtype} dict, "
                    "a pandas frame, a pyarrow table or schema, a DuckDB relation), or None", type(schema).__name__)


def _nested(type_name: str) -> bool:
    """A type that holds several values per row: Polars Array / List / Struct, pyarrow lists and structs,
    DuckDB ``T[K]`` / ``T[]`` / STRUCT / MAP."""
    t = type_name.strip().lower()
    return t.startswith(("array", "list", "large_list", "fixed_size_list", "struct", "map")) or t.endswith("]")


#: the calframe function a query stands for, where it is not the query's name without ``_query``
_FRAME_FUNCTION = {"sums_query": "reliability", "quantile_edges_query": "vece"}


def _check_schema(func: str, schema: Any, **columns: Any) -> None:
    """The query's columns (``param=name``, names already checked; ``by`` a name or a list) against the table's
    ``schema=``: each is there, and ``prob``, ``label`` and ``variable`` hold one value per row (the query casts
    them to DOUBLE)."""
    if schema is None:
        return
    types = _column_types(func, schema)
    for param, names in columns.items():
        names = [names] if isinstance(names, str) else [c for c in names if isinstance(c, str)] if isinstance(
            names, (list, tuple)) else []
        missing = [c for c in names if c not in types]
        if missing:
            raise ColumnNotFoundError(f"{func}: column(s) {missing} given as {param}= are not in the table "
                                      f"(schema=); it has columns {list(types)}.")
        if param == "by":
            continue
        (name,) = names
        if not _nested(types[name]):
            continue
        if param == "prob":
            raise ColumnTypeError(
                f"{func}: column {name!r} (prob=) holds class probabilities ({types[name]}), and the SQL queries "
                f"take binary input: one probability column. Run calframe.{_FRAME_FUNCTION.get(func, func[:-6])} "
                "on the frame itself (it takes class probabilities), or query one class c: its probability as a column of its own (DuckDB: "
                f"{name}[c + 1], Polars: pl.col({name!r}).arr.get(c)) with the label ({columns['label']} = c).")
        raise ColumnTypeError(f"{func}: column {name!r} ({param}=) has type {types[name]}, several values per row; "
                              "the query needs one number per row. Pass a column of numbers.")


def sql_request(func: str, name: str, *, prob: Any, label: Any, by: Columns, bins: Any, closed: Any, lens: Any,
             p: Any = 1, variable: Any = None, variable_edges: Any = None, variable_bins: Any = None,
             edges_param: str = "variable_edges", bins_param: str = "variable_bins", schema: Any = None) -> Request:
    """The call parsed by calframe's own parsers (:func:`calframe.request.ce` / :func:`~calframe.request.vece`):
    the query is generated from this Request. SQL needs the column names (no defaults) and binary input; with
    the table's ``schema``, the columns are checked against it (:func:`_check_schema`)."""
    _column(func, "prob", prob)
    _column(func, "label", label)
    if lens is not None and lens not in ("auto", *LENSES):
        raise bad_param(func, "lens", f"None or one of {list(LENSES)} (binary input)", lens)
    if variable is None:
        req = ce_request(func, name, prob=prob, label=label, by=by, p=p, lens=lens, bins=bins, closed=closed)
    else:
        _column(func, "variable", variable)
        if variable_edges is not None:
            req = vece_request(func, name, variable, prob=prob, label=label, by=by, p=p, lens=lens,
                               binning="uniform", bins=variable_edges, closed=closed, bins_param=edges_param)
        else:
            req = vece_request(func, name, variable, prob=prob, label=label, by=by, p=p, lens=lens,
                               bins=10 if variable_bins is None else variable_bins, closed=closed,
                               bins_param=bins_param)
    _check_schema(func, schema, prob=prob, label=label, **({} if variable is None else {"variable": variable}),
                  by=by)
    return req


def sums_parts(req: Request, table: Table, reserved: Sequence[str], categorical: bool = False
                ) -> tuple[list[tuple[str, str]], list[str], str]:
    """(CTEs, quoted group keys, final SELECT of per (group, bin) sums without ORDER BY) of a parsed request:
    its lens, its bins (of the lensed confidence, or of its variable: explicit edges, quantile bins, or one bin
    per distinct value with ``categorical``)."""
    func = req.func
    src = _table_ref(func, table)
    p_col, y_col = quote_ident(req.prob), quote_ident(req.label)
    keys = _by_columns(func, req.by, reserved)
    conf, acc = lens_sql(req.lens, "__cf_p", "__cf_y")
    k = "".join(f"{c}, " for c in keys)
    not_null = f"{p_col} IS NOT NULL AND {y_col} IS NOT NULL"
    binning = req.binning
    if req.variable is None:
        edges = binning.edges if binning.edges is not None else uniform_edges(binning.bins, binning.closed)
        inner = [float(e) for e in edges[1:-1]]
        rows = f"SELECT {k}CAST({p_col} AS DOUBLE) AS __cf_p, CAST({y_col} AS DOUBLE) AS __cf_y FROM {src} WHERE {not_null}"
        lensed = f"SELECT {k}{conf} AS __cf_conf, {acc} AS __cf_acc FROM __cf_rows"
        binned = (
            f"SELECT {k}{edge_bins_sql('__cf_conf', inner, binning.closed)} AS __cf_bin, __cf_conf, __cf_acc "
            "FROM __cf_lensed"
        )
        ctes = [("__cf_rows", rows), ("__cf_lensed", lensed), ("__cf_binned", binned)]
    else:
        v_col = quote_ident(req.variable)
        v_sql = v_col if categorical else f"CAST({v_col} AS DOUBLE)"
        where = f"{not_null} AND {v_col} IS NOT NULL"
        rows = (
            f"SELECT {k}CAST({p_col} AS DOUBLE) AS __cf_p, CAST({y_col} AS DOUBLE) AS __cf_y, {v_sql} AS __cf_v "
            f"FROM {src} WHERE {where}"
        )
        lensed = f"SELECT {k}{conf} AS __cf_conf, {acc} AS __cf_acc, __cf_v FROM __cf_rows"
        ctes = [("__cf_rows", rows), ("__cf_lensed", lensed)]
        if categorical:
            ctes.append(("__cf_binned", f"SELECT {k}__cf_v AS __cf_bin, __cf_conf, __cf_acc FROM __cf_lensed"))
        elif binning.edges is not None:
            expr = edge_bins_sql("__cf_v", [float(e) for e in binning.edges[1:-1]], binning.closed)
            ctes.append(("__cf_binned", f"SELECT {k}{expr} AS __cf_bin, __cf_conf, __cf_acc FROM __cf_lensed"))
        else:
            qctes, expr = _quantile_ctes(keys, binning.bins, ["__cf_conf", "__cf_acc"])
            ctes += qctes
            ctes.append(("__cf_binned", f"SELECT {k}{expr} AS __cf_bin, __cf_conf, __cf_acc FROM __cf_qedges"))
    group = ", ".join(keys + ["__cf_bin"])
    final = (
        f"SELECT {k}__cf_bin AS \"bin\", COUNT(*) AS \"n\", SUM(__cf_conf) AS \"sum_conf\", "
        f"SUM(__cf_acc) AS \"sum_acc\" FROM __cf_binned GROUP BY {group}"
    )
    return ctes, keys, final


def _variable_modes(func: str, variable: Any, variable_edges: Any, variable_bins: Any, categorical: Any) -> None:
    """The SQL-only parameters binning a variable: at most one of them, and only with a variable."""
    if not isinstance(categorical, bool):
        raise bad_param(func, "categorical", "True or False", categorical)
    if variable is None and (variable_edges is not None or variable_bins is not None or categorical):
        raise ParameterError(
            f"{func}: variable_edges, variable_bins and categorical bin a variable; pass variable= as well."
        )
    if (variable_edges is not None) + (variable_bins is not None) + bool(categorical) > 1:
        raise ParameterError(f"{func}: pass at most one of variable_edges, variable_bins and categorical=True.")


def _order(keys: Sequence[str], extra: Sequence[str] = ()) -> str:
    cols = [f"{c} ASC NULLS LAST" for c in list(keys) + list(extra)]
    return f" ORDER BY {', '.join(cols)}" if cols else ""


@checked_keywords
def sums_query(
    table: Table,
    *,
    prob: str,
    label: str,
    by: Columns = None,
    bins: Edges = 15,
    closed: Literal["left", "right"] = "left",
    lens: str | None = None,
    variable: str | None = None,
    variable_edges: Sequence[float] | None = None,
    variable_bins: int | None = None,
    categorical: bool = False,
    schema: Any = None,
) -> str:
    """SQL for the per (group, bin) sums: columns ``*by, bin, n, sum_conf, sum_acc``.

    ``bin`` is calframe's 0-based bin id (the category itself with
    ``categorical=True``); only non-empty bins appear. The sums merge by
    addition, so partial results (partitions, days, shards) can be added
    before finalizing. Sorted by the group keys (NULLs last) and bin.

    Parameters
    ----------
    table : str or sequence of str
        Table (or view / registered frame) name; a sequence gives a qualified
        name such as ``("schema", "table")``. Identifiers are double-quoted.
    prob, label : str
        Positive-class probability column and 0/1 (or Boolean) label column.
    by : str or list of str, optional
        Group columns.
    bins : int or sequence of float
        Uniform bin count (default 15) on the lensed confidence, or explicit
        edges covering [0, 1]. Ignored when ``variable`` is given.
    closed : {"left", "right"}
        Closed side of the bins (uniform or explicit, confidence or variable
        edges); see the module docstring.
    lens : {None, "top1", "class:1", "class:0"}
        Default None: ``"class:1"`` (the positive class; calframe's default
        for one probability column). ``"top1"`` bins max(p, 1 - p).
    variable : str, optional
        Bin this column instead of the confidence (VECE): by
        ``variable_edges``, by ``variable_bins`` quantile bins per group
        (pandas.qcut, the default with 10 bins), or one bin per distinct
        value with ``categorical=True``.
    schema : optional
        The table's columns and types (a Polars schema or frame, a dict, a
        pandas frame, a pyarrow table or schema, a DuckDB relation): the
        columns are checked against it before the query is written (module
        docstring, ``schema=``), a class-probability ``prob`` refused.
    """
    func = "sums_query"
    _variable_modes(func, variable, variable_edges, variable_bins, categorical)
    req = sql_request(func, "sums", prob=prob, label=label, by=by, bins=bins, closed=closed, lens=lens,
                   variable=variable, variable_edges=variable_edges, variable_bins=variable_bins, schema=schema)
    ctes, keys, final = sums_parts(req, table, _SUM_COLUMNS, categorical)
    return _with(ctes, final + _order(keys, ['"bin"']))


def finalize_sql(req: Request, ctes: list[tuple[str, str]], keys: list[str], final: str) -> str:
    """CE_p per group from the per (group, bin) sums: :func:`calframe.metrics.plugin_ce`, written as SQL."""
    k = "".join(f"{c}, " for c in keys)
    n, sum_conf, sum_acc = Sql('"n"'), Sql('"sum_conf"'), Sql('"sum_acc"')
    gap = f"SELECT {k}\"n\", {R.absolute(sum_conf / n - sum_acc / n)} AS __cf_d FROM __cf_sums"
    fig = plugin_ce(n, Sql("__cf_d"), req.p, R)
    group = f" GROUP BY {', '.join(keys)}" if keys else ""
    out = (f'SELECT {k}CAST(SUM("n") AS BIGINT) AS "n", {fig} AS {quote_ident(req.name)} FROM __cf_gap'
           f"{group}{_order(keys)}")
    return _with([*ctes, ("__cf_sums", final), ("__cf_gap", gap)], out)


@checked_keywords
def figure_query(figure: str, table: Table, *, prob: str, label: str, by: Columns = None, bins: Edges = 15,
                 closed: Literal["left", "right"] = "left", lens: str | None = None, schema: Any = None) -> str:
    """SQL for any figure of the figure table on "sql" (``calframe.registry.figures("sql")``: ``ece``, ``mce``,
    ``rmsce``, ``oe``, ``ece_split``, ``brier_decomposition``, ...) per group: columns ``*by, n`` and the
    figure's columns. The per (group, bin) sums are :func:`sums_query`'s; the finalize is the SQL the figure
    declares (its ``Figure.sql``). Matches ``calframe.<figure>(frame, prob, label, by=..., bins=...)`` to
    rounding; ``lens`` and ``schema`` as :func:`sums_query`.

    >>> from calframe import sql
    >>> q = sql.figure_query("ece_split", "scores", prob="prob", label="label", by="model")
    >>> import polars as pl
    >>> df = pl.DataFrame({"model": ["a", "a", "b", "b"], "prob": [0.9, 0.8, 0.3, 0.6], "label": [1, 0, 0, 1]})
    >>> pl.SQLContext(frames={"scores": df}).execute(q, eager=True).with_columns(pl.selectors.float().round(6)).rows()
    [('a', 2, 0.4, 0.05), ('b', 2, 0.15, 0.2)]
    """
    func = "figure_query"
    offered = registry.figures("sql")
    if not isinstance(figure, str) or figure not in offered:
        raise bad_param(func, "figure", f"one of {list(offered)} (the figures with a SQL finalize)", figure)
    fig = registry.figure_of(figure)
    req = sql_request(func, figure, prob=prob, label=label, by=by, bins=bins, closed=closed, lens=lens, schema=schema)
    ctes, keys, final = sums_parts(req, table, ("n", "conf", "acc", *fig.names))
    k = "".join(f"{c}, " for c in keys)
    per_bin = f'SELECT {k}"n" AS n, "sum_conf" / "n" AS conf, "sum_acc" / "n" AS acc FROM __cf_sums'
    cols = "".join(f", {text} AS {quote_ident(name)}" for name, text in zip(fig.names, fig.sql or ()))
    group = f" GROUP BY {', '.join(keys)}" if keys else ""
    out = f'SELECT {k}CAST(SUM(n) AS BIGINT) AS "n"{cols} FROM __cf_bins{group}{_order(keys)}'
    return _with([*ctes, ("__cf_sums", final), ("__cf_bins", per_bin)], out)


@checked_keywords
def ce_query(
    table: Table,
    *,
    prob: str,
    label: str,
    p: float | str = 1,
    by: Columns = None,
    bins: Edges = 15,
    closed: Literal["left", "right"] = "left",
    lens: str | None = None,
    name: str | None = None,
    schema: Any = None,
) -> str:
    """SQL for CE_p per group (SPEC §1.5, plugin, tvd): columns ``*by, n, <name>``.

    ``p = 1`` is ECE, ``2`` RMSCE, ``inf`` MCE; ``name`` defaults to ``"ce"``.
    One row per group (one row without ``by``), sorted by the group keys with
    NULLs last. Matches ``calframe.ce(frame, prob, label, p=p, ...)``; ``lens``
    as :func:`sums_query` (default the positive class, ``"class:1"``), and
    ``schema`` (the table's columns, checked before the query is written).
    """
    return _ce_query("ce_query", table, prob=prob, label=label, p=p, by=by, bins=bins, closed=closed, lens=lens,
                     name="ce" if name is None else name, schema=schema)


def _ce_query(func: str, table: Table, *, prob: Any, label: Any, p: Any, by: Columns, bins: Any, closed: Any,
              lens: Any, name: str, schema: Any) -> str:
    """:func:`ce_query`, its errors naming ``func``."""
    req = sql_request(func, name, prob=prob, label=label, by=by, bins=bins, closed=closed, lens=lens, p=p,
                   schema=schema)
    return finalize_sql(req, *sums_parts(req, table, ("n", req.name)))


@checked_keywords
def ece_query(table: Table, *, prob: str, label: str, by: Columns = None, bins: Edges = 15,
              closed: Literal["left", "right"] = "left", lens: str | None = None, schema: Any = None) -> str:
    """SQL for ECE per group: columns ``*by, n, ece``. Matches :func:`calframe.ece` (default lens class:1);
    ``schema``: the table's columns, checked before the query is written (:func:`sums_query`)."""
    return _ce_query("ece_query", table, prob=prob, label=label, p=1, by=by, bins=bins, closed=closed, lens=lens,
                     name="ece", schema=schema)


@checked_keywords
def mce_query(table: Table, *, prob: str, label: str, by: Columns = None, bins: Edges = 15,
              closed: Literal["left", "right"] = "left", lens: str | None = None, schema: Any = None) -> str:
    """SQL for MCE per group (max over non-empty bins): columns ``*by, n, mce``.

    Matches :func:`calframe.mce` (default lens class:1); ``schema`` as :func:`sums_query`."""
    return _ce_query("mce_query", table, prob=prob, label=label, p="inf", by=by, bins=bins, closed=closed,
                     lens=lens, name="mce", schema=schema)


@checked_keywords
def rmsce_query(table: Table, *, prob: str, label: str, by: Columns = None, bins: Edges = 15,
                closed: Literal["left", "right"] = "left", lens: str | None = None, schema: Any = None) -> str:
    """SQL for RMSCE (plugin CE_2) per group: columns ``*by, n, rmsce``.

    Matches :func:`calframe.rmsce` (default lens class:1); ``schema`` as :func:`sums_query`."""
    return _ce_query("rmsce_query", table, prob=prob, label=label, p=2, by=by, bins=bins, closed=closed,
                     lens=lens, name="rmsce", schema=schema)


@checked_keywords
def vece_query(
    table: Table,
    variable: str,
    *,
    prob: str,
    label: str,
    by: Columns = None,
    bins: int | None = None,
    edges: Sequence[float] | None = None,
    categorical: bool = False,
    closed: Literal["left", "right"] = "left",
    lens: str | None = None,
    p: float | str = 1,
    name: str | None = None,
    schema: Any = None,
) -> str:
    """SQL for VECE (Kelly & Smyth) per group: columns ``*by, n, <name>`` (default ``"vece"``).

    ``variable`` is binned by quantile bins per group (``bins``, default 10,
    pandas.qcut exactly as :func:`calframe.vece`'s default), by explicit
    ``edges`` (``closed`` picks the closed side), or one bin per distinct
    value with ``categorical=True`` (calframe does this for String /
    Categorical / Boolean variables). ``p="inf"`` gives VMCE. ``lens`` as
    :func:`sums_query` (default the positive class, ``"class:1"``), and
    ``schema`` (the table's columns, checked before the query is written).
    """
    func = "vece_query"
    if variable is None:
        raise bad_param(func, "variable", "a column name", variable)
    _variable_modes(func, variable, edges, bins, categorical)
    req = sql_request(func, "vece" if name is None else name, prob=prob, label=label, by=by, bins=15, closed=closed,
                   lens=lens, p=p, variable=variable, variable_edges=edges, variable_bins=bins, edges_param="edges",
                   bins_param="bins", schema=schema)
    return finalize_sql(req, *sums_parts(req, table, ("n", req.name), categorical))


@checked_keywords
def quantile_edges_query(table: Table, variable: str, *, bins: int = 10, by: Columns = None,
                         schema: Any = None) -> str:
    """SQL for pandas.qcut's edges of ``variable`` per group: columns ``*by, e0, ..., e<bins>``.

    The edges are interpolated with numpy's formula at qcut's levels, so they
    are bit-identical to ``pandas.qcut(v, bins, retbins=True)[1]`` /
    calframe's quantile bins (not to the engines' ``QUANTILE_CONT``, which
    differs by an ulp now and then). NULLs are ignored. Duplicate edges are
    kept; drop them (``sorted(set(row))``) before passing them to
    ``vece_query(edges=..., closed="right")``, which then bins exactly as
    ``vece_query(bins=...)`` does for that group (the two-step recipe).
    ``schema``: the table's columns, checked before the query is written (:func:`sums_query`).
    """
    func = "quantile_edges_query"
    nb = _check_bins(func, "bins", bins)
    names = [f"e{i}" for i in range(nb + 1)]
    keys = _by_columns(func, by, names)
    v_col = _column(func, "variable", variable)
    _check_schema(func, schema, variable=variable, by=by)
    src = _table_ref(func, table)
    k = "".join(f"{c}, " for c in keys)
    lensed = f"SELECT {k}CAST({v_col} AS DOUBLE) AS __cf_v FROM {src} WHERE {v_col} IS NOT NULL"
    qctes, _ = _quantile_ctes(keys, nb, [])
    cols = ", ".join(f"MAX(__cf_e{i}) AS {quote_ident(n)}" for i, n in enumerate(names))
    group = f" GROUP BY {', '.join(keys)}" if keys else ""
    return _with([("__cf_lensed", lensed), *qctes], f"SELECT {k}{cols} FROM __cf_qedges{group}{_order(keys)}")
