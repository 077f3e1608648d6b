"""The calibration-belt package's values stored in tests/oracles/calibration_belt.json (read by
tests/test_belt.py), and how they were produced.

calibration-belt 0.1.41 (MIT; Bulgarelli's Python port of Nattino et al.'s GiViTI belt) pulls in statsmodels,
patsy and tqdm, so it is not a test extra: this script is run by hand in a virtualenv of its own, and the JSON file
holds what it wrote. Produced with calibration-belt 0.1.41, statsmodels 0.15.0, scipy 1.17.1, numpy 2.4.6,
polars 2.1.0. Its module is named ``calibration``, as uncertainty-calibration's (a test extra): another reason
to keep it out of the test venv::

    python3 -m venv /tmp/belt-venv && /tmp/belt-venv/bin/pip install calibration-belt==0.1.41 polars pandas
    PYTHONPATH=. python -c "import calframe, numpy as np; d = calframe.datasets.adult_scored(); \\
        np.savez('/tmp/adult_belt.npz', prob=d['prob'].to_numpy(), label=d['label'].to_numpy(), \\
        male=(d['sex'] == 'Male').to_numpy())"      # with calframe's own venv: the bundled Adult model
    PYTHONPATH=. /tmp/belt-venv/bin/python tests/oracles/calibration_belt.py

For each case: ``CalibrationBelt(P, E).test(q=0.95)`` (statistic, p-value), ``forward_select(0.95)`` (degree, the
log-likelihood) and ``calculate_boundaries(c, size=50, q=0.95)`` for c in (0.8, 0.95) (the grid's predictions,
lower, upper); and ``CalibrationBelt.calculate_cdf(t, m, 0.95)``, the law of the statistic, at ``CDF_AT`` for
m = 1 to 4. The data: numpy's seeded generators (PCG64, the same streams on every numpy) and calframe's bundled
Adult data. Nothing is imported at module level but numpy: pytest collects this module for its doctests.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def cases() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The shared seeded data (prediction, outcome) by name."""
    rng = np.random.default_rng(2011)
    p = rng.uniform(0.01, 0.99, 3000)
    out = {"calibrated": (p, (rng.uniform(size=3000) < p).astype(np.int64))}
    p = rng.uniform(0.01, 0.99, 3000)
    out["power"] = (p, (rng.uniform(size=3000) < p**1.4).astype(np.int64))
    g = rng.normal(0, 2, 4000)
    p = 1 / (1 + np.exp(-g))
    truth = 1 / (1 + np.exp(-(0.2 + 0.8 * g + 0.04 * g**3)))
    out["cubic"] = (p, (rng.uniform(size=4000) < truth).astype(np.int64))  # odd: the selection stops at 1
    for name, coef in (("quadratic", (0.0, 1.0, 0.1)), ("cubic_even", (0.1, 0.9, 0.15, 0.06)),
                       ("quartic", (0.0, 1.0, -0.2, 0.05, 0.04))):
        g = rng.normal(0, 1.5, 3000)
        truth = 1 / (1 + np.exp(-sum(c * g**j for j, c in enumerate(coef))))
        out[name] = (1 / (1 + np.exp(-g)), (rng.uniform(size=3000) < truth).astype(np.int64))
    return out


#: the statistics at which the law's distribution function is compared, per degree
CDF_AT = (0.5, 2.0, 4.0, 6.0, 8.0, 9.0, 10.0, 12.0, 15.0, 20.0, 30.0)


def main() -> None:
    from calibration import CalibrationBelt

    data = cases()
    adult = np.load("/tmp/adult_belt.npz")
    data["adult"] = (adult["prob"], adult["label"].astype(np.int64))
    male = adult["male"].astype(bool)
    data["adult_male"] = (adult["prob"][male], adult["label"][male].astype(np.int64))
    data["adult_female"] = (adult["prob"][~male], adult["label"][~male].astype(np.int64))
    out = {"cdf": {str(m): [float(CalibrationBelt.calculate_cdf(t, m, 0.95)) for t in CDF_AT]
                   for m in (1, 2, 3, 4)}}
    for name, (p, y) in data.items():
        belt = CalibrationBelt(y, p)
        t, pv = belt.test(q=0.95)
        m, model = belt.forward_select(0.95)
        row = {"statistic": float(t), "p_value": float(pv), "degree": int(m), "llf": float(model.llf)}
        for c in (0.8, 0.95):
            b = belt.calculate_boundaries(c, size=50, q=0.95)
            row[str(c)] = {"p": b[:, 0].tolist(), "lower": b[:, 1].tolist(), "upper": b[:, 2].tolist()}
        out[name] = row
        print(name, row["statistic"], row["p_value"], row["degree"], flush=True)
    (HERE / "calibration_belt.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
