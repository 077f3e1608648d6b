"""Curves and rankings: variable calibration curves, the VECE ranking chart and MLCE against gamma."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from .._errors import ParameterError
from ._common import (
    ACC_COLOR, CONF_COLOR, Frame, GAP_COLOR, HIST_COLOR, KIND_COLORS, REF_COLOR, curve_labels, CURVE_COLUMNS,
    RANK_COLUMNS, SUMMARY_COLUMNS, grid_axes, by_list, check_columns, finish, fmt, group_columns, n_cols, polars_table,
    pyplot_module, split_names
)

if TYPE_CHECKING:  # pragma: no cover
    from ..api import VCECurve


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
        self.curve = polars_table(curve, "VariableCurveDisplay")
        self.summary = polars_table(summary, "VariableCurveDisplay")
        check_columns(self.curve, CURVE_COLUMNS, "VariableCurveDisplay", "calframe.vce_curve().curve")
        check_columns(self.summary, SUMMARY_COLUMNS, "VariableCurveDisplay", "calframe.vce_curve().summary")
        self.by = group_columns(self.curve, by, CURVE_COLUMNS)
        self.variable = variable
        self.level = level
        self.lens = lens
        self.name = name
        rows = split_names(self.summary, self.by)
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
        parts = split_names(self.curve, self.by)
        fig, mains, _ = grid_axes(ax, len(parts), "VariableCurveDisplay.plot", ncols,
                              (5.2, 3.8) if not grouped else (4.4, 3.5))
        band = "band" if self.level is None else f"{self.level:.0%} band"
        acc_name, conf_name, ylabel = curve_labels(self.lens)
        acc_lines, conf_lines = [], []
        nc = n_cols(len(parts), ncols)
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
            head = f"VCE = {fmt(vce)} at v* = {vs:.4g}"
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
        return finish(self, fig, ax, grouped, f"Calibration along {self.variable or 'the variable'} by "
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
        from .. import api

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
        self.table = polars_table(table, "VeceRankDisplay")
        check_columns(self.table, RANK_COLUMNS, "VeceRankDisplay", "calframe.vece_rank()")
        if "leak" in self.table.columns:  # variables that leak the label are listed by vece_rank, not ranked
            self.table = self.table.filter(pl.col("leak").is_null())
        self.by = group_columns(self.table, by, RANK_COLUMNS + ("vce", "v_star", "leak"))
        self.name = name
        self.groups_ = [label for label, _ in split_names(self.table, self.by)] if self.by else []

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
        parts = split_names(self.table, self.by)
        n_vars = max(p.height for _, p in parts)
        nc = ncols if ncols is not None else (1 if len(parts) <= 4 else 2)  # stacked: x values line up
        fig, mains, _ = grid_axes(ax, len(parts), "VeceRankDisplay.plot", nc, (6.0, 0.42 * n_vars + 1.3), sharey=False)
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
                    a.annotate(fmt(ve), (max(ve, vm) if close else ve, yi), xytext=(7 if close else 3, 0),
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
        return finish(self, fig, ax, grouped, "VECE by variable and " + ", ".join(self.by), mains, bars_=bars,
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
        from .. import api

        table = api.vece_rank(frame, variables, prob, label, by=by, **kwargs)
        disp = cls(table, by=by_list(by), name=name)
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
        plt = pyplot_module()
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
                text = f"MCE (γ → ∞) = {fmt(m)}" if g is None else f"{g}: MCE = {fmt(m)}"
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
            head += f" (MCE = {fmt(float(np.nanmean(self.mce)))})"
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
        df = polars_table(curve, "MLCECurveDisplay")
        check_columns(df, ("gamma", "mlce"), "MLCECurveDisplay", "calframe.mlce_curve()")
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
            from .. import api

            mlce_curve = getattr(api, "mlce_curve", None)
        if mlce_curve is None:
            raise NotImplementedError(
                "MLCECurveDisplay.from_frame needs calframe.mlce_curve, which this version of calframe does not "
                "provide yet. Build the display from arrays: MLCECurveDisplay(gammas, mlce, mce).plot()."
            )
        return cls.from_curve(mlce_curve(frame, *args, **kwargs), name=name).plot(ax=ax, **(plot_kws or {}))
