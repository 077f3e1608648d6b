"""The netcal MMCE values stored in tests/test_mmce.py, and how they were produced.

netcal (Apache-2.0) pulls in PyTorch, so it is not a test extra: this script is run by hand in a virtualenv of
its own, and tests/test_mmce.py holds what it printed (shared/ORACLES.md: a peer that pulls in PyTorch has its
values stored with the script that produced them). Produced with netcal 1.4.0, torch 2.13.0+cpu, numpy 2.4.6,
polars 2.1.0::

    python3 -m venv /tmp/netcal-venv
    /tmp/netcal-venv/bin/pip install torch==2.13.0 && /tmp/netcal-venv/bin/pip install netcal polars pyarrow
    PYTHONPATH=. /tmp/netcal-venv/bin/python tests/oracles/netcal_mmce.py

netcal's ``MMCE().measure(X, y)`` takes the top label of 2-D input X (confidence ``max(X)``, correctness
``y == argmax(X)``), a Laplacian kernel ``exp(-2.5 |r_i - r_j|)`` (width 0.4) and reports
``sqrt(sum_ij (c_i - r_i)(c_j - r_j) k(r_i, r_j) / N^2)``. Each case below says what calframe call it stands
for. The data: numpy's seeded generators (PCG64, the same streams on every numpy), the CIFAR-10 VGG16 outputs in
tests/data and calframe's bundled Adult data (``calframe.datasets.adult_scored()``). Nothing is imported at
module level but numpy: pytest collects this module for its doctests.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def binary(seed: int = 2018, n: int = 3000) -> tuple[np.ndarray, np.ndarray]:
    """Seeded binary data: p ~ U(0.01, 0.99), y ~ Bernoulli(p^1.4) (overconfident at the top)."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.01, 0.99, n)
    return p, (rng.uniform(size=n) < p**1.4).astype(np.int64)


def ties(seed: int = 7, n: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """Seeded binary data with many ties: p on a grid of 0.05, y ~ Bernoulli(0.8 p + 0.1)."""
    rng = np.random.default_rng(seed)
    p = np.round(rng.uniform(size=n) * 20) / 20
    return p, (rng.uniform(size=n) < 0.8 * p + 0.1).astype(np.int64)


def three_class(seed: int = 3, n: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """Seeded 3-class data: P ~ Dirichlet(0.7, 0.7, 0.7), y drawn from P sharpened (P^2, renormalised)."""
    rng = np.random.default_rng(seed)
    P = rng.dirichlet([0.7, 0.7, 0.7], n)
    Q = P**2 / (P**2).sum(axis=1, keepdims=True)
    return P, (rng.uniform(size=n)[:, None] > Q.cumsum(axis=1)).sum(axis=1).astype(np.int64)


def weighted(seed: int = 11, n: int = 500) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Seeded binary data with integer weights 1..4 (the peer sees each row repeated ``w`` times)."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p**0.7).astype(np.int64)
    return p, y, rng.integers(1, 5, n)


def adult() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """calframe's bundled Adult test split scored by its logistic regression: prob, label, sex."""
    import calframe

    df = calframe.datasets.adult_scored()
    return df["prob"].to_numpy(), df["label"].to_numpy().astype(np.int64), df["sex"].to_numpy()


def top1(P: np.ndarray) -> np.ndarray:
    """Binary probabilities as netcal's 2-D input [1 - p, p]: its top label is calframe's ``lens="top1"``."""
    return np.c_[1 - P, P] if P.ndim == 1 else P


def class1(p: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """calframe's ``class:1`` lens through netcal's top label: rows [p, 0] have confidence p and top label 0, and
    the label 1 - y makes the top label correct exactly when y = 1."""
    return np.c_[p, np.zeros_like(p)], 1 - y


def main() -> dict[str, float]:
    from netcal.metrics import MMCE

    def mmce(X: np.ndarray, y: np.ndarray) -> float:
        return float(MMCE().measure(X, y))

    out: dict[str, float] = {}
    p, y = binary()
    out["binary top1"] = mmce(top1(p), y)
    out["binary class:1"] = mmce(*class1(p, y))
    out["binary netcal 1-d"] = mmce(p, y)  # netcal's own binary mode: confidence p, correctness of p > 0.5
    p, y = ties()
    out["ties top1"] = mmce(top1(p), y)
    out["ties class:1"] = mmce(*class1(p, y))
    P, y = three_class()
    out["three-class top1"] = mmce(P, y)
    p, y, w = weighted()
    out["weighted class:1"] = mmce(*class1(np.repeat(p, w), np.repeat(y, w)))
    out["weighted top1"] = mmce(top1(np.repeat(p, w)), np.repeat(y, w))
    d = np.load(HERE.parent / "data" / "cifar10_vgg16_test_probs.npz")
    out["cifar10 top1"] = mmce(d["probs"].astype(np.float64), d["labels"])
    p, y, sex = adult()
    for s in ("Female", "Male"):
        keep = sex == s
        out[f"adult {s} top1"] = mmce(top1(p[keep]), y[keep])
        out[f"adult {s} class:1"] = mmce(*class1(p[keep], y[keep]))
    return out


if __name__ == "__main__":
    for k, v in main().items():
        print(f"    {k!r}: {v!r},")
