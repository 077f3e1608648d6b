"""The smooth ECE (Błasiok & Nakkiran 2023) as relplot 1.0.3 computes it, from the rows' grids.

relplot's ``smECE(f, y)`` (``relplot/metrics.py``, ``relplot/kernels.py``), step by step (docs/spec.md,
"Smooth ECE"):

1. ``smooth_ece(f, y, s)``, the smooth ECE at bandwidth ``s``: the rows are spread on a grid of
   ``m = max(2000, round(20 / s)) // 2 + 1`` nodes ``j / (m - 1)`` by linear interpolation (a row at x gives
   its value to the two nodes around x, in proportion to the distance), once with the residuals ``f - y`` and
   once with 1; each grid is reflected at 0 and 1, convolved with the Gaussian
   ``exp(-(t - 1/2)^2 / (2 s^2)) / (sqrt(2 pi) s)`` sampled on the same nodes, and interpolated linearly at
   ``e = max(round(10 / s), 200)`` evaluation points ``linspace(0, 1, e)``: residuals ``a_j``, density ``b_j``.
   The value is ``sum_j |a_j| / sum_j (b_j + 1e-4)``.
2. ``smECE``: the bandwidth is the bisection's ``search_param``: ``s = 1`` if ``smooth_ece(1) > 1``, else ten
   halvings of [0, 1] keeping the upper end ``hi`` where ``s < 0.001 or s < smooth_ece(s)`` fails; the result
   is ``smooth_ece(hi)``.

How calframe computes it:

- The grids: one pass over the rows sums every group's 1001-node grid (the grid of every bandwidth >= 0.01, so
  of every trial of the bisection from 11/1024 up); a trial on a finer grid (s < 0.01, or a caller's ``sigma``)
  gets a pass on that grid for the groups that need it. More than :data:`GROUP_CHUNK` groups are taken in chunks
  of that many, one after the other (each group's bisection is its own), so the grids held at once are bounded
  whatever the number of groups (1e6 one-row groups held 1e6 x 1001 x 2 floats, 16 GB, at once).
- The smoothing: the reflected grid is the even periodic extension of the grid (period ``P = 2 (m - 1)``) and
  the kernel reaches less than a period, so the convolution is circular: the grid's real spectrum is its
  DCT-I (computed once per group), the kernel's is the FFT of its samples wrapped on the period (once per
  bandwidth), and a trial is one inverse FFT of their product per group. The density's sum is one dot
  product (``dens``: the adjoint of the smoothing applied to the interpolation weights).
- Few frequencies: the kernel is a Gaussian, whose spectrum is below 1e-16 of its peak past ``K ~ 2.7 / s``
  coefficients. ``sum_j |sum_{k < K} V_k B_kj|`` (``B``: the smoothing of the first ``K`` coefficients at the
  evaluation points) is a small product per group. Where the kernel's truncation at +-1/2 leaves the other
  coefficients below :data:`SPECTRUM_TOL` of the total (s up to ~0.06), it is the value: the dropped ones move a
  smooth ECE by at most about their share (each ``|V_k| <= 2 sum|r|``, and ``|r| <= b`` node by node).
- Bounds: elsewhere (wider kernels) it is the value within ``E = |r| . tail`` (``tail``: the adjoint of the
  smoothing with |kernel - its first K coefficients|), and ``|r| . dens`` (the smoothing of |r|: its weights are
  positive) bounds the value above. A bisection test these bounds decide by more than :data:`MARGIN` needs no
  FFT: most of them, on the benchmark's groups (1e7 rows x 1e3 groups).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from ._imports import sfft  # imported at first use

from ._imports import LazyModule

AK = LazyModule("calframe._kernels.accumulate")  # numba kernels: imported at first use
SK = LazyModule("calframe._kernels.smooth")

#: the bisection's lower limit: bandwidths below it count as "smooth_ece(s) > s" (relplot's ``eps``)
SIGMA_EPS = 0.001
#: halvings of the bisection (relplot's ``search_param(refine=10)``)
REFINE = 10
#: added to the density at each evaluation point (relplot's ``BaseKernelMixin.smooth(eps=0.0001)``)
DENSITY_EPS = 1e-4
#: the fewest evaluation points (relplot's ``config.smECE_mesh_pts``)
MESH = 200
#: the basis gives the value when the coefficients it leaves out sum to at most this fraction of the kernel's
#: total (a smooth ECE moves by at most about that: far below the 1e-9 of the tests)
SPECTRUM_TOL = 1e-13
#: bounds are widened by this much (far above the rounding of both the bounds and the FFT's value), so a test
#: they decide is the one the value would decide
MARGIN = 1e-12
#: a smoother has a basis when K x (evaluation points) is at most this many times P log2 P (the inverse FFT's
#: work)
FEW_COST = 1.0
#: the grids of one pass hold at most this many values (groups beyond it go to further passes)
GRID_BUDGET = 1 << 24


def grid_nodes(sigma: float) -> int:
    """Nodes of the grid the rows are spread on at bandwidth ``sigma`` (``GaussianKernel.apply``)."""
    return max(2000, round(20 / sigma)) // 2 + 1


#: the grid of every bandwidth >= 0.01 (all the bisection's trials from 11/1024 up)
COARSE_NODES = grid_nodes(1.0)
#: the groups whose grids are held at once (:meth:`Grids.smece` takes more in chunks of this many): their
#: 1001-node grids and spectra, about 200 MB. As many as one pass of the 1001-node grid holds (:func:`by_budget`),
#: so a chunk's first pass is the pass its groups had with all the others.
GROUP_CHUNK = GRID_BUDGET // (2 * COARSE_NODES)


def eval_points(sigma: float) -> int:
    """Evaluation points of ``smooth_ece`` at bandwidth ``sigma``."""
    return max(round(10 / sigma), MESH)


def kernel_values(m: int, sigma: float) -> np.ndarray:
    """The Gaussian on ``m`` nodes of [0, 1], centred at 1/2 (``GaussianKernel.kernel_ev``, same operations)."""
    t = np.linspace(0, 1, m)
    res = np.exp(-(t - 0.5) * (t - 0.5) / (2 * sigma**2))
    res /= np.sqrt(2 * np.pi) * sigma
    return res


# --------------------------------------------------------------------------- smoothing a grid


@dataclass(frozen=True, eq=False)
class Smoother:
    """Reflect, convolve, interpolate at one bandwidth, from the grids' spectra (:func:`spectra`): ``sum_j |a_j|``
    per grid; ``sum_j b_j`` as one dot product (the map is linear: ``dens`` is its adjoint applied to the
    interpolation weights)."""

    sigma: float
    m: int
    kernel_fft: np.ndarray  # the kernel's spectrum on the period 2 (m - 1): m coefficients
    inds: np.ndarray
    frac: np.ndarray
    dens: np.ndarray
    basis: np.ndarray | None = None  # (K, n_eval): the smoothing of the first K coefficients at the points
    exact: bool = False  # the basis alone gives the value (the other coefficients are below SPECTRUM_TOL)
    tail: np.ndarray | None = None  # the bound's adjoint with |kernel - its first K coefficients|

    @property
    def n_eval(self) -> int:
        return self.inds.shape[0]

    @property
    def period(self) -> int:
        return 2 * (self.m - 1)

    def smoothed(self, spectra: np.ndarray) -> np.ndarray:
        """The smoothed grids ``(G, m)`` from their spectra (relplot's reflect and convolve)."""
        return sfft.irfft(spectra * self.kernel_fft, self.period, axis=-1, workers=-1)[..., : self.m]

    def at_points(self, smoothed: np.ndarray) -> np.ndarray:
        """Linear interpolation at the evaluation points (relplot's ``interpolate``)."""
        return smoothed[..., self.inds] * (1 - self.frac) + smoothed[..., self.inds + 1] * self.frac

    def density(self, sums: np.ndarray, eps: float | np.ndarray = DENSITY_EPS) -> np.ndarray:
        """``sum_j (b_j + eps)`` from ``sum_i b_i dens_i`` (:func:`~calframe._kernels.smooth.grid_dots`); ``eps``
        is relplot's 1e-4 in the grids' weight units (:func:`density_eps`)."""
        return sums + self.n_eval * eps

    def values(self, grids: np.ndarray, spectra: np.ndarray, sel: np.ndarray,
               eps: float | np.ndarray = DENSITY_EPS) -> np.ndarray:
        """smooth_ece of the grids ``sel`` of ``grids`` (G, m, 2), the spectra (G, m) of their residuals given;
        ``eps``: the density's 1e-4 in the grids' weight units, one or one per group of ``sel``."""
        if self.exact:
            num = SK.abs_sums(spectra, sel, self.basis)
        else:
            full = sfft.irfft(spectra[sel] * self.kernel_fft, self.period, axis=-1, workers=-1)
            num = SK.abs_at_points(full, self.inds, self.frac)
        return num / self.density(SK.grid_dots(grids, sel, self.dens, None)[:, 0], eps)

    def bounds(self, grids: np.ndarray, spectra: np.ndarray, sel: np.ndarray,
               eps: float | np.ndarray = DENSITY_EPS) -> Bounds:
        """smooth_ece of the grids ``sel`` bounded without an FFT (a smoother with a basis): ``sum_j |a_j|`` is
        within ``E`` of the basis's ``A`` (``E``: the coefficients left out, bounded through ``|r|``), and at most
        ``sum_j (smoothed |r|)_j`` (the smoothing's weights are positive): one dot product each. Where that
        bound alone is below the bandwidth, ``A`` is not computed (the estimate is 0 within the bound)."""
        den, most, rest = SK.grid_dots(grids, sel, self.dens, self.tail).T
        den = self.density(den, eps)
        most /= den
        estimate, radius = np.zeros(sel.shape[0]), most.copy()
        need = most + MARGIN > self.sigma
        estimate[need] = SK.abs_sums(spectra, sel[need], self.basis) / den[need]
        radius[need] = rest[need] / den[need]
        return Bounds(estimate, radius, most)


@dataclass(frozen=True)
class Bounds:
    """smooth_ece is within ``radius`` of ``estimate``, and at most ``most`` (per group)."""

    estimate: np.ndarray
    radius: np.ndarray
    most: np.ndarray


def spectra(values: np.ndarray) -> np.ndarray:
    """The real spectra of the grids' reflections (last axis): their DCT-I, the FFT of the even extension."""
    return sfft.dct(values, type=1, axis=-1, workers=-1)


def interpolation(m: int, n_eval: int) -> tuple[np.ndarray, np.ndarray]:
    """(node index, fraction) of each evaluation point on the ``m``-node grid (relplot's ``interpolate``)."""
    t = np.linspace(0, 1, n_eval)
    bucket = 1 / (m - 1)
    inds = (t * (m - 1)).astype(int).clip(0, m - 2)
    return inds, (t - inds * bucket) / bucket


def _adjoint(kernel_fft: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The smoothing's adjoint (kernel spectrum ``kernel_fft`` on the period) applied to node weights ``weights``:
    ``sum_i (smoothed u)_i weights_i = u @ result`` for every grid ``u``."""
    m = weights.shape[0]
    period = 2 * (m - 1)
    z = sfft.irfft(sfft.rfft(weights, period) * np.conj(kernel_fft), period)  # the convolution's: a correlation
    out = z[:m].copy()
    out[1 : m - 1] += z[period - 1 : m - 1 : -1]  # the even extension's
    return out


@functools.lru_cache(maxsize=256)
def smoother(sigma: float) -> Smoother:
    """The smoother at ``sigma`` (cached: the bisection's bandwidths repeat across groups and calls).

    relplot's ``np.convolve(reflected, kernel, "valid")[m // 2 : m // 2 + m]`` gives node i
    ``sum_d v~[i - d] kernel[d + m // 2]`` (d from ``-(m // 2)`` to ``m - 1 - m // 2``; ``v~`` the reflection,
    the even extension of period P): a circular convolution with the kernel wrapped on the period.

    The basis: the first ``K`` coefficients, past which an unbounded Gaussian's spectrum is below 1e-16 of its
    peak, if a product with them costs less than an inverse FFT."""
    m = grid_nodes(sigma)
    period = 2 * (m - 1)
    wrapped = np.zeros(period)
    wrapped[(np.arange(m) - m // 2) % period] = kernel_values(m, sigma)
    ker = sfft.rfft(wrapped)
    inds, frac = interpolation(m, eval_points(sigma))
    at_nodes = np.bincount(inds, 1 - frac, minlength=m) + np.bincount(inds + 1, frac, minlength=m)
    sm = Smoother(sigma, m, ker, inds, frac, _adjoint(ker, at_nodes))
    n_k = min(m, math.ceil(math.sqrt(2 * math.log(1e16)) / (math.pi * sigma)))
    if n_k * sm.n_eval > FEW_COST * period * math.log2(period):
        return sm
    unit = np.zeros((n_k, m), dtype=complex)
    unit[np.arange(n_k), np.arange(n_k)] = 1.0
    basis = sm.at_points(sm.smoothed(unit))
    mag = np.abs(ker[n_k:]) * np.where(np.arange(n_k, m) == m - 1, 1.0, 2.0)  # the coefficients left out
    if mag.sum() <= SPECTRUM_TOL * abs(ker[0]):
        return replace(sm, basis=basis, exact=True)
    low = ker.copy()
    low[n_k:] = 0
    rest = np.abs(wrapped - sfft.irfft(low, period))
    return replace(sm, basis=basis, tail=_adjoint(sfft.rfft(rest), at_nodes))


# --------------------------------------------------------------------------- the bisection, all groups at once


def bisect(value: Callable[[np.ndarray, float], np.ndarray], bounds: Callable[[np.ndarray, float], Bounds | None],
           n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """relplot's ``search_param`` for every group at once: (smECE, bandwidth) per group. ``value(groups, s)``:
    smooth_ece of those groups at bandwidth ``s``; ``bounds(groups, s)``: :class:`Bounds` of it, or None.
    Groups at the same bandwidth are evaluated together. A test the bounds decide (by more than
    :data:`MARGIN`) needs no value; the bounds give the value where their radius is at most
    :data:`SPECTRUM_TOL`; the result is the value at the final bandwidth."""
    seen: dict[float, dict[int, float]] = {}

    def record(sel: np.ndarray, s: float, got: np.ndarray) -> None:
        seen.setdefault(s, {}).update(zip(sel.tolist(), got.tolist()))

    def holds(sig: np.ndarray) -> np.ndarray:
        """``s < eps or s < smooth_ece(s)`` per group (a group given s = 0 is not evaluated)."""
        ok = sig < SIGMA_EPS
        for s in np.unique(sig[~ok]).tolist():
            sel = np.flatnonzero(sig == s)
            b = bounds(sel, s)
            if b is not None:
                lo = b.estimate - b.radius - MARGIN
                hi = np.minimum(b.estimate + b.radius, b.most) + MARGIN
                tight = b.radius <= SPECTRUM_TOL  # the estimate is the value
                record(sel[tight], s, b.estimate[tight])
                ok[sel] = np.where(tight, s < b.estimate, s < lo)
                sel = sel[~tight & (lo <= s) & (s < hi)]  # undecided
            if sel.size:
                got = value(sel, s)
                record(sel, s, got)
                ok[sel] = s < got
        return ok

    start = np.ones(n_groups)
    end = np.zeros(n_groups)
    search = ~holds(start)  # where s = 1 holds, the bandwidth is 1
    for _ in range(REFINE):
        mid = (start + end) / 2
        ok = holds(np.where(search, mid, 0.0))
        end = np.where(search & ok, mid, end)
        start = np.where(search & ~ok, mid, start)
    out = np.empty(n_groups)
    for s in np.unique(start).tolist():
        sel = np.flatnonzero(start == s)
        known = seen.get(s, {})
        todo = np.array([g for g in sel.tolist() if g not in known], dtype=np.int64)
        if todo.size:
            record(todo, s, value(todo, s))
        out[sel] = [seen[s][g] for g in sel.tolist()]
    return out, start


def budget_parts(sel: np.ndarray, m: int) -> list[np.ndarray]:
    """The groups ``sel`` in parts whose ``m``-node grids hold at most :data:`GRID_BUDGET` values each."""
    batch = max(1, GRID_BUDGET // (2 * m))
    return [sel[b : b + batch] for b in range(0, sel.shape[0], batch)] or [sel]


def by_budget(source: Callable[[np.ndarray, int], np.ndarray], sel: np.ndarray, m: int) -> np.ndarray:
    """The ``m``-node grids ``(len(sel), m, 2)`` of groups ``sel`` from ``source(part, m)``, called on parts of at
    most :data:`GRID_BUDGET` values each (:func:`budget_parts`: one pass over the rows each)."""
    parts = budget_parts(sel, m)
    if len(parts) == 1:
        return source(sel, m)
    out = np.empty((sel.shape[0], m, 2))
    b = 0
    for part in parts:
        out[b : b + part.shape[0]] = source(part, m)
        b += part.shape[0]
    return out


def places(sel: np.ndarray, n_groups: int) -> np.ndarray:
    """Each of ``n_groups`` groups' place in ``sel`` (-1: not in it)."""
    place = np.full(n_groups, -1, dtype=np.int64)
    place[sel] = np.arange(sel.shape[0])
    return place


def node_grids(conf: np.ndarray, acc: np.ndarray, weights: np.ndarray | None, groups: np.ndarray | None,
               n_groups: int, sel: np.ndarray, m: int) -> np.ndarray:
    """The ``m``-node grids ``(len(sel), m, 2)`` (weights, residuals ``conf - acc``) of groups ``sel``: one pass
    over the rows per :data:`GRID_BUDGET` values."""

    def part_grids(part: np.ndarray, m: int) -> np.ndarray:
        slots = None
        if groups is not None:
            slots = np.full(n_groups, -1, dtype=np.int64)
            slots[part] = np.arange(part.shape[0])
        # partial tables within a third of accumulate's budget: at 1e7 rows x 1e3 groups 2 chunks took 0.10 s,
        # 4 (the budget's) 0.13 s, 8 0.17 s
        chunks = AK.n_chunks(conf.shape[0], 2 * m * part.shape[0])
        flat = SK.node_sums(conf, acc, weights, groups, slots, part.shape[0], m,
                            *AK.tables(chunks, 2 * m * part.shape[0]))
        return flat.reshape(part.shape[0], m, 2)

    return by_budget(part_grids, sel, m)


def density_eps(scale: float | np.ndarray = 1.0) -> float | np.ndarray:
    """relplot's density term ``1e-4`` in the units of weights divided by ``scale`` (``Scored.weight_scale``,
    one or one per group): the term is absolute in the caller's units (integer weights are repeated rows), and
    ``sum |c a_j| / sum (c b_j + 1e-4) = sum |a_j| / sum (b_j + 1e-4 / c)``. The grids then hold weights below
    2 per row, whose sums cannot overflow (weights up to 1.8e308). Where ``1e-4 / scale`` overflows (weights
    below about 1e-304) it is inf, and the figure 0, as it is to rounding in the caller's units."""
    with np.errstate(over="ignore"):
        return DENSITY_EPS / scale


class Grids:
    """smooth_ece of groups at any bandwidth, from their node grids: ``source(sel, m)`` gives the ``m``-node grids
    ``(len(sel), m, 2)`` (weights, residuals) of groups ``sel`` (an engine's pass over the rows, for those groups
    only), ``known`` the grids already summed (grid size -> a function giving the ``(len(sel), m, 2)`` grids of
    groups ``sel`` from the engine's sums, without a pass).

    Weights are divided by ``scale`` (the caller's weights are ``weights * scale``, ``scale`` one or one per
    group: ``Scored.weight_scale``); the density's ``1e-4`` is absolute in the caller's units (integer weights
    are repeated rows): :func:`density_eps`. Every group's 1001-node grid (every bandwidth >= 0.01) is summed at
    its first use; more than :data:`GROUP_CHUNK` groups are taken in chunks (:meth:`smece`)."""

    def __init__(self, source: Callable[[np.ndarray, int], np.ndarray], n_groups: int,
                 scale: float | np.ndarray = 1.0,
                 known: dict[int, Callable[[np.ndarray], np.ndarray]] | None = None) -> None:
        self.source, self.n_groups = source, n_groups
        self.known = dict(known or {})
        self.eps = density_eps(scale)

    @functools.cached_property
    def grids(self) -> np.ndarray:
        """(G, m, 2): every group's 1001-node grid."""
        return self.node_grids(np.arange(self.n_groups), COARSE_NODES)

    @functools.cached_property
    def spectra(self) -> np.ndarray:
        """(G, m): the 1001-node grids' spectra, which serve every bandwidth >= 0.01."""
        return spectra(self.grids[..., 1])

    def node_grids(self, sel: np.ndarray, m: int) -> np.ndarray:
        """The ``m``-node grids of groups ``sel``: known, or from the source."""
        if m in self.known:
            return self.known[m](sel)
        return self.source(sel, m)

    def eps_of(self, sel: np.ndarray) -> float | np.ndarray:
        """The density's 1e-4 in the grids' units for groups ``sel`` (:func:`density_eps`)."""
        return self.eps[sel] if isinstance(self.eps, np.ndarray) else self.eps

    def value(self, sel: np.ndarray, sigma: float) -> np.ndarray:
        """smooth_ece of groups ``sel`` at bandwidth ``sigma``: from every group's 1001-node grid, or (a finer
        grid) from a pass of their own."""
        sm = smoother(sigma)
        if sm.m == COARSE_NODES:
            return sm.values(self.grids, self.spectra, sel, self.eps_of(sel))
        grids = self.node_grids(sel, sm.m)
        return sm.values(grids, spectra(grids[..., 1]), np.arange(sel.shape[0]), self.eps_of(sel))

    def bounds(self, sel: np.ndarray, sigma: float) -> Bounds | None:
        """Bounds of smooth_ece of groups ``sel`` at ``sigma`` (:meth:`Smoother.bounds`), where they save an FFT."""
        sm = smoother(sigma)
        if sm.m != COARSE_NODES or sm.basis is None or sm.exact:
            return None
        return sm.bounds(self.grids, self.spectra, sel, self.eps_of(sel))

    def smece(self, sigma: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(smECE, bandwidth) per group: at ``sigma``, or the bisection's; in chunks of :data:`GROUP_CHUNK` groups
        (:meth:`chunk`), each group's bisection being its own, so the grids and spectra held at once are those of
        one chunk."""
        if self.n_groups <= GROUP_CHUNK:
            return self.chunk_smece(sigma)
        value, width = np.empty(self.n_groups), np.empty(self.n_groups)
        for lo in range(0, self.n_groups, GROUP_CHUNK):
            sel = np.arange(lo, min(lo + GROUP_CHUNK, self.n_groups))
            value[sel], width[sel] = self.chunk(sel).chunk_smece(sigma)
        return value, width

    def chunk(self, sel: np.ndarray) -> Grids:
        """Groups ``sel`` as :class:`Grids` of their own (its group i is group ``sel[i]``), their grids from this
        one's source and known sums."""

        def source(part: np.ndarray, m: int) -> np.ndarray:
            return self.source(sel[part], m)

        known = {m: functools.partial(_known_part, got, sel) for m, got in self.known.items()}
        out = Grids(source, sel.shape[0], known=known)
        out.eps = self.eps_of(sel)
        return out

    def chunk_smece(self, sigma: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(smECE, bandwidth) per group, all the groups at once."""
        if sigma is None:
            return bisect(self.value, self.bounds, self.n_groups)
        everyone = np.arange(self.n_groups)
        return self.value(everyone, float(sigma)), np.full(self.n_groups, float(sigma))


def _known_part(got: Callable[[np.ndarray], np.ndarray], sel: np.ndarray, part: np.ndarray) -> np.ndarray:
    """The known grids of groups ``sel[part]`` (:meth:`Grids.chunk`)."""
    return got(sel[part])


class Rows(Grids):
    """The lensed rows of one call in memory, spread on grids (:class:`Grids`) by the numba kernel.

    ``conf``, ``acc``: the lens's outputs (f and y of relplot); ``weights`` divided by ``scale``; ``groups``: the
    rows' group codes (None: one group)."""

    def __init__(self, conf: np.ndarray, acc: np.ndarray, weights: np.ndarray | None, groups: np.ndarray | None,
                 n_groups: int, scale: float | np.ndarray = 1.0) -> None:
        self.conf, self.acc, self.weights, self.groups = conf, acc, weights, groups
        super().__init__(self.rows_grids, n_groups, scale)

    def rows_grids(self, sel: np.ndarray, m: int) -> np.ndarray:
        """The ``m``-node grids of groups ``sel`` (:func:`node_grids`)."""
        return node_grids(self.conf, self.acc, self.weights, self.groups, self.n_groups, sel, m)


# --------------------------------------------------------------------------- the smoothed reliability curve


def curve(conf: np.ndarray, acc: np.ndarray, weights: np.ndarray | None, sigma: float,
          n_points: int = MESH, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """relplot's smoothed reliability curve at bandwidth ``sigma``: (t, mu, density) at ``linspace(0, 1, n_points)``.

    ``mu = smoothed(acc) / (smoothed(1) + 1e-4)`` (relplot's ``KernelSmoother`` with its reflected Gaussian kernel;
    its ``prepare_rel_diagram`` draws the mean of bootstrapped ones), ``density`` the smoothed weights (relplot's
    ``kde``: divided by the total weight). ``weights`` divided by ``scale``, as for :class:`Rows`."""
    sm = smoother(sigma)
    # the residual of conf - acc is acc: the outcome's grid
    grid = node_grids(conf, conf - acc, weights, None, 1, np.zeros(1, dtype=np.int64), sm.m)[0].T
    inds, frac = interpolation(sm.m, n_points)
    at = replace(sm, inds=inds, frac=frac)
    dens, ys = at.at_points(at.smoothed(spectra(grid)))
    return np.linspace(0, 1, n_points), ys / (dens + density_eps(scale)), dens / grid[0].sum()


def bootstrap_band(conf: np.ndarray, acc: np.ndarray, weights: np.ndarray | None, sigma: float, n_boot: int,
                   level: float, seed: int | None, n_points: int = MESH,
                   scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Pointwise percentile band of :func:`curve` over ``n_boot`` resamples of the rows (with replacement, as
    relplot's ``BaggingRegressor``; its band is the 95% one). ``weights`` divided by ``scale``, as for
    :class:`Rows`."""
    rng = np.random.default_rng(seed)
    n = conf.shape[0]
    draws = np.empty((n_boot, n_points))
    from ._progress import iterate

    for b in iterate(range(n_boot), "smooth band", unit="draw"):
        counts = np.bincount(rng.integers(0, n, n), minlength=n).astype(np.float64)
        draws[b] = curve(conf, acc, counts if weights is None else counts * weights, sigma, n_points, scale)[1]
    alpha = (1 - level) / 2
    lo, hi = np.quantile(draws, [alpha, 1 - alpha], axis=0)
    return lo, hi
