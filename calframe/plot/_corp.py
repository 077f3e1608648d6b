"""The CORP reliability diagram (:class:`CorpReliabilityDisplay`): the isotonic curve of
:func:`calframe.reliability_curve` with its consistency and confidence bands, one panel per group."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._errors import ParameterError
from ._common import (
    ACC_COLOR, Frame, GAP_COLOR, HIST_COLOR, REF_COLOR, check_columns, finish, grid_axes, group_columns, lens_labels,
    n_cols, polars_table, split_names,
)

#: the columns of calframe.reliability_curve beside the group keys
CORP_COLUMNS = ("x", "fit", "consistency_lo", "consistency_hi", "confidence_lo", "confidence_hi")


class CorpReliabilityDisplay:
    """The CORP reliability diagram (Dimitriadis, Gneiting and Jordan 2021): the isotonic recalibration curve
    (red), the consistency band around the diagonal (grey: where a calibrated model's curve would lie) and the
    confidence band around the curve (blue: where the true curve lies), one panel per group.

    Build it with :meth:`from_frame` or from a table of :func:`calframe.reliability_curve` (its bands are drawn
    when it has them).

    Examples
    --------
    >>> import calframe, calframe.plot
    >>> df = calframe.datasets.grouped_miscalibration(n=2000, seed=0)
    >>> disp = calframe.plot.CorpReliabilityDisplay.from_frame(df, by="region", n_boot=100)
    >>> len(disp.ax_), disp.groups_[0], disp.ax_[0].get_ylabel()
    (4, 'region = east', 'Frequency of class 1')
    >>> disp.figure_.savefig(__import__("io").BytesIO(), format="png")
    """

    def __init__(self, table: Any, *, by: str | Sequence[str] | None = None, lens: str | None = None,
                 name: str | None = None):
        self.table = polars_table(table, "CorpReliabilityDisplay")
        check_columns(self.table, ("x", "fit"), "CorpReliabilityDisplay", "calframe.reliability_curve()")
        self.by = group_columns(self.table, by, CORP_COLUMNS)
        self.lens, self.name = lens, name
        self.groups_ = [label for label, _ in split_names(self.table, self.by)] if self.by else []

    def plot(self, ax: Any = None, *, bands: bool = True, ncols: int | None = None,
             **kwargs: Any) -> "CorpReliabilityDisplay":
        """Draw the curve (``**kwargs`` go to ``Axes.plot``) and, with ``bands``, the bands the table has; one
        panel per group (``ax``: one Axes per group, else a new grid of ``ncols`` columns). Returns the display."""
        parts = split_names(self.table, self.by)
        grouped = bool(self.by)
        fig, mains, _ = grid_axes(ax, len(parts), "CorpReliabilityDisplay.plot", ncols, (4.2, 4.2))
        xlabel, ylabel = lens_labels(self.lens)
        xlabel = xlabel.replace("Mean predicted", "Predicted").replace("Mean confidence", "Confidence")
        lines = []
        for i, (label, part) in enumerate(parts):
            main = mains[i]
            x = part["x"].to_numpy()
            main.plot([0, 1], [0, 1], linestyle="--", color=REF_COLOR, linewidth=1, label="Perfectly calibrated")
            if bands and "consistency_lo" in part.columns:
                main.fill_between(x, part["consistency_lo"].to_numpy(), part["consistency_hi"].to_numpy(),
                                  color=HIST_COLOR, alpha=0.3, lw=0, label="Consistency band")
            if bands and "confidence_lo" in part.columns:
                main.fill_between(x, part["confidence_lo"].to_numpy(), part["confidence_hi"].to_numpy(),
                                  color=ACC_COLOR, alpha=0.2, lw=0, label="Confidence band")
            style = {"color": GAP_COLOR, "linewidth": 2, "label": "CORP (isotonic)", **kwargs}
            lines.append(main.plot(x, part["fit"].to_numpy(), **style)[0])
            main.set(xlim=(0, 1), ylim=(0, 1), xlabel=xlabel,
                     ylabel=ylabel if ax is not None or i % n_cols(len(parts), ncols) == 0 else "")
            main.grid(True, color="0.9", linewidth=0.6, zorder=0)
            head = "CORP reliability diagram"
            title = label if label is not None else head if self.name is None else f"{self.name}: {head}"
            main.set_title(title, fontsize=10 if grouped else 11)
            if i == 0:
                main.legend(loc="upper left", fontsize=8, frameon=False)
        return finish(self, fig, ax, grouped, "CORP reliability diagrams by " + ", ".join(self.by), mains,
                      line_=lines)

    @classmethod
    def from_frame(cls, frame: Frame, prob: str | Sequence[str] | None = None, label: str | None = None, *,
                   by: str | Sequence[str] | None = None, weights: str | None = None, lens: str | None = None,
                   nulls: str = "raise", bands: Any = ("consistency", "confidence"), level: float = 0.9,
                   n_boot: int = 1000, seed: int | None = 0, name: str | None = None, ax: Any = None,
                   ncols: int | None = None, **kwargs: Any) -> "CorpReliabilityDisplay":
        """:func:`calframe.reliability_curve` of the frame (its keywords), then :meth:`plot`."""
        from .. import lenses as L
        from ..families.corp_curve import reliability_curve

        if not isinstance(by, (str, list, tuple, type(None))):
            raise ParameterError(f"CorpReliabilityDisplay: by must be a column name or a list of them, got {by!r}.")
        table = reliability_curve(frame, prob, label, by=by, weights=weights, lens=lens, nulls=nulls, bands=bands,
                                  level=level, n_boot=n_boot, seed=seed)
        used = L.lens_used(frame, prob, lens, func="CorpReliabilityDisplay")
        disp = cls(table, by=[] if by is None else by, lens=used, name=name)
        return disp.plot(ax=ax, ncols=ncols, **kwargs)
