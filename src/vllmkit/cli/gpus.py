"""`vllmkit gpus [NAME] [--vendor V] [--json]`: list the GPU profiles, or show one."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from vllmkit.cli.options import JSON_OPTION
from vllmkit.output import CommandResult


def register(app: typer.Typer) -> None:
    @app.command("gpus", short_help="List the GPU profiles, or show one.")
    def gpus_cmd(
        name: str | None = typer.Argument(
            None, help="Show one GPU (any name, alias or nvidia-smi/rocm-smi name)."
        ),
        vendor: str | None = typer.Option(None, "--vendor", help="Only this vendor: nvidia, amd or cpu."),
        profiles_dir: list[Path] = typer.Option(
            [],
            "--profiles-dir",
            help="Extra folder of profile YAML files (repeatable; also $VLLMKIT_PROFILES_DIR).",
        ),
        json_output: bool = JSON_OPTION,
    ) -> CommandResult:
        """List the GPU profiles the planner knows (memory as torch reports it)."""
        from vllmkit.hardware.profiles import list_gpus
        from vllmkit.views.gpus import render

        data = list_gpus(name, vendor, list(profiles_dir), dict(os.environ))
        return CommandResult("gpus", data, view=render, json_mode=json_output)
