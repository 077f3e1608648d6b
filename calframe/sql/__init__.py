"""SQL text that computes calibration figures inside a SQL engine.

The functions here return plain SQL strings (nothing is imported from an
engine at import time) that follow the same pipeline as :func:`calframe.ece`
and friends (SPEC §1): lens -> bin -> per (group, bin) sums -> finalize. Every
query runs unchanged in

- Polars SQL: ``pl.SQLContext(frames={"scores": df}).execute(q, eager=True)``
- DuckDB: ``duckdb.sql(q)`` / ``con.execute(q)``

and matches calframe's numbers to rounding (``1e-12``), bin edges included.

>>> from calframe import sql
>>> q = sql.ece_query("scores", prob="prob", label="label", by="model")

Binary input only: ``prob`` is the positive-class probability and ``label``
holds 0/1 (or Boolean) labels. The default lens (``lens=None``, or
``"auto"``) is therefore ``"class:1"``, the positive class, as calframe's
default for a single probability column (SPEC §8 "Default lens"); pass
``lens="top1"`` for the top-label lens.

Binning, exactly as calframe (SPEC §1.3)
----------------------------------------
- ``closed="left"`` (default): edges ``numpy.linspace(0, 1, B + 1)``; bin =
  number of inner edges ``e[1..B-1]`` that are ``<= conf`` (numpy.digitize).
- ``closed="right"``: edges ``i / B``; bin = number of inner edges ``< conf``
  (bins ``[0, e1], (e1, e2], ...``).
- ``bins=[e0, ..., eB]``: explicit edges (as ``calframe.ece(bins=[...])``).

The edges are embedded as float literals that round-trip exactly (``repr``
with an exponent, so both engines parse them as DOUBLE rather than DECIMAL),
and the bin is a nested ``CASE`` binary search over them: ``FLOOR(conf * B)``
alone puts values on edges in the wrong bin.

VECE (SPEC §4): ``variable=`` bins a column instead of the confidence:

- ``variable_edges=[...]``: explicit edges; ``closed`` picks the closed side
  (as ``calframe.vece(bins=[...])``).
- ``variable_bins=B`` (default 10): ``quantile(B)`` = pandas.qcut per group,
  computed in one query. The quantiles are interpolated in SQL with numpy's
  own formula (``a + (b - a) * g`` for ``g < 0.5``, else
  ``b - (b - a) * (1 - g)``) at pandas.qcut's levels, so the edges are
  bit-identical to calframe's: the SQL text is generated from the same
  definition every engine uses (``calframe.binning.linear_quantile`` / ``lerp``). The engines' ``QUANTILE_CONT`` is the same
  linear interpolation but rounds differently: on random data about 6 % of
  DuckDB's and 1-2 % of Polars' edges differ from numpy's by one ulp, which
  would move a value lying exactly on such an edge. ``quantile_edges_query``
  returns the exact edges per group for the two-step recipe (compute edges,
  then pass them as ``variable_edges`` with ``closed="right"``).
- ``categorical=True``: one bin per distinct value.

Differences from the calframe functions (SQL cannot raise on data)
-------------------------------------------------------------------
- Rows whose ``prob``, ``label`` or ``variable`` is NULL are dropped
  (calframe's ``nulls="drop"``; calframe raises by default). NULL group keys
  form their own group, as in calframe.
- Nothing is validated: probabilities outside [0, 1], NaN, or labels other
  than 0/1 give meaningless numbers instead of an error (a label is read as
  ``CAST(label AS DOUBLE)``). Variable values outside explicit edges fall in
  the first or last bin (calframe raises), and a variable with a single
  distinct value is not rejected.
- A group with no rows left gives no output row (calframe raises).
- Only non-empty bins appear in ``sums_query``'s output.
- No weights, distances other than ``tvd``, debiased estimators or
  multiclass input. A class-probability column (Polars ``Array`` / ``List``,
  DuckDB ``DOUBLE[K]``) makes the engine fail on ``CAST(prob AS DOUBLE)``:
  pass the table's ``schema=`` to have calframe refuse it before the query
  is written, with what to do instead (below).

``schema=`` (every query function): the table's columns and types, as a
Polars schema or frame, a ``{name: dtype}`` dict, a pandas frame, a pyarrow
table or schema, or a DuckDB relation. The named columns are then checked
before the query is written (they exist; ``prob``, ``label``, ``variable``
hold one value per row), as calframe's functions check a frame:

>>> import polars as pl
>>> multi = pl.DataFrame({"prob": [[0.2, 0.8], [0.6, 0.4]], "label": [1, 0]},
...                      schema={"prob": pl.Array(pl.Float64, 2), "label": pl.Int64})
>>> sql.ece_query("scores", prob="prob", label="label", schema=multi.schema)
Traceback (most recent call last):
...
calframe._errors.ColumnTypeError: ece_query: column 'prob' (prob=) holds class probabilities \
(Array(Float64, shape=(2,))), and the SQL queries take binary input: one probability column. Run \
calframe.ece on the frame itself (it takes class probabilities), or query one class c: its probability as \
a column of its own (DuckDB: prob[c + 1], Polars: pl.col('prob').arr.get(c)) with the label \
(label = c).

DuckDB table macros doing the same work are installed by
:func:`install_duckdb_macros`, with scalar macros over ``list(p)``,
``list(y)`` that sit beside other aggregates in a ``GROUP BY``
(:func:`ce_list_macro`).
"""

from __future__ import annotations

from .macros import DUCKDB_MACROS, ce_list_macro, install_duckdb_macros
from .queries import (ce_query, ece_query, figure_query, mce_query, quantile_edges_query, quote_ident, rmsce_query,
                      sums_query, vece_query)

__all__ = [
    "quote_ident",
    "sums_query",
    "ce_query",
    "ece_query",
    "mce_query",
    "rmsce_query",
    "vece_query",
    "figure_query",
    "quantile_edges_query",
    "install_duckdb_macros",
    "ce_list_macro",
    "DUCKDB_MACROS",
]


def __dir__() -> list[str]:
    """The public names (``__all__``), not the modules this package holds."""
    return sorted(__all__)
