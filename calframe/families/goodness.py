"""Tests of exact calibration: the Hosmer-Lemeshow statistic and its p-value (from the bin sums), Spiegelhalter's
z-test and the mean bias with its t-test (from per-group row sums, :mod:`calframe.row_sums`).

They answer another question than :func:`calframe.calibration_test`: that test asks whether a model is
calibrated *enough* (its ECE below a tolerance); these ask whether it is *exactly* calibrated, which large data
always refute (a tiny miscalibration becomes significant with enough rows). Clinical users expect them; read them
beside the ECE and its interval, not instead.

Hosmer and Lemeshow (1980) group the rows by deciles of the predicted probability (``binning="quantile"``,
``bins=10``: calframe's quantile bins, as pandas.qcut per group) and compare each group's observed and expected
counts: ``HL = sum_g (O_g - E_g)^2 / (E_g (1 - E_g / n_g))`` with ``O_g`` the outcomes, ``E_g`` the sum of the
predictions and ``n_g`` the rows (weights' sums with ``weights``, uniform bins), then ``p = P(chi2(G) >= HL)``
over the ``G`` non-empty groups. That is the law for predictions made without these rows (a held-out set, a model
in production: calframe's case); Hosmer and Lemeshow's ``G - 2`` degrees of freedom are for the rows a logistic
model was fitted on, and on held-out rows they raise the false alarms at 5% to about 10% (tests/test_goodness.py
measures it). Its known weaknesses (Hosmer et al. 1997; Kramer and Zimmerman 2007): the
verdict moves with the number and edges of the groups, its power is low for small samples, and with large samples
it rejects models whose miscalibration does not matter.
"""

from __future__ import annotations

from typing import Any, Unpack

import numpy as np

from .. import figures as F
from .. import lenses as L
from .. import request as R
from .. import row_sums as RS
from . import belt as B
from .._columns import Scored
from .._keywords import Columns
from ..engines.eager import Figure as Computed, Frame, Result
from ..frames.dispatch import public
from ..registry import Column, Figure
from .plan import run_plan, run_finalize


@F.finalize("hosmer_lemeshow")
def _hosmer_lemeshow(req: R.Request, sums_of: Any, n_classes: int,
                     count_scale: Any = 1.0) -> dict[str, np.ndarray]:
    """HL and its p-value per group from the bin sums (the scaled weights' sums times ``count_scale``: exact
    powers of two, so the statistic is that of the caller's weights)."""
    from scipy.stats import chi2

    sums = sums_of(0)
    n, expected, observed = sums[..., 0], sums[..., 1], sums[..., 2]
    spread = expected * (1.0 - np.divide(expected, n, out=np.zeros_like(n), where=n > 0))
    gap = (observed - expected) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        # a bin whose predictions are all 0 or all 1 has no spread: it adds nothing when its outcomes agree
        terms = np.where(spread > 0, gap / np.where(spread > 0, spread, 1.0), np.where(gap > 0, np.inf, 0.0))
    scale = np.asarray(count_scale, dtype=np.float64)
    hl = terms.sum(axis=1) * scale
    dof = (n > 0).sum(axis=1)  # held-out predictions: chi2(G) (module docstring)
    p_value = chi2.sf(hl, dof)
    return {"hl": hl, "hl_p_value": p_value}


@public(state="bin_sums", figure=Figure((
    Column("hl", "Hosmer-Lemeshow", "observed against expected outcomes over deciles of the prediction, as a "
           "chi-squared statistic; 0 is perfect"),
    Column("hl_p_value", "HL p-value", "the chance of a statistic this large if the model were exactly calibrated; "
           "small values reject exact calibration, which large data always do", "higher")),
    lensed=True, on=frozenset({"disparity", "monitor", "expr", "sklearn"})))
@R.keywords(R.ECE, bins=10, binning="quantile")
def hosmer_lemeshow(frame: Frame, prob: Columns = None, label: str | None = None,
                    **options: Unpack[R.ECE]) -> Result:
    """The Hosmer-Lemeshow test of exact calibration: its statistic ``hl`` and p-value ``hl_p_value``, per group.

    Over ``bins`` groups of the prediction (default: deciles, ``binning="quantile"``, ``bins=10``),
    ``hl = sum_g (O_g - E_g)^2 / (E_g (1 - E_g / n_g))`` and ``hl_p_value`` its chi-squared tail with ``G``
    degrees of freedom, ``G`` the non-empty groups (predictions made without these rows; module docstring). For a single probability column the lens is the
    positive class (``class:1``), as Hosmer and Lemeshow; for class probabilities the top label. Weights (frequency
    weights) need ``binning="uniform"``. See the module docstring for when the test helps and when it misleads:
    :func:`calframe.calibration_test` asks whether the model is calibrated enough.

    Examples
    --------
    >>> import numpy as np, polars as pl, calframe
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=5000)
    >>> df = pl.DataFrame({"prob": p, "label": (rng.uniform(size=5000) < p).astype(int)})
    >>> bool(calframe.hosmer_lemeshow(df)["hl_p_value"][0] > 0.05)  # calibrated: not rejected
    True
    >>> bool(calframe.hosmer_lemeshow(df.with_columns(prob=pl.col("prob") ** 1.5))["hl_p_value"][0] < 1e-6)
    True
    """
    return run_finalize("hosmer_lemeshow", frame, prob, label, options)


# --------------------------------------------------------------------------- from per-group row sums


def _row_sums(func: str, values: tuple[str, ...], frame: Frame, prob: Columns, label: str | None,
              p_adjust: str | None, options: dict[str, Any]) -> Result:
    """The figure ``func`` of per-group row sums (:mod:`calframe.row_sums`), its columns read from its row of the
    figure table, on any engine that computes the row means."""
    from ..registry import figure_of

    spec = RS.RowSums(func, values, figure_of(func).names, RS.check_p_adjust(func, p_adjust))
    req = R.row_sums(func, spec, prob, label, **options)
    return run_plan(req, frame, _eager(req, spec), binned=True)


def _eager(req: R.Request, spec: RS.RowSums) -> dict[str, Computed]:
    """The eager engine's figures: every column from one set of sums per scored frame."""
    last: dict[str, Any] = {}

    def columns(scored: Scored) -> dict[str, np.ndarray]:
        if last.get("scored") is not scored:  # the frame itself is kept, so its identity is not reused
            conf, acc = L.scalar(scored, req.lens, req.func)
            means = RS.eager_sums(spec, conf, acc, scored.weights, scored.weight_scale, scored.groups,
                                  scored.n_groups)
            counts = np.bincount(scored.group_codes, minlength=scored.n_groups)
            last.update(scored=scored, out=RS.finalize(spec, means, counts))
        return last["out"]

    return {c: (lambda scored, c=c: columns(scored)[c]) for c in spec.columns}


@public(state="row_means", figure=Figure((
    Column("bias", "mean bias", "mean of prediction minus outcome (positive: over-predicts); 0 is calibrated in the "
           "large", "lower"),
    Column("bias_se", "bias SE", "standard error of the mean bias (model-diagnostics' weighted form)"),
    Column("bias_p_value", "bias p-value", "two-sided t-test of a mean bias of 0; small values say the bias is "
           "real, which large data say of any bias", "higher"),
    Column("bias_weights", "sum of weights", "the group's sum of weights (its rows without weights)", "higher")),
    lensed=True, on=frozenset({"monitor", "expr", "sklearn"})))
@R.keywords(R.Tested)
def bias(frame: Frame, prob: Columns = None, label: str | None = None, *, p_adjust: str | None = None,
         **options: Unpack[R.Tested]) -> Result:
    """The mean bias per group, with its standard error and a t-test: model-diagnostics' ``compute_bias``.

    Columns ``n``, ``bias`` (the weighted mean of prediction minus outcome, ``conf - acc`` of the lens:
    model-diagnostics' sign, positive when the model over-predicts), ``bias_se`` (``sqrt(sum w (b - bias)^2 / W /
    (n - 1))``, model-diagnostics' weighted form, W the sum of weights: with frequency weights it is conservative,
    as it counts rows, not weights), ``bias_p_value`` (two-sided t-test of ``bias = 0`` with ``n - 1`` degrees of
    freedom; NaN for a group of one row) and ``bias_weights`` (W). ``p_adjust="holm"`` or ``"bonferroni"`` adjusts
    the p-values over the groups of the call (``by``). Along a variable: ``by=`` a binned column
    (``pl.col("age").qcut(10)``; docs/binned-metrics.md). The lens: ``class:1`` (the positive class) for one
    probability column, ``top1`` for class probabilities.

    Examples
    --------
    >>> import polars as pl, calframe
    >>> df = pl.DataFrame({"prob": [0.9, 0.8, 0.3, 0.6], "label": [1, 0, 0, 1], "g": ["a", "a", "b", "b"]})
    >>> calframe.bias(df).select(pl.all().round(6)).row(0)  # model_diagnostics.calibration.compute_bias: the same
    (4, 0.15, 0.259808, 0.604181, 4.0)
    >>> calframe.bias(df, by="g")["bias"].round(6).to_list()
    [0.35, -0.05]
    """
    return _row_sums("bias", RS.BIAS, frame, prob, label, p_adjust, options)


@public(state="row_means", figure=Figure((
    Column("spiegelhalter_z", "Spiegelhalter z", "Spiegelhalter's (1986) standardised Brier score; near 0 when the "
           "model is exactly calibrated (positive: outcomes further from the predictions than chance)"),
    Column("spiegelhalter_p_value", "Spiegelhalter p-value", "the chance of a z this far from 0 if the model were "
           "exactly calibrated; small values reject exact calibration, which large data always do", "higher")),
    lensed=True, on=frozenset({"monitor", "expr", "sklearn"})))
@R.keywords(R.Tested)
def spiegelhalter(frame: Frame, prob: Columns = None, label: str | None = None, *, p_adjust: str | None = None,
                  **options: Unpack[R.Tested]) -> Result:
    """Spiegelhalter's (1986) z-test of exact calibration, per group.

    ``spiegelhalter_z = sum w (y - p)(1 - 2p) / sqrt(sum w (1 - 2p)^2 p (1 - p))`` over the lens's prediction
    ``p`` and outcome ``y`` (``class:1``, the positive class, for one probability column; ``top1`` for class
    probabilities; on binary input both give the same z), and ``spiegelhalter_p_value = 2 P(N(0, 1) > |z|)``.
    Weights are frequency weights (a row of weight k counts as k rows, as :func:`hosmer_lemeshow`): z grows with
    the square root of the weights' scale, so importance weights should sum to the rows they stand for. A group
    whose predictions are all 0, 1/2 or 1 has no variance: z is NaN (or infinite when the outcomes contradict
    predictions of 0 or 1). ``p_adjust="holm"`` or ``"bonferroni"`` adjusts the p-values over the groups.

    Examples
    --------
    >>> import numpy as np, polars as pl, calframe
    >>> p = np.random.default_rng(1).uniform(size=4000)
    >>> calibrated = pl.DataFrame({"prob": p, "label": np.random.default_rng(2).uniform(size=4000) < p})
    >>> z = calframe.spiegelhalter(calibrated)
    >>> bool(z["spiegelhalter_p_value"][0] > 0.05)  # calibrated: not rejected
    True
    >>> squared = calibrated.with_columns(prob=pl.col("prob") ** 2)
    >>> bool(calframe.spiegelhalter(squared)["spiegelhalter_p_value"][0] < 1e-6)
    True
    """
    return _row_sums("spiegelhalter", RS.SPIEGELHALTER, frame, prob, label, p_adjust, options)


# --------------------------------------------------------------------------- the calibration belt (families.belt)


def _belt_figures(req: R.Request, opts: B.Options) -> dict[str, Computed]:
    """The three columns from one fit per group per scored frame."""
    last: dict[str, Any] = {}

    def columns(scored: Scored) -> dict[str, np.ndarray]:
        if last.get("scored") is not scored:  # the frame itself is kept, so its identity is not reused
            last.update(scored=scored, out=B.figures(scored, req, opts))
        return last["out"]

    return {c: (lambda scored, c=c: columns(scored)[c]) for c in B.COLUMNS}


@public(state="sorted_rows", figure=Figure((
    Column("belt_degree", "belt degree", "the degree of the calibration curve's polynomial in logit(p), chosen by "
           "forward selection"),
    Column("belt_statistic", "belt statistic", "the calibration belt's likelihood-ratio statistic of the fitted "
           "curve against the predictions; 0 is perfect"),
    Column("belt_p_value", "belt p-value", "the chance of a statistic this large if the model were exactly "
           "calibrated (Nattino et al. 2014); small values reject exact calibration, which large data always do",
           "higher")),
    lensed=True, on=frozenset({"monitor", "expr", "sklearn"})))
@R.keywords(R.Tested)
def calibration_belt(frame: Frame, prob: Columns = None, label: str | None = None, *, q: float = 0.95,
                     max_degree: int = 4, clip: float | None = None, **options: Unpack[R.Tested]) -> Result:
    """The GiViTI calibration belt's test of exact calibration (Finazzi et al. 2011; Nattino et al. 2014), per
    group: ``belt_degree`` (the polynomial's degree in ``logit(p)``, forward-selected at level ``q`` up to
    ``max_degree``), ``belt_statistic`` and ``belt_p_value`` (module :mod:`calframe.families.belt`).

    The belt itself (its bounds at each prediction, and where it leaves the bisector) is
    :func:`calibration_belt_bands`; its plot :func:`calframe.plot.calibration_belt`. The lens: ``class:1`` for one
    probability column, ``top1`` for class probabilities. Weights are frequency weights. Predictions of exactly 0
    or 1 are refused (no logit), unless ``clip`` moves every prediction into ``[clip, 1 - clip]``. A group with
    one distinct prediction has NaN figures. Values agree with the ``calibration-belt`` package
    (tests/test_belt.py).

    Examples
    --------
    >>> import numpy as np, polars as pl, calframe
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.01, 0.99, size=5000)
    >>> df = pl.DataFrame({"prob": p, "label": (rng.uniform(size=5000) < p).astype(int)})
    >>> bool(calframe.calibration_belt(df)["belt_p_value"][0] > 0.05)  # calibrated: not rejected
    True
    >>> bool(calframe.calibration_belt(df.with_columns(prob=pl.col("prob") ** 1.5))["belt_p_value"][0] < 1e-6)
    True
    """
    opts = B.options("calibration_belt", q, max_degree, 0.95, 4, clip)
    req = R.scalar_rows("calibration_belt", prob, label, **options)
    return run_plan(req, frame, _belt_figures(req, opts), scalar=False)


@public(state="sorted_rows")
@R.keywords(R.Tested)
def calibration_belt_bands(frame: Frame, prob: Columns = None, label: str | None = None, *,
                           confidence: float | tuple[float, ...] = (0.8, 0.95), q: float = 0.95, max_degree: int = 4,
                           points: int = 100, clip: float | None = None, **options: Unpack[R.Tested]) -> Any:
    """The calibration belt itself, per group: at each ``confidence`` level and each of ``points`` predictions
    ``p`` (half evenly spaced in ``p``, half in ``logit(p)``, over the group's range, as the ``calibration-belt``
    package), the ``lower`` and ``upper`` bounds of the true outcome rate, and ``side``: ``"above"`` where the
    belt lies above the bisector (``lower > p``: the model under-predicts there), ``"below"`` where it lies below
    (``upper < p``: it over-predicts), null where it holds the bisector. The ranges of ``p`` where the model is
    miscalibrated at a level are the runs of rows with a ``side``. Columns: the ``by`` keys, ``confidence``,
    ``p``, ``lower``, ``upper``, ``side``, in the caller's flavor.

    Examples
    --------
    >>> import numpy as np, polars as pl, calframe
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.01, 0.99, size=2000)
    >>> df = pl.DataFrame({"prob": p, "label": (rng.uniform(size=2000) < p ** 0.7).astype(int)})
    >>> b = calframe.calibration_belt_bands(df, confidence=0.95, points=20)
    >>> b.columns
    ['confidence', 'p', 'lower', 'upper', 'side']
    >>> b.filter(pl.col("side").is_not_null())["side"].unique().to_list()  # p ** 0.7 > p: under-predicts
    ['above']
    """
    import polars as pl

    from .._columns import score, select_rows
    from ..figures import to_flavor
    from ..frames.convert import in_flavor_of

    opts = B.options("calibration_belt_bands", q, max_degree, confidence, points, clip)
    req = R.scalar_rows("calibration_belt_bands", prob, label, **options)
    sel = select_rows(frame, func=req.func, prob=req.prob, label=req.label, by=req.by, weights=req.weights,
                      nulls=req.nulls)
    scored = score(sel)
    parts = B.bands(scored, req, opts)
    cols = {k: np.concatenate([d[k] for d in parts]) if parts else np.zeros(0) for k in
            ("group", "confidence", "p", "lower", "upper")}
    df = pl.DataFrame({k: cols[k] for k in ("confidence", "p", "lower", "upper")})
    df = df.with_columns(side=pl.when(pl.col("lower") > pl.col("p")).then(pl.lit("above"))
                         .when(pl.col("upper") < pl.col("p")).then(pl.lit("below")).otherwise(None))
    if scored.keys is not None:
        keys = scored.keys[cols["group"].astype(np.int64)] if len(cols["group"]) else scored.keys.clear()
        df = pl.concat([keys, df], how="horizontal")
    out = to_flavor(df, scored.flavor)
    return in_flavor_of(frame, df.lazy()) if scored.flavor == "polars" else out  # a LazyFrame: lazy again


def weight_totals(frame: Frame, prob: Columns, label: str | None, **options: Any) -> Any:
    """Each group's sum of weights in the caller's units (the group columns and ``total``), summed where the rows
    are (:func:`calframe.bias`'s ``bias_weights``: one pass of per-group sums on every engine)."""
    from .. import engines
    from ..frames import convert

    out = bias(frame, prob, label, **options)
    out = engines.route(frame, lambda: convert.to_polars(out), narwhals=lambda e: e.Engine.back(out),
                        dask=lambda e: convert.to_polars(out.compute()))  # small: one row per group
    return out.rename({"bias_weights": "total"})

