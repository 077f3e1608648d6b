"""The cost of calframe's conclusions beside the figure they are about: bootstrap intervals and the default
disparity, from the moments of the per (group, bin) sums (the default) and from the rows (``bootstrap="rows"``).

    python benchmarks/bench_statistics.py                 # 2e6 rows x 100 groups, then 1e7 x 100
    python benchmarks/bench_statistics.py --rows          # also the row bootstrap (minutes: 1,000 resamples)
    python benchmarks/bench_statistics.py --sizes 2e6     # one size

Each line: calframe's time for the call, and its ratio to the point figure ``ece(by="g")`` on the same frame
(the targets of issue 30: ``ci=`` within 10x the figure at 2e6 rows and 5x at 1e7; the default ``disparity``
within 0.5 s at 2e6). Two figures, as every script here (benchmarks/_timing.py): the single call (the calls of
one size alternating, one warm-up each, best of 3 rounds) and the hot loop (best run after a warm-up); the
slow row bootstrap has its single call only. ``--quick``: 2e5 rows.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import polars as pl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import LEGEND, both  # noqa: E402

import calframe  # noqa: E402


def frame(n: int, groups: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    return pl.DataFrame({"prob": p, "label": (rng.uniform(size=n) < p ** 1.2).astype(np.int8),
                         "g": rng.integers(0, groups, n).astype(np.int32)})


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="2e6,1e7", help="row counts, comma separated")
    ap.add_argument("--groups", type=int, default=100)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--rows", action="store_true", help="also time the row bootstrap (slow)")
    ap.add_argument("--quick", action="store_true", help="2e5 rows only")
    args = ap.parse_args(argv)
    if args.quick:
        args.sizes = "2e5"
    print(LEGEND)
    print(f"{'rows':>10} {'call':<52} {'single s':>9} {'x figure':>9} {'hot s':>9} {'x figure':>9}")
    for n in (int(float(s)) for s in args.sizes.split(",")):
        df = frame(n, args.groups)
        point = 'ece(by="g")'
        calls = {
            point: lambda: calframe.ece(df, by="g"),
            f'ece(by="g", ci=0.95, n_boot={args.n_boot})': lambda: calframe.ece(df, by="g", ci=0.95, n_boot=args.n_boot),
            'disparity(df, "ece", by="g")  (defaults)': lambda: calframe.disparity(df, "ece", by="g"),
            f'summary(by="g", ci=0.95, n_boot={args.n_boot})': lambda: calframe.summary(df, by="g", ci=0.95,
                                                                                      n_boot=args.n_boot),
        }
        slow = ()
        if args.rows:
            calls[f'ece(by="g", ci=0.95, n_boot={args.n_boot}, bootstrap="rows")'] = (
                lambda: calframe.ece(df, by="g", ci=0.95, n_boot=args.n_boot, bootstrap="rows"))
            calls['disparity(df, "ece", by="g", bootstrap="rows")'] = (
                lambda: calframe.disparity(df, "ece", by="g", bootstrap="rows"))
            slow = tuple(calls)[-2:]
        timed = both(calls, 3, slow=slow)
        base = timed[point]
        for name, t in timed.items():
            print(f"{n:>10.0e} {name:<52} {t.single:>9.4f} {t.single / base.single:>8.1f}x {t.hot:>9.4f} "
                  f"{t.hot / base.hot:>8.1f}x", flush=True)
        engines(df, args.n_boot)


def engines(df: pl.DataFrame, n_boot: int) -> None:
    """ci= where the rows are: a LazyFrame against the eager call, DuckDB against its own hand-written GROUP BY of
    the same moments (per group, bin and label: rows, sum p, sum p^2)."""
    try:
        import duckdb
    except ImportError:
        print("  (duckdb not installed: engine lines skipped)")
        return
    con = duckdb.connect()
    con.register("t", df.to_arrow())
    rel = con.table("t")
    sql = ("SELECT g, LEAST(CAST(FLOOR(prob * 15) AS INTEGER), 14) AS b, label, COUNT(*), SUM(prob), "
           "SUM(prob * prob) FROM t GROUP BY ALL")
    t = both({"eager": lambda: calframe.ece(df, by="g", ci=0.95, n_boot=n_boot),
              "lazy": lambda: calframe.ece(df.lazy(), by="g", ci=0.95, n_boot=n_boot).collect(),
              "hand": lambda: con.sql(sql).fetchall(),
              "ours": lambda: calframe.ece(rel, by="g", ci=0.95, n_boot=n_boot).fetchall(),
              # summary(ci=): every figure from the moments of its own state (its debiased CE's equal-mass edges
              # found where the rows are, then held fixed), against the eager call and DuckDB's summary without ci
              "summary eager": lambda: calframe.summary(df, by="g", ci=0.95, n_boot=n_boot),
              "summary lazy": lambda: calframe.summary(df.lazy(), by="g", ci=0.95, n_boot=n_boot).collect(),
              "summary plain": lambda: calframe.summary(rel, by="g").fetchall(),
              "summary ours": lambda: calframe.summary(rel, by="g", ci=0.95, n_boot=n_boot).fetchall()}, 3)
    n = df.height
    for what, a, b, note in (("LazyFrame ece(by, ci=0.95) / the eager call", "lazy", "eager", ""),
                             ("DuckDB ece(by, ci=0.95) / hand GROUP BY of the moments", "ours", "hand",
                              f"  (GROUP BY {t['hand'].single:.4f} s single, {t['hand'].hot:.4f} s hot)"),
                             ("LazyFrame summary(by, ci=0.95) / the eager call", "summary lazy", "summary eager", ""),
                             ("DuckDB summary(by, ci=0.95) / DuckDB summary(by)", "summary ours", "summary plain",
                              f"  (without ci {t['summary plain'].single:.4f} s single)")):
        print(f"{n:>10.0e} {what:<52} {t[a].single:>9.4f} {t[a].single / t[b].single:>8.1f}x {t[a].hot:>9.4f} "
              f"{t[a].hot / t[b].hot:>8.1f}x{note}")


if __name__ == "__main__":
    main()
