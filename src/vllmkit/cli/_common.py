"""Shared CLI plumbing: the one error boundary and common option types."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from vllmkit.errors import ExitCode, VllmkitError
from vllmkit.output import emit_error

F = TypeVar("F", bound=Callable[..., Any])

JSON_OPTION = typer.Option(False, "--json", help="Print one JSON envelope on stdout.")


class Interrupted(VllmkitError):
    exit_code = ExitCode.INTERRUPTED
    code = "interrupted"


def boundary(command: str) -> Callable[[F], F]:
    """Wrap a command: domain errors become `error:`/`hint:` lines (or the JSON envelope)
    and their exit code; unexpected errors exit 1 without a traceback unless VLLMKIT_DEBUG=1."""

    def deco(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            json_mode = bool(kwargs.get("json_output", False))
            try:
                return fn(*args, **kwargs)
            except typer.Exit:
                raise
            except VllmkitError as exc:
                emit_error(command, exc, json_mode=json_mode)
                raise typer.Exit(int(exc.exit_code)) from None
            except KeyboardInterrupt:
                emit_error(command, Interrupted("interrupted"), json_mode=json_mode)
                raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
            except Exception as exc:
                if os.environ.get("VLLMKIT_DEBUG") == "1":
                    raise
                err = VllmkitError(
                    f"unexpected error: {type(exc).__name__}: {exc}",
                    "re-run with VLLMKIT_DEBUG=1 to see the traceback, and report it",
                    code="unexpected",
                )
                emit_error(command, err, json_mode=json_mode)
                raise typer.Exit(int(ExitCode.UNEXPECTED)) from None

        return wrapper  # type: ignore[return-value]

    return deco
