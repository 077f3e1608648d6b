"""Lazy in, lazy out: calframe's per-group ECE on a LazyFrame against the bare Polars streaming group-by.

    .venv/bin/python benchmarks/bench_lazy.py [--rows 2e7] [--rss-rows 1e8] [--groups 1000] [--repeat 5]

Two measurements on seeded Parquet files (``bench_scale.generate``: ``prob``,
``label``, ``g`` with ``--groups`` groups; written once under
``benchmarks/_data/`` and reused):

1. time, at ``--rows`` (2e7): ``calframe.ece(pl.scan_parquet(f), by="g",
   lens="top1").collect(engine="streaming")`` (validation, exact bins, exact
   Int128 sums, finalize) against the bare Polars streaming group-by of the
   same sums (``floor(conf * 15)`` bins, float sums, no validation, the same
   finalize). The machine may be shared: both run in one process, interleaved
   (calframe, bare, calframe, bare, ...) after a warm-up of each, and the
   ratio of each pair is printed with its spread (min / median / max). Beside
   it, the two figures every script prints (benchmarks/_timing.py): the single
   call (the best of the first 3 interleaved pairs) and the hot loop (each side
   repeated, its best run over >= 1 s after 0.5 s of warm-up). ``--quick``:
   2e6 rows, no peak-memory runs.
2. peak memory, at ``--rss-rows`` (1e8): each side in a fresh process
   (``VmHWM``, see ``bench_scale.peak_rss_kb``). Targets (issue 12): ratio
   <= 1.5x, peak <= 1.5 GB.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from bench_scale import BINS, generate, parser, peak_rss_kb  # benchmarks/ is on sys.path when run as a script


def ours(path: str):
    import polars as pl

    import calframe

    return calframe.ece(pl.scan_parquet(path), by="g", lens="top1").collect(engine="streaming")


def bare(path: str):
    """What a user would write by hand: one streaming group-by of float sums, then the same finalize."""
    import numpy as np
    import polars as pl

    from calframe.metrics import ce_from_sums

    p, y = pl.col("prob"), pl.col("label")
    pred = p > 0.5
    conf = pl.when(pred).then(p).otherwise(1.0 - p)
    acc = (pred == (y == 1)).cast(pl.Float64)
    cells = (
        pl.scan_parquet(path)
        .select(pl.col("g"), (conf * BINS).floor().cast(pl.Int32).clip(0, BINS - 1).alias("bin"), conf.alias("c"),
                acc.alias("a"))
        .group_by("g", "bin")
        .agg(pl.len().alias("n"), pl.col("c").sum(), pl.col("a").sum())
        .collect(engine="streaming")
    )
    groups, gi = np.unique(cells["g"].to_numpy(), return_inverse=True)
    sums = np.zeros((groups.shape[0], BINS, 3))
    np.add.at(sums, (gi, cells["bin"].to_numpy()), cells.select("n", "c", "a").to_numpy().astype(np.float64))
    return ce_from_sums(sums, 1.0)


def data(rows: float, groups: int, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"lazy_{int(rows)}_{groups}.parquet"
    if not path.exists():
        generate(path, int(rows), groups, chunk=5_000_000)
    return path


def child(side: str, path: str) -> None:
    t = time.perf_counter()
    {"ours": ours, "bare": bare}[side](path)
    kb, _ = peak_rss_kb()
    print(json.dumps({"seconds": time.perf_counter() - t, "peak_mb": kb / 1024}))


def main() -> None:
    ap = parser(__doc__, rows=2e7, repeat=5)
    ap.add_argument("--rss-rows", type=float, default=1e8)
    ap.add_argument("--child", choices=["ours", "bare"])
    ap.add_argument("--path")
    args = ap.parse_args()
    if args.quick:
        args.rows, args.rss_rows = 2e6, 0
    if args.child:
        child(args.child, args.path)
        return
    import numpy as np

    path = str(data(args.rows, args.groups, args.data))
    ours(path), bare(path)  # warm-up: imports, numba, the file in the page cache
    t_ours, t_bare = [], []
    for _ in range(args.repeat):
        for fn, out in ((ours, t_ours), (bare, t_bare)):
            t = time.perf_counter()
            fn(path)
            out.append(time.perf_counter() - t)
    ratio = np.array(t_ours) / np.array(t_bare)
    print(f"## ECE by group on a LazyFrame, {args.rows:.0e} rows, {args.groups} groups, {args.repeat} interleaved pairs")
    print(f"calframe  {min(t_ours):.3f}-{max(t_ours):.3f} s (median {np.median(t_ours):.3f})")
    print(f"bare      {min(t_bare):.3f}-{max(t_bare):.3f} s (median {np.median(t_bare):.3f})")
    print(f"ratio     {ratio.min():.2f}-{ratio.max():.2f}x (median {np.median(ratio):.2f}x; target <= 1.5x)")
    from _timing import LEGEND, ROUNDS, timeit

    s_ours, s_bare = min(t_ours[:ROUNDS]), min(t_bare[:ROUNDS])
    h_ours, h_bare = timeit(lambda: ours(path), 1)[0], timeit(lambda: bare(path), 1)[0]
    print(f"single call: calframe {s_ours:.3f} s, bare {s_bare:.3f} s, ratio {s_ours / s_bare:.2f}x; "
          f"hot loop: calframe {h_ours:.3f} s, bare {h_bare:.3f} s, ratio {h_ours / h_bare:.2f}x")
    print(LEGEND)
    if args.rss_rows:
        big = str(data(args.rss_rows, args.groups, args.data))
        print(f"## Peak memory (VmHWM of a fresh process), {args.rss_rows:.0e} rows")
        for side in ("ours", "bare"):
            out = subprocess.run([sys.executable, __file__, "--child", side, "--path", big], capture_output=True,
                                 text=True, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"{side:8s}  {r['seconds']:.2f} s, {r['peak_mb']:.0f} MB (target <= 1536 MB)")


if __name__ == "__main__":
    main()
