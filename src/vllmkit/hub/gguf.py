"""GGUF recognition: the quantization type from the file name or, when cheap, from the header.

GGUF layout (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md): magic "GGUF", u32 version,
u64 tensor count, u64 metadata count, then key/value pairs. `general.file_type` (a u32 llama_ftype)
is written near the start by llama.cpp's converter, before the large tokenizer arrays, so reading
the first 64 KiB is usually enough. Nothing here ever raises on a bad file: GGUF details are
informative only (vLLM's GGUF support reads the file itself).
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

GGUF_MAGIC = b"GGUF"
HEADER_PROBE_BYTES = 64 * 1024

# llama_ftype from llama.cpp include/llama.h (values 4-6 and 33-35 are removed/unused upstream).
LLAMA_FTYPE: dict[int, str] = {
    0: "F32",
    1: "F16",
    2: "Q4_0",
    3: "Q4_1",
    7: "Q8_0",
    8: "Q5_0",
    9: "Q5_1",
    10: "Q2_K",
    11: "Q3_K_S",
    12: "Q3_K_M",
    13: "Q3_K_L",
    14: "Q4_K_S",
    15: "Q4_K_M",
    16: "Q5_K_S",
    17: "Q5_K_M",
    18: "Q6_K",
    19: "IQ2_XXS",
    20: "IQ2_XS",
    21: "Q2_K_S",
    22: "IQ3_XS",
    23: "IQ3_XXS",
    24: "IQ1_S",
    25: "IQ4_NL",
    26: "IQ3_S",
    27: "IQ3_M",
    28: "IQ2_S",
    29: "IQ2_M",
    30: "IQ4_XS",
    31: "IQ1_M",
    32: "BF16",
    36: "TQ1_0",
    37: "TQ2_0",
    38: "MXFP4_MOE",
}

_NAME_QUANT = re.compile(
    r"(?<![A-Za-z0-9])(IQ\d_(?:XXS|XS|S|M|NL)|Q\d_K(?:_[SML]|_XL)?|Q\d_\d|TQ\d_0|MXFP4(?:_MOE)?|BF16|F16|F32)"
    r"(?![A-Za-z0-9])",
    re.IGNORECASE,
)

# value type -> fixed size in bytes (gguf.md "gguf_metadata_value_type")
_FIXED = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_STRING, _ARRAY, _UINT32 = 8, 9, 4


def quant_from_name(filename: str) -> str | None:
    """'Qwen3-8B-Q4_K_M.gguf' -> 'Q4_K_M'."""
    matches = _NAME_QUANT.findall(Path(filename).name)
    return matches[-1].upper() if matches else None


class _Reader:
    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.pos = 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise EOFError
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out

    def u32(self) -> int:
        return int(struct.unpack("<I", self.take(4))[0])

    def u64(self) -> int:
        return int(struct.unpack("<Q", self.take(8))[0])

    def string(self) -> str:
        return self.take(self.u64()).decode("utf-8", "replace")

    def skip_value(self, vtype: int) -> None:
        if vtype in _FIXED:
            self.take(_FIXED[vtype])
        elif vtype == _STRING:
            self.take(self.u64())
        elif vtype == _ARRAY:
            item_type, count = self.u32(), self.u64()
            if item_type in _FIXED:
                self.take(_FIXED[item_type] * count)
            else:
                for _ in range(count):
                    self.skip_value(item_type)
        else:
            raise ValueError(f"unknown GGUF value type {vtype}")


def quant_from_header(prefix: bytes) -> str | None:
    """general.file_type from the first bytes of a GGUF file, or None if not reachable/valid."""
    if not prefix.startswith(GGUF_MAGIC):
        return None
    reader = _Reader(prefix)
    try:
        reader.take(4)
        version = reader.u32()
        if version == 1:  # v1 used u32 counts
            reader.u32()
            kv_count = reader.u32()
        else:
            reader.u64()
            kv_count = reader.u64()
        for _ in range(min(kv_count, 100_000)):
            key = reader.string()
            vtype = reader.u32()
            if key == "general.file_type" and vtype == _UINT32:
                ftype = reader.u32()
                return LLAMA_FTYPE.get(ftype, f"ftype-{ftype}")
            reader.skip_value(vtype)
    except (EOFError, ValueError, struct.error, OverflowError, MemoryError):
        return None
    return None


def is_gguf_file(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(4) == GGUF_MAGIC
    except OSError:
        return False


def local_quant_type(path: Path) -> str | None:
    """Quant type of a GGUF file on disk: header first (authoritative), then the file name."""
    try:
        with path.open("rb") as fh:
            prefix = fh.read(HEADER_PROBE_BYTES)
    except OSError:
        prefix = b""
    return quant_from_header(prefix) or quant_from_name(path.name)
