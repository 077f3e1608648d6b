"""calframe.sql: the generated SQL matches calframe's numbers in Polars SQL and DuckDB.

Every query runs unchanged in both engines. The data put probabilities (and
variable values) exactly on every bin edge, linspace and i/B alike, and one
ulp either side, so that a bin assignment that differs from calframe's on an
edge shows up as a mismatch.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import polars as pl
import pytest

import calframe
from calframe import sql

TOL = 1e-12
ENGINES = ["polars", "duckdb"]


def _duckdb():
    return pytest.importorskip("duckdb", reason="duckdb is not installed (pip install duckdb: a test extra)")


def run(engine: str, query: str, frames: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Execute ``query`` unchanged in ``engine`` with ``frames`` registered under their names."""
    if engine == "polars":
        return pl.SQLContext(frames=frames).execute(query, eager=True)
    duckdb = _duckdb()
    con = duckdb.connect()
    try:
        for name, df in frames.items():
            con.register(name, df.to_arrow())
        return pl.from_arrow(con.sql(query).to_arrow_table())
    finally:
        con.close()


def edge_values(bins: tuple[int, ...] = (15, 10, 7, 4)) -> np.ndarray:
    """0, 1, every linspace and i/B edge, their complements, and one ulp either side of each."""
    vals = [0.0, 1.0, 0.5]
    for b in bins:
        e = np.concatenate([np.linspace(0, 1, b + 1), np.arange(b + 1) * 1.0 / b])
        vals.extend(e)
        vals.extend(1.0 - e)
    v = np.array(vals)
    v = np.concatenate([v, np.nextafter(v, -1.0), np.nextafter(v, 2.0)])
    return np.clip(v, 0.0, 1.0)


@pytest.fixture(scope="module")
def df() -> pl.DataFrame:
    rng = np.random.default_rng(20240611)
    edges = edge_values()
    n = 900
    p = np.concatenate([edges, rng.random(n - edges.size)])
    rng.shuffle(p)
    label = (rng.random(n) < p**1.2).astype(np.int64)
    age = rng.integers(18, 80, n).astype(np.float64)
    age[:40] = np.repeat([18.0, 30.0, 45.0, 60.0, 79.0], 8)  # ties and values on explicit edges
    return pl.DataFrame(
        {
            "prob": p,
            "label": label,
            "g": rng.integers(0, 3, n),
            "s": rng.choice(["north", "south", "east"], n).tolist(),
            "age": age,
            "level": rng.integers(0, 4, n).astype(np.float64),  # heavy ties: duplicate quantile edges
            "region": rng.choice(["a", "b", "c", "d", "e"], n).tolist(),
            "flag": rng.random(n) < 0.3,
        }
    )


def compare(got: pl.DataFrame, want, keys: list[str], figure: str) -> None:
    """Same groups in the same order (keys sorted, nulls last), same n, figure within TOL."""
    if not isinstance(want, pl.DataFrame):
        assert got.height == 1
        assert got[figure][0] == pytest.approx(want, abs=TOL)
        return
    want = want.sort(keys, nulls_last=True)
    assert got.columns == [*keys, "n", figure]
    assert got.select(keys).to_dicts() == want.select(keys).to_dicts()
    assert got["n"].to_list() == want["n"].to_list()
    np.testing.assert_allclose(got[figure].to_numpy(), want[figure].to_numpy(), rtol=0, atol=TOL)


# --------------------------------------------------------------------------- ECE / MCE / RMSCE

FIGURES = {"ece": (sql.ece_query, calframe.ece), "mce": (sql.mce_query, calframe.mce), "rmsce": (sql.rmsce_query, calframe.rmsce)}
BYS = [None, "g", "s", ["s", "g"]]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("by", BYS, ids=str)
@pytest.mark.parametrize("closed", ["left", "right"])
@pytest.mark.parametrize("lens", ["top1", "class:1", "class:0"])
def test_ce_family_matches_calframe(engine, df, by, closed, lens):
    keys = [] if by is None else [by] if isinstance(by, str) else by
    for figure, (make_query, reference) in FIGURES.items():
        for bins in (15, 7) if lens == "class:1" else (15,):
            q = make_query("scores", prob="prob", label="label", by=by, bins=bins, closed=closed, lens=lens)
            got = run(engine, q, {"scores": df})
            want = reference(df, "prob", "label", by=by, bins=bins, closed=closed, lens=lens)
            compare(got, want, keys, figure)


@pytest.mark.parametrize("engine", ENGINES)
def test_ce_query_p_and_explicit_edges(engine, df):
    edges = [0.0, 0.2, 0.5, 0.7, 0.9, 1.0]
    for p, ref in ((1, calframe.ece), (2, calframe.rmsce), ("inf", calframe.mce), (float("inf"), calframe.mce)):
        for closed in ("left", "right"):
            q = sql.ce_query("scores", prob="prob", label="label", p=p, bins=edges, closed=closed, by="g", name="x")
            want = ref(df, "prob", "label", bins=edges, closed=closed, by="g").rename({ref.__name__: "x"})
            compare(run(engine, q, {"scores": df}), want, ["g"], "x")


@pytest.mark.parametrize("engine", ENGINES)
def test_null_group_key_and_null_rows(engine, df):
    """A NULL key is its own group (sorted last); rows with a NULL prob/label are dropped (nulls="drop")."""
    d = df.with_columns(
        s=pl.when(pl.col("g") == 0).then(None).otherwise(pl.col("s")),
        prob=pl.when(pl.int_range(pl.len()) % 17 == 3).then(None).otherwise(pl.col("prob")),
        label=pl.when(pl.int_range(pl.len()) % 23 == 5).then(None).otherwise(pl.col("label")),
    )
    q = sql.ece_query("scores", prob="prob", label="label", by="s")
    got = run(engine, q, {"scores": d})
    assert got["s"][-1] is None
    with pytest.warns(calframe.CalframeWarning):
        want = calframe.ece(d, "prob", "label", by="s", nulls="drop")
    compare(got, want, ["s"], "ece")


@pytest.mark.parametrize("engine", ENGINES)
def test_boolean_labels(engine, df):
    d = df.with_columns(label=pl.col("label") == 1)
    for lens in ("top1", "class:0"):
        q = sql.ece_query("scores", prob="prob", label="label", lens=lens)
        compare(run(engine, q, {"scores": d}), calframe.ece(d, "prob", "label", lens=lens), [], "ece")


# --------------------------------------------------------------------------- bins, exactly


def _reference_bins(values: np.ndarray, bins: int, closed: str) -> np.ndarray:
    if closed == "left":
        return np.digitize(values, np.linspace(0, 1, bins + 1)[1:-1])
    return np.searchsorted((np.arange(bins + 1) * 1.0 / bins)[1:-1], values, side="left")


def _bin_sums(values, labels, ids):
    out = {}
    for b in np.unique(ids):
        m = ids == b
        out[int(b)] = (int(m.sum()), float(values[m].sum()), float(labels[m].sum()))
    return out


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("closed", ["left", "right"])
def test_sums_bins_on_every_edge(engine, closed):
    """class:1 sums per bin equal numpy.digitize / i/B searchsorted binning, for many bin counts."""
    for bins in (1, 2, 3, 5, 6, 7, 10, 13, 15, 20, 29, 33, 49, 100):
        v = edge_values((bins,))
        y = (np.arange(v.size) % 2).astype(np.int64)
        d = pl.DataFrame({"prob": v, "label": y})
        q = sql.sums_query("t", prob="prob", label="label", bins=bins, closed=closed, lens="class:1")
        got = run(engine, q, {"t": d})
        assert got.columns == ["bin", "n", "sum_conf", "sum_acc"]
        want = _bin_sums(v, y, _reference_bins(v, bins, closed))
        assert got["bin"].to_list() == sorted(want)
        for b, n, sc, sa in got.iter_rows():
            assert (n, sc, sa) == pytest.approx(want[b], abs=TOL), (bins, b)


def test_floor_alone_would_be_wrong():
    """The data really exercise the edges: FLOOR(conf * B) differs from calframe's bin on some of them."""
    v = edge_values((15, 10, 7))
    for bins in (15, 10, 7):
        floor = np.minimum(np.floor(v * bins), bins - 1)
        assert (floor != _reference_bins(v, bins, "left")).any() or (floor != _reference_bins(v, bins, "right")).any()


@pytest.mark.parametrize("engine", ENGINES)
def test_sums_query_by_and_lens(engine, df):
    q = sql.sums_query("scores", prob="prob", label="label", by=["g"], lens="top1", closed="right")
    got = run(engine, q, {"scores": df})
    assert got.columns == ["g", "bin", "n", "sum_conf", "sum_acc"]
    p, y, g = df["prob"].to_numpy(), df["label"].to_numpy(), df["g"].to_numpy()
    conf = np.where(p > 0.5, p, 1.0 - p)
    acc = ((p > 0.5) == (y == 1)).astype(float)
    ids = _reference_bins(conf, 15, "right")
    rows = []
    for key in np.unique(g):
        m = g == key
        for b, (n, sc, sa) in _bin_sums(conf[m], acc[m], ids[m]).items():
            rows.append((int(key), b, n, sc, sa))
    assert [r[:3] for r in got.iter_rows()] == [r[:3] for r in rows]
    for r, w in zip(got.iter_rows(), rows):
        assert r[3:] == pytest.approx(w[3:], abs=TOL)
    assert got["n"].sum() == df.height


# --------------------------------------------------------------------------- VECE


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("by", [None, "g", "s"], ids=str)
def test_vece_quantile_bins(engine, df, by):
    keys = [] if by is None else [by]
    for variable in ("age", "level", "prob"):
        for bins in (10, 4, 3):
            for lens in ("top1", "class:1"):
                q = sql.vece_query("scores", variable, prob="prob", label="label", by=by, bins=bins, lens=lens)
                want = calframe.vece(df, variable, "prob", "label", by=by, bins=bins, lens=lens)
                compare(run(engine, q, {"scores": df}), want, keys, "vece")


@pytest.mark.parametrize("engine", ENGINES)
def test_vece_equals_ece_on_the_confidence(engine, df):
    """SPEC §4 identity, in SQL: VECE on V = the class:1 output with explicit uniform edges is ECE."""
    edges = list(np.linspace(0, 1, 16))
    q = sql.vece_query("scores", "prob", prob="prob", label="label", edges=edges, lens="class:1")
    got = run(engine, q, {"scores": df})["vece"][0]
    assert got == pytest.approx(calframe.ece(df, "prob", "label", lens="class:1"), abs=TOL)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("closed", ["left", "right"])
def test_vece_explicit_edges(engine, df, closed):
    edges = [18.0, 30.0, 45.0, 60.0, 79.0]  # the data hold values on every edge
    for by, keys in ((None, []), ("g", ["g"]), (["s", "g"], ["s", "g"])):
        for p, name, ref in ((1, "vece", calframe.vece), ("inf", "vmce", calframe.vmce)):
            q = sql.vece_query("scores", "age", prob="prob", label="label", by=by, edges=edges, closed=closed, p=p,
                               name=name)
            want = ref(df, "age", "prob", "label", by=by, bins=edges, closed=closed)
            if isinstance(want, pl.DataFrame):
                want = want.rename({"vece": name}) if "vece" in want.columns else want
            compare(run(engine, q, {"scores": df}), want, keys, name)


@pytest.mark.parametrize("engine", ENGINES)
def test_vece_categorical(engine, df):
    for variable in ("region", "flag"):
        for by, keys in ((None, []), ("g", ["g"])):
            q = sql.vece_query("scores", variable, prob="prob", label="label", by=by, categorical=True)
            compare(run(engine, q, {"scores": df}), calframe.vece(df, variable, "prob", "label", by=by), keys, "vece")
    q = sql.sums_query("scores", prob="prob", label="label", variable="region", categorical=True)
    got = run(engine, q, {"scores": df})
    assert got["bin"].to_list() == ["a", "b", "c", "d", "e"]
    assert got["n"].sum() == df.height


@pytest.mark.parametrize("engine", ENGINES)
def test_vece_null_variable_rows_dropped(engine, df):
    """Rows with a NULL variable are dropped, as calframe's nulls="drop" (calframe raises by default)."""
    every = pl.int_range(pl.len()) % 11 == 4
    d = df.with_columns(region=pl.when(every).then(None).otherwise(pl.col("region")),
                        age=pl.when(every).then(None).otherwise(pl.col("age")))
    for variable, kw in (("region", {"categorical": True}), ("age", {"bins": 10}), ("age", {"edges": [18.0, 40.0, 79.0]})):
        q = sql.vece_query("scores", variable, prob="prob", label="label", by="g", **kw)
        with pytest.warns(calframe.CalframeWarning):
            want = calframe.vece(d, variable, "prob", "label", by="g", nulls="drop", bins=kw.get("bins", kw.get("edges", 10)))
        compare(run(engine, q, {"scores": d}), want, ["g"], "vece")


@pytest.mark.parametrize("engine", ENGINES)
def test_quantile_edges_two_step_recipe(engine, df):
    for variable in ("age", "level"):
        q = sql.quantile_edges_query("scores", variable, bins=10, by="g")
        got = run(engine, q, {"scores": df})
        assert got.columns == ["g", *(f"e{i}" for i in range(11))]
        for row in got.iter_rows():
            v = df.filter(pl.col("g") == row[0])[variable].to_numpy()
            _, want = pd.qcut(v, 10, retbins=True, duplicates="drop")
            assert sorted(set(row[1:])) == list(want)  # bit-identical to pandas.qcut
        # step 2 (no by): the deduplicated edges, right-closed, bin exactly as the one-step quantile query
        row = run(engine, sql.quantile_edges_query("scores", variable, bins=10), {"scores": df}).row(0)
        common = {"prob": "prob", "label": "label", "variable": variable}
        two = sql.sums_query("scores", variable_edges=sorted(set(row)), closed="right", **common)
        one = sql.sums_query("scores", variable_bins=10, **common)
        a, b = run(engine, two, {"scores": df}), run(engine, one, {"scores": df})
        assert a.select("bin", "n").rows() == b.select("bin", "n").rows()  # the same partition, same bin ids
        np.testing.assert_allclose(a["sum_conf"].to_numpy(), b["sum_conf"].to_numpy(), rtol=0, atol=TOL)


# --------------------------------------------------------------------------- identifiers and parameters


@pytest.mark.parametrize("engine", ENGINES)
def test_identifier_quoting(engine, df):
    d = df.select(pl.col("prob").alias('my "p"'), pl.col("label").alias("the label"), pl.col("s").alias('gr"p'),
                  pl.col("age").alias("Age"))
    q = sql.ece_query('my "table"', prob='my "p"', label="the label", by='gr"p')
    got = run(engine, q, {'my "table"': d})
    want = calframe.ece(df, "prob", "label", by="s").rename({"s": 'gr"p'})
    compare(got, want, ['gr"p'], "ece")
    q = sql.vece_query("t t", "Age", prob='my "p"', label="the label", bins=5)
    assert run(engine, q, {"t t": d})["vece"][0] == pytest.approx(calframe.vece(df, "age", "prob", "label", bins=5), abs=TOL)
    assert sql.quote_ident('a"b') == '"a""b"'


def test_literals_round_trip():
    for x in [0.1, 1 / 3, 1e-300, 5e-324, 2.0**-40, 1 - 2**-53, 0.0, 1.0, 7 / 15, 1e16]:
        s = calframe._render.lit(x)
        assert "e" in s and float(s) == x


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"closed": "both"}, "closed"),
        ({"lens": "top2"}, "lens"),
        ({"lens": "class:2"}, "lens"),
        ({"bins": 0}, "bins"),
        ({"bins": True}, "bins"),
        ({"bins": 2.5}, "bins"),
        ({"bins": [0.0, 0.5, 0.5, 1.0]}, "bins"),
        ({"bins": [0.1, 0.5, 1.0]}, "bins"),
        ({"bins": [0.0, float("nan"), 1.0]}, "bins"),
        ({"by": "n"}, "by"),
        ({"by": []}, "by"),
        ({"by": ["g", "g"]}, "by"),
        ({"by": 3}, "by"),
        ({"prob": ""}, "prob"),
        ({"label": None}, "label"),
    ],
)
def test_bad_parameters(kwargs, match):
    args = {"prob": "prob", "label": "label", **kwargs}
    with pytest.raises(ValueError, match=match):
        sql.ece_query("scores", **args)


def test_bad_parameters_more():
    base = {"prob": "prob", "label": "label"}
    with pytest.raises(ValueError, match="'p'"):
        sql.ce_query("scores", p=3, **base)
    with pytest.raises(ValueError, match="table"):
        sql.ece_query(3, **base)
    with pytest.raises(ValueError, match="identifier"):
        sql.ece_query(("s", ""), **base)
    with pytest.raises(ValueError, match="variable"):
        sql.sums_query("scores", variable_edges=[0, 1], **base)
    with pytest.raises(ValueError, match="at most one"):
        sql.vece_query("scores", "age", edges=[0, 1], categorical=True, **base)
    with pytest.raises(ValueError, match="edges"):
        sql.vece_query("scores", "age", edges=[3, 2], **base)
    with pytest.raises(ValueError, match="bins"):
        sql.vece_query("scores", "age", bins=0, **base)
    with pytest.raises(ValueError, match="name"):
        sql.vece_query("scores", "age", name="n", **base)
    with pytest.raises(ValueError, match="output column"):
        sql.sums_query("scores", by="sum_acc", **base)
    assert isinstance(sql.ece_query(("main", "scores"), **base), str)


def _class_probs(n: int = 400, k: int = 3, seed: int = 5) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(k), size=n)
    labels = np.array([rng.choice(k, p=row) for row in probs**2 / (probs**2).sum(1, keepdims=True)])
    return pl.DataFrame({"prob": probs, "label": labels, "g": rng.choice(["a", "b"], n)},
                        schema={"prob": pl.Array(pl.Float64, k), "label": pl.Int64, "g": pl.String})


def _schemas(frame: pl.DataFrame) -> dict:
    duckdb = _duckdb()
    out = {"polars schema": frame.schema, "polars frame": frame, "lazy": frame.lazy(), "pandas": frame.to_pandas(),
           "pyarrow table": frame.to_arrow(), "pyarrow schema": frame.to_arrow().schema,
           "list": frame.with_columns(pl.col("prob").cast(pl.List(pl.Float64)))}
    out["duckdb relation"] = duckdb.connect().from_arrow(frame.to_arrow())
    return out


@pytest.mark.parametrize("engine", ENGINES)
def test_class_probability_column_refused_with_schema(engine):
    """An Array probability column (issue 22, 5): the engine fails on CAST(prob AS DOUBLE) with a raw cast error;
    given the table's schema (any of its forms), calframe refuses it before writing the query, naming the column
    and what to do, and the advice runs: one class's probability as a column (DuckDB prob[c + 1], Polars
    arr.get(c)) with label = c gives that class's ECE (numpy's 15 uniform bins)."""
    frame = _class_probs()
    with pytest.raises(Exception, match="(?i)cast"):  # what the schema check stands in front of
        run(engine, sql.ece_query("scores", prob="prob", label="label"), {"scores": frame})
    for form, schema in _schemas(frame).items():
        for query in (sql.ece_query, sql.mce_query, sql.sums_query):
            with pytest.raises(calframe.ColumnTypeError, match=rf"{query.__name__}: column 'prob' \(prob=\) holds "
                               "class probabilities .*binary input.* on the frame itself.*arr.get"):
                query("scores", prob="prob", label="label", schema=schema)
        with pytest.raises(calframe.ColumnTypeError, match="vece_query: column 'prob'"):
            sql.vece_query("scores", "label", prob="prob", label="label", by="g", schema=schema)
    c = 2
    if engine == "duckdb":
        view = f"(SELECT prob[{c + 1}] AS p, label = {c} AS y FROM scores)"
        frames = {"scores": frame}
    else:
        view = "one_class"
        frames = {view: frame.select(p=pl.col("prob").arr.get(c), y=pl.col("label") == c)}
    query = sql.ece_query("one_class", prob="p", label="y", schema=frames.get("one_class"))
    if engine == "duckdb":
        query = query.replace('"one_class"', view)
    p, y = frame["prob"].to_numpy()[:, c], (frame["label"].to_numpy() == c)
    ids = np.digitize(p, np.linspace(0, 1, 16)[1:-1])
    want = sum(abs(p[ids == b].sum() - y[ids == b].sum()) for b in range(15)) / len(p)
    assert abs(run(engine, query, frames)["ece"][0] - want) < TOL


def test_schema_names_missing_columns():
    frame = pl.DataFrame({"p": [0.2, 0.7], "y": [0, 1], "g": ["a", "b"], "v": [1.0, 2.0]})
    for kw, param in [(dict(by=["g", "h"]), "by"), (dict(label="nolabel"), "label")]:
        with pytest.raises(calframe.ColumnNotFoundError, match=rf"ece_query: .* given as {param}= are not in the table "
                           r"\(schema=\); it has columns \['p', 'y', 'g', 'v'\]"):
            sql.ece_query("s", **{"prob": "p", "label": "y", **kw}, schema=frame)
    with pytest.raises(calframe.ColumnNotFoundError, match="variable="):
        sql.vece_query("s", "w", prob="p", label="y", schema=frame.schema)
    with pytest.raises(calframe.ColumnNotFoundError, match="variable="):
        sql.quantile_edges_query("s", "w", schema=frame.to_pandas())
    with pytest.raises(calframe.ParameterError, match="'schema'"):
        sql.ece_query("s", prob="p", label="y", schema=3)
    assert sql.ece_query("s", prob="p", label="y", by="g", schema=frame) == sql.ece_query("s", prob="p", label="y",
                                                                                            by="g")


def test_no_engine_import():
    code = "import sys, calframe.sql; assert 'duckdb' not in sys.modules; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr


# --------------------------------------------------------------------------- DuckDB macros


@pytest.fixture(scope="module")
def con(df):
    duckdb = _duckdb()
    c = duckdb.connect()
    c.register("scores", df.to_arrow())
    names = sql.install_duckdb_macros(c)
    assert set(names) == set(sql.DUCKDB_MACROS)
    yield c
    c.close()


def q_pl(con, query: str) -> pl.DataFrame:
    return pl.from_arrow(con.sql(query).to_arrow_table())


@pytest.mark.parametrize("closed", ["left", "right"])
@pytest.mark.parametrize("lens", ["top1", "class:1", "class:0"])
def test_duckdb_macros_ce(con, df, closed, lens):
    for figure, ref in (("ece", calframe.ece), ("mce", calframe.mce), ("rmsce", calframe.rmsce)):
        for bins in (15, 7):
            got = q_pl(con, f"SELECT * FROM calframe_{figure}('scores', 'prob', 'label', bins := {bins}, "
                            f"closed := '{closed}', lens := '{lens}')")
            compare(got, ref(df, "prob", "label", bins=bins, closed=closed, lens=lens), [], figure)
            got = q_pl(con, f"SELECT * FROM calframe_{figure}('scores', 'prob', 'label', bins := {bins}, "
                            f"closed := '{closed}', lens := '{lens}', by_cols := ['s', 'g'])")
            # the macros return the group columns in the table's column order, sorted on them
            assert got.columns == ["g", "s", "n", figure]
            assert got.select("g", "s").rows() == got.select("g", "s").sort("g", "s", nulls_last=True).rows()
            got = got.select("s", "g", "n", figure).sort("s", "g", nulls_last=True)
            compare(got, ref(df, "prob", "label", by=["s", "g"], bins=bins, closed=closed, lens=lens), ["s", "g"], figure)


@pytest.mark.parametrize("closed", ["left", "right"])
def test_duckdb_macro_bins_on_every_edge(con, closed):
    """The run-time bin count path (floor, then one correction each way) is exact too."""
    for bins in (1, 2, 3, 5, 6, 7, 10, 13, 15, 20, 29, 33, 49, 100, 1000):
        v = edge_values((bins,))
        y = np.zeros(v.size, dtype=np.int64)
        con.register("edges_t", pl.DataFrame({"p": v, "y": y}).to_arrow())
        got = q_pl(con, f"SELECT * FROM calframe_sums('edges_t', 'p', 'y', bins := {bins}, closed := '{closed}', "
                        "lens := 'class:1')")
        want = _bin_sums(v, y, _reference_bins(v, bins, closed))
        assert got.columns == ["bin", "n", "sum_conf", "sum_acc"]
        assert dict(zip(got["bin"].to_list(), got["n"].to_list())) == {b: w[0] for b, w in want.items()}, bins
        con.unregister("edges_t")


def test_duckdb_macros_vece(con, df):
    edges = [18.0, 30.0, 45.0, 60.0, 79.0]
    for closed in ("left", "right"):
        got = q_pl(con, f"SELECT * FROM calframe_vece('scores', 'prob', 'label', 'age', edges := {edges}, "
                        f"closed := '{closed}', by_cols := ['g'])")
        compare(got, calframe.vece(df, "age", "prob", "label", by="g", bins=edges, closed=closed), ["g"], "vece")
        got = q_pl(con, f"SELECT * FROM calframe_vmce('scores', 'prob', 'label', 'age', edges := {edges}, "
                        f"closed := '{closed}')")
        compare(got, calframe.vmce(df, "age", "prob", "label", bins=edges, closed=closed), [], "vmce")
    for variable in ("region", "flag"):
        got = q_pl(con, f"SELECT * FROM calframe_vece('scores', 'prob', 'label', '{variable}', lens := 'class:1')")
        compare(got, calframe.vece(df, variable, "prob", "label", lens="class:1"), [], "vece")


def test_duckdb_macro_errors(con):
    duckdb = _duckdb()
    for call, match in (
        ("calframe_ece('scores', 'prob', 'label', lens := 'top2')", "lens"),
        ("calframe_ece('scores', 'prob', 'label', closed := 'both')", "closed"),
        ("calframe_ece('scores', 'prob', 'label', bins := 0)", "bins"),
        ("calframe_ece('scores', 'nope', 'label')", "empty set of columns"),
    ):
        with pytest.raises(duckdb.Error, match=match):
            con.execute(f"SELECT * FROM {call}").fetchall()
    with pytest.raises(ValueError, match="prefix"):
        sql.install_duckdb_macros(con, prefix="bad prefix")


def test_duckdb_macros_custom_prefix(df):
    duckdb = _duckdb()
    c = duckdb.connect()
    try:
        c.register("scores", df.to_arrow())
        names = sql.install_duckdb_macros(c, prefix="cf_")
        assert "cf_ece" in names
        got = c.execute("SELECT ece FROM cf_ece('scores', 'prob', 'label')").fetchall()[0][0]
        assert got == pytest.approx(calframe.ece(df, "prob", "label"), abs=TOL)
    finally:
        c.close()


# --------------------------------------------------------------------------- scalar macros over lists


@pytest.mark.parametrize("figure, ref", [("ece", calframe.ece), ("mce", calframe.mce), ("rmsce", calframe.rmsce)])
def test_duckdb_list_macros_beside_other_aggregates(con, df, figure, ref):
    """calframe_<figure>(list(p), list(y)) in a GROUP BY next to count and avg: per group, calframe's figure."""
    got = q_pl(con, f"SELECT s, g, count(*) AS rows, avg(prob) AS mean_p, calframe_{figure}(list(prob), list(label)) "
                    f"AS {figure} FROM scores GROUP BY s, g ORDER BY s, g")
    want = ref(df, "prob", "label", by=["s", "g"]).sort("s", "g")
    assert got.select("s", "g").rows() == want.select("s", "g").rows()
    assert got["rows"].to_list() == want["n"].to_list()
    np.testing.assert_allclose(got["mean_p"], df.group_by("s", "g").agg(pl.col("prob").mean()).sort("s", "g")["prob"],
                               rtol=1e-15)
    np.testing.assert_allclose(got[figure], want[figure], rtol=0, atol=TOL)
    # the table macro of the same name still works
    assert q_pl(con, f"SELECT * FROM calframe_{figure}('scores', 'prob', 'label')").columns == ["n", figure]


@pytest.mark.parametrize("closed", ["left", "right"])
@pytest.mark.parametrize("lens", ["top1", "class:1", "class:0"])
def test_ce_list_macro_bins_and_lenses(con, df, closed, lens):
    """Generated for other bins, explicit edges, closed sides and lenses, on probabilities on every edge."""
    edges = [0.0, 0.2, 0.5, 0.7, 0.9, 1.0]
    for bins in (7, edges):
        for p, ref in ((1, calframe.ece), (2, calframe.rmsce), ("inf", calframe.mce)):
            con.execute(sql.ce_list_macro("my_ce", p=p, bins=bins, closed=closed, lens=lens))
            got = q_pl(con, "SELECT g, my_ce(list(prob), list(label)) AS x FROM scores GROUP BY g ORDER BY g")
            want = ref(df, "prob", "label", by="g", bins=bins, closed=closed, lens=lens)
            np.testing.assert_allclose(got["x"], want[ref.__name__], rtol=0, atol=TOL)
            whole = q_pl(con, "SELECT my_ce(list(prob), list(label)) AS x FROM scores")["x"][0]
            assert whole == pytest.approx(ref(df, "prob", "label", bins=bins, closed=closed, lens=lens), abs=TOL)


def test_list_macro_nulls_and_empty_groups(con, df):
    """NULL probabilities or labels are dropped (list keeps NULLs, so the lists stay aligned); no rows: NULL."""
    d = df.with_columns(
        prob=pl.when(pl.int_range(pl.len()) % 17 == 3).then(None).otherwise(pl.col("prob")),
        label=pl.when(pl.int_range(pl.len()) % 23 == 5).then(None).otherwise(pl.col("label")),
    )
    con.register("nullish", d.to_arrow())
    got = q_pl(con, "SELECT g, calframe_ece(list(prob), list(label)) AS ece FROM nullish GROUP BY g ORDER BY g")
    with pytest.warns(calframe.CalframeWarning):
        want = calframe.ece(d, "prob", "label", by="g", nulls="drop")
    np.testing.assert_allclose(got["ece"], want["ece"], rtol=0, atol=TOL)
    none = q_pl(con, "SELECT calframe_ece(list(prob), list(label)) AS ece FROM nullish WHERE prob IS NULL")
    assert none["ece"][0] is None
    con.unregister("nullish")


def test_ce_list_macro_bad_parameters():
    with pytest.raises(calframe.ParameterError, match="name"):
        sql.ce_list_macro("bad name")
    with pytest.raises(calframe.ParameterError, match="bins"):
        sql.ce_list_macro(bins=0)
    with pytest.raises(calframe.ParameterError, match="lens"):
        sql.ce_list_macro(lens="top2")
