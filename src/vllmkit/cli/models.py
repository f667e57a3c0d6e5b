"""`vllmkit models`: the bundled offline catalog."""

from __future__ import annotations

import typer

from vllmkit.cli.options import JSON_OPTION
from vllmkit.output import CommandResult


def register(app: typer.Typer) -> None:
    @app.command("models", short_help="List the models of the bundled offline catalog.")
    def models_cmd(
        search: str | None = typer.Argument(None, help="Only ids containing this text."),
        json_output: bool = JSON_OPTION,
    ) -> CommandResult:
        """List the models in the bundled offline catalog (with where each number came from)."""
        from vllmkit.hub.catalog import catalog_rows
        from vllmkit.views.models import render

        return CommandResult("models", {"models": catalog_rows(search)}, view=render, json_mode=json_output)
