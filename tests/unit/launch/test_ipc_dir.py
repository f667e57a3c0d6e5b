"""The private directory vllmkit gives vLLM's ZeroMQ sockets (VLLM_RPC_BASE_PATH, runs.make_ipc_dir):
every socket path in it must fit a unix socket name (107 bytes on Linux), and removal touches only a
directory vllmkit made, once the run's processes are gone."""

from __future__ import annotations

import socket
import tempfile
import uuid
from pathlib import Path

import pytest

from vllmkit.launch import runs


def _record(ipc_dir: str | None) -> runs.RunRecord:
    # pid None: no process, so the run is not live
    return runs.RunRecord(run_id="r1", folder="/nonexistent", started_at=runs.now_iso(), model="m",
                          served_model_name="m", device="cpu", host="127.0.0.1", port=8000,
                          url="http://127.0.0.1:8000", ipc_dir=ipc_dir)


def test_a_socket_vllm_names_in_it_can_be_bound(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    short = Path(tempfile.mkdtemp(prefix="vk-", dir="/tmp"))
    monkeypatch.setattr(tempfile, "tempdir", str(short))
    path = runs.make_ipc_dir()
    assert path is not None and Path(path).parent == short and Path(path).name.startswith(runs.IPC_DIR_PREFIX)
    # what vLLM does with it: ipc://{VLLM_RPC_BASE_PATH}/{uuid4()} (vllm/utils/network_utils.py)
    name = f"{path}/{uuid.uuid4()}"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(name)
    runs.remove_ipc_dir(_record(path))
    assert not Path(path).exists() and short.exists()
    short.rmdir()


def test_a_deep_temp_dir_falls_back_to_tmp(monkeypatch: pytest.MonkeyPatch) -> None:
    deep = "/tmp/" + "d" * 90  # + "/vllmkit-ipc-XXXXXXXX/" + a uuid would pass 107 bytes
    monkeypatch.setattr(tempfile, "tempdir", deep)
    path = runs.make_ipc_dir()
    assert path is not None and Path(path).parent == Path("/tmp")
    assert len(path) + 1 + 36 <= runs.IPC_PATH_MAX
    runs.remove_ipc_dir(_record(path))
    assert not Path(path).exists()


def test_no_short_enough_place_leaves_vllms_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", "/tmp/" + "d" * 90)
    monkeypatch.setattr(runs, "IPC_PATH_MAX", 40)  # nothing fits: not even /tmp
    assert runs.make_ipc_dir() is None


def test_removal_spares_a_directory_vllmkit_did_not_make(tmp_path: Path) -> None:
    other = tmp_path / "not-ours"
    other.mkdir()
    runs.remove_ipc_dir(_record(str(other)))
    assert other.exists()
