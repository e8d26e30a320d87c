"""``python -m netsim``: the ``netsim`` command line (:mod:`netsim.cli`)."""

from netsim.entry import main

if __name__ == "__main__":
    main()
