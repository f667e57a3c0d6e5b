"""The one error boundary (`vllmkit.cli.app.run`) and the JSON envelope (DESIGN.md conventions)."""

from __future__ import annotations

import json

import pytest
import typer

from tests.clirun import invoke
from vllmkit.cli import app as app_module
from vllmkit.errors import DoesNotFitError, ExitCode
from vllmkit.output import CommandResult, envelope


@pytest.fixture
def x_command(monkeypatch: pytest.MonkeyPatch):
    """A throwaway `x` command on the real app; `raise_` decides what it does."""
    state: dict[str, BaseException | None] = {"exc": None}

    @app_module.app.command("x")
    def x(json_output: bool = typer.Option(False, "--json"), count: int = typer.Option(1, "--count")) -> CommandResult:
        if state["exc"] is not None:
            raise state["exc"]
        return CommandResult("x", {"answer": 42 * count}, json_mode=json_output,
                             view=lambda c, d: c.print(f"answer {d['answer']}"))

    yield state
    app_module.app.registered_commands = [c for c in app_module.app.registered_commands if c.name != "x"]


def test_envelope_shape() -> None:
    env = envelope("plan", {"a": 1})
    assert env == {"vllmkit_result_version": 1, "command": "plan", "status": "ok", "exit_code": 0,
                   "data": {"a": 1}, "errors": []}


def test_ok_human_and_json(x_command) -> None:
    assert invoke(["x"]).stdout.strip() == "answer 42"
    doc = json.loads(invoke(["x", "--json"]).stdout)
    assert doc["data"] == {"answer": 42} and doc["status"] == "ok" and doc["command"] == "x"


def test_domain_error_gives_code_message_hint(x_command) -> None:
    x_command["exc"] = DoesNotFitError("too big", "use TP=2")
    res = invoke(["x"])
    assert res.exit_code == ExitCode.DOES_NOT_FIT == 3
    assert res.stderr.splitlines() == ["error: too big", "hint: use TP=2"]
    doc = json.loads(invoke(["x", "--json"]).stdout)
    assert doc["status"] == "error" and doc["exit_code"] == 3
    assert doc["errors"] == [{"code": "does-not-fit", "message": "too big", "hint": "use TP=2"}]


@pytest.mark.parametrize("args", [["x", "--count", "abc"], ["x", "--bogus"], ["x", "extra-arg"]])
def test_usage_errors_get_the_envelope_and_exit_2(x_command, args) -> None:
    """The flag parser's own errors (bad value, unknown option, extra argument) go through the same
    boundary: one envelope under --json, `error:`/`hint:` lines otherwise, exit 2."""
    res = invoke([*args, "--json"])
    assert res.exit_code == ExitCode.USAGE == 2
    doc = json.loads(res.stdout)
    assert doc["status"] == "error" and doc["exit_code"] == 2 and doc["command"] == "x"
    assert doc["errors"][0]["code"] == "usage" and "--help" in doc["errors"][0]["hint"]
    human = invoke(args)
    assert human.exit_code == 2 and human.stdout == ""
    assert human.stderr.startswith("error: ") and "hint: see `vllmkit x --help`" in human.stderr


def test_unexpected_error_exit_1_without_traceback(x_command, monkeypatch) -> None:
    monkeypatch.delenv("VLLMKIT_DEBUG", raising=False)
    x_command["exc"] = RuntimeError("boom")
    res = invoke(["x"])
    assert res.exit_code == 1
    assert "Traceback" not in res.stderr and "unexpected error: RuntimeError: boom" in res.stderr


def test_debug_reraises(x_command, monkeypatch) -> None:
    monkeypatch.setenv("VLLMKIT_DEBUG", "1")
    x_command["exc"] = RuntimeError("boom")
    res = invoke(["x"])
    assert isinstance(res.exception, RuntimeError)


def test_keyboard_interrupt_is_130(x_command) -> None:
    x_command["exc"] = KeyboardInterrupt()
    res = invoke(["x", "--json"])
    assert res.exit_code == 130
    assert json.loads(res.stdout)["errors"][0]["code"] == "interrupted"


def test_real_commands_usage_errors_under_json() -> None:
    """The cases the architecture issue quotes: both used to print a rich box and no envelope."""
    for args in (["plan", "X", "--gpu-count", "abc", "--json"], ["plan", "X", "--bogus", "--json"]):
        res = invoke(args)
        assert res.exit_code == 2, args
        assert json.loads(res.stdout)["command"] == "plan"
