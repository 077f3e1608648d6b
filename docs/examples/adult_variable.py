"""Adult income (Kelly & Smyth): ECE vs VECE(age) before and after recalibration.

The paper measures the top label: every figure passes lens="top1" (the default for
a single probability column is the positive class, class:1).

Run from the repository root with the shared data beside it:
    .venv/bin/python docs/examples/adult_variable.py [path/to/adult_out.csv]
"""

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl

import calframe

path = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/variable-wise-calibration/adult_out.csv")
df = pd.read_csv(path, index_col=0)
cal = df.sample(n=2500, replace=False, random_state=0)  # the authors' calibration split
test = df.drop(cal.index)


def frame(d: pd.DataFrame) -> pl.DataFrame:
    return pl.DataFrame({"prob": d["prob_1"].to_numpy(), "label": d["actual"].to_numpy(), "age": d["Age"].to_numpy(),
                         "pred": d["pred"].to_numpy()})


cal_f, test_f = frame(cal), frame(test)
pl.Config.set_float_precision(4)
pl.Config.set_tbl_hide_dataframe_shape(True)

rows = []
variants = {
    "uncalibrated": None,
    "beta (Kelly & Smyth's C=1)": calframe.fit(cal_f, "beta", variant="kelly_smyth"),
    "tree on age (depth 3, leaf 250)": calframe.fit(cal_f, "tree", variable="age", max_depth=3, min_leaf=250,
                                                    leaf_params={"variant": "kelly_smyth"}),
    "tree on age (defaults)": calframe.fit(cal_f, "tree", variable="age"),
}
for name, rec in variants.items():
    out = test_f if rec is None else calframe.apply(test_f, rec, name="p")
    p = "prob" if rec is None else "p"
    rows.append({"model": name,
                 "ece_top1": calframe.ece(out, prob=p, binning="quantile", bins=10, lens="top1"),
                 "vece_age": calframe.vece(out, "age", prob=p, lens="top1"),
                 "vce_age_pp": 100 * calframe.vce_curve(out, "age", prob=p, lens="top1").vce})
print(pl.DataFrame(rows))
print()
print("Ranking the continuous variables of the beta-calibrated model (their Table 1), VCE(v*) beside:")
wide = pl.from_pandas(test[["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]])
wide = wide.with_columns(prob=calframe.apply(test_f, variants["beta (Kelly & Smyth's C=1)"], name="p")["p"],
                         label=test_f["label"])
rank = calframe.vece_rank(wide, lens="top1")
vce = {}
for v in rank["variable"]:
    try:
        vce[v] = 100 * calframe.vce_curve(wide, v, lens="top1").vce
    except calframe.InvalidValueError as exc:  # capital-gain/-loss: ~90% zeros, no LOESS neighbourhood
        vce[v] = None
print(rank.with_columns(vce_pp=pl.col("variable").replace_strict(vce, return_dtype=pl.Float64)))
