"""The pool-adjacent-violators algorithm (PAV), weighted, on many segments at once: the isotonic (increasing)
regression of each segment's values, as ``scipy.optimize.isotonic_regression`` computes it for one.

``calframe.families.corp`` is the caller: a segment is one group's distinct predictions in increasing order (or
one bootstrap draw's), each value the mean outcome of its tied rows and its weight theirs.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit


@njit(cache=True)
def pav_segments(y, w, starts):
    """The weighted isotonic regression of ``y`` (weights ``w`` >= 0) on each segment ``starts[s] ..
    starts[s + 1]`` on its own: the values of the fitted blocks, one per entry.

    A block is pooled with the one before while that one's mean is larger (the weighted mean of the two); a
    value of weight 0 takes its block's mean and does not move it."""
    n = y.shape[0]
    out = np.empty(n)
    mean = np.empty(n)
    weight = np.empty(n)
    first = np.empty(n, dtype=np.int64)
    for s in range(starts.shape[0] - 1):
        a, b = starts[s], starts[s + 1]
        top = -1
        for i in range(a, b):
            top += 1
            mean[top] = y[i]
            weight[top] = w[i]
            first[top] = i
            while top > 0 and mean[top - 1] > mean[top]:
                total = weight[top - 1] + weight[top]
                if total > 0:
                    mean[top - 1] = (weight[top - 1] * mean[top - 1] + weight[top] * mean[top]) / total
                weight[top - 1] = total
                top -= 1
        for k in range(top + 1):
            end = first[k + 1] if k < top else b
            for i in range(first[k], end):
                out[i] = mean[k]
    return out
