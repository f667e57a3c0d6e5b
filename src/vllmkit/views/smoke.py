"""`vllmkit smoke` for people."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from vllmkit.launch.smoke import SmokeReport
from vllmkit.output import safe_text  # newlines=False: a newline sent by the server cannot fake a row


def render(console: Console, report: SmokeReport) -> None:
    table = Table(title=escape(f"smoke test {report.url}" + (f" ({safe_text(report.model)})" if report.model else "")))
    for col in ("check", "result", "detail"):
        table.add_column(col, overflow="fold")
    for c in report.checks:
        table.add_row(escape(c.name), c.status.upper(), escape(safe_text(c.detail)))  # detail quotes the server
    console.print(table)
    for c in report.failed:
        if c.fix:
            console.print(f"{c.name}: {c.fix}", markup=False)
