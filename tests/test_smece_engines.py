"""The smooth ECE where the rows are (issue 24): its grid sums streamed on a LazyFrame, summed by DuckDB / Ibis /
pyarrow (the narwhals engine) and by Dask's partitions, equal to eager Polars to 1e-12; the finer grids of the
bisection (bandwidths below 0.01) are passes of their own for the groups that need them; bad input raises the
eager errors; ``ci=`` is collected where the engine collects and refused where it does not."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import polars as pl
import pytest

import calframe
from calframe import smooth as S
from calframe.engines.plan import grid_sums as GS
from test_error_catalogue import PROBLEMS, _frame, _raised

KINDS = ["lazy", "pyarrow", "duckdb", "ibis", "dask"]


def _data() -> pl.DataFrame:
    """Group "a": 60k calibrated rows (its bandwidth below 0.01: finer grids); "b" and "c": miscalibrated, a few
    rows of "c" with null probabilities; a null group; integer and fractional weights."""
    rng = np.random.default_rng(11)
    parts = []
    for g, n, power in (("a", 60_000, 1.0), ("b", 3000, 2.0), ("c", 800, 0.5), (None, 400, 1.5)):
        p = rng.random(n)
        parts.append(pl.DataFrame({"prob": p, "label": (rng.random(n) < p**power).astype(np.int64),
                                   "g": pl.Series([g] * n, dtype=pl.String), "h": rng.integers(0, 2, n),
                                   "w": rng.integers(0, 4, n) * 0.75, "wi": rng.integers(1, 3, n)}))
    df = pl.concat(parts).sample(fraction=1.0, shuffle=True, seed=3)
    df = df.with_columns(w_scaled=pl.col("w") * pl.when(pl.col("g") == "a").then(1e-3).when(pl.col("g") == "b")
                         .then(1e3).otherwise(1.0))
    return df.with_columns(prob_na=pl.when((pl.col("g") == "c") & (pl.col("h") == 1) & (pl.col("wi") == 2))
                           .then(None).otherwise(pl.col("prob")))


DATA = _data()
CASES = {
    "default": {},
    "by": {"by": "g"},
    "by two keys": {"by": ["g", "h"]},
    "sigma": {"sigma": 0.05, "by": "g"},
    "fine sigma": {"sigma": 0.004, "by": "g"},
    "weights": {"weights": "w", "by": "g"},
    "integer weights": {"weights": "wi"},
    "groups' weight scales": {"weights": "w_scaled", "by": "g"},
    "nulls drop": {"prob": "prob_na", "nulls": "drop", "by": "g", "weights": "w"},
}


def _frame_of(df: pl.DataFrame, kind: str) -> Any:
    if kind == "ibis":
        ibis = pytest.importorskip("ibis")
        return ibis.memtable(df.to_arrow())
    return _frame(df, kind)


def _polars(res: Any) -> Any:
    """A result as eager Polars gives it (a float, or a frame)."""
    if hasattr(res, "compute"):
        res = res.compute()
    if isinstance(res, pl.LazyFrame):
        res = res.collect()
    if isinstance(res, float):
        return res
    if type(res).__module__.startswith("ibis"):
        res = res.to_pyarrow()
    elif hasattr(res, "pl"):  # a DuckDB relation
        res = res.pl()
    return pl.DataFrame(res) if not isinstance(res, pl.DataFrame) else res


def _same(got: Any, want: Any) -> None:
    if isinstance(want, float):
        if isinstance(got, pl.DataFrame):  # a one-row frame: n and the figure
            got = got.item(0, "smece")
        assert got == pytest.approx(want, rel=1e-12, abs=1e-15)
        return
    keys = [c for c in want.columns if c not in ("n", "smece")]
    got = got.sort(keys, nulls_last=True) if keys else got
    assert got.columns == want.columns
    assert got["n"].to_list() == want["n"].to_list()
    for c in keys:
        assert got[c].to_list() == want[c].to_list()
    np.testing.assert_allclose(got["smece"].to_numpy(), want["smece"].to_numpy(), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", list(CASES))
def test_equals_eager(kind: str, case: str) -> None:
    kwargs = CASES[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nulls="drop" warns alike (test_dropped_nulls_warn_alike)
        want = calframe.smece(DATA, **kwargs)
        res = calframe.smece(_frame_of(DATA, kind), **kwargs)
        if kind == "lazy":
            assert isinstance(res, pl.LazyFrame)
        _same(_polars(res), want)


def _edges() -> pl.DataFrame:
    """Two groups of 1000 rows, a tenth of them with a probability of exactly 0.0 or 1.0 (the last node of the grid:
    its left node is m - 2, its right m - 1), some of those labelled against it; integer weights."""
    rng = np.random.default_rng(34)
    n = 2000
    p = rng.random(n) ** 1.5
    p[rng.random(n) < 0.05] = 0.0
    p[rng.random(n) < 0.05] = 1.0
    y = (rng.random(n) < np.clip(p * 0.9 + 0.05, 0, 1)).astype(np.int64)
    return pl.DataFrame({"prob": p, "label": y, "g": np.repeat(["a", "b"], n // 2), "wi": rng.integers(1, 4, n)})


EDGES = _edges()


@pytest.mark.parametrize("kind", ["lazy", "duckdb", "pyarrow"])
@pytest.mark.parametrize("kwargs", [{}, {"by": "g", "weights": "wi"}, {"by": "g", "sigma": 0.05}],
                         ids=["default", "by weights", "by sigma"])
def test_probabilities_of_exactly_0_and_1(kind: str, kwargs: dict[str, Any]) -> None:
    """Issue 34: rows at x = 0.0 and x = 1.0 stream as eager Polars spreads them (a planted left node
    clip(0, m - 1) put x = 1.0 on node m - 1 and its right half on node m, past the grid)."""
    assert ((EDGES["prob"] == 0.0).sum() > 0) and ((EDGES["prob"] == 1.0).sum() > 0)
    _same(_polars(calframe.smece(_frame_of(EDGES, kind), **kwargs)), calframe.smece(EDGES, **kwargs))


@pytest.mark.parametrize("kind", ["lazy", "duckdb"])
@pytest.mark.parametrize("lens", ["top1", "class:2"])
def test_class_columns_and_lenses(kind: str, lens: str) -> None:
    rng = np.random.default_rng(5)
    raw = rng.random((4000, 3)) ** 2
    p = raw / raw.sum(axis=1, keepdims=True)
    y = np.array([rng.choice(3, p=row) for row in p])
    df = pl.DataFrame({"p0": p[:, 0], "p1": p[:, 1], "p2": p[:, 2], "label": y, "g": y % 2})
    kwargs = {"prob": ["p0", "p1", "p2"], "lens": lens, "by": "g"}
    _same(_polars(calframe.smece(_frame_of(df, kind), **kwargs)), calframe.smece(df, **kwargs))


@pytest.mark.parametrize("lens", ["top1", "class:0"])
def test_an_array_column_streams(lens: str) -> None:
    rng = np.random.default_rng(6)
    raw = rng.random((3000, 3))
    p = raw / raw.sum(axis=1, keepdims=True)
    df = pl.DataFrame({"probs": p, "label": rng.integers(0, 3, 3000)})
    assert isinstance(df.schema["probs"], pl.Array)
    got = calframe.smece(df.lazy(), prob="probs", lens=lens)
    _same(_polars(got), calframe.smece(df, prob="probs", lens=lens))


@pytest.mark.parametrize("kind", ["lazy", "duckdb"])
def test_finer_grids_are_passes_for_the_groups_that_need_them(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Group "a"'s bandwidth is below 0.01: its finer grids are passes of their own, for it alone."""
    asked = []
    more = GS._Pass.more

    def spy(self: Any, sel: np.ndarray, m: int) -> np.ndarray:
        asked.append((sel.tolist(), m))
        return more(self, sel, m)

    monkeypatch.setattr(GS._Pass, "more", spy)
    out = _polars(calframe.smece(_frame_of(DATA, kind), by="g"))
    assert asked and all(sel == [0] and m > S.COARSE_NODES for sel, m in asked), asked  # "a" is group 0
    _same(out, calframe.smece(DATA, by="g"))


def test_finer_grids_on_dask_are_passes_for_the_groups_that_need_them(monkeypatch: pytest.MonkeyPatch) -> None:
    from calframe.engines.partitions import grids as GD

    asked = []
    rows = GD._grid_rows

    def spy(pdf: Any, spec: Any, meta: Any, m: int, wanted: Any) -> Any:
        asked.append((None if wanted is None else sorted(wanted), m))
        return rows(pdf, spec, meta, m, wanted)

    monkeypatch.setattr(GD, "_grid_rows", spy)
    out = _polars(calframe.smece(_frame_of(DATA, "dask"), by="g"))
    later = [a for a in asked if a[0] is not None]
    assert {m for w, m in asked if w is None} == {S.COARSE_NODES}
    assert later and all(w == [("a",)] and m > S.COARSE_NODES for w, m in later), later
    _same(out, calframe.smece(DATA, by="g"))


@pytest.mark.parametrize("kind", ["polars", "lazy", "duckdb", "dask"])
def test_many_groups_are_taken_in_chunks(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 31, 2: the grids held at once are those of ``GROUP_CHUNK`` groups (every group's 1001-node grid was
    held at once: 1e6 one-row groups took 16 GB), a Dask partition's those of one pass (``GRID_BUDGET``), and the
    figures are those of all the groups at once, bit for bit, finer grids included (group ("a", h))."""
    kwargs = {"by": ["g", "h"], "weights": "w"}
    want = _polars(calframe.smece(_frame_of(DATA, kind), **kwargs))
    assert want.height == 8
    held: list[int] = []
    spectra, node_grids = S.spectra, S.node_grids

    def spectra_spy(values: np.ndarray) -> np.ndarray:
        held.append(values.shape[0])
        return spectra(values)

    def node_grids_spy(*args: Any) -> np.ndarray:
        out = node_grids(*args)
        held.append(out.shape[0])
        return out

    monkeypatch.setattr(S, "GROUP_CHUNK", 3)
    monkeypatch.setattr(S, "GRID_BUDGET", 2 * 2 * S.COARSE_NODES)
    monkeypatch.setattr(S, "spectra", spectra_spy)
    monkeypatch.setattr(S, "node_grids", node_grids_spy)
    got = _polars(calframe.smece(_frame_of(DATA, kind), **kwargs))
    assert held and max(held) <= 3, held
    assert got.equals(want)


@pytest.mark.parametrize("kind", ["lazy", "duckdb"])
def test_same_bits_on_every_run(kind: str) -> None:
    frame = _frame_of(DATA, kind)
    runs = [_polars(calframe.smece(frame, by="g", weights="w"))["smece"].to_list() for _ in range(3)]
    assert runs[0] == runs[1] == runs[2]


#: the catalogue's problems a smece call meets (no variable, no bins)
SMECE_PROBLEMS = [k for k, (_, _, kw, _, _) in PROBLEMS.items() if set(kw) <= {"prob", "weights", "by", "nulls"}]


@pytest.mark.parametrize("problem", SMECE_PROBLEMS)
def test_bad_input_raises_the_eager_error(problem: str) -> None:
    df, _, kwargs, exc_type, _ = PROBLEMS[problem]
    want = _raised(df, "smece", kwargs)
    assert type(want) is exc_type, (type(want), str(want))
    for kind in ("lazy", "duckdb", "pyarrow", "dask"):
        got = _raised(_frame(df, kind), "smece", kwargs)
        assert (type(got), str(got)) == (type(want), str(want)), kind


def test_a_lazy_result_reads_the_rows_at_collect() -> None:
    """The schema's errors are raised by the call, the data's at collect (spec section 8, "Lazy in, lazy out")."""
    bad = pl.LazyFrame({"prob": [0.2, 1.5], "label": [0, 1]})
    out = calframe.smece(bad)
    assert isinstance(out, pl.LazyFrame)
    with pytest.raises(calframe.InvalidValueError, match="outside"):
        out.collect()
    with pytest.raises(calframe.ColumnNotFoundError):
        calframe.smece(bad, prob="nope")


def test_ci_needs_the_rows() -> None:
    """ci= is collected on a LazyFrame, a pyarrow Table and Dask (eager Polars' numbers) and refused by DuckDB."""
    df = DATA.head(3000)
    kwargs = {"by": "g", "ci": 0.9, "n_boot": 20}
    want = calframe.smece(df, **kwargs)
    for kind in ("lazy", "pyarrow", "dask"):
        got = _polars(calframe.smece(_frame(df, kind), **kwargs))
        for c in ("smece", "smece_lo", "smece_hi"):
            np.testing.assert_allclose(got[c].to_numpy(), want[c].to_numpy(), rtol=1e-12, err_msg=kind)
    with pytest.raises(calframe.ParameterError, match="ci= is not supported on a DuckDB relation"):
        calframe.smece(_frame(df, "duckdb"), **kwargs)


@pytest.mark.spark
def test_equals_eager_on_spark(spark: Any) -> None:
    """Spark sums each fixed-point value as two Int64 parts (negative residuals too): weights and a bandwidth whose
    finer grid is a second query (by= alone is the support matrix's cell)."""
    kwargs = {**CASES["weights"], "sigma": 0.004}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = calframe.smece(spark.createDataFrame(DATA.to_arrow()), **kwargs)
        _same(pl.from_arrow(res.toArrow()), calframe.smece(DATA, **kwargs))
