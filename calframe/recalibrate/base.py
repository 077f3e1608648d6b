"""The Recalibrator base class and its data-only file format.

A fitted recalibrator is plain data: ``method`` (a registered name),
``params`` (a JSON-able dict of scalars, strings, lists), ``arrays`` (named
numpy arrays), ``meta`` (a JSON-able dict the caller owns, e.g. the column
names it was fitted on) and ``children`` (nested recalibrators, e.g. the
per-leaf calibrators of ``tree``).  ``predict`` is a pure function of those.

File format (``format = "calframe-recalibrator"``, ``format_version = 1``)
-------------------------------------------------------------------------
One JSON document ("header") describing the recalibrator recursively::

    {"format": "calframe-recalibrator", "format_version": 1,
     "calframe_version": "...", "checksum": "sha256:<hex>",
     "method": ..., "params": {...}, "meta": {...},
     "arrays": {name: {"dtype": "float64"|"int64"|"bool", "shape": [...]}},
     "children": [ {method, params, meta, arrays, children}, ... ]}

and the arrays in Parquet (written and read with pyarrow): one row, one
``large_list`` column per array holding its C-order flattened values, named by
its path (``"x"``, ``"children/0/x"``, ...).  Nothing is ever pickled.

* ``save("model.parquet")`` (any path ending in ``.parquet``) writes a single
  Parquet file whose schema metadata key ``calframe.recalibrator`` holds the
  header.
* ``save("model_dir")`` (any other path) writes a directory holding
  ``recalibrator.json`` (the header, indented) and ``arrays.parquet``.

The checksum is SHA-256 over the canonical header (sorted keys, no
whitespace, checksum field removed) followed by each array's path, dtype,
shape and little-endian bytes in path order; ``load`` recomputes it, so any
accidental change of a value, a parameter or a shape is detected.  A checksum
is not a proof of origin (anyone can recompute it), so ``load`` also
validates every value (:meth:`Recalibrator._check`, one per method, and the
finiteness of every number): a file that fails raises
:class:`RecalibratorFileError` (a ``ValueError``) naming the file, the field
and the problem.

Authentication: ``save(path, key=secret)`` adds ``"signature":
"hmac-sha256:<hex>"``, HMAC-SHA256 under ``secret`` of the same byte stream
as the checksum but with the signature field removed too (the checksum
covers the signature).  ``load(path, key=secret)`` verifies it (constant-time
comparison); this is the way to trust a file from elsewhere.  A signed file
loaded without a key, an unsigned file loaded with a key, and a wrong key or
modified file are errors.  Floats survive JSON exactly (shortest round-trip
repr), arrays survive Parquet exactly, so fit -> save -> load -> predict is
bit-identical.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Any, Callable, ClassVar

import numpy as np

from .._errors import ParameterError, RecalibratorFileError, bad_param
from ._inputs import parse_lens

FORMAT_NAME = "calframe-recalibrator"
FORMAT_VERSION = 1
METADATA_KEY = b"calframe.recalibrator"
HEADER_FILE = "recalibrator.json"
ARRAYS_FILE = "arrays.parquet"
#: deepest JSON nesting ``load`` parses (a per-group tree of scaling-binning leaves nests 8 levels)
MAX_DEPTH = 64

_DTYPES = {"float64": np.float64, "int64": np.int64, "bool": np.bool_}

#: "not given": a parameter whose default depends on another one (e.g. Platt's C on its variant)
UNSET: Any = object()

#: method name -> Recalibrator subclass (filled by ``register``)
REGISTRY: dict[str, type["Recalibrator"]] = {}


def register(cls: type["Recalibrator"]) -> type["Recalibrator"]:
    REGISTRY[cls.method] = cls
    return cls


def _jsonable(x: Any, where: str) -> Any:
    """Plain-Python copy of a params/meta value; rejects what JSON cannot hold exactly."""
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        f = float(x)
        if not math.isfinite(f):
            raise ParameterError(f"{where}: {f!r} cannot be stored (JSON holds finite numbers only).")
        return f
    if x is None or isinstance(x, str):
        return x
    if isinstance(x, (list, tuple)):
        return [_jsonable(v, where) for v in x]
    if isinstance(x, dict):
        return {str(k): _jsonable(v, where) for k, v in x.items()}
    raise ParameterError(f"{where}: value {x!r} of type {type(x).__name__} is not JSON-able.")


def _array_dtype_name(a: np.ndarray) -> str:
    if a.dtype == np.bool_:
        return "bool"
    if a.dtype.kind in "iu":
        return "int64"
    if a.dtype.kind == "f":
        return "float64"
    raise ParameterError(f"arrays must be float, int or bool; got dtype {a.dtype}.")


@dataclass(eq=False)
class Recalibrator:
    """A fitted recalibrator: plain data plus ``predict``.

    Subclasses set ``method`` and implement ``fit`` (a classmethod taking the
    calibration arrays), ``predict`` and ``_check`` (validation of params and
    arrays after ``load``).  ``output`` tells what ``predict`` returns:
    ``"class:c"`` (an (n,) probability of class c; binary input: ``"class:1"``
    is the positive-class probability), ``"top1"`` (an (n,) recalibrated
    top-label confidence; the predicted class is unchanged) or ``"probs"``
    (an (n, K) matrix; a binary 1-d input gives back a 1-d positive-class
    probability).
    """

    params: dict[str, Any]
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    children: list["Recalibrator"] = field(default_factory=list)

    method: ClassVar[str] = ""
    #: the keyword parameters of ``fit`` (``meta`` aside): name -> check(func, name, value) -> canonical value
    #: (the checks of ``calframe._params``); ``check_params`` validates with them, before any work
    PARAMS: ClassVar[dict[str, Callable[[str, str, Any], Any]]] = {}

    def __post_init__(self) -> None:
        self.params = _jsonable(dict(self.params), f"{self.method} params")
        self.meta = _jsonable(dict(self.meta), f"{self.method} meta")
        arrays = {}
        for k, a in self.arrays.items():
            a = np.asarray(a)
            name = _array_dtype_name(a)
            arrays[str(k)] = np.ascontiguousarray(a, dtype=_DTYPES[name])
        self.arrays = arrays

    # -- interface -------------------------------------------------------
    @classmethod
    def fit(cls, probs, labels, **kwargs) -> "Recalibrator":  # pragma: no cover - abstract
        raise NotImplementedError

    def predict(self, probs, **extra) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def check_params(cls, params: dict[str, Any], n_classes: int | None = None) -> dict[str, Any]:
        """The keyword parameters of ``fit``, validated and in canonical types (a new dict).

        Raises ``ParameterError`` (``bad_param``: the parameter's name, what it must be, what was
        given) for an unknown name or a bad value. ``n_classes``: also check what depends on the
        number of classes (a lens); ``fit`` does, once the probabilities are known.

        Examples
        --------
        >>> from calframe.recalibrate import Platt
        >>> Platt.check_params({"C": 1, "variant": "kelly_smyth"})
        {'C': 1.0, 'variant': 'kelly_smyth'}
        >>> Platt.check_params({"C": -1})
        Traceback (most recent call last):
        ...
        calframe._errors.ParameterError: The 'C' parameter of platt.fit must be a finite number > 0 or None. Got -1 instead.
        """
        func = f"{cls.method}.fit"
        out = {}
        for name, value in params.items():
            check = cls.PARAMS.get(name)
            if check is None:
                known = ", ".join(repr(k) for k in cls.PARAMS) or "none"
                raise ParameterError(f"{func} has no parameter {name!r}; its parameters are {known}.", name)
            out[name] = value if value is UNSET else check(func, name, value)
        if n_classes is not None and out.get("lens") is not None:
            parse_lens(out["lens"], n_classes, func)
        return out

    @property
    def output(self) -> str:
        """What predict returns: 'class:c', 'top1' or 'probs' (see the class docstring)."""
        return str(self.params.get("lens", "probs"))

    @property
    def n_classes(self) -> int:
        return int(self.params["n_classes"])

    def _check(self) -> None:
        """Validate params/arrays (used by load); raise RecalibratorFileError."""

    def __repr__(self) -> str:
        shapes = ", ".join(f"{k}{list(v.shape)}" for k, v in self.arrays.items())
        kids = f", children={len(self.children)}" if self.children else ""
        return f"{type(self).__name__}(method={self.method!r}, params={self.params!r}, arrays=[{shapes}]{kids})"

    def equals(self, other: "Recalibrator") -> bool:
        """Same method, params, meta, arrays (bitwise, same dtype and shape) and children."""
        if type(self) is not type(other) or self.params != other.params or self.meta != other.meta:
            return False
        if self.arrays.keys() != other.arrays.keys() or len(self.children) != len(other.children):
            return False
        for k, a in self.arrays.items():
            b = other.arrays[k]
            if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
                return False
        return all(c.equals(d) for c, d in zip(self.children, other.children))

    # -- serialisation ---------------------------------------------------
    def _header(self, prefix: str, flat: dict[str, np.ndarray]) -> dict[str, Any]:
        arrays = {}
        for k in sorted(self.arrays):
            a = self.arrays[k]
            path = prefix + k
            flat[path] = a
            arrays[k] = {"dtype": _array_dtype_name(a), "shape": list(a.shape)}
        return {
            "method": self.method,
            "params": self.params,
            "meta": self.meta,
            "arrays": arrays,
            "children": [c._header(f"{prefix}children/{i}/", flat) for i, c in enumerate(self.children)],
        }

    def save(self, path: str | Path, *, key: bytes | str | None = None) -> Path:
        """Write the recalibrator (see the module docstring); returns the path written.

        ``*.parquet`` -> one Parquet file; any other path -> a directory with
        ``recalibrator.json`` and ``arrays.parquet`` (created if missing).
        ``key`` (bytes or str) signs the file with HMAC-SHA256; ``load`` then
        needs the same key.

        Examples
        --------
        >>> import numpy as np, tempfile, os
        >>> from calframe import recalibrate
        >>> rec = recalibrate.fit("platt", np.array([0.2, 0.4, 0.6, 0.8]), np.array([0, 1, 0, 1]))
        >>> path = rec.save(os.path.join(tempfile.mkdtemp(), "platt.parquet"), key="shared secret")
        >>> recalibrate.load(path, key="shared secret").equals(rec)
        True
        """
        import pyarrow as pa
        import pyarrow.parquet as pq

        from .._version import __version__

        path = _as_path(path, "save")
        key_bytes = _as_key(key, "save")
        flat: dict[str, np.ndarray] = {}
        body = self._header("", flat)
        header = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION, "calframe_version": __version__, **body}
        if key_bytes is not None:
            header["signature"] = _signature(key_bytes, header, flat)
        header["checksum"] = _checksum(header, flat)
        text = json.dumps(header, sort_keys=True, allow_nan=False)
        cols = {"format_version": pa.array([FORMAT_VERSION], pa.int64())}
        for name, a in flat.items():
            vals = pa.array(a.reshape(-1), type=_PA_TYPES[_array_dtype_name(a)]())
            offsets = pa.array([0, len(vals)], pa.int64())
            cols[name] = pa.LargeListArray.from_arrays(offsets, vals)
        table = pa.table(cols)
        if path.suffix == ".parquet":
            table = table.replace_schema_metadata({METADATA_KEY: text.encode()})
            pq.write_table(table, path)
        else:
            path.mkdir(parents=True, exist_ok=True)
            (path / HEADER_FILE).write_text(json.dumps(header, sort_keys=True, indent=1, allow_nan=False) + "\n")
            pq.write_table(table, path / ARRAYS_FILE)
        return path

    @classmethod
    def load(cls, path: str | Path, *, key: bytes | str | None = None) -> "Recalibrator":
        """Read a saved recalibrator; checks format, version, checksum, signature and every value.

        Called on a subclass (``Platt.load``), the file must hold that method.
        ``key`` (bytes or str): verify the file's HMAC-SHA256 signature (a
        signed file needs it, an unsigned one refuses it).  Raises
        RecalibratorFileError on any problem, FileNotFoundError if ``path``
        does not exist.
        """
        import pyarrow.parquet as pq

        from .._version import __version__

        path = _as_path(path, "load")
        key_bytes = _as_key(key, "load")
        if not path.exists():
            raise FileNotFoundError(f"load: no recalibrator at {path}")
        try:
            if path.is_dir():
                text = (path / HEADER_FILE).read_text()
                table = pq.read_table(path / ARRAYS_FILE)
            else:
                table = pq.read_table(path)
                md = table.schema.metadata or {}
                if METADATA_KEY not in md:
                    raise RecalibratorFileError(
                        f"load: {path} is a Parquet file without a calframe recalibrator header "
                        f"(schema metadata key {METADATA_KEY.decode()!r} missing)."
                    )
                text = md[METADATA_KEY].decode()
        except RecalibratorFileError:
            raise
        except Exception as e:  # unreadable JSON / Parquet, missing file in the directory
            raise RecalibratorFileError(f"load: {path} is not a readable calframe recalibrator: {e}") from e
        header = _parse_header(text, path)
        if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
            got = header.get("format") if isinstance(header, dict) else None
            raise RecalibratorFileError(f"load: {path} is not a {FORMAT_NAME!r} file (format = {got!r}).")
        version = header.get("format_version")
        if version != FORMAT_VERSION or type(version) is not int:
            newer = type(version) is int and version > FORMAT_VERSION
            raise RecalibratorFileError(
                f"load: {path} has format_version {version!r} (written by calframe "
                f"{header.get('calframe_version')!r}); this calframe ({__version__}) reads format_version "
                f"{FORMAT_VERSION} only: " + ("upgrade calframe to load it." if newer else "re-fit and save it again.")
            )
        flat = _read_arrays(table, header, path)
        _verify(header, flat, key_bytes, path)
        obj = _build(header, "", flat, path)
        if cls is not Recalibrator and not isinstance(obj, cls):
            raise RecalibratorFileError(f"load: {path} holds a {obj.method!r} recalibrator, not {cls.method!r}.")
        return obj


def _as_path(path: Any, func: str) -> Path:
    """``path`` as a Path; anything but a non-empty str or os.PathLike is a ParameterError."""
    if isinstance(path, os.PathLike) or (isinstance(path, str) and path):
        return Path(path)
    raise bad_param(func, "path", "a non-empty str or os.PathLike (the saved recalibrator's file or directory)",
                    path)


def _as_key(key: Any, func: str) -> bytes | None:
    """The HMAC key as bytes (str: UTF-8); the key itself never appears in a message."""
    if key is None:
        return None
    if isinstance(key, str):
        key = key.encode()
    if isinstance(key, (bytes, bytearray)) and key:
        return bytes(key)
    got = "an empty key" if isinstance(key, (bytes, bytearray)) else f"a {type(key).__name__}"
    raise ParameterError(f"The 'key' parameter of {func} must be a non-empty bytes or str secret (or None). "
                         f"Got {got} instead.")


def _parse_header(text: str, path: Path) -> Any:
    """json.loads with the nesting depth bounded (checked before parsing) and every number finite and int64."""
    depth = max(accumulate(1 if c in "[{" else -1 for c in re.sub(r"[^\[\]{}]", "", _JSON_STRING.sub("", text))),
                default=0)
    if depth > MAX_DEPTH:
        raise RecalibratorFileError(f"load: the header of {path} nests {depth} levels deep; a calframe recalibrator "
                                    f"nests at most {MAX_DEPTH}. It is not a file calframe wrote.")
    try:
        header = json.loads(text)
    except ValueError as e:
        raise RecalibratorFileError(f"load: the header of {path} is not valid JSON: {e}") from e
    for where, x in _numbers(header, ""):
        if isinstance(x, float) and not math.isfinite(x) or isinstance(x, int) and not -(2**63) <= x < 2**63:
            raise RecalibratorFileError(f"load: {path}: field {where!r} = {x!r}: every stored number must be finite "
                                        f"(integers within int64); the file was edited or is corrupt.")
    return header


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _numbers(x: Any, where: str) -> Iterator[tuple[str, Any]]:
    """(field path, value) of every number in a parsed JSON value, e.g. ('children[0].params.coef', 1.5)."""
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _numbers(v, f"{where}.{k}" if where else k)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from _numbers(v, f"{where}[{i}]")
    elif isinstance(x, (int, float)) and not isinstance(x, bool):
        yield where, x


def _verify(header: dict[str, Any], flat: dict[str, np.ndarray], key: bytes | None, path: Path) -> None:
    """The signature (when a key is given, or the file is signed) and the checksum."""
    signature = header.get("signature")
    if key is None and signature is not None:
        raise RecalibratorFileError(f"load: {path} is signed (HMAC-SHA256); pass key=<the signer's secret> to "
                                    f"verify and load it.", reason="signed")
    if key is not None:
        if signature is None:
            raise RecalibratorFileError(f"load: {path} is not signed, so key= cannot authenticate it; load it "
                                        f"without a key only if you trust its source, or have it saved with key=.",
                                        reason="unsigned")
        want = _signature(key, {k: v for k, v in header.items() if k not in ("checksum", "signature")}, flat)
        if not isinstance(signature, str) or not hmac.compare_digest(signature.encode(), want.encode()):
            raise RecalibratorFileError(f"load: the signature of {path} does not match: wrong key, or the file was "
                                        f"modified after it was signed. Do not use it.",
                                        reason="signature")
    expected = header.get("checksum")
    rest = {k: v for k, v in header.items() if k != "checksum"}
    if not isinstance(expected, str) or _checksum(rest, flat) != expected:
        raise RecalibratorFileError(
            f"load: checksum mismatch in {path}: the file was modified after it was saved (or is corrupt)."
        )


def _pa_float():
    import pyarrow as pa

    return pa.float64()


def _pa_int():
    import pyarrow as pa

    return pa.int64()


def _pa_bool():
    import pyarrow as pa

    return pa.bool_()


_PA_TYPES = {"float64": _pa_float, "int64": _pa_int, "bool": _pa_bool}


def _digest(h: Any, header: dict[str, Any], flat: dict[str, np.ndarray]) -> str:
    """Feed the canonical header and the arrays to the hash object h; its hex digest."""
    h.update(json.dumps(header, sort_keys=True, separators=(",", ":"), allow_nan=False).encode())
    for name in sorted(flat):
        a = flat[name]
        h.update(name.encode() + b"\0" + a.dtype.str.encode() + b"\0" + repr(a.shape).encode() + b"\0")
        h.update(np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<"), copy=False).tobytes())
    return h.hexdigest()


def _checksum(header: dict[str, Any], flat: dict[str, np.ndarray]) -> str:
    return "sha256:" + _digest(hashlib.sha256(), header, flat)


def _signature(key: bytes, header: dict[str, Any], flat: dict[str, np.ndarray]) -> str:
    return "hmac-sha256:" + _digest(hmac.new(key, digestmod=hashlib.sha256), header, flat)


def _read_arrays(table, header: dict[str, Any], path: Path) -> dict[str, np.ndarray]:
    """Arrays named in the header, read from the table, reshaped and dtype-checked."""
    specs: dict[str, dict] = {}

    def walk(node: Any, prefix: str) -> None:
        if not isinstance(node, dict):
            raise RecalibratorFileError(f"load: malformed header in {path} at {prefix or 'top level'}.")
        arrays = node.get("arrays", {})
        children = node.get("children", [])
        if not isinstance(arrays, dict) or not isinstance(children, list):
            raise RecalibratorFileError(f"load: malformed header in {path} at {prefix or 'top level'}.")
        for k, spec in arrays.items():
            specs[prefix + k] = spec
        for i, c in enumerate(children):
            walk(c, f"{prefix}children/{i}/")

    walk(header, "")
    names = set(table.column_names) - {"format_version"}
    if names != set(specs):
        missing = sorted(set(specs) - names)
        extra = sorted(names - set(specs))
        raise RecalibratorFileError(
            f"load: the arrays in {path} do not match its header (missing: {missing}, unexpected: {extra})."
        )
    if table.num_rows != 1:
        raise RecalibratorFileError(f"load: the array table in {path} must have one row; it has {table.num_rows}.")
    flat = {}
    for name, spec in specs.items():
        try:
            dtype = _DTYPES[spec["dtype"]]
            shape = tuple(int(s) for s in spec["shape"])
            if any(s < 0 for s in shape):
                raise ValueError("negative dimension")
        except Exception as e:
            raise RecalibratorFileError(f"load: bad dtype/shape for array {name!r} in {path}: {spec!r}") from e
        col = table.column(name).combine_chunks()
        want = _PA_TYPES[spec["dtype"]]()
        if not (hasattr(col.type, "value_type") and col.type.value_type == want):
            raise RecalibratorFileError(
                f"load: array {name!r} in {path} is stored as {col.type}, expected a list of {want}."
            )
        vals = col.values.to_numpy(zero_copy_only=False)
        if col.values.null_count or vals.size != math.prod(shape):
            raise RecalibratorFileError(
                f"load: array {name!r} in {path} holds {vals.size} values (nulls: {col.values.null_count}), "
                f"its header shape {list(shape)} needs {math.prod(shape)}."
            )
        a = np.ascontiguousarray(vals.astype(dtype, copy=False)).reshape(shape)
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            raise RecalibratorFileError(f"load: array {name!r} in {path} holds {int((~np.isfinite(a)).sum())} NaN or "
                                        f"infinite values; every stored number must be finite.")
        flat[name] = a
    return flat


def _build(node: dict[str, Any], prefix: str, flat: dict[str, np.ndarray], path: Path) -> Recalibrator:
    """The recalibrator of one header node (children first), validated by its class's ``_check``."""
    method = node.get("method")
    cls = REGISTRY.get(method) if isinstance(method, str) else None
    where = f" at {prefix}" if prefix else ""
    if cls is None:
        raise RecalibratorFileError(f"load: unknown method {method!r}{where} in {path}; known: {sorted(REGISTRY)}.")
    params = node.get("params")
    meta = node.get("meta", {})
    if not isinstance(params, dict) or not isinstance(meta, dict):
        raise RecalibratorFileError(f"load: params/meta of {method!r}{where} in {path} must be JSON objects.")
    arrays = {k: flat[prefix + k] for k in node.get("arrays", {})}
    children = [_build(c, f"{prefix}children/{i}/", flat, path) for i, c in enumerate(node.get("children", []))]
    try:
        obj = cls(params=params, arrays=arrays, meta=meta, children=children)
        obj._check()
    except Exception as e:
        raise RecalibratorFileError(f"load: {path}{where}: {e if isinstance(e, RecalibratorFileError) else repr(e)} "
                                    f"(the file was edited or is corrupt: re-fit and save it again).") from e
    return obj


# -- helpers for subclasses' _check ------------------------------------------


class Schema:
    """Declarative checks for a subclass's params and arrays (raise RecalibratorFileError)."""

    def __init__(self, obj: Recalibrator):
        self.obj = obj

    def fail(self, msg: str) -> None:
        raise RecalibratorFileError(f"invalid {self.obj.method!r} recalibrator: {msg}")

    def param(self, name: str, kind: type | tuple, *, allow_none: bool = False, check=None) -> Any:
        p = self.obj.params
        if name not in p:
            self.fail(f"parameter {name!r} is missing")
        v = p[name]
        if v is None and allow_none:
            return v
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if float in kinds and isinstance(v, int) and not isinstance(v, bool):
            v = float(v)
        if isinstance(v, bool) and bool not in kinds:
            self.fail(f"parameter {name!r} = {v!r} has the wrong type")
        if not isinstance(v, kinds):
            self.fail(f"parameter {name!r} = {v!r} has the wrong type")
        if check is not None and not check(v):
            self.fail(f"parameter {name!r} = {v!r} is out of range or not one of the allowed values")
        return v

    def array(self, name: str, dtype: str, ndim: int, *, shape: tuple | None = None) -> np.ndarray:
        a = self.obj.arrays.get(name)
        if a is None:
            self.fail(f"array {name!r} is missing")
        if _array_dtype_name(a) != dtype or a.ndim != ndim:
            self.fail(f"array {name!r} has dtype {a.dtype} and {a.ndim} dims, expected {dtype} with {ndim}")
        if shape is not None:
            for got, want in zip(a.shape, shape):
                if want is not None and got != want:
                    self.fail(f"array {name!r} has shape {a.shape}, expected {shape}")
        return a

    def probabilities(self, name: str) -> np.ndarray:
        """The float array ``name``, whose values must all lie in [0, 1]."""
        a = self.array(name, "float64", 1)
        bad = int(np.count_nonzero((a < 0) | (a > 1)))
        if bad:
            self.fail(f"array {name!r} holds {bad} value(s) outside [0, 1] (e.g. {float(a[(a < 0) | (a > 1)][0])!r})")
        return a

    def increasing(self, name: str, a: np.ndarray, strict: bool = True) -> None:
        """``a`` (the array ``name``) must be strictly increasing (``strict=False``: non-decreasing)."""
        d = np.diff(a)
        if np.any(d <= 0 if strict else d < 0):
            self.fail(f"array {name!r} must be {'strictly increasing' if strict else 'non-decreasing'}; it is not")

    def only_arrays(self, *names: str) -> None:
        extra = set(self.obj.arrays) - set(names)
        if extra:
            self.fail(f"unexpected arrays {sorted(extra)}")

    def children(self, n: int | None) -> None:
        if n is not None and len(self.obj.children) != n:
            self.fail(f"expected {n} child recalibrators, found {len(self.obj.children)}")
