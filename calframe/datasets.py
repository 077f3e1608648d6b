"""Seeded generators of scored frames for examples, demos, tests and benchmarks."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from ._errors import bad_param
from .metrics import check_seed

__all__ = [
    "ADULT_COLUMNS",
    "ADULT_NUMERIC",
    "REGION_SLOPE",
    "adult",
    "adult_design",
    "adult_scored",
    "grouped_miscalibration",
    "multiclass",
    "theorem_5_1",
    "theorem_5_2",
]

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


# --------------------------------------------------------------------------- UCI Adult (shipped, CC BY 4.0)

#: the 15 columns of the UCI Adult files, in order (calframe/data/README.md)
ADULT_COLUMNS = ("age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
                 "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
                 "income")
#: the numeric columns of Adult
ADULT_NUMERIC = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week")


def adult(split: str = "test") -> pl.DataFrame:
    """The UCI Adult census-income data shipped with calframe (CC BY 4.0; provenance in ``calframe/data/README.md``).

    ``split`` is ``"train"`` (``adult.data``, 32,561 rows) or ``"test"``
    (``adult.test``, 16,281 rows). Columns: the 15 UCI columns
    (:data:`ADULT_COLUMNS`; ``income`` is ``"<=50K"`` or ``">50K"``, the test
    split's trailing dot removed; ``?`` is null) and ``label``: 1 when the
    income is above 50K, else 0.

    Examples
    --------
    >>> import calframe
    >>> df = calframe.datasets.adult("test")
    >>> df.shape, df["label"].sum()
    ((16281, 16), 3846)
    """
    import gzip
    from importlib import resources

    names = {"train": "adult.data.gz", "test": "adult.test.gz"}
    if split not in names:
        raise bad_param("datasets.adult", "split", "'train' or 'test'", split)
    raw = gzip.decompress(resources.files("calframe").joinpath("data", names[split]).read_bytes())
    df = pl.read_csv(raw, has_header=False, new_columns=list(ADULT_COLUMNS), separator=",", null_values=[" ?"],
                     schema_overrides={c: pl.Int64 for c in ADULT_NUMERIC})
    df = df.filter(pl.col("income").is_not_null())  # the files end with an empty line
    text = [c for c in ADULT_COLUMNS if c not in ADULT_NUMERIC]
    df = df.with_columns(pl.col(text).str.strip_chars()).with_columns(pl.col("income").str.strip_chars_end("."))
    return df.with_columns(label=(pl.col("income") == ">50K").cast(pl.Int8))


def adult_design(train: pl.DataFrame, test: pl.DataFrame, without: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The unstandardised design matrices of :func:`adult_scored` for the two splits: the numeric columns, then a
    one-hot encoding of the text columns (levels from ``train``, first dropped, nulls as zeros), without
    ``native-country``, ``income`` and the columns in ``without``."""
    unknown = sorted(set(without) - set(ADULT_COLUMNS[:-1]))
    if unknown:
        raise bad_param("datasets.adult_scored", "without", f"feature columns of Adult ({ADULT_COLUMNS[:-1]})",
                        unknown)
    numeric = [c for c in ADULT_NUMERIC if c not in without]
    levels = {c: sorted(train[c].drop_nulls().unique().to_list()) for c in ADULT_COLUMNS
              if c not in ADULT_NUMERIC and c not in ("native-country", "income", *without)}
    return _one_hot(train, numeric, levels), _one_hot(test, numeric, levels)


def _one_hot(df: pl.DataFrame, numeric: list[str], levels: dict[str, list[str]]) -> np.ndarray:
    parts = [df.select(numeric).to_numpy().astype(np.float64)]
    for col, values in levels.items():
        parts.append(np.stack([(df[col] == v).fill_null(False).to_numpy() for v in values[1:]], axis=1))
    return np.hstack(parts).astype(np.float64)


def adult_scored(l2: float = 1.0, without: Sequence[str] = ("age", "marital-status", "relationship")) -> pl.DataFrame:
    """Adult's test split scored by a logistic regression fitted on its training split: a real model to calibrate.

    The model: the numeric columns and a one-hot encoding of the text
    columns (first level dropped, nulls as zeros), except ``native-country``
    and the columns in ``without``, standardised on the training split; a
    logistic regression with an L2 penalty ``l2`` (on the coefficients, not
    the intercept) fitted by Newton's method to a gradient norm below 1e-10,
    so the probabilities are the same on every machine to far more digits
    than any figure shows. Columns: :func:`adult`'s test columns and
    ``prob``, the predicted probability of ``label == 1`` (income above 50K).

    By default the model is not given age, nor the household columns that
    stand in for it (``marital-status``, ``relationship``), as a model kept
    blind to a protected attribute: it is calibrated overall (a logistic
    regression with an intercept is calibrated in the large) and
    miscalibrated along age, which ``docs/examples/adult_variable.py`` finds
    and fixes.

    Examples
    --------
    >>> import calframe
    >>> df = calframe.datasets.adult_scored()
    >>> round(calframe.ece(df, bins=15), 3), round(calframe.vece(df, "age"), 3)
    (0.01, 0.064)
    """
    train, test = adult("train"), adult("test")
    x_tr, x_te = adult_design(train, test, without)
    mu, sd = x_tr.mean(0), x_tr.std(0)
    sd[sd == 0] = 1.0
    x_tr = np.hstack([np.ones((len(x_tr), 1)), (x_tr - mu) / sd])
    x_te = np.hstack([np.ones((len(x_te), 1)), (x_te - mu) / sd])
    y = train["label"].to_numpy().astype(np.float64)
    penalty = np.full(x_tr.shape[1], float(l2))
    penalty[0] = 0.0
    beta = np.zeros(x_tr.shape[1])
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(x_tr @ beta)))
        grad = x_tr.T @ (p - y) + penalty * beta
        if np.linalg.norm(grad) < 1e-10:
            break
        hess = (x_tr * (p * (1.0 - p))[:, None]).T @ x_tr + np.diag(penalty)
        beta -= np.linalg.solve(hess, grad)
    prob = 1.0 / (1.0 + np.exp(-(x_te @ beta)))
    return test.with_columns(prob=pl.Series(prob))


def __dir__() -> list[str]:
    """The public names (``__all__``), not the modules and typing names this module imports."""
    return sorted(__all__)
