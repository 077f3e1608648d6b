"""The engine recipe holds (issue 29; docs/design.md, "Recipe: add an engine"): an engine is one module with the
protocol plus one line in ``registry.ENGINES``. A toy engine over a list of pyarrow RecordBatches, written here
from that recipe alone, computes the bin sums of its default calls batch by batch (the rows never gathered),
collects every other call, and passes the support matrix's checks: each cell the route names runs and gives the
eager Polars numbers."""

from __future__ import annotations

import sys
import types

import numpy as np
import polars as pl
import pytest

import calframe
from calframe import figures as F
from calframe import registry
from calframe.binning import uniform_bins
from calframe.engines import support
from calframe.registry import Capabilities

pa = pytest.importorskip("pyarrow")

MODULE = "calframe_toy_engine"


class Batches:
    """A frame of this toy kind: the rows as a list of pyarrow RecordBatches."""

    def __init__(self, batches: list) -> None:
        self.batches = batches


def _supports(req, state, frame):
    """The toy sums uniform bins of one binary probability column, unweighted, ungrouped, without intervals."""
    if req.kind != "ce" or state != "bin_sums":
        return f"calframe.{req.func}"
    b = req.binning
    if req.by or req.weights or req.ci is not None or req.variables or b is None or b.scheme != "uniform":
        return "groups, weights, intervals, variables or bins other than uniform"
    if req.lens.kind not in ("class", "auto") or not isinstance(req.prob, (str, type(None))):
        return "a lens other than class:1 on one probability column"
    return None


def _collect(frame: Batches) -> pl.DataFrame:
    gathered.append(frame)
    return pl.from_arrow(pa.Table.from_batches(frame.batches))


def _binned(req, frame: Batches, figures=None):
    """The per-bin sums [rows, sum prob, sum label] added batch by batch (class:1: the probability is the
    confidence, the label the outcome), then the figure table's finalize."""
    sums = np.zeros((1, req.binning.bins, 3))
    prob, label = req.prob or "prob", req.label or "label"
    for batch in frame.batches:
        p = batch.column(prob).to_numpy(zero_copy_only=False).astype(np.float64)
        y = batch.column(label).to_numpy(zero_copy_only=False).astype(np.float64)
        b = uniform_bins(p, req.binning.bins, req.binning.closed)  # the rule every engine renders
        for j, v in enumerate((np.ones_like(p), p, y)):
            sums[0, :, j] += np.bincount(b, weights=v, minlength=req.binning.bins)
    values = F.binned_values(req, lambda c: sums, 1)
    return F.shape(req, values, sums[:, :, 0].sum(axis=1), None, "polars")


gathered: list = []


def toy_module() -> types.ModuleType:
    """The engine module the recipe asks for: capabilities, the route's answers, and one method per native state."""
    m = types.ModuleType(MODULE)
    m.Batches = Batches
    m.NAME = "batches"
    m.CAPABILITIES = {"batches": Capabilities(frozenset({"bin_sums"}), collects=None)}
    m.supports = _supports
    m.refuse = lambda func, kind, why: calframe.ParameterError(f"{func}: {why}")  # never: the toy collects
    m.collect = _collect
    m.binned = _binned
    return m


@pytest.fixture
def toy(monkeypatch):
    """The toy engine registered by its one line (and its kind among the registry's)."""
    module = toy_module()
    monkeypatch.setitem(sys.modules, MODULE, module)
    line = registry.Engine("batches", MODULE, "Batches", MODULE)
    monkeypatch.setattr(registry, "ENGINES", (*registry.ENGINES, line))
    monkeypatch.setattr(registry, "KINDS", (*registry.KINDS, "batches"))
    monkeypatch.setitem(registry.ENGINE_OF, "batches", MODULE)
    gathered.clear()
    return module


def frame(n: int = 3000) -> pl.DataFrame:
    rng = np.random.default_rng(3)
    p = rng.uniform(size=n)
    return pl.DataFrame({"prob": p, "label": (rng.uniform(size=n) < p ** 1.3).astype(np.int64),
                         "g": rng.integers(0, 3, n)})


def batches(df: pl.DataFrame) -> Batches:
    return Batches(df.to_arrow().to_batches(max_chunksize=700))


def test_the_matrix_reads_the_toy_engine(toy) -> None:
    assert registry.kind_of(batches(frame())) == "batches"
    cells = {f: registry.how(f, "batches") for f in support.FUNCTIONS}
    assert {f for f, c in cells.items() if c == "native"} == {
        f for f in support.FUNCTIONS if registry.DECLARED[f].states == ("bin_sums",)}
    assert set(cells.values()) == {"native", "collected"}


@pytest.mark.parametrize("func", ["ece", "mce", "rmsce", "ace", "oe", "ece_split", "brier_decomposition"])
def test_a_native_cell_sums_batch_by_batch_and_gives_the_eager_numbers(toy, func) -> None:
    df = frame()
    got = getattr(calframe, func)(batches(df))
    want = getattr(calframe, func)(df)
    if isinstance(want, float):
        if func == "ace":  # equal-mass bins: outside the toy's uniform bins, so collected
            assert gathered and got == want
            return
        assert got == pytest.approx(want, rel=1e-12, abs=1e-15)
    else:
        assert not isinstance(got, float)
        for c in want.columns:
            assert got[c].to_numpy() == pytest.approx(want[c].to_numpy(), rel=1e-12, abs=1e-15)
    if func != "ace":
        assert not gathered, "a native cell gathered the batches"


@pytest.mark.parametrize(("func", "kwargs"), [
    ("ece", {"by": "g"}),
    ("ece", {"binning": "quantile"}),
    ("ece", {"ci": 0.9, "n_boot": 50}),
    ("brier", {}),
    ("lce", {"features": ["g"]}),
    ("calibration_test", {"by": "g"}),
    ("vece_rank", {}),
])
def test_a_collected_cell_runs_on_the_gathered_batches(toy, func, kwargs) -> None:
    df = frame(600)
    got = getattr(calframe, func)(batches(df), **kwargs)
    want = getattr(calframe, func)(df, **kwargs)
    assert gathered, "a collected cell did not gather the batches"
    if isinstance(want, pl.DataFrame):
        assert got.equals(want)
    else:
        assert got == want
