"""The one error boundary and the JSON envelope (DESIGN.md conventions)."""

from __future__ import annotations

import json

import typer
from typer.testing import CliRunner

from vllmkit.cli._common import JSON_OPTION, boundary
from vllmkit.errors import DoesNotFitError, ExitCode
from vllmkit.output import emit, envelope


def make_app(exc: BaseException | None) -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        pass

    @app.command("x")
    @boundary("x")
    def x(json_output: bool = JSON_OPTION) -> None:
        if exc is not None:
            raise exc
        emit("x", {"answer": 42}, json_mode=json_output, render=lambda c, d: c.print(f"answer {d['answer']}"))

    return app


def test_envelope_shape() -> None:
    env = envelope("plan", {"a": 1})
    assert env == {"vllmkit_result_version": 1, "command": "plan", "status": "ok", "exit_code": 0,
                   "data": {"a": 1}, "errors": []}


def test_ok_human_and_json() -> None:
    runner = CliRunner()
    assert runner.invoke(make_app(None), ["x"]).stdout.strip() == "answer 42"
    doc = json.loads(runner.invoke(make_app(None), ["x", "--json"]).stdout)
    assert doc["data"] == {"answer": 42} and doc["status"] == "ok"


def test_domain_error_gives_code_message_hint() -> None:
    runner = CliRunner()
    res = runner.invoke(make_app(DoesNotFitError("too big", "use TP=2")), ["x"])
    assert res.exit_code == ExitCode.DOES_NOT_FIT == 3
    assert res.stderr.splitlines() == ["error: too big", "hint: use TP=2"]
    doc = json.loads(runner.invoke(make_app(DoesNotFitError("too big", "use TP=2")), ["x", "--json"]).stdout)
    assert doc["status"] == "error" and doc["exit_code"] == 3
    assert doc["errors"] == [{"code": "does-not-fit", "message": "too big", "hint": "use TP=2"}]


def test_unexpected_error_exit_1_without_traceback(monkeypatch) -> None:
    monkeypatch.delenv("VLLMKIT_DEBUG", raising=False)
    res = CliRunner().invoke(make_app(RuntimeError("boom")), ["x"])
    assert res.exit_code == 1
    assert "Traceback" not in res.stderr and "unexpected error: RuntimeError: boom" in res.stderr


def test_debug_reraises(monkeypatch) -> None:
    monkeypatch.setenv("VLLMKIT_DEBUG", "1")
    res = CliRunner().invoke(make_app(RuntimeError("boom")), ["x"])
    assert isinstance(res.exception, RuntimeError)


def test_keyboard_interrupt_is_130() -> None:
    res = CliRunner().invoke(make_app(KeyboardInterrupt()), ["x"])
    assert res.exit_code == 130
