"""Spiegelhalter's z and p-value by pycaleva 0.8.2 (``CalibrationEvaluator.z_test``), an implementation calframe did
not write, on the data of tests/test_bias.py; its output is pasted there as ``PYCALEVA``.

pycaleva pulls in statsmodels, IPython and fpdf2, so it is not a test extra: run this script with it on the path,
e.g. ``pip install --target /tmp/pycaleva pycaleva==0.8.2`` and
``PYTHONPATH=/tmp/pycaleva:. python tests/oracles/pycaleva_spiegelhalter.py`` from the repository root.
"""

from __future__ import annotations

import numpy as np

import calframe


def synthetic(seed: int, n: int, power: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The test's synthetic data: p ~ U(0.01, 0.99), y ~ Bernoulli(p^power), a group of three."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.01, 0.99, size=n)
    y = (rng.uniform(size=n) < p**power).astype(np.int64)
    return p, y, rng.integers(0, 3, n)


def z(p: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    from pycaleva import CalibrationEvaluator  # not a test extra: only this script runs it

    r = CalibrationEvaluator(y, p, outsample=True, n_groups=10).z_test()
    return float(r.statistic), float(r.pvalue)


if __name__ == "__main__":
    out = {}
    for seed, power in ((0, 1.0), (1, 1.3)):
        p, y, g = synthetic(seed, 2000, power)
        out[f"synthetic-{seed}"] = z(p, y)
        for k in range(3):
            out[f"synthetic-{seed}-g{k}"] = z(p[g == k], y[g == k])
        w = np.random.default_rng(seed + 10).integers(1, 4, p.size)
        out[f"synthetic-{seed}-repeated"] = z(np.repeat(p, w), np.repeat(y, w))
    adult = calframe.datasets.adult_scored()
    p, y = adult["prob"].to_numpy(), adult["label"].to_numpy()
    out["adult"] = z(p, y)
    for sex in ("Female", "Male"):
        m = (adult["sex"] == sex).to_numpy()
        out[f"adult-{sex}"] = z(p[m], y[m])
    for key, (stat, pv) in out.items():
        print(f"    {key!r}: ({stat!r}, {pv!r}),")
