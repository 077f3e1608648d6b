"""docs/comparison.md stays true: every calframe name in it exists and takes the keywords shown, every public
function, recalibrator and plot of calframe is in it, every row where calframe has "—" says why, and every peer name
exists in that peer: live for the peers in the test extras (model-diagnostics, relplot, scikit-learn,
uncertainty-calibration, betacal, venn-abers), and for those that pull in PyTorch or statsmodels (probmetrics, netcal,
torchmetrics, calibration-belt) against the names tests/oracles/peer_names.py found in them (``STORED``).

Work under way (issue 32) is written in the calframe column as "— (planned, issue 32: `calframe.name`)": such a name
may or may not exist yet, and counts as on the page, so the function's arrival does not break this test; the row is
turned into a calframe cell when it is merged."""

from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path

import pytest

import calframe
from calframe import registry
from calframe.recalibrate import REGISTRY

sys.path.insert(0, str(Path(__file__).parent / "oracles"))
import peer_names as P  # noqa: E402  (the page's parser; the stored peers are imported only by its main)

ROOT = Path(__file__).resolve().parent.parent
TEXT = P.PAGE.read_text()
ROWS = P.rows(TEXT)
COLUMNS = ["calframe", *P.PEER_COLUMNS, "others"]

#: what tests/oracles/peer_names.py printed: peer -> (version, the page's names that exist in it)
STORED = {
    'probmetrics': ('1.3.0', [
        'probmetrics.calibrators.BetacalCalibrator',
        'probmetrics.calibrators.BinaryHistogramBinningCalibrator',
        'probmetrics.calibrators.BinaryPlattBinnerCalibrator',
        'probmetrics.calibrators.CDFSplineCalibrator',
        'probmetrics.calibrators.Calibrator',
        'probmetrics.calibrators.CatBoostCalibrator',
        'probmetrics.calibrators.CenteredIsotonicRegressionCalibrator',
        'probmetrics.calibrators.DirichletCalibrator',
        'probmetrics.calibrators.MatrixScalingCalibrator',
        'probmetrics.calibrators.NetcalBBQCalibrator',
        'probmetrics.calibrators.SVSCalibrator',
        'probmetrics.calibrators.TemperatureScalingCalibrator',
        'probmetrics.calibrators.VectorScalingCalibrator',
        'probmetrics.calibrators.VennAbersCalibrator',
        'probmetrics.calibrators.get_calibrator',
        'probmetrics.metrics.Accuracy',
        'probmetrics.metrics.BrierLoss',
        'probmetrics.metrics.CalibrationError',
        'probmetrics.metrics.KolmogorovSmirnovCalibrationMetric',
        'probmetrics.metrics.KuiperCalibrationMetric',
        'probmetrics.metrics.LogLoss',
        'probmetrics.metrics.Metrics.compute_all',
        'probmetrics.metrics.Metrics.compute_all_from_labels_logits',
        'probmetrics.metrics.MetricsWithCalibration',
        'probmetrics.metrics.OverConfidenceLoss',
        'probmetrics.metrics.SmoothCalibrationError',
        'probmetrics.metrics.TopClassLoss',
        'probmetrics.metrics.UnderConfidenceLoss',
        'probmetrics.splitters.CVSplitter',
    ]),
    'netcal': ('1.4.0', [
        'netcal.binning.BBQ',
        'netcal.binning.ENIR',
        'netcal.binning.HistogramBinning',
        'netcal.binning.IsotonicRegression',
        'netcal.binning.NearIsotonicRegression',
        'netcal.metrics.ACE',
        'netcal.metrics.ECE',
        'netcal.metrics.ECE.measure',
        'netcal.metrics.MCE',
        'netcal.metrics.MMCE',
        'netcal.presentation.ReliabilityDiagram',
        'netcal.regularization.MMCEPenalty',
        'netcal.scaling.BetaCalibration',
        'netcal.scaling.BetaCalibrationDependent',
        'netcal.scaling.LogisticCalibration',
        'netcal.scaling.LogisticCalibrationDependent',
        'netcal.scaling.TemperatureScaling',
    ]),
    'torchmetrics': ('1.9.0', [
        'torchmetrics.classification.BinaryCalibrationError',
        'torchmetrics.classification.MulticlassCalibrationError',
        'torchmetrics.functional.classification.binary_calibration_error',
    ]),
    'calibration-belt': ('0.1.41', [
        'calibration.CalibrationBelt.calculate_boundaries',
        'calibration.CalibrationBelt.plot',
        'calibration.CalibrationBelt.test',
    ]),
}

#: calframe's modules whose public names the page may use, beside calframe's own
SUBMODULES = ("plot", "expr", "sql", "sklearn")


def _planned(cell: str) -> bool:
    return cell.startswith("—")


def _calframe_spans() -> list[tuple[str, str, bool]]:
    """(feature, span, planned) for every span of the calframe column."""
    return [(r.feature, s, _planned(r.cells["calframe"])) for r in ROWS for s in P.spans(r.cells["calframe"])]


def test_every_table_has_the_same_columns_and_rows_are_filled():
    assert len(ROWS) >= 50
    sections = {r.section for r in ROWS}
    assert {"Binned errors", "Bin-free errors", "Scores and decompositions", "Tests of calibration", "Recalibrators",
            "Plots"} <= sections
    for r in ROWS:
        assert list(r.cells) == COLUMNS, r.section
        for column, cell in r.cells.items():
            assert cell, (r.feature, column)
            assert cell.startswith("—") or P.spans(cell), f"{r.feature} / {column}: a name in backticks, or —"


@pytest.mark.parametrize("feature,span,planned", _calframe_spans())
def test_calframe_names_exist(feature, span, planned):
    name, args, keywords = P.parse(span)
    parts = name.split(".")
    assert parts[0] == "calframe", span
    if planned:  # planned (issue 32): may exist or not yet
        return
    if len(parts) >= 3 and parts[1] in SUBMODULES:
        module = importlib.import_module(f"calframe.{parts[1]}")
        assert parts[2] in module.__all__, span
    else:
        assert len(parts) == 2 and parts[1] in calframe.__all__, span
    obj = P.resolve(name)
    assert callable(obj), span
    assert not set(keywords) - P.accepted(obj), f"{span}: {name} takes no such keyword"
    if name == "calframe.fit":
        assert args and args[0] in REGISTRY, f"{span}: not a method of calframe.recalibrate"


def test_every_calframe_function_recalibrator_and_plot_is_on_the_page():
    named = {P.parse(s)[0] for _, s, _ in _calframe_spans()}
    fits = {P.parse(s)[1][0] for _, s, _ in _calframe_spans() if P.parse(s)[0] == "calframe.fit" and P.parse(s)[1]}
    import calframe.plot

    missing = [f"calframe.{f}" for f in (*registry.functions(), *registry.figures()) if f"calframe.{f}" not in named]
    missing += [f'calframe.fit("{m}")' for m in REGISTRY if m != "per_group" and m not in fits]
    missing += [f"calframe.plot.{p}" for p in calframe.plot.__all__
                if not any(n == f"calframe.plot.{p}" or n.startswith(f"calframe.plot.{p}.") for n in named)]
    assert not missing, f"not in docs/comparison.md (add a row, or the function to a row): {missing}"


def test_every_lack_says_why():
    for r in ROWS:
        if _planned(r.cells["calframe"]):
            section = " ".join(TEXT.split(f"## {r.section}\n", 1)[1].split("\n## ", 1)[0].split())
            assert f"- **{r.feature}**" in section, f"{r.feature}: calframe has —, say why under the table"


def _peer_spans(stored: bool) -> list[tuple[str, str, str]]:
    out = []
    for r in ROWS:
        for column in COLUMNS[1:]:
            for span in P.spans(r.cells[column]):
                peer = P.peer_of(column, P.parse(span)[0])
                if (peer in P.STORED_PEERS) == stored:
                    out.append((peer, r.feature, span))
    return out


def test_the_others_column_names_each_package_before_its_functions():
    for r in ROWS:
        cell = r.cells["others"]
        for span in P.spans(cell):
            peer = P.peer_of("others", P.parse(span)[0])
            assert peer in cell and cell.index(peer) < cell.index(f"`{span}`"), f"{r.feature}: say {peer} first"


@pytest.mark.parametrize("peer,feature,span", _peer_spans(stored=False))
def test_installed_peer_names_exist(peer, feature, span):
    name, _, keywords = P.parse(span)
    obj = P.resolve(name)
    assert not set(keywords) - P.accepted(obj), f"{span}: {name} takes no such keyword"


@pytest.mark.parametrize("peer,feature,span", _peer_spans(stored=True))
def test_stored_peer_names_exist(peer, feature, span):
    """Checked by tests/oracles/peer_names.py in the peers' own virtualenv, keywords included: rerun it when the
    page names something new."""
    assert P.parse(span)[0] in STORED[peer][1], f"{span}: rerun tests/oracles/peer_names.py and store its output"


def test_the_page_is_linked_from_the_index_and_the_site():
    assert "(comparison.md)" in (ROOT / "docs" / "index.md").read_text()
    assert "comparison.md" in (ROOT / "mkdocs.yml").read_text()
