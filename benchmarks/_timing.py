"""The timing helper every benchmark script shares."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


#: every contender warms up for at least this long (one run at least) before it is timed
WARMUP_SECONDS = 0.5
#: and is timed for at least this long (``repeat`` runs at least)
TIMED_SECONDS = 1.0


def timeit(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Best seconds of ``repeat`` runs (more, until TIMED_SECONDS are spent) after warming up, and the last
    result.

    The 2-core machine of docs/benchmarks.md is shared, and its speed moves in episodes of 0.1 s to a few
    seconds (a 15 ms call took 22 ms for ~0.1 s; a 26 ms call took 36 ms for a whole second): a median of
    one contender's runs could sit inside an episode that the next contender's runs missed. Each contender's
    best run over at least a second, after the same warm-up (a fast call's first ~0.4 s of repeats ran up to
    1.5x slower), compares what the code can do on this machine; every contender gets the same treatment."""
    start = time.perf_counter()
    out = fn()
    while time.perf_counter() - start < WARMUP_SECONDS:
        out = fn()
    times: list[float] = []
    while len(times) < repeat or sum(times) < TIMED_SECONDS:
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return float(min(times)), out
