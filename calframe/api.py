"""The public API: typed functions that take any supported frame.

The functions are defined by family in :mod:`calframe.families` (each with
:func:`calframe.frames.dispatch.public`: the fork check and the dispatch of
Dask, DuckDB, Spark, Ibis and pyarrow frames) and exported here. Each resolves
its columns once (``_columns.resolve``), runs the pipeline select -> lens ->
bin -> accumulate -> finalize on plain arrays, and returns the caller's
flavor: a float when there is no ``by`` (and no ``ci``), else a frame with the group columns, ``n`` and one column per figure
(Polars for Polars input, pandas for pandas input).

Common parameters
-----------------
frame : polars.DataFrame, polars.LazyFrame or pandas.DataFrame
prob : str or list of str, optional
    The positive-class probability column (binary), or a list of class
    probability columns, or one Array/List column of class probabilities
    (multiclass). Defaults to the one of ``prob``, ``proba``, ``y_prob``,
    ``probs`` present in the frame.
label : str, optional
    0/1 or Boolean labels (binary), integer class indices in [0, K)
    (multiclass). Defaults to the one of ``label``, ``y``, ``y_true``,
    ``target`` present.
by : str or list of str, optional
    Group columns: one result row per group (nulls form their own group).
weights : str, optional
    Non-negative row weights (uniform binning only).
nulls : {"raise", "drop"}
    What to do with nulls in the probability, label and weight columns.
lens : str, optional
    What is binned (SPEC §1.2): ``"top1"`` (the predicted class's
    probability against accuracy) or ``"class:<c>"`` (class c's probability
    against its frequency). Default None: ``"class:1"``, the positive class,
    for a single probability column (binary input, as scikit-learn's
    calibration_curve), and ``"top1"`` for class probabilities (several
    columns, or one Array / List column); SPEC §8 "Default lens".
    ``accuracy`` is always top-label correctness.
ci : float, optional
    Confidence level of bootstrap intervals for the population figure (e.g.
    0.95), adding ``<figure>_lo``, ``<figure>_hi`` and ``ci_method`` columns.
    How the draws are made is ``bootstrap``'s choice.
n_boot : int
    Bootstrap draws (default 1000).
ci_method : {"symmetric", "bias_corrected", "percentile"}
    How the draws become bounds (docs/statistics.md). ``"symmetric"``
    (default): the estimate -/+ the larger of the bootstrap error's two tail
    quantiles, clipped at 0; ``"bias_corrected"``: the basic
    (reverse-percentile) bootstrap, the estimate minus the bootstrap's bias
    and spread, clipped at 0; ``"percentile"``: the quantiles of the draws
    (the plug-in's sampling distribution, which sits above a calibrated
    model's 0; the method of earlier versions). For debiased estimators the
    bootstrap world's true value is the plug-in figure on the rows, and the
    debiased l2 CE is resampled as its squared estimate; the debiased l1
    CE's lower bound is 0 where that squared estimate's interval reaches 0.
bootstrap : {"auto", "moments", "rows"}
    How the draws are made (docs/statistics.md, "The bootstrap from
    moments"). ``"moments"``: each bin's sums are drawn from their law under
    the row bootstrap (cell counts exactly, a large cell's sum of confidences
    from its normal law, a small cell's rows exactly), from per (group, bin)
    sums: as fast as the figure, with the bins held fixed (a bootstrap
    conditional on data-dependent bin edges). ``"rows"``: the rows are
    resampled within each group and the whole figure, bins included, is
    recomputed per draw. ``"auto"`` (default): the moments when every
    figure of the call reads its rows through per (group, bin) sums of one
    scalar lens (the CE family, vece, the companions, ``summary``,
    ``disparity``), else the rows (the marginal lens, the sweep binning, the
    smooth ECE, gece).
seed : int
    Seed of the bootstrap and of any resampling estimator (default 0, so
    results are reproducible).
"""

from __future__ import annotations

from .families.bin_free import ks_calibration, mmce
from .families.corp import corp_decomposition
from .families.corp_curve import reliability_curve
from .families.binned import accuracy, ace, brier, ce, ece, log_loss, mce, reliability, rmsce, smece, summary
from .families.decomposition import brier_decomposition, ece_split, oe
from .families.disparity import disparity
from .families.gece import gece
from .families.goodness import bias, calibration_belt, calibration_belt_bands, hosmer_lemeshow, spiegelhalter
from .families.local import lce, mlce, mlce_curve
from .families.recal import apply, fit, load
from .families.variable import VCECurve, vce_curve, vece, vece_rank, vmce
from .families.verdict import calibration_test

__all__ = [
    "accuracy", "ace", "apply", "bias", "brier", "brier_decomposition", "calibration_belt", "calibration_belt_bands", "calibration_test", "ce", "corp_decomposition", "disparity", "ece",
    "ece_split", "fit", "gece", "hosmer_lemeshow", "ks_calibration", "lce", "load", "log_loss", "mce", "mlce", "mlce_curve", "mmce", "oe",
    "reliability", "reliability_curve", "rmsce", "smece", "spiegelhalter", "summary", "VCECurve", "vce_curve", "vece", "vece_rank", "vmce",
]
