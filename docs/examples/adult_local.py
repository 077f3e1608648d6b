"""Adult income: local calibration (Luo et al.) and LoRe's effect on group-wise calibration.

Features: the six numeric columns, standardised and reduced to 2 dimensions by PCA
(the paper uses 2-3-d t-SNE embeddings; PCA keeps this example dependency-free).
The paper measures the top label: every figure passes lens="top1" (the default for
a single probability column is the positive class, class:1).
Run: .venv/bin/python docs/examples/adult_local.py [path/to/adult_out.csv]
"""

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl

import calframe
from calframe.api import prepare_features

path = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/variable-wise-calibration/adult_out.csv")
df = pd.read_csv(path, index_col=0)
cal = df.sample(n=2500, replace=False, random_state=0)
test = df.drop(cal.index)
numeric = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
# one PCA map fitted on the calibration rows, applied to both splits
x_cal = cal[numeric].to_numpy(float)
mu, sd = x_cal.mean(0), x_cal.std(0)
_, _, vt = np.linalg.svd((x_cal - mu) / sd, full_matrices=False)


def frame(d: pd.DataFrame) -> pl.DataFrame:
    z = ((d[numeric].to_numpy(float) - mu) / sd) @ vt[:2].T
    sex = np.where(d["sex_ Male"] == 1, "male", "female")
    race = d[[c for c in d.columns if c.startswith("race_")]].to_numpy().argmax(1)
    return pl.DataFrame({"prob": d["prob_1"].to_numpy(), "label": d["actual"].to_numpy(), "e0": z[:, 0],
                         "e1": z[:, 1], "sex": sex, "race": race})


cal_f, test_f = frame(cal), frame(test)
pl.Config.set_float_precision(4)
pl.Config.set_tbl_hide_dataframe_shape(True)

print("MLCE vs gamma (uncalibrated, top-1 lens, 15 bins); MCE is the gamma -> inf limit:")
print(calframe.mlce_curve(test_f, ["e0", "e1"], gammas=[0.01, 0.05, 0.2, 1.0, 10.0, 1e4], lens="top1"))

rows = []
for name, rec in {
    "uncalibrated": None,
    "histogram (15 bins)": calframe.fit(cal_f, "histogram", n_bins=15, lens="top1"),
    "LoRe (gamma 0.2, 5 bins)": calframe.fit(cal_f, "lore", features=["e0", "e1"], gamma=0.2, n_bins=5),
    "LoRe (gamma 0.2, 15 bins)": calframe.fit(cal_f, "lore", features=["e0", "e1"], gamma=0.2, n_bins=15),
}.items():
    out = test_f if rec is None else calframe.apply(test_f, rec, name="p")
    p = "prob" if rec is None else "p"
    rows.append({
        "model": name,
        "ece": calframe.ece(out, prob=p, lens="top1"),
        "mlce_0.2": calframe.mlce(out, ["e0", "e1"], prob=p, gamma=0.2, lens="top1"),
        "max_mce_over_sex": calframe.mce(out, prob=p, by="sex", lens="top1")["mce"].max(),
        "max_mce_over_race": calframe.mce(out, prob=p, by="race", lens="top1")["mce"].max(),
        "max_ece_over_race": calframe.ece(out, prob=p, by="race", lens="top1")["ece"].max(),
    })
print()
print("Group-wise calibration over sensitive attributes before and after recalibration (test rows):")
print(pl.DataFrame(rows))
