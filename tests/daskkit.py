"""A netsim command given a Dask scheduler nobody listens at, in a process of its own."""

from __future__ import annotations

import os
import subprocess
import sys

UNREACHABLE = "tcp://127.0.0.1:9"


def refused_scheduler(*args: str) -> str:
    """Run ``netsim ARGS --scheduler UNREACHABLE`` in its own process (a Client that fails to
    connect leaves distributed's "IO loop" thread running, and in the test process it would
    keep later tests' pools from forking), assert it is refused in one line naming
    ``--scheduler`` with exit status 2 and no traceback, and return its output."""
    res = subprocess.run(
        [sys.executable, "-m", "netsim", *args, "--scheduler", UNREACHABLE],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "DASK_NETSIM_SCHEDULER_TIMEOUT": "1s"},  # not the default 10 s
    )
    output = res.stdout + res.stderr
    assert res.returncode == 2, output
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1 and "--scheduler" in lines[0] and "Traceback" not in output, lines
    return output
