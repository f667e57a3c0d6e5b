"""A file a user names on the command line -> its bytes or text, under the rules every command shares.

- Only a regular file or a pipe (`<(kubectl logs ...)`) is read. A device (`/dev/zero`,
  `/dev/urandom`) would be read forever, into memory: it is refused, as is a folder.
- Nothing is read past `max_bytes`. What happens to a longer file is the caller's choice: a
  diagnosis reads a log's end (vLLM's failure is there), the startup facts a log's start; a JSON
  file, a key or an export is refused as too large rather than read in part.
- Problems raise `FileProblem` (missing, folder, device, too-large, unreadable, not-text) whose
  `message` is one line; callers turn it into their own error with their own hint and code
  (this module sits below the error types).
"""

from __future__ import annotations

import stat
from collections import deque
from pathlib import Path
from typing import BinaryIO, Literal

ProblemKind = Literal["missing", "folder", "device", "too-large", "unreadable", "not-text"]
Over = Literal["error", "head", "tail"]
_CHUNK = 1 << 20


class FileProblem(Exception):
    def __init__(self, kind: ProblemKind, path: Path, detail: str = "") -> None:
        self.kind = kind
        self.path = path
        self.detail = detail
        super().__init__(self.message)

    @property
    def message(self) -> str:
        return self.describe()

    def describe(self, label: str = "") -> str:
        """One line; `label` names the flag before the path (e.g. "--prompts ")."""
        p = f"{label}{self.path}"
        return {
            "missing": f"{p}: no such file",
            "folder": f"{p} is a folder, not a file",
            "device": f"{p} is a device, not a file",
            "too-large": f"{p} is larger than {self.detail}",
            "unreadable": f"cannot read {p}: {self.detail}",
            "not-text": f"{p} is not UTF-8 text ({self.detail})",
        }[self.kind]


def _size_words(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} bytes"


def check_file(path: Path) -> int:
    """The mode of `path` when it is a file this module reads (a regular file or a pipe), without
    reading it: for checks before slower work."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise FileProblem("missing", path) from None
    except OSError as exc:
        raise FileProblem("unreadable", path, exc.strerror or str(exc)) from None
    if stat.S_ISDIR(mode):
        raise FileProblem("folder", path)
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
        raise FileProblem("device", path)
    return mode


def read_bytes(path: Path, *, max_bytes: int, over: Over = "error") -> bytes:
    """At most `max_bytes` of the file at `path`; a longer file raises "too-large" (`over="error"`) or
    gives its first (`"head"`) or last (`"tail"`) `max_bytes` bytes."""
    mode = check_file(path)
    try:
        with path.open("rb") as fh:
            data = _read_file(fh, max_bytes, over) if stat.S_ISREG(mode) else _read_pipe(fh, max_bytes, over)
    except OSError as exc:
        raise FileProblem("unreadable", path, exc.strerror or str(exc)) from None
    if data is None:
        raise FileProblem("too-large", path, _size_words(max_bytes))
    return data


def read_text(path: Path, *, max_bytes: int, over: Over = "error", replace: bool = False) -> str:
    """`read_bytes` decoded as UTF-8; bytes that are not UTF-8 are replaced (`replace`) or raise "not-text"."""
    data = read_bytes(path, max_bytes=max_bytes, over=over)
    try:
        return data.decode("utf-8", errors="replace" if replace else "strict")
    except UnicodeDecodeError as exc:
        raise FileProblem("not-text", path, f"byte {exc.start}") from None


def _read_file(fh: BinaryIO, max_bytes: int, over: Over) -> bytes | None:
    size = fh.seek(0, 2)
    if size > max_bytes and over == "error":
        return None
    fh.seek(size - max_bytes if over == "tail" and size > max_bytes else 0)
    return fh.read(max_bytes)


def _read_pipe(fh: BinaryIO, max_bytes: int, over: Over) -> bytes | None:
    if over != "tail":
        data = fh.read(max_bytes + 1)
        if len(data) > max_bytes:
            return None if over == "error" else data[:max_bytes]
        return data
    kept: deque[bytes] = deque()
    held = 0
    while chunk := fh.read(_CHUNK):
        kept.append(chunk)
        held += len(chunk)
        while held - len(kept[0]) >= max_bytes:
            held -= len(kept.popleft())
    return b"".join(kept)[-max_bytes:]
