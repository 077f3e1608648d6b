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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``make test`` runs ``-n 2 --dist loadgroup``), the tests that share a slow component run
    in one worker, so it starts once per run: every ``spark`` test (one local Spark session) and the browser tests
    (one Chromium fixture per module)."""
    for item in items:
        if item.get_closest_marker("spark") is not None:
            item.add_marker(pytest.mark.xdist_group("spark"))
        elif item.nodeid.startswith("tests/test_report_browser.py"):
            item.add_marker(pytest.mark.xdist_group("browser"))
