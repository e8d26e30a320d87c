"""Read what a real run's folder measured into :func:`.calibrate.fit_run`'s terms, and write
the fitted keys as TOML to paste into a scenario."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from ..config.scenario import load_scenario
from ..errors import ScenarioError
from ..sim.summary import Summary
from ..workload.replayed import GRADIENTS_FILE
from .calibrate import (
    Calibration,
    RunFit,
    class_overheads,
    class_spread,
    combine,
    fit_receiving,
    fit_run,
    handovers,
)
from .measured import SERVER_FILE, cpu_share

__all__ = ["read_fit", "calibration_toml", "calibrate_folders", "NotCalibratable"]


class NotCalibratable(ValueError):
    """A folder that cannot be calibrated from; the message names the folder or its file."""


def _rows(path: Path) -> list[dict]:
    if not path.is_file():
        raise NotCalibratable(
            f"{path}: missing (a real run's folder written by this netsim's `netsim real` has it)"
        )
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise NotCalibratable(f"{path}: not readable ({type(exc).__name__}: {exc})") from None


def read_fit(folder: str | Path, receiving: bool = False, cpu: bool = False) -> RunFit:
    """The :class:`RunFit` of the real run in *folder*. *receiving*: give the server a
    receiving thread (:func:`.fit_receiving`'s time per push; the overheads then count a
    push up to its send plus its own latency), else its receiving is left in the overheads
    (the fit is still reported in ``quality``). *cpu*: fit the server's costs from its
    serving thread's CPU time instead of its wall time (a server with cores of its own; the
    hand-overs are scaled by the run's CPU share). ``quality`` has ``server_cpu_share`` and
    ``compute_cpu_share`` (CPU over wall time of the server's jobs and of the gradients)
    when the folder records CPU times. Raises NotCalibratable naming the folder or the file
    at fault (not a real run, a measured file missing or damaged, too few updates, no CPU
    times for *cpu*)."""
    folder = Path(folder)
    try:
        summary: Summary = json.loads((folder / "summary.json").read_text())
        real = summary["real"]
        scale, params = float(real["time_scale"]), int(real["params"])
        message_bytes = int(real["message_bytes"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        if isinstance(exc, OSError):
            why = "no summary.json"
        elif isinstance(exc, KeyError):
            why = f"its summary.json has no {exc.args[0]!r} entry: an emulated run's, or damaged"
        else:
            why = f"its summary.json is damaged: {type(exc).__name__}: {exc}"
        raise NotCalibratable(
            f"{folder}: not a real run's folder with the server's measurements ({why}; "
            "netsim real writes one)"
        ) from None
    server = _rows(folder / SERVER_FILE)
    gradients = _rows(folder / GRADIENTS_FILE)
    try:
        sc = load_scenario(folder / "scenario.toml")
    except (ScenarioError, OSError) as exc:
        raise NotCalibratable(f"{folder / 'scenario.toml'}: {exc}") from None
    shares = _cpu_shares(server, gradients)
    if cpu and shares["server_cpu_share"] is None:
        raise NotCalibratable(
            f"{folder / SERVER_FILE}: no CPU times (cpu_s), as an earlier netsim wrote it: "
            "calibrate without --cpu, or measure again with `netsim real`"
        )
    try:
        sent, arrived = _push_stamps(gradients, scale)
        pushes, sends, send_end, average, snapshots, added = _server_times(
            server, [a / scale for a in arrived], scale, shares["server_cpu_share"] if cpu else None
        )
        latency, receive, received = fit_receiving(sent, arrived)
        iterations = _iterations(gradients, send_end, scale, latency if receiving else None)
    except (KeyError, ValueError, TypeError) as exc:
        raise NotCalibratable(
            f"{folder}: {SERVER_FILE} or {GRADIENTS_FILE} is damaged ({type(exc).__name__}: {exc})"
        ) from None
    injected = {wc.name: (wc.pull_latency * scale, wc.push_latency * scale) for wc in sc.workers}
    overheads, spread = class_overheads(iterations, injected), class_spread(iterations, injected)
    try:
        fit = fit_run(str(folder), params, message_bytes, scale, pushes, sends, overheads, spread)
    except ValueError as exc:
        raise NotCalibratable(f"{folder / SERVER_FILE}: {exc}") from None
    quality = {**fit.quality, **{f"receive_{k}": v for k, v in received.items()}}
    quality.update(receive_s=receive, latency_s=latency, receiving=receiving)
    quality["average_s"] = average
    snapshot = float(sum(snapshots) / len(snapshots)) if snapshots else 0.0
    quality.update(snapshots=len(snapshots), snapshot_s=snapshot)
    quality.update(handovers=len(added), handover_s=sum(added) / len(added) if added else 0.0)
    quality.update(shares, cpu=cpu)
    fit = replace(fit, average=average, quality=quality, snapshot=snapshot)
    if not receiving:
        return fit
    return replace(fit, receive=receive, latency=latency)


def _push_stamps(rows: list[dict], scale: float) -> tuple[list[float], list[float]]:
    """(sent, arrived) of every push that reached the server (s on the server's clock): its
    arrival less its measured transfer."""
    sent, arrived = [], []
    for r in rows:
        if r["arrived"] and r["push_transfer_s"]:
            at = float(r["arrived"]) * scale
            arrived.append(at)
            sent.append(at - float(r["push_transfer_s"]))
    return sent, arrived


def _cpu_shares(server: list[dict], gradients: list[dict]) -> dict[str, float | None]:
    """CPU over wall time of the server's jobs (``server_cpu_share``) and of the workers'
    gradients (``compute_cpu_share``), summed over the rows that record both (None: none
    does, a folder of an earlier netsim). Below 1 by the share of the time spent waiting for
    a core (or, for the server, for the transport).

    >>> _cpu_shares([{"real_s": "0.004", "cpu_s": "0.003"}], [{"compute_real_s": "0.01"}])
    {'server_cpu_share': 0.75, 'compute_cpu_share': None}
    """

    def share(rows: list[dict], wall: str, cpu: str) -> float | None:
        got = cpu_share((float(r[wall]), float(r[cpu])) for r in rows if r.get(wall) and r.get(cpu))
        return None if got is None else round(got, 6)

    return {
        "server_cpu_share": share(server, "real_s", "cpu_s"),
        "compute_cpu_share": share(gradients, "compute_real_s", "compute_cpu_s"),
    }


def _server_times(
    rows: list[dict], arrived: list[float], scale: float, cpu_share: float | None = None
) -> tuple[
    list[tuple[float, int]],
    list[float],
    dict[tuple[int, int], float],
    float,
    list[float],
    list[float],
]:
    """(pushes [(s without its messages, copies and averaging, updates)], sends [s], (worker,
    iteration) → the message's end in units, the mean averaging time per gradient averaged
    (s; 0 when no update averaged several), snapshots [s per copy of the model], the
    hand-overs added [s, the non-zero ones]) from
    ``measured_server.csv``'s rows. A push's messages and copies are the send and snapshot
    rows before it (it is written when its service ends) that started after it did; the
    others were jobs of their own. The server's hand-over before a push or a copy
    (:func:`.handovers`, with the pushes' *arrived* stamps in units) is added to it. With
    *cpu_share* the times are the rows' CPU seconds (``cpu_s``, ``average_cpu_s``) and each
    hand-over is scaled by it."""
    pushes: list[tuple[float, int]] = []
    sends: list[float] = []
    send_end: dict[tuple[int, int], float] = {}
    snapshots: list[float] = []
    jobs: list[tuple[str, float, float, int]] = []  # kind, start, end, index in its list
    recent: list[tuple[str, float, float, float]] = []
    averaging, averaged = 0.0, 0

    def own_jobs(before: float) -> None:
        """The sends and copies of *recent* that started before *before*: jobs of their own."""
        for kind, s0, s1, sec in recent:
            if s0 < before:
                if kind == "snapshot":
                    snapshots.append(sec)
                jobs.append((kind, s0, s1, len(snapshots) - 1 if kind == "snapshot" else -1))

    for r in rows:
        start, end = float(r["start"]), float(r["end"])
        seconds = float(r["real_s"] if cpu_share is None else r["cpu_s"])
        if r["kind"] == "send":
            sends.append(seconds)
            send_end[(int(r["worker"]), int(r["iteration"]))] = end
            recent.append(("send", start, end, seconds))
        elif r["kind"] == "snapshot":
            recent.append(("snapshot", start, end, seconds))
        elif r["kind"] == "push":
            inside = [x for x in recent if x[1] >= start]
            own_jobs(start)
            own = sum(x[3] for x in inside)
            snapshots.extend(x[3] for x in inside if x[0] == "snapshot")
            average = float(r.get("average_s" if cpu_share is None else "average_cpu_s") or 0.0)
            if average > 0:
                averaging, averaged = averaging + average, averaged + int(r["gradients"])
            pushes.append((max(0.0, seconds - own - average), int(r["updates"])))
            jobs.append(("push", start, end, len(pushes) - 1))
            recent = []
    own_jobs(float("inf"))  # after the last push: the run's last copies
    taken = [j[1] for j in jobs if j[0] == "push"]
    gaps = handovers([(j[1], j[2]) for j in jobs], arrived, taken)
    if cpu_share is not None:
        gaps = [g * cpu_share for g in gaps]
    for (kind, _, _, i), gap in zip(jobs, gaps):
        if kind == "push":
            pushes[i] = (pushes[i][0] + gap * scale, pushes[i][1])
        elif kind == "snapshot":
            snapshots[i] += gap * scale
    added = [g * scale for g in gaps if g > 0]
    return pushes, sends, send_end, averaging / averaged if averaged else 0.0, snapshots, added


def _iterations(
    rows: list[dict], send_end: dict, scale: float, latency: float | None
) -> list[tuple]:
    """Served iterations as :func:`.calibrate.class_overheads` takes them (s), each with
    the model version it read. A push counts up to its arrival, or with *latency* (s, its own
    part of the way: the server's receiving thread takes the rest, :func:`.fit_receiving`)
    up to its send plus *latency*."""
    out = []
    for r in rows:
        key = (int(r["worker"]), int(r["iteration"]))
        if r["complete"] != "1" or key not in send_end or not r["drawn"]:
            continue
        values = [send_end[key], *(float(r[c]) for c in ("compute_start", "compute_end"))]
        arrived = float(r["arrived"]) * scale
        ready = arrived
        if latency is not None and r["push_transfer_s"]:
            ready = arrived - float(r["push_transfer_s"]) + latency
        values = [v * scale for v in values] + [min(ready, arrived), float(r["drawn"]) * scale]
        version = int(r["version_read"]) if r.get("version_read") else None
        out.append((r["worker_class"], *values, version))
    return out


def _num(x: float) -> str:
    """*x* to 4 significant digits as a TOML float.

    >>> _num(3.0), _num(1.23456e-05), _num(0.0)
    ('3.0', '1.235e-05', '0.0')
    """
    return repr(float(f"{x:.4g}"))


def _value(value: float | dict) -> str:
    """An ``overhead`` value as TOML: a number, or an inline table of numbers and strings."""
    if not isinstance(value, dict):
        return _num(value)
    parts = (f'{k} = "{v}"' if isinstance(v, str) else f"{k} = {_num(v)}" for k, v in value.items())
    return "{ " + ", ".join(parts) + " }"


def calibration_toml(cal: Calibration, scale: float, own: dict) -> str:
    """The fitted keys at *scale* (s per unit) as TOML lines: the ``[server]`` table, then
    per worker class its ``overhead`` (:meth:`Calibration.overhead` with the scenario's
    *own* overheads), to paste into that class's table (its latencies stay as they are)."""
    lines = [f"# fitted from {len(cal.runs)} real run(s), at {scale:g} s per time unit"]
    if cal.runs and cal.runs[0].quality.get("cpu"):
        lines.append(
            "# [server] from the server's CPU time (--cpu): a server with cores of its own"
        )
    lines += [f"# note: {n}" for n in cal.notes]
    lines.append("[server]")
    for key, value in cal.server_table(scale).items():
        shown = (
            f'"{value}"'
            if isinstance(value, str)
            else value
            if isinstance(value, int)
            else _num(value)
        )
        lines.append(f"{key} = {shown}")
    for name, value in cal.overhead(scale, own).items():
        lines.append(f"\n# [[workers]] name = {name!r}: set in that class's table")
        lines.append(f"overhead = {_value(value)}")
    return "\n".join(lines) + "\n"


def calibrate_folders(
    folders: Iterable[str | Path],
    scale: float | None = None,
    receiving: bool = False,
    cpu: bool = False,
) -> dict:
    """Fit the real runs in *folders* (one or more): a dict with ``calibration`` (the
    :class:`Calibration`), ``scale`` (s per unit the keys are given in: *scale*, else the
    first run's), ``server`` (the ``[server]`` keys), ``overhead`` (class → its
    ``overhead`` value, units, with the first run's scenario's own), ``quality`` (per run: the
    service fit's jobs, R², relative RMS of its residuals, how it was fitted, the sends'
    count and coefficient of variation, the receiving fit's ``receive_s``, ``latency_s``,
    ``receive_pushes``, ``receive_mae`` and ``receive_mae_without`` in s), ``notes`` and
    ``toml`` (the text to paste).
    *receiving*, *cpu*: fit a receiving thread; the server's costs from its CPU time
    (:func:`read_fit`). Raises NotCalibratable."""
    fits = [read_fit(f, receiving, cpu) for f in folders]
    cal = combine(fits)
    scale = scale if scale is not None else fits[0].scale
    sc = load_scenario(Path(fits[0].folder) / "scenario.toml")
    own = {wc.name: wc.overhead for wc in sc.workers}
    return {
        "calibration": cal,
        "scale": scale,
        "server": cal.server_table(scale),
        "overhead": cal.overhead(scale, own),
        "quality": {f.folder: f.quality for f in fits},
        "notes": list(cal.notes),
        "toml": calibration_toml(cal, scale, own),
    }
