"""The pytest header names the versions a run checked against (issue 22: a failure report says what it ran on)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from conftest import HEADER_DISTRIBUTIONS, installed_versions, pytest_terminal_summary


def test_header_lists_every_runtime_and_peer_version(request: pytest.FixtureRequest) -> None:
    """The registered hook's lines (as pytest prints them) hold each distribution with the version its module
    reports, or "not installed"."""
    config = request.config
    lines = [line for result in config.hook.pytest_report_header(config=config, start_path=Path(config.rootpath))
             for line in ([result] if isinstance(result, str) else result)]
    versions = [line for line in lines if line.startswith("versions: ")]
    assert len(versions) == 1, lines
    entries = versions[0].removeprefix("versions: ").split(", ")
    shown = dict(re.fullmatch(r"(\S+) (not installed|\S+)", entry).groups() for entry in entries)
    assert list(shown) == list(HEADER_DISTRIBUTIONS)
    assert shown["numpy"] == np.__version__ and shown["polars"] == pl.__version__
    for name, module in [("scikit-learn", "sklearn"), ("hypothesis", "hypothesis"), ("numba", "numba")]:
        try:
            want = __import__(module).__version__
        except ImportError:
            want = "not installed"
        assert shown[name] == want


def test_a_missing_distribution_is_named_not_installed() -> None:
    assert installed_versions(("numpy", "calframe-no-such-distribution")) == (
        f"numpy {np.__version__}, calframe-no-such-distribution not installed")


@pytest.mark.parametrize("verbosity, shown", [(-1, True), (0, False), (1, False)])
def test_quiet_runs_print_the_versions_after_the_summary(verbosity: int, shown: bool) -> None:
    """``pytest -q`` (``make test``) prints no header: the versions line then ends the summary, once."""

    class Reporter:
        def __init__(self) -> None:
            self.lines: list[str] = []

        def write_line(self, line: str) -> None:
            self.lines.append(line)

    class Config:
        def get_verbosity(self) -> int:
            return verbosity

    reporter = Reporter()
    pytest_terminal_summary(reporter, 0, Config())  # type: ignore[arg-type]
    assert reporter.lines == ([f"versions: {installed_versions()}"] if shown else [])
