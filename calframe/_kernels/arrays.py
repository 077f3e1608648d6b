"""The few array types the hot kernels are compiled for.

numba compiles a kernel once per combination of argument types, and a type includes the dtype and whether
the array is read-only (Arrow buffers reach numpy read-only, numpy's own arrays are writable). Left alone,
the fused pass alone was compiled 28 times by the test suite of a fresh install, ~13 s each. These
functions bring a column to one of a few types before a kernel sees it:

- :func:`real`: float64 (any other real dtype converted: exact for every float32 and for integers up to
  2^53, and an integer probability outside [0, 1] stays outside);
- :func:`label`: int8 (Booleans and 1-byte integers viewed, never copied), int64 (kept), int32 or float64
  (other integers and floats converted: a value is 0 or 1 after it exactly when it was before); the fused
  pass reads float64 labels as their int64 bit patterns and int32 labels as bytes (``fused.label_words``), so it
  is compiled for int8 and int64 labels only;
- :func:`codes`: int32 or int64 group codes.

Every result is a read-only view, so a writable and a read-only column share one compiled kernel; the
caller's array is never modified and never copied where its dtype is already one of these. ``None``
passes through (an absent optional column).

Examples
--------
>>> import numpy as np
>>> from calframe._kernels import arrays as A
>>> y = A.label(np.array([True, False]))
>>> y.dtype, y.flags.writeable
(dtype('int8'), False)
>>> A.real(np.array([1, 0], dtype=np.int32)).dtype
dtype('float64')
"""

from __future__ import annotations

import numpy as np


def frozen(a: np.ndarray | None) -> np.ndarray | None:
    """A read-only, C-contiguous view of ``a`` (a copy only when it is not contiguous); None passes."""
    if a is None:
        return None
    a = np.ascontiguousarray(a)
    if a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
    return a


def real(a: np.ndarray | None) -> np.ndarray | None:
    """``a`` as read-only float64."""
    if a is None:
        return None
    return frozen(a if a.dtype == np.float64 else a.astype(np.float64))


def label(a: np.ndarray | None) -> np.ndarray | None:
    """A label column as read-only int8, int32, int64 or float64 (see the module docstring)."""
    if a is None:
        return None
    k = a.dtype.kind
    if k in "biu" and a.dtype.itemsize == 1:
        # uint8 values 2..255 view as int8 2..127 or -128..-1: never 0 or 1, so a bad label stays bad
        return frozen(a.view(np.int8))
    if a.dtype in (np.int32, np.int64):
        return frozen(a)
    if k in "iu":  # int16, uint16/32/64: a value is 0 or 1 as int64 exactly when it was before
        return frozen(a.astype(np.int64))
    return real(a)


def codes(a: np.ndarray | None) -> np.ndarray | None:
    """Integer group codes or keys as read-only int32 (kept) or int64 (any other integer dtype)."""
    if a is None:
        return None
    return frozen(a if a.dtype in (np.int32, np.int64) else a.astype(np.int64))
