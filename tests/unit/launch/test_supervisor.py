"""Supervisor + serve service against the fake vLLM (fast): health, smoke, detach/stop, failure
diagnosis, interrupts, and that no process of the server's group survives."""

from __future__ import annotations

import os
import re
import signal
import socket
import stat
import sys
import threading
import time
import weakref
from pathlib import Path
from unittest import mock

import pytest

from tests.unit.launch.fakevllm import fake_env, install_fake_vllm
from tests.unit.launch.plans import cpu_plan
from vllmkit.launch import runs
from vllmkit.launch.command import ServeEndpoint
from vllmkit.launch.service import (
    Reporter,
    ServeFailed,
    ServeOptions,
    list_runs,
    prepare,
    resolve_api_key,
    serve,
    stop_runs,
)
from vllmkit.launch.supervisor import StopRequested, Supervisor, forward_signals, health_timeout_s


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def fake(tmp_path: Path) -> dict[str, str]:
    site = install_fake_vllm(tmp_path)
    return fake_env(
        site, VLLMKIT_STATE_DIR=str(tmp_path / "state"), VLLMKIT_CACHE_DIR=str(tmp_path / "cache")
    )


def _plan(port: int, **settings: object):
    req, plan = cpu_plan()
    for k, v in settings.items():
        setattr(plan.settings, k, v)
    return req, plan, ServeEndpoint(port=port)


def _engine_pid(log: str) -> int:
    m = re.search(r"FAKE_ENGINE_PID=(\d+)", log)
    assert m, log
    return int(m.group(1))


def _assert_group_gone(pgid: int, *pids: int) -> None:
    assert runs.group_members(pgid) == []
    for pid in pids:
        assert not runs.process_alive(pid), pid


def test_detach_smoke_stop(fake: dict[str, str]) -> None:
    req, plan, ep = _plan(_free_port())
    options = ServeOptions(endpoint=ep, detach=True, stop_grace_s=5)
    prep = prepare(plan, req, options, fake)
    assert prep.launcher is not None and prep.launcher.kind == "module"
    phases: list[str] = []
    result = serve(prep, options, fake, reporter=Reporter(phase=lambda ev: phases.append(ev.phase)))
    try:
        assert result.status == "detached"
        assert result.smoke is not None and result.smoke.ok, result.smoke
        assert [c.name for c in result.smoke.checks] == [
            "health",
            "models",
            "chat",
            "chat_stream",
            "completion",
        ]
        kv = {c.quantity: c for c in result.predicted_vs_actual}
        # the fake prints 1 GiB / 512 B = 2,097,152 tokens and 2,097,152 / 1,024 = 2048.00x
        assert kv["KV cache tokens"].actual == 2097152 and kv["KV cache tokens"].match is True
        assert kv["max concurrency"].actual == 2048.0 and kv["max concurrency"].match is True
        assert {"config", "engine", "weights", "kv_cache", "engine_ready", "api_up"} <= set(phases)
        assert [v.run_id for v in list_runs(fake)] == [result.run_id]
        engine = _engine_pid(Path(result.log or "").read_text())
        assert runs.process_alive(engine)
    finally:
        stopped = stop_runs(fake, [], grace_s=5)
    assert stopped.stopped == [result.run_id]
    assert result.pid is not None
    _assert_group_gone(result.pid, result.pid, engine)
    assert list_runs(fake) == []
    assert [v.status for v in list_runs(fake, include_finished=True)] == ["stopped"]


def test_failed_start_is_diagnosed(fake: dict[str, str]) -> None:
    req, plan, ep = _plan(_free_port(), max_model_len=2048, kv_cache_memory_bytes=500000)
    options = ServeOptions(endpoint=ep, stop_grace_s=5)
    from vllmkit.doctor import diagnose_log  # what the CLI hands serve (launch does not import the doctor)

    with pytest.raises(ServeFailed) as info:
        serve(prepare(plan, req, options, fake), options, fake, diagnose=lambda text: diagnose_log(text).diagnoses)
    failure = info.value.result.failure[0]
    assert failure.code == "kv-cache-too-small"
    # 500000 // 512 = 976 tokens -> 7 blocks of 128, one is the null block -> 6 * 128 = 768
    assert failure.estimated_max_model_len == 768
    assert "768" in info.value.message
    assert int(info.value.exit_code) == 6
    result = info.value.result
    assert result.pid is not None
    _assert_group_gone(result.pid, result.pid)


def test_interrupt_during_startup_leaves_nothing(fake: dict[str, str]) -> None:
    env = dict(fake, FAKE_VLLM_MODE="hang")
    req, plan, ep = _plan(_free_port())
    options = ServeOptions(endpoint=ep, stop_grace_s=5)
    prep = prepare(plan, req, options, env)
    started: list[int] = []

    def on_phase(ev) -> None:  # type: ignore[no-untyped-def]
        if ev.phase == "kv_cache" and not started:
            started.append(1)
            threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()

    with pytest.raises(KeyboardInterrupt):
        serve(prep, options, env, reporter=Reporter(phase=on_phase))
    record = runs.all_runs(env)[0]
    assert record.status == "interrupted"
    engine = _engine_pid(record.log_path.read_text())
    assert record.pid is not None
    _assert_group_gone(record.pid, record.pid, engine)


def test_a_signal_swallowed_by_a_finalizer_still_stops_the_startup(tmp_path: Path) -> None:
    """CI once lost a Ctrl-C: it arrived while urllib3's refused health check ran a weakref finalizer,
    so forward_signals' handler raised StopRequested inside the finalizer, where Python prints the
    exception as "unraisable" and drops it, and serve waited out its 300 s health timeout. Here the
    same thing happens on purpose: the signal is sent from inside a finalizer, whose loop gives the
    handler its chance to run there. The health wait must still stop within a few polls."""
    sup = Supervisor([sys.executable, "-c", "import time; time.sleep(60)"], dict(os.environ), tmp_path / "log")
    sup.start()
    swallowed: list[BaseException | None] = []

    def signal_inside_a_finalizer() -> None:
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(100_000):  # a backward jump: the pending Python handler runs here
            pass

    try:
        with forward_signals(sup), mock.patch.object(sys, "unraisablehook", lambda u: swallowed.append(u.exc_value)):
            holder = type("Holder", (), {})()
            weakref.finalize(holder, signal_inside_a_finalizer)
            del holder
            assert [type(e) for e in swallowed] == [StopRequested]  # the handler's exception was dropped
            started = time.monotonic()
            with pytest.raises(StopRequested):
                sup.wait_healthy(f"http://127.0.0.1:{_free_port()}/health", 30.0, poll_s=0.05)
            assert time.monotonic() - started < 5.0
    finally:
        sup.interrupt()
    assert sup.returncode() is not None


def test_a_swallowed_signal_after_startup_stops_instead_of_detaching(fake: dict[str, str]) -> None:
    """`serve --detach`: a Ctrl-C that lands in a finalizer after the server became healthy (while the
    smoke test's HTTP client cleans up, say) is dropped as "unraisable" like the one above; serve must
    still stop the server instead of detaching it and reporting success."""
    req, plan, ep = _plan(_free_port())
    options = ServeOptions(endpoint=ep, detach=True, smoke=False, stop_grace_s=5)
    swallowed: list[BaseException | None] = []

    def signal_inside_a_finalizer() -> None:
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(100_000):  # the pending Python handler runs here, inside the finalizer
            pass

    def on_healthy(_log: str, _where: str) -> None:
        holder = type("Holder", (), {})()
        weakref.finalize(holder, signal_inside_a_finalizer)
        del holder

    with mock.patch.object(sys, "unraisablehook", lambda u: swallowed.append(u.exc_value)):
        result = serve(prepare(plan, req, options, fake), options, fake, reporter=Reporter(healthy=on_healthy))
    if result.status == "detached":  # the bug: do not leave the server behind when the test fails
        stop_runs(fake, [result.run_id or ""], grace_s=1)
    assert [type(e) for e in swallowed] == [StopRequested]
    assert result.status == "stopped"
    assert result.pid is not None
    _assert_group_gone(result.pid, result.pid)


def test_health_timeout(fake: dict[str, str]) -> None:
    env = dict(fake, FAKE_VLLM_MODE="hang")
    req, plan, ep = _plan(_free_port())
    options = ServeOptions(endpoint=ep, health_timeout_s=2, stop_grace_s=5)
    with pytest.raises(ServeFailed) as info:
        serve(prepare(plan, req, options, env), options, env)
    assert "did not become healthy within 2 s" in info.value.message
    assert info.value.result.pid is not None
    _assert_group_gone(info.value.result.pid, info.value.result.pid)


def test_sigterm_after_ready_stops_cleanly(fake: dict[str, str]) -> None:
    req, plan, ep = _plan(_free_port())
    options = ServeOptions(endpoint=ep, smoke=False, stop_grace_s=5)
    prep = prepare(plan, req, options, fake)
    result = serve(
        prep, options, fake, reporter=Reporter(ready=lambda r: os.kill(os.getpid(), signal.SIGTERM))
    )
    assert result.status == "stopped"
    assert result.pid is not None
    _assert_group_gone(result.pid, result.pid)


def test_orphaned_engine_is_reaped_by_group_signal(fake: dict[str, str]) -> None:
    # the server exits on SIGTERM without stopping its engine: only the group signal removes it
    env = dict(fake, FAKE_VLLM_MODE="orphan")
    req, plan, ep = _plan(_free_port())
    options = ServeOptions(endpoint=ep, detach=True, smoke=False, stop_grace_s=1)
    result = serve(prepare(plan, req, options, env), options, env)
    engine = _engine_pid(Path(result.log or "").read_text())
    assert stop_runs(env, [result.run_id or ""], grace_s=1).stopped == [result.run_id]
    assert result.pid is not None
    _assert_group_gone(result.pid, result.pid, engine)


def test_api_key_reaches_child_by_env_not_argv(fake: dict[str, str]) -> None:
    env = dict(fake, VLLM_API_KEY="k-123-secret")
    req, plan, ep = _plan(_free_port())
    options = ServeOptions(endpoint=ep, detach=True, stop_grace_s=5)
    prep = prepare(plan, req, options, env)
    assert prep.api_key.origin == "env"
    result = serve(prep, options, env)
    try:
        assert result.pid is not None
        cmdline = Path(f"/proc/{result.pid}/cmdline").read_bytes()
        assert b"k-123-secret" not in cmdline
        assert "k-123-secret" not in " ".join(result.command) and "***" in result.command
        assert result.smoke is not None
        auth = [c for c in result.smoke.checks if c.name == "auth"]
        assert auth and auth[0].status == "pass"  # the fake enforces the key it got via VLLM_API_KEY
        record = runs.load(Path(result.run_folder or ""))
        assert record is not None and "k-123-secret" not in record.model_dump_json()
    finally:
        stop_runs(env, [], all_runs=True, grace_s=5)


def test_port_in_use_is_refused_before_launch(fake: dict[str, str]) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        req, plan, ep = _plan(busy.getsockname()[1])
        options = ServeOptions(endpoint=ep)
        with pytest.raises(Exception) as info:
            serve(prepare(plan, req, options, fake), options, fake)
    assert getattr(info.value, "code", "") == "port-in-use"
    assert runs.all_runs(fake) == []


def test_generated_key_for_non_loopback(tmp_path: Path) -> None:
    key = resolve_api_key("0.0.0.0", {}, api_key_file=None, no_auth=False)
    assert key.origin == "generated" and key.key and len(key.key) >= 24
    assert resolve_api_key("0.0.0.0", {}, api_key_file=None, no_auth=True).origin == "none"
    assert resolve_api_key("127.0.0.1", {}, api_key_file=None, no_auth=False).origin == "none"
    f = tmp_path / "k"
    f.write_text("from-file\n")
    assert (
        resolve_api_key("0.0.0.0", {"VLLM_API_KEY": "e"}, api_key_file=str(f), no_auth=False).key
        == "from-file"
    )
    folder = tmp_path / "run"
    folder.mkdir()
    path = runs.write_key_file(folder, "abc")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_health_timeout_scales_with_size() -> None:
    gib = 1 << 30
    # 300 s base + 20 s/GiB loading (+ 20 s/GiB download for hub models), capped at 2 h
    assert health_timeout_s(0, remote=False) == 300
    assert health_timeout_s(16 * gib, remote=False) == 300 + 320
    assert health_timeout_s(16 * gib, remote=True) == 300 + 640
    assert health_timeout_s(800 * gib, remote=True) == 7200


def test_external_stop_of_a_foreground_server_is_a_clean_end(fake: dict[str, str]) -> None:
    req, plan, ep = _plan(_free_port())
    options = ServeOptions(endpoint=ep, smoke=False, stop_grace_s=5)
    prep = prepare(plan, req, options, fake)

    def stop_from_outside(result) -> None:  # type: ignore[no-untyped-def]
        # what `vllmkit stop` from another terminal does: SIGTERM to the server, not to us
        assert result.run_id is not None
        threading.Timer(0.3, stop_runs, (fake, [result.run_id]), {"grace_s": 5}).start()

    result = serve(prep, options, fake, reporter=Reporter(ready=stop_from_outside))
    assert result.status == "stopped" and result.exit_code == 0
    assert result.pid is not None
    _assert_group_gone(result.pid, result.pid)


def test_server_dying_after_startup_is_a_failure(fake: dict[str, str]) -> None:
    req, plan, ep = _plan(_free_port())
    options = ServeOptions(endpoint=ep, smoke=False, stop_grace_s=5)
    prep = prepare(plan, req, options, fake)
    killed: list[int] = []

    def crash(result) -> None:  # type: ignore[no-untyped-def]
        killed.append(result.pid)
        threading.Timer(0.3, os.kill, (result.pid, signal.SIGKILL)).start()

    with pytest.raises(ServeFailed) as info:
        serve(prep, options, fake, reporter=Reporter(ready=crash))
    assert info.value.result.status == "exited" and info.value.result.exit_code == -signal.SIGKILL
    _assert_group_gone(killed[0], killed[0])
