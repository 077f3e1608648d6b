"""Dask DataFrames given to calframe's top-level functions go to ``ddf.calib`` (calframe.frames.dask).

``calframe.ece(ddf, ...)`` is ``ddf.calib.ece(...)``: the same parameters and
results (a pandas frame, or a float). Functions that Dask frames do not
support (``summary``, ``gece``, ``lce``, ``fit``, ...) raise a
:class:`~calframe.ColumnTypeError` saying what to do instead. Dask is never
imported here: an object can only be a Dask DataFrame once ``dask.dataframe``
has been imported.
"""

from __future__ import annotations

import functools
import inspect
import sys
from typing import Any, Callable, TypeVar

from .._errors import ColumnTypeError, ParameterError

__all__ = ["DASK_AWARE", "is_dask_frame", "dask_aware"]

#: the public functions that take a frame first (calframe/__init__.py wraps them with :func:`dask_aware`)
DASK_AWARE = ("accuracy", "apply", "brier", "ce", "ece", "fit", "gece", "lce", "mlce", "mlce_curve", "log_loss",
              "mce", "reliability", "rmsce", "summary", "vce_curve", "vece", "vece_rank", "vmce")

F = TypeVar("F", bound=Callable[..., Any])


def is_dask_frame(frame: Any) -> bool:
    """Whether ``frame`` is a Dask DataFrame (False whenever Dask has not been imported)."""
    dd = sys.modules.get("dask.dataframe")
    cls = getattr(dd, "DataFrame", None)
    return isinstance(cls, type) and isinstance(frame, cls)


def _on_dask(name: str, frame: Any, args: tuple, kwargs: dict) -> Any:
    from . import dask as cfd  # registers ddf.calib

    method = getattr(cfd.DaskCalib(frame), name, None)
    if method is None or name.startswith("_"):
        supported = sorted(m for m in vars(cfd.DaskCalib) if not m.startswith("_"))
        raise ColumnTypeError(
            f"{name}: Dask DataFrames are not supported here (on Dask: {', '.join(supported)}). "
            f"Compute a pandas frame first, e.g. calframe.{name}(ddf.compute()) or on a sample, "
            f"ddf.sample(frac=0.1).compute()."
        )
    try:
        inspect.signature(method).bind(*args, **kwargs)
    except TypeError as exc:
        raise ParameterError(f"{name} on a Dask DataFrame (ddf.calib.{name}): {exc}.") from None
    return method(*args, **kwargs)


def dask_aware(fn: F) -> F:
    """``fn(frame, ...)``, sending a Dask DataFrame to ``ddf.calib.<fn name>(...)``."""
    name = fn.__name__

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if args and is_dask_frame(args[0]):
            return _on_dask(name, args[0], args[1:], kwargs)
        if not args and is_dask_frame(kwargs.get("frame")):
            return _on_dask(name, kwargs.pop("frame"), (), kwargs)
        return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
