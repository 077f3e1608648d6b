"""Recalibration: calframe's tree + beta leaves against scikit-learn, and LoRe at scale.

Run: ``.venv/bin/python benchmarks/bench_recal.py [--rows 1000000] [--repeat 3]``

1. ``calframe.fit(df, "tree", variable="v")`` (a gini tree on V, depth 2,
   leaves >= 10% of the rows, a beta calibrator per leaf) against the natural
   scikit-learn pipeline: ``DecisionTreeClassifier(max_depth=2,
   min_samples_leaf=0.1)`` on V, then ``LogisticRegression`` on
   [ln s, -ln(1 - s)] in each leaf (target >= 2.5x).
2. LoRe (d = 2 features, gamma = 0.2) fitted on ``--rows`` calibration rows
   and applied to ``--rows`` new rows (exact kernel sums).
"""

from __future__ import annotations

import argparse

import numpy as np
import polars as pl

import calframe
from _timing import LEGEND, both, show  # benchmarks/_timing.py (the scripts run from benchmarks/ on sys.path)



def frame(n: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    v = rng.uniform(18, 80, n).round()
    p = np.clip(rng.beta(2, 2, n), 1e-4, 1 - 1e-4)
    true = np.clip(p + 0.15 * np.tanh((49 - v) / 10), 0.01, 0.99)
    e = rng.normal(size=(n, 2))
    return pl.DataFrame({"prob": p, "label": (rng.random(n) < true).astype(np.int8), "v": v, "e0": e[:, 0],
                         "e1": e[:, 1]})


def sklearn_tree_beta(p: np.ndarray, y: np.ndarray, v: np.ndarray):
    from sklearn.linear_model import LogisticRegression
    from sklearn.tree import DecisionTreeClassifier

    tree = DecisionTreeClassifier(criterion="gini", max_depth=2, min_samples_leaf=0.1).fit(v[:, None], y)
    leaf = tree.apply(v[:, None])
    x = np.column_stack([np.log(p), -np.log(1 - p)])
    models = {}
    for lf in np.unique(leaf):
        m = leaf == lf
        models[lf] = LogisticRegression(C=1e10, max_iter=1000).fit(x[m], y[m])
    return tree, models


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="1e5 rows")
    args = ap.parse_args()
    if args.quick:
        args.rows = 100_000
    print(LEGEND)
    cal = frame(args.rows, 0)
    new = frame(args.rows, 1)

    print(f"## tree on V + beta leaves, fitted on {args.rows:,} rows (target >= 2.5x)")
    p, y, v = cal["prob"].to_numpy(), cal["label"].to_numpy(), cal["v"].to_numpy()
    runs = {"calframe.fit('tree')": lambda: calframe.fit(cal, "tree", variable="v")}
    try:
        import sklearn  # noqa: F401

        runs["sklearn tree + LogisticRegression/leaf"] = lambda: sklearn_tree_beta(p, y, v)
    except ImportError:
        print("  scikit-learn not installed")
    t = both(runs, {"calframe.fit('tree')": args.repeat, "sklearn tree + LogisticRegression/leaf": max(1, args.repeat - 1)})
    rec = t["calframe.fit('tree')"].value
    values = {"calframe.fit('tree')": f"thresholds {list(rec.arrays['thresholds'])}"}
    if len(t) > 1:
        tree = t["sklearn tree + LogisticRegression/leaf"].value[0]
        values["sklearn tree + LogisticRegression/leaf"] = f"thresholds {sorted(x for x in tree.tree_.threshold if x != -2)}"
    show("tree (ratio: scikit-learn / calframe)", t, "calframe.fit('tree')",
         {"sklearn tree + LogisticRegression/leaf": 2.5}, values)

    print(f"\n## LoRe, d = 2, gamma = 0.2: fit on {args.rows:,} rows, apply to {args.rows:,} new rows")
    lore = calframe.fit(cal, "lore", features=["e0", "e1"], gamma=0.2)
    t = both({"fit (stores the rows)": lambda: calframe.fit(cal, "lore", features=["e0", "e1"], gamma=0.2),
              "apply (exact kernel sums)": lambda: calframe.apply(new, lore, name="p_lore"),
              f"MLCE of the {args.rows:,} new rows": lambda: calframe.mlce(new, ["e0", "e1"], gamma=0.2)}, args.repeat)
    show("LoRe (no peer: seconds only)", t, values={
        "apply (exact kernel sums)": f"mean p_lore {t['apply (exact kernel sums)'].value['p_lore'].mean():.6f}",
        f"MLCE of the {args.rows:,} new rows": f"mlce {t[f'MLCE of the {args.rows:,} new rows'].value:.6f}"})


if __name__ == "__main__":
    main()
