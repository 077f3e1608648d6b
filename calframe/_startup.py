"""Ctrl-C while the ``calframe`` command starts: exit 130 with one line, as once it runs.

The command's own handling (:func:`calframe.cli.main`: ``calframe: error: interrupted``, exit 130) begins only
once its modules are imported, and importing them (numba, Polars, calframe itself) is most of its start-up. An
interrupt there used to print a ``KeyboardInterrupt`` traceback, and the process died of SIGINT (exit -2).

``import calframe`` runs :func:`install` first. In the ``calframe`` command (``python -m calframe`` or the
console script; never in a library user's process, whose handler is left alone) it replaces Python's default
SIGINT handler with one that prints the line and ends the process at once, exit 130: start-up has written
nothing to clean up, and an exception raised there, inside the import machinery's module locks, can leave
them broken (a ``KeyError`` from importlib instead of the exit). :func:`calframe.cli.main` puts the default back as
it begins, from where a Ctrl-C is a ``KeyboardInterrupt`` that it handles (removing partial outputs), and
ignores Ctrl-C once the command has finished (:func:`finished`): the interpreter's shut-down would print a
traceback and exit -2 over the command's own exit code.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from types import FrameType

#: the message and exit code of an interrupted command (calframe.cli uses the same)
INTERRUPTED, EXIT_INTERRUPTED = "calframe: error: interrupted", 130
#: whether this process is the calframe command (install() set the handler)
_command = False


def _is_command() -> bool:
    """Whether this process is the ``calframe`` command: ``python [options] -m calframe ...`` (read from
    ``sys.orig_argv``) or the console script (``sys.argv[0]`` is ``.../calframe``)."""
    argv, i = list(getattr(sys, "orig_argv", []))[1:], 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("-") or arg == "-" or arg.startswith(("-c", "--")):
            break  # a script, stdin, -c code or a long option: not -m calframe
        if arg.startswith(("-X", "-W")):  # an option with a value: "-X dev" or "-Xdev"
            i += 2 if arg in ("-X", "-W") else 1
            continue
        if "m" in arg:  # -m calframe, -mcalframe, -Im calframe
            module = arg[arg.index("m") + 1:] or (argv[i + 1] if i + 1 < len(argv) else "")
            return module == "calframe"
        i += 1
    script = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return script in ("calframe", "calframe.exe", "calframe-script.py")


def _interrupted(signum: int, frame: FrameType | None) -> None:
    with contextlib.suppress(Exception):
        sys.stderr.write(INTERRUPTED + "\n")
        sys.stderr.flush()
    os._exit(EXIT_INTERRUPTED)


def install() -> None:
    """In the ``calframe`` command, until :func:`done`: Ctrl-C prints one line and exits 130."""
    global _command
    if (threading.current_thread() is threading.main_thread() and _is_command()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
        signal.signal(signal.SIGINT, _interrupted)
        _command = True


def done() -> None:
    """Start-up is over: Ctrl-C raises ``KeyboardInterrupt`` again (if :func:`install` changed the handler)."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is _interrupted:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def finished(interrupted: bool = False) -> None:
    """The command has finished (its exit code is decided): in the calframe command, ignore Ctrl-C from here;
    after an interrupt also the errors of objects it left half-built (llvmlite's, in a compilation it cut
    short), which the interpreter would print while it shuts down, after the command's one line."""
    if _command and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if interrupted:
            sys.unraisablehook = lambda unraisable: None


install()
