"""The calibration belt's plot (:func:`calframe.calibration_belt_bands`): one panel per group, the belt at each
confidence level around the bisector, the degree and p-value of :func:`calframe.calibration_belt` in the title."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from ._common import REF_COLOR, Frame, by_list, grid_axes, polars_table, split_names


class CalibrationBeltDisplay:
    """The calibration belt per group: ``bands`` (:func:`calframe.calibration_belt_bands`' table) and ``tests``
    (:func:`calframe.calibration_belt`'s), drawn by :meth:`plot`; ``ax_`` and ``figure_`` set after it."""

    def __init__(self, bands: Any, tests: Any, by: str | Sequence[str] | None = None,
                 name: str | None = None) -> None:
        self.bands, self.tests, self.by, self.name = polars_table(bands, "bands"), polars_table(tests, "tests"), \
            by_list(by), name

    @classmethod
    def from_frame(cls, frame: Frame, prob: str | Sequence[str] | None = None, label: str | None = None, *,
                   ax: Any = None, confidence: float | tuple[float, ...] = (0.8, 0.95), points: int = 100,
                   **options: Any) -> CalibrationBeltDisplay:
        """Compute the belt and its test of ``frame`` (the keywords of :func:`calframe.calibration_belt_bands`)
        and plot it."""
        import calframe

        test_options = {k: v for k, v in options.items() if k != "name"}
        bands = calframe.calibration_belt_bands(frame, prob, label, confidence=confidence, points=points,
                                                **test_options)
        tests = calframe.calibration_belt(frame, prob, label, **test_options)
        return cls(bands, tests, options.get("by"), options.get("name")).plot(ax=ax)

    def plot(self, ax: Any = None, ncols: int | None = None) -> CalibrationBeltDisplay:
        """One panel per group: each level's belt (darker for the lower level), the bisector, and the degree and
        p-value of the test above it."""
        import matplotlib.pyplot as plt

        parts = split_names(self.bands, self.by)
        tests = dict((label, rows) for label, rows in split_names(self.tests, self.by))
        fig, mains, _ = grid_axes(ax, len(parts), "calibration_belt", ncols, (4.2, 4.0))
        levels = sorted(self.bands["confidence"].unique().to_list(), reverse=True)
        cmap = plt.get_cmap("viridis")
        for (label, rows), a in zip(parts, mains):
            a.plot([0, 1], [0, 1], linestyle="--", color=REF_COLOR, linewidth=1)
            for i, c in enumerate(levels):
                part = rows.filter(pl.col("confidence") == c).sort("p")
                a.fill_between(part["p"].to_numpy(), part["lower"].to_numpy(), part["upper"].to_numpy(),
                               color=cmap(0.25 + 0.5 * i / max(1, len(levels) - 1)), alpha=0.8,
                               label=f"{c:.0%} belt")
            t = tests.get(label)
            head = "" if label is None else f"{label}\n"
            if t is not None and t.height:
                r = t.row(0, named=True)
                pv = r["belt_p_value"]
                head += f"degree {r['belt_degree']:.0f}, p-value " + ("< 0.001" if pv < 0.001 else f"{pv:.3f}")
            a.set_title(head, fontsize=10)
            a.set_xlim(0, 1), a.set_ylim(0, 1)
            a.set_xlabel("Predicted probability")
            a.set_ylabel("Observed rate (belt)")
            a.legend(loc="upper left", fontsize=8)
        self.ax_ = mains[0] if len(mains) == 1 else mains
        self.figure_ = fig
        return self
