"""Reliability diagrams: binned (:class:`ReliabilityDisplay`) and smooth (:class:`SmoothReliabilityDisplay`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._errors import ParameterError
from ..request import checked_keywords
from ._common import (
    ACC_COLOR, Frame, GAP_COLOR, HIST_COLOR, REF_COLOR, lens_labels, RELIABILITY_COLUMNS, grid_axes, by_list,
    check_columns, finish, fmt, group_columns, n_cols, polars_table, pyplot_module, split_names
)


# --------------------------------------------------------------------------- reliability


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
        self.table = polars_table(table, "ReliabilityDisplay")
        check_columns(self.table, RELIABILITY_COLUMNS, "ReliabilityDisplay", "calframe.reliability()")
        self.by = group_columns(self.table, by, RELIABILITY_COLUMNS)
        self.lens = lens
        self.name = name
        parts = split_names(self.table, self.by)
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
        parts = split_names(self.table, self.by)
        grouped = bool(self.by)
        fig, mains, lows = grid_axes(ax, len(parts), "ReliabilityDisplay.plot", ncols, (3.8, 4.6), hist)
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
            main.set(xlim=(0, 1), ylim=(0, 1), ylabel=ylabel if i % n_cols(len(parts), ncols) == 0 or ax is not None
                     else "")
            main.grid(True, color="0.9", linewidth=0.6, zorder=0)
            main.set_axisbelow(True)
            title = f"ECE = {fmt(self._ece_of(label))}"
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
                low.set_ylabel("Count" if (ax is not None or i % n_cols(len(parts), ncols) == 0) else "")
                low.grid(True, axis="y", color="0.9", linewidth=0.6)
                low.set_axisbelow(True)
            else:
                main.set_xlabel(xlabel)
        return finish(self, fig, ax, grouped, "Reliability diagrams by " + ", ".join(self.by), mains,
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
        from .. import api
        from ..lenses import lens_used

        table = api.reliability(frame, prob, label, bins=bins, binning=binning, closed=closed, lens=lens,  # type: ignore[arg-type]
                                by=by, weights=weights, nulls=nulls)  # type: ignore[arg-type]
        lens = lens_used(frame, prob, lens, func="reliability")
        disp = cls(table, by=by_list(by), lens=lens, name=name)
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
        from ..sklearn import to_frame

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
        from ..sklearn import predictions

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
        pyplot_module()  # the clear error without matplotlib
        fig, mains, lows = grid_axes(ax, 1, "SmoothReliabilityDisplay", None, (5.0, 5.0), below=density)
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
            head += f" (smECE = {fmt(self.smece)}" + ("" if self.sigma is None else f", σ = {self.sigma:.4g}") + ")"
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
        from .. import lenses as L
        from .. import request as R
        from .. import smooth as S
        from .._columns import resolve

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
