"""calframe: classifier calibration analysis for Polars and pandas frames.

Typed functions are the API (``calframe.ece(df, ...)``); importing calframe
also registers ``df.calib`` on Polars DataFrame/LazyFrame and pandas
DataFrame, which forwards to the same functions.
"""

from . import _startup  # noqa: F401  (first: in the calframe command, Ctrl-C while it starts exits 130, one line)
import os as _os

# numba's OpenMP threads busy-wait between parallel regions by default; beside Polars' own
# thread pool that slowed a kernel run right after a Polars operation 3.5x (DESIGN.md).
# Passive waiting removes it. A value the user set wins.
_os.environ.setdefault("OMP_WAIT_POLICY", "passive")

from . import datasets  # noqa: E402
from ._errors import (
    CalframeError,
    CalframeWarning,
    ColumnNotFoundError,
    ColumnTypeError,
    EmptyInputError,
    InvalidValueError,
    ParameterError,
    UnsafeForkError,
)
from .api import *  # noqa: F401,F403  (the public functions, api.__all__)
from .monitoring import monitor
from .frames import pandas as _pandas_accessor
from . import _imports
from .frames import polars as _polars_namespace  # noqa: F401  (registers df.calib)
from . import expr  # noqa: E402  (calframe.expr.ece(...) -> pl.Expr; registers pl.col(...).calib)
from .frames.namespace import Calib, calib
from ._limits import limits
from .lenses import class_
from ._warmup import warmup
from . import api  # noqa: E402
from ._version import __version__  # noqa: F401

__all__ = [
    "Calib",
    "CalframeError",
    "CalframeWarning",
    "ColumnNotFoundError",
    "ColumnTypeError",
    "EmptyInputError",
    "InvalidValueError",
    "ParameterError",
    "UnsafeForkError",
    "calib",
    "class_",
    "datasets",
    "limits",
    "monitor",
    "warmup",
    *api.__all__,
]

# df.calib on pandas: registered when pandas is imported (now, or later: `import calframe` does not import it).
_imports.when_imported("pandas", _pandas_accessor.register)

# ddf.calib on Dask: registered when dask.dataframe is imported (calframe.frames.dask).
def _dask_accessor(_: object) -> None:
    from .frames import dask  # noqa: F401  (registers ddf.calib)


_imports.when_imported("dask.dataframe", _dask_accessor)
