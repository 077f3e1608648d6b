"""numba's side of :mod:`calframe._runtime`: the :class:`Kernel` dispatcher and :func:`njit`.

Imported with the first kernel module, so ``import calframe`` does not import numba (nor the scipy that
numba's own import checks for).
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numba
import numpy as np
from numba.core.registry import CPUDispatcher

from ._runtime import CACHED, kernel_lock, check_fork, current_call, serialising, calling


def _frozen(args: tuple, positions: tuple[int, ...]) -> tuple:
    """``args`` with the writable arrays at ``positions`` replaced by read-only views of them (no copy)."""
    out = list(args)
    for i in positions:
        a = out[i] if i < len(out) else None
        if isinstance(a, np.ndarray) and a.flags.writeable:
            view = a.view()
            view.flags.writeable = False
            out[i] = view
    return tuple(out)


class Frozen(CPUDispatcher):
    """A dispatcher whose input arrays (``njit(readonly=...)``) are passed read-only from Python: numba types a
    read-only array apart from a writable one, so a kernel fed both (an Arrow buffer, a computed array) compiled
    twice. Jitted callers call it directly, with their own types."""

    readonly_positions: tuple[int, ...] = ()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return super().__call__(*_frozen(args, self.readonly_positions), **kwargs)


class Kernel(CPUDispatcher):
    """A ``parallel=True`` numba dispatcher that checks the process may run it and holds the kernel lock
    while numba's threading layer is not thread-safe. Jitted callers call it directly, as any dispatcher.
    Its ``readonly`` inputs are passed read-only, as :class:`Frozen` does."""

    readonly_positions: tuple[int, ...] = ()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        check_fork(self.__name__)
        if self.readonly_positions:
            args = _frozen(args, self.readonly_positions)
        if serialising():
            with kernel_lock:
                return super().__call__(*args, **kwargs)
        return super().__call__(*args, **kwargs)


#: the environment variable naming a JSON file to which a process writes, at exit, the argument types each cached
#: kernel ran with (``{kernel: [types, ...]}``): how tests/test_warmup_coverage.py compares what ``calframe warmup``
#: prepares with what the documented uses run
RECORD_ENV = "CALFRAME_RECORD_KERNELS"


def used_signatures() -> dict[str, list[str]]:
    """The argument types each cached kernel of this process was loaded or compiled for, by kernel name."""
    out: dict[str, set[str]] = {}
    for d in CACHED:
        out.setdefault(f"{d.py_func.__module__}.{d.py_func.__qualname__}", set()).update(map(str, d.signatures))
    return {k: sorted(v) for k, v in sorted(out.items())}


def _write_used() -> None:
    import json

    with open(os.environ[RECORD_ENV], "w", encoding="utf-8") as f:
        json.dump(used_signatures(), f)


if os.environ.get(RECORD_ENV):
    atexit.register(_write_used)


def njit(*args: Any, **options: Any) -> Any:
    """``numba.njit`` for calframe's kernels: a ``parallel=True`` function becomes a :class:`Kernel`, a
    ``cache=True`` one gets :class:`calframe._kernel_cache.KernelCache`. ``readonly=("name", ...)`` names the
    array parameters the kernel only reads: called from Python they are passed as read-only views, so one
    compiled variant serves Arrow's read-only buffers and computed arrays alike (numba types the two apart).
    numba is imported with this module, when a kernel module is first imported, not by ``import calframe``.

    Examples
    --------
    >>> import numpy as np
    >>> from numba import prange
    >>> from calframe._jit import Kernel, njit
    >>> @njit(parallel=True)
    ... def total(x):
    ...     t = 0.0
    ...     for i in prange(x.shape[0]):
    ...         t += x[i]
    ...     return t
    >>> isinstance(total, Kernel), total(np.ones(10))
    (True, 10.0)
    """
    if args:  # bare @njit
        return numba.njit(*args, **options)
    readonly = tuple(options.pop("readonly", ()))

    def make(fn: Callable[..., Any]) -> Any:
        if options.get("cache") and fn.__closure__ and "<locals>" in fn.__qualname__:
            # numba keys a cache index on the qualname: closures made by one factory would share one index and
            # differ only by a captured constant (issue: another variant's code served). Name each variant.
            raise TypeError(f"cached kernel {fn.__qualname__} is a closure: give each variant its own __qualname__")
        dispatcher = numba.njit(**options)(fn)
        if options.get("parallel") and type(dispatcher) is CPUDispatcher:  # not with NUMBA_DISABLE_JIT
            dispatcher.__class__ = Kernel
        elif readonly and type(dispatcher) is CPUDispatcher:
            dispatcher.__class__ = Frozen
        if readonly and isinstance(dispatcher, (Kernel, Frozen)):
            names = fn.__code__.co_varnames[:fn.__code__.co_argcount]
            unknown = set(readonly) - set(names)
            if unknown:
                raise TypeError(f"{fn.__qualname__}: readonly names no parameter {sorted(unknown)}")
            dispatcher.readonly_positions = tuple(names.index(n) for n in readonly)
        if options.get("cache") and isinstance(dispatcher, CPUDispatcher):
            from ._kernel_cache import KernelCache  # numba's cache, keyed and locked (see that module)

            dispatcher._cache = KernelCache(dispatcher.py_func)
            CACHED.append(dispatcher)
        return dispatcher

    return make


_pools: dict[int, ThreadPoolExecutor] = {}  # by process: a fork child starts its own
_pools_lock = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    pid = os.getpid()
    with _pools_lock:
        pool = _pools.get(pid)
        if pool is None:
            pool = _pools[pid] = ThreadPoolExecutor(thread_name_prefix="calframe")
        return pool


def on_threads(worker: Callable[..., Any], args: tuple, threads: int) -> None:
    """``worker(*args)`` on ``threads`` threads at once, this one among them, returning when all have returned.

    ``worker`` is a ``nogil`` kernel whose calls share one piece of work out among themselves, each taking the
    next chunk from an atomic counter in ``args`` until none is left (``fused._take``): the chunks and the order
    of their sums never depend on the threads, so the bits do not either. This replaces ``parallel=True``
    (numba's parallel compilation of a pass took 9.0 s, the plain kernel 3.5 s: docs/benchmarks.md, "Compile
    time"); the threads are Python's, kept in a pool, so they sleep between calls and survive no fork (a fork
    child starts its own pool).

    >>> import numpy as np
    >>> from calframe._jit import on_threads
    >>> out = []
    >>> on_threads(lambda *a: out.append(a), (1, 2), 3), out
    (None, [(1, 2), (1, 2), (1, 2)])
    """
    if threads <= 1:
        worker(*args)
        return
    name = current_call()
    futures = [_pool().submit(calling, name, worker, args) for _ in range(threads - 1)]
    try:
        worker(*args)
    finally:
        for f in futures:
            f.result()
