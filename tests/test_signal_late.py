"""A signal in a command's last moments (after its last word, while its ``atexit`` functions
run, where the interpreter's shutdown would have put the default handlers back): exit
status 130 and exactly one line, never a silent kill or a silent exit 0."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from netsim.signals import LATE_LINE


def _end(status: str, signal_at_exit: bool, tmp_path) -> subprocess.CompletedProcess:
    """A process that installs netsim's handling, ends with ``finish(status)`` and (with
    *signal_at_exit*) sends itself SIGTERM from an ``atexit`` function."""
    mark = tmp_path / "atexit-ran"
    script = textwrap.dedent(
        f"""
        import atexit, os, pathlib, signal
        from netsim.signals import finish, install
        install()
        def last():
            pathlib.Path({str(mark)!r}).write_text("yes")
            if {signal_at_exit}:
                os.kill(os.getpid(), signal.SIGTERM)
                signal.pause()  # the handler ends the process
        atexit.register(last)
        finish({status})
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert mark.read_text() == "yes"  # the atexit functions ran in every case
    return done


def test_a_signal_after_the_last_word_is_one_line_and_130(tmp_path):
    done = _end("0", True, tmp_path)
    assert done.returncode == 130
    assert done.stderr == LATE_LINE


def test_after_an_interrupt_already_said_no_second_line(tmp_path):
    done = _end("130", True, tmp_path)
    assert done.returncode == 130
    assert done.stderr == ""


@pytest.mark.parametrize("status, code", [("0", 0), ("None", 0), ("2", 2), ("'bad: x'", 1)])
def test_without_a_signal_the_status_is_kept(tmp_path, status, code):
    done = _end(status, False, tmp_path)
    assert done.returncode == code
    assert done.stderr == ("bad: x\n" if code == 1 else "")


@pytest.mark.parametrize("where", ["__del__", "weakref callback"])
def test_a_signal_inside_a_finalizer_still_interrupts_the_command(where):
    """Python prints an exception raised in a finalizer and goes on; the interrupt must
    reach the command's own code instead (and print nothing)."""
    script = textwrap.dedent(
        f"""
        import os, signal, time, weakref
        from netsim.signals import install
        install()
        class Held:
            def __del__(self):
                if {where!r} == "__del__":
                    os.kill(os.getpid(), signal.SIGTERM)
        def gone(ref):
            if {where!r} == "weakref callback":
                os.kill(os.getpid(), signal.SIGINT)
        try:
            held = Held()
            ref = weakref.ref(held, gone)
            del held
            start = time.monotonic()
            while time.monotonic() - start < 5:
                pass
            print("not interrupted")
        except KeyboardInterrupt:
            print("interrupted")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert (done.stdout, done.stderr, done.returncode) == ("interrupted\n", "", 0)


def test_an_interrupt_inside_a_sweeps_sigterm_block_counts_as_signalled():
    """A SIGTERM landing in a C extension's import comes out as ImportError; the command
    tells it from a real one by :func:`signalled`, also inside a sweep's SIGTERM block."""
    script = textwrap.dedent(
        """
        import os, signal, time
        from netsim.signals import install, signalled, sigterm_interrupts
        install()
        try:
            with sigterm_interrupts():
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)
        except KeyboardInterrupt:
            print("interrupted", signalled())
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert (done.stdout, done.returncode) == ("interrupted True\n", 0)
