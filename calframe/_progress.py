"""Progress bars on long work: the one policy (docs/spec.md section 8, "Progress bars").

A loop says only what it is: ``bar = steps(n_boot, "bootstrap")``, then ``bar.update(r)`` as draws finish. This module
decides whether anyone sees it:

* off with ``progress=False`` (the public functions' keyword: :func:`setting`), or with the environment
  variable ``CALFRAME_PROGRESS=0`` (also ``false``, ``no``, ``off``), on a Dask ``distributed`` worker, and
  when tqdm is not installed;
* on, from the first step, with ``progress=True`` or ``CALFRAME_PROGRESS=1`` (``true``, ``yes``, ``on``);
  the keyword wins over the variable;
* otherwise (the default, ``progress=None``) shown only when standard error is a terminal and the loop is
  expected to take :data:`DELAY` seconds or more: after each step the time so far is extrapolated to the
  whole loop, so a fast call never flashes a bar and a long one shows it within its first steps.

The bar is tqdm's, on standard error. It only counts: the work, its order and its results are the same with
or without it. The choice is a context variable: it holds for the calling thread's loops (a thread of
Polars' pool, where ``calframe.expr`` runs, starts from the default), and :func:`carry` takes it along to
work that runs later (a Dask result's continuation).

>>> with steps(3, "example") as bar:  # not a terminal here: no bar, the loop runs as it would
...     for _ in range(3):
...         bar.update()
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any, TypeVar

import numpy as np

from ._errors import bad_param

#: the environment variable: 0 / false / no / off: never; 1 / true / yes / on: always (``progress=`` wins)
ENV = "CALFRAME_PROGRESS"
#: seconds a loop is expected to take in all before its bar is shown, by default (and it shows once a quarter of
#: that has passed: an uneven loop whose first step is slow does not flash one)
DELAY = 2.0
_OFF, _ON = ("0", "false", "no", "off"), ("1", "true", "yes", "on")

#: the ``progress=`` of the call being run (None: the environment variable, else the default)
_choice: ContextVar[bool | None] = ContextVar("calframe_progress", default=None)

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


def check(func: str, progress: Any) -> bool | None:
    """``progress``: True, False or None."""
    if progress is None or isinstance(progress, (bool, np.bool_)):
        return None if progress is None else bool(progress)
    raise bad_param(func, "progress", "True (always show progress bars), False (never) or None (when standard "
                    "error is a terminal and the work takes seconds; CALFRAME_PROGRESS=0/1 decides instead)",
                    progress)


@contextlib.contextmanager
def setting(func: str, progress: Any) -> Iterator[None]:
    """Run the body with the call's ``progress=`` (checked; None keeps the enclosing choice)."""
    choice = check(func, progress)
    if choice is None:
        yield
        return
    token = _choice.set(choice)
    try:
        yield
    finally:
        _choice.reset(token)


def honours(fn: F) -> F:
    """A public function whose keyword-only ``progress`` parameter holds for everything it runs."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        with setting(fn.__name__, kwargs.get("progress")):
            return fn(*args, **kwargs)

    return call  # type: ignore[return-value]


def carry(fn: F) -> F:
    """``fn`` run, whenever and in whatever thread, under the progress choice in force now."""
    choice = _choice.get()

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        with setting("calframe", choice):
            return fn(*args, **kwargs)

    return call  # type: ignore[return-value]


def mode() -> str:
    """``"off"``, ``"on"`` (forced) or ``"auto"``, from ``progress=`` then :data:`ENV`."""
    choice = _choice.get()
    if choice is not None:
        return "on" if choice else "off"
    env = os.environ.get(ENV, "").strip().lower()
    return "off" if env in _OFF else "on" if env in _ON else "auto"


def _on_dask_worker() -> bool:
    distributed = sys.modules.get("distributed")
    if distributed is None:
        return False
    try:
        distributed.get_worker()
    except ValueError:
        return False
    return True


def _terminal() -> bool:
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError):  # no stderr, or a closed one
        return False


def _tqdm() -> Any:
    """tqdm's bar class, or None when tqdm is not installed (no bar)."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


def _width() -> dict[str, Any]:
    """tqdm's size options: follow the terminal, or 80 x 20 where it reports no size (a pseudo-terminal without
    one, e.g. `script` in CI, reports 0 x 0, and tqdm then hides every bar as "outside the screen")."""
    try:
        size = os.get_terminal_size(sys.stderr.fileno())
        if size.columns > 0 and size.lines > 0:
            return {"dynamic_ncols": True}
    except (AttributeError, OSError, ValueError):
        pass
    return {"ncols": 80, "nrows": 20}


#: shown bars open in each thread: a bar opened inside another is removed when done (the outermost one stays)
_open = threading.local()


class _Bar:
    """A loop's counter; the tqdm bar behind it opens when the policy says so (auto: once the loop is expected to
    take :data:`DELAY` seconds) and closes when the last step is done (or on :meth:`close`, or at the end of a
    ``with`` block)."""

    __slots__ = ("total", "desc", "unit", "done", "start", "bar", "waiting")

    def __init__(self, total: int, desc: str, unit: str, forced: bool) -> None:
        self.total, self.desc, self.unit = total, desc, unit
        self.done, self.start, self.bar, self.waiting = 0, time.perf_counter(), None, not forced
        if forced:
            self._open()

    def _open(self) -> None:
        cls = _tqdm()
        self.waiting = False
        if cls is not None:
            depth = getattr(_open, "n", 0)
            self.bar = cls(total=self.total, desc=self.desc, unit=self.unit, initial=self.done, leave=depth == 0,
                           file=sys.stderr, **_width())
            _open.n = depth + 1

    def update(self, n: int = 1) -> None:
        """``n`` more steps done."""
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
        elif self.waiting and 0 < self.done < self.total:  # after the last step there is nothing to show
            elapsed = time.perf_counter() - self.start
            if elapsed >= DELAY / 4 and elapsed * self.total >= DELAY * self.done:  # expected to take DELAY s
                self._open()
        if self.done >= self.total:
            self.close()

    def close(self) -> None:
        """Close the bar (a loop that stops early)."""
        self.waiting = False
        if self.bar is not None:
            bar, self.bar = self.bar, None
            bar.close()
            _open.n = max(getattr(_open, "n", 1) - 1, 0)

    def __del__(self) -> None:  # a loop left by an exception
        self.close()

    def __enter__(self) -> "_Bar":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _NoBar:
    """The counter of a loop nobody sees."""

    __slots__ = ()

    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> "_NoBar":
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


_NO_BAR = _NoBar()


#: per thread: ``[call, kernels compiled, tqdm bar or None]`` while a public call compiles kernels
_compiles = threading.local()


def compiling(kernel: str, call: str | None) -> bool:
    """Count one kernel compile of the public function ``call``: from its second compile on (where bars are
    shown, :func:`mode`), a bar counts the call's compiles and names the kernel being compiled, and this returns
    True; otherwise False, and the caller prints its one-line notice. :func:`compiles_done` closes the bar when the
    call returns (``_runtime.entry``). Compiles outside a public call are never counted on a bar.

    >>> compiling("binned_pass_class1", None), compiling("binned_pass_top1", "ece")  # not a terminal here
    (False, False)
    >>> compiles_done()
    """
    state = getattr(_compiles, "state", None)
    if call is None:
        return False
    if state is None or state[0] != call:
        compiles_done()
        state = _compiles.state = [call, 0, None]
    state[1] += 1
    if state[2] is None:
        how = mode()
        cls = _tqdm()
        if state[1] < 2 or cls is None or how == "off" or _on_dask_worker() or (how == "auto" and not _terminal()):
            return False
        state[2] = cls(total=None, desc=f"compiling calframe kernels for calframe.{call}", unit=" kernels",
                       initial=state[1] - 1, file=sys.stderr, **_width())
    state[2].set_postfix_str(kernel, refresh=False)
    state[2].update(1)
    return True


def compiles_done() -> None:
    """Close the compile bar of this thread's public call, if one was shown (:func:`compiling`)."""
    state = getattr(_compiles, "state", None)
    _compiles.state = None
    if state is not None and state[2] is not None:
        state[2].close()


def iterate(items: Sequence[T], desc: str, *, unit: str = "step") -> Iterator[T]:
    """``items``, counted: each step is done when the loop asks for the next item."""
    bar = steps(len(items), desc, unit=unit)
    return iter(items) if bar is _NO_BAR else _counting(items, bar)


def _counting(items: Sequence[T], bar: _Bar | _NoBar) -> Iterator[T]:
    try:
        for item in items:
            yield item
            bar.update()
    finally:
        bar.close()


def steps(total: int, desc: str, *, unit: str = "step") -> _Bar | _NoBar:
    """The counter of a loop of ``total`` steps called ``desc``: call ``.update(n)`` as steps finish (it closes
    itself after the last; ``with steps(...) as bar:`` closes it too when the loop stops early)."""
    how = mode()
    if how == "off" or total < 1 or _on_dask_worker() or (how == "auto" and (total < 2 or not _terminal())):
        return _NO_BAR
    return _Bar(int(total), desc, unit, how == "on")
