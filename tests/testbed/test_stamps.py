"""A worker's stamps, moved to the server's clock by an estimated offset, stay causal."""

from netsim.testbed.measured import bounded_stamps


def test_stamps_within_the_send_and_the_arrival():
    # sent at 10, arrived at 12: an offset estimated 0.3 too early puts the end at 12.3
    assert bounded_stamps(10.5, 12.3, 10.0, 12.0) == (10.5, 12.0)
    # ... 0.8 too late puts the start before the send
    assert bounded_stamps(9.2, 11.0, 10.0, 12.0) == (10.0, 11.0)
    # both past the arrival: a computation of no length, ending at the arrival
    assert bounded_stamps(12.4, 12.6, 10.0, 12.0) == (12.0, 12.0)
    # stamps already consistent are kept as they are
    assert bounded_stamps(10.25, 11.5, 10.0, 12.0) == (10.25, 11.5)


def test_push_overhead_is_never_negative():
    """``served - compute_end``, the push overhead `netsim predict` calibrates with, is at
    least ``served - arrived`` >= 0 whatever the offset error."""
    for error in (-1.0, -0.01, 0.0, 0.01, 1.0):
        start, end = bounded_stamps(10.4 + error, 11.9 + error, 10.0, 12.0)
        assert 12.0 - end >= 0.0 and start <= end
