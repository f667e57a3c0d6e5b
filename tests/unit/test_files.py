"""vllmkit/files.py: how a file a user names becomes bytes (logs, exports, datasets, key files).

Real files, a real named pipe fed by a thread, a real character device (/dev/zero). The cap is
lowered per call so the head / tail / refuse choice shows on a few bytes."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from vllmkit.files import FileProblem, read_bytes, read_text


def test_regular_file_whole_and_invalid_utf8_replaced_or_refused(tmp_path: Path) -> None:
    p = tmp_path / "vllm.log"
    p.write_bytes(b"INFO first\n\xff\xfe bad bytes\nINFO last\n")
    text = read_text(p, max_bytes=1 << 20, replace=True)
    assert text.startswith("INFO first\n") and text.endswith("INFO last\n") and "\ufffd" in text
    with pytest.raises(FileProblem) as exc:
        read_text(p, max_bytes=1 << 20)
    assert exc.value.kind == "not-text" and "byte 11" in exc.value.message  # the first bad byte's offset


def test_long_file_read_from_the_chosen_end_or_refused(tmp_path: Path) -> None:
    p = tmp_path / "f"
    p.write_bytes(b"0123456789")
    assert read_bytes(p, max_bytes=4, over="tail") == b"6789"
    assert read_bytes(p, max_bytes=4, over="head") == b"0123"
    assert read_bytes(p, max_bytes=10) == b"0123456789"  # exactly the cap is not too large
    with pytest.raises(FileProblem) as exc:
        read_bytes(p, max_bytes=4)
    assert exc.value.kind == "too-large" and exc.value.message.endswith("is larger than 4 bytes")


def _pipe(tmp_path: Path, payload: bytes) -> tuple[Path, threading.Thread]:
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "wb") as fh, _ignore_broken_pipe():
            fh.write(payload)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    return fifo, writer


class _ignore_broken_pipe:  # the reader may close after its cap, before the writer is done
    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, value, tb) -> bool:
        return kind is BrokenPipeError


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes need POSIX")
@pytest.mark.parametrize(("over", "expected"), [("tail", b"xxxEND"), ("head", b"STARTx")])
def test_named_pipe_is_read_within_the_cap(tmp_path: Path, over: str, expected: bytes) -> None:
    fifo, writer = _pipe(tmp_path, b"START" + b"x" * (3 << 20) + b"END")  # more than one read chunk
    try:
        assert read_bytes(fifo, max_bytes=6, over=over) == expected
    finally:
        writer.join(timeout=30)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes need POSIX")
def test_named_pipe_over_the_cap_is_refused(tmp_path: Path) -> None:
    fifo, writer = _pipe(tmp_path, b"y" * 100)
    try:
        with pytest.raises(FileProblem) as exc:
            read_bytes(fifo, max_bytes=99)
    finally:
        writer.join(timeout=30)
    assert exc.value.kind == "too-large"


def test_device_is_refused_not_read_forever() -> None:
    dev = Path("/dev/zero")
    if not dev.exists():
        pytest.skip("no /dev/zero on this system")
    with pytest.raises(FileProblem) as exc:
        read_bytes(dev, max_bytes=1 << 30, over="head")
    assert exc.value.kind == "device" and exc.value.message == "/dev/zero is a device, not a file"


def test_missing_and_folder(tmp_path: Path) -> None:
    with pytest.raises(FileProblem) as missing:
        read_bytes(tmp_path / "nope", max_bytes=10)
    with pytest.raises(FileProblem) as folder:
        read_bytes(tmp_path, max_bytes=10)
    assert (missing.value.kind, folder.value.kind) == ("missing", "folder")
