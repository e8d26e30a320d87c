"""TensorBoard export (optional extra): one event file per run with the loss and accuracy scalars."""

from __future__ import annotations

import pytest
from conftest import base_raw, make_scenario

from netsim import api


def test_tensorboard_scalars_match_the_curve(tmp_path):
    pytest.importorskip("tensorboardX", reason="optional extra: pip install 'netsim[tensorboard]'")
    raw = base_raw()
    raw["run"].update(until=6.0, eval_every=2.0)
    run = api.run(make_scenario(raw), out=tmp_path / "r")
    folders = api.export_tensorboard(tmp_path / "r")
    loss = [
        (e.step, v.simple_value, e.wall_time)
        for e in read_events(next(folders[0].glob("events.*")))
        for v in e.summary.value
        if v.tag == "loss"
    ]
    assert [s for s, _, _ in loss] == run.curve["update"].tolist()
    assert [v for _, v, _ in loss] == pytest.approx(
        run.curve["loss"].tolist(), rel=1e-6
    )  # float32 in the file
    assert [t for _, _, t in loss] == pytest.approx(run.curve["sim_time"].tolist())


def read_events(path):
    """The Event protos of a TFRecord file: per record a u64 length, u32 CRC, the bytes, u32 CRC."""
    import struct

    from tensorboardX.proto.event_pb2 import Event

    data, i, out = path.read_bytes(), 0, []
    while i < len(data):
        (n,) = struct.unpack_from("<Q", data, i)
        out.append(Event.FromString(data[i + 12 : i + 12 + n]))
        i += 12 + n + 4
    return out


def test_tensorboard_missing_says_how_to_install(tmp_path, monkeypatch):
    import builtins

    real = builtins.__import__

    def no_tbx(name, *args, **kwargs):
        if name.startswith("tensorboardX"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tbx)
    raw = base_raw()
    raw["run"]["until"] = 3.0
    api.run(make_scenario(raw), out=tmp_path / "r")
    with pytest.raises(ImportError, match=r"pip install 'netsim\[tensorboard\]'"):
        api.export_tensorboard(tmp_path / "r")
