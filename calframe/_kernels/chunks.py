"""How the threads of a plain (not ``parallel=True``) kernel share out its chunks: :func:`take`.

A kernel run on several threads at once (:func:`calframe._jit.on_threads`) loops ``c = take(counter)`` until
``c`` passes its number of chunks; each chunk is summed into its own partial table, and the tables are added in
chunk order afterwards, so which thread took which chunk never shows in the bits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numba
import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .._jit import on_threads

#: a pass over fewer rows than this per thread runs on fewer threads (waking a sleeping thread cost 0.8-2 ms in
#: docs/benchmarks.md, "One call"); the chunks, and so the bits, do not change
ROWS_PER_THREAD = 1 << 19


@intrinsic
def take(typingctx, counter):
    """``counter[0] += 1`` as one atomic step (an int64 array): the value before, the chunk the calling thread
    takes."""
    if not (isinstance(counter, types.Array) and counter.dtype == types.int64 and counter.mutable):
        return None

    def codegen(context, builder, sig, args):
        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [context.get_constant(types.intp, 0)])
        return builder.atomic_rmw("add", ptr, context.get_constant(types.int64, 1), "monotonic")

    return types.int64(counter), codegen


def kernel_threads() -> int:
    """The threads calframe's kernels may use: numba's number, ``NUMBA_NUM_THREADS`` (by default the cores), or
    what ``numba.set_num_threads`` chose once numba's threading layer has started. Not
    ``numba.get_num_threads()`` before that: it starts numba's OpenMP pool, which these kernels do not use, and a
    process that started GNU OpenMP cannot fork safely (docs/spec.md, "Processes and threads")."""
    from numba.np.ufunc import parallel  # numba's own record of whether its layer has started

    if getattr(parallel, "_is_initialized", True):
        return int(numba.get_num_threads())
    return int(numba.config.NUMBA_NUM_THREADS)


def pass_threads(n_rows: int) -> int:
    """Threads for a pass over ``n_rows``: :func:`kernel_threads`, fewer where each would get fewer than
    ROWS_PER_THREAD rows."""
    return max(1, min(kernel_threads(), n_rows // ROWS_PER_THREAD))


def run_chunks(worker: Callable[..., Any], args: tuple, n_rows: int) -> None:
    """``worker(*args, counter)`` on :func:`pass_threads` threads (:func:`calframe._jit.on_threads`), ``counter``
    a fresh chunk counter for :func:`take`: the worker takes chunks until none is left.

    >>> seen = []
    >>> run_chunks(lambda counter: seen.append(int(counter[0])), (), 10)
    >>> seen
    [0]
    """
    on_threads(worker, (*args, np.zeros(1, dtype=np.int64)), pass_threads(n_rows))


def run_items(worker: Callable[..., Any], args: tuple, items: int) -> None:
    """``worker(*args, counter)`` on :func:`kernel_threads` threads, no more than ``items`` (the units of work
    the worker takes one by one with :func:`take`: groups, tiles, points, chunks of a fixed size).

    >>> seen = []
    >>> run_items(lambda counter: seen.append(int(counter[0])), (), 1)
    >>> seen
    [0]
    """
    on_threads(worker, (*args, np.zeros(1, dtype=np.int64)), max(1, min(kernel_threads(), int(items))))


def in_chunk_order(part: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """The partial tables (rows of ``part``) added in chunk order, into ``out`` (a new array by default): each
    cell's sum is ``((part[0] + part[1]) + part[2]) + ...``, whichever thread summed each chunk, so the same
    bits for any thread count.

    >>> in_chunk_order(np.array([[1.0, 2.0], [0.5, 0.25]])).tolist()
    [1.5, 2.25]
    """
    out = np.empty_like(part[0]) if out is None else out
    np.copyto(out, part[0])
    for c in range(1, part.shape[0]):
        np.add(out, part[c], out=out)
    return out
