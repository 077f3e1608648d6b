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
from .api import accuracy, apply, brier, ce, disparity, ece, fit, gece, lce, load, mlce, mlce_curve, log_loss, mce, monitor, reliability, rmsce, smece, summary, vce_curve, vece, vece_rank, vmce, VCECurve
from .frames import pandas as _pandas_accessor
from . import _lazy
from .frames import polars as _polars_namespace  # noqa: F401  (registers df.calib)
from . import expr  # noqa: E402  (calframe.expr.ece(...) -> pl.Expr; registers pl.col(...).calib)
from .frames import dispatch as _dispatch
from .frames.namespace import Calib, calib
from ._limits import limits
from .lenses import class_
from ._warmup import warmup
from . import _runtime, api  # noqa: E402

__version__ = "0.1.0"

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
    "accuracy",
    "apply",
    "fit",
    "lce",
    "limits",
    "load",
    "mlce",
    "mlce_curve",
    "brier",
    "calibration_test",
    "calib",
    "ce",
    "class_",
    "datasets",
    "disparity",
    "ece",
    "gece",
    "log_loss",
    "mce",
    "monitor",
    "reliability",
    "rmsce",
    "smece",
    "summary",
    "VCECurve",
    "vce_curve",
    "vece",
    "vece_rank",
    "vmce",
    "warmup",
]

# df.calib on pandas: registered when pandas is imported (now, or later: `import calframe` does not import it).
_lazy.when_imported("pandas", _pandas_accessor.register)

# A Dask DataFrame given to a function that takes a frame goes to ddf.calib.<name> (or gets an error
# saying what to do): calframe.frames.dispatch.
_dispatch.install(__all__, api)

# Every public function first checks that this process may run calframe (not a fork child of a process
# that had started Polars' thread pool or GNU OpenMP: docs/spec.md section 8, "Processes and threads").
_runtime.guard_entries(globals(), api)
