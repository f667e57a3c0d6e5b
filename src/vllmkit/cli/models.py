"""`vllmkit models`: the bundled offline catalog."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

from vllmkit.cli._common import JSON_OPTION, boundary
from vllmkit.output import emit, gib


def catalog_rows(search: str | None = None) -> list[dict]:
    from vllmkit.arch import read_arch
    from vllmkit.hub.catalog import load_catalog

    rows = []
    for entry in load_catalog():
        if search and search.lower() not in entry.id.lower():
            continue
        arch = read_arch(entry.config)
        rows.append({
            "id": entry.id,
            "base_model": entry.base_model,
            "variant": entry.variant,
            "architecture": (arch.architectures or [arch.model_type])[0],
            "layers": arch.num_hidden_layers,
            "kv_heads": arch.num_kv_heads,
            "head_dim": arch.head_dim,
            "native_max_model_len": arch.native_max_model_len,
            "moe": arch.moe is not None,
            "hybrid": arch.is_hybrid,
            "weights_bytes": entry.weights_bytes,
            "weights_bytes_kind": entry.weights_bytes_kind,
            "weights_source": entry.weights_source,
            "modelscope_id": entry.modelscope_id,
        })
    return rows


def _render(console: Console, data: dict) -> None:
    table = Table(title=f"Bundled catalog ({len(data['models'])} models)")
    for col in ("model", "variant", "architecture", "layers", "kv heads", "context", "weights", "from"):
        table.add_column(col, justify="right" if col in ("layers", "kv heads", "context", "weights") else "left")
    for r in data["models"]:
        table.add_row(r["id"], r["variant"], r["architecture"], str(r["layers"]), str(r["kv_heads"]),
                      f"{r['native_max_model_len']:,}", gib(r["weights_bytes"], 1), r["weights_bytes_kind"])
    console.print(table)


def register(app: typer.Typer) -> None:
    @app.command("models")
    @boundary("models")
    def models_cmd(
        search: str | None = typer.Argument(None, help="Only ids containing this text."),
        json_output: bool = JSON_OPTION,
    ) -> None:
        """List the models in the bundled offline catalog (with where each number came from)."""
        emit("models", {"models": catalog_rows(search)}, json_mode=json_output, render=_render)
