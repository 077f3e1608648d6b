"""Where the time of one ungrouped ``calframe.ece`` call goes, for each label type (issue 33).

    .venv/bin/python benchmarks/profile_call.py [--rows 10000000] [--rounds 7] [--quick]

Each round calls relplot's ``binnedECE`` (other work, as a user's call follows some) and then calframe's
ECE once per label type (Int8, Int64, Boolean, Float64), in turn, after one warm-up call of each: the single
call of benchmarks/_timing.py. The stages of each call are timed by wrapping the functions that do them:

- ``select``: names checked, the columns selected, the null counts (``_columns.select_rows``);
- ``to numpy``: the probability and label columns as numpy arrays, as the engine takes them (timed apart,
  on the same frame, right after the call);
- ``label conversion``: a label that is neither bytes nor int64 turned into bytes (``fused.label_bytes``);
- ``tables``: the partial tables allocated (``accumulate.tables``);
- ``pass``: the fused kernel (validation, lens, bin, sums and the chunk tables' sum: one parallel region);
- ``finalize``: the figure and the result shaped (``figures.shape``);
- ``rest``: the call's total less the stages above (the request, dispatch, the checks between them).

Then the pass alone on prepared arrays, on 1 and on 2 threads, back to back (hot) and right after a relplot
call (cold), and an empty parallel kernel after relplot: the cost of waking numba's threads. Each figure is
the median over the rounds, with the min-max range: the machine is shared, so run it more than once.
"""

from __future__ import annotations

import argparse
import os
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
from numba import prange

import calframe
from calframe import figures as F
from calframe._kernels import fused as FK
from calframe._kernels.codes import CLASS1
from calframe.binning import uniform_edges
from calframe.engines import eager

LABELS = {"Int8": pl.Int8, "Int64": pl.Int64, "Boolean": pl.Boolean, "Float64": pl.Float64}
BINS = 15


class Stages:
    """Seconds spent in each wrapped function during one call."""

    def __init__(self) -> None:
        self.now: dict[str, float] = defaultdict(float)

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.now[name] += time.perf_counter() - t

        return timed


def instrument(st: Stages) -> None:
    eager.select_rows = st.wrap("select", eager.select_rows)
    FK.label_bytes = st.wrap("label conversion", FK.label_bytes)
    FK.tables = st.wrap("tables", FK.tables)
    for lens, kernel in list(FK._PASSES.items()):
        FK._PASSES[lens] = st.wrap("pass", kernel)
    F.shape = st.wrap("finalize", F.shape)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="1e6 rows, 3 rounds")
    args = ap.parse_args()
    if args.quick:
        args.rows, args.rounds = 1_000_000, 3
    import numba
    import relplot

    n = args.rows
    rng = np.random.default_rng(0)
    p = rng.beta(2.0, 2.0, n)
    y = (rng.random(n) < 0.9 * p + 0.05).astype(np.int8)
    yf = y.astype(np.float64)
    frames = {t: pl.DataFrame({"prob": p, "label": pl.Series(y).cast(dt)}) for t, dt in LABELS.items()}
    other = lambda: relplot.metrics.binnedECE(p, yf, nbins=BINS)  # noqa: E731
    # the label column as the engine takes it: eager.label_values (a Boolean's bitmap unpacked), where it exists
    labels = getattr(eager, "label_values", lambda s: s.to_numpy())
    st = Stages()
    instrument(st)
    rows: dict[str, dict[str, list[float]]] = {t: defaultdict(list) for t in LABELS}
    for r in range(args.rounds + 1):
        for t, df in frames.items():
            other()
            st.now.clear()
            start = time.perf_counter()
            calframe.ece(df, lens="class:1")
            total = time.perf_counter() - start
            stages = dict(st.now)
            t0 = time.perf_counter()
            df["prob"].to_numpy()
            labels(df["label"])
            stages["to numpy"] = time.perf_counter() - t0
            stages["rest"] = total - sum(stages.values())
            stages["total"] = total
            if r:
                for k, v in stages.items():
                    rows[t][k].append(v)
    print(f"# one ungrouped ECE call, {n:,} rows, {numba.get_num_threads()} numba threads "
          f"({numba.threading_layer()}), load average {os.getloadavg()[0]:.1f}; ms, median (min-max) of "
          f"{args.rounds} rounds, each call right after relplot's binnedECE")
    order = ["select", "to numpy", "label conversion", "tables", "pass", "finalize", "rest", "total"]
    print(f"{'stage':18s}" + "".join(f"{t:>22s}" for t in LABELS))
    for k in order:
        cells = []
        for t in LABELS:
            v = np.array(rows[t].get(k, [0.0])) * 1e3
            cells.append(f"{np.median(v):7.2f} ({v.min():5.1f}-{v.max():5.1f})")
        print(f"{k:18s}" + "".join(f"{c:>22s}" for c in cells))

    # the pass alone: 1 and 2 threads, hot and after other work; the wake-up of the threads
    edges = uniform_edges(BINS, "left")
    nchunks = FK.n_chunks(n, BINS)
    yb = y.view(np.int8)

    def run_pass() -> Any:
        return FK.binned_pass(p, yb, None, 0, None, np.ones(1), edges, False, CLASS1, BINS, 1, nchunks)

    empty = numba.njit(parallel=True)(_empty)
    empty(np.zeros(4))
    found: dict[str, list[float]] = defaultdict(list)
    most = numba.get_num_threads()
    for r in range(args.rounds + 1):
        for threads in sorted({1, most}):
            numba.set_num_threads(threads)
            for cold in (False, True):
                if cold:
                    other()
                else:
                    run_pass()
                t0 = time.perf_counter()
                run_pass()
                if r:
                    found[f"pass, {threads} thread{'s' if threads > 1 else ''}, "
                          f"{'after relplot' if cold else 'back to back'}"].append(time.perf_counter() - t0)
        numba.set_num_threads(most)
        other()
        t0 = time.perf_counter()
        empty(np.zeros(4))
        a = time.perf_counter() - t0
        t0 = time.perf_counter()
        empty(np.zeros(4))
        if r:
            found["empty parallel kernel after relplot"].append(a)
            found["empty parallel kernel back to back"].append(time.perf_counter() - t0)
    print(f"\n# the pass alone (Int8 labels, {nchunks} chunks) and an empty parallel kernel; ms, median (min-max)")
    for k, v in found.items():
        v = np.array(v) * 1e3
        print(f"{k:48s} {np.median(v):7.2f} ({v.min():5.2f}-{v.max():5.2f})")


def _empty(x: np.ndarray) -> float:
    s = 0.0
    for i in prange(x.shape[0]):
        s += x[i]
    return s


if __name__ == "__main__":
    main()
