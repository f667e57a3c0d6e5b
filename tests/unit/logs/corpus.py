"""The log corpus in tests/data/logs: each file starts with '#' lines saying which vLLM version the
format belongs to and where it was seen; the loader drops that header so it cannot match anything."""

from __future__ import annotations

from pathlib import Path

LOGS = Path(__file__).resolve().parents[2] / "data" / "logs"
GIB = 1 << 30


def load(name: str) -> str:
    lines = (LOGS / name).read_text().splitlines(keepends=True)
    i = 0
    while i < len(lines) and lines[i].startswith("#"):
        i += 1
    return "".join(lines[i:])


def gib(value: float) -> int:
    """A GiB figure as printed in a log -> bytes (what the parser stores)."""
    return round(value * GIB)


def all_logs() -> list[str]:
    return sorted(p.name for p in LOGS.glob("*.log"))
