"""Scale benchmark: per-group ECE and VECE on a Parquet file larger than memory is comfortable with.

    .venv/bin/python benchmarks/bench_scale.py [--rows 100000000] [--groups 1000] [--repeat 2]

The data (seeded; ``prob`` f64, ``label`` i8, ``g`` i32 with ``--groups``
groups, ``region`` String with 20 categories whose calibration differs) is
generated in chunks of ``--chunk`` rows straight into a Parquet file under
``benchmarks/_data/`` (gitignored; ``--data DIR`` to put it elsewhere), so the
generator never holds all rows. It is reused when it exists.

Each measurement runs in a fresh Python process (``--child``), which reads
the file itself and reports its wall time and its peak resident set size:
``VmHWM`` from ``/proc/self/status`` (the high-water mark of the process's
own memory, interpreter and imports included; the "idle" row is a process
that only imports calframe). ``resource.getrusage(RUSAGE_SELF).ru_maxrss``
is not used: Linux carries it over ``execve`` from the parent process, so a
child would report the driver's peak if that were higher. Where
``/proc`` is missing, ``ru_maxrss`` is the fallback (then psutil is not
needed either). Two times per contender: "first s", its first call in that
fresh process (the single call a user's script makes; each contender has a
process to itself, so the contenders cannot alternate here, and the first call
includes loading the cached kernels), and "best s", the best of ``--repeat``
runs in that process (the hot loop); the peak RSS is over all of them.
``--quick``: 2e6 rows, no Dask part. The data is generated in a subprocess too.

Contenders, for ECE (uniform(15), top1 lens, by g) and VECE (V = region, by g);
a third table (``vq``) times VECE with quantile(10) bins of a numeric V
(``prob``), whose exact edges take several streaming passes, against eager:

- ``stream``: calframe.engines.streaming.streamed.lazy_sums on ``pl.scan_parquet`` (one
  streaming query with validation and exact bins) + ``ce_from_sums``;
- ``polars``: the bare Polars streaming group-by of the same sums, what a user
  would write by hand (``floor(conf * 15)`` bins, no validation), finalized
  the same way: the baseline;
- ``eager``: ``pl.read_parquet`` of the needed columns, then calframe's
  in-memory path (``calframe.ece(df, by="g")``).

The targets (from the issue): ``stream`` peak RSS < 1.5 GB, time within 1.5x
of ``polars``, values equal to ``eager`` to 1e-12.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def parser(doc: str | None, *, rows: float, repeat: int) -> argparse.ArgumentParser:
    """The options every scaling benchmark takes: --rows, --groups, --repeat and --data (where data is written)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=float, default=rows)
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=repeat)
    ap.add_argument("--data", type=Path, default=HERE / "_data")
    ap.add_argument("--quick", action="store_true", help="a quick look: 2e6 rows (and what each script says)")
    return ap
BINS = 15
N_REGIONS = 20


# --------------------------------------------------------------------------- data


def generate(path: Path, rows: int, groups: int, chunk: int, seed: int = 0) -> None:
    """Write ``rows`` seeded rows to ``path`` chunk by chunk (never all in memory)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    tmp = path.with_suffix(".tmp")
    schema = pa.schema([("prob", pa.float64()), ("label", pa.int8()), ("g", pa.int32()), ("region", pa.string())])
    regions = pa.array([f"region_{i:02d}" for i in range(N_REGIONS)])
    shift = np.linspace(-0.08, 0.08, N_REGIONS)  # region-dependent miscalibration: VECE > ECE
    t0 = time.perf_counter()
    with pq.ParquetWriter(tmp, schema, compression="snappy") as writer:
        for c, start in enumerate(range(0, rows, chunk)):
            n = min(chunk, rows - start)
            rng = np.random.default_rng([seed, c])
            p = rng.beta(2.0, 2.0, n)
            r = rng.integers(0, N_REGIONS, n).astype(np.int32)
            truth = np.clip(p + shift[r], 0.0, 1.0)
            label = (rng.random(n) < truth).astype(np.int8)
            g = rng.integers(0, groups, n).astype(np.int32)
            region = pa.DictionaryArray.from_arrays(pa.array(r), regions).cast(pa.string())
            table = pa.table([pa.array(p), pa.array(label), pa.array(g), region], schema=schema)
            writer.write_table(table, row_group_size=1 << 20)
            print(f"\r  generated {start + n:,} / {rows:,} rows", end="", file=sys.stderr, flush=True)
    os.replace(tmp, path)
    print(f"\n  wrote {path} ({path.stat().st_size / 1e9:.2f} GB) in {time.perf_counter() - t0:.0f} s", file=sys.stderr)


# --------------------------------------------------------------------------- one measurement (child process)


def peak_rss_kb() -> tuple[float, str]:
    """Peak resident set size of this process in kB: VmHWM (Linux), else ru_maxrss."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return float(line.split()[1]), "VmHWM"
    except OSError:
        pass
    import resource

    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return float(kb if sys.platform != "darwin" else kb / 1024), "ru_maxrss"


def child(kind: str, path: str, repeat: int) -> dict:
    import numpy as np
    import polars as pl

    import calframe
    from calframe import request as R
    from calframe.engines.streaming import streamed as LZ
    from calframe.metrics import ce_from_sums

    metric, how = kind.split(":")

    def stream():
        lf = pl.scan_parquet(path)
        if metric == "ece":
            req = R.ce("ece", "ece", "prob", "label", by="g", bins=BINS)
        else:
            req = R.vece("vece", "vece", "prob" if metric == "vq" else "region", "prob", "label", by="g")
        sums, keys, counts, _ = LZ.lazy_sums(lf, req)
        return keys["g"].to_numpy(), counts, ce_from_sums(sums, 1.0)

    def polars_baseline():
        lf = pl.scan_parquet(path)
        p, y = pl.col("prob"), pl.col("label")
        pred = p > 0.5
        conf = pl.when(pred).then(p).otherwise(1.0 - p)
        acc = (pred == (y == 1)).cast(pl.Float64)
        if metric == "ece":
            key = (conf * BINS).floor().cast(pl.Int32).clip(0, BINS - 1)
        else:
            key = pl.col("region")
        q = (
            lf.select(pl.col("g"), key.alias("bin"), conf.alias("conf"), acc.alias("acc"))
            .group_by("g", "bin")
            .agg(pl.len().alias("n"), pl.col("conf").sum().alias("sc"), pl.col("acc").sum().alias("sa"))
        )
        cells = q.collect(engine="streaming")
        # finalize exactly as calframe does: (group, bin) table -> ce_from_sums
        gk = cells["g"].to_numpy()
        groups, gi = np.unique(gk, return_inverse=True)
        _, bi = np.unique(cells["bin"].to_numpy(), return_inverse=True)
        sums = np.zeros((groups.shape[0], int(bi.max()) + 1, 3))
        np.add.at(sums, (gi, bi), cells.select("n", "sc", "sa").to_numpy().astype(np.float64))
        counts = sums[:, :, 0].sum(axis=1).astype(np.int64)
        return groups, counts, ce_from_sums(sums, 1.0)

    def eager():
        cols = ["prob", "label", "g"] + (["region"] if metric == "vece" else [])
        df = pl.read_parquet(path, columns=cols)
        if metric == "ece":
            out = calframe.ece(df, by="g")
        elif metric == "vq":
            out = calframe.vece(df, "prob", by="g")
        else:
            out = calframe.vece(df, "region", by="g")
        return out["g"].to_numpy(), out["n"].to_numpy(), out[out.columns[-1]].to_numpy()

    def idle():
        return np.zeros(1), np.zeros(1, dtype=np.int64), np.zeros(1)

    fn = {"stream": stream, "polars": polars_baseline, "eager": eager, "idle": idle}[how]
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        keys, counts, values = fn()
        times.append(time.perf_counter() - t)
    rss_kb, how_rss = peak_rss_kb()
    return {
        "kind": kind,
        "seconds": min(times),
        "all_seconds": times,
        "peak_rss_mb": rss_kb / 1024.0,
        "rss_source": how_rss,
        "keys": np.asarray(keys).tolist(),
        "counts": np.asarray(counts).tolist(),
        "values": np.asarray(values, dtype=np.float64).tolist(),
    }


def measure(kind: str, path: Path, repeat: int) -> dict:
    cmd = [sys.executable, __file__, "--child", kind, "--path", str(path), "--repeat", str(repeat)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{kind} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------- driver


def main() -> None:
    ap = parser(__doc__, rows=1e8, repeat=3)
    ap.add_argument("--chunk", type=int, default=5_000_000)
    ap.add_argument("--only", default="", help="comma-separated subset of ece,vece,vq")
    ap.add_argument("--dask-rows", type=float, default=2e7,
                    help="rows for the Dask part (bench_dask.py: local 2-worker cluster vs in memory); 0 skips it")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--path", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--generate", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.generate:
        generate(Path(args.generate), int(args.rows), args.groups, args.chunk)
        return
    if args.child:
        print(json.dumps(child(args.child, args.path, args.repeat)))
        return

    import numpy as np

    if args.quick:
        args.rows, args.dask_rows = 2e6, 0
    rows = int(args.rows)
    args.data.mkdir(parents=True, exist_ok=True)
    path = args.data / f"scale_{rows}_{args.groups}.parquet"
    if not path.exists():  # in a subprocess: the driver stays small
        subprocess.run([sys.executable, __file__, "--generate", str(path), "--rows", str(rows),
                        "--groups", str(args.groups), "--chunk", str(args.chunk)], check=True)
    print(f"# bench_scale: {rows:,} rows, {args.groups} groups, {path.stat().st_size / 1e9:.2f} GB Parquet; "
          f"{os.cpu_count()} cores; best of {args.repeat} runs per fresh process")
    idle = measure("ece:idle", path, 1)
    print(f"# peak RSS = {idle['rss_source']} of the measuring process (interpreter + imports included); "
          f"idle process (imports only): {idle['peak_rss_mb']:.0f} MB")
    metrics = [m for m in ("ece", "vece", "vq") if not args.only or m in args.only.split(",")]
    titles = {
        "ece": "ECE by g: uniform(15) on the top1 conf",
        "vece": "VECE by g: V = region, one bin per category",
        "vq": "VECE by g: V = prob, quantile(10) bins (exact edges in streaming passes; no bare Polars equivalent)",
    }
    summary = {}
    for metric in metrics:
        contenders = ("polars", "stream", "eager") if metric != "vq" else ("stream", "eager")
        res = {how: measure(f"{metric}:{how}", path, args.repeat) for how in contenders}
        base = res[contenders[0]]["seconds"]
        ref = res["eager"]
        print(f"\n## {titles[metric]}")
        first = res[contenders[0]]["all_seconds"][0]
        print(f"{'contender':10s} {'first s':>8s} {'x ' + contenders[0]:>9s} {'best s':>8s} {'x ' + contenders[0]:>9s} "
              f"{'peak RSS MB':>12s}  max |value - eager|  groups  runs")
        for how in contenders:
            r = res[how]
            same_keys = r["keys"] == ref["keys"] and r["counts"] == ref["counts"]
            diff = float(np.max(np.abs(np.array(r["values"]) - np.array(ref["values"])))) if same_keys else float("nan")
            print(f"{how:10s} {r['all_seconds'][0]:8.2f} {r['all_seconds'][0] / first:9.2f} {r['seconds']:8.2f} "
                  f"{r['seconds'] / base:9.2f} {r['peak_rss_mb']:12.0f}  "
                  f"{diff:19.2e}  {len(r['keys']):6d}  {', '.join(f'{t:.2f}' for t in r['all_seconds'])}")
        s = res["stream"]
        diff = float(np.max(np.abs(np.array(s["values"]) - np.array(ref["values"]))))
        ok = {
            "rss < 1.5 GB": s["peak_rss_mb"] < 1536,
            "time <= 1.5x polars": s["seconds"] <= 1.5 * base,
            "== eager (1e-12)": s["keys"] == ref["keys"] and s["counts"] == ref["counts"] and diff <= 1e-12,
        }
        if metric == "vq":
            del ok["time <= 1.5x polars"]
        print("targets: " + ", ".join(f"{k}: {'yes' if v else 'NO'}" for k, v in ok.items()))
        summary[metric] = ok
    print()
    if args.dask_rows > 0:
        try:
            import dask.dataframe  # noqa: F401
            import distributed  # noqa: F401
        except ImportError:
            print("# Dask part skipped: the dask extra is not installed (pip install 'calframe[dask]')")
        else:
            print(f"# Dask: benchmarks/bench_dask.py --rows {int(args.dask_rows):,}")
            subprocess.run([sys.executable, str(HERE / "bench_dask.py"), "--rows", str(args.dask_rows)], check=True)


if __name__ == "__main__":
    main()
