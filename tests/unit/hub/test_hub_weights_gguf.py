"""Which files vLLM loads (vLLM 0.32 DefaultModelLoader._prepare_weights), header probe sizes,
and GGUF recognition."""

from __future__ import annotations

import struct

import pytest

from vllmkit.errors import ModelSourceError
from vllmkit.hub import gguf
from vllmkit.hub.weights import header_probe_bytes, load_json_object, loaded_weight_files, parse_index

# (repository files, index weight_map, files vLLM loads) — each rule cited in weights.py
LOADED_CASES = [
    # sharded safetensors + a stray non-index file: the index filters (filter_duplicate_safetensors_files)
    (["model-1.safetensors", "model-2.safetensors", "extra.safetensors"],
     {"a": "model-1.safetensors", "b": "model-2.safetensors"},
     ["model-1.safetensors", "model-2.safetensors"]),
    # safetensors win over .bin (first pattern with matches)
    (["model.safetensors", "pytorch_model.bin"], None, ["model.safetensors"]),
    # only .bin: training leftovers dropped (filter_files_not_needed_for_inference)
    (["pytorch_model.bin", "training_args.bin", "optimizer.bin"], None, ["pytorch_model.bin"]),
    # sub-folders are not globbed: original/*.safetensors never loads
    (["model.safetensors", "original/consolidated.safetensors"], None, ["model.safetensors"]),
    # mistral format: any top-level consolidated*.safetensors -> only those (load_format "mistral")
    (["consolidated.safetensors", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"],
     None, ["consolidated.safetensors"]),
    # .pt only
    (["model.pt"], None, ["model.pt"]),
    # GGUF-only repositories: report the GGUF files
    (["m.Q4_K_M.gguf", "README.md"], None, ["m.Q4_K_M.gguf"]),
    ([], None, []),
]


@pytest.mark.parametrize(("names", "weight_map", "expected"), LOADED_CASES)
def test_loaded_weight_files(names: list[str], weight_map: dict | None, expected: list[str]) -> None:
    assert loaded_weight_files(names, weight_map) == expected


def test_probe_is_sized_from_the_index() -> None:
    # 3000 tensors named 60 bytes each in one shard: 1024 + 3000 * (60 + 128) = 565024 bytes
    weight_map = {f"{i:060d}": "s1.safetensors" for i in range(3000)}
    assert header_probe_bytes("s1.safetensors", weight_map, default=65536) == 1024 + 3000 * (60 + 128)
    # a small shard gets the 4 KiB floor, a shard not in the index the default
    assert header_probe_bytes("s1.safetensors", {"a": "s1.safetensors"}, default=65536) == 4096
    assert header_probe_bytes("s2.safetensors", weight_map, default=65536) == 65536
    assert header_probe_bytes("s1.safetensors", None, default=65536) == 65536


def test_probe_is_capped() -> None:
    weight_map = {f"{i:0200d}": "s.safetensors" for i in range(100_000)}
    assert header_probe_bytes("s.safetensors", weight_map, default=65536) == 8 * 1024 * 1024


@pytest.mark.parametrize(
    "raw",
    [b"{", b"[]", b'{"weight_map": [1]}', b'{"weight_map": {"a": 1}}', b"\xff", b"null"],
)
def test_bad_index_is_our_error(raw: bytes) -> None:
    with pytest.raises(ModelSourceError) as info:
        parse_index(raw, name="model.safetensors.index.json")
    assert info.value.exit_code == 4


def test_index_total_size() -> None:
    assert parse_index(b'{"metadata": {"total_size": 123}, "weight_map": {"a": "x"}}', name="i") == ({"a": "x"}, 123)
    assert parse_index(b'{"weight_map": {}}', name="i") == ({}, None)


def test_load_json_object_rejects_non_objects() -> None:
    with pytest.raises(ModelSourceError, match="expected an object"):
        load_json_object(b"[1, 2]", name="config.json")


def _gguf(kvs: list[tuple[str, int, bytes]], version: int = 3) -> bytes:
    def s(text: str) -> bytes:
        return struct.pack("<Q", len(text)) + text.encode()

    out = b"GGUF" + struct.pack("<I", version) + struct.pack("<Q", 0) + struct.pack("<Q", len(kvs))
    for key, vtype, value in kvs:
        out += s(key) + struct.pack("<I", vtype) + value
    return out


def test_gguf_file_type_from_header() -> None:
    # general.file_type = 15 is LLAMA_FTYPE_MOSTLY_Q4_K_M in llama.cpp include/llama.h
    blob = _gguf([
        ("general.architecture", 8, struct.pack("<Q", 5) + b"llama"),
        ("some.array", 9, struct.pack("<I", 4) + struct.pack("<Q", 3) + struct.pack("<3I", 1, 2, 3)),
        ("general.file_type", 4, struct.pack("<I", 15)),
    ])
    assert gguf.quant_from_header(blob) == "Q4_K_M"


@pytest.mark.parametrize(
    ("name", "quant"),
    [
        ("Qwen3-8B-Q4_K_M.gguf", "Q4_K_M"),
        ("model.q8_0.gguf", "Q8_0"),
        ("Llama-3-70B-IQ2_XXS-00001-of-00002.gguf", "IQ2_XXS"),
        ("gemma-2b-BF16.gguf", "BF16"),
        ("plain.gguf", None),
    ],
)
def test_gguf_quant_from_name(name: str, quant: str | None) -> None:
    assert gguf.quant_from_name(name) == quant


@pytest.mark.parametrize("blob", [b"", b"GGUF", b"GGUF\x03\x00\x00\x00" + b"\xff" * 20, b"NOPE" * 10])
def test_gguf_garbage_gives_none(blob: bytes) -> None:
    assert gguf.quant_from_header(blob) is None
