"""The exceptions calframe raises for bad input.

Every input problem is raised before any kernel runs, as a subclass of
:class:`CalframeError` that is also a ``ValueError`` or ``TypeError`` so that
generic handlers keep working. Messages name the column, the problem, how many
rows are affected, and what to do.
"""

from __future__ import annotations

import warnings
from typing import Any


class CalframeError(Exception):
    """Base class of every error calframe raises for bad input."""


class ColumnNotFoundError(CalframeError, ValueError):
    """A named column is missing, or a default column name is missing or ambiguous."""


class ColumnTypeError(CalframeError, TypeError):
    """A column has a dtype calframe cannot use (e.g. strings where numbers are needed)."""


class InvalidValueError(CalframeError, ValueError):
    """Rows hold values outside what the column may hold (NaN, out of range, nulls, ...)."""


class EmptyInputError(CalframeError, ValueError):
    """The frame, or a group, has no rows to evaluate."""


class ParameterError(CalframeError, ValueError):
    """A parameter value is invalid; ``param`` names the parameter when one is to blame (else None)."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


class UnknownParameterError(ParameterError, TypeError):
    """A keyword argument the function does not take: also a ``TypeError``, as Python's own error for it is;
    ``param`` names the keyword."""


class RecalibratorFileError(CalframeError, ValueError):
    """A saved recalibrator cannot be loaded: not a calframe file, unknown version or method, invalid values, bad
    shapes, a checksum or signature mismatch. ``reason`` tells the signature problems apart (else None):
    ``"signed"`` (a signed file loaded without a key), ``"unsigned"`` (an unsigned file loaded with a key) or
    ``"signature"`` (the signature does not match the key)."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason


class UnsafeForkError(CalframeError, RuntimeError):
    """calframe cannot run in this process: it was forked from one whose Polars thread pool or GNU OpenMP
    threads had started (they deadlock or terminate in a fork child). Use a ``spawn`` or ``forkserver``
    multiprocessing context."""


class CalframeWarning(UserWarning):
    """Something was done to the data that the caller should know about (e.g. rows dropped)."""


def rows(n: int) -> str:
    """'1 row' / '12 rows'."""
    return f"{n} row" if n == 1 else f"{n} rows"


def bad_param(func: str, name: str, expected: str, got: Any) -> ParameterError:
    """The one message template for invalid parameters."""
    return ParameterError(f"The {name!r} parameter of {func} must be {expected}. Got {got!r} instead.", name)


def warn(message: str) -> None:
    """Warn, attributed to the first caller outside the calframe package."""
    import os
    import sys

    pkg = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(pkg + os.sep):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, CalframeWarning, stacklevel=level)


# --------------------------------------------------------------------------- the message catalogue
#
# One function per message that more than one place raises (the eager path, LazyFrame streaming, Dask, SQL,
# the recalibrators): each wording exists here only, so every engine says the same thing for the same problem.
# A function returns the exception (the caller writes ``raise``); ``column`` is a column name, or the list of
# class-probability columns (shown as a list).


def _classes(binary: bool, k: int) -> str:
    return "0/1" if binary else f"0..{k - 1}"


# ----------------------------------------------------------------- parameters (through bad_param's template)


#: scikit-learn's names of calframe's keyword parameters (calibration_curve, CalibrationDisplay, the metrics):
#: (calframe's name, what to add)
KEYWORD_ALIASES = {
    "n_bins": ("bins", ""),
    "strategy": ("binning", ""),
    "sample_weight": ("weights", "; calframe's weights is the name of a weight column"),
}


def unknown_keyword(func: str, name: str, value: Any, accepted: Any) -> UnknownParameterError:
    """A keyword ``name`` (given ``value``) that ``func`` does not take (``accepted``: the ones it takes): with
    calframe's name for scikit-learn's (:data:`KEYWORD_ALIASES`), else the closest name it takes, if any."""
    import difflib

    alias, extra = KEYWORD_ALIASES.get(name, (None, ""))
    if alias in accepted:
        shown = repr(value) if not extra and len(repr(value)) <= 40 else "..."
        hint = f". Did you mean {alias}={shown}? {name!r} is scikit-learn's name for it{extra}."
    elif alias is not None:
        hint = f". It takes no {alias} ({name!r} is scikit-learn's name for {alias})."
    else:
        close = difflib.get_close_matches(name, sorted(accepted), n=1, cutoff=0.75)
        hint = f". Did you mean {close[0]}=?" if close else ""  # else Python's own words
    return UnknownParameterError(f"{func}() got an unexpected keyword argument {name!r}{hint}", name)


def bad_p(func: str, p: Any) -> ParameterError:
    """The norm ``p`` of a calibration error."""
    return bad_param(func, "p", "1, 2 or float('inf') (also 'inf')", p)


def bad_estimator(func: str, estimator: Any) -> ParameterError:
    """The ``estimator`` of a calibration error."""
    return bad_param(func, "estimator", "'plugin' or 'debiased'", estimator)


def bad_variables(func: str, variable: Any) -> ParameterError:
    """The ``variable`` of vece / vmce: one column name or a non-empty list of them."""
    return bad_param(func, "variable", "a column name or a non-empty list of column names", variable)


def not_scalar_lens(func: str, lens: Any) -> ParameterError:
    """The marginal lens where the figure needs one scalar output per row."""
    return bad_param(func, "lens", "a scalar lens ('top1' or 'class:<c>'); use it once per class for marginal", lens)


def bad_distance(func: str, problem: object) -> ParameterError:
    """A ``distance`` refused (``problem``: why, e.g. the error of the distance's constructor)."""
    return ParameterError(f"The 'distance' parameter of {func}: {problem}", "distance")


# ----------------------------------------------------------------- frames and rows


def names_not_strings(func: str, param: str, value: Any, hint: str = "") -> ColumnNotFoundError:
    """A column parameter holds something other than a string (``hint``: the pandas non-string label advice)."""
    return ColumnNotFoundError(f"{func}: {param}={value!r}: column names must be strings.{hint}")


def no_rows(func: str) -> EmptyInputError:
    """The frame has no rows at all."""
    return EmptyInputError(f"{func}: the frame has no rows; there is nothing to evaluate.")


def null_values(func: str, counts: dict[str, int]) -> InvalidValueError:
    """Null values (``counts``: column -> rows holding a null) under ``nulls='raise'``."""
    detail = ", ".join(f"{c!r}: {rows(k)}" for c, k in counts.items() if k)
    return InvalidValueError(f"{func}: null values in {detail}. Clean them, or pass nulls='drop' to drop those rows.")


def warn_nulls_dropped(func: str, dropped: int, remaining: int) -> None:
    """Warn that ``nulls='drop'`` dropped ``dropped`` rows (nothing when 0)."""
    if dropped:
        warn(f"{func}: dropped {rows(dropped)} with null values (nulls='drop'); {rows(remaining)} remain.")


def nothing_selected(func: str, selection: str) -> EmptyInputError:
    """A row selection (``selection``: its parameters, e.g. ``"labels_in=[3]"``) that keeps no rows."""
    return EmptyInputError(f"{func}: the selection ({selection}) keeps no rows; there is nothing to evaluate.")


def all_rows_null(func: str) -> EmptyInputError:
    """``nulls='drop'`` dropped every row."""
    return EmptyInputError(f"{func}: every row has a null value; nothing is left to evaluate.")


# ----------------------------------------------------------------- probabilities


def not_numeric(func: str, column: str, what: str, dtype: Any) -> ColumnTypeError:
    """A probability / class probability / weights column (``what``) whose dtype is not a number."""
    return ColumnTypeError(
        f"{func}: column {column!r} ({what}) has dtype {dtype}; it must be numeric (float). "
        f"Cast it, e.g. pl.col({column!r}).cast(pl.Float64)."
    )


def class_probabilities_not_numbers(func: str, column: str, inner: Any) -> ColumnTypeError:
    """An Array probability column whose items (``inner``) are not numbers."""
    return ColumnTypeError(f"{func}: column {column!r} holds {inner}; class probabilities must be floats.")


def list_lengths_differ(func: str, column: str, n_bad: int, k: int) -> InvalidValueError:
    """A List probability column whose rows are not all as long as the longest (``k``): ``n_bad`` rows."""
    return InvalidValueError(f"{func}: column {column!r} is a List column whose rows have different lengths "
                             f"({rows(n_bad)} differ from the longest, {k}); every row needs one probability per class.")


def too_few_classes(func: str, column: str, k: int) -> InvalidValueError:
    """An Array probability column of fewer than 2 classes."""
    return InvalidValueError(f"{func}: column {column!r} has {k} class; multiclass input needs K >= 2.")


def _digits(v: float, lo: float, hi: float) -> str:
    """``v`` to 6 significant digits; when it lies outside [lo, hi] and those digits do not show it, with as many
    as it takes (its shortest repr).

    >>> _digits(0.123456789, 0.0, 1.0), _digits(1.5, 0.0, 1.0), _digits(1 + 2**-52, 0.0, 1.0)
    ('0.123457', '1.5', '1.0000000000000002')
    """
    short = f"{v:.6g}"
    return repr(float(v)) if not lo <= v <= hi and lo <= float(short) <= hi else short


def _drop_nan_hint(column: str | list[str]) -> str:
    """How to remove rows with a NaN probability in each flavor: NaN is a bad value on every flavor (pandas' and
    Polars' results agree), and ``nulls='drop'`` drops nulls only (docs/api.md, "Missing values").

    >>> _drop_nan_hint("prob")
    "Remove those rows first: frame.dropna(subset=['prob']) in pandas, frame.filter(pl.col('prob').is_finite()) in Polars (nulls='drop' drops nulls, not NaN). "
    """
    if isinstance(column, str):
        return (f"Remove those rows first: frame.dropna(subset=[{column!r}]) in pandas, "
                f"frame.filter(pl.col({column!r}).is_finite()) in Polars (nulls='drop' drops nulls, not NaN). ")
    return "Remove the rows with a NaN class probability first (nulls='drop' drops nulls, not NaN). "


def not_probabilities(func: str, column: str | list[str], nonfinite: int, outside: int, lo: float = 0.0,
                      hi: float = 1.0) -> InvalidValueError:
    """Rows with NaN / infinite probabilities (``nonfinite``) or finite ones outside [0, 1] (``outside``; ``lo``,
    ``hi``: the smallest and largest finite probability)."""
    problems = []
    if nonfinite:
        problems.append(f"NaN or infinite probabilities in {rows(nonfinite)}")
    if outside:
        problems.append(f"probabilities outside [0, 1] in {rows(outside)} (min {_digits(lo, 0.0, 1.0)}, "
                        f"max {_digits(hi, 0.0, 1.0)})")
    return InvalidValueError(
        f"{func}: column {column!r} has " + " and ".join(problems) + ". "
        + (_drop_nan_hint(column) if nonfinite else "")
        + ("Pass probabilities, not logits or scores." if outside else "")
    )


def sums_not_one(func: str, column: str | list[str], n_bad: int, worst: float, tolerance: float) -> InvalidValueError:
    """Class probabilities whose row sums are off 1 by more than ``tolerance`` in ``n_bad`` rows."""
    return InvalidValueError(
        f"{func}: class probabilities in {column!r} do not sum to 1 (tolerance {tolerance}) "
        f"in {rows(n_bad)}; the worst sums to {_digits(worst, 1.0 - tolerance, 1.0 + tolerance)}. "
        "Normalise them (e.g. softmax)."
    )


# ----------------------------------------------------------------- labels


def boolean_multiclass_labels(func: str, column: str, k: int) -> ColumnTypeError:
    """A Boolean label column beside probabilities of ``k`` > 2 classes."""
    return ColumnTypeError(
        f"{func}: label column {column!r} is Boolean but the probabilities have {k} classes; "
        "multiclass labels must be integers in [0, K)."
    )


def label_dtype(func: str, column: str, dtype: Any, binary: bool, k: int) -> ColumnTypeError:
    """A label column whose dtype is neither integer, float nor (binary) Boolean."""
    return ColumnTypeError(
        f"{func}: label column {column!r} has dtype {dtype}; labels must be integers "
        f"({'0/1 or Boolean' if binary else f'class indices {_classes(binary, k)}'}). Encode them first, "
        f"e.g. pl.col({column!r}).cast(pl.Categorical).to_physical() or (pl.col({column!r}) == 'yes')."
    )


def labels_not_whole(func: str, column: str, n_bad: int, binary: bool, k: int) -> InvalidValueError:
    """Float labels that are not whole numbers (NaN included) in ``n_bad`` rows."""
    return InvalidValueError(
        f"{func}: label column {column!r} has {rows(n_bad)} that are not whole numbers "
        f"(labels are class indices: {_classes(binary, k)})."
    )


def labels_outside(func: str, column: str, n_bad: int, binary: bool, k: int, found: list[Any]) -> InvalidValueError:
    """Labels outside the classes in ``n_bad`` rows (``found``: the first few such values, sorted)."""
    return InvalidValueError(
        f"{func}: label column {column!r} has {rows(n_bad)} outside the classes "
        f"{'{0, 1}' if binary else f'0..{k - 1}'} (found values {list(found)})."
        + ("" if binary else " Is the number of probability columns right?")
    )


# ----------------------------------------------------------------- weights


def bad_weights(func: str, column: str, n_bad: int) -> InvalidValueError:
    """Weights that are negative, NaN or infinite in ``n_bad`` rows."""
    return InvalidValueError(f"{func}: weights column {column!r} has {rows(n_bad)} that are negative, NaN or infinite.")


#: the words of :func:`zero_weights`' per-group message (what a caller that re-raises it per window looks for)
ZERO_WEIGHT_GROUPS = "is 0 in every row of"


def zero_weights(func: str, column: str, groups: list[str] | None = None, n_groups: int = 0) -> InvalidValueError:
    """Weights that are all 0: in the whole frame (``groups`` None), or in ``n_groups`` groups (``groups``: the first
    few described, e.g. ``"g='a' (2 rows)"``)."""
    if groups is None:
        return InvalidValueError(f"{func}: weights column {column!r} sums to 0; nothing is left to evaluate.")
    which = f"group {groups[0]}" if n_groups == 1 else f"{n_groups} groups: " + "; ".join(groups) + (
        f"; and {n_groups - len(groups)} more" if n_groups > len(groups) else "")
    return InvalidValueError(
        f"{func}: weights column {column!r} {ZERO_WEIGHT_GROUPS} {which}, so the group has no weight to average "
        "(its figures would be 0/0). Give some of its rows a positive weight, or leave the group out of the frame "
        "(filter its rows) before the call."
    )


def unseen_groups(func: str, by: list[str], n_rows: int, n_groups: int, examples: list[tuple[Any, ...]],
                  part: str | None = None) -> InvalidValueError:
    """Rows of groups (key columns ``by``) a per-group recalibrator was not fitted on: ``n_rows`` rows in
    ``n_groups`` groups, the first few ``examples``. ``part``: what the count covers when an engine recalibrates
    the frame piece by piece and each piece raises alone ("batch", "partition"); None: the whole frame."""
    counted = "" if part is None else (
        f" in one {part} (the frame is recalibrated {part} by {part}: the count is that {part}'s, and the whole "
        "frame may hold more)")
    groups = "1 group" if n_groups == 1 else f"{n_groups} groups"
    return InvalidValueError(
        f"{func}: {rows(n_rows)}{counted} belong to groups the recalibrator was not fitted on ({groups} of key "
        f"column(s) {by}, e.g. {examples}). Pass unknown='keep' to leave their probabilities unchanged, or fit the "
        "recalibrator on data that has these groups."
    )


def weights_refuse_sweep(func: str) -> ParameterError:
    """``weights=`` with ``binning="sweep"``."""
    return ParameterError(
        f"{func}: weights are not supported with binning='sweep' (the sweep splits each group's rows by rank "
        "and stops at the first bin count whose accuracies fall; no weighted sweep is defined). Use "
        "binning='equal_mass' or 'quantile' (their edges are those of the rows repeated w_i times), 'uniform', "
        "or drop weights=.", "binning"
    )


def weights_on_engine(func: str, engine: str) -> str:
    """What an engine that computes its own quantile / equal-mass edges says of weights with them."""
    return (f"{func}: weights with binning='quantile' or 'equal_mass' are not supported on {engine} (the edges "
            f"are those of the rows repeated w_i times, which {engine} do not compute). Use uniform "
            "or explicit-edge bins there, or compute on a Polars / pandas frame of the rows.")


# ----------------------------------------------------------------- variables


def variable_dtype(func: str, variable: str, dtype: Any) -> ColumnTypeError:
    """A variable column of a dtype that is neither numeric nor categorical."""
    return ColumnTypeError(
        f"{func}: variable {variable!r} has dtype {dtype}; variables must be numeric, Boolean, String or Categorical."
    )


def variable_not_finite(func: str, variable: str, n_bad: int) -> InvalidValueError:
    """A numeric variable holding NaN or infinite values in ``n_bad`` rows."""
    return InvalidValueError(
        f"{func}: variable {variable!r} has NaN or infinite values in {rows(n_bad)}. Remove or impute them first."
    )


def single_value_variable(func: str, variable: str) -> InvalidValueError:
    """A variable that takes one value only."""
    return InvalidValueError(
        f"{func}: variable {variable!r} has a single distinct value; calibration along it is the "
        "overall calibration. Choose a variable that varies."
    )


def edges_need_numeric_variable(func: str, variable: str) -> ParameterError:
    """Explicit bin edges for a categorical variable."""
    return ParameterError(f"{func}: explicit bin edges need a numeric variable; {variable!r} is categorical.")


def outside_edges(func: str, variable: str, n_bad: int, low: float, high: float) -> InvalidValueError:
    """A variable with ``n_bad`` values outside the explicit edges [``low``, ``high``]."""
    return InvalidValueError(
        f"{func}: variable {variable!r} has {n_bad} value(s) outside the given edges [{low}, {high}]. Widen the edges."
    )


# ----------------------------------------------------------------- recalibration


def no_rows_to_fit(func: str) -> InvalidValueError:
    """A recalibrator's fit on no rows."""
    return InvalidValueError(f"{func}: no rows to fit on.")


def not_a_recalibrator(func: str, got: Any) -> ColumnTypeError:
    """``apply`` given something other than a fitted recalibrator."""
    return ColumnTypeError(
        f"{func}: expected a fitted recalibrator (from calframe.fit or calframe.load); got {type(got).__name__}."
    )


# ----------------------------------------------------------------- errors as data


def error_text(exc: CalframeError) -> str:
    """``exc`` as JSON text (its class, arguments and JSON-able attributes): how a Dask partition hands its input
    error to the client on a marker row, as data (nothing is ever unpickled; :func:`error_from_text`)."""
    import json

    attrs = {}
    for name, value in vars(exc).items():
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            continue
        attrs[name] = value
    cls = type(exc)
    return json.dumps({"class": f"{cls.__module__}:{cls.__qualname__}", "args": [str(a) for a in exc.args],
                       "attrs": attrs})


def error_from_text(text: str) -> CalframeError:
    """The error :func:`error_text` wrote: a :class:`CalframeError` subclass of calframe's, with its arguments (a
    list attribute comes back as a tuple)."""
    import json

    data = json.loads(text)
    known: dict[str, type] = {}
    todo: list[type] = [CalframeError]
    while todo:
        cls = todo.pop()
        known[f"{cls.__module__}:{cls.__qualname__}"] = cls
        todo.extend(cls.__subclasses__())
    exc = known.get(data["class"], CalframeError)(*data["args"])
    for name, value in data["attrs"].items():
        setattr(exc, name, tuple(value) if isinstance(value, list) else value)
    return exc
