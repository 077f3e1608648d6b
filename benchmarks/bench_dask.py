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

Timings are the best of ``--repeat`` runs after one warm-up run (which also
loads the numba kernels in the workers). Both paths must agree to 1e-12; the
script checks it. Ratio = Dask time / in-memory time (read included).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import polars as pl

import calframe


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


def best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    out = fn()  # warm-up
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


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
    args = ap.parse_args()
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

        t_read, df = best(read, args.repeat)
        t_ece_mem, ece_mem = best(lambda: calframe.ece(read(), by="g"), args.repeat)
        t_vece_mem, vece_mem = best(lambda: calframe.vece(read(), "age", by="g"), args.repeat)
        t_em_mem, em_mem = best(lambda: calframe.ece(read(), by="g", binning="equal_mass"), args.repeat)
        del df

        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address=None) as cluster, Client(cluster):
            # a fresh collection per run: re-running one collection can return results Dask still holds
            def fresh() -> Any:
                return dd.read_parquet(path)

            t_ece_dask, ece_dask = best(lambda: fresh().calib.ece(by="g").compute(), args.repeat)
            t_vece_dask, vece_dask = best(lambda: fresh().calib.vece("age", by="g").compute(), args.repeat)
            t_em_dask, em_dask = best(lambda: fresh().calib.ece(by="g", binning="equal_mass").compute(), args.repeat)
            t_count, _ = best(lambda: fresh().map_partitions(touch).compute(), args.repeat)
            nparts = fresh().npartitions

        ok_ece, ok_vece, ok_em = same(ece_dask, ece_mem), same(vece_dask, vece_mem), same(em_dask, em_mem)
        print(f"\n## {rows:,} rows, {args.groups} groups, {nparts} Dask partitions; dask {dask.__version__}, "
              f"{os.cpu_count()} cores; best of {args.repeat}")
        print(f"{'figure':28s} {'in memory (s)':>14s} {'Dask (s)':>10s} {'ratio':>7s}  equal to 1e-12")
        print(f"{'read only':28s} {t_read:14.2f} {t_count:10.2f} {t_count / t_read:7.2f}  "
              "(pl.read_parquet / every partition read)")
        print(f"{'ECE by g (uniform 15)':28s} {t_ece_mem:14.2f} {t_ece_dask:10.2f} {t_ece_dask / t_ece_mem:7.2f}  {ok_ece}")
        print(f"{'VECE age by g (quantile 10)':28s} {t_vece_mem:14.2f} {t_vece_dask:10.2f} "
              f"{t_vece_dask / t_vece_mem:7.2f}  {ok_vece}")
        print(f"{'ECE by g (equal_mass 15)':28s} {t_em_mem:14.2f} {t_em_dask:10.2f} "
              f"{t_em_dask / t_em_mem:7.2f}  {ok_em}")
        if not (ok_ece and ok_vece and ok_em):
            raise SystemExit("Dask and in-memory results differ")
    finally:
        if args.keep is None:
            shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    main()
