"""`vllmkit smoke [URL]`: is this OpenAI-compatible endpoint really serving?"""

from __future__ import annotations

import os
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from vllmkit.cli._common import JSON_OPTION, boundary
from vllmkit.errors import ExitCode, UsageError
from vllmkit.launch.smoke import SmokeReport, run_smoke
from vllmkit.output import emit

API_KEY_FILE_OPTION = typer.Option(None, "--api-key-file", help="Read the key from a file.")


def render_smoke(console: Console, report: SmokeReport) -> None:
    table = Table(title=escape(f"smoke test {report.url}" + (f" ({report.model})" if report.model else "")))
    for col in ("check", "result", "detail"):
        table.add_column(col, overflow="fold")
    for c in report.checks:
        table.add_row(escape(c.name), c.status.upper(), escape(c.detail))  # detail quotes the server
    console.print(table)
    for c in report.failed:
        if c.fix:
            console.print(f"{c.name}: {c.fix}", markup=False)


def read_api_key(api_key: str | None, api_key_file: Path | None) -> str | None:
    """--api-key, else --api-key-file, else VLLM_API_KEY (read when the command runs)."""
    if api_key:
        return api_key
    if api_key_file is not None:
        try:
            key = api_key_file.expanduser().read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise UsageError(
                f"cannot read --api-key-file {api_key_file}: {exc.strerror}", "check the path"
            ) from None
        if not key:
            raise UsageError(f"--api-key-file {api_key_file} is empty", "put the key on the first line")
        return key
    return os.environ.get("VLLM_API_KEY") or None


def smoke_errors(report: SmokeReport) -> tuple[int, list[dict[str, str | None]]]:
    """Exit code and envelope errors: unreachable -> 6 (health failure), a failed check -> 3."""
    if not report.reachable:
        code = int(ExitCode.LAUNCH)
    elif not report.ok:
        code = int(ExitCode.DOES_NOT_FIT)
    else:
        return 0, []
    errors = [
        {"code": f"smoke-{c.name}", "message": f"{c.name}: {c.detail}", "hint": c.fix} for c in report.failed
    ]
    return code, errors


def register(app: typer.Typer) -> None:
    @app.command("smoke")
    @boundary("smoke")
    def smoke_cmd(
        url: str = typer.Argument("http://127.0.0.1:8000", help="Base URL of the server."),
        api_key: str | None = typer.Option(
            None, "--api-key", help="Key to send (default: VLLM_API_KEY); also checks 401 without it."
        ),
        api_key_file: Path | None = API_KEY_FILE_OPTION,
        model: str | None = typer.Option(
            None, "--model", help="Model name to use (default: the first served)."
        ),
        timeout: float = typer.Option(60.0, "--timeout", help="Seconds per request."),
        max_tokens: int = typer.Option(16, "--max-tokens", help="Tokens to generate per request."),
        json_output: bool = JSON_OPTION,
    ) -> None:
        """Check any OpenAI-compatible endpoint: /health, /v1/models, chat, streamed chat (TTFT,
        tokens/s), completion, and 401 without the key when --api-key is given."""
        if not url.startswith(("http://", "https://")):
            url = "http://" + url
        key = read_api_key(api_key, api_key_file)
        report = run_smoke(url, api_key=key, model=model, timeout_s=timeout, max_tokens=max_tokens)
        code, errors = smoke_errors(report)
        emit("smoke", report, json_mode=json_output, render=render_smoke, exit_code=code, errors=errors)
        if code:
            raise typer.Exit(code)
