"""Heavy optional modules, imported on first use: ``import calframe`` loads Polars, pyarrow and numpy only.

pandas (0.3-0.4 s), scipy, scikit-learn, matplotlib, Dask, DuckDB and PySpark are imported when a call
needs them. Modules write ``from ._imports import pd`` and use ``pd.<name>`` as before; a frame-type test
that must not import pandas asks :func:`calframe.frames.kinds.is_pandas_frame` (an object cannot be a pandas
frame while pandas is not imported). ``df.calib`` on pandas is registered when pandas is imported, before or
after calframe (:func:`when_imported`).

Examples
--------
>>> pd
<lazy module 'pandas'>
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any


class LazyModule:
    """A stand-in for a module that imports it at the first attribute access."""

    def __init__(self, name: str) -> None:
        self.__dict__["_name"] = name

    def _module(self) -> ModuleType:
        mod = self.__dict__.get("_mod")
        if mod is None:  # imported once, then every attribute read is a plain getattr
            mod = self.__dict__["_mod"] = importlib.import_module(self.__dict__["_name"])
        return mod

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._module(), attr)

    def __setattr__(self, attr: str, value: Any) -> None:  # monkeypatching in tests reaches the real module
        setattr(self._module(), attr, value)

    def __repr__(self) -> str:
        return f"<lazy module {self.__dict__['_name']!r}>"


def lazy_function(module: str, name: str) -> Callable[..., Any]:
    """A function of ``module`` that imports the module at its first call (kernels: numba loads then)."""

    found: list[Callable[..., Any]] = []

    def call(*args: Any, **kwargs: Any) -> Any:
        if not found:  # imported at the first call only
            found.append(getattr(importlib.import_module(module), name))
        return found[0](*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"``{module}.{name}``, imported at the first call."
    return call


pd = LazyModule("pandas")
sfft = LazyModule("scipy.fft")


_hooks: dict[str, list[Callable[[ModuleType], None]]] = {}
_hook_lock = threading.Lock()


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs the callbacks of :func:`when_imported` right after their module finished importing."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname not in _hooks:
            return None
        sys.meta_path.remove(self)  # find the real spec with the other finders
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        run = _run_hooks

        class _Loader(importlib.abc.Loader):
            def create_module(self, spec: Any) -> Any:
                return loader.create_module(spec)

            def exec_module(self, module: ModuleType) -> None:
                loader.exec_module(module)
                run(fullname, module)

            def __getattr__(self, attr: str) -> Any:
                return getattr(loader, attr)

        spec.loader = _Loader()
        return spec


_finder = _AfterImport()


def _run_hooks(name: str, module: ModuleType) -> None:
    with _hook_lock:
        hooks = _hooks.pop(name, [])
        if not _hooks and _finder in sys.meta_path:
            sys.meta_path.remove(_finder)
    for hook in hooks:
        hook(module)


def when_imported(name: str, hook: Callable[[ModuleType], None]) -> None:
    """Call ``hook(module)`` now if ``name`` is imported, else right after it is first imported."""
    with _hook_lock:
        mod = sys.modules.get(name)
        if mod is None:
            _hooks.setdefault(name, []).append(hook)
            if _finder not in sys.meta_path:
                sys.meta_path.insert(0, _finder)
            return
    hook(mod)
