"""The timing helper every benchmark script shares."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np


#: every contender warms up for at least this long (one run at least) before it is timed
WARMUP_SECONDS = 0.5


def timeit(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Median seconds of ``repeat`` runs after warming up, and the last result.

    Warming up runs ``fn`` once, then again until WARMUP_SECONDS have passed: on the 2-core machine of
    docs/benchmarks.md a fast call's first ~0.4 s of repeats ran up to 1.5x slower than the rest (the
    1e3-group ECE: 37, 31, 34, 38 ms, then 26-27 ms), so one warm-up run left that phase inside the median of
    one contender and not of the next. Every contender gets the same treatment."""
    start = time.perf_counter()
    out = fn()
    while time.perf_counter() - start < WARMUP_SECONDS:
        out = fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times)), out
