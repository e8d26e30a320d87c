"""The ``netsim`` command line, runnable from a checkout: ``python cli.py --help``.

The typer app lives in :mod:`netsim.cli`; the installed ``netsim`` script points there,
so installing the package adds no top-level module named ``cli``.
"""

from netsim.cli import app

if __name__ == "__main__":
    app()
