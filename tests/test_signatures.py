"""Keyword parameters declared once (docs/design.md): request.py's groups give every public function its keywords,
with request.DEFAULTS' defaults, in its signature, and refuse an unknown one as Python does."""

from __future__ import annotations

import inspect
import re

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


def _takes_bins() -> list:
    """(name, function, positional arguments) of every public function with a ``bins`` keyword: calframe's,
    calframe.expr's, calframe.sql's, ReliabilityDisplay's constructors from data, and calframe.sklearn's metrics
    (which pass their options on)."""
    import numpy as np

    import calframe.expr
    import calframe.plot
    import calframe.sklearn
    import calframe.sql

    df = pl.DataFrame({"prob": [0.9, 0.8, 0.3, 0.6], "label": [1, 0, 0, 1], "x": [1.0, 2.0, 3.0, 4.0]})
    out = []
    for mod, args in ((calframe, (df,)), (calframe.expr, ()), (calframe.sql, ("scores",))):
        for name in mod.__all__:
            fn = getattr(mod, name)
            if inspect.isfunction(fn) and "bins" in inspect.signature(fn).parameters:
                out.append((f"{mod.__name__}.{name}", fn, args))
    y, p = np.array([1, 0, 0, 1]), np.array([0.9, 0.8, 0.3, 0.6])
    out += [("ReliabilityDisplay.from_frame", calframe.plot.ReliabilityDisplay.from_frame, (df,)),
            ("ReliabilityDisplay.from_predictions", calframe.plot.ReliabilityDisplay.from_predictions, (y, p)),
            ("calframe.sklearn.ece", calframe.sklearn.ece, (y, p)),
            ("calframe.sklearn.reliability", calframe.sklearn.reliability, (y, p))]
    return out


TAKES_BINS = _takes_bins()


@pytest.mark.parametrize("name, fn, args", TAKES_BINS, ids=[t[0] for t in TAKES_BINS])
def test_scikit_learn_names_say_calframe_s(name, fn, args) -> None:
    """scikit-learn's n_bins and strategy (calibration_curve, CalibrationDisplay) on any function taking bins /
    binning (issue 22, 5: a plain TypeError before, and on ReliabilityDisplay a matplotlib error): a ParameterError,
    still a TypeError, saying "did you mean bins= / binning=", checked in one place (request.check_keyword_names)."""
    assert len(TAKES_BINS) >= 25  # calframe's 14, expr's 6, sql's 8 are found by their signatures
    params = inspect.signature(fn).parameters
    for given, value, meant in [("n_bins", 10, "bins=10"), ("strategy", "quantile", "binning='quantile'")]:
        if meant.split("=")[0] not in params and "sklearn" not in name:
            continue
        with pytest.raises(calframe.ParameterError, match=rf"got an unexpected keyword argument '{given}'\. "
                                                          rf"Did you mean {re.escape(meant)}\?") as info:
            fn(*args, **{given: value})
        assert isinstance(info.value, TypeError) and info.value.param == given


def test_other_unknown_keywords_name_the_closest() -> None:
    df = pl.DataFrame({"prob": [0.9, 0.8, 0.3, 0.6], "label": [1, 0, 0, 1], "w": [1.0, 2.0, 1.0, 1.0]})
    with pytest.raises(TypeError, match=r"^smece\(\) got an unexpected keyword argument 'weight'\. Did you mean "
                                        r"weights=\?$"):
        calframe.smece(df, weight="w")
    with pytest.raises(TypeError, match=r"^smece\(\) got an unexpected keyword argument 'n_bins'\. It takes no bins"):
        calframe.smece(df, n_bins=10)
    with pytest.raises(TypeError, match=r"'sample_weight'\. Did you mean weights=\.\.\.\? .* name of a weight column"):
        calframe.brier(df, sample_weight=[1.0, 2.0, 1.0, 1.0])


@pytest.mark.parametrize("module", ["datasets", "sklearn", "expr", "sql", "plot"])
def test_dir_shows_the_public_names_only(module) -> None:
    """dir() of calframe's user-facing modules (issue 22, 5: np, pl, Any showed in datasets' and sklearn's): their
    __all__, each a name of the module."""
    import importlib

    mod = importlib.import_module(f"calframe.{module}")
    assert dir(mod) == sorted(mod.__all__)
    assert not {"np", "pl", "pd", "Any", "Sequence", "annotations"} & set(dir(mod))
    for name in mod.__all__:
        getattr(mod, name)
    if module == "datasets":  # its __all__ is new: every generator it defines is in it
        defined = {n for n, v in vars(mod).items() if inspect.isfunction(v) and v.__module__ == mod.__name__}
        assert {n for n in defined if not n.startswith("_")} <= set(mod.__all__)
