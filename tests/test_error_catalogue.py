"""Every engine says the same thing for the same problem, and each message is written once.

- One bad frame per problem, on every frame type (Polars, LazyFrame, pandas, Dask, and the narwhals engine's
  DuckDB relation and pyarrow Table where it runs the function): the same
  exception class and the same text, which says what the issue's catalogue promises (checked
  against phrases written here, not calframe's own output).
- The wording of each message lives in ``calframe/_errors.py`` only: no other module of the
  package retypes a phrase of the catalogue.
"""

from __future__ import annotations

import ast
import inspect
import pathlib
import re
import warnings
from typing import Any

import polars as pl
import pytest

import calframe
from calframe import _errors
from conftest import as_flavour

NAN = float("nan")
FLAVOURS = ["polars", "lazy", "pandas", "dask", "duckdb", "pyarrow"]


def _binary(prob: list[Any], label: list[Any] | None = None, **extra: list[Any]) -> pl.DataFrame:
    label = label if label is not None else [i % 2 for i in range(len(prob))]
    return pl.DataFrame({"prob": prob, "label": label, **extra}, strict=False)


def _frame(df: pl.DataFrame, flavour: str) -> Any:
    """``df`` as ``flavour``; pandas and Dask through Arrow-backed columns when ``df`` holds nulls (a numpy-backed
    pandas float column holds NaN, not nulls)."""
    if flavour == "pyarrow":
        return df.to_arrow()
    if flavour == "duckdb":
        duckdb = pytest.importorskip("duckdb")
        return duckdb.from_arrow(df.to_arrow())
    if not any(df[c].null_count() for c in df.columns) or flavour in ("polars", "lazy"):
        return as_flavour(df, flavour)
    pdf = as_flavour(df, "pandas[pyarrow]")
    if flavour == "pandas":
        return pdf
    dd = pytest.importorskip("dask.dataframe")
    import calframe.frames.dask  # noqa: F401  (registers ddf.calib)

    return dd.from_pandas(pdf, npartitions=2)


def _call(frame: Any, func: str, **kwargs: Any) -> Any:
    if type(frame).__module__.startswith("dask"):
        return getattr(frame.calib, func)(**kwargs)
    return getattr(calframe, func)(frame, **kwargs)


# problem -> (frame, function, keyword arguments, exception class, phrases the message must hold)
PROBLEMS: dict[str, tuple[pl.DataFrame, str, dict, type, list[str]]] = {
    "no rows": (_binary([], []).cast({"prob": pl.Float64, "label": pl.Int64}), "ece", {},
                calframe.EmptyInputError, ["ece: ", "no rows"]),
    "nulls": (_binary([0.1, None, 0.3, None]), "ece", {},
              calframe.InvalidValueError, ["'prob': 2 rows", "nulls='drop'"]),
    "all rows null": (_binary([None, None], [1, 0]).cast({"prob": pl.Float64}), "ece", {"nulls": "drop"},
                      calframe.EmptyInputError, ["every row has a null value"]),
    "NaN probabilities": (_binary([0.1, NAN, 0.3, 0.4]), "ece", {},
                          calframe.InvalidValueError, ["'prob'", "NaN or infinite", "1 row\\b"]),
    "probabilities outside [0, 1]": (_binary([0.1, 1.5, 0.3, -0.4]), "mce", {},
                                     calframe.InvalidValueError, ["'prob'", "outside \\[0, 1\\]", "2 rows",
                                                                  "min -0.4, max 1.5", "logits"]),
    "probabilities outside [0, 1] (summary)": (_binary([0.1, 1.5, 0.3, -0.4]), "summary", {},
                                               calframe.InvalidValueError, ["^summary: ", "'prob'", "2 rows",
                                                                            "min -0.4, max 1.5"]),
    "probabilities outside [0, 1] (gece)": (_binary([0.1, 1.5, 0.3, -0.4]), "gece", {},
                                            calframe.InvalidValueError, ["^gece: ", "'prob'", "2 rows",
                                                                         "min -0.4, max 1.5"]),
    "labels outside the classes (vece_rank)": (_binary([0.1, 0.2, 0.3, 0.4], [0, 2, 1, 3], v=[1.0, 2.0, 3.0, 4.0]),
                                               "vece_rank", {"variables": ["v"]},
                                               calframe.InvalidValueError, ["^vece_rank: ", "2 rows"]),
    "nulls (fit)": (_binary([0.1, None, 0.3, None]), "fit", {"method": "platt"},
                    calframe.InvalidValueError, ["^fit: ", "'prob': 2 rows", "nulls='drop'"]),
    "class sums": (pl.DataFrame({"p0": [0.5, 0.5, 0.2], "p1": [0.6, 0.5, 0.8], "label": [0, 1, 1]}), "ece",
                   {"prob": ["p0", "p1"]},
                   calframe.InvalidValueError, ["\\['p0', 'p1'\\]", "sum to 1", "1 row\\b", "1\\.1"]),
    "string probabilities": (_binary(["a", "b"], [0, 1]), "ece", {},
                             calframe.ColumnTypeError, ["'prob'", "dtype String", "numeric"]),
    "Boolean multiclass labels": (pl.DataFrame({"p0": [0.5, 0.5], "p1": [0.2, 0.1], "p2": [0.3, 0.4],
                                                "label": [True, False]}), "ece", {"prob": ["p0", "p1", "p2"]},
                                  calframe.ColumnTypeError, ["'label'", "Boolean", "3 classes"]),
    "string labels": (_binary([0.1, 0.2], ["a", "b"]), "ece", {},
                      calframe.ColumnTypeError, ["'label'", "dtype String", "integers"]),
    "fractional labels": (_binary([0.1, 0.2, 0.3], [0.0, 0.5, 1.0]), "ece", {},
                          calframe.InvalidValueError, ["'label'", "1 row\\b", "whole numbers"]),
    "labels outside the classes": (_binary([0.1, 0.2, 0.3], [0, 2, -1]), "brier", {},
                                   calframe.InvalidValueError, ["'label'", "2 rows", "\\[-1, 2\\]"]),
    "labels outside the classes (ece)": (_binary([0.1, 0.2, 0.3], [0, 2, -1]), "ece", {},
                                         calframe.InvalidValueError, ["'label'", "2 rows", "\\[-1, 2\\]"]),
    "multiclass labels outside the classes": (pl.DataFrame({"p0": [0.5, 0.5, 0.2], "p1": [0.5, 0.5, 0.8],
                                                            "label": [0, 3, 1]}), "ece", {"prob": ["p0", "p1"]},
                                              calframe.InvalidValueError, ["'label'", "1 row\\b", "\\[3\\]"]),
    "string weights": (_binary([0.1, 0.2], [0, 1], w=["a", "b"]), "ece", {"weights": "w"},
                       calframe.ColumnTypeError, ["'w'", "weights", "dtype String"]),
    "negative weights": (_binary([0.1, 0.2, 0.3], [0, 1, 0], w=[1.0, -1.0, NAN]), "ece", {"weights": "w"},
                         calframe.InvalidValueError, ["'w'", "2 rows", "negative"]),
    "zero weights": (_binary([0.1, 0.2, 0.3], [0, 1, 0], w=[0.0, 0.0, 0.0]), "ece", {"weights": "w"},
                     calframe.InvalidValueError, ["'w'", "sums to 0"]),
    "zero weights in a group": (_binary([0.1, 0.2, 0.3, 0.4], w=[0.0, 0.0, 1.0, 1.0], g=["a", "a", "b", "b"]),
                                "ece", {"weights": "w", "by": "g"},
                                calframe.InvalidValueError, ["'w'", "g='a' \\(2 rows\\)", "0/0"]),
    "NaN variable": (_binary([0.1, 0.2, 0.3, 0.4], v=[1.0, NAN, 2.0, 3.0]), "vece", {"variable": "v"},
                     calframe.InvalidValueError, ["'v'", "NaN or infinite", "1 row\\b"]),
    "constant variable": (_binary([0.1, 0.2, 0.3, 0.4], v=[1.0] * 4), "vece", {"variable": "v"},
                          calframe.InvalidValueError, ["'v'", "single distinct value"]),
    "edges on a categorical variable": (_binary([0.1, 0.2, 0.3, 0.4], v=["a", "b", "a", "b"]), "vece",
                                        {"variable": "v", "bins": [0.0, 1.0, 2.0]},
                                        calframe.ParameterError, ["'v'", "categorical", "edges"]),
    "variable outside the edges": (_binary([0.1, 0.2, 0.3, 0.4], v=[1.0, 5.0, 1.5, 6.0]), "vece",
                                   {"variable": "v", "bins": [0.0, 1.0, 2.0]},
                                   calframe.InvalidValueError, ["'v'", "\\b2 value", "\\[0\\.0, 2\\.0\\]"]),
    # weights with quantile / equal-mass bins are taken (the rows repeated w_i times); the sweep refuses them
    "weights with sweep bins (ece)": (_binary([0.1, 0.2, 0.3, 0.4], w=[1.0] * 4), "ece",
                                      {"weights": "w", "binning": "sweep"},
                                      calframe.ParameterError, ["^ece: ", "binning='sweep'", "no weighted sweep",
                                                                "drop weights="]),
    "weights with sweep bins (reliability)": (_binary([0.1, 0.2, 0.3, 0.4], w=[1.0] * 4), "reliability",
                                              {"weights": "w", "binning": "sweep"},
                                              calframe.ParameterError, ["^reliability: ", "binning='sweep'",
                                                                        "no weighted sweep", "drop weights="]),
    "column name not a string": (_binary([0.1, 0.2]), "ece", {"prob": 3},
                                 calframe.ColumnNotFoundError, ["prob=3", "must be strings"]),
}


def _raised(frame: Any, func: str, kwargs: dict) -> BaseException:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = _call(frame, func, **kwargs)
            if hasattr(out, "compute"):
                out.compute()
            if isinstance(out, pl.LazyFrame):  # lazy in, lazy out: data errors are raised at collect
                out.collect()
        except Exception as exc:  # noqa: BLE001 (the test compares what each engine raises)
            return exc
    raise AssertionError(f"{func}{kwargs} raised nothing")


#: the frame types of the narwhals engine, and the functions it runs there (DuckDB refuses the others)
NARWHALS = {"duckdb": ("ce", "ece", "mce", "rmsce", "vece", "vmce", "reliability")}


@pytest.mark.parametrize("problem", list(PROBLEMS))
def test_every_frame_type_gives_the_same_error(problem: str) -> None:
    df, func, kwargs, exc_type, phrases = PROBLEMS[problem]
    got = {fl: _raised(_frame(df, fl), func, kwargs) for fl in FLAVOURS if func in NARWHALS.get(fl, (func,))}
    for fl, exc in got.items():
        assert type(exc) is exc_type, (fl, type(exc), str(exc))
        for phrase in phrases:
            assert re.search(phrase, str(exc)), (fl, phrase, str(exc))
    texts = {fl: str(exc) for fl, exc in got.items()}
    assert len(set(texts.values())) == 1, texts


def test_dropped_nulls_warn_alike_on_every_frame_type() -> None:
    df = _binary([0.1, None, 0.3, 0.4, None, 0.6])
    seen = {}
    for fl in FLAVOURS:
        with pytest.warns(calframe.CalframeWarning) as record:
            out = _call(_frame(df, fl), "ece", nulls="drop")
            if hasattr(out, "compute"):
                out.compute()
            if isinstance(out, pl.LazyFrame):
                out.collect()
        msgs = [str(w.message) for w in record if issubclass(w.category, calframe.CalframeWarning)]
        assert len(msgs) == 1, (fl, msgs)
        seen[fl] = msgs[0]
    assert len(set(seen.values())) == 1, seen
    assert re.search(r"dropped 2 rows\b.*\b4 rows remain", seen["polars"]), seen["polars"]


_LENS_FRAME = pl.DataFrame({"prob": [0.1, 0.9, 0.3, 0.6], "label": [0, 1, 0, 1], "v": [1.0, 2.0, 3.0, 4.0]})
SCALAR_LENS_ONLY = {
    "summary": {}, "reliability": {}, "vece_rank": {"variables": ["v"]}, "vce_curve": {"variable": "v"},
    "lce": {"features": ["v"]}, "mlce": {"features": ["v"]},
}


@pytest.mark.parametrize("func", list(SCALAR_LENS_ONLY))
def test_the_marginal_lens_is_refused_alike(func: str) -> None:
    """Every figure that needs one scalar per row refuses lens='marginal' with one message (reliability alone said
    what to do instead)."""
    with pytest.raises(calframe.ParameterError) as info:
        getattr(calframe, func)(_LENS_FRAME, lens="marginal", **SCALAR_LENS_ONLY[func])
    assert info.value.param == "lens"
    assert str(info.value) == (f"The 'lens' parameter of {func} must be a scalar lens ('top1' or 'class:<c>'); "
                               "use it once per class for marginal. Got 'marginal' instead.")


# --------------------------------------------------------------------------- each message written once

PACKAGE = pathlib.Path(calframe.__file__).parent
#: a catalogue phrase shorter than this is too common to call a copy (" row", " has dtype ")
MIN_PHRASE = 20


def _string_pieces(tree: ast.AST) -> list[tuple[str, int]]:
    """The literal text of every string (f-string pieces apart) of ``tree``, docstrings left out."""
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return [(n.value, n.lineno) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings]


def _catalogue_phrases() -> set[str]:
    """The clauses, long enough to be distinctive, of the literal text of every message function of
    ``calframe._errors``."""
    tree = ast.parse(inspect.getsource(_errors))
    phrases = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            for text, _ in _string_pieces(node):
                for piece in re.split(r"\{[^}]*\}|[;:.,()] ", text):  # placeholders and clause breaks
                    if len(piece.strip()) >= MIN_PHRASE:
                        phrases.add(piece.strip())
    return phrases


def _copies(phrases: set[str]) -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "_errors.py" and path.parent == PACKAGE:
            continue
        for text, line in _string_pieces(ast.parse(path.read_text())):
            found += [f"{path.relative_to(PACKAGE)}:{line}: {p!r}" for p in phrases if p in text]
    return found


def test_the_catalogue_has_the_messages() -> None:
    phrases = _catalogue_phrases()
    for p in ("column names must be strings.", "it must be numeric (float)", "has a single distinct value",
              "not logits or scores.", "or pass nulls='drop' to drop those rows."):
        assert any(p in q for q in phrases), p


def test_no_catalogue_message_is_retyped_elsewhere() -> None:
    assert _copies(_catalogue_phrases()) == []


def test_a_retyped_message_is_found(tmp_path: pathlib.Path) -> None:
    """The scan sees a copy (the check above cannot pass by reading nothing)."""
    src = 'def f(func, c):\n    raise ValueError(f"{func}: variable {c!r} has a single distinct value; calibration along it")\n'
    found = [p for p in _catalogue_phrases() if any(p in t for t, _ in _string_pieces(ast.parse(src)))]
    assert found


def test_a_partitions_error_travels_as_data_not_pickle():
    """A Dask partition hands its input error to the client as JSON text: the same class, message and detail come
    back, and no module of the package but the kernel cache (numba's own index format, checksummed) unpickles."""
    from calframe.recalibrate._inputs import one_class_error

    for exc in (one_class_error("fit", "top1", 1, 5), _errors.InvalidValueError("ece: 'prob' has 3 rows outside"),
                _errors.ColumnNotFoundError("no column 'x'")):
        back = _errors.error_from_text(_errors.error_text(exc))
        assert type(back) is type(exc) and str(back) == str(exc)
        assert getattr(back, "detail", None) == getattr(exc, "detail", None)
    package = pathlib.Path(calframe.__file__).parent
    loads = sorted(str(p.relative_to(package)) for p in package.rglob("*.py")
                   if re.search(r"pickle\.loads?\(", p.read_text()))
    assert loads == ["_kernel_cache.py"], loads
