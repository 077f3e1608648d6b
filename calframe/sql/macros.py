"""DuckDB macros of calframe.sql: the figures as SQL macros installed on a connection (docs: :mod:`calframe.sql`)."""

from __future__ import annotations

from typing import Any, Literal


from .._errors import bad_param
from .._render import Sql
from ..binning import (uniform_bin_sql, uniform_k0)
from ..lenses import lens_sql, parse_lens
from .. import registry
from ..request import checked_keywords

from .queries import DEFAULT_LENS, LENSES, SQL_PREFIX, Edges, finalize_sql, sql_request, sums_parts, quote_ident


# --------------------------------------------------------------------------- DuckDB macros


def _macro_lens(prefix: str) -> tuple[str, str]:
    """(conf, acc) of the run-time ``lens`` parameter: a CASE over the binary lenses of :func:`calframe.lenses.lens_sql`."""
    err = f"error('{prefix}: lens must be ''auto'', ''top1'', ''class:1'' or ''class:0''')"
    conf, acc = [], []
    for name in LENSES:
        c, a = lens_sql(parse_lens(prefix, name), "__cf_p", "__cf_y")
        test = f"lens IN ('{name}', 'auto')" if name == DEFAULT_LENS else f"lens = '{name}'"
        conf.append(f"WHEN {test} THEN {c}")
        acc.append(f"WHEN {test} THEN {a}")
    return f"CASE {' '.join(conf)} ELSE {err} END", f"CASE {' '.join(acc)} END"


def _macro_uniform_bin(prefix: str) -> tuple[str, str]:
    """(k0, bin) of __cf_conf for a bin count known only at run time: :func:`calframe.binning.uniform_k0`
    (held in the column __cf_k0) corrected by :func:`calframe.binning.uniform_bin_sql`."""
    k0 = str(uniform_k0(Sql("__cf_conf"), Sql("bins")))
    left, right = (uniform_bin_sql("__cf_conf", "__cf_k0", "bins", c) for c in ("left", "right"))
    return k0, (
        f"CASE WHEN closed = 'left' THEN {left} WHEN closed = 'right' THEN {right} "
        f"ELSE error('{prefix}: closed must be ''left'' or ''right''') END"
    )


def _macro_src(prefix: str, variable: bool) -> str:
    """The macros' first CTEs: ``__cf_src`` holds the group keys, ``__cf_all``, ``__cf_p``, ``__cf_y`` (and ``__cf_v``).

    Only the named columns are read from the table (never ``*``), so its other
    columns may have any name; a named column starting with ``__cf_`` (case
    aside) is refused with a DuckDB error, as the macros' own names are fixed.
    """
    named = "by_cols || [prob, label" + (", variable]" if variable else "]")
    wanted = "list_contains(by_cols, c) OR c = prob OR c = label" + (" OR c = variable" if variable else "")
    guard = (
        f"CASE WHEN len(list_filter({named}, lambda c: starts_with(lower(c), '{SQL_PREFIX}'))) > 0 "
        f"THEN error('{prefix}: column names starting with ''{SQL_PREFIX}'' are reserved by the calframe macros; "
        "rename the column or use the calframe.sql query functions') ELSE TRUE END"
    )
    v = ", COLUMNS(lambda c: c = variable) AS __cf_v" if variable else ""
    return (
        f"__cf_in AS (SELECT COLUMNS(lambda c: {wanted}), 0 AS __cf_all FROM query_table(tbl::VARCHAR) WHERE {guard}),\n"
        "__cf_src AS (SELECT COLUMNS(lambda c: list_contains(by_cols, c) OR c = '__cf_all'), "
        "CAST(COLUMNS(lambda c: c = prob) AS DOUBLE) AS __cf_p, "
        f"CAST(COLUMNS(lambda c: c = label) AS DOUBLE) AS __cf_y{v} FROM __cf_in)"
    )


def _duckdb_macro_sql(prefix: str, temporary: bool) -> dict[str, str]:
    create = "CREATE OR REPLACE TEMPORARY MACRO" if temporary else "CREATE OR REPLACE MACRO"
    conf, acc = _macro_lens(prefix)
    k0, ubin = _macro_uniform_bin(prefix)
    keys = "COLUMNS(lambda c: list_contains(by_cols, c) OR c = '__cf_all')"
    not_null = "__cf_p IS NOT NULL AND __cf_y IS NOT NULL"
    raw = f"{prefix}sums_raw"
    raw_v = f"{prefix}vsums_raw"
    out: dict[str, str] = {}
    # keys..., __cf_all, bin, n, sum_conf, sum_acc (the constant __cf_all keeps the key set non-empty)
    out[raw] = (
        f"{create} {raw}(tbl, prob, label, bins := 15, closed := 'left', lens := '{DEFAULT_LENS}', "
        "by_cols := []) AS TABLE\n"
        f"WITH {_macro_src(prefix, False)},\n"
        f"__cf_lensed AS (SELECT {keys}, {conf} AS __cf_conf, {acc} AS __cf_acc FROM __cf_src WHERE {not_null}),\n"
        f"__cf_k AS (SELECT *, CASE WHEN bins >= 1 THEN {k0} ELSE error('{prefix}: bins must be an int >= 1') END "
        "AS __cf_k0 FROM __cf_lensed),\n"
        f"__cf_binned AS (SELECT {keys}, {ubin} AS __cf_bin, __cf_conf, __cf_acc FROM __cf_k)\n"
        f"SELECT {keys}, __cf_bin AS bin, COUNT(*) AS n, SUM(__cf_conf) AS sum_conf, SUM(__cf_acc) AS sum_acc "
        "FROM __cf_binned GROUP BY ALL"
    )
    # edges NULL: one bin per distinct value (compared as VARCHAR); else explicit edges
    vbin = (
        "CASE WHEN edges IS NULL THEN 0 "
        "WHEN closed = 'left' THEN LEAST(GREATEST(len(list_filter(edges, lambda e: e <= TRY_CAST(__cf_v AS DOUBLE))) - 1, 0), "
        "len(edges) - 2) "
        "WHEN closed = 'right' THEN LEAST(GREATEST(len(list_filter(edges, lambda e: e < TRY_CAST(__cf_v AS DOUBLE))) - 1, 0), "
        "len(edges) - 2) "
        f"ELSE error('{prefix}: closed must be ''left'' or ''right''') END"
    )
    out[raw_v] = (
        f"{create} {raw_v}(tbl, prob, label, variable, edges := NULL, closed := 'left', lens := '{DEFAULT_LENS}', "
        "by_cols := []) AS TABLE\n"
        f"WITH {_macro_src(prefix, True)},\n"
        f"__cf_lensed AS (SELECT {keys}, {conf} AS __cf_conf, {acc} AS __cf_acc, __cf_v FROM __cf_src "
        f"WHERE {not_null} AND __cf_v IS NOT NULL),\n"
        f"__cf_binned AS (SELECT {keys}, {vbin} AS __cf_bin, "
        "CASE WHEN edges IS NULL THEN CAST(__cf_v AS VARCHAR) END AS __cf_cat, __cf_conf, __cf_acc FROM __cf_lensed)\n"
        f"SELECT {keys}, __cf_bin AS bin, __cf_cat AS category, COUNT(*) AS n, SUM(__cf_conf) AS sum_conf, "
        "SUM(__cf_acc) AS sum_acc FROM __cf_binned GROUP BY ALL"
    )
    args = f"tbl, prob, label, bins := 15, closed := 'left', lens := '{DEFAULT_LENS}', by_cols := []"
    call = "tbl, prob, label, bins := bins, closed := closed, lens := lens, by_cols := by_cols"
    vargs = f"tbl, prob, label, variable, edges := NULL, closed := 'left', lens := '{DEFAULT_LENS}', by_cols := []"
    vcall = "tbl, prob, label, variable, edges := edges, closed := closed, lens := lens, by_cols := by_cols"
    out[f"{prefix}sums"] = (
        f"{create} {prefix}sums({args}) AS TABLE\n"
        f"SELECT * EXCLUDE (__cf_all) FROM {raw}({call}) ORDER BY ALL NULLS LAST"
    )
    # a table macro per figure of the figure table on "sql" (its finalize, Figure.sql), and vece / vmce
    figures = [(name, registry.figure_of(name), args, call, raw) for name in registry.figures("sql")]
    figures += [(v, registry.figure_of(f), vargs, vcall, raw_v) for v, f in (("vece", "ece"), ("vmce", "mce"))]
    for name, fig, a, c, r in figures:
        cols = ", ".join(f"{text} AS {col if len(fig.names) > 1 else name}" for col, text in zip(fig.names, fig.sql))
        out[f"{prefix}{name}"] = (
            f"{create} {prefix}{name}({a}) AS TABLE\n"
            f"SELECT * EXCLUDE (__cf_all) FROM (SELECT {keys}, CAST(SUM(n) AS BIGINT) AS n, {cols} FROM "
            f"(SELECT *, sum_conf / n AS conf, sum_acc / n AS acc FROM {r}({c})) GROUP BY ALL) "
            "ORDER BY ALL NULLS LAST"
        )
    return out


#: the figures of the scalar list macros :func:`install_duckdb_macros` creates, by name: their ``p``
_LIST_FIGURES = {"ece": 1, "mce": "inf", "rmsce": 2}


@checked_keywords
def ce_list_macro(
    name: str = "calframe_ece",
    *,
    p: float | str = 1,
    bins: Edges = 15,
    closed: Literal["left", "right"] = "left",
    lens: str | None = None,
    temporary: bool = True,
) -> str:
    """``CREATE MACRO`` text of a DuckDB scalar macro ``name(probs, labels)``: CE_p of two lists.

    Given ``list(p)`` and ``list(y)`` it sits beside other aggregates in a
    ``GROUP BY``::

        SELECT region, count(*) AS rows, avg(p) AS mean_p, calframe_ece(list(p), list(y)) AS ece
        FROM scores GROUP BY region

    The figure is the one of :func:`ce_query` (same parameters, the same
    request parsed by :func:`calframe.request.ce`, the same per-bin sums and
    finalize, unnested from the lists in a subquery): it equals
    ``calframe.ce(frame, p=p, bins=bins, closed=closed, lens=lens)`` on the
    group's rows. The binning is fixed when the text is generated: uniform
    bins (``bins=B``) or explicit edges (``bins=[e0, ..., eB]``), embedded as
    exact float literals; those are the binnings calframe.sql offers (quantile
    edges of the confidence: use ``calframe.ece`` on the relation). Rows whose
    probability or label is NULL are dropped (``list`` keeps NULLs, so the two
    lists stay aligned); a group without rows gives NULL. Each group's rows are
    held as lists while the macro runs: the table macros and
    :func:`ce_query` compute the same figures from streamed sums.
    """
    func = "ce_list_macro"
    if not isinstance(name, str) or not name.replace("_", "a").isalnum() or name[0].isdigit():
        raise bad_param(func, "name", "letters, digits and underscores, not starting with a digit", name)
    req = sql_request(func, "ce", prob="calframe_prob", label="calframe_label", by=None, bins=bins, closed=closed,
                   lens=lens, p=p)
    lists = ("calframe_lists", 'SELECT unnest(probs) AS "calframe_prob", unnest(labels) AS "calframe_label"')
    ctes, keys, final = sums_parts(req, lists[0], ("n", req.name))
    query = finalize_sql(req, [lists, *ctes], keys, final)
    create = "CREATE OR REPLACE TEMPORARY MACRO" if temporary else "CREATE OR REPLACE MACRO"
    return f"{create} {name}(probs, labels) AS (SELECT {quote_ident(req.name)} FROM (\n{query}\n))"


def _list_macro_sql(prefix: str, temporary: bool) -> dict[str, str]:
    return {f"{prefix}{fig}": ce_list_macro(f"{prefix}{fig}", p=p, temporary=temporary)
            for fig, p in _LIST_FIGURES.items()}


#: names of the macros :func:`install_duckdb_macros` creates (with the default prefix)
DUCKDB_MACROS = tuple(_duckdb_macro_sql("calframe_", True))


def install_duckdb_macros(con: Any, *, prefix: str = "calframe_", temporary: bool = True) -> list[str]:
    """Create DuckDB table macros on connection ``con``; returns their names.

    Public macros (``tbl`` is a table / view name as a string, column names
    are strings, ``by_cols`` a list of strings)::

        calframe_sums(tbl, prob, label, bins := 15, closed := 'left', lens := 'class:1', by_cols := [])
        calframe_ece / calframe_mce / calframe_rmsce(... same parameters ...)
        calframe_vece / calframe_vmce(tbl, prob, label, variable, edges := NULL,
                                      closed := 'left', lens := 'class:1', by_cols := [])

    e.g. ``SELECT * FROM calframe_ece('scores', 'prob', 'label', by_cols := ['model'])``.
    The figure macros return ``*by_cols, n, <figure>``; ``calframe_sums``
    returns ``*by_cols, bin, n, sum_conf, sum_acc``; the group columns come in
    the table's column order (not ``by_cols``'s) and rows are sorted on them
    (NULLs last). ``calframe_vece`` bins
    the variable by explicit ``edges`` (a DOUBLE list), or, with
    ``edges := NULL``, one bin per distinct value (compared as VARCHAR).

    Column names cannot be plain macro parameters (a parameter is a value, not
    an identifier), so the macros select them with ``query_table(tbl)`` and
    ``COLUMNS(lambda c: c = prob)`` (an exact name match: ``COLUMNS('prob')``
    would be a regular expression matching ``prob_2`` too). ``by_cols`` naming
    a missing column is ignored. Only the named columns are read, so the
    table's other columns may have any name; a named column (``prob``,
    ``label``, ``variable``, ``by_cols``) starting with ``__cf_`` is refused
    with a DuckDB error (the macros' own names are fixed; the query functions
    rename theirs instead). The bin count is a run-time value, so the
    uniform bins use ``clip(floor(conf * B), 0, B - 1)`` corrected by one
    comparison with each neighbouring edge, computed as numpy does; this is
    exact (tested against calframe on values on every edge). Quantile VECE
    bins are not offered as a macro: use ``vece_query``, which also runs in
    DuckDB. ``lens`` defaults to ``'class:1'`` (the positive class, as
    calframe's default for one probability column; ``'auto'`` means the
    same); pass ``lens := 'top1'`` for the top-label lens. Bad
    ``lens``/``closed``/``bins`` values raise DuckDB errors at run time.
    Helper macros ``<prefix>sums_raw`` and ``<prefix>vsums_raw`` are
    created too.

    Scalar macros of the same names ``calframe_ece / calframe_mce /
    calframe_rmsce(probs, labels)`` take two lists and go beside other
    aggregates (default bins, closed side and lens; :func:`ce_list_macro` makes
    others)::

        SELECT region, count(*), calframe_ece(list(p), list(y)) FROM scores GROUP BY region
    """
    if not isinstance(prefix, str) or not prefix.replace("_", "a").isalnum() or prefix[0].isdigit():
        raise bad_param("install_duckdb_macros", "prefix", "letters, digits and underscores, not starting with a digit", prefix)
    statements = _duckdb_macro_sql(prefix, temporary)
    for sql in [*statements.values(), *_list_macro_sql(prefix, temporary).values()]:
        con.execute(sql)
    return list(statements)
