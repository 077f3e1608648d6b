"""Processes and threads: calframe in a ``fork`` child and under numba's ``workqueue`` threading layer.

Two runtimes calframe sits on break in ways that lose the process instead of
raising (docs/spec.md section 8, "Processes and threads"):

- **fork.** A child forked (``os.fork``, multiprocessing's ``"fork"`` start
  method) from a process whose Polars thread pool was running deadlocks in its
  first parallel Polars operation, and one whose parent had run numba's GNU
  OpenMP layer is terminated at its first parallel kernel. An at-fork hook
  records in the parent what was running; in the child every public function
  and every parallel kernel then raises :class:`UnsafeForkError` (naming the
  fix: a ``spawn`` or ``forkserver`` context) instead of hanging. A child whose
  parent had started neither works as before.
- **threads.** numba's ``workqueue`` layer (its fallback where OpenMP and TBB
  are missing) aborts the process when two threads launch parallel kernels at
  once, which threads of the caller and Dask's threaded scheduler both do.
  Parallel kernels are made with :func:`calframe._jit.njit`, whose dispatchers
  take one process-wide lock around each call while the layer is not
  thread-safe (or not yet started); under ``omp`` and ``tbb`` they run
  concurrently, unlocked.

Public functions are wrapped once, where they are defined
(:func:`calframe.frames.dispatch.public`).
"""

from __future__ import annotations

import functools
import os
import re
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from ._errors import UnsafeForkError
from ._progress import compiles_done

F = TypeVar("F", bound=Callable[..., Any])

#: numba threading layers that may launch parallel regions from several threads at once.
THREAD_SAFE_LAYERS = frozenset({"omp", "tbb"})

kernel_lock = threading.Lock()
_serialise: bool | None = None  # None until numba's threading layer has started
_used = False  # a public calframe function has run in this process
_at_fork: tuple[str, ...] = ()  # what the process had running when it last forked (set by the at-fork hook)
_inherited: tuple[str, ...] = ()  # in a fork child: what the parent had running
CACHED: list[Any] = []  # every cache=True dispatcher made by njit (calframe.warmup, the cache tests)


# --------------------------------------------------------------------------- threads


def serialising() -> bool:
    """Whether parallel kernels run one at a time: numba's layer is not thread-safe, or not started yet.

    Examples
    --------
    >>> import calframe._runtime as R
    >>> isinstance(R.serialising(), bool)
    True
    """
    global _serialise
    if _serialise is None:
        import numba

        try:
            layer = numba.threading_layer()
        except ValueError:  # no parallel region has run yet: the layer is chosen at the first one
            return True
        _serialise = layer not in THREAD_SAFE_LAYERS
    return _serialise


def load_kernels() -> None:
    """Import every module that defines calframe's kernels (so :data:`CACHED` lists them all)."""
    import importlib
    import pkgutil

    from . import _kernels

    for mod in pkgutil.iter_modules(_kernels.__path__):
        importlib.import_module(f"{_kernels.__name__}.{mod.name}")


# --------------------------------------------------------------------------- fork


def _polars_pool_running() -> bool:
    """Whether Polars' thread pool (threads ``polars-0``, ``polars-1``, ...) has started (Linux; else False)."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return False
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/comm") as f:
                if re.fullmatch(r"polars-\d+", f.read().strip()):
                    return True
        except OSError:  # the thread ended meanwhile
            continue
    return False


def _gnu_openmp_running() -> bool:
    """Whether numba's threading layer has started as GNU OpenMP (Intel OpenMP, TBB and workqueue survive fork)."""
    numba = sys.modules.get("numba")
    if numba is None:  # never imported: no kernel has run
        return False
    try:
        if numba.threading_layer() != "omp":
            return False
        from numba.np.ufunc import omppool
    except (ValueError, ImportError):
        return False
    return getattr(omppool, "openmp_vendor", "GNU") == "GNU"


def running_runtimes() -> tuple[str, ...]:
    """The runtimes of this process that a fork child cannot use (its own inherited ones included)."""
    found = list(_inherited)
    if "Polars' thread pool" not in found and (_used or _polars_pool_running()):
        found.append("Polars' thread pool")
    if "GNU OpenMP (numba's 'omp' threading layer)" not in found and _gnu_openmp_running():
        found.append("GNU OpenMP (numba's 'omp' threading layer)")
    return tuple(found)


def _before_fork() -> None:
    global _at_fork
    _at_fork = running_runtimes()


def _after_fork_in_child() -> None:
    global _inherited, _used
    _inherited, _used = _at_fork, False


def check_fork(func: str) -> None:
    """Raise :class:`UnsafeForkError` in a fork child whose parent had started Polars' pool or GNU OpenMP."""
    if _inherited:
        raise UnsafeForkError(
            f"{func}: this process was forked (os.fork or multiprocessing's 'fork' start method) from a process "
            f"that had started {' and '.join(_inherited)}, which deadlock or terminate in a fork child. "
            "Start worker processes with the 'spawn' or 'forkserver' method instead, e.g. "
            "multiprocessing.get_context('spawn').Pool() or "
            "ProcessPoolExecutor(mp_context=multiprocessing.get_context('forkserver')), "
            "or fork the workers before the parent first uses calframe."
        )


_calling = threading.local()  # .name: the public function this thread is in (the outermost), for the compile notice


def current_call() -> str | None:
    """The public function this thread is running (the outermost one), or None: what a kernel compile is for."""
    return getattr(_calling, "name", None)


def calling(name: str | None, fn: Callable[..., Any], args: tuple) -> Any:
    """``fn(*args)`` in a worker thread, as part of the public function ``name`` (:func:`current_call`)."""
    _calling.name = name
    try:
        return fn(*args)
    finally:
        _calling.name = None


def entry(func: F) -> F:
    """Wrap a public function: refuse to run in an unsafe fork child, note that calframe has run, and name the
    call a kernel compile is for (:func:`current_call`)."""

    @functools.wraps(func)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        global _used
        check_fork(func.__name__)
        _used = True
        if getattr(_calling, "name", None) is not None:
            return func(*args, **kwargs)
        _calling.name = func.__name__
        try:
            return func(*args, **kwargs)
        finally:
            _calling.name = None
            compiles_done()  # the bar of the call's kernel compiles, if one was shown

    return guarded  # type: ignore[return-value]


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)
