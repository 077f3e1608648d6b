"""docs/statistics.md, "The verdict": what calframe.calibration_test's verdict means, and its false-alarm and power
table from 50 to 100,000 rows, by simulation against population ECEs in closed form.

``section()`` returns the Markdown section (benchmarks/statistics_page.py calls it); run this file to print it, or
``--out PATH`` to write it:

    PYTHONPATH=. python benchmarks/_verdict_tables.py [--groups-scale 1.0] [--seed 0] [--out section.md]

p ~ U(0, 1) and y ~ Bernoulli(f(p)) with 15 uniform bins, where the population ECE is
sum_b |int_b (p - f(p)) dp|: f(p) = p^a (a = 1: 0; a = 1.05: 0.0122; a = 1.1277: 0.0300, the null's boundary;
a = 1.25: 0.0556), or the boundary model that puts the whole tolerance in one bin (f = p + 0.45 in bin 8 of 15,
p elsewhere: ECE 0.0300). The size of the "calibrated" side from 1 to 5,000 rows: every row's frequency its
prediction plus or minus 0.03 (``GAP_DESIGNS``), so that the population ECE given the predictions is 0.03.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
import polars as pl
from scipy.optimize import brentq
from scipy.stats import binom

import calframe

BINS = 15
TOL = 0.03
SIZES = (50, 150, 500, 2_000, 5_000, 20_000, 100_000)
#: groups simulated per size (times --groups-scale): rows x groups kept near a few million per scenario
GROUPS = {50: 400, 150: 400, 500: 400, 2_000: 200, 5_000: 100, 20_000: 40, 100_000: 20}


def population_ece(f_integral, bins: int = BINS) -> float:
    """sum_b |int_b (p - f(p)) dp| for f given by its antiderivative ``f_integral``."""
    e = np.linspace(0.0, 1.0, bins + 1)
    return float(np.sum(np.abs((e[1:] ** 2 - e[:-1] ** 2) / 2 - (f_integral(e[1:]) - f_integral(e[:-1])))))


def power_ece(a: float) -> float:
    return population_ece(lambda x: x ** (a + 1) / (a + 1))


#: a with population ECE exactly at the tolerance (the null's boundary, gaps spread over all bins)
A_BOUNDARY = brentq(lambda a: power_ece(a) - TOL, 1.0, 1.25)


def one_bin_ece(shift: float = 0.45, b: int = 7) -> float:
    """The population ECE when the frequency is p + shift in bin b (0-based) and p elsewhere: shift / BINS."""
    lo, hi = b / BINS, (b + 1) / BINS
    return float(shift * (hi - lo)) if hi + shift <= 1 else math.nan


SCENARIOS = [  # (name, population ECE, frequency given p)
    ("calibrated", power_ece(1.0), lambda p: p),
    ("ECE 0.0122 (a = 1.05)", power_ece(1.05), lambda p: p ** 1.05),
    (f"ECE 0.030, spread (a = {A_BOUNDARY:.4f})", power_ece(A_BOUNDARY), lambda p: p ** A_BOUNDARY),
    ("ECE 0.030, one bin", one_bin_ece(), lambda p: np.where(np.floor(p * BINS) == 7, p + 0.45, p)),
    ("ECE 0.0556 (a = 1.25)", power_ece(1.25), lambda p: p ** 1.25),
]


def _frame(freq, scale: float, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    parts = []
    for n in SIZES:
        k = max(1, round(GROUPS[n] * scale))
        p = rng.random(n * k)
        y = (rng.random(n * k) < np.clip(freq(p), 0, 1)).astype(np.int8)
        parts.append(pl.DataFrame({"prob": p, "label": y, "size": np.full(n * k, n), "g": np.repeat(np.arange(k), n)}))
    return pl.concat(parts)


def rates(scale: float = 1.0, seed: int = 0, methods: tuple[str, ...] = ("boundary", "bound")) -> pl.DataFrame:
    """One row per (scenario, method, size): groups, the share called "not calibrated" and "calibrated"."""
    out = []
    for i, (name, ece, freq) in enumerate(SCENARIOS):
        df = _frame(freq, scale, seed + i)
        for method in methods:
            t = calframe.calibration_test(df, by=["size", "g"], tolerance=TOL, method=method, seed=seed)
            out.append(t.group_by("size", maintain_order=True).agg(
                groups=pl.len(), not_calibrated=(pl.col("verdict") == "not calibrated").mean(),
                calibrated=(pl.col("verdict") == "calibrated").mean()).with_columns(
                scenario=pl.lit(name), population_ece=pl.lit(ece), method=pl.lit(method)))
    return pl.concat(out).select("scenario", "population_ece", "method", "size", "groups", "not_calibrated",
                                 "calibrated")


#: (name, prediction range, the gap every row's frequency has): population ECE exactly TOL given the predictions
GAP_DESIGNS = [("p = 0.01, frequency p + 0.03", (0.01, 0.01), TOL),
               ("p ~ U(0, 0.97), frequency p + 0.03", (0.0, 1 - TOL), TOL),
               ("p ~ U(0.98, 1), frequency p - 0.03", (0.98, 1.0), -TOL)]
GAP_SIZES = (1, 2, 5, 20, 100, 1_000, 5_000)
GAP_GROUPS = {1: 1000, 2: 1000, 5: 1000, 20: 1000, 100: 1000, 1_000: 400, 5_000: 100}


def gap_rates(scale: float = 1.0, seed: int = 0) -> pl.DataFrame:
    """The share of groups called "calibrated" where every row's gap is exactly the tolerance (H0' true): one row
    per (design, size)."""
    out = []
    for d, (name, (lo, hi), gap) in enumerate(GAP_DESIGNS):
        rng = np.random.default_rng([seed, 100 + d])
        parts = []
        for n in GAP_SIZES:
            k = max(1, round(GAP_GROUPS[n] * scale))
            p = rng.uniform(lo, hi, n * k)
            parts.append(pl.DataFrame({"prob": p, "label": (rng.random(n * k) < p + gap).astype(np.int8),
                                       "size": np.full(n * k, n), "g": np.repeat(np.arange(k), n)}))
        t = calframe.calibration_test(pl.concat(parts), by=["size", "g"], tolerance=TOL, seed=seed)
        out.append(t.group_by("size", maintain_order=True).agg(
            groups=pl.len(), calibrated=(pl.col("verdict") == "calibrated").mean()).with_columns(design=pl.lit(name)))
    return pl.concat(out)


def _gap_table(r: pl.DataFrame) -> str:
    head = "| design | " + " | ".join(f"{n:,} row{'s' if n > 1 else ''}" for n in GAP_SIZES) + " |\n|---|" + "---:|" * len(GAP_SIZES) + "\n"
    body = []
    for name, _, _ in GAP_DESIGNS:
        cells = r.filter(pl.col("design") == name)
        by = dict(zip(cells["size"], cells["calibrated"]))
        body.append(f"| {name} | " + " | ".join(_pct(by[n]) for n in GAP_SIZES) + " |")
    return head + "\n".join(body) + "\n"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _table(r: pl.DataFrame, method: str, column: str) -> str:
    names = [s[0] for s in SCENARIOS]
    head = "| rows | groups | " + " | ".join(names) + " |\n|" + "---:|" * (len(names) + 2) + "\n"
    body = []
    for n in SIZES:
        cells = r.filter((pl.col("method") == method) & (pl.col("size") == n))
        by = dict(zip(cells["scenario"], cells[column]))
        body.append(f"| {n:,} | {cells['groups'][0]} | " + " | ".join(_pct(by[s]) for s in names) + " |")
    return head + "\n".join(body) + "\n"


def section(scale: float = 1.0, seed: int = 0) -> str:
    """The Markdown section "The verdict" of docs/statistics.md, with freshly simulated tables."""
    start = time.perf_counter()
    r = rates(scale, seed)
    g = gap_rates(scale, seed)
    took = time.perf_counter() - start
    gap_bound = {n: binom.ppf(0.999, max(1, round(GAP_GROUPS[n] * scale)), 0.05) / max(1, round(GAP_GROUPS[n] * scale))
                 for n in GAP_SIZES}
    bound = {n: binom.ppf(0.999, max(1, round(GROUPS[n] * scale)), 0.05) / max(1, round(GROUPS[n] * scale))
             for n in SIZES}
    noise = ", ".join(f"{_pct(bound[n])} at {n:,} rows" for n in SIZES)
    return f"""## The verdict

`calframe.calibration_test` (and every verdict of `calframe report`) answers "is this group calibrated, within a
tolerance?" as a test at level `alpha` (default 5%) of the **population** ECE, not of the estimate:

- **not calibrated**: the data reject H0 "population ECE <= tolerance" (`p_not_calibrated <= alpha`);
- **calibrated**: the data reject H0' "population ECE >= tolerance" (`p_calibrated <= alpha`);
- **undecided**: neither; more rows would decide.

The statistic is the plug-in binned ECE T (what `calframe.ece` returns). It is biased upward when bins hold few
rows: a perfectly calibrated model shows T of about 0.08 on 150 rows in 15 bins (`noise_ece`; a group whose
`noise_ece` reaches the tolerance is marked `small`). The old rule, "the lower bound of T's percentile interval
is above the tolerance", therefore called calibrated groups miscalibrated: 92% of groups of 644 rows, all of 150.

Both p-values come from simulating labels bin by bin, given the rows' bins and mean predictions (consistency
resampling, Bröcker & Smith 2007), with the bin frequencies of a model whose population gaps are known. With
`weights=` (frequency weights) a bin's binomial noise has its sum of weights as its number of rows (rounded to
the nearest whole number, at least 1): integer weights give the verdicts and p-values of the frame with each row
repeated w times (tests/test_frequency_weights.py), so `noise_ece` and `small` count weight, not rows.

- `p_not_calibrated` (`method="boundary"`, the default): T's law under the model **on the null's boundary
  nearest the data**: bin b's frequency is conf_b + delta_b with sum_b w_b |delta_b| = tolerance, the
  tolerance spread over the bins in proportion to their debiased squared gaps max(d_b^2 - 2 s_b^2, 0) (Kumar et
  al. 2019's per-bin debiasing of the squared gap d_b, s_b^2 its variance), with the gaps' signs. The plug-in's
  bias is largest when the gap sits in few bins, which is why the mass follows the squared gap. In a `small`
  group (the data cannot locate a gap), or when no bin's gap stands out of its noise, the bound below is used
  (column `test` says which).
- `p_not_calibrated` (`method="bound"`): valid for every model in the null, from |delta + e| <= |delta| + |e|:
  T <= ECE + T0 with T0 the ECE of pure noise, so P(T >= t) <= P(T0 >= t - tolerance). It is exact only when
  the whole tolerance sits in one bin of negligible weight, and conservative elsewhere (less power).
- `p_calibrated`: from |delta + e| >= |delta| + sign(delta) e, T >= ECE + S with S = sum_b w_b sign_b e_b, so
  P(T <= t) <= P(S <= t - tolerance) for every model with ECE >= tolerance. S's law depends on the bins' true
  frequencies, and, where a bin holds few rows of one label, on the signs too (Bernoulli noise is skewed there).
  The bound is therefore taken over a confidence set for the frequencies (Berger & Boos 1994: `p_calibrated` is
  0.001 plus the bound's largest value over a set that holds them with probability 0.999): a bin with fewer than
  10 rows of one label gets a law below its noise, of either sign, at every frequency of its Clopper-Pearson
  interval (exact); the other bins their binomial noise, scaled so that the variance of their sum is at its upper
  confidence bound (a normal approximation). An estimate at or above the tolerance gives `p_calibrated` = 1.
  The earlier simulation drew S with symmetric noise at the frequency nearer 1/2 of conf_b and acc_b: it called
  a single row with p = 0.01 and y = 0 calibrated (`p_calibrated` 0.0005), and, where the true gap equals the
  tolerance, 96% of groups of one row and 83% of five rows with p = 0.01, 45% of 20 rows, 22% of 100.

T-Cal (Lee, Huang, Hassani & Dobriban 2022) tests the null "calibrated" (ECE = 0) with the debiased l2 ECE;
the verdict's null is a tolerance, hence the boundary model. The bootstrap intervals in the report (symmetric,
as `options.ci_method` in its JSON says) describe the figure's spread; the verdict does not come from them.

### False alarms and power

Share of groups called **not calibrated** (tolerance {TOL}, alpha 5%, 15 bins, default `method="boundary"`).
The first four columns are inside the null (ECE <= 0.03): there, the share is the false-alarm rate (for the two
at ECE = 0.03 exactly, on the null's boundary, the test's size). The last column is outside: the share is the
power. Monte Carlo noise: with the groups simulated per size, a true rate of 5% shows as at
most {noise} (99.9% binomial bound).

{_table(r, "boundary", "not_calibrated")}
The boundary model fits the data's spread of the gap; a null model that hides the whole tolerance in one bin
of weight 1/15 (column "one bin") is the hardest for it. With `method="bound"` the size holds for every null
model, at the cost of power:

{_table(r, "bound", "not_calibrated")}
Share of groups called **calibrated** (the same simulations): "calibrated" needs the data to rule out an ECE
of 0.03, which a calibrated group's rows do from about 5,000 rows on; smaller groups are undecided. For the
two columns at ECE = 0.03 the share is the size of this side of the test.

{_table(r, "boundary", "calibrated")}
The size of this side at every group size: the share called **calibrated** where every row's frequency is its
prediction plus or minus 0.03, so that the population ECE given the predictions is exactly the tolerance (H0'
holds). Groups per size: {", ".join(f"{max(1, round(GAP_GROUPS[n] * scale)):,}" for n in GAP_SIZES)}; a true rate of 5% shows as at
most {", ".join(_pct(gap_bound[n]) for n in GAP_SIZES)} (99.9% binomial bound). Few rows cannot show a
gap below the tolerance, and the test does not claim they do.

{_gap_table(g)}
Generated by `benchmarks/_verdict_tables.py` (seed {seed}, {took:.0f} s on this machine).
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--groups-scale", type=float, default=1.0, help="groups per size times this (default 1)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", help="write the section here (default: print it)")
    args = ap.parse_args(argv)
    text = section(args.groups_scale, args.seed)
    if args.out:
        Path(args.out).write_text(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
