"""Domain errors: each carries a one-line message, a hint and the CLI exit code.

Exit codes are part of the interface (README "Exit codes"):
0 ok, 1 unexpected, 2 usage, 3 does not fit / check failed, 4 model source error,
5 hardware or profile error, 6 launch or health failure, 130 interrupted.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    UNEXPECTED = 1
    USAGE = 2
    DOES_NOT_FIT = 3
    MODEL_SOURCE = 4
    HARDWARE = 5
    LAUNCH = 6
    INTERRUPTED = 130


class VllmkitError(Exception):
    """Base class. `code` is a stable machine-readable slug for the JSON envelope."""

    exit_code: ExitCode = ExitCode.UNEXPECTED
    code: str = "error"
    # what the command had produced when it failed (kept in the JSON envelope's `data`), and how to
    # show it to people (on stderr, before the error line); see output.show_error
    data: object = None
    view: object = None

    def __init__(self, message: str, hint: str | None = None, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return self.message


class UsageError(VllmkitError):
    exit_code = ExitCode.USAGE
    code = "usage"


class ConfigError(VllmkitError):
    """A config.json we cannot turn into an architecture (missing/invalid field)."""

    exit_code = ExitCode.MODEL_SOURCE
    code = "bad-config"


class DoesNotFitError(VllmkitError):
    exit_code = ExitCode.DOES_NOT_FIT
    code = "does-not-fit"


class CheckFailedError(VllmkitError):
    exit_code = ExitCode.DOES_NOT_FIT
    code = "check-failed"


class ModelSourceError(VllmkitError):
    exit_code = ExitCode.MODEL_SOURCE
    code = "model-source"


class HardwareError(VllmkitError):
    exit_code = ExitCode.HARDWARE
    code = "hardware"


class LaunchError(VllmkitError):
    exit_code = ExitCode.LAUNCH
    code = "launch"


class Interrupted(VllmkitError):
    """Ctrl-C / SIGTERM: whatever was started has been stopped."""

    exit_code = ExitCode.INTERRUPTED
    code = "interrupted"
