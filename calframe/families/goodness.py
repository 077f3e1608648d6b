"""Tests of exact calibration from the bin sums: the Hosmer-Lemeshow statistic and its p-value.

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
from .. import request as R
from .._keywords import Columns
from ..engines.eager import Frame, Result
from ..frames.dispatch import public
from ..registry import Column, Figure
from .plan import run_finalize


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
