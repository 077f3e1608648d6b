"""calframe.plot's shared parts: colours, a display's table checks, the panel grid and the axis labels."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Union

import numpy as np
from .._imports import pd  # pandas: imported at first use
import polars as pl

from .._errors import ParameterError
from ..frames.convert import to_polars

Frame = Union[pl.DataFrame, pl.LazyFrame, "pd.DataFrame"]

#: colors (matplotlib's tab10, fixed so every figure reads the same way)
ACC_COLOR = "#1f77b4"  # accuracy / observed frequency: blue
CONF_COLOR = "#ff7f0e"  # confidence: orange
GAP_COLOR = "#d62728"  # miscalibration: red
HIST_COLOR = "#8c8c8c"  # counts: grey
REF_COLOR = "#404040"  # reference lines
KIND_COLORS = {"numeric": "#1f77b4", "categorical": "#2ca02c"}

#: how figures are printed in titles and labels
FMT = ".4f"

RELIABILITY_COLUMNS = ("bin", "lower", "upper", "n", "weight", "conf", "acc", "gap")
CURVE_COLUMNS = ("v", "acc", "acc_lo", "acc_hi", "conf", "conf_lo", "conf_hi", "gap")
SUMMARY_COLUMNS = ("n", "v_star", "vce")
RANK_COLUMNS = ("variable", "kind", "n", "vece", "vmce")


# --------------------------------------------------------------------------- helpers


def pyplot_module() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "calframe.plot needs matplotlib: pip install 'calframe[plot]' (or pip install matplotlib)."
        ) from exc
    return plt


def polars_table(frame: Any, what: str) -> pl.DataFrame:
    """An eager Polars copy of a Polars/pandas frame."""
    return to_polars(frame, what)


def check_columns(df: pl.DataFrame, needed: Sequence[str], what: str, source: str) -> None:
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise ParameterError(f"{what}: the table lacks column(s) {missing}; pass the frame returned by {source}.")


def group_columns(df: pl.DataFrame, by: Any, known: Sequence[str]) -> list[str]:
    """The group columns: ``by`` when given, else every column that is not a known figure column."""
    if by is None:
        return [c for c in df.columns if c not in known]
    cols = [by] if isinstance(by, str) else [str(c) for c in by]
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ParameterError(f"group column(s) {missing} not in the table (columns: {df.columns}).")
    return cols


def split_names(df: pl.DataFrame, by: list[str]) -> list[tuple[str | None, pl.DataFrame]]:
    """(label, rows) per group in order of first appearance; one unlabeled part without groups."""
    if not by:
        return [(None, df)]
    keys = df.select(by).unique(maintain_order=True)
    out = []
    for key in keys.iter_rows(named=True):
        mask = pl.lit(True)
        for c, v in key.items():
            mask = mask & (pl.col(c).is_null() if v is None else pl.col(c) == v)
        label = ", ".join(f"{c} = {'null' if v is None else v}" for c, v in key.items())
        out.append((label, df.filter(mask)))
    return out


def fmt(x: float) -> str:
    return "nan" if x is None or not math.isfinite(x) else format(x, FMT)


def n_cols(n: int, ncols: int | None) -> int:
    if ncols is not None:
        if isinstance(ncols, bool) or not isinstance(ncols, (int, np.integer)) or ncols < 1:
            raise ParameterError(f"ncols must be an int >= 1; got {ncols!r}.")
        return int(min(ncols, n))
    return n if n <= 3 else (2 if n == 4 else 3)


def _user_axes(ax: Any, n: int, what: str) -> list[Any]:
    """Validate user axes: one Axes for one panel, or a sequence/array of at least ``n`` Axes."""
    if hasattr(ax, "plot") and not isinstance(ax, np.ndarray):
        axes = [ax]
    else:
        axes = list(np.asarray(ax, dtype=object).ravel())
    if len(axes) < n:
        raise ParameterError(f"{what}: {n} panels (one per group) need {n} Axes; got {len(axes)}. "
                             "Pass ax=None to create them.")
    return axes[:n]


def _panel_grid(n: int, ncols: int | None, panel: tuple[float, float], below: bool,
                sharey: bool = True, sharex: bool = True) -> tuple[Any, list[Any], list[Any]]:
    """A new figure with ``n`` panels (and a small panel below each when ``below``), shared axes."""
    plt = pyplot_module()
    nc = n_cols(n, ncols)
    nr = math.ceil(n / nc)
    fig = plt.figure(figsize=(panel[0] * nc, panel[1] * nr), layout="constrained")
    gs = fig.add_gridspec(nr * (2 if below else 1), nc, height_ratios=[4, 1] * nr if below else None)
    mains: list[Any] = []
    lows: list[Any] = []
    for i in range(n):
        r, c = divmod(i, nc)
        first = mains[0] if mains else None
        ax = fig.add_subplot(gs[r * 2 if below else r, c], sharex=first if sharex else None,
                             sharey=first if sharey else None)
        mains.append(ax)
        if below:
            low = fig.add_subplot(gs[r * 2 + 1, c], sharex=ax if not sharex else mains[0],
                                  sharey=lows[0] if lows else None)
            lows.append(low)
            ax.tick_params(labelbottom=False)
        if sharey and c > 0:
            ax.tick_params(labelleft=False)
            if below:
                lows[-1].tick_params(labelleft=False)
    return fig, mains, lows


def grid_axes(ax: Any, n: int, what: str, ncols: int | None, panel: tuple[float, float], below: bool = False,
          sharey: bool = True) -> tuple[Any, list[Any], list[Any]]:
    """(figure, the n panels, the small panel below each when ``below``): a new :func:`_panel_grid` when ``ax``
    is None, else the user's Axes (:func:`_user_axes`) with a panel appended below each."""
    if ax is None:
        return _panel_grid(n, ncols, panel, below, sharey=sharey)
    mains = _user_axes(ax, n, what)
    return mains[0].figure, mains, [_below(a) for a in mains] if below else []


def finish(disp: Any, fig: Any, ax: Any, grouped: bool, head: str, mains: list[Any], **artists: Any) -> Any:
    """The end of a display's ``plot``: a new grid of group panels gets the title ``head`` (after the display's
    name); ``ax_``, ``figure_`` and each of ``artists`` (a list, or None) are set, a list as one item without
    groups, an object array with one item per group with them (:func:`_pack`). Returns the display."""
    if grouped and ax is None:
        fig.suptitle(head if disp.name is None else f"{disp.name}: {head}", fontsize=12)
    disp.ax_ = _pack(mains, grouped)
    for attr, items in artists.items():
        setattr(disp, attr, None if items is None else _pack(items, grouped))
    disp.figure_ = fig
    return disp


def by_list(by: str | Sequence[str] | None) -> list[str]:
    """The group columns of a from_frame call as a list (none without ``by``)."""
    return [] if by is None else [by] if isinstance(by, str) else list(by)


def _below(ax: Any) -> Any:
    """A small panel appended below a user-given Axes (sharing its x axis)."""
    from mpl_toolkits.axes_grid1 import make_axes_locatable

    low = make_axes_locatable(ax).append_axes("bottom", size="25%", pad=0.1, sharex=ax)
    ax.tick_params(labelbottom=False)
    return low


def _pack(items: list[Any], grouped: bool) -> Any:
    """One item without groups, an object array with one item per group with them."""
    if not grouped:
        return items[0]
    arr = np.empty(len(items), dtype=object)
    arr[:] = items
    return arr


# --------------------------------------------------------------------------- axis labels


def lens_labels(lens: str | None) -> tuple[str, str]:
    """(x, y) axis labels of a reliability diagram drawn under ``lens`` (None: not known)."""
    if lens is None:
        return "Mean predicted probability", "Observed frequency"
    if lens.startswith("class:"):
        c = lens.split(":", 1)[1]
        return f"Mean predicted probability of class {c}", f"Frequency of class {c}"
    return "Mean confidence (top-1)", "Accuracy"


def curve_labels(lens: str | None) -> tuple[str, str, str]:
    """(observed curve, predicted curve, y axis) labels of variable curves drawn under ``lens``."""
    if lens is not None and lens.startswith("class:"):
        c = lens.split(":", 1)[1]
        return f"Frequency of class {c}", f"Probability of class {c}", f"Frequency / probability of class {c}"
    if lens is None:
        return "Observed frequency", "Predicted probability", "Frequency / probability"
    return "Accuracy", "Confidence", "Accuracy / confidence"
