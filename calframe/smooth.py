"""The smooth ECE (Błasiok & Nakkiran 2023) as relplot 1.0.3 computes it, from per (group, cell) sums.

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

Both grids are linear in the rows, so they come from sums. The rows are summed once per (group, cell) of a
partition of [0, 1] whose nodes include every node of every grid the bisection can ask for (its bandwidths are
k / 1024: 1001 nodes for k >= 11, nine finer grids below): within a cell, each grid's hat functions are
linear in x, so ``[sum w, sum w d, sum w r, sum w r d]`` (d = x - the cell's left node) give every grid exactly
(up to rounding). Without groups the rows are summed on that fine partition; with groups on the 1001-node grid,
and the rows of a group whose bisection goes below 11/1024 again on the fine one. A caller's fixed bandwidth
whose grid is none of these gets a pass on its own grid. Each trial then costs two
FFTs of a few thousand points per group, not a pass over the rows.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import scipy.fft as sfft

from ._kernels import accumulate as AK
from ._kernels import smooth as SK

#: the bisection's lower limit: bandwidths below it count as "smooth_ece(s) > s" (relplot's ``eps``)
SIGMA_EPS = 0.001
#: halvings of the bisection (relplot's ``search_param(refine=10)``)
REFINE = 10
#: added to the density at each evaluation point (relplot's ``BaseKernelMixin.smooth(eps=0.0001)``)
DENSITY_EPS = 1e-4
#: the fewest evaluation points (relplot's ``config.smECE_mesh_pts``)
MESH = 200
#: rows go to fine-partition tables in batches of this many groups (a table is ~0.45 MB per group)
FINE_GROUPS = 64


def grid_nodes(sigma: float) -> int:
    """Nodes of the grid the rows are spread on at bandwidth ``sigma`` (``GaussianKernel.apply``)."""
    return max(2000, round(20 / sigma)) // 2 + 1


def eval_points(sigma: float) -> int:
    """Evaluation points of ``smooth_ece`` at bandwidth ``sigma``."""
    return max(round(10 / sigma), MESH)


def kernel_values(m: int, sigma: float) -> np.ndarray:
    """The Gaussian on ``m`` nodes of [0, 1], centred at 1/2 (``GaussianKernel.kernel_ev``, same operations)."""
    t = np.linspace(0, 1, m)
    res = np.exp(-(t - 0.5) * (t - 0.5) / (2 * sigma**2))
    res /= np.sqrt(2 * np.pi) * sigma
    return res


# --------------------------------------------------------------------------- partitions of [0, 1]


@dataclass(frozen=True, eq=False)  # hashed by identity (the partitions are cached)
class Partition:
    """Cells ``[nodes[c], nodes[c + 1])`` and a lookup table of uniform slots (``cell_moments``)."""

    nodes: np.ndarray
    lookup: np.ndarray

    @property
    def n_cells(self) -> int:
        return self.nodes.shape[0] - 1


def _partition(nodes: np.ndarray, slots: int) -> Partition:
    lookup = (np.searchsorted(nodes, np.arange(slots + 1) / slots, side="right") - 1).clip(0, nodes.shape[0] - 2)
    return Partition(nodes, lookup.astype(np.int64))


#: the bandwidths below 11/1024 the bisection can try (k / 1024, k >= 2) use grids finer than 1001 nodes
FINE_SIGMAS = tuple(k / 1024 for k in range(2, 11))
COARSE_NODES = grid_nodes(11 / 1024)


#: the grids the fine partition holds
FINE_GRIDS = frozenset({COARSE_NODES} | {grid_nodes(s) for s in FINE_SIGMAS})


@functools.lru_cache(maxsize=8)
def uniform_partition(m: int) -> Partition:
    """The intervals of the ``m``-node grid (1001 nodes: every bandwidth >= 11/1024)."""
    return _partition(np.arange(m) / (m - 1), 4 * m)


@functools.cache
def fine_partition() -> Partition:
    """The intervals between the nodes of every grid the bisection can use (:data:`FINE_GRIDS`)."""
    nodes = np.unique(np.concatenate([np.arange(m) / (m - 1) for m in FINE_GRIDS]))
    return _partition(nodes, 1 << 16)


@functools.cache
def _placement(part: Partition, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Each cell's interval of the ``m``-node grid and its left node's place in it (``cells_to_grid``)."""
    nodes = part.nodes
    s = m - 1
    mid = (nodes[:-1] + nodes[1:]) / 2
    k = np.minimum(np.floor(mid * s).astype(np.int64), m - 2)
    return k, nodes[:-1] * s - k


def moments(conf: np.ndarray, acc: np.ndarray, weights: np.ndarray | None, part: Partition,
            groups: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Per (group, cell) moments ``(G, n_cells, 4)``: of all rows (G = 1), or of the groups ``which`` of
    ``groups = (order, starts, which)`` (``accumulate.group_order``)."""
    if groups is None:
        flat = SK.cell_moments(conf, acc, weights, part.nodes, part.lookup,
                               AK.n_chunks(conf.shape[0], part.n_cells * SK.N_MOMENTS // 3))
    else:
        flat = SK.group_cell_moments(conf, acc, weights, *groups, part.nodes, part.lookup)
    return flat.reshape(-1, part.n_cells, SK.N_MOMENTS)


def grids(table: np.ndarray, part: Partition, m: int) -> np.ndarray:
    """The ``m``-node grids ``(G, 2, m)`` (weights, residuals) from cell moments."""
    k, a0 = _placement(part, m)
    return SK.cells_to_grid(table, k, a0, float(m - 1), m)


# --------------------------------------------------------------------------- smoothing a grid


@dataclass(frozen=True, eq=False)
class Smoother:
    """Reflect, convolve, interpolate at one bandwidth: ``sum_j |a_j|`` by FFT per grid, ``sum_j b_j`` as one
    dot product (the map is linear: ``dens`` is its adjoint applied to the interpolation weights)."""

    sigma: float
    m: int
    n_fft: int
    kernel_fft: np.ndarray
    inds: np.ndarray
    frac: np.ndarray
    dens: np.ndarray

    @property
    def n_eval(self) -> int:
        return self.inds.shape[0]

    def smoothed(self, spectra: np.ndarray) -> np.ndarray:
        """The smoothed grids ``(G, m)`` from the spectra of their reflections (:func:`spectra`)."""
        full = sfft.irfft(spectra * self.kernel_fft, self.n_fft, axis=-1)
        lo = self.m - 1 + self.m // 2  # np.convolve(..., "valid")[m // 2 : m // 2 + m]
        return full[..., lo : lo + self.m]

    def at_points(self, smoothed: np.ndarray) -> np.ndarray:
        """Linear interpolation at the evaluation points (relplot's ``interpolate``)."""
        return smoothed[..., self.inds] * (1 - self.frac) + smoothed[..., self.inds + 1] * self.frac

    def values(self, grid: np.ndarray, spectra: np.ndarray) -> np.ndarray:
        """smooth_ece of each grid ``(G, 2, m)`` (the spectra of their residual rows given)."""
        num = np.abs(self.at_points(self.smoothed(spectra))).sum(axis=-1)
        return num / (grid[:, 0] @ self.dens + self.n_eval * DENSITY_EPS)


def reflection(m: int) -> np.ndarray:
    """Indices of ``concatenate([flip(v)[:-1], v, flip(v)[1:]])`` in ``v`` (``ReflectedGaussianKernel``)."""
    return np.concatenate([np.arange(m - 1, 0, -1), np.arange(m), np.arange(m - 2, -1, -1)])


def spectra(values: np.ndarray, m: int) -> np.ndarray:
    """FFT of the reflected grids (last axis ``m``), zero-padded to :func:`fft_size`."""
    return sfft.rfft(values[..., reflection(m)], fft_size(m), axis=-1)


def fft_size(m: int) -> int:
    """A fast FFT length >= 3m - 2: the circular convolution then equals the linear one on the kept part."""
    return sfft.next_fast_len(3 * m - 2, real=True)


def interpolation(m: int, n_eval: int) -> tuple[np.ndarray, np.ndarray]:
    """(node index, fraction) of each evaluation point on the ``m``-node grid (relplot's ``interpolate``)."""
    t = np.linspace(0, 1, n_eval)
    bucket = 1 / (m - 1)
    inds = (t * (m - 1)).astype(int).clip(0, m - 2)
    return inds, (t - inds * bucket) / bucket


@functools.lru_cache(maxsize=64)
def smoother(sigma: float) -> Smoother:
    """The smoother at ``sigma`` (cached: the bisection's bandwidths repeat across groups and calls)."""
    m = grid_nodes(sigma)
    n = fft_size(m)
    ker = sfft.rfft(kernel_values(m, sigma), n)
    inds, frac = interpolation(m, eval_points(sigma))
    w = np.bincount(inds, 1 - frac, minlength=m) + np.bincount(inds + 1, frac, minlength=m)
    lo = m - 1 + m // 2
    u = np.zeros(n)
    u[lo : lo + m] = w
    z = sfft.irfft(sfft.rfft(u) * np.conj(ker), n)[: 3 * m - 2]  # the convolution's adjoint (a correlation)
    dens = np.bincount(reflection(m), z, minlength=m)  # the reflection's adjoint
    return Smoother(sigma, m, n, ker, inds, frac, dens)


# --------------------------------------------------------------------------- the bisection, all groups at once


def bisect(value: Callable[[np.ndarray, float], np.ndarray], n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """relplot's ``search_param`` for every group at once: (smECE, bandwidth) per group. ``value(groups, s)``:
    smooth_ece of those groups at bandwidth ``s``; groups at the same bandwidth are evaluated together."""
    seen: dict[float, dict[int, float]] = {}

    def holds(sig: np.ndarray) -> np.ndarray:
        """``s < eps or s < smooth_ece(s)`` per group (a group given s = 0 is not evaluated)."""
        ok = sig < SIGMA_EPS
        for s in np.unique(sig[~ok]):
            sel = np.flatnonzero(sig == s)
            got = value(sel, float(s))
            seen.setdefault(float(s), {}).update(zip(sel.tolist(), got.tolist()))
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
    return np.array([seen[s][g] for g, s in enumerate(start.tolist())]), start


class Rows:
    """The lensed rows of one call, summed once, and smooth_ece of any of their groups at any bandwidth.

    ``conf``, ``acc``: the lens's outputs (f and y of relplot); ``weights`` in the caller's units (the density's
    ``1e-4`` is absolute: integer weights are repeated rows)."""

    def __init__(self, conf: np.ndarray, acc: np.ndarray, weights: np.ndarray | None, groups: np.ndarray | None,
                 n_groups: int) -> None:
        self.conf, self.acc, self.weights = conf, acc, weights
        self.groups, self.n_groups = groups, n_groups
        self._grids: dict[int, np.ndarray] = {}  # m -> (G, 2, m), every group
        self._spectra: dict[int, np.ndarray] = {}
        self._fine: dict[int, np.ndarray] = {}  # group -> its fine-partition moments
        self._order = None if groups is None else AK.group_order(groups, n_groups)  # rows by group
        if groups is None:  # one pass on the fine partition serves every bandwidth
            self._fine[0] = moments(conf, acc, weights, fine_partition())[0]
        else:
            self._uniform(COARSE_NODES)

    def _by_group(self, which: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        return None if self._order is None else (*self._order, which)

    def _uniform(self, m: int) -> None:
        """Every group's ``m``-node grid from a pass on that grid's own intervals."""
        part = uniform_partition(m)
        table = moments(self.conf, self.acc, self.weights, part, self._by_group(np.arange(self.n_groups)))
        self._grids[m] = grids(table, part, m)

    def grid(self, sel: np.ndarray, m: int) -> np.ndarray:
        """The ``m``-node grids of groups ``sel``: from the fine partition's sums when it holds the grid (the
        bisection's), else from a pass of their own (a caller's ``sigma``)."""
        if m not in self._grids and m not in FINE_GRIDS:
            self._uniform(m)
        if m in self._grids:
            return self._grids[m][sel]
        self._fine_tables([g for g in sel.tolist() if g not in self._fine])
        out = grids(np.stack([self._fine[g] for g in sel.tolist()]), fine_partition(), m)
        if self.groups is None:
            self._grids[m] = out
        return out

    def _fine_tables(self, todo: list[int]) -> None:
        """Fine-partition moments of the groups ``todo`` (their rows only, in batches of groups)."""
        for b in range(0, len(todo), FINE_GROUPS):
            batch = todo[b : b + FINE_GROUPS]
            table = moments(self.conf, self.acc, self.weights, fine_partition(), self._by_group(np.array(batch)))
            self._fine.update(zip(batch, table))

    def value(self, sel: np.ndarray, sigma: float) -> np.ndarray:
        """smooth_ece of groups ``sel`` at bandwidth ``sigma``."""
        sm = smoother(sigma)
        grid = self.grid(sel, sm.m)
        if sm.m in self._grids:  # every group's grid: their spectra serve every later bandwidth of this grid
            if sm.m not in self._spectra:
                self._spectra[sm.m] = spectra(self._grids[sm.m][:, 1], sm.m)
            spec = self._spectra[sm.m][sel]
        else:
            spec = spectra(grid[:, 1], sm.m)
        return sm.values(grid, spec)

    def smece(self, sigma: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(smECE, bandwidth) per group: at ``sigma``, or the bisection's."""
        if sigma is None:
            return bisect(self.value, self.n_groups)
        everyone = np.arange(self.n_groups)
        return self.value(everyone, float(sigma)), np.full(self.n_groups, float(sigma))


# --------------------------------------------------------------------------- the smoothed reliability curve


def curve(conf: np.ndarray, acc: np.ndarray, weights: np.ndarray | None, sigma: float,
          n_points: int = MESH) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """relplot's smoothed reliability curve at bandwidth ``sigma``: (t, mu, density) at ``linspace(0, 1, n_points)``.

    ``mu = smoothed(acc) / (smoothed(1) + 1e-4)`` (relplot's ``KernelSmoother`` with its reflected Gaussian kernel;
    its ``prepare_rel_diagram`` draws the mean of bootstrapped ones), ``density`` the smoothed weights (relplot's
    ``kde``: divided by the total weight)."""
    sm = smoother(sigma)
    rows = Rows(conf, conf - acc, weights, None, 1)  # the residual of conf - acc is acc: the outcome's grid
    grid = rows.grid(np.zeros(1, dtype=np.int64), sm.m)[0]
    inds, frac = interpolation(sm.m, n_points)
    at = replace(sm, inds=inds, frac=frac)
    dens, ys = at.at_points(at.smoothed(spectra(grid, sm.m)))
    return np.linspace(0, 1, n_points), ys / (dens + DENSITY_EPS), dens / grid[0].sum()


def bootstrap_band(conf: np.ndarray, acc: np.ndarray, weights: np.ndarray | None, sigma: float, n_boot: int,
                   level: float, seed: int | None, n_points: int = MESH) -> tuple[np.ndarray, np.ndarray]:
    """Pointwise percentile band of :func:`curve` over ``n_boot`` resamples of the rows (with replacement, as
    relplot's ``BaggingRegressor``; its band is the 95% one)."""
    rng = np.random.default_rng(seed)
    n = conf.shape[0]
    draws = np.empty((n_boot, n_points))
    for b in range(n_boot):
        counts = np.bincount(rng.integers(0, n, n), minlength=n).astype(np.float64)
        draws[b] = curve(conf, acc, counts if weights is None else counts * weights, sigma, n_points)[1]
    alpha = (1 - level) / 2
    lo, hi = np.quantile(draws, [alpha, 1 - alpha], axis=0)
    return lo, hi
