"""``ddf.calib`` on Dask DataFrames: ``import calframe.frames.dask`` registers it (after
``pip install "calframe[dask]"``; importing calframe alone never imports Dask).

The handle's methods are the public functions the Dask engine runs
(:func:`calframe.engines.partitions.client.supported`, from its capabilities and the declarations of
:mod:`calframe.registry`), generated as every handle (:mod:`calframe.frames.namespace`); each returns a lazy
:class:`calframe.engines.partitions.client.DaskResult` that computes (``.compute()``,
``dask.compute(a, b)``) to what calframe returns for a pandas frame.
``calframe.ece(ddf, ...)`` is the same call.
"""

from __future__ import annotations

import warnings

from ..engines.partitions.client import supported
from .namespace import make_handle

__all__ = ["DaskCalib", "REGISTERED", "register"]

#: ``ddf.calib``: the public functions the Dask engine runs, bound to a Dask DataFrame
DaskCalib = make_handle("DaskCalib", supported(),
                        "``ddf.calib``: calframe's figures on a Dask DataFrame, computed partition by partition.")


def register() -> bool:
    """Register ``calib`` on ``dask.dataframe.DataFrame``; False (and nothing done) when Dask is not installed."""
    try:
        from dask.dataframe.extensions import register_dataframe_accessor
    except ImportError:
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # re-registration on reload
        register_dataframe_accessor("calib")(DaskCalib)
    return True


REGISTERED = register()
