"""A float32 checkpoint under --dtype auto: vLLM serves it in 16 bits (config/model.py _get_and_verify_dtype maps
float32 to bfloat16 / float16) and casts every tensor at load, so the GPU holds 2 bytes a parameter, not the 4 the
files hold. Real safetensors files on disk, read by the local source; planned on a (profile-only) H100."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import pytest

from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan

ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}
ITEM = {"F32": 4, "BF16": 2}


def _write_model(folder: Path, dtype: str, torch_dtype: str) -> int:
    """A 2-layer Llama (hidden 256, 4 heads of 64, MLP 512, vocab 1024, untied); returns its parameter count."""
    h, inter, vocab, layers = 256, 512, 1024, 2
    shapes: dict[str, list[int]] = {"model.embed_tokens.weight": [vocab, h], "lm_head.weight": [vocab, h],
                                    "model.norm.weight": [h]}
    for i in range(layers):
        p = f"model.layers.{i}."
        shapes |= {p + "self_attn.q_proj.weight": [h, h], p + "self_attn.k_proj.weight": [h, h],
                   p + "self_attn.v_proj.weight": [h, h], p + "self_attn.o_proj.weight": [h, h],
                   p + "mlp.gate_proj.weight": [inter, h], p + "mlp.up_proj.weight": [inter, h],
                   p + "mlp.down_proj.weight": [h, inter], p + "input_layernorm.weight": [h],
                   p + "post_attention_layernorm.weight": [h]}
    header, offset = {}, 0
    for name, shape in shapes.items():
        n = math.prod(shape) * ITEM[dtype]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header).encode()
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(offset))
    (folder / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": h, "intermediate_size": inter,
        "num_hidden_layers": layers, "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": vocab,
        "max_position_embeddings": 2048, "torch_dtype": torch_dtype, "tie_word_embeddings": False}))
    return sum(math.prod(s) for s in shapes.values())


@pytest.mark.parametrize(("dtype", "torch_dtype"), [("F32", "float32"), ("BF16", "bfloat16"), ("BF16", "float32")])
def test_loaded_weights_are_16_bit_whatever_the_files_hold(tmp_path: Path, dtype: str, torch_dtype: str) -> None:
    params = _write_model(tmp_path / "m", dtype, torch_dtype)
    plan = build_plan(PlanRequest(model=str(tmp_path / "m"), source="local", gpu="h100", tensor_parallel_size=1), ENV)
    rope = 2048 * 64 * 2  # vLLM's cos/sin cache: max_position_embeddings x head 64 x 2 B
    assert plan.memory.weights_bytes == 2 * params + rope


def test_dtype_float32_still_serves_them_in_float32(tmp_path: Path) -> None:
    params = _write_model(tmp_path / "m", "F32", "float32")
    plan = build_plan(PlanRequest(model=str(tmp_path / "m"), source="local", gpu="h100", tensor_parallel_size=1,
                                  dtype="float32"), ENV)
    assert plan.memory.weights_bytes == 4 * params + 2048 * 64 * 4
