"""The pytest header names the versions a run checked against (issue 22: a failure report says what it ran on)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from conftest import HEADER_DISTRIBUTIONS, installed_versions


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
