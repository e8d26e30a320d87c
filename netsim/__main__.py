"""``python -m netsim``: the ``netsim`` command line (:mod:`netsim.cli`)."""

from netsim.cli import app

if __name__ == "__main__":
    app(prog_name="netsim")
