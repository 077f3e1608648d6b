"""The frames given to calframe's top-level functions: :func:`public`, with which every one is defined, declares
the state it is computed from (:mod:`calframe.registry`) and runs it where the registry's route says: refused,
on the frame the engine collects, or on the frame (through the engine's ``call`` when it has one: Dask binds the
arguments first), the result in the input's type (the engine's ``returned``: a pyarrow Table's as a Table).

``calframe.ece(ddf, ...)`` is ``ddf.calib.ece(...)``: the same parameters and
results (a lazy ``DaskResult``); the function parses its request and
hands it to :mod:`calframe.engines.partitions.client`. Functions that Dask frames do not
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

from .. import registry
from .._runtime import entry
from .kinds import is_dask_frame, native_kind

__all__ = ["is_dask_frame", "native_kind", "engine_entry", "takes_frame", "public"]

F = TypeVar("F", bound=Callable[..., Any])


def engine_entry(fn: F) -> F:
    """``fn(frame, ...)`` where the registry's choice (:func:`calframe.registry.route`, for the function's
    states) says: refused (the engine's ``refuse``), run on the frame the engine collects (its ``collect``), or
    run on the frame, whose parameters are routed once the function has parsed them; through the engine's own
    run (``call``) when it has one, the result through its ``returned``. The frame's kind is detected once for
    the call
    (:func:`calframe.registry.calling_on`)."""
    name = fn.__name__

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        frame = args[0] if args else kwargs.get("frame")
        kind, token = registry.calling_on(frame)  # detected once per call
        try:
            if kind is None:
                return fn(*args, **kwargs)
            engine = registry.engine(kind)
            r = registry.route(name, kind=kind)
            if r.how == "refused":
                raise r.refusal(name)
            if r.how == "collected":  # the rows the function reads, in memory
                frame = engine.collect(frame)
                args, kwargs = ((frame, *args[1:]), kwargs) if args else (args, {**kwargs, "frame": frame})
            call = getattr(engine, "call", None)  # the engine's own run (e.g. Dask binds the arguments first)
            out = fn(*args, **kwargs) if call is None else call(name, fn, args, kwargs)
            returned = getattr(engine, "returned", None)  # the result in the input's type (a Table's as a Table)
            return out if returned is None else returned(out, kind)
        finally:
            registry.called(token)

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


def public(fn: F | None = None, *, state: str | tuple[str, ...] | None = None,
           figure: registry.Figure | None = None) -> Any:
    """A public function of calframe: the fork check (:func:`calframe._runtime.entry`) around the engine's entry
    (:func:`engine_entry`) and :func:`lazy_out`, for a function whose first parameter is ``frame``, which
    declares the ``state`` it is computed from (:func:`calframe.registry.declare`). Every function of
    ``calframe.__all__`` is defined with it.

    >>> @public(state="row_means")
    ... def mean_prob(frame, prob="prob"):
    ...     return float(frame[prob].mean())
    >>> import polars as pl
    >>> mean_prob(pl.DataFrame({"prob": [0.2, 0.4]})), registry.DECLARED["mean_prob"].states
    (0.30000000000000004, ('row_means',))
    >>> _ = registry.DECLARED.pop("mean_prob")
    """
    if fn is None:
        return functools.partial(public, state=state, figure=figure)
    if not takes_frame(fn):
        return entry(fn)
    if state is None:
        raise TypeError(f"{fn.__name__}: a public function of a frame declares its state: @public(state=...), one "
                        f"of {sorted(registry.STATES)}")
    wrapped = entry(engine_entry(lazy_out(fn)))
    registry.declare(fn.__name__, state, getattr(fn, "__calframe_options__", None), figure, wrapped)
    return wrapped
