"""The cost of calframe's conclusions beside the figure they are about: bootstrap intervals and the default
disparity, from the moments of the per (group, bin) sums (the default) and from the rows (``bootstrap="rows"``).

    python benchmarks/bench_statistics.py                 # 2e6 rows x 100 groups, then 1e7 x 100
    python benchmarks/bench_statistics.py --rows          # also the row bootstrap (minutes: 1,000 resamples)
    python benchmarks/bench_statistics.py --sizes 2e6     # one size

Each line: calframe's time for the call, and its ratio to the point figure ``ece(by="g")`` on the same frame
(the targets of issue 30: ``ci=`` within 10x the figure at 2e6 rows and 5x at 1e7; the default ``disparity``
within 0.5 s at 2e6). Timed as every script here times (benchmarks/_timing.py: best of the runs after a
warm-up); the slow row bootstrap is timed once.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import polars as pl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import timeit  # noqa: E402

import calframe  # noqa: E402


def frame(n: int, groups: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    return pl.DataFrame({"prob": p, "label": (rng.uniform(size=n) < p ** 1.2).astype(np.int8),
                         "g": rng.integers(0, groups, n).astype(np.int32)})


def once(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="2e6,1e7", help="row counts, comma separated")
    ap.add_argument("--groups", type=int, default=100)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--rows", action="store_true", help="also time the row bootstrap (slow)")
    args = ap.parse_args(argv)
    print(f"{'rows':>10} {'call':<52} {'seconds':>9} {'x figure':>9}")
    for n in (int(float(s)) for s in args.sizes.split(",")):
        df = frame(n, args.groups)
        point, _ = timeit(lambda: calframe.ece(df, by="g"), 3)
        calls = {
            'ece(by="g")': (lambda: calframe.ece(df, by="g"), False),
            f'ece(by="g", ci=0.95, n_boot={args.n_boot})': (
                lambda: calframe.ece(df, by="g", ci=0.95, n_boot=args.n_boot), False),
            'disparity(df, "ece", by="g")  (defaults)': (lambda: calframe.disparity(df, "ece", by="g"), False),
            f'summary(by="g", ci=0.95, n_boot={args.n_boot})': (
                lambda: calframe.summary(df, by="g", ci=0.95, n_boot=args.n_boot), False),
        }
        if args.rows:
            calls[f'ece(by="g", ci=0.95, n_boot={args.n_boot}, bootstrap="rows")'] = (
                lambda: calframe.ece(df, by="g", ci=0.95, n_boot=args.n_boot, bootstrap="rows"), True)
            calls['disparity(df, "ece", by="g", bootstrap="rows")'] = (
                lambda: calframe.disparity(df, "ece", by="g", bootstrap="rows"), True)
        for name, (fn, slow) in calls.items():
            t = once(fn) if slow else timeit(fn, 3)[0]
            print(f"{n:>10.0e} {name:<52} {t:>9.4f} {t / point:>8.1f}x", flush=True)
        engines(df, args.n_boot)


def engines(df: pl.DataFrame, n_boot: int) -> None:
    """ci= where the rows are: a LazyFrame against the eager call, DuckDB against its own hand-written GROUP BY of
    the same moments (per group, bin and label: rows, sum p, sum p^2)."""
    try:
        import duckdb
    except ImportError:
        print("  (duckdb not installed: engine lines skipped)")
        return
    eager, _ = timeit(lambda: calframe.ece(df, by="g", ci=0.95, n_boot=n_boot), 3)
    lazy, _ = timeit(lambda: calframe.ece(df.lazy(), by="g", ci=0.95, n_boot=n_boot).collect(), 3)
    con = duckdb.connect()
    con.register("t", df.to_arrow())
    rel = con.table("t")
    sql = ("SELECT g, LEAST(CAST(FLOOR(prob * 15) AS INTEGER), 14) AS b, label, COUNT(*), SUM(prob), "
           "SUM(prob * prob) FROM t GROUP BY ALL")
    hand, _ = timeit(lambda: con.sql(sql).fetchall(), 3)
    ours, _ = timeit(lambda: calframe.ece(rel, by="g", ci=0.95, n_boot=n_boot).fetchall(), 3)
    n = df.height
    print(f"{n:>10.0e} {'LazyFrame ece(by, ci=0.95) / the eager call':<52} {lazy:>9.4f} {lazy / eager:>8.1f}x")
    print(f"{n:>10.0e} {'DuckDB ece(by, ci=0.95) / hand GROUP BY of the moments':<52} {ours:>9.4f} "
          f"{ours / hand:>8.1f}x  (GROUP BY {hand:.4f} s)")


if __name__ == "__main__":
    main()
