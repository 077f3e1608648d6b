"""The documentation site builds (``mkdocs build --strict``, what ``make docs`` runs), its API reference page is
generated from the docstrings of every public name, and no page loads anything from the network (code is
highlighted at build time by Pygments, not by highlight.js from a CDN)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import calframe

pytest.importorskip("mkdocs")
pytest.importorskip("mkdocstrings_handlers.python")

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return out


def test_api_page_documents_every_public_name(site: Path) -> None:
    html = (site / "api" / "index.html").read_text()
    ids = set(re.findall(r'id="(calframe\.[A-Za-z_][\w.]*)"', html))
    missing = [name for name in calframe.__all__ if f"calframe.{name}" not in ids]
    assert not missing, f"public names without an entry on the API page: {missing}"
    for module in ("expr", "plot", "sql", "sklearn", "datasets"):
        assert f"calframe.{module}" in ids
    # the docstring text itself is there (not just a heading): ece's summary line and its Examples
    assert "Expected calibration error" in html or "expected calibration error" in html.lower()
    assert "ReliabilityDisplay" in html and "from_predictions" in html


def test_no_page_loads_from_the_network_and_code_is_highlighted(site: Path) -> None:
    remote = []
    for page in site.rglob("*.html"):
        text = page.read_text()
        remote += [f"{page.relative_to(site)}: {m}" for m in
                   re.findall(r'<(?:script|link|img)[^>]*(?:src|href)="(?:https?:)?//[^"]*"', text)]
    assert not remote, "pages load from the network:\n" + "\n".join(remote[:10])
    index = (site / "index.html").read_text()
    assert 'class="codehilite"' in index and '<span class="kn">import</span>' in index
    assert (site / "css" / "pygments.css").exists()
