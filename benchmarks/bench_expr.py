"""calframe.expr inside ``group_by().agg()`` against ``calframe.ece(df, by=...)`` and the native alternatives.

Run: ``.venv/bin/python benchmarks/bench_expr.py [--repeat 7] [--slow]``.

Two cases from issue 24: 1e7 rows x 1e3 groups (target: the expression <= 3x
``by=``) and 1e6 rows x 5e3 groups (target <= 2x). Same seeded data for every
contender (``prob`` beta(2, 2) f64, ``label`` i8, ``g`` i32 uniform over the
groups). The contenders run interleaved, one round after another, so load from
other jobs hits every side alike; each ratio is taken within its round
(contender / ``by=`` of the same round) and the table gives the median ratio
with its range over the rounds, and the median seconds. Every contender's
figures are checked against ``by=`` first (largest difference printed). Beside
them, the two figures every script prints (benchmarks/_timing.py): the single
call (the best of the first 3 interleaved rounds, after the warm-up round) and
the hot loop (each contender repeated, its best run over >= 1 s after 0.5 s of
warm-up), each with its ratio to ``by=``. ``--quick``: ``--scale 0.1``.

- ``by=``: ``calframe.ece(df, prob="p", label="y", by="g")``;
- ``expr``: ``df.group_by("g").agg(calframe.expr.ece("p", "y"))``;
- ``expr + 2 aggs``: the same beside ``pl.len()`` and ``pl.col("p").mean()``;
- ``polars len``: ``df.group_by("g").agg(pl.len())``, Polars' group-by alone:
  the floor of any aggregation;
- ``polars sum``: ``df.group_by("g").agg(pl.col("p").sum())``, the floor of an
  aggregation that reads a column;
- ``gather p, y``: ``df.group_by("g").agg(pl.col("p"), pl.col("y"))``, both
  columns gathered per group: the floor of an aggregation that reads both;
- ``native: over(bin)``: the ECE as one native expression,
  ``((conf - acc).sum().abs() / pl.len()).over(bin).mean()`` (each row
  weighs its bin's |sum conf - sum acc| / n_bin; one window: two, one for the
  sum and one for the count, cost twice as much), ``bin`` the exact
  uniform(15) bin of calframe's Polars rendering
  (:func:`calframe.binning.uniform_bin_expr`): the fastest native form measured
  (no validation; calframe's checks would add to it);
- ``per-group UDF (no-op)``: ``pl.struct(...).implode().map_batches(f,
  returns_scalar=True)`` with an ``f`` that does nothing: Polars 2 calls it
  once per group; ``2 inputs``: ``pl.map_batches(["p", "y"], f, returns_scalar=True)``, the same
  without the struct;
- ``--slow`` adds ``native: masked sums`` (the ECE with one ``pl.when(bin ==
  k).then(conf - acc).otherwise(0.0).sum()`` per bin) and ``pl.map_groups``
  wrapping ``calframe.ece``, the usual workaround (one Python call per group
  doing the whole figure).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

import calframe
from _timing import LEGEND, ROUNDS, timeit  # benchmarks/_timing.py (the scripts run from benchmarks/ on sys.path)
from calframe.binning import uniform_bin_expr

BINS = 15
CASES = ((10_000_000, 1_000, 3.0), (1_000_000, 5_000, 2.0))


def make_frame(n: int, groups: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.beta(2.0, 2.0, n)
    y = (rng.random(n) < 0.9 * p + 0.05).astype(np.int8)
    return pl.DataFrame({"g": rng.integers(0, groups, n).astype(np.int32), "p": p, "y": y})


def contenders(df: pl.DataFrame, slow: bool) -> dict[str, Callable[[], pl.DataFrame]]:
    conf, acc = pl.col("p"), pl.col("y").cast(pl.Float64)
    b = uniform_bin_expr(conf, BINS, "left")  # exact on every edge, as by='s bins
    over = ((conf - acc).sum().abs() / pl.len()).over(b).mean()
    masked = pl.sum_horizontal([pl.when(b == k).then(conf - acc).otherwise(0.0).sum().abs()
                                for k in range(BINS)]) / pl.len()

    def noop(s: Any) -> float:
        return 0.0

    out: dict[str, Callable[[], pl.DataFrame]] = {
        "by=": lambda: calframe.ece(df, prob="p", label="y", by="g"),  # type: ignore[dict-item]
        "expr": lambda: df.group_by("g").agg(calframe.expr.ece("p", "y")),
        "expr + 2 aggs": lambda: df.group_by("g").agg(calframe.expr.ece("p", "y"), pl.len(), pl.col("p").mean()),
        "polars len": lambda: df.group_by("g").agg(pl.len()),
        "polars sum": lambda: df.group_by("g").agg(pl.col("p").sum()),
        "gather p, y": lambda: df.group_by("g").agg(pl.col("p"), pl.col("y")),
        "native: over(bin)": lambda: df.group_by("g").agg(over.alias("ece")),
        "per-group UDF (no-op)": lambda: df.group_by("g").agg(
            pl.struct("p", "y").implode().map_batches(noop, return_dtype=pl.Float64, returns_scalar=True)),
        "per-group UDF, 2 inputs (no-op)": lambda: df.group_by("g").agg(
            pl.map_batches(["p", "y"], noop, return_dtype=pl.Float64, returns_scalar=True)),
    }
    if slow:
        out["native: masked sums"] = lambda: df.group_by("g").agg(masked.alias("ece"))
        out["pl.map_groups(calframe.ece)"] = lambda: df.group_by("g").agg(pl.map_groups(
            ["p", "y"], lambda s: calframe.ece(pl.DataFrame({"p": s[0], "y": s[1]}), prob="p", label="y"), return_dtype=pl.Float64,
            returns_scalar=True).alias("ece"))
    return out


def check(runs: dict[str, Callable[[], Any]]) -> dict[str, float]:
    """Largest |figure - by='s figure| of each contender that computes the ECE."""
    ref = runs["by="]().sort("g")
    diffs = {}
    for name in ("expr", "expr + 2 aggs", "native: over(bin)", "native: masked sums",
                 "pl.map_groups(calframe.ece)"):
        if name in runs:
            got = runs[name]().sort("g")
            diffs[name] = float((got["ece"] - ref["ece"]).abs().max())
    return diffs


def measure(runs: dict[str, Callable[[], Any]], repeat: int) -> dict[str, list[float]]:
    """Seconds of every contender, round after round (one warm-up round first)."""
    times: dict[str, list[float]] = {k: [] for k in runs}
    for r in range(repeat + 1):
        for name, fn in runs.items():
            t = time.perf_counter()
            fn()
            if r:
                times[name].append(time.perf_counter() - t)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--slow", action="store_true", help="add the masked sums and pl.map_groups(calframe.ece) (one call per group)")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the row counts (a quick run: 0.1)")
    ap.add_argument("--quick", action="store_true", help="--scale 0.1")
    args = ap.parse_args()
    if args.quick:
        args.scale = 0.1
    print(LEGEND)
    for rows_, groups, target in CASES:
        n = int(rows_ * args.scale)
        df = make_frame(n, groups)
        runs = contenders(df, args.slow)
        diffs = check(runs)
        times = measure(runs, args.repeat)
        hot = {name: timeit(fn, 3)[0] for name, fn in runs.items()}
        base = np.array(times["by="])
        single = {name: min(ts[:ROUNDS]) for name, ts in times.items()}
        print(f"\n## {n:.0e} rows x {groups:.0e} groups (target: expr <= {target:g}x by=, on the median ratio; "
              f"{args.repeat} rounds)")
        print(f"{'contender':30s} {'median s':>9s} {'ratio':>7s} {'range':>13s} {'single s':>9s} {'ratio':>6s} "
              f"{'hot s':>8s} {'ratio':>6s}  max |diff| vs by=")
        for name, ts in times.items():
            t = np.array(ts)
            ratio = t / base
            mark = f"  target {target:g}x: {'ok' if np.median(ratio) <= target else 'MISS'}" if name == "expr" else ""
            diff = f"  {diffs[name]:.1e}" if name in diffs else ""
            print(f"{name:30s} {np.median(t):9.4f} {np.median(ratio):6.2f}x {ratio.min():5.2f}-{ratio.max():5.2f}x "
                  f"{single[name]:9.4f} {single[name] / single['by=']:5.2f}x {hot[name]:8.4f} "
                  f"{hot[name] / hot['by=']:5.2f}x{diff}{mark}")


if __name__ == "__main__":
    main()
