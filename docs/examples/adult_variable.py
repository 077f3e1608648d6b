"""Adult income (Kelly & Smyth): ECE vs VECE(age) before and after recalibration.

The model: a logistic regression fitted on UCI Adult's training split and
scored on its test split (calframe.datasets.adult_scored: the data ships with
calframe, CC BY 4.0). 2,500 test rows recalibrate, the other 13,781 measure.
The paper measures the top label: every figure passes lens="top1" (the default
for a single probability column is the positive class, class:1).

Run from the repository root:
    .venv/bin/python docs/examples/adult_variable.py
"""

import numpy as np
import polars as pl

import calframe

df = calframe.datasets.adult_scored()
is_cal = np.zeros(df.height, dtype=bool)
is_cal[np.random.default_rng(0).choice(df.height, size=2500, replace=False)] = True
cal, test = df.filter(pl.Series(is_cal)), df.filter(pl.Series(~is_cal))
pl.Config.set_float_precision(4)
pl.Config.set_tbl_hide_dataframe_shape(True)

rows = []
variants = {
    "uncalibrated": None,
    "beta (Kelly & Smyth's C=1)": calframe.fit(cal, "beta", variant="kelly_smyth"),
    "tree on age (depth 3, leaf 250)": calframe.fit(cal, "tree", variable="age", max_depth=3, min_leaf=250,
                                                    leaf_params={"variant": "kelly_smyth"}),
    "tree on age (defaults)": calframe.fit(cal, "tree", variable="age"),
}
for name, rec in variants.items():
    out = test if rec is None else calframe.apply(test, rec, name="p")
    p = "prob" if rec is None else "p"
    rows.append({"model": name,
                 "ece_top1": calframe.ece(out, prob=p, binning="quantile", bins=10, lens="top1"),
                 "vece_age": calframe.vece(out, "age", prob=p, lens="top1"),
                 "vce_age_pp": 100 * calframe.vce_curve(out, "age", prob=p, lens="top1", smoother="loess",
                                                        n_boot=0).vce})  # the paper's LOESS
print(pl.DataFrame(rows))
print()
print("Ranking the continuous variables of the uncalibrated model (Kelly & Smyth's Table 1), VCE(v*) beside:")
wide = test.select("prob", "label", *calframe.datasets.ADULT_NUMERIC)
rank = calframe.vece_rank(wide, lens="top1")
vce = {}
for v in rank["variable"]:
    try:
        vce[v] = 100 * calframe.vce_curve(wide, v, lens="top1", smoother="loess", n_boot=0).vce
    except calframe.InvalidValueError:  # capital-gain/-loss: ~90% zeros, no LOESS neighbourhood
        vce[v] = None
print(rank.with_columns(vce_pp=pl.col("variable").replace_strict(vce, return_dtype=pl.Float64)))
