"""Every metric family gives the same numbers on every surface: Polars eager, Polars lazy (streamed from
Parquet), pandas (numpy- and Arrow-backed), Dask (several partitions, the synchronous scheduler here;
tests/test_dask.py runs a 2-worker cluster) and the narwhals engine's frames: a DuckDB relation, an Ibis table
on DuckDB, a pyarrow Table and a PySpark DataFrame (local[2], marked ``spark``). The calls the narwhals engine
does not run raise a ParameterError on DuckDB, Ibis and Spark (a pyarrow Table runs them eagerly)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pytest

import calframe

SURFACES = ["polars", "lazy", "pandas", "pandas_arrow", "dask", "duckdb", "ibis", "pyarrow",
            pytest.param("spark", marks=pytest.mark.spark)]
#: surfaces whose result without ``by`` is a one-row frame (``n`` and the figure): lazy in, lazy out
LAZY = ("lazy", "duckdb", "ibis", "spark")
#: surfaces that refuse the calls the narwhals engine does not run
NARROW = ("duckdb", "ibis", "spark")


@pytest.fixture(scope="module")
def duck(data):
    """The data as a DuckDB table (and an Ibis connection to it)."""
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    con.register("source", data["df"].to_arrow())
    con.execute("CREATE TABLE scores AS SELECT * FROM source")
    yield con
    con.close()


@pytest.fixture
def surf_frame(request, data):
    """``surface(name, data)``, the fixtures the narwhals surfaces need requested only for them."""

    def make(name: str) -> object:
        if name in ("duckdb", "ibis"):
            con = request.getfixturevalue("duck")
            if name == "duckdb":
                return con.table("scores")
            ibis = pytest.importorskip("ibis")
            return ibis.duckdb.from_connection(con).table("scores")
        if name == "spark":
            return request.getfixturevalue("spark").createDataFrame(data["df"].to_arrow())
        if name == "pyarrow":
            return data["df"].to_arrow()
        return surface(name, data)

    return make


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, object]:
    df = calframe.datasets.grouped_miscalibration(n=6000, seed=11, age_shift=0.1)
    # values exactly on bin edges, 0 and 1
    edges = np.concatenate([np.linspace(0, 1, 16), [0.0, 1.0, 0.5]])
    extra = pl.DataFrame({"prob": edges, "label": (np.arange(edges.size) % 2).astype(np.int8),
                          "region": ["north"] * edges.size, "age": np.arange(edges.size) + 20,
                          "device": ["tablet"] * edges.size})
    df = pl.concat([df, extra])
    # a row id (apply's rows are compared by it) and a time (monitor's windows): two days
    df = df.with_row_index("rid").with_columns(pl.col("rid").cast(pl.Int64)).with_columns(
        ts=pl.datetime(2024, 1, 1) + pl.duration(minutes=pl.col("rid").cast(pl.Int64) * 23 % 2880))
    path = tmp_path_factory.mktemp("surf") / "scores.parquet"
    df.write_parquet(path)
    return {"df": df, "path": path}


def surface(name: str, data: dict) -> object:
    df: pl.DataFrame = data["df"]  # type: ignore[assignment]
    if name == "polars":
        return df
    if name == "lazy":
        return pl.scan_parquet(data["path"])
    if name == "pandas":
        return df.to_pandas()
    if name == "pandas_arrow":
        return df.to_pandas(use_pyarrow_extension_array=True)
    dd = pytest.importorskip("dask.dataframe", reason="the dask extra is not installed")
    pytest.importorskip("calframe.frames.dask")
    import calframe.frames.dask  # noqa: F401  (registers ddf.calib)

    return dd.from_pandas(df.to_pandas(), npartitions=4)


CALLS = {
    "ece": ("ece", {}),
    "ece_by": ("ece", {"by": "region"}),
    "ece_class1_right": ("ece", {"lens": "class:1", "closed": "right", "by": "device"}),
    "ece_quantile": ("ece", {"binning": "quantile", "bins": 10, "by": "region"}),
    "ece_equal_mass": ("ece", {"binning": "equal_mass", "by": "region"}),
    "mce": ("mce", {"by": "region"}),
    "rmsce": ("rmsce", {}),
    "ce_debiased": ("ce", {"p": 2, "estimator": "debiased", "by": "region"}),
    "vece_numeric": ("vece", {"variable": "age", "by": "device"}),
    "vece_categorical": ("vece", {"variable": "region"}),
    "vmce": ("vmce", {"variable": "age"}),
    "brier": ("brier", {"by": "region"}),
    "log_loss": ("log_loss", {}),
    "accuracy": ("accuracy", {"by": "device"}),
    "gece": ("gece", {}),
    "gece_by": ("gece", {"by": "region", "lens": "top1", "bins": 10}),
    "vece_rank": ("vece_rank", {"variables": ["age", "region"]}),
}


def call(frame: object, fn: str, kwargs: dict) -> object:
    kw = dict(kwargs)
    variable = kw.pop("variable", None)
    handle = frame.calib if isinstance(frame, (pl.DataFrame, pl.LazyFrame, pd.DataFrame)) else calframe.calib(frame)
    method = getattr(handle, fn)
    res = method(variable, **kw) if variable is not None else method(**kw)
    if hasattr(res, "compute"):
        res = res.compute()
    if isinstance(res, pl.LazyFrame):  # lazy in, lazy out (spec section 8): its numbers are compared collected
        res = res.collect()
    return res


def as_polars(res: object) -> object:
    if isinstance(res, pd.DataFrame):
        return pl.from_pandas(res.reset_index(drop=True))
    if isinstance(res, (float, pl.DataFrame)):
        return res
    for convert in ("pl", "to_polars"):  # DuckDB relation, Ibis table
        if hasattr(res, convert):
            return getattr(res, convert)()
    if hasattr(res, "toArrow"):  # PySpark
        return pl.from_arrow(res.toArrow())
    return pl.from_arrow(res)  # pyarrow


@pytest.mark.parametrize("name", list(CALLS))
@pytest.mark.parametrize("surf", SURFACES[1:])
def test_same_numbers_on_every_surface(data, surf_frame, surf, name):
    fn, kwargs = CALLS[name]
    expected = call(data["df"], fn, kwargs)
    if surf in NARROW and fn in ("vece_rank",):
        with pytest.raises(calframe.ParameterError, match=f"calframe.{fn} is not supported on"):
            call(surf_frame(surf), fn, kwargs)
        return
    got = as_polars(call(surf_frame(surf), fn, kwargs))
    if isinstance(expected, float):
        if surf in LAZY:  # a one-row frame: n and the figure
            assert isinstance(got, pl.DataFrame) and got.height == 1 and got.columns[0] == "n"
            got = got.item(0, 1)
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-15)
        return
    assert isinstance(got, pl.DataFrame)
    assert got.columns == expected.columns
    assert got["n"].to_list() == expected["n"].to_list()
    for col in expected.columns:  # the group keys in the same (sorted) order, the figures to 1e-12
        if expected[col].dtype.is_float():
            np.testing.assert_allclose(got[col].to_numpy(), expected[col].to_numpy(), rtol=1e-12, atol=1e-15)
        else:  # keys, and text columns such as vece_rank's `leak`
            assert [str(v) for v in got[col].to_list()] == [str(v) for v in expected[col].to_list()]


@pytest.mark.parametrize("surf", SURFACES[1:])
def test_reliability_on_every_surface(data, surf_frame, surf):
    expected = call(data["df"], "reliability", {"by": "region", "bins": 10})
    got = as_polars(call(surf_frame(surf), "reliability", {"by": "region", "bins": 10}))
    assert got.shape == expected.shape
    for col in ("n", "bin"):
        assert got[col].to_list() == expected[col].to_list()
    for col in ("conf", "acc", "gap", "weight"):
        np.testing.assert_allclose(got[col].to_numpy(), expected[col].to_numpy(), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("surf", SURFACES[1:])
def test_summary_on_every_surface(data, surf_frame, surf):
    expected = call(data["df"], "summary", {"by": "region"})
    got = as_polars(call(surf_frame(surf), "summary", {"by": "region"}))
    assert got.columns == expected.columns
    assert got["region"].to_list() == expected["region"].to_list() and got["n"].to_list() == expected["n"].to_list()
    for col in expected.columns[2:]:
        np.testing.assert_allclose(got[col].to_numpy(), expected[col].to_numpy(), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("surf", SURFACES[1:])
def test_equal_mass_bins_equal_get_equal_bins_on_every_surface(data, surf_frame, surf):
    """Each region's equal-mass edges (reliability's ``upper``), bin counts and ECE equal uncertainty-calibration's
    get_equal_bins and get_bin on that region's rows: every engine builds these edges in binning.edge_table, so the
    comparisons with eager above cannot see a bug there."""
    kumar = pytest.importorskip("calibration.utils")
    df: pl.DataFrame = data["df"]  # type: ignore[assignment]
    options = {"binning": "equal_mass", "bins": 15, "by": "region", "lens": "class:1"}
    table = as_polars(call(surf_frame(surf), "reliability", options))
    figures = as_polars(call(surf_frame(surf), "ece", options))
    regions = sorted(df["region"].unique().to_list())
    assert [str(r) for r in figures["region"].to_list()] == regions
    for region, figure in zip(regions, figures["ece"].to_list()):
        rows = df.filter(pl.col("region") == region)
        p, y = rows["prob"].to_numpy(), rows["label"].to_numpy()
        edges = kumar.get_equal_bins(list(p), num_bins=15)
        ids = np.array([kumar.get_bin(v, edges) for v in p])
        counts = np.bincount(ids, minlength=len(edges))
        mine = table.filter(pl.col("region").cast(pl.String) == region)
        assert mine["upper"].to_list() == [e for e, c in zip(edges, counts) if c]
        assert mine["n"].to_list() == [c for c in counts if c]
        assert figure == pytest.approx(np.abs(np.bincount(ids, weights=p - y)).sum() / p.size, rel=1e-12, abs=1e-15)


# --------------------------------------------------------------------------- the support matrix (docs/engines.md)

from calframe.engines import support as S  # noqa: E402

#: the kinds of frame of the matrix, as this module's surfaces
KIND_SURFACE = {"polars": "polars", "pandas": "pandas", "lazy": "lazy", "pyarrow": "pyarrow", "duckdb": "duckdb",
                "ibis": "ibis", "spark": "spark", "dask": "dask"}
#: a representative call of every function of the matrix: positional arguments after the frame, keywords
#: the call each cell runs (beyond the frame); a figure not listed runs with by="region"
MATRIX_CALLS = {
    "ce": ((), {"p": 2, "by": "region"}),
    "ece": ((), {"by": "region"}),
    "mce": ((), {}),
    "rmsce": ((), {"by": "device"}),
    "reliability": ((), {"by": "region", "bins": 10}),
    "brier": ((), {"by": "region"}),
    "log_loss": ((), {}),
    "accuracy": ((), {"by": "device"}),
    "summary": ((), {"by": "region"}),
    "disparity": (("ece",), {"by": "region", "n_boot": 200}),  # its default ci=0.95
    "smece": ((), {"by": "region"}),
    "gece": ((), {"lens": "top1", "bins": 10}),
    "vece": (("age",), {"by": "device"}),
    "vmce": (("age",), {}),
    "vece_rank": ((["age", "region"],), {}),
    "vce_curve": (("age",), {"n_boot": 0}),
    "lce": ((["age"],), {"gamma": 0.3}),
    "mlce": ((["age"],), {"gamma": 0.3, "by": "region"}),
    "mlce_curve": ((["age"],), {"gammas": [0.2, 0.5]}),
    "calibration_test": ((), {"by": "region", "n_sim": 200}),
    "monitor": (("ts",), {"every": "1d"}),
    "corp_decomposition": ((), {"by": "region", "score": "log_loss"}),
    "calibration_belt": ((), {"by": "region", "clip": 1e-6}),  # the data hold predictions of 0 and 1
    "calibration_belt_bands": ((), {"by": "region", "points": 10, "confidence": 0.95, "clip": 1e-6}),
    "fit": (("platt",), {}),
    "apply": ((), {"name": "q"}),
}
CELLS = [pytest.param(f, k, marks=[pytest.mark.spark] if k == "spark" else [], id=f"{f}-{k}")
         for f in S.FUNCTIONS for k in S.KINDS]


def test_the_matrix_has_a_call_for_every_function_and_the_page_is_generated():
    assert set(MATRIX_CALLS) <= set(S.FUNCTIONS)
    from calframe.frames.namespace import FRAME_FUNCTIONS

    assert set(S.FUNCTIONS) == set(FRAME_FUNCTIONS)
    page = Path(__file__).resolve().parents[1] / "docs" / "engines.md"
    assert page.read_text(encoding="utf-8") == S.page(), "regenerate: python -m calframe.engines.support > docs/engines.md"


def _comparable(res: object, fn: str, data: dict) -> object:
    """A result as something to compare with eager Polars': a float, a Polars frame (apply's: by row id)."""
    if hasattr(res, "compute"):
        res = res.compute()
    if fn == "vce_curve":
        return as_polars(res.summary)
    if fn == "fit":  # the recalibrator: its predictions on the rows
        return calframe.apply(data["df"], res, name="q").select("rid", "q")
    if isinstance(res, pl.LazyFrame):
        res = res.collect()
    out = as_polars(res)
    if fn == "apply":
        out = out.select("rid", "q").sort("rid")
    return out


def _same(got: object, expected: object) -> None:
    if isinstance(expected, float):
        if isinstance(got, pl.DataFrame):  # lazy in, lazy out: a one-row frame, n and the figure
            assert got.height == 1 and got.columns[0] == "n"
            got = got.item(0, 1)
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-15)
        return
    assert isinstance(got, pl.DataFrame), type(got)
    assert got.columns == expected.columns
    for col in expected.columns:
        if got[col].dtype == pl.Datetime("us", "UTC") and expected[col].dtype == pl.Datetime("us"):
            got = got.with_columns(pl.col(col).dt.replace_time_zone(None))  # Spark's timestamps: its session's UTC
        if expected[col].dtype.is_float():
            np.testing.assert_allclose(got[col].to_numpy(), expected[col].to_numpy(), rtol=1e-12, atol=1e-15)
        else:
            assert [str(v) for v in got[col].to_list()] == [str(v) for v in expected[col].to_list()], col


class RowSpy:
    """What an engine hands to Python: every materialization (a LazyFrame's or a narwhals frame's collect, a
    pyarrow Table made a Polars frame, ``dask.compute``) that brings ``limit`` rows or more into this process,
    while the call runs and while its result (lazy, or a Dask result) is computed. A figure's result has a row
    per group: far fewer."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
        self.limit, self.big = limit, []
        # exact order statistics gather the values of the cells that hold the wanted ranks once those number at
        # most COLLECT_BUDGET (4e6: all of them, in this small data): a small budget here, so that the spy sees
        # the refinement an engine does at scale
        from calframe.engines.streaming import streamed as lazy

        monkeypatch.setattr(lazy, "COLLECT_BUDGET", limit // 10)
        nw = pytest.importorskip("narwhals")
        self._wrap(monkeypatch, pl.LazyFrame, "collect")
        self._wrap(monkeypatch, pl, "from_arrow")
        self._wrap(monkeypatch, nw.LazyFrame, "collect")
        dask = __import__("sys").modules.get("dask")
        if dask is not None:
            self._wrap(monkeypatch, dask, "compute")
            # a Dask result's graph hands its value to calframe's continuation (engines/dask.py: _then): a
            # collected call's value is the rows
            from calframe.engines.partitions import client as engine

            then, spy = engine._then, self

            def handed(results: object, finish, args, cont):  # type: ignore[no-untyped-def]
                def measured(*a: object) -> object:
                    value = finish(*a)
                    if spy.rows(value) >= spy.limit:
                        spy.big.append(f"a Dask result's graph handed {spy.rows(value)} rows to calframe")
                    return value

                return then(results, measured, args, cont)

            monkeypatch.setattr(engine, "_then", handed)

    @staticmethod
    def rows(out: object) -> int:
        if isinstance(out, tuple):
            return max((RowSpy.rows(o) for o in out), default=0)
        for attr in ("height", "num_rows"):
            if isinstance(getattr(out, attr, None), int):
                return getattr(out, attr)
        try:
            return len(out)  # type: ignore[arg-type]
        except TypeError:
            return 0

    def _wrap(self, monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> None:
        original, spy = getattr(owner, name), self

        def wrapper(*args: object, **kwargs: object) -> object:
            out = original(*args, **kwargs)
            n = spy.rows(out)
            if n >= spy.limit:
                spy.big.append(f"{getattr(owner, '__name__', owner)}.{name} brought {n} rows into Python")
            return out

        monkeypatch.setattr(owner, name, wrapper)


@pytest.mark.parametrize("fn, kind", CELLS)
def test_support_matrix_cell(data, surf_frame, fn, kind, monkeypatch):
    """Every cell of docs/engines.md: a refused cell raises an error saying what runs; any other gives eager
    Polars' numbers (to 1e-12), and a LazyFrame's result is a LazyFrame where the matrix says so. A "streamed" or
    "native" cell brings no rows into Python (:class:`RowSpy`: nothing of half the rows or more), computing or
    collecting its result."""
    how = S.cell(fn, kind)
    args, kwargs = MATRIX_CALLS.get(fn, ((), {"by": "region"}))
    if fn == "apply":
        args = (calframe.fit(data["df"], "platt"),)
    frame = surf_frame(KIND_SURFACE[kind])
    if how == "refused":
        with pytest.raises((calframe.ParameterError, calframe.ColumnTypeError), match="not supported"):
            getattr(calframe, fn)(frame, *args, **kwargs)
        return
    expected = _comparable(getattr(calframe, fn)(data["df"], *args, **kwargs), fn, data)
    spy = RowSpy(monkeypatch, data["df"].height // 2) if how in ("streamed", "native") and fn != "apply" else None
    res = getattr(calframe, fn)(frame, *args, **kwargs)
    if kind == "lazy" and fn not in ("vce_curve", "fit"):
        assert isinstance(res, pl.LazyFrame), type(res)  # lazy in, lazy out
    got = _comparable(res, fn, data)
    if spy is not None:
        monkeypatch.undo()
        assert not spy.big, f"docs/engines.md says {how}, but: {spy.big}"
    _same(got, expected)
