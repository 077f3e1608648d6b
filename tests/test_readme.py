"""Every code block of README.md and docs/*.md runs in the test suite, as written.

``test_page`` runs one page: its code blocks in document order, with a fresh
temporary directory as the working directory (examples write only there).

- ```python blocks run in one namespace per page: a page reads as one session,
  later blocks use what earlier ones defined. An expression whose trailing
  comment is a number, or starts with one and a colon
  (``calframe.ece(df)   # 0.0114: ...``), is checked: its value, rounded to
  that many decimals, must be that number.
- ```bash, ```sh and ```console blocks (and indented blocks whose first word is a
  command below): one command per line (``\\`` continues a line, ``#`` starts a
  comment; in ```console only ``$ `` lines are commands, the rest is output).
  ``calframe ...`` runs as ``python -m calframe ...`` would, in this process
  (``runpy``: no interpreter start-up per command), and must exit 0; ``calframe
  demo``, which reads nothing, runs once per session. Commands that install,
  build or change the checkout are checked instead of run: ``make T`` (T is a
  Makefile target), ``pip install`` (each ``[extra]`` of calframe is in
  pyproject.toml's optional dependencies), ``git S`` (S is a git command),
  ``python`` / ``.venv/bin/python path.py [--opt]`` (the script exists and
  names each option). ``export NAME=VALUE`` sets the environment variable for the
  rest of the page (as in the reader's shell; restored after the page). Any
  other command fails: give it a rule here first.
- A fenced block needs a language (python, a shell above, or text).
- ```text blocks are output or diagrams. Output in a section that names a
  script ``docs/examples/X.py`` above the block is compared, row by row, with
  what the script prints (``test_example_output``); the Adult examples run on the
  UCI data shipped in calframe/data.
- Pages that import a test extra (dask, duckdb, matplotlib, pyspark) load it with
  ``pytest.importorskip``: ``--require-extras`` (``make test``) turns a missing
  one into a failure. A page importing pyspark is marked ``spark`` and runs with
  the tests' one Spark session started (``SparkSession.builder.getOrCreate()``
  in the page returns it).
"""

from __future__ import annotations

import ast
import contextlib
import io
import os
import re
import runpy
import shlex
import subprocess
import sys
import tokenize
import tomllib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pytest

import calframe

ROOT = Path(__file__).resolve().parent.parent
#: tests/conftest.py's --warm-cache: the kernel cache as ``calframe warmup`` left it (see run_page_after_warmup)
WARM_CACHE_ENV = "CALFRAME_SUITE_WARM_CACHE"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
EXAMPLES = ROOT / "docs" / "examples"
#: modules a page may import that come with a test extra (pytest.importorskip), by the module imported
EXTRA_MODULES = {"dask": "dask", "distributed": "distributed", "duckdb": "duckdb", "matplotlib": "matplotlib",
                 "sklearn": "sklearn", "calframe.plot": "matplotlib", "calframe.frames.dask": "dask",
                 "pyspark": "pyspark"}
SHELL = {"bash", "sh", "shell", "console"}
COMMANDS = {"calframe", "make", "pip", "git", "python", "python3", ".venv/bin/python", "export"}
#: environment variables a page's ``export`` set, with their values before it (None: unset), restored after the page
EXPORTED: dict[str, str | None] = {}
#: `calframe demo` command lines already run in this session
DEMOS_RUN: set[tuple[str, ...]] = set()


@dataclass(frozen=True)
class Block:
    lang: str     # "python", "bash", "text", ...; "indented" for an indented block of commands
    line: int     # line of the block's first line of code in the page (1-based)
    code: str
    script: str | None = None  # a text block: the docs/examples script whose output it shows


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a page, and its indented blocks that start with a command."""
    lines = path.read_text().splitlines()
    out: list[Block] = []
    script = None  # the last docs/examples/X.py named in the current section
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = re.match(r"( *)```\s*(\w*)", line)
        if fence:
            indent, lang = len(fence.group(1)), fence.group(2).lower()
            j = i + 1
            while j < len(lines) and not re.match(r" *```\s*$", lines[j]):
                j += 1
            assert j < len(lines), f"{path.name}:{i + 1}: unclosed code fence"
            code = "\n".join(text[indent:] for text in lines[i + 1:j]) + "\n"
            out.append(Block(lang, i + 2, code, script if lang == "text" else None))
            i = j + 1
            continue
        if line.startswith("#"):
            script = None
        script = ([*re.findall(r"docs/examples/(\w+)\.py", line)] or [script])[-1]
        if line.startswith("    ") and line.strip() and (i == 0 or not lines[i - 1].strip()):
            j = i
            while j < len(lines) and (lines[j].startswith("    ") or not lines[j].strip()):
                j += 1
            code = "\n".join(text[4:] for text in lines[i:j]).strip("\n") + "\n"
            try:
                words = _split(code.splitlines()[0])
            except ValueError:  # prose with an apostrophe
                words = []
            if words and words[0] in COMMANDS:
                out.append(Block("indented", i + 1, code))
            i = j
            continue
        i += 1
    return out


def _split(line: str) -> list[str]:
    return shlex.split(line, comments=True)


def imported(block: Block) -> set[str]:
    """Every module a python block imports, with its parent packages."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(block.code)):
        if isinstance(node, ast.Import):
            mods = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            mods = [node.module]
        else:
            continue
        for mod in mods:
            parts = mod.split(".")
            names.update(".".join(parts[:k]) for k in range(1, len(parts) + 1))
    return names


def page_modules(path: Path) -> set[str]:
    """Every module the page's python blocks import."""
    return set().union(*(imported(b) for b in blocks(path) if b.lang == "python"))


# ---------------------------------------------------------------- python


def quoted_numbers(code: str) -> dict[int, str]:
    """Line -> the number a trailing comment is, or starts with before a colon (``x  # 0.0114: ...``)."""
    out = {}
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type == tokenize.COMMENT:
            m = re.match(r"#\s*(-?\d+\.\d+)\s*(?::|$)", tok.string)
            if m:
                out[tok.start[0]] = m.group(1)
    return out


def run_python(path: Path, block: Block, namespace: dict) -> None:
    source = "\n" * (block.line - 1) + block.code  # tracebacks point at the page's own lines
    numbers = quoted_numbers(source)
    for stmt in ast.parse(source, str(path)).body:
        expected = numbers.get(stmt.end_lineno)
        if expected is None:
            exec(compile(ast.Module([stmt], []), str(path), "exec"), namespace)
            continue
        assert isinstance(stmt, ast.Expr), f"{path.name}:{stmt.lineno}: a quoted number follows an expression"
        value = eval(compile(ast.Expression(stmt.value), str(path), "eval"), namespace)
        decimals = len(expected.split(".")[1])
        assert round(float(value), decimals) == float(expected), (
            f"{path.name}:{stmt.lineno}: {ast.unparse(stmt)} is {value!r}, the page says {expected}")


# ---------------------------------------------------------------- commands


def commands(block: Block) -> list[tuple[int, str]]:
    """(line, command) of a shell block."""
    out: list[tuple[int, str]] = []
    pending, start = "", 0
    for k, text in enumerate(block.code.splitlines()):
        if block.lang == "console" and not pending:
            if not text.startswith("$ "):
                continue  # output
            text = text[2:]
        if not pending:
            start = block.line + k
        if text.rstrip().endswith("\\"):
            pending += text.rstrip()[:-1] + " "
            continue
        line, pending = pending + text, ""
        if _split(line):
            out.append((start, line))
    return out


def makefile_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return {m for m in re.findall(r"^([A-Za-z0-9_-]+)\s*:(?!=)", text, flags=re.M)}


def extras() -> set[str]:
    return set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])


def check_script(where: str, args: list[str]) -> None:
    """``python path.py [--opt ...]``: the script exists and names each option."""
    assert args and args[0].endswith(".py"), f"{where}: python runs a script here: {args}"
    script = ROOT / args[0]
    assert script.is_file(), f"{where}: {args[0]} does not exist"
    source = script.read_text()
    for opt in re.findall(r"--[\w-]+", " ".join(args[1:])):
        assert f'"{opt}"' in source or f"'{opt}'" in source, f"{where}: {args[0]} has no option {opt}"


def run_main(target: str, args: list[str], runner) -> tuple[int, str, str]:
    """Run a module (``runpy.run_module``) or script (``runpy.run_path``) as ``python`` runs it (``__main__``,
    ``sys.argv``), in this process (no interpreter start-up, kernels already loaded): (exit code, stdout, stderr)."""
    out, err, argv = io.StringIO(), io.StringIO(), sys.argv
    sys.argv = [target, *args]
    try:
        with pl.Config(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            runner(target, run_name="__main__")
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = argv
    return code, out.getvalue(), err.getvalue()


def run_command(where: str, line: str) -> None:
    words = _split(line)
    cmd, args = words[0], words[1:]
    if cmd == "calframe":
        if args[:1] == ["demo"] and tuple(args) in DEMOS_RUN:
            return  # reads nothing, seeded: the same demo twice tests nothing new
        code, out, err = run_main("calframe", args, runpy.run_module)
        assert code == 0, f"{where}: `{line}` exited {code}:\n{err}"
        if args[:1] == ["demo"]:
            DEMOS_RUN.add(tuple(args))
    elif cmd == "make":
        targets = [a for a in args if not a.startswith("-") and "=" not in a]
        assert targets and set(targets) <= makefile_targets(), f"{where}: `{line}`: not a Makefile target"
    elif cmd == "pip":
        assert args[:1] == ["install"], f"{where}: `{line}`: only pip install is documented"
        for spec in args[1:]:
            m = re.fullmatch(r"(calframe|\.)\[([\w,-]+)\]", spec)
            if m:
                unknown = set(m.group(2).split(",")) - extras()
                assert not unknown, f"{where}: `{line}`: calframe has no extra {sorted(unknown)}"
    elif cmd == "git":
        res = subprocess.run(["git", args[0], "-h"], capture_output=True, text=True)
        assert "is not a git command" not in res.stderr, f"{where}: `{line}`: not a git command"
    elif cmd in {"python", "python3", ".venv/bin/python"}:
        check_script(where, args)
    elif cmd == "export":
        for assignment in args:
            name, eq, value = assignment.partition("=")
            assert eq and name.isidentifier(), f"{where}: `{line}`: export takes NAME=VALUE"
            EXPORTED.setdefault(name, os.environ.get(name))
            os.environ[name] = value
    else:
        pytest.fail(f"{where}: `{line}`: no rule for {cmd!r} commands in tests/test_readme.py")


# ---------------------------------------------------------------- pages


def run_page(path: Path) -> dict:
    """Run the page's blocks; their namespace."""
    page = blocks(path)
    for mod in sorted({EXTRA_MODULES[m] for m in page_modules(path) & set(EXTRA_MODULES)}):
        pytest.importorskip(mod)
    namespace: dict = {"__name__": "__main__"}
    with pl.Config(), _exports_restored():  # a page's pl.Config settings and exported variables end with it
        for block in page:
            if block.lang == "python":
                run_python(path, block, namespace)
            elif block.lang in SHELL | {"indented"}:
                for line, command in commands(block):
                    run_command(f"{path.name}:{line}", command)
            else:
                assert block.lang == "text", f"{path.name}:{block.line}: a code block without a rule: ```{block.lang}"
    return namespace


@contextlib.contextmanager
def _exports_restored():
    """Undo the page's ``export`` commands when it ends."""
    try:
        yield
    finally:
        for name, old in EXPORTED.items():
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old
        EXPORTED.clear()


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # a page that reads a variable sets it itself, as a reader's fresh shell has none (recalibration.md's CALIB_KEY)
    monkeypatch.delenv("CALIB_KEY", raising=False)
    yield tmp_path
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.spark) if "pyspark" in page_modules(p) else p
                                  for p in PAGES], ids=lambda p: p.name)
def test_page(path, in_tmp, request):
    if "pyspark" in page_modules(path):
        request.getfixturevalue("spark")  # the page's getOrCreate() returns the tests' one session
    elif os.environ.get(WARM_CACHE_ENV):
        run_page_after_warmup(path, in_tmp, Path(os.environ[WARM_CACHE_ENV]))
        return
    namespace = run_page(path)
    if path.name in AFTER:
        AFTER[path.name](namespace)


#: runs one page in a fresh process (argv: the page), as test_page does in this one
PAGE_DRIVER = """
import sys
from pathlib import Path
sys.path.insert(0, {tests!r})
import test_readme as T
path = Path(sys.argv[1])
namespace = T.run_page(path)
if path.name in T.AFTER:
    T.AFTER[path.name](namespace)
"""


def run_page_after_warmup(path: Path, cwd: Path, warm_cache: Path) -> None:
    """The page in a fresh process, as a user runs it after ``calframe warmup`` (issue 31, section 1): on the
    kernel cache warm-up left (``make test``'s ``--warm-cache``) with ``CALFRAME_FORBID_COMPILE=1``, so a kernel
    the page needs that warm-up did not compile fails the page, naming the kernel."""
    for mod in sorted({EXTRA_MODULES[m] for m in page_modules(path) & set(EXTRA_MODULES)}):
        pytest.importorskip(mod)  # here, where --require-extras turns a missing extra into a failure
    env = dict(os.environ, NUMBA_CACHE_DIR=str(warm_cache), CALFRAME_FORBID_COMPILE="1", PYTHONPATH=str(ROOT),
               MPLBACKEND="Agg")
    env.pop("CALIB_KEY", None)
    out = subprocess.run([sys.executable, "-c", PAGE_DRIVER.format(tests=str(ROOT / "tests")), str(path)], env=env,
                         cwd=cwd, capture_output=True, text=True, timeout=1200)
    assert out.returncode == 0, f"{path.name} after calframe warmup, compiling forbidden:\n{out.stderr[-6000:]}"


def test_every_block_is_run():
    """No block is left out: each fenced block has a language the runner knows, and each example script is checked."""
    shown = set()
    for path in PAGES:
        for block in blocks(path):
            assert block.lang in {"python", "text", "indented"} | SHELL, (
                f"{path.name}:{block.line}: ```{block.lang or '(no language)'}: give the block python, bash or text")
            shown.add(block.script)
    assert {p.stem for p in EXAMPLES.glob("*.py")} <= shown, "a docs/examples script whose output no page shows"


def _worker_python_set_before_session(path: Path) -> list[str]:
    """What a page that starts a Spark session leaves unset before its first ``getOrCreate()``, of
    ``os.environ["PYSPARK_PYTHON"] = sys.executable`` and the same for ``PYSPARK_DRIVER_PYTHON``."""
    wanted = {"PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"}
    done: set[str] = set()
    for block in (b for b in blocks(path) if b.lang == "python"):
        for stmt in ast.parse(block.code).body:
            if any(isinstance(n, ast.Attribute) and n.attr == "getOrCreate" for n in ast.walk(stmt)):
                return sorted(wanted - done)
            if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                    and isinstance(stmt.targets[0], ast.Subscript)
                    and ast.unparse(stmt.targets[0].value) == "os.environ"
                    and ast.unparse(stmt.value) == "sys.executable"):
                done.add(ast.literal_eval(stmt.targets[0].slice))
    return []


@pytest.mark.parametrize("path", [p for p in PAGES if "pyspark" in page_modules(p)], ids=lambda p: p.name)
def test_spark_pages_name_the_worker_python(path):
    """Spark starts its Python workers with ``python3`` from PATH: in a fresh shell where the virtualenv is not
    activated, a page's Spark example failed with a worker PythonException (issue 22, 5). This suite sets
    PYSPARK_PYTHON itself (conftest.py), so running the page cannot show it: each page that starts a session sets
    both variables to ``sys.executable`` before its first ``getOrCreate()``."""
    assert not _worker_python_set_before_session(path), (
        f"{path.name}: set os.environ[...] = sys.executable for "
        f"{_worker_python_set_before_session(path)} before the session starts")


# ---------------------------------------------------------------- example scripts


def numeric_rows(text: str) -> list[tuple[str, ...]]:
    """The numbers with 4 decimals of each line that has some (a table's figures, as printed)."""
    rows = [tuple(re.findall(r"(?<![\w.])-?\d+\.\d{4}(?![\d])", line)) for line in text.splitlines()]
    return [r for r in rows if r]


def shown_outputs(script: str) -> list[tuple[Path, Block]]:
    return [(p, b) for p in PAGES for b in blocks(p) if b.script == script]


@pytest.mark.parametrize("script", sorted(p.stem for p in EXAMPLES.glob("*.py")))
def test_example_output(script, monkeypatch):
    """Each table a page shows under ``docs/examples/X.py`` is what X.py prints: each row's figures, in order."""
    script_path = str(EXAMPLES / f"{script}.py")
    monkeypatch.chdir(ROOT)  # the scripts read tests/data and ../shared from the repository root
    code, out, err = run_main(script_path, [], runpy.run_path)
    assert code == 0, err
    printed = numeric_rows(out)
    for path, block in shown_outputs(script):
        pos = 0
        for row in numeric_rows(block.code):
            found = next((k for k in range(pos, len(printed)) if _contains(printed[k], row)), None)
            assert found is not None, (f"{path.name}:{block.line}: the row with {row} is not what "
                                       f"docs/examples/{script}.py prints (in order):\n{out}")
            pos = found + 1


def _contains(printed: tuple[str, ...], row: tuple[str, ...]) -> bool:
    return any(printed[k:k + len(row)] == row for k in range(len(printed) - len(row) + 1))


# ---------------------------------------------------------------- page-specific checks


def check_spark_recipe(ns: dict) -> None:
    """The calframe half of the PySpark recipe, with pyarrow batches and a pandas group-by standing in for Spark."""
    import pyarrow as pa

    df = calframe.datasets.grouped_miscalibration(n=3_000, seed=5)
    batches = pa.Table.from_pandas(df.to_pandas()).to_batches(max_chunksize=700)  # five "partitions"
    parts = pd.concat([b.to_pandas() for b in ns["partition_sums"](iter(batches))])
    sums = parts.groupby(["region", "bin"], as_index=False)[["n", "sum_conf", "sum_acc"]].sum()
    got = ns["finalize"](sums)
    want = calframe.ece(df, by="region").to_pandas()
    assert got["region"].tolist() == want["region"].tolist()
    np.testing.assert_allclose(got["ece"], want["ece"], rtol=1e-12)


def check_plots_headline(ns: dict) -> None:
    """The headline quoted in plots.md's "Headline" item is what the page's own report prints (issue 31: it
    showed an interval of an older rule)."""
    text = (ROOT / "docs" / "plots.md").read_text()
    quoted = re.search(r'\*\*Headline\*\*:.*?e\.g\.[^"]*"(.*?)"', text, re.S)
    assert quoted is not None, "plots.md: no quoted headline in the Headline item"
    assert " ".join(quoted.group(1).split()) == ns["rep"].headline()


AFTER = {"scaling-out-dask.md": check_spark_recipe, "plots.md": check_plots_headline}
