"""Compile calframe's kernels ahead of use: ``calframe warmup`` / :func:`calframe.warmup`.

numba compiles a kernel the first time it meets a new combination of argument types, and caches the
machine code on disk (``calframe._kernel_cache``): a fresh install or a fresh container pays 5-30 s on each
first call. Warm-up runs the public functions once on small built-in frames, over the dtypes and options
that select different compiled code (lens, label and probability dtypes, key types, weights, bin
strategies, the estimators, recalibrators, expressions), so later processes load every kernel from the
cache. It is safe to run in several processes at once: the cache's index is updated under a lock and
every entry is checked against its own key on load.

Run it where the cache is written for the processes that will use it: in a container image's build step
(after installing calframe), or in a CI job whose cache directory is saved between runs. The cache goes to
``NUMBA_CACHE_DIR`` when that is set, else to the ``__pycache__`` folders beside calframe's sources (numba's
user-wide cache folder when those are read-only); :func:`warmup` returns the directories it filled.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["warmup"]


def _binary_cases() -> list[tuple[str, Callable[[], Any]]]:
    import polars as pl

    from . import api as cf
    from . import datasets, expr

    df = datasets.grouped_miscalibration(n=3_000, seed=0)
    df = df.with_columns(
        w=pl.lit(1.5),
        g_int=pl.col("region").rank("dense").cast(pl.Int64),
        g_cat=pl.col("region").cast(pl.Categorical),
    )
    labels = {"Int64": df, "Int32": df.with_columns(pl.col("label").cast(pl.Int32)),
              "Int8": df.with_columns(pl.col("label").cast(pl.Int8)),
              "Boolean": df.with_columns(pl.col("label").cast(pl.Boolean)),
              "Float64": df.with_columns(pl.col("label").cast(pl.Float64))}
    f32 = df.with_columns(pl.col("prob").cast(pl.Float32))
    cases: list[tuple[str, Callable[[], Any]]] = []
    for name, d in labels.items():
        for lens in ("class:1", "top1"):
            for by in (None, "region", "g_int", "g_cat"):
                cases.append((f"ece {lens} labels {name} by {by}",
                              lambda d=d, lens=lens, by=by: cf.ece(d, lens=lens, by=by)))
        cases.append((f"ece weights, labels {name}", lambda d=d: cf.ece(d, weights="w", by="region")))
    for lens in ("class:1", "top1"):
        cases.append((f"ece {lens} float32", lambda lens=lens: cf.ece(f32, lens=lens, by="region")))
        cases.append((f"ece {lens} closed right", lambda lens=lens: cf.ece(df, lens=lens, closed="right")))
    for binning in ("quantile", "equal_mass", "sweep"):
        cases.append((f"ece binning={binning}", lambda b=binning: (cf.ece(df, binning=b), cf.ece(df, binning=b, by="region"))))
    cases += [
        ("mce, rmsce", lambda: (cf.mce(df, by="region"), cf.rmsce(df))),
        ("debiased l2 CE", lambda: (cf.ce(df, p=2, estimator="debiased"), cf.ce(df, p=2, estimator="debiased", by="region"))),
        ("bootstrap intervals", lambda: (cf.ece(df, ci=0.95, n_boot=20), cf.summary(df, by="region", ci=0.95, n_boot=20))),
        ("bootstrap intervals weighted, quantile bins", lambda: (
            cf.ece(df, ci=0.95, n_boot=20, weights="w", by="region"), cf.ece(df, binning="quantile", ci=0.95, n_boot=20),
            cf.ece(df, binning="quantile", ci=0.95, n_boot=20, weights="w"))),
        ("reliability", lambda: cf.reliability(df, by="region", bins=10)),
        ("companions", lambda: (cf.brier(df), cf.log_loss(df), cf.accuracy(df, by="region"))),
        # weighted: the weight buckets, and (groups of two rows, each with its own bucket) their per-group layout
        ("companions weighted", lambda: (cf.brier(df, weights="w", by="region"), cf.log_loss(
            df.head(12).with_columns(g_pair=pl.int_range(12) // 2, w=pl.Series(
                [1.0 if i % 2 == 0 else 2.0 ** (-8 * (i // 2 + 1)) for i in range(12)])), weights="w", by="g_pair"))),
        ("smooth ECE", lambda: (cf.smece(df), cf.smece(df, by="region"), cf.smece(df, weights="w"))),
        ("bin-free", lambda: (cf.ks_calibration(df, by="region"), cf.mmce(df), cf.mmce(df, by="region"))),
        ("disparity", lambda: cf.disparity(df, "ece", by="region")),
        ("vece", lambda: (cf.vece(df, "age"), cf.vmce(df, "age"), cf.vece(df, "age", by="region"))),
        ("vece_rank", lambda: cf.vece_rank(df)),
        ("vce_curve", lambda: cf.vce_curve(df, "age")),
        ("lce, mlce", lambda: (cf.lce(df, ["age"], gamma=0.2), cf.mlce(df, ["age"], gamma=0.2, prepare="standardize"),
                               cf.mlce(df, ["age"], gamma=0.2, prepare="standardize", by="region"))),
        # two features: the 2-D sweep of the local sums
        ("lce, mlce on two features", lambda: (cf.lce(df, ["age", "prob"], gamma=0.2),
                                               cf.mlce(df, ["age", "prob"], gamma=0.2, by="region"),
                                               cf.mlce(df, ["age", "prob"], gamma=0.2, by="region", neighbours="frame"))),
        ("vce_curve loess", lambda: cf.vce_curve(df, "age", smoother="loess", n_boot=0)),
        ("ece weights, one group", lambda: cf.ece(df, weights="w")),
        ("pandas, a null label dropped", lambda: cf.ece(df.select("prob", "label").to_pandas().assign(
            label=lambda p: p["label"].astype("float64").where(p.index % 7 != 0)), nulls="drop")),
        ("expressions", lambda: df.group_by("region").agg(expr.ece(prob="prob", label="label"),
                                                          expr.mce(prob="prob", label="label"))),
        ("expression companions, over, windows", lambda: _expressions(df)),
        ("CORP decomposition and curve", lambda: (cf.corp_decomposition(df, by="region"),
                                                  cf.reliability_curve(df, n_boot=20))),
        ("monitor", lambda: _monitor(df)),
        ("the calframe command", lambda: _commands(df)),
        ("lazy", lambda: cf.ece(df.lazy(), by="region").collect()),
    ]
    for method in ("platt", "temperature", "histogram", "isotonic", "beta", "scaling_binning", "venn_abers"):
        cases.append((f"fit/apply {method}", lambda m=method: cf.apply(df, cf.fit(df, m), name="q")))
    cases += [
        ("fit/apply tree", lambda: cf.apply(df, cf.fit(df, "tree", variable="age"), name="q")),
        ("fit/apply beta_v", lambda: cf.apply(df, cf.fit(df, "beta_v", variable="age"), name="q")),
        ("fit/apply lore", lambda: cf.apply(df, cf.fit(df, "lore", features=["age"], gamma=0.2, standardize=True), name="q")),
        ("fit by group", lambda: cf.apply(df, cf.fit(df, "isotonic", by="region"), name="q")),
        ("weighted fits", lambda: [cf.fit(df, m, weights="w") for m in ("platt", "beta", "temperature")]),
        ("kernels some data reach", _data_dependent),
    ]
    return cases


def _timed(df: Any) -> Any:
    import polars as pl

    return df.with_columns(ts=pl.datetime(2024, 1, 1) + pl.duration(minutes=37 * pl.int_range(pl.len())))


def _expressions(df: Any) -> None:
    import polars as pl

    from . import expr

    df.group_by("region").agg(expr.brier("prob", "label"), expr.log_loss("prob", "label"),
                              expr.accuracy("prob", "label"), pl.col("prob").calib.brier(label="label").alias("b"))
    df.select(expr.ece("prob", "label").over("region"))
    _timed(df).group_by_dynamic("ts", every="1w", period="2w", group_by="region").agg(expr.ece("prob", "label"))


def _monitor(df: Any) -> None:
    from .monitoring import monitor

    timed = _timed(df)
    monitor(timed, "ts", every="1w", bins=10)
    monitor(timed, "ts", every="1w", figures=["ece", "accuracy"], ci=0.9, n_boot=20)
    monitor(timed.lazy(), "ts", every="1d", period="7d", bins=10)


#: runs the commands given as JSON (argument lists) one after another in one process, as ``calframe ...`` would
_RUN_COMMANDS = ("import json, sys\nfrom calframe.cli import main\n"
                 "for args in json.loads(sys.argv[1]):\n"
                 "    if main(args) != 0:\n"
                 "        sys.exit(f'calframe {args[0]} failed')\n")


def _commands(df: Any) -> None:
    """``calframe report`` (its figures and sections: smooth curve, CORP, windows) and ``fit`` / ``apply``, on
    files in a temporary folder, through the command line's entry in a process of their own (one for the four:
    a process each cost a start and a load of every kernel each)."""
    import json
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="calframe-warmup-") as tmp:
        scores, rec = f"{tmp}/scores.parquet", f"{tmp}/rec.calib"
        _timed(df).write_parquet(scores)
        commands = [["report", scores, "--by", "region", "--vece", "age,device", "--n-boot", "20",
                     "--out", f"{tmp}/report.html", "--json", f"{tmp}/figures.json"],
                    ["report", scores, "--time-col", "ts", "--every", "1w", "--no-ci"],
                    ["fit", scores, "--method", "tree", "--variable", "age", "-o", rec],
                    ["apply", rec, scores, "-o", f"{tmp}/out"]]
        argv = json.dumps([[*a, "--no-progress"] for a in commands])
        out = subprocess.run([sys.executable, "-c", _RUN_COMMANDS, argv], capture_output=True, text=True, cwd=tmp)
        if out.returncode != 0:
            from ._errors import CalframeError

            raise CalframeError(f"warmup: the calframe commands failed:\n{out.stderr[-3000:]}")


def _data_dependent() -> None:
    """Kernels a call runs only on some data, called directly with the types the calls pass: the logistic fits'
    objective (evaluated when a Newton step must be shortened), the moments' rows of small cells."""
    import numpy as np

    from ._kernels import draws, logistic

    z = np.array([[0.5, 1.0], [-0.5, 1.0]])
    logistic.objective(z, np.array([1.0, 0.0]), np.ones(2), np.zeros(2), logistic.n_chunks(2))
    # the moments' pass and its small cells' rows (cells of fewer than 32 rows), each way of binning and weighting
    x, split, groups = np.array([0.1, 0.6, 0.7]), np.array([0, 1, 1], dtype=np.int8), np.zeros(3, dtype=np.int32)
    for bins in (None, np.array([0, 1, 1], dtype=np.int32)):
        for w in (None, np.ones(3)):
            draws.cell_sums(x, split, bins, np.array([0.0, 0.5, 1.0]), False, groups, 1, 2, w)


def _multiclass_cases() -> list[tuple[str, Callable[[], Any]]]:
    from . import api as cf
    from . import datasets

    mc = datasets.multiclass(n=2_000, k=10)
    return [
        ("multiclass ece", lambda: (cf.ece(mc), cf.ece(mc, lens="marginal", by="group"), cf.ece(mc, by="group"))),
        ("gece uniform", lambda: (cf.gece(mc, lens="topk", k=3, labels_in=[3]), cf.gece(mc, lens="top1", by="group"))),
        ("gece adaptive", lambda: (cf.gece(mc, lens="full", binning="adaptive", gamma=0.1),
                                   cf.gece(mc, lens="top1", binning="adaptive"))),
        ("multiclass smece", lambda: cf.smece(mc)),
        ("multiclass temperature", lambda: cf.apply(mc, cf.fit(mc, "temperature"), name="q")),
    ]


def warmup(*, verbose: bool = False, multiclass: bool = True, jobs: int = 1, part: tuple[int, int] | None = None,
           force: bool = False) -> list[str]:
    """Compile the kernels the public functions use, for the common dtypes, into numba's disk cache.

    Runs each public function once on small built-in frames (binary and multiclass), over the options and
    dtypes that compile different code. Takes a few minutes on a fresh install; once it has completed, it
    leaves a mark in the cache (for this calframe, numba and these steps) and returns at once while every
    index file it wrote is still there. Safe to run in several processes at once.

    Parameters
    ----------
    verbose
        Print each step and its time on standard error.
    multiclass
        Also compile the multiclass and GECE kernels.
    jobs
        Compile in this many processes at once (each takes the next step not yet taken, the slowest first;
        processes that need the same kernel variant compile it once: ``calframe._kernel_cache``);
        ``calframe warmup`` uses one per core, at most 4.
    part
        ``(i, n)``: this is process ``i`` of ``n`` started by ``jobs``: it takes the next step not yet taken from
        the step counter the ``n`` processes share (``CALFRAME_WARMUP_QUEUE``), or, without that counter, runs
        steps ``i, i + n, ...``.
    force
        Run every step even when the cache is marked warm (see :func:`is_warm`).

    Returns
    -------
    list of str
        The cache directories filled (``NUMBA_CACHE_DIR`` when set, else ``__pycache__`` beside calframe's
        sources).

    Examples
    --------
    >>> import calframe
    >>> dirs = calframe.warmup()      # doctest: +SKIP
    """
    import warnings

    from . import _kernel_cache

    if part is None and not force and is_warm(multiclass=multiclass):
        if verbose:
            print("calframe warmup: the cache holds what warm-up compiles for this calframe and numba "
                  "(--force compiles again)", file=sys.stderr)
        return _kernel_cache.cache_dirs()
    if jobs > 1:
        _in_processes(jobs, verbose=verbose, multiclass=multiclass)
        return _kernel_cache.cache_dirs()
    _kernel_cache.quiet = True  # this is the announced compile
    cases = _binary_cases() + (_multiclass_cases() if multiclass else [])
    queue = os.environ.get(QUEUE_ENV) if part is not None else None
    if queue:  # one of _in_processes' processes: the next step not taken yet, the slowest first
        cases = sorted(cases, key=lambda case: -SLOW.get(case[0], 0.0))
        order: Any = iter(lambda: _take(queue), None)
    else:
        if part is not None:
            cases = cases[part[0]::part[1]]
        order = range(len(cases))
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the examples' own warnings (small groups, ...) are not the point
            for i in order:
                if i >= len(cases):
                    break
                name, run = cases[i]
                t = time.perf_counter()
                run()
                if verbose:
                    print(f"  [{i + 1}/{len(cases)}] {name}: {time.perf_counter() - t:.1f} s", file=sys.stderr,
                          flush=True)
    finally:
        _kernel_cache.quiet = False
    if verbose:
        print(f"calframe warmup: {len(cases)} steps in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    if part is None:
        _mark_warm(multiclass=multiclass)
    return _kernel_cache.cache_dirs()


def _marker(multiclass: bool) -> Path:
    """The file that says a warm-up of these steps completed into the cache, for these sources and numba."""
    import hashlib
    import platform

    import numba

    from . import _kernel_cache
    from ._version import __version__

    cases = [name for name, _ in _binary_cases() + (_multiclass_cases() if multiclass else [])]
    key = repr((_kernel_cache.package_stamp(), __version__, numba.__version__, platform.python_version(), cases))
    return Path(_kernel_cache.cache_dirs()[0]) / f"calframe-warmup-{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"


def _index_files() -> list[str]:
    from . import _kernel_cache

    return sorted(str(p) for d in _kernel_cache.cache_dirs() for p in Path(d).glob("*.nbi"))


def is_warm(*, multiclass: bool = True) -> bool:
    """Whether a completed warm-up of these steps marked the cache, and every index file it wrote is there.

    Examples
    --------
    >>> from calframe._warmup import is_warm
    >>> is_warm() in (True, False)
    True
    """
    import json

    try:
        listed = json.loads(_marker(multiclass).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(listed, list) and all(Path(p).is_file() for p in listed)


def _mark_warm(*, multiclass: bool) -> None:
    import json

    try:
        _marker(multiclass).write_text(json.dumps(_index_files()), encoding="utf-8")
    except OSError:  # a read-only cache: the next warm-up runs its steps again
        pass


#: the environment variable naming the step counter the processes of ``warmup(jobs=...)`` share
QUEUE_ENV = "CALFRAME_WARMUP_QUEUE"

#: the steps that take longest on a fresh cache (seconds, in `calframe warmup --jobs 2` on the quiet 2-core machine): the processes of
#: ``warmup(jobs=...)`` take these first, so that no slow step is left for the end while a process idles
SLOW = {"lce, mlce on two features": 22.0, "bootstrap intervals": 21.0, "the calframe command": 20.0,
        "vce_curve": 11.0, "vce_curve loess": 9.0, "vece_rank": 7.0, "ece class:1 labels Int64 by region": 5.0,
        "gece adaptive": 5.0, "ece binning=quantile": 3.0}


def _take(path: str) -> int:
    """The next step number from the counter file ``path``, shared by the processes of one warm-up (under an
    inter-process lock where the platform has one)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: os.O_EXCL markers instead of a counter
        fcntl = None
    with open(path, "r+", encoding="ascii") as f:
        if fcntl is not None:
            fcntl.flock(f, fcntl.LOCK_EX)
        n = int(f.read() or 0)
        f.seek(0)
        f.write(str(n + 1))
        f.truncate()
        f.flush()
        return n


def _in_processes(jobs: int, *, verbose: bool, multiclass: bool) -> None:
    """Run the steps in ``jobs`` fresh processes (``calframe warmup --part i/jobs``), their output on this one's:
    each takes the next step not yet taken (a counter file, :func:`_take`), the slowest steps first."""
    import subprocess
    import tempfile

    args = [sys.executable, "-m", "calframe", "warmup", "--no-progress"]
    args += [] if verbose else ["--quiet"]
    args += [] if multiclass else ["--no-multiclass"]
    with tempfile.TemporaryDirectory(prefix="calframe-warmup-") as tmp:
        queue = os.path.join(tmp, "next-step")
        Path(queue).write_text("0", encoding="ascii")
        env = {**os.environ, QUEUE_ENV: queue}
        procs = [subprocess.Popen([*args, "--part", f"{i}/{jobs}"], env=env) for i in range(jobs)]
        failed = [i for i, proc in enumerate(procs) if proc.wait() != 0]
    if failed:
        from ._errors import CalframeError

        raise CalframeError(f"warmup: the process of part(s) {failed} of {jobs} failed (its error is printed "
                            "above); run `calframe warmup --jobs 1` to see it in order")
    _mark_warm(multiclass=multiclass)
