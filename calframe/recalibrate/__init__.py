"""Recalibrators at the array level (SPEC section 6), with data-only save/load.

Each method is a :class:`Recalibrator` subclass with a ``fit`` classmethod
taking numpy arrays (probabilities: (n,) binary positive-class or (n, K);
labels: integer classes; extra per-row arrays where the method needs them)
and a ``predict`` method.  ``fit(method, ...)`` dispatches by name and
``load(path)`` reads any saved recalibrator.

=================  ===================  ==========================================
method             class                extra arrays (fit and predict)
=================  ===================  ==========================================
platt              :class:`Platt`
temperature        :class:`Temperature`
histogram          :class:`Histogram`
isotonic           :class:`Isotonic`
beta               :class:`Beta`
scaling_binning    :class:`ScalingBinning`
venn_abers         :class:`VennAbers`
tree               :class:`Tree`        ``v`` (n,)
beta_v             :class:`BetaV`       ``v`` (n,)
lore               :class:`LoRe`        ``features`` (n, d)
=================  ===================  ==========================================

``predict`` returns what ``Recalibrator.output`` says: ``"class:c"`` (an (n,)
probability of class c; binary ``"class:1"`` = the positive class), ``"top1"``
(an (n,) recalibrated top-label confidence, predicted class unchanged) or
``"probs"`` (an (n, K) matrix; 1-d for a 1-d binary input).  Scalar methods
take ``lens="class:c"`` or ``"top1"`` (default: class:1 for binary input, top1
for K > 2).  ``save(path)`` writes JSON + Parquet only (never pickle);
``load`` validates format, version, method, shapes and a checksum.

Examples
--------
>>> import numpy as np
>>> from calframe import recalibrate
>>> rng = np.random.default_rng(0)
>>> p = rng.random(1000)
>>> y = (rng.random(1000) < p**2).astype(int)
>>> rec = recalibrate.fit("beta", p, y)
>>> rec.output
'class:1'
>>> rec.predict(np.array([0.25, 0.5, 0.75])).round(3)
array([0.084, 0.258, 0.584])
"""

from __future__ import annotations

from pathlib import Path

from .._errors import ParameterError, bad_param
from ._inputs import OneClassError, one_class_error
from .base import FORMAT_NAME, FORMAT_VERSION, REGISTRY, Recalibrator, RecalibratorFileError
from .binned import Histogram, Isotonic, ScalingBinning, equal_mass_edges
from .lore import LoRe
from .parametric import Beta, BetaV, Platt, Temperature
from .tree import Tree
from ._scalar import weighted_methods
from .venn_abers import VennAbers

METHODS = tuple(REGISTRY)


def fit(method: str, probs, labels, *args, **kwargs) -> Recalibrator:
    """Fit the recalibrator ``method`` (one of ``METHODS``); arguments as that class's ``fit``. ``weights=``: frequency
    weights (a row of weight k counts as k rows), for the methods that take them (``weighted_methods()``).

    The keyword parameters are checked first (``check_params``: a ``ParameterError`` naming the
    parameter for an unknown name or a bad value)."""
    cls = REGISTRY.get(method)
    if cls is None or method == "per_group":
        raise bad_param("recalibrate.fit", "method", f"one of {sorted(m for m in REGISTRY if m != 'per_group')}",
                        method)
    meta = kwargs.pop("meta", None)
    weights = kwargs.pop("weights", None)  # row weights, for the methods that take them (``takes_weights``)
    if weights is not None and not getattr(cls, "takes_weights", False):
        raise ParameterError(f"recalibrate.fit: method {method!r} does not take weights; methods that do: "
                             f"{weighted_methods()}.", "weights")
    return cls.fit(probs, labels, *args, meta=meta, **cls.check_params(kwargs),
                   **({} if weights is None else {"weights": weights}))


def load(path: str | Path, *, key: bytes | str | None = None) -> Recalibrator:
    """Read a recalibrator written by ``Recalibrator.save`` (validated; ``key``: verify its signature; see ``base``)."""
    return Recalibrator.load(path, key=key)


__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "METHODS",
    "Beta",
    "BetaV",
    "Histogram",
    "Isotonic",
    "LoRe",
    "Platt",
    "Recalibrator",
    "RecalibratorFileError",
    "ScalingBinning",
    "Temperature",
    "Tree",
    "VennAbers",
    "equal_mass_edges",
    "fit",
    "load",
    "weighted_methods",
]
