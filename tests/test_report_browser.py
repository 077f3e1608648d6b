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
    df = calframe.datasets.grouped_miscalibration(n=8000, seed=3, age_shift=0.15)
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


TOL = 0.03  # the report's default tolerance (docs/plots.md, "The verdict")


def _p(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.2g}"


def _why(t: dict) -> str:
    """The headline's evidence of a calframe.calibration_test row, as docs/plots.md ("The verdict") words it."""
    if t["verdict"] == "not calibrated":
        why = f"ECE <= {TOL:g} rejected, {_p(t['p_not_calibrated'])}"
    elif t["verdict"] == "calibrated":
        why = f"ECE >= {TOL:g} rejected, {_p(t['p_calibrated'])}"
    else:
        why = (f"neither rejected at 5%: {_p(t['p_not_calibrated'])} for ECE <= {TOL:g}, "
               f"{_p(t['p_calibrated'])} for ECE >= {TOL:g}")
    return f"; {'small, ' if t['small'] else ''}{why}"


def _pair(t: dict) -> str:
    return ", ".join("<0.001" if p < 0.001 else f"{p:.2g}" for p in (t["p_not_calibrated"], t["p_calibrated"]))


def _iv(row: dict, fig: str) -> str:
    return f"{row[fig]:.4f} [{row[fig + '_lo']:.4f}, {row[fig + '_hi']:.4f}]"


def _text(dom: str) -> str:
    """The page's text: tags dropped, entities decoded, whitespace collapsed."""
    import html

    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", dom)).split())


def _with_script(page: Path, tmp: Path, script: str) -> Path:
    """A copy of ``page`` that runs ``script`` once loaded (it writes what it measures into the DOM)."""
    out = tmp / "measured.html"
    out.write_text(page.read_text().replace("</body>", f"<script>{script}</script></body>"))
    return out


#: measures the page once loaded (writes what it finds into the DOM): its width with every collapsible detail
#: closed, then opened
MEASURE = ("document.body.setAttribute('data-closed', document.documentElement.scrollWidth);"
           "document.querySelectorAll('details').forEach(d => d.open = true);"
           "document.body.setAttribute('data-open', document.documentElement.scrollWidth);"
           "document.body.setAttribute('data-client', document.documentElement.clientWidth);"
           "document.body.setAttribute('data-details', document.querySelectorAll('details').length);")


@pytest.fixture(scope="module")
def dom(chromium, report, tmp_path_factory) -> str:
    """The page as Chromium renders it at 1280 px, measured (:data:`MEASURE`): one start of the browser serves the
    three tests that read the DOM."""
    page, _ = report
    tmp = tmp_path_factory.mktemp("dom")
    return _run(chromium, ["--window-size=1280,1000", "--dump-dom", _with_script(page, tmp, MEASURE).as_uri()],
                tmp).stdout


def test_headline_equals_the_api(report, dom):
    """The rendered headline, rebuilt here from calframe's API figures and the documented verdict rule."""
    _, df = report
    m = re.search(r"<p class=\"headline\" id=\"headline\">(.*?)</p>", dom, re.S)
    assert m is not None, dom[:2000]
    shown = _text(m.group(1))
    boot = dict(ci=0.95, n_boot=50, seed=0)  # the command's --n-boot 50 and default seed
    overall = calframe.summary(df, **boot).row(0, named=True)
    assert overall["ece"] == pytest.approx(calframe.ece(df), rel=1e-12)
    per = calframe.summary(df, by="region", **boot).sort("ece", descending=True).rows(named=True)
    test = {r["region"]: r for r in calframe.calibration_test(df, by="region").iter_rows(named=True)}  # seed 0
    whole = calframe.calibration_test(df).row(0, named=True)
    assert any(test[r["region"]]["verdict"] == "not calibrated" for r in per), "the fixture is miscalibrated in some region"
    ranks = calframe.vece(df, "age", by="region").sort("vece", descending=True).row(0, named=True)
    groups = []  # docs/plots.md: the worst group of each verdict, in its own words; then the calibrated count
    for word in ("not calibrated", "undecided"):
        hits = [r for r in per if test[r["region"]]["verdict"] == word]
        if not hits:
            continue
        more = f" and {len(hits) - 1} more of {len(per)} region groups" if len(hits) > 1 else ""
        small = sum(test[r["region"]]["small"] for r in hits)
        small = f" ({small} of these {len(hits)} small)" if len(hits) > 1 and small else ""
        times = (f", {hits[0]['ece'] / per[-1]['ece']:.1f}\u00d7 the best region ({per[-1]['region']})"
                 if hits[0] is not per[-1] else "")
        groups.append(f"{word} for region={hits[0]['region']} (ECE {_iv(hits[0], 'ece')}"
                      f"{_why(test[hits[0]['region']])}{times}){more}{small}; ")
    calibrated = sum(test[r["region"]]["verdict"] == "calibrated" for r in per)
    groups += [f"calibrated in {calibrated} of {len(per)} region groups; "] if calibrated else []
    expected = (f"{whole['verdict']} overall (ECE {_iv(overall, 'ece')}{_why(whole)}); {''.join(groups)}"
                f"most miscalibrated along age (VECE {ranks['vece']:.4f} in region={ranks['region']}).")
    assert shown == expected[0].upper() + expected[1:], (shown, expected)


def test_tables_show_the_api_figures_worst_first(report, dom):
    _, df = report
    text = _text(dom)
    per = calframe.summary(df, by="region", ci=0.95, n_boot=50, seed=0).sort("ece", descending=True)
    # the per-region table: one row per region, worst ECE first, "value [lo, hi]" in one cell
    rows = [_text(r) for r in re.findall(r"<tr>(.*?)</tr>", dom.split("<h2>By region</h2>")[1], re.S)[1:5]]
    assert [r.split()[0] for r in rows] == per["region"].to_list()
    test = {r["region"]: r for r in calframe.calibration_test(df, by="region").iter_rows(named=True)}
    for row, api in zip(rows, per.iter_rows(named=True)):
        t = test[api["region"]]
        rows_cell = f"{api['n']} (small)" if t["small"] else f"{api['n']}"
        assert row.startswith(f"{api['region']} {rows_cell} {_iv(api, 'ece')} {_iv(api, 'ce_debiased')}")
        assert row.endswith(f"{t['verdict']} {_pair(t)}")
    assert "_lo" not in text and "_hi" not in text
    vece = calframe.vece(df, "age", by="region").sort("vece", descending=True)
    section = dom.split("Calibration along variables (VECE)</h2>")[1]
    shown = [_text(r).split() for r in re.findall(r"<tr>(.*?)</tr>", section, re.S)[1:5]]
    assert [r[2] for r in shown] == vece["region"].to_list()  # variable, kind, region, rows, VECE, VMCE
    assert [r[4] for r in shown] == [f"{v:.4f}" for v in vece["vece"]]
    for row in calframe.vce_curve(df, "age", by="region", n_points=200).summary.iter_rows(named=True):
        assert f"<td>{row['vce']:.4f}</td>" in dom and np.isfinite(row["vce"])
    # lens-aware labels: the positive class, never the top label's words
    assert "Frequency of class 1" in text and "Mean predicted probability of class 1" in text
    # (the CORP section's "confidence band" is the band's name, not the top-label lens's confidence)
    assert "top-1" not in text and "confidence" not in re.sub(r"confidence bands?", "", text.lower())


def test_page_fits_1280_pixels(dom):
    """No horizontal scroll at 1280 px, with every collapsible detail closed and opened."""
    got = {k: int(v) for k, v in re.findall(r'data-(closed|open|client|details)="(\d+)"', dom)}
    assert set(got) == {"closed", "open", "client", "details"}, dom[:500]
    assert got["details"] >= 2 and 1200 <= got["client"] <= 1280
    assert got["closed"] <= got["client"] and got["open"] <= got["client"], got


def test_screenshot_at_1280_is_not_blank_and_fits(chromium, report, tmp_path):
    page, _ = report
    shot = tmp_path / "shot.png"
    res = _run(chromium, [f"--screenshot={shot}", "--window-size=1280,1800", "--hide-scrollbars", page.as_uri()],
               tmp_path)
    assert shot.exists() and shot.stat().st_size > 10_000, res.stderr[-2000:]
    import matplotlib.image as mpimg

    img = mpimg.imread(shot)
    assert img.shape[:2] == (1800, 1280)
    gray = img[..., :3].mean(axis=2)
    assert gray.std() > 0.05  # text, tables and figures, not a blank page
    assert (gray < 0.5).mean() > 0.005  # some dark pixels (text, lines)
    # the headline box (its blue left border) is near the top, and nothing is drawn in the right margin
    blue = (np.abs(img[..., 0] - 0x09 / 255) < 0.1) & (np.abs(img[..., 2] - 0xDA / 255) < 0.1)
    assert blue[:400].any()
    assert gray[:, -60:].min() > 0.95


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
