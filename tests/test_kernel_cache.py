"""The compiled-kernel cache under processes and threads that compile at once (calframe._kernel_cache).

numba's own cache index is not locked: two processes compiling different variants of one kernel into one
cache directory could leave an index that maps one variant's key to the other's code, which every later
process then ran (a crash, or another variant's numbers without an error). These tests compile variants
concurrently into fresh cache directories, then check every variant in fresh processes against this
process's own (private) cache; they also corrupt an index on purpose and expect the right numbers.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import calframe

ROOT = Path(__file__).resolve().parents[1]
HERE = str(Path(__file__).resolve().parent)

# The variants: lens x closed side x label dtype x key type (each lens is its own kernel; label dtype and key
# type are signatures of it; the closed side is an argument). String keys reach the pass as Int32 codes, one more
# key type, but their code kernels cost every process a minute of compiling on 2 cores (make test's time).
LENSES = ["class:1", "top1"]
CLOSED = ["left", "right"]
LABELS = ["Int8", "Int64"]
KEYS = [None, "g_int"]
VARIANTS = [(lens, closed, lab, key) for lens in LENSES for lab in LABELS for key in KEYS for closed in CLOSED]

#: the scripts' start barrier: each process says it is ready (a file beside the go file), then waits for the go
#: file (:func:`_go` creates it once every process is ready); "0": no barrier
WAIT_FOR_GO = textwrap.dedent(
    """
    import os, time
    def wait_for_go(go):
        if go != "0":
            open(go + "." + str(os.getpid()), "w").close()
            while not os.path.exists(go):
                time.sleep(0.002)
    """
)

RUN_VARIANTS = WAIT_FOR_GO + textwrap.dedent(
    """
    import json, sys
    import polars as pl
    import calframe

    sys.path.insert(0, sys.argv[3])
    from test_kernel_cache import run_variants

    variants = json.loads(sys.argv[1])
    wait_for_go(sys.argv[2])  # all processes start compiling together
    print(json.dumps(run_variants(variants)))
    """
)


def _env(cache_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["NUMBA_CACHE_DIR"] = str(cache_dir)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("NUMBA_DISABLE_JIT", None)
    return env


def _start(script: str, args: list[str], cache_dir: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        env=_env(cache_dir),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def _go(go: Path, procs: list[subprocess.Popen]) -> None:
    """Once every process has said it is ready (imports done, at ``wait_for_go``), let them all go at once."""
    deadline = time.monotonic() + 600
    while len(list(go.parent.glob(go.name + ".*"))) < len(procs):
        assert all(p.poll() is None for p in procs), [p.communicate()[1][-3000:] for p in procs if p.poll() is not None]
        assert time.monotonic() < deadline, "the processes never got ready"
        time.sleep(0.005)
    go.touch()


def _finish(proc: subprocess.Popen) -> tuple[object, str]:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1]), err


def run_variants(variants: list) -> list:
    """The figure of every variant (run in the stressed processes, and in this one as the reference)."""
    df = calframe.datasets.grouped_miscalibration(n=4_000, seed=0)
    df = df.with_columns(g_int=pl.col("region").rank("dense").cast(pl.Int64), g_str=pl.col("region").cast(pl.String))
    out = []
    for lens, closed, lab, key in variants:
        d = df.with_columns(pl.col("label").cast(getattr(pl, lab)))
        got = calframe.ece(d, lens=lens, closed=closed, by=key)
        out.append(got if key is None else got.sort(key)["ece"].to_list())
    return out


@pytest.fixture(scope="module")
def stressed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh cache directory that 4 processes compiled different variants into, all at once."""
    cache = tmp_path_factory.mktemp("stressed-cache")
    procs, go = [], cache.parent / "go"
    for i in range(4):
        # process i takes the label dtype and key type (a signature of each lens's kernel) of its own: all four
        # write different signatures of both lenses' kernels into one index at once, and each signature is
        # compiled once (the closed side, an argument, costs no compile: both sides run in every process)
        mine = [v for v in VARIANTS if (LABELS.index(v[2]), KEYS.index(v[3])) == divmod(i, 2)]
        mine = mine[i % len(mine):] + mine[: i % len(mine)]  # each process starts at another variant
        procs.append(_start(RUN_VARIANTS, [json.dumps(mine), str(go), HERE], cache))
    _go(go, procs)
    errs = [_finish(proc)[1] for proc in procs]
    # the compile notice names each kernel and the public function it is compiled for (issue 31, section 1)
    assert any("compiling binned_pass_" in err and "for calframe.ece" in err for err in errs), errs[0][-2000:]
    return cache


def test_concurrent_compiles_serve_every_variant_its_own_code(stressed: Path) -> None:
    expected = run_variants(VARIANTS)
    # two fresh processes read the stressed cache, in opposite orders
    runs = [_start(RUN_VARIANTS, [json.dumps(order), "0", HERE], stressed) for order in (VARIANTS, VARIANTS[::-1])]
    (first, err1), (second, err2) = (_finish(p) for p in runs)
    assert first == expected
    assert second == expected[::-1]
    assert "another variant" not in err1 + err2  # the lock left a consistent index: nothing to discard
    files = {p.name for p in stressed.rglob("*.nbc")}
    assert any("binned_pass_class1" in f for f in files) and any("binned_pass_top1" in f for f in files)


def _indexes(cache: Path) -> list[tuple[Path, object, object, dict]]:
    found = []
    for nbi in cache.rglob("*.nbi"):
        with open(nbi, "rb") as f:
            version = pickle.load(f)
            stamp, overloads = pickle.loads(f.read())
        found.append((nbi, version, stamp, overloads))
    return found


def _write_index(path: Path, version: object, stamp: object, overloads: dict) -> None:
    from numba.core.serialize import dumps

    with open(path, "wb") as f:
        pickle.dump(version, f, protocol=-1)
        f.write(dumps((stamp, overloads)))


def test_swapped_index_entries_give_the_right_numbers(stressed: Path, tmp_path: Path) -> None:
    import shutil

    cache = tmp_path / "swapped"
    shutil.copytree(stressed, cache)
    swapped = 0
    for path, version, stamp, overloads in _indexes(cache):
        if len(overloads) >= 2 and "binned_pass" in path.name:  # what a lost race left: two keys' files exchanged
            keys = list(overloads)
            overloads[keys[0]], overloads[keys[1]] = overloads[keys[1]], overloads[keys[0]]
            _write_index(path, version, stamp, overloads)
            swapped += 1
    assert swapped >= 2  # both lenses' passes had several signatures to swap
    got, err = _finish(_start(RUN_VARIANTS, [json.dumps(VARIANTS), "0", HERE], cache))
    assert got == run_variants(VARIANTS)
    assert "held another variant's code" in err  # said once, then recompiled
    # and the repaired index now maps each key to its own file: a second fresh process needs no compile
    again, err2 = _finish(_start(RUN_VARIANTS, [json.dumps(VARIANTS), "0", HERE], cache))
    assert again == got and "compiling" not in err2


SYNTH = textwrap.dedent(
    '''
    import numpy as np
    from calframe._jit import njit

    @njit(cache=True)
    def tag(x):
        s = 0.0
        for i in range(x.shape[0]):
            s += x[i]
        return s * 1000.0 + x.itemsize
    '''
)

RUN_SYNTH = WAIT_FOR_GO + textwrap.dedent(
    """
    import json, sys
    import numpy as np
    sys.path.insert(0, sys.argv[2])
    import synth_kernels
    wait_for_go(sys.argv[3])  # all processes start compiling together
    out = {}
    for dt in json.loads(sys.argv[1]):
        x = np.arange(1, 8).astype(dt)
        out[dt] = synth_kernels.tag(x)
    print(json.dumps(out))
    """
)

DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"]


#: rounds of the test below (one in make test, for its time; CALFRAME_CACHE_ROUNDS=5 repeats the measurement of
#: the docstring)
ROUNDS = int(os.environ.get("CALFRAME_CACHE_ROUNDS", "1"))


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_rounds_of_concurrent_compiles_of_one_kernel(tmp_path: Path, round_: int) -> None:
    """Many signatures of one small kernel, compiled by 8 processes at once into a fresh cache, then read back.
    (With numba's own cache, ``from numba import njit`` in SYNTH, a round lost or swapped an entry about one
    time in three here: "can't unbox array" in the reading process.)"""
    src = tmp_path / "src"
    src.mkdir()
    (src / "synth_kernels.py").write_text(SYNTH)
    cache = tmp_path / "cache"
    rng = np.random.default_rng(round_)
    go = tmp_path / "go"
    procs = [_start(RUN_SYNTH, [json.dumps(list(rng.permutation(DTYPES))), str(src), str(go)], cache)
             for _ in range(8)]
    _go(go, procs)
    for p in procs:
        _finish(p)
    got, err = _finish(_start(RUN_SYNTH, [json.dumps(DTYPES), str(src), "0"], cache))
    expected = {dt: 28.0 * 1000.0 + np.dtype(dt).itemsize for dt in DTYPES}
    assert got == expected
    assert "compiling" not in err  # every variant came from the cache
    (index,) = _indexes(cache)
    assert len(index[3]) == len(DTYPES) and len(set(index[3].values())) == len(DTYPES)


def _synth(src: Path, name: str):
    """SYNTH's kernel from ``src``/synth_kernels.py, imported as a new module ``name``: a fresh dispatcher (nothing
    compiled in memory) on the cache beside the file."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, src / "synth_kernels.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.tag


def _not_an_index(path: Path) -> None:
    """A readable index whose entries are not a mapping of keys to data files."""
    ((_, version, stamp, overloads),) = _indexes(path.parent)
    _write_index(path, version, stamp, list(overloads.items()))


#: damage an index may take (issue 31: an empty or truncated one raised EOFError / UnpicklingError in every call)
DAMAGE = {"empty": lambda p: p.write_bytes(b""),
          "truncated": lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),
          "foreign": lambda p: p.write_bytes(b"not a pickle at all"),
          "not an index": _not_an_index}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_index_is_discarded_and_the_kernel_compiled_again(tmp_path: Path, monkeypatch, damage: str) -> None:
    """calframe's cache (every calframe kernel's, :class:`calframe._kernel_cache.KernelCache`) on a small kernel:
    an index that cannot be read is an empty one (a warning), the kernel is compiled again, and the index written
    anew serves the next process (here: a fresh dispatcher) without compiling."""
    import numba

    from calframe import _kernel_cache

    monkeypatch.setattr(numba.core.config, "CACHE_DIR", "")  # beside the source (make test sets NUMBA_CACHE_DIR)
    (tmp_path / "synth_kernels.py").write_text(SYNTH)
    x = np.arange(1, 8, dtype=np.int64)
    want = float(x.sum()) * 1000.0 + x.itemsize  # what the kernel computes, by numpy
    assert _synth(tmp_path, "synth_first")(x) == want
    (index,) = tmp_path.rglob("*.nbi")
    DAMAGE[damage](index)
    monkeypatch.setattr(_kernel_cache, "_warned", False)
    with pytest.warns(calframe.CalframeWarning, match="index"):
        assert _synth(tmp_path, "synth_damaged")(x) == want
    again = _synth(tmp_path, "synth_again")
    assert again(x) == want and sum(again.stats.cache_hits.values()) == 1, again.stats


def test_a_data_file_whose_code_does_not_match_its_checksum_is_compiled_again(tmp_path: Path, monkeypatch) -> None:
    """A byte of a saved kernel's code changed (its file still unpickles): the checksum finds it, the entry is
    discarded (a warning) and the kernel compiled again."""
    import numba

    from calframe import _kernel_cache

    monkeypatch.setattr(numba.core.config, "CACHE_DIR", "")  # beside the source (make test sets NUMBA_CACHE_DIR)
    (tmp_path / "synth_kernels.py").write_text(SYNTH)
    x = np.arange(1, 8, dtype=np.float64)
    want = float(x.sum()) * 1000.0 + x.itemsize
    assert _synth(tmp_path, "synth_first")(x) == want
    (data,) = tmp_path.rglob("*.nbc")
    payload = list(pickle.loads(data.read_bytes()))
    code = bytearray(payload[-1])
    code[len(code) // 2] ^= 0xFF
    payload[-1] = bytes(code)
    data.write_bytes(pickle.dumps(tuple(payload)))
    monkeypatch.setattr(_kernel_cache, "_warned", False)
    with pytest.warns(calframe.CalframeWarning, match="checksum"):
        assert _synth(tmp_path, "synth_damaged")(x) == want


THREADS = textwrap.dedent(
    """
    import json
    import polars as pl
    import calframe

    df = calframe.datasets.grouped_miscalibration(n=30_000, seed=3)
    df = df.with_columns(g=(pl.int_range(pl.len()) % 64).cast(pl.Int64), y8=pl.col("label").cast(pl.Int8))
    got = (df.group_by("g").agg(calframe.expr.ece(prob="prob", label="label"),
                                calframe.expr.ece(prob="prob", label="y8", lens="top1").alias("top1"),
                                calframe.expr.mce(prob="prob", label="label", closed="right").alias("mce"))
             .sort("g"))
    print(json.dumps({k: got[k].to_list() for k in ("ece", "top1", "mce")}))
    """
)


def test_cold_cache_expressions_in_group_by_threads(tmp_path: Path) -> None:
    """Polars evaluates the expressions of group_by().agg() on its threads: a cold cache must compile each kernel
    once and give every group its own figure."""
    got, err = _finish(_start(THREADS, [], tmp_path / "cold"))
    assert err.count("compiling calframe kernels") == 1
    df = calframe.datasets.grouped_miscalibration(n=30_000, seed=3)
    df = df.with_columns(g=(pl.int_range(pl.len()) % 64).cast(pl.Int64), y8=pl.col("label").cast(pl.Int8))
    close = dict(rtol=1e-12, atol=1e-15)  # expressions and by= agree to 1e-12 (docs/spec.md), not bit for bit
    np.testing.assert_allclose(got["ece"], calframe.ece(df, by="g").sort("g")["ece"].to_list(), **close)
    np.testing.assert_allclose(got["top1"], calframe.ece(df, label="y8", lens="top1", by="g").sort("g")["ece"], **close)
    np.testing.assert_allclose(got["mce"], calframe.mce(df, closed="right", by="g").sort("g")["mce"], **close)


def test_cached_closures_need_their_own_names() -> None:
    from calframe._jit import njit

    def factory(k):
        def f(x):
            return x + k

        return f

    with pytest.raises(TypeError, match="closure"):
        njit(cache=True)(factory(1))


def test_a_calls_further_compiles_go_on_one_bar(tmp_path: Path, monkeypatch, capsys) -> None:
    """Issue 31 ("no silent wait"): a public call that compiles several kernels names its first compile on a line,
    then counts the following ones on one bar that names the kernel being compiled; the bar closes when the call
    returns. (``CALFRAME_PROGRESS=1`` stands in for a terminal.)"""
    import numba

    from calframe import _kernel_cache, _progress, _runtime

    monkeypatch.setattr(numba.core.config, "CACHE_DIR", "")  # beside the source (make test sets NUMBA_CACHE_DIR)
    monkeypatch.setattr(_kernel_cache, "quiet", False)
    monkeypatch.setenv("CALFRAME_PROGRESS", "1")
    (tmp_path / "synth_kernels.py").write_text(SYNTH)
    tag = _synth(tmp_path, "synth_bar")

    @_runtime.entry
    def three_types() -> list[float]:
        return [tag(np.arange(1, 8).astype(dt)) for dt in ("int8", "int16", "float32")]

    assert three_types() == [28_001.0, 28_002.0, 28_004.0]
    err = capsys.readouterr().err
    assert "  compiling tag for calframe.three_types\n" in err, err  # the first compile: its line
    assert err.count("  compiling tag") == 1, err  # the others: on the bar
    assert "compiling calframe kernels for calframe.three_types: " in err and "3 kernels" in err, err
    assert getattr(_progress._compiles, "state", None) is None  # closed with the call
    monkeypatch.setenv("CALFRAME_PROGRESS", "0")  # bars off: every compile on its own line, as before
    again = _runtime.entry(lambda: [tag(np.arange(1, 8).astype(dt)) for dt in ("uint8", "uint16")])
    again()
    assert capsys.readouterr().err.count("  compiling tag for calframe.<lambda>") == 2


LOCK_RUN = WAIT_FOR_GO + textwrap.dedent(
    """
    import json, sys
    import numpy as np
    sys.path.insert(0, sys.argv[1])
    import synth_kernels
    wait_for_go(sys.argv[2])  # all processes miss together
    v = synth_kernels.tag(np.arange(1, 8, dtype=np.int64))
    st = synth_kernels.tag.stats
    print(json.dumps({"v": v, "hits": sum(st.cache_hits.values()), "misses": sum(st.cache_misses.values())}))
    """
)


def test_processes_that_miss_one_variant_at_once_compile_it_once(tmp_path: Path) -> None:
    """A variant missed by 3 processes at once is compiled by one of them; the others wait for its compile lock
    and load what it saved (issue 31: pytest's workers and warm-up's processes compiled the same kernels twice)."""
    (tmp_path / "synth_kernels.py").write_text(SYNTH)
    go = tmp_path / "go"  # once every process has imported numba
    procs = [_start(LOCK_RUN, [str(tmp_path), str(go)], tmp_path / "cache") for _ in range(3)]
    _go(go, procs)
    got = [_finish(p) for p in procs]
    x = np.arange(1, 8, dtype=np.int64)
    assert [g["v"] for g, _ in got] == [float(x.sum()) * 1000.0 + 8] * 3  # numpy's figure
    assert sorted(g["misses"] for g, _ in got) == [0, 0, 1], got
    assert sorted(g["hits"] for g, _ in got) == [0, 1, 1], got


def test_a_failed_compile_gives_its_lock_back(tmp_path: Path, monkeypatch) -> None:
    """A compile that raises (a type numba cannot compile the kernel for) leaves no compile lock held, and the
    next variant compiles and is saved as usual."""
    import numba

    from calframe import _kernel_cache

    monkeypatch.setattr(numba.core.config, "CACHE_DIR", "")  # beside the source (make test sets NUMBA_CACHE_DIR)
    (tmp_path / "synth_kernels.py").write_text(SYNTH)
    tag = _synth(tmp_path, "synth_fails")
    with pytest.raises(numba.core.errors.TypingError):
        tag("not an array")
    assert _kernel_cache._held == {}
    x = np.arange(1, 8, dtype=np.int16)
    assert tag(x) == float(x.sum()) * 1000.0 + 2 and _kernel_cache._held == {}
    again = _synth(tmp_path, "synth_fails_again")
    assert again(x) == float(x.sum()) * 1000.0 + 2 and sum(again.stats.cache_hits.values()) == 1  # saved: loaded
