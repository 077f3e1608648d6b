"""Smooth ECE: calframe.smece against relplot's smECE (its reference), whole and per group.

Run: ``.venv/bin/python benchmarks/bench_smooth.py [--rows 1000000 10000000] [--groups 1000] [--repeat 3]``.

Two figures per contender (benchmarks/_timing.py): the single call (calframe and relplot alternating, one
warm-up each, best of 3 rounds) and the hot loop (the best of ``--repeat`` runs or more, at least 1 s, after
warming up; relplot: ``--peer-repeat``, default 1, as it takes seconds). ``--quick``: 1e5 and 1e6 rows, 100
groups. In one process, on the same seeded data; calframe's calls are whole public calls
(validation included) on a Polars frame. The values printed beside the timings are the figures each side
computed. Ratios are "relplot time / calframe time" (higher = calframe faster); targets from issue 14.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
import polars as pl
import relplot

import calframe
from _timing import LEGEND, both, show  # benchmarks/_timing.py (the scripts run from benchmarks/ on sys.path)

TARGET_WHOLE = 30.0  # at 1e7 rows
TARGET_GROUPED = 50.0  # 1e7 rows x 1e3 groups, against groupby-apply(relplot)


def data(n: int, groups: int, seed: int = 0) -> pl.DataFrame:
    """Miscalibrated scores (labels drawn from p ** 1.3) with integer group keys."""
    rng = np.random.default_rng(seed)
    p = rng.random(n)
    y = (rng.random(n) < p**1.3).astype(np.int64)
    return pl.DataFrame({"prob": p, "label": y, "g": rng.integers(0, groups, n)})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--grouped-rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--peer-repeat", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="1e5 and 1e6 rows, 1e6 x 100 groups")
    a = ap.parse_args()
    if a.quick:
        a.rows, a.groups, a.grouped_rows = [100_000, 1_000_000], 100, 1_000_000
    print(LEGEND)
    for n in a.rows:
        df = data(n, 1)
        f, y = df["prob"].to_numpy(), df["label"].to_numpy().astype(float)
        timed = both({"calframe.smece(df)": lambda: calframe.smece(df), "relplot.smECE(f, y)": lambda: relplot.smECE(f, y)},
                     {"calframe.smece(df)": a.repeat, "relplot.smECE(f, y)": a.peer_repeat})
        show(f"smECE, {n:.0e} rows (ratio: relplot / calframe)", timed, "calframe.smece(df)",
             {"relplot.smECE(f, y)": TARGET_WHOLE} if n >= 10_000_000 else None,
             {k: f"{t.value:.9f}" for k, t in timed.items()})
    n, k = a.grouped_rows, a.groups
    df = data(n, k)
    pdf = df.to_pandas()

    def per_group() -> pd.Series:
        return pdf.groupby("g").apply(lambda d: relplot.smECE(d["prob"].to_numpy(), d["label"].to_numpy() * 1.0),
                                      include_groups=False)

    timed = both({"calframe.smece(df, by='g')": lambda: calframe.smece(df, by="g"),
                  "pandas groupby-apply(relplot.smECE)": per_group}, a.repeat, slow=("pandas groupby-apply(relplot.smECE)",))
    v_cf, v_rp = timed["calframe.smece(df, by='g')"].value, timed["pandas groupby-apply(relplot.smECE)"].value
    diff = float(np.abs(v_cf.sort("g")["smece"].to_numpy() - v_rp.sort_index().to_numpy()).max())
    show(f"smECE by group, {n:.0e} rows x {k} groups (max |difference| {diff:.1e}; ratio: pandas / calframe; "
         "pandas' figure is its single call in both columns)", timed, "calframe.smece(df, by='g')",
         {"pandas groupby-apply(relplot.smECE)": TARGET_GROUPED},
         {"calframe.smece(df, by='g')": f"mean {v_cf['smece'].mean():.9f}",
          "pandas groupby-apply(relplot.smECE)": f"mean {v_rp.mean():.9f}"})


if __name__ == "__main__":
    main()
