"""The fused binned pass: validate, lens, bin and accumulate binary rows in one read of each column.

No dataframe knowledge: plain arrays in, arrays out (the engine, calframe/engines/eager.py, decides when
it applies and falls back to the detailed checks of calframe._columns when a row is bad).

Determinism: as :func:`calframe._kernels.accumulate.accumulate`, rows are cut into a number of chunks
that depends on the sizes only (:func:`n_chunks`); each chunk sums its rows in order into its own
partial table and the tables are added in chunk order: the same bits for any thread count.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from . import arrays as A
from .accumulate import chunk_bounds, edge_bin, fast_bin, tables
from .accumulate import n_chunks as n_chunks_rows
from .chunks import ROWS_PER_THREAD, in_chunk_order, pass_threads, run_chunks, take  # noqa: F401 (re-exported)
from .prefetch import AHEAD, prefetch_row
from .raw import load_word

from .codes import CLASS0, CLASS1, TOP1  # noqa: E402  (lens codes of binned_pass)

#: a table of more cells than this (per chunk) does not stay in cache: the pass prefetches its cells
PREFETCH_CELLS = 1 << 15
#: the partial tables of :func:`binned_pass` together take at most this many bytes (at least two chunks): each
#: is fresh memory, faulted in a page at a time (32 tables of 1e3 groups x 15 bins were 12 MB, ~15% of the pass)
PARTIAL_BYTES = 1 << 21


def n_chunks(n_rows: int, n_cells: int) -> int:
    """Chunks of :func:`binned_pass`: accumulate.n_chunks, fewer where the tables pass PARTIAL_BYTES (sizes
    only, never the thread count), and from 4 up a multiple of 4, so 2 or 4 threads get equal shares (5 chunks
    of 1e3 groups x 15 bins ran as 3 + 2 on two threads: the pass took the time of 3 chunks of 5)."""
    k = min(n_chunks_rows(n_rows, n_cells), max(2, PARTIAL_BYTES // (24 * max(n_cells, 1))))
    return k - k % 4 if k >= 4 else min(k, 2)


@njit(inline="always")
def _lensed(x, a, lens):
    """(conf, acc) of a binary row (x in [0, 1], a 0 or 1): calframe.lenses.binary_rule, the same values.

    top1 without a branch on x > 0.5 (a coin flip per row, mispredicted half the time: it doubled the
    pass): max(x, 1 - x) is x where x > 0.5 (1 - x is exact there and below x) and 1 - x elsewhere."""
    if lens == CLASS1:
        return x, a
    if lens == CLASS0:
        return 1.0 - x, 1 - a
    return max(x, 1.0 - x), a ^ np.int64(x <= 0.5)


def weight_tops(keys, lo, w, n_slots, nchunks):
    """(largest weight of each slot, number of weights that are not finite and >= 0): the pre-pass of a
    weighted :func:`binned_pass` (the weights are scaled per group by their largest, as
    calframe._columns.scale_weights)."""
    part = np.zeros((nchunks, n_slots))
    bad = np.zeros(nchunks, dtype=np.int64)
    run_chunks(_weight_tops, (keys, lo, w, part, bad), w.shape[0])
    return np.maximum.reduce(part, axis=0), int(bad.sum())


@njit(cache=True, nogil=True)
def _weight_tops(keys, lo, w, part, bad, taken):
    """:func:`weight_tops`, one thread's share of chunks (each chunk's largest weights into its row of
    ``part``)."""
    n = w.shape[0]
    nchunks = part.shape[0]
    while True:
        c = take(taken)
        if c >= nchunks:
            break
        top = part[c]
        nb = 0
        lo_i, hi_i = chunk_bounds(n, nchunks, c)
        for i in range(lo_i, hi_i):
            v = w[i]
            if v >= 0.0 and v <= 1.7976931348623157e308:
                s = 0 if keys is None else np.int64(keys[i]) - lo
                if v > top[s]:
                    top[s] = v
            else:
                nb += 1
        bad[c] = nb


#: an unweighted chunk counts a cell's rows and its sum of acc in one int64 (:func:`_chunk`): rows << ROWS_AT | acc
ROWS_AT = np.int64(32)
_ACC = np.int64((1 << 32) - 1)
#: the packed counts hold chunks of fewer rows than this: binned_pass packs only arrays shorter than it
PACKED_ROWS = 1 << 32


@njit(inline="always")
def _chunk(p, y, one, zero2, keys, lo, w, w_mult, edges, n_bins, tab, cnt, lo_i, hi_i, far, right, lens):
    """Rows ``lo_i:hi_i`` into the chunk's table ``tab`` and row counts ``cnt``: the number of bad rows. Inlined
    with ``lens`` a constant (:func:`_make_pass`), so it is not tested per row.

    A label is 0 where it equals 0 or ``zero2``, 1 where it equals ``one``, bad otherwise: integer labels pass
    (1, 0), float64 labels their bit patterns as int64 (those of 1.0 and -0.0; :func:`label_words`).

    Weighted: ``tab`` is (n_cells, 3) sums ``[w, w conf, w acc]``. Unweighted: (n_cells, 2), cell k's rows and
    sum of acc (0 or 1 per row) in one int64 (rows << ROWS_AT | acc, exact while the chunk has fewer than
    2^32 rows), then the sum of conf: two stores per row instead of three (15% of the 1e3-group pass);
    :func:`_unpack` brings it to the weighted layout, the same values as float sums of 1 and acc."""
    nb = 0
    packed = tab.view(np.int64)
    for i in range(lo_i, hi_i):
        if far and i + AHEAD < hi_i:  # the table is out of cache: ask for the cell of a row ahead
            j = i + AHEAD
            xj = np.float64(p[j])
            kj = int(min(xj, 1.0) * n_bins) if xj > 0.0 else 0
            sj = 0 if keys is None else np.int64(keys[j]) - lo
            prefetch_row(tab, sj * n_bins + min(kj, n_bins - 1))
        x = np.float64(p[i])
        a = np.int64(y[i])
        hit = a == one
        if not (x >= 0.0 and x <= 1.0 and (hit or a == 0 or a == zero2)):
            nb += 1
            continue
        conf, acc = _lensed(x, np.int64(hit), lens)
        s = 0 if keys is None else np.int64(keys[i]) - lo  # no array to an inlined call per row
        b = fast_bin(conf, n_bins)  # accumulate.uniform_bin, its edge walk called out of line
        k = s * n_bins + (b if b >= 0 else edge_bin(conf, edges, n_bins, right))
        if w is None:
            packed[k, 0] += (np.int64(1) << ROWS_AT) | acc
            tab[k, 1] += conf
        else:
            wi = w[i] * w_mult[s]
            tab[k, 0] += wi
            tab[k, 1] += wi * conf
            tab[k, 2] += wi * np.float64(acc)
            cnt[s] += 1
    return nb


@njit(inline="always")
def _unpack(flat, n_cells):
    """The packed table of :func:`_chunk` (the first 2 n_cells values of ``flat``) spread to n_cells x 3 float
    sums [rows, conf, acc], in place, from the last cell down (cell k is read before cells k' >= 2k/3 are
    written)."""
    packed = flat.view(np.int64)
    for k in range(n_cells - 1, -1, -1):
        v = packed[2 * k]
        conf = flat[2 * k + 1]
        flat[3 * k] = np.float64(v >> ROWS_AT)
        flat[3 * k + 1] = conf
        flat[3 * k + 2] = np.float64(v & _ACC)


def _make_pass(lens: int):
    """The row pass of one lens, a compile-time constant (testing it per row cost a third of the ungrouped
    pass). One kernel per lens, so a call compiles only the lens it uses. The closed side is an argument: the
    bin reads it only next to an edge (:func:`calframe._kernels.accumulate.uniform_bin`).

    The kernel is one thread's share: it takes the next chunk (:func:`calframe._kernels.chunks.take`) until
    none is left, and :func:`binned_pass` runs it on several threads (:func:`calframe._jit.on_threads`). A plain
    ``nogil`` kernel compiles in a third of the time numba's ``parallel=True`` took for the same loop
    (docs/benchmarks.md, "Compile time")."""

    def pass_(p, y, one, zero2, keys, lo, w, w_mult, edges, right, n_bins, part, counts, bad, taken):
        n = p.shape[0]
        n_cells = part.shape[1] // 3
        nchunks = part.shape[0]
        far = n_cells > PREFETCH_CELLS
        while True:
            c = take(taken)
            if c >= nchunks:
                break
            tab = part[c].reshape((n_cells, 3)) if w is not None else part[c][: 2 * n_cells].reshape((n_cells, 2))
            lo_i, hi_i = chunk_bounds(n, nchunks, c)
            bad[c] = _chunk(p, y, one, zero2, keys, lo, w, w_mult, edges, n_bins, tab, counts[c], lo_i, hi_i,
                            far, right, lens)
            if w is None:
                _unpack(part[c], n_cells)

    # One name per lens: numba's cache index is keyed on the qualname, and three closures with one name would
    # share an index and differ only by the captured constant (calframe._kernel_cache).
    pass_.__name__ = pass_.__qualname__ = f"binned_pass_{_LENS_NAMES[lens]}"
    return njit(cache=True, nogil=True)(pass_)


@njit(cache=True)
def label_bytes(y):
    """int32 labels as int8: 0 and 1 kept, every other value 2, which the pass counts as bad, as it counted the
    original. (One thread: a memory-bound copy, rare, int32 labels only.)"""
    out = np.empty(y.shape[0], dtype=np.int8)
    for i in range(y.shape[0]):
        v = y[i]
        out[i] = 0 if v == 0.0 else 1 if v == 1.0 else 2
    return out


_LENS_NAMES = {CLASS1: "class1", CLASS0: "class0", TOP1: "top1"}
_PASSES = {lens: _make_pass(lens) for lens in (CLASS1, CLASS0, TOP1)}


#: the bit patterns of the float64 labels 1.0 and -0.0 as int64: how the pass reads float64 labels (label_words)
F64_ONE = np.int64(0x3FF0000000000000)
F64_MINUS_ZERO = np.int64(-(1 << 63))
def label_words(y: np.ndarray) -> tuple[np.ndarray, np.int64, np.int64]:
    """(labels as the pass reads them, the word of 1, a second word of 0): int8 and int64 kept (1, 0); float64
    viewed as int64 bit patterns, never copied (1.0, -0.0: 0.0 is the word 0, NaN and every other value none of
    them, so bad as before); int32 turned into bytes (:func:`label_bytes`).

    >>> y, one, zero2 = label_words(np.array([0.0, 1.0, -0.0, 0.5]))
    >>> [int(v == one) - int(v != one and v != 0 and v != zero2) for v in y]  # 1, 0 or -1 (bad)
    [0, 1, 0, -1]
    """
    y = A.label(y)
    if y.dtype == np.float64:  # docs/benchmarks.md, "One call": the conversion cost more than reading 8 bytes
        return A.frozen(y.view(np.int64)), F64_ONE, F64_MINUS_ZERO
    if y.dtype != np.int8 and y.dtype != np.int64:  # int32: bytes first
        y = A.frozen(label_bytes(y))
    return y, np.int64(1), np.int64(0)


def binned_pass(p, y, keys, lo, w, w_mult, edges, right, lens, n_bins, n_slots, nchunks):
    """Per (slot, bin) sums ``[sum w, sum w*conf, sum w*acc]`` (flat, n_slots * n_bins * 3), rows per slot
    (weighted only; else empty: the weight sums count the rows), and the number of bad rows.

    ``p``: positive-class probabilities (any real dtype), ``y``: 0/1 labels (int, float or bool); a row
    with p outside [0, 1] (NaN included) or a label other than 0 / 1 is bad and not summed (the caller
    raises the detailed error). ``keys``: None (one slot) or integers, row i in slot ``keys[i] - lo``.
    ``w``: None (all 1) or float64 weights (checked by :func:`weight_tops`), multiplied by
    ``w_mult[slot]`` (an array even without weights). ``lens``: CLASS1, CLASS0 or TOP1. Bins:
    ``uniform_bin`` on the uniform ``edges``.

    The columns reach the kernel in a few dtypes only (:func:`calframe._kernels.arrays.real`, ``label``,
    ``codes``), read-only, so a fresh install compiles few versions of it; labels as int8 or int64 words
    (:func:`label_words`: float64 labels are read as their bit patterns, int32 turned into bytes).

    The pass runs on :func:`pass_threads` threads (:func:`calframe._kernels.chunks.run_chunks`: Python's threads running a
    ``nogil`` kernel, not numba's ``parallel=True``, which compiled three times slower), each taking the next
    chunk as it is free (an atomic counter, :func:`calframe._kernels.chunks.take`): a thread that the shared
    machine holds back takes fewer chunks instead of holding up the pass (a static schedule gave half the chunks
    to each; docs/benchmarks.md, "One call"). Neither changes the chunks or the order of their sums (:func:`in_chunk_order`):
    the same bits.
    """
    nchunks = max(nchunks, -(-p.shape[0] // (PACKED_ROWS - 1)))  # chunks of fewer than 2^32 rows (_chunk)
    part, out = tables(nchunks, 3 * n_slots * n_bins)  # numpy's allocation (accumulate.tables says why)
    counts = np.zeros((nchunks, n_slots if w is not None else 0), dtype=np.int64)
    bad = np.zeros(nchunks, dtype=np.int64)
    y, one, zero2 = label_words(y)
    run_chunks(_PASSES[int(lens)], (A.real(p), y, one, zero2, A.codes(keys), lo, A.real(w), A.real(w_mult),
                                    A.real(edges), bool(right), n_bins, part, counts, bad), p.shape[0])
    return in_chunk_order(part, out), in_chunk_order(counts), int(bad.sum())


@njit(cache=True)
def first_rows(keys, lo, n_slots, n_present):
    """The first row of each slot (row i in slot ``keys[i] - lo``; -1: no row), reading rows until
    ``n_present`` slots have one (the slots the pass found rows in): a key table's rows for keys the pass
    took as slots (a Categorical's physical codes), usually within the first few thousand rows."""
    out = np.full(n_slots, -1, dtype=np.int64)
    found = 0
    for i in range(keys.shape[0]):
        s = np.int64(keys[i]) - lo
        if out[s] < 0:
            out[s] = i
            found += 1
            if found == n_present:
                break
    return out


# --------------------------------------------------------------------------- string keys

_LOW32 = np.uint64(0xFFFFFFFF)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


@njit(inline="always")
def _byte_mask(nbytes):
    """The low ``nbytes`` (0..8) bytes of a uint64."""
    if nbytes >= 8:
        return _ALL
    return (np.uint64(1) << np.uint64(8 * nbytes)) - np.uint64(1)


@njit(inline="always")
def _inline_masked(a0, a1, ln):
    """The view words (a0, a1) of a string of ``ln`` <= 12 bytes with the bytes past its end cleared."""
    m0 = (_byte_mask(min(ln, 4)) << np.uint64(32)) | _LOW32
    return a0 & m0, a1 & _byte_mask(max(ln - 4, 0))


@njit(inline="always")
def _same(views, addrs, valid, i, j):
    """Whether rows i and j of an Arrow string_view column hold the same string (or are both null).

    A view is two uint64 words: length (low 32 bits) and the first 4 bytes; then the next 8 bytes of a
    string of at most 12 bytes (inline), else the data buffer index and offset (``addrs``: the data
    buffers' addresses). Bytes past the end of an inline string are masked out; a longer string's bytes
    past its first 4 are compared 8 at a time in place (:func:`calframe._kernels.raw.load_word`), the
    last word ending at the string's end."""
    if valid is not None:
        if not (valid[i] and valid[j]):
            return valid[i] == valid[j]
    a0, b0 = views[2 * i], views[2 * j]
    ln = np.int64(a0 & _LOW32)
    if ln != np.int64(b0 & _LOW32):
        return False
    a1, b1 = views[2 * i + 1], views[2 * j + 1]
    if ln <= 12:
        wa0, wa1 = _inline_masked(a0, a1, ln)
        wb0, wb1 = _inline_masked(b0, b1, ln)
        return wa0 == wb0 and wa1 == wb1
    if a0 != b0:  # the length and the first 4 bytes
        return False
    pi = addrs[np.int64(a1 & _LOW32)] + np.int64(a1 >> np.uint64(32))
    pj = addrs[np.int64(b1 & _LOW32)] + np.int64(b1 >> np.uint64(32))
    if pi == pj:  # the same bytes
        return True
    t = 4
    while t + 8 <= ln:
        if load_word(pi + t) != load_word(pj + t):
            return False
        t += 8
    return t == ln or load_word(pi + ln - 8) == load_word(pj + ln - 8)  # ln > 12: the word starts past byte 4


@njit(inline="always")
def _home(h, bits):
    """The first slot of hash h in a table of 2^bits slots (Fibonacci hashing: Polars' hash mixed again)."""
    return np.int64((h * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - bits))


@njit(inline="always")
def _new_code(tab, k, s0, s1, reps, lo, m, i, out, t):
    """Slot k of a code table takes the words (s0, s1); row i (position t) gets the new code m, whose first
    row it is: returns m + 1."""
    tab[2 * k] = s0
    tab[2 * k + 1] = s1
    reps[lo + m] = i
    out[t] = m
    return m + 1


@njit(cache=True)
def _hashed_fill(views, addrs, valid, hashes, tab, bits, start, hi, out, reps, lo, m):
    """Rows ``start:hi`` into ``tab`` until it is an eighth full: (the next row, the number of codes). A slot is a string's code + 1 (0: empty) and its hash (``hashes[i]``); a row
    whose hash matches is compared with the code's first row (:func:`_same`)."""
    mask = (1 << bits) - 1
    for t in range(start, hi):
        i = t
        h = hashes[i]
        k = _home(h, bits)
        while True:
            c = np.int64(tab[2 * k]) - 1
            if c < 0:
                m = _new_code(tab, k, np.uint64(m + 1), h, reps, lo, m, i, out, t)
                if 8 * m > mask + 1:
                    return t + 1, m
                break
            if tab[2 * k + 1] == h and _same(views, addrs, valid, i, reps[lo + c]):
                out[t] = c
                break
            k = (k + 1) & mask
    return hi, m


# --------------------------------------------------------------------------- the inline path
# every string of at most 12 bytes, which Arrow keeps inside its view

#: a view's first word: the length in its low 32 bits (at most 12 here, so bits 4..31 are 0), then 4 bytes
_CODE = np.uint64(0xFFFFFFF0)  # bits 4..31: where a table slot keeps its code + 1
_KEY0 = ~_CODE
_NULL0 = np.uint64(0xF)  # the first word of a null row: length 15, no inline string's
_LONG = -1  # _inline_fill's (and _lookup's) answer on meeting a string of more than 12 bytes
#: the inline path numbers at most this many rows, so a code + 1 fits the 28 bits of _CODE
INLINE_ROWS = (1 << 28) - 2


@njit(inline="always")
def _inline_words(views, valid, i):
    """(the view words of row i, bytes past the string's end cleared; whether it is longer than 12 bytes).
    A null row is (_NULL0, 0)."""
    if valid is not None and not valid[i]:
        return _NULL0, np.uint64(0), False
    a0 = views[2 * i]
    ln = np.int64(a0 & _LOW32)
    w0, w1 = _inline_masked(a0, views[2 * i + 1], ln)
    return w0, w1, ln > 12


@njit(inline="always")
def _inline_home(w0, w1, bits):
    """The first slot of words (w0, w1) in a table of 2^bits slots (both words multiplied, folded, mixed)."""
    h = w0 * np.uint64(0x9E3779B97F4A7C15) ^ w1 * np.uint64(0xC2B2AE3D27D4EB4F)
    h ^= h >> np.uint64(31)
    return np.int64((h * np.uint64(0xBF58476D1CE4E5B9)) >> np.uint64(64 - bits))


@njit(cache=True)
def _inline_fill(views, valid, tab, bits, start, hi, out, reps, lo, m):
    """Rows ``start:hi`` into ``tab`` until it is an eighth full: (the next row
    (``hi``: all done; _LONG: a string of more than 12 bytes), the number of codes).

    A slot is two words: the row's words with its code + 1 in the spare length bits (0: empty), and the
    second word. The first probe is the common case and tested alone (one predictable branch per row)."""
    mask = (1 << bits) - 1
    for t in range(start, hi):
        i = t
        w0, w1, long = _inline_words(views, valid, i)
        if long:
            return _LONG, m
        k = _inline_home(w0, w1, bits)
        s0 = tab[2 * k]
        if s0 != 0 and (s0 & _KEY0) == w0 and tab[2 * k + 1] == w1:
            out[t] = np.int32((s0 & _CODE) >> np.uint64(4)) - 1
            continue
        while True:
            s0 = tab[2 * k]
            if s0 == 0:
                m = _new_code(tab, k, w0 | (np.uint64(m + 1) << np.uint64(4)), w1, reps, lo, m, i, out, t)
                if 8 * m > mask + 1:
                    return t + 1, m
                break
            if (s0 & _KEY0) == w0 and tab[2 * k + 1] == w1:
                out[t] = np.int32((s0 & _CODE) >> np.uint64(4)) - 1
                break
            k = (k + 1) & mask
    return hi, m


@njit(cache=True)
def _grow(old, bits, inline):
    """The slots of ``old`` (:func:`_inline_fill`'s or :func:`_hashed_fill`'s table: a slot's first word is 0
    where it is empty) in a table of 2^bits slots."""
    mask = (1 << bits) - 1
    tab = np.zeros(2 << bits, dtype=np.uint64)
    for j in range(old.shape[0] // 2):
        s0, s1 = old[2 * j], old[2 * j + 1]
        if s0 != 0:
            k = _inline_home(s0 & _KEY0, s1, bits) if inline else _home(s1, bits)
            while tab[2 * k] != 0:
                k = (k + 1) & mask
            tab[2 * k] = s0
            tab[2 * k + 1] = s1
    return tab


@njit(cache=True)
def _lookup(views, addrs, valid, hashes, lo, hi, out, reps):
    """Codes (0, 1, ... in order of first appearance) of rows ``lo:hi`` into ``out[lo:hi]`` and their first
    rows into ``reps[lo:]``: returns the number of codes. One
    open-addressing table, doubled past an eighth full, filled with the table fixed inside the loop (a
    table reassigned inside it cost ~40% per row). ``hashes`` None: the inline path (:func:`_inline_fill`),
    which returns _LONG where a string is longer than 12 bytes; else :func:`_hashed_fill`."""
    bits = 11
    tab = np.zeros(2 << bits, dtype=np.uint64)
    m = 0
    t = lo
    while True:
        if hashes is None:
            t, m = _inline_fill(views, valid, tab, bits, t, hi, out, reps, lo, m)
        else:
            t, m = _hashed_fill(views, addrs, valid, hashes, tab, bits, t, hi, out, reps, lo, m)
        if t == _LONG:
            return _LONG
        if t >= hi:
            return m
        bits += 1
        tab = _grow(tab, bits, hashes is None)


def _readonly(a):
    """``a`` as a read-only view: one compiled variant for Arrow's read-only buffers and computed arrays."""
    v = a.view()
    v.flags.writeable = False
    return v


def string_codes(views, addrs, valid, hashes, nchunks, codes):
    """(int32 code of each row, first row of each code): the codes of a string_view column, numbered in order
    of first appearance (so the same for any chunk and thread count).

    Each chunk of rows numbers its own strings, then the chunks' first rows are numbered in chunk order
    and each row's chunk code is mapped to that number, in place (fresh memory costs a page fault per 4 kB
    here). ``views``: the column's views as uint64 pairs; ``addrs``: its data buffers' addresses (int64; the
    caller keeps them alive). ``hashes``: Polars' ``Series.hash`` (uint64), used to place strings in the
    tables only; strings are compared in full (:func:`_same`). ``hashes`` None: the inline path (:func:`_inline_fill`,
    at most INLINE_ROWS rows), which answers two empty arrays where a string is longer than 12 bytes.
    ``codes``: the int32 array of n values to fill, allocated by numpy, which asks the OS for huge pages for
    large arrays (numba's own np.empty does not: 40 MB of codes took 9.8K page faults, ~30 ms of system
    time per call at 1e7 rows, against ~600 for numpy's)."""
    # fewer compiled variants (issue 31: the kernels below compiled up to 16 of them, ~2 s each): every input
    # array is passed read-only (numba types read-only and writable arrays apart), and the chunks' first rows
    # are numbered on their gathered views rather than through an index array of rows
    views, addrs, valid, hashes = (None if a is None else _readonly(a) for a in (views, addrs, valid, hashes))
    n = views.shape[0] // 2
    step = (n + nchunks - 1) // nchunks
    reps = np.empty(n, dtype=np.int64)
    counts = np.zeros(nchunks, dtype=np.int64)
    run_chunks(_chunk_codes, (views, addrs, valid, hashes, step, codes, reps, counts), n)
    if (counts < 0).any():
        return codes[:0], np.empty(0, dtype=np.int64)
    # the chunks' first rows, in chunk order, numbered once more: a chunk code -> the global code
    firsts = np.concatenate([reps[c * step : c * step + counts[c]] for c in range(nchunks)])
    merged = np.empty(firsts.shape[0], dtype=np.int32)
    g_reps = np.empty(firsts.shape[0], dtype=np.int64)
    first_views = _readonly(views.reshape(-1, 2)[firsts].reshape(-1))  # long strings' bytes stay where they are
    n_codes = _lookup(first_views, addrs, None if valid is None else _readonly(valid[firsts]),
                      None if hashes is None else _readonly(hashes[firsts]), 0, firsts.shape[0], merged, g_reps)
    bases = np.concatenate([[0], np.cumsum(counts)[:-1]])
    run_chunks(_global_codes, (codes, merged, bases, step), n)
    return codes, firsts[g_reps[:n_codes]]


@njit(cache=True, nogil=True)
def _chunk_codes(views, addrs, valid, hashes, step, codes, reps, counts, taken):
    """:func:`string_codes`' first step, one thread's share of chunks: each chunk numbers its own strings
    (``counts[c]``: how many, -1 where the inline path met a long string)."""
    n = views.shape[0] // 2
    while True:
        c = take(taken)
        if c >= counts.shape[0]:
            break
        counts[c] = _lookup(views, addrs, valid, hashes, c * step, min(n, (c + 1) * step), codes, reps)


@njit(cache=True, nogil=True)
def _global_codes(codes, merged, bases, step, taken):
    """:func:`string_codes`' last step, one thread's share of chunks: each row's chunk code mapped to the global
    code, in place (the first chunk's codes are already the global ones)."""
    n = codes.shape[0]
    while True:
        c = take(taken)
        if c >= bases.shape[0]:
            break
        if c > 0:
            base = bases[c]
            for i in range(c * step, min(n, (c + 1) * step)):
                codes[i] = merged[base + codes[i]]
