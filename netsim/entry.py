"""The ``netsim`` console script (and ``python -m netsim``, ``python cli.py``).

Its first act is :func:`netsim.signals.install`: from then on SIGTERM ends a command as
Ctrl-C (SIGINT) does. It then loads the typer app of :mod:`netsim.cli` itself, so that an
interrupt while the app loads, a few tenths of a second of imports (typer, rich, numpy),
ends the command as an interrupt does anywhere else: one line on stderr and exit status
130, not a traceback. It ends with :func:`netsim.signals.finish`, not the interpreter's
shutdown, so that a signal in the last moments is still one line and status 130.
"""

from __future__ import annotations

import signal
import sys

from .signals import STOP_SIGNALS, finish, install

__all__ = ["main"]


def main() -> None:
    """Run the ``netsim`` command line on ``sys.argv``."""
    # SIGINT and SIGTERM wait at the kernel while the app's modules load (a signal a C
    # extension's import consumed would be lost), and arrive, handled, once they have
    blocked = hasattr(signal, "pthread_sigmask")
    if blocked:
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    install()
    try:
        try:
            from .cli import app
        finally:  # one held meanwhile arrives here, as KeyboardInterrupt (children inherit masks)
            if blocked:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted while starting\n")
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
        sys.exit(130)
    try:
        app(prog_name="netsim")
    except SystemExit as exc:
        finish(exc.code)
    except KeyboardInterrupt:  # between the app's last word and here: nothing left to write
        sys.stderr.write("error: interrupted\n")
        finish(130)
    finish(0)
