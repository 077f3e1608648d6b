"""What the report says: the verdict rule and the headline, lens-aware labels, and the console output of
`calframe report` and `calframe demo` (100 columns by default; the demo's printed calls give its results).
The page in a browser is tests/test_report_browser.py."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import calframe
from calframe.report import build_report, rule

WIDTH = 100


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "calframe", *args], capture_output=True, text=True)


def numpy_ece(p: np.ndarray, y: np.ndarray, bins: int = 15) -> float:
    """Binned ECE of the positive class, written out: [a, b) bins of width 1/bins, p = 1 in the last one."""
    b = np.minimum((p * bins).astype(int), bins - 1)
    return sum(abs(p[b == k].mean() - y[b == k].mean()) * (b == k).sum() for k in np.unique(b)) / len(p)


# --------------------------------------------------------------------------- the verdict and the headline


@pytest.fixture(scope="module")
def calibrated() -> pl.DataFrame:
    """A calibrated model: label ~ Bernoulli(prob), in two groups."""
    rng = np.random.default_rng(7)
    p = rng.uniform(0.05, 0.95, 40_000)
    return pl.DataFrame({"prob": p, "label": (rng.uniform(size=p.size) < p).astype(np.int8),
                         "g": rng.choice(["a", "b"], p.size)})


def test_headline_of_a_calibrated_model_without_intervals(calibrated):
    p, y, g = calibrated["prob"].to_numpy(), calibrated["label"].to_numpy(), calibrated["g"].to_numpy()
    per = {k: numpy_ece(p[g == k], y[g == k]) for k in ("a", "b")}
    worst = max(per, key=per.get)
    rep = build_report(calibrated, by="g", ci=None)
    # p_calibrated is at least 0.001 (+ 1 / 2001): the share the test spends on the bins' frequencies (issue 31)
    p_cal = calframe.calibration_test(calibrated)["p_calibrated"][0]
    assert 0.001 < p_cal <= 0.05
    assert rep.headline() == (f"Calibrated overall (ECE {numpy_ece(p, y):.4f}; ECE >= 0.03 rejected, p = {p_cal:.2g}); "
                              f"calibrated in every g "
                              f"(worst g={worst}, ECE {per[worst]:.4f}).")
    strict = build_report(calibrated, by="g", ci=None, tolerance=0.001).headline()
    # a calibrated model (population ECE 0) is within a tolerance of 0.001 too: the data cannot reject that
    # (the plug-in ECE, 0.004, is above it only by its upward bias); so undecided, never "not calibrated"
    assert strict.startswith("Undecided overall") and "2 more" not in strict and "1 more of 2 g groups" in strict
    with pytest.raises(calframe.ParameterError, match="tolerance"):
        build_report(calibrated, ci=None, tolerance=0)


@pytest.mark.parametrize("by", [["class"], ["status"], ["g", "class"]])
def test_headline_counts_groups_whatever_the_column_is_called(calibrated, by):
    """"and 2 more of 4 class groups", never "classs" or "statuss": the column's name is not pluralised."""
    df = calibrated.with_columns(k=(pl.int_range(pl.len()) % 2).cast(pl.String))  # 4 groups either way
    df = df.with_columns((pl.col("g") + pl.col("k")).alias(by[0])) if len(by) == 1 else df.rename({"k": by[1]})
    text = build_report(df, by=by, ci=None, tolerance=0.001).headline()
    noun = f"{by[0]} groups" if len(by) == 1 else "groups"
    assert f" and 3 more of 4 {noun}" in text, text
    assert f"{by[0]}s" not in text and "group groups" not in text, text


def test_report_json_holds_the_headline(calibrated):
    rep = build_report(calibrated, ci=None)
    assert rep.to_dict()["headline"] == rep.headline() and rep.options["tolerance"] == 0.03


# --------------------------------------------------------------------------- lens-aware labels


def test_labels_follow_the_lens():
    pytest.importorskip("matplotlib")
    from calframe.report import displays

    df = calframe.datasets.grouped_miscalibration(n=3000, seed=2, age_shift=0.15)
    for lens, x, y, curve_y, text_not in (
            ("class:1", "Mean predicted probability of class 1", "Frequency of class 1",
             "Frequency / probability of class 1", "top-1"),
            ("top1", "Mean confidence (top-1)", "Accuracy", "Accuracy / confidence", "class 1")):
        rep = build_report(df, variables=["age"], lens=lens, ci=None)
        page = rep.to_html()
        assert f"<th>{x}</th>" in page and f"<th>{y}</th>" in page and text_not not in page
        shown = displays(rep)
        assert shown["reliability"].hist_ax_.get_xlabel() == x and shown["reliability"].ax_.get_ylabel() == y
        assert shown["curve:age"].ax_.get_ylabel() == curve_y
        assert shown["smooth"].ax_.get_ylabel() == y and "smooth" in page.lower()


# --------------------------------------------------------------------------- smooth ECE and disparity


def _text(page: str) -> str:
    """The page's text: tags dropped, entities decoded, whitespace collapsed."""
    import html

    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


@pytest.fixture(scope="module")
def grouped() -> pl.DataFrame:
    return calframe.datasets.grouped_miscalibration(n=4000, seed=3, age_shift=0.15)


def test_smooth_section_holds_the_smooth_ece(grouped, monkeypatch):
    from calframe import report

    rep = build_report(grouped, by="region", n_boot=30)
    overall = calframe.smece(grouped)
    assert rep.summary["smece"].item() == pytest.approx(overall, rel=1e-12) == rep.smooth.smece
    per = calframe.smece(grouped, by="region")
    assert rep.by_group["region"].to_list() == per["region"].to_list()
    np.testing.assert_allclose(rep.by_group["smece"].to_numpy(), per["smece"].to_numpy(), rtol=1e-12)
    page = rep.to_html()
    section = page.split("<h2>Smooth reliability</h2>")[1].split("<h2>")[0]
    assert "without bins" in section and f"({overall:.4f} here)" in _text(section)
    assert "95% bootstrap band (30 draws)" in section and rep.smooth.lower is not None
    assert f"smooth ECE {overall:.4f} the same gap on a kernel-smoothed curve" in _text(page)  # the Overall table
    assert rep.to_dict()["smooth"]["smece"] == rep.smooth.smece
    # over the bootstrap budget: no interval, hence no band, and the note says why
    monkeypatch.setattr(report, "BOOT_BUDGET", 4000 * 30 - 1)
    small = build_report(grouped, n_boot=30)
    assert small.options["ci"] is None and small.smooth.lower is None and small.smooth.smece == rep.smooth.smece
    assert "No bootstrap band: 4,000 rows x 30 draws is over the default budget" in _text(small.to_html())


def test_disparity_comes_from_the_groups_bootstrap(grouped):
    rep = build_report(grouped, by="region", n_boot=30, seed=4)
    boot = dict(by="region", ci=0.95, n_boot=30, seed=4)
    assert rep.disparity.equals(calframe.disparity(grouped, "summary", **boot))
    summary = calframe.summary(grouped, **boot)  # then each figure on the report (the figure table's), joined
    assert rep.by_group.select(summary.columns).equals(summary)
    for name in calframe.report.report_figures():
        own = getattr(calframe, name)(grouped, **boot).drop("n", "ci_method")
        assert rep.by_group.select(own.columns).equals(own), name
    # by hand: the ECE per region (numpy); with ci the worst group has the highest lower bound and the best the
    # lowest upper bound (of the groups' own intervals: here 30 draws, so which of the two highest ECEs is worst
    # is the draws' call); the difference and ratio of their values; the bounds are the worst group's own
    p, y, g = grouped["prob"].to_numpy(), grouped["label"].to_numpy(), grouped["region"].to_numpy()
    per = {k: numpy_ece(p[g == k], y[g == k]) for k in np.unique(g)}
    ece = rep.disparity.filter(pl.col("figure") == "ece").row(0, named=True)
    groups = rep.by_group.select("region", "ece_lo", "ece_hi")
    top, low = groups.sort("ece_lo")["region"][-1], groups.sort("ece_hi")["region"][0]
    assert (ece["worst_group"], ece["best_group"]) == (f"region={top}", f"region={low}")
    assert ece["worst"] == pytest.approx(per[top], rel=1e-9) and ece["best"] == pytest.approx(per[low], rel=1e-9)
    assert ece["difference"] == pytest.approx(per[top] - per[low], rel=1e-9)
    assert ece["ratio"] == pytest.approx(min(per[top], per[low]) / max(per[top], per[low]), rel=1e-9)
    worst = rep.by_group.filter(pl.col("region") == top).row(0, named=True)
    assert (ece["worst_lo"], ece["worst_hi"]) == (worst["ece_lo"], worst["ece_hi"])
    assert ece["difference_lo"] <= ece["difference"] <= ece["difference_hi"]
    # on the page, in the By region section
    section = _text(rep.to_html().split("<h2>By region</h2>")[1].split("<h2>")[0])
    assert (f"ECE {top} {ece['worst']:.4f} [{ece['worst_lo']:.4f}, {ece['worst_hi']:.4f}] "
            f"{low} {ece['best']:.4f} [{ece['best_lo']:.4f}, {ece['best_hi']:.4f}] "
            f"{ece['difference']:.4f} [{ece['difference_lo']:.4f}, {ece['difference_hi']:.4f}] "
            f"{ece['ratio']:.4f} [{ece['ratio_lo']:.4f}, {ece['ratio_hi']:.4f}]") in section
    assert rep.to_dict()["disparity"][1]["figure"] == "ece"


def test_report_names_a_null_group_null():
    """The headline writes a null key as calframe.disparity does: ``region=null``, never Python's None."""
    df = calframe.datasets.grouped_miscalibration(n=3000, seed=0)
    df = df.with_columns(region=pl.when(pl.col("region") == "south").then(None).otherwise(pl.col("region")))
    rep = build_report(df, by="region", ci=None, tolerance=0.001)
    text = rep.headline() + " " + _text(rep.to_html())
    assert "region=null" in text and "None" not in text


# --------------------------------------------------------------------------- the console


def _lines(text: str) -> list[str]:
    return text.splitlines()


@pytest.fixture(scope="module")
def scores(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("console") / "scores.parquet"
    calframe.datasets.grouped_miscalibration(n=3000, seed=1, age_shift=0.15).write_parquet(path)
    return path


def in_process(capsys, *args: str) -> subprocess.CompletedProcess:
    """``calframe args...`` through ``calframe.cli.main`` in this process (the console text is render_text's, under
    its own pl.Config; tests/test_cli.py runs the entry point itself): no fresh interpreter loading the kernels."""
    from calframe.cli import main

    capsys.readouterr()
    code = main(list(args))
    out = capsys.readouterr()
    return subprocess.CompletedProcess(["calframe", *args], code, out.out, out.err)


def test_console_report_fits_100_columns(scores, capsys):
    for by in ("region", "region,device"):
        res = in_process(capsys, "report", str(scores), "--by", by, "--vece", "age,device", "--n-boot", "30")
        assert res.returncode == 0, res.stderr
        assert max(map(len, _lines(res.stdout))) <= WIDTH, res.stdout
        words = " ".join(res.stdout.split())
        assert "overall (ECE " in words and "most miscalibrated along age" in words
        assert "ece_lo" not in res.stdout and "log loss" not in res.stdout
    wide = in_process(capsys, "report", str(scores), "--by", "region", "--vece", "age", "--n-boot", "30", "--wide")
    assert wide.returncode == 0, wide.stderr
    assert all(f in wide.stdout for f in ("log loss", "RMSCE", "accuracy (top label)", "debiased CE"))
    assert max(map(len, _lines(wide.stdout))) > WIDTH  # everything, however wide


def _table_rows(table: str) -> list[list[str]]:
    return [[c.strip() for c in re.split("[│┆]", line)[1:-1]] for line in table.splitlines() if line.startswith("│")]


def test_demo_fits_100_columns_and_its_calls_give_its_results():
    """Replays the demo's printed statements: each printed table is what its statements give."""
    res = run("demo", "--rows", "2000", "--n-boot", "20")
    assert res.returncode == 0, res.stderr
    lines = _lines(res.stdout)
    assert max(map(len, lines)) <= WIDTH
    calls = [ln for ln in lines if re.search(r"calframe\.(ece|vece|summary|reliability|vece_rank|mlce)\(", ln)]
    assert len(calls) >= 7 and all('lens="class:1"' in ln for ln in calls)
    assert "MLCE can rise after the tree fix" in res.stdout
    ns: dict = {}
    code: list[str] = []
    checked = 0
    with pl.Config():  # the demo's pl.Config calls change only this block
        i = 0
        while i < len(lines):
            if not lines[i].startswith("┌"):
                if lines[i].strip() and not lines[i].startswith("#"):
                    code.append(lines[i])
                i += 1
                continue
            end = next(j for j in range(i, len(lines)) if lines[j].startswith("└"))
            table, src, code = "\n".join(lines[i:end + 1]).rstrip(), "\n".join(code), []
            i = end + 1
            if "method" in _table_rows(table)[0]:  # the recalibration table: the row statements once per method
                setup, row = src.split("ece = calframe.ece(out", 1)
                exec(setup, ns)
                printed = {r[0]: r[1:] for r in _table_rows(table)[2:]}
                for method, rec in (("uncalibrated", None), ("tree on age", "tree"), ("lore on age", "lore")):
                    ns["out"], ns["p"] = (ns["df"], "prob") if rec is None else (
                        calframe.apply(ns["df"], ns[rec], name="p"), "p")
                    exec("ece = calframe.ece(out" + row, ns)
                    got = [f"{ns[c]:.4f}" for c in ("ece", "vece_age", "max_region_ece", "mlce_age", "mean_lce_age")]
                    assert printed[method] == got, method
                checked += 1
                continue
            *stmts, last = ast.parse(src).body
            exec(compile(ast.Module(stmts, []), "<demo>", "exec"), ns)
            assert str(eval(compile(ast.Expression(last.value), "<demo>", "eval"), ns)) == table, src
            checked += 1
    assert checked == 6  # head, overall, per region, VECE ranking, reliability, recalibration


# --------------------------------------------------------------------------- without matplotlib (the plot extra)


def _hide_matplotlib(monkeypatch) -> None:
    """Make `import matplotlib` (and its submodules) fail, as in an install without the plot extra."""
    for name in [m for m in list(sys.modules) if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError):
        import matplotlib.pyplot  # noqa: F401


def test_page_without_matplotlib_says_how_to_draw_its_figures(grouped, monkeypatch):
    """The notes describe bars, curves and bands: without matplotlib the page says they are not drawn, where
    each would be, and that the plot extra draws them."""
    pytest.importorskip("matplotlib")
    rep = build_report(grouped, by="region", variables=["age"], ci=None)
    drawn = rep.to_html()
    assert "<img" in drawn and "calframe[plot]" not in drawn
    _hide_matplotlib(monkeypatch)
    page = rep.to_html()
    assert "<img" not in page
    text = _text(page)
    assert "matplotlib is not installed" in text and "pip install 'calframe[plot]'" in text
    for section in ("Reliability", "Smooth reliability", "Calibration along variables (VECE)"):
        body = _text(page.split(f"<h2>{section}</h2>")[1].split("<h2>")[0])
        assert "not drawn" in body and "calframe[plot]" in body, section


def test_cli_report_without_matplotlib_says_so_on_stderr(scores, tmp_path, monkeypatch, capsys):
    from calframe.cli import main

    _hide_matplotlib(monkeypatch)
    out = tmp_path / "r.html"
    assert main(["report", str(scores), "--no-ci", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "matplotlib is not installed" in err and "pip install 'calframe[plot]'" in err, err
    assert "calframe[plot]" in out.read_text() and "<img" not in out.read_text()


# --------------------------------------------------------------------------- issue 31: what the report says it did


def test_the_interval_is_named_by_the_method_it_used():
    """The rule, the page and the JSON name the bootstrap method of the intervals shown: the ``ci_method``
    column of the summary the API returns for the same call, never a method the report did not use."""
    df = calframe.datasets.grouped_miscalibration(n=600, seed=2)
    rep = build_report(df, n_boot=10)
    method = calframe.summary(df, ci=0.95, n_boot=10)["ci_method"].item()
    assert rep.options["ci_method"] == method and rep.to_dict()["options"]["ci_method"] == method
    assert f"bootstrap interval ({method}, 10 draws)" in rule(rep)
    assert f"bootstrap intervals in brackets ({method}, 10 draws" in _text(rep.to_html())
    others = {"symmetric", "bias_corrected", "percentile"} - {method}
    assert not any(m in rule(rep) for m in others)
    assert build_report(df, ci=None).options["ci_method"] is None  # no interval, no method


def test_the_headline_words_each_groups_verdict_as_it_is():
    """Each group the headline names is named with its own verdict (calframe.calibration_test's), whatever the
    overall one; a small undecided group is named beside a not calibrated one, not dropped after it."""
    rng = np.random.default_rng(5)
    p = rng.uniform(0.1, 0.9, 830)
    y = (rng.uniform(size=830) < np.r_[np.clip(p[:800] + 0.3, 0, 1), p[800:]]).astype(np.int8)
    df = pl.DataFrame({"prob": p, "label": y, "segment": ["bad"] * 800 + ["tiny"] * 30})
    tests = dict(calframe.calibration_test(df, by="segment").select("segment", "verdict").iter_rows())
    assert sorted(tests.values()) == ["not calibrated", "undecided"]  # the fixture: one of each
    head = build_report(df, by="segment", ci=None).headline()
    named = dict((g, w) for w, g in re.findall(r"(not calibrated|undecided|calibrated) for segment=(\w+)", head))
    assert named == tests, head
    assert " not for " not in head
