"""Shared machinery of the recalibrators that map one lensed score s to a probability."""

from __future__ import annotations

import numpy as np

from .._errors import ParameterError
from ._inputs import (Probs, as_labels, as_probs, as_weights, check_lens, lens_score, lens_view, one_class_error,
                      parse_lens)
from .base import UNSET, Recalibrator, Schema


class ScalarRecalibrator(Recalibrator):
    """Fits on (s, t) = lens view of (probs, labels); predict returns the recalibrated s.

    Subclasses implement ``_fit_scores(s, t, **kw) -> (params, arrays, children)``,
    ``_map(s, **extra) -> recalibrated s`` and ``_check_specific(schema)``.
    """

    #: extra per-row arrays the method needs at fit and predict time (e.g. ("v",))
    extras: tuple[str, ...] = ()
    #: the fit needs both values of the 0/1 target (a logistic fit): one only is a OneClassError
    needs_both: bool = False
    #: the fit takes row weights (``weights=``, its objective a weighted sum over the rows): ``_fit_scores`` gets
    #: them as ``w`` (None without weights)
    takes_weights: bool = False
    PARAMS = {"lens": check_lens}

    @classmethod
    def fit(cls, probs, labels, *, lens: str | None = None, meta: dict | None = None, weights=None,
            **kwargs) -> "ScalarRecalibrator":
        func = f"{cls.method}.fit"
        if weights is not None and not cls.takes_weights:
            raise ParameterError(f"{func}: this method does not take weights; methods that do: "
                                 f"{weighted_methods()}.", "weights")
        extra = {k: kwargs.pop(k) for k in cls.extras if k in kwargs}  # per-row arrays: checked with the data
        kwargs = cls.check_params({"lens": lens, **kwargs})
        lens = kwargs.pop("lens")
        pr = as_probs(probs, func)
        y = as_labels(labels, pr.n, pr.K, func)
        w = as_weights(weights, pr.n, func)
        lens_ = parse_lens(lens, pr.K, func)
        return cls.fit_probs(pr, y, lens_, meta=meta, **extra, **kwargs, **({} if w is None else {"weights": w}))

    @classmethod
    def fit_probs(cls, pr: Probs, y: np.ndarray, lens: str, *, meta: dict | None = None, weights=None, **kwargs):
        s, t = lens_view(pr, y, lens)
        tt = t if weights is None else t[weights > 0]  # rows of weight 0 count as absent
        if cls.needs_both and tt.size and (tt == tt[0]).all():
            raise one_class_error(f"{cls.method}.fit", lens, int(tt[0]), pr.n)
        if cls.takes_weights:
            kwargs["w"] = weights
        params, arrays, children = cls._fit_scores(s, t, n=pr.n, **kwargs)
        return cls(params={"lens": lens, "n_classes": pr.K, **params}, arrays=arrays, meta=meta or {},
                   children=children)

    def predict(self, probs, **extra) -> np.ndarray:
        pr = as_probs(probs, f"{self.method}.predict", self.n_classes)
        return self._predict_probs(pr, **extra)

    def _predict_probs(self, pr: Probs, **extra) -> np.ndarray:
        return self._map(lens_score(pr, self.params["lens"]), n=pr.n, **extra)

    @classmethod
    def _fit_scores(cls, s, t, **kwargs):  # pragma: no cover - abstract
        raise NotImplementedError

    def _map(self, s: np.ndarray, **extra) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _check(self) -> None:
        sc = Schema(self)
        K = sc.param("n_classes", int, check=lambda k: k >= 2)
        lens = sc.param("lens", str)
        try:
            parse_lens(lens, K, self.method)
        except Exception:
            sc.fail(f"lens {lens!r} is invalid for {K} classes")
        self._check_specific(sc)

    def _check_specific(self, sc: Schema) -> None:
        sc.only_arrays()
        sc.children(0)


def weighted_methods() -> list[str]:
    """The methods whose fit takes row weights (``takes_weights``)."""
    from .base import REGISTRY

    return sorted(m for m, c in REGISTRY.items() if getattr(c, "takes_weights", False))


def resolve(value, default):
    return default if value is UNSET else value
