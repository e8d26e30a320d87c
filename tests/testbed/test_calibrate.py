"""netsim calibrate: fits of the server's times on made-up measurements with known answers."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from netsim import api
from netsim.testbed.calibrate import (
    RunFit,
    class_overheads,
    class_spread,
    combine,
    fit_line,
    fit_run,
    fit_service,
    update_jobs,
)
from netsim.workload.replayed import GRADIENT_COLUMNS
from netsim.workload.timemodels import Constant, Exponential

APPLY, GRADIENT, SEND = 2e-3, 5e-4, 3e-4  # seconds


def _pushes(rounds: list[int]) -> list[tuple[float, int]]:
    """Served pushes of rounds of k pushes each: k − 1 held (GRADIENT s), then one update
    (GRADIENT + APPLY s)."""
    out = []
    for k in rounds:
        out += [(GRADIENT, 0)] * (k - 1) + [(GRADIENT + APPLY, 1)]
    return out


def test_a_line_through_jobs_of_different_sizes_is_exact():
    """GSGD-like rounds of 2, 4 and 8 pushes: a job of k pushes costs APPLY + k GRADIENT."""
    jobs, holding = update_jobs(_pushes([2, 4, 8] * 5))
    assert [k for k, _ in jobs[:3]] == [2, 4, 8]
    apply, gradient, q = fit_service(jobs, holding)
    assert apply == pytest.approx(APPLY) and gradient == pytest.approx(GRADIENT)
    assert q["r2"] == pytest.approx(1.0) and q["rel_rms"] == pytest.approx(0, abs=1e-9)
    assert q["how"] == "line"


def test_rounds_of_one_size_take_the_gradient_from_the_held_pushes():
    """SSGD: every round has 16 pushes, so no line: the 15 held pushes give GRADIENT."""
    apply, gradient, q = fit_service(*update_jobs(_pushes([16] * 12)))
    assert (apply, gradient) == (pytest.approx(APPLY), pytest.approx(GRADIENT))
    assert q["how"] == "held pushes" and q["r2"] is None


def test_asgd_folds_the_gradient_into_the_apply():
    """ASGD: each push makes one update; only their sum is known, and it goes to apply."""
    apply, gradient, q = fit_service(*update_jobs(_pushes([1] * 20)))
    assert (apply, gradient) == (pytest.approx(APPLY + GRADIENT), 0.0)
    assert q["how"] == "folded into apply_time"


def test_noise_shows_in_the_quality():
    """Jobs alternating ±10 % about the line: residuals of 10 % of each job's time."""
    jobs = [
        (k, (APPLY + k * GRADIENT) * (1.1 if i % 2 else 0.9))
        for i, k in enumerate([2, 2, 8, 8] * 5)
    ]
    _, _, q = fit_service(jobs, [])
    assert 0 < q["r2"] < 1 and q["rel_rms"] > 0.05


def test_a_fixed_and_a_per_parameter_part_from_two_sizes():
    """Runs of 1,000 and 1,000,000 parameters whose apply costs 1 ms + 2 ns a parameter,
    gradient 0.1 ms + 1 ns, and messages 50 µs + 0.5 ns a byte."""

    def run(d: int) -> RunFit:
        a, g = 1e-3 + 2e-9 * d, 1e-4 + 1e-9 * d
        pushes = [(g, 0)] * 3 + [(g + a, 1)]
        nbytes = 8 * (d + 16)
        return fit_run(str(d), d, nbytes, 0.05, pushes * 12, [5e-5 + 0.5e-9 * nbytes] * 4, {})

    cal = combine([run(1_000), run(1_000_000)])
    assert cal.apply == pytest.approx(1e-3) and cal.apply_per_param == pytest.approx(2e-9)
    assert cal.gradient == pytest.approx(1e-4) and cal.gradient_per_param == pytest.approx(1e-9)
    assert cal.send == pytest.approx(5e-5) and cal.send_per_byte == pytest.approx(0.5e-9)
    table = cal.server_table(0.1)  # seconds → units of 0.1 s
    assert table["apply_time"] == pytest.approx(1e-2)
    assert table["apply_time_per_param"] == pytest.approx(2e-8)
    assert not cal.notes
    one = combine([run(1_000)])
    assert one.apply == pytest.approx(1e-3 + 2e-6) and one.apply_per_param == 0
    assert "folded into the fixed parts" in one.notes[0]


def test_overheads_at_another_scale():
    """Class a: pull 0.3 − 0.0 − 0.1 injected = 0.2 s; push 1.7 − 1.5 − 0.1 + excess
    (1.2 − 1.0) = 0.3 s: 0.5 s of overhead per iteration, 1 unit at 0.5 s per unit. The
    one iteration has no spread: a constant. Class b, not measured, gets a's; with its own
    overhead of 2 units in the scenario, 3."""
    its = [("a", 0.0, 0.3, 1.5, 1.7, 1.0)]
    over = class_overheads(its, {"a": (0.1, 0.1)})
    assert over == {"a": (pytest.approx(0.2), pytest.approx(0.3))}
    spread = class_spread(its, {"a": (0.1, 0.1)})
    cal = combine([fit_run("x", 10, 208, 0.5, _pushes([2] * 10), [1e-4], over, spread)])
    got = cal.overhead(0.5, {"a": None, "b": Constant(2.0)})
    assert got == {"a": pytest.approx(1.0), "b": pytest.approx(3.0)}


def test_overhead_spread_is_a_lognormal_of_that_mean_and_spread():
    """Overheads 0.1 and 0.3 s (mean 0.2, standard deviation 0.1: cv 0.5) at 0.1 s per unit:
    mean 2 units; the lognormal of mean 2 and cv 0.5 has median 2 / √1.25 and sigma
    √ln 1.25. An exponential of mean 1 unit of the scenario's own adds mean 1 and variance
    1: mean 3, variance 1 + 1 = 2, cv √2 / 3."""
    its = [("a", 0.0, 0.1, 1.1, 1.1, 1.0), ("a", 2.0, 2.3, 3.3, 3.3, 1.0)]
    spread = class_spread(its, {})
    assert spread == {"a": pytest.approx(0.5)}
    cal = combine(
        [fit_run("x", 10, 208, 0.1, _pushes([2] * 10), [1e-4], class_overheads(its, {}), spread)]
    )
    got = cal.overhead(0.1, {"a": None})["a"]
    assert got["dist"] == "lognormal"
    assert got["median"] == pytest.approx(2.0 / math.sqrt(1.25))
    assert got["sigma"] == pytest.approx(math.sqrt(math.log(1.25)))
    with_own = cal.overhead(0.1, {"a": Exponential(1.0)})["a"]
    cv = math.sqrt(2.0) / 3.0
    assert with_own["median"] == pytest.approx(3.0 / math.sqrt(1 + cv**2), rel=0.02)
    assert with_own["sigma"] == pytest.approx(math.sqrt(math.log1p(cv**2)), rel=0.03)


def test_fit_line_on_a_constant_x():
    assert fit_line([3, 3], [1.0, 2.0]) == (1.5, 0.0, None)


SCENARIO = """
name = "made_up"
[run]
seed = 1
algorithm = "gsgd"
until = 100.0
[data]
source = "synthetic"
n_samples = 100
n_features = 4
[model]
name = "logistic"
[[workers]]
name = "a"
count = 2
compute = 1.0
pull_latency = 0.5
[algorithms.gsgd]
lr = 0.1
groups = [["a"]]
"""


def _folder(tmp_path: Path, updates: int, average: float = 0.0, cpu: float | None = None) -> Path:
    """A real run's folder written by hand: rounds of 2 pushes (worker 0 held, worker 1
    updates), 1 ms + 2 × 0.5 ms each, a 0.3 ms model message to each worker after the
    update, at 0.1 s per unit; each iteration: its message out 0.2 units (pull latency 0.5
    injected: 0.05 s, so 0.15 units of overhead) before its computation. *average*: s of
    the updating push's service spent averaging the round's 2 gradients. *cpu*: the server's
    rows record CPU times, this share of their real times (else no CPU columns, as an
    earlier netsim wrote them)."""
    path = tmp_path / "run"
    path.mkdir()
    scale = 0.1
    (path / "summary.json").write_text(
        json.dumps({"real": {"time_scale": scale, "params": 5, "message_bytes": 168}})
    )
    (path / "scenario.toml").write_text(SCENARIO)
    server = ["kind,worker,iteration,start,end,real_s,gradients,updates,average_s"]
    grads = [",".join(GRADIENT_COLUMNS)]
    t = 0.0
    for i in range(updates):
        hold, upd = GRADIENT / scale, (GRADIENT + APPLY) / scale
        server.append(f"push,0,,{t},{t + hold},{GRADIENT},0,0,")
        t += hold
        start = t
        t += upd + average / scale
        sends = []
        for w in (0, 1):
            sends.append(f"send,{w},{i + 1},{t},{t + SEND / scale},{SEND},,,")
            t += SEND / scale
        server += sends
        total = GRADIENT + APPLY + 2 * SEND + average
        server.append(f"push,1,,{start},{t},{total},2,1,{average}")
        t += 1.0
    for w in (0, 1):
        for i in range(1, updates):
            row = dict.fromkeys(GRADIENT_COLUMNS, "")
            row.update(worker=w, worker_class="a", iteration=i, complete=1, drawn=1.0)
            sent_end = float(server[2 + 4 * (i - 1) + w].split(",")[4])
            row.update(compute_start=sent_end + 0.65, compute_end=sent_end + 1.65)
            row.update(arrived=sent_end + 1.7, sent=sent_end, served=sent_end + 1.75)
            grads.append(",".join(str(row[c]) for c in GRADIENT_COLUMNS))
    if cpu is not None:
        rows = [server[0] + ",cpu_s,average_cpu_s"]
        for line in server[1:]:
            cells = line.split(",")
            spent = "" if not cells[8] else repr(float(cells[8]) * cpu)
            rows.append(f"{line},{float(cells[5]) * cpu!r},{spent}")
        server = rows
    (path / "measured_server.csv").write_text("\n".join(server) + "\n")
    (path / "measured_gradients.csv").write_text("\n".join(grads) + "\n")
    return path


def test_calibrate_a_folder(tmp_path):
    fit = api.calibrate(_folder(tmp_path, 12))
    server = fit["server"]
    assert server["apply_time"] == pytest.approx(APPLY / 0.1)  # rounds of one size: held pushes
    assert server["gradient_time"] == pytest.approx(GRADIENT / 0.1)
    assert server["send_time"] == pytest.approx(SEND / 0.1)
    assert fit["overhead"]["a"] == pytest.approx(0.15 + 0.05)  # pull and push, no spread
    assert "[server]" in fit["toml"] and "apply_time = 0.02" in fit["toml"]


def test_averaging_is_a_cost_per_gradient(tmp_path):
    """Rounds of 2 whose update spends 2 ms averaging: 1 ms per gradient goes to
    average_time, gradient_time and apply_time keep the intake and the step alone (one
    group size could not tell them apart otherwise)."""
    fit = api.calibrate(_folder(tmp_path, 12, average=0.002))
    assert fit["server"]["average_time"] == pytest.approx(0.001 / 0.1)
    assert fit["server"]["gradient_time"] == pytest.approx(GRADIENT / 0.1)
    assert fit["server"]["apply_time"] == pytest.approx(APPLY / 0.1)


def test_cpu_fits_the_servers_cpu_time(tmp_path):
    """Rows whose serving thread had a core 60 % of the time: by default the keys are the
    wall times and the share is reported; with cpu=True every server cost is 0.6 times its
    wall time (the averaging too), the overheads unchanged."""
    folder = _folder(tmp_path, 12, average=0.002, cpu=0.6)
    wall, cpu = api.calibrate(folder), api.calibrate(folder, cpu=True)
    assert wall["server"]["apply_time"] == pytest.approx(APPLY / 0.1)
    q = wall["quality"][str(folder)]
    assert q["server_cpu_share"] == pytest.approx(0.6) and q["cpu"] is False
    for key, value in (
        ("apply_time", APPLY),
        ("gradient_time", GRADIENT),
        ("send_time", SEND),
        ("average_time", 0.001),
    ):
        assert cpu["server"][key] == pytest.approx(0.6 * value / 0.1), key
    assert cpu["overhead"] == pytest.approx(wall["overhead"])
    assert "from the server's CPU time" in cpu["toml"] and "CPU" not in wall["toml"]
    assert cpu["quality"][str(folder)]["cpu"] is True


def test_cpu_on_a_folder_without_cpu_times_is_refused(tmp_path):
    folder = _folder(tmp_path, 12)
    assert api.calibrate(folder)["quality"][str(folder)]["server_cpu_share"] is None
    cmd = [sys.executable, "-m", "netsim.cli", "calibrate", "--cpu", str(folder)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr
    assert "measured_server.csv: no CPU times (cpu_s)" in done.stderr
    assert "calibrate without --cpu" in done.stderr and len(done.stderr.splitlines()) == 1


def test_bad_folders_are_one_line_and_exit_2(tmp_path):
    few = _folder(tmp_path, 4)
    emulated = tmp_path / "emulated"
    emulated.mkdir()
    (emulated / "summary.json").write_text('{"updates": 12}')  # an emulated run's has no "real"
    cmd = [sys.executable, "-m", "netsim.cli", "calibrate"]
    for folder, words in (
        (few, "measured_server.csv: 4 updates: too few"),
        (tmp_path, "not a real run's folder"),
        (emulated, "its summary.json has no 'real' entry: an emulated run's"),
    ):
        done = subprocess.run(cmd + [str(folder)], capture_output=True, text=True)
        assert done.returncode == 2 and words in done.stderr, done.stderr
        assert "Traceback" not in done.stderr and done.stdout == ""
    (few / "measured_server.csv").unlink()
    with pytest.raises(api.FolderError, match="measured_server.csv: missing"):
        api.calibrate(few)


def test_round_spread_matches_the_slowest_members_gap():
    """Five rounds of two members whose overheads are 1 and 3 s: mean 2, the slowest 1 s
    above the round's mean. For two lognormal draws of mean m and log-spread σ,
    E[max − mean] = E|X − Y| / 2 = m (2Φ(σ/√2) − 1): 2Φ(σ/√2) − 1 = 1/2 gives
    σ = √2 · 0.67449 and cv = √(e^σ² − 1) ≈ 1.218 (fitted on 4,000 fixed draws: 5 %)."""
    its = []
    for v in range(5):
        for o in (1.0, 3.0):
            its.append(
                ("a", 10.0 * v, 10.0 * v + o, 10.0 * v + o + 1.0, 10.0 * v + o + 1.0, 1.0, v)
            )
    sigma = math.sqrt(2) * 0.6744897501960817
    expected = math.sqrt(math.exp(sigma**2) - 1)
    assert class_spread(its, {})["a"] == pytest.approx(expected, rel=0.05)
    # without the versions (no rounds), the spread of all iterations: sd 1 / mean 2
    assert class_spread([i[:6] for i in its], {})["a"] == pytest.approx(0.5)


def test_receiving_fit_recovers_a_fifo_thread():
    """Pushes sent at random, each L = 2 ms on its own way then received one at a time for
    r = 5 ms in arrival order: the fit gives L and r back (to its grid's step) and predicts
    the arrivals far better than a constant transfer does."""
    import numpy as np

    from netsim.testbed.calibrate import fit_receiving

    rng = np.random.default_rng(3)
    sent = np.sort(rng.uniform(0.0, 3.0, 600))
    arrived, free = [], -np.inf
    for t in sent:
        free = max(t + 0.002, free) + 0.005
        arrived.append(free)
    latency, receive, quality = fit_receiving(sent, arrived)
    step = float(np.median(np.asarray(arrived) - sent)) / 40 / 20  # the fine grid's step
    assert latency == pytest.approx(0.002, abs=step)
    assert receive == pytest.approx(0.005, abs=step)
    assert quality["mae"] < 0.1 * quality["mae_without"]


def test_copies_and_hand_overs_are_the_servers_time():
    """At 0.1 s per unit: push A served 0-1, push B (arrived 0.5, so waiting) 1.2-2, a copy
    for an evaluation 2.5-2.6 (nothing waiting at 2: a gap of idleness), push C (arrived
    2.55, waiting behind the copy) 3-4, a copy made inside C's service (3.5-3.6). B's
    service gains its 0.2-unit hand-over, C's its 0.4 and loses its copy; the copies are
    0.01 s and 0.01 s (the first had nothing waiting before it)."""
    from netsim.testbed.calibrate_io import _server_times

    rows = [
        {"kind": "push", "start": 0.0, "end": 1.0, "real_s": 0.1, "updates": 1},
        {"kind": "push", "start": 1.2, "end": 2.0, "real_s": 0.08, "updates": 1},
        {"kind": "snapshot", "start": 2.5, "end": 2.6, "real_s": 0.01},
        {"kind": "snapshot", "start": 3.5, "end": 3.6, "real_s": 0.01},
        {"kind": "push", "start": 3.0, "end": 4.0, "real_s": 0.1, "updates": 1},
    ]
    rows = [{**r, "worker": "0", "iteration": "", "gradients": "1", "average_s": ""} for r in rows]
    pushes, sends, _, _, snapshots, added = _server_times(rows, [0.0, 0.5, 2.55], 0.1)
    assert added == pytest.approx([0.02, 0.04])
    assert [p for p, _ in pushes] == pytest.approx([0.1, 0.08 + 0.02, 0.1 - 0.01 + 0.04])
    assert snapshots == pytest.approx([0.01, 0.01]) and sends == []


def test_calibrate_fits_the_copies(tmp_path):
    """The hand-made run of :func:`_folder` with a copy of 0.4 ms for an evaluation in each
    idle second between rounds: snapshot_time 0.004 units, the service fit unchanged."""
    path = _folder(tmp_path, 12)
    server = (path / "measured_server.csv").read_text().splitlines()
    out, t_end = [server[0]], None
    for line in server[1:]:
        out.append(line)
        if line.startswith("push,1,"):
            t_end = float(line.split(",")[4])
            out.append(f"snapshot,,,{t_end + 0.5},{t_end + 0.504},0.0004,,,")
    (path / "measured_server.csv").write_text("\n".join(out) + "\n")
    fit = api.calibrate(path)["server"]
    assert fit["snapshot_time"] == pytest.approx(0.0004 / 0.1)
    assert fit["apply_time"] == pytest.approx(APPLY / 0.1)
    assert fit["gradient_time"] == pytest.approx(GRADIENT / 0.1)


def test_cli_says_the_servers_own_time(tmp_path):
    """`netsim calibrate` prints the fitted table on stdout and, on stderr, the hand-overs,
    copies and averaging it read (here: 12 rounds averaging 2 gradients in 2 ms)."""
    from typer.testing import CliRunner

    from netsim.cli import app

    res = CliRunner().invoke(app, ["calibrate", str(_folder(tmp_path, 12, average=0.002))])
    assert res.exit_code == 0, res.output
    assert "average_time = 0.01" in res.stdout
    assert "0 copies for the curve" in res.stderr and "0.001 s per gradient averaged" in res.stderr


def test_a_copy_after_the_last_push_counts_too():
    """A copy for the curve written after the run's last push (the end of the run) is one
    of the server's copies like the others."""
    from netsim.testbed.calibrate_io import _server_times

    rows = [
        {"kind": "push", "start": 0.0, "end": 1.0, "real_s": 0.1, "updates": 1},
        {"kind": "snapshot", "start": 1.5, "end": 1.6, "real_s": 0.01},
        {"kind": "push", "start": 2.0, "end": 3.0, "real_s": 0.1, "updates": 1},
        {"kind": "snapshot", "start": 3.5, "end": 3.7, "real_s": 0.02},
    ]
    rows = [{**r, "worker": "0", "iteration": "", "gradients": "1", "average_s": ""} for r in rows]
    _, _, _, _, snapshots, added = _server_times(rows, [0.0, 1.8], 0.1)
    assert snapshots == pytest.approx([0.01, 0.02]) and added == []
