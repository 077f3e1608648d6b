"""Warm-up covers every documented use (issue 31, section 1).

``make test`` passes ``--warm-cache`` (tests/conftest.py): before any test, ``calframe warmup`` compiles into a
fresh kernel cache, and a copy of that cache, as warm-up left it, is kept. tests/test_readme.py then runs every
page of README.md and docs/ (their Python blocks and ``calframe`` commands) in a fresh process on that copy with
``CALFRAME_FORBID_COMPILE=1``: a kernel a page needs that warm-up did not compile fails the page, naming the kernel
(``run_page_after_warmup``). Pages that start a Spark session run in the suite's Spark process instead. This file
checks the switch itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


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


def test_the_suite_runs_the_pages_on_the_warm_cache_with_compiling_forbidden() -> None:
    """Under ``--warm-cache`` the frozen copy exists, and the pages' runner uses it with the switch set (what
    the FORBID runs above prove only if they run: this fails when make test stops passing the option)."""
    sys.path.insert(0, str(ROOT / "tests"))
    import test_readme

    makefile = (ROOT / "Makefile").read_text()
    test_line = next(line for line in makefile.splitlines() if "-m pytest" in line and line.startswith("\t"))
    assert "--warm-cache" in test_line
    source = Path(test_readme.__file__).read_text()
    assert 'CALFRAME_FORBID_COMPILE="1"' in source and "NUMBA_CACHE_DIR=str(warm_cache)" in source
    warm = os.environ.get(test_readme.WARM_CACHE_ENV)
    if warm:
        assert any(Path(warm).rglob("*.nbi")), f"{warm} holds no kernel index"


def test_warmup_processes_share_one_step_counter(tmp_path: Path) -> None:
    """``warmup(jobs=n)``'s processes take the next step from one counter file (calframe._warmup._take): taken
    from 8 threads at once, every step number is handed out exactly once; the slow steps it takes first are
    steps that exist."""
    from concurrent.futures import ThreadPoolExecutor

    from calframe import _warmup

    queue = tmp_path / "next-step"
    queue.write_text("0", encoding="ascii")
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda _: _warmup._take(str(queue)), range(400)))
    assert sorted(got) == list(range(400))
    names = {name for name, _ in _warmup._binary_cases() + _warmup._multiclass_cases()}
    assert set(_warmup.SLOW) <= names, set(_warmup.SLOW) - names
