"""The grouping decision, in one place: measure → candidate groupings → race pilot
emulations of (grouping, η) pairs (:mod:`.race`) or rank them by a closed form
(:mod:`.advise`, :mod:`.advisor`) → the pick a GSGD run adopts.

A layer above the emulation: the engine takes the decision as an injected callable
(``Simulation(..., decide=netsim.tuning.race.decide)``), so ``netsim.sim`` never imports
this package.
"""
