"""docs/statistics.md: what calframe's conclusions mean, with the simulations behind them.

Run from the repository root: ``python benchmarks/statistics_page.py --write docs/statistics.md`` (without
``--write`` the page goes to stdout). ``--seeds`` and ``--n-boot`` trade time for precision; ``--quick`` is a
smoke run (a few seeds).

The page is a list of sections (:data:`SECTIONS`), one function each, returning its Markdown: a new table is a
new function appended there. Every simulation is seeded. Its setting: p ~ U(0, 1), y ~ Bernoulli(p^a), 15
uniform bins, where the population figures are exact (:func:`population_ece`, :func:`population_l2`).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import stats

import calframe
from calframe.request import CI_METHODS

BINS = 15
SIZES = (500, 5_000, 20_000)
POWERS = (1.0, 1.25, 1.6)
LEVEL = 0.95


@dataclass(frozen=True)
class Settings:
    """The command line: seeds per cell, bootstrap draws, the seed of the simulations."""

    seeds: int = 200
    n_boot: int = 100
    base: int = 2024


# --------------------------------------------------------------------------- the simulation setting


def population_ece(a: float, bins: int = BINS) -> float:
    """sum over uniform bins of |int_b (p - p^a) dp| (antiderivative x^2/2 - x^(a+1)/(a+1))."""
    return float(np.abs(_bin_integrals(a, bins)).sum())


def population_l2(a: float, bins: int = BINS) -> float:
    """The population l2 CE on uniform bins: sqrt(sum_b w_b gap_b^2), gap_b = int_b (p - p^a) dp / w_b."""
    w = 1.0 / bins
    return float(np.sqrt((_bin_integrals(a, bins) ** 2 / w).sum()))


def _bin_integrals(a: float, bins: int) -> np.ndarray:
    edges = np.linspace(0.0, 1.0, bins + 1)
    return np.diff(edges ** 2 / 2 - edges ** (a + 1) / (a + 1))


def simulated(a: float, n: int, seeds: int, base: int) -> pl.DataFrame:
    """``seeds`` independent samples of n rows, one group each (column ``seed``)."""
    rng = np.random.default_rng([base, int(round(a * 100)), n])
    p = rng.random(n * seeds)
    return pl.DataFrame({"prob": p, "label": (rng.random(n * seeds) < p ** a).astype(np.int8),
                         "seed": np.repeat(np.arange(seeds), n)})


def lower_bound(k: int, total: int, confidence: float = 0.95) -> float:
    """One-sided exact (Clopper-Pearson) lower confidence bound of a binomial proportion k / total."""
    return 0.0 if k == 0 else float(stats.beta.ppf(1 - confidence, k, total - k + 1))


def cell(k: int, total: int) -> str:
    """``0.955 (>= 0.93)``: the observed proportion and its exact 95% lower bound."""
    return f"{k / total:.3f} (≥ {lower_bound(k, total):.2f})"


# --------------------------------------------------------------------------- sections


def header(s: Settings) -> str:
    return f"""# Statistics that hold up

calframe computes every figure exactly; this page is about what it concludes from them: the intervals
(`ci=`, `ci_method=`) and which group is worst (`disparity`). The binned plug-in calibration error is biased
upward, more so with fewer rows per bin (Kumar, Liang and Ma, *Verified Uncertainty Calibration*, §5), so an
interval or a ranking read off its sampling distribution describes the estimator, not the model. Each claim
below is checked by simulation against a population figure known in closed form.

This page is generated: `python benchmarks/statistics_page.py --write docs/statistics.md` (from the repository root;
this run: {s.seeds} seeds per cell, {s.n_boot} bootstrap draws, {LEVEL:.0%} intervals). The test suite runs
smaller versions of the same simulations (tests/test_intervals.py).

**The setting.** p ~ U(0, 1), y ~ Bernoulli(p^a), {BINS} uniform bins. The population ECE is
sum over bins of |∫ (p - p^a) dp| (antiderivative x²/2 - x^(a+1)/(a+1)): 0 for a = 1 (calibrated),
{population_ece(1.25):.4f} for a = 1.25, {population_ece(1.6):.4f} for a = 1.6. The population l2 CE on the same
bins is sqrt(Σ_b w_b gap_b²): {population_l2(1.25):.4f} and {population_l2(1.6):.4f}.
"""


def methods(s: Settings) -> str:
    return """## What each interval means

`ci=0.95` draws the figure again `n_boot` times under the bootstrap of the rows within each group: from the
moments of its per (group, bin) sums by default, or by resampling the rows and recomputing the whole figure,
bins included, with `bootstrap="rows"` (below, "The bootstrap from moments"; one bootstrap for every figure,
`summary` and `disparity`). Write `e = draw - t` for the bootstrap world's
estimation error, where `t` is the figure's population value in that world, the plug-in figure on the rows,
and `e_lo`, `e_hi` for its 2.5% and 97.5% quantiles. `ci_method=` turns the draws into bounds:

| `ci_method` | bounds | what it is for |
|---|---|---|
| `"symmetric"` (default) | estimate ∓ max(e_hi, -e_lo), clipped at 0 | the population figure. It contains the bias-corrected interval and its mirror image, so it holds where the bootstrap misjudges the bias: where bins are near calibrated, \\|gap\\| is not differentiable and the plug-in's bias depends on the unknown gap. |
| `"bias_corrected"` | [estimate - e_hi, estimate - e_lo], clipped at 0 | the basic (reverse-percentile) bootstrap: the estimate minus the bootstrap's estimate of its bias, with its spread. Shorter; covers less than it claims, at every n (below). |
| `"percentile"` | the 2.5% and 97.5% quantiles of the draws | the plug-in's own sampling distribution (calframe's only interval before `ci_method=`). It sits above the estimate, so for a calibrated model it never reaches 0: an interval for the estimator, not for the model. |

Every result with `ci=` names its method in a `ci_method` column.

Debiased estimators (`estimator="debiased"`, and `ce_debiased` in `summary`) are resampled against the plug-in
figure as `t`, since the bootstrap world's population is the rows themselves; the debiased l2 CE is resampled as
its squared estimate E2, which Kumar et al.'s estimator gives without bias and which can be negative, and the
bounds are mapped back by sqrt(max(·, 0)). That is why its interval reaches 0 for a calibrated model. The
debiased l1 CE (Kumar et al.'s Gaussian resampling) is not unbiased near 0, where |gap| bends, so its own
draws cannot tell a calibrated model from one with a small gap; its lower bound is therefore 0 wherever the E2
interval on the same bins reaches 0: the data do not rule out every bin's gap being 0, which is a CE of 0 for
every p.

A group of one row has no interval: its bounds are NaN, since every resample of it is that row.

`disparity` ranks groups on these intervals: the worst group is the one whose lower bound is highest, the best
the one whose upper bound is lowest. A small group's noise widens its interval, so it is seldom named best. It
can still be named worst: the interval is centred on the plug-in figure, biased upward on few rows per bin by
about the ECE a calibrated model shows on those bins (`calibration_test`'s `noise_ece`), and the lower bound
keeps part of that bias, so a small calibrated group is named worst over larger groups whose ECE is below it.
Against four groups of 2,000 rows with population ECEs 0.026 and 0.052 (`datasets.grouped_miscalibration`), a
calibrated group was named worst in 65% of 40 seeds at 15 rows, 40% at 50, 43% at 100, 18% at 200, 8% at 500
and 3% at 1,000 (`min_n=1`); against a group with ECE 0.115 (a = 1.6), seldom. Groups with fewer than `min_n`
rows (default 50) are listed in `below_min_n`, not ranked, as is, with `ci`, a group of one row (`ranked_on`
names it), and `distinguishable_from_best` lists the groups whose difference to the best has an interval that
excludes 0.

```python
import calframe

df = calframe.datasets.grouped_miscalibration(n=2000, seed=0)
print(calframe.ece(df, ci=0.95, n_boot=200))  # ece, ece_lo, ece_hi, ci_method
print(calframe.ece(df, ci=0.95, n_boot=200, ci_method="percentile")["ece_lo"][0])
```
"""


def _coverage_rows(figure: Callable[..., pl.DataFrame], column: str, population: Callable[[float], float],
                   s: Settings) -> tuple[list[str], list[list[str]]]:
    """One row per (n, a): the coverage of each method (observed, exact lower bound) and the share of
    intervals that reach 0."""
    head = ["n", "a", "population"] + [f"`{m}` coverage" for m in CI_METHODS] + [
        f"`{m}` reaches 0" for m in CI_METHODS]
    rows = []
    for n in SIZES:
        for a in POWERS:
            pop = population(a)
            frame = simulated(a, n, s.seeds, s.base)
            cover, zero = [], []
            for m in CI_METHODS:
                r = figure(frame, by="seed", ci=LEVEL, n_boot=s.n_boot, seed=1, ci_method=m)
                lo, hi = r[f"{column}_lo"].to_numpy(), r[f"{column}_hi"].to_numpy()
                cover.append(cell(int(((lo <= pop + 1e-12) & (pop <= hi)).sum()), s.seeds))
                zero.append(f"{float((lo == 0).mean()):.2f}")
            rows.append([f"{n:,}", f"{a:g}", f"{pop:.4f}", *cover, *zero])
            print(f"  {column} n={n} a={a}: {cover}", file=sys.stderr, flush=True)
    return head, rows


def _table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows]) + "\n"


def coverage_ece(s: Settings) -> str:
    head, rows = _coverage_rows(lambda f, **kw: calframe.ece(f, bins=BINS, **kw), "ece", population_ece, s)
    return f"""## Coverage of the population ECE

The share of {s.seeds} seeded samples whose {LEVEL:.0%} interval of the plug-in ECE (`calframe.ece`, {BINS}
uniform bins) contains the population ECE, with its exact (Clopper-Pearson) 95% lower bound in brackets. For
a = 1 the population ECE is 0, so coverage is the share of intervals that reach 0.

{_table(head, rows)}
The default (`symmetric`) is meant to hold at least 90% at every n for a miscalibrated model; `bias_corrected`
falls short of its 95% at every n, not only where bins hold few rows (n = 500: about 33 rows per bin): about 91%
at 5,000 and 20,000 rows for a = 1.25 here, and 89% at 10,000 rows in a second simulation design. The bootstrap
misjudges the plug-in's bias in the bins whose gap is small beside their noise (at a = 1.25, the ends of [0, 1]),
and more rows shrink those bins' share only slowly. `percentile` misses badly at n = 500 and never
reaches 0 for a calibrated model. The plug-in ECE of a calibrated model is bounded away from 0 by its bias, so
no interval around it reaches 0 reliably: to show a model calibrated, read the debiased figure below (or the
report's verdict).
"""


def _debiased_table(s: Settings, p: int, population: Callable[[float], float]) -> str:
    """The coverage table of the debiased CE_p (uniform bins: the population figure is exact)."""
    def figure(f: pl.DataFrame, **kw: object) -> pl.DataFrame:
        return calframe.ce(f, p=p, estimator="debiased", binning="uniform", bins=BINS, **kw)  # type: ignore[arg-type]

    return _table(*_coverage_rows(figure, "ce", population, s))


def coverage_debiased(s: Settings) -> str:
    return f"""## Coverage of the population l2 CE by the debiased estimator

The same samples, with Kumar et al.'s debiased l2 CE (`calframe.ce(p=2, estimator="debiased",
binning="uniform")`, {BINS} uniform bins, so that the population figure is exact). For a calibrated model
(a = 1) the population figure is 0, so coverage is the share of intervals that reach 0, which should be at
least {LEVEL:.0%} of samples. The resampled E2 is
nearly symmetric around its truth, so `symmetric` and `bias_corrected` agree closely here.

{_debiased_table(s, 2, population_l2)}"""


def coverage_debiased_l1(s: Settings) -> str:
    return f"""## Coverage of the population ECE by the debiased l1 estimator

The same samples, with Kumar et al.'s debiased l1 CE (`calframe.ce(p=1, estimator="debiased",
binning="uniform")`, {BINS} uniform bins): the population figure is the population ECE of the first table.
Its lower bound is 0 where the E2 interval reaches 0 (above), so for a calibrated model it reaches 0 as often
as the l2 one does.

{_debiased_table(s, 1, population_ece)}"""


#: the sizes of the moments' coverage table
MOMENT_SIZES = (200, 500, 5_000, 20_000)


def beta_population_ece(a: float, bins: int = BINS) -> float:
    """Scores ~ Beta(2, 5), y ~ Bernoulli(p^a): sum_b |int_b (p - p^a) f(p) dp| (quadrature)."""
    from scipy import integrate

    f = stats.beta(2, 5).pdf
    edges = np.linspace(0, 1, bins + 1)
    return float(sum(abs(integrate.quad(lambda x: (x - x ** a) * f(x), lo, hi)[0]) for lo, hi in zip(edges, edges[1:])))


def skewed(a: float, n: int, seeds: int, base: int) -> pl.DataFrame:
    """``seeds`` samples of n rows: scores ~ Beta(2, 5) (most mass below 0.3), y ~ Bernoulli(p^a)."""
    rng = np.random.default_rng([base, n, 1])
    p = rng.beta(2, 5, size=n * seeds)
    return pl.DataFrame({"prob": p, "label": (rng.uniform(size=p.size) < p ** a).astype(np.int8),
                         "seed": np.repeat(np.arange(seeds), n)})


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def tempered(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Three classes: logits N(0, 1.5^2); the labels from their softmax, the scores from it at temperature 0.6."""
    logits = rng.normal(size=(n, 3)) * 1.5
    true, shown = _softmax(logits), _softmax(logits / 0.6)
    y = (rng.uniform(size=(n, 1)) > np.cumsum(true, axis=1)).sum(axis=1)
    return shown, true, y


def tempered_population(bins: int = BINS, rows: int = 4_000_000) -> float:
    """The population top-label ECE of :func:`tempered`, by Monte Carlo on ``rows`` rows (4e6: error under 1e-3)."""
    shown, true, _ = tempered(rows, np.random.default_rng(7))
    conf, pred = shown.max(axis=1), shown.argmax(axis=1)
    b = np.minimum((conf * bins).astype(np.int64), bins - 1)
    return float(np.abs(np.bincount(b, conf - true[np.arange(conf.size), pred], bins)).sum() / conf.size)


def tempered_frame(n: int, seeds: int, base: int) -> pl.DataFrame:
    shown, _, y = tempered(n * seeds, np.random.default_rng([base, n, 2]))
    return pl.DataFrame({"p0": shown[:, 0], "p1": shown[:, 1], "p2": shown[:, 2], "label": y,
                         "seed": np.repeat(np.arange(seeds), n)})


def moments(s: Settings) -> str:
    """The bootstrap from moments beside the row bootstrap: coverage of the population ECE, default method."""
    designs = [("U(0, 1), a = 1.25", lambda n: simulated(1.25, n, s.seeds, s.base), {}, population_ece(1.25)),
               ("U(0, 1), a = 1.6", lambda n: simulated(1.6, n, s.seeds, s.base), {}, population_ece(1.6)),
               ("Beta(2, 5), a = 0.8", lambda n: skewed(0.8, n, s.seeds, s.base), {}, beta_population_ece(0.8)),
               ("3 classes, top-label, T = 0.6", lambda n: tempered_frame(n, s.seeds, s.base),
                dict(prob=["p0", "p1", "p2"], label="label", lens="top1"), tempered_population())]
    rows = []
    for name, make, kw, pop in designs:
        for n in MOMENT_SIZES:
            frame = make(n)
            cover = []
            for how in ("moments", "rows"):
                r = calframe.ece(frame, bins=BINS, by="seed", ci=LEVEL, n_boot=s.n_boot, seed=1, bootstrap=how, **kw)
                lo, hi = r["ece_lo"].to_numpy(), r["ece_hi"].to_numpy()
                cover.append(cell(int(((lo <= pop + 1e-12) & (pop <= hi)).sum()), s.seeds))
            rows.append([name, f"{n:,}", f"{pop:.4f}", *cover])
            print(f"  moments {name} n={n}: {cover}", file=sys.stderr, flush=True)
    table = _table(["design", "n", "population ECE", "`bootstrap=\"moments\"`", "`bootstrap=\"rows\"`"], rows)
    return f"""## The bootstrap from moments

`bootstrap="moments"` (the default wherever a call's figures read their rows through per (group, bin) sums)
draws each bin's sums from their law under the row bootstrap instead of resampling the rows: the cells'
(group, bin, label) row counts from their multinomial law exactly, a cell's sum of confidences given its
count from its normal law (mean and variance from the cell's first and second moments), and a cell of fewer
than 32 rows by drawing its own rows. Every random number is a function of (seed, group key, bins, cell,
draw) alone (a counter-based stream, `calframe/_kernels/draws.py`), so every engine, thread count and row order
draws the same bits. It costs a few times what the figure costs (docs/benchmarks.md, "Statistics"). The bins stay the call's, so for
data-dependent bins (quantile, equal-mass, a variable's) it is the bootstrap conditional on the bin edges (its
coverage: "Quantile bins held fixed", below); on quantile and equal-mass bins the LazyFrame, DuckDB, Spark, Ibis
and pyarrow engines find those edges where the rows are and draw the same intervals there.
`bootstrap="rows"` keeps the row bootstrap, which finds the edges again on every resample.

**Weights are frequency weights** (docs/spec.md §8 "Weights"): a row of weight w counts as w rows, each
resampled on its own. A cell's count is then its sum of weights, and one drawn row's confidence follows the
cell's confidences each counted its weight (mean sum w conf / sum w, variance sum w conf^2 / sum w - mean^2),
so every engine sums [sum w, sum w conf, sum w conf^2] per cell in the figure's pass. With integer weights the
draws follow the row bootstrap of the frame with each row repeated w times, and the moment state is that
frame's (tests/test_frequency_weights.py). Non-integer weights use the same formulas; only the exact draws of
small cells need a whole number of rows, and there a group's sum of weights is rounded down or up at random
(its mean kept), at least 1. So weights of 1/2 on a frame repeated twice give the frame's intervals, and
multiplying every weight by c narrows the intervals as repeating every row c times would: weights are
counts, not importance ratios (for those, normalise them so that they sum to the effective number of rows).
The verdict reads weights the same way (below), and `disparity`'s `min_n` compares a group's sum of
weights. `bootstrap="rows"` resamples the rows, each carrying its weight: it is not the frequency bootstrap.

Coverage of the population ECE by the default (`symmetric`) {LEVEL:.0%} interval, {s.seeds} seeds per cell,
{s.n_boot} draws, {BINS} uniform bins, both bootstraps on the same samples (exact 95% lower bound in brackets).
The skewed design puts most scores below 0.3, so its upper bins hold few rows; the multiclass one is the
top-label ECE of an overconfident softmax (its population figure by Monte Carlo on 4e6 rows).

{table}"""


# --------------------------------------------------------------------------- quantile bins held fixed


@dataclass(frozen=True)
class Gap:
    """A design of scores p ~ U(0, 1) and labels y ~ Bernoulli(p - gap(p)): ``cumulative(x)``, the integral of the
    gap from 0 to x in closed form, gives the population ECE on any bins (:func:`ece_on_edges`)."""

    name: str
    frame: Callable[[int, int, int], pl.DataFrame]
    cumulative: Callable[[np.ndarray], np.ndarray]


def sine_gap(n: int, seeds: int, base: int) -> pl.DataFrame:
    """``seeds`` samples of n rows: p ~ U(0, 1), y ~ Bernoulli(p + 0.1 sin(2 pi p)): underconfident below 1/2,
    overconfident above, so the gap changes sign inside the middle bin."""
    rng = np.random.default_rng([base, n, 3])
    p = rng.random(n * seeds)
    return pl.DataFrame({"prob": p, "label": (rng.random(p.size) < p + 0.1 * np.sin(2 * np.pi * p)).astype(np.int8),
                         "seed": np.repeat(np.arange(seeds), n)})


#: the designs of the conditional bootstrap's table: a gap of one sign (its ECE the same on every bins) and one
#: that changes sign (its ECE depends on where the edges fall)
GAPS = (Gap("U(0, 1), a = 1.25", lambda n, k, b: simulated(1.25, n, k, b),
            lambda x: x ** 2 / 2 - x ** 2.25 / 2.25),
        Gap("U(0, 1), frequency p + 0.1 sin(2πp)", sine_gap, lambda x: 0.1 * np.cos(2 * np.pi * x) / (2 * np.pi)))


def ece_on_edges(gap: Gap, edges: np.ndarray) -> float:
    """The population ECE of ``gap``'s design on the bins of ``edges`` (0 and 1 outermost): sum_b |int_b gap|."""
    return float(np.abs(np.diff(gap.cumulative(np.asarray(edges, dtype=np.float64)))).sum())


def sample_edges(frame: pl.DataFrame, bins: int = BINS) -> list[np.ndarray]:
    """Each seed's quantile edges as calframe found them (its reliability table's inner edges), with 0 and 1
    outermost: the bins a row of the population falls in, given the sample."""
    table = calframe.reliability(frame, binning="quantile", bins=bins, by="seed")
    out = []
    for _, g in table.sort("seed", "bin").group_by("seed", maintain_order=True):
        out.append(np.concatenate([[0.0], g["upper"].to_numpy()[:-1], [1.0]]))
    return out


def conditional_rows(s: Settings, sizes: tuple[int, ...] = MOMENT_SIZES, gaps: tuple[Gap, ...] = GAPS
                     ) -> list[list[str]]:
    """Per (design, n): the population ECE on the population's quantile bins (uniform, for U(0, 1) scores), the
    mean distance to it of the population ECE on each sample's own edges, and how often the default 95% interval
    on 15 quantile bins covers it (``bootstrap="moments"``: the edges held fixed; ``"rows"``: found again on each
    resample), and how often the moments' interval covers the population ECE on the sample's own edges (the
    conditional figure)."""
    rows = []
    uniform = np.linspace(0.0, 1.0, BINS + 1)
    for gap in gaps:
        pop = ece_on_edges(gap, uniform)
        for n in sizes:
            frame = gap.frame(n, s.seeds, s.base)
            given = np.array([ece_on_edges(gap, e) for e in sample_edges(frame)])
            bounds = {}
            for how in ("moments", "rows"):
                r = calframe.ece(frame, bins=BINS, binning="quantile", by="seed", ci=LEVEL, n_boot=s.n_boot, seed=1,
                                 bootstrap=how)
                bounds[how] = r["ece_lo"].to_numpy(), r["ece_hi"].to_numpy()
            cover = []
            for how, target in (("moments", pop), ("moments", given), ("rows", pop)):
                lo, hi = bounds[how]
                cover.append(cell(int(((lo <= target + 1e-12) & (target <= hi)).sum()), s.seeds))
            rows.append([gap.name, f"{n:,}", f"{pop:.4f}", f"{np.abs(given - pop).mean():.4f}", *cover])
            print(f"  quantile {gap.name} n={n}: {cover}", file=sys.stderr, flush=True)
    return rows


def conditional(s: Settings) -> str:
    """The bootstrap from moments on quantile bins, the edges held fixed: coverage beside the row bootstrap."""
    table = _table(["design", "n", "population ECE", "mean \\|ECE on the sample's edges - it\\|",
                    "`moments`, edges fixed", "`moments`: the ECE on the sample's edges",
                    "`rows`, edges found per draw"], conditional_rows(s))
    return f"""## Quantile bins held fixed

On quantile and equal-mass bins (and `ace`), `bootstrap="moments"` keeps the bins the call found on its rows
and draws every bin's sums as above: it is the bootstrap **conditional on the bin edges**. It leaves out the
edges' own sampling noise, which `bootstrap="rows"` keeps by finding the edges again on every resample. This is
what lets the LazyFrame, DuckDB, Spark, Ibis and pyarrow engines draw these intervals where the rows are (the
edges by exact order statistics in their own engine, then the moments of those bins: docs/engines.md), with
eager Polars' bounds (to rounding: eager sums its moments as floats, the engines exactly).

Coverage of the default (`symmetric`) {LEVEL:.0%} interval of `calframe.ece(binning="quantile")`, {BINS} bins,
{s.seeds} seeds per cell, {s.n_boot} draws (exact 95% lower bound in brackets). The scores are U(0, 1), so the
population's quantile bins are the uniform bins and the population ECE is in closed form; "the ECE on the
sample's edges" is the population ECE on the bins of each sample's own edges (the figure the conditional
bootstrap is about, also in closed form). In the first design the gap has one sign, so every set of bins has
the same population ECE; in the second it changes sign at 1/2, inside the middle bin, where the over- and
underconfident rows cancel, so the population ECE on a sample's edges depends on where they fall (by the
amounts of the fourth column, far less than the intervals' width). At n = 200 (13 rows per bin) both
bootstraps fall short of 95% as on uniform bins ("The bootstrap from moments", above).

{table}"""


def verdict(s: Settings) -> str:
    """The verdict's false-alarm and power tables, n = 50 to 1e5 (benchmarks/_verdict_tables.py)."""
    import _verdict_tables  # benchmarks/ is on sys.path (the script's folder)

    return _verdict_tables.section(scale=0.1 if s.seeds < 50 else 1.0)


#: the page, in order: each section a function of the settings returning Markdown
SECTIONS: list[Callable[[Settings], str]] = [header, methods, coverage_ece, coverage_debiased, coverage_debiased_l1,
                                             moments, conditional, verdict]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", metavar="PATH", help="write the page there (default: stdout)")
    ap.add_argument("--seeds", type=int, default=Settings.seeds)
    ap.add_argument("--n-boot", type=int, default=Settings.n_boot)
    ap.add_argument("--quick", action="store_true", help="a smoke run: 10 seeds, 30 draws")
    args = ap.parse_args(argv)
    s = Settings(10, 30) if args.quick else Settings(args.seeds, args.n_boot)
    t0 = time.perf_counter()
    page = "\n".join(section(s) for section in SECTIONS)
    print(f"done in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    if args.write:
        with open(args.write, "w", encoding="utf-8") as fh:
            fh.write(page)
    else:
        print(page)


if __name__ == "__main__":
    main()
