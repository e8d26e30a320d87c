"""LinkSharing gives water_fill's rates bit for bit, as flows come and go."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from netsim.net.fairshare import LinkSharing, water_fill


class Flow:
    """A flow as LinkSharing sees one (hashable by identity, as netsim's flows are)."""

    def __init__(self, links, weight):
        self.links, self.weight, self.rate = links, weight, None


def _reference(flows, cap):
    """water_fill's rates of the flows, in order."""
    links = np.array([link for f in flows for link in f.links], dtype=np.intp)
    pos = np.array([i for i, f in enumerate(flows) for _ in f.links], dtype=np.intp)
    w = np.array([f.weight for f in flows])
    return water_fill(links, pos, np.array(cap), w)


@st.composite
def histories(draw):
    n_links = draw(st.integers(1, 6))
    # some capacities from a few values, so that links tie
    capacity = st.one_of(st.sampled_from([1.0, 3.0, 10.0, 1e9 / 3]), st.floats(0.1, 1e3))
    cap = draw(st.lists(capacity, min_size=n_links, max_size=n_links))
    steps = draw(
        st.lists(
            st.tuples(
                st.booleans(),  # start a flow (else end one)
                st.lists(st.integers(0, n_links - 1), min_size=1, max_size=3, unique=True),
                st.sampled_from([1.0, 0.5, 2.0, 1 / 3]),
                st.integers(0, 50),
            ),
            min_size=1,
            max_size=40,
        )
    )
    return cap, steps


@settings(max_examples=300, deadline=None)
@given(histories(), st.booleans())
def test_same_floats_as_water_fill(history, weighted):
    cap, steps = history
    sharing = LinkSharing(list(cap), unit=not weighted)
    flows = []
    for start, links, weight, pick in steps:
        if start or not flows:
            flow = Flow(tuple(links), weight if weighted else 1.0)
            sharing.add(flow)
            flows.append(flow)
        else:
            sharing.remove(flows.pop(pick % len(flows)))
        sharing.solve(flows)
        assert [f.rate for f in flows] == _reference(flows, cap).tolist()


def test_capacity_change_needs_reshare():
    cap = [10.0, 4.0]
    sharing = LinkSharing(cap, unit=True)
    a, b = Flow((0,), 1.0), Flow((0, 1), 1.0)
    sharing.add(a)
    sharing.add(b)
    sharing.solve([a, b])
    assert (a.rate, b.rate) == (6.0, 4.0)
    cap[1] = 20.0
    sharing.reshare()
    sharing.solve([a, b])
    assert (a.rate, b.rate) == (5.0, 5.0)


def test_same_floats_on_many_random_networks():
    # the capacity a round takes from a link is its level added once per flow, not
    # level * k: the two differ in the last bit in about 1 % of these networks
    rng = np.random.default_rng(0)
    for weighted in (False, True):
        for _ in range(2000):
            n_links = int(rng.integers(1, 7))
            cap = rng.uniform(0.1, 1e3, n_links).tolist()
            flows = [
                Flow(
                    tuple(rng.choice(n_links, int(rng.integers(1, min(3, n_links) + 1)), False)),
                    float(rng.uniform(0.1, 10.0)) if weighted else 1.0,
                )
                for _ in range(int(rng.integers(1, 13)))
            ]
            sharing = LinkSharing(cap, unit=not weighted)
            for flow in flows:
                sharing.add(flow)
            sharing.solve(flows)
            assert [f.rate for f in flows] == _reference(flows, cap).tolist()


def test_same_floats_when_several_flows_leave_between_solves():
    """A solve after flows only left resumes the last one from the first round that froze
    one of them: the rates are still water_fill's, bit for bit, over long histories of
    arrivals, departures (several at once) and capacity changes."""
    rng = np.random.default_rng(7)
    for _ in range(300):
        n_links = int(rng.integers(1, 10))
        cap = rng.uniform(0.1, 1e3, n_links).tolist()
        if rng.random() < 0.5:  # few distinct capacities: links tie
            cap = [float(c) for c in rng.choice([1.0, 3.0, 10.0, 1e9 / 3], n_links)]
        sharing = LinkSharing(cap, unit=True)
        flows: list = []
        for _ in range(25):
            if rng.random() < 0.4 or not flows:
                for _ in range(int(rng.integers(1, 4))):
                    links = rng.choice(n_links, int(rng.integers(1, min(4, n_links) + 1)), False)
                    flow = Flow(tuple(int(x) for x in links), 1.0)
                    sharing.add(flow)
                    flows.append(flow)
            else:
                for _ in range(int(rng.integers(1, 4))):
                    if flows:
                        sharing.remove(flows.pop(int(rng.integers(len(flows)))))
            if rng.random() < 0.05:
                cap[int(rng.integers(n_links))] = float(rng.uniform(0.1, 100.0))
                sharing.reshare()
            sharing.solve(flows)
            if flows:
                assert [f.rate for f in flows] == _reference(flows, cap).tolist()


def test_flows_all_on_the_link_of_least_capacity():
    """Every flow crosses link 0 (10 bit/s, the least capacity): each gets 10 / n, whatever
    the other links (an equal link 1 that they all cross too, a private link of 20); with a
    link of less capacity (link 3, 1 bit/s) crossed by one of them, that one gets 1 and the
    others share the 9 left."""
    cap = [10.0, 10.0, 20.0, 1.0]
    sharing = LinkSharing(cap[:3], unit=True)
    flows = [Flow((0, 1), 1.0), Flow((0, 1, 2), 1.0), Flow((0, 1), 1.0)]
    for flow in flows:
        sharing.add(flow)
    sharing.solve(flows)
    assert [f.rate for f in flows] == [10 / 3] * 3 and sharing.level == 10 / 3
    sharing.remove(flows.pop(0))
    sharing.solve(flows)
    assert [f.rate for f in flows] == [5.0, 5.0] and sharing.level == 5.0
    sharing = LinkSharing(cap, unit=True)
    flows = [Flow((0,), 1.0), Flow((0, 3), 1.0), Flow((0, 2), 1.0), Flow((0,), 1.0)]
    for flow in flows:
        sharing.add(flow)
    sharing.solve(flows)
    assert [f.rate for f in flows] == [3.0, 1.0, 3.0, 3.0] and sharing.level is None


def test_a_ps_pushes_and_pulls_share_its_two_links_apart():
    """A star of 10 bit/s links: link 0 into the PS, link 1 out of it, links 2-7 the
    workers' own. Three pushes (a worker link, link 0) and two pulls (link 1, a worker
    link) share no link: the pushes get 10 / 3 each, the pulls 5 each, and the rates have
    no one level; two pushes and two pulls get 5 each, one level. When two of the pushes
    and one pull also cross link 7, each group on links of its own but for that one, link
    7 binds them all with link 0: water-filling gives those four 10 / 3 and the other pull
    the 10 - 10 / 3 left on link 1 (the PS's own shares, 10 / 3 and 5, would put 11.7 on
    link 7)."""
    cap = [10.0] * 8
    sharing = LinkSharing(cap, unit=True)
    pushes = [Flow((2, 0), 1.0), Flow((3, 0), 1.0), Flow((4, 0), 1.0)]
    pulls = [Flow((1, 5), 1.0), Flow((1, 6), 1.0)]
    flows = [pushes[0], pulls[0], pushes[1], pulls[1], pushes[2]]
    for flow in flows:
        sharing.add(flow)
    sharing.solve(flows)
    assert [f.rate for f in flows] == [10 / 3, 5.0, 10 / 3, 5.0, 10 / 3]
    assert sharing.level is None
    sharing.remove(pushes[2])
    flows.pop()
    sharing.solve(flows)
    assert [f.rate for f in flows] == [5.0] * 4 and sharing.level == 5.0
    sharing = LinkSharing(cap, unit=True)
    flows = [Flow((0, 7), 1.0), Flow((0, 7), 1.0), Flow((0, 3), 1.0)]
    flows += [Flow((1, 6), 1.0), Flow((1, 7), 1.0)]
    for flow in flows:
        sharing.add(flow)
    sharing.solve(flows)
    assert [f.rate for f in flows] == [10 / 3] * 3 + [10 - 10 / 3, 10 / 3]
