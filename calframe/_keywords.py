"""The keyword parameters the public functions share, declared once, and the decorators that give a public
function its keywords (re-exported by :mod:`calframe.request`, where the parsers read them).

Their types are the ``TypedDict`` groups below (a function takes ``**options: Unpack[group]``, PEP 692, which
type checkers read), their defaults :data:`DEFAULTS`. :func:`keywords` writes them into the function's signature
(``inspect.signature``, ``help()``, the ``df.calib`` methods), passes them with their defaults and refuses an
unknown one (:func:`check_keyword_names`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypedDict, TypeVar, Union

from . import _errors as E
from .metrics import Distance, Estimator

F = TypeVar("F", bound=Callable[..., Any])
Columns = Union[str, Sequence[str], None]


# --------------------------------------------------------------------------- the public keyword parameters
#
# The keyword parameters the public functions share are declared once: their types in these groups (a
# function takes ``**options: Unpack[group]``, PEP 692, which type checkers read), their defaults in
# DEFAULTS. :func:`keywords` writes them into the function's signature (inspect.signature, help(), the
# df.calib methods) and passes them with their defaults; the parsers below read the same table.


class Bins(TypedDict, total=False):
    """The bins of the lensed output (or of a variable)."""

    bins: int | Sequence[float]
    binning: str | None
    closed: Literal["left", "right"]


class Lensed(TypedDict, total=False):
    lens: str | None


class Grouped(TypedDict, total=False):
    by: Columns


class Rows(Grouped, total=False):
    weights: str | None


class Nulls(TypedDict, total=False):
    nulls: Literal["raise", "drop"]


#: the bootstrap interval methods (:func:`calframe.engines.eager._bootstrap`; docs/statistics.md)
CI_METHODS = ("symmetric", "bias_corrected", "percentile")
#: how the bootstrap draws: from the moments of the per (group, bin) sums, or from the rows (calframe.moments)
BOOTSTRAPS = ("auto", "moments", "rows")


class Interval(TypedDict, total=False):
    """A bootstrap interval for the population figure: its level, draws and method (:data:`CI_METHODS`)."""

    ci: float | None
    n_boot: int
    ci_method: Literal["symmetric", "bias_corrected", "percentile"]
    bootstrap: Literal["auto", "moments", "rows"]


class Seeded(TypedDict, total=False):
    seed: int | None


class Progress(TypedDict, total=False):
    """Progress bars on the call's long loops (calframe._progress): True, False or None (automatic)."""

    progress: bool | None


class Sample(Rows, Nulls, Interval, Seeded, Progress, total=False):
    """The rows (groups, weights, nulls), a bootstrap interval, and the seed of any resampling."""


class Debias(TypedDict, total=False):
    estimator: Estimator


class Distanced(Debias, total=False):
    distance: str | tuple | Distance


class Powered(Distanced, total=False):
    p: float | str


class Resampled(Powered, total=False):
    """CE_p's options: also its squared output, and the draws of the Gaussian debiasing."""

    squared: bool
    n_resamples: int


class Local(Lensed, Nulls, Progress, total=False):
    """The local calibration figures' (lce, mlce, mlce_curve): uniform confidence bins, the features'
    preparation."""

    bins: int
    prepare: Literal["none", "standardize", "pca"]
    n_components: int | None


class Kernel(Local, total=False):
    gamma: float


# the options of each public function (in api.py; calframe.expr builds its own from the same groups)


class Curve(Lensed, Grouped, Nulls, Progress, total=False):
    """vce_curve (beside its smoothing parameters)."""


class Table(Bins, Lensed, Rows, Nulls, total=False):
    """reliability."""


class ECE(Bins, Lensed, Sample, total=False):
    """ece, mce; the base of every CE_p figure's."""


class RMSCE(ECE, Debias, total=False):
    """rmsce: ECE's and ``estimator``."""


class VMCE(ECE, Distanced, total=False):
    """vmce (``bins`` and ``binning`` default to a variable's)."""


class VECE(ECE, Powered, total=False):
    """vece, as vmce's with ``p``."""


class CE(ECE, Resampled, total=False):
    """ce: all of them."""


class Scalar(Lensed, Sample, total=False):
    """A figure of one lensed output over the rows (the KS and Kuiper calibration errors): a scalar lens, the rows
    and an interval."""


class Tested(Lensed, Rows, Nulls, total=False):
    """A test of exact calibration from per-group row sums (bias, spiegelhalter): a scalar lens and the rows; no
    interval (the figure carries its own standard error and p-value)."""


class Corp(Scalar, total=False):
    """corp_decomposition: a scalar lens, the rows and an interval, the score decomposed (``"brier"`` or
    ``"log_loss"``) and, for the out-of-sample variant, the number of folds of the cross-fit (None: in-sample)."""

    score: Literal["brier", "log_loss"]
    cross_fit: int | None


class SmECE(Lensed, Sample, total=False):
    """smece: a scalar lens, the rows and an interval, and a fixed bandwidth ``sigma`` (None: the automatic one)."""

    sigma: float | None


#: the default of every keyword parameter above (a function may give its own: :func:`keywords`)
DEFAULTS: dict[str, Any] = dict(bins=15, binning="uniform", closed="left", lens=None, nulls="raise", by=None,
                                weights=None, ci=None, n_boot=1000, ci_method="symmetric", bootstrap="auto", seed=0, p=1, distance="tvd", estimator="plugin",
                                squared=False, n_resamples=1000, prepare="none", n_components=None, gamma=0.2, sigma=None,
                                score="brier", cross_fit=None)
DEFAULTS["progress"] = None  # calframe._progress: bars when standard error is a terminal and the work takes seconds


def group_defaults(options: type) -> dict[str, Any]:
    """The defaults a group of keywords sets beside :data:`DEFAULTS`: a binned figure with an ``estimator`` (ce,
    rmsce, in every form) bins by it, ``binning=None``: uniform for the plugin estimator, equal-mass for the
    debiased one (uncertainty-calibration's ``get_calibration_error``), resolved by :func:`ce`."""
    keys = options.__annotations__
    return {"binning": None} if "estimator" in keys and "binning" in keys else {}


def keywords(options: type, **defaults: Any) -> Callable[[F], F]:
    """``fn(<own parameters>, **options: Unpack[options])`` with the keys of the TypedDict ``options`` as
    keyword-only parameters, defaults from :data:`DEFAULTS` and :func:`group_defaults` (or ``defaults``): in its
    signature, and passed to ``fn`` with their defaults on every call, but ``progress``, which holds for the call
    instead (:mod:`calframe._progress`). An unknown keyword is a TypeError, as for any function.

    Examples
    --------
    >>> from calframe.request import Bins, keywords
    >>> @keywords(Bins, bins=10)
    ... def f(x, **options):
    ...     return options["bins"], options["closed"]
    >>> f(1), f(1, bins=3)
    ((10, 'left'), (3, 'left'))
    >>> str(inspect.signature(f))[:32]
    "(x, *, bins: 'int | Sequence[flo"
    """
    table = {**DEFAULTS, **group_defaults(options), **defaults}

    def wrap(fn: F) -> F:
        sig = inspect.signature(fn)
        own = [q for q in sig.parameters.values() if q.kind is not q.VAR_KEYWORD]
        full = sig.replace(parameters=own + [
            inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=table[k],
                              annotation=getattr(t, "__forward_arg__", t))
            for k, t in options.__annotations__.items()])

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            check_keyword_names(fn.__name__, kwargs, full.parameters)
            try:
                bound = full.bind(*args, **kwargs)
            except TypeError as exc:
                raise TypeError(f"{fn.__name__}() {exc}") from None
            bound.apply_defaults()
            if "progress" not in bound.arguments:
                return fn(**bound.arguments)
            from ._progress import setting

            with setting(fn.__name__, bound.arguments.pop("progress")):  # for every loop the call runs
                return fn(**bound.arguments)

        call.__signature__ = full  # type: ignore[attr-defined]
        call.__calframe_options__ = options  # type: ignore[attr-defined]  (the declaration's parameter group)
        return call  # type: ignore[return-value]

    return wrap


def with_progress(fn: F) -> F:
    """A public function with its own keyword-only ``progress`` parameter (not from a group): its value holds for
    every loop the call runs (:mod:`calframe._progress`), as :func:`keywords` does for the groups' ``progress``."""
    from ._progress import honours

    return honours(fn)


def check_keyword_names(func: str, given: dict[str, Any], accepted: Any, passes_on: bool = False) -> None:
    """The one check of keyword names, for every public function (:func:`keywords`, :func:`checked_keywords`):
    a keyword of ``given`` that is not in ``accepted`` is an :class:`~calframe._errors.UnknownParameterError`
    (a ParameterError and a TypeError) that names calframe's name for scikit-learn's (``n_bins``: ``bins``,
    ``strategy``: ``binning``), or the closest name. ``passes_on``: the function passes other keywords on
    (e.g. to matplotlib), so only scikit-learn's names of its own parameters are refused.

    >>> check_keyword_names("ece", {"n_bins": 10}, ["bins", "binning"])
    Traceback (most recent call last):
    ...
    calframe._errors.UnknownParameterError: ece() got an unexpected keyword argument 'n_bins'. Did you mean \
bins=10? 'n_bins' is scikit-learn's name for it.
    """
    for name, value in given.items():
        if name in accepted:
            continue
        if not passes_on or E.KEYWORD_ALIASES.get(name, ("",))[0] in accepted:
            raise E.unknown_keyword(func, name, value, accepted)


def checked_keywords(fn: F) -> F:
    """``fn`` with its keyword names checked by :func:`check_keyword_names`, for a public function that
    :func:`keywords` does not build (calframe.sql's queries; plot methods passing ``**kwargs`` to matplotlib).
    Messages name it by its qualified name (``ReliabilityDisplay.from_frame``)."""
    params = inspect.signature(fn).parameters
    accepted = {k for k, q in params.items() if q.kind not in (q.VAR_KEYWORD, q.VAR_POSITIONAL)}
    passes_on = any(q.kind is q.VAR_KEYWORD for q in params.values())

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        check_keyword_names(fn.__qualname__, kwargs, accepted, passes_on)
        return fn(*args, **kwargs)

    return call  # type: ignore[return-value]


