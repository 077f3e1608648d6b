"""The feature columns of local calibration and LoRe: their names, their matrix and its preparation."""


from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._columns import Scored, column_names
from .._errors import (
    ColumnTypeError,
    InvalidValueError,
    bad_param,
)
from ..engines.eager import Frame


def feature_columns(frame: Frame, features: str | Sequence[str], func: str) -> list[str]:
    cols = column_names(func, "features", features, frame) if isinstance(features, (str, list, tuple)) else []
    if not cols:
        raise bad_param(func, "features", "a column name, an Array column, or a non-empty list of columns", features)
    return cols


def feature_matrix(scored: Scored, cols: list[str], func: str) -> np.ndarray:
    mats = []
    for c in cols:
        v = scored.extra[c]
        if scored.extra_kind[c] != "numeric":
            raise ColumnTypeError(f"{func}: feature {c!r} is not numeric; features must be numbers (or an Array).")
        mats.append(v.reshape(v.shape[0], -1))
    return np.ascontiguousarray(np.column_stack(mats), dtype=np.float64)


def prepare_features(x: np.ndarray, func: str, prepare: str = "none", n_components: int | None = None,
                     names: Sequence[str] = ()) -> np.ndarray:
    """Features as given, standardised (z-scores), or reduced to ``n_components`` by PCA (numpy SVD).

    PCA of fewer rows than ``n_components`` (default min(features, 2)): the components past the
    SVD's, along which the rows do not vary, are 0 (spec section 8, "Errors").
    """
    if prepare == "none":
        return x
    sd = x.std(axis=0)
    const = np.flatnonzero(sd == 0)
    if prepare == "standardize":
        if const.size:
            which = [names[i] if i < len(names) else i for i in const]
            raise InvalidValueError(f"{func}: feature(s) {which} are constant; they cannot be standardised. "
                                    "Drop them or use prepare='none'.")
        return (x - x.mean(axis=0)) / sd
    m = n_components if n_components is not None else min(x.shape[1], 2)
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or not 1 <= m <= x.shape[1]:
        raise bad_param(func, "n_components", f"an int in 1..{x.shape[1]}", n_components)
    xc = x - x.mean(axis=0)
    _, _, vt = np.linalg.svd(xc, full_matrices=False)
    comp = vt[:m]  # fewer than m with fewer rows than m: the rows do not vary along the others
    r = comp.shape[0]
    comp *= np.where(comp[np.arange(r), np.abs(comp).argmax(axis=1)] < 0, -1.0, 1.0)[:, None]  # sign convention
    return np.hstack([xc @ comp.T, np.zeros((x.shape[0], m - r))])  # those components are 0, as rank-deficient data
