"""The doctests of calframe/ (``--doctest-modules``): figures are drawn off-screen and closed after each.

The examples in the docstrings of :mod:`calframe.plot` show what a user types; the backend and the
closing of their figures are the test run's business, here.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")  # before anything imports matplotlib


@pytest.fixture(autouse=True)
def _close_doctest_figures(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None and isinstance(request.node, pytest.DoctestItem):
        plt.close("all")

