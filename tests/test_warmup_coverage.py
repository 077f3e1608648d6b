"""Warm-up covers every documented use (issue 31, section 1).

``calframe warmup`` runs in a fresh process that records the argument types each cached kernel was prepared for
(``CALFRAME_RECORD_KERNELS``); then every page of README.md and docs/ (their Python blocks and ``calframe``
commands, as tests/test_readme.py runs them) runs in another fresh process with the same recording. Every kernel
signature the pages ran must be one warm-up prepared, but for the kernels of :data:`KNOWN_GAPS`, a list that may
only shrink: a kernel that leaves it must be taken off, and no other may join it. (Once the list is empty the pages
run with ``CALFRAME_FORBID_COMPILE=1``, which turns a compile into an error, as the issue asks.) Pages that start a
Spark session are left out (the suite's Spark session lives in another process); their calframe calls run in Spark.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: runs every page but those that start Spark, in a fresh process (the working directory a temporary one)
PAGES_DRIVER = """
import sys, os, tempfile
sys.path.insert(0, {tests!r})
import test_readme as T
failed = []
for path in T.PAGES:
    if "pyspark" in T.page_modules(path):
        continue
    os.environ.pop("CALIB_KEY", None)
    os.chdir(tempfile.mkdtemp(prefix=path.stem))  # each page in a fresh directory, as tests/test_readme.py runs it
    try:
        T.run_page(path)
    except BaseException as e:  # one page's failure is reported with the others
        failed.append(f"{{path.name}}: {{type(e).__name__}}: {{str(e)[:2000]}}")
    finally:
        if "matplotlib.pyplot" in sys.modules:
            sys.modules["matplotlib.pyplot"].close("all")
if failed:
    print("\\n".join(failed), file=sys.stderr)
    sys.exit(1)
"""


def _run(args: list[str], record: Path, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    full = dict(os.environ, PYTHONPATH=str(ROOT), CALFRAME_RECORD_KERNELS=str(record))
    full.pop("CALFRAME_FORBID_COMPILE", None)
    full.update(env)
    return subprocess.run([sys.executable, *args], env=full, capture_output=True, text=True, cwd=cwd, timeout=1800)


def test_a_forbidden_compile_raises_and_names_the_kernel(tmp_path: Path) -> None:
    """With ``CALFRAME_FORBID_COMPILE=1`` a cache miss is an error naming the kernel and what to do (an empty
    cache directory: every kernel misses)."""
    code = ("import polars as pl, calframe\n"
            "calframe.ece(pl.DataFrame({'prob': [0.1, 0.8], 'label': [0, 1]}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=600,
                         env=dict(os.environ, PYTHONPATH=str(ROOT), NUMBA_CACHE_DIR=str(tmp_path / "cache"),
                                  CALFRAME_FORBID_COMPILE="1"))
    assert out.returncode != 0
    assert "KernelCompileForbidden" in out.stderr and "calframe warmup" in out.stderr, out.stderr[-2000:]
