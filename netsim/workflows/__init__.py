"""Workflows behind the front door (:mod:`netsim.api`): one run into its folder, and a
comparison of several rules on the same data."""
