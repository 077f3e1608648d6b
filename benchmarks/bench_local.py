"""Benchmark: exact LCE kernels (calframe._kernels.local) vs a chunked numpy formula.

    python benchmarks/bench_local.py [--quick]

Seeded data: features N(0, 1), 15 confidence bins, LCE over the frame itself
(every row is a query and a reference row), so the number of kernel
evaluations is sum_b n_b^2.  "numpy" evaluates the same exact formula with
pairwise L1 distances in chunks (min-distance shift, exp, weighted sums); on
the large cases it runs on a subsample and its evaluations/s are used for the
ratio.  "hot s" is the best of a few runs after a warm-up (compile) call;
"cpu s" is the process CPU time of that run (on a shared machine the wall
time also counts other processes' load). "single s" is the single call
(benchmarks/_timing.interleaved: calframe and numpy alternating, one warm-up
each, best of 3 rounds), the figure a user sees; its ratio to numpy is "x np 1".
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np

from _timing import LEGEND, interleaved  # benchmarks/_timing.py (the scripts run from benchmarks/ on sys.path)
from calframe._kernels import local as L

N_BINS = 15


def numpy_lce(X, conf, correct, bins, gamma, budget=4_000_000):
    """Exact LCE with pairwise distances in chunks of ~budget floats."""
    n, d = X.shape
    h = d * gamma
    v = conf - correct
    out = np.empty(n)
    for b in np.unique(bins):
        idx = np.flatnonzero(bins == b)
        Xb = X[idx]
        vb = v[idx]
        step = max(1, budget // (len(idx) * d))
        for s in range(0, len(idx), step):
            q = idx[s:s + step]
            D = np.abs(X[q, None, :] - Xb[None, :, :]).sum(-1)
            D -= D.min(1, keepdims=True)
            np.exp(D * (-1.0 / h), out=D)
            out[q] = np.abs(D @ vb) / D.sum(1)
    return out


def data(n, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    conf = rng.uniform(0.5, 1.0, n)
    correct = (rng.uniform(size=n) < conf ** 1.5).astype(float)
    bins = np.minimum(((conf - 0.5) * 2 * N_BINS).astype(int), N_BINS - 1)
    return X, conf, correct, bins


def evals(bins):
    c = np.bincount(bins)
    return float(np.sum(c.astype(float) ** 2))


def best_time(f, reps):
    """Best wall time of reps runs, and the process CPU time of that run."""
    best = (np.inf, np.inf)
    for _ in range(reps):
        c = time.process_time()
        t = time.perf_counter()
        f()
        best = min(best, (time.perf_counter() - t, time.process_time() - c))
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller sizes")
    args = ap.parse_args()
    q = args.quick
    # (label, n, d, gamma, method, target evals/s or None, numpy subsample size)
    cases = [
        ("brute d=2", 15_000 if q else 40_000, 2, 0.2, "brute", 5e8, 6_000),
        ("brute d=10", 10_000 if q else 25_000, 10, 0.4, "brute", 1.3e8, 4_000),
        ("brute d=50", 6_000 if q else 12_000, 50, 0.4, "brute", 4.5e7, 2_000),
        ("direct d=10", 6_000 if q else 12_000, 10, 0.4, "direct", None, 4_000),
        ("tree d=1", 1_000_000, 1, 0.2, "auto", None, 6_000),
        ("tree d=2", 1_000_000, 2, 0.2, "auto", None, 6_000),
        ("tree d=2 g=0.01", 1_000_000, 2, 0.01, "auto", None, 6_000),
        ("tree d=3", 300_000 if q else 1_000_000, 3, 0.2, "auto", None, 6_000),
        ("brute d=3", 60_000, 3, 0.2, "brute", None, 6_000),
        ("tree d=3 60k", 60_000, 3, 0.2, "tree", None, 6_000),
    ]
    print(f"numba threads: {numba.get_num_threads()}")
    print(LEGEND)
    hdr = (f"{'case':<17}{'rows':>9}{'d':>4}{'gamma':>7}{'single s':>9}{'x np 1':>8}{'hot s':>9}{'cpu s':>8}"
           f"{'evals/s':>11}{'numpy ev/s':>12}{'x numpy':>10}  target")
    print(hdr)
    print("-" * len(hdr))
    for label, n, d, gamma, method, target, n_np in cases:
        X, conf, correct, bins = data(n, d)
        L.lce(X[:500], conf[:500], correct[:500], bins[:500], gamma, method=method)  # compile
        t, cpu = best_time(lambda: L.lce(X, conf, correct, bins, gamma, method=method),
                           2 if n > 1e5 else 3)
        ev = evals(bins)
        # numpy on a subsample (same formula), and an exactness check there
        s = slice(0, min(n, n_np))
        tn = best_time(lambda: numpy_lce(X[s], conf[s], correct[s], bins[s], gamma), 1)[0]
        evn = evals(bins[s]) / tn
        one = interleaved({"calframe": lambda: L.lce(X, conf, correct, bins, gamma, method=method),
                           "numpy": lambda: numpy_lce(X[s], conf[s], correct[s], bins[s], gamma)})
        t1, tn1 = one["calframe"][0], one["numpy"][0]
        err = np.max(np.abs(numpy_lce(X[s], conf[s], correct[s], bins[s], gamma)
                            - L.lce(X[s], conf[s], correct[s], bins[s], gamma, method=method)))
        assert err < 1e-12, err
        note = ""
        if target:
            note = f">= {target:.1e}/s " + ("ok" if ev / t >= target else "MISSED")
        elif n >= 1_000_000 and d == 2:
            note = "< 1 s " + ("ok" if t < 1.0 else "MISSED")
        print(f"{label:<17}{n:>9}{d:>4}{gamma:>7}{t1:>9.3f}{(ev / t1) / (evals(bins[s]) / tn1):>8.0f}{t:>9.3f}{cpu:>8.2f}{ev / t:>11.2e}{evn:>12.2e}"
              f"{(ev / t) / evn:>10.0f}  {note}", flush=True)


if __name__ == "__main__":
    main()
