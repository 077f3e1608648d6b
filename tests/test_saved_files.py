"""Saved recalibrators: load validates every value, bounds the JSON nesting, and authenticates with HMAC.

A file edited by someone who recomputes its checksum passes the checksum, so
each tampering test below recomputes it as the saver does (written out here
from the format in ``calframe/recalibrate/base.py``, not with calframe's own
helper) and expects ``load`` to refuse the file with a RecalibratorFileError
that names the file and the field.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import calframe
from calframe import recalibrate as R


# ---------------------------------------------------------------------------
# fitted recalibrators and the file format, written out
# ---------------------------------------------------------------------------


def _data(n: int = 600, K: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.02, 0.98, n)
    y = (rng.random(n) < p**1.5).astype(np.int64)
    logits = rng.normal(size=(n, K)) * 2
    P = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    yk = np.array([rng.choice(K, p=row) for row in P])
    v = rng.normal(size=n)
    X = rng.normal(size=(n, 2))
    return p, y, P, yk, v, X


def _per_group():
    cal = calframe.datasets.grouped_miscalibration(n=2000, seed=1)
    return calframe.fit(cal, "platt", by="region")


def _fitted() -> dict[str, tuple[R.Recalibrator, tuple, dict]]:
    """method -> (recalibrator, predict args, predict kwargs)."""
    p, y, P, yk, v, X = _data()
    pt, _, Pt, _, vt, Xt = _data(seed=1)
    return {
        "platt": (R.Platt.fit(p, y), (pt,), {}),
        "temperature": (R.Temperature.fit(P, yk), (Pt,), {}),
        "histogram": (R.Histogram.fit(p, y, n_bins=8), (pt,), {}),
        "isotonic": (R.Isotonic.fit(p, y), (pt,), {}),
        "beta": (R.Beta.fit(p, y), (pt,), {}),
        "scaling_binning": (R.ScalingBinning.fit(p, y), (pt,), {}),
        "venn_abers": (R.VennAbers.fit(p, y, interval=True), (pt,), {}),
        "tree": (R.Tree.fit(p, y, v, leaf="histogram", min_leaf=50), (pt,), {"v": vt}),
        "beta_v": (R.BetaV.fit(p, y, v, degree=2), (pt,), {"v": vt}),
        "lore": (R.LoRe.fit(p, y, X, standardize=True), (pt,), {"features": Xt}),
    }


def _expected_stream(header: dict[str, Any], flat: dict[str, np.ndarray]) -> list[bytes]:
    """The bytes the checksum and the signature hash, as documented: canonical JSON, then each array by path."""
    out = [json.dumps(header, sort_keys=True, separators=(",", ":")).encode()]
    for name in sorted(flat):
        a = flat[name]
        out.append(name.encode() + b"\0" + a.dtype.str.encode() + b"\0" + repr(a.shape).encode() + b"\0")
        out.append(a.astype(a.dtype.newbyteorder("<")).tobytes())
    return out


def _checksum(header: dict[str, Any], flat: dict[str, np.ndarray]) -> str:
    h = hashlib.sha256()
    for b in _expected_stream({k: v for k, v in header.items() if k != "checksum"}, flat):
        h.update(b)
    return "sha256:" + h.hexdigest()


def _hmac(key: bytes, header: dict[str, Any], flat: dict[str, np.ndarray]) -> str:
    h = hmac.new(key, digestmod=hashlib.sha256)
    for b in _expected_stream({k: v for k, v in header.items() if k not in ("checksum", "signature")}, flat):
        h.update(b)
    return "hmac-sha256:" + h.hexdigest()


_DT = {"float64": np.float64, "int64": np.int64, "bool": np.bool_}


def _node(header: dict, path: str) -> tuple[dict, str]:
    """The header node holding array ``path`` ('children/0/x') and the array's own name."""
    *parts, name = path.split("/")
    node = header
    for i in range(0, len(parts), 2):
        node = node["children"][int(parts[i + 1])]
    return node, name


def _read(d: Path) -> tuple[dict, dict[str, np.ndarray]]:
    header = json.loads((d / "recalibrator.json").read_text())
    table = pq.read_table(d / "arrays.parquet")
    flat = {}
    for name in table.column_names:
        if name == "format_version":
            continue
        node, own = _node(header, name)
        spec = node["arrays"][own]
        vals = np.asarray(table.column(name)[0].as_py(), dtype=_DT[spec["dtype"]])
        flat[name] = vals.reshape(spec["shape"])
    return header, flat


def _write(d: Path, header: dict, flat: dict[str, np.ndarray], *, checksum: bool = True) -> Path:
    """Write a (tampered) directory file; the array specs follow the arrays, the checksum is recomputed."""
    for name, a in flat.items():
        node, own = _node(header, name)
        node["arrays"][own] = {"dtype": {"f": "float64", "i": "int64", "b": "bool"}[a.dtype.kind],
                               "shape": list(a.shape)}
    if checksum:
        header["checksum"] = _checksum(header, flat)
    d.mkdir()
    (d / "recalibrator.json").write_text(json.dumps(header))  # NaN / Infinity written as JSON's extensions
    cols = {"format_version": pa.array([1], pa.int64())}
    for name, a in flat.items():
        cols[name] = pa.LargeListArray.from_arrays(pa.array([0, a.size], pa.int64()), pa.array(a.reshape(-1)))
    pq.write_table(pa.table(cols), d / "arrays.parquet")
    return d


def _tampered(tmp_path: Path, rec: R.Recalibrator, edit: Callable[[dict, dict], None], tag: str) -> Path:
    src = tmp_path / f"{tag}_src"
    rec.save(src)
    header, flat = _read(src)
    edit(header, flat)
    return _write(tmp_path / f"{tag}_bad", header, flat)


def _set(*keys_and_value):
    """edit: header[k1][k2]... = value."""
    *keys, value = keys_and_value

    def edit(h, f):
        node = h
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value
    return edit


def _arr(name: str, change: Callable[[np.ndarray], np.ndarray]):
    def edit(h, f):
        f[name] = change(f[name].copy())
    return edit


def _put(i: int, value: float):
    def change(a):
        a[i] = value
        return a
    return change


# (method, tampering, what the message must name)
CASES = [
    ("platt", _set("params", "coef", math.nan), r"params\.coef"),
    ("platt", _set("params", "intercept", math.inf), r"params\.intercept"),
    ("platt", _set("params", "variant", "bogus"), r"'variant'"),
    ("temperature", _set("params", "inv_temperature", -math.inf), r"params\.inv_temperature"),
    ("temperature", _set("params", "inv_temperature", -0.5), r"'inv_temperature'"),
    ("histogram", _arr("values", _put(3, 6.155)), r"'values'.*outside \[0, 1\]"),
    ("histogram", _arr("values", _put(0, math.nan)), r"'values'.*NaN"),
    ("histogram", _arr("edges", lambda a: a[[1, 0, *range(2, len(a))]]), r"'edges'.*increasing"),
    ("histogram", _arr("values", lambda a: a[:-1]), r"'values'.*shape"),
    ("histogram", _arr("edges", _put(-1, 0.99)), r"'edges'.*last one 1.0.*0\.99"),
    ("histogram", _set("params", "n_bins", 3), r"'edges'.*n_bins = 3"),
    ("isotonic", _arr("y", _put(0, -0.879)), r"'y'.*outside \[0, 1\]"),
    ("isotonic", _arr("y", lambda a: a[::-1].copy()), r"'y'.*non-decreasing"),
    ("isotonic", _arr("x", _put(1, math.nan)), r"'x'.*NaN"),
    ("isotonic", _arr("x", lambda a: a[1:]), r"'y'.*shape"),
    ("beta", _set("params", "a", math.nan), r"params\.a"),
    ("beta", lambda h, f: h["params"].update(a=-1.0, b=-2.0), r"'a'.*'b'"),
    ("beta", _set("params", "variant", "kumar"), r"'variant'"),
    ("scaling_binning", _arr("values", _put(0, 1.5)), r"'values'.*outside"),
    ("scaling_binning", _arr("edges", _put(-1, 7.0)), r"'edges'.*outside"),
    ("scaling_binning", _set("children", 0, "params", "coef", math.nan), r"children\[0\]\.params\.coef"),
    ("venn_abers", lambda h, f: f.update(p0=f["p1"], p1=f["p0"]), r"'p0' must be <= 'p1'"),
    ("venn_abers", _arr("p1", _put(0, -0.5)), r"'p1'.*outside \[0, 1\]"),
    ("venn_abers", _arr("c", lambda a: a[::-1].copy()), r"'c'.*increasing"),
    ("venn_abers", _arr("p0", lambda a: a[:-1]), r"'p0'.*shape"),
    ("venn_abers", _set("params", "interval", 1), r"'interval'"),
    ("tree", _arr("thresholds", lambda a: a[::-1].copy()), r"'thresholds'.*increasing"),
    ("tree", _arr("leaf_rows", _put(0, -5)), r"'leaf_rows'"),
    ("tree", _arr("leaf_child", lambda a: np.where(a > 0, 1, 0)), r"'leaf_child'"),
    ("tree", _arr("children/1/values", _put(0, 2.0)), r"children/1.*'values'"),
    ("tree", _set("params", "min_leaf", 0), r"'min_leaf'"),
    ("tree", _set("params", "max_depth", 1), r"'thresholds'.*max_depth 1"),
    ("beta_v", _set("params", "v_scale", 0.0), r"'v_scale'"),
    ("beta_v", _set("params", "coef", [1.0, 1.0, math.nan, 0.0]), r"params\.coef\[2\]"),
    ("beta_v", _set("params", "variant", "bogus"), r"'variant'"),
    ("lore", _arr("scale", _put(0, 0.0)), r"'scale'"),
    ("lore", _arr("center", _put(1, math.nan)), r"'center'.*NaN"),
    ("lore", _arr("correct", _put(0, 2.0)), r"'correct'"),
    ("lore", _arr("bins", lambda a: a[:-1]), r"'bins'.*shape"),
    ("per_group", lambda h, f: h["params"]["keys"].__setitem__(1, h["params"]["keys"][0]), r"'keys'.*twice"),
    ("per_group", _set("params", "method", "beta"), r"'beta'"),
    ("per_group", lambda h, f: h["params"]["keys"].pop(), r"'keys'"),
    ("per_group", lambda h, f: h["params"]["keys"].__setitem__(0, "north"), r"'keys'"),
    ("per_group", _set("children", 0, "params", "coef", math.inf), r"children\[0\]\.params\.coef"),
    # the file itself
    ("platt", _set("format_version", 2), r"format_version 2.*upgrade calframe"),
    ("platt", _set("format_version", True), r"format_version True"),
    ("platt", _set("format_version", 1.0), r"format_version 1\.0"),
    ("platt", _set("method", ["platt"]), r"unknown method"),
    ("platt", _set("method", "per_group"), r"'per_group'|keys"),
]


@pytest.fixture(scope="module")
def fitted():
    out = _fitted()
    out["per_group"] = (_per_group(), None, None)
    return out


@pytest.mark.parametrize("method, edit, field", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_tampered_file_with_recomputed_checksum_is_refused(tmp_path, fitted, method, edit, field):
    rec = fitted[method][0]
    bad = _tampered(tmp_path, rec, edit, method)
    with pytest.raises(R.RecalibratorFileError, match=field) as err:
        calframe.load(bad)
    msg = str(err.value)
    assert str(bad) in msg and "\n" not in msg
    assert isinstance(err.value, calframe.CalframeError) and isinstance(err.value, ValueError)


def test_untampered_rewrite_still_loads(tmp_path, fitted):
    """The test's writer and checksum are faithful: an unchanged file written by them loads and equals the original."""
    for method, (rec, _, _) in fitted.items():
        path = _tampered(tmp_path, rec, lambda h, f: None, method)
        assert calframe.load(path).equals(rec), method


def test_deeply_nested_header_is_refused_before_parsing(tmp_path, fitted):
    rec = fitted["platt"][0]
    deep = 100_000
    src = tmp_path / "src"
    rec.save(src)
    header, flat = _read(src)
    header["params"]["note"] = "X"
    header["checksum"] = _checksum(header, flat)
    text = json.dumps(header).replace('"X"', "[" * deep + "]" * deep)
    d = _write(tmp_path / "deep", header, flat)
    (d / "recalibrator.json").write_text(text)
    with pytest.raises(R.RecalibratorFileError, match=r"deep nests 100002 levels deep.*at most 64"):
        calframe.load(d)
    # the single-file form too
    t = pq.read_table(d / "arrays.parquet").replace_schema_metadata({b"calframe.recalibrator": text.encode()})
    pq.write_table(t, tmp_path / "deep.parquet")
    with pytest.raises(R.RecalibratorFileError, match="levels deep"):
        calframe.load(tmp_path / "deep.parquet")


def test_brackets_inside_strings_do_not_count_as_nesting(tmp_path, fitted):
    rec = R.Platt.fit(*_data()[:2], meta={"note": "[" * 500 + '\\"{' * 100})
    rec.save(tmp_path / "s.parquet")
    assert calframe.load(tmp_path / "s.parquet").meta["note"] == rec.meta["note"]


def test_tampered_single_parquet_file_is_refused(tmp_path, fitted):
    rec = fitted["histogram"][0]
    rec.save(tmp_path / "h.parquet")
    t = pq.read_table(tmp_path / "h.parquet")
    header = json.loads(t.schema.metadata[b"calframe.recalibrator"])
    values = np.asarray(t.column("values")[0].as_py())
    values[2] = 6.155
    flat = {"edges": np.asarray(t.column("edges")[0].as_py()), "values": values}
    header["checksum"] = _checksum(header, flat)
    t = t.set_column(t.column_names.index("values"), "values",
                     pa.LargeListArray.from_arrays(pa.array([0, len(values)], pa.int64()), pa.array(values)))
    pq.write_table(t.replace_schema_metadata({b"calframe.recalibrator": json.dumps(header).encode()}),
                   tmp_path / "bad.parquet")
    with pytest.raises(R.RecalibratorFileError, match=r"bad\.parquet.*'values'.*6\.155"):
        calframe.load(tmp_path / "bad.parquet")


# ---------------------------------------------------------------------------
# HMAC-SHA256 signatures
# ---------------------------------------------------------------------------


def _predict(rec, args, kw):
    return rec.predict(*args, **kw)


@pytest.mark.parametrize("form", ["f.parquet", "dir"])
@pytest.mark.parametrize("key", [None, "s3cret", b"\x00\xffbinary key"])
def test_round_trip_is_bit_identical_signed_or_not(tmp_path, fitted, form, key):
    for method, (rec, args, kw) in fitted.items():
        path = rec.save(tmp_path / f"{method}_{form}", key=key)
        back = calframe.load(path, key=key)
        assert type(back) is type(rec) and back.equals(rec) and back.meta == rec.meta, method
        if args is not None:
            a, b = _predict(rec, args, kw), _predict(back, args, kw)
            assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), method


def test_signature_is_hmac_sha256_of_the_documented_stream(tmp_path, fitted):
    rec = fitted["tree"][0]
    rec.save(tmp_path / "t", key="s3cret")
    header, flat = _read(tmp_path / "t")
    assert header["signature"] == _hmac(b"s3cret", header, flat)
    assert header["checksum"] == _checksum(header, flat)  # the checksum covers the signature
    # a str key is its UTF-8 bytes
    assert calframe.load(tmp_path / "t", key="s3cret".encode()).equals(rec)


def test_signature_errors(tmp_path, fitted):
    rec = fitted["isotonic"][0]
    signed = rec.save(tmp_path / "signed.parquet", key="right key")
    plain = rec.save(tmp_path / "plain.parquet")
    with pytest.raises(R.RecalibratorFileError, match=r"signed.parquet is signed.*pass key="):
        calframe.load(signed)
    with pytest.raises(R.RecalibratorFileError, match=r"signature of .*signed.parquet does not match: wrong key"):
        calframe.load(signed, key="wrong key")
    with pytest.raises(R.RecalibratorFileError, match=r"plain.parquet is not signed"):
        calframe.load(plain, key="right key")
    # edited after signing, checksum recomputed: the signature no longer matches
    src = rec.save(tmp_path / "src", key="right key")
    header, flat = _read(src)
    flat["y"] = flat["y"] * 0.5
    bad = _write(tmp_path / "edited", header, flat)
    with pytest.raises(R.RecalibratorFileError, match="does not match"):
        calframe.load(bad, key="right key")
    # the signature stripped, checksum recomputed: an unsigned file, which a key refuses
    header, flat = _read(src)
    del header["signature"]
    stripped = _write(tmp_path / "stripped", header, flat)
    with pytest.raises(R.RecalibratorFileError, match="is not signed"):
        calframe.load(stripped, key="right key")
    # a signature edited without the key: refused with the key
    header, flat = _read(src)
    header["signature"] = _hmac(b"attacker", header, flat)
    forged = _write(tmp_path / "forged", header, flat)
    with pytest.raises(R.RecalibratorFileError, match="does not match"):
        calframe.load(forged, key="right key")


@pytest.mark.parametrize("key", [b"", "", 12345, ["k"]])
def test_bad_keys(tmp_path, fitted, key):
    rec = fitted["platt"][0]
    with pytest.raises(calframe.ParameterError, match=r"'key' parameter of save"):
        rec.save(tmp_path / "x.parquet", key=key)
    ok = rec.save(tmp_path / "ok.parquet", key="k")
    with pytest.raises(calframe.ParameterError, match=r"'key' parameter of load"):
        calframe.load(ok, key=key)


def test_key_never_appears_in_messages(tmp_path, fitted):
    rec = fitted["platt"][0]
    path = rec.save(tmp_path / "k.parquet", key="TOP-SECRET-1")
    with pytest.raises(R.RecalibratorFileError) as err:
        calframe.load(path, key="TOP-SECRET-2")
    assert "TOP-SECRET" not in str(err.value)


# ---------------------------------------------------------------------------
# wrong argument types
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", [None, 3, b"bytes.parquet", "", ["a"]])
def test_load_and_save_reject_non_paths(tmp_path, fitted, path):
    with pytest.raises(calframe.ParameterError, match=r"'path' parameter of load"):
        calframe.load(path)
    with pytest.raises(calframe.ParameterError, match=r"'path' parameter of load"):
        R.load(path)
    with pytest.raises(calframe.ParameterError, match=r"'path' parameter of save"):
        fitted["platt"][0].save(path)
