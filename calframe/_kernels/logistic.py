"""Numba kernels for the Newton logistic fit: objective, gradient and Hessian in one pass over the rows.

Rows are cut into chunks whose number depends only on the sizes; partial sums
are added in chunk order (deterministic for any thread count). The chunks are shared out among threads by
plain ``nogil`` kernels (:func:`calframe._kernels.chunks.run_chunks`), not ``parallel=True``, whose parfor
passes cost seconds more to compile.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from .chunks import in_chunk_order, run_chunks, take

CHUNK_ROWS = 1 << 15
#: a row costs an exp and a log1p here, several times a row of a summing pass: the threads are chosen
#: (:func:`calframe._kernels.chunks.pass_threads`) as for this many times the rows
ROW_COST = 8


def n_chunks(n: int) -> int:
    return int(min(64, max(1, -(-n // CHUNK_ROWS))))


@njit(inline="always")
def _loss(eta, e, y):
    """log(1 + exp(eta)) - y * eta given e = exp(-|eta|), without overflow or cancellation.

    Written as (1 - y) softplus(eta) + y softplus(-eta) (softplus(eta) - eta = softplus(-eta)):
    for y = 1 and a large eta the naive form subtracts two equal large numbers and loses the
    tiny loss log1p(exp(-eta)) that the line search compares near a separable optimum.
    """
    lg = np.log1p(e)
    sp_pos = (eta if eta > 0 else 0.0) + lg  # softplus(eta)
    sp_neg = (-eta if eta < 0 else 0.0) + lg  # softplus(-eta)
    return (1.0 - y) * sp_pos + y * sp_neg


def objective(Z, y, sw, theta, nchunks):
    """sum_i sw_i (log(1 + exp(z_i . theta)) - y_i z_i . theta) (the penalty is added by the caller).

    ``sw``: the row weights (all 1.0 without weights: a product by 1.0 is exact, so the unweighted sums
    keep their bits). Each chunk sums its rows in order; the chunks' sums are added in chunk order."""
    part = np.zeros(nchunks)
    run_chunks(_objective, (Z, y, sw, theta, nchunks, part), ROW_COST * Z.shape[0])
    f = 0.0
    for c in range(nchunks):
        f += part[c]
    return f


@njit(cache=True, nogil=True)
def _objective(Z, y, sw, theta, nchunks, part, taken):
    """:func:`objective`, one thread's share of the chunks: chunk c's sum into ``part[c]``."""
    n, p = Z.shape
    step = (n + nchunks - 1) // nchunks
    while True:
        c = take(taken)
        if c >= nchunks:
            break
        t = 0.0
        for i in range(c * step, min(n, (c + 1) * step)):
            eta = 0.0
            for j in range(p):
                eta += Z[i, j] * theta[j]
            t += sw[i] * _loss(eta, np.exp(-abs(eta)), y[i])
        part[c] = t


def newton_terms(Z, y, sw, theta, nchunks, with_f):
    """(objective, gradient (p,), Hessian (p, p)) of the unpenalised objective at theta, in one pass;
    row i weighted by ``sw[i]`` (1.0 without weights: the same bits).

    ``with_f=False`` skips the objective (returned as NaN): no log1p per row. Each chunk's sums go to its
    own row of the partial tables, added in chunk order (:func:`calframe._kernels.chunks.in_chunk_order`:
    the same additions, from 0, as a loop over the chunks).
    """
    p = Z.shape[1]
    fpart = np.zeros(nchunks)
    gpart = np.zeros((nchunks, p))
    hpart = np.zeros((nchunks, p, p))  # the upper triangle (k >= j) is summed
    run_chunks(_newton_terms, (Z, y, sw, theta, nchunks, with_f, fpart, gpart, hpart), ROW_COST * Z.shape[0])
    f = np.nan
    if with_f:
        f = 0.0
        for c in range(nchunks):
            f += fpart[c]
    g = in_chunk_order(gpart)
    h = in_chunk_order(hpart)
    lower = np.tril_indices(p, -1)
    h[lower] = h.T[lower]
    return f, g, h


@njit(cache=True, nogil=True)
def _newton_terms(Z, y, sw, theta, nchunks, with_f, fpart, gpart, hpart, taken):
    """:func:`newton_terms`, one thread's share of the chunks: chunk c's sums into ``fpart[c]``, ``gpart[c]``
    and ``hpart[c]``. Each chunk keeps its sums in local scalars for p <= 3 (the Platt and beta designs), so
    no row waits on a store of the previous one."""
    n, p = Z.shape
    step = (n + nchunks - 1) // nchunks
    t0 = theta[0]
    t1 = theta[1] if p > 1 else 0.0
    t2 = theta[2] if p > 2 else 0.0
    while True:
        c = take(taken)
        if c >= nchunks:
            break
        fs = 0.0
        g0 = g1 = g2 = 0.0
        h00 = h01 = h02 = h11 = h12 = h22 = 0.0
        g = gpart[c]
        h = hpart[c]
        for i in range(c * step, min(n, (c + 1) * step)):
            if p <= 3:
                z0 = Z[i, 0]
                z1 = Z[i, 1] if p > 1 else 0.0
                z2 = Z[i, 2] if p > 2 else 0.0
                eta = z0 * t0 + z1 * t1 + z2 * t2
            else:
                eta = 0.0
                for j in range(p):
                    eta += Z[i, j] * theta[j]
            e = np.exp(-abs(eta))  # one exp for the loss and the probability
            yi = y[i]
            wi = sw[i]
            if with_f:
                fs += wi * _loss(eta, e, yi)
            # mu = expit(eta) and q = 1 - mu, each from the side where it does not round to 1:
            # `1 - mu` and `mu - 1` are 0 once exp(-eta) < 2^-53, which zeroes the gradient and
            # Hessian of every well-fitted row and stalls Newton on separable data
            if eta > 0:
                mu = 1.0 / (1.0 + e)
                q = e / (1.0 + e)
            else:
                mu = e / (1.0 + e)
                q = 1.0 / (1.0 + e)
            r = (mu * (1.0 - yi) - q * yi) * wi  # (mu - y) w, mu - y exact for y in {0, 1}
            w = mu * q * wi
            if p <= 3:
                g0 += z0 * r
                g1 += z1 * r
                g2 += z2 * r
                wz0 = w * z0
                wz1 = w * z1
                h00 += wz0 * z0
                h01 += wz0 * z1
                h02 += wz0 * z2
                h11 += wz1 * z1
                h12 += wz1 * z2
                h22 += w * z2 * z2
            else:
                for j in range(p):
                    zj = Z[i, j]
                    g[j] += zj * r
                    for k in range(j, p):
                        h[j, k] += w * zj * Z[i, k]
        fpart[c] = fs
        if p <= 3:
            loc_g = (g0, g1, g2)
            loc_h = ((h00, h01, h02), (h01, h11, h12), (h02, h12, h22))
            for j in range(p):
                g[j] = loc_g[j]
                for k in range(j, p):
                    h[j, k] = loc_h[j][k]
