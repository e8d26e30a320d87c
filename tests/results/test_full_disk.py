"""A full disk while a command writes: no file half written (init, export, plot, report, a
run's curve.csv), and exit status 1 with one line, as docs/CLI.md says for every command."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

import netsim.results.runwriter as runwriter
from netsim.cli import app


def _netsim(capsys, *argv: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as stop:
        app(list(argv), prog_name="netsim")
    return stop.value.code, capsys.readouterr().err


def _full_after(n: int):
    """A ``write`` that takes *n* bytes, then fails as a full disk does."""

    def write(self, data, *args, **kwargs):
        head = data[:n]
        if isinstance(head, str):
            _original_text_write(self, head, *args, **kwargs)
        else:
            Path(self).write_bytes(head)
        raise OSError(errno.ENOSPC, "No space left on device")

    return write


_original_text_write = Path.write_text


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("full") / "run"
    with pytest.raises(SystemExit) as stop:
        app(
            ["run", "quickstart", "--set", "run.until=300", "--no-live", "--out", str(out)],
            prog_name="netsim",
        )
    assert stop.value.code == 0
    return out


def test_init_on_a_full_disk_leaves_no_empty_scenario(tmp_path, monkeypatch, capsys):
    target = tmp_path / "mine.toml"
    monkeypatch.setattr(Path, "write_text", _full_after(10))
    status, err = _netsim(capsys, "init", str(target))
    assert status == 1 and len(err.strip().splitlines()) == 1, err
    assert not target.exists() and not list(tmp_path.iterdir())
    monkeypatch.undo()
    assert _netsim(capsys, "init", str(target))[0] == 0  # not "exists"


def test_export_on_a_full_disk_leaves_no_partial_trace(run_folder, tmp_path, monkeypatch, capsys):
    target = tmp_path / "trace.json"
    monkeypatch.setattr(Path, "write_text", _full_after(10))
    status, err = _netsim(capsys, "export", str(run_folder), "--out", str(target))
    assert status == 1 and len(err.strip().splitlines()) == 1, err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("command", ["plot", "report"])
def test_figures_on_a_full_disk_leave_no_empty_png(
    command, run_folder, tmp_path, monkeypatch, capsys
):
    from matplotlib.figure import Figure

    def savefig(self, fname, *args, **kwargs):
        Path(fname).write_bytes(b"")  # created, then the disk is full
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", savefig)
    target = tmp_path / ("figures" if command == "plot" else "report.md")
    status, err = _netsim(capsys, command, str(run_folder), "--out", str(target))
    assert status == 1 and len(err.strip().splitlines()) == 1, err
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]


def test_a_curve_csv_whose_header_does_not_fit_is_not_left_empty(tmp_path, monkeypatch, capsys):
    real_open = open

    class Full:
        def __init__(self, fh):
            self.fh = fh

        def write(self, data):
            self.fh.write(data[:5])
            raise OSError(errno.ENOSPC, "No space left on device")

        def __getattr__(self, name):
            return getattr(self.fh, name)

    def fake_open(path, *args, **kwargs):
        fh = real_open(path, *args, **kwargs)
        return Full(fh) if Path(path).name == "curve.csv" else fh

    monkeypatch.setattr(runwriter, "open", fake_open, raising=False)
    out = tmp_path / "run"
    status, err = _netsim(
        capsys, "run", "quickstart", "--set", "run.until=300", "--no-live", "--out", str(out)
    )
    assert status == 1 and len(err.strip().splitlines()) == 1, err
    assert not (out / "curve.csv").exists()
