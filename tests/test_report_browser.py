"""The HTML report in a real browser: headless Chromium renders it, a screenshot is non-blank, and the
figures in the rendered page equal what the Python API returns.

Chromium comes from Debian's `chromium` package, which `make browser` (a step of `make test`) installs
with apt-get, saying so; the tests never install anything. Without Chromium, or with CALFRAME_NO_BROWSER=1,
they skip with a reason (also under --require-extras: Chromium is a system package, not a Python extra).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import calframe

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage"]


def _find() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def chromium() -> str:
    """The Chromium executable; installing it is `make browser`'s job (run by `make test`), never a test's."""
    if os.environ.get("CALFRAME_NO_BROWSER") == "1":
        pytest.skip("CALFRAME_NO_BROWSER=1: the browser tests are switched off")
    exe = _find()
    if exe is None:
        pytest.skip("headless Chromium is not installed (Debian package 'chromium'; `make browser` installs it "
                    "with apt-get as root)")
    return exe


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[Path, object]:
    d = tmp_path_factory.mktemp("report")
    df = calframe.datasets.grouped_miscalibration(n=4000, seed=3, age_shift=0.15)
    src = d / "scores.parquet"
    df.write_parquet(src)
    out = d / "report.html"
    res = subprocess.run([sys.executable, "-m", "calframe", "report", str(src), "--by", "region", "--vece", "age",
                          "--n-boot", "50", "--out", str(out)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return out, df


def _run(exe: str, args: list[str], tmp: Path) -> subprocess.CompletedProcess:
    return subprocess.run([exe, *FLAGS, f"--user-data-dir={tmp / 'profile'}", *args], capture_output=True,
                          text=True, timeout=120)


def test_screenshot_is_not_blank(chromium, report, tmp_path):
    html, _ = report
    shot = tmp_path / "shot.png"
    res = _run(chromium, [f"--screenshot={shot}", "--window-size=1200,1800", html.as_uri()], tmp_path)
    assert shot.exists() and shot.stat().st_size > 10_000, res.stderr[-2000:]
    import matplotlib.image as mpimg

    img = mpimg.imread(shot)
    assert img.shape[0] >= 1000 and img.shape[1] >= 1000
    gray = img[..., :3].mean(axis=2)
    assert gray.std() > 0.05  # text, tables and figures, not a blank page
    assert (gray < 0.5).mean() > 0.005  # some dark pixels (text, lines)


def test_rendered_figures_equal_the_api(chromium, report, tmp_path):
    html, df = report
    res = _run(chromium, ["--dump-dom", html.as_uri()], tmp_path)
    dom = res.stdout
    assert "<h2>Reliability</h2>" in dom and "data:image/png;base64" in dom
    assert f"{calframe.ece(df):.4f}" in dom
    for row in calframe.ece(df, by="region").iter_rows(named=True):
        # the per-group summary row: region, n, accuracy (+ bounds), then ece
        m = re.search(rf"<tr><td>{row['region']}</td><td>{row['n']}</td>(.*?)</tr>", dom)
        assert m is not None and f"<td>{row['ece']:.4f}</td>" in m.group(1)
    for row in calframe.vece(df, "age", by="region").iter_rows(named=True):  # the report ranks per region
        assert f"<td>{row['vece']:.4f}</td>" in dom
    for row in calframe.vce_curve(df, "age", by="region", n_points=200).summary.iter_rows(named=True):
        assert f"<td>{row['vce']:.4f}</td>" in dom and np.isfinite(row["vce"])


# --------------------------------------------------------------------------- the `make browser` step

ROOT = Path(__file__).resolve().parents[1]


def _make_browser(tmp: Path, names: str, **env: str) -> tuple[subprocess.CompletedProcess, Path]:
    """`make browser` with a fake apt-get first on PATH that records its arguments instead of installing."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    fake = tmp / "bin"
    fake.mkdir(exist_ok=True)
    log = tmp / "apt.log"
    (fake / "apt-get").write_text(f"#!/bin/sh\necho \"$*\" >> {log}\n")
    (fake / "apt-get").chmod(0o755)
    env = {**{k: v for k, v in os.environ.items() if k != "CALFRAME_NO_BROWSER"},
           "PATH": f"{fake}:{os.environ['PATH']}", **env}
    res = subprocess.run(["make", "-s", "-C", str(ROOT), "browser", f"CHROMIUM_NAMES={names}"], env=env,
                         capture_output=True, text=True, timeout=60)
    return res, log


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="the install branch needs root")
def test_make_browser_says_what_it_installs(tmp_path):
    res, log = _make_browser(tmp_path, "no-such-browser")
    assert res.returncode == 0, res.stderr
    assert "installing chromium with apt-get (Debian package 'chromium') for the browser tests" in res.stdout
    assert log.read_text().splitlines() == ["update -qq", "install -y -qq chromium"]


def test_make_browser_is_a_no_op_when_chromium_is_there(tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "my-chromium").write_text("#!/bin/sh\n")
    (tmp_path / "bin" / "my-chromium").chmod(0o755)
    res, log = _make_browser(tmp_path, "my-chromium")
    assert res.returncode == 0 and res.stdout == "" and not log.exists(), res.stdout + res.stderr


def test_make_browser_switch_skips_it(tmp_path):
    res, log = _make_browser(tmp_path, "no-such-browser", CALFRAME_NO_BROWSER="1")
    assert res.returncode == 0 and "CALFRAME_NO_BROWSER=1" in res.stdout and not log.exists()
