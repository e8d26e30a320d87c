"""The ``netsim`` console script (and ``python -m netsim``, ``python cli.py``).

It loads the typer app of :mod:`netsim.cli` itself, so that Ctrl-C (SIGINT) while the app
loads, a few tenths of a second of imports (typer, rich, numpy), ends the command as an
interrupt does anywhere else: one line on stderr and exit status 130, not a traceback.
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main() -> None:
    """Run the ``netsim`` command line on ``sys.argv``."""
    try:
        from .cli import app
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted while starting\n")
        sys.exit(130)
    app(prog_name="netsim")
