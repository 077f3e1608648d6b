"""The probmetrics KS and Kuiper calibration errors stored in tests/test_bin_free.py, and how they were produced.

probmetrics (Apache-2.0) pulls in PyTorch, so it is not a test extra: this script is run by hand in a virtualenv of
its own, and tests/test_bin_free.py holds what it printed (shared/ORACLES.md: a peer that pulls in PyTorch has its
values stored with the script that produced them). Produced with probmetrics 1.3.0, torch 2.13.0+cpu, numpy 2.4.6,
polars 2.1.0::

    /tmp/netcal-venv/bin/pip install probmetrics     # the venv of tests/oracles/netcal_mmce.py; torch already there
    /tmp/netcal-venv/bin/pip install numba pandas    # probmetrics 1.3.0 imports them without declaring them
    PYTHONPATH=. /tmp/netcal-venv/bin/python tests/oracles/probmetrics_ks.py

What probmetrics computes (``probmetrics/metrics.py``, ``KolmogorovSmirnovCalibrationMetric`` and
``KuiperCalibrationMetric``, read from its 1.3.0 source): with ``p`` the class-1 column of the probabilities and
``y`` the label, sort by ``p`` (``torch.sort``, not stable), take ``diffs = cumsum(y) / N - cumsum(p) / N`` at every
row, and report ``max |diffs|`` (KS) and ``max(max diffs, 0) - min(min diffs, 0)`` (Kuiper). So:

- lens: the positive class (``class:1``), calframe's default for one probability column; probmetrics has no
  top-label or weighted variant (``weights=`` raises NotImplementedError: these metrics define no per-row values);
- normalisation: by N, the same as calframe's ``W`` without weights; the sign (outcomes minus predictions) is the
  opposite of calframe's ``D``, which neither figure sees;
- precision: both metrics cast to float32 (``.float()``) before the cumulative sums, so the values as shipped
  agree with a float64 computation to about 1e-6 only. The script also runs probmetrics' own code with
  ``Tensor.float`` made to return float64 (``float64()`` below; nothing else in the peer changes): those values are
  the ones compared to 1e-12;
- ties: probmetrics reads ``diffs`` after every row, calframe at the end of each run of equal predictions (where the
  cumulative sums no longer depend on the order of the tied rows). On data without ties the two are the same
  figure; with ties probmetrics' value depends on the order ``torch.sort`` gives the tied rows and is never below
  calframe's (calframe's points are a subset of probmetrics').

The data are those of tests/oracles/netcal_mmce.py (numpy's seeded generators, the same streams on every numpy) and
calframe's bundled Adult data (``calframe.datasets.adult_scored()``). Nothing is imported at module level but numpy
and the data helpers: pytest collects this module for its doctests.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from netcal_mmce import adult, binary, ties  # noqa: E402  (the shared seeded data)

__all__ = ["adult", "binary", "ties", "float64", "main"]


@contextlib.contextmanager
def float64() -> Iterator[None]:
    """Run probmetrics' code in float64: its ``.float()`` casts return the tensor as float64."""
    import torch

    original = torch.Tensor.float
    torch.Tensor.float = lambda self, *a, **k: self.double()  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.Tensor.float = original  # type: ignore[method-assign]


def main() -> dict[str, float]:
    import torch
    from probmetrics.metrics import KolmogorovSmirnovCalibrationMetric, KuiperCalibrationMetric

    def peer(p: np.ndarray, y: np.ndarray, wide: bool) -> tuple[float, float]:
        labels, probs = torch.as_tensor(y, dtype=torch.long), torch.as_tensor(np.c_[1 - p, p], dtype=torch.float64)
        with float64() if wide else contextlib.nullcontext():
            return tuple(float(m.compute_from_labels_probs(labels, probs))  # type: ignore[return-value]
                         for m in (KolmogorovSmirnovCalibrationMetric(), KuiperCalibrationMetric()))

    cases = {"binary": binary(), "ties": ties()}
    p, y, sex = adult()
    cases["adult"] = (p, y)
    for s in ("Female", "Male"):
        cases[f"adult {s}"] = (p[sex == s], y[sex == s])
    out: dict[str, float] = {}
    for name, (p, y) in cases.items():
        for wide, suffix in ((True, "float64"), (False, "float32")):
            out[f"{name} ks {suffix}"], out[f"{name} kuiper {suffix}"] = peer(p, y, wide)
    return out


if __name__ == "__main__":
    for k, v in main().items():
        print(f"    {k!r}: {v!r},")
