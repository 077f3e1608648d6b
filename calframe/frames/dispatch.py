"""The frames given to calframe's top-level functions: :func:`public`, with which every one is defined, sends a
Dask DataFrame to the Dask engine and a DuckDB relation, PySpark DataFrame, Ibis table or pyarrow Table to the
narwhals engine (or refuses it, saying what to do).

``calframe.ece(ddf, ...)`` is ``ddf.calib.ece(...)``: the same parameters and
results (a lazy ``DaskResult``); the function parses its request and
hands it to :mod:`calframe.engines.dask`. Functions that Dask frames do not
support (``lce``, ``mlce``, ``mlce_curve``, ...) raise a
:class:`~calframe.ColumnTypeError` saying what to do instead. Dask is never
imported here: an object can only be a Dask DataFrame once ``dask.dataframe``
has been imported.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, TypeVar

import polars as pl

from .._errors import ColumnTypeError, ParameterError
from .._runtime import entry
from .kinds import is_dask_frame, native_kind

__all__ = ["is_dask_frame", "native_kind", "check_supported", "dask_aware", "takes_frame", "public"]

F = TypeVar("F", bound=Callable[..., Any])


def check_supported(name: str) -> None:
    """Refuse, saying what to do instead, a public function the Dask engine does not run."""
    from ..engines.dask import SUPPORTED

    if name not in SUPPORTED:
        raise ColumnTypeError(
            f"{name}: Dask DataFrames are not supported here (on Dask: {', '.join(sorted(SUPPORTED))}). "
            f"Compute a pandas frame first, e.g. calframe.{name}(ddf.compute()) or on a sample, "
            f"ddf.sample(frac=0.1).compute()."
        )


def dask_aware(fn: F) -> F:
    """``fn(frame, ...)``, refusing a Dask DataFrame unless the Dask engine runs ``fn`` (the function itself then
    sends the parsed request to it); a DuckDB relation, pyarrow Table, Ibis table or PySpark DataFrame goes to
    :func:`calframe.engines.narwhals.call`."""
    name = fn.__name__

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        frame = args[0] if args else kwargs.get("frame")
        if is_dask_frame(frame):
            check_supported(name)
            try:
                inspect.signature(fn).bind(*args, **kwargs)
            except TypeError as exc:
                raise ParameterError(f"{name} on a Dask DataFrame (ddf.calib.{name}): {exc}.") from None
        elif native_kind(frame) is not None:  # DuckDB, pyarrow, Ibis, PySpark: the narwhals engine decides
            from ..engines import narwhals

            return narwhals.call(name, fn, args, kwargs)
        return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def takes_frame(fn: Any) -> bool:
    """Whether ``fn`` is a function whose first parameter is ``frame`` (the public functions Dask frames reach)."""
    return inspect.isfunction(fn) and next(iter(inspect.signature(fn).parameters), None) == "frame"


def lazy_out(fn: F) -> F:
    """``fn(frame, ...)`` giving a LazyFrame for a LazyFrame (spec section 8, "Lazy in, lazy out"): an eager
    result frame of a collected LazyFrame is made lazy again, here, for every public function."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        out = fn(*args, **kwargs)
        if isinstance(out, pl.DataFrame) and isinstance(args[0] if args else kwargs.get("frame"), pl.LazyFrame):
            return out.lazy()
        return out

    return wrapper  # type: ignore[return-value]


def public(fn: F) -> F:
    """A public function of calframe: the fork check (:func:`calframe._runtime.entry`) around the frame dispatch
    (:func:`dask_aware`) and :func:`lazy_out`, for a function whose first parameter is ``frame``. Every function
    of ``calframe.__all__`` is defined with it."""
    return entry(dask_aware(lazy_out(fn)) if takes_frame(fn) else fn)
