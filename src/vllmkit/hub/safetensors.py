"""Safetensors header reader: parameter counts by dtype and tensor bytes, never the weights.

File layout (https://github.com/huggingface/safetensors#format):
    8 bytes  little-endian u64 N = length of the JSON header
    N bytes  UTF-8 JSON: {"__metadata__": {str: str}?, "<tensor>": {"dtype", "shape", "data_offsets"}}
    ...      tensor data; data_offsets are relative to the end of the header

The reader is hardened against hostile or broken input: every failure is a ModelSourceError
(code "bad-safetensors-header"), never a crash, and an absurd declared length (e.g. 10**12) is
rejected before any allocation.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from vllmkit.errors import ModelSourceError

# The safetensors library refuses headers above 100 MB (MAX_HEADER_SIZE in safetensors/src/tensor.rs);
# anything larger is not a file vLLM could load, so we refuse it too.
MAX_HEADER_BYTES = 100_000_000
LENGTH_PREFIX_BYTES = 8

# Bits per element for every dtype the safetensors format defines (safetensors/src/tensor.rs, Dtype).
DTYPE_BITS: dict[str, int] = {
    "BOOL": 8,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "C64": 64,
    "F64": 64,
    "I64": 64,
    "U64": 64,
}

BAD_HEADER_HINT = (
    "the file is damaged or not a safetensors file; re-download it (or check the repository), "
    "or plan from another revision"
)


class TensorInfo(BaseModel):
    dtype: str
    shape: list[int]
    data_offsets: tuple[int, int]

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.data_offsets[1] - self.data_offsets[0]


class SafetensorsHeader(BaseModel):
    header_bytes: int  # N, the JSON length (the data starts at 8 + N)
    metadata: dict[str, str] = Field(default_factory=dict)
    tensors: dict[str, TensorInfo] = Field(default_factory=dict)

    @property
    def data_start(self) -> int:
        return LENGTH_PREFIX_BYTES + self.header_bytes

    def params_by_dtype(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for tensor in self.tensors.values():
            counts[tensor.dtype] = counts.get(tensor.dtype, 0) + tensor.numel
        return counts

    def tensor_bytes(self) -> int:
        return sum(t.nbytes for t in self.tensors.values())


def _bad(name: str, why: str) -> ModelSourceError:
    return ModelSourceError(
        f"{name}: invalid safetensors header: {why}", BAD_HEADER_HINT, code="bad-safetensors-header"
    )


def header_length(prefix: bytes, *, name: str = "file", file_size: int | None = None) -> int:
    """Decode and check the 8-byte length prefix. Raises on a short, absurd or truncated length."""
    if len(prefix) < LENGTH_PREFIX_BYTES:
        raise _bad(name, f"file is {len(prefix)} bytes, shorter than the 8-byte length prefix")
    (length,) = struct.unpack("<Q", prefix[:LENGTH_PREFIX_BYTES])
    if length < 2:  # the smallest JSON object, "{}"
        raise _bad(name, f"declared header length {length} is too small")
    if length > MAX_HEADER_BYTES:
        raise _bad(name, f"declared header length {length} bytes exceeds the {MAX_HEADER_BYTES}-byte limit")
    if file_size is not None and LENGTH_PREFIX_BYTES + length > file_size:
        raise _bad(name, f"declared header length {length} runs past the end of the {file_size}-byte file")
    return int(length)


def parse_header_json(raw: bytes, *, name: str = "file", file_size: int | None = None) -> SafetensorsHeader:
    """Parse the N header bytes (without the 8-byte prefix) and validate every entry."""
    try:
        # safetensors pads the header with trailing spaces to align the data (format spec)
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise _bad(name, f"header is not valid UTF-8 JSON ({type(exc).__name__})") from None
    if not isinstance(doc, dict):
        raise _bad(name, f"header is a JSON {type(doc).__name__}, expected an object")
    header = SafetensorsHeader(header_bytes=len(raw))
    data_bytes = None if file_size is None else file_size - LENGTH_PREFIX_BYTES - len(raw)
    for key, entry in doc.items():
        if key == "__metadata__":
            header.metadata = _check_metadata(entry, name)
            continue
        header.tensors[key] = _check_tensor(key, entry, name, data_bytes)
    return header


def _check_metadata(entry: Any, name: str) -> dict[str, str]:
    if not isinstance(entry, dict) or not all(isinstance(v, str) for v in entry.values()):
        raise _bad(name, "__metadata__ must map strings to strings")
    return dict(entry)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_tensor(key: str, entry: Any, name: str, data_bytes: int | None) -> TensorInfo:
    if not isinstance(entry, dict):
        raise _bad(name, f"tensor {key!r} is not an object")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if not isinstance(dtype, str) or dtype not in DTYPE_BITS:
        raise _bad(name, f"tensor {key!r} has unknown dtype {dtype!r}")
    if not isinstance(shape, list) or not all(_is_int(d) and d >= 0 for d in shape):
        raise _bad(name, f"tensor {key!r} has an invalid shape {shape!r}")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(_is_int(o) for o in offsets)
        or not 0 <= offsets[0] <= offsets[1]
    ):
        raise _bad(name, f"tensor {key!r} has invalid data_offsets {offsets!r}")
    if data_bytes is not None and offsets[1] > data_bytes:
        raise _bad(name, f"tensor {key!r} ends at byte {offsets[1]}, past the {data_bytes} bytes of data")
    numel = math.prod(shape)
    expected = (numel * DTYPE_BITS[dtype] + 7) // 8
    if offsets[1] - offsets[0] != expected:
        raise _bad(
            name,
            f"tensor {key!r} spans {offsets[1] - offsets[0]} bytes but {dtype}{shape} needs {expected}",
        )
    return TensorInfo(dtype=dtype, shape=list(shape), data_offsets=(offsets[0], offsets[1]))


def parse_prefix(buf: bytes, *, name: str = "file", file_size: int | None = None) -> SafetensorsHeader | int:
    """Parse a header from the first bytes of a file.

    Returns the header when `buf` holds all of it, else the total number of bytes needed
    (8 + N) so the caller can fetch exactly that much more.
    """
    length = header_length(buf, name=name, file_size=file_size)
    needed = LENGTH_PREFIX_BYTES + length
    if len(buf) < needed:
        if file_size is not None and len(buf) >= file_size:
            raise _bad(name, f"file ends after {len(buf)} bytes, inside the {length}-byte header")
        return needed
    return parse_header_json(buf[LENGTH_PREFIX_BYTES:needed], name=name, file_size=file_size)


def read_header_file(path: Path, *, name: str | None = None) -> SafetensorsHeader:
    """Read only the header of a safetensors file on disk."""
    label = name or path.name
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            prefix = fh.read(LENGTH_PREFIX_BYTES)
            length = header_length(prefix, name=label, file_size=size)
            raw = fh.read(length)
    except OSError as exc:
        raise ModelSourceError(
            f"cannot read {path}: {exc.strerror or exc}", "check the file exists and is readable"
        ) from None
    if len(raw) < length:
        raise _bad(label, f"file ends inside the {length}-byte header")
    return parse_header_json(raw, name=label, file_size=size)
