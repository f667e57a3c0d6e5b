"""`vllmkit gpus` for people."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from vllmkit.output import gib


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


def render(console: Console, data: dict[str, Any]) -> None:
    if "query" in data:
        _render_one(console, data)
    else:
        _render_list(console, data)
