"""Data checks for the catalog entries added in round 9: Llama-2 (7B base and chat, 13B and 70B chat), the
Meta-Llama-3 8B / 70B Instruct originals, Mistral-Nemo, Mistral-Small-24B-2501, Mixtral-8x22B, Qwen3-0.6B /
1.7B, Qwen2-7B / 72B-Instruct, QwQ-32B and Qwen2.5-Coder-32B.

As in parts 1-4, every weight figure is a published parameter count or an index total, and the tests
re-derive it from the config's shapes, so a wrong config or a wrong count fails (part 4's formula, first
checked there on Llama-3.1-8B against a real vLLM log; Mistral's decoder has Llama's shapes, and the
Mixtral formula is checked on the 8x7B entry already in the catalog).
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.catalog._catalog_checks import assert_entry_basics, itemsizes, split_bytes
from tests.unit.catalog._catalog_checks import load_entry as _load
from tests.unit.catalog.test_catalog_data_part4 import dense_params

DENSE_IDS: tuple[str, ...] = (
    "meta-llama/Llama-2-13b-chat-hf", "meta-llama/Llama-2-70b-chat-hf",
    "meta-llama/Meta-Llama-3-8B-Instruct", "meta-llama/Meta-Llama-3-70B-Instruct",
    "mistralai/Mistral-Nemo-Instruct-2407", "mistralai/Mistral-Small-24B-Instruct-2501",
    "Qwen/Qwen2-7B-Instruct", "Qwen/Qwen2-72B-Instruct", "Qwen/QwQ-32B", "Qwen/Qwen2.5-Coder-32B-Instruct",
)
# counts the plain dense formula does not give: a stored float32 rotary buffer (Llama-2-7b-hf), lm_head
# stored beside tied embeddings (Qwen3-0.6B / 1.7B), experts (Mixtral-8x22B)
OTHER_IDS: tuple[str, ...] = (
    "meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-7b-chat-hf", "Qwen/Qwen3-0.6B", "Qwen/Qwen3-1.7B", "mistralai/Mixtral-8x22B-Instruct-v0.1",
)
# the dtypes part 5's entries may record
PART5_ITEMSIZE = itemsizes("BF16", "F16", "F32")


def mixtral_params(cfg: dict[str, Any]) -> int:
    """Mixtral: Llama attention, a router (hidden x experts) and E experts of gate/up/down per layer."""
    h, e = cfg["hidden_size"], cfg["num_local_experts"]
    dense = dict(cfg, intermediate_size=0)  # attention, norms and embeddings only
    return dense_params(dense) + cfg["num_hidden_layers"] * (h * e + e * 3 * h * cfg["intermediate_size"])


@pytest.mark.parametrize("model_id", DENSE_IDS + OTHER_IDS)
def test_keys_sources_and_weights_arithmetic(model_id: str) -> None:
    entry = _load(model_id)
    assert_entry_basics(entry, model_id)
    assert entry["base_model"] == model_id
    assert entry["variant"] == {"float16": "fp16", "bfloat16": "bf16"}[entry["config"]["torch_dtype"]]
    assert entry["weights_bytes"] == split_bytes(entry["params_by_dtype"], PART5_ITEMSIZE)
    if entry["weights_bytes_kind"] == "index_total_size":
        assert entry["weights_bytes"] == entry["index_total_size"]


@pytest.mark.parametrize("model_id", DENSE_IDS)
def test_published_counts_follow_from_the_config_shapes(model_id: str) -> None:
    entry = _load(model_id)
    assert sum(entry["params_by_dtype"].values()) == dense_params(entry["config"])


def test_llama2_7b_stores_its_rotary_buffer() -> None:
    """The HF API's split for Llama-2-7b-hf: F16 6,738,415,616 (the shapes: 32 x 202,383,360 + 2 x
    32,000 x 4,096 + 4,096) and F32 2,048 = 32 layers x 64 inv_freq values, which vLLM does not load;
    the chat repo's index total is the same buffer in F16 (2 x (6,738,415,616 + 2,048))."""
    entry = _load("meta-llama/Llama-2-7b-hf")
    assert entry["params_by_dtype"]["F16"] == dense_params(entry["config"]) == 6_738_415_616
    assert entry["params_by_dtype"]["F32"] == 32 * (128 // 2)
    chat = _load("meta-llama/Llama-2-7b-chat-hf")
    assert chat["index_total_size"] == 2 * (dense_params(chat["config"]) + 32 * 64)


@pytest.mark.parametrize(("model_id", "tied"), [("Qwen/Qwen3-0.6B", 596_049_920), ("Qwen/Qwen3-1.7B", 1_720_574_976)])
def test_small_qwen3_store_lm_head_beside_tied_embeddings(model_id: str, tied: int) -> None:
    """tie_word_embeddings is true, yet the published counts are the untied shapes: the files hold
    lm_head.weight too. vLLM skips it, so the plan loads the tied count (llm-d-benchmark's vLLM 0.14
    H100 log: Qwen3-0.6B "Model loading took 1.12 GiB")."""
    from vllmkit.plan.models import PlanRequest
    from vllmkit.plan.service import build_plan

    entry = _load(model_id)
    cfg = entry["config"]
    assert cfg["tie_word_embeddings"] is True
    assert dense_params(cfg) == tied
    assert sum(entry["params_by_dtype"].values()) == tied + cfg["vocab_size"] * cfg["hidden_size"]
    plan = build_plan(PlanRequest(model=model_id, source="catalog", gpu="h100-sxm", tensor_parallel_size=1),
                      {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"})
    # plus vLLM's RoPE cos/sin cache (40,960 positions x head 128 x 2 B = 10 MiB): the log's 1.12 GiB, where the
    # tied count alone prints 1.11
    assert plan.memory.weights_bytes == 2 * tied + cfg["max_position_embeddings"] * cfg["head_dim"] * 2
    if model_id == "Qwen/Qwen3-0.6B":
        assert round(plan.memory.weights_bytes / 2**30, 2) == 1.12


def test_mixtral_formula_on_the_8x7b_entry_and_the_8x22b_count() -> None:
    """8x7B (already in the catalog, its own published count) checks the formula; 8x22B: 56 layers x
    (attention 6,144 x 6,144 x 2 + 6,144 x 1,024 x 2, router 6,144 x 8, experts 8 x 3 x 6,144 x 16,384,
    norms 12,288) + 2 x 32,768 x 6,144 + 6,144 = 140,630,071,296, the published count."""
    small = _load("mistralai/Mixtral-8x7B-Instruct-v0.1")
    assert sum(small["params_by_dtype"].values()) == mixtral_params(small["config"])
    big = _load("mistralai/Mixtral-8x22B-Instruct-v0.1")
    assert sum(big["params_by_dtype"].values()) == mixtral_params(big["config"]) == 140_630_071_296


def test_twins_share_shapes() -> None:
    """QwQ-32B and Qwen2.5-Coder-32B are Qwen2.5-32B shapes; Meta-Llama-3-70B-Instruct is Llama-3.1-70B's
    (the 3.1 refresh changed the rope scaling and context, not the weights)."""
    for twin, base in (("Qwen/QwQ-32B", "Qwen/Qwen2.5-32B-Instruct"),
                       ("Qwen/Qwen2.5-Coder-32B-Instruct", "Qwen/Qwen2.5-32B-Instruct"),
                       ("meta-llama/Meta-Llama-3-70B-Instruct", "meta-llama/Llama-3.1-70B-Instruct")):
        assert dense_params(_load(twin)["config"]) == dense_params(_load(base)["config"])


def test_the_planner_finds_and_reads_them() -> None:
    from vllmkit.arch import read_arch
    from vllmkit.hub.catalog import find_entry

    for model_id in DENSE_IDS + OTHER_IDS:
        found = find_entry(model_id)
        assert found is not None and found.id == model_id
        assert read_arch(found.config).num_hidden_layers == found.config["num_hidden_layers"]


def test_minimax_m2_fp8_count_and_block_scales() -> None:
    """MiniMax-M2 ships FP8 with one float32 scale per 128 x 128 block: 62 layers x (q 3,072 x 6,144, k and
    v 3,072 x 1,024, o 6,144 x 3,072, 256 experts x 3 x 3,072 x 1,536) = 227,410,968,576 FP8 weights;
    the scales number 13,880,064 of the 62,654,720 float32 values (the rest: routers and their biases)."""
    entry = _load("MiniMaxAI/MiniMax-M2")
    c = entry["config"]
    h, hd, inter, experts = c["hidden_size"], c["head_dim"], c["intermediate_size"], c["num_local_experts"]
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    fp8 = c["num_hidden_layers"] * (2 * h * q + 2 * h * kv + experts * 3 * h * inter)
    assert entry["params_by_dtype"]["F8_E4M3"] == fp8

    def blocks(rows: int, cols: int) -> int:
        return -(-rows // 128) * -(-cols // 128)

    scales = c["num_hidden_layers"] * (2 * blocks(q, h) + 2 * blocks(kv, h) + experts * 3 * blocks(inter, h))
    routers = c["num_hidden_layers"] * (experts * h + experts)  # gate weight and its score-correction bias
    assert entry["params_by_dtype"]["F32"] == scales + routers
    assert entry["weights_bytes"] == entry["index_total_size"] == (
        fp8 + 4 * entry["params_by_dtype"]["F32"] + 2 * entry["params_by_dtype"]["BF16"])


def test_kimi_k2_thinking_int4_experts() -> None:
    """Kimi-K2-Thinking packs its routed experts as int4 (compressed-tensors pack-quantized, group 32): 8
    weights per int32 plus a 2-value weight_shape per matrix: 60 MoE layers x 384 experts x 3 x (7,168 x
    2,048 / 8 + 2) = 126,835,891,200 int32, the HF count."""
    entry = _load("moonshotai/Kimi-K2-Thinking")
    c = entry["config"]
    moe_layers = c["num_hidden_layers"] - c["first_k_dense_replace"]
    matrices = moe_layers * c["n_routed_experts"] * 3
    assert entry["params_by_dtype"]["I32"] == matrices * (c["hidden_size"] * c["moe_intermediate_size"] // 8 + 2)
    w = c["quantization_config"]["config_groups"]["group_0"]["weights"]
    assert (w["num_bits"], w["group_size"], w["strategy"]) == (4, 32, "group")
    assert entry["weights_bytes"] == entry["index_total_size"]
