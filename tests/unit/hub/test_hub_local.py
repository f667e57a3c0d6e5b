"""LocalSource: config files, file sizes, safetensors headers from disk, clear errors."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vllmkit.errors import ModelSourceError
from vllmkit.hub.local import LocalSource

BITS = {"BF16": 16, "F32": 32, "F8_E4M3": 8}


def st_file(tensors: dict[str, tuple[str, list[int]]]) -> bytes:
    header = {}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        nbytes = math.prod(shape) * BITS[dtype] // 8
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + b"\x01" * offset


def make_model(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 8}))
    (folder / "generation_config.json").write_text(json.dumps({"temperature": 0.7}))
    (folder / "chat_template.jinja").write_text("{{ x }}")
    s1 = st_file({"w1": ("F8_E4M3", [16, 8]), "s1": ("F32", [1])})  # 128 FP8 + 1 F32
    s2 = st_file({"w2": ("BF16", [8, 8])})  # 64 BF16
    (folder / "model-00001-of-00002.safetensors").write_bytes(s1)
    (folder / "model-00002-of-00002.safetensors").write_bytes(s2)
    (folder / "model.safetensors.index.json").write_text(json.dumps({
        "metadata": {"total_size": 128 + 4 + 128},
        "weight_map": {"w1": "model-00001-of-00002.safetensors", "s1": "model-00001-of-00002.safetensors",
                       "w2": "model-00002-of-00002.safetensors"},
    }))
    (folder / ".git").mkdir(exist_ok=True)
    (folder / ".git" / "HEAD").write_text("ref")
    return folder


def test_reads_folder(tmp_path: Path) -> None:
    folder = make_model(tmp_path / "m")
    meta = LocalSource().fetch(str(folder))
    assert meta.source == "local"
    assert meta.config["model_type"] == "llama"
    assert meta.params_by_dtype == {"BF16": 64, "F32": 1, "F8_E4M3": 128}
    assert meta.tensor_bytes == 128 + 4 + 128
    assert meta.index_total_size == 260
    assert meta.generation_config == {"temperature": 0.7}
    assert meta.has_chat_template is True
    assert meta.loaded_weight_files == ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    sizes = {f.name: f.size for f in meta.files}
    assert sizes["model-00002-of-00002.safetensors"] == (folder / "model-00002-of-00002.safetensors").stat().st_size
    assert not any(name.startswith(".git") for name in sizes)
    assert meta.weight_file_bytes() == sum(
        (folder / n).stat().st_size for n in ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")
    )


def test_missing_config_has_a_hint(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelSourceError) as info:
        LocalSource().fetch(str(tmp_path / "empty"))
    assert "has no config.json" in info.value.message
    assert "config.json" in (info.value.hint or "")
    assert info.value.exit_code == 4


def test_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(ModelSourceError, match="no such folder"):
        LocalSource().fetch(str(tmp_path / "nope"))


def test_incomplete_download(tmp_path: Path) -> None:
    folder = make_model(tmp_path / "m")
    (folder / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(ModelSourceError) as info:
        LocalSource().fetch(str(folder))
    assert info.value.code == "incomplete-download"
    assert "model-00002-of-00002.safetensors" in info.value.message


def test_broken_optional_files_become_notes(tmp_path: Path) -> None:
    folder = make_model(tmp_path / "m")
    (folder / "generation_config.json").write_text("{oops")
    meta = LocalSource().fetch(str(folder))
    assert meta.generation_config is None
    assert any("generation_config.json ignored" in n for n in meta.notes)


def test_hf_cache_repo_folder_maps_to_snapshot(tmp_path: Path) -> None:
    repo = tmp_path / "models--acme--m"
    make_model(repo / "snapshots" / ("c" * 40))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("c" * 40)
    meta = LocalSource().fetch(str(repo))
    assert meta.id.endswith("c" * 40)
    assert meta.params_by_dtype == {"BF16": 64, "F32": 1, "F8_E4M3": 128}


def test_gguf_quant_type_read_from_header(tmp_path: Path) -> None:
    folder = tmp_path / "g"
    folder.mkdir()
    (folder / "config.json").write_text("{}")

    def s(text: str) -> bytes:
        return struct.pack("<Q", len(text)) + text.encode()

    blob = b"GGUF" + struct.pack("<I", 3) + struct.pack("<QQ", 0, 1) + s("general.file_type")
    blob += struct.pack("<II", 4, 7)  # 7 = MOSTLY_Q8_0 (llama.cpp include/llama.h)
    (folder / "model.gguf").write_bytes(blob)
    meta = LocalSource().fetch(str(folder))
    assert {f.name: f.quant_type for f in meta.files}["model.gguf"] == "Q8_0"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(config=st.binary(max_size=200), header=st.binary(max_size=200))
def test_fuzz_garbage_config_and_weights(tmp_path: Path, config: bytes, header: bytes) -> None:
    """Garbage config.json / safetensors bytes: only our errors, never a crash."""
    folder = tmp_path / "fuzz"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_bytes(config)
    (folder / "model.safetensors").write_bytes(header)
    try:
        meta = LocalSource().fetch(str(folder))
    except ModelSourceError as exc:
        assert exc.exit_code == 4
        return
    assert isinstance(meta.config, dict)


# NVIDIA ModelOpt < 0.31 checkpoints (e.g. nvidia/Llama-3.1-70B-Instruct-FP8) keep the quantization in
# hf_quant_config.json; vLLM reads it as config.quantization_config (vllm/transformers_utils/config.py).
# The document below is the published file of that release (aiconfigurator snapshot, see the catalog).
MODELOPT_FP8 = {"producer": {"name": "modelopt", "version": "0.23.0"},
                "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head"]}}


def test_hf_quant_config_becomes_the_quantization_config(tmp_path: Path) -> None:
    from vllmkit.arch import read_arch

    folder = make_model(tmp_path / "m")
    (folder / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256,
        "torch_dtype": "bfloat16"}))
    (folder / "hf_quant_config.json").write_text(json.dumps(MODELOPT_FP8))
    meta = LocalSource().fetch(str(folder))
    assert meta.config["quantization_config"] == MODELOPT_FP8
    assert meta.provenance["quantization_config"].endswith("hf_quant_config.json")
    q = read_arch(meta.config).quantization
    assert q is not None and (q.method, q.kv_cache_scheme) == ("modelopt", "fp8")


def test_config_json_quantization_wins_over_hf_quant_config(tmp_path: Path) -> None:
    # ModelOpt >= 0.31 writes config.json's quantization_config; vLLM then ignores hf_quant_config.json
    folder = make_model(tmp_path / "m")
    inline = {"quant_method": "fp8", "weight_block_size": [128, 128]}
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 8,
                                                   "quantization_config": inline}))
    (folder / "hf_quant_config.json").write_text(json.dumps(MODELOPT_FP8))
    meta = LocalSource().fetch(str(folder))
    assert meta.config["quantization_config"] == inline
    assert "quantization_config" not in meta.provenance


def test_broken_hf_quant_config_is_a_note_not_a_failure(tmp_path: Path) -> None:
    folder = make_model(tmp_path / "m")
    (folder / "hf_quant_config.json").write_text("{oops")
    meta = LocalSource().fetch(str(folder))
    assert "quantization_config" not in meta.config
    assert any("hf_quant_config.json ignored" in n for n in meta.notes)
