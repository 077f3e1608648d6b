"""Progress bars on long work (issue 22 section 4; docs/spec.md section 8, "Progress bars"): calframe._progress
decides, the loops count. tqdm's class is replaced by a recorder (``bars``) so that the policy and the counts are
checked whether or not tqdm is installed; the last tests draw real tqdm bars."""

from __future__ import annotations

import sys
import threading
import types
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import calframe
from calframe import _progress as P
from calframe._errors import ParameterError


class _Recorder:
    """Stands for tqdm.tqdm: records its arguments, the steps counted and whether it was closed."""

    made: list["_Recorder"]

    def __init__(self, **kw):
        self.kw, self.n, self.closed = kw, kw.get("initial", 0), False
        self.thread = threading.current_thread().name
        if not kw["desc"].startswith("compiling calframe kernels"):  # a cold cache's compile bar: not the loops'
            type(self).made.append(self)

    def update(self, n=1):
        self.n += n

    def close(self):
        self.closed = True

    def set_postfix_str(self, s, refresh=True):  # the compile bar names the kernel being compiled
        self.postfix = s


@pytest.fixture
def bars(monkeypatch):
    """The bars opened during the test (the recorder as tqdm), on a terminal unless the test says otherwise."""
    rec = type("Rec", (_Recorder,), {"made": []})
    monkeypatch.setattr(P, "_tqdm", lambda: rec)
    monkeypatch.setattr(P, "_terminal", lambda: True)
    monkeypatch.delenv(P.ENV, raising=False)
    return rec.made


def _named(made, desc):
    return [b for b in made if b.kw["desc"] == desc]


@pytest.fixture(scope="module")
def df():
    return calframe.datasets.grouped_miscalibration(n=3000, seed=0)


# --------------------------------------------------------------------------- the policy


def test_forced_bar_counts_every_bootstrap_draw_on_stderr(bars, df):
    calframe.ece(df, ci=0.9, n_boot=37, progress=True)
    (bar,) = _named(bars, "bootstrap")
    assert bar.kw["total"] == 37 and bar.n == 37 and bar.closed
    assert bar.kw["file"] is sys.stderr and bar.kw["unit"] == "draw"


def test_every_figure_with_ci_counts_its_draws(bars, df):
    """ci= on the CE family, a companion, summary, smece, gece, vece and disparity: one bar of n_boot draws."""
    calls = [lambda: calframe.rmsce(df, ci=0.9, n_boot=11, by="region", progress=True),
             lambda: calframe.brier(df, ci=0.9, n_boot=11, progress=True),
             lambda: calframe.summary(df, ci=0.9, n_boot=11, progress=True),
             lambda: calframe.smece(df, ci=0.9, n_boot=11, progress=True),
             lambda: calframe.gece(df, ci=0.9, n_boot=11, progress=True),
             lambda: calframe.vece(df, "age", ci=0.9, n_boot=11, progress=True),
             lambda: calframe.disparity(df, "ece", by="region", ci=0.9, n_boot=11, progress=True)]
    for call in calls:
        bars.clear()
        call()
        assert [(b.kw["desc"], b.kw["total"], b.n) for b in bars] == [("bootstrap", 11, 11)]


@pytest.fixture
def slow(monkeypatch):
    """Every loop expected to take seconds (DELAY 0), and the bootstrap in steps of 2 draws (on 3000 rows)."""
    from calframe.engines import eager

    monkeypatch.setattr(P, "DELAY", 0.0)
    monkeypatch.setattr(eager, "_BOOT_BATCH_ROWS", 6000)


def test_off_without_a_terminal_by_default(bars, df, monkeypatch, slow):
    monkeypatch.setattr(P, "_terminal", lambda: False)
    calframe.ece(df, ci=0.9, n_boot=20)
    assert bars == []


def test_off_with_progress_false_and_with_the_environment_variable(bars, df, monkeypatch, slow):
    calframe.ece(df, ci=0.9, n_boot=20, bootstrap="rows")  # on a terminal, a slow loop shows (from its first step)
    assert [(b.kw["initial"], b.n) for b in bars] == [(2, 20)]
    bars.clear()
    calframe.ece(df, ci=0.9, n_boot=20, progress=False)
    monkeypatch.setenv(P.ENV, "1")
    calframe.ece(df, ci=0.9, n_boot=20, progress=False)  # the keyword wins over the variable
    for off in ("0", "false", "OFF", "no"):
        monkeypatch.setenv(P.ENV, off)
        calframe.ece(df, ci=0.9, n_boot=20)
    assert bars == []
    calframe.ece(df, ci=0.9, n_boot=20, progress=True)  # the keyword wins
    assert len(bars) == 1


def test_environment_variable_forces_bars_without_a_terminal(bars, df, monkeypatch):
    monkeypatch.setattr(P, "_terminal", lambda: False)
    monkeypatch.setenv(P.ENV, "1")
    calframe.ece(df, ci=0.9, n_boot=20)
    assert [(b.kw["total"], b.n) for b in bars] == [(20, 20)]


def test_automatic_bars_only_for_loops_expected_to_take_seconds(bars, monkeypatch):
    """On a terminal a loop shows a bar once its time so far, extrapolated, reaches DELAY: a fast loop never
    flashes one, and the count starts from the steps done before it opened."""
    bar = P.steps(10, "fast")
    for _ in range(10):
        bar.update()
    assert bars == []
    monkeypatch.setattr(P, "DELAY", 0.0)
    bar = P.steps(10, "slow")
    for _ in range(10):
        bar.update()
    (shown,) = bars
    assert (shown.kw["desc"], shown.kw["total"], shown.kw["initial"], shown.n, shown.closed) == ("slow", 10, 1, 10,
                                                                                                   True)


def test_bad_progress_values_are_refused(df):
    for bad in (1, "yes", 0.5):
        with pytest.raises(ParameterError, match=r"The 'progress' parameter of ece must be True"):
            calframe.ece(df, progress=bad)
    with pytest.raises(ParameterError, match=r"The 'progress' parameter of vece_rank"):
        calframe.vece_rank(df, progress="no")


def test_no_bar_on_a_dask_worker_even_when_forced(bars, df, monkeypatch):
    worker = types.ModuleType("distributed")
    worker.get_worker = lambda: object()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "distributed", worker)
    calframe.ece(df, ci=0.9, n_boot=20, progress=True)
    assert bars == []


def test_a_dask_result_keeps_its_call_s_choice_and_partitions_have_none(bars, df, monkeypatch):
    dd = pytest.importorskip("dask.dataframe")
    ddf = dd.from_pandas(df.to_pandas(), npartitions=3)
    quiet, shown = calframe.ece(ddf, ci=0.9, n_boot=9, progress=False), calframe.ece(ddf, ci=0.9, n_boot=9)
    monkeypatch.setenv(P.ENV, "1")  # when computed: the call's progress=False wins, else the variable decides
    quiet.compute()
    assert bars == []
    shown.compute()
    assert [(b.kw["total"], b.n) for b in bars] == [(9, 9)]
    bars.clear()
    lore = calframe.fit(df, "lore", features=["age"], gamma=0.5)
    calframe.apply(ddf, lore).compute()  # three partitions' tasks: no bar in any
    assert bars == []


def test_the_choice_is_carried_to_later_work_and_is_the_calling_thread_s(bars, monkeypatch):
    monkeypatch.setattr(P, "DELAY", 0.0)
    with P.setting("test", False):
        later = P.carry(lambda: P.mode())
        with ThreadPoolExecutor(1) as pool:  # a thread (Polars' pool too) starts from the default
            assert pool.submit(P.mode).result() == "auto"
    assert later() == "off" and P.mode() == "auto"


def test_bars_from_threads(bars, df):
    """Two calls at once on two threads: each its own bar, each complete."""
    import threading

    start = threading.Barrier(2)  # two threads of their own, running at once (a pool may reuse one thread)

    def call(n: int) -> None:
        start.wait()
        calframe.ece(df, ci=0.9, n_boot=n, progress=True)

    threads = [threading.Thread(target=call, args=(n,)) for n in (13, 17)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted((b.kw["total"], b.n) for b in bars) == [(13, 13), (17, 17)]
    assert len({b.thread for b in bars}) == 2


def test_bars_from_polars_threads(bars, df):
    """calframe called inside a Polars expression (group_by().agg() runs it on Polars' own threads): a bar per
    call, and the numbers of the calls without bars."""
    def upper(progress):
        return pl.struct("prob", "label").map_batches(
            lambda s: pl.Series([calframe.ece(s.struct.unnest(), ci=0.9, n_boot=9, progress=progress)["ece_hi"][0]]),
            return_dtype=pl.Float64, returns_scalar=True)

    on = df.group_by("region").agg(upper(True).alias("hi")).sort("region")
    assert [(b.kw["total"], b.n) for b in bars] == [(9, 9)] * 4
    off = df.group_by("region").agg(upper(False).alias("hi")).sort("region")
    assert_frame_equal(on, off, check_exact=True)


# --------------------------------------------------------------------------- the loops and their counts


def test_vece_rank_counts_its_variables(bars, df):
    out = calframe.vece_rank(df, ["age", "region", "device"], vce=True, progress=True)
    assert [(b.kw["desc"], b.kw["total"], b.n) for b in bars] == [("vece_rank", 3, 3), ("vce_curve", 3, 3)]
    assert len(out) == 3


def test_vce_curve_counts_the_draws_of_v_star_s_interval(bars, df):
    calframe.vce_curve(df, "age", n_boot=25, progress=True)
    assert [(b.kw["desc"], b.kw["total"], b.n) for b in bars] == [("v* bootstrap", 25, 25)]


def test_local_figures_count_gammas_and_rows(bars, df):
    calframe.mlce_curve(df, ["age"], gammas=[0.1, 1.0, 10.0], progress=True)
    assert [(b.kw["desc"], b.kw["total"], b.n) for b in bars] == [("mlce_curve", 3, 3)] + [("lce", 3000, 3000)] * 3
    assert [b.kw["leave"] for b in bars] == [True, False, False, False]  # the inner bars go when done
    bars.clear()
    calframe.lce(df, ["age"], progress=True)
    assert [(b.kw["desc"], b.kw["total"], b.n, b.kw["unit"]) for b in bars] == [("lce", 3000, 3000, "row")]


def test_fits_count_groups_and_tree_leaves(bars, df):
    calframe.fit(df, "platt", by="region", progress=True)
    assert [(b.kw["desc"], b.kw["total"], b.n) for b in bars] == [("fit", 4, 4)]
    bars.clear()
    rec = calframe.fit(df, "tree", variable="age", max_depth=2, progress=True)
    leaves = len(rec.thresholds) + 1
    assert [(b.kw["desc"], b.kw["total"], b.n) for b in bars] == [("tree leaves", leaves, leaves)]
    bars.clear()
    lore = calframe.fit(df, "lore", features=["age"], gamma=0.5)
    calframe.apply(df, lore, progress=True)
    assert [(b.kw["desc"], b.kw["total"], b.n) for b in bars] == [("lore", 3000, 3000)]


def test_report_counts_its_sections(bars, df):
    from calframe.report import build_report

    build_report(df, by="region", variables=["age", "device"], ci=0.9, n_boot=5, progress=True)
    (rep,) = _named(bars, "report")
    assert rep.kw["total"] == rep.n == 7 and rep.closed
    assert {b.kw["desc"] for b in bars} >= {"bootstrap", "smooth band", "vece_rank"}


def test_cli_bars_on_stderr_and_no_progress(bars, df, tmp_path, capsys, monkeypatch):
    from calframe.cli import main

    monkeypatch.setattr(P, "DELAY", 0.0)
    src = tmp_path / "s.parquet"
    df.write_parquet(src)
    assert main(["fit", str(src), "--method", "platt", "-o", str(tmp_path / "rec")]) == 0
    assert main(["apply", str(tmp_path / "rec"), str(src), "-o", str(tmp_path / "o"), "--batch-size", "700"]) == 0
    assert [(b.kw["total"], b.n, b.kw["unit"], b.kw["file"]) for b in bars] == [(3000, 3000, "row", sys.stderr)]
    bars.clear()
    assert main(["apply", str(tmp_path / "rec"), str(src), "-o", str(tmp_path / "o2"), "--no-progress"]) == 0
    assert main(["report", str(src), "--n-boot", "20", "--json", str(tmp_path / "r.json"), "--no-progress"]) == 0
    assert bars == []


# --------------------------------------------------------------------------- same results, bit for bit


def test_same_bits_with_and_without_bars(bars, df, monkeypatch):
    monkeypatch.setattr("calframe._kernels.local.PAIRS_PER_STEP", 1 << 16)  # the kernel sums in many steps
    wide = df.with_columns(x2=pl.Series(np.random.default_rng(1).normal(size=df.height)))

    def run():
        return (calframe.ece(df, ci=0.9, n_boot=30, by="region", progress=progress),
                calframe.smece(df, ci=0.9, n_boot=8, progress=progress),
                calframe.lce(wide, ["age", "x2"], gamma=0.3, prepare="standardize", progress=progress),
                calframe.vece_rank(df, progress=progress))

    progress = False
    off = run()
    progress = True
    on = run()
    for a, b in zip(off, on):
        assert_frame_equal(a, b, check_exact=True)
    assert bars


@pytest.mark.parametrize("method", ["brute", "direct"])
def test_kernel_sums_cut_into_steps_give_the_same_bits(bars, monkeypatch, method):
    """The pair kernels run in calls of PAIRS_PER_STEP pairs, the progress steps; a query's sums are one
    thread's in one call, so any cut gives the same bits (here: one call against hundreds)."""
    from calframe._kernels import local as LK

    rng = np.random.default_rng(0)
    x = rng.normal(size=(3000, 4))
    conf = rng.uniform(0.5, 1.0, 3000)
    acc = (rng.uniform(size=3000) < conf).astype(float)
    bins = np.minimum((conf * 10).astype(np.int64), 9)
    monkeypatch.setattr(LK, "PAIRS_PER_STEP", 1 << 40)
    whole = LK.lce(x, conf, acc, bins, 0.5, method)
    monkeypatch.setattr(LK, "PAIRS_PER_STEP", 5000)
    with P.setting("test", True):
        cut = LK.lce(x, conf, acc, bins, 0.5, method)
    assert np.array_equal(whole, cut)
    (bar,) = bars
    assert bar.kw["total"] == bar.n == 3000


# --------------------------------------------------------------------------- real tqdm bars


def test_a_real_tqdm_bar_on_stderr(df, capsys, monkeypatch):
    pytest.importorskip("tqdm")
    monkeypatch.delenv(P.ENV, raising=False)
    calframe.ece(df, ci=0.9, n_boot=37, progress=True)
    captured = capsys.readouterr()
    assert "bootstrap" in captured.err and "37/37" in captured.err and captured.out == ""
    calframe.ece(df, ci=0.9, n_boot=37)  # captured: not a terminal
    assert capsys.readouterr().err == ""
