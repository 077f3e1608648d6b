"""A trace of one warm call through calframe: the modules it enters, the calls it makes, and the climbs back up.

    .venv/bin/python benchmarks/trace_call.py            # ece(df, by="g") on a Polars frame and on DuckDB

A *climb back up* is a call from a module of a lower layer into a module of a higher one (docs/design.md,
"Layers": 1 infrastructure, 2 the rules, 3 the engines, 4 the public functions, 5 the surfaces): a layer that
calls back into the one that called it. Each call is traced once warm (a first run compiles and imports).
"""

from __future__ import annotations

import sys
from collections import Counter

import numpy as np
import polars as pl

import calframe

#: the layer of a module, by the first matching prefix (docs/design.md, "Layers")
LAYERS = (
    ("calframe.frames.dispatch", 4), ("calframe.frames.namespace", 5), ("calframe.frames", 1),
    ("calframe.engines", 3), ("calframe.families", 4), ("calframe.api", 5), ("calframe.monitoring", 5),
    ("calframe.expr", 5), ("calframe.report", 5), ("calframe.plot", 5), ("calframe.cli", 5),
    ("calframe.sklearn", 5), ("calframe.sql", 5), ("calframe._kernels", 1), ("calframe.registry", 1),
    ("calframe._", 1), ("calframe.request", 2), ("calframe.lenses", 2), ("calframe.binning", 2),
    ("calframe.metrics", 2), ("calframe.figures", 2), ("calframe.generalized", 2), ("calframe.smooth", 2),
    ("calframe.disparities", 2), ("calframe.verdicts", 2), ("calframe.moments", 2), ("calframe", 5),
)


def layer(module: str) -> int:
    return next(n for prefix, n in LAYERS if module == prefix or module.startswith(prefix))


def trace(fn) -> tuple[Counter, int, int]:
    """(calls per module, calls, climbs back up) of ``fn()``, calframe's Python functions only."""
    calls: Counter = Counter()
    climbs = 0

    def profile(frame, event, arg):  # noqa: ANN001
        nonlocal climbs
        if event != "call":
            return
        mod = frame.f_globals.get("__name__", "")
        if not mod.startswith("calframe"):
            return
        calls[mod] += 1
        caller = frame.f_back
        while caller is not None and not caller.f_globals.get("__name__", "").startswith("calframe"):
            caller = caller.f_back
        if caller is not None and layer(mod) > layer(caller.f_globals["__name__"]):
            climbs += 1

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return calls, sum(calls.values()), climbs


def main() -> None:
    rng = np.random.default_rng(0)
    n = 100_000
    p = rng.uniform(size=n)
    df = pl.DataFrame({"g": rng.integers(0, 100, n), "prob": p, "label": (rng.uniform(size=n) < p).astype(np.int8)})
    runs = {"ece(df, by='g'), Polars": lambda: calframe.ece(df, by="g")}
    try:
        import duckdb

        rel = duckdb.from_arrow(df.to_arrow())
        runs["ece(rel, by='g'), DuckDB"] = lambda: calframe.ece(rel, by="g").pl()
    except ImportError:
        print("duckdb is not installed: the DuckDB trace is skipped")
    for what, fn in runs.items():
        fn()  # warm: imports, kernels
        calls, total, climbs = trace(fn)
        print(f"{what}: {total} calls to calframe functions in {len(calls)} modules, {climbs} climbs back up")
        for mod, c in calls.most_common():
            print(f"    {c:5d}  {mod} (layer {layer(mod)})")


if __name__ == "__main__":
    main()
