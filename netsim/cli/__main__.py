"""``python -m netsim.cli``: the command line, as the ``netsim`` script runs it."""

from ..signals import install
from . import app

if __name__ == "__main__":
    install()
    app(prog_name="netsim")
