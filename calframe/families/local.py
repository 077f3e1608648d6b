"""Local calibration (Luo et al.): LCE, MLCE and MLCE curves."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Unpack

import numpy as np
import polars as pl

from .. import figures as F
from .. import lenses as L
from .. import request as R
from .._columns import Scored, as_names, resolve
from .._errors import (
    bad_param,
)
from .._keywords import Columns
from .._imports import pd  # pandas: imported at first use
from ..engines.eager import Frame, Result, group_counts, binned_sums
from ..figures import check_by_names, with_keys
from ..frames import convert
from ..frames.dispatch import public
from ..metrics import ce_from_sums
from .features import feature_matrix, feature_columns, prepare_features

# --------------------------------------------------------------------------- local calibration (Luo et al.)


def _lce_values(scored: Scored, cols: list[str], gamma: float, req: R.Request
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    from .._kernels import local as LK
    from ..binning import uniform_bins

    o = req.options
    x = prepare_features(feature_matrix(scored, cols, req.func), req.func, o.prepare, o.n_components, cols)
    conf, acc = L.scalar(scored, req.lens, req.func)
    ids = uniform_bins(conf, req.binning.bins, "left").astype(np.int64)
    return LK.lce(x, conf, acc.astype(np.float64), ids, gamma), conf, acc, ids


@public(state="local")
@R.keywords(R.Kernel)
def lce(frame: Frame, features: str | Sequence[str], prob: Columns = None, label: str | None = None, *,
        name: str = "lce", **options: Unpack[R.Kernel]) -> pl.DataFrame | pd.DataFrame:
    """Local calibration error of every row (Luo et al. §3; SPEC §5), as a new column ``name``.

    LCE(x) = |sum_i (g'_i - y'_i) k(x, x_i)| / sum_i k(x, x_i) over the rows
    i in x's confidence bin (``bins`` uniform bins of the lensed confidence;
    x itself included), with the Laplacian kernel
    k(x, x') = exp(-||phi(x) - phi(x')||_1 / (d * gamma)) on the d feature
    columns (``prepare``: as given, standardised, or PCA to ``n_components``).
    Sums are exact (no truncation): calframe._kernels.local. ``lens``
    defaults to ``class:1`` (the positive class) for a single probability
    column and to ``top1`` for class probabilities (g', y' are its outputs).

    Returns the frame (the rows used, in order) with the column added.

    A ``pl.LazyFrame`` is collected (the columns the call reads) and the result given back as a
    ``pl.LazyFrame``.

    Examples
    --------
    >>> import calframe
    >>> df = calframe.datasets.grouped_miscalibration(n=2000, seed=0)
    >>> out = calframe.lce(df, ["age"], gamma=0.5)
    >>> out.columns[-1], bool((out["lce"] >= 0).all())
    ('lce', True)
    """
    req = R.local("lce", prob, label, **options)
    scored, cols, values = _lce(req, frame, features)
    return _with_column(frame, name, values, scored, req.nulls, req.func, prob, label, cols)


def _lce(req: R.Request, frame: Frame, features: str | Sequence[str], values: bool = True
         ) -> tuple[Scored, list[str], np.ndarray | None]:
    """lce and mlce: the rows resolved and the LCE of every row over all of them: (scored rows, feature columns,
    LCE; None when ``values`` is False)."""
    func = req.func
    cols = feature_columns(frame, features, func)
    check_by_names(func, req.by, MLCE_COLUMNS, frame)
    scored = resolve(frame, func=func, prob=req.prob, label=req.label, by=req.by, nulls=req.nulls, extra=cols)
    return scored, cols, _lce_values(scored, cols, req.options.gammas[0], req)[0] if values else None


def _with_column(frame: Frame, name: str, values: np.ndarray, scored: Scored, nulls: str, func: str,
                 prob: Columns, label: str | None, cols: list[str]) -> Any:
    """``frame`` with one new column (rows with nulls dropped first when nulls='drop')."""
    base = convert.collect(frame)
    if len(base) != len(values):  # nulls="drop" removed rows: the same rows, in order
        base = convert.drop_nulls(base, list(dict.fromkeys(as_names(scored.prob_name) + [scored.label_name] + cols)))
    return convert.with_columns(base, [pl.Series(name, values)])


#: the columns of mlce's grouped result beside the group keys
MLCE_COLUMNS = ("n", "mlce", "mean_lce")


@public(state="local")
@R.keywords(R.Kernel)
def mlce(frame: Frame, features: str | Sequence[str], prob: Columns = None, label: str | None = None, *,
         by: Columns = None, neighbours: Literal["group", "frame"] = "group", **options: Unpack[R.Kernel]) -> Result:
    """Maximum (and mean) local calibration error (Luo et al.): ``max_x LCE_gamma(x)``.

    With ``by``, each group is measured on its own rows, like every other
    ``by=``: a group's ``mlce`` and ``mean_lce`` equal the call on that group's
    rows alone (its neighbourhoods, confidence bins and ``prepare`` come
    from its rows only). ``neighbours="frame"`` instead computes every row's
    LCE over the whole frame (neighbourhoods drawn from every group's rows)
    and summarises those per group: how locally miscalibrated a group's
    rows are in the neighbourhoods of the whole population, as
    ``lce(frame)`` then a group-by would give. Without ``by`` returns the
    MLCE as a float (``neighbours`` makes no difference), and for a
    ``pl.LazyFrame`` (collected: the columns the call reads) a one-row
    ``pl.LazyFrame`` of ``n``, ``mlce`` and ``mean_lce``. ``lens`` as
    :func:`lce` (default ``class:1`` for a single probability column,
    ``top1`` for class probabilities).

    Examples
    --------
    >>> import calframe
    >>> df = calframe.datasets.grouped_miscalibration(n=2000, seed=0)
    >>> abs(calframe.mlce(df, ["age"], gamma=1e9) - calframe.mce(df)) < 1e-8   # Lemma 1: gamma -> inf
    True
    >>> per = calframe.mlce(df, ["age"], gamma=0.2, by="region")   # each region on its own rows
    >>> alone = calframe.mlce(df.filter(region=per["region"][0]), ["age"], gamma=0.2)
    >>> per["mlce"][0] == alone
    True
    """
    if neighbours not in ("group", "frame"):
        raise bad_param("mlce", "neighbours", "'group' (each group on its own rows) or 'frame' (LCE over the whole "
                        "frame, summarised per group)", neighbours)
    req = R.local("mlce", prob, label, by=by, **options)
    if by is None or neighbours == "frame":
        scored, _, values = _lce(req, frame, features)
    else:  # each group's LCE from its own rows
        scored, cols, _ = _lce(req, frame, features, values=False)
        values = np.empty(scored.n)
        for g in range(scored.n_groups):
            m = scored.group_codes == g
            values[m] = _lce_values(scored.subset(m), cols, req.options.gammas[0], req)[0]
    codes = scored.group_codes
    mx = np.full(scored.n_groups, -np.inf)
    np.maximum.at(mx, codes, values)
    mean = np.bincount(codes, weights=values, minlength=scored.n_groups) / np.maximum(
        np.bincount(codes, minlength=scored.n_groups), 1)
    out = pl.DataFrame(dict(zip(MLCE_COLUMNS, [group_counts(scored), mx, mean])))
    if by is None:  # a LazyFrame's: one row, n and the figures, as every figure's (lazy_out)
        return float(mx[0]) if convert.gives_floats(frame) else out
    return F.to_flavor(with_keys(req.func, scored.keys, out), scored.flavor)


@public(state="local")
@R.keywords(R.Local)
def mlce_curve(frame: Frame, features: str | Sequence[str], prob: Columns = None, label: str | None = None, *,
               gammas: Sequence[float] | None = None, **options: Unpack[R.Local]) -> pl.DataFrame | pd.DataFrame:
    """MLCE as a function of gamma (Luo et al. Fig. 1), with MCE (the gamma -> inf limit, Lemma 1) beside it.

    ``gammas`` defaults to ``numpy.logspace(-2, 2, 25)``. Columns: ``gamma``,
    ``mlce``, ``mean_lce``, ``mce``, all under ``lens`` (default ``class:1``
    for a single probability column, ``top1`` for class probabilities); a
    ``pl.LazyFrame`` is collected (the columns the call reads) and the table
    given back as a ``pl.LazyFrame``.

    Examples
    --------
    >>> import calframe
    >>> df = calframe.datasets.grouped_miscalibration(n=1000, seed=0)
    >>> calframe.mlce_curve(df, ["age"], gammas=[0.1, 1.0]).columns
    ['gamma', 'mlce', 'mean_lce', 'mce']
    """
    req = R.local("mlce_curve", prob, label, gammas=gammas, **options)
    func, gs = req.func, req.options.gammas
    cols = feature_columns(frame, features, func)
    scored = resolve(frame, func=func, prob=prob, label=label, nulls=req.nulls, extra=cols)
    conf, acc = L.scalar(scored, req.lens, func)
    sums, _ = binned_sums(conf, acc, scored, req.binning)
    mce_value = float(ce_from_sums(sums, float("inf"))[0])
    mx, mean = [], []
    from .._progress import iterate

    for gv in iterate(gs, func, unit="gamma"):
        v = _lce_values(scored, cols, gv, req)[0]
        mx.append(float(v.max()))
        mean.append(float(v.mean()))
    out = pl.DataFrame({"gamma": list(gs), "mlce": mx, "mean_lce": mean, "mce": [mce_value] * len(gs)})
    return F.to_flavor(out, scored.flavor)


