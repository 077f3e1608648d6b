"""One recalibrator per known group (``fit(..., by=...)``), saved like any other."""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import REGISTRY, Recalibrator, Schema, register


@register
class PerGroup(Recalibrator):
    """Children[i] is the recalibrator of the group whose key values are ``params["keys"][i]``.

    ``predict(probs, group_index=..., **extra)``: ``group_index`` (n,) gives each
    row's child (-1: unknown group, whose rows keep ``fallback``). ``call``: the
    children's method to run (``"predict_interval"``: Venn-Abers' (n, 2) ``[p0, p1]``,
    an unknown group's rows ``[fallback, fallback]``).
    """

    method = "per_group"

    @classmethod
    def fit(cls, probs, labels, **kwargs) -> "PerGroup":  # pragma: no cover - built by calframe.fit
        raise NotImplementedError("PerGroup is built by calframe.fit(..., by=...)")

    @property
    def output(self) -> str:
        return self.children[0].output if self.children else "probs"

    def predict(self, probs, group_index=None, fallback=None, call: str = "predict", **extra) -> np.ndarray:
        probs = np.asarray(probs, dtype=np.float64)
        idx = np.asarray(group_index)
        out = None
        for i, child in enumerate(self.children):
            rows = np.flatnonzero(idx == i)
            if rows.size == 0:
                continue
            sub_extra = {k: (None if v is None else np.asarray(v)[rows]) for k, v in extra.items()}
            pred = getattr(child, call)(probs[rows], **sub_extra)
            if out is None:
                out = np.full((probs.shape[0],) + pred.shape[1:], np.nan)
            out[rows] = pred
        if fallback is not None and call == "predict_interval":
            fallback = np.repeat(np.asarray(fallback, dtype=np.float64)[:, None], 2, axis=1)
        if out is None:
            out = np.full(probs.shape[0], np.nan) if fallback is None else np.array(fallback, dtype=np.float64)
        missing = idx < 0
        if missing.any() and fallback is not None:
            out[missing] = np.asarray(fallback)[missing]
        return out

    def _check(self) -> None:
        sc = Schema(self)
        keys = sc.param("keys", list)
        method = sc.param("method", str, check=lambda m: m in REGISTRY and m != self.method)
        sc.only_arrays()
        if not self.children or len(keys) != len(self.children):
            sc.fail(f"parameter 'keys' has {len(keys)} entries for {len(self.children)} child recalibrators; "
                    f"it needs one child per key")
        by = self.meta.get("by")
        width = len(by) if isinstance(by, list) else len(keys[0]) if isinstance(keys[0], list) else -1
        scalar = (str, int, float, bool, type(None))
        if any(not isinstance(k, list) or len(k) != width or not all(isinstance(v, scalar) for v in k) for k in keys):
            sc.fail(f"parameter 'keys' must hold one list of {width} scalar values (one per 'by' column) per group")
        if len({tuple(k) for k in keys}) != len(keys):
            sc.fail("parameter 'keys' lists a group twice")
        first = self.children[0]
        for c in self.children:
            if c.method != method or c.params.get("n_classes") != first.params.get("n_classes") \
                    or c.output != first.output:
                sc.fail(f"every child must be a {method!r} recalibrator with the same classes and output")

    def key_index(self, keys: list[tuple[Any, ...]]) -> np.ndarray:
        """Child index of each key tuple (-1 when unknown)."""
        table = {tuple(k): i for i, k in enumerate(self.params["keys"])}
        return np.array([table.get(tuple(k), -1) for k in keys], dtype=np.int64)
