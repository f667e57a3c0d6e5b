"""The `vllmkit` console script. `vllmkit --help` / `-h` prints the top-level help from a per-user
cache when one matches this CLI's source and the help width, without importing typer (its import
alone costs 5-9x the bare interpreter; issue #9 asks `--help` for at most 2.5x). Anything else, and a
cache miss, goes through the full app (cli/app.py), which renders the same text with click and stores
it. Only the standard library's always-loaded modules are imported here.
"""

from __future__ import annotations

import os
import sys
import zlib

_HELP_FLAGS = (["--help"], ["-h"])
_MAX_WIDTH = 110  # cli/app.py context_settings max_content_width


def _help_width() -> int:
    """The width click wraps help to: min(terminal columns, max_content_width) (click.formatting
    HelpFormatter; columns as shutil.get_terminal_size finds them: $COLUMNS, the terminal, else 80)."""
    try:
        cols = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        cols = 0
    if cols <= 0:
        try:
            cols = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            cols = 0
    return min(cols or 80, _MAX_WIDTH)


def help_cache_path() -> str:
    """Cache file for the top-level help of this exact CLI source at this width."""
    from vllmkit import __version__

    here = os.path.dirname(os.path.abspath(__file__))
    key = zlib.crc32(__version__.encode())
    for name in sorted(os.listdir(here)):
        if name.endswith(".py"):
            st = os.stat(os.path.join(here, name))
            key = zlib.crc32(f"{name}:{st.st_size}:{st.st_mtime_ns};".encode(), key)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "vllmkit", f"help-{key:08x}-w{_help_width()}.txt")


def render_top_help() -> str:
    """The top-level help exactly as `vllmkit --help` prints it (click's own rendering)."""
    import typer.main

    from vllmkit.cli.app import app

    command = typer.main.get_command(app)
    with command.make_context("vllmkit", [], resilient_parsing=True) as ctx:
        return ctx.get_help() + "\n"


def _store(path: str, text: str) -> None:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only home only costs the fast path


def main() -> None:
    if sys.argv[1:] in _HELP_FLAGS:
        path = help_cache_path()
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        except OSError:
            text = render_top_help()
            _store(path, text)
        sys.stdout.write(text)
        sys.stdout.flush()
        raise SystemExit(0)
    from vllmkit.cli.app import main as app_main

    app_main()


if __name__ == "__main__":
    main()
