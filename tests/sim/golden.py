"""Golden output hashes: proof that a speed-up changes no result.

Runs a fixed list of (scenario, overrides, rules) cases and records the sha256 of
each run's ``updates.csv``, ``curve.csv`` and ``summary.json`` in
``tests/sim/golden_hashes.json``; ``tests/sim/test_golden.py`` reruns the cases and
compares. The file was first written by the code *before* the emulator was
optimised, so the optimised code is checked against an independent record.

``summary.json`` is hashed after removing the keys in :data:`EXCLUDED_SUMMARY_KEYS`
(``wall_s``: wall-clock time differs on every run; ``time_unit``: a label). If a later change adds a summary
field legitimately, regenerate (``python tests/sim/golden.py``) only after
checking that the ``updates.csv`` and ``curve.csv`` hashes still match:
``python tests/sim/golden.py --check`` prints which files differ.

The cases cover every shipped scenario (``scenarios/*.toml``) with the rules it
configures, and every rule of :data:`netsim.rules.RULES` twice: on the MNIST paper
scenario (constant compute times) and on the digits quickstart (random compute times),
plus compact gradients, measured grouping, group timeouts and timed regrouping.
Horizons are short so that the test is quick.

The hashes hold for the machines whose float kernels round as the generating one's did:
``float_fingerprints`` lists the kernel fingerprints (:func:`float_fingerprint`) on which
every case was checked to give the stored hashes; the test runs where the fingerprint is
listed and skips elsewhere. ``--vouch`` checks every case on this machine and, when all are
the same, adds its fingerprint to the list (so the test becomes meaningful here too).

A machine whose kernels round otherwise can still be held to the record: ``--record-family``
checks that every run applies the recorded updates (``updates.csv`` the same) and then
records its own hashes of all files for its kernel fingerprint; the test compares there too.

Usage: python tests/sim/golden.py [--check | --vouch | --record-family | --fill] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "sim" / "golden_hashes.json"
DATA_DIR = ROOT.parent / "shared" / "data"
FILES = ("updates.csv", "curve.csv", "summary.json")
EXCLUDED_SUMMARY_KEYS = ("wall_s", "time_unit")
"""``wall_s`` differs on every run; ``time_unit`` only names the unit of the same numbers
(the paper preset says "time units" since the hashes were recorded)."""

ALL_RULES = (
    "ssgd",
    "asgd",
    "gsgd",
    "backup",
    "abs",
    "lgc",
    "dcasgd_c",
    "dcasgd_a",
    "ssp",
    "ksync",
    "kbatch_sync",
    "kasync",
    "kbatch_async",
    "sa_asgd",
)
"""Every rule; the test checks that this list is netsim.rules.RULES."""

# Hyper-parameters of the rules the digits scenarios do not configure (8 workers).
_EXTRA_RULES = (
    "algorithms.backup={lr=0.3, backups=2}",
    "algorithms.abs={lr=0.1, k0=2, p=0.5, c=1.0}",
    "algorithms.lgc={lr=0.3, k=4, blocks=4}",
    "algorithms.dcasgd_c={lr=0.05, lambda0=0.04}",
    "algorithms.dcasgd_a={lr=0.05, lambda0=2.0, m=0.95, eps=1e-7}",
    "algorithms.ssp={lr=0.05, s=2}",
    "algorithms.ksync={lr=0.3, k=4}",
    "algorithms.kbatch_sync={lr=0.3, k=4}",
    "algorithms.kasync={lr=0.1, k=3}",
    "algorithms.kbatch_async={lr=0.1, k=3}",
    "algorithms.sa_asgd={lr=0.1}",
)
_EXP_TIMES = (
    'workers=[{name="fast", count=2, compute={dist="exponential", mean=1.0}}, '
    '{name="medium", count=2, compute={dist="shifted_exponential", shift=1.0, mean=1.0}}, '
    '{name="slow", count=4, compute={dist="uniform", low=2.0, high=5.0}, latency=0.05}]'
)

CASES = [
    # every shipped scenario, the rules it configures, a short horizon
    {
        "id": "quickstart",
        "scenario": "quickstart.toml",
        "rules": ["ssgd", "asgd", "gsgd"],
        "set": ["run.until=60"],
    },
    {
        "id": "crash",
        "scenario": "crash.toml",
        "rules": ["ssgd", "asgd", "gsgd"],
        "set": ["run.until=160"],
    },
    {
        "id": "drift",
        "scenario": "drift.toml",
        "rules": ["ssgd", "asgd", "gsgd"],
        "set": ["run.until=240", "algorithms.gsgd.regroup_every=150"],
    },
    {
        "id": "fat_tree_ps",
        "scenario": "fat_tree_ps.toml",
        "rules": ["ssgd", "asgd", "gsgd"],
        "set": ["run.until=8"],
    },
    {
        "id": "geo_gsgd",
        "scenario": "geo_gsgd.toml",
        "rules": ["ssgd", "asgd", "gsgd"],
        "set": ["run.until=8"],
    },
    {
        "id": "noniid",
        "scenario": "noniid_speed_skew.toml",
        "rules": ["ssgd", "asgd", "gsgd"],
        "mnist": True,
        "set": ["run.until=12", "run.eval_every=4"],
    },
    {
        "id": "busy_server",
        "scenario": "busy_server.toml",
        "rules": ["asgd", "gsgd"],
        "mnist": True,
        "set": ["run.until=6", "run.eval_every=3"],
    },
    {
        "id": "paper",
        "scenario": "gsgd_paper.toml",
        "rules": list(ALL_RULES),
        "mnist": True,
        "set": ["run.until=24", "run.eval_every=8"],
    },
    # every rule on digits with random (exponential) compute times and a latency
    {
        "id": "digits_all_rules",
        "scenario": "quickstart.toml",
        "rules": list(ALL_RULES),
        "set": ["run.until=50", "run.eval_every=5", _EXP_TIMES, *_EXTRA_RULES],
    },
    # compact gradients (L2 = 0), evaluation every k updates, max_updates
    {
        "id": "digits_compact",
        "scenario": "quickstart.toml",
        "rules": ["ssgd", "asgd", "gsgd", "kasync", "dcasgd_a"],
        "set": [
            "run.until=60",
            "run.compact_gradients=true",
            "model.l2=0.0",
            "run.eval_every=0",
            "run.eval_every_updates=7",
            "run.max_updates=40",
            *(r for r in _EXTRA_RULES if not r.startswith("algorithms.lgc")),
        ],
    },
    # GSGD options: measured grouping, group timeout, regrouping on a time interval
    {
        "id": "digits_gsgd_auto",
        "scenario": "quickstart.toml",
        "rules": ["gsgd"],
        "set": [
            "run.until=80",
            'algorithms.gsgd.grouping="silhouette"',
            "algorithms.gsgd.group_timeout=1.5",
            "algorithms.gsgd.regroup_every_s=35.0",
        ],
    },
    {
        "id": "crash_timeout_all",
        "scenario": "crash.toml",
        "rules": ["ssgd", "asgd", "gsgd", "abs", "lgc", "ssp"],
        "set": [
            "run.until=150",
            "run.eval_every=25",
            "algorithms.abs={lr=0.1, k0=3, p=0.5, c=1.0}",
            "algorithms.lgc={lr=0.3, k=6, blocks=3}",
            "algorithms.ssp={lr=0.02, s=2}",
        ],
    },
]


def load_case(case: dict, data_dir: Path | str = DATA_DIR):
    """(Scenario, Prepared) of *case*: the data, shards and initial model its rules share."""
    from netsim.config.scenario import load_scenario
    from netsim.sim.engine import prepare

    sc = load_scenario(
        ROOT / "scenarios" / case["scenario"], list(case["set"]), data_dir=str(data_dir)
    )
    return sc, prepare(sc)


def run_rule(sc, prepared, rule: str) -> dict[str, str]:
    """Run *rule* on scenario *sc*, write its folder; return ``{file: sha256 hex}``."""
    from netsim.results.runfolder import write_run
    from netsim.sim.engine import simulate

    result = simulate(sc.with_algorithm(rule), rule, prepared=prepared)
    with tempfile.TemporaryDirectory() as tmp:
        write_run(result, tmp)
        return {name: file_hash(Path(tmp) / name) for name in FILES}


def run_case(case: dict, data_dir: Path | str = DATA_DIR) -> dict[str, dict[str, str]]:
    """Run every rule of *case*; return ``{rule: {file: sha256 hex}}``."""
    sc, prepared = load_case(case, data_dir)
    return {rule: run_rule(sc, prepared, rule) for rule in case["rules"]}


def file_hash(path: Path) -> str:
    """sha256 of the file's bytes; for summary.json, of its JSON without the excluded keys."""
    data = path.read_bytes()
    if path.name == "summary.json":
        summary = json.loads(data)
        for key in EXCLUDED_SUMMARY_KEYS:
            summary.pop(key, None)
        data = (json.dumps(summary, indent=2, allow_nan=True) + "\n").encode()
    return hashlib.sha256(data).hexdigest()


def float_fingerprint() -> str:
    """sha256 of the floating-point kernels the runs lean on (BLAS products, exp/log, sums).

    The hashes hold for one numpy/BLAS build on one CPU family: a different build may
    round matrix products differently without any change in netsim. The test compares
    runs only where this fingerprint matches the one stored with the hashes.
    """
    rng = np.random.default_rng(20261123)
    h = hashlib.sha256()
    for n, d in ((32, 785), (16, 65), (1000, 785), (8, 7850)):
        X, w, r = rng.normal(size=(n, d)), rng.normal(size=d), rng.normal(size=n)
        z = X @ w
        for arr in (
            z,
            X.T @ r,
            np.logaddexp(0.0, z),
            np.exp(-np.abs(z)),
            X.T @ X[:, :10],
            np.array([z.sum(), z.mean()]),
        ):
            h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()


def valid_fingerprints(document: dict) -> list[str]:
    """The kernel fingerprints the stored hashes hold for (the old single-entry form too)."""
    listed = document.get("float_fingerprints")
    if listed is None:
        listed = [document["float_fingerprint"]] if "float_fingerprint" in document else []
    return list(listed)


def family_hashes(document: dict, fingerprint: str) -> dict | None:
    """``{case id: {rule: {file: hash}}}`` that hold for kernels *fingerprint*: the record's
    own where it was vouched for them, else a family's recorded with ``--record-family``,
    else None."""
    if fingerprint in valid_fingerprints(document):
        return {cid: case["hashes"] for cid, case in document["cases"].items()}
    family = document.get("families", {}).get(fingerprint)
    return None if family is None else family["cases"]


def _record_family(document: dict, cases: dict) -> int:
    """Record this machine's hashes for its kernels, if its runs have the stored events."""
    events = [
        (cid, rule)
        for cid, case in cases.items()
        for rule, files in case["hashes"].items()
        if document["cases"][cid]["hashes"][rule]["updates.csv"] != files["updates.csv"]
    ]
    if events:
        print(
            f"{len(events)} run(s) apply other updates than the record (first: {events[0]}): not a kernel family"
        )
        return 1
    families = document.setdefault("families", {})
    families[float_fingerprint()] = {
        "note": "updates.csv the record's in every case; curve.csv and summary.json as these kernels round",
        "cases": {cid: case["hashes"] for cid, case in cases.items()},
    }
    GOLDEN.write_text(json.dumps(document, indent=1) + "\n")
    print(f"recorded this machine's kernel family in {GOLDEN.relative_to(ROOT)}")
    return 0


def _fill(document: dict, cases: dict) -> int:
    """Record this machine's hash where its kernels' record (vouched or family) holds null."""
    record = family_hashes(document, float_fingerprint())  # the stored dicts themselves
    if record is None:
        print("no record for these kernels: nothing to fill")
        return 1
    filled = 0
    for cid, case in cases.items():
        for rule, files in case["hashes"].items():
            stored = record[cid][rule]
            if any(stored[n] not in (None, files[n]) for n in FILES):
                continue  # another run than the record's: leave it null
            for n in FILES:
                if stored[n] is None:
                    stored[n], filled = files[n], filled + 1
    GOLDEN.write_text(json.dumps(document, indent=1) + "\n")
    print(f"filled {filled} hash(es) in {GOLDEN.relative_to(ROOT)}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="compare with the stored hashes, write nothing"
    )
    parser.add_argument(
        "--vouch",
        action="store_true",
        help="check every case; when all are the same, list this machine's kernels as giving them",
    )
    parser.add_argument(
        "--record-family",
        action="store_true",
        help="where this machine's kernels round differently: when every updates.csv is the "
        "stored one (the same events), record this machine's hashes of all files for its kernels",
    )
    parser.add_argument(
        "--fill",
        action="store_true",
        help="record the hashes stored as null (not yet recorded for these kernels), where "
        "every other file of the run is the stored one",
    )
    parser.add_argument("--data-dir", default=str(DATA_DIR))
    args = parser.parse_args()
    document = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    stored = {cid: case["hashes"] for cid, case in document.get("cases", {}).items()}
    if not args.vouch:  # this machine's kernel family, where one is recorded
        stored = family_hashes(document, float_fingerprint()) or stored
    cases, bad = {}, 0
    for case in CASES:
        hashes = run_case(case, args.data_dir)
        cases[case["id"]] = {**case, "hashes": hashes}
        old = stored.get(case["id"], {})
        for rule, files in hashes.items():
            want = old.get(rule, {})
            diff = [n for n in FILES if n not in want or want[n] not in (None, files[n])]
            bad += bool(diff)
            print(
                f"{case['id']:18s} {rule:12s} {'same' if not diff else 'DIFFERS: ' + ', '.join(diff)}",
                flush=True,
            )
    if args.check:
        return 1 if bad else 0
    if args.fill:
        return _fill(document, cases)
    if args.record_family:
        return _record_family(document, cases)
    if args.vouch:
        if bad:
            print(f"{bad} case(s) differ: this machine's kernels do not give the stored hashes")
            return 1
        listed = valid_fingerprints(document)
        if float_fingerprint() not in listed:
            document["float_fingerprints"] = [*listed, float_fingerprint()]
            document.pop("float_fingerprint", None)
            GOLDEN.write_text(json.dumps(document, indent=1) + "\n")
        print(f"every case the same: {GOLDEN.relative_to(ROOT)} lists this machine's kernels")
        return 0
    GOLDEN.write_text(
        json.dumps(
            {
                "files": list(FILES),
                "excluded_summary_keys": list(EXCLUDED_SUMMARY_KEYS),
                "float_fingerprints": [float_fingerprint()],
                "cases": cases,
            },
            indent=1,
        )
        + "\n"
    )
    print(f"wrote {GOLDEN.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
