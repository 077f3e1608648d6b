"""What the pages say about the package holds for the package (issue 31, 5: what users of pandas, Polars and
scikit-learn expect): the install lines of the extras, the engines without an accessor, the README's layout of
``calframe/``, and why groups are ``by=``."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from test_readme import blocks, commands, page_modules

import calframe

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

#: a module a page imports -> the extra that installs it
EXTRA_OF = {"duckdb": "duckdb", "ibis": "ibis", "pyspark": "spark", "dask": "dask", "calframe.frames.dask": "dask",
            "sklearn": "sklearn", "calframe.sklearn": "sklearn", "matplotlib": "plot", "calframe.plot": "plot"}


def extras() -> list[str]:
    return list(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])


def install_lines(path: Path) -> set[str]:
    """The extras of calframe a page's shell blocks install (``pip install "calframe[x]"``)."""
    out: set[str] = set()
    for block in blocks(path):
        if block.lang not in {"bash", "sh", "shell", "console", "indented"}:
            continue
        for _, line in commands(block):
            for m in re.finditer(r"""pip install .*?["']?calframe\[([\w,-]+)\]""", line):
                out.update(m.group(1).split(","))
    return out


def test_index_names_every_extra() -> None:
    text = (DOCS / "index.md").read_text()
    missing = [x for x in extras() if f"`{x}`" not in text and f"calframe[{x}]" not in text]
    assert not missing, f"docs/index.md does not name the extras {missing} of pyproject.toml"


@pytest.mark.parametrize("path", sorted(DOCS.glob("*.md")), ids=lambda p: p.name)
def test_a_page_using_an_extra_shows_its_install_line(path: Path) -> None:
    """A page whose examples import an extra's module (duckdb, pyspark, dask, sklearn, matplotlib) shows
    ``pip install "calframe[extra]"`` for it in a shell block."""
    needed = {EXTRA_OF[m] for m in page_modules(path) if m in EXTRA_OF}
    missing = needed - install_lines(path)
    assert not missing, f"{path.name}: uses the extras {sorted(missing)} without showing pip install \"calframe[...]\""
    assert set(extras()) >= install_lines(path)


def test_scaling_out_shows_each_engine_extra() -> None:
    """DuckDB, Ibis and Spark are shown on scaling-out.md even where the examples import no module of theirs."""
    assert {"duckdb", "ibis", "spark"} <= install_lines(DOCS / "scaling-out.md")


def test_scaling_out_says_why_engine_frames_have_no_accessor() -> None:
    text = " ".join((DOCS / "scaling-out.md").read_text().split())
    assert "no `.calib` accessor" in text
    assert "calframe.ece(rel" in text and "calframe.calib(rel)" in text
    for engine in ("DuckDB relations", "Spark DataFrames", "Ibis tables", "pyarrow Tables"):
        assert engine in text
    assert "no API to register an accessor" in text
    assert "does not contain a column by the name of 'calib'" in text


def test_calib_handle_on_a_duckdb_relation() -> None:
    """What scaling-out.md says: ``calframe.calib(rel)`` works on a relation (the functions' answers), and
    ``rel.calib`` is DuckDB's missing-column error."""
    duckdb = pytest.importorskip("duckdb")
    pytest.importorskip("narwhals")
    df = calframe.datasets.grouped_miscalibration(n=2_000, seed=0)
    rel = duckdb.from_arrow(df.to_arrow())
    assert calframe.calib(rel).ece().fetchall() == calframe.ece(rel).fetchall()
    by = calframe.calib(rel).ece(by="region")
    assert isinstance(by, duckdb.DuckDBPyRelation)
    assert by.order("region").pl()["ece"].to_list() == pytest.approx(calframe.ece(df, by="region")["ece"].to_list(),
                                                                      rel=1e-12)
    with pytest.raises(Exception, match="does not contain a column by the name of 'calib'"):
        rel.calib  # noqa: B018


def _layout() -> str:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Layout\n"):]
    return next(b.code for b in blocks(ROOT / "README.md") if b.lang == "text" and b.code.startswith("calframe/")
                and b.code in section)


def test_readme_layout_names_every_module() -> None:
    """Every module and subpackage of calframe/ (private helpers included) is named in README's Layout block."""
    layout = _layout()
    pkg = ROOT / "calframe"
    names = [p.name for p in pkg.glob("*.py")] + [p.name + "/" for p in pkg.iterdir()
                                                    if p.is_dir() and p.name != "__pycache__"]
    missing = sorted(n for n in names if not re.search(rf"(?<![\w./]){re.escape(n)}", layout))
    assert not missing, f"README.md, Layout: not named: {missing}"


def test_readme_layout_names_only_what_exists() -> None:
    layout = _layout()
    pkg = ROOT / "calframe"
    named = set(re.findall(r"(?<![\w./])(_?\w+\.py|_?\w+/)(?!\w)", layout)) - {"calframe/"}
    for name in named:
        # a name in a subpackage's line (streamed.py, workers.py, convert.py, queries.py) is in that subpackage
        found = (pkg / name).exists() or any(p.name == name.rstrip("/") for p in pkg.rglob("*"))
        assert found, f"README.md, Layout names {name}, which is not in calframe/"


def test_api_page_says_why_groups_are_by() -> None:
    text = " ".join((DOCS / "api.md").read_text().split())
    assert 'df.group_by("g").calib' in text and 'df.groupby("g").calib' in text
    assert "GroupBy" in text and "register" in text
    assert 'df.calib.ece(by="g")' in text
    assert "calframe.expr" in text and "group_by().agg()" in text
