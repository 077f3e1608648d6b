"""One route (issue 29): :func:`calframe.registry.route` is the one decision of where a call runs, from the parsed
request (its states and its parameters), asked of each engine's ``supports``; the support matrix and the refusals
come from it, nothing retries by exception, and a call detects its frame's kind once."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import calframe
from calframe import registry
from calframe import request as R
from calframe.engines import support

duckdb = pytest.importorskip("duckdb")
pa = pytest.importorskip("pyarrow")


def frame(n: int = 200) -> pl.DataFrame:
    rng = np.random.default_rng(0)
    p = rng.uniform(size=n)
    return pl.DataFrame({"prob": p, "label": (rng.uniform(size=n) < p).astype(np.int64), "g": rng.integers(0, 3, n)})


def test_the_matrix_is_the_route_of_each_default_call() -> None:
    for f in support.FUNCTIONS:
        for kind in support.KINDS:
            assert support.cell(f, kind) == registry.route(f, kind=kind).how


@pytest.mark.parametrize(("options", "why"), [
    ({"binning": "sweep"}, "binning='sweep'"),
    ({"lens": "marginal"}, "the marginal lens"),
    ({"ci": 0.9, "bootstrap": "rows"}, "ci= with bootstrap='rows'"),
])
def test_a_parameter_the_engine_does_not_run_is_collected_or_refused_by_the_route(options, why) -> None:
    """The same parsed request: refused on DuckDB (the refusal names what), collected on a pyarrow Table and a
    LazyFrame, eager in memory, native without the parameter."""
    df = frame()
    rel = duckdb.from_arrow(df.to_arrow())
    req = R.ce("ece", "ece", **options)
    assert registry.route(req, rel, state="bin_sums") == registry.Route("duckdb", "refused", why)
    assert registry.route(req, df.to_arrow(), state="bin_sums") == registry.Route("pyarrow", "collected", why)
    assert registry.route(req, df.lazy(), state="bin_sums") == registry.Route("lazy", "collected", why)
    assert registry.route(req, df, state="bin_sums") == registry.Route("polars", "eager")
    assert registry.route(R.ce("ece", "ece"), rel, state="bin_sums").how == "native"
    with pytest.raises(calframe.ParameterError, match=why.replace("(", r"\(").replace(")", r"\)")):
        calframe.ece(rel, **options)


def test_a_list_probability_column_is_collected_on_a_table_and_refused_on_duckdb() -> None:
    df = frame().with_columns(probs=pl.concat_list(1 - pl.col("prob"), pl.col("prob")))
    req = R.ce("ece", "ece", "probs")
    assert registry.route(req, df.to_arrow(), state="bin_sums").how == "collected"
    assert registry.route(req, df.lazy(), state="bin_sums").how == "collected"
    got = calframe.ece(df.to_arrow(), prob="probs")
    assert got == calframe.ece(df, prob="probs")


def test_a_collected_call_on_a_pyarrow_table_is_parsed_once(monkeypatch) -> None:
    """The engine's refusal used to be caught and the whole function run again on a Polars copy (its request
    parsed twice); the route collects the Table where the call is parsed."""
    parses = []
    ce = R.ce

    def counted(*args, **kwargs):
        parses.append(args[:1])
        return ce(*args, **kwargs)

    monkeypatch.setattr(R, "ce", counted)
    df = frame()
    out = calframe.ece(df.to_arrow(), by="g", binning="sweep")
    assert len(parses) == 1
    assert isinstance(out, pa.Table)
    assert pl.from_arrow(out).equals(calframe.ece(df, by="g", binning="sweep"))


def test_a_call_detects_its_frame_kind_once(monkeypatch) -> None:
    """``kind_of`` tries the registry's classes in turn; inside a public call it answers for the call's frame from
    what the call's entry detected (registry.calling_on)."""
    rel = duckdb.from_arrow(frame().to_arrow())
    calframe.ece(rel, by="g")  # imports and compiles first
    tried = []
    instance = registry.instance

    def counted(obj, module, name):
        if obj is rel:
            tried.append((module, name))
        return instance(obj, module, name)

    monkeypatch.setattr(registry, "instance", counted)
    calframe.ece(rel, by="g")
    once = [(e.module, e.cls) for e in registry.ENGINES[:[e.kind for e in registry.ENGINES].index("duckdb") + 1]]
    assert tried == once
