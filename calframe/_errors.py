"""The exceptions calframe raises for bad input.

Every input problem is raised before any kernel runs, as a subclass of
:class:`CalframeError` that is also a ``ValueError`` or ``TypeError`` so that
generic handlers keep working. Messages name the column, the problem, how many
rows are affected, and what to do.
"""

from __future__ import annotations

import warnings
from typing import Any


class CalframeError(Exception):
    """Base class of every error calframe raises for bad input."""


class ColumnNotFoundError(CalframeError, ValueError):
    """A named column is missing, or a default column name is missing or ambiguous."""


class ColumnTypeError(CalframeError, TypeError):
    """A column has a dtype calframe cannot use (e.g. strings where numbers are needed)."""


class InvalidValueError(CalframeError, ValueError):
    """Rows hold values outside what the column may hold (NaN, out of range, nulls, ...)."""


class EmptyInputError(CalframeError, ValueError):
    """The frame, or a group, has no rows to evaluate."""


class ParameterError(CalframeError, ValueError):
    """A parameter value is invalid; ``param`` names the parameter when one is to blame (else None)."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


class RecalibratorFileError(CalframeError, ValueError):
    """A saved recalibrator cannot be loaded: not a calframe file, unknown version or method, invalid values, bad
    shapes, a checksum or signature mismatch."""


class UnsafeForkError(CalframeError, RuntimeError):
    """calframe cannot run in this process: it was forked from one whose Polars thread pool or GNU OpenMP
    threads had started (they deadlock or terminate in a fork child). Use a ``spawn`` or ``forkserver``
    multiprocessing context."""


class CalframeWarning(UserWarning):
    """Something was done to the data that the caller should know about (e.g. rows dropped)."""


def rows(n: int) -> str:
    """'1 row' / '12 rows'."""
    return f"{n} row" if n == 1 else f"{n} rows"


def bad_param(func: str, name: str, expected: str, got: Any) -> ParameterError:
    """The one message template for invalid parameters."""
    return ParameterError(f"The {name!r} parameter of {func} must be {expected}. Got {got!r} instead.", name)


def warn(message: str) -> None:
    """Warn, attributed to the first caller outside the calframe package."""
    import os
    import sys

    pkg = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(pkg + os.sep):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, CalframeWarning, stacklevel=level)
