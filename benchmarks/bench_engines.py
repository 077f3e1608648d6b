"""ECE by group inside the engine that holds the rows: calframe against the hand-written group-by of the same sums.

    .venv/bin/python benchmarks/bench_engines.py [--rows 1e7] [--groups 1000] [--repeat 3]
                                                 [--engines duckdb,spark] [--no-rss]

On seeded Parquet rows (``bench_scale.generate``: ``prob``, ``label``, ``g``
with ``--groups`` groups; written once under ``benchmarks/_data/``, shared with bench_lazy.py), ECE by
``g`` with the top-label lens and 15 uniform bins:

(a) DuckDB: ``calframe.ece(rel, by="g", lens="top1")`` on a relation of an
    in-memory table (validation, exact bins, sums by DuckDB, finalize) against
    one hand-written query: bin (``floor(conf * 15)``, clipped), the
    ``GROUP BY g, bin`` sums, then the ECE per group in SQL.
(b) PySpark (``local[2]``; session start-up not timed; the rows cached in
    Spark first): ``calframe.ece(sdf, by="g", lens="top1")`` collected
    against the hand-written ``groupBy("g", "bin")`` sums and the ECE per
    group with ``groupBy("g")``.
(c) Memory the rows never leaving the engine saves: the peak RSS of a fresh
    Python process (``VmHWM``) that collects the rows to Polars and then calls
    calframe, against one that calls calframe on the relation / Spark
    DataFrame (for Spark: the driver's Python process; the JVM is apart).

Both sides of (a) and (b) run in one process, interleaved (calframe, hand,
calframe, hand, ...) after a warm-up of each; each pair's ratio is printed
with its spread. Targets (issue 13): within 1.5x. Needs the narwhals engine
(``calframe.engines.native.sums``): where calframe refuses the frame, the script
says so and skips that comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from bench_lazy import data  # benchmarks/ is on sys.path when run as a script: the same seeded files
from bench_scale import BINS, parser, peak_rss_kb

#: the hand-written sums and ECE, in SQL (n * |sum_conf / n - sum_acc / n| = |sum_conf - sum_acc|)
HAND_SQL = f"""
WITH c AS (
  SELECT g, CASE WHEN prob > 0.5 THEN prob ELSE 1 - prob END AS conf,
         CASE WHEN (prob > 0.5) = (label = 1) THEN 1.0 ELSE 0.0 END AS acc
  FROM scores),
b AS (
  SELECT g, LEAST(GREATEST(CAST(FLOOR(conf * {BINS}) AS INTEGER), 0), {BINS - 1}) AS bin,
         count(*) AS n, sum(conf) AS sc, sum(acc) AS sa
  FROM c GROUP BY g, bin)
SELECT g, sum(n) AS n, sum(abs(sc - sa)) / sum(n) AS ece FROM b GROUP BY g
"""


# --------------------------------------------------------------------------- DuckDB


def duck_table(path: str) -> Any:
    import duckdb

    con = duckdb.connect()
    con.execute(f"CREATE TABLE scores AS SELECT prob, label, g FROM read_parquet('{path}')")
    return con


def duck_ours(con: Any) -> Any:
    import calframe

    return calframe.ece(con.table("scores"), by="g", lens="top1").fetchall()


def duck_hand(con: Any) -> Any:
    return con.sql(HAND_SQL).fetchall()


# --------------------------------------------------------------------------- Spark


def spark_session() -> Any:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[2]").appName("bench_engines").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "4").config("spark.driver.memory", "4g")
             .config("spark.driver.maxResultSize", "4g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def spark_frame(spark: Any, path: str) -> Any:
    sdf = spark.read.parquet(os.path.abspath(path)).select("prob", "label", "g").cache()
    sdf.count()
    return sdf


def spark_ours(sdf: Any) -> Any:
    import calframe

    return calframe.ece(sdf, by="g", lens="top1").collect()


def spark_hand(sdf: Any) -> Any:
    from pyspark.sql import functions as F

    pred = F.col("prob") > 0.5
    conf = F.when(pred, F.col("prob")).otherwise(1 - F.col("prob"))
    acc = F.when(pred == (F.col("label") == 1), 1.0).otherwise(0.0)
    cells = (sdf.select("g", conf.alias("c"), acc.alias("a"))
             .withColumn("bin", F.least(F.greatest(F.floor(F.col("c") * BINS).cast("int"), F.lit(0)), F.lit(BINS - 1)))
             .groupBy("g", "bin").agg(F.count("*").alias("n"), F.sum("c").alias("sc"), F.sum("a").alias("sa")))
    return (cells.groupBy("g").agg(F.sum("n").alias("n"), (F.sum(F.abs(F.col("sc") - F.col("sa"))) / F.sum("n"))
                                   .alias("ece")).collect())


# --------------------------------------------------------------------------- runs


def refused(fn: Callable[[], Any], engine: str) -> str | None:
    """None if calframe takes the engine's frame, else why not (the engine is not on this checkout)."""
    import calframe

    try:
        fn()
    except calframe.ColumnTypeError as exc:
        return (f"calframe refuses a {engine} frame on this checkout (the narwhals engine, "
                f"calframe.engines.native.sums, is not here?): {exc}")
    return None


def interleaved(title: str, ours: Callable[[], Any], hand: Callable[[], Any], repeat: int) -> None:
    import numpy as np

    ours(), hand()  # warm-up: imports, numba, the engine's caches
    times: dict[str, list[float]] = {"calframe": [], "hand": []}
    for _ in range(repeat):
        for side, fn in (("calframe", ours), ("hand", hand)):
            t = time.perf_counter()
            fn()
            times[side].append(time.perf_counter() - t)
    ratio = np.array(times["calframe"]) / np.array(times["hand"])
    print(f"## {title}, {repeat} interleaved pairs")
    for side, ts in times.items():
        print(f"{side:9s} {min(ts):.3f}-{max(ts):.3f} s (median {np.median(ts):.3f})")
    print(f"ratio     {ratio.min():.2f}-{ratio.max():.2f}x (median {np.median(ratio):.2f}x; target <= 1.5x)")
    from _timing import LEGEND, ROUNDS, timeit

    s_ours, s_hand = min(times["calframe"][:ROUNDS]), min(times["hand"][:ROUNDS])
    h_ours, h_hand = timeit(ours, 1)[0], timeit(hand, 1)[0]
    print(f"single call: calframe {s_ours:.3f} s, hand {s_hand:.3f} s, ratio {s_ours / s_hand:.2f}x; "
          f"hot loop: calframe {h_ours:.3f} s, hand {h_hand:.3f} s, ratio {h_ours / h_hand:.2f}x")
    print(LEGEND)


def child(engine: str, side: str, path: str) -> None:
    """One side of (c) in this fresh process: its seconds and peak RSS as JSON."""
    import polars as pl

    import calframe

    if engine == "duckdb":
        con = duck_table(path)
        t = time.perf_counter()
        if side == "collect":
            calframe.ece(con.table("scores").pl(), by="g", lens="top1")
        else:
            duck_ours(con)
    else:
        sdf = spark_frame(spark_session(), path)
        t = time.perf_counter()
        if side == "collect":
            calframe.ece(pl.from_arrow(sdf.toArrow()), by="g", lens="top1")
        else:
            spark_ours(sdf)
    kb, _ = peak_rss_kb()
    print(json.dumps({"seconds": time.perf_counter() - t, "peak_mb": kb / 1024}))


def memory(engine: str, path: str) -> None:
    print(f"## Peak RSS of a fresh Python process, {engine}: collect to Polars then calframe, or calframe in the engine")
    for side in ("collect", "in-engine"):
        out = subprocess.run([sys.executable, __file__, "--child", engine, side, "--path", path], capture_output=True,
                             text=True)
        if out.returncode:
            print(f"{side:9s} failed: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}")
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{side:9s} {r['seconds']:.2f} s, {r['peak_mb']:.0f} MB")


#: engine -> (title, frame of the Parquet file, calframe's side, the hand-written side, release the frame)
ENGINES: dict[str, tuple[str, Callable[[str], Any], Callable[[Any], Any], Callable[[Any], Any], Callable[[Any], Any]]] = {
    "duckdb": ("(a) DuckDB relation vs a hand-written GROUP BY", duck_table, duck_ours, duck_hand,
               lambda con: con.close()),
    "spark": ("(b) PySpark local[2] vs a hand-written groupBy", lambda path: spark_frame(spark_session(), path),
              spark_ours, spark_hand, lambda sdf: sdf.sparkSession.stop()),
}


def main() -> None:
    ap = parser(__doc__, rows=1e7, repeat=3)
    ap.add_argument("--engines", default="duckdb,spark", help="comma-separated: duckdb, spark")
    ap.add_argument("--no-rss", action="store_true", help="skip (c), the peak-RSS comparison")
    ap.add_argument("--child", nargs=2, metavar=("ENGINE", "SIDE"), help=argparse.SUPPRESS)
    ap.add_argument("--path", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.quick:
        args.rows, args.no_rss = 1e6, True
    if args.child:
        child(*args.child, args.path)
        return
    path = str(data(args.rows, args.groups, args.data))
    print(f"# ECE by group (top1, {BINS} bins), {args.rows:.0e} rows, {args.groups} groups")
    for engine in args.engines.split(","):
        title, setup, ours, hand, close = ENGINES[engine]
        frame = setup(path)
        why = refused(lambda: ours(frame), engine)
        if why:
            print(f"## {engine} skipped: {why}")
        else:
            interleaved(title, lambda: ours(frame), lambda: hand(frame), args.repeat)
        close(frame)
        if not why and not args.no_rss:
            memory(engine, path)

if __name__ == "__main__":
    main()
