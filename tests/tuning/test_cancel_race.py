"""The traceback of distributed's cancel race is dropped, and only that one."""

import asyncio
import logging
import signal
import sys
import time

import pytest

from netsim.tuning.dask_pool import _CancelRaceFilter, quiet_cancel_race


def _record(module: str, name: str, exc_type: type[Exception]) -> logging.LogRecord:
    source = f"def {name}():\n    raise {exc_type.__name__}('x')\n"
    space: dict = {"__name__": module}
    exec(compile(source, f"<{module}>", "exec"), space)
    try:
        space[name]()
    except Exception:
        info = sys.exc_info()
    return logging.LogRecord("tornado.application", logging.ERROR, "", 0, "cb", (), info)


def test_the_cancel_race_in_distributed_sync_is_dropped():
    assert not _CancelRaceFilter().filter(_record("distributed.utils", "cancel", NameError))


def test_other_errors_are_kept():
    keep = _CancelRaceFilter()
    assert keep.filter(_record("distributed.utils", "cancel", ValueError))
    assert keep.filter(_record("distributed.utils", "other", NameError))
    assert keep.filter(_record("netsim.x", "cancel", NameError))
    assert keep.filter(logging.LogRecord("t", logging.ERROR, "", 0, "no exc", (), None))


def test_an_interrupt_before_the_call_starts_logs_nothing(caplog):
    """The race itself: the loop is busy when the interrupt lands, so cancel runs first."""
    if not hasattr(signal, "setitimer"):
        pytest.skip("needs signal.setitimer (POSIX)")
    utils = pytest.importorskip("distributed.utils")
    quiet_cancel_race()
    runner = utils.LoopRunner(asynchronous=False)
    runner.start()
    runner.loop.add_callback(lambda: time.sleep(0.4))  # the loop busy for 0.4 s

    def interrupt(*_):
        raise KeyboardInterrupt

    async def work():
        await asyncio.sleep(0.5)

    old = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.1)
        with pytest.raises(KeyboardInterrupt):
            utils.sync(runner.loop, work)
        time.sleep(0.8)  # cancel and the call both ran
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        runner.stop()
    assert not [r for r in caplog.records if r.exc_info], caplog.text
