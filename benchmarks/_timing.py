"""The timing helpers every benchmark script shares: a hot loop and an interleaved single call.

Two figures, because they answer two questions:

- **hot loop** (:func:`timeit`): one contender called again and again, its best run after 0.5 s of warm-up,
  over at least 1 s. What the code can do when it is all the process does.
- **single call** (:func:`interleaved`): the contenders alternate, A B C A B C ..., one warm-up call each
  (kernels compiled and cached, imports done), then the best of 3 rounds. Each call follows another
  library's work, as a user's call follows a Polars query or a model's scoring: the caches hold the other
  contender's data and numba's threads have gone to sleep. This is the figure a user sees.

:func:`both` takes both for a set of contenders and every script prints them side by side, each table saying
which figure it holds.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


#: every contender warms up for at least this long (one run at least) before it is timed
WARMUP_SECONDS = 0.5
#: and is timed for at least this long (``repeat`` runs at least)
TIMED_SECONDS = 1.0
#: rounds of :func:`interleaved` (after one warm-up call each)
ROUNDS = 3

#: the column heads of the two figures, for the scripts' tables
HOT = "hot loop s"
SINGLE = "single call s"
LEGEND = ("(hot loop: one contender repeated, best run over >= 1 s after 0.5 s warm-up; single call: the "
          "contenders alternating, one warm-up each, best of 3 rounds; benchmarks/_timing.py)")


def timeit(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Best seconds of ``repeat`` runs (more, until TIMED_SECONDS are spent) after warming up, and the last
    result: the hot-loop figure.

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


def interleaved(contenders: dict[str, Callable[[], Any]], rounds: int = ROUNDS) -> dict[str, tuple[float, Any]]:
    """{name: (best seconds of ``rounds`` single calls, the last result)}: the contenders called in turn, one
    warm-up call each (in turn too), then ``rounds`` rounds of one call each: the single-call figure.

    >>> out = interleaved({"sum": lambda: sum(range(10)), "max": lambda: max(range(10))})
    >>> out["sum"][1], out["max"][1]
    (45, 9)
    """
    last = {name: fn() for name, fn in contenders.items()}
    best = dict.fromkeys(contenders, math.inf)
    for _ in range(rounds):
        for name, fn in contenders.items():
            t = time.perf_counter()
            last[name] = fn()
            best[name] = min(best[name], time.perf_counter() - t)
    return {name: (best[name], last[name]) for name in contenders}


@dataclass
class Timed:
    """A contender's two figures (seconds) and its result."""

    hot: float
    single: float
    value: Any


def both(contenders: dict[str, Callable[[], Any]], repeat: int | dict[str, int],
         slow: tuple[str, ...] = ()) -> dict[str, Timed]:
    """{name: Timed}: the single-call figure of all the contenders together (:func:`interleaved`, first: no
    contender has just run a hot loop), then each one's hot loop (:func:`timeit`, ``repeat`` runs at least, or
    ``repeat[name]``). The contenders named in ``slow`` (seconds a call) get no hot loop: ``Timed.hot`` is
    their single call."""
    single = interleaved(contenders)
    out = {}
    for name, fn in contenders.items():
        reps = repeat[name] if isinstance(repeat, dict) else repeat
        sec, value = single[name] if name in slow else timeit(fn, reps)
        out[name] = Timed(sec, single[name][0], value)
    return out


def show(title: str, timed: dict[str, Timed], base: str | None = None, targets: dict[str, float] | None = None,
         values: dict[str, str] | None = None, higher: bool = True) -> None:
    """Print a table of both figures: each contender's single call and hot loop, and with ``base`` the ratios
    (contender / base; ``higher`` False: base / contender) on each, a target checked on the single call.

    >>> t = {"a": Timed(1.0, 2.0, None), "b": Timed(3.0, 4.0, None)}
    >>> show("demo", t, base="a")  # doctest: +NORMALIZE_WHITESPACE
    <BLANKLINE>
    ## demo
    contender                                     single s   ratio     hot s   ratio     target  value
    a                                               2.0000    1.0x    1.0000    1.0x
    b                                               4.0000    2.0x    3.0000    3.0x
    """
    print(f"\n## {title}")
    print(f"{'contender':44s} {'single s':>9s} {'ratio':>7s} {'hot s':>9s} {'ratio':>7s} {'target':>10s}  value")
    for name, t in timed.items():
        r1 = r2 = mark = ""
        if base is not None:
            b = timed[base]
            a1, a2 = (t.single / b.single, t.hot / b.hot) if higher else (b.single / t.single, b.hot / t.hot)
            r1, r2 = f"{a1:6.1f}x", f"{a2:6.1f}x"
            tgt = (targets or {}).get(name)
            mark = "" if tgt is None else f">={tgt:g}x" + (" ok" if a1 >= tgt else " MISS")
        print(f"{name:44s} {t.single:9.4f} {r1:>7s} {t.hot:9.4f} {r2:>7s} {mark:>10s}  {(values or {}).get(name, '')}")
