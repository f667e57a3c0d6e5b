"""`vllmkit smoke [URL]`: is this OpenAI-compatible endpoint really serving?"""

from __future__ import annotations

from pathlib import Path

import typer

from vllmkit.cli.options import JSON_OPTION
from vllmkit.output import CommandResult

API_KEY_FILE_OPTION = typer.Option(None, "--api-key-file", help="Read the key from a file.")


def register(app: typer.Typer) -> None:
    @app.command("smoke", short_help="Check a running OpenAI-compatible endpoint.")
    def smoke_cmd(
        url: str = typer.Argument("http://127.0.0.1:8000", help="Base URL of the server."),
        api_key: str | None = typer.Option(None, "--api-key", help="Key to send (default: VLLM_API_KEY); also checks 401 without it."),
        api_key_file: Path | None = API_KEY_FILE_OPTION,
        model: str | None = typer.Option(None, "--model", help="Model name to use (default: the first served)."),
        timeout: float = typer.Option(60.0, "--timeout", help="Seconds per request."),
        max_tokens: int = typer.Option(16, "--max-tokens", help="Tokens to generate per request."),
        features: str | None = typer.Option(None, "--features", help="Also check: structured,tools,reasoning (comma list)."),
        json_output: bool = JSON_OPTION,
    ) -> CommandResult:
        """Check any OpenAI-compatible endpoint: /health, /v1/models, chat, streamed chat (TTFT,
        tokens/s), completion, and 401 without the key when --api-key is given."""
        from vllmkit.cli.options import check_positive
        from vllmkit.launch.smoke import parse_features, read_api_key, run_smoke, smoke_errors
        from vllmkit.urls import server_url

        url = server_url(url)
        check_positive(timeout, "--timeout", "e.g. --timeout 60")
        check_positive(max_tokens, "--max-tokens", "e.g. --max-tokens 16")
        key = read_api_key(api_key, api_key_file)
        report = run_smoke(url, api_key=key, model=model, timeout_s=timeout, max_tokens=max_tokens,
                           features=parse_features(features))  # fmt: skip
        code, errors = smoke_errors(report)
        return CommandResult("smoke", report, view="vllmkit.views.smoke:render", json_mode=json_output, exit_code=code, errors=errors)
