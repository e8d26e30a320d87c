"""The collector is off only while a run is built, and left as the caller had it."""

import gc

import pytest

from netsim.sim.collector import building


def test_off_inside_and_on_again_after_even_on_error():
    assert gc.isenabled()
    with building():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), building():
        raise RuntimeError("a bad scenario")
    assert gc.isenabled()


def test_left_off_when_the_caller_turned_it_off():
    gc.disable()
    try:
        with building():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
