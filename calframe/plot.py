"""Calibration plots: display objects that hold computed figures and draw them on demand.

The pattern is scikit-learn's ``*Display``: a display is built from data
(``XDisplay(table, ...)``) or computed from a frame through calframe's API
(``XDisplay.from_frame(frame, ...)``, which also plots), and
``.plot(ax=None, **kwargs)`` draws it and returns the display with ``ax_``
and ``figure_`` set.

- :class:`ReliabilityDisplay` -- reliability diagram of :func:`calframe.reliability`
  (accuracy vs mean confidence per bin, the diagonal, the gap, a histogram of
  bin counts below, ECE in the title; ``by=`` gives one panel per group).
- :class:`VariableCurveDisplay` -- accuracy and confidence curves over a
  variable with pointwise bands, v* and VCE (:func:`calframe.vce_curve`).
- :class:`VeceRankDisplay` -- VECE per variable as sorted horizontal bars,
  VMCE as markers (:func:`calframe.vece_rank`).
- :class:`MLCECurveDisplay` -- MLCE against the kernel bandwidth gamma on a
  log axis, with MCE (the gamma -> inf limit) as a reference line.
- :class:`DriftDisplay` -- a figure per time window (:func:`calframe.monitor`)
  with its interval band, the baseline as a reference line, rows per window.

Module-level shortcuts (:func:`reliability_diagram`, :func:`vce_curve_plot`,
:func:`vece_rank_plot`, :func:`mlce_curve_plot`) compute, plot and return the
display. matplotlib (the ``plot`` extra) is imported only when something is
drawn. Figures created here use matplotlib's constrained layout, so
``display.figure_.savefig("fig.png")`` needs no further adjustment.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Union

import numpy as np
from ._lazy import is_pandas_frame, pd  # pandas: imported at first use
import polars as pl

from ._errors import ParameterError
from .request import checked_keywords

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from .api import VCECurve

Frame = Union[pl.DataFrame, pl.LazyFrame, "pd.DataFrame"]

__all__ = [
    "DriftDisplay",
    "MLCECurveDisplay",
    "ReliabilityDisplay",
    "SmoothReliabilityDisplay",
    "VariableCurveDisplay",
    "VeceRankDisplay",
    "mlce_curve_plot",
    "reliability_diagram",
    "vce_curve_plot",
    "vece_rank_plot",
]

#: colors (matplotlib's tab10, fixed so every figure reads the same way)
ACC_COLOR = "#1f77b4"  # accuracy / observed frequency: blue
CONF_COLOR = "#ff7f0e"  # confidence: orange
GAP_COLOR = "#d62728"  # miscalibration: red
HIST_COLOR = "#8c8c8c"  # counts: grey
REF_COLOR = "#404040"  # reference lines
KIND_COLORS = {"numeric": "#1f77b4", "categorical": "#2ca02c"}

#: how figures are printed in titles and labels
FMT = ".4f"

_RELIABILITY_COLUMNS = ("bin", "lower", "upper", "n", "weight", "conf", "acc", "gap")
_CURVE_COLUMNS = ("v", "acc", "acc_lo", "acc_hi", "conf", "conf_lo", "conf_hi", "gap")
_SUMMARY_COLUMNS = ("n", "v_star", "vce")
_RANK_COLUMNS = ("variable", "kind", "n", "vece", "vmce")


# --------------------------------------------------------------------------- helpers


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "calframe.plot needs matplotlib: pip install 'calframe[plot]' (or pip install matplotlib)."
        ) from exc
    return plt


def _polars(frame: Any, what: str) -> pl.DataFrame:
    """An eager Polars copy of a Polars/pandas frame."""
    if isinstance(frame, pl.LazyFrame):
        return frame.collect()
    if isinstance(frame, pl.DataFrame):
        return frame
    if is_pandas_frame(frame):
        return pl.from_pandas(frame)
    raise TypeError(f"{what}: expected a Polars or pandas DataFrame, got {type(frame).__name__}.")


def _check_columns(df: pl.DataFrame, needed: Sequence[str], what: str, source: str) -> None:
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise ParameterError(f"{what}: the table lacks column(s) {missing}; pass the frame returned by {source}.")


def _group_columns(df: pl.DataFrame, by: Any, known: Sequence[str]) -> list[str]:
    """The group columns: ``by`` when given, else every column that is not a known figure column."""
    if by is None:
        return [c for c in df.columns if c not in known]
    cols = [by] if isinstance(by, str) else [str(c) for c in by]
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ParameterError(f"group column(s) {missing} not in the table (columns: {df.columns}).")
    return cols


def _split(df: pl.DataFrame, by: list[str]) -> list[tuple[str | None, pl.DataFrame]]:
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


def _fmt(x: float) -> str:
    return "nan" if x is None or not math.isfinite(x) else format(x, FMT)


def _n_cols(n: int, ncols: int | None) -> int:
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
    plt = _pyplot()
    nc = _n_cols(n, ncols)
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


def _axes(ax: Any, n: int, what: str, ncols: int | None, panel: tuple[float, float], below: bool = False,
          sharey: bool = True) -> tuple[Any, list[Any], list[Any]]:
    """(figure, the n panels, the small panel below each when ``below``): a new :func:`_panel_grid` when ``ax``
    is None, else the user's Axes (:func:`_user_axes`) with a panel appended below each."""
    if ax is None:
        return _panel_grid(n, ncols, panel, below, sharey=sharey)
    mains = _user_axes(ax, n, what)
    return mains[0].figure, mains, [_below(a) for a in mains] if below else []


def _finish(disp: Any, fig: Any, ax: Any, grouped: bool, head: str, mains: list[Any], **artists: Any) -> Any:
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


def _by_list(by: str | Sequence[str] | None) -> list[str]:
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


# --------------------------------------------------------------------------- reliability


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


class ReliabilityDisplay:
    """Reliability diagram: accuracy against mean confidence per bin.

    Each panel shows the accuracy (or class frequency) of every non-empty bin
    as bars spanning the bin (or points at the bin's mean confidence), the
    diagonal of perfect calibration, the gap between accuracy and mean
    confidence in hatched red, a histogram of the bin's row counts below, and
    the ECE (bin-weighted mean |gap|, :func:`calframe.ece`) in the title. With
    group columns there is one panel per group in a grid with shared axes.

    Build it with :meth:`from_frame`, from arrays with :meth:`from_predictions`,
    from a fitted classifier with :meth:`from_estimator` (as scikit-learn's
    ``CalibrationDisplay``), or from a table already computed by
    :func:`calframe.reliability`.

    Parameters
    ----------
    table : polars.DataFrame or pandas.DataFrame
        The output of :func:`calframe.reliability`: ``bin``, ``lower``,
        ``upper``, ``n``, ``weight``, ``conf``, ``acc``, ``gap`` and any
        group columns.
    by : str or list of str, optional
        The group columns of ``table``. Default: every column that is not one
        of the columns above (none for an ungrouped table).
    ece : float or dict, optional
        ECE to print (a dict maps each group's label to its value). Default:
        computed from the table as sum(weight * |gap|), which is
        :func:`calframe.ece` with the same binning.
    lens : str, optional
        The lens the table was computed with (``"top1"`` or ``"class:<c>"``);
        it only sets the axis labels. Default None: neutral labels (mean
        predicted probability, observed frequency). :meth:`from_frame` passes
        the lens it used.
    name : str, optional
        Title prefix (e.g. the model's name).

    Attributes
    ----------
    ax_ : matplotlib Axes, or ndarray of Axes (one per group)
        The reliability panels.
    hist_ax_ : matplotlib Axes, ndarray of Axes, or None
        The count histograms below them.
    figure_ : matplotlib Figure
    bars_ : BarContainer or Line2D, or ndarray of them (one per group)
        Accuracy bars (``kind="bars"``) or the accuracy line (``kind="points"``).
    groups_ : list of str
        Panel labels (empty without groups).
    ece_ : float or dict
        ECE overall, or per group label.

    Examples
    --------
    >>> import calframe
    >>> from calframe.plot import ReliabilityDisplay
    >>> df = calframe.datasets.grouped_miscalibration(n=2000, seed=0)
    >>> disp = ReliabilityDisplay.from_frame(df, bins=10)
    >>> disp.ax_.get_title() == f"Reliability diagram (ECE = {calframe.ece(df, bins=10):.4f})"
    True
    >>> grid = ReliabilityDisplay.from_frame(df, by="region", bins=10)
    >>> len(grid.ax_), grid.groups_[0]
    (4, 'region = east')
    >>> grid.figure_.savefig(__import__("io").BytesIO(), format="png")
    """

    def __init__(self, table: Any, *, by: str | Sequence[str] | None = None, ece: float | dict | None = None,
                 lens: str | None = None, name: str | None = None):
        self.table = _polars(table, "ReliabilityDisplay")
        _check_columns(self.table, _RELIABILITY_COLUMNS, "ReliabilityDisplay", "calframe.reliability()")
        self.by = _group_columns(self.table, by, _RELIABILITY_COLUMNS)
        self.lens = lens
        self.name = name
        parts = _split(self.table, self.by)
        computed = {label: float((p["weight"] * p["gap"].abs()).sum()) for label, p in parts}
        if ece is None:
            self.ece_: float | dict = computed if self.by else computed[None]
        elif isinstance(ece, dict):
            self.ece_ = {**computed, **ece}
        else:
            self.ece_ = float(ece)
        self.groups_ = [label for label, _ in parts] if self.by else []

    def _ece_of(self, label: str | None) -> float:
        return self.ece_[label] if isinstance(self.ece_, dict) else self.ece_  # type: ignore[index]

    def plot(self, ax: Any = None, *, kind: str = "bars", hist: bool = True, gap: bool = True,
             ref_line: bool = True, ncols: int | None = None, **kwargs: Any) -> "ReliabilityDisplay":
        """Draw the diagram.

        Parameters
        ----------
        ax : matplotlib Axes or array of Axes, optional
            Where to draw: one Axes, or one per group with group columns.
            Default: a new figure (a grid of panels with groups).
        kind : {"bars", "points"}
            Accuracy as bars spanning each bin, or as points at each bin's
            mean confidence joined by a line.
        hist : bool
            Draw a histogram of the bins' row counts below each panel.
        gap : bool
            Shade the gap between accuracy and mean confidence.
        ref_line : bool
            Draw the diagonal of perfect calibration.
        ncols : int, optional
            Columns of the panel grid (default: up to 3).
        **kwargs
            Passed to ``Axes.bar`` (bars) or ``Axes.plot`` (points) for the
            accuracy artists.

        Returns
        -------
        ReliabilityDisplay
        """
        if kind not in ("bars", "points"):
            raise ParameterError(f"ReliabilityDisplay.plot: kind must be 'bars' or 'points'; got {kind!r}.")
        parts = _split(self.table, self.by)
        grouped = bool(self.by)
        fig, mains, lows = _axes(ax, len(parts), "ReliabilityDisplay.plot", ncols, (3.8, 4.6), hist)
        xlabel, ylabel = lens_labels(self.lens)
        artists = []
        for i, (label, part) in enumerate(parts):
            main = mains[i]
            low = lows[i] if hist else None
            lower, upper = part["lower"].to_numpy(), part["upper"].to_numpy()
            conf, acc = part["conf"].to_numpy(), part["acc"].to_numpy()
            width = upper - lower
            if ref_line:
                main.plot([0, 1], [0, 1], linestyle="--", color=REF_COLOR, linewidth=1, label="Perfectly calibrated",
                          zorder=3)
            if kind == "bars":
                style = {"color": ACC_COLOR, "edgecolor": "white", "linewidth": 0.6, "alpha": 0.9, "label": ylabel,
                         "align": "edge", "zorder": 1, **kwargs}
                artist = main.bar(lower, acc, width=width, **style)
                if gap:
                    main.bar(lower, conf - acc, bottom=acc, width=width, align="edge", facecolor=GAP_COLOR,
                             alpha=0.25, edgecolor=GAP_COLOR, linewidth=0.8, hatch="//", label="Gap", zorder=2)
            else:
                if gap:
                    main.vlines(conf, acc, conf, color=GAP_COLOR, alpha=0.5, linewidth=3, label="Gap", zorder=2)
                style = {"color": ACC_COLOR, "marker": "o", "markersize": 5, "linewidth": 1.5, "label": ylabel,
                         "zorder": 4, **kwargs}
                artist = main.plot(conf, acc, **style)[0]
            artists.append(artist)
            main.set(xlim=(0, 1), ylim=(0, 1), ylabel=ylabel if i % _n_cols(len(parts), ncols) == 0 or ax is not None
                     else "")
            main.grid(True, color="0.9", linewidth=0.6, zorder=0)
            main.set_axisbelow(True)
            title = f"ECE = {_fmt(self._ece_of(label))}"
            if label is not None:
                title = f"{label}: {title}"
            elif self.name is not None:
                title = f"{self.name} ({title})"
            else:
                title = f"Reliability diagram ({title})"
            main.set_title(title, fontsize=10 if grouped else 11)
            if i == 0:
                order = {"Perfectly calibrated": 0, ylabel: 1, "Gap": 2}
                handles, labels = main.get_legend_handles_labels()
                pairs = sorted(zip(handles, labels), key=lambda hl: order.get(hl[1], 3))
                main.legend([h for h, _ in pairs], [lab for _, lab in pairs], loc="upper left", fontsize=8,
                            frameon=False)
            if low is not None:
                low.bar(lower, part["n"].to_numpy(), width=width, align="edge", color=HIST_COLOR,
                        edgecolor="white", linewidth=0.5)
                low.set_xlim(0, 1)
                low.set_xlabel(xlabel)
                low.set_ylabel("Count" if (ax is not None or i % _n_cols(len(parts), ncols) == 0) else "")
                low.grid(True, axis="y", color="0.9", linewidth=0.6)
                low.set_axisbelow(True)
            else:
                main.set_xlabel(xlabel)
        return _finish(self, fig, ax, grouped, "Reliability diagrams by " + ", ".join(self.by), mains,
                       hist_ax_=lows if hist else None, bars_=artists)

    @classmethod
    @checked_keywords
    def from_frame(
        cls,
        frame: Frame,
        prob: str | Sequence[str] | None = None,
        label: str | None = None,
        *,
        bins: "int | Sequence[float]" = 15,
        binning: str = "uniform",
        closed: str = "left",
        lens: str | None = None,
        by: str | Sequence[str] | None = None,
        weights: str | None = None,
        nulls: str = "raise",
        name: str | None = None,
        ax: Any = None,
        kind: str = "bars",
        hist: bool = True,
        ncols: int | None = None,
        **kwargs: Any,
    ) -> "ReliabilityDisplay":
        """Compute the table with :func:`calframe.reliability` and plot it.

        ``prob`` ... ``nulls`` are :func:`calframe.reliability`'s parameters
        (``lens`` default None: class:1 for one probability column, top1 for
        class probabilities; the axes are labelled by the lens used);
        ``name``, ``ax``, ``kind``, ``hist``, ``ncols`` and ``**kwargs`` are
        :meth:`plot`'s.

        Examples
        --------
        >>> import calframe, calframe.plot
        >>> df = calframe.datasets.grouped_miscalibration(n=2000, seed=0)
        >>> disp = calframe.plot.ReliabilityDisplay.from_frame(df.to_pandas(), kind="points")
        >>> disp.ax_.get_xlabel(), disp.hist_ax_.get_xlabel()
        ('', 'Mean predicted probability of class 1')
        """
        from . import api
        from .lenses import lens_used

        table = api.reliability(frame, prob, label, bins=bins, binning=binning, closed=closed, lens=lens,  # type: ignore[arg-type]
                                by=by, weights=weights, nulls=nulls)  # type: ignore[arg-type]
        lens = lens_used(frame, prob, lens, func="reliability")
        disp = cls(table, by=_by_list(by), lens=lens, name=name)
        return disp.plot(ax=ax, kind=kind, hist=hist, ncols=ncols, **kwargs)

    @classmethod
    @checked_keywords
    def from_predictions(
        cls,
        y_true: Any,
        y_prob: Any,
        *,
        sample_weight: Any = None,
        bins: "int | Sequence[float]" = 15,
        binning: str = "uniform",
        closed: str = "left",
        lens: str | None = None,
        name: str | None = None,
        ax: Any = None,
        kind: str = "bars",
        hist: bool = True,
        **kwargs: Any,
    ) -> "ReliabilityDisplay":
        """The diagram from arrays, as scikit-learn's ``CalibrationDisplay.from_predictions``.

        ``y_prob`` is 1-d (the probability of class 1; ``y_true`` holds 0/1)
        or (n, K) class probabilities as ``predict_proba`` returns them
        (``y_true`` holds class indices); see :func:`calframe.sklearn.to_frame`.
        The other parameters are :meth:`from_frame`'s; the default lens is
        ``class:1`` for 1-d ``y_prob`` and ``top1`` for class probabilities.

        Examples
        --------
        >>> import numpy as np
        >>> from calframe.plot import ReliabilityDisplay
        >>> rng = np.random.default_rng(0)
        >>> p = rng.uniform(size=1000); y = (rng.uniform(size=1000) < p).astype(int)
        >>> disp = ReliabilityDisplay.from_predictions(y, p, bins=10, name="model")
        >>> disp.ax_.get_title().startswith("model (ECE = ")
        True
        """
        from .sklearn import to_frame

        frame = to_frame(y_true, y_prob, sample_weight, func="ReliabilityDisplay.from_predictions")
        return cls.from_frame(frame, "y_prob", "y_true", bins=bins, binning=binning, closed=closed, lens=lens,
                              weights=None if sample_weight is None else "sample_weight", name=name, ax=ax,
                              kind=kind, hist=hist, **kwargs)

    @classmethod
    def from_estimator(cls, estimator: Any, X: Any, y: Any, *, sample_weight: Any = None,
                       name: str | None = None, **options: Any) -> "ReliabilityDisplay":
        """The diagram of a fitted classifier on ``(X, y)``, as scikit-learn's ``CalibrationDisplay.from_estimator``.

        Calls ``estimator.predict_proba(X)``; ``y`` is mapped to the indices
        of ``estimator.classes_``. With two classes the diagram shows the
        probability of ``classes_[1]`` (lens ``class:1``), otherwise the top
        label (``top1``) unless ``lens`` says otherwise. ``name`` defaults to
        the estimator's class name; ``options`` are :meth:`from_predictions`'s.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.linear_model import LogisticRegression
        >>> from calframe.plot import ReliabilityDisplay
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(500, 2)); y = np.where(X[:, 0] + rng.normal(size=500) > 0, "yes", "no")
        >>> disp = ReliabilityDisplay.from_estimator(LogisticRegression().fit(X, y), X, y, bins=10)
        >>> disp.ax_.get_title().startswith("LogisticRegression (ECE = ")
        True
        """
        from .sklearn import predictions

        labels, proba = predictions(estimator, X, y, "ReliabilityDisplay.from_estimator")
        return cls.from_predictions(labels, proba, sample_weight=sample_weight,
                                    name=type(estimator).__name__ if name is None else name, **options)


# --------------------------------------------------------------------------- smooth reliability diagram


class SmoothReliabilityDisplay:
    """relplot's smooth reliability diagram: the kernel-smoothed outcome against the confidence, no bins.

    The curve is relplot's kernel smoother at the smooth ECE's bandwidth sigma (reflected Gaussian kernel,
    :func:`calframe.smooth.curve`: equal to relplot's ``KernelSmoother``), the band a pointwise percentile
    bootstrap of it over resampled rows (relplot's ``prepare_rel_diagram`` bags 200 resamples and draws their
    95% band; its main line is their mean, this one the smoother on the rows themselves), the density of the
    confidence below.

    Parameters
    ----------
    t, mu, density : array-like
        The evaluation points, the smoothed curve and the density there.
    lower, upper : array-like, optional
        The band.
    smece, sigma : float, optional
        The smooth ECE and its bandwidth (the title).
    lens : str, optional
        The lens used (axis labels).
    name : str, optional
        Title prefix.

    Examples
    --------
    >>> import calframe, calframe.plot
    >>> df = calframe.datasets.grouped_miscalibration(n=3000, seed=0)
    >>> disp = calframe.plot.SmoothReliabilityDisplay.from_frame(df, n_boot=20)
    >>> disp.ax_.get_ylabel(), round(disp.smece, 6) == round(calframe.smece(df), 6)
    ('Frequency of class 1', True)
    """

    def __init__(self, t: Any, mu: Any, density: Any, lower: Any = None, upper: Any = None, *,
                 smece: float | None = None, sigma: float | None = None, lens: str | None = None,
                 name: str | None = None):
        self.t, self.mu, self.density = (np.asarray(v, dtype=np.float64) for v in (t, mu, density))
        self.lower = None if lower is None else np.asarray(lower, dtype=np.float64)
        self.upper = None if upper is None else np.asarray(upper, dtype=np.float64)
        if not (self.t.shape == self.mu.shape == self.density.shape) or self.t.size < 2:
            raise ParameterError("SmoothReliabilityDisplay: t, mu and density must be of one length (at least 2).")
        self.smece, self.sigma, self.lens, self.name = smece, sigma, lens, name

    def plot(self, ax: Any = None, *, band: bool = True, density: bool = True,
             **kwargs: Any) -> "SmoothReliabilityDisplay":
        """Draw the curve (``**kwargs`` go to ``Axes.plot``), its band and the density. Returns the display."""
        _pyplot()  # the clear error without matplotlib
        fig, mains, lows = _axes(ax, 1, "SmoothReliabilityDisplay", None, (5.0, 5.0), below=density)
        main = mains[0]
        main.plot([0, 1], [0, 1], linestyle="--", color=REF_COLOR, linewidth=1, label="Perfect calibration")
        self.band_ = None
        if band and self.lower is not None:
            self.band_ = main.fill_between(self.t, self.lower, self.upper, color=HIST_COLOR, alpha=0.35, lw=0,
                                           label="Bootstrap band")
        self.line_ = main.plot(self.t, self.mu, **{"color": GAP_COLOR, "linewidth": 2, "label": "Smoothed",
                                                   **kwargs})[0]
        xlabel, ylabel = lens_labels(self.lens)
        xlabel = xlabel.replace("Mean predicted", "Predicted").replace("Mean confidence", "Confidence")
        main.set_xlim(0, 1)
        main.set_ylim(0, 1)
        main.set_ylabel(ylabel)
        main.legend(loc="upper left", fontsize=8, frameon=False)
        head = "Smooth reliability diagram"
        if self.smece is not None:
            head += f" (smECE = {_fmt(self.smece)}" + ("" if self.sigma is None else f", σ = {self.sigma:.4g}") + ")"
        main.set_title(head if self.name is None else f"{self.name}: {head}", fontsize=11)
        self.density_ax_ = None
        if density:
            low = lows[0]
            low.fill_between(self.t, 0, self.density, color=HIST_COLOR, alpha=0.6, lw=0)
            low.set_xlabel(xlabel)
            low.set_ylabel("Density")
            self.density_ax_ = low
        else:
            main.set_xlabel(xlabel)
        self.ax_ = main
        self.figure_ = fig
        return self

    @classmethod
    def from_frame(cls, frame: Frame, prob: str | Sequence[str] | None = None, label: str | None = None, *,
                   lens: str | None = None, weights: str | None = None, nulls: str = "raise",
                   sigma: float | None = None, band: bool = True, n_boot: int = 100, level: float = 0.95,
                   seed: int | None = 0, n_points: int = 200, name: str | None = None, ax: Any = None,
                   density: bool = True, **kwargs: Any) -> "SmoothReliabilityDisplay":
        """Compute the smooth ECE (:func:`calframe.smece`, its bandwidth unless ``sigma`` is given), the curve at
        ``n_points`` points and, with ``band``, its ``level`` band over ``n_boot`` resamples (``seed``), then plot.
        A LazyFrame is collected; one panel (no ``by``)."""
        disp = cls.compute(frame, prob, label, lens=lens, weights=weights, nulls=nulls, sigma=sigma, band=band,
                           n_boot=n_boot, level=level, seed=seed, n_points=n_points, name=name)
        return disp.plot(ax=ax, band=band, density=density, **kwargs)

    @classmethod
    def compute(cls, frame: Frame, prob: str | Sequence[str] | None = None, label: str | None = None, *,
                lens: str | None = None, weights: str | None = None, nulls: str = "raise",
                sigma: float | None = None, band: bool = True, n_boot: int = 100, level: float = 0.95,
                seed: int | None = 0, n_points: int = 200, name: str | None = None) -> "SmoothReliabilityDisplay":
        """:meth:`from_frame` without drawing (no matplotlib needed): the display holds the smooth ECE, its
        bandwidth, the curve and, with ``band``, its band; ``.plot()`` draws it.

        >>> import calframe, calframe.plot
        >>> df = calframe.datasets.grouped_miscalibration(n=3000, seed=0)
        >>> disp = calframe.plot.SmoothReliabilityDisplay.compute(df, band=False)
        >>> disp.lower is None, disp.t.size, round(disp.smece, 6) == round(calframe.smece(df), 6)
        (True, 200, True)
        """
        from . import lenses as L
        from . import request as R
        from . import smooth as S
        from ._columns import resolve

        func = "SmoothReliabilityDisplay"
        req = R.smece(prob, label, lens=lens, weights=weights, nulls=nulls, sigma=sigma, n_boot=n_boot,
                      seed=seed, ci=level)
        scored = resolve(frame, func=func, prob=prob, label=label, weights=weights, nulls=nulls)
        conf, acc = L.scalar(scored, req.lens, func)
        w, scale = scored.weights, (1.0 if scored.weights is None else float(scored.weight_scale))
        value, width = S.Rows(conf, acc, w, None, 1, scale).smece(req.options.sigma)
        t, mu, dens = S.curve(conf, acc, w, float(width[0]), n_points, scale)
        lo = hi = None
        if band:
            lo, hi = S.bootstrap_band(conf, acc, w, float(width[0]), n_boot, level, seed, n_points, scale)
        return cls(t, mu, dens, lo, hi, smece=float(value[0]), sigma=float(width[0]),
                   lens=L.lens_used(frame, prob, lens, func=func), name=name)


# --------------------------------------------------------------------------- variable curves


class VariableCurveDisplay:
    """Variable calibration curves (Kelly & Smyth Fig. 1b): accuracy and confidence over a variable.

    Two LOESS curves with shaded pointwise bands -- accuracy in blue,
    confidence in orange -- over the variable's grid, a dotted vertical line
    at v* (where |accuracy - confidence| is largest) with the gap there drawn
    in red, and VCE(v*) in the title. With group columns, one panel per group
    in a grid with shared axes: overlaying four bands per group would hide the
    very gaps the figure is for.

    Parameters
    ----------
    curve : calframe.VCECurve, or polars/pandas DataFrame
        The result of :func:`calframe.vce_curve`, or its ``.curve`` frame
        (``v``, ``acc``, ``acc_lo``, ``acc_hi``, ``conf``, ``conf_lo``,
        ``conf_hi``, ``gap`` and group columns).
    summary : frame, optional
        Its ``.summary`` frame (``n``, ``v_star``, ``vce`` and group columns);
        required when ``curve`` is a frame.
    variable : str, optional
        The variable's name, for the x label (taken from a VCECurve).
    by : str or list of str, optional
        Group columns (default: inferred from the frames' extra columns).
    level : float, optional
        Confidence level of the bands, for the legend.
    lens : str, optional
        The lens of the curves, for the labels ("Accuracy" / "Confidence"
        under ``top1``, "Frequency" / "Probability of class c" under
        ``class:c``); taken from a VCECurve (the lens it used).
    name : str, optional
        Title prefix (e.g. the model's name).

    Attributes
    ----------
    ax_ : matplotlib Axes, or ndarray of Axes (one per group)
    figure_ : matplotlib Figure
    acc_line_, conf_line_ : Line2D, or ndarray of them (one per group)
    groups_ : list of str
        Panel labels (empty without groups).
    vce_ : float or dict
        VCE(v*) overall, or per group label.
    v_star_ : float or dict
        v* overall, or per group label.

    Examples
    --------
    >>> import calframe
    >>> from calframe.plot import VariableCurveDisplay
    >>> df = calframe.datasets.grouped_miscalibration(n=2000, seed=0)
    >>> res = calframe.vce_curve(df, "age", n_points=50)
    >>> disp = VariableCurveDisplay(res).plot()
    >>> f"VCE = {res.vce:.4f}" in disp.ax_.get_title()
    True
    """

    def __init__(self, curve: "VCECurve | Any", summary: Any = None, *, variable: str | None = None,
                 by: str | Sequence[str] | None = None, level: float | None = None, lens: str | None = None,
                 name: str | None = None):
        if hasattr(curve, "curve") and hasattr(curve, "summary"):
            summary = curve.summary if summary is None else summary
            variable = getattr(curve, "variable", None) if variable is None else variable
            lens = getattr(curve, "lens", None) if lens is None else lens
            if by is None and getattr(curve, "_by", None) is not None:
                by = list(curve._by)
            curve = curve.curve
        if summary is None:
            raise ParameterError("VariableCurveDisplay: pass the VCECurve returned by calframe.vce_curve(), "
                                 "or both its .curve and .summary frames.")
        self.curve = _polars(curve, "VariableCurveDisplay")
        self.summary = _polars(summary, "VariableCurveDisplay")
        _check_columns(self.curve, _CURVE_COLUMNS, "VariableCurveDisplay", "calframe.vce_curve().curve")
        _check_columns(self.summary, _SUMMARY_COLUMNS, "VariableCurveDisplay", "calframe.vce_curve().summary")
        self.by = _group_columns(self.curve, by, _CURVE_COLUMNS)
        self.variable = variable
        self.level = level
        self.lens = lens
        self.name = name
        rows = _split(self.summary, self.by)
        vce = {label: float(s["vce"][0]) for label, s in rows}
        v_star = {label: float(s["v_star"][0]) for label, s in rows}
        self.vce_: float | dict = vce if self.by else vce[None]
        self.v_star_: float | dict = v_star if self.by else v_star[None]
        self.groups_ = [label for label, _ in rows] if self.by else []

    def plot(self, ax: Any = None, *, bands: bool = True, mark_v_star: bool = True, ncols: int | None = None,
             **kwargs: Any) -> "VariableCurveDisplay":
        """Draw the curves (``ax`` and ``ncols`` as :meth:`ReliabilityDisplay.plot`).

        Parameters
        ----------
        bands : bool
            Shade the pointwise confidence bands.
        mark_v_star : bool
            Mark v* and the gap there.
        **kwargs
            Passed to ``Axes.plot`` for both curves (e.g. ``linewidth``).

        Returns
        -------
        VariableCurveDisplay
        """
        grouped = bool(self.by)
        parts = _split(self.curve, self.by)
        fig, mains, _ = _axes(ax, len(parts), "VariableCurveDisplay.plot", ncols,
                              (5.2, 3.8) if not grouped else (4.4, 3.5))
        band = "band" if self.level is None else f"{self.level:.0%} band"
        acc_name, conf_name, ylabel = curve_labels(self.lens)
        acc_lines, conf_lines = [], []
        nc = _n_cols(len(parts), ncols)
        for i, (label, part) in enumerate(parts):
            a = mains[i]
            v = part["v"].to_numpy()
            acc, conf = part["acc"].to_numpy(), part["conf"].to_numpy()
            if bands:
                a.fill_between(v, part["acc_lo"].to_numpy(), part["acc_hi"].to_numpy(), color=ACC_COLOR, alpha=0.2,
                               linewidth=0, label=f"{acc_name} {band}")
                a.fill_between(v, part["conf_lo"].to_numpy(), part["conf_hi"].to_numpy(), color=CONF_COLOR,
                               alpha=0.2, linewidth=0, label=f"{conf_name} {band}")
            acc_lines.append(a.plot(v, acc, **{"color": ACC_COLOR, "linewidth": 2, "label": acc_name, **kwargs})[0])
            conf_lines.append(a.plot(v, conf, **{"color": CONF_COLOR, "linewidth": 2, "linestyle": "--",
                                                 "label": conf_name, **kwargs})[0])
            vce = self.vce_[label] if grouped else self.vce_  # type: ignore[index]
            vs = self.v_star_[label] if grouped else self.v_star_  # type: ignore[index]
            if mark_v_star and math.isfinite(vs):
                a.axvline(vs, color=REF_COLOR, linestyle=":", linewidth=1, label="v*" if grouped else f"v* = {vs:.4g}")
                j = int(np.argmin(np.abs(v - vs)))
                a.plot([vs, vs], [acc[j], conf[j]], color=GAP_COLOR, linewidth=2.5, solid_capstyle="butt",
                       label="VCE(v*)")
            a.set_xlabel(self.variable or "variable")
            if ax is not None or i % nc == 0:
                a.set_ylabel(ylabel)
            a.grid(True, color="0.9", linewidth=0.6)
            a.set_axisbelow(True)
            head = f"VCE = {_fmt(vce)} at v* = {vs:.4g}"
            if label is not None:
                title = f"{label}: {head}"
            else:
                what = f"Calibration along {self.variable}" if self.variable else "Variable calibration"
                title = f"{what}: {head}" if self.name is None else f"{self.name}: {head}"
            a.set_title(title, fontsize=10 if grouped else 11)
            if i == 0 and ax is not None:
                a.legend(loc="best", fontsize=8, frameon=False)
        if ax is None:  # below the panels, where it hides no curve
            handles, labels = mains[0].get_legend_handles_labels()
            fig.legend(handles, labels, loc="outside lower center", ncols=3, fontsize=8, frameon=False)
        return _finish(self, fig, ax, grouped, f"Calibration along {self.variable or 'the variable'} by "
                       + ", ".join(self.by), mains, acc_line_=acc_lines, conf_line_=conf_lines)

    @classmethod
    def from_frame(
        cls,
        frame: Frame,
        variable: str,
        prob: str | Sequence[str] | None = None,
        label: str | None = None,
        *,
        by: str | Sequence[str] | None = None,
        level: float = 0.95,
        name: str | None = None,
        ax: Any = None,
        bands: bool = True,
        ncols: int | None = None,
        plot_kws: dict | None = None,
        **kwargs: Any,
    ) -> "VariableCurveDisplay":
        """Compute the curves with :func:`calframe.vce_curve` and plot them.

        ``**kwargs`` go to :func:`calframe.vce_curve` (``lens``, ``span``,
        ``n_points``, ``quantiles``, ``nulls``, ...); ``plot_kws`` to
        ``Axes.plot`` for both curves.

        Examples
        --------
        >>> import calframe, calframe.plot
        >>> df = calframe.datasets.grouped_miscalibration(n=2000, seed=0)
        >>> disp = calframe.plot.VariableCurveDisplay.from_frame(df, "age", by="region", n_points=40)
        >>> len(disp.ax_), sorted(disp.vce_) == sorted(disp.groups_)
        (4, True)
        """
        from . import api

        res = api.vce_curve(frame, variable, prob, label, by=by, level=level, **kwargs)
        disp = cls(res, level=level, name=name)
        return disp.plot(ax=ax, bands=bands, ncols=ncols, **(plot_kws or {}))


# --------------------------------------------------------------------------- VECE ranking


class VeceRankDisplay:
    """VECE per variable as sorted horizontal bars, VMCE as markers (Kelly & Smyth's Table 1 as a chart).

    The most miscalibrated variable is on top; bars are colored by the
    variable's kind (numeric in blue, categorical in green) and labelled with
    their value; a black diamond marks each variable's VMCE (the largest bin
    gap). With group columns, one panel per group (each sorted on its own)
    with a shared x axis.

    Parameters
    ----------
    table : polars.DataFrame or pandas.DataFrame
        The output of :func:`calframe.vece_rank` (``variable``, ``kind``,
        ``n``, ``vece``, ``vmce`` and group columns).
    by : str or list of str, optional
        Group columns (default: inferred).
    name : str, optional
        Title prefix.

    Attributes
    ----------
    ax_ : matplotlib Axes, or ndarray of Axes (one per group)
    figure_ : matplotlib Figure
    bars_ : BarContainer, or ndarray of them (one per group)
    markers_ : Line2D (VMCE), or ndarray of them
    groups_ : list of str

    Examples
    --------
    >>> import calframe
    >>> from calframe.plot import VeceRankDisplay
    >>> df = calframe.datasets.grouped_miscalibration(n=2000, seed=0)
    >>> disp = VeceRankDisplay(calframe.vece_rank(df, lens="top1")).plot()
    >>> [t.get_text() for t in disp.ax_.get_yticklabels()]
    ['region', 'age', 'device']
    """

    def __init__(self, table: Any, *, by: str | Sequence[str] | None = None, name: str | None = None):
        self.table = _polars(table, "VeceRankDisplay")
        _check_columns(self.table, _RANK_COLUMNS, "VeceRankDisplay", "calframe.vece_rank()")
        if "leak" in self.table.columns:  # variables that leak the label are listed by vece_rank, not ranked
            self.table = self.table.filter(pl.col("leak").is_null())
        self.by = _group_columns(self.table, by, _RANK_COLUMNS + ("vce", "v_star", "leak"))
        self.name = name
        self.groups_ = [label for label, _ in _split(self.table, self.by)] if self.by else []

    def plot(self, ax: Any = None, *, values: bool = True, vmce: bool = True, ncols: int | None = None,
             **kwargs: Any) -> "VeceRankDisplay":
        """Draw the chart.

        Parameters
        ----------
        ax : matplotlib Axes or array of Axes, optional
            As :meth:`ReliabilityDisplay.plot`.
        values : bool
            Print each VECE at the end of its bar.
        vmce : bool
            Mark VMCE.
        ncols : int, optional
            Columns of the panel grid with groups (default: stacked in one column up to 4 groups, else 2).
        **kwargs
            Passed to ``Axes.barh``.

        Returns
        -------
        VeceRankDisplay
        """
        grouped = bool(self.by)
        parts = _split(self.table, self.by)
        n_vars = max(p.height for _, p in parts)
        nc = ncols if ncols is not None else (1 if len(parts) <= 4 else 2)  # stacked: x values line up
        fig, mains, _ = _axes(ax, len(parts), "VeceRankDisplay.plot", nc, (6.0, 0.42 * n_vars + 1.3), sharey=False)
        bars, markers = [], []
        xmax = float(self.table.select(pl.max_horizontal(pl.col("vece").max(), pl.col("vmce").max())).item() or 0)
        for i, (label, part) in enumerate(parts):
            a = mains[i]
            part = part.sort("vece", descending=True, nulls_last=True, maintain_order=True)
            y = np.arange(part.height)
            kinds = part["kind"].to_list()
            colors = [KIND_COLORS.get(k, HIST_COLOR) for k in kinds]
            b = a.barh(y, part["vece"].to_numpy(), **{"color": colors, "height": 0.6, "zorder": 2, **kwargs})
            bars.append(b)
            xlim = xmax * 1.2 if xmax > 0 else 1.0
            if values:  # after the bar, or after the VMCE marker when that sits just past the bar's end
                for yi, ve, vm in zip(y, part["vece"].to_list(), part["vmce"].to_list()):
                    if ve is None or not math.isfinite(ve):
                        continue
                    close = vmce and vm is not None and math.isfinite(vm) and 0 <= vm - ve < 0.12 * xlim
                    a.annotate(_fmt(ve), (max(ve, vm) if close else ve, yi), xytext=(7 if close else 3, 0),
                               textcoords="offset points", va="center", fontsize=8)
            if vmce:
                markers.append(a.plot(part["vmce"].to_numpy(), y, linestyle="none", marker="D", markersize=6,
                                      color="black", label="VMCE", zorder=3)[0])
            a.set_yticks(y, part["variable"].to_list())
            a.set_ylim(part.height - 0.5, -0.5)  # largest on top
            a.set_xlim(0, xlim)
            if ax is not None or i >= len(parts) - mains[0].get_gridspec().ncols:
                a.set_xlabel("Calibration error (probability units)")
            else:  # stacked panels share x: label the bottom row only
                a.tick_params(labelbottom=False)
            a.grid(True, axis="x", color="0.9", linewidth=0.6)
            a.set_axisbelow(True)
            title = "VECE by variable" if self.name is None else f"{self.name}: VECE by variable"
            a.set_title(title if label is None else label, fontsize=10 if grouped else 11)
            if i == 0:
                from matplotlib.patches import Patch

                handles = [Patch(color=KIND_COLORS[k], label=f"VECE ({k})") for k in KIND_COLORS
                           if k in set(self.table["kind"].to_list())]
                if vmce:
                    handles.append(markers[0])
                if ax is None:
                    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize=8,
                               frameon=False)
                else:
                    a.legend(handles=handles, loc="lower right", fontsize=8, frameon=False)
        return _finish(self, fig, ax, grouped, "VECE by variable and " + ", ".join(self.by), mains, bars_=bars,
                       markers_=markers if vmce else None)

    @classmethod
    def from_frame(
        cls,
        frame: Frame,
        variables: Sequence[str] | None = None,
        prob: str | Sequence[str] | None = None,
        label: str | None = None,
        *,
        by: str | Sequence[str] | None = None,
        name: str | None = None,
        ax: Any = None,
        ncols: int | None = None,
        plot_kws: dict | None = None,
        **kwargs: Any,
    ) -> "VeceRankDisplay":
        """Rank variables with :func:`calframe.vece_rank` and plot the ranking.

        ``**kwargs`` go to :func:`calframe.vece_rank` (``bins``, ``binning``,
        ``lens``, ``nulls``, ``exclude``); ``plot_kws`` to :meth:`plot`.

        Examples
        --------
        >>> import calframe, calframe.plot
        >>> df = calframe.datasets.grouped_miscalibration(n=2000, seed=0)
        >>> disp = calframe.plot.VeceRankDisplay.from_frame(df, ["age", "device"], by="region")
        >>> len(disp.ax_)
        4
        """
        from . import api

        table = api.vece_rank(frame, variables, prob, label, by=by, **kwargs)
        disp = cls(table, by=_by_list(by), name=name)
        return disp.plot(ax=ax, ncols=ncols, **(plot_kws or {}))


# --------------------------------------------------------------------------- MLCE


class MLCECurveDisplay:
    """Maximum local calibration error against the kernel bandwidth gamma.

    MLCE on a log gamma axis, one line per group, with the MCE -- its limit
    as gamma -> inf, where the kernel is flat within each bin -- as a dashed
    horizontal line in the same color. As gamma -> 0 the kernel reaches only
    the nearest neighbours and MLCE grows toward the largest single-row error.

    Parameters
    ----------
    gamma : array-like
        Kernel bandwidths (> 0).
    mlce : array-like
        MLCE at each gamma.
    mce : float or array-like, optional
        The MCE reference (one value, or one per row, constant within a group).
    group : array-like, optional
        A group label per row: one line per group.
    name : str, optional
        Title prefix.

    Attributes
    ----------
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure
    lines_ : dict
        The MLCE Line2D of each group (key None without groups).
    mce_lines_ : dict
        The MCE reference Line2D of each group.

    Examples
    --------
    >>> from calframe.plot import MLCECurveDisplay
    >>> disp = MLCECurveDisplay([0.05, 0.1, 0.2, 0.4, 1.0], [0.31, 0.24, 0.19, 0.16, 0.15], mce=0.14).plot()
    >>> disp.ax_.get_xscale(), disp.ax_.get_ylabel()
    ('log', 'MLCE')
    """

    def __init__(self, gamma: Any, mlce: Any, mce: Any = None, *, group: Any = None, name: str | None = None):
        self.gamma = np.asarray(gamma, dtype=np.float64).ravel()
        self.mlce = np.asarray(mlce, dtype=np.float64).ravel()
        if self.gamma.shape != self.mlce.shape or self.gamma.size == 0:
            raise ParameterError(f"MLCECurveDisplay: gamma and mlce must be non-empty and of one length; got "
                                 f"{self.gamma.size} and {self.mlce.size}.")
        if not np.all(np.isfinite(self.gamma) & (self.gamma > 0)):
            raise ParameterError("MLCECurveDisplay: gamma must be finite and > 0 (it is drawn on a log axis).")
        if mce is None:
            self.mce = None
        else:
            m = np.asarray(mce, dtype=np.float64).ravel()
            if m.size == 1:
                m = np.full(self.gamma.size, m[0])
            if m.size != self.gamma.size:
                raise ParameterError("MLCECurveDisplay: mce must be one value or one per gamma.")
            self.mce = m
        self.group = None if group is None else np.asarray(group, dtype=object).ravel()
        if self.group is not None and self.group.size != self.gamma.size:
            raise ParameterError("MLCECurveDisplay: group must have one label per gamma.")
        self.name = name

    def _series(self) -> list[tuple[Any, np.ndarray]]:
        if self.group is None:
            return [(None, np.arange(self.gamma.size))]
        seen: dict[Any, None] = dict.fromkeys(self.group.tolist())
        return [(g, np.flatnonzero(self.group == g)) for g in seen]

    def plot(self, ax: Any = None, *, ref_line: bool = True, **kwargs: Any) -> "MLCECurveDisplay":
        """Draw MLCE against gamma.

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Default: a new figure.
        ref_line : bool
            Draw MCE as the gamma -> inf reference.
        **kwargs
            Passed to ``Axes.plot`` for the MLCE lines.

        Returns
        -------
        MLCECurveDisplay
        """
        plt = _pyplot()
        if ax is None:
            fig, ax = plt.subplots(figsize=(6.0, 4.0), layout="constrained")
        else:
            fig = ax.figure
        series = self._series()
        lines, refs = {}, {}
        for k, (g, idx) in enumerate(series):
            order = idx[np.argsort(self.gamma[idx], kind="stable")]
            color = ACC_COLOR if len(series) == 1 else f"C{k % 10}"
            label = "MLCE" if g is None else f"{g}: MLCE"
            lines[g] = ax.plot(self.gamma[order], self.mlce[order],
                               **{"color": color, "marker": "o", "markersize": 4, "linewidth": 2, "label": label,
                                  **kwargs})[0]
            if ref_line and self.mce is not None:
                m = float(np.nanmean(self.mce[idx]))
                text = f"MCE (γ → ∞) = {_fmt(m)}" if g is None else f"{g}: MCE = {_fmt(m)}"
                refs[g] = ax.axhline(m, color=GAP_COLOR if len(series) == 1 else color, linestyle="--",
                                     linewidth=1.2, label=text)
        ax.set_xscale("log")
        ax.set_xlabel("γ (kernel bandwidth, log scale)")
        ax.set_ylabel("MLCE")
        top = np.nanmax(np.concatenate([self.mlce, self.mce if self.mce is not None else []]))
        ax.set_ylim(0, top * 1.1 if np.isfinite(top) and top > 0 else 1)
        ax.grid(True, which="both", color="0.9", linewidth=0.6)
        ax.set_axisbelow(True)
        head = "Maximum local calibration error"
        if len(series) == 1 and self.mce is not None:
            head += f" (MCE = {_fmt(float(np.nanmean(self.mce)))})"
        ax.set_title(head if self.name is None else f"{self.name}: {head}", fontsize=11)
        ax.legend(loc="best", fontsize=8, frameon=False)
        self.ax_ = ax
        self.figure_ = fig
        self.lines_ = lines
        self.mce_lines_ = refs
        return self

    @classmethod
    def from_curve(cls, curve: Any, *, name: str | None = None) -> "MLCECurveDisplay":
        """From a frame with columns ``gamma``, ``mlce``, ``mce`` (and group columns: one line per group).

        This is the frame ``calframe.mlce_curve`` returns; nothing is plotted yet.

        Examples
        --------
        >>> import polars as pl
        >>> from calframe.plot import MLCECurveDisplay
        >>> df = pl.DataFrame({"gamma": [0.1, 1.0, 10.0], "mlce": [0.3, 0.2, 0.15], "mce": [0.14] * 3})
        >>> MLCECurveDisplay.from_curve(df).mce.tolist()
        [0.14, 0.14, 0.14]
        """
        df = _polars(curve, "MLCECurveDisplay")
        _check_columns(df, ("gamma", "mlce"), "MLCECurveDisplay", "calframe.mlce_curve()")
        keys = [c for c in df.columns if c not in ("gamma", "mlce", "mce", "n", "mean_lce")]
        group = None
        if keys:
            group = [", ".join(f"{c} = {'null' if r[c] is None else r[c]}" for c in keys)
                     for r in df.select(keys).iter_rows(named=True)]
            if len(keys) == 1:
                group = ["null" if v is None else str(v) for v in df[keys[0]].to_list()]
        return cls(df["gamma"].to_numpy(), df["mlce"].to_numpy(), df["mce"].to_numpy() if "mce" in df.columns else None,
                   group=group, name=name)

    @classmethod
    def from_frame(cls, frame: Frame, *args: Any, name: str | None = None, ax: Any = None,
                   plot_kws: dict | None = None, **kwargs: Any) -> "MLCECurveDisplay":
        """Compute MLCE over gammas with ``calframe.mlce_curve`` and plot it.

        ``*args`` and ``**kwargs`` go to ``calframe.mlce_curve``. Until that
        function exists this raises NotImplementedError; build the display
        from arrays instead (``MLCECurveDisplay(gammas, mlce, mce).plot()``).
        """
        import calframe

        mlce_curve = getattr(calframe, "mlce_curve", None)
        if mlce_curve is None:
            from . import api

            mlce_curve = getattr(api, "mlce_curve", None)
        if mlce_curve is None:
            raise NotImplementedError(
                "MLCECurveDisplay.from_frame needs calframe.mlce_curve, which this version of calframe does not "
                "provide yet. Build the display from arrays: MLCECurveDisplay(gammas, mlce, mce).plot()."
            )
        return cls.from_curve(mlce_curve(frame, *args, **kwargs), name=name).plot(ax=ax, **(plot_kws or {}))


# --------------------------------------------------------------------------- drift over time


#: figures measured under a lens (the others read every class probability)
_LENSED_FIGURES = ("ece", "mce", "rmsce", "ce")


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
        self.table = _polars(table, "DriftDisplay")
        self.time_col = self.table.columns[0] if time_col is None else time_col
        _check_columns(self.table, (self.time_col, figure), "DriftDisplay", "calframe.monitor()")
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
        fig, mains, lows = _axes(ax, 1, "DriftDisplay.plot", None, (7.5, 4.2), counts and "n" in t.columns)
        main, low = mains[0], (lows[0] if lows else None)
        ends = f"{self.time_col}_end"
        spans = (t[ends] - t[self.time_col]) if ends in t.columns else None
        x = (t[self.time_col] + spans / 2 if spans is not None else t[self.time_col]).to_list()  # mid-window
        y = t[self.figure].cast(pl.Float64).fill_null(np.nan).to_numpy()
        label = self.figure.upper() if self.figure in _LENSED_FIGURES else self.figure.replace("_", " ")
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
                                               label=f"baseline = {_fmt(self.baseline_)}")
        main.set_ylabel(label)
        main.set_ylim(bottom=0)
        main.grid(True, color="0.9", linewidth=0.6)
        main.set_axisbelow(True)
        head = f"{label} per window"
        if self.lens is not None and self.figure in _LENSED_FIGURES:
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
        from .lenses import lens_used
        from .monitoring import monitor

        options = {**kwargs, **({"lens": lens} if figure in _LENSED_FIGURES else {})}
        table = monitor(frame, time_col, every=every, figures=(figure,), prob=prob, **options)
        used = lens_used(frame, prob, lens, func="monitor") if figure in _LENSED_FIGURES else None
        return cls(table, figure=figure, time_col=time_col, lens=used, name=name).plot(ax=ax, **(plot_kws or {}))


def _lens_phrase(x: str, y: str) -> str:
    """'probability of class 1 against its frequency' from a reliability diagram's axis labels."""
    x = x.replace("Mean predicted ", "").replace("Mean ", "")
    y = "its frequency" if y.startswith("Frequency") else y.lower()
    return f"{x[0].lower() + x[1:]} against {y}"



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
