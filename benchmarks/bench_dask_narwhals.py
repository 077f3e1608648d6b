"""Should the narwhals engine replace calframe's Dask engine? Both on the same Dask frame, side by side.

The narwhals engine (calframe.engines.native.sums) runs DuckDB, Ibis, PySpark and pyarrow frames; narwhals also
reaches Dask. This script runs it on a persisted Dask DataFrame (its small edge tables handed to it as
one-partition Dask frames, which the engine does not do by itself, since it does not take Dask frames) and
prints its time beside the Dask engine's (calframe.engines.partitions.client), with the largest difference of the per-group
ECEs. The decision rule (issue 13): replace the Dask engine only if the narwhals one keeps exact edges and is at
most 1.2x slower. Results are in docs/scaling-out-dask.md ("Why Dask keeps its own engine").

Run: .venv/bin/python benchmarks/bench_dask_narwhals.py [--rows 2000000] [--groups 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
import polars as pl


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="2e5 rows")
    args = ap.parse_args()
    if args.quick:
        args.rows = 200_000
    warnings.simplefilter("ignore")  # narwhals' notice that Dask support moves to narwhals-dask
    import dask
    import dask.dataframe as dd
    import narwhals as nw

    import calframe.frames.dask  # noqa: F401
    from calframe import request as R
    from calframe.engines.partitions import client as D
    from calframe.engines.native import sums as N

    dask.config.set(scheduler="threads")
    engine_table = N.Engine.table

    def table(self, df: pl.DataFrame):  # a small table in the user's engine: for Dask, a one-partition frame
        if self.kind is None:
            return nw.from_native(dd.from_pandas(df.to_pandas(), npartitions=1))
        return engine_table(self, df)

    N.Engine.table = table
    rng = np.random.default_rng(0)
    n = args.rows
    pdf = pd.DataFrame({"p": rng.uniform(size=n), "y": rng.integers(0, 2, n), "g": rng.integers(0, args.groups, n)})
    ddf = dd.from_pandas(pdf, npartitions=args.partitions).persist()

    def computed(r):
        r = r.compute() if hasattr(r, "compute") else r
        return pl.from_pandas(r) if isinstance(r, pd.DataFrame) else (r if isinstance(r, pl.DataFrame) else
                                                                      pl.from_arrow(r))

    from _timing import LEGEND, ROUNDS

    print(f"{n:,} rows, {args.partitions} partitions, {args.groups} groups, 15 bins: single call (the two "
          f"alternating after a warm-up of each, best of the first {ROUNDS} rounds) and hot (best of all "
          f"{ROUNDS + args.repeat} rounds: Dask's calls take seconds, so no separate hot loop)")
    print(LEGEND)
    print(f"{'binning':<10}{'Dask single':>12}{'narwhals single':>16}{'ratio':>7}{'Dask hot':>10}{'narwhals hot':>14}"
          f"{'ratio':>7}   max |diff| of the ECEs")
    for binning in ("uniform", "quantile"):
        req = R.ce("ece", "ece", "p", "y", p=1, by="g", binning=binning, bins=15)
        times = {"dask": [], "nw": []}
        out = {}
        for r in range(ROUNDS + args.repeat + 1):
            for name, run in (("dask", D.run), ("nw", N.run)):
                t = time.perf_counter()
                out[name] = computed(run(ddf, req)).sort("g")
                if r:  # round 0: the warm-up
                    times[name].append(time.perf_counter() - t)
        a1, b1 = min(times["dask"][:ROUNDS]), min(times["nw"][:ROUNDS])
        a, b = min(times["dask"]), min(times["nw"])
        diff = float(np.abs(out["dask"]["ece"].to_numpy() - out["nw"]["ece"].to_numpy()).max()) \
            if out["dask"].height == out["nw"].height else float("nan")
        print(f"{binning:<10}{a1:>11.3f}s{b1:>15.3f}s{b1 / a1:>6.1f}x{a:>9.3f}s{b:>13.3f}s{b / a:>6.1f}x   {diff:.2g}")


if __name__ == "__main__":
    main()
