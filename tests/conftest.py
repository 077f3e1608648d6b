"""Shared test fixtures, the ``--require-extras`` option and the hypothesis profiles.

``constructor`` follows narwhals' tests/conftest.py: a test that takes it runs
once per supported frame flavour, and builds its input with
``constructor({"col": values, ...})``.

Test extras (``pip install -e ".[test,plot,dask]"``): the reference libraries
(scikit-learn, uncertainty-calibration, relplot, betacal, scikit-misc, duckdb,
dask, matplotlib) are loaded with ``pytest.importorskip``.  A plain ``pytest``
without them skips those files with a reason (shown by ``-ra``).
``pytest --require-extras`` (what ``make test`` runs) turns every
``pytest.importorskip`` into a hard failure instead, so CI cannot stay green
while a peer failed to install.  Use ``importorskip`` only for test extras;
anything that may legitimately be absent in CI (the Adult data in ../shared,
a headless browser, a second numba thread) calls ``pytest.skip`` itself.

Hypothesis profiles: ``default`` explores new random examples on every run
(for developers); ``ci`` (``--hypothesis-profile=ci``, what ``make test``
runs) is derandomized, so CI runs are reproducible: the examples depend only
on each test's source, without example database or deadlines.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from pathlib import Path

import numba
import numpy as np
import os
import sys
import pandas as pd
import polars as pl
import pytest

Constructor = Callable[[dict[str, Any]], Any]

try:
    from hypothesis import HealthCheck, settings
except ImportError:  # a test extra: the files that use it fail to import on their own
    pass
else:
    settings.register_profile(
        "ci", derandomize=True, database=None, deadline=None, print_blob=True,
        suppress_health_check=[HealthCheck.too_slow],
    )

_importorskip = pytest.importorskip

# Spark's Python workers (any session a test or a docs block starts) run this interpreter, where calframe is
# installed, not the first python3 on PATH.
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def _import_or_fail(modname: str, minversion: str | None = None, reason: str | None = None, **kw: Any) -> Any:
    """``pytest.importorskip`` under ``--require-extras``: a missing or too old test extra fails."""
    try:
        return _importorskip(modname, minversion, reason, **kw)
    except pytest.skip.Exception as exc:
        pytest.fail(f"--require-extras: test extra {modname!r} is missing ({exc.msg}); "
                    "install it with pip install -e '.[test,plot,dask]'", pytrace=False)


ROOT = Path(__file__).resolve().parents[1]

#: set by ``--warm-cache``: a frozen copy of the kernel cache ``calframe warmup`` filled, and nothing else
WARM_CACHE_ENV = "CALFRAME_SUITE_WARM_CACHE"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--require-extras", action="store_true", default=False,
                     help="fail (instead of skip) where a test extra cannot be imported (make test passes it)")
    parser.addoption("--warm-cache", action="store_true", default=False,
                     help="first run `calframe warmup` into a fresh kernel cache the whole run shares (NUMBA_CACHE_DIR), "
                     "and keep a copy of it as warm-up left it: the README and docs pages then run in fresh "
                     "processes on that copy with compiling forbidden (make test passes it)")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--require-extras"):
        pytest.importorskip = _import_or_fail  # module-level importorskip calls look it up at collection time
    # in the controlling process only, before pytest-xdist starts the workers (they inherit the environment)
    if config.getoption("--warm-cache") and not hasattr(config, "workerinput") and WARM_CACHE_ENV not in os.environ:
        _warm_first(config)


def _warm_first(config: pytest.Config) -> None:
    """``calframe warmup --jobs 2`` into a fresh cache: the tests then load what it compiled instead of each worker
    compiling it, and its frozen copy is what a user has after ``calframe warmup`` (tests/test_readme.py runs the
    pages on it with ``CALFRAME_FORBID_COMPILE=1``)."""
    import shutil
    import subprocess
    import tempfile
    import time

    root = Path(tempfile.mkdtemp(prefix="calframe-suite-"))
    cache, frozen = root / "numba-cache", root / "warm-cache"
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    env.pop("CALFRAME_FORBID_COMPILE", None)
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "calframe", "warmup", "--quiet", "--jobs", "2"], env=env, cwd=ROOT,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise pytest.UsageError(f"--warm-cache: calframe warmup failed:\n{out.stdout[-2000:]}{out.stderr[-4000:]}")
    shutil.copytree(cache, frozen)
    os.environ["NUMBA_CACHE_DIR"], os.environ[WARM_CACHE_ENV] = str(cache), str(frozen)
    numba.core.config.reload_config()  # this process too (a run without workers)
    config.stash[_WARMUP] = (time.perf_counter() - start, root)


_WARMUP = pytest.StashKey[tuple[float, Path]]()


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the groups (--dist loadgroup)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test marked ``spark`` in one pytest-xdist group, so one worker starts the one Spark session."""
    for item in items:
        if item.get_closest_marker("spark") is not None:
            item.add_marker(pytest.mark.xdist_group("spark"))


def pytest_unconfigure(config: pytest.Config) -> None:
    pytest.importorskip = _importorskip
    if _WARMUP in getattr(config, "stash", {}):
        import shutil

        shutil.rmtree(config.stash[_WARMUP][1], ignore_errors=True)


# The distributions whose versions the pytest header shows: calframe's runtime, then the peers the tests check
# against and the engines they run on (distribution names, as pip knows them).
HEADER_DISTRIBUTIONS = (
    "polars", "pandas", "pyarrow", "numpy", "numba", "scipy",
    "scikit-learn", "uncertainty-calibration", "relplot", "betacal", "scikit-misc",
    "duckdb", "narwhals", "ibis-framework", "pyspark", "dask", "hypothesis",
)


def installed_versions(names: tuple[str, ...] = HEADER_DISTRIBUTIONS) -> str:
    """``"name version, ..."`` for each distribution, ``"name not installed"`` where it is missing. Read from the
    installed metadata: nothing is imported (pyspark or dask would take seconds)."""
    from importlib.metadata import PackageNotFoundError, version

    def one(name: str) -> str:
        try:
            return f"{name} {version(name)}"
        except PackageNotFoundError:
            return f"{name} not installed"

    return ", ".join(one(name) for name in names)


def pytest_report_header(config: pytest.Config) -> list[str]:
    """The test extras' mode and the versions the run checks against (a failure report names what it ran on)."""
    if config.getoption("--require-extras"):
        extras = "test extras: required (--require-extras)"
    else:
        extras = "test extras: optional (a missing one skips its tests; make test passes --require-extras)"
    return [extras, f"versions: {installed_versions()}"]


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Under ``-q`` (``make test``), which hides the header, the versions line closes the run's summary instead."""
    if config.get_verbosity() < 0:
        terminalreporter.write_line(f"versions: {installed_versions()}")
    if _WARMUP in getattr(config, "stash", {}):
        terminalreporter.write_line(f"calframe warmup --jobs 2 (--warm-cache, before the tests): "
                                    f"{config.stash[_WARMUP][0]:.1f} s")


def pandas_constructor(obj: dict[str, Any]) -> pd.DataFrame:
    """numpy-backed pandas."""
    return pd.DataFrame(obj)


def pandas_nullable_constructor(obj: dict[str, Any]) -> pd.DataFrame:
    """pandas with its nullable extension dtypes (Float64, Int64, boolean)."""
    return pd.DataFrame(obj).convert_dtypes(dtype_backend="numpy_nullable")


def pandas_pyarrow_constructor(obj: dict[str, Any]) -> pd.DataFrame:
    """Arrow-backed pandas (pd.ArrowDtype columns)."""
    return pl.DataFrame(obj).to_pandas(use_pyarrow_extension_array=True)


def polars_eager_constructor(obj: dict[str, Any]) -> pl.DataFrame:
    return pl.DataFrame(obj)


def polars_lazy_constructor(obj: dict[str, Any]) -> pl.LazyFrame:
    return pl.LazyFrame(obj)


def as_flavour(df: pl.DataFrame, flavour: str) -> Any:
    """``df`` as the frame type ``flavour``: "polars", "lazy", "pandas", "pandas[pyarrow]", "pandas[nullable]"
    (only for frames without NaN: convert_dtypes turns NaN into <NA>) or "dask" (2 partitions; registers
    ddf.calib)."""
    if flavour == "polars":
        return df
    if flavour == "lazy":
        return df.lazy()
    if flavour == "pandas":
        return df.to_pandas()
    if flavour == "pandas[pyarrow]":
        return df.to_pandas(use_pyarrow_extension_array=True)
    if flavour == "pandas[nullable]":
        return df.to_pandas().convert_dtypes(dtype_backend="numpy_nullable")
    if flavour == "dask":
        dd = pytest.importorskip("dask.dataframe")
        import calframe.frames.dask  # noqa: F401  (registers ddf.calib)

        return dd.from_pandas(df.to_pandas(), npartitions=2)
    raise AssertionError(flavour)


def signed_zero_keys_frame(n: int = 240, seed: int = 7) -> pl.DataFrame:
    """Three-class scores grouped by a String key (with null and "") and a Float64 key holding 0.0, -0.0, 1.5,
    NaN and null in random order, so every run of rows meets both zeros under several String keys (spec
    section 8: -0.0 is 0.0, NaN is the null key). Columns p0, p1, p2, cls (label), v (a numeric variable), s, x."""
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(3), n)
    return pl.DataFrame({
        "p0": probs[:, 0], "p1": probs[:, 1], "p2": probs[:, 2], "cls": rng.integers(0, 3, n),
        "v": rng.normal(0, 1, n),
        "s": pl.Series(rng.choice(np.array(["a", "", "b", None], dtype=object), n).tolist(), dtype=pl.String),
        "x": pl.Series(rng.choice(np.array([0.0, -0.0, 1.5, np.nan, None], dtype=object), n).tolist(),
                       dtype=pl.Float64),
    })


CONSTRUCTORS: dict[str, Constructor] = {
    "pandas": pandas_constructor,
    "pandas[nullable]": pandas_nullable_constructor,
    "pandas[pyarrow]": pandas_pyarrow_constructor,
    "polars[eager]": polars_eager_constructor,
    "polars[lazy]": polars_lazy_constructor,
}


@pytest.fixture(params=list(CONSTRUCTORS), ids=list(CONSTRUCTORS))
def constructor(request: pytest.FixtureRequest) -> Constructor:
    return CONSTRUCTORS[request.param]


@pytest.fixture
def one_numba_thread():
    """Run a test with one numba thread, then restore the count.

    Results do not depend on the thread count (test_one_and_two_numba_threads_give_identical_bits
    checks it bit for bit), but on a shared, oversubscribed machine every parallel launch can wait
    ~100 ms for worker threads, even for a 5-row frame: hundreds of hypothesis examples would
    take minutes.
    """
    old = numba.get_num_threads()
    numba.set_num_threads(1)
    yield
    numba.set_num_threads(old)


ADULT = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "variable-wise-calibration" / "adult_out.csv"


@pytest.fixture(scope="session")
def adult_split() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Kelly & Smyth's Adult split (ORACLES.md C): 2500 calibration rows, the rest as test rows in file order."""
    if not ADULT.exists():
        pytest.skip(f"{ADULT} not present (shared/ data is not shipped with the repo)")
    df = pd.read_csv(ADULT, index_col=0)
    cal = df.sample(n=2500, replace=False, random_state=0)
    return cal, df.drop(cal.index)


def collected(result: Any) -> Any:
    """A call's result with a LazyFrame collected and a Dask result computed (a LazyFrame in gives a LazyFrame out,
    a Dask DataFrame a lazy ``DaskResult``; errors in their data are raised when collected or computed:
    docs/spec.md section 8, "Lazy in, lazy out")."""
    if type(result).__name__ == "DaskResult":
        return result.compute()
    return result.collect() if isinstance(result, pl.LazyFrame) else result


def figure(result: Any) -> Any:
    """The float of a call without ``by``: a LazyFrame's one-row result (``n`` and the figure) read back, a Dask
    result computed."""
    if type(result).__name__ == "DaskResult":  # a Dask DataFrame's lazy result computes to the float
        return result.compute()
    if not isinstance(result, pl.LazyFrame):
        return result
    df = result.collect()
    assert df.height == 1 and df.columns[0] == "n", df
    return df.item(0, df.width - 1)


def _one_spark_session(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Fail where a second Spark session would start in one run: every test marked ``spark`` must run on one
    pytest-xdist worker (``pytest_collection_modifyitems``, ``--dist loadgroup``). Each worker that starts one
    leaves a file in the run's shared temporary directory, then looks for another's (pytest 9.2 with
    pytest-xdist 3.8 split the group silently and started two JVMs)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    root = tmp_path_factory.getbasetemp()
    root = root.parent if worker else root  # the workers' directories share the run's root
    me = root / f"spark-session-{worker or 'main'}"
    me.touch()
    others = sorted(p.name for p in root.glob("spark-session-*") if p != me)
    if others:
        pytest.fail(f"a second Spark session in one run ({me.name}; already: {', '.join(others)}): the tests "
                    "marked spark must share one xdist group (--dist loadgroup); check that the installed "
                    "pytest-xdist supports the installed pytest (pyproject's pin)")


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One local PySpark session (``local[2]``) for the whole run: it takes ~20 s to start. Tests that use it are
    marked ``spark`` (deselect with ``-m "not spark"``). pyspark is a test extra (``--require-extras`` fails
    when it is missing); Java 17 must be on PATH. A second session in one run fails (:func:`_one_spark_session`)."""
    pyspark_sql = pytest.importorskip("pyspark.sql")
    _one_spark_session(tmp_path_factory)
    # Tuned for many small queries (measured on 19 Spark tests, 2 cores: 182 s of CPU with Spark's defaults and 4
    # shuffle partitions, 122 s with these): the JIT's quick tier only (long optimising compiles never pay back
    # on kilobytes of rows), 2 shuffle partitions, no adaptive re-planning.
    session = (pyspark_sql.SparkSession.builder.master("local[2]").appName("calframe-tests")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", "2").config("spark.sql.adaptive.enabled", "false")
               .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
               .config("spark.sql.session.timeZone", "UTC").config("spark.driver.memory", "1g")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
