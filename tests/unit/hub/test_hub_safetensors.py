"""The safetensors header reader: correct counts on real files, our error on anything broken."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vllmkit.errors import ModelSourceError
from vllmkit.hub.safetensors import (
    MAX_HEADER_BYTES,
    header_length,
    parse_header_json,
    parse_prefix,
    read_header_file,
)


def safetensors_bytes(tensors: dict[str, tuple[str, list[int]]], metadata: dict[str, str] | None = None) -> bytes:
    """Writer following the format spec (independent of the code under test)."""
    bits = {"F32": 32, "I32": 32, "BF16": 16}
    header: dict[str, object] = {"__metadata__": metadata} if metadata else {}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        nbytes = math.prod(shape) * bits[dtype] // 8
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    raw = json.dumps(header).encode()
    raw += b" " * ((8 - len(raw) % 8) % 8)
    return struct.pack("<Q", len(raw)) + raw + b"\0" * offset


def test_reads_a_file_written_by_the_safetensors_library(tmp_path: Path) -> None:
    np = pytest.importorskip("numpy")
    st_numpy = pytest.importorskip("safetensors.numpy")
    path = tmp_path / "m.safetensors"
    st_numpy.save_file(
        {"a": np.zeros((3, 5), np.float16), "b": np.zeros((7,), np.int64), "c": np.zeros((2, 2, 2), np.uint8)},
        str(path),
        metadata={"format": "pt"},
    )
    header = read_header_file(path)
    # hand arithmetic: a 3*5=15 F16, b 7 I64, c 8 U8
    assert header.params_by_dtype() == {"F16": 15, "I64": 7, "U8": 8}
    assert header.tensor_bytes() == 15 * 2 + 7 * 8 + 8 * 1
    assert header.metadata == {"format": "pt"}


def test_our_test_writer_produces_files_the_library_loads(tmp_path: Path) -> None:
    """The hand-written files the integration tests serve are real safetensors files."""
    safe_open = pytest.importorskip("safetensors").safe_open
    path = tmp_path / "w.safetensors"
    path.write_bytes(safetensors_bytes({"x": ("F32", [4, 2]), "y": ("I32", [3])}, {"format": "pt"}))
    with safe_open(str(path), framework="numpy") as fh:
        assert sorted(fh.keys()) == ["x", "y"]
        assert fh.get_tensor("x").shape == (4, 2)


def test_sub_byte_and_fp8_dtypes() -> None:
    raw = json.dumps({
        "w": {"dtype": "F8_E4M3", "shape": [4, 4], "data_offsets": [0, 16]},
        "p": {"dtype": "F4", "shape": [8], "data_offsets": [16, 20]},  # 8 * 4 bits = 4 bytes
    }).encode()
    header = parse_header_json(raw)
    assert header.params_by_dtype() == {"F8_E4M3": 16, "F4": 8}
    assert header.tensor_bytes() == 20


def test_prefix_asks_for_exactly_the_missing_bytes() -> None:
    blob = safetensors_bytes({"x": ("F32", [2])})
    (length,) = struct.unpack("<Q", blob[:8])
    assert parse_prefix(blob[:10]) == 8 + length
    assert parse_prefix(blob[: 8 + length]).params_by_dtype() == {"F32": 2}


@pytest.mark.parametrize(
    ("blob", "fragment"),
    [
        (b"\x01\x02", "shorter than the 8-byte length prefix"),
        (struct.pack("<Q", 10**12) + b"{}", "exceeds the 100000000-byte limit"),
        (struct.pack("<Q", 0), "too small"),
        (struct.pack("<Q", 50) + b'{"a":1}', "runs past the end"),
        (struct.pack("<Q", 4) + b"\xff\xfe\x00\x01", "not valid UTF-8 JSON"),
        (struct.pack("<Q", 2) + b"[]", "expected an object"),
        (struct.pack("<Q", 7) + b'{"a":1}', "is not an object"),
        (struct.pack("<Q", 52) + b'{"a":{"dtype":"X9","shape":[],"data_offsets":[0,0]}}', "unknown dtype"),
    ],
)
def test_broken_headers_raise_our_error(tmp_path: Path, blob: bytes, fragment: str) -> None:
    path = tmp_path / "bad.safetensors"
    path.write_bytes(blob)
    with pytest.raises(ModelSourceError) as info:
        read_header_file(path)
    assert fragment in info.value.message
    assert info.value.code == "bad-safetensors-header"
    assert info.value.exit_code == 4
    assert info.value.hint


@pytest.mark.parametrize(
    "entry",
    [
        {"dtype": "F32", "shape": [2, -1], "data_offsets": [0, 8]},
        {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]},
        {"dtype": "F32", "shape": [2], "data_offsets": [0, 9]},  # 2 x F32 is 8 bytes
        {"dtype": "F32", "shape": [True], "data_offsets": [0, 4]},
        {"dtype": "F32", "shape": "2", "data_offsets": [0, 8]},
        {"dtype": "F32", "shape": [2], "data_offsets": [0, 8.0]},
        {"dtype": "F32", "shape": [2]},
    ],
)
def test_wrong_types_and_sizes_raise(entry: dict) -> None:
    with pytest.raises(ModelSourceError, match="invalid safetensors header"):
        parse_header_json(json.dumps({"t": entry}).encode())


def test_metadata_must_be_strings() -> None:
    with pytest.raises(ModelSourceError, match="__metadata__"):
        parse_header_json(b'{"__metadata__": {"a": 1}}')


def test_absurd_length_is_rejected_before_reading() -> None:
    assert MAX_HEADER_BYTES == 100_000_000  # safetensors' own MAX_HEADER_SIZE
    with pytest.raises(ModelSourceError, match="exceeds"):
        header_length(struct.pack("<Q", 2**64 - 1))


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.binary(max_size=512))
def test_fuzz_garbage_bytes_never_crash(blob: bytes) -> None:
    try:
        result = parse_prefix(blob, name="fuzz", file_size=len(blob))
    except ModelSourceError as exc:
        assert exc.code == "bad-safetensors-header"
        return
    assert isinstance(result, int) or result.header_bytes >= 2


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.text(max_size=12), _json_values, max_size=6))
def test_fuzz_structured_garbage_headers(doc: dict) -> None:
    raw = json.dumps(doc).encode()
    blob = struct.pack("<Q", len(raw)) + raw
    try:
        header = parse_prefix(blob, name="fuzz", file_size=len(blob) + 10_000)
    except ModelSourceError as exc:
        assert exc.code == "bad-safetensors-header"
        return
    assert not isinstance(header, int)
    assert all(v >= 0 for v in header.params_by_dtype().values())


@settings(max_examples=300, deadline=None)
@given(blob=st.binary(max_size=300), size_known=st.booleans())
def test_fuzz_remote_reader_with_garbage(blob: bytes, size_known: bool) -> None:
    """The range-read path (remote.read_remote_header) on garbage: our error or a header, and
    at most two reads."""
    from vllmkit.hub.remote import read_remote_header

    calls: list[tuple[int, int]] = []

    def read_range(_path: str, start: int, length: int) -> bytes:
        calls.append((start, length))
        return blob[start : start + length]

    try:
        read_remote_header(read_range, "x.safetensors", len(blob) if size_known else None, None)
    except ModelSourceError as exc:
        assert exc.code == "bad-safetensors-header"
    assert len(calls) <= 2
