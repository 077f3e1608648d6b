"""Binned calibration metrics: calframe against what a user would otherwise write.

Run: ``make bench`` or ``.venv/bin/python benchmarks/bench_binned.py [--rows 10000000] [--repeat 5]``
(``--quick``: 1e6 rows; ``--ungrouped``: the ungrouped ECE only, for each label type).

Every contender gets two figures (benchmarks/_timing.py): the **single call** (the contenders of a table
alternating, one warm-up call each, then the best of 3 rounds: each call follows another library's work, as
a user's does; the targets are set on it) and the **hot loop** (its best run of ``--repeat`` or more, over at
least 1 s, after 0.5 s of warm-up: what the code can do when it is all the process does). Every table shows
both, in one process, on the same seeded data. The summary at the end gives each target's ratios beside the
GB/s calframe reaches (the bytes of the columns it reads over its time) and the machine's memory bandwidth
measured here (numpy sum / copy). Each row prints the figure each contender computed, so the timings
compare equal work; peers that are not installed are reported as missing. Ratios are "peer time /
calframe time" (higher = calframe faster); the targets are from the issue tracker.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pandas as pd
import polars as pl

import calframe
from _timing import LEGEND, Timed, both, timeit  # benchmarks/_timing.py (the scripts run from benchmarks/ on sys.path)
from calframe._kernels import accumulate as K
from calframe.binning import Binning, bin_values, uniform_edges

BINS = 15



def fmt_value(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        return f"{v:.6f}"
    return str(v)


class Table:
    """One case's contenders, each with its two figures (benchmarks/_timing.py): the single call (the
    contenders alternating, one warm-up each, best of 3 rounds: what a user sees, and what the targets are
    set on) and the hot loop (best run over >= 1 s after 0.5 s of warm-up)."""

    def __init__(self, title: str, base: str):
        self.title, self.base, self.rows = title, base, []

    def add(self, name: str, timed: Timed | None, value: Any = "", note: str = "") -> None:
        self.rows.append((name, timed, value, note))

    def show(self, targets: dict[str, float] | None = None) -> dict[str, tuple[float, float]]:
        """Print the table; {contender: (single-call ratio, hot-loop ratio)} against the base contender."""
        base = self.timed(self.base)
        print(f"\n## {self.title}")
        print(f"{'contender':50s} {'single s':>9s} {'ratio':>7s} {'hot s':>9s} {'ratio':>7s} {'target':>10s}  "
              f"value / note")
        ratios = {}
        for name, timed, value, note in self.rows:
            if timed is None:
                print(f"{name:50s} {'-':>9s} {'-':>7s} {'-':>9s} {'-':>7s} {'':>10s}  {note}")
                continue
            ratio = (timed.single / base.single, timed.hot / base.hot)
            ratios[name] = ratio
            tgt = (targets or {}).get(name)
            mark = "" if tgt is None else (f">={tgt:g}x" + (" ok" if ratio[0] >= tgt else " MISS"))
            print(f"{name:50s} {timed.single:9.4f} {ratio[0]:6.1f}x {timed.hot:9.4f} {ratio[1]:6.1f}x {mark:>10s}  "
                  f"{fmt_value(value)} {note}")
        return ratios

    def timed(self, name: str) -> Timed:
        return dict((r[0], r[1]) for r in self.rows)[name]


def memory_bandwidth() -> float:
    """The machine's memory bandwidth in GB/s: the best of numpy sums (read) and copies (read + write) of
    a 512 MB array, far larger than any cache."""
    a = np.ones(1 << 26)
    b = np.empty_like(a)
    best = 0.0
    for _ in range(3):
        sec, _ = timeit(lambda: a.sum(), 1)
        best = max(best, a.nbytes / sec)
        sec, _ = timeit(lambda: np.copyto(b, a), 1)
        best = max(best, 2 * a.nbytes / sec)
    return best / 1e9


#: the label types of the ungrouped case: the dtype each is given to calframe as
LABEL_TYPES = {"Int8": pl.Int8, "Int64": pl.Int64, "Boolean": pl.Boolean, "Float64": pl.Float64}

#: the targets of the summary (issues 14 and 33), on the single-call figure: case -> (contender, target ratio)
SUMMARY_TARGETS = {
    **{f"ECE, one group, {t} labels": ("relplot binnedECE", 3.0) for t in LABEL_TYPES},
    "1e3 groups, int keys": ("pure Polars pipeline (bin, group_by x2)", 3.0),
    "1e3 groups, str keys": ("pure Polars pipeline (bin, group_by x2)", 1.5),
    "1e3 groups, long str keys": ("pure Polars pipeline (bin, group_by x2)", 1.0),
    "1e3 groups, categorical keys": ("pure Polars pipeline (bin, group_by x2)", 1.0),
    "1e5 groups, int keys": ("pure Polars pipeline (bin, group_by x2)", 3.0),
    "1e5 groups, str keys": ("pure Polars pipeline (bin, group_by x2)", None),
}


def summary(results: dict[str, tuple[dict[str, tuple[float, float]], Timed, float]], bandwidth: float) -> None:
    """One line per target: the ratios (single call, hot loop), and the GB/s calframe reaches in its single
    call and its hot loop (column bytes read / its time)."""
    print(f"\n## Summary: ratios against the targets (set on the single call); measured memory bandwidth "
          f"{bandwidth:.1f} GB/s")
    print(f"{'case':34s} {'contender':40s} {'single':>7s} {'hot':>6s} {'target':>10s} {'calframe s':>10s} "
          f"{'GB/s':>5s} {'of bw':>5s} {'hot s':>7s} {'GB/s':>5s} {'of bw':>5s}")
    for case, (ratios, timed, nbytes) in results.items():
        name, target = SUMMARY_TARGETS[case]
        ratio = ratios.get(name)
        single, hot = ("-", "-") if ratio is None else (f"{ratio[0]:.1f}x", f"{ratio[1]:.1f}x")
        mark = "" if target is None else f">={target:g}x" + ("" if ratio is None else " ok" if ratio[0] >= target
                                                                else " MISS")
        g1, g2 = nbytes / timed.single / 1e9, nbytes / timed.hot / 1e9
        print(f"{case:34s} {name:40s} {single:>7s} {hot:>6s} {mark:>10s} {timed.single:9.4f}s {g1:5.1f} "
              f"{g1 / bandwidth:5.0%} {timed.hot:6.4f}s {g2:5.1f} {g2 / bandwidth:5.0%}")


def try_import(name: str):
    try:
        return __import__(name, fromlist=["_"])
    except Exception as exc:  # pragma: no cover - depends on the machine
        return exc


# --------------------------------------------------------------------------- data


def make_data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.beta(2.0, 2.0, n)
    y = (rng.random(n) < 0.9 * p + 0.05).astype(np.int8)
    return p, y


# --------------------------------------------------------------------------- 1. ungrouped ECE


def numpy_bincount_ece(p: np.ndarray, y: np.ndarray, bins: int = BINS) -> float:
    b = np.minimum((p * bins).astype(np.int64), bins - 1)
    sp = np.bincount(b, weights=p, minlength=bins)
    sy = np.bincount(b, weights=y, minlength=bins)
    return float(np.abs(sp - sy).sum() / p.shape[0])


def bench_ungrouped(n: int, repeat: int) -> dict[str, tuple[dict[str, tuple[float, float]], Timed]]:
    """The ungrouped ECE, calframe with each label type of LABEL_TYPES against the peers and the read-only
    pass (:func:`read_floor`), all in one interleaved set: {label type: (ratios, calframe's Timed)}."""
    p, y = make_data(n)
    frames = {t: pl.DataFrame({"prob": p, "label": pl.Series(y).cast(dt)}) for t, dt in LABEL_TYPES.items()}
    runs: dict[str, Any] = {f"calframe.ece ({t} labels)": (lambda d=d: calframe.ece(d, lens="class:1"))
                            for t, d in frames.items()}
    runs["numpy bincount"] = lambda: numpy_bincount_ece(p, y)
    missing: dict[str, str] = {}
    relplot = try_import("relplot")
    if isinstance(relplot, Exception):
        missing["relplot binnedECE"] = f"not installed ({relplot})"
    else:
        yf = y.astype(np.float64)
        runs["relplot binnedECE"] = lambda: relplot.metrics.binnedECE(p, yf, nbins=BINS)
    skc = try_import("sklearn.calibration")
    if not isinstance(skc, Exception):
        def sk():
            prob_true, prob_pred = skc.calibration_curve(y, p, n_bins=BINS)
            counts = np.bincount(np.searchsorted(np.linspace(0, 1, BINS + 1)[1:-1], p), minlength=BINS)
            counts = counts[counts > 0]
            return float(np.sum(counts * np.abs(prob_true - prob_pred)) / p.shape[0])
        runs["scikit-learn calibration_curve + counts"] = sk
    netcal = try_import("netcal.metrics")
    if isinstance(netcal, Exception):
        missing["netcal ECE"] = f"not installed ({netcal})"
    else:
        ece = netcal.ECE(bins=BINS)
        y64 = y.astype(np.int64)
        runs["netcal ECE"] = lambda: ece.measure(p, y64)
    tm = try_import("torchmetrics.functional.classification")
    if isinstance(tm, Exception):
        missing["torchmetrics binary_calibration_error"] = f"not installed ({tm})"
    else:
        import torch

        pt, yt = torch.from_numpy(p), torch.from_numpy(y.astype(np.int64))
        runs["torchmetrics binary_calibration_error"] = lambda: float(
            tm.binary_calibration_error(pt, yt, n_bins=BINS, norm="l1"))
    floor = read_floor_fn(p, y)
    runs["numba pass that only reads p, y (floor)"] = floor
    timed = both(runs, repeat)
    notes = {"netcal ECE": "(top-label: max(p, 1-p))", "torchmetrics binary_calibration_error": "(top-label)",
             "numba pass that only reads p, y (floor)": "(adds them in row order, 32 chunks)"}
    out = {}
    for t in LABEL_TYPES:
        base = f"calframe.ece ({t} labels)"
        table = Table(f"ECE of {n:,} rows, one group, {t} labels, {BINS} uniform bins (positive-class lens); "
                      f"ratios to {base}", base)
        for name, tm_ in timed.items():
            table.add(name, tm_, tm_.value, notes.get(name, ""))
        for name, why in missing.items():
            table.add(name, None, note=why)
        out[t] = (table.show({"relplot binnedECE": 3, "netcal ECE": 20}), timed[base])
    print(LEGEND)
    return out


# --------------------------------------------------------------------------- 2. per group


def polars_pipeline(df: pl.DataFrame, key: str) -> pl.DataFrame:
    """The best pure-Polars expression pipeline: bin column, two-level group_by, finalize."""
    b = pl.min_horizontal((pl.col("prob") * BINS).cast(pl.Int32), pl.lit(BINS - 1))
    return (
        df.lazy()
        .group_by(key, b.alias("bin"))
        .agg(pl.len().alias("n"), pl.col("prob").sum().alias("sp"), pl.col("label").sum().alias("sy"))
        .group_by(key)
        .agg(((pl.col("sp") - pl.col("sy")).abs().sum() / pl.col("n").sum()).alias("ece"))
        .collect()
    )


#: the keys of the "long str" case: 18-22 bytes, past the 12 an Arrow string view holds inline
LONG_PREFIX = "customer_segment_"


def key_bytes(kind: str, n_groups: int) -> float:
    """Bytes calframe reads per row for a key: int64 (8); UInt32 codes (4); a string view (16); a long string's
    bytes too."""
    if kind in ("int", "categorical"):
        return 8 if kind == "int" else 4  # int64 keys; a Categorical's UInt32 codes
    return 16 + (len(LONG_PREFIX) + np.mean([len(str(i)) for i in range(n_groups)]) if kind == "long str" else 0)


def bench_grouped(n: int, n_groups: int, key_kind: str, repeat: int, slow_groups: int) -> dict[str, float]:
    p, y = make_data(n, seed=n_groups)
    rng = np.random.default_rng(1)
    codes = rng.integers(0, n_groups, n)
    key = codes if key_kind == "int" else np.char.add(LONG_PREFIX if key_kind == "long str" else "g",
                                                      codes.astype(str)).astype(object)
    df = pl.DataFrame({"prob": p, "label": y, "g": key})
    if key_kind == "categorical":
        df = df.with_columns(pl.col("g").cast(pl.Categorical))
    t = Table(f"ECE per group, {n:,} rows, {n_groups:,} groups ({key_kind} keys), end to end from Polars", "calframe.ece(by=)")
    runs: dict[str, Any] = {"calframe.ece(by=)": lambda: calframe.ece(df, lens="class:1", by="g"),
                            "pure Polars pipeline (bin, group_by x2)": lambda: polars_pipeline(df, "g")}
    relplot = try_import("relplot")
    pdf = df.to_pandas()
    # per-group Python calls are slow: time them on the first `slow_groups` groups and scale up
    sub_keys = pd.unique(pdf["g"])[: min(slow_groups, n_groups)]
    sub = pdf[pdf["g"].isin(sub_keys)]
    scale = {}
    note = "" if n_groups == len(sub_keys) else f"(timed on {len(sub_keys):,} groups, x{n_groups / len(sub_keys):.0f})"
    notes = {}
    if not isinstance(relplot, Exception):
        f = lambda d: relplot.metrics.binnedECE(d["prob"].to_numpy(), d["label"].to_numpy(np.float64), nbins=BINS)
        name = "pandas groupby().apply(relplot binnedECE)"
        runs[name] = lambda: sub.groupby("g", sort=False).apply(f, include_groups=False)
        scale[name], notes[name] = n_groups / len(sub_keys), note
    netcal = try_import("netcal.metrics")
    if not isinstance(netcal, Exception):
        ece = netcal.ECE(bins=BINS)
        g = lambda d: ece.measure(d["prob"].to_numpy(), d["label"].to_numpy(np.int64))
        name = "pandas groupby().apply(netcal ECE)"
        runs[name] = lambda: sub.groupby("g", sort=False).apply(g, include_groups=False)
        scale[name], notes[name] = n_groups / len(sub_keys), note + " top-label"
    fairlearn = try_import("fairlearn.metrics")
    if not isinstance(fairlearn, Exception) and not isinstance(relplot, Exception):
        metric = lambda yt, yp: relplot.metrics.binnedECE(np.asarray(yp), np.asarray(yt, dtype=np.float64), nbins=BINS)
        fl_sub = sub_keys[: max(1, len(sub_keys) // 10)]
        fl = pdf[pdf["g"].isin(fl_sub)]
        name = "fairlearn MetricFrame(relplot binnedECE)"
        runs[name] = lambda: fairlearn.MetricFrame(
            metrics=metric, y_true=fl["label"], y_pred=fl["prob"], sensitive_features=fl["g"]).by_group
        scale[name] = n_groups / len(fl_sub)
        notes[name] = f"(timed on {len(fl_sub):,} groups, x{scale[name]:.0f})"
    # the slow per-group loops: their single call (seconds each) is their figure in both columns
    fast = ("calframe.ece(by=)", "pure Polars pipeline (bin, group_by x2)")
    timed = both(runs, repeat, slow=tuple(k for k in runs if k not in fast))
    for name, tm_ in timed.items():
        k = scale.get(name, 1.0)
        v = tm_.value
        t.add(name, Timed(tm_.hot * k, tm_.single * k, v), f"mean {(v['ece'] if isinstance(v, pl.DataFrame) else v).mean():.6f}",
              notes.get(name, ""))
    fastest_alt = "pure Polars pipeline (bin, group_by x2)"
    targets = {"pandas groupby().apply(relplot binnedECE)": 5}
    target = SUMMARY_TARGETS[f"1e{len(str(n_groups)) - 1} groups, {key_kind} keys"][1]
    if target is not None:
        targets[fastest_alt] = target
    if n_groups <= 1000:
        targets["fairlearn MetricFrame(relplot binnedECE)"] = 100
    return t.show(targets), t.timed("calframe.ece(by=)")


# --------------------------------------------------------------------------- 3. equal-mass per group


def bench_equal_mass(n: int, n_groups: int, repeat: int) -> dict[str, tuple[float, float]]:
    p, _ = make_data(n, seed=7)
    g = np.random.default_rng(2).integers(0, n_groups, n)
    df = pl.DataFrame({"prob": p, "g": g})
    codes = g.astype(np.int32)
    t = Table(f"Equal-mass bins per group, {n:,} rows, {n_groups:,} groups ({BINS} bins)", "calframe equal_mass bin ids")

    def polars_rank():
        r = pl.col("prob").rank("ordinal").over("g") - 1
        return df.select(((r * BINS) // pl.len().over("g")).alias("bin"))["bin"]

    def numpy_lexsort():
        order = np.lexsort((p, g))
        counts = np.bincount(g, minlength=n_groups)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n) - np.repeat(starts, counts)
        return rank * BINS // counts[g]

    runs = {"calframe equal_mass bin ids": lambda: bin_values(p, codes, n_groups, Binning("equal_mass", BINS)).ids,
            "Polars rank().over(g)": polars_rank, "numpy lexsort": numpy_lexsort}
    for name, tm_ in both(runs, repeat).items():
        t.add(name, tm_, int(tm_.value.max()))
    return t.show({"Polars rank().over(g)": 2})


# --------------------------------------------------------------------------- 4. kernel alone


def bench_kernel(n: int, repeat: int) -> None:
    p, y = make_data(n)
    e = uniform_edges(BINS, "left")
    print(f"\n## The accumulate kernel alone ({n:,} rows; target >= 400M rows/s): single call / hot loop")
    rng = np.random.default_rng(3)
    runs = {}
    for n_groups in (1, 1_000, 100_000):
        g = None if n_groups == 1 else rng.integers(0, n_groups, n).astype(np.int32)
        runs[n_groups] = lambda g=g, k=n_groups: K.accumulate(g, None, p, y.view(np.uint8), None, e, False, k, BINS)
    for n_groups, tm_ in both(runs, repeat).items():
        print(f"  {n_groups:>7,} groups: single call {n / tm_.single / 1e6:6.0f}M rows/s ({tm_.single:.4f} s), "
              f"hot loop {n / tm_.hot / 1e6:6.0f}M rows/s ({tm_.hot:.4f} s)")


def read_floor_fn(p: np.ndarray, y: np.ndarray):
    """The least a per-row pass over p (float64) and y (int8) can cost here: a numba loop that only adds them,
    in row order per chunk on all threads, as the fused pass adds its rows (strict floating-point order: each
    chunk's sum is one chain of dependent additions). The moonshot's context."""
    from numba import njit, prange

    @njit(parallel=True)
    def read_all(p, y, nchunks):
        n = p.shape[0]
        step = (n + nchunks - 1) // nchunks
        out = np.zeros(nchunks)
        for c in prange(nchunks):
            s = 0.0
            for i in range(c * step, min(n, (c + 1) * step)):
                s += p[i] + y[i]
            out[c] = s
        return out.sum()

    read_all(p[:10], y[:10], 2)  # compiled here, not in the first timed call
    return lambda: read_all(p, y, 32)


FIRST_CALL = textwrap.dedent(
    """
    import time, numpy as np, polars as pl
    rng = np.random.default_rng(0)
    df = pl.DataFrame({"prob": rng.random(1_000_000), "label": rng.integers(0, 2, 1_000_000)})
    import calframe
    t = time.perf_counter(); calframe.ece(df); print(time.perf_counter() - t)
    """
)


def bench_first_call() -> None:
    out = [float(subprocess.check_output([sys.executable, "-c", FIRST_CALL], text=True).strip()) for _ in range(2)]
    print("\n## First call in a fresh process, 1e6 rows (target <= 1 s, kernels cached on disk)")
    print(f"  first process: {out[0]:.3f} s (may include compiling into the cache), second process: {out[1]:.3f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--slow-groups", type=int, default=1000, help="groups timed for per-group Python loops")
    ap.add_argument("--quick", action="store_true", help="a quick look: 1e6 rows, 100 slow groups, 3 repeats")
    ap.add_argument("--ungrouped", action="store_true", help="the ungrouped ECE only (and the bandwidth)")
    args = ap.parse_args()
    if args.quick:
        args.rows, args.slow_groups, args.repeat = min(args.rows, 1_000_000), min(args.slow_groups, 100), 3
    import numba

    print(f"calframe {calframe.__version__}, numba {numba.__version__} ({numba.get_num_threads()} threads), "
          f"polars {pl.__version__}, pandas {pd.__version__}, numpy {np.__version__}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(LEGEND)
    n = args.rows
    results = {f"ECE, one group, {t} labels": (*r, n * (9 if t in ("Int8", "Boolean") else 16))
               for t, r in bench_ungrouped(n, args.repeat).items()}  # float64 p, the label's bytes
    if not args.ungrouped:
        for n_groups in (1_000, 100_000):
            for kind in ("int", "str", "long str", "categorical") if n_groups == 1_000 else ("int", "str"):
                case = f"1e{len(str(n_groups)) - 1} groups, {kind} keys"
                results[case] = (*bench_grouped(n, n_groups, kind, args.repeat, args.slow_groups),
                                 n * (9 + key_bytes(kind, n_groups)))
        bench_equal_mass(args.rows, 1_000, args.repeat)
        bench_kernel(args.rows, args.repeat)
        bench_first_call()
    # the bandwidth is measured last: freeing its 1 GB of arrays kept a core busy (the kernel reclaiming pages)
    # for the next ~0.1 s, which slowed the ungrouped ECE's runs from 15 to 24 ms when it ran first
    summary(results, memory_bandwidth())


if __name__ == "__main__":
    main()
