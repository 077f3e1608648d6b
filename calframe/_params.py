"""The checks of parameter values: one function per kind of parameter.

Each takes ``(func, name, value, ...)``, returns the value in its canonical type
(``float``, ``int``, ``bool``, ``str``) and raises :func:`calframe._errors.bad_param`
(a ``ParameterError`` naming the parameter, what it must be and what was given)
for anything else. Booleans are never numbers here (``True`` is not ``C=1``), and
strings are never parsed (``"1.5"`` is not 1.5).

Examples
--------
>>> from calframe._params import check_positive_float, check_int_range
>>> check_positive_float("platt.fit", "C", 2)
2.0
>>> check_int_range("histogram.fit", "n_bins", 15, 1)
15
>>> check_positive_float("platt.fit", "C", "abc")
Traceback (most recent call last):
...
calframe._errors.ParameterError: The 'C' parameter of platt.fit must be a finite number > 0. Got 'abc' instead.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import Any

import numpy as np

from ._errors import bad_param


def is_int(value: Any) -> bool:
    """A Python or numpy integer, not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def is_real(value: Any) -> bool:
    """A Python or numpy integer or float, not a bool."""
    return is_int(value) or isinstance(value, (float, np.floating))


def check_positive_float(func: str, name: str, value: Any, *, below: float = math.inf,
                         allow_none: bool = False) -> float | None:
    """A finite number in (0, ``below``) as a float; None too when ``allow_none``."""
    if value is None and allow_none:
        return None
    if is_real(value):
        try:
            f = float(value)
        except OverflowError:  # an int past float64
            f = math.inf
        if 0.0 < f < below and math.isfinite(f):
            return f
    expected = "a finite number > 0" if below == math.inf else f"a number in (0, {below:g})"
    raise bad_param(func, name, expected + (" or None" if allow_none else ""), value)


def check_int_range(func: str, name: str, value: Any, low: int, high: int | None = None) -> int:
    """An integer in ``low..high`` (no upper bound when ``high`` is None) as an int."""
    if is_int(value) and low <= value and (high is None or value <= high):
        return int(value)
    expected = f"an int >= {low}" if high is None else f"an int in {low}..{high}"
    raise bad_param(func, name, expected, value)


def check_bool(func: str, name: str, value: Any) -> bool:
    """True or False (numpy booleans too)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise bad_param(func, name, "True or False", value)


def check_choice(func: str, name: str, value: Any, choices: Collection[str], *, allow_none: bool = False) -> str | None:
    """One of the strings ``choices``; None too when ``allow_none``."""
    if isinstance(value, str) and value in choices or (value is None and allow_none):
        return value if value is None else str(value)
    raise bad_param(func, name, "one of " + ", ".join(repr(c) for c in choices) + (" or None" if allow_none else ""),
                    value)
