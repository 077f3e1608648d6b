"""Calibration plots: display objects that hold computed figures and draw them on demand.

The pattern is scikit-learn's ``*Display``: a display is built from data
(``XDisplay(table, ...)``) or computed from a frame through calframe's API
(``XDisplay.from_frame(frame, ...)``, which also plots), and
``.plot(ax=None, **kwargs)`` draws it and returns the display with ``ax_``
and ``figure_`` set.

- :class:`ReliabilityDisplay` -- reliability diagram of :func:`calframe.reliability`
  (accuracy vs mean confidence per bin, the diagonal, the gap, a histogram of
  bin counts below, ECE in the title; ``by=`` gives one panel per group).
- :class:`CorpReliabilityDisplay` -- the CORP reliability diagram of
  :func:`calframe.reliability_curve` (the isotonic curve, no bins, with its
  consistency and confidence bands; ``by=`` gives one panel per group).
- :class:`VariableCurveDisplay` -- accuracy and confidence curves over a
  variable with pointwise bands, v* and VCE (:func:`calframe.vce_curve`).
- :class:`VeceRankDisplay` -- VECE per variable as sorted horizontal bars,
  VMCE as markers (:func:`calframe.vece_rank`).
- :class:`MLCECurveDisplay` -- MLCE against the kernel bandwidth gamma on a
  log axis, with MCE (the gamma -> inf limit) as a reference line.
- :class:`DriftDisplay` -- a figure per time window (:func:`calframe.monitor`)
  with its interval band, the baseline as a reference line, rows per window.

Module-level shortcuts (:func:`reliability_diagram`, :func:`reliability_curve`, :func:`vce_curve_plot`,
:func:`vece_rank_plot`, :func:`mlce_curve_plot`) compute, plot and return the
display. matplotlib (the ``plot`` extra) is imported only when something is
drawn. Figures created here use matplotlib's constrained layout, so
``display.figure_.savefig("fig.png")`` needs no further adjustment.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._common import (  # noqa: F401  (the colours and label helpers, as calframe.plot had them)
    ACC_COLOR, CONF_COLOR, FMT, GAP_COLOR, HIST_COLOR, KIND_COLORS, REF_COLOR, Frame, curve_labels, lens_labels,
)
from ._corp import CorpReliabilityDisplay
from ._curves import MLCECurveDisplay, VariableCurveDisplay, VeceRankDisplay
from ._belt import CalibrationBeltDisplay
from ._drift import DriftDisplay
from ._reliability import ReliabilityDisplay, SmoothReliabilityDisplay

__all__ = [
    "CorpReliabilityDisplay",
    "CalibrationBeltDisplay",
    "calibration_belt",
    "DriftDisplay",
    "MLCECurveDisplay",
    "ReliabilityDisplay",
    "SmoothReliabilityDisplay",
    "VariableCurveDisplay",
    "VeceRankDisplay",
    "mlce_curve_plot",
    "reliability_curve",
    "reliability_diagram",
    "vce_curve_plot",
    "vece_rank_plot",
]


# --------------------------------------------------------------------------- shortcuts


def reliability_diagram(frame: Frame, prob: str | Sequence[str] | None = None, label: str | None = None,
                        **kwargs: Any) -> ReliabilityDisplay:
    """Reliability diagram of a frame: :meth:`ReliabilityDisplay.from_frame`.

    Examples
    --------
    >>> import calframe, calframe.plot
    >>> df = calframe.datasets.grouped_miscalibration(n=1000, seed=0)
    >>> calframe.plot.reliability_diagram(df, bins=10).figure_.get_axes()[0].get_ylabel()  # one probability column
    'Frequency of class 1'
    >>> calframe.plot.reliability_diagram(df, bins=10, lens="top1").figure_.get_axes()[0].get_ylabel()
    'Accuracy'
    """
    return ReliabilityDisplay.from_frame(frame, prob, label, **kwargs)


def reliability_curve(frame: Frame, prob: str | Sequence[str] | None = None, label: str | None = None,
                      **kwargs: Any) -> CorpReliabilityDisplay:
    """The CORP reliability diagram of a frame (isotonic curve, consistency and confidence bands):
    :meth:`CorpReliabilityDisplay.from_frame`.

    Examples
    --------
    >>> import calframe, calframe.plot
    >>> df = calframe.datasets.grouped_miscalibration(n=1000, seed=0)
    >>> calframe.plot.reliability_curve(df, n_boot=100).ax_.get_title()
    'CORP reliability diagram'
    """
    return CorpReliabilityDisplay.from_frame(frame, prob, label, **kwargs)


def calibration_belt(frame: Frame, prob: str | Sequence[str] | None = None, label: str | None = None,
                     **kwargs: Any) -> CalibrationBeltDisplay:
    """The calibration belt of a frame, one panel per group (``by``): :meth:`CalibrationBeltDisplay.from_frame`.

    Examples
    --------
    >>> import numpy as np, polars as pl, calframe, calframe.plot
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.01, 0.99, size=1000)
    >>> df = pl.DataFrame({"prob": p, "label": (rng.uniform(size=1000) < p).astype(int)})
    >>> calframe.plot.calibration_belt(df, points=20).figure_.get_axes()[0].get_xlabel()
    'Predicted probability'
    """
    return CalibrationBeltDisplay.from_frame(frame, prob, label, **kwargs)


def vce_curve_plot(frame: Frame, variable: str, prob: str | Sequence[str] | None = None, label: str | None = None,
                   **kwargs: Any) -> VariableCurveDisplay:
    """Variable calibration curves of a frame: :meth:`VariableCurveDisplay.from_frame`."""
    return VariableCurveDisplay.from_frame(frame, variable, prob, label, **kwargs)


def vece_rank_plot(frame: Frame, variables: Sequence[str] | None = None, prob: str | Sequence[str] | None = None,
                   label: str | None = None, **kwargs: Any) -> VeceRankDisplay:
    """VECE ranking chart of a frame: :meth:`VeceRankDisplay.from_frame`."""
    return VeceRankDisplay.from_frame(frame, variables, prob, label, **kwargs)


def mlce_curve_plot(frame: Frame, *args: Any, **kwargs: Any) -> MLCECurveDisplay:
    """MLCE against gamma of a frame: :meth:`MLCECurveDisplay.from_frame` (needs ``calframe.mlce_curve``)."""
    return MLCECurveDisplay.from_frame(frame, *args, **kwargs)


def __dir__() -> list[str]:
    """The public names (``__all__``), not the modules and typing names this module imports."""
    return sorted(__all__)
