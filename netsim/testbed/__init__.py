"""Real runs: the scenario trained by real processes exchanging real messages.

One parameter-server process (:mod:`.server`, the emulator's server on a real clock) and
one process per worker (:mod:`.worker`) over ``torch.distributed`` (gloo), started and
watched by :mod:`.launch` after the checks of :mod:`.preflight`; :mod:`.wire` is their
message format, :mod:`.measured` what they measure, and :mod:`.predict` the emulations
that hold netsim's prediction against a real run. A layer above the emulation: nothing
in ``netsim.sim`` imports it. docs/VALIDATION.md is the manual.
"""
