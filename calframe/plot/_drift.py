"""A figure over time: :class:`DriftDisplay`, drawn from :func:`calframe.monitor`'s table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from ._common import (
    ACC_COLOR, Frame, HIST_COLOR, REF_COLOR, lens_labels, grid_axes, check_columns, fmt, polars_table
)


# --------------------------------------------------------------------------- drift over time


def _lensed(figure: str) -> bool:
    """Whether ``figure`` is measured under a lens (the figure table's ``lensed``; the others read every class
    probability)."""
    from .. import registry

    return figure in registry.DECLARED and registry.DECLARED[figure].figure is not None and (
        registry.figure_of(figure).lensed)


class DriftDisplay:
    """A figure per time window (:func:`calframe.monitor`): its line, its interval band, the baseline.

    The figure of each window is drawn at the window's middle, joined by a
    line that breaks at empty windows (n = 0); with ``<figure>_lo`` /
    ``<figure>_hi`` columns (``monitor(..., ci=...)``) a band shows the
    bootstrap interval; with ``<figure>_baseline`` (``monitor(...,
    baseline=...)``) a dashed horizontal line shows the baseline's value.
    Below, bars give each window's rows ``n`` (they span the window). For the
    calibration errors the title names the lens (:func:`lens_labels`).

    Parameters
    ----------
    table : polars.DataFrame, polars.LazyFrame or pandas.DataFrame
        The output of :func:`calframe.monitor`: the window start (``time_col``),
        ``n`` and ``figure`` (plus the optional columns above).
    figure : str
        The figure to draw (default ``"ece"``).
    time_col : str, optional
        The window start column (default: the table's first column).
    lens : str, optional
        The lens the figures were computed with (:meth:`from_frame` passes the
        one it used); None: not named.
    name : str, optional
        Title prefix (e.g. the model's name).

    Attributes
    ----------
    ax_ : matplotlib Axes
    counts_ax_ : matplotlib Axes or None
        The rows per window, below.
    figure_ : matplotlib Figure
    line_ : Line2D
    band_ : PolyCollection or None
    baseline_line_ : Line2D or None
    baseline_ : float or None
        The baseline's value.

    Examples
    --------
    >>> import datetime as dt, polars as pl, calframe
    >>> from calframe.plot import DriftDisplay
    >>> df = calframe.datasets.grouped_miscalibration(n=3000, seed=0).with_columns(
    ...     ts=pl.datetime_range(dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 3, 23), "1m", eager=True)
    ...     .sample(3000, seed=0).sort())
    >>> disp = DriftDisplay.from_frame(df, "ts", every="1d", baseline="2024-01-01", ci=0.9, n_boot=50)
    >>> disp.ax_.get_ylabel(), disp.baseline_ == calframe.ece(df.filter(pl.col("ts") < dt.datetime(2024, 1, 2)))
    ('ECE', True)
    >>> disp.ax_.get_title()
    'ECE per window (lens class:1: probability of class 1 against its frequency)'
    """

    def __init__(self, table: Any, *, figure: str = "ece", time_col: str | None = None, lens: str | None = None,
                 name: str | None = None):
        self.table = polars_table(table, "DriftDisplay")
        self.time_col = self.table.columns[0] if time_col is None else time_col
        check_columns(self.table, (self.time_col, figure), "DriftDisplay", "calframe.monitor()")
        self.figure = figure
        self.lens = lens
        self.name = name
        base = f"{figure}_baseline"
        values = self.table[base].drop_nulls() if base in self.table.columns else None
        self.baseline_ = float(values[0]) if values is not None and values.len() else None

    def plot(self, ax: Any = None, *, band: bool = True, baseline: bool = True, counts: bool = True,
             **kwargs: Any) -> "DriftDisplay":
        """Draw the figure over time.

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Default: a new figure.
        band, baseline, counts : bool
            Draw the interval band (when the table has bounds), the baseline
            line (when it has one) and the rows per window below.
        **kwargs
            Passed to ``Axes.plot`` for the figure's line.

        Returns
        -------
        DriftDisplay
        """
        t = self.table
        fig, mains, lows = grid_axes(ax, 1, "DriftDisplay.plot", None, (7.5, 4.2), counts and "n" in t.columns)
        main, low = mains[0], (lows[0] if lows else None)
        ends = f"{self.time_col}_end"
        spans = (t[ends] - t[self.time_col]) if ends in t.columns else None
        x = (t[self.time_col] + spans / 2 if spans is not None else t[self.time_col]).to_list()  # mid-window
        y = t[self.figure].cast(pl.Float64).fill_null(np.nan).to_numpy()
        label = self.figure.upper() if _lensed(self.figure) else self.figure.replace("_", " ")
        self.line_ = main.plot(x, y, **{"color": ACC_COLOR, "marker": "o", "markersize": 4, "linewidth": 1.8,
                                        "label": label, **kwargs})[0]
        lo, hi = f"{self.figure}_lo", f"{self.figure}_hi"
        self.band_ = None
        if band and lo in t.columns and hi in t.columns:
            self.band_ = main.fill_between(x, t[lo].fill_null(np.nan).to_numpy(), t[hi].fill_null(np.nan).to_numpy(),
                                           color=ACC_COLOR, alpha=0.18, linewidth=0, label="interval")
        self.baseline_line_ = None
        if baseline and self.baseline_ is not None:
            self.baseline_line_ = main.axhline(self.baseline_, color=REF_COLOR, linestyle="--", linewidth=1.2,
                                               label=f"baseline = {fmt(self.baseline_)}")
        main.set_ylabel(label)
        main.set_ylim(bottom=0)
        main.grid(True, color="0.9", linewidth=0.6)
        main.set_axisbelow(True)
        head = f"{label} per window"
        if self.lens is not None and _lensed(self.figure):
            xl, yl = lens_labels(self.lens)
            head += f" (lens {self.lens}: {_lens_phrase(xl, yl)})"
        main.set_title(head if self.name is None else f"{self.name}: {head}", fontsize=10)
        main.legend(loc="best", fontsize=8, frameon=False)
        if low is not None:
            low.bar(t[self.time_col].to_list(), t["n"].to_numpy(), width=spans.to_list() if spans is not None else 0.8,
                    align="edge", color=HIST_COLOR, edgecolor="white", linewidth=0.5)
            low.set_ylabel("Rows")
            low.set_xlabel(self.time_col)
            low.grid(True, axis="y", color="0.9", linewidth=0.6)
            low.set_axisbelow(True)
        else:
            main.set_xlabel(self.time_col)
        if ax is None:
            fig.autofmt_xdate()
        self.ax_, self.counts_ax_, self.figure_ = main, low, fig
        return self

    @classmethod
    def from_monitor(cls, table: Any, *, figure: str = "ece", time_col: str | None = None, lens: str | None = None,
                     name: str | None = None) -> "DriftDisplay":
        """From the output of :func:`calframe.monitor` (nothing is plotted yet): as the constructor."""
        return cls(table, figure=figure, time_col=time_col, lens=lens, name=name)

    @classmethod
    def from_frame(cls, frame: Frame, time_col: str, *, figure: str = "ece", every: Any = "1d",
                   prob: str | Sequence[str] | None = None, lens: str | None = None, name: str | None = None,
                   ax: Any = None, plot_kws: dict | None = None, **kwargs: Any) -> "DriftDisplay":
        """Compute ``figure`` per window with :func:`calframe.monitor` and plot it.

        ``time_col``, ``every``, ``prob``, ``lens`` and ``**kwargs`` (``baseline``, ``ci``, ``period``, ``bins``,
        ...) are :func:`calframe.monitor`'s; ``plot_kws`` go to :meth:`plot`.
        """
        from ..lenses import lens_used
        from ..monitoring import monitor

        options = {**kwargs, **({"lens": lens} if _lensed(figure) else {})}
        table = monitor(frame, time_col, every=every, figures=(figure,), prob=prob, **options)
        used = lens_used(frame, prob, lens, func="monitor") if _lensed(figure) else None
        return cls(table, figure=figure, time_col=time_col, lens=used, name=name).plot(ax=ax, **(plot_kws or {}))


def _lens_phrase(x: str, y: str) -> str:
    """'probability of class 1 against its frequency' from a reliability diagram's axis labels."""
    x = x.replace("Mean predicted ", "").replace("Mean ", "")
    y = "its frequency" if y.startswith("Frequency") else y.lower()
    return f"{x[0].lower() + x[1:]} against {y}"
