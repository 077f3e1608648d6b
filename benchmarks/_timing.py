"""The timing helper every benchmark script shares."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np


#: every contender warms up for at least this long (one run at least) before it is timed
WARMUP_SECONDS = 0.5
#: and is timed for at least this long (``repeat`` runs at least): the median of 5 runs of a 15 ms call spans
#: 75 ms, inside one of the machine's slow episodes (calls at 22 ms instead of 14-15 for ~0.1 s) it was 26 ms
TIMED_SECONDS = 1.0


def timeit(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Median seconds of ``repeat`` runs (more, until TIMED_SECONDS are spent) after warming up, and the last
    result.

    Warming up runs ``fn`` once, then again until WARMUP_SECONDS have passed: on the 2-core machine of
    docs/benchmarks.md a fast call's first ~0.4 s of repeats ran up to 1.5x slower than the rest (the
    1e3-group ECE: 37, 31, 34, 38 ms, then 26-27 ms), so one warm-up run left that phase inside the median of
    one contender and not of the next. Every contender gets the same treatment."""
    start = time.perf_counter()
    out = fn()
    while time.perf_counter() - start < WARMUP_SECONDS:
        out = fn()
    times: list[float] = []
    while len(times) < repeat or sum(times) < TIMED_SECONDS:
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times)), out
