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
from types import ModuleType
from typing import Any, Callable, TypeVar

from .._errors import ColumnTypeError, ParameterError

__all__ = ["is_dask_frame", "dask_aware", "takes_frame", "install"]

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


def takes_frame(fn: Any) -> bool:
    """Whether ``fn`` is a function whose first parameter is ``frame`` (the public functions Dask frames reach)."""
    return inspect.isfunction(fn) and next(iter(inspect.signature(fn).parameters), None) == "frame"


def install(names: Any, module: ModuleType) -> None:
    """Wrap with :func:`dask_aware`, in ``module``, every function of ``names`` (the package's ``__all__``) that
    :func:`takes_frame`: the public list is the only list of the functions a Dask frame can reach."""
    for name in names:
        fn = getattr(module, name, None)
        if takes_frame(fn):
            setattr(module, name, dask_aware(fn))
