"""Every fit parameter of every recalibrator: a bad value is a ParameterError naming it, before any work.

Through the public entries ``calframe.fit(df, method, **params)`` / ``df.calib.fit(...)`` (and the
array-level ``recalibrate.fit``); good values are still accepted, in any numeric type.
"""

from __future__ import annotations

import inspect
import math

import numpy as np
import polars as pl
import pytest

import calframe
from calframe import recalibrate as R
from calframe._errors import ParameterError

NAN, INF = math.nan, math.inf
#: what is not a number at all
NOT_NUMBERS = ["abc", "1.5", [1.0], {"a": 1}, True, np.bool_(False)]
#: numbers a positive finite parameter refuses
NOT_POSITIVE = [-1, -1.0, 0, 0.0, NAN, INF, -INF]
NOT_INTS = ["10", 1.5, 10.0, True, None, [10], NAN]

EXTRA = {"tree": {"variable": "age"}, "beta_v": {"variable": "age"}, "lore": {"features": ["age"]}}


def _cases() -> list[tuple[str, str, object]]:
    table: list[tuple[tuple[str, ...], str, list]] = [
        (("platt", "beta", "beta_v", "scaling_binning"), "C", NOT_NUMBERS + NOT_POSITIVE),
        (("beta", "beta_v"), "edge", NOT_NUMBERS + NOT_POSITIVE + [None, 0.5, 0.7, 1]),
        (("lore",), "gamma", NOT_NUMBERS + NOT_POSITIVE + [None]),
        (("scaling_binning",), "seed", [-1, 1.5, "a", True, [0]]),
        (("histogram", "scaling_binning", "lore"), "n_bins", NOT_INTS + [0, -1]),
        (("tree",), "max_depth", NOT_INTS + [-1, 31]),
        (("tree",), "min_leaf", [0, -1, 0.0, 1.0, 1.5, NAN, INF, True, "0.1", None]),
        (("tree",), "leaf", ["dirichlet", "tree", "lore", 1, ["beta"]]),
        (("tree",), "leaf_params", ["abc", [1.0], 3, 1.5, True, {"C": "abc"}, {"C": -1}, {"a": 1}, {1: 2},
                                    {"lens": "class:5"}, {"meta": {}}]),
        (("beta_v",), "degree", [0, 3, True, 1.0, "1", None]),
        (("platt", "beta", "beta_v"), "variant", ["x", 1, None, ["kumar"]]),
        (("platt",), "feature", ["probit", None, 1]),
        (("beta", "beta_v"), "clip", ["none", None, True]),
        (("beta",), "constrained", [1, 0, "yes", None, 1.0]),
        (("beta_v", "lore"), "standardize", [1, "true", None]),
        (("scaling_binning",), "split", [1, "yes", None]),
        (("venn_abers",), "interval", [1, "yes", None, 1.0]),
        (("lore",), "kernel_method", ["fast", None, 1]),
        (("platt", "histogram", "isotonic", "beta", "scaling_binning", "venn_abers", "lore"), "lens",
         ["class:5", "class:-1", "class: 1", "top2", "", 1, ["top1"]]),
        # unknown keyword names, whatever their value
        (("histogram",), "bins", [10]),
        (("isotonic",), "n_bins", [10]),
        (("temperature",), "lens", ["top1"]),
        (("temperature",), "C", [1.0]),
        (("lore",), "prepare", ["pca"]),
        (("lore",), "bins", [10]),
        (("platt",), "foo", [1]),
        (("platt",), "meta", [{}]),
        # frame-level arguments a method does not use
        (("platt", "histogram", "lore"), "variable", ["age"]),
        (("platt", "tree"), "features", [["age"]]),
        (("lore",), "features", [[], 5, None]),
    ]
    return [(m, name, v) for methods, name, values in table for m in methods for v in values]


@pytest.fixture(scope="module")
def cal() -> pl.DataFrame:
    return calframe.datasets.grouped_miscalibration(n=400, seed=3)


@pytest.mark.parametrize("method, name, value", _cases())
def test_bad_parameter_is_a_parameter_error_naming_it(cal, method, name, value):
    kwargs = {**EXTRA.get(method, {}), name: value}
    with pytest.raises(ParameterError) as info:
        calframe.fit(cal, method, **kwargs)
    assert repr(name) in str(info.value) or f"{name}=" in str(info.value), str(info.value)
    assert info.value.param == name
    msg = str(info.value)  # what it must be and what was given; or the known names; or what is missing
    assert "must be" in msg and "Got " in msg or "has no parameter" in msg or "needs" in msg, msg


@pytest.mark.parametrize("method", ["nope", "per_group", None, 1, "Platt"])
def test_unknown_method(cal, method):
    with pytest.raises(ParameterError, match=r"'method' parameter of fit must be one of .*'platt'") as info:
        cal.calib.fit(method)
    assert info.value.param == "method"
    with pytest.raises(ParameterError, match=r"'method' parameter of recalibrate.fit"):
        R.fit(method, np.array([0.2, 0.8]), np.array([0, 1]))


@pytest.mark.parametrize("method, name, value", [("platt", "C", "abc"), ("lore", "gamma", -1), ("tree", "leaf", 1),
                                                 ("histogram", "bins", 10)])
def test_parameters_are_checked_before_the_data(method, name, value):
    """A frame without the needed columns: the parameter error comes first (nothing was read or fitted)."""
    frame = pl.DataFrame({"x": [1.0, 2.0]})
    with pytest.raises(ParameterError) as info:
        calframe.fit(frame, method, **EXTRA.get(method, {}), **{name: value})
    assert info.value.param == name


def test_per_group_parameter_error_names_the_parameter_not_a_group(cal):
    with pytest.raises(ParameterError) as info:
        calframe.fit(cal, "platt", by="region", lens="class:2")
    assert info.value.param == "lens" and "group" not in str(info.value)


@pytest.mark.parametrize("method, name, value", [("platt", "C", [1.0]), ("tree", "leaf_params", {"C": "x"}),
                                                 ("scaling_binning", "seed", -1), ("beta", "edge", "abc")])
def test_array_level_fit_checks_the_same_way(method, name, value):
    rng = np.random.default_rng(0)
    p = rng.random(60)
    y = (rng.random(60) < p).astype(int)
    extra = [rng.random(60)] if method == "tree" else []
    with pytest.raises(ParameterError) as info:
        R.fit(method, p, y, *extra, **{name: value})
    assert info.value.param == name
    with pytest.raises(ParameterError) as info:
        R.REGISTRY[method].fit(p, y, *extra, **{name: value})
    assert info.value.param == name


GOOD = [
    ("platt", {"C": 2}, {"C": 2.0}),
    ("platt", {"C": np.float32(2.0), "variant": "kelly_smyth", "feature": "logit"}, {"C": 2.0}),
    ("platt", {"C": None}, {}),
    ("beta", {"C": np.int64(5), "edge": 1e-3, "clip": "exact", "constrained": np.bool_(False)},
     {"C": 5.0, "edge": 1e-3, "constrained": False}),
    ("beta_v", {"degree": np.int32(2), "C": 10, "standardize": False}, {"degree": 2, "C": 10.0}),
    ("scaling_binning", {"C": 100, "seed": np.int64(7), "n_bins": np.int16(5), "split": False},
     {"seed": 7, "n_bins": 5}),
    ("histogram", {"n_bins": np.uint8(7), "lens": "class:0"}, {"n_bins": 7, "lens": "class:0"}),
    ("isotonic", {"lens": "top1"}, {"lens": "top1"}),
    ("venn_abers", {"interval": np.bool_(True), "lens": "top1"}, {"interval": True, "lens": "top1"}),
    ("temperature", {}, {}),
    ("tree", {"max_depth": np.int64(1), "min_leaf": np.float32(0.25), "leaf": "platt",
              "leaf_params": {"variant": "kelly_smyth", "C": 3}}, {"max_depth": 1, "leaf": "platt"}),
    ("tree", {"min_leaf": np.int64(50), "leaf_params": {"variant": "kelly_smyth"}}, {"min_leaf": 50}),
    ("lore", {"gamma": 1, "n_bins": 5, "standardize": True, "kernel_method": "direct"}, {"gamma": 1.0}),
]


@pytest.mark.parametrize("method, kwargs, stored", GOOD)
def test_good_values_are_accepted_and_stored_in_plain_types(cal, method, kwargs, stored):
    rec = cal.calib.fit(method, **EXTRA.get(method, {}), **kwargs)
    for k, v in stored.items():
        assert rec.params[k] == v and type(rec.params[k]) is type(v), (k, rec.params[k])
    canonical = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in kwargs.items()}
    again = calframe.fit(cal, method, **EXTRA.get(method, {}), **canonical)
    assert again.equals(rec)  # a numpy scalar fits exactly as the Python number


def test_every_fit_keyword_is_checked():
    """PARAMS (what check_params knows) is exactly fit's keyword-only parameters (meta aside, and the row weights of
    a method that takes them: data, checked with the data), per method."""
    for method in R.METHODS:
        cls = R.REGISTRY[method]
        if method == "per_group":
            continue
        kw = {p.name for p in inspect.signature(cls.fit).parameters.values() if p.kind is p.KEYWORD_ONLY}
        assert ("weights" in kw) == getattr(cls, "takes_weights", False), method
        assert set(cls.PARAMS) == kw - {"meta", "weights"}, method


@pytest.mark.parametrize("param, shown", [("C=-1", "C=-1"), ("C=abc", "C='abc'"), ("n_bins=0", "n_bins=0")])
def test_cli_names_the_param(tmp_path, capsys, param, shown):
    from calframe.cli import main

    calframe.datasets.grouped_miscalibration(n=200, seed=1).write_parquet(tmp_path / "x.parquet")
    method = "histogram" if param.startswith("n_bins") else "platt"
    code = main(["fit", str(tmp_path / "x.parquet"), "--method", method, "--param", param, "-o",
                 str(tmp_path / "r.parquet")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and shown in err and "\n" not in err, err
    assert not (tmp_path / "r.parquet").exists()
