"""Seeded generators of scored frames for examples, demos, tests and benchmarks."""

from __future__ import annotations

import numpy as np
import polars as pl

from .metrics import check_seed

#: slope of the true probability around 0.5 in each region (1 = calibrated)
REGION_SLOPE = {"north": 0.6, "south": 1.4, "east": 0.8, "west": 1.2}


def grouped_miscalibration(n: int = 20_000, seed: int = 0, age_shift: float = 0.0) -> pl.DataFrame:
    """A binary model that is calibrated overall but not within regions.

    Scores ``prob`` are drawn in [0.15, 0.85]; in region r the true
    probability of ``label == 1`` is ``0.5 + slope[r] * (prob - 0.5)`` with
    slopes 0.6 (north: over-confident), 1.4 (south: under-confident), 0.8
    (east) and 1.2 (west). The regions are equally likely, so the slopes
    average to 1 and ``P(label = 1 | prob) = prob`` overall, while every
    region is miscalibrated. ``age`` (18-80) and ``device`` are extra
    columns that carry no miscalibration, unless ``age_shift`` > 0 adds
    ``age_shift * tanh((49 - age) / 10)`` to the true probability (the model
    under-rates the young and over-rates the old; symmetric in age, so still
    calibrated overall), which is what recalibrating along age can fix.

    Examples
    --------
    >>> import calframe
    >>> df = calframe.datasets.grouped_miscalibration(n=1000, seed=0)
    >>> df.columns
    ['prob', 'label', 'region', 'age', 'device']
    """
    rng = np.random.default_rng(check_seed("datasets.grouped_miscalibration", seed))
    regions = np.array(list(REGION_SLOPE))
    r = rng.integers(0, len(regions), n)
    prob = 0.15 + 0.7 * rng.beta(2.0, 2.0, n)
    slope = np.array(list(REGION_SLOPE.values()))[r]
    u = rng.random(n)
    age = rng.integers(18, 81, n)
    true = 0.5 + slope * (prob - 0.5) + age_shift * np.tanh((49.0 - age) / 10.0)
    label = (u < true).astype(np.int8)
    device = np.array(["mobile", "desktop", "tablet"])[rng.integers(0, 3, n)]
    return pl.DataFrame(
        {"prob": prob, "label": label, "region": regions[r], "age": age, "device": device}
    )


def multiclass(n: int = 10_000, k: int = 10, temperature: float = 1.5, seed: int = 0) -> pl.DataFrame:
    """A K-class model that is over-confident by ``temperature``.

    True class probabilities are a softmax of Gaussian logits; labels are
    drawn from them; the model reports the softmax of the logits multiplied
    by ``temperature`` (> 1: over-confident). Columns: ``probs``
    (``Array(Float64, k)``), ``label`` (int) and ``group`` (``"a"``/``"b"``).

    Examples
    --------
    >>> import calframe
    >>> calframe.datasets.multiclass(n=100, k=3).schema["probs"]
    Array(Float64, shape=(3,))
    """
    rng = np.random.default_rng(check_seed("datasets.multiclass", seed))
    logits = rng.normal(0.0, 2.0, (n, k))
    true = _softmax(logits)
    cum = true.cumsum(axis=1)
    label = (rng.random(n)[:, None] > cum).sum(axis=1).clip(0, k - 1)
    probs = _softmax(logits * temperature)
    group = np.array(["a", "b"])[rng.integers(0, 2, n)]
    return pl.DataFrame({"probs": probs, "label": label, "group": group}).with_columns(
        pl.col("probs").cast(pl.Array(pl.Float64, k))
    )


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def _top_label_frame(s: np.ndarray, correct: np.ndarray, v: np.ndarray, k: int, rng: np.random.Generator) -> pl.DataFrame:
    """Class probabilities with top-label score ``s`` on a random class; the label is that class iff ``correct``."""
    n = s.shape[0]
    top = rng.integers(0, k, n)
    other = (top + rng.integers(1, k, n)) % k  # a uniformly chosen wrong class
    label = np.where(correct, top, other)
    if k == 2:
        prob = np.where(top == 1, s, 1.0 - s)
        return pl.DataFrame({"prob": prob, "label": label.astype(np.int64), "v": v})
    probs = np.repeat(((1.0 - s) / (k - 1))[:, None], k, axis=1)
    probs[np.arange(n), top] = s
    return pl.DataFrame({"probs": probs, "label": label.astype(np.int64), "v": v}).with_columns(
        pl.col("probs").cast(pl.Array(pl.Float64, k))
    )


def theorem_5_1(n: int = 100_000, k: int = 2, alpha: float = 0.02, seed: int = 0) -> pl.DataFrame:
    """Kelly & Smyth Theorem 5.1: ECE ~ alpha / 4 while VECE(v) ~ 0.5 - 1/(2K) - alpha/2.

    Scores s ~ U(gamma - alpha, gamma + alpha) with gamma = 0.5 + 1/(2K),
    independent of v ~ U(0, 1); the top label is right with probability
    1 - alpha (s <= gamma) or 1 (s > gamma) where v <= 0.5, and 1/K or
    1/K + alpha where v > 0.5: nearly calibrated in s (the population ECE is
    alpha / 4; 15 uniform bins average it out further), badly miscalibrated
    along v. Columns: ``prob`` (K = 2) or ``probs`` (Array), ``label``, ``v``.

    Examples
    --------
    >>> import calframe
    >>> df = calframe.datasets.theorem_5_1(n=200_000, k=2, alpha=0.02)
    >>> round(calframe.vece(df, "v", lens="top1"), 2), round(calframe.ece(df, lens="top1"), 3)  # top label
    (0.24, 0.002)
    """
    rng = np.random.default_rng(check_seed("datasets.theorem_5_1", seed))
    gamma = 0.5 + 1.0 / (2 * k)
    s = rng.uniform(gamma - alpha, gamma + alpha, n)
    v = rng.random(n)
    low_v, low_s = v <= 0.5, s <= gamma
    acc = np.where(low_v, np.where(low_s, 1.0 - alpha, 1.0), np.where(low_s, 1.0 / k, 1.0 / k + alpha))
    return _top_label_frame(s, rng.random(n) < acc, v, k, rng)


def theorem_5_2(n: int = 100_000, k: int = 2, alpha: float = 0.02, seed: int = 0) -> pl.DataFrame:
    """Kelly & Smyth Theorem 5.2: VECE(v) ~ 0 while ECE ~ 0.5 - 1/(2K) - alpha/2.

    Scores come with equal probability from U(1/K, 1/K + alpha) and
    U(1 - alpha, 1), independent of v ~ U(0, 1); the top label is right with
    probability gamma = 0.5 + 1/(2K) everywhere. Columns as :func:`theorem_5_1`.

    Examples
    --------
    >>> import calframe
    >>> df = calframe.datasets.theorem_5_2(n=200_000, k=3, alpha=0.02)
    >>> round(calframe.ece(df, lens="top1"), 2), round(calframe.vece(df, "v", lens="top1"), 2)  # top label
    (0.32, 0.0)
    """
    rng = np.random.default_rng(check_seed("datasets.theorem_5_2", seed))
    gamma = 0.5 + 1.0 / (2 * k)
    high = rng.random(n) < 0.5
    s = np.where(high, rng.uniform(1.0 - alpha, 1.0, n), rng.uniform(1.0 / k, 1.0 / k + alpha, n))
    v = rng.random(n)
    return _top_label_frame(s, rng.random(n) < gamma, v, k, rng)
