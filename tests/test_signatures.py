"""Keyword parameters declared once (docs/design.md): request.py's groups give every public function its keywords,
with request.DEFAULTS' defaults, in its signature, and refuse an unknown one as Python does."""

from __future__ import annotations

import inspect

import polars as pl
import pytest

import calframe
from calframe import request as R


def test_vmce_has_vece_s_keywords_but_p() -> None:
    """vmce took **kwargs and dropped p= silently; its signature now lists vece's keywords (variable bins) but p."""
    params = inspect.signature(calframe.vmce).parameters
    assert "p" not in params and "p" in inspect.signature(calframe.vece).parameters
    assert {"distance", "estimator", "by", "weights", "ci", "seed"} <= set(params)
    assert (params["bins"].default, params["binning"].default, params["name"].default) == (10, "quantile", "vmce")
    df = pl.DataFrame({"prob": [0.9, 0.8, 0.3, 0.6], "label": [1, 0, 0, 1], "x": [1.0, 2.0, 3.0, 4.0]})
    with pytest.raises(TypeError, match=r"^vmce\(\) got an unexpected keyword argument 'p'$"):
        calframe.vmce(df, "x", p=2)


@pytest.mark.parametrize("fn", [calframe.ce, calframe.ece, calframe.mce, calframe.rmsce, calframe.reliability,
                                calframe.summary, calframe.brier, calframe.vece, calframe.gece, calframe.lce,
                                calframe.vce_curve, calframe.expr.ce, calframe.expr.rmsce, calframe.expr.vece,
                                calframe.expr.brier],
                         ids=lambda f: f"{f.__module__}.{f.__name__}")
def test_every_group_keyword_has_the_one_default(fn) -> None:
    """A keyword of a group has DEFAULTS' default, but where the group or the function says otherwise: the binning
    of a figure with an estimator (ce, rmsce: None, by estimator), the variable's bins (10 quantiles), gece's gamma
    (its adaptive bins), vce_curve's n_boot (200 refits of two curves locate v*)."""
    own = {("ce", "binning"): None, ("rmsce", "binning"): None, ("vece", "bins"): 10, ("vece", "binning"): "quantile",
           ("gece", "gamma"): 0.1, ("vce_curve", "n_boot"): 200}
    params = inspect.signature(fn).parameters
    shared = [n for n in params if n in R.DEFAULTS]
    assert shared and "options" not in params
    for n in shared:
        assert params[n].kind is inspect.Parameter.KEYWORD_ONLY, n
        assert params[n].default == own.get((fn.__name__, n), R.DEFAULTS[n]), n


def test_an_unknown_keyword_is_a_type_error_naming_the_function() -> None:
    df = pl.DataFrame({"prob": [0.9, 0.8, 0.3, 0.6], "label": [1, 0, 0, 1]})
    with pytest.raises(TypeError, match=r"^mce\(\) got an unexpected keyword argument 'estimator'$"):
        calframe.mce(df, estimator="debiased")
    with pytest.raises(TypeError, match=r"^ece\(\) got an unexpected keyword argument 'ci'$"):
        calframe.expr.ece("prob", "label", ci=0.9)
    with pytest.raises(TypeError, match=r"^ece\(\) got an unexpected keyword argument 'ci'$"):
        pl.col("prob").calib.ece("label", ci=0.9)
    assert calframe.rmsce(df, estimator="plugin") == calframe.ce(df, p=2)
