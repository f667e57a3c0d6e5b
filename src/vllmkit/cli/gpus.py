"""`vllmkit gpus [NAME] [--vendor V] [--json]`: list the GPU profiles, or show one."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from vllmkit.cli._common import JSON_OPTION, boundary
from vllmkit.errors import UsageError
from vllmkit.hardware.profiles import GpuProfile, load_profiles, profile_dirs_from_env, resolve_gpu
from vllmkit.output import emit, gib

_VENDORS = ("nvidia", "amd", "cpu")


def profile_data(profile: GpuProfile) -> dict[str, Any]:
    """JSON view of a profile: every field, plus the runtime it implies."""
    data = profile.model_dump(mode="json")
    data["runtime"] = profile.runtime
    return data


def gpus_service(
    name: str | None,
    vendor: str | None,
    profiles_dirs: list[Path],
    env: dict[str, str],
) -> dict[str, Any]:
    if vendor is not None and vendor not in _VENDORS:
        raise UsageError(
            f"unknown vendor '{vendor}'", f"use one of: {', '.join(_VENDORS)}", code="bad-vendor"
        )
    extra_dirs = [*profile_dirs_from_env(env), *profiles_dirs]
    profiles = load_profiles(extra_dirs, env=env)
    if name is not None:
        return {"query": name, "gpus": [profile_data(resolve_gpu(name, profiles=profiles))]}
    chosen = [p for p in profiles if vendor is None or p.vendor == vendor]
    return {"gpus": [profile_data(p) for p in chosen]}


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:g}"


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _memory(gpu: dict[str, Any]) -> str:
    if gpu["memory_bytes"] is None:
        return "host RAM"
    return gib(gpu["memory_bytes"])


def _render_list(console: Console, data: dict[str, Any]) -> None:
    table = Table(title="GPU profiles (memory as torch reports it)", title_justify="left")
    for column, justify in (
        ("name", "left"),
        ("product", "left"),
        ("arch", "left"),
        ("memory", "right"),
        ("GB/s", "right"),
        ("BF16 TF", "right"),
        ("FP8 TF", "right"),
        ("FP8", "left"),
        ("Marlin INT4", "left"),
        ("GPUs/node", "right"),
    ):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for gpu in data["gpus"]:
        supports = gpu["supports"]
        table.add_row(  # profiles may come from a user's YAML folder
            escape(gpu["name"]),
            escape(gpu["display_name"]),
            escape(str(gpu["architecture"])),
            _memory(gpu),
            _num(gpu["memory_bandwidth_gbps"]),
            _num(gpu["tflops_bf16"]),
            _num(gpu["tflops_fp8"]),
            supports["fp8_format"] or "-",
            _yes(supports["int4_marlin"] and gpu["runtime"] == "cuda"),
            str(gpu["gpus_per_node"]),
        )
    console.print(table)


def _render_one(console: Console, data: dict[str, Any]) -> None:
    gpu = data["gpus"][0]
    supports = gpu["supports"]
    link = gpu["interconnect"]
    rows = [
        ("name", gpu["name"]),
        ("product", gpu["display_name"]),
        ("product names", ", ".join(gpu["product_names"]) or "-"),
        ("aliases", ", ".join(gpu["aliases"]) or "-"),
        ("vendor / runtime", f"{gpu['vendor']} / {gpu['runtime']}"),
        ("architecture", gpu["architecture"]),
        ("compute capability", gpu["compute_capability"] or "-"),
        (
            "memory (torch)",
            _memory(gpu) + ("" if gpu["memory_bytes"] is None else f" ({gpu['memory_bytes']:,} bytes)"),
        ),
        ("memory source", gpu["memory_source"]),
        ("bandwidth", f"{_num(gpu['memory_bandwidth_gbps'])} GB/s"),
        (
            "dense TFLOPS",
            f"BF16 {_num(gpu['tflops_bf16'])}, FP16 {_num(gpu['tflops_fp16'])}, "
            f"FP8 {_num(gpu['tflops_fp8'])}, INT8 {_num(gpu['tflops_int8'])}, FP4 {_num(gpu['tflops_fp4'])}",
        ),
        ("interconnect", "-" if link is None else f"{link['name']} ({_num(link['bandwidth_gbps'])} GB/s)"),
        ("GPUs per node", str(gpu["gpus_per_node"])),
        ("BF16", _yes(supports["bf16"])),
        (
            "FP8 (native)",
            _yes(supports["fp8"]) + (f" ({supports['fp8_format']})" if supports["fp8_format"] else ""),
        ),
        ("Marlin INT4", _yes(supports["int4_marlin"] and gpu["runtime"] == "cuda")),
        (
            "FP4",
            _yes(supports["fp4"]) + (f" ({', '.join(supports['fp4_formats'])})" if supports["fp4"] else ""),
        ),
        ("quantization", ", ".join(supports["quantization_methods"]) or "-"),
        ("specs source", gpu["specs_source"] or "-"),
    ]
    if gpu["notes"]:
        rows.append(("notes", gpu["notes"]))
    table = Table(show_header=False, title=escape(gpu["display_name"]), title_justify="left")
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    for field, value in rows:
        table.add_row(field, escape(str(value)))
    console.print(table)


def _render(console: Console, data: dict[str, Any]) -> None:
    if "query" in data:
        _render_one(console, data)
    else:
        _render_list(console, data)


def register(app: typer.Typer) -> None:
    @app.command("gpus")
    @boundary("gpus")
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
    ) -> None:
        """List the GPU profiles the planner knows (memory as torch reports it)."""
        data = gpus_service(name, vendor, list(profiles_dir), dict(os.environ))
        emit("gpus", data, json_mode=json_output, render=_render)
