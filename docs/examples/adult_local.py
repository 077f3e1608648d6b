"""Adult income: local calibration (Luo et al.) and LoRe's effect on group-wise calibration.

The model: a logistic regression fitted on UCI Adult's training split and scored
on its test split (calframe.datasets.adult_scored: the data ships with calframe,
CC BY 4.0); 2,500 test rows recalibrate, the other 13,781 measure.
Features: the six numeric columns, standardised and reduced to 2 dimensions by PCA
(the paper uses 2-3-d t-SNE embeddings; PCA keeps this example dependency-free).
The paper measures the top label: every figure passes lens="top1" (the default for
a single probability column is the positive class, class:1).
Run: .venv/bin/python docs/examples/adult_local.py
"""

import numpy as np
import polars as pl

import calframe

df = calframe.datasets.adult_scored()
is_cal = np.zeros(df.height, dtype=bool)
is_cal[np.random.default_rng(0).choice(df.height, size=2500, replace=False)] = True
numeric = list(calframe.datasets.ADULT_NUMERIC)
# one PCA map fitted on the calibration rows, applied to both splits
x_cal = df.filter(pl.Series(is_cal)).select(numeric).to_numpy().astype(float)
mu, sd = x_cal.mean(0), x_cal.std(0)
_, _, vt = np.linalg.svd((x_cal - mu) / sd, full_matrices=False)
z = ((df.select(numeric).to_numpy().astype(float) - mu) / sd) @ vt[:2].T
df = df.select("prob", "label", "sex", "race").with_columns(e0=z[:, 0], e1=z[:, 1])
cal_f, test_f = df.filter(pl.Series(is_cal)), df.filter(pl.Series(~is_cal))
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
