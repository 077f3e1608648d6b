"""Numba kernels of the bootstrap from moments (:mod:`calframe.moments`): the draws of every group's per-bin sums
from its cells' moments, on a counter-based random stream, and the cells' moments from the rows.

**The random stream.** Every random number is a function of (seed, group key, binning, cell, draw) only: a
group's key ``K`` (:func:`group_keys`: SplitMix64's mixer of the seed, the hash of the group's key and the
hash of its binning), a cell's key ``mix(K + mix(4 code + purpose + 1))`` (``code`` = 2 bin + split, within the
group), and for draw r the state ``mix(cell key + C r)`` from which a SplitMix64 sequence (state += golden
gamma, output ``mix(state)``) gives that draw's numbers. So the bits do not depend on the thread count, the
other groups, the row order or the engine, and no number is drawn in Python.

- Standard normals: Marsaglia and Tsang's ziggurat with 256 layers (numpy's ``random_standard_normal``:
  the same layout of its tables, which :func:`_ziggurat_tables` builds from r and the layers' area);
- binomials (the small cells' exact draws): inversion by geometric waiting times below a mean of 10, else
  Hörmann's BTRS (transformed rejection with squeeze, "The generation of binomial random variates", 1993),
  exact in law;
- uniforms: ``(u >> 11 + 0.5) 2^-53``, in (0, 1).

Each draw of a large cell takes one 64-bit word, ``mix(cell key + C r)``, whose two halves give the normals of
its count and of its sum (:func:`normal_pair`: a 128-layer ziggurat on 24 bits of magnitude each; the rare
rejections draw more words from the SplitMix64 sequence at that word). The law of each draw is :mod:`calframe.moments`'.
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import njit
from . import arrays as A
from .accumulate import chunk_bounds, edge_bin, fast_bin, n_chunks, tables
from .chunks import in_chunk_order, run_chunks, run_items, take

#: a cell with fewer rows than this is resampled exactly (calframe.moments.SMALL)
SMALL = 32
#: a weighted group's sum of weights above which no cell is drawn exactly (calframe.moments.HUGE)
HUGE = 2.0 ** 52

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_C = np.uint64(0xD1B54A32D192ED03)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
_S8, _S1 = np.uint64(8), np.uint64(1)
_BYTE, _ONE = np.uint64(0xFF), np.uint64(1)
_MANTISSA = np.uint64(0x000FFFFFFFFFFFFF)
_LOW, _S32 = np.uint64(0xFFFFFFFF), np.uint64(32)
_TO_UNIT = 2.0 ** -53

#: the ziggurat's rightmost layer edge and the area of each of its 256 layers (numpy's ziggurat_nor_r)
_R = 3.6541528853610087963519472518
_INV_R = 1.0 / _R


def _ziggurat_tables(r: float = _R, layers: int = 256, bits: int = 52) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """numpy's ``ki_double``, ``wi_double`` and ``fi_double`` from r: layer i (1..255) is [0, x_i] x [f(x_i),
    f(x_{i-1})] with f(x) = exp(-x^2 / 2), x_255 = r, x_0 = 0, each of area v = r f(r) + the tail's mass; layer 0
    is the base strip with the tail. ``ki[i]``: 2^52 x_{i-1} / x_i (the part accepted at once), ``wi[i]``: x_i /
    2^52, ``fi[i]``: f(x_i)."""
    f = lambda x: math.exp(-0.5 * x * x)  # noqa: E731
    v = r * f(r) + math.sqrt(math.pi / 2) * math.erfc(r / math.sqrt(2))
    top = layers - 1
    x = np.zeros(layers)
    x[top] = r
    for i in range(top, 1, -1):
        x[i - 1] = math.sqrt(-2.0 * math.log(f(x[i]) + v / x[i]))
    m = 2.0 ** bits
    ki = np.zeros(layers, dtype=np.uint64)
    wi, fi = np.zeros(layers), np.zeros(layers)
    ki[0] = np.uint64(int(m * r * f(r) / v))
    wi[0], fi[0] = v / f(r) / m, 1.0
    for i in range(1, layers):
        ki[i] = np.uint64(int(m * x[i - 1] / x[i]))
        wi[i], fi[i] = x[i] / m, f(x[i])
    return ki, wi, fi


_KI, _WI, _FI = _ziggurat_tables()
#: the 128-layer ziggurat of a 32-bit half word (Marsaglia and Tsang's RNOR; 7 bits of layer, 1 of sign and 24 of
#: magnitude, apart): its r, and tables as :func:`_ziggurat_tables`' for 2^24
_R7 = 3.442619855899
_K7, _W7, _F7 = (t.astype(np.int64) if t.dtype == np.uint64 else t for t in _ziggurat_tables(_R7, 128, 24))
#: log(k!) - Stirling's approximation of it, k = 0..9 (BTRS's correction; the series beyond)
_TAIL = np.array([math.lgamma(k + 1.0) - (0.5 * math.log(2 * math.pi) + (k + 0.5) * math.log(k + 1.0) - (k + 1.0))
                  for k in range(10)])


@njit(inline="always")
def mix(z):
    """SplitMix64's output function (a bijection of uint64 whose outputs pass BigCrush on a counter)."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit(inline="always")
def _uniform(s):
    """(a uniform in (0, 1), the next state) of a SplitMix64 sequence at state ``s``."""
    s = s + _GOLDEN
    return (float(mix(s) >> _S11) + 0.5) * _TO_UNIT, s


@njit
def normal(s):
    """(a standard normal, the next state): the ziggurat of numpy's ``random_standard_normal`` on the sequence
    at ``s`` (tables :data:`_KI`, :data:`_WI`, :data:`_FI`; the tail by Marsaglia's method)."""
    while True:
        s = s + _GOLDEN
        r = mix(s)
        idx = np.intp(r & _BYTE)
        r = r >> _S8
        rabs = (r >> _S1) & _MANTISSA
        x = float(rabs) * _WI[idx]
        if (r & _ONE) != 0:
            x = -x
        if rabs < _KI[idx]:
            return x, s
        if idx == 0:
            while True:
                u1, s = _uniform(s)
                u2, s = _uniform(s)
                xx = -_INV_R * math.log1p(-u1)
                yy = -math.log1p(-u2)
                if yy + yy > xx * xx:
                    return (-(_R + xx) if ((rabs >> _S8) & _ONE) != 0 else _R + xx), s
        else:
            u, s = _uniform(s)
            if (_FI[idx - 1] - _FI[idx]) * u + _FI[idx] < math.exp(-0.5 * x * x):
                return x, s


@njit
def _half_slow(idx, x, s):
    """The rare path of :func:`_half`: the tail (layer 0) by Marsaglia's method, or the wedge's test; a rejected
    point is replaced by :func:`normal`'s (the output is N(0, 1) either way: the ziggurat's accepted points are)."""
    if idx == 0:
        while True:
            u1, s = _uniform(s)
            u2, s = _uniform(s)
            xx = -math.log(u1) / _R7
            yy = -math.log(u2)
            if yy + yy > xx * xx:
                return (-(_R7 + xx) if x < 0 else _R7 + xx), s
    u, s = _uniform(s)
    if (_F7[idx - 1] - _F7[idx]) * u + _F7[idx] < math.exp(-0.5 * x * x):
        return x, s
    return normal(s)


@njit(inline="always")
def _half(h, s):
    """(a standard normal from the 32 bits ``h`` (an int64), the state): the 128-layer ziggurat, its rare path
    drawing more words from the sequence at ``s``."""
    idx = h & 127
    rabs = h >> 8
    x = float(rabs) * _W7[idx]
    if (h >> 7) & 1:
        x = -x
    if rabs < _K7[idx]:
        return x, s
    return _half_slow(idx, x, s)


@njit(inline="always")
def normal_pair(word):
    """Two independent standard normals from one 64-bit word (its two halves, :func:`_half`); a rejection draws
    more from the SplitMix64 sequence at ``word``."""
    lo = np.int64(word & _LOW)
    hi = np.int64(word >> _S32)
    z1, s = _half(lo, word)
    z2, s = _half(hi, s)
    return z1, z2


@njit(inline="always")
def _stirling_tail(k):
    if k < 10:
        return _TAIL[int(k)]
    kp1sq = (k + 1.0) * (k + 1.0)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1.0)


@njit
def binomial(n, p, s):
    """(a Binomial(n, p) draw as a float, the next state): n a whole number (a float), p in [0, 1]. Inversion
    by geometric waiting times when n min(p, 1 - p) < 10, else BTRS (Hörmann 1993)."""
    if not (n > 0.0 and p > 0.0 and math.isfinite(n)):  # NaN p (a group without weight): none
        return 0.0, s
    if p >= 1.0:
        return n, s
    flip = p > 0.5
    q = 1.0 - p if flip else p
    if n * q < 10.0:
        lq = math.log1p(-q)
        k = 0.0
        total = 0.0
        while True:  # the waiting times of a geometric law, floats throughout (numba's math.ceil is an int)
            u, s = _uniform(s)
            total += np.ceil(math.log(u) / lq)
            if total > n:
                break
            k += 1.0
    else:
        spq = math.sqrt(n * q * (1.0 - q))
        b = 1.15 + 2.53 * spq
        a = -0.0873 + 0.0248 * b + 0.01 * q
        c = n * q + 0.5
        v_r = 0.92 - 4.2 / b
        r = q / (1.0 - q)
        alpha = (2.83 + 5.1 / b) * spq
        m = np.floor((n + 1.0) * q)
        while True:
            u, s = _uniform(s)
            v, s = _uniform(s)
            u -= 0.5
            us = 0.5 - abs(u)
            k = np.floor((2.0 * a / us + b) * u + c)
            if us >= 0.07 and v <= v_r:
                break
            if k < 0.0 or k > n:
                continue
            v = math.log(v * alpha / (a / (us * us) + b))
            bound = ((m + 0.5) * math.log((m + 1.0) / (r * (n - m + 1.0)))
                     + (n + 1.0) * math.log((n - m + 1.0) / (n - k + 1.0))
                     + (k + 0.5) * math.log(r * (n - k + 1.0) / (k + 1.0))
                     + _stirling_tail(m) + _stirling_tail(n - m) - _stirling_tail(k) - _stirling_tail(n - k))
            if v <= bound:
                break
    return (n - k if flip else k), s


@njit(cache=True)
def group_keys(seed, key_hashes, stream):
    """Each group's key of the stream: ``mix(mix(mix(seed) + key hash) + stream)`` (uint64)."""
    out = np.empty(key_hashes.shape[0], dtype=np.uint64)
    s0 = mix(np.uint64(seed) + _GOLDEN)
    st = np.uint64(stream)
    for g in range(key_hashes.shape[0]):
        out[g] = mix(mix(s0 + np.uint64(key_hashes[g])) + st)
    return out


@njit(cache=True)
def samples(kind, key, count, a, b):
    """``count`` draws of one stream (for tests): kind 0 standard normals, 1 Binomial(a, b), 2 uniforms, 3 the
    first (even i) or second (odd i) normal of :func:`normal_pair`; each from its own state ``mix(key + C i)``, as
    a cell's draws are."""
    out = np.empty(count)
    k = np.uint64(key)
    for i in range(count):
        s = mix(k + _C * np.uint64(i + 1))
        if kind == 0:
            out[i], s = normal(s)
        elif kind == 1:
            out[i], s = binomial(a, b, s)
        elif kind == 3:
            z1, z2 = normal_pair(s)
            out[i] = z1 if i % 2 == 0 else z2
        else:
            out[i], s = _uniform(s)
    return out


@njit(cache=True, nogil=True)
def _draw_worker(keys, start, n, freq, mean, sd, split, code, small_rows, small_start, units, weighted, n_boot,
                 n_bins, lo, hi, g0, g1, specs, table, figs, counter):
    """One thread's groups (taken by ``counter``) of :func:`draw`: each group's ``n_boot`` draws of its per-bin
    sums ``[sum w, sum w v, sum w split]`` into ``table[:, g - g0]`` (no ``specs``), or the plug-in CE_p of
    each spec row ``(p, distance factor, squared)`` of them into ``figs[:, g - g0, j]``."""
    n_specs = specs.shape[0]
    while True:
        g = g0 + take(counter)
        if g >= g1:
            break
        gi = g - g0
        c0, c1 = start[g], start[g + 1]
        nc = c1 - c0
        unit = units[g]
        fq = np.empty(nc)
        n_g = 0.0
        for i in range(nc):
            fq[i] = freq[c0 + i] * unit if weighted else float(n[c0 + i])
            n_g += fq[i]
        exact = not (weighted and n_g > HUGE)
        big = np.empty(nc, dtype=np.int64)
        n_big = 0
        big_total = 0.0
        share = 0.0
        s_rows = 0
        for i in range(nc):
            if exact and n[c0 + i] < SMALL:
                share += fq[i]
                s_rows += n[c0 + i]
            else:
                big[n_big] = i
                n_big += 1
                big_total += fq[i]
        # the small cells' rows, in cell order: local cell, w, value (w v / w) per row
        row_cell = np.empty(s_rows, dtype=np.int64)
        row_w, row_wv, row_v = np.empty(s_rows), np.empty(s_rows), np.empty(s_rows)
        w_total = 0.0
        j = 0
        if s_rows > 0:
            for i in range(nc):
                if n[c0 + i] < SMALL:
                    r0 = small_start[c0 + i]
                    for t in range(n[c0 + i]):
                        row_cell[j] = i
                        row_w[j] = small_rows[r0 + t, 0]
                        row_wv[j] = small_rows[r0 + t, 1]
                        row_v[j] = row_wv[j] / row_w[j] if row_w[j] > 0 else 0.0
                        w_total += row_w[j]
                        j += 1
        inv_unit = 1.0 / unit if weighted else 1.0  # a power of two: exact
        cbin, csplit = np.empty(nc, dtype=np.int64), np.empty(nc)
        for i in range(nc):
            cbin[i] = code[c0 + i] >> 1
            csplit[i] = split[c0 + i]
        bmean, bsd = np.empty(n_big), np.empty(n_big)
        q = np.empty(n_big)
        rq = np.empty(n_big)
        ckey = np.empty(n_big, dtype=np.uint64)
        for t in range(n_big):
            i = big[t]
            q[t] = fq[i] / big_total if big_total > 0 else 0.0
            rq[t] = math.sqrt(q[t])
            bmean[t], bsd[t] = mean[c0 + i], sd[c0 + i]
            ckey[t] = mix(keys[g] + mix(np.uint64(4 * code[c0 + i] + 1)))
        skey = mix(keys[g] + mix(np.uint64(3)))
        zc, zv = np.empty(n_big), np.empty(n_big)
        bad = np.empty(n_big + 1, dtype=np.int64)
        sw, sv = np.zeros(nc), np.zeros(nc)
        tab = np.zeros((n_bins, 3))
        for r in range(n_boot):
            rr = _C * np.uint64(r + 1)
            if s_rows > 0:
                for i in range(nc):
                    sw[i] = 0.0
                    sv[i] = 0.0
            rest = n_g
            if s_rows > 0:
                s = mix(skey + rr)
                if weighted:
                    trials = np.floor(n_g)
                    if trials != n_g:  # non-integer frequency weights: floor or ceil, with mean n_g
                        u, s = _uniform(s)
                        if u < n_g - trials:
                            trials += 1.0
                    trials = max(trials, 1.0)
                    if n_big > 0:
                        k, s = binomial(trials, min(share / n_g, 1.0), s)
                    else:
                        k = trials
                    rest = max(trials - k, 0.0)
                    # Multinomial(k, w_i / sum w) over the small rows, as conditional binomials
                    left, w_left = k, w_total
                    for t in range(s_rows):
                        if left <= 0.0:
                            break
                        if t == s_rows - 1:
                            x = left
                        elif w_total > 0:
                            x, s = binomial(left, min(row_w[t] / w_left, 1.0) if w_left > 0 else 1.0, s)
                            w_left -= row_w[t]
                        else:
                            x, s = binomial(left, 1.0 / (s_rows - t), s)
                        left -= x
                        sw[row_cell[t]] += x
                        sv[row_cell[t]] += x * row_v[t]
                else:
                    if n_big > 0:
                        k, s = binomial(n_g, share / n_g, s)
                    else:
                        k = n_g
                    rest = n_g - k
                    for t in range(int(k)):  # k rows, each one of the small rows, all equally likely
                        u, s = _uniform(s)
                        pick = min(int(u * s_rows), s_rows - 1)
                        sw[row_cell[pick]] += row_w[pick]
                        sv[row_cell[pick]] += row_wv[pick]
            if n_big > 0:
                n_bad = 0
                for t in range(n_big):  # the ziggurats' fast path without a branch; rejected cells listed
                    w = mix(ckey[t] + rr)
                    h1, h2 = np.int64(w & _LOW), np.int64(w >> _S32)
                    i1, i2 = h1 & 127, h2 & 127
                    m1, m2 = h1 >> 8, h2 >> 8
                    zc[t] = float(m1) * _W7[i1] * (1.0 - 2.0 * ((h1 >> 7) & 1))
                    zv[t] = float(m2) * _W7[i2] * (1.0 - 2.0 * ((h2 >> 7) & 1))
                    bad[n_bad] = t
                    n_bad += (m1 >= _K7[i1]) | (m2 >= _K7[i2])
                for j in range(n_bad):  # ~2.4% of cells: the pair again, by the rare path
                    t = bad[j]
                    zc[t], zv[t] = normal_pair(mix(ckey[t] + rr))
                total = 0.0
                for t in range(n_big):
                    zc[t] *= rq[t]
                    total += zc[t]
                root = math.sqrt(rest)
                for t in range(n_big):
                    i = big[t]
                    kk = rest * q[t] + (zc[t] - q[t] * total) * root
                    if kk < 0.0:
                        kk = 0.0
                    vv = kk * bmean[t] + math.sqrt(kk) * zv[t] * bsd[t]
                    if vv < lo * kk:
                        vv = lo * kk
                    if vv > hi * kk:
                        vv = hi * kk
                    sw[i] = kk
                    sv[i] = vv
            for b in range(n_bins):
                tab[b, 0] = 0.0
                tab[b, 1] = 0.0
                tab[b, 2] = 0.0
            for i in range(nc):  # in the rows' units (the figures divide sums by sums)
                a_w = sw[i] * inv_unit
                a_v = sv[i] * inv_unit
                b = cbin[i]
                tab[b, 0] += a_w
                tab[b, 1] += a_v
                tab[b, 2] += a_w * csplit[i]
            if n_specs == 0:
                for b in range(n_bins):
                    table[r, gi, b, 0] = tab[b, 0]
                    table[r, gi, b, 1] = tab[b, 1]
                    table[r, gi, b, 2] = tab[b, 2]
                continue
            for jj in range(n_specs):  # n_b d_b^p with d_b = factor |s_b / n_b - a_b / n_b|: no division for p = 1
                p, factor, squared = specs[jj, 0], specs[jj, 1], specs[jj, 2]
                kind = 0 if p == 1.0 else (1 if p == 2.0 else 2)
                num, den = 0.0, 0.0
                for b in range(n_bins):
                    w = tab[b, 0]
                    den += w
                    if w > 0:
                        diff = abs(tab[b, 1] - tab[b, 2])
                        if kind == 0:
                            num += diff
                        elif kind == 1:
                            num += diff * diff / w
                        elif diff / w > num:
                            num = diff / w
                if not den > 0:
                    figs[r, gi, jj] = np.nan
                elif kind == 0:
                    figs[r, gi, jj] = factor * num / den
                elif kind == 1:
                    e = factor * factor * num / den
                    figs[r, gi, jj] = e if squared != 0.0 else math.sqrt(e)
                else:
                    figs[r, gi, jj] = factor * num


def draw(keys, start, n, freq, mean, sd, split, code, small_rows, small_start, units, weighted, n_boot, n_bins,
         bounds, groups, specs):
    """Draws of the groups ``groups`` (a range) from their cells' moments (:class:`calframe.moments.Moments`'
    arrays; ``code`` = 2 bin + split per cell; ``keys``: :func:`group_keys`; ``units``: each group's weight
    scale), on :func:`calframe._kernels.chunks.run_items`' threads, one group at a time. ``specs`` (rows ``(p,
    factor, squared)``; p 1, 2 or inf): returns the plug-in CE_p of each, ``(n_boot, groups, specs)``; none:
    the per-bin sums ``(n_boot, groups, n_bins, 3)``."""
    g0, g1 = groups.start, groups.stop
    specs = np.ascontiguousarray(specs, dtype=np.float64).reshape(-1, 3)
    fused = specs.shape[0] > 0
    table = np.zeros((n_boot, g1 - g0, n_bins, 3) if not fused else (1, 1, 1, 3))
    figs = np.empty((n_boot, g1 - g0, specs.shape[0]) if fused else (1, 1, 1))
    run_items(_draw_worker, (
        A.frozen(np.asarray(keys, dtype=np.uint64)), A.frozen(np.asarray(start, dtype=np.int64)),
        A.frozen(np.asarray(n, dtype=np.int64)), A.real(freq), A.real(mean), A.real(sd), A.real(split),
        A.frozen(np.asarray(code, dtype=np.int64)), A.real(np.asarray(small_rows).reshape(-1, 2)),
        A.frozen(np.asarray(small_start, dtype=np.int64)), A.real(units), bool(weighted), int(n_boot), int(n_bins),
        float(bounds[0]), float(bounds[1]), int(g0), int(g1), A.frozen(specs), table, figs), g1 - g0)
    return figs if fused else table


# --------------------------------------------------------------------------- the moments from the rows


@njit(cache=True, nogil=True)
def _cells_chunked(groups, bins, value, split, weights, edges, right, n_bins, part, codes, taken):
    """One thread's chunks of :func:`cell_sums`: per (group, bin, split) ``[rows, sum w, sum w v, sum w v^2]``
    into the chunk's own partial table, and each row's cell code ``(group B + bin) 2 + split`` into ``codes``."""
    n = value.shape[0]
    nchunks = part.shape[0]
    while True:
        c = take(taken)
        if c >= nchunks:
            break
        lo, hi = chunk_bounds(n, nchunks, c)
        tab = part[c]
        for i in range(lo, hi):
            x = value[i]
            if bins is None:
                b = fast_bin(x, n_bins)
                if b < 0:
                    b = edge_bin(x, edges, n_bins, right)
            else:
                b = bins[i]
            code = ((groups[i] * n_bins + b) << 1) + (1 if split[i] != 0 else 0)
            codes[i] = code
            k = 4 * code
            w = 1.0 if weights is None else weights[i]
            wv = w * x
            tab[k] += 1.0
            tab[k + 1] += w
            tab[k + 2] += wv
            tab[k + 3] += wv * x


@njit(cache=True, nogil=True)
def _small_chunked(codes, value, weights, counts, cell_of, offsets, out_cell, out, taken):
    """One thread's chunks (those of :func:`_cells_chunked`, ``offsets``: where each chunk's rows of small cells
    go) of the rows of the cells of fewer than SMALL rows: their cell (``cell_of``) and ``(w, w v)``, in row
    order."""
    n = value.shape[0]
    nchunks = offsets.shape[0] - 1
    while True:
        c = take(taken)
        if c >= nchunks:
            break
        lo, hi = chunk_bounds(n, nchunks, c)
        j = offsets[c]
        for i in range(lo, hi):
            k = codes[i]
            if counts[k] < SMALL:
                w = 1.0 if weights is None else weights[i]
                out_cell[j] = cell_of[k]
                out[j, 0] = w
                out[j, 1] = w * value[i]
                j += 1


def cell_sums(value, split, bins, edges, right, groups, n_groups, n_bins, weights):
    """Per (group, bin, split) code ``(rows (int64), [sum w, sum w v, sum w v^2])`` of the rows, the codes of the
    non-empty cells, and the small cells' rows ``(cell, w, w v)`` (cells numbered in code order among the
    non-empty ones). ``groups``: int32 codes; ``bins``: each row's bin, or None to bin ``value`` on the uniform
    ``edges`` inside the pass (``right``: the closed side). Chunked as
    :func:`calframe._kernels.accumulate.accumulate`: the same bits for any thread count; the rows of small cells
    are read in a second pass over the rows' cell codes, each chunk's to its own place."""
    size = n_groups * n_bins * 2
    part, out = tables(n_chunks(value.shape[0], size * 4 // 3 + 1), 4 * size)
    codes = np.empty(value.shape[0], dtype=np.int64 if size >= 2 ** 31 else np.int32)
    value, weights = A.real(value), A.real(weights)
    run_chunks(_cells_chunked, (A.codes(groups), A.codes(bins), value, A.label(np.asarray(split, dtype=np.int8)),
                                weights, A.real(edges), bool(right), int(n_bins), part, codes), value.shape[0])
    sums = in_chunk_order(part, out).reshape(size, 4)
    counts = sums[:, 0].astype(np.int64)
    present = np.flatnonzero(counts)
    cell_of = np.full(size, -1, dtype=np.int64)
    cell_of[present] = np.arange(present.size)
    small = np.flatnonzero((counts > 0) & (counts < SMALL))
    per_chunk = part[:, 4 * small].sum(axis=1).astype(np.int64) if small.size else np.zeros(part.shape[0], np.int64)
    offsets = np.concatenate([[0], np.cumsum(per_chunk)])
    few = int(offsets[-1])
    out_cell, rows = np.empty(few, dtype=np.int64), np.empty((few, 2))
    if few:
        run_chunks(_small_chunked, (A.frozen(codes), value, weights, A.frozen(counts), A.frozen(cell_of),
                                    A.frozen(offsets), out_cell, rows), value.shape[0])
    return counts, sums[:, 1:], present, (out_cell, rows[:, 0], rows[:, 1])
