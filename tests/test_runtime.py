"""Processes and threads (docs/spec.md section 8): fork children never hang, and numba's
thread-unsafe ``workqueue`` layer never aborts when several threads call calframe.

Each scenario runs in a subprocess (a hang or an abort cannot take the test run with it)
with finite timeouts; the subprocess prints one JSON line that the test checks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pytest

import calframe
from calframe import _jit, _runtime

ROOT = Path(__file__).resolve().parents[1]

#: the data every scenario uses (a few thousand rows: the machine may be small and busy)
DATA = """
import numpy as np
rng = np.random.default_rng(7)
n = 3000
p = rng.uniform(0.01, 0.99, n)
y = (rng.uniform(size=n) < p**1.3).astype(np.int64)
g = rng.integers(0, 3, n)
x = rng.normal(size=n)
"""


def _run(script: str, env: dict[str, str] | None = None, timeout: float = 240) -> dict:
    """Run ``script`` (after DATA) in a fresh interpreter with this checkout first on the path; the last line it
    prints is JSON."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    with tempfile.TemporaryDirectory() as tmp:  # a file, not -c: 'spawn' children re-import the main module
        path = Path(tmp, "scenario.py")
        path.write_text(textwrap.dedent(DATA) + textwrap.dedent(script))
        proc = subprocess.run([sys.executable, str(path)], cwd=ROOT, env=full_env, capture_output=True, text=True,
                              timeout=timeout)
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _ece_reference() -> float:
    """ECE of the positive class by hand: 15 uniform bins, numpy.digitize on linspace edges."""
    ns: dict = {}
    exec(DATA, ns)
    p, y = ns["p"], ns["y"]
    b = np.clip(np.digitize(p, np.linspace(0, 1, 16)) - 1, 0, 14)
    return float(sum(abs(p[b == k].sum() - y[b == k].sum()) for k in range(15)) / len(p))


# --------------------------------------------------------------------------- fork

FORK = """
import json, multiprocessing as mp
import polars as pl
import calframe
from calframe import recalibrate

df = pl.DataFrame({"prob": p, "label": y})

def child(what):
    if what == "ece":
        return calframe.ece(df, lens="class:1")
    return float(recalibrate.fit("platt", p, y).predict(p[:1])[0])

def run(method, what):
    with mp.get_context(method).Pool(1) as pool:
        try:
            return {"value": pool.apply_async(child, (what,)).get(timeout=60)}
        except calframe.CalframeError as e:
            return {"error": type(e).__name__, "message": str(e), "is_runtime": isinstance(e, RuntimeError)}
        except mp.TimeoutError:
            return {"error": "hang"}

if __name__ == "__main__":
    parent = {PARENT!r}
    if parent == "calframe":
        calframe.ece(df, lens="class:1")
    elif parent == "polars":  # Polars' own thread pool, without calframe
        pl.DataFrame({"g": g, "x": x}).group_by("g").agg(pl.col("x").sum())
    elif parent == "kernels":  # calframe's numba kernels on arrays, without Polars
        recalibrate.fit("platt", p, y)
    import numba
    try:
        layer = numba.threading_layer()
    except ValueError:
        layer = None
    from numba.np.ufunc import omppool
    print(json.dumps({"layer": layer, "vendor": getattr(omppool, "openmp_vendor", None),
                      **run({METHOD!r}, {WHAT!r})}))
"""


def _fork(parent: str, what: str = "ece", method: str = "fork") -> dict:
    return _run(FORK.replace("{PARENT!r}", repr(parent)).replace("{METHOD!r}", repr(method))
                .replace("{WHAT!r}", repr(what)))


def _assert_unsafe_fork(out: dict, names: str) -> None:
    assert out.get("error") == "UnsafeForkError", out
    assert out["is_runtime"]
    message = out["message"]
    assert "fork" in message and "'spawn'" in message and "'forkserver'" in message, message
    assert names in message, message


def test_fork_child_of_a_process_that_used_calframe_raises_instead_of_hanging():
    """Was: the child deadlocked (Polars' pool) or was terminated (GNU OpenMP); the pool waited forever."""
    out = _fork("calframe")
    _assert_unsafe_fork(out, "Polars' thread pool")
    if out["layer"] == "omp" and out["vendor"] == "GNU":
        assert "GNU OpenMP" in out["message"]


def test_fork_child_of_a_process_that_used_polars_raises_instead_of_hanging():
    """Polars' pool started by the caller's own Polars code deadlocks calframe's Polars calls in the child."""
    _assert_unsafe_fork(_fork("polars"), "Polars' thread pool")


def test_fork_child_after_kernels_alone_raises_at_the_kernel():
    """Array-level recalibrators use numba kernels but no Polars: GNU OpenMP terminated the child at its first
    parallel region, then the kernel raised first. Now the kernels start no OpenMP (they run on Python's
    threads), so the child simply works; were the layer started, the guard still raises."""
    out = _fork("kernels", what="platt")
    if not (out["layer"] == "omp" and out["vendor"] == "GNU"):
        assert out.get("value") is not None, out  # Intel OpenMP, TBB and workqueue survive fork
        return
    _assert_unsafe_fork(out, "GNU OpenMP (numba's 'omp' threading layer)")


def test_fork_child_of_a_process_that_only_imported_calframe_works():
    out = _fork("none")
    assert out.get("value") == pytest.approx(_ece_reference(), abs=1e-12), out


def test_spawn_context_named_by_the_error_works_after_use():
    out = _fork("calframe", method="spawn")
    assert out.get("value") == pytest.approx(_ece_reference(), abs=1e-12), out


def test_fork_hazards_in_this_process():
    """What the at-fork hook records: Polars' pool once calframe has run; nothing inherited here."""
    import polars as pl

    calframe.ece(pl.DataFrame({"prob": [0.2, 0.7, 0.9], "label": [0, 1, 1]}), lens="class:1")
    assert "Polars' thread pool" in _runtime.running_runtimes()
    _runtime.check_fork("ece")  # this process was not forked: no error


def test_unsafe_fork_error_class():
    assert issubclass(calframe.UnsafeForkError, calframe.CalframeError)
    assert issubclass(calframe.UnsafeForkError, RuntimeError)


def test_public_functions_are_guarded_and_keep_their_docs():
    for name in ("ece", "gece", "fit", "apply", "load", "summary", "vece"):
        func = getattr(calframe, name)
        assert func is getattr(calframe.api, name)
        assert func.__wrapped__.__doc__ == func.__doc__ and func.__doc__
        assert func.__module__.startswith("calframe.families.")  # defined by family, exported by calframe.api


# --------------------------------------------------------------------------- threads

THREADS = """
import json, threading
import numba
import polars as pl
import calframe

df = pl.DataFrame({"prob": p, "label": y, "g": g, "x": x})

def calls():
    rec = calframe.fit(df, "platt")
    return [
        calframe.ece(df, lens="class:1"),
        calframe.ece(df, lens="class:1", by="g")["ece"].to_list(),
        calframe.gece(df, lens="class:1", binning="adaptive"),
        calframe.gece(df, lens="class:1", by="g")["gece"].to_list(),
        calframe.apply(df, rec, name="q")["q"].to_numpy().tobytes().hex(),
        calframe.apply(df, calframe.fit(df, "isotonic", by="g"), name="q")["q"].to_numpy().tobytes().hex(),
    ]

reference = calls()
out, errors = [], []

def worker():
    try:
        for _ in range(3):
            out.append(calls())
    except BaseException as e:
        errors.append(repr(e))

threads = [threading.Thread(target=worker) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
try:
    layer = numba.threading_layer()
except ValueError:  # never started
    layer = None
print(json.dumps({"layer": layer, "runs": len(out), "same": all(r == reference for r in out), "errors": errors}))
"""


@pytest.mark.parametrize("layer", ["workqueue", "omp"])
def test_threads_calling_calframe_at_once(layer):
    """Was: 'Concurrent access has been detected' aborted the process under workqueue; then kernels took a
    process-wide lock there. Now calframe's kernels run on Python's threads (calframe._jit.on_threads): numba's
    threading layer never starts, whichever is asked for, and threads calling calframe at once each get the
    single-threaded bits."""
    out = _run(THREADS, env={"NUMBA_THREADING_LAYER": layer})
    assert out["layer"] is None, out
    assert out["errors"] == [] and out["runs"] == 12 and out["same"], out


def test_dask_threaded_scheduler_under_workqueue():
    """Dask's default scheduler runs partitions in threads: one call aborted the process under workqueue."""
    pytest.importorskip("dask.dataframe")
    out = _run("""
    import json, numba
    import pandas as pd, dask, dask.dataframe as dd
    import calframe, calframe.frames.dask
    pdf = pd.DataFrame({"prob": p, "label": y, "g": g})
    ddf = dd.from_pandas(pdf, npartitions=6)
    with dask.config.set(scheduler="threads", num_workers=4):
        got = [ddf.calib.ece(lens="class:1", by="g").compute()["ece"].tolist() for _ in range(3)]
    want = calframe.ece(pdf, lens="class:1", by="g")["ece"].tolist()
    try:
        layer = numba.threading_layer()
    except ValueError:  # never started: calframe's kernels run on Python's threads
        layer = None
    print(json.dumps({"layer": layer, "got": got, "want": want}))
    """, env={"NUMBA_THREADING_LAYER": "workqueue"})
    assert out["layer"] is None, out
    for got in out["got"]:
        assert got == pytest.approx(out["want"], abs=1e-12)


def test_kernels_are_serialised_dispatchers():
    """Every parallel kernel of the package goes through the one guard (a Kernel dispatcher), so no call path
    (public function, recalibrator on arrays, Dask partition) can miss it."""
    import importlib
    import pkgutil

    from numba.core.registry import CPUDispatcher

    parallel, threaded = [], []
    for info in pkgutil.walk_packages(calframe.__path__, "calframe."):
        if info.name == "calframe.__main__":  # runs the command line
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional extra (dask, matplotlib) that is not installed
            continue
        for value in vars(module).values():
            if isinstance(value, CPUDispatcher) and value.targetoptions.get("parallel"):
                parallel.append(value)
                assert isinstance(value, _jit.Kernel), f"{info.name}.{value.__name__}"
            elif isinstance(value, CPUDispatcher) and value.targetoptions.get("nogil"):
                threaded.append(value)  # run on Python's threads (_jit.on_threads): no numba threading layer
    assert len(parallel) + len(threaded) > 20  # the walk found the kernels
