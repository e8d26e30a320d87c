"""Signal harness: SIGINT and SIGTERM at random moments to every long netsim command.

For each of run, compare, sweep, group, real and predict (both need torch; skipped
without it) and rerun, and each of SIGINT and SIGTERM: one undisturbed run measures the
command's duration D, then N trials send the signal to the command's process at a moment
drawn uniformly from [0.05 s, 1.1 D] (so some land after the last run, some after the
end). Each trial must end with exit status 130 and one line saying it was interrupted
(or its normal end, when the command had ended), no process of its session left, and
every run folder whole (tests/signalkit.py). Prints per command the outcomes, every
failure, and the load average before and after.

'startup' counts trials killed before Python reached netsim's entry (the interpreter
and its site imports, before any handler can exist): SIGTERM's default action there.
'too loaded' counts real runs that a loaded machine could not keep at their time scale:
they end failed by the pace check (exit 1, the folder whole, a scale named), signal or not.

Usage: python benchmarks/signal_harness.py [--n 20] [--seed 0] [--commands run,compare,...]
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import signalkit  # noqa: E402


def duration(name: str, where: Path, inputs: dict) -> float:
    """Wall seconds of one undisturbed run of command *name*."""
    out = where / f"undisturbed-{name}"
    start = time.monotonic()
    done = subprocess.run(
        [*signalkit.NETSIM, *signalkit.command(name, out, inputs)],
        cwd=where,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"{name}: exit {done.returncode}: {done.stderr[-2000:]}")
    return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(prog="signal_harness.py", description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=20, help="moments per command and signal")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--commands", default=",".join(signalkit.COMMANDS))
    args = parser.parse_args()
    names = [c for c in args.commands.split(",") if c]
    torch = signalkit.has_torch()
    rng = random.Random(args.seed)
    print(f"load average before: {os.getloadavg()}; CPUs: {os.cpu_count()}", flush=True)
    failures = []
    with tempfile.TemporaryDirectory(prefix="netsim-signals-") as tmp:
        where = Path(tmp)
        inputs = signalkit.make_inputs(where, real=torch and ("predict" in names))
        for name in names:
            if name in ("real", "predict") and not torch:
                print(f"{name}: skipped (torch is not installed)")
                continue
            d = duration(name, where, inputs)
            counts: collections.Counter = collections.Counter()
            for sig in (signal.SIGINT, signal.SIGTERM):
                for _ in range(args.n):
                    moment = rng.uniform(0.05, 1.1 * d)
                    t = signalkit.trial(name, sig, moment, where, inputs)
                    counts[(signal.Signals(sig).name, t.outcome)] += 1
                    if t.outcome == "FAIL":
                        failures.append(t)
                        print(f"  FAIL {t}", flush=True)
            table = ", ".join(f"{s} {o}: {n}" for (s, o), n in sorted(counts.items()))
            print(f"{name} (undisturbed {d:.1f} s): {table}", flush=True)
    print(f"load average after: {os.getloadavg()}")
    print(f"failures: {len(failures)}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
