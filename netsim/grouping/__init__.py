"""Forming groups of workers from measurements (pure)."""

ONE_GROUP = "one group"
"""The candidate grouping of every worker in one group: SSGD."""
SINGLETONS = "singletons"
"""The candidate grouping of one group per worker: ASGD."""
