"""Fuzz the scenario input: mutants through ``netsim validate`` (some also ``run``, ``compare``, ``group``).

Each mutant is a shipped scenario (or the tests' base scenario) with 1-3 keys changed
at random (values of other types, numbers at the edges, NaN/inf, empty or deeply nested
lists and tables, removed and unknown keys, strings with newlines and unicode), a few
damaged as raw text, some with extra ``--set`` overrides. The bar: exit status 0 or 2
(``run``, with a short horizon and at most 300 updates, may also exit 1 for a diverged run), no traceback, one stderr line naming the
file on refusal, no hang (a wall-time guard per case). Prints the outcome counts and
each failure with the seed that reproduces it.

Every command runs in this one process, as a user's notebook calling netsim would, under
an address-space limit (``--memory-gb``). A command that runs out of memory here is run
again alone, in a fresh process under the same limit: when it keeps the promise there, what
filled the address space is what this process kept from the mutants before (counted apart,
with the process's size, not as a failure); when it does not, it is a failure.

Usage: python benchmarks/fuzz_scenarios.py [--n 5000] [--seed 0] [--run-every 10] [--compare-every 15]
       [--group-every 20] [--timeout 30] [--data-dir ../shared/data] [--keep fuzz-failures]
"""

from __future__ import annotations

import argparse
import collections
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

sys.path[:0] = [
    str(Path(__file__).resolve().parents[1] / "tests" / "config"),
    str(Path(__file__).resolve().parents[1] / "tests"),
]

from mutants import base_scenarios, check_outcome, make_case  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from netsim.cli import app  # noqa: E402


class Hang(Exception):
    """The wall-time guard fired."""


def _alarm(signum, frame):
    raise Hang()


def one(runner, command: list[str], timeout: float):
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        return runner.invoke(app, command, catch_exceptions=True)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _limit(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))


def alone(command: list[str], limit: int, timeout: float) -> SimpleNamespace | None:
    """*command* run by a fresh ``python -m netsim`` under the address-space *limit*
    (bytes): its outcome as :func:`check_outcome` reads one; None when it hangs."""
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "netsim", *command],
            capture_output=True,
            text=True,
            timeout=timeout,
            preexec_fn=lambda: _limit(limit),
        )
    except subprocess.TimeoutExpired:
        return None
    return SimpleNamespace(
        exception=None,
        exit_code=proc.returncode,
        stderr=proc.stderr,
        output=proc.stdout + proc.stderr,
    )


def size_mb() -> str:
    """This process's address space and resident memory (MB; Linux), for the log."""
    try:
        fields = dict(line.split(":", 1) for line in Path("/proc/self/status").open())
    except OSError:
        return "size unknown"
    kb = [int(fields[k].split()[0]) for k in ("VmSize", "VmRSS")]
    return f"address space {kb[0] // 1024} MB, resident {kb[1] // 1024} MB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5000, help="mutants")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--run-every", type=int, default=10, help="also `run` every k-th mutant (0: never)"
    )
    ap.add_argument(
        "--compare-every", type=int, default=15, help="also `compare` every k-th mutant (0: never)"
    )
    ap.add_argument(
        "--group-every",
        type=int,
        default=20,
        help="also `group` (the race) every k-th mutant (0: never)",
    )
    ap.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        help="wall seconds per command before it counts as a hang",
    )
    ap.add_argument("--data-dir", default=None, help="data root for MNIST/LIBSVM scenarios")
    ap.add_argument(
        "--memory-gb", type=float, default=3.0, help="address-space limit (a MemoryError counts)"
    )
    ap.add_argument("--keep", default=None, help="folder to copy failing mutants into")
    args = ap.parse_args()
    limit = int(args.memory_gb * 2**30)
    _limit(limit)
    runner = CliRunner()
    bases = base_scenarios()
    counts: collections.Counter = collections.Counter()
    failures = []
    extra = ["--data-dir", args.data_dir] if args.data_dir else []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for i in range(args.n):
            rnd = random.Random(f"{args.seed}-{i}")
            path, sets = make_case(rnd, bases, folder)
            set_args = [a for s in sets for a in ("--set", s)]
            commands = [("validate", ["validate", str(path), *set_args, *extra], (0, 2))]
            if args.run_every and i % args.run_every == 0:
                until = rnd.choice(["0.5", "2", "1e-6"])
                commands.append(
                    (
                        "run",
                        [
                            "run",
                            str(path),
                            *set_args,
                            "--set",
                            f"run.until={until}",
                            "--set",
                            "run.max_updates=300",
                            "--no-live",
                            "--out",
                            str(folder / f"out{i}"),
                            *extra,
                        ],
                        (0, 1, 2),
                    )
                )
            if args.compare_every and i % args.compare_every == 1:
                commands.append(
                    (
                        "compare",
                        [
                            "compare",
                            str(path),
                            *set_args,
                            "--set",
                            "run.until=2",
                            "--set",
                            "run.max_updates=100",
                            "--no-live",
                            "--out",
                            str(folder / f"cmp{i}"),
                            *extra,
                        ],
                        (0, 1, 2),
                    )
                )
            if args.group_every and i % args.group_every == 2:
                commands.append(
                    (
                        "group",
                        [
                            "group",
                            str(path),
                            *set_args,
                            "--set",
                            "run.until=2",
                            "--lrs",
                            rnd.choice(["0.1", "0.1,1", "1e-3,10,1e3"]),
                            *extra,
                        ],
                        (0, 2),
                    )
                )
            for name, command, allowed in commands:
                try:
                    result = one(runner, command, args.timeout)
                except Hang:
                    problem = f"hang (> {args.timeout:g} s)"
                    result = None
                else:
                    problem = check_outcome(result, path, allowed)
                if problem is not None and "MemoryError" in problem:
                    again = alone(command, limit, args.timeout)
                    if again is not None and check_outcome(again, path, allowed) is None:
                        counts[f"{name} out of memory here, ok alone"] += 1
                        print(f"mutant {i} {name}: out of memory here ({size_mb()}), ok alone")
                        continue
                if problem is None:
                    counts[f"{name} exit {result.exit_code}"] += 1
                    continue
                counts[f"{name} FAILED"] += 1
                failures.append((i, name, problem, sets))
                print(f"mutant {i} (seed '{args.seed}-{i}') {name}: {problem[:400]}", flush=True)
                if args.keep:
                    keep = Path(args.keep)
                    keep.mkdir(parents=True, exist_ok=True)
                    (keep / f"mutant{i}.toml").write_bytes(path.read_bytes())
                    (keep / f"mutant{i}.args").write_text(" ".join(command) + "\n")
            if (i + 1) % 500 == 0:
                took = time.perf_counter() - start
                print(f"... {i + 1} mutants, {took:.0f} s; {size_mb()}", flush=True)
    print(f"{args.n} mutants in {time.perf_counter() - start:.0f} s:")
    for key in sorted(counts):
        print(f"  {key:20s} {counts[key]}")
    kinds = collections.Counter(p.split(":")[0] for _, _, p, _ in failures)
    print(f"failures: {len(failures)} {dict(kinds)}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
