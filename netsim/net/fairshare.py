"""Max-min fair rates of flows on capacitated links (water-filling).

Pure numpy: no SimPy, no networkx, no scipy import (scipy.sparse matrices are
accepted by duck typing). The incidence of flows on links is handled as a
coordinate list -- two index arrays ``link_idx, flow_idx`` of length ``nnz``,
one entry per (link, flow) crossing -- because every step of the algorithm is
then an O(nnz) :func:`numpy.bincount` or boolean mask. That is what
:func:`progressive_filling` takes and what a flow-level simulator has at hand;
:func:`max_min_rates` converts a scipy.sparse matrix (``.tocoo()``, O(nnz)) or
a dense 0/1 array (``np.nonzero``, O(n_links * n_flows)) to it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["max_min_rates", "progressive_filling", "water_fill"]

_RTOL = 1e-12
"""Links whose fair share is within this relative distance of the smallest are
saturated in the same step (saves iterations on symmetric topologies)."""


def _check(capacities, weights, n_flows):
    cap = np.asarray(capacities, dtype=float)
    if cap.ndim != 1:
        raise ValueError(f"capacities must have shape (n_links,), got shape {cap.shape}")
    bad = np.flatnonzero(~(cap >= 0))
    if bad.size:
        raise ValueError(f"capacities must be >= 0 bit/s, got {cap[bad[0]]!r} for link {bad[0]}")
    if weights is None:
        return cap, np.ones(n_flows)
    w = np.asarray(weights, dtype=float)
    if w.shape != (n_flows,):
        raise ValueError(f"weights must have shape ({n_flows},), got shape {w.shape}")
    bad = np.flatnonzero(~((w > 0) & np.isfinite(w)))
    if bad.size:
        raise ValueError(f"weights must be finite and > 0, got {w[bad[0]]!r} for flow {bad[0]}")
    return cap, w


def progressive_filling(link_idx, flow_idx, capacities, weights=None, *, n_flows):
    """Weighted max-min fair rates from a coordinate-list incidence.

    Parameters
    ----------
    link_idx, flow_idx : ndarray of int of shape (nnz,)
        Flow ``flow_idx[e]`` crosses link ``link_idx[e]``; no pair repeated.
    capacities : array_like of shape (n_links,)
        Link capacities, bit/s, >= 0; ``inf`` never constrains.
    weights : array_like of shape (n_flows,), optional
        Positive weights; at a shared bottleneck rates are proportional to
        them. Default: all 1 (plain max-min).
    n_flows : int
        Number of flows (flows without entries are unbounded).

    Returns
    -------
    ndarray of shape (n_flows,)
        Rates, bit/s; ``inf`` for flows that cross no finite-capacity link.

    Notes
    -----
    Water-filling: each iteration computes, for every link, the fair share
    ``s_l = remaining_l / sum of weights of unfrozen flows on l``; all unfrozen
    flows crossing a link whose share is the minimum ``s*`` (within a relative
    1e-12) are frozen at ``weight * s*`` and their rates are removed from
    the remaining capacity of every link they cross. Each iteration is
    O(nnz + n_links) and there are at most as many iterations as distinct
    bottleneck levels (<= n_flows).
    """
    cap, w = _check(capacities, weights, n_flows)
    return water_fill(
        np.asarray(link_idx, dtype=np.intp), np.asarray(flow_idx, dtype=np.intp), cap, w
    )


def water_fill(links: np.ndarray, flows: np.ndarray, cap: np.ndarray, w: np.ndarray) -> np.ndarray:
    """:func:`progressive_filling` on arrays already in shape and checked: *links*, *flows*
    intp (nnz,), *cap* float (n_links,) >= 0 bit/s (``inf`` allowed; not modified), *w*
    float (n_flows,) > 0. Rates (n_flows,), bit/s. For callers that solve often on
    arrays they own: the checks cost a quarter of a small solve. (The flow model
    re-plans with :class:`netsim.net.sharing.LinkSharing`, the same floats per link.)
    """
    n_flows = w.size
    rates = np.full(n_flows, np.inf)
    finite = np.isfinite(cap[links])
    links, flows = links[finite], flows[finite]
    remaining = cap.copy()
    n_links = cap.size
    frozen = np.zeros(n_flows, dtype=bool)
    unbounded = np.full(n_links, np.inf)
    while links.size:
        load = np.bincount(links, weights=w[flows], minlength=n_links)
        share = unbounded.copy()  # remaining / load on the links in use, inf elsewhere
        np.divide(remaining, load, out=share, where=load > 0)
        level = share.min()
        tight = share <= level * (1.0 + _RTOL)
        frozen[flows[tight[links]]] = True
        rates[frozen] = level * w[frozen]
        gone = frozen[flows]
        if gone.all():  # every flow left is frozen: the remaining capacity is not needed
            break
        remaining -= np.bincount(links[gone], weights=rates[flows[gone]], minlength=n_links)
        np.maximum(remaining, 0.0, out=remaining)
        stay = ~gone
        links, flows = links[stay], flows[stay]
        frozen[:] = False
    return rates


def max_min_rates(incidence, capacities, weights=None):
    """Weighted max-min fair rates of flows sharing links.

    Parameters
    ----------
    incidence : scipy.sparse matrix or array_like of shape (n_links, n_flows)
        Entry (l, f) non-zero iff flow f crosses link l. A sparse matrix in
        any format is fastest to convert; a dense array costs
        O(n_links * n_flows) to scan.
    capacities : array_like of shape (n_links,)
        Link capacities, bit/s (>= 0, ``inf`` allowed).
    weights : array_like of shape (n_flows,), optional
        Positive weights for weighted max-min; default all 1.

    Returns
    -------
    ndarray of shape (n_flows,)
        Rates, bit/s; ``inf`` for flows crossing no finite link.

    Examples
    --------
    One long flow over links 0 and 1, one short flow on each link:

    >>> A = [[1, 1, 0], [1, 0, 1]]
    >>> max_min_rates(A, [1.0, 2.0]).tolist()
    [0.5, 0.5, 1.5]
    """
    if hasattr(incidence, "tocoo"):
        coo = incidence.tocoo()
        keep = np.asarray(coo.data) != 0
        links, flows = np.asarray(coo.row)[keep], np.asarray(coo.col)[keep]
        shape = coo.shape
    else:
        dense = np.asarray(incidence)
        if dense.ndim != 2:
            raise ValueError(
                f"incidence must have shape (n_links, n_flows), got shape {dense.shape}"
            )
        links, flows = np.nonzero(dense)
        shape = dense.shape
    if np.size(capacities) != shape[0]:
        raise ValueError(
            f"capacities must have {shape[0]} entries (incidence rows), got {np.size(capacities)}"
        )
    return progressive_filling(links, flows, capacities, weights, n_flows=shape[1])
