"""The ``calib`` handles, generated from one list of public names.

:data:`FRAME_FUNCTIONS` is the one list of calframe's public functions that
take a frame: those declared in :mod:`calframe.registry` (by ``@public(state=...)``). ``df.calib`` (Polars and pandas), ``calframe.calib(df)`` and
``ddf.calib`` (Dask: the functions its engine runs) are classes generated from
it, each method forwarding to the function of :mod:`calframe.api` with the
same name, docstring and signature (``frame`` bound). A handle holds the frame
and nothing else and validates nothing when created (Polars caches namespace
objects; pandas 3 makes one per attribute access).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from .. import api, monitoring, registry

#: every public function whose first parameter is the frame, in definition order (``api`` and ``monitoring``,
#: imported above, define them all)
FRAME_FUNCTIONS = registry.functions()


def _method(name: str) -> Any:
    fn = getattr(api, name, None) or getattr(monitoring, name)

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return fn(self._frame, *args, **kwargs)

    params = list(inspect.signature(fn).parameters.values())
    self_ = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    method.__signature__ = inspect.signature(fn).replace(parameters=[self_, *params[1:]])  # type: ignore[attr-defined]
    method.__name__ = name
    method.__doc__ = fn.__doc__
    return method


def _init(self: Any, frame: Any) -> None:
    self._frame = frame


def make_handle(cls_name: str, names: Sequence[str], doc: str) -> type:
    """A handle class with one method per name of ``names`` (each in :data:`FRAME_FUNCTIONS`)."""
    unknown = [n for n in names if n not in FRAME_FUNCTIONS]
    if unknown:
        raise ValueError(f"not public frame functions: {unknown}")
    ns: dict[str, Any] = {"__slots__": ("_frame",), "__init__": _init, "__doc__": doc, "__module__": __name__}
    for n in names:
        m = _method(n)
        m.__qualname__ = f"{cls_name}.{n}"
        ns[n] = m
    return type(cls_name, (), ns)


Calib = make_handle("Calib", FRAME_FUNCTIONS,
                    "Calibration methods bound to one frame: ``Calib(df).ece(...) == calframe.ece(df, ...)``.")


def calib(frame: Any) -> Any:
    """A handle with the calibration methods of ``frame`` (same as ``frame.calib``).

    Examples
    --------
    >>> import polars as pl, calframe
    >>> df = pl.DataFrame({"prob": [0.9, 0.8, 0.3, 0.6], "label": [1, 0, 0, 1]})
    >>> calframe.calib(df).ece() == calframe.ece(df)
    True
    """
    return Calib(frame)
