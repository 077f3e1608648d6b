"""One property that guards the public API on every frame type (issue 11, "One test that guards all of it").

For every public function and every frame type, hypothesis builds a small frame (at most 60 rows)
with nulls, NaN, infinities, odd dtypes (ints of every width, Float32, Boolean, String,
Categorical, Enum, Date, Datetime, Decimal, Array, the odd Struct/List) and odd column names
(spaces, unicode, "1", output names such as "n" or "ece", calframe's internal ``__cf_*`` /
``__calframe_*`` names), and random parameters (bins, binning, closed, lens, p, estimator,
distance, by, weights, nulls, where, seeds, methods, ...). One frame in four, and one parameter
draw in four, is "wild" (invalid values and dtypes, invalid parameters); the rest are valid, so
that most calls return numbers to compare. Each call must either

* return finite numbers equal (1e-12 relative / absolute) to the same call on the frame
  converted to an eager Polars DataFrame, in the caller's flavour, without touching the
  caller's frame or emitting a raw numpy RuntimeWarning, or
* raise a :class:`calframe.CalframeError` whose message names a column or parameter of the call.

Anything else fails: a raw numpy / pyarrow / polars / numba / Python exception, a NaN or
infinite figure, a result where eager Polars raised, a different number, a call that does not
return within ``CALL_TIMEOUT`` seconds.

Frame types: eager Polars, LazyFrame, pandas (numpy), pandas (nullable), pandas (pyarrow), as
tests/conftest.py's CONSTRUCTORS (built from the generated Polars frame so every dtype survives),
and Dask (``dd.from_pandas(..., npartitions=2)`` through ``ddf.calib``, synchronous scheduler)
for the functions ``ddf.calib`` offers (without ``ci=``, which it refuses by design). pandas
frames sometimes carry one more column whose label is an int (``1`` beside a column ``"1"``):
the reference has it under its str() name, or not at all where that name is taken.

A failure shows the function, the parameters, the frame type and a reproducer (Python that
rebuilds the frame and makes the call). There is no shrinking (see PROPS); a CI profile in
conftest.py may derandomize the examples.
"""

from __future__ import annotations

import datetime
import decimal
import faulthandler
import inspect
import math
import re
import signal
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import calframe
from calframe.figures import MIN_ROWS
from calframe._errors import CalframeError

try:  # the ddf.calib accessor is optional (calframe[dask]); its absence is reported by test_dask_is_exercised
    import dask
    import dask.dataframe as dd

    import calframe.frames.dask  # noqa: F401  (registers ddf.calib)
    import pyarrow as pa
    from dask.tokenize import normalize_token
except ImportError:  # pragma: no cover
    dd = None
else:
    # Dask (2026.8) tokenizes an Arrow array by its buffers, which leave out a DictionaryArray's dictionary: two
    # frames with a Categorical column that differ only in its values got the same name, and dd.from_pandas of
    # the second returned the first one's data (a flaky "differs from eager Polars" in a random run)
    _normalize_arrow = normalize_token.dispatch(pa.Array)

    @normalize_token.register(pa.DictionaryArray)
    def _normalize_dictionary_array(arr: pa.DictionaryArray) -> tuple:
        return "pa.DictionaryArray", _normalize_arrow(arr.indices), _normalize_arrow(arr.dictionary)

from conftest import CONSTRUCTORS

# each test runs with one numba thread (tests/conftest.py explains why)
pytestmark = pytest.mark.usefixtures("one_numba_thread")

TOL = 1e-12
MAX_ROWS = 60
#: seconds one call may take before it counts as a hang (a first call may compile numba kernels)
CALL_TIMEOUT = 60
#: no shrinking: one example runs ~12 calls, and shrinking one failure took over 5 minutes on a loaded machine;
#: the failure message carries a reproducer instead (and the generator favours frames of a few rows)
PROPS = settings(
    max_examples=12,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)

nan, inf = float("nan"), float("inf")


# =========================================================================== frame types


def _pandas_numpy(df: pl.DataFrame) -> pd.DataFrame:
    return df.to_pandas()


def _pandas_nullable(df: pl.DataFrame) -> pd.DataFrame:
    return df.to_pandas().convert_dtypes(dtype_backend="numpy_nullable")  # as conftest.pandas_nullable_constructor


def _pandas_pyarrow(df: pl.DataFrame) -> pd.DataFrame:
    return df.to_pandas(use_pyarrow_extension_array=True)  # as conftest.pandas_pyarrow_constructor


#: frame type -> (code, function) building it from the generated eager Polars frame ``df``
FROM_POLARS: dict[str, tuple[str, Callable[[pl.DataFrame], Any]]] = {
    "polars[eager]": ("frame = df", lambda df: df),
    "polars[lazy]": ("frame = df.lazy()", lambda df: df.lazy()),
    "pandas": ("frame = df.to_pandas()", _pandas_numpy),
    "pandas[nullable]": ('frame = df.to_pandas().convert_dtypes(dtype_backend="numpy_nullable")', _pandas_nullable),
    "pandas[pyarrow]": ("frame = df.to_pandas(use_pyarrow_extension_array=True)", _pandas_pyarrow),
}
assert set(FROM_POLARS) == set(CONSTRUCTORS), "keep FROM_POLARS in step with tests/conftest.py CONSTRUCTORS"
PANDAS = ("pandas", "pandas[nullable]", "pandas[pyarrow]")
FLAVOURS = list(FROM_POLARS) + (["dask"] if dd is not None else [])

#: what ddf.calib offers (calframe.engines.partitions.client.supported())
DASK_FUNCS = {"ece", "mce", "rmsce", "ce", "reliability", "brier", "log_loss", "accuracy", "vece", "vmce",
              "summary", "gece", "vece_rank", "fit_apply"}
#: the functions that need a variable / feature column
VARIABLE_FUNCS = {"vece", "vmce", "vece_rank", "lce", "mlce"}
FUNCS = ["ece", "mce", "rmsce", "ce", "reliability", "summary", "brier", "log_loss", "accuracy", "vece", "vmce",
         "vece_rank", "gece", "lce", "mlce", "fit_apply"]


def to_polars(frame: Any, label: str | None = None) -> pl.DataFrame:
    """The frame as an eager Polars DataFrame, read as calframe reads pandas (docs/spec.md section 8): NaN stays
    NaN, except in a numpy-backed float ``label`` column, where it is pandas' missing value (a null)."""
    if isinstance(frame, pl.LazyFrame):
        return frame.collect()
    if isinstance(frame, pl.DataFrame):
        return frame
    if dd is not None and isinstance(frame, dd.DataFrame):
        frame = frame.compute()
    out = pl.from_pandas(frame, nan_to_null=False)
    if label in out.columns and isinstance(frame[label].dtype, np.dtype) and frame[label].dtype.kind == "f":
        out = out.with_columns(pl.col(label).fill_nan(None))
    return out


# =========================================================================== generated data


class Code:
    """A parameter value given as Python code (shown as such in the reproducer, evaluated at call time)."""

    def __init__(self, src: str) -> None:
        self.src = src

    def __repr__(self) -> str:
        return self.src

    def value(self) -> Any:
        return eval(self.src, {"pl": pl, "np": np, "array": np.array})  # noqa: S307  (our own generated code)


@dataclass
class Case:
    """A generated frame and the roles of its columns."""

    df: pl.DataFrame
    prob: str | list[str]
    label: str
    k: int  # number of classes (2 for a single positive-class column)
    groups: list[str] = field(default_factory=list)
    weights: str | None = None
    variables: list[str] = field(default_factory=list)
    numeric: list[str] = field(default_factory=list)  # the numeric variables
    #: pandas frames get one more column with this int label (None: not)
    int_label: int | None = None
    dask_base: str = "pandas"

    def code(self) -> str:
        """Python that rebuilds ``df``."""
        data = ",\n    ".join(f"{c!r}: {self.df[c].to_list()!r}" for c in self.df.columns)
        schema = ", ".join(f"{c!r}: pl.{dt!r}" for c, dt in self.df.schema.items())
        schema = re.sub(r"([{(, ])(Int\d+|UInt\d+|Float\d+|Boolean|String|Date|Categorical)\b", r"\1pl.\2", schema)
        return f"df = pl.DataFrame({{\n    {data},\n}}, schema={{{schema}}})"

    def __repr__(self) -> str:  # what hypothesis prints for the draw
        roles = dict(prob=self.prob, label=self.label, groups=self.groups, weights=self.weights,
                     variables=self.variables, int_label=self.int_label, dask_base=self.dask_base)
        return f"Case({roles})\n{self.code()}\n{self.df}"


#: column names that have broken things before: spaces, unicode, digits, output and internal names
ODD_NAMES = ["p q", "ü", "中文", "1", "0", "n", "ece", "bin", "gap", "variable", "weight", " ", "a.b", "x-y",
             "__cf_bin", "__cf_g", "__cf_row", "__cf_len", "__cf_ok", "__cf_conf", "__cf_k0", "__cf_fig",
             "__cf_cat", "__cf_n", "__cf_sc", "__calframe_i", "__calframe_no_label__", "lce", "p_platt",
             "prob ", "Label", "group", "mlce", "vece", "brier", "kind", "acc", "lower"]
PLAIN_NAMES = ["g", "h", "region", "age", "w", "v", "x"]
names_st = st.one_of(st.sampled_from(ODD_NAMES), st.sampled_from(PLAIN_NAMES),
                     st.text(alphabet="ab _.1ü中-", min_size=1, max_size=4))

FLOAT_SPECIALS = [0.0, 1.0, 0.5, -0.0, 5e-324, 1e-300, 1 - 2**-53, 2**-53, 1 / 3]
BAD_FLOATS = [nan, inf, -inf, 1.5, -0.25]
WEIGHT_SPECIALS = [0.0, 1.0, 5e-324, 1e-300, 1e300, 1.7e308, 2.0]
BAD_WEIGHTS = [nan, -1.0, inf]
GROUP_KINDS = ["int", "int", "float", "bool", "str", "str", "cat", "enum", "date", "datetime", "decimal"]
BAD_GROUP_KINDS = ["struct", "list"]
VARIABLE_KINDS = ["float", "float", "float", "int", "float32", "bool", "str", "cat"]
TEXT = ["a", "b", "", "ü", "a b", "1", "None"]


def pick(draw: st.DrawFn, wild: bool, valid: list, invalid: list = ()) -> Any:  # type: ignore[assignment]
    """One of ``valid``, or (in a wild draw) of ``valid`` and ``invalid``."""
    return draw(st.sampled_from(list(valid) + (list(invalid) if wild else [])))


def _replace(draw: st.DrawFn, values: list, n: int, pool: list, max_size: int) -> list:
    """``values`` with a few positions set to values from ``pool``."""
    if n == 0 or not pool:
        return values
    for i, v in draw(st.lists(st.tuples(st.integers(0, n - 1), st.sampled_from(pool)), max_size=max_size)):
        values[i] = v
    return values


def _group_column(draw: st.DrawFn, rng: np.random.Generator, n: int, wild: bool) -> pl.Series:
    kind = pick(draw, wild, GROUP_KINDS, BAD_GROUP_KINDS)
    idx = rng.integers(0, 3, n)
    if kind == "int":
        dtype = draw(st.sampled_from([pl.Int64, pl.Int8, pl.UInt16, pl.Int32]))
        vals = [int(v) for v in idx] if dtype == pl.UInt16 else [int(v) for v in idx - 1]
    elif kind == "float":
        dtype = draw(st.sampled_from([pl.Float64, pl.Float32]))
        pool = draw(st.sampled_from([[0.0, 1.5, 2.0], [0.0, -0.0, 1.5], [nan, 0.5, inf], [-inf, 0.0, 1e300]]))
        vals = [pool[i] for i in idx]
    elif kind == "bool":
        dtype, vals = pl.Boolean, [bool(i % 2) for i in idx]
    elif kind in ("str", "cat", "enum"):
        pool = draw(st.lists(st.sampled_from(TEXT), min_size=3, max_size=3, unique=True))
        dtype = {"str": pl.String, "cat": pl.Categorical, "enum": pl.Enum(sorted(pool))}[kind]
        vals = [pool[i] for i in idx]
    elif kind == "date":
        dtype = pl.Date
        vals = [[datetime.date(2020, 1, 1), datetime.date(1970, 1, 1), datetime.date(1969, 12, 31)][i] for i in idx]
    elif kind == "datetime":
        dtype, vals = pl.Datetime("us"), [datetime.datetime(2024, 3, 1, i) for i in idx]
    elif kind == "decimal":
        dtype = pl.Decimal(5, 2)
        vals = [[decimal.Decimal("1.50"), decimal.Decimal("-0.00"), decimal.Decimal("2.25")][i] for i in idx]
    elif kind == "struct":
        dtype, vals = pl.Struct({"a": pl.Int64}), [{"a": int(i)} for i in idx]
    else:
        dtype, vals = pl.List(pl.Int64), [[int(i)] * (1 + int(i) % 2) for i in idx]
    if draw(st.booleans()):  # a null key is a group of its own
        vals = _replace(draw, vals, n, [None], 3)
    return pl.Series(values=vals, dtype=dtype)


def _variable_column(draw: st.DrawFn, rng: np.random.Generator, n: int, wild: bool,
                     nulls: bool, numeric: bool = False) -> tuple[pl.Series, bool]:
    kind = pick(draw, wild, VARIABLE_KINDS[:5] if numeric else VARIABLE_KINDS, [] if numeric else ["date"])
    if kind in ("float", "float32", "int"):
        vals = np.round(rng.normal(40, 15, n), draw(st.sampled_from([0, 1, 6]))).tolist()
        vals = _replace(draw, vals, n, FLOAT_SPECIALS + [-7.0, 1e6], 3)
        if kind == "int":
            vals = [int(v) for v in vals]
        vals = _replace(draw, vals, n, ([None] if nulls else []) + ([nan, inf] if wild and kind != "int" else []), 2)
        dtype = {"float": pl.Float64, "float32": pl.Float32, "int": draw(st.sampled_from([pl.Int64, pl.Int32]))}[kind]
        return pl.Series(values=vals, dtype=dtype), True
    idx = rng.integers(0, 3, n)
    if kind == "bool":
        s = pl.Series(values=[bool(i % 2) for i in idx], dtype=pl.Boolean)
    elif kind == "date":
        s = pl.Series(values=[datetime.date(2020, 1, 1 + int(i)) for i in idx], dtype=pl.Date)
    else:
        s = pl.Series(values=[TEXT[i] for i in idx], dtype=pl.String if kind == "str" else pl.Categorical)
    if nulls:
        s = pl.Series(values=_replace(draw, s.to_list(), n, [None], 2), dtype=s.dtype)
    return s, False


@st.composite
def cases(draw: st.DrawFn, variables: bool = False, numeric: bool = False) -> Case:
    """A frame of 0-60 rows. One in four is wild: invalid values (NaN, infinities, out-of-range probabilities and
    labels, negative weights) and dtypes calframe must refuse (String labels, Decimal probabilities, Date
    variables, Struct / List group keys); the rest hold only valid data, nulls included (valid with
    nulls='drop'). ``variables``: at least one variable column (``numeric``: the first one numeric)."""
    wild = draw(st.integers(0, 3)) == 0
    has_nulls = draw(st.integers(0, 3)) == 0
    n = draw(st.one_of(st.integers(1, 8), st.integers(1, MAX_ROWS), st.integers(9, MAX_ROWS)))
    if wild and draw(st.integers(0, 9)) == 0:
        n = 0
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    shape = draw(st.sampled_from(["binary"] * 5 + ["columns", "columns", "array"]))
    k = 2 if shape == "binary" else draw(st.sampled_from([2, 3, 4]))
    n_groups = draw(st.sampled_from([0, 1, 1, 2]))
    n_vars = draw(st.sampled_from([1, 1, 2] if variables else [0, 1, 1, 2]))
    has_w = draw(st.booleans())
    n_prob = k if shape == "columns" else 1
    size = n_prob + 1 + n_groups + n_vars + has_w
    names = draw(st.lists(names_st, min_size=size, max_size=size, unique=True))
    if draw(st.booleans()):  # the conventional names, so the defaults apply
        for i, conventional in ((0, "prob") if shape != "columns" else (None, None), (n_prob, "label")):
            if i is None:
                continue
            if conventional in names:  # swap, keeping the names unique
                names[names.index(conventional)] = names[i]
            names[i] = conventional
    it = iter(names)
    cols: dict[str, pl.Series] = {}
    null_pool = [None] if has_nulls else []

    # probabilities
    if shape == "binary":
        p = rng.random(n)
        decimals = draw(st.sampled_from([None, 1, 2, 6]))
        p = (np.round(p, decimals) if decimals is not None else p).tolist()
        p = _replace(draw, p, n, FLOAT_SPECIALS, 4)
        clean = np.array(p, dtype=np.float64)
        p = _replace(draw, p, n, (BAD_FLOATS if wild else []) + null_pool, 2)
        dtype = pick(draw, wild, [pl.Float64] * 4 + [pl.Float32, pl.Int8], [pl.Decimal(20, 18)])
        if dtype == pl.Int8:
            p = [v if v is None else (int(v > 0.5) if v == v and abs(v) != inf else None) for v in p]
        elif dtype == pl.Decimal(20, 18):
            p = [None if v is None or v != v or abs(v) == inf else decimal.Decimal(repr(round(v, 18))) for v in p]
        prob: str | list[str] = next(it)
        cols[prob] = pl.Series(values=p, dtype=dtype, strict=False)
    else:
        P = rng.dirichlet(np.ones(k) * draw(st.sampled_from([0.3, 1.0, 5.0])), n)
        if draw(st.booleans()):  # ties: rounded rows, one-hot and uniform rows
            P = np.round(P, 2)
            P[:, -1] = np.clip(1.0 - P[:, :-1].sum(axis=1), 0.0, 1.0)
        for i, row in draw(st.lists(st.tuples(st.integers(0, max(n - 1, 0)), st.sampled_from(["onehot", "uniform"])),
                                    max_size=3 if n else 0)):
            P[i] = np.eye(k)[0] if row == "onehot" else np.full(k, 1.0 / k)
        clean = P.copy()
        Pl: list = P.tolist()
        for i, bad in draw(st.lists(st.tuples(st.integers(0, max(n - 1, 0)), st.sampled_from(
                (["nan", "sum"] if wild else []) + (["null"] if has_nulls else []) or ["none"])), max_size=2 if n else 0)):
            Pl[i] = {"nan": [nan] * k, "sum": [v * 1.1 for v in P[i]], "null": None, "none": Pl[i]}[bad]
        dtype = draw(st.sampled_from([pl.Float64, pl.Float64, pl.Float32]))
        if shape == "array":
            prob = next(it)
            cols[prob] = pl.Series(values=Pl, dtype=pl.Array(pl.Float64, k)).cast(pl.Array(dtype, k))
        else:
            prob = [next(it) for _ in range(k)]
            for j, c in enumerate(prob):
                cols[c] = pl.Series(values=[None if r is None else r[j] for r in Pl], dtype=dtype)

    # labels
    if shape == "binary":
        y = (rng.random(n) < clean).astype(int).tolist() if n else []
    else:
        y = [int(rng.choice(k, p=r / r.sum())) for r in clean]
    ldtype = pick(draw, wild, [pl.Int64] * 3 + [pl.Int8, pl.UInt8, pl.Int32, pl.Float64, pl.Float32]
                  + ([pl.Boolean] if shape == "binary" else []), [pl.String])
    pool: list = list(null_pool)
    if wild and ldtype != pl.Boolean:
        pool += [k] + ([] if ldtype.is_unsigned_integer() else [-1]) + ([0.5, nan] if ldtype.is_float() else [])
    y = _replace(draw, y, n, pool, 2)
    if ldtype == pl.Boolean:
        y = [None if v is None else bool(v) for v in y]
    elif ldtype == pl.String:
        y = [None if v is None else str(v) for v in y]
    label = next(it)
    cols[label] = pl.Series(values=y, dtype=ldtype, strict=False)

    groups = [next(it) for _ in range(n_groups)]
    for g in groups:
        cols[g] = _group_column(draw, rng, n, wild)
    variables, numeric = [], []
    for i in range(n_vars):
        v = next(it)
        cols[v], is_num = _variable_column(draw, rng, n, wild, has_nulls, numeric and i == 0)
        variables.append(v)
        if is_num:
            numeric.append(v)
    weights = None
    if has_w:
        weights = next(it)
        w = (rng.random(n) * 2).tolist()
        w = _replace(draw, w, n, WEIGHT_SPECIALS, 3)
        w = _replace(draw, w, n, (BAD_WEIGHTS if wild else []) + null_pool, 2)
        cols[weights] = pl.Series(values=w, dtype=draw(st.sampled_from([pl.Float64, pl.Float64, pl.Float32])))
    order = draw(st.permutations(list(cols)))
    df = pl.DataFrame([cols[c].alias(c) for c in order])
    int_label = None
    if draw(st.integers(0, 4)) == 0:  # pandas: one more column labelled by an int, e.g. 1 beside "1"
        digits = [c for c in df.columns if c.isdigit()]
        int_label = int(digits[0]) if digits else 7
    dask_base = draw(st.sampled_from(PANDAS))
    return Case(df, prob, label, k, groups, weights, variables, numeric, int_label, dask_base)


# =========================================================================== parameters


def _columns_kw(draw: st.DrawFn, case: Case, wild: bool, *, by: bool = True, weights: bool = True) -> dict:
    """prob / label (or their defaults), by, weights and nulls."""
    kw: dict[str, Any] = {}
    if not (case.prob == "prob" and draw(st.booleans())):
        kw["prob"] = case.prob
    if not (case.label == "label" and draw(st.booleans())):
        kw["label"] = case.label
    if by:
        choice = pick(draw, wild, ["none"] * 3 + ["one", "one", "all"], ["missing", "prob"])
        if choice == "one" and case.groups:
            kw["by"] = draw(st.sampled_from(case.groups))
        elif choice == "all" and case.groups:
            kw["by"] = list(case.groups)
        elif choice == "missing":
            kw["by"] = "no such column"
        elif choice == "prob" and isinstance(case.prob, str):
            kw["by"] = case.prob
    if weights and case.weights is not None and draw(st.booleans()):
        kw["weights"] = case.weights
    nulls = pick(draw, wild, ["drop", "drop", "raise", "omit"], ["bogus"])
    if nulls != "omit":
        kw["nulls"] = nulls
    return kw


def _lens(draw: st.DrawFn, case: Case, wild: bool, *, marginal: bool = True) -> str:
    valid = ["top1", "top1"] + [f"class:{c}" for c in range(case.k)] + (["marginal"] if marginal else [])
    return pick(draw, wild, valid, ["bogus", f"class:{case.k}", "class:-1"] + ([] if marginal else ["marginal"]))


def _binned_kw(draw: st.DrawFn, case: Case, wild: bool, *, marginal: bool = True) -> dict:
    """_columns_kw plus bins, binning, closed and lens."""
    kw = _columns_kw(draw, case, wild)
    if draw(st.booleans()):
        kw["binning"] = pick(draw, wild, ["uniform"] if "weights" in kw else ["uniform", "quantile", "equal_mass"],
                             ["bogus", "quantile"])
    if draw(st.booleans()):
        edges = [[0.0, 0.3, 1.0], [0.0, 0.25, 0.5, 0.75, 1.0]] if kw.get("binning", "uniform") == "uniform" else []
        odd = edges + ([0, -1, 1.5, True, "3", 10_000, [0.0, 0.5, 0.5, 1.0], [0.5, 0.2], [0.2, 0.6]] if wild else [])
        kw["bins"] = draw(st.one_of(st.integers(1, 20), st.sampled_from(odd)) if odd else st.integers(1, 20))
    if draw(st.booleans()):
        kw["closed"] = pick(draw, wild, ["left", "right"], ["middle"])
    if draw(st.booleans()):
        kw["lens"] = _lens(draw, case, wild, marginal=marginal)
    return kw


#: (seed=None draws fresh entropy: two runs differ by design, so it is not compared)
SEEDS, BAD_SEEDS = [0, 1, 12345], [-1, "a", 1.5]
P_VALUES, BAD_P = [1, 2, "inf", inf], [3, 0.5, 1.5, 0, -1, -inf, nan, "2", None, True]


def _ci_kw(draw: st.DrawFn, wild: bool) -> dict:
    """A bootstrap interval now and then, with very few resamples (Dask refuses ci=; it is not asked)."""
    if draw(st.integers(0, 5)):
        return {}
    return {"ci": pick(draw, wild, [0.9, 0.95], [1.5]), "n_boot": pick(draw, wild, [3, 5], [0]),
            "seed": pick(draw, wild, SEEDS, BAD_SEEDS)}


@st.composite
def call_params(draw: st.DrawFn, func: str, case: Case) -> dict:
    """Keyword arguments of one call of ``func`` on ``case`` (``fit_apply``: {"fit": {...}, "apply": {...}}).
    One draw in four is wild: any parameter may then be invalid."""
    wild = draw(st.integers(0, 3)) == 0
    if func in ("ece", "mce", "rmsce"):
        kw = _binned_kw(draw, case, wild)
        if func == "rmsce" and draw(st.booleans()):
            kw["estimator"] = pick(draw, wild, ["plugin", "debiased"], ["bogus"])
        return kw | _ci_kw(draw, wild)
    if func == "ce":
        kw = _binned_kw(draw, case, wild)
        kw["p"] = pick(draw, wild, P_VALUES, BAD_P)
        if draw(st.booleans()):
            kw["estimator"] = pick(draw, wild, ["plugin"] + (["debiased"] * 2 if kw["p"] in (1, 2) else []),
                                   ["bogus", "debiased"])
        if draw(st.integers(0, 3)) == 0:
            tvd_only = kw.get("estimator") == "debiased"
            kw["distance"] = pick(draw, wild, ["tvd"] + ([] if tvd_only else ["l2", ("interval", 0.2, 0.8)]),
                                  ["bogus", "l2"])
        if draw(st.integers(0, 3)) == 0:
            kw["squared"] = True
        if kw.get("estimator") == "debiased":
            kw["n_resamples"] = pick(draw, wild, [10], [0])
            kw["seed"] = pick(draw, wild, SEEDS, BAD_SEEDS)
        return kw | _ci_kw(draw, wild)
    if func == "reliability":
        return _binned_kw(draw, case, wild, marginal=False)
    if func == "summary":
        kw = _columns_kw(draw, case, wild)
        if draw(st.booleans()):
            kw["lens"] = _lens(draw, case, wild, marginal=False)
        if draw(st.booleans()):
            kw["bins"] = pick(draw, wild, [1, 2, 5, 10, 15], [0, 1.5])
        return kw | _ci_kw(draw, wild)
    if func in ("brier", "log_loss", "accuracy"):
        return _columns_kw(draw, case, wild) | _ci_kw(draw, wild)
    if func in ("vece", "vmce"):
        kw = _columns_kw(draw, case, wild, weights=False)
        several = [list(case.variables)] if len(case.variables) > 1 else []
        kw["variable"] = pick(draw, wild, (case.variables + several) or ["no such column"],
                              [case.label, "no such column"])
        if draw(st.booleans()):
            kw["binning"] = pick(draw, wild, ["quantile", "equal_mass"], ["uniform", "bogus"])
        if draw(st.booleans()):
            kw["bins"] = pick(draw, wild, [1, 2, 3, 5, 10, 12], [0, 2.5, [-1e9, 1e9], [0.0, 1.0]])
        if draw(st.integers(0, 3)) == 0 and case.numeric:  # explicit edges (these take weights)
            kw["variable"], kw["binning"] = case.numeric[0], "uniform"
            kw["bins"] = [-1e9, 0.0, 40.0, 1e9]
            if case.weights is not None and draw(st.booleans()):
                kw["weights"] = case.weights
        if draw(st.booleans()):
            kw["lens"] = _lens(draw, case, wild)
        if func == "vece" and draw(st.booleans()):
            kw["p"] = pick(draw, wild, P_VALUES, BAD_P)
        if draw(st.integers(0, 3)) == 0 and kw.get("p") not in ("inf", inf) and func == "vece":
            kw["estimator"] = pick(draw, wild, ["plugin", "debiased"], ["bogus"])
        return kw | _ci_kw(draw, wild)
    if func == "vece_rank":
        kw = _columns_kw(draw, case, wild, weights=False)
        choice = pick(draw, wild, ["default", "list"], ["missing"])
        if choice == "list" and case.variables:
            kw["variables"] = list(case.variables)
        elif choice == "missing":
            kw["variables"] = ["no such column"]
        if draw(st.booleans()):
            kw["bins"] = pick(draw, wild, [1, 2, 5, 10], [0])
        if draw(st.booleans()):
            kw["binning"] = pick(draw, wild, ["quantile", "equal_mass"], ["uniform"])
        if draw(st.booleans()):
            kw["lens"] = _lens(draw, case, wild, marginal=False)
        if draw(st.integers(0, 3)) == 0 and case.variables:
            kw["exclude"] = [case.variables[0]]
        return kw
    if func == "gece":
        kw = _columns_kw(draw, case, wild)
        k = case.k
        lens = pick(draw, wild, ["top1", "top1", "class:1", "topk", "full", "marginal", "grouping"], [f"class:{k}"])
        kw["lens"] = lens
        if lens == "topk":
            kw["k"] = pick(draw, wild, list(range(1, k + 1)), [0, k + 1])
        if lens == "grouping":
            kw["groups"] = pick(draw, wild, [[[0], list(range(1, k))]] + ([[[0, 1], list(range(2, k))]] if k > 2 else []),
                                [[[0], [0, 1]]])
        kw["binning"] = pick(draw, wild, ["uniform", "uniform", "adaptive"], ["bogus"])
        if kw["binning"] == "adaptive":
            kw["gamma"] = pick(draw, wild, [0.05, 0.1, 0.5], [0.0])
        elif draw(st.booleans()):
            kw["bins"] = pick(draw, wild, [1, 2, 5, 10], [0, 2.5])
        if draw(st.booleans()):
            kw["p"] = pick(draw, wild, P_VALUES, BAD_P)
        if draw(st.integers(0, 3)) == 0:
            kw["distance"] = pick(draw, wild, ["tvd", "l2", ("interval", 0.1, 0.9)], [("interval", 0.9, 0.1)])
        if draw(st.integers(0, 3)) == 0:
            kw["labels_in"] = pick(draw, wild, [[0], [1], [0, 1]], [[], [k]])
        if draw(st.integers(0, 3)) == 0:
            kw["output_between"] = pick(draw, wild, [(0.2, 0.9), (0.0, 1.0)], [(0.9, 0.2)])
        n = case.df.height
        where = pick(draw, wild, ["none"] * 4 + ["expr", "mask"], ["string", "empty_string", "int_array", "raw_expr"])
        if where == "expr":
            kw["where"] = Code(f"pl.col({case.label!r}).cast(pl.Float64) > 0")
        elif where == "raw_expr":  # fails to evaluate on a String label
            kw["where"] = Code(f"pl.col({case.label!r}) > 0")
        elif where == "mask":
            kw["where"] = Code(f"array({[bool(b) for b in draw(st.lists(st.booleans(), min_size=n, max_size=n))]!r})")
        elif where == "string":
            kw["where"] = f"`{case.label}` > 0"
        elif where == "empty_string":
            kw["where"] = ""
        elif where == "int_array" and n:
            kw["where"] = Code(f"array({[0, n - 1]!r})")
        return kw | _ci_kw(draw, wild)
    if func in ("lce", "mlce"):
        kw = _columns_kw(draw, case, wild, by=func == "mlce", weights=False)
        feats = case.numeric
        kw["features"] = pick(draw, wild, ([list(feats), feats[0]] if feats else []) or ["no such column"],
                              [case.label, "no such column"] + [v for v in case.variables if v not in feats])
        kw["gamma"] = pick(draw, wild, [0.2, 0.2, 1.0, 1e-3, 1e9], [0.0, nan])
        if draw(st.booleans()):
            kw["bins"] = pick(draw, wild, [1, 5, 15], [0])
        if draw(st.booleans()):
            kw["lens"] = _lens(draw, case, wild, marginal=False)
        if draw(st.booleans()):
            kw["prepare"] = pick(draw, wild, ["none", "standardize", "pca"], ["bogus"])
        if func == "lce" and draw(st.integers(0, 3)) == 0:
            kw["name"] = draw(st.sampled_from(["lce", "local", case.label]))
        return kw
    if func == "fit_apply":
        kw = _columns_kw(draw, case, wild, weights=False)
        method = draw(st.sampled_from(["platt", "platt", "histogram", "isotonic", "temperature", "beta"]))
        kw["method"] = method
        if method == "histogram" and draw(st.booleans()):
            kw["n_bins"] = pick(draw, wild, [1, 3, 10], [0])
        if method == "platt" and draw(st.booleans()):
            kw["C"] = pick(draw, wild, [1.0, None, 1e10], [-1.0])
        apply_kw = {}
        if draw(st.booleans()):
            apply_kw["name"] = draw(st.sampled_from(["p_new", "p q", case.label]))
        return {"fit": kw, "apply": apply_kw}
    raise AssertionError(func)


# =========================================================================== running a call


class Hang(Exception):
    """A call did not return within CALL_TIMEOUT seconds."""


@contextmanager
def hang_guard(seconds: float) -> Iterator[None]:
    """Raise Hang in Python code after ``seconds``; dump every thread's stack and exit if even that cannot run
    (a deadlock inside Polars or an OpenMP kernel never returns to the interpreter)."""

    def alarm(signum, frame):  # noqa: ARG001
        raise Hang(f"no result after {seconds} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    faulthandler.dump_traceback_later(3 * seconds, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@dataclass
class Outcome:
    value: Any = None
    exc: BaseException | None = None
    raw_warnings: list[str] = field(default_factory=list)


def _materialize(value: Any) -> Any:
    """A lazy result computed (LazyFrame collected, Dask frame computed)."""
    if isinstance(value, pl.LazyFrame):
        return value.collect()
    if dd is not None and (isinstance(value, dd.DataFrame) or type(value).__name__ == "DaskResult"):
        return value.compute()  # a Dask frame (apply), or a figure on Dask (lazy)
    return value


def _evaluated(kw: dict) -> dict:
    return {k: (v.value() if isinstance(v, Code) else v) for k, v in kw.items()}


def invoke(func: str, frame: Any, params: dict, flavour: str, eager: Callable[[], pl.DataFrame]) -> Outcome:
    """One call, every exception and warning caught (a Hang propagates)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with hang_guard(CALL_TIMEOUT):
                if func == "fit_apply":
                    fit_kw = dict(params["fit"])
                    method = fit_kw.pop("method")
                    if flavour == "dask":  # a lazy fit, computed; apply is a Dask frame
                        rec = frame.calib.fit(method, **fit_kw).compute()
                        value = frame.calib.apply(rec, **params["apply"])
                    else:
                        rec = calframe.fit(frame, method, **fit_kw)
                        value = calframe.apply(frame, rec, **params["apply"])
                elif flavour == "dask":
                    value = getattr(frame.calib, func)(**_evaluated(params))
                else:
                    value = getattr(calframe, func)(frame, **_evaluated(params))
                value = _materialize(value)
        except Hang:
            raise
        except Exception as exc:  # noqa: BLE001  (classified by the caller)
            return Outcome(exc=exc, raw_warnings=_raw(caught))
    return Outcome(value=value, raw_warnings=_raw(caught))


def _raw(caught: list[warnings.WarningMessage]) -> list[str]:
    """numpy's floating-point RuntimeWarnings (overflow, invalid value): a silent NaN in the making."""
    return [f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})" for w in caught
            if issubclass(w.category, RuntimeWarning)]


# =========================================================================== judging an outcome


def _involved(func: str, params: dict, case: Case) -> tuple[set[str], set[str]]:
    """(parameter names, column names and string values) an error of this call may name."""
    flat = params["fit"] | params["apply"] if func == "fit_apply" else params
    functions = [calframe.fit, calframe.apply] if func == "fit_apply" else [getattr(calframe, func)]
    names = set(flat) | {p for f in functions for p in inspect.signature(f).parameters} - {"frame", "name"}
    values = set(case.df.columns)

    def strings(v: Any) -> Iterator[str]:
        if isinstance(v, str):
            yield v
        elif isinstance(v, (list, tuple)):
            for x in v:
                yield from strings(x)

    for v in flat.values():
        values |= set(strings(v))
    return names, values


def error_problem(exc: BaseException, func: str, params: dict, case: Case) -> str | None:
    """Why ``exc`` breaks the property, or None: a CalframeError whose message names a parameter (as a word) or
    a column / given value (quoted, as calframe's messages quote them)."""
    if not isinstance(exc, CalframeError):
        return f"raw {type(exc).__module__}.{type(exc).__name__}: {exc}"
    msg = str(exc)
    names, values = _involved(func, params, case)
    if any(re.search(rf"(?<!\w){re.escape(p)}(?!\w)", msg) for p in names):
        return None
    if any(repr(v) in msg or f'"{v}"' in msg for v in values):
        return None
    if isinstance(exc, calframe.EmptyInputError) and re.search(r"\b(frame|rows?|selection)\b", msg):
        return None  # an empty frame or selection: there is no column to name
    return f"{type(exc).__name__} names no column or parameter: {msg}"


def _same(a: Any, b: Any, nan_is_null: bool) -> bool:
    """Values equal, floats within TOL (relative or absolute), NaN equal to NaN."""
    if nan_is_null:
        a = None if isinstance(a, float) and a != a else a
        b = None if isinstance(b, float) and b != b else b
    if isinstance(a, (list, tuple, np.ndarray)) and isinstance(b, (list, tuple, np.ndarray)):
        return len(a) == len(b) and all(_same(x, y, nan_is_null) for x, y in zip(a, b))
    numeric = (int, float, np.integer, np.floating)
    if isinstance(a, numeric) and isinstance(b, numeric) and not isinstance(a, bool) and not isinstance(b, bool):
        a, b = float(a), float(b)
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b or math.isclose(a, b, rel_tol=TOL, abs_tol=TOL)
    return a == b


def _as_polars(value: Any) -> pl.DataFrame:
    return value if isinstance(value, pl.DataFrame) else pl.from_pandas(value, nan_to_null=False)


def result_problems(got: Any, want: Any, flavour: str, input_columns: set[str], keys: set[str],
                    func: str, few: np.ndarray | None = None) -> list[str]:
    """Differences between a flavour's result and the eager Polars result, and non-finite figures. ``few``: the
    result's groups that may have no interval (NaN bounds), beside those of fewer than MIN_ROWS rows
    (:func:`_light_groups`)."""
    problems = []
    pandas_like = flavour in PANDAS or flavour == "dask"
    if isinstance(want, float) and flavour == "polars[lazy]" and isinstance(got, pl.DataFrame):
        if got.height != 1 or got.columns[:1] != ["n"]:  # lazy in, lazy out: one row, n and the figure
            return [f"returned a {got.shape} frame {got.columns} where eager Polars returned a float"]
        got = got[func].item() if func in got.columns else got.item(0, got.width - 1)  # mlce: n, mlce, mean_lce
    if isinstance(want, float):
        if not isinstance(got, float):
            return [f"returned {type(got).__name__} where eager Polars returned a float"]
        if not math.isfinite(got):
            problems.append(f"non-finite result {got!r}")
        if not _same(got, want, False):
            problems.append(f"result {got!r} != eager Polars {want!r} (diff {got - want:.3g})")
        return problems
    if not isinstance(want, pl.DataFrame):
        return [f"eager Polars returned {type(want).__name__}; expected a float or a frame"]
    expected_type = pd.DataFrame if pandas_like else pl.DataFrame
    if not isinstance(got, expected_type):
        return [f"returned {type(got).__name__}; a {flavour} frame should give a {expected_type.__name__}"]
    if pandas_like and len(set(map(str, got.columns))) != len(got.columns):  # e.g. "1" and 1
        return [f"result has duplicate column names {list(got.columns)}"]
    try:
        g = _as_polars(got)
    except Exception as exc:  # noqa: BLE001
        return [f"result cannot be read back into Polars ({type(exc).__name__}: {exc})"]
    if g.columns != want.columns:
        return [f"result columns {g.columns} != eager Polars {want.columns}"]
    if g.height != want.height:
        return [f"result has {g.height} rows, eager Polars {want.height}"]
    # figures: numeric columns calframe computed (not a group key, not a column of the input)
    figures = [c for c in want.columns if c not in keys and c not in input_columns and want.schema[c].is_float()]
    empty = want["n"].to_numpy() == 0 if func == "gece" and "n" in want.columns else None
    for c in want.columns:
        a, b = g[c].to_list(), want[c].to_list()
        if not _same(a, b, pandas_like):
            bad = next(i for i, (x, y) in enumerate(zip(a, b)) if not _same(x, y, pandas_like))
            problems.append(f"column {c!r} differs from eager Polars at row {bad}: {a[bad]!r} != {b[bad]!r}")
        if c in figures:
            v = g[c].cast(pl.Float64).to_numpy()
            bad_rows = ~np.isfinite(v)
            if empty is not None:
                bad_rows &= ~empty  # gece: a group the selection emptied is NaN with n = 0 (documented)
            if "leak" in want.columns:  # vece_rank: a variable that leaks the label is listed, not measured (null)
                bad_rows &= want["leak"].is_null().to_numpy()
            if c.endswith(("_lo", "_hi")) and "n" in want.columns:  # a group of one row has no interval (NaN,
                bad_rows &= want["n"].to_numpy() >= MIN_ROWS  # documented: calframe.figures.MIN_ROWS)
                if few is not None:
                    bad_rows &= ~few
            if bad_rows.any():
                problems.append(f"column {c!r} has non-finite values {v[bad_rows][:3].tolist()} in "
                                f"{int(bad_rows.sum())} rows")
    return problems


def reproducer(case: Case, func: str, params: dict, flavour: str) -> str:
    lines = ["import datetime, decimal", "from decimal import Decimal", "import numpy as np",
             "from numpy import array", "import polars as pl", "import calframe",
             "nan, inf = float('nan'), float('inf')", case.code()]
    if flavour == "dask":
        lines += ["import dask, dask.dataframe as dd, calframe.frames.dask", 'dask.config.set(scheduler="sync")',
                  FROM_POLARS[case.dask_base][0]]
        if case.int_label is not None:
            lines.append(f"frame[{case.int_label!r}] = frame[frame.columns[0]]")
        lines.append("frame = dd.from_pandas(frame, npartitions=2)")
    else:
        lines.append(FROM_POLARS[flavour][0])
        if flavour in PANDAS and case.int_label is not None:
            lines.append(f"frame[{case.int_label!r}] = frame[frame.columns[0]]")
    if func == "fit_apply":
        fit_kw = dict(params["fit"])
        method = fit_kw.pop("method")
        args = "".join(f", {k}={v!r}" for k, v in fit_kw.items())
        apply_args = "".join(f", {k}={v!r}" for k, v in params["apply"].items())
        if flavour == "dask":
            lines.append(f"rec = calframe.fit(frame.compute(), {method!r}{args})")
            lines.append(f"frame.calib.apply(rec{apply_args}).compute()")
        else:
            lines.append(f"rec = calframe.fit(frame, {method!r}{args})")
            lines.append(f"calframe.apply(frame, rec{apply_args})")
    else:
        args = "".join(f", {k}={v!r}" for k, v in params.items())
        lines.append(f"frame.calib.{func}({args[2:]})" if flavour == "dask" else f"calframe.{func}(frame{args})")
    return "\n".join(lines)


def build(case: Case, flavour: str, search: bool = False) -> tuple[Any, Callable[[], pl.DataFrame], Callable[[Any], Any]]:
    """The frame of ``flavour``, a function giving the eager Polars frame its reference runs on, and the change
    that makes a pandas result comparable with the reference's (the int-labelled column as the reference has it).

    ``search``: the call searches the frame's columns (vece_rank without variables=), which never takes a
    non-string pandas label (spec section 8, "Errors"): the reference is without the int-labelled column."""
    base = case.dask_base if flavour == "dask" else flavour
    frame = FROM_POLARS[base][1](case.df)
    plain = frame

    def same_columns(result: Any) -> Any:
        return result

    if base in PANDAS and case.int_label is not None:
        frame = frame.copy()
        label = case.int_label
        frame[label] = frame[frame.columns[0]]  # a column labelled by an int, e.g. 1 beside "1"
        # the reference: the same column under its str() name, or without it where that name is taken
        if str(label) in case.df.columns or search:
            def same_columns(result: Any) -> Any:
                return result.drop(columns=[label]) if label in result.columns else result
        else:
            def same_columns(result: Any) -> Any:
                return result.rename(columns={label: str(label)})
        plain = same_columns(frame)
    if flavour == "dask":
        frame = dd.from_pandas(frame, npartitions=2)
        plain = dd.from_pandas(plain, npartitions=2)

    def eager() -> pl.DataFrame:
        return to_polars(plain, case.label)

    return frame, eager, same_columns


def _unchanged(frame: pd.DataFrame, before: pd.DataFrame) -> bool:
    try:  # (DataFrame.equals says False for Arrow-backed NaN)
        pd.testing.assert_frame_equal(frame, before, check_exact=True)
    except AssertionError:
        return False
    return True


def _light_groups(want: Any, ref_frame: Any, params: dict, keys: set[str], func: str) -> np.ndarray | None:
    """Weighted calls: the result's groups whose weights may sum below MIN_ROWS, which get no interval (weights
    are frequency weights: a group counts the sum of its weights, docs/spec.md section 8). The sums here are over
    all the group's rows, an upper bound of what the call keeps; where the call may keep fewer (nulls="drop",
    gece's row selections) or the keys cannot be matched, every group may."""
    w = params.get("weights")
    if not isinstance(w, str) or not isinstance(want, pl.DataFrame) or not isinstance(ref_frame, pl.DataFrame):
        return None
    everyone = np.ones(want.height, dtype=bool)
    if params.get("nulls") == "drop" or func == "gece" or w not in ref_frame.columns:
        return everyone
    try:
        weights = pl.col(w).cast(pl.Float64).fill_null(0.0)
        if not keys:
            return np.full(want.height, ref_frame.select(weights.sum()).item() < MIN_ROWS)
        sums = ref_frame.group_by(sorted(keys)).agg(weights.sum().alias("__judge_w"))
        joined = want.select(sorted(keys)).with_row_index("__judge_i").join(
            sums, on=sorted(keys), how="left", nulls_equal=True).sort("__judge_i")
    except Exception:  # noqa: BLE001  (keys Polars cannot group or join as calframe does)
        return everyone
    if joined.height != want.height or joined["__judge_w"].null_count():
        return everyone
    return joined["__judge_w"].to_numpy() < MIN_ROWS


def check(func: str, case: Case, params: dict, flavours: list[str] | None = None) -> list[str]:
    """Every problem of ``func(frame, **params)`` over the frame types, each with its reproducer."""
    problems = []
    flavours = [f for f in (flavours or FLAVOURS) if f != "dask" or func in DASK_FUNCS]
    # the caller's columns a result may pass through, the int-labelled one under its str() name as the reference
    # has it (its NaN is the caller's, not a figure's)
    input_columns = set(case.df.columns) | ({str(case.int_label)} if case.int_label is not None else set())
    if func == "fit_apply":
        keys = set()
    else:
        by = params.get("by")
        keys = {by} if isinstance(by, str) else set(by or [])
    for flavour in flavours:
        frame, eager, same_columns = build(case, flavour, search=func == "vece_rank" and "variables" not in params)
        before = frame.copy(deep=True) if isinstance(frame, pd.DataFrame) else None
        try:
            ref_frame = eager()
        except Exception:  # noqa: BLE001  (Polars cannot read this frame: no reference; the errors are still judged)
            ref_frame = None
        found: list[str] = []
        try:
            got = invoke(func, frame, params, flavour, eager)
            want = invoke(func, ref_frame, params, "polars[eager]", eager) if ref_frame is not None else None
        except Hang as exc:
            problems.append(f"[{flavour}] {exc}\n--- reproducer ---\n{reproducer(case, func, params, flavour)}\n")
            continue
        if got.exc is not None:
            p = error_problem(got.exc, func, params, case)
            if p:
                found.append(p)
        elif want is None:
            pass  # a result, and nothing to compare it with
        elif want.exc is not None:
            found.append(f"returned a result where eager Polars raised {type(want.exc).__name__}: {want.exc}")
            if not isinstance(want.exc, CalframeError):
                found.append(f"(eager Polars) raw {type(want.exc).__name__}: {want.exc}")
        else:
            value = same_columns(got.value) if isinstance(got.value, pd.DataFrame) else got.value
            few = _light_groups(want.value, ref_frame, params, keys, func)
            found += result_problems(value, want.value, flavour, input_columns, keys, func, few)
        found += [f"raw warning {w}" for w in got.raw_warnings]
        if before is not None and not _unchanged(frame, before):
            found.append("the caller's pandas frame was modified")
        problems += [f"[{flavour}] {p}\n--- reproducer ---\n{reproducer(case, func, params, flavour)}\n"
                     for p in found]
    return problems


# =========================================================================== the test


@pytest.fixture(autouse=True, scope="module")
def _sync_dask():
    """Dask on the synchronous scheduler: partitions run in this thread (fast on 60 rows; the alarm reaches it)."""
    if dd is None:
        yield
        return
    with dask.config.set(scheduler="sync"):
        yield


@pytest.mark.parametrize("func", FUNCS)
@PROPS
@given(data=st.data())
def test_every_call_returns_the_eager_polars_numbers_or_a_calframe_error(func: str, data: st.DataObject) -> None:
    case = data.draw(cases(variables=func in VARIABLE_FUNCS, numeric=func in ("lce", "mlce")), label="case")
    params = data.draw(call_params(func, case), label=f"{func} parameters")
    problems = check(func, case, params)
    assert not problems, f"{func}({params}) on\n{case!r}\n\n" + "\n".join(problems)


def test_dask_is_exercised() -> None:
    if dd is None:
        pytest.skip("dask is not installed: the property above ran without the Dask frame type")


def test_dask_frames_differing_only_in_categorical_values_keep_their_data() -> None:
    if dd is None:
        pytest.skip("dask is not installed")
    frames = [pl.DataFrame({"v": vals}, schema={"v": pl.Categorical}).to_pandas(use_pyarrow_extension_array=True)
              for vals in (["a", "b", "a"], ["", "b", ""])]
    ddfs = [dd.from_pandas(f, npartitions=1) for f in frames]  # both alive: Dask reuses a live frame of the same name
    assert [d.compute()["v"].tolist() for d in ddfs] == [["a", "b", "a"], ["", "b", ""]]


def test_the_property_catches_a_wrong_number_and_a_raw_exception() -> None:
    """The judge itself: a wrong figure, a NaN figure and a raw exception are each reported."""
    case = Case(pl.DataFrame({"prob": [0.2, 0.9], "label": [0, 1]}), "prob", "label", 2)
    assert result_problems(0.1, 0.1 + 1e-9, "polars[eager]", set(), set(), "ece")
    assert result_problems(nan, nan, "polars[eager]", set(), set(), "ece")
    assert not result_problems(0.1, 0.1 + 1e-14, "polars[eager]", set(), set(), "ece")
    assert error_problem(KeyError("x"), "ece", {}, case)
    assert error_problem(calframe.ParameterError("something is wrong"), "ece", {}, case)
    assert not error_problem(calframe.ParameterError("The 'bins' parameter of ece ..."), "ece", {"bins": 0}, case)


@pytest.mark.parametrize("func, params", [
    ("fit_apply", {"fit": {"method": "platt"}, "apply": {}}),
    ("lce", {"features": "v", "gamma": 0.5}),
])
def test_an_int_labelled_pass_through_column_is_not_judged_as_a_figure(func: str, params: dict) -> None:
    """lce and apply return the caller's columns: the int-labelled copy of a column with a null (NaN in pandas) is
    the caller's data, as its str()-named twin in the reference is, not a non-finite figure."""
    df = pl.DataFrame({"g": [1.0, None, 2.0, 3.0], "label": [0, 1, 1, 0], "prob": [0.2, 0.5, 0.7, 0.4],
                       "v": [1.0, 2.0, 3.0, 5.0]})
    case = Case(df, "prob", "label", 2, variables=["v"], numeric=["v"], int_label=7)
    assert not check(func, case, params, flavours=["pandas"])


def test_the_judge_counts_weights_as_frequencies() -> None:
    """A weighted group whose weights sum below MIN_ROWS may have no interval (NaN bounds); one whose weights sum
    to MIN_ROWS or more, with as many rows, may not."""
    ref = pl.DataFrame({"g": [1, 1, 2, 2], "w": [0.5, 0.5, 3.0, 1.0]})
    want = pl.DataFrame({"g": [1, 2], "n": [2, 2], "ece": [0.1, 0.2], "ece_lo": [nan, nan], "ece_hi": [nan, nan]})
    few = _light_groups(want, ref, {"weights": "w", "by": "g"}, {"g"}, "ece")
    assert few is not None and few.tolist() == [True, False]
    found = result_problems(want, want, "polars[eager]", set(), {"g"}, "ece", few)
    assert len(found) == 2 and all("in 1 rows" in p for p in found), found  # group 2's lo and hi
    assert _light_groups(want, ref, {"by": "g"}, {"g"}, "ece") is None  # unweighted: rows only
