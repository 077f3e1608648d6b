"""Cold starts: what ``import calframe`` loads, and the README quickstart after ``calframe warmup``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pandas", "scipy", "sklearn", "matplotlib", "dask", "duckdb", "pyspark", "numba", "ibis", "narwhals")


def _python(code: str, **env: str) -> subprocess.CompletedProcess:
    full = dict(os.environ, PYTHONPATH=str(ROOT), **env)
    return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True, cwd=ROOT,
                          timeout=900)


def test_import_loads_no_heavy_module() -> None:
    out = _python(f"import sys, json, calframe; print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []


@pytest.mark.parametrize("first", ["calframe", "pandas"])
def test_pandas_accessor_whichever_is_imported_first(first: str) -> None:
    other = "pandas as pd" if first == "calframe" else "calframe"
    code = (f"import {'pandas as pd' if first == 'pandas' else 'calframe'}\nimport {other}\n"
            "df = pd.DataFrame({'prob': [0.2, 0.7, 0.9, 0.1], 'label': [0, 1, 1, 0]})\n"
            "print(df.calib.ece())")
    out = _python(code)
    assert out.returncode == 0, out.stderr
    assert float(out.stdout) == pytest.approx(0.175, abs=1e-12)  # |0.2-0|+|0.7-1|+|0.9-1|+|0.1-0|, over 4 rows


def _quickstart() -> str:
    from test_readme import blocks

    text = (ROOT / "README.md").read_text().splitlines()
    start = next(i for i, line in enumerate(text) if line.strip() == "## Quickstart")
    return next(b.code for b in blocks(ROOT / "README.md") if b.lang == "python" and b.line > start)


@pytest.mark.xdist_group("warmup")  # with tests/test_warmup_coverage.py's warm-up, on one worker: one compile
def test_quickstart_after_warmup_compiles_nothing(tmp_path: Path) -> None:
    """``calframe warmup`` fills the cache; a fresh process then runs the README quickstart without compiling
    (no "compiling" line on stderr). Under ``make test`` (``--warm-cache``) the cache is the copy of what the
    run's first step, ``calframe warmup``, compiled into a fresh one, and compiling is forbidden; else this test
    warms up the cache the suite's processes share."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    warm = os.environ.get("CALFRAME_SUITE_WARM_CACHE")
    if warm:
        env.update(NUMBA_CACHE_DIR=warm, CALFRAME_FORBID_COMPILE="1")
    else:
        import calframe

        dirs = calframe.warmup()
        assert dirs and all(Path(d).is_dir() for d in dirs)
    script = tmp_path / "quickstart.py"
    script.write_text(_quickstart())
    start = time.perf_counter()
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, cwd=tmp_path,
                         timeout=900)
    took = time.perf_counter() - start
    assert out.returncode == 0, out.stderr[-3000:]
    assert "compiling" not in out.stderr, out.stderr[-3000:]
    print(f"README quickstart in a fresh process after warmup: {took:.1f} s")


def test_warmup_command_says_where_the_cache_is() -> None:
    out = subprocess.run([sys.executable, "-m", "calframe", "warmup", "--help"], env=dict(os.environ, PYTHONPATH=str(ROOT)),
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0 and "numba's disk cache" in " ".join(out.stdout.split())


def test_package_and_api_hold_one_object_per_function() -> None:
    """Was: calframe.monitor was another object than api.monitor (no fork guard, and on a pyarrow Table it said
    the frame had no columns)."""
    import datetime as dt

    import polars as pl
    import pyarrow as pa

    import calframe

    for name in calframe.__all__:
        if hasattr(calframe.api, name):
            assert getattr(calframe, name) is getattr(calframe.api, name), name
    t = pa.table({"prob": [0.2, 0.7, 0.4], "label": [0, 1, 1],
                  "ts": [dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 2), dt.datetime(2024, 1, 2)]})
    got = pl.from_arrow(calframe.monitor(t, "ts"))
    # day 2: 0.7 and 0.4 fall in different uniform bins of 15, so ECE = (|0.7 - 1| + |0.4 - 1|) / 2
    assert got["ece"].to_list() == pytest.approx([0.2, (0.3 + 0.6) / 2], abs=1e-12)


def test_warmup_mark_lists_its_index_files(tmp_path: Path) -> None:
    """A completed warm-up marks the cache with the index files it wrote; the mark holds while they are all there,
    so ``calframe warmup`` on a warm cache returns at once, and compiles again once one is gone (no compile here:
    the index file is a stand-in)."""
    code = (
        "import json, pathlib\n"
        "from calframe import _warmup as W, _kernel_cache as K\n"
        "seen = [W.is_warm()]\n"
        "index = pathlib.Path(K.cache_dirs()[0]) / 'stand_in.nbi'\n"
        "index.parent.mkdir(parents=True, exist_ok=True)\n"
        "index.write_bytes(b'')\n"
        "W._mark_warm(multiclass=True)\n"
        "seen += [W.is_warm(), W.is_warm(multiclass=False)]\n"
        "index.unlink()\n"
        "seen.append(W.is_warm())\n"
        "print(json.dumps(seen))\n")
    out = _python(code, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [False, True, False, False]
