"""Binned calibration metrics: calframe against what a user would otherwise write.

Run: ``make bench`` or ``.venv/bin/python benchmarks/bench_binned.py [--rows 10000000] [--repeat 5]``.

Every timing is the best of ``--repeat`` runs or more (at least 1 s of them) after warming up
(_timing.timeit says why), in one process, on the same seeded data. The summary at the end gives each
target's ratio beside the GB/s calframe reaches (the bytes of the columns it reads over its time) and the
machine's memory bandwidth measured here (numpy sum / copy). Each row prints the figure each contender
computed, so the timings compare equal work; peers that are not installed are
reported as missing. Ratios are "peer time / calframe time" (higher = calframe
faster); the targets are from the issue tracker.
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
from _timing import timeit  # benchmarks/_timing.py (the scripts run from benchmarks/ on sys.path)
from calframe._kernels import accumulate as K
from calframe.binning import Binning, bin_values, uniform_edges

BINS = 15



def fmt_value(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        return f"{v:.6f}"
    return str(v)


class Table:
    def __init__(self, title: str, base: str):
        self.title, self.base, self.rows = title, base, []

    def add(self, name: str, seconds: float | None, value: Any = "", note: str = "") -> None:
        self.rows.append((name, seconds, value, note))

    def show(self, targets: dict[str, float] | None = None) -> dict[str, float]:
        base = dict((r[0], r[1]) for r in self.rows)[self.base]
        print(f"\n## {self.title}")
        print(f"{'contender':58s} {'seconds':>9s} {'ratio':>8s} {'target':>7s}  value / note")
        ratios = {}
        for name, sec, value, note in self.rows:
            if sec is None:
                print(f"{name:58s} {'-':>9s} {'-':>8s} {'':>7s}  {note}")
                continue
            ratio = sec / base
            ratios[name] = ratio
            tgt = (targets or {}).get(name)
            mark = "" if tgt is None else (f">={tgt:g}x" + (" ok" if ratio >= tgt else " MISS"))
            print(f"{name:58s} {sec:9.4f} {ratio:7.1f}x {mark:>7s}  {fmt_value(value)} {note}")
        return ratios

    def seconds(self, name: str) -> float:
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


#: the targets of the summary (issue 14): case -> (table, contender, target ratio)
SUMMARY_TARGETS = {
    "ECE, one group": ("relplot binnedECE", 3.0),
    "1e3 groups, int keys": ("pure Polars pipeline (bin, group_by x2)", 3.0),
    "1e3 groups, str keys": ("pure Polars pipeline (bin, group_by x2)", 1.0),
    "1e3 groups, long str keys": ("pure Polars pipeline (bin, group_by x2)", 1.0),
    "1e3 groups, categorical keys": ("pure Polars pipeline (bin, group_by x2)", 1.0),
    "1e5 groups, int keys": ("pure Polars pipeline (bin, group_by x2)", 3.0),
    "1e5 groups, str keys": ("pure Polars pipeline (bin, group_by x2)", None),
}


def summary(results: dict[str, tuple[dict[str, float], float, float]], bandwidth: float) -> None:
    """One line per target: the ratio, and the GB/s calframe reaches (column bytes read / its time)."""
    print(f"\n## Summary: ratios against the targets; measured memory bandwidth {bandwidth:.1f} GB/s")
    print(f"{'case':29s} {'contender':42s} {'ratio':>7s} {'target':>7s} {'calframe':>9s} {'GB/s':>6s} {'of bw':>6s}")
    for case, (ratios, sec, nbytes) in results.items():
        name, target = SUMMARY_TARGETS[case]
        ratio = ratios.get(name)
        shown = "-" if ratio is None else f"{ratio:.1f}x"
        mark = "" if target is None else f">={target:g}x" + ("" if ratio is None else " ok" if ratio >= target else " MISS")
        gbs = nbytes / sec / 1e9
        print(f"{case:29s} {name:42s} {shown:>7s} {mark:>7s} {sec:8.4f}s {gbs:6.1f} {gbs / bandwidth:6.0%}")


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


def bench_ungrouped(n: int, repeat: int) -> dict[str, float]:
    p, y = make_data(n)
    df = pl.DataFrame({"prob": p, "label": y})
    t = Table(f"ECE of {n:,} rows, one group, {BINS} uniform bins (positive-class lens)", "calframe.ece")
    sec, v = timeit(lambda: calframe.ece(df, lens="class:1"), repeat)
    t.add("calframe.ece", sec, v)
    sec, v = timeit(lambda: numpy_bincount_ece(p, y), repeat)
    t.add("numpy bincount", sec, v)
    relplot = try_import("relplot")
    if isinstance(relplot, Exception):
        t.add("relplot binnedECE", None, note=f"not installed ({relplot})")
    else:
        yf = y.astype(np.float64)
        sec, v = timeit(lambda: relplot.metrics.binnedECE(p, yf, nbins=BINS), repeat)
        t.add("relplot binnedECE", sec, v)
    skc = try_import("sklearn.calibration")
    if not isinstance(skc, Exception):
        def sk():
            prob_true, prob_pred = skc.calibration_curve(y, p, n_bins=BINS)
            counts = np.bincount(np.searchsorted(np.linspace(0, 1, BINS + 1)[1:-1], p), minlength=BINS)
            counts = counts[counts > 0]
            return float(np.sum(counts * np.abs(prob_true - prob_pred)) / p.shape[0])
        sec, v = timeit(sk, repeat)
        t.add("scikit-learn calibration_curve + counts", sec, v)
    netcal = try_import("netcal.metrics")
    if isinstance(netcal, Exception):
        t.add("netcal ECE", None, note=f"not installed ({netcal})")
    else:
        ece = netcal.ECE(bins=BINS)
        sec, v = timeit(lambda: ece.measure(p, y.astype(np.int64)), max(1, repeat - 2))
        t.add("netcal ECE", sec, v, "(top-label: max(p, 1-p))")
    tm = try_import("torchmetrics.functional.classification")
    if isinstance(tm, Exception):
        t.add("torchmetrics binary_calibration_error", None, note=f"not installed ({tm})")
    else:
        import torch

        pt, yt = torch.from_numpy(p), torch.from_numpy(y.astype(np.int64))
        sec, v = timeit(lambda: float(tm.binary_calibration_error(pt, yt, n_bins=BINS, norm="l1")), repeat)
        t.add("torchmetrics binary_calibration_error", sec, v, "(top-label)")
    return t.show({"relplot binnedECE": 3, "netcal ECE": 20}), t.seconds("calframe.ece")


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
    sec, v = timeit(lambda: calframe.ece(df, lens="class:1", by="g"), repeat)
    t.add("calframe.ece(by=)", sec, f"mean {v['ece'].mean():.6f}")
    sec, v = timeit(lambda: polars_pipeline(df, "g"), repeat)
    t.add("pure Polars pipeline (bin, group_by x2)", sec, f"mean {v['ece'].mean():.6f}")
    relplot = try_import("relplot")
    pdf = df.to_pandas()
    # per-group Python calls are slow: time them on the first `slow_groups` groups and scale up
    sub_keys = pd.unique(pdf["g"])[: min(slow_groups, n_groups)]
    sub = pdf[pdf["g"].isin(sub_keys)]
    scale = n_groups / len(sub_keys)
    note = "" if scale == 1 else f"(timed on {len(sub_keys):,} groups, x{scale:.0f})"
    if not isinstance(relplot, Exception):
        f = lambda d: relplot.metrics.binnedECE(d["prob"].to_numpy(), d["label"].to_numpy(np.float64), nbins=BINS)
        sec, v = timeit(lambda: sub.groupby("g", sort=False).apply(f, include_groups=False), 1)
        t.add("pandas groupby().apply(relplot binnedECE)", sec * scale, f"mean {v.mean():.6f}", note)
    netcal = try_import("netcal.metrics")
    if not isinstance(netcal, Exception):
        ece = netcal.ECE(bins=BINS)
        f = lambda d: ece.measure(d["prob"].to_numpy(), d["label"].to_numpy(np.int64))
        sec, v = timeit(lambda: sub.groupby("g", sort=False).apply(f, include_groups=False), 1)
        t.add("pandas groupby().apply(netcal ECE)", sec * scale, f"mean {v.mean():.6f}", note + " top-label")
    fairlearn = try_import("fairlearn.metrics")
    if not isinstance(fairlearn, Exception) and not isinstance(relplot, Exception):
        metric = lambda yt, yp: relplot.metrics.binnedECE(np.asarray(yp), np.asarray(yt, dtype=np.float64), nbins=BINS)
        fl_sub = sub_keys[: max(1, len(sub_keys) // 10)]
        fl = pdf[pdf["g"].isin(fl_sub)]
        fl_scale = n_groups / len(fl_sub)

        def run_fairlearn():
            return fairlearn.MetricFrame(
                metrics=metric, y_true=fl["label"], y_pred=fl["prob"], sensitive_features=fl["g"]
            ).by_group

        sec, v = timeit(run_fairlearn, 1)
        t.add("fairlearn MetricFrame(relplot binnedECE)", sec * fl_scale, f"mean {v.mean():.6f}",
              f"(timed on {len(fl_sub):,} groups, x{fl_scale:.0f})")
    fastest_alt = "pure Polars pipeline (bin, group_by x2)"
    targets = {fastest_alt: 3 if key_kind == "int" else 1, "pandas groupby().apply(relplot binnedECE)": 5}
    if n_groups <= 1000:
        targets["fairlearn MetricFrame(relplot binnedECE)"] = 100
    return t.show(targets), t.seconds("calframe.ece(by=)")


# --------------------------------------------------------------------------- 3. equal-mass per group


def bench_equal_mass(n: int, n_groups: int, repeat: int) -> dict[str, float]:
    p, _ = make_data(n, seed=7)
    g = np.random.default_rng(2).integers(0, n_groups, n)
    df = pl.DataFrame({"prob": p, "g": g})
    codes = g.astype(np.int32)
    t = Table(f"Equal-mass bins per group, {n:,} rows, {n_groups:,} groups ({BINS} bins)", "calframe equal_mass bin ids")
    sec, v = timeit(lambda: bin_values(p, codes, n_groups, Binning("equal_mass", BINS)).ids, repeat)
    t.add("calframe equal_mass bin ids", sec, int(v.max()))

    def polars_rank():
        r = pl.col("prob").rank("ordinal").over("g") - 1
        return df.select(((r * BINS) // pl.len().over("g")).alias("bin"))["bin"]

    sec, v = timeit(polars_rank, repeat)
    t.add("Polars rank().over(g)", sec, int(v.max()))

    def numpy_lexsort():
        order = np.lexsort((p, g))
        counts = np.bincount(g, minlength=n_groups)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n) - np.repeat(starts, counts)
        return rank * BINS // counts[g]

    sec, v = timeit(numpy_lexsort, repeat)
    t.add("numpy lexsort", sec, int(v.max()))
    return t.show({"Polars rank().over(g)": 2})


# --------------------------------------------------------------------------- 4. kernel alone, first call


def bench_kernel(n: int, repeat: int) -> None:
    p, y = make_data(n)
    e = uniform_edges(BINS, "left")
    print(f"\n## The accumulate kernel alone ({n:,} rows; target >= 400M rows/s)")
    rng = np.random.default_rng(3)
    for n_groups in (1, 1_000, 100_000):
        g = None if n_groups == 1 else rng.integers(0, n_groups, n).astype(np.int32)
        sec, _ = timeit(lambda: K.accumulate(g, None, p, y.view(np.uint8), None, e, False, n_groups, BINS), repeat)
        print(f"  {n_groups:>7,} groups: {n / sec / 1e6:8.0f}M rows/s ({sec:.4f} s)")


def read_floor(n: int, repeat: int) -> float:
    """Seconds of the least a per-row pass over p (float64) and y (int8) can cost here: a numba loop that only
    adds them, in row order per chunk on all threads, as the fused pass adds its rows (strict floating-point
    order: each chunk's sum is one chain of dependent additions). The moonshot's context."""
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

    p, y = make_data(n)
    sec, _ = timeit(lambda: read_all(p, y, 32), repeat)
    print(f"\n## A numba pass that only reads p and y (adds them in row order, 32 chunks): {sec:.4f} s, "
          f"{n * 9 / sec / 1e9:.1f} GB/s")
    return sec


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
    args = ap.parse_args()
    import numba

    print(f"calframe {calframe.__version__}, numba {numba.__version__} ({numba.get_num_threads()} threads), "
          f"polars {pl.__version__}, pandas {pd.__version__}, numpy {np.__version__}, {os.cpu_count()} cores")
    n = args.rows
    results = {"ECE, one group": (*bench_ungrouped(n, args.repeat), n * 9)}  # float64 p, int8 label
    for n_groups in (1_000, 100_000):
        for kind in ("int", "str", "long str", "categorical") if n_groups == 1_000 else ("int", "str"):
            case = f"1e{len(str(n_groups)) - 1} groups, {kind} keys"
            results[case] = (*bench_grouped(n, n_groups, kind, args.repeat, args.slow_groups),
                             n * (9 + key_bytes(kind, n_groups)))
    bench_equal_mass(args.rows, 1_000, args.repeat)
    bench_kernel(args.rows, args.repeat)
    floor = read_floor(args.rows, args.repeat)
    bench_first_call()
    # the bandwidth is measured last: freeing its 1 GB of arrays kept a core busy (the kernel reclaiming pages)
    # for the next ~0.1 s, which slowed the ungrouped ECE's runs from 15 to 24 ms when it ran first
    bw = memory_bandwidth()
    summary(results, bw)
    print(f"{'(floor: only reading p, y)':29s} {'':42s} {'':>7s} {'':>7s} {floor:8.4f}s {n * 9 / floor / 1e9:6.1f} "
          f"{n * 9 / floor / 1e9 / bw:6.0%}")


if __name__ == "__main__":
    main()
