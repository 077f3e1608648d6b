"""The seam (docs/design.md): one parse (calframe.request), engines that only sum, one finalize and shape
(calframe.figures), and handles generated from one list of public names."""

from __future__ import annotations

import inspect
from dataclasses import replace

import numpy as np
import polars as pl
import pytest

import calframe
from calframe import figures as F, request as R
from calframe.engines import run_binned
from calframe.frames.namespace import FRAME_FUNCTIONS

from conftest import as_flavour, collected


def test_every_handle_is_generated_from_the_one_list() -> None:
    """df.calib, calframe.calib(df) and ddf.calib have exactly the listed methods, each with the public function's
    docstring and parameters (the frame bound)."""
    df = pl.DataFrame({"prob": [0.2, 0.7], "label": [0, 1]})
    handles = {"calib(df)": calframe.calib(df), "df.calib": df.calib, "lf.calib": df.lazy().calib,
               "pandas": df.to_pandas().calib}
    for where, h in handles.items():
        public = sorted(n for n in dir(type(h)) if not n.startswith("_"))
        assert public == sorted(FRAME_FUNCTIONS), where
    for name in FRAME_FUNCTIONS:
        fn, method = getattr(calframe, name), getattr(calframe.Calib, name)
        assert method.__doc__ == fn.__doc__
        assert list(inspect.signature(method).parameters)[1:] == list(inspect.signature(fn).parameters)[1:]
    assert set(FRAME_FUNCTIONS) <= set(calframe.__all__)
    dask = pytest.importorskip("calframe.frames.dask")
    from calframe.engines.partitions.client import supported

    assert sorted(n for n in dir(dask.DaskCalib) if not n.startswith("_")) == sorted(supported())
    assert set(supported()) <= set(FRAME_FUNCTIONS)


def overconfidence_by_hand(df: pl.DataFrame, bins: int) -> dict[int, float]:
    """sum_b n_b max(conf_b - acc_b, 0) / n per group, from numpy.digitize on linspace edges."""
    out = {}
    for g, part in df.group_by("g"):
        p, y = part["prob"].to_numpy(), part["label"].to_numpy().astype(float)
        b = np.digitize(p, np.linspace(0, 1, bins + 1)[1:-1])
        total = sum(max(p[b == k].mean() - y[b == k].mean(), 0.0) * (b == k).sum() for k in np.unique(b))
        out[g[0]] = total / len(p)
    return out


@pytest.mark.parametrize("flavour", ["polars", "pandas", "lazy", "dask"])
def test_a_new_bin_sum_metric_reaches_every_engine_by_the_recipe(flavour, monkeypatch) -> None:
    """docs/design.md, "Add a metric": a finalize registered in figures.BINNED plus a public function that parses
    with request.py and hands the request (its ``figure``: the finalize's name) to engines.run_binned is computed
    by every engine (eager, LazyFrame streaming, Dask), with no engine code."""

    def overconfidence_figure(req, sums_of, n_classes, count_scale):
        sums = sums_of(0)
        n, conf, acc = sums[..., 0], sums[..., 1], sums[..., 2]
        return np.maximum(conf - acc, 0.0).sum(axis=1) / n.sum(axis=1)  # n_b (conf_b - acc_b)^+ = (S_c - S_a)^+

    monkeypatch.setitem(F.BINNED, "overconfidence", overconfidence_figure)

    def overconfidence(frame, prob=None, label=None, *, bins=15, by=None):
        req = replace(R.ce("overconfidence", "overconfidence", prob=prob, label=label, by=by, bins=bins),
                      figure="overconfidence")
        return run_binned(req, frame)

    rng = np.random.default_rng(3)
    n = 3000
    p = rng.random(n)
    df = pl.DataFrame({"g": rng.integers(0, 4, n), "prob": p, "label": (rng.random(n) < p**1.3).astype(np.int64)})
    got = collected(overconfidence(as_flavour(df, flavour), bins=10, by="g"))
    got = pl.from_pandas(got) if not isinstance(got, pl.DataFrame) else got
    want = overconfidence_by_hand(df, 10)
    assert got.columns == ["g", "n", "overconfidence"]
    for g, v in zip(got["g"].to_list(), got["overconfidence"].to_list()):
        assert v == pytest.approx(want[g], abs=1e-13)
    assert all(v > 0 for v in want.values())


def test_parse_errors_come_before_any_engine() -> None:
    """A bad parameter is refused by request.py whatever the frame (a LazyFrame is not read, a Dask frame not
    computed): the same message everywhere."""
    df = pl.DataFrame({"prob": [0.2, 0.7], "label": [0, 1]})
    msgs = set()
    for flavour in ("polars", "pandas", "lazy", "dask"):
        with pytest.raises(calframe.ParameterError) as info:
            calframe.ece(as_flavour(df, flavour), bins=0)
        msgs.add(str(info.value))
    assert len(msgs) == 1 and "'bins' parameter of ece" in msgs.pop()
