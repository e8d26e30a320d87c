"""Max-min solver: textbook cases derived by hand, and the max-min characterisation."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from netsim.net.fairshare import max_min_rates, progressive_filling
from netsim.net.routing import route
from netsim.net.topology import fat_tree, hosts

# Two links, flows 0 (long: links 0 and 1), 1 (short: link 0), 2 (short: link 1).
TWO_BOTTLENECKS = np.array([[1, 1, 0], [1, 0, 1]])


def test_textbook_two_bottlenecks():
    # capacities c0 = 1, c1 = 2. Fill all flows equally: link 0 saturates first at
    # level 1/2 (2 flows share 1), freezing flows 0 and 1 at 0.5. Link 1 then has
    # 2 - 0.5 = 1.5 left for flow 2 alone: rates (0.5, 0.5, 1.5).
    rates = max_min_rates(TWO_BOTTLENECKS, [1.0, 2.0])
    np.testing.assert_allclose(rates, [0.5, 0.5, 1.5], rtol=1e-12)
    # same answer from a sparse matrix in any format
    for fmt in (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix):
        np.testing.assert_allclose(
            max_min_rates(fmt(TWO_BOTTLENECKS), [1.0, 2.0]), [0.5, 0.5, 1.5], rtol=1e-12
        )


def test_textbook_weighted():
    # weights (2, 1, 1). Per unit weight: link 0 offers 1 / (2 + 1) = 1/3, link 1
    # offers 2 / (2 + 1) = 2/3. Link 0 binds: flow 0 = 2/3, flow 1 = 1/3. Link 1 has
    # 2 - 2/3 = 4/3 left for flow 2.
    rates = max_min_rates(TWO_BOTTLENECKS, [1.0, 2.0], weights=[2, 1, 1])
    np.testing.assert_allclose(rates, [2 / 3, 1 / 3, 4 / 3], rtol=1e-12)
    # weights (1, 1, 4): link 0 offers 1/2, link 1 offers 2/5 -> link 1 binds first:
    # flow 0 = 2/5, flow 2 = 8/5; link 0 then has 1 - 2/5 = 3/5 for flow 1.
    rates = max_min_rates(TWO_BOTTLENECKS, [1.0, 2.0], weights=[1, 1, 4])
    np.testing.assert_allclose(rates, [0.4, 0.6, 1.6], rtol=1e-12)


def test_equal_share_unbounded_and_zero_capacity():
    # 4 flows on one 10 Gbit/s link: 2.5 Gbit/s each; flow 4 crosses only an inf link
    A = np.array([[1, 1, 1, 1, 0], [0, 0, 0, 0, 1]])
    rates = max_min_rates(A, [10e9, np.inf])
    np.testing.assert_allclose(rates[:4], 2.5e9, rtol=1e-12)
    assert rates[4] == np.inf
    np.testing.assert_array_equal(max_min_rates([[1, 1]], [0.0]), [0.0, 0.0])


def test_bad_inputs_quote_the_value():
    with pytest.raises(ValueError, match=r"capacities.*-1\.0.*link 1"):
        max_min_rates(TWO_BOTTLENECKS, [1.0, -1.0])
    with pytest.raises(ValueError, match=r"weights.*0\.0.*flow 2"):
        max_min_rates(TWO_BOTTLENECKS, [1.0, 1.0], weights=[1, 1, 0])
    with pytest.raises(ValueError, match=r"capacities must have 2 entries.*got 3"):
        max_min_rates(TWO_BOTTLENECKS, [1.0, 1.0, 1.0])


def _solve_paths(G, paths):
    links = sorted({link for path in paths for link in path})
    index = {link: i for i, link in enumerate(links)}
    li = [index[link] for path in paths for link in path]
    fi = [f for f, path in enumerate(paths) for _ in path]
    caps = [G.edges[link]["bandwidth"] for link in links]
    return progressive_filling(np.array(li), np.array(fi), caps, n_flows=len(paths))


def test_fat_tree_disjoint_paths_get_full_bandwidth():
    G = fat_tree(4, bandwidth=10e9)
    # pod 0 -> pod 1, explicitly routed through four different cores: no directed
    # link is shared, so each flow runs at the full 10 Gbit/s of its host link
    nodes = [
        ("h0", "p0-edge0", "p0-agg0", "core0", "p1-agg0", "p1-edge0", "h4"),
        ("h1", "p0-edge0", "p0-agg1", "core2", "p1-agg1", "p1-edge0", "h5"),
        ("h2", "p0-edge1", "p0-agg0", "core1", "p1-agg0", "p1-edge1", "h6"),
        ("h3", "p0-edge1", "p0-agg1", "core3", "p1-agg1", "p1-edge1", "h7"),
    ]
    paths = [list(zip(n[:-1], n[1:], strict=False)) for n in nodes]
    assert all(G.has_edge(u, v) for path in paths for u, v in path)
    np.testing.assert_allclose(_solve_paths(G, paths), 10e9, rtol=1e-12)
    # three flows from other pods into h0 share its 10 Gbit/s link: 10/3 each
    cache = {}
    paths = [route(G, src, "h0", cache=cache) for src in ("h4", "h8", "h12")]
    np.testing.assert_allclose(_solve_paths(G, paths), 10e9 / 3, rtol=1e-12)


def test_k16_all_to_one_shares_the_ps_link():
    G = fat_tree(16, bandwidth=10e9)
    H = hosts(G)
    cache = {}
    paths = [route(G, h, H[0], cache=cache) for h in H[1:]]
    np.testing.assert_allclose(_solve_paths(G, paths), 10e9 / 1023, rtol=1e-9)


@st.composite
def networks(draw):
    n_links = draw(st.integers(1, 7))
    n_flows = draw(st.integers(1, 9))
    A = np.array(
        draw(
            st.lists(
                st.lists(st.booleans(), min_size=n_flows, max_size=n_flows),
                min_size=n_links,
                max_size=n_links,
            )
        ),
        dtype=int,
    )
    caps = np.array(draw(st.lists(st.floats(0.1, 1e3), min_size=n_links, max_size=n_links)))
    weights = np.array(draw(st.lists(st.floats(0.1, 10.0), min_size=n_flows, max_size=n_flows)))
    return A, caps, weights


@settings(max_examples=300, deadline=None)
@given(networks(), st.booleans())
def test_max_min_characterisation(net, weighted):
    A, caps, weights = net
    w = weights if weighted else np.ones(A.shape[1])
    rates = max_min_rates(A, caps, weights=w if weighted else None)
    bounded = A.any(axis=0)
    assert np.all(np.isinf(rates[~bounded]))
    r = np.where(bounded, rates, 0.0)
    assert np.all(r >= 0)
    load = A @ r
    assert np.all(load <= caps * (1 + 1e-9))  # feasible
    saturated = load >= caps * (1 - 1e-9)
    norm = r / w
    for f in np.flatnonzero(bounded):
        on = np.flatnonzero(A[:, f])
        # a bottleneck: saturated link where f has the largest normalised rate
        assert any(
            saturated[link] and norm[f] >= norm[A[link] == 1].max() * (1 - 1e-9) for link in on
        ), f
