"""The size limit of per (group, bin) tables, checked before any table is allocated.

Every path that builds a dense (group, bin) table (eager accumulate, the vector-lens grids of
gece, LazyFrame streaming, Dask) asks :func:`check_cells` first. The limit is a process-wide
setting, read and changed with :func:`calframe.limits` (a setter that also works as a context
manager, like ``polars.Config``).
"""

from __future__ import annotations

from typing import Any

from ._errors import ParameterError
from ._params import check_int_range

#: default largest table, in (group, bin) cells: 20 million cells are 480 MB of float64 sums
#: (3 per cell), about 1.4 GB with the accumulate pass's two partial tables
DEFAULT_MAX_CELLS = 20_000_000

_max_cells = DEFAULT_MAX_CELLS


class TableTooLargeError(ParameterError):
    """A per (group, bin) table would exceed :func:`calframe.limits`' ``max_cells``."""


def max_cells() -> int:
    """The current limit (cells of a per (group, bin) table)."""
    return _max_cells


def check_cells(n_groups: int, n_bins: int, width: int = 3, func: str | None = None) -> None:
    """Refuse a table of ``n_groups * n_bins`` cells (``width`` float64 each) past the limit, before allocating it."""
    cells = int(n_groups) * int(n_bins)
    if cells <= _max_cells:
        return
    gib = cells * width * 8 / 2**30
    where = f"{func}: " if func else ""
    raise TableTooLargeError(
        f"{where}{n_groups} group(s) x {n_bins} bins is a per (group, bin) table of {cells:,} cells "
        f"({gib:,.1f} GiB of sums), past the limit of {_max_cells:,} cells. Use fewer bins (bins=) or "
        "groups (by=), or raise the limit: calframe.limits(max_cells=...) (also a context manager: "
        "with calframe.limits(max_cells=...): ...)."
    )


class limits:
    """Set calframe's resource limits; as a context manager, restore the previous ones on exit.

    ``max_cells``: the largest per (group, bin) table a call may build (default 20 million
    cells, 480 MB of sums). Calls that would build a larger one raise ``ParameterError``
    before allocating anything. The setting is process-wide (Dask worker processes of a
    distributed cluster keep their own: set it there with ``client.run``).

    Examples
    --------
    >>> import calframe
    >>> calframe.limits().max_cells
    20000000
    >>> with calframe.limits(max_cells=10**9):
    ...     calframe.limits().max_cells
    1000000000
    >>> calframe.limits().max_cells
    20000000
    """

    def __init__(self, *, max_cells: Any = None) -> None:
        global _max_cells
        if max_cells is not None:
            max_cells = check_int_range("limits", "max_cells", max_cells, 1)
        self._previous = _max_cells
        if max_cells is not None:
            _max_cells = max_cells

    @property
    def max_cells(self) -> int:
        return _max_cells

    def __enter__(self) -> "limits":
        return self

    def __exit__(self, *exc: Any) -> None:
        global _max_cells
        _max_cells = self._previous

    def __repr__(self) -> str:
        return f"calframe.limits(max_cells={_max_cells})"
