"""``df.calib`` on pandas DataFrame, registered when pandas is imported (before or after calframe)."""

from __future__ import annotations

import warnings
from types import ModuleType

from .namespace import Calib


def register(pd: ModuleType) -> None:
    """Register :class:`~calframe.frames.namespace.Calib` as ``df.calib`` on pandas DataFrames."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # re-registration on reload
        pd.api.extensions.register_dataframe_accessor("calib")(Calib)
