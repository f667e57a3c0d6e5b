"""`vllmkit models` for people."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from vllmkit.output import gib


def render(console: Console, data: dict) -> None:
    table = Table(title=f"Bundled catalog ({len(data['models'])} models)")
    for col in ("model", "variant", "architecture", "layers", "kv heads", "context", "weights", "from"):
        table.add_column(col, justify="right" if col in ("layers", "kv heads", "context", "weights") else "left")
    for r in data["models"]:
        table.add_row(r["id"], r["variant"], r["architecture"], str(r["layers"]), str(r["kv_heads"]),
                      f"{r['native_max_model_len']:,}", gib(r["weights_bytes"], 1), r["weights_bytes_kind"])
    console.print(table)
