"""numba's disk cache for calframe's kernels, made safe for processes that compile at once.

numba's own cache (``numba.core.caching``) keeps, per function, an index file
(key -> data file) and numbered data files. Its index update is not locked:
``IndexDataCacheFile.save`` loads the index, takes the first unused number,
writes the index, then the data. Two processes that compile different variants
of one function at the same time take the same number, and the index can then
map one variant's key to the other's code (numba issues #4807, #10128, #10486).
From then on every process that loads that entry runs the wrong machine code:
a crash at best, another variant's numbers at worst.

:class:`KernelCache` replaces numba's cache on every ``cache=True`` kernel made
with :func:`calframe._jit.njit`:

- a data file's name is derived from the whole key (signature, target, the
  function's bytecode and closure), never "the first free number";
- a data file records its own key, source stamp and a checksum of its code,
  all checked on load: an entry that holds anything else, or that cannot be
  read or rebuilt, is discarded (a warning, once per process), and the kernel
  is compiled again and saved under its own name;
- an index that cannot be read (empty, truncated, foreign bytes: a full disk,
  an interrupted copy) or that is not an index counts as empty, with the same
  warning: its kernels are compiled again and the index written anew;
- data and index are written to a temporary file and renamed into place;
- the index is read, updated and written under an inter-process lock
  (``fcntl.flock`` on a ``.lock`` file beside it; where ``fcntl`` is missing the
  key check alone keeps the results right);
- the source stamp covers the kernel sources calframe inlines across modules
  (``_kernels/*.py``), not only the function's own file, so an edited helper
  is never served from a stale entry.

The first cache miss of a process says once on stderr that kernels are being
compiled, and that ``calframe warmup`` does it ahead (:func:`announce`).

Processes that miss the same variant at once compile it once: a miss takes an
inter-process lock on that variant (a ``.compiling`` file beside its data
file) before compiling, and a process that finds the lock taken waits for it,
then loads what the other saved (:func:`_hold`; at most :data:`COMPILE_WAIT`
seconds, then it compiles itself). Pytest's workers, ``calframe warmup --jobs``
and several Dask workers on one machine thus share their compiles instead of
repeating them on every core. Waiting cannot deadlock: a variant's compile
waits only on the variants it calls, and numba's call graph has no cycles.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import pickle
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from numba.core.caching import FunctionCache, IndexDataCacheFile
from numba.core.serialize import dumps

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows: the key check alone guards the loads
    fcntl = None  # type: ignore[assignment]

_PACKAGE = Path(__file__).resolve().parent
_FORMAT = "calframe-kernel-cache-2"  # the layout of a data file's payload: (format, stamp, key, sha256, code)

_stamp_lock = threading.Lock()
_package_stamp: str | None = None
_said = threading.Lock()
_announced = False
_warned = False
quiet = False  # set by warmup(), which says what it does itself
#: seconds a process waits for another's compile of the same variant before it compiles the variant itself
COMPILE_WAIT = 600.0
#: the compile locks this process holds: path -> [file descriptor, depth] (a process compiles on one thread at a
#: time, under numba's global compiler lock, so the dict needs no lock of its own)
_held: dict[str, list[int]] = {}


def package_stamp() -> str:
    """A hash of the kernel sources (``calframe/_kernels/*.py``, this module, ``_runtime.py`` and ``_jit.py``).

    numba stamps a cache with the mtime and size of the function's own file only; calframe's kernels inline
    helpers from other modules, so an edit there would otherwise be served from a stale entry.

    Examples
    --------
    >>> from calframe._kernel_cache import package_stamp
    >>> len(package_stamp())
    64
    """
    global _package_stamp
    with _stamp_lock:
        if _package_stamp is None:
            h = hashlib.sha256()
            files = sorted((_PACKAGE / "_kernels").glob("*.py")) + [_PACKAGE / "_runtime.py", _PACKAGE / "_jit.py", Path(__file__).resolve()]
            for f in files:
                h.update(f.name.encode())
                h.update(f.read_bytes())
            _package_stamp = h.hexdigest()
        return _package_stamp


@functools.lru_cache(maxsize=None)
def _file_digest(path: str) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:  # source not readable (a zip): numba's own stamp still applies
        return ""


#: the environment variable that turns a kernel compile into an error (:class:`KernelCompileForbidden`): set it
#: after ``calframe warmup`` to prove that a job compiles nothing (a CI step, a container's health check)
FORBID_ENV = "CALFRAME_FORBID_COMPILE"


def forbidden() -> bool:
    """Whether ``CALFRAME_FORBID_COMPILE`` is set to a true value (``1``, ``true``, ``yes``)."""
    return os.environ.get(FORBID_ENV, "").strip().lower() in ("1", "true", "yes")


class KernelCompileForbidden(RuntimeError):
    """A calframe kernel would be compiled while ``CALFRAME_FORBID_COMPILE=1``: its machine code for these
    argument types is not in the cache. Run ``calframe warmup`` first, or report the call: warm-up should cover
    every documented use. (One argument, the message, so that Polars can raise it again from a UDF.)"""


def forbidden_compile(kernel: str, sig: Any) -> KernelCompileForbidden:
    """The error for a compile of ``kernel`` for the types ``sig`` under ``CALFRAME_FORBID_COMPILE=1``."""
    return KernelCompileForbidden(
        f"calframe kernel {kernel} would be compiled for the argument types {sig} while "
        f"{FORBID_ENV}=1: its machine code is not in the cache ({', '.join(map(str, cache_dirs()))}). Run "
        f"`calframe warmup` first (in this environment, with the same calframe and numba); if warm-up ran, "
        f"it does not cover this call: please report it with the call that raised.")


def announce(kernel: str | None = None) -> None:
    """Say on stderr that kernels are being compiled (a cache miss calls it): once per process with what
    ``calframe warmup`` does, then the name of each kernel compiled, and the public function it is compiled for
    (``compiling binned_pass_class1 for calframe.summary``), so that no wait is silent. Where progress bars are
    shown (a terminal, or ``CALFRAME_PROGRESS=1``), a call's second and further compiles go on a bar that counts
    them and names the kernel being compiled (:func:`calframe._progress.compiling`)."""
    global _announced
    if quiet:
        return
    with _said:
        first = not _announced
        _announced = True
    from ._progress import compiling
    from ._runtime import current_call

    call = current_call()
    if first:
        print("compiling calframe kernels (first use; `calframe warmup` does this ahead)", file=sys.stderr,
              flush=True)
    if kernel is not None and not compiling(kernel, call):  # a call's further compiles: a bar where bars show
        print(f"  compiling {kernel}" + (f" for calframe.{call}" if call else ""), file=sys.stderr, flush=True)


def _hold(path: str, kernel: str = "") -> bool:
    """Take the compile lock ``path`` (again, if this process holds it): whether another process held it first
    (it may have saved the variant meanwhile). Without ``fcntl``, or after :data:`COMPILE_WAIT` seconds of
    waiting, nothing is held and the caller compiles anyway (the cache's own locks keep the files right)."""
    if path in _held:
        _held[path][1] += 1
        return False
    if fcntl is None:
        return False
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:  # a read-only cache directory: nothing to share
        return False
    waited = False
    deadline = time.monotonic() + COMPILE_WAIT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                return True
            if not waited and not quiet:
                print(f"  waiting for another process compiling {kernel or 'a calframe kernel'}", file=sys.stderr,
                      flush=True)
            waited = True
            time.sleep(0.05)
        except OSError:  # a file system without locks
            os.close(fd)
            return False
    _held[path] = [fd, 1]
    return waited


def _release(path: str) -> None:
    """Give back one hold of the compile lock ``path`` (:func:`_hold`); the lock goes at the last."""
    held = _held.get(path)
    if held is None:
        return
    held[1] -= 1
    if held[1] == 0:
        del _held[path]
        try:
            fcntl.flock(held[0], fcntl.LOCK_UN)
        finally:
            os.close(held[0])


def _warn_discarded(name: str, why: str, path: str) -> None:
    global _warned
    if _warned:
        return
    _warned = True
    from ._errors import CalframeWarning

    warnings.warn(
        f"calframe's kernel cache entry for {name} ({path}) {why}; it was discarded and the kernel is compiled "
        "again. This happens after processes compiled at once into one cache directory with an older calframe, "
        "when cache files were copied between installs, or when a cache file was damaged (a full disk, an "
        "interrupted copy); no wrong result was used.",
        CalframeWarning,
        stacklevel=2,
    )


class KeyedCacheFile(IndexDataCacheFile):
    """numba's index + data files, with data files named by, and holding, their own key (module docstring)."""

    def __init__(self, cache_path: str, filename_base: str, source_stamp: Any, name: str) -> None:
        super().__init__(cache_path, filename_base, source_stamp)
        self._filename_base = filename_base
        self._lock_path = self._index_path + ".lock"
        self._name = name

    # ----------------------------------------------------------------- names and locks

    def data_name(self, key: Any) -> str:
        """The data file of ``key``: the function's base name and a hash of the whole key."""
        digest = hashlib.sha256(repr(key).encode()).hexdigest()[:24]
        return f"{self._filename_base}.{digest}.nbc"

    def compile_lock(self, key: Any) -> str:
        """The path of the lock a process holds while it compiles the variant ``key`` (:func:`_hold`)."""
        return os.path.join(self._cache_path, self.data_name(key)[: -len(".nbc")] + ".compiling")

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        if fcntl is None:
            yield
            return
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    # ----------------------------------------------------------------- save and load

    def _load_index(self) -> dict[Any, Any]:
        """numba's index (key -> data file name); empty when there is none, when it is another numba's or
        another source's (numba's rules), and when it cannot be read or is not an index (a warning, once): the
        kernels are then compiled again and :meth:`save` writes the index anew."""
        try:
            overloads = super()._load_index()
        except Exception as exc:  # empty, truncated or foreign bytes (EOFError, UnpicklingError, ValueError, ...)
            _warn_discarded(self._name, f"has an index that cannot be read ({type(exc).__name__})",
                            self._index_path)
            return {}
        if not isinstance(overloads, dict) or not all(isinstance(v, str) for v in overloads.values()):
            _warn_discarded(self._name, "has an index that is not one", self._index_path)
            return {}
        return overloads

    def save(self, key: Any, data: Any) -> None:
        """Write the data file (its own key, stamp and the checksum of its code inside, atomically), then add it
        to the index under the lock."""
        name = self.data_name(key)
        code = dumps(data)
        self._save_data(name, (_FORMAT, self._source_stamp, key, hashlib.sha256(code).hexdigest(), code))
        with self._locked():
            overloads = self._load_index()
            if overloads.get(key) != name:
                overloads[key] = name
                self._save_index(overloads)

    def load(self, key: Any) -> Any:
        """The data saved for ``key``, or None (a miss: numba compiles and saves). An entry whose data file holds
        another key, another source stamp, code that does not match its checksum or anything unreadable is
        discarded, with a warning once."""
        name = self._load_index().get(key)
        if name is None:
            return None
        try:
            payload = self._load_data(name)
        except FileNotFoundError:  # removed meanwhile
            return None
        except Exception:  # truncated or foreign bytes
            payload = None
        ok = isinstance(payload, tuple) and len(payload) == 5 and payload[0] == _FORMAT
        why = "was not written by this version of calframe"
        if ok and payload[1] == self._source_stamp and payload[2] == key:
            code = payload[4]
            why = "is damaged (its code does not match its checksum)"
            if isinstance(code, bytes) and hashlib.sha256(code).hexdigest() == payload[3]:
                try:
                    return pickle.loads(code)
                except Exception as exc:
                    why = f"cannot be read ({type(exc).__name__})"
        elif ok:
            why = "held another variant's code" if payload[1] == self._source_stamp else "was written for other sources"
        self.drop(key, name, why)
        return None

    def drop(self, key: Any, name: str, why: str) -> None:
        """Discard ``key``'s entry (data file ``name``), saying ``why`` (a warning, once)."""
        _warn_discarded(self._name, why, self._data_path(name))
        self.discard(key, name)

    def discard(self, key: Any, name: str) -> None:
        """Remove ``key`` from the index if it still points at ``name`` (under the lock)."""
        with self._locked():
            overloads = self._load_index()
            if overloads.get(key) == name:
                del overloads[key]
                self._save_index(overloads)

    def _dump(self, obj: Any) -> bytes:
        return dumps(obj)


class KernelCache(FunctionCache):
    """numba's ``FunctionCache`` with :class:`KeyedCacheFile` and a stamp covering the kernel sources."""

    def __init__(self, py_func: Any) -> None:
        super().__init__(py_func)
        stamp = (self._impl.locator.get_source_stamp(), package_stamp(), _file_digest(py_func.__code__.co_filename))
        self._cache_file = KeyedCacheFile(
            cache_path=self._cache_path,
            filename_base=self._impl.filename_base,
            source_stamp=stamp,
            name=py_func.__qualname__,
        )
        self._pending: dict[tuple, list[str]] = {}  # argument types -> compile locks held while numba compiles
        _listen_for_failed_compiles()

    def load_overload(self, sig: Any, target_context: Any) -> Any:
        """The cached compile result, or None after saying that a kernel is being compiled (once per process,
        then each kernel's name while they follow each other); with ``CALFRAME_FORBID_COMPILE=1`` a miss raises
        :class:`KernelCompileForbidden` instead. A miss holds the variant's compile lock until numba saves the
        compiled variant (:meth:`save_overload`) or its compile fails (:func:`_compile_ended`); a process
        that waited for another's lock loads what that one saved."""
        got = super().load_overload(sig, target_context)
        if got is None and self._enabled:
            if forbidden():
                raise forbidden_compile(self._py_func.__qualname__, sig)
            lock = self._cache_file.compile_lock(self._index_key(sig, target_context.codegen()))
            if _hold(lock, self._py_func.__qualname__):
                got = super().load_overload(sig, target_context)
            if got is not None:
                _release(lock)
                return got
            self._pending.setdefault(_args_of(sig), []).append(lock)
            announce(self._py_func.__qualname__)
        return got

    def save_overload(self, sig: Any, data: Any) -> None:
        """numba's save, then the variant's compile lock given back (:meth:`load_overload`)."""
        try:
            super().save_overload(sig, data)
        finally:
            self.compiled(_args_of(sig))

    def compiled(self, args: tuple) -> None:
        """Give back the compile lock of the variant for argument types ``args``, if this process holds it."""
        locks = self._pending.get(args)
        if locks:
            _release(locks.pop())

    def _load_overload(self, sig: Any, target_context: Any) -> Any:
        """numba's load, with an entry that cannot be rebuilt into a function discarded (a miss) instead of
        raised."""
        if not self._enabled:
            return None
        key = self._index_key(sig, target_context.codegen())
        data = self._cache_file.load(key)
        if data is None:
            return None
        try:
            return self._impl.rebuild(target_context, data)
        except Exception as exc:
            self._cache_file.drop(key, self._cache_file.data_name(key), f"cannot be loaded ({type(exc).__name__})")
            return None


def _args_of(sig: Any) -> tuple:
    """The argument types of a signature as numba's compile events name them."""
    from numba.core import sigutils

    return tuple(sigutils.normalize_signature(sig)[0])


@functools.cache
def _listen_for_failed_compiles() -> None:
    """Once per process: a compile that raises gives its variant's compile lock back (numba saves, and so
    releases through :meth:`KernelCache.save_overload`, only what compiled)."""
    from numba.core import event

    class _Failed(event.Listener):
        def on_start(self, ev: Any) -> None:
            pass

        def on_end(self, ev: Any) -> None:
            dispatcher, args = ev.data["dispatcher"], tuple(ev.data["args"])
            cache = getattr(dispatcher, "_cache", None)
            # failed: no overload was added (numba 0.68's Event.is_failed answers the opposite, so not asked)
            if isinstance(cache, KernelCache) and args not in dispatcher.overloads:
                cache.compiled(args)

    event.register("numba:compile", _Failed())


def cache_dirs() -> list[str]:
    """The directories numba's cache writes calframe's kernels to: ``NUMBA_CACHE_DIR`` when set, else the
    ``__pycache__`` folders beside calframe's sources (numba's user-wide folder where those are read-only).

    Examples
    --------
    >>> import calframe
    >>> from calframe._kernel_cache import cache_dirs
    >>> len(cache_dirs()) >= 1
    True
    """
    from . import _runtime

    _runtime.load_kernels()
    return sorted({d._cache.cache_path for d in _runtime.CACHED})
