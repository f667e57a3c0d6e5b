"""The typer application and the one error boundary.

Commands parse their flags, call one service and *return* an `output.CommandResult`; the app's
result callback prints it. Everything that ends a command early — usage errors found by the flag
parser, domain errors (`VllmkitError`, including a failed serve with its report), Ctrl-C and
unexpected exceptions — is caught once, in `run`, and printed by `output` as `error:`/`hint:` lines
or, under `--json`, as one envelope. Exit codes: errors.ExitCode.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

import typer

from vllmkit import output
from vllmkit.errors import ExitCode, Interrupted, UsageError, VllmkitError

_shown: list[output.CommandResult] = []  # what the result callback printed during this run


def _show_result(result: Any, *_args: Any, **_kwargs: Any) -> None:
    """Result callback of the app: print what the command returned; its exit code ends the process."""
    if isinstance(result, output.CommandResult):
        _shown.append(result)
        code = output.show(result)
        if code:
            raise typer.Exit(code)


app = typer.Typer(
    name="vllmkit",
    help="Plan, launch, load-test and diagnose vLLM deployments.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    result_callback=_show_result,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110},
)


@app.callback()
def _root() -> None:
    """Plan, launch, load-test and diagnose vLLM deployments."""


# Each module exposes register(app). Order = order in --help.
_COMMAND_MODULES = (
    "plan",
    "capacity",
    "gpus",
    "models",
    "serve",
    "smoke",
    "bench",
    "doctor",
    "check_log",
    "calibration",
)


def _register_all() -> None:
    for name in _COMMAND_MODULES:
        importlib.import_module(f"vllmkit.cli.{name}").register(app)


_register_all()


# ----------------------------------------------------------------------------- the boundary


def _json_requested(argv: Sequence[str]) -> bool:
    args = list(argv)
    if "--" in args:
        args = args[: args.index("--")]
    return "--json" in args


def _command_name(argv: Sequence[str], group: Any) -> str:
    """`plan`, `calibration list`, … from the words before the first option."""
    words: list[str] = []
    node = group
    for arg in argv:
        commands = getattr(node, "commands", None)
        if arg.startswith("-") or not isinstance(commands, dict):
            break
        sub = commands.get(arg)
        if sub is None:
            break
        words.append(arg)
        node = sub
    return " ".join(words) or "vllmkit"


def _usage_error(exc: typer.TyperException, command: str) -> UsageError:
    message = exc.format_message()
    ctx = getattr(exc, "ctx", None)
    path = ctx.command_path if ctx is not None else f"vllmkit {command}".strip()
    return UsageError(message[:1].lower() + message[1:] if message else "bad usage",
                      f"see `{path} --help`")


def run(argv: Sequence[str] | None = None, prog_name: str = "vllmkit") -> int:
    """Run the CLI on `argv` and return the exit code; nothing escapes as a traceback."""
    args = list(sys.argv[1:] if argv is None else argv)
    json_mode = _json_requested(args)
    group = typer.main.get_command(app)
    command = _command_name(args, group)  # type: ignore[arg-type]
    _shown.clear()
    try:
        rv = group.main(args=args, prog_name=prog_name, standalone_mode=False)
    except typer.Exit as exc:  # --help, typer.Exit(code) from a command or the result callback
        return int(exc.exit_code)
    except typer.Abort:  # the parser turns Ctrl-C / EOF into Abort
        return output.show_error(command, Interrupted("interrupted"), json_mode=json_mode)
    except typer.TyperException as exc:  # usage: unknown option, bad value, missing argument
        ctx = getattr(exc, "ctx", None)
        if type(exc).__name__ == "NoArgsIsHelpError" and ctx is not None:  # bare `vllmkit`, `vllmkit calibration`
            output.info(ctx.get_help())
            return int(ExitCode.USAGE)
        return output.show_error(command, _usage_error(exc, command), json_mode=json_mode)
    except VllmkitError as exc:
        return output.show_error(command, exc, json_mode=json_mode)
    except KeyboardInterrupt:
        return output.show_error(command, Interrupted("interrupted"), json_mode=json_mode)
    except Exception as exc:
        if os.environ.get("VLLMKIT_DEBUG") == "1":
            raise
        err = VllmkitError(
            f"unexpected error: {type(exc).__name__}: {exc}",
            "re-run with VLLMKIT_DEBUG=1 to see the traceback, and report it",
            code="unexpected",
        )
        return output.show_error(command, err, json_mode=json_mode)
    code = int(rv) if isinstance(rv, int) else 0
    if code == ExitCode.INTERRUPTED and not _shown:  # typer turned Ctrl-C into exit 130 before we saw it
        return output.show_error(command, Interrupted("interrupted"), json_mode=json_mode)
    return code


class _Entry:
    """The console script: exactly `run`, then exit with its code."""

    name = "vllmkit"

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None, **_: Any) -> None:
        sys.exit(run(args, prog_name or "vllmkit"))

    __call__ = main


cli = _Entry()


def main() -> None:
    cli.main()


if __name__ == "__main__":
    main()
