"""A run's model-sized vectors are reused, never while anything still refers to them, and a
torch run makes as many as are alive at once: counted against what each rule must hold."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from conftest import base_raw, make_scenario

from netsim.workload.buffers import Buffers


def test_a_buffer_comes_back_only_when_its_last_view_is_gone():
    vectors = Buffers(1000, np.float32)
    a = vectors.take()
    a[:] = 7.0
    view = a[10:20]
    del a
    gc.collect()
    b = vectors.take()  # a's buffer is still in use through the view: a new one
    b[:] = 1.0
    assert vectors.made == 2 and np.all(view == 7.0)
    del view, b
    gc.collect()
    c, d = vectors.take(), vectors.take()
    assert vectors.made == 2 and c.shape == d.shape == (1000,) and c.dtype == np.float32


def test_buffers_go_with_their_owner_and_arrays_keep_theirs():
    vectors = Buffers(10, np.float64)
    a = vectors.take()
    a[:] = np.arange(10)
    del vectors
    gc.collect()
    assert a.tolist() == list(range(10))  # still readable: the array holds its memory


torch = pytest.importorskip("torch", reason="optional extra: pip install 'netsim[torch]'")

from netsim.sim.engine import Simulation, prepare  # noqa: E402


@pytest.mark.parametrize(
    "rule, held",
    [
        ("asgd", lambda w: w + 1),  # each worker's version, and the gradient being made
        ("ssgd", lambda w: w + 1),  # a round's w gradients (the mean goes into one), the model read
    ],
)
@pytest.mark.parametrize("n_workers", [2, 5])
def test_a_torch_run_makes_as_many_vectors_as_are_alive_at_once(rule, held, n_workers):
    """Workers of different constant speeds (1, 1.3, 1.6, ...) so no two ASGD versions are
    shared once every worker has pushed; 40 updates reach that state. Under SSGD, from the
    second round on, the round's gradients, the model they were computed on (the workers
    keep it until the next) are alive together; their mean is written into the first
    gradient (in worker order), which then becomes the new model."""
    raw = base_raw(
        run={"seed": 1, "algorithm": rule, "until": 1000.0, "batch_size": 8, "max_updates": 40},
        model={"backend": "torch", "name": "mlp", "hidden": [16]},
        workers=[{"name": f"w{i}", "count": 1, "compute": 1.0 + 0.3 * i} for i in range(n_workers)],
    )
    sc = make_scenario(raw)
    sim = Simulation(sc, rule, prepare(sc))
    result = sim.run()
    assert result.updates == 40
    assert sim.model.vectors.made == held(n_workers) <= n_workers + 4


def test_a_gsgd_run_holds_its_gradients_two_models_and_a_mean():
    """Groups {w0, w1} (1.0 and 1.3 s a gradient) and {w2, w3} (1.6, 1.9): group b's update at
    t = 3.8 s finds a's round of 2.6 s with w0's gradient pushed (at 3.6 s). Alive then: b's two
    gradients, w0's, b's model and a's (the current one, b read an older one); b's mean is
    written into b's first gradient: 3 + 2 = 5 = workers + 1, within workers + 4."""
    names = ["w0", "w1", "w2", "w3"]
    raw = base_raw(
        run={"seed": 1, "algorithm": "gsgd", "until": 1000.0, "batch_size": 8, "max_updates": 40},
        model={"backend": "torch", "name": "mlp", "hidden": [16]},
        workers=[{"name": n, "count": 1, "compute": c} for n, c in zip(names, [1, 1.3, 1.6, 1.9])],
        algorithms={"gsgd": {"lr": 0.1, "groups": [names[:2], names[2:]]}},
    )
    sc = make_scenario(raw)
    sim = Simulation(sc, "gsgd", prepare(sc))
    assert sim.run().updates == 40
    assert sim.model.vectors.made == 4 + 1
