"""The ``netsim`` command line, runnable from a checkout: ``python cli.py --help``.

The typer app lives in :mod:`netsim.cli`; the installed ``netsim`` script runs it through
:func:`netsim.entry.main`, as this file does, so installing the package adds no top-level
module named ``cli``.
"""

from netsim.entry import main

if __name__ == "__main__":
    main()
