"""Variable-based and generalized calibration: calframe against the natural alternatives.

Run: ``.venv/bin/python benchmarks/bench_variable.py [--rows 1000000] [--columns 50] [--repeat 3]``

1. ``vece_rank`` over ``--columns`` numeric columns of a ``--rows`` frame
   against the natural pandas approach: for each variable, ``pd.qcut`` into
   10 bins, ``groupby``, weighted |accuracy - confidence|.
2. ``gece`` with the full lens and adaptive bins (gamma = 0.1) on ``--rows``
   x 10 classes against the GECE reference code's algorithm as SPEC
   describes it, run on numpy (uu-sml's recursive data-dependent binning on
   the lensed outputs, then per-bin means).
Each row prints the figure computed, so both sides do the same work; the
issue's target is >= 20x on both.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
import polars as pl

import calframe
from _timing import LEGEND, both, show  # benchmarks/_timing.py (the scripts run from benchmarks/ on sys.path)



def pandas_vece_rank(pdf: pd.DataFrame, variables: list[str]) -> pd.Series:
    conf = np.maximum(pdf["prob"], 1 - pdf["prob"])
    acc = ((pdf["prob"] > 0.5).astype(int) == pdf["label"]).astype(float)
    out = {}
    for v in variables:
        b = pd.qcut(pdf[v], 10, labels=False, duplicates="drop")
        t = pd.DataFrame({"b": b, "conf": conf, "acc": acc}).groupby("b").agg(
            n=("conf", "size"), conf=("conf", "mean"), acc=("acc", "mean"))
        out[v] = float((t["n"] / len(pdf) * (t["acc"] - t["conf"]).abs()).sum())
    return pd.Series(out).sort_values(ascending=False)


def reference_gece_full_adaptive(probs: np.ndarray, labels: np.ndarray, gamma: float = 0.1) -> float:
    """The reference algorithm on numpy: full lens, uu-sml DataDependentBinning(min_size=round(gamma N)), TVD."""
    gp = probs
    yp = np.eye(probs.shape[1])[labels]
    min_size = round(gp.shape[0] * gamma)
    total = 0.0

    stack = [np.arange(gp.shape[0])]
    while stack:
        idx = stack.pop()
        x = gp[idx]
        if idx.size >= min_size:
            col = x[:, np.argmax(np.var(x, axis=0))]
            low = col < np.mean(col)
            if 0 < low.sum() < idx.size:
                stack.append(idx[~low])
                stack.append(idx[low])
                continue
        total += idx.size * 0.5 * np.abs(gp[idx].mean(axis=0) - yp[idx].mean(axis=0)).sum()
    return total / gp.shape[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--columns", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="1e5 rows, 10 columns")
    args = ap.parse_args()
    if args.quick:
        args.rows, args.columns = 100_000, 10
    print(LEGEND)
    rng = np.random.default_rng(0)
    n = args.rows

    print(f"## vece_rank over {args.columns} numeric columns, {n:,} rows (target >= 20x)")
    p = rng.beta(2, 2, n)
    cols = {f"x{j}": rng.normal(size=n) for j in range(args.columns)}
    # variable j shifts the true probability by up to 0.1 * j / columns: every variable has its own VECE
    shift = sum(0.1 * j / args.columns * np.tanh(x) for j, x in enumerate(cols.values()))
    true = np.clip(p + shift, 0.01, 0.99)
    df = pl.DataFrame({"prob": p, "label": (rng.random(n) < true).astype(np.int8), **cols})
    pdf = df.to_pandas()
    t = both({"calframe.vece_rank": lambda: calframe.vece_rank(df),
              "pandas qcut + groupby": lambda: pandas_vece_rank(pdf, list(cols))},
             {"calframe.vece_rank": args.repeat, "pandas qcut + groupby": max(1, args.repeat - 2)})
    r_cf, r_pd = t["calframe.vece_rank"].value, t["pandas qcut + groupby"].value
    ours = dict(zip(r_cf["variable"].to_list(), r_cf["vece"].to_list()))
    diff = max(abs(ours[v] - r_pd[v]) for v in r_pd.index)
    show("vece_rank (ratio: pandas / calframe)", t, "calframe.vece_rank", {"pandas qcut + groupby": 20},
         {"calframe.vece_rank": f"mean VECE {np.mean(list(ours.values())):.6f}",
          "pandas qcut + groupby": f"mean VECE {r_pd.mean():.6f}  (max |difference| {diff:.1e})"})

    print(f"\n## gece, full lens, adaptive(0.1), {n:,} rows x 10 classes (target >= 20x)")
    mc = calframe.datasets.multiclass(n=n, k=10, seed=1)
    probs, labels = mc["probs"].to_numpy(), mc["label"].to_numpy()
    t = both({"calframe.gece": lambda: calframe.gece(mc, lens="full", binning="adaptive", gamma=0.1),
              "reference algorithm (numpy)": lambda: reference_gece_full_adaptive(probs, labels, 0.1)},
             {"calframe.gece": args.repeat, "reference algorithm (numpy)": max(1, args.repeat - 2)})
    show("gece (ratio: reference / calframe)", t, "calframe.gece", {"reference algorithm (numpy)": 20},
         {k: f"{v.value:.12f}" for k, v in t.items()})


if __name__ == "__main__":
    main()
