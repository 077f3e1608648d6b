"""Smooth ECE: calframe.smece against relplot's smECE (its reference), whole and per group.

Run: ``.venv/bin/python benchmarks/bench_smooth.py [--rows 1000000 10000000] [--groups 1000] [--repeat 3]``.

Each timing is the best of ``--repeat`` runs or more (at least 1 s) after warming up (_timing.timeit) (relplot: ``--peer-repeat``, default 1,
as it takes seconds), in one process, on the same seeded data; calframe's calls are whole public calls
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
from _timing import timeit  # benchmarks/_timing.py (the scripts run from benchmarks/ on sys.path)

TARGET_WHOLE = 30.0  # at 1e7 rows
TARGET_GROUPED = 50.0  # 1e7 rows x 1e3 groups, against groupby-apply(relplot)


def data(n: int, groups: int, seed: int = 0) -> pl.DataFrame:
    """Miscalibrated scores (labels drawn from p ** 1.3) with integer group keys."""
    rng = np.random.default_rng(seed)
    p = rng.random(n)
    y = (rng.random(n) < p**1.3).astype(np.int64)
    return pl.DataFrame({"prob": p, "label": y, "g": rng.integers(0, groups, n)})


def row(name: str, seconds: float, ratio: float | None, target: float | None, value: str) -> None:
    r = "" if ratio is None else f"{ratio:8.1f}x"
    t = "" if target is None else f"{target:6.0f}x"
    print(f"{name:52s} {seconds:9.3f} {r:>9s} {t:>7s}  {value}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--grouped-rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--peer-repeat", type=int, default=1)
    a = ap.parse_args()
    print(f"{'contender':52s} {'seconds':>9s} {'ratio':>9s} {'target':>7s}  value")
    for n in a.rows:
        df = data(n, 1)
        f, y = df["prob"].to_numpy(), df["label"].to_numpy().astype(float)
        t_cf, v_cf = timeit(lambda: calframe.smece(df), a.repeat)
        t_rp, v_rp = timeit(lambda: relplot.smECE(f, y), a.peer_repeat)
        print(f"\n## smECE, {n:.0e} rows")
        row("calframe.smece(df)", t_cf, None, None, f"{v_cf:.9f}")
        row("relplot.smECE(f, y)", t_rp, t_rp / t_cf, TARGET_WHOLE if n >= 10_000_000 else None, f"{v_rp:.9f}")
    n, k = a.grouped_rows, a.groups
    df = data(n, k)
    pdf = df.to_pandas()

    def per_group() -> pd.Series:
        return pdf.groupby("g").apply(lambda d: relplot.smECE(d["prob"].to_numpy(), d["label"].to_numpy() * 1.0),
                                      include_groups=False)

    t_cf, v_cf = timeit(lambda: calframe.smece(df, by="g"), a.repeat)
    t_rp, v_rp = timeit(per_group, a.peer_repeat)
    diff = float(np.abs(v_cf.sort("g")["smece"].to_numpy() - v_rp.sort_index().to_numpy()).max())
    print(f"\n## smECE by group, {n:.0e} rows x {k} groups (max |difference| {diff:.1e})")
    row("calframe.smece(df, by='g')", t_cf, None, None, f"mean {v_cf['smece'].mean():.9f}")
    row("pandas groupby-apply(relplot.smECE)", t_rp, t_rp / t_cf, TARGET_GROUPED, f"mean {v_rp.mean():.9f}")


if __name__ == "__main__":
    main()
