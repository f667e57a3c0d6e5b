"""The typer application: one module per command, each registers itself here."""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    name="vllmkit",
    help="Plan, launch and diagnose vLLM deployments.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

@app.callback()
def _root() -> None:
    """Plan, launch and diagnose vLLM deployments."""


# Each module exposes register(app). Order = order in --help.
_COMMAND_MODULES = (
    "plan",
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
        try:
            module = importlib.import_module(f"vllmkit.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"vllmkit.cli.{name}":
                continue  # command not built yet
            raise
        module.register(app)


_register_all()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
