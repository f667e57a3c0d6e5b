"""The only place that prints. Rich tables for people, one JSON envelope for machines.

Human output: tables on stdout, progress and hints on stderr, no colour when not a TTY.
Machine output (`--json`): exactly one envelope on stdout, also for errors:
{"vllmkit_result_version": 1, "command": ..., "status": "ok"|"error", "exit_code": ...,
 "data": ..., "errors": [{"code", "message", "hint"}]}
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from vllmkit.errors import VllmkitError
from vllmkit.units import GIB

if TYPE_CHECKING:  # rich and pydantic load when something is printed, not when the CLI starts
    from rich.console import Console

RESULT_VERSION = 1
def _is_tty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def console(stderr: bool = False) -> Console:
    """A console bound to the *current* sys.stdout/sys.stderr (CliRunner swaps them); every string
    it renders is passed through `safe_text` (see the end of this module)."""
    stream = sys.stderr if stderr else sys.stdout
    tty = _is_tty(stream)
    no_color = (not tty) or bool(os.environ.get("NO_COLOR"))
    return _safe_console_class()(
        file=stream,
        no_color=no_color,
        highlight=False,
        soft_wrap=not tty,
        width=None if tty else 160,
        force_terminal=False if not tty else None,
        emoji=False,
    )


def to_jsonable(data: Any) -> Any:
    if hasattr(data, "model_dump"):  # a pydantic model
        return data.model_dump(mode="json")
    if isinstance(data, dict):
        return {k: to_jsonable(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [to_jsonable(v) for v in data]
    return data


def envelope(
    command: str,
    data: Any = None,
    *,
    exit_code: int = 0,
    errors: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "vllmkit_result_version": RESULT_VERSION,
        "command": command,
        "status": "ok" if exit_code == 0 else "error",
        "exit_code": int(exit_code),
        "data": to_jsonable(data),
        "errors": errors or [],
    }


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")
    sys.stdout.flush()


def emit(
    command: str,
    data: Any,
    *,
    json_mode: bool,
    render: Callable[[Console, Any], None] | None = None,
    exit_code: int = 0,
    errors: list[dict[str, Any]] | None = None,
) -> None:
    """Print a command's result: the envelope with --json, else the human view."""
    if json_mode:
        print_json(envelope(command, data, exit_code=exit_code, errors=errors))
        return
    if render is not None:
        render(console(), data)
    for err in errors or []:
        error_line(err["message"], err.get("hint"))


View = Callable[["Console", Any], None]


@dataclass
class CommandResult:
    """What a command returns; `show` prints it (the envelope with --json, else `view` or `text`).

    `text` is printed verbatim on stdout for people (exports, manifests); `stderr_view` renders on
    stderr (a failure report) before the `error:` lines."""

    command: str
    data: Any = None
    view: View | None = None
    json_mode: bool = False
    exit_code: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)
    text: str | None = None
    stderr_view: View | None = None

    def fail(self, error: VllmkitError) -> CommandResult:
        """The same result, now failing with `error` (its exit code and envelope entry)."""
        self.exit_code = int(error.exit_code)
        self.errors.append(error_entry(error))
        return self


def error_entry(exc: VllmkitError) -> dict[str, Any]:
    return {"code": exc.code, "message": exc.message, "hint": exc.hint}


def show(result: CommandResult) -> int:
    """Print a command's result and return its exit code."""
    if result.json_mode:
        print_json(envelope(result.command, result.data, exit_code=result.exit_code, errors=result.errors))
        return result.exit_code
    if result.stderr_view is not None:
        result.stderr_view(console(stderr=True), result.data)
    if result.text is not None:
        sys.stdout.write(result.text)
        sys.stdout.flush()
    elif result.view is not None and (result.exit_code == 0 or result.stderr_view is None):
        result.view(console(), result.data)
    for err in result.errors:
        error_line(err["message"], err.get("hint"))
    return result.exit_code


def show_error(command: str, exc: VllmkitError, *, json_mode: bool) -> int:
    """An error that ended a command: the envelope (with the error's data) or `error:`/`hint:` lines
    (after the error's own failure report, when it carries one)."""
    data = getattr(exc, "data", None)
    stderr_view = getattr(exc, "view", None)
    return show(CommandResult(command, data, json_mode=json_mode, exit_code=int(exc.exit_code),
                              errors=[error_entry(exc)], stderr_view=stderr_view))


def error_line(message: str, hint: str | None = None) -> None:
    err = console(stderr=True)
    err.print(f"error: {safe_text(message)}", markup=False)
    if hint:
        err.print(f"hint: {safe_text(hint)}", markup=False)


def emit_error(command: str, exc: VllmkitError, *, json_mode: bool, data: Any = None) -> None:
    if json_mode:
        print_json(
            envelope(
                command,
                data,
                exit_code=int(exc.exit_code),
                errors=[{"code": exc.code, "message": exc.message, "hint": exc.hint}],
            )
        )
    else:
        error_line(exc.message, exc.hint)


@contextlib.contextmanager
def waiting(message: str) -> Iterator[None]:
    """A status line with a spinner on stderr while a slow step runs (hub reads, importing vLLM to check
    flags, environment probes). Only on a terminal: never on stdout, never in a pipe or a log file."""
    if not _is_tty(sys.stderr) or os.environ.get("VLLMKIT_NO_PROGRESS") == "1":
        yield
        return
    with console(stderr=True).status(message, spinner="dots"):
        yield


def info(message: str) -> None:
    """Progress / notes for people: stderr, never mixed into --json stdout."""
    console(stderr=True).print(message, markup=False)


def warn(message: str) -> None:
    console(stderr=True).print(f"warning: {safe_text(message)}", markup=False)


def gib(n_bytes: int | float | None, digits: int = 2) -> str:
    if n_bytes is None:
        return "-"
    return f"{n_bytes / GIB:.{digits}f} GiB"


def thousands(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


# ----------------------------------------------------------------------------- terminal safety
# Everything printed can hold text from outside (config.json, a hub's answer, a vLLM log, the
# calibration store, a server's reply). A terminal executes some bytes: ESC starts CSI/OSC
# sequences (clear the screen, set the window title, OSC 8 hyperlinks, and on some terminals
# report or even inject input), C1 controls (0x80-0x9f) do the same on 8-bit terminals, CR and
# backspace overwrite what is shown, and Unicode bidi overrides reorder it ("Trojan Source",
# CVE-2021-42574). `safe_text` turns each of them into a visible escape (`\x1b`, `\u202e`), so a
# hostile string is shown, never executed. Rich does not do this: its Text strips only BEL, BS,
# VT, FF and CR, and lets ESC through.

_TERMINAL_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def _visible_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe_text(text: object, *, newlines: bool = False) -> str:
    """`text` with every terminal control character shown as a visible escape. Tabs become a
    space; newlines are kept only with `newlines=True` (else shown as `\\n`)."""
    s = text if isinstance(text, str) else str(text)
    s = s.replace("\t", " ")
    if newlines:
        s = s.replace("\r\n", "\n")
    else:
        s = s.replace("\n", "\\n")
    return _TERMINAL_UNSAFE.sub(_visible_escape, s)


@functools.lru_cache(maxsize=1)
def _safe_console_class() -> type[Console]:
    """A rich Console that passes every string it renders (print arguments, table cells and
    titles) through `safe_text` before markup is parsed. Outside text that reaches a table cell
    unescaped cannot break or abuse the markup either: a markup syntax error ("[/]") falls back
    to plain text, and hyperlinks ([link=...], OSC 8 on a terminal) are dropped: vllmkit prints none.
    Built on first use: rich loads only when something is printed."""
    from rich.console import Console
    from rich.errors import MarkupError, StyleSyntaxError
    from rich.style import Style
    from rich.text import Span, Text

    def unlinked(span: Span) -> Span:
        style = Style.parse(span.style) if isinstance(span.style, str) else span.style
        return span._replace(style=style.update_link(None)) if style.link else span

    class SafeConsole(Console):
        def render_str(self, text: str, **kwargs: Any) -> Any:  # type: ignore[override]
            clean = safe_text(text, newlines=True)
            try:
                rendered = super().render_str(clean, **kwargs)
                if isinstance(rendered, Text) and rendered.spans:
                    # a tag that parses as markup but not as a style ("[#]") fails here, not later
                    rendered.spans = [unlinked(span) for span in rendered.spans]
            except (MarkupError, StyleSyntaxError):
                rendered = super().render_str(clean, **{**kwargs, "markup": False})
            return rendered

    return SafeConsole
