"""The eager engine's fused pass (calframe/_kernels/fused.py, engines/eager.fused_sums) against numpy by hand:
edge values, weights, groups emptied by nulls="drop", string keys, and the same bits on 1 and 2 threads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import calframe
from calframe import request as R
from calframe._columns import select_rows
from calframe._kernels import fused as FK
from calframe.engines import eager

ROOT = Path(__file__).resolve().parents[1]


def ece_by_hand(p, y, w=None, bins=15, closed="left"):
    """ECE of the positive class: numpy.digitize on the inner edges (left) or (a, b] edges i / B (right)."""
    w = np.ones_like(p) if w is None else w
    if closed == "left":
        b = np.digitize(p, np.linspace(0, 1, bins + 1)[1:-1])
    else:
        b = np.searchsorted(np.array([i / bins for i in range(1, bins)]), p, side="left")
    total = sum(abs((w * p)[b == k].sum() - (w * y)[b == k].sum()) for k in range(bins))
    return total / w.sum()


def edge_data(n=4000, seed=3):
    rng = np.random.default_rng(seed)
    edges = np.concatenate([np.linspace(0, 1, 16), [i / 15 for i in range(16)], [0.0, 1.0, 0.5]])
    near = np.concatenate([np.nextafter(edges, 2), np.nextafter(edges, -1)]).clip(0, 1)
    p = np.concatenate([edges, near, rng.random(n)])
    y = (rng.random(p.size) < p).astype(np.int64)
    return p, y, rng


@pytest.mark.parametrize("by", [None, "g", "s"])
def test_fused_pass_is_used(by):
    """The benchmarked calls take the fused pass (not the general path)."""
    p, y, rng = edge_data()
    df = pl.DataFrame({"prob": p, "label": y, "g": rng.integers(0, 5, p.size), "s": rng.choice(["a", "b"], p.size)})
    req = R.ce("ece", "ece", None, None, p=1, by=by)
    assert eager.fused_sums(req, select_rows(df, func="ece", by=by)) is not None


@pytest.mark.parametrize("closed", ["left", "right"])
@pytest.mark.parametrize("weighted", [False, True])
def test_ungrouped_by_hand(closed, weighted):
    p, y, rng = edge_data()
    w = rng.random(p.size) * 7 if weighted else None
    df = pl.DataFrame({"prob": p, "label": y, "w": w if weighted else np.ones(p.size)})
    got = calframe.ece(df, closed=closed, weights="w" if weighted else None)
    assert got == pytest.approx(ece_by_hand(p, y, w, closed=closed), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("key", ["int", "str"])
def test_grouped_by_hand_with_groups_emptied_by_drop(key):
    """Groups whose every row has a null label vanish with nulls="drop"; the others equal numpy by hand."""
    p, y, rng = edge_data()
    g = rng.integers(0, 6, p.size)
    w = rng.random(p.size) * 3
    keys = g if key == "int" else np.array([f"k{v}" for v in g])
    df = pl.DataFrame({"prob": p, "label": y, "g": keys, "w": w}).with_columns(
        label=pl.when(pl.Series(g) == 4).then(None).otherwise(pl.col("label")))
    with pytest.warns(UserWarning):
        got = calframe.ece(df, by="g", weights="w", nulls="drop")
    kept = sorted(set(g.tolist()) - {4})
    assert got["g"].to_list() == (kept if key == "int" else [f"k{v}" for v in kept])
    for v, (n, e) in zip(kept, got.select("n", "ece").rows()):
        m = g == v
        assert n == m.sum()
        assert e == pytest.approx(ece_by_hand(p[m], y[m], w[m]), rel=1e-12, abs=1e-15)


def test_string_keys_nulls_long_strings_and_order():
    """Null keys last, long (out-of-line) strings told apart from ones sharing their first 12 bytes."""
    rng = np.random.default_rng(5)
    names = ["b", "a", "a long key shared prefix 1", "a long key shared prefix 2", "é", None, ""]
    k = rng.integers(0, len(names), 5000)
    p = rng.random(5000)
    y = (rng.random(5000) < p).astype(np.int8)
    df = pl.DataFrame({"prob": p, "label": y, "s": [names[i] for i in k]})
    got = calframe.ece(df, by="s")
    want_keys = sorted(n for n in names if n is not None) + [None]
    assert got["s"].to_list() == want_keys
    for key, n, e in got.rows():
        m = np.array([names[i] == key for i in k])
        assert n == m.sum()
        assert e == pytest.approx(ece_by_hand(p[m], y[m]), rel=1e-12, abs=1e-15)


def first_appearance(values):
    """Codes numbered in order of first appearance, and each code's first row: a dict, by hand."""
    seen, codes, firsts = {}, [], []
    for i, v in enumerate(values):
        if v not in seen:
            seen[v] = len(seen)
            firsts.append(i)
        codes.append(seen[v])
    return codes, firsts


def kernel_codes(arr, inline: bool, nchunks: int, colliding: bool = False):
    """string_codes on an Arrow string_view array: the inline path (no hash column) or the hashed one, placed by
    Polars' hash or (``colliding``) by a hash of 0 for every row, so only the string comparison tells keys apart."""
    views, addrs = eager.string_views(arr)
    valid = None if arr.null_count == 0 else np.asarray(arr.is_valid())
    if inline:
        hashes = None
    elif colliding:
        hashes = np.zeros(len(arr), dtype=np.uint64)
    else:
        hashes = pl.Series(pl.from_arrow(arr)).hash().to_numpy()
    return FK.string_codes(views, addrs, valid, hashes, nchunks, np.empty(len(arr), dtype=np.int32))


SHORT = ["", "a", "ab", "abc", "abcd", "abcde", "abcdefgh", "abcdefghijkl", "abcdefghijk", "a\x00", "\x00",
         "é", "éé", "b", "ba", "abcdefghijkm", None]


@pytest.mark.parametrize("nchunks", [1, 3, 4])
def test_inline_string_codes_by_hand(nchunks):
    """Strings of at most 12 bytes (prefixes of each other, NUL bytes, 2-byte characters, the empty string,
    nulls) and 5000 distinct keys (the tables grow several times): numbered in order of first appearance
    on any chunk count, as the hashed path numbers them."""
    rng = np.random.default_rng(11)
    many = [f"k{i}" for i in range(5000)]
    for names, n in ((SHORT, 4000), (many + SHORT, 40_000)):
        values = [names[i] for i in rng.integers(0, len(names), n)]
        arr = pl.Series(values, dtype=pl.String).to_arrow(compat_level=pl.CompatLevel.newest())
        want, firsts = first_appearance(values)
        for inline in (True, False):
            codes, reps = kernel_codes(arr, inline, nchunks)
            assert codes.tolist() == want and reps.tolist() == firsts


def test_inline_string_codes_ignore_the_bytes_past_a_string():
    """The inline path masks the bytes of a view past a string's end: Arrow's format asks for zeros there,
    and Polars writes zeros, but a producer that leaves other bytes still gets one key for two views of
    "ab" that differ only there; "ab" and "abX" (the same bytes, another length) are two. (The hashed path
    does not promise this: Polars' hash reads those bytes.)"""
    import pyarrow as pa

    def view(s: bytes, pad: bytes) -> bytes:
        return len(s).to_bytes(4, "little") + (s + pad)[:12].ljust(12, b"\x00")

    raw = view(b"ab", b"") + view(b"ab", b"\xff" * 10) + view(b"abX", b"\x01") + view(b"ab", b"XYZ")
    arr = pa.StringViewArray.from_buffers(pa.string_view(), 4, [None, pa.py_buffer(raw)])
    assert arr.to_pylist() == ["ab", "ab", "abX", "ab"]
    codes, reps = kernel_codes(arr, True, 1)
    assert codes.tolist() == [0, 0, 1, 0] and reps.tolist() == [0, 2]


def test_a_string_longer_than_12_bytes_takes_the_hashed_path():
    """The inline path answers nothing for a column with a 13-byte string; _string_keys then places the
    strings by Polars' hash and gets the same codes as by hand."""
    values = ["ab", "abcdefghijklm", "ab", None, "abcdefghijklm", "abcdefghijkl"]
    arr = pl.Series(values).to_arrow(compat_level=pl.CompatLevel.newest())
    codes, reps = kernel_codes(arr, True, 2)
    assert codes.size == 0 and reps.size == 0
    codes, n, keys = eager._string_keys(pl.Series("s", values))
    want, firsts = first_appearance(values)
    assert codes.tolist() == want and n == len(firsts) and keys["s"].to_list() == [values[i] for i in firsts]


def test_long_strings_compared_at_every_byte():
    """Strings of 13 to 29 bytes that differ from another of the same length in one byte only, at every
    position past the 4 the view holds (the 8-byte words of fused._same, the last one overlapping): each is
    its own key, and the copies of a string (stored apart in the data buffers) are one."""
    base = "abcdefghijklmnopqrstuvwxyz0123"
    names = []
    for length in (13, 16, 20, 21, 28, 29):
        s = base[:length]
        names += [s] + [s[:j] + "#" + s[j + 1:] for j in range(4, length)]
    rng = np.random.default_rng(8)
    values = [names[i] for i in rng.integers(0, len(names), 3000)] + names
    want, firsts = first_appearance(values)
    for nchunks in (1, 3):
        arr = pl.Series(values).to_arrow(compat_level=pl.CompatLevel.newest())
        codes, reps = kernel_codes(arr, False, nchunks)
        assert codes.tolist() == want and reps.tolist() == firsts


def test_long_strings_with_colliding_hashes_are_told_apart_by_their_bytes():
    """Every row hashed to 0, so each lookup walks the whole probe chain and fused._same alone decides: strings of
    13 to 29 bytes sharing their first 8, 12 or 20 bytes (and all but one byte), the same bytes at another
    length, copies stored apart, and nulls: numbered exactly as a Python dict numbers them, on 1 and 3 chunks.
    (With Polars' real hashes, distinct strings almost never reach _same: a _same that read only the first 8
    bytes passed every other test.)"""
    base = "0123456789abcdefghijklmnopqrs"  # 29 bytes
    names = [None]
    for length in range(13, 30):
        s = base[:length]
        names += [s, s[:-1] + "#", s[:8] + "#" * (length - 8), s[:12] + "#" * (length - 12)]
        names += [s[:j] + "#" + s[j + 1:] for j in (0, 3, 4, 7, 8, 11, 12, length - 9, length - 8) if j < length]
        if length > 20:
            names.append(s[:20] + "#" * (length - 20))
    names = list(dict.fromkeys(names))  # distinct, in order
    rng = np.random.default_rng(21)
    values = [names[i] for i in rng.integers(0, len(names), 2000)] + names
    want, firsts = first_appearance(values)
    assert len(firsts) == len(names) > 200
    arr = pl.Series(values, dtype=pl.String).to_arrow(compat_level=pl.CompatLevel.newest())
    for nchunks in (1, 3):
        codes, reps = kernel_codes(arr, False, nchunks, colliding=True)
        assert codes.tolist() == want and reps.tolist() == firsts


def test_more_rows_than_the_inline_codes_hold_take_the_hashed_path(monkeypatch):
    """INLINE_ROWS bounds the inline path (a code + 1 must fit 28 bits): past it, the hashed path, same codes."""
    values = ["x", "y", None, "x", "z"] * 3
    want, firsts = first_appearance(values)
    calls = []
    real = FK.string_codes
    monkeypatch.setattr(FK, "string_codes", lambda *a: calls.append(a[3] is None) or real(*a))
    for limit, paths in ((len(values), [True]), (len(values) - 1, [False])):
        calls.clear()
        monkeypatch.setattr(FK, "INLINE_ROWS", limit)
        codes, n, keys = eager._string_keys(pl.Series("s", values))
        assert calls == paths and codes.tolist() == want and n == len(firsts)


@pytest.mark.parametrize("kind", ["categorical", "enum"])
def test_category_keys_as_slots(kind, monkeypatch):
    """Categorical and Enum keys without nulls: their physical codes are the table's slots (no strings read;
    a category with no rows leaves a gap), the keys read back from a row of each. Keys, their order (the
    dtype's: an Enum's category order) and figures equal the general path's (``ci`` takes it) and numpy by
    hand."""
    order = ["zeta", "unused", "alpha", "a category name past 12 bytes", "mid"]
    dtype = pl.Enum(order) if kind == "enum" else pl.Categorical
    rng = np.random.default_rng(12)
    present = [c for c in order if c != "unused"]
    k = np.array(present)[rng.integers(0, len(present), 6000)]
    p = rng.random(6000)
    y = (rng.random(6000) < p).astype(np.int8)
    g = pl.Series("g", ["unused"] + k.tolist(), dtype=dtype)[1:]  # "unused" gets a code, then no row
    df = pl.DataFrame({"prob": p, "label": y, "g": g})
    calls = []
    real = FK.first_rows
    monkeypatch.setattr(FK, "first_rows", lambda *a: calls.append(a[2:]) or real(*a))
    got = calframe.ece(df, by="g")
    assert calls and calls[0][1] == len(present)  # slots of the physical range, present ones found
    general = calframe.ece(df, by="g", ci=0.9, n_boot=2, seed=0)
    assert got["g"].dtype == dtype if kind == "enum" else got["g"].dtype == pl.Categorical
    assert got["g"].to_list() == general["g"].to_list()
    assert got["g"].to_list() == ([c for c in order if c in present] if kind == "enum" else sorted(present))
    for key, n, e in got.rows():
        m = k == key
        assert n == m.sum()
        assert e == pytest.approx(ece_by_hand(p[m], y[m]), rel=1e-12, abs=1e-15)
    np.testing.assert_allclose(got["ece"].to_numpy(), general["ece"].to_numpy(), rtol=1e-12)


@pytest.mark.parametrize("kind", ["categorical", "enum"])
def test_category_keys_whose_codes_do_not_start_at_0(kind):
    """ece(by=) on a Categorical and an Enum whose rows use only later categories (physical codes from 3 up, not in
    category order, one name past 12 bytes): each key and its (n, ece) equal ece on that key's rows filtered from
    the frame with String keys; keys in the dtype's order (an Enum's categories, a Categorical's strings sorted)
    and of the key's dtype."""
    order = ["unused 0", "unused 1", "unused 2", "zeta", "alpha", "a category name past 12 bytes", "mid"]
    used = order[3:]
    rng = np.random.default_rng(22)
    k = np.array(used)[rng.integers(0, len(used), 3000)]
    p = rng.random(3000)
    y = (rng.random(3000) < p).astype(np.int8)
    dtype = pl.Enum(order) if kind == "enum" else pl.Categorical
    g = pl.Series("g", order[:3] + k.tolist(), dtype=dtype)[3:]  # the unused names take codes 0-2, then no row
    assert g.to_physical().min() == 3
    df = pl.DataFrame({"prob": p, "label": y, "g": g})
    strings = df.with_columns(pl.col("g").cast(pl.String))
    got = calframe.ece(df, by="g")
    assert got["g"].dtype == dtype
    assert got["g"].cast(pl.String).to_list() == (used if kind == "enum" else sorted(used))
    for key, n, e in got.rows():
        part = strings.filter(pl.col("g") == key)
        assert n == part.height
        assert e == pytest.approx(calframe.ece(part), rel=1e-12, abs=1e-15)


def test_bad_rows_fall_back_to_the_detailed_errors():
    """A value the pass refuses raises the message of the general path, counts included."""
    df = pl.DataFrame({"prob": [0.2, 1.5, np.nan, 0.4], "label": [0, 1, 1, 0], "g": [1, 1, 2, 2]})
    with pytest.raises(calframe.InvalidValueError, match=r"NaN or infinite probabilities in 1 row and probabilities outside \[0, 1\] in 1 row"):
        calframe.ece(df, by="g")
    with pytest.raises(calframe.InvalidValueError):
        calframe.ece(pl.DataFrame({"prob": [0.2, 0.4], "label": [0, 2]}))


def test_kernel_sums_by_hand():
    """binned_pass's table and counts against numpy: lenses, weights scaled per slot, keys offset by lo."""
    rng = np.random.default_rng(9)
    n = 3000
    p = rng.random(n)
    p[:4] = [0.0, 1.0, 0.5, 1 / 3]
    y = rng.integers(0, 2, n).astype(np.int8)
    g = rng.integers(10, 14, n)
    w = rng.random(n)
    mult = np.array([1.0, 0.5, 2.0, 0.25])
    edges = np.linspace(0, 1, 11)
    for lens, conf, acc in ((FK.CLASS1, p, y), (FK.CLASS0, 1 - p, 1 - y),
                            (FK.TOP1, np.where(p > 0.5, p, 1 - p), np.where(p > 0.5, y, 1 - y))):
        flat, rows, bad = FK.binned_pass(p, y, g, 10, w, mult, edges, False, lens, 10, 4, 3)
        t = flat.reshape(4, 10, 3)
        b = np.digitize(conf, edges[1:-1])
        ws = w * mult[g - 10]
        assert bad == 0 and rows.tolist() == np.bincount(g - 10).tolist()
        for s in range(4):
            for k in range(10):
                m = (g - 10 == s) & (b == k)
                np.testing.assert_allclose(t[s, k], [ws[m].sum(), (ws * conf)[m].sum(), (ws * acc)[m].sum()],
                                           rtol=1e-13, atol=1e-15)
        # unweighted: rows and acc counted in one int64 per cell (fused._chunk), unpacked to the same layout
        flat, rows, bad = FK.binned_pass(p, y, g, 10, None, np.ones(4), edges, False, lens, 10, 4, 3)
        t = flat.reshape(4, 10, 3)
        assert bad == 0 and rows.size == 0
        for s in range(4):
            for k in range(10):
                m = (g - 10 == s) & (b == k)
                np.testing.assert_array_equal(t[s, k, [0, 2]], [m.sum(), acc[m].sum()])
                assert t[s, k, 1] == pytest.approx(conf[m].sum(), rel=1e-13, abs=1e-15)
    _, _, bad = FK.binned_pass(np.array([0.1, -0.0, np.nan, 2.0]), np.array([0, 1, 1, 3]), None, 0, None,
                               np.ones(1), edges, False, FK.CLASS1, 10, 1, 1)
    assert bad == 2  # NaN and 2.0 (label 3 on the same row); -0.0 is in [0, 1]


LABEL_DTYPES = [np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint32, np.uint64, np.float32, np.float64]


@pytest.mark.parametrize("dtype", LABEL_DTYPES)
def test_every_label_dtype_gives_the_int8_table_and_bad_rows(dtype):
    """Labels reach the pass as int8 or int64 words (fused.label_words: int32 as bytes, floats as float64 bit
    patterns): the same table, and a
    label other than 0 / 1 is bad in every dtype (2, 255, 0.5, NaN; -1 where the dtype has it)."""
    rng = np.random.default_rng(4)
    n = 5000
    p, y8 = rng.random(n), rng.integers(0, 2, n).astype(np.int8)
    edges = np.linspace(0, 1, 16)
    args = (None, 0, None, np.ones(1), edges, False, FK.TOP1, 15, 1, 3)
    want = FK.binned_pass(p, y8, *args)
    got = FK.binned_pass(p, y8.astype(dtype), *args)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[2] == want[2] == 0
    bad = y8.astype(np.float64)
    bad[[5, 50, 500]] = [2.0, 255.0, 1.0]
    if np.dtype(dtype).kind == "f":
        bad[[7, 70]] = [0.5, np.nan]
    if np.dtype(dtype).kind == "i":
        bad[9] = -1.0
    y = bad.astype(dtype)
    expected = int((~np.isin(bad, [0.0, 1.0])).sum())
    assert FK.binned_pass(p, y, *args)[2] == expected
    if dtype is np.float64:
        assert FK.binned_pass(p, np.where(y == 0.0, -0.0, y), *args)[2] == expected  # -0.0 is the label 0


def test_the_pass_is_compiled_for_byte_and_int64_labels_only():
    """What the label conversions buy (docs/benchmarks.md, "Specialisations"): no float or int32 version of the
    fused pass, whichever label dtypes were used."""
    p = np.random.default_rng(5).random(100)
    for dtype in LABEL_DTYPES + [bool]:
        FK.binned_pass(p, (p > 0.5).astype(dtype), None, 0, None, np.ones(1), np.linspace(0, 1, 16), False,
                       FK.CLASS1, 15, 1, 1)
    labels = {str(sig[1].dtype) for kernel in FK._PASSES.values() for sig in kernel.signatures}
    assert labels and labels <= {"int8", "int64"}, labels


SAME_BITS = """
import json, numpy as np, polars as pl, numba, calframe
rng = np.random.default_rng(1)
n = 300_000
p = rng.random(n); y = (rng.random(n) < p).astype(np.int8)
df = pl.DataFrame({"prob": p, "label": y, "g": rng.integers(0, 700, n), "w": rng.random(n),
                   "s": np.array([f"key{i}" for i in range(900)])[rng.integers(0, 900, n)]})
out = [calframe.ece(df).hex(), calframe.ece(df, weights="w").hex()]
for by in ("g", "s"):
    out += [v.hex() for v in calframe.ece(df, by=by, weights="w")["ece"].to_list()]
# big enough for two threads (fused.pass_threads), each label type read as it is
n2 = 1_200_000
p2 = rng.random(n2); y2 = rng.random(n2) < p2
for dt in (pl.Int8, pl.Boolean, pl.Float64, pl.Int64):
    out.append(calframe.ece(pl.DataFrame({"prob": p2, "label": pl.Series(y2).cast(dt)})).hex())
big = pl.DataFrame({"prob": p2, "label": pl.Series(y2).cast(pl.Float64), "g": rng.integers(0, 700, n2),
                    "w": rng.random(n2)})
out += [v.hex() for v in calframe.ece(big, by="g", weights="w", lens="top1")["ece"].to_list()]
print(json.dumps({"threads": numba.get_num_threads(), "out": out}))
"""


def test_same_bits_on_one_and_two_threads():
    runs = []
    for threads in ("1", "2"):
        env = {**os.environ, "PYTHONPATH": str(ROOT), "NUMBA_NUM_THREADS": threads}
        proc = subprocess.run([sys.executable, "-c", textwrap.dedent(SAME_BITS)], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert [r["threads"] for r in runs] == [1, 2]
    assert runs[0]["out"] == runs[1]["out"]


# --------------------------------------------------------------------------- labels read as they are (issue 33)


def label_frames(n=20_000, seed=11):
    """One seeded frame per label type, the same 0/1 labels in each, edge probabilities included."""
    p, y, rng = edge_data(n, seed)
    g = rng.integers(0, 7, p.size)
    return {t: pl.DataFrame({"prob": p, "label": pl.Series(y).cast(dt), "g": g})
            for t, dt in (("Int8", pl.Int8), ("Int64", pl.Int64), ("Boolean", pl.Boolean),
                          ("Float64", pl.Float64), ("Float32", pl.Float32), ("Int32", pl.Int32))}


@pytest.mark.parametrize("lens", ["class:1", "class:0", "top1"])
@pytest.mark.parametrize("by", [None, "g"])
def test_boolean_and_float_labels_read_directly_equal_the_int8_path_bit_for_bit(lens, by):
    """Boolean labels unpacked from their bitmap (eager.label_values), Float64 ones read as their bit patterns
    (fused.label_words), Int64 read as they are: the same bits as the Int8 labels, whose bytes the pass reads;
    and the same value as numpy by hand (the independent check)."""
    frames = label_frames()
    sel = select_rows(frames["Float64"], func="ece", by=by)
    assert eager.fused_sums(R.ce("ece", "ece", None, None, p=1, by=by, lens=lens), sel) is not None
    got = {t: calframe.ece(df, lens=lens, by=by) for t, df in frames.items()}
    key = (lambda v: v.hex()) if by is None else (lambda v: [x.hex() for x in v["ece"].to_list()])
    assert {t: key(v) for t, v in got.items()} == {t: key(got["Int8"]) for t in got}
    if by is None and lens == "class:1":
        df = frames["Int8"]
        assert got["Boolean"] == pytest.approx(ece_by_hand(df["prob"].to_numpy(), df["label"].to_numpy()), rel=1e-12)


def test_float_label_words():
    """The words the pass compares: 1.0 is the word of 1, 0.0 and -0.0 the two words of 0, every other value
    (0.5, 2.0, -1.0, inf, NaN, the smallest subnormal) neither."""
    y = np.array([0.0, 1.0, -0.0, 0.5, 2.0, -1.0, np.inf, np.nan, 5e-324, -5e-324])
    words, one, zero2 = FK.label_words(y)
    assert words.dtype == np.int64 and np.shares_memory(words, y)  # a view: never copied
    label = np.where(words == one, 1, np.where((words == 0) | (words == zero2), 0, -1))
    assert label.tolist() == [0, 1, 0] + [-1] * 7
    p = np.full(y.size, 0.3)
    _, _, bad = FK.binned_pass(p, y, None, 0, None, np.ones(1), np.linspace(0, 1, 16), False, FK.CLASS1, 15, 1, 1)
    assert bad == 7


def test_bad_float64_labels_still_give_the_calframe_error():
    """0.5 and 2.0 in a Float64 label column: the pass counts them bad and the general path names the column,
    the problem and the rows (as tests/test_bad_input.py for the other dtypes)."""
    p = np.linspace(0.05, 0.95, 10)
    for bad, what in ((0.5, "not whole numbers"), (2.0, "outside the classes")):
        y = np.array([0.0, 1.0] * 5)
        y[[3, 7]] = bad
        df = pl.DataFrame({"prob": p, "label": y})
        with pytest.raises(calframe.InvalidValueError, match=rf"(?s)'label'.*2 rows.*{what}"):
            calframe.ece(df)


@pytest.mark.parametrize("offset", [0, 3, 13])
def test_boolean_labels_from_the_bitmap(offset):
    """eager.label_values against Polars' own to_numpy: sliced (a bitmap offset), several chunks."""
    rng = np.random.default_rng(offset)
    s = pl.Series("label", rng.random(1000) < 0.4)
    parts = [s.slice(offset, 500), pl.concat([s.slice(offset, 300), s.slice(7, 201)], rechunk=False)]
    for part in parts:
        got = eager.label_values(part)
        assert got.dtype == np.int8 and got.tolist() == part.to_numpy().astype(np.int8).tolist()


def test_threads_by_size_and_restored():
    """A small pass runs on one thread, a large one on numba's number, and the number is the caller's again after
    the call."""
    import numba

    most = numba.get_num_threads()
    assert FK.pass_threads(1000) == 1
    assert FK.pass_threads(FK.ROWS_PER_THREAD * 64) == most
    calframe.ece(pl.DataFrame({"prob": [0.2, 0.7], "label": [0, 1]}))
    assert numba.get_num_threads() == most
