"""Names of calframe's own temporary columns, chosen so that they never equal a user's column.

calframe adds columns of its own to frames and queries (a row index, a bin, a
per-cell count, ...). They all start with one prefix, and two rules keep them
apart from the user's columns (docs/spec.md section 8, "Internal column names"):

- where a frame or query holds user columns beside internal ones, the prefix
  is :func:`fresh_prefix` of the user's column names: ``__cf_`` unless some
  user column starts with it, else ``__cf1_``, ``__cf2_``, ... (the first that
  no user column starts with), so no internal name can equal a user name;
- where only group keys cross into calframe's own tables (the streaming
  LazyFrame query, the Dask per-partition sums), the key columns are renamed
  to positional names (:func:`key_names`) and named back in the result, so
  those tables hold internal names only.

Nothing here imports a frame library (calframe.sql uses it too).
"""

from __future__ import annotations

from typing import Any, Iterable

__all__ = ["PREFIX", "fresh_prefix", "fresh_name", "key_names"]

#: the default prefix of calframe's internal column names
PREFIX = "__cf_"


def fresh_prefix(names: Iterable[Any]) -> str:
    """A prefix that none of ``names`` starts with (compared case-insensitively, as SQL does).

    ``__cf_`` unless a name starts with it, else ``__cf1_``, ``__cf2_``, ...:
    every name made of this prefix and a suffix differs from each of ``names``.

    >>> fresh_prefix(["prob", "label"])
    '__cf_'
    >>> fresh_prefix(["prob", "__cf_bin", "__CF1_x"])
    '__cf2_'
    """
    taken = [str(n).casefold() for n in names]
    i = 0
    while True:
        prefix = PREFIX if i == 0 else f"{PREFIX[:-1]}{i}_"
        if not any(n.startswith(prefix) for n in taken):
            return prefix
        i += 1


def fresh_name(names: Iterable[Any], suffix: str) -> str:
    """``fresh_prefix(names) + suffix``: one temporary column name that is not in ``names``.

    >>> fresh_name(["__cf_i"], "i")
    '__cf1_i'
    """
    return fresh_prefix(names) + suffix


def key_names(n: int) -> list[str]:
    """Positional names for ``n`` group key columns inside a table that holds internal columns only.

    >>> key_names(2)
    ['__cf_key0', '__cf_key1']
    """
    return [f"{PREFIX}key{i}" for i in range(n)]
