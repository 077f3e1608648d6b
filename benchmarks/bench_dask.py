"""Dask against the in-memory path: per-group ECE and VECE (quantile) over a Parquet dataset.

Run: ``.venv/bin/python benchmarks/bench_dask.py [--rows 20000000] [--files 8] [--groups 24] [--repeat 2]``
(needs the ``dask`` extra). The data (seeded) is written to a temporary directory
as ``--files`` Parquet files and removed at the end (``--keep DIR`` writes there
and keeps it).

Contenders, each timed from the Parquet files (the read is part of the work):

- in memory: ``pl.read_parquet(dir)`` then ``calframe.ece(df, by=...)`` /
  ``calframe.vece(df, "age", by=...)`` (the read is also shown on its own);
- Dask: ``dd.read_parquet(dir).calib.ece(by=...)`` / ``.calib.vece("age", by=...)``
  on a ``LocalCluster(n_workers=2, threads_per_worker=1)``. ECE (uniform bins)
  is one pass over the files; VECE with exact quantile edges is three
  (histogram, gather, bin + accumulate), each reading the files again (two
  here: the integer-valued ages leave nothing to gather). ECE with equal-mass
  bins is added as a case that gathers.

Two timings per figure (benchmarks/_timing.py): the single call (the figures
of one side alternating, one warm-up each, which also loads the numba kernels
in the workers, then the best of 3 rounds) and the hot loop (each repeated, its
best run over >= 1 s after 0.5 s of warm-up). ``--quick``: 2e6 rows. Both paths must agree to 1e-12; the
script checks it. Ratio = Dask time / in-memory time (read included).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from typing import Any

import numpy as np
import pandas as pd
import polars as pl

import calframe
from _timing import LEGEND, both  # benchmarks/_timing.py (the scripts run from benchmarks/ on sys.path)


def write_dataset(path: str, rows: int, files: int, groups: int, seed: int) -> None:
    """``rows`` seeded rows (prob, label, g, age) in ``files`` Parquet files; every file draws its own stream."""
    os.makedirs(path, exist_ok=True)
    per = -(-rows // files)
    for i in range(files):
        n = min(per, rows - i * per)
        rng = np.random.default_rng([seed, i])
        g = rng.integers(0, groups, n).astype(np.int32)
        age = np.round(rng.uniform(18, 90, n))
        logit = rng.normal(0, 2, n) + 0.02 * (age - 50) + 0.05 * (g % 5)
        prob = 1 / (1 + np.exp(-logit))
        label = (rng.random(n) < 1 / (1 + np.exp(-(logit * 0.8 + 0.1)))).astype(np.int8)
        pl.DataFrame({"prob": prob, "label": label, "g": g, "age": age}).write_parquet(
            os.path.join(path, f"part-{i:03d}.parquet"))


def touch(pdf: pd.DataFrame) -> pd.DataFrame:
    """Read a partition and reduce it to one row (the read-only row)."""
    return pd.DataFrame({"rows": [len(pdf)], "sum": [float(pdf.select_dtypes("number").to_numpy().sum())]})


def same(a: Any, b: Any) -> bool:
    a = a.to_pandas() if isinstance(a, pl.DataFrame) else a
    b = b.to_pandas() if isinstance(b, pl.DataFrame) else b
    num = [c for c in a.columns if c != "g"]
    return bool(np.allclose(a[num].to_numpy(float), b[num].to_numpy(float), rtol=0, atol=1e-12)
                and (a["g"].to_numpy() == b["g"].to_numpy()).all())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=float, default=2e7)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--groups", type=int, default=24)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", default=None, help="write the dataset here and keep it")
    ap.add_argument("--quick", action="store_true", help="2e6 rows")
    args = ap.parse_args()
    if args.quick:
        args.rows = 2e6
    rows = int(args.rows)

    import dask
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    import calframe.frames.dask  # noqa: F401  (registers ddf.calib)

    path = args.keep or tempfile.mkdtemp(prefix="calframe-bench-dask-")
    try:
        t = time.perf_counter()
        write_dataset(path, rows, args.files, args.groups, args.seed)
        print(f"wrote {rows:,} rows in {args.files} files to {path} in {time.perf_counter() - t:.1f} s "
              f"({sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path)) / 1e6:.0f} MB)")

        def read() -> pl.DataFrame:
            return pl.read_parquet(os.path.join(path, "*.parquet"))

        mem = both({"read": read, "ece": lambda: calframe.ece(read(), by="g"),
                    "vece": lambda: calframe.vece(read(), "age", by="g"),
                    "em": lambda: calframe.ece(read(), by="g", binning="equal_mass")}, args.repeat)

        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address=None) as cluster, Client(cluster):
            # a fresh collection per run: re-running one collection can return results Dask still holds
            def fresh() -> Any:
                return dd.read_parquet(path)

            dsk = both({"read": lambda: fresh().map_partitions(touch).compute(),
                        "ece": lambda: fresh().calib.ece(by="g").compute(),
                        "vece": lambda: fresh().calib.vece("age", by="g").compute(),
                        "em": lambda: fresh().calib.ece(by="g", binning="equal_mass").compute()}, args.repeat)
            nparts = fresh().npartitions

        ok = {k: same(dsk[k].value, mem[k].value) for k in ("ece", "vece", "em")}
        ok_ece, ok_vece, ok_em = ok["ece"], ok["vece"], ok["em"]
        print(f"\n## {rows:,} rows, {args.groups} groups, {nparts} Dask partitions; dask {dask.__version__}, "
              f"{os.cpu_count()} cores")
        print(LEGEND)
        print(f"{'figure':28s} {'in memory':>21s} {'Dask':>21s} {'ratio':>13s}  equal to 1e-12")
        print(f"{'':28s} {'single s':>10s} {'hot s':>10s} {'single s':>10s} {'hot s':>10s} {'single':>6s} {'hot':>6s}")
        names = {"read": "read only", "ece": "ECE by g (uniform 15)", "vece": "VECE age by g (quantile 10)",
                 "em": "ECE by g (equal_mass 15)"}
        for k, what in names.items():
            m, d = mem[k], dsk[k]
            note = "(pl.read_parquet / every partition read)" if k == "read" else str(ok[k])
            print(f"{what:28s} {m.single:10.2f} {m.hot:10.2f} {d.single:10.2f} {d.hot:10.2f} "
                  f"{d.single / m.single:6.2f} {d.hot / m.hot:6.2f}  {note}")
        if not (ok_ece and ok_vece and ok_em):
            raise SystemExit("Dask and in-memory results differ")
    finally:
        if args.keep is None:
            shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    main()
