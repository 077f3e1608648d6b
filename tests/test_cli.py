"""The `calframe` command on real files: through a subprocess where the process is what a test checks (the
entry point, exit statuses, usage errors, a terminal, start-up), else in this process through
``calframe.cli.main`` (the same code, without a fresh interpreter loading calframe's kernels: ~2.5 s of CPU
a run on the 2-core machine, make test's time)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import calframe


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "calframe", *args], capture_output=True, text=True, cwd=cwd)


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("cli")
    df = calframe.datasets.grouped_miscalibration(n=3000, seed=1)
    out = {"parquet": d / "scores.parquet", "csv": d / "scores.csv", "ipc": d / "scores.arrow"}
    df.write_parquet(out["parquet"])
    df.write_csv(out["csv"])
    df.write_ipc(out["ipc"])
    parts = d / "parts"
    parts.mkdir()
    for i, chunk in enumerate(df.iter_slices(1000)):
        chunk.write_parquet(parts / f"part-{i}.parquet")
    out["glob"] = parts / "*.parquet"
    out["df"] = df  # type: ignore[assignment]
    return out


def main_out(capsys, *args: str) -> tuple[int, str, str]:
    """Run ``calframe args...`` in this process (``calframe.cli.main``); returns (exit code, stdout, stderr)."""
    from calframe.cli import main

    capsys.readouterr()
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("kind", ["parquet", "csv", "ipc", "glob"])
def test_report_json_equals_api(files, kind, capsys):
    """The command itself (a subprocess) on Parquet; the other readers in this process."""
    args = ("report", str(files[kind]), "--by", "region", "--vece", "age,device", "--no-ci", "--json", "-")
    if kind == "parquet":
        res = run(*args)
        code, stdout, stderr = res.returncode, res.stdout, res.stderr
    else:
        code, stdout, stderr = main_out(capsys, *args)
    assert code == 0, stderr
    figs = json.loads(stdout)
    df = files["df"]
    assert figs["summary"][0]["ece"] == pytest.approx(calframe.ece(df), rel=1e-12)
    assert figs["summary"][0]["n"] == df.height
    by = {r["region"]: r for r in figs["by_group"]}
    api = calframe.ece(df, by="region")
    for row in api.iter_rows(named=True):
        assert by[row["region"]]["ece"] == pytest.approx(row["ece"], rel=1e-12)
    ranks = {r["variable"]: r["vece"] for r in figs["variables"] if r["region"] == "north"}
    assert ranks["age"] == pytest.approx(calframe.vece(df.filter(pl.col("region") == "north"), "age"), rel=1e-12)


def test_report_html(files, tmp_path, capsys):
    out = tmp_path / "report.html"
    code, _, err = main_out(capsys, "report", str(files["parquet"]), "--by", "region", "--vece", "age", "--n-boot", "50",
                            "--out", str(out))
    assert code == 0, err
    text = out.read_text()
    assert text.startswith("<!doctype html>") and "Reliability" in text and "VCE along age" in text
    assert f"{calframe.ece(files['df']):.4f}" in text


def test_data_error_exit_1(files, tmp_path):
    res = run("report", str(files["parquet"]), "--prob", "age")
    assert res.returncode == 1
    assert "outside [0, 1]" in res.stderr and "Traceback" not in res.stderr
    res = run("report", str(tmp_path / "missing.parquet"))
    assert res.returncode == 1 and "no such file" in res.stderr
    bad = tmp_path / "scores.xlsx"
    bad.write_text("x")
    res = run("report", str(bad))
    assert res.returncode == 1 and "unknown file type" in res.stderr


def test_usage_error_exit_2():
    res = run("report")
    assert res.returncode == 2 and "required" in res.stderr
    res = run("frobnicate")
    assert res.returncode == 2
    res = run("report", "x.parquet", "--bins", "ten")
    assert res.returncode == 2 and "invalid int" in res.stderr


def test_demo_runs():
    res = run("demo", "--rows", "2000", "--n-boot", "20")
    assert res.returncode == 0, res.stderr
    assert "For whom?" in res.stdout and "north" in res.stdout and "tree on age" in res.stdout


def test_fit_then_apply_streams_files(files, tmp_path, capsys):
    rec_path = tmp_path / "rec.calib"
    code, _, err = main_out(capsys, "fit", str(files["parquet"]), "--method", "tree", "--variable", "age", "-o",
                            str(rec_path))
    assert code == 0, err
    out_dir = tmp_path / "out"
    code, _, err = main_out(capsys, "apply", str(rec_path), str(files["glob"]), str(files["csv"]), "-o", str(out_dir),
                            "--batch-size", "300")
    assert code == 0, err
    df = files["df"]
    expected = calframe.apply(df, calframe.fit(df, "tree", variable="age"))["p_tree"].to_numpy()
    parts = pl.concat([pl.read_parquet(p) for p in sorted((out_dir).glob("part-*.parquet"))])
    np.testing.assert_allclose(parts["p_tree"].to_numpy(), expected, rtol=1e-12)
    whole = pl.read_parquet(out_dir / "scores.parquet")
    np.testing.assert_allclose(whole["p_tree"].to_numpy(), expected, rtol=1e-12)


def test_fit_per_group_and_lore_params(files, tmp_path, capsys):
    rec_path = tmp_path / "lore.parquet"
    code, _, err = main_out(capsys, "fit", str(files["parquet"]), "--method", "lore", "--features", "age", "--gamma",
                            "0.3", "--param", "lens=\"class:1\"", "--param", "standardize=true", "-o", str(rec_path))
    assert code == 0, err
    rec = calframe.load(rec_path)
    assert rec.params["gamma"] == 0.3 and rec.params["standardize"] is True
    code, _, err = main_out(capsys, "fit", str(files["parquet"]), "--method", "platt", "--by", "region", "-o",
                            str(tmp_path / "pg"))
    assert code == 0, err
    assert calframe.load(tmp_path / "pg").method == "per_group"


def test_fit_apply_errors(files, tmp_path):
    res = run("fit", str(files["parquet"]), "--method", "tree", "-o", str(tmp_path / "x"))
    assert res.returncode == 2 and "needs --variable COLUMN" in res.stderr and "Traceback" not in res.stderr  # usage
    res = run("fit", str(files["parquet"]), "-o", str(tmp_path / "x"))
    assert res.returncode == 2
    res = run("apply", str(tmp_path / "missing.calib"), str(files["parquet"]), "-o", str(tmp_path / "o"))
    assert res.returncode == 1 and "no recalibrator" in res.stderr


@pytest.mark.skipif(not __import__("shutil").which("script"), reason="util-linux 'script' (a pseudo-terminal) missing")
def test_apply_shows_a_progress_bar_on_a_terminal(files, tmp_path):
    """On a terminal (a pseudo-terminal from `script`) apply draws tqdm's bar on standard error (forced here by
    CALFRAME_PROGRESS=1: 3,000 rows take less than the 2 s after which it shows by itself); --no-progress and a
    pipe draw none (tests/test_progress.py checks the policy without a terminal)."""
    import os
    import shlex

    pytest.importorskip("tqdm")
    rec_path = tmp_path / "rec.calib"
    assert run("fit", str(files["parquet"]), "--method", "platt", "-o", str(rec_path)).returncode == 0

    def on_terminal(out: str, *extra: str) -> str:
        cmd = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "calframe", "apply", str(rec_path),
                                                str(files["parquet"]), "-o", str(tmp_path / out), "--batch-size",
                                                "500", *extra])
        res = subprocess.run(["script", "-qec", cmd, "/dev/null"], capture_output=True, text=True,
                             env={**os.environ, "CALFRAME_PROGRESS": "1"})
        assert res.returncode == 0, res.stdout + res.stderr
        return res.stdout.replace("\r", "\n")

    assert "3000/3000" in on_terminal("o")
    assert "/3000" not in on_terminal("n", "--no-progress")
    piped = run("apply", str(rec_path), str(files["parquet"]), "-o", str(tmp_path / "p"))
    assert "/3000" not in piped.stderr


# --------------------------------------------------------------------------- outputs and errors (issue 11)
# In-process through calframe.cli.main: the exit code is main's return value, the message what it printed.


def cli(capsys, *args: str) -> tuple[int, str]:
    """Run ``calframe args...`` in this process; returns (exit code, standard error)."""
    from calframe.cli import main

    capsys.readouterr()
    code = main([str(a) for a in args])
    return code, capsys.readouterr().err


def one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under root (hidden ones included), as bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def work(tmp_path, monkeypatch) -> Path:
    """tmp_path (the working directory) holding x.parquet (600 scored rows) and a saved Platt recalibrator."""
    monkeypatch.chdir(tmp_path)
    df = calframe.datasets.grouped_miscalibration(n=600, seed=3)
    df.write_parquet(tmp_path / "x.parquet")
    calframe.fit(df, "platt").save(tmp_path / "rec.parquet")
    return tmp_path


@pytest.mark.parametrize("inputs", [("a/x.parquet", "b/x.parquet"), ("a/y.csv", "a/y.parquet")])
def test_apply_refuses_two_inputs_with_one_output_name(work, capsys, inputs):
    df = pl.read_parquet(work / "x.parquet")
    for i, name in enumerate(inputs):
        (work / name).parent.mkdir(exist_ok=True)
        part = df.slice(300 * i, 300)
        part.write_csv(work / name) if name.endswith(".csv") else part.write_parquet(work / name)
    before = snapshot(work)
    code, err = cli(capsys, "apply", "rec.parquet", *inputs, "-o", "out")
    line = one_line(err)
    assert code == 2
    target = str(Path("out") / (Path(inputs[0]).stem + ".parquet"))
    assert target in line and inputs[0] in line and inputs[1] in line, line
    assert snapshot(work) == before and not (work / "out").exists()  # nothing written, not even the directory


@pytest.mark.parametrize("argv", [
    ["report", "x.parquet", "--no-ci", "--out", "x.parquet"],
    ["report", "x.parquet", "--no-ci", "--json", "./x.parquet"],
    ["fit", "x.parquet", "--method", "platt", "-o", "x.parquet"],
    ["apply", "rec.parquet", "x.parquet", "-o", "."],
    ["apply", "sub/x.parquet", "x.parquet", "-o", "sub"],  # the recalibrator (saved as sub/x.parquet) is an input
])
@pytest.mark.parametrize("overwrite", [False, True])
def test_an_output_never_replaces_an_input(work, capsys, argv, overwrite):
    (work / "sub").mkdir()
    (work / "sub" / "x.parquet").write_bytes((work / "rec.parquet").read_bytes())
    before = snapshot(work)
    code, err = cli(capsys, *argv, *(["--overwrite"] if overwrite else []))
    line = one_line(err)
    assert code == 2 and "is the input" in line, line
    assert snapshot(work) == before


def _existing(work: Path, kind: str) -> tuple[list[str], Path]:
    """The arguments of a command writing one output, and that output."""
    if kind == "html":
        return ["report", "x.parquet", "--no-ci", "--out", "r.html"], work / "r.html"
    if kind == "json":
        return ["report", "x.parquet", "--no-ci", "--json", "r.json"], work / "r.json"
    if kind == "fit-file":
        return ["fit", "x.parquet", "--method", "platt", "-o", "new.parquet"], work / "new.parquet"
    if kind == "fit-dir":
        return ["fit", "x.parquet", "--method", "platt", "-o", "newdir"], work / "newdir" / "recalibrator.json"
    return ["apply", "rec.parquet", "x.parquet", "-o", "out"], work / "out" / "x.parquet"


@pytest.mark.parametrize("kind", ["html", "json", "fit-file", "fit-dir", "apply"])
def test_an_existing_output_is_replaced_only_with_overwrite(work, capsys, kind):
    argv, out = _existing(work, kind)
    out.parent.mkdir(exist_ok=True)
    out.write_bytes(b"old contents")
    before = snapshot(work)
    code, err = cli(capsys, *argv)
    line = one_line(err)
    assert code == 2 and str(out.relative_to(work)) in line and "--overwrite" in line, line
    assert snapshot(work) == before
    code, err = cli(capsys, *argv, "--overwrite")
    assert code == 0, err
    assert out.read_bytes() != b"old contents"
    if kind == "json":
        assert json.loads(out.read_text())["summary"][0]["n"] == 600
    if kind == "apply":
        assert pl.read_parquet(out).height == 600
    if kind.startswith("fit"):
        assert calframe.load(out.parent if kind == "fit-dir" else out).method == "platt"
    assert not [p for p in work.rglob(".*") if ".tmp" in p.name]  # no temporary file left


def _fail_on_second_call(monkeypatch, module, name, exc):
    """Make module.name raise exc from its second call on (the first call's output has been written by then)."""
    original, calls = getattr(module, name), []

    def wrapped(*a, **k):
        calls.append(1)
        if len(calls) >= 2:
            raise exc
        return original(*a, **k)

    monkeypatch.setattr(module, name, wrapped)
    return calls


@pytest.mark.parametrize("exc, code", [(KeyboardInterrupt(), 130), (calframe.InvalidValueError("bad batch"), 1)])
@pytest.mark.parametrize("existing", [False, True])
def test_apply_failing_midway_leaves_no_partial_file(work, capsys, monkeypatch, exc, code, existing):
    """Ctrl-C or a bad second batch: the first batch is already written, yet no file under the final name
    appears (or the old one stays as it was, with --overwrite), and no temporary file remains."""
    if existing:
        (work / "out").mkdir()
        (work / "out" / "x.parquet").write_bytes(b"old contents")
    before = snapshot(work)
    calls = _fail_on_second_call(monkeypatch, calframe.api, "apply", exc)
    got, err = cli(capsys, "apply", "rec.parquet", "x.parquet", "-o", "out", "--batch-size", "100",
                   *(["--overwrite"] if existing else []))
    assert got == code and len(calls) == 2
    one_line(err)
    assert snapshot(work) == before  # the partial output is gone, the old output untouched


def test_apply_bad_values_in_a_later_batch_leave_no_file(work, capsys):
    df = pl.read_parquet(work / "x.parquet")
    df.with_columns(prob=pl.when(pl.int_range(pl.len()) == 450).then(1.5).otherwise("prob")).write_parquet(
        work / "late.parquet")
    before = snapshot(work)
    code, err = cli(capsys, "apply", "rec.parquet", "late.parquet", "-o", "out", "--batch-size", "100")
    assert code == 1 and "outside [0, 1]" in one_line(err)
    assert snapshot(work) == before


def test_report_and_fit_failing_while_writing_leave_no_file(work, capsys, monkeypatch):
    """A write that fails after writing part of the file (disk full, Ctrl-C) leaves nothing behind."""
    from calframe.recalibrate.base import Recalibrator

    real_write_text, real_save = Path.write_text, Recalibrator.save

    def half_write(self, text, *a, **k):
        real_write_text(self, text[: len(text) // 2], *a, **k)
        raise OSError(28, "No space left on device")

    def save_then_interrupt(self, path, **k):
        real_save(self, path, **k)
        raise KeyboardInterrupt

    before = snapshot(work)
    monkeypatch.setattr(Path, "write_text", half_write)
    for argv in (["--out", "r.html"], ["--json", "r.json"]):
        code, err = cli(capsys, "report", "x.parquet", "--no-ci", *argv)
        assert code == 1 and "No space left" in one_line(err)
        assert snapshot(work) == before
    monkeypatch.setattr(Path, "write_text", real_write_text)
    monkeypatch.setattr(Recalibrator, "save", save_then_interrupt)
    for out in ("new.parquet", "newdir"):
        code, err = cli(capsys, "fit", "x.parquet", "--method", "platt", "-o", out)
        assert code == 130
        assert snapshot(work) == before


@pytest.mark.parametrize("argv, code, named", [
    (["report", "x.parquet", "--seed", "-1"], 2, "--seed"),
    (["report", "x.parquet", "--seed", "1.5"], 2, "--seed"),
    (["demo", "--seed", "-1"], 2, "--seed"),
    (["fit", "x.parquet", "--method", "platt", "--param", "foo=1", "-o", "r.parquet"], 2, "'foo'"),
    (["fit", "x.parquet", "--method", "platt", "--param", "C=abc", "-o", "r.parquet"], 2, "C='abc'"),
    (["fit", "x.parquet", "--method", "platt", "--param", "C", "-o", "r.parquet"], 2, "key=value"),
    (["fit", "x.parquet", "--method", "tree", "-o", "r.parquet"], 2, "variable"),
    (["apply", "rec.parquet", "corrupt.parquet", "-o", "out"], 1, "corrupt.parquet"),
    (["apply", "rec.parquet", "x.parquet", "-o", "out", "--batch-size", "0"], 2, "--batch-size"),
    (["report", "corrupt.parquet"], 1, "corrupt.parquet"),
    (["report", "x.parquet", "--prob", "age", "--no-ci"], 1, "outside [0, 1]"),
])
def test_user_mistakes_are_one_line_without_traceback(work, capsys, argv, code, named):
    (work / "corrupt.parquet").write_bytes((work / "x.parquet").read_bytes()[:300])
    before = snapshot(work)
    got, err = cli(capsys, *argv)
    line = one_line(err)
    assert got == code and named in line, line
    assert snapshot(work) == before


def test_report_json_holds_dates_times_durations_and_decimals(work, capsys):
    """ISO 8601 for dates, datetimes (with their offset), times and durations; decimals as exact strings."""
    import decimal

    df = pl.read_parquet(work / "x.parquet")
    odd = (pl.int_range(pl.len()) % 2).cast(pl.Boolean)
    df = df.with_columns(
        day=pl.when(odd).then(pl.date(2024, 2, 29)).otherwise(pl.date(2023, 12, 31)),
        ts=pl.when(odd).then(pl.datetime(2024, 2, 29, 13, 5, 7, time_zone="UTC"))
        .otherwise(pl.datetime(2023, 12, 31, 0, 0, 0, time_zone="UTC")),
        t=pl.when(odd).then(pl.time(12, 30)).otherwise(pl.time(0, 0, 1)),
        dur=pl.when(odd).then(pl.duration(days=1, hours=2, minutes=30)).otherwise(pl.duration(seconds=90)),
        dec=pl.when(odd).then(pl.lit(decimal.Decimal("1.25"))).otherwise(pl.lit(decimal.Decimal("0.50")))
        .cast(pl.Decimal(10, 2)),
    )
    df.write_parquet(work / "typed.parquet")
    code, err = cli(capsys, "report", "typed.parquet", "--by", "day,ts,t,dur,dec", "--no-ci", "--json", "f.json")
    assert code == 0, err
    groups = {(r["day"], r["ts"], r["t"], r["dur"], r["dec"]): r["n"]
              for r in json.loads((work / "f.json").read_text())["by_group"]}
    assert groups == {("2024-02-29", "2024-02-29T13:05:07+00:00", "12:30:00", "P1DT2H30M", "1.25"): 300,
                      ("2023-12-31", "2023-12-31T00:00:00+00:00", "00:00:01", "PT1M30S", "0.50"): 300}


def test_the_same_file_named_twice_is_read_once(work, capsys):
    (work / "sub").mkdir()
    code, err = cli(capsys, "report", "x.parquet", "./x.parquet", "sub/../x.parquet", "--no-ci", "--json", "f.json")
    assert code == 0, err
    assert json.loads((work / "f.json").read_text())["summary"][0]["n"] == 600


@pytest.mark.parametrize("command", ["report", "fit", "apply"])
def test_help_names_overwrite_and_exit_codes(capsys, command):
    from calframe.cli import main

    assert main([command, "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--overwrite" in text and "Exit codes: 0 success; 2 usage error" in text and "1 data error" in text


# --------------------------------------------------------------------------- --version, --help examples, gating (issue 15)


def test_version(capsys):
    from calframe.cli import main

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"calframe {calframe.__version__}"
    res = run("--version")
    assert res.returncode == 0 and res.stdout.strip() == f"calframe {calframe.__version__}"


def _help_examples(capsys, command: str) -> list[list[str]]:
    """The example command lines of ``calframe COMMAND --help``, as argument lists (without ``calframe``)."""
    import shlex

    from calframe.cli import main

    capsys.readouterr()
    assert main([command, "--help"]) == 0
    text = capsys.readouterr().out
    block = text.split("examples:\n", 1)[1].split("\n\n", 1)[0]
    lines = [ln.strip() for ln in block.splitlines() if ln.strip()]
    assert lines and all(ln.startswith("calframe ") for ln in lines), block
    return [shlex.split(ln)[1:] for ln in lines]


@pytest.mark.parametrize("command", ["report", "fit", "apply", "demo"])
def test_every_help_example_parses(capsys, command):
    from calframe.cli import build_parser

    for argv in _help_examples(capsys, command):
        args = build_parser().parse_args(argv)  # a usage error would exit 2
        assert args.command == command


def test_help_examples_run(work, capsys, monkeypatch):
    """The report, fit and apply examples run as written on scores.parquet / scores/ / cal.parquet (and
    $CALIB_KEY, the key the signing examples read)."""
    monkeypatch.setenv("CALIB_KEY", "a secret shared by who fits and who applies")
    df = pl.read_parquet(work / "x.parquet").with_columns(  # a score every hour from 2024-01-01 (25 days)
        ts=pl.datetime(2024, 1, 1) + pl.duration(hours=pl.int_range(pl.len())))
    df.write_parquet(work / "scores.parquet")
    (work / "scores").mkdir()
    df.write_parquet(work / "scores" / "a.parquet")
    df.write_parquet(work / "cal.parquet")
    for command in ("fit", "apply", "report"):
        for argv in _help_examples(capsys, command):
            if command == "report" and "--no-ci" not in argv:
                argv = [*argv, "--n-boot", "20"]  # the same command, a cheaper bootstrap
            code, err = cli(capsys, *argv, "--overwrite")
            assert code in ((0, 3) if "--fail-above" in argv else (0,)), (argv, err)


def _gate_frame(tmp_path: Path) -> tuple[Path, dict[str, float]]:
    """Two groups with a by-hand ECE (numpy, 15 equal-width bins, class:1 lens = the probability itself):
    group a calibrated exactly, group b predicted 0.3 where the rate is 0.5 (ECE 0.2)."""
    prob = np.r_[np.full(400, 0.25), np.full(400, 0.75), np.full(400, 0.3)]
    label = np.r_[np.arange(400) % 4 == 0, np.arange(400) % 4 != 0, np.arange(400) % 2 == 0].astype(int)
    group = ["a"] * 800 + ["b"] * 400

    def ece(p, y):
        bins = np.minimum((p * 15).astype(int), 14)
        return sum(abs(p[bins == b].mean() - y[bins == b].mean()) * (bins == b).mean() for b in np.unique(bins))

    expected = {"all": ece(prob, label), "a": ece(prob[:800], label[:800]), "b": ece(prob[800:], label[800:])}
    path = tmp_path / "gate.parquet"
    pl.DataFrame({"prob": prob, "label": label, "g": group}).write_parquet(path)
    return path, expected


def test_fail_above_exits_3_after_writing_and_names_the_breach(tmp_path, capsys):
    path, ece = _gate_frame(tmp_path)
    assert ece["all"] == pytest.approx(0.2 / 3) and ece["a"] == pytest.approx(0) and ece["b"] == pytest.approx(0.2)
    out = tmp_path / "r.json"
    code, err = cli(capsys, "report", path, "--no-ci", "--fail-above", "ece=0.07", "--json", out)
    assert code == 0 and "breached" not in err, err  # 0.0667 <= 0.07
    code, err = cli(capsys, "report", path, "--no-ci", "--fail-above", "ece=0.06", "--json", out, "--overwrite")
    assert code == 3, err
    assert json.loads(out.read_text())["summary"][0]["ece"] == pytest.approx(ece["all"])  # written first
    lines = [ln for ln in err.splitlines() if "limit breached" in ln]
    assert len(lines) == 1 and "ece: 0.0666667 > limit 0.06" in lines[0] and "Traceback" not in err, err


def test_fail_above_judges_every_group(tmp_path, capsys):
    path, _ = _gate_frame(tmp_path)
    # overall 0.067 and group a 0 pass 0.1; group b (0.2) breaches
    code, err = cli(capsys, "report", path, "--by", "g", "--no-ci", "--fail-above", "ece=0.1",
                    "--fail-above", "brier=1")
    lines = [ln for ln in err.splitlines() if "limit breached" in ln]
    assert code == 3 and len(lines) == 1 and "ece [g=b]: 0.2 > limit 0.1" in lines[0], err
    code, err = cli(capsys, "report", path, "--by", "g", "--no-ci", "--fail-above", "ece=0.25")
    assert code == 0, err


def test_fail_above_names_a_null_group_null(tmp_path, capsys):
    """A null key is written ``null``, as calframe.disparity and Polars write it (not Python's None)."""
    path, _ = _gate_frame(tmp_path)
    pl.read_parquet(path).with_columns(g=pl.when(pl.col("g") == "b").then(None).otherwise(pl.col("g"))) \
        .write_parquet(path)
    code, err = cli(capsys, "report", path, "--by", "g", "--no-ci", "--fail-above", "ece=0.1")
    lines = [ln for ln in err.splitlines() if "limit breached" in ln]
    assert code == 3 and len(lines) == 1 and "ece [g=null]: 0.2 > limit 0.1" in lines[0], err
    assert "None" not in err


def test_fail_above_vece_per_group(work, capsys):
    df = pl.read_parquet(work / "x.parquet")
    per = calframe.vece(df, "age", by="region")
    worst = per["vece"].max()
    code, err = cli(capsys, "report", "x.parquet", "--by", "region", "--no-ci",
                    "--fail-above", f"vece:age={worst * 0.999}")
    lines = [ln for ln in err.splitlines() if "limit breached" in ln]
    region = per.filter(pl.col("vece") == worst)["region"].item()
    assert code == 3 and len(lines) == 1 and f"vece:age [region={region}]" in lines[0], err
    code, err = cli(capsys, "report", "x.parquet", "--by", "region", "--no-ci", "--fail-above", f"vece:age={worst}")
    assert code == 0, err


def test_fail_above_on_upper_bound(tmp_path, capsys):
    """The 0.95 interval of ECE on 1200 rows reaches above the value: a limit between them passes on the
    value and breaches on the upper bound."""
    path, ece = _gate_frame(tmp_path)
    args = ["report", path, "--n-boot", "50", "--json", tmp_path / "f.json", "--overwrite"]
    code, err = cli(capsys, *args)
    hi = json.loads((tmp_path / "f.json").read_text())["summary"][0]["ece_hi"]
    assert hi > ece["all"] + 0.001
    limit = (ece["all"] + hi) / 2
    code, err = cli(capsys, *args, "--fail-above", f"ece={limit}")
    assert code == 0, err
    code, err = cli(capsys, *args, "--fail-above", f"ece={limit}", "--on", "upper")
    assert code == 3 and f"ece: upper bound {hi:.6g} > limit" in err, err


@pytest.mark.parametrize("argv, named", [
    (["--fail-above", "ece"], "FIGURE=LIMIT"),
    (["--fail-above", "ece=abc"], "FIGURE=LIMIT"),
    (["--fail-above", "ece=nan"], "FIGURE=LIMIT"),
    (["--fail-above", "accuracy=0.9"], "unknown figure 'accuracy'"),
    (["--fail-above", "ece:age=0.1"], "unknown figure 'ece:age'"),
    (["--fail-above", "vece=0.1"], "vece needs a variable"),
    (["--fail-above", "ece=0.1", "--on", "upper", "--no-ci"], "--no-ci"),
    (["--on", "lower"], "--on"),
])
def test_fail_above_usage_errors(work, capsys, argv, named):
    before = snapshot(work)
    code, err = cli(capsys, "report", "x.parquet", "--json", "f.json", *argv)
    line = one_line(err)
    assert code == 2 and named in line, line
    assert snapshot(work) == before


# --------------------------------------------------------------------------- command-line findings (issue 22, section 5)


@pytest.mark.parametrize("limit", ["ece=1_0", "ece=-1", "ece = 0.05", " ece=0.05", "ece=0.05 ", "ece=+0.05",
                                   "ece=0x10", "ece=1e999", "vece:age= 0.03", "ece=0,05"])
def test_fail_above_refuses_a_limit_not_written_as_a_plain_number(work, capsys, limit):
    """Python's float() reads 1_0 as 10 and ' 0.05' as 0.05, and a negative limit is breached by every figure:
    each is refused before anything runs, with the form expected."""
    before = snapshot(work)
    code, err = cli(capsys, "report", "x.parquet", "--no-ci", "--json", "f.json", "--fail-above", limit)
    line = one_line(err)
    assert code == 2 and "FIGURE=LIMIT" in line and "non-negative number" in line and repr(limit) in line, line
    assert snapshot(work) == before


@pytest.mark.parametrize("limit, expected", [("ece=0.05", 0.05), ("ece=5e-2", 0.05), ("ece=.05", 0.05),
                                             ("ece=0", 0.0), ("brier=1", 1.0), ("vece:age=3E-2", 0.03)])
def test_fail_above_reads_plain_numbers(limit, expected):
    from calframe.cli import parse_limit

    assert parse_limit(limit).limit == expected


@pytest.mark.parametrize("gate", ["vece:nosuch=0.05", "vmce:nosuch=0.05"])
def test_fail_above_on_a_missing_variable_writes_nothing(work, capsys, gate):
    """The gate's figures are computed before any output is written: an error there leaves no output."""
    before = snapshot(work)
    code, err = cli(capsys, "report", "x.parquet", "--no-ci", "--fail-above", gate, "--out", "r.html",
                    "--json", "r.json")
    line = one_line(err)
    assert code == 1 and "'nosuch'" in line, line
    assert snapshot(work) == before and not (work / "r.html").exists() and not (work / "r.json").exists()


SECRET = "correct horse battery staple"


@pytest.mark.parametrize("out", ["signed.parquet", "signed.calib"])
def test_fit_signs_and_apply_verifies_with_key_env(work, capsys, monkeypatch, out):
    """--key-env NAME: fit signs with the key in $NAME (calframe.load verifies it with that key, and refuses the
    file without one); apply verifies it and writes the same column as the Python API."""
    monkeypatch.setenv("CALFRAME_TEST_KEY", SECRET)
    code, err = cli(capsys, "fit", "x.parquet", "--method", "platt", "-o", out, "--key-env", "CALFRAME_TEST_KEY")
    assert code == 0, err
    assert calframe.load(out, key=SECRET).method == "platt"
    with pytest.raises(calframe.CalframeError, match="signed"):
        calframe.load(out)
    with pytest.raises(calframe.CalframeError, match="does not match"):
        calframe.load(out, key="another key")
    code, err = cli(capsys, "apply", out, "x.parquet", "-o", "o", "--key-env", "CALFRAME_TEST_KEY")
    assert code == 0, err
    df = pl.read_parquet("x.parquet")
    expected = calframe.apply(df, calframe.fit(df, "platt"))["p_platt"].to_numpy()
    np.testing.assert_allclose(pl.read_parquet("o/x.parquet")["p_platt"].to_numpy(), expected, rtol=1e-12)
    assert SECRET not in err


@pytest.mark.parametrize("case, named", [
    ("no key", "--key-env"),            # a signed file without --key-env
    ("wrong key", "does not match"),    # a signed file, another key
    ("unsigned", "not signed"),         # an unsigned file with --key-env
])
def test_apply_refuses_a_signature_it_cannot_verify(work, capsys, monkeypatch, case, named):
    calframe.fit(pl.read_parquet("x.parquet"), "platt").save("signed.parquet", key=SECRET)
    monkeypatch.setenv("K", "another key" if case == "wrong key" else SECRET)
    rec = "rec.parquet" if case == "unsigned" else "signed.parquet"
    before = snapshot(work)
    code, err = cli(capsys, "apply", rec, "x.parquet", "-o", "o", *([] if case == "no key" else ["--key-env", "K"]))
    line = one_line(err)
    assert code == 1 and named in line and rec in line, line
    assert "key=" not in line and SECRET not in line and "another key" not in line  # command-line words, no secret
    assert snapshot(work) == before and not (work / "o").exists()


@pytest.mark.parametrize("value", [None, ""])
@pytest.mark.parametrize("command", ["fit", "apply"])
def test_key_env_naming_a_missing_variable_is_a_usage_error(work, capsys, monkeypatch, value, command):
    if value is None:
        monkeypatch.delenv("CALFRAME_NO_SUCH_KEY", raising=False)
    else:
        monkeypatch.setenv("CALFRAME_NO_SUCH_KEY", value)
    argv = (["fit", "x.parquet", "--method", "platt", "-o", "new.parquet"] if command == "fit"
            else ["apply", "rec.parquet", "x.parquet", "-o", "o"])
    before = snapshot(work)
    code, err = cli(capsys, *argv, "--key-env", "CALFRAME_NO_SUCH_KEY")
    line = one_line(err)
    assert code == 2 and "CALFRAME_NO_SUCH_KEY" in line and ("not set" if value is None else "empty") in line, line
    assert snapshot(work) == before and not (work / "o").exists()


#: sitecustomize for a child process: Ctrl-C (SIGINT to itself) the moment the module $CALFRAME_TEST_SIGINT_AT is
#: imported, deterministically inside start-up
_SIGINT_AT_IMPORT = '''
import importlib.abc, os, signal, sys
AT = os.environ["CALFRAME_TEST_SIGINT_AT"]
class Interrupt(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == AT:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None
sys.meta_path.insert(0, Interrupt())
'''


@pytest.mark.parametrize("how, at", [("python -m", "polars"),              # among the first of calframe's imports
                                     ("python -m", "calframe.report"),     # among the last before the command runs
                                     ("console script", "calframe.cli")])  # (each imported however lazily)
def test_ctrl_c_during_start_up_exits_130_with_one_line(work, at, how):
    """Ctrl-C while `calframe` imports its modules, before the command runs: exit 130 and one line, as after."""
    (work / "hook").mkdir()
    (work / "hook" / "sitecustomize.py").write_text(_SIGINT_AT_IMPORT)
    script = work / "bin" / "calframe"  # what pip's console script runs
    script.parent.mkdir()
    script.write_text("import sys\nfrom calframe.cli import main\nsys.exit(main())\n")
    root = Path(calframe.__file__).parent.parent
    env = {**__import__("os").environ, "PYTHONPATH": f"{work / 'hook'}:{root}", "CALFRAME_TEST_SIGINT_AT": at}
    cmd = ["-m", "calframe"] if how == "python -m" else [str(script)]
    res = subprocess.run([sys.executable, *cmd, "report", "x.parquet", "--no-ci"], capture_output=True, text=True,
                         env=env, cwd=work)
    assert res.returncode == 130, (res.returncode, res.stderr)
    assert res.stderr == "calframe: error: interrupted\n" and res.stdout == ""


def _raise_after_interrupt(kind: str):
    """A KeyboardInterrupt, or what it becomes when it lands inside numba's dispatcher or importlib's locks."""
    if kind == "interrupt":
        raise KeyboardInterrupt
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt as exc:
        if kind == "numba":
            raise SystemError("CPUDispatcher(<function f>) returned a result with an exception set") from exc
        raise KeyError(140512875342720)  # importlib's _ModuleLockManager, its lock bookkeeping cut short


@pytest.mark.parametrize("kind", ["interrupt", "numba", "importlib"])
@pytest.mark.parametrize("where", ["build_parser", "command"])
def test_ctrl_c_in_any_form_exits_130_with_one_line(work, capsys, monkeypatch, kind, where):
    from calframe import cli as cli_module

    if where == "build_parser":
        monkeypatch.setattr(cli_module, "build_parser", lambda: _raise_after_interrupt(kind))
    else:
        monkeypatch.setattr(calframe.api, "apply", lambda *a, **k: _raise_after_interrupt(kind))
    code, err = cli(capsys, "apply", "rec.parquet", "x.parquet", "-o", "o")
    assert code == 130 and one_line(err) == "calframe: error: interrupted"
    assert not (work / "o").exists()


def test_an_error_not_from_an_interrupt_is_not_one():
    from calframe.cli import _after_interrupt

    try:
        try:
            raise ValueError("first")
        except ValueError:
            raise KeyError("second")
    except KeyError as exc:
        assert not _after_interrupt(exc)


@pytest.mark.parametrize("exc, code", [(KeyboardInterrupt(), 130), (calframe.InvalidValueError("bad batch"), 1)])
@pytest.mark.parametrize("out", ["out", "new/deeper/out"])
def test_apply_failing_leaves_no_directory_and_no_output_of_the_run(work, capsys, monkeypatch, exc, code, out):
    """Two inputs, the second fails (after the first's output is complete): the output directory that apply
    created is gone, and no output of the run remains; an existing output stays as it was."""
    df = pl.read_parquet(work / "x.parquet")
    (work / "a").mkdir()
    df.write_parquet(work / "a" / "one.parquet")
    df.write_parquet(work / "a" / "two.parquet")
    before = snapshot(work)
    calls = _fail_on_second_call(monkeypatch, calframe.api, "apply", exc)
    got, err = cli(capsys, "apply", "rec.parquet", "a/one.parquet", "a/two.parquet", "-o", out)
    assert got == code and len(calls) == 2, err
    one_line(err)
    assert snapshot(work) == before
    assert not (work / out).exists() and not (work / out.split("/")[0]).exists()
    # an existing directory stays, and so does an existing output (with --overwrite), untouched
    (work / out).mkdir(parents=True)
    (work / out / "one.parquet").write_bytes(b"old contents")
    before = snapshot(work)
    calls.clear()
    got, err = cli(capsys, "apply", "rec.parquet", "a/one.parquet", "a/two.parquet", "-o", out, "--overwrite")
    assert got == code and snapshot(work) == before
    assert sorted(p.name for p in (work / out).iterdir()) == ["one.parquet"]


@pytest.mark.parametrize("argv", [["report", "x.parquet", "--no-ci", "--out", "new/r.html", "--json", "new2/r.json"],
                                  ["fit", "x.parquet", "--method", "platt", "-o", "new/deeper/rec.calib"],
                                  ["fit", "x.parquet", "--method", "platt", "-o", "new/rec.parquet"]])
def test_report_and_fit_failing_leave_no_directory(work, capsys, monkeypatch, argv):
    """An interrupt while writing: no output, and no directory created for one."""
    from calframe.recalibrate.base import Recalibrator

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    if argv[0] == "report":
        real = Path.write_text
        calls = []

        def second_interrupted(self, *a, **k):  # the first output is complete when the second fails
            calls.append(self)
            if len(calls) == 2:
                raise KeyboardInterrupt
            return real(self, *a, **k)

        monkeypatch.setattr(Path, "write_text", second_interrupted)
    else:
        monkeypatch.setattr(Recalibrator, "save", interrupted)
    before = snapshot(work)
    code, err = cli(capsys, *argv)
    assert code == 130 and one_line(err) == "calframe: error: interrupted"
    assert snapshot(work) == before and not (work / "new").exists() and not (work / "new2").exists()


@pytest.mark.skipif(not __import__("shutil").which("make"), reason="make missing")
def test_make_demo_installs_the_plot_extra():
    """`make demo` installs calframe with the plot extra (the report's figures); `make test` keeps its extras.
    Read from make's dry run of every step (-n -B: nothing runs)."""
    import re

    root = Path(calframe.__file__).resolve().parent.parent

    def installs(target: str) -> list[str]:
        res = subprocess.run(["make", "-n", "-B", "-C", str(root), target], capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        return [m for line in res.stdout.splitlines() if "pip install" in line
                for m in re.findall(r"""-e ["']?\.\[([\w,]+)\]""", line)]

    demo = installs("demo")
    assert demo and "plot" in demo[-1].split(","), demo
    assert installs("test") == ["test,plot,dask,docs"]


def _timed(work: Path) -> pl.DataFrame:
    """x.parquet's 600 rows, one an hour from 2024-01-01 00:00 (25 days)."""
    return pl.read_parquet(work / "x.parquet").with_columns(
        ts=pl.datetime(2024, 1, 1) + pl.duration(hours=pl.int_range(pl.len())))


@pytest.mark.parametrize("written, fmt", [
    ("%Y-%m-%dT%H:%M:%S%.f", None),       # how Polars writes a Datetime to CSV
    ("%Y-%m-%d %H:%M", None),
    ("%Y-%m-%dT%H:%M:%SZ", None),
    ("%Y-%m-%dT%H:%M:%S+05:00", None),    # UTC is 5 hours earlier: the daily windows shift
    ("%Y-%m-%d", None),                   # dates
    ("%d/%m/%Y %H:%M", "%d/%m/%Y %H:%M"),
    ("%d.%m.%Y", "%d.%m.%Y"),
])
def test_report_reads_a_text_time_column(work, capsys, written, fmt):
    """A CSV file's time column is text: ISO 8601 is parsed as such, other forms with --time-format. The rows per
    daily window are those of Python's own parsing (datetime.fromisoformat / strptime, offsets to UTC)."""
    import collections
    import datetime as dt

    text = _timed(work).with_columns(ts=pl.col("ts").dt.strftime(written))
    text.write_csv(work / "t.csv")
    code, err = cli(capsys, "report", "t.csv", "--no-ci", "--time-col", "ts", "--json", "f.json",
                    *(["--time-format", fmt] if fmt else []))
    assert code == 0, err

    def day(s: str) -> dt.date:
        t = dt.datetime.strptime(s, fmt.replace("%.f", ".%f")) if fmt else dt.datetime.fromisoformat(s)
        return (t.astimezone(dt.timezone.utc) if t.tzinfo else t).date()

    expected = collections.Counter(day(s) for s in text["ts"])
    got = {dt.date.fromisoformat(r["ts"][:10]): r["n"] for r in json.loads((work / "f.json").read_text())["over_time"]
           if r["n"]}
    assert got == dict(expected)
    assert len(expected) == (26 if "+05:00" in written else 25)


@pytest.mark.parametrize("values, argv, code, named", [
    (["03/01/2024 10:00"] * 600, [], 1, ["'ts'", "600 rows", "--time-format", "'03/01/2024 10:00'"]),
    (["03/01/2024 10:00"] * 590 + ["2024-01-03T10:00"] * 10, ["--time-format", "%d/%m/%Y %H:%M"], 1,
     ["'ts'", "10 rows", "'2024-01-03T10:00'"]),
    (["2024-01-03T10:00Z"] * 300 + ["2024-01-03T10:00"] * 300, [], 1, ["'ts'", "offset", "300 rows"]),
    (["2024-01-03"] * 600, ["--time-format", "%Y-%m-%d", "--time-col", "nosuch"], 1, ["'nosuch'"]),
])
def test_report_refuses_a_time_column_it_cannot_read(work, capsys, values, argv, code, named):
    pl.read_parquet(work / "x.parquet").with_columns(ts=pl.Series(values)).write_csv(work / "t.csv")
    before = snapshot(work)
    args = argv if "--time-col" in argv else ["--time-col", "ts", *argv]
    got, err = cli(capsys, "report", "t.csv", "--no-ci", *args, "--out", "r.html")
    line = one_line(err)
    assert got == code and all(n in line for n in named), line
    assert "str.to_datetime" not in line and "pl.col" not in line  # advice the command line can take
    assert snapshot(work) == before


@pytest.mark.parametrize("argv", [["--time-format", "%Y-%m-%d"],
                                  ["--time-col", "ts", "--time-format", "%Y-%m-%d"]])
def test_time_format_without_a_text_time_column_is_a_usage_error(work, capsys, argv):
    _timed(work).write_parquet(work / "t.parquet")  # ts is a Datetime: nothing to parse
    code, err = cli(capsys, "report", "t.parquet", "--no-ci", *argv)
    line = one_line(err)
    assert code == 2 and "--time-format" in line, line


# --------------------------------------------------------------------------- issue 31: the CLI speaks in flags


@pytest.mark.parametrize("argv, flag", [
    (["report", "p.parquet", "--no-ci"], "--prob COLUMN"),  # no conventional name for the probability column
    (["report", "p.parquet", "--prob", "p", "--by", "nosuch", "--no-ci"], "given as --by"),
    (["report", "nulls.parquet", "--no-ci"], "--nulls drop"),
    (["fit", "p.parquet", "--method", "platt", "-o", "r.parquet"], "--prob COLUMN"),
])
def test_errors_name_the_commands_flags_not_keywords(work, capsys, argv, flag):
    df = pl.read_parquet(work / "x.parquet")
    df.rename({"prob": "p"}).write_parquet(work / "p.parquet")
    df.with_columns(label=pl.when(pl.int_range(pl.len()) < 3).then(None).otherwise("label")).write_parquet(
        work / "nulls.parquet")
    code, err = cli(capsys, *argv)
    line = one_line(err)
    assert code in (1, 2) and flag in line, line
    assert not re.search(r"\b(prob|label|by|nulls)=", line), line


def test_report_says_each_file_it_wrote(work, capsys):
    code, err = cli(capsys, "report", "x.parquet", "--no-ci", "--json", "figs.json")
    assert code == 0 and "calframe: wrote figs.json" in err.splitlines(), err
    code, err = cli(capsys, "report", "x.parquet", "--no-ci", "--json", "f2.json", "--out", "r.html")
    assert code == 0 and {"calframe: wrote f2.json", "calframe: wrote r.html"} <= set(err.splitlines()), err


def test_tolerance_help_describes_the_test_the_verdicts_use(capsys):
    """The verdicts are calframe.calibration_test's (calframe/verdicts.py): a test of the population ECE against
    the tolerance, not an interval's position; --tolerance's help says so."""
    from calframe.cli import main

    capsys.readouterr()
    assert main(["report", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    help_ = text.split("--tolerance TOLERANCE ")[1].split(" --wide")[0]
    assert "interval lies" not in help_, help_
    assert all(part in help_ for part in ("reject 'ECE <= TOLERANCE'", "reject 'ECE >= TOLERANCE'", "5% level",
                                          "undecided")), help_
