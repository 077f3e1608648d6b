"""The ``calframe`` command's exit codes and errors, its inputs (files and globs, read or scanned) and its
outputs (staged in temporary files and renamed into place together), saved recalibrators and their keys.
See :mod:`calframe.cli`."""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
from pathlib import Path
from typing import Any, Iterator

import polars as pl

from ._errors import CalframeError

EXIT_OK, EXIT_DATA, EXIT_USAGE, EXIT_BREACH, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


class DataError(CalframeError, ValueError):
    """A file problem (missing, unreadable, unknown format, corrupt contents): exit 1."""


class UsageError(CalframeError, ValueError):
    """A bad command line (an argument, a ``--param``, an output path): exit 2."""


# --------------------------------------------------------------------------- files


def expand(patterns: list[str]) -> list[str]:
    """Files named by paths and globs, in order, each once (the same file under two spellings counts once)."""
    out: list[str] = []
    seen: set[str] = set()
    for pat in patterns:
        hits = sorted(glob.glob(pat)) if any(ch in pat for ch in "*?[") else [pat]
        if not hits:
            raise DataError(f"no file matches {pat!r}")
        for h in hits:
            if not os.path.isfile(h):
                raise DataError(f"no such file: {h!r}")
            real = os.path.realpath(h)
            if real not in seen:
                seen.add(real)
                out.append(h)
    return out


def first_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return lines[0] if lines else type(exc).__name__


@contextlib.contextmanager
def reading(what: Any) -> Iterator[None]:
    """Turn a reader's exception (Polars, pyarrow, OS) into a one-line DataError naming ``what``."""
    import pyarrow as pa

    try:
        yield
    except CalframeError:
        raise
    except (pl.exceptions.PolarsError, pa.ArrowException, OSError) as exc:
        raise DataError(f"cannot read {what}: {first_line(exc)}") from None


def scan(path: str) -> pl.LazyFrame:
    suffix = Path(path).suffix.lower()
    with reading(repr(path)):
        if suffix in (".parquet", ".pq"):
            return pl.scan_parquet(path)
        if suffix in (".csv", ".txt"):
            return pl.scan_csv(path)
        if suffix in (".arrow", ".ipc", ".feather"):
            return pl.scan_ipc(path)
    raise DataError(f"unknown file type {suffix!r} for {path!r}; use .parquet, .csv or .arrow/.ipc/.feather")


def scan_all(files: list[str]) -> pl.LazyFrame:
    """The files (from :func:`expand`), concatenated, not read yet."""
    frames = [scan(f) for f in files]
    return frames[0] if len(frames) == 1 else pl.concat(frames, how="vertical_relaxed")


def read(files: list[str]) -> pl.DataFrame:
    """The files (from :func:`expand`), concatenated and collected (reader errors become DataError)."""
    with reading(", ".join(map(repr, files))):
        return scan_all(files).collect()


# --------------------------------------------------------------------------- outputs


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return a.resolve() == b.resolve()


def check_outputs(outputs: list[tuple[Path, str]], inputs: list[str], overwrite: bool) -> None:
    """Refuse, before anything is written, outputs that are an input, collide with each other, or exist already.

    ``outputs`` pairs each file the command will write with what it holds (for the message).
    """
    for i, (out, origin) in enumerate(outputs):
        for f in inputs:
            if _same_file(out, Path(f)):
                raise UsageError(f"{origin} would be written to {str(out)!r}, which is the input {f!r}; "
                                 "choose another output path (an output never replaces an input)")
        for prev, prev_origin in outputs[:i]:
            if _same_file(out, prev):
                raise UsageError(f"{prev_origin} and {origin} would both be written to {str(out)!r}; "
                                 "give each output its own path (rename an input, or write to separate directories)")
        if out.is_dir():
            raise UsageError(f"the output {str(out)!r} is a directory, not a file; choose another output path")
        if not overwrite and (out.exists() or out.is_symlink()):
            raise UsageError(f"the output {str(out)!r} exists; pass --overwrite to replace it")


def _temporary(path: Path, suffix: str = "") -> Path:
    """A fresh hidden name next to ``path``: ``.<name>.<random>.tmp<suffix>``."""
    return path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp{suffix}"


class Outputs:
    """The files a command writes: each to a hidden temporary file beside its final name (:meth:`stage`), all
    renamed into place together once every one is complete (:meth:`commit`). On a failure (an error, Ctrl-C)
    :meth:`discard` removes the temporary files and the directories made for them, so a failed command leaves
    nothing behind and an existing output stays as it was. Use it through :func:`staged_outputs`."""

    def __init__(self) -> None:
        self.created: list[Path] = []  # directories made for the outputs, parents first
        self.staged: list[tuple[Path, Path]] = []  # (temporary file, final name)

    def directory(self, path: Path) -> None:
        """Make the directory ``path`` and its missing parents (:meth:`discard` removes those it made)."""
        missing = []
        while not os.path.lexists(path) and path != path.parent:
            missing.append(path)
            path = path.parent
        for d in reversed(missing):
            with contextlib.suppress(FileExistsError):
                d.mkdir()
                self.created.append(d)

    def stage(self, path: Path, suffix: str = "", tmp: Path | None = None) -> Path:
        """A temporary path that :meth:`commit` renames to ``path``: ``tmp``, or a fresh hidden name next to
        ``path`` ending in ``suffix`` (for writers that choose the format by suffix)."""
        self.directory(path.parent)
        tmp = _temporary(path, suffix) if tmp is None else tmp
        self.staged.append((tmp, path))
        return tmp

    def commit(self) -> None:
        """Rename every staged file to its final name."""
        while self.staged:
            tmp, path = self.staged[0]
            os.replace(tmp, path)
            self.staged.pop(0)

    def discard(self) -> None:
        """Remove the staged files not yet renamed, then the directories made for them (those left empty)."""
        for tmp, _ in self.staged:
            with contextlib.suppress(OSError):
                tmp.unlink()
        self.staged.clear()
        for d in reversed(self.created):
            with contextlib.suppress(OSError):
                d.rmdir()
        self.created.clear()


@contextlib.contextmanager
def staged_outputs() -> Iterator[Outputs]:
    """:class:`Outputs` committed when the block ends, discarded if it raises (anything, KeyboardInterrupt too)."""
    out = Outputs()
    try:
        yield out
        out.commit()
    except BaseException:
        out.discard()
        raise


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file (whole or absent)."""
    with staged_outputs() as out:
        out.stage(path).write_text(text)


def recalibrator_files(path: Path) -> list[Path]:
    """The files a saved recalibrator occupies: ``path`` itself (``*.parquet``) or the two files of its directory."""
    from .recalibrate.base import ARRAYS_FILE, HEADER_FILE

    return [path] if path.suffix == ".parquet" or path.is_file() else [path / ARRAYS_FILE, path / HEADER_FILE]


def save_recalibrator(rec: Any, path: Path, key: str | None = None) -> None:
    """``rec.save(path, key=key)`` through temporary files: a ``*.parquet`` file is renamed into place whole; a
    directory's two files are written in full to a temporary subdirectory, then each renamed into place."""
    import shutil

    with staged_outputs() as out:
        if path.suffix == ".parquet":
            rec.save(out.stage(path, ".parquet"), key=key)
            return
        out.directory(path)
        tmp_dir = _temporary(path / "save")
        try:
            rec.save(tmp_dir, key=key)
            for final in recalibrator_files(path):
                out.stage(final, tmp=tmp_dir / final.name)
            out.commit()
        finally:
            shutil.rmtree(tmp_dir, ignore_errors=True)


def key_from_env(name: str | None) -> str | None:
    """The signing key in the environment variable ``name`` (``--key-env NAME``), None without the option.
    A variable that is not set, or empty, is a usage error: the key itself never appears on the command line
    (where ``ps`` and the shell history would show it) nor in a message."""
    if name is None:
        return None
    key = os.environ.get(name)
    if key is None:
        raise UsageError(f"--key-env {name}: the environment variable {name!r} is not set; set it to the signing "
                         f"key (e.g. from your secret store) before running calframe")
    if not key:
        raise UsageError(f"--key-env {name}: the environment variable {name!r} is empty; set it to the signing key")
    return key


def load_recalibrator(path: str, key_env: str | None) -> Any:
    """``calframe.load(path)``, verified with the key in ``$key_env`` when given; a signature that cannot be
    verified is a DataError saying what to do on the command line (``--key-env``, not ``key=``)."""
    from . import api
    from ._errors import RecalibratorFileError

    key = key_from_env(key_env)
    with reading(repr(path)):
        try:
            return api.load(Path(path), key=key)
        except FileNotFoundError:
            raise DataError(f"no recalibrator at {path!r}") from None
        except RecalibratorFileError as exc:
            if exc.reason == "signed":
                raise DataError(f"{path!r} is signed (HMAC-SHA256): give the signer's key with --key-env NAME, "
                                "NAME the environment variable that holds it") from None
            if exc.reason == "unsigned":
                raise DataError(f"{path!r} is not signed, so --key-env {key_env} cannot authenticate it: apply it "
                                "without --key-env only if you trust its source, or fit it again with --key-env") \
                    from None
            if exc.reason == "signature":
                raise DataError(f"the signature of {path!r} does not match the key in ${key_env}: a wrong key, or "
                                "the file was modified after it was signed; do not use it") from None
            raise


def split_names(s: str | None) -> list[str] | None:
    if s is None:
        return None
    return [c.strip() for c in s.split(",") if c.strip()]


def parse_prob(s: str | None) -> str | list[str] | None:
    cols = split_names(s)
    if cols is None:
        return None
    return cols[0] if len(cols) == 1 else cols
