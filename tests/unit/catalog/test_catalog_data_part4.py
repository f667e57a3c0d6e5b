"""Data checks for the catalog entries added in round 8 (small and distilled models public startup logs
name: Qwen2.5-1.5B / 3B-Instruct, Llama-3.2-1B / 3B-Instruct, DeepSeek-R1-Distill-Llama-8B / 70B).

As in parts 1-3 the figures are not trusted because they are written down: every weight figure is a
published parameter count (the HF API's safetensors total) or an index total, and the tests re-derive
it from the config's shapes with the arithmetic written out below, so a wrong config or a wrong count
fails. The formula is first checked on a model it was not written from (Llama-3.1-8B, whose weights a
real vLLM log printed: 14.9595 GiB = 16,060,522,496 B).
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.catalog._catalog_checks import (
    REQUIRED_KEYS,
    assert_every_value_has_its_source,
    itemsizes,
    split_bytes,
)
from tests.unit.catalog._catalog_checks import load_entry as _load

PART4_IDS: tuple[str, ...] = (
    "Qwen/Qwen2.5-1.5B-Instruct",
    "Qwen/Qwen2.5-3B-Instruct",
    "meta-llama/Llama-3.2-1B-Instruct",
    "meta-llama/Llama-3.2-3B-Instruct",
    "deepseek-ai/DeepSeek-R1-Distill-Llama-8B",
    "deepseek-ai/DeepSeek-R1-Distill-Llama-70B",
    "Qwen/Qwen3-4B",
    "google/gemma-3-1b-it",
)
# published counts the dense formula does not cover (MoE, a vision tower): keys, sources and arithmetic
PART4_OTHER_IDS: tuple[str, ...] = (
    "Qwen/Qwen3-Coder-480B-A35B-Instruct", "Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8",
    "Qwen/Qwen3-30B-A3B-Instruct-2507", "Qwen/Qwen3-235B-A22B-Instruct-2507",
    "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", "Qwen/Qwen2.5-VL-3B-Instruct", "google/gemma-3-4b-it",
)


def dense_params(cfg: dict[str, Any]) -> int:
    """Parameters of a Llama / Qwen2 / Qwen3 / Gemma 3 decoder from its config: embeddings (twice unless
    tied), per layer q, k, v, o projections (+ q/k/v biases for Qwen2, q/k norms for Qwen3 and Gemma 3),
    gate/up/down, two RMSNorm weights (four for Gemma 3); final norm."""
    h, layers, inter = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["intermediate_size"]
    heads, kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or h // heads
    q, k = heads * hd, kv * hd
    attn = h * q + 2 * h * k + q * h
    arch = cfg["architectures"][0]
    if arch == "Qwen2ForCausalLM":
        attn += q + 2 * k  # qkv biases
    if arch in ("Qwen3ForCausalLM", "Gemma3ForCausalLM"):
        attn += 2 * hd  # q_norm, k_norm over the head dimension
    norms = 4 * h if arch == "Gemma3ForCausalLM" else 2 * h  # Gemma 3: pre/post attention and MLP norms
    per_layer = attn + 3 * h * inter + norms
    embed = cfg["vocab_size"] * h * (1 if cfg.get("tie_word_embeddings") else 2)
    return embed + layers * per_layer + h


@pytest.fixture(params=PART4_IDS + PART4_OTHER_IDS)
def any_entry(request: pytest.FixtureRequest) -> dict[str, Any]:
    return _load(request.param)


@pytest.fixture(params=PART4_IDS)
def entry(request: pytest.FixtureRequest) -> dict[str, Any]:
    return _load(request.param)


def test_the_shape_formula_on_a_model_it_was_not_written_from() -> None:
    llama = _load("meta-llama/Llama-3.1-8B-Instruct")
    assert 2 * dense_params(llama["config"]) == 16_060_522_496  # the vLLM log's 14.9595 GiB


def test_keys_sources_and_weights_arithmetic(any_entry: dict[str, Any]) -> None:
    entry = any_entry
    assert set(entry) == REQUIRED_KEYS
    assert entry["variant"] in ("bf16", "fp8")
    assert (entry["base_model"] == entry["id"]) == (entry["variant"] == "bf16")
    assert (entry["config"].get("quantization_config") is not None) == (entry["variant"] == "fp8")
    assert_every_value_has_its_source(entry)
    if entry["weights_bytes_kind"] == "index_total_size":
        assert entry["weights_bytes"] == entry["index_total_size"]
    else:
        assert entry["weights_bytes_kind"] == "params_x_dtype"
        assert entry["weights_bytes"] == split_bytes(entry["params_by_dtype"], itemsizes("BF16", "F8_E4M3", "F32"))


def test_published_counts_follow_from_the_config_shapes(entry: dict[str, Any]) -> None:
    """Qwen2.5-1.5B by hand: embeddings 151,936 x 1,536 = 233,373,696 (tied); a layer has q 1,536 x
    1,536 + 1,536, k and v 1,536 x 256 + 256 each, o 1,536 x 1,536, MLP 3 x 1,536 x 8,960, norms 3,072 =
    46,797,824; 28 layers + final norm 1,536 -> 1,543,714,304, the HF count."""
    assert entry["weights_bytes"] == 2 * dense_params(entry["config"])


def test_the_qwen25_15b_count_by_hand() -> None:
    assert dense_params(_load("Qwen/Qwen2.5-1.5B-Instruct")["config"]) == 1_543_714_304


def test_the_gemma3_1b_count_by_hand() -> None:
    """Embeddings 262,144 x 1,152 = 301,989,888 (tied); a layer: q 1,152 x 1,024 + k, v 1,152 x 256 each
    + o 1,024 x 1,152 = 2,949,120, q/k norms 512, MLP 3 x 1,152 x 6,912 = 23,887,872, four norms 4,608
    -> 26,842,112; x 26 + final norm 1,152 = 999,885,952, the HF API's BF16 count."""
    assert dense_params(_load("google/gemma-3-1b-it")["config"]) == 999_885_952


def test_the_480b_fp8_sibling_has_the_base_parameter_count_plus_its_scales() -> None:
    """One BF16 scale per 128 x 128 block of every FP8 weight: the published FP8 total (480,184,064,000)
    is the base count (480,154,875,392) plus 29,188,608 scales."""
    base, fp8 = _load("Qwen/Qwen3-Coder-480B-A35B-Instruct"), _load("Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8")
    c = base["config"]
    h, hd, moe = c["hidden_size"], c["head_dim"], c["moe_intermediate_size"]
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd

    def blocks(rows: int, cols: int) -> int:
        return -(-rows // 128) * -(-cols // 128)

    per_layer = (2 * blocks(q, h) + 2 * blocks(kv, h)  # q, o; k, v
                 + c["num_experts"] * (2 * blocks(moe, h) + blocks(h, moe)))  # gate, up, down of each expert
    scales = c["num_hidden_layers"] * per_layer  # 62 x 470,784
    assert scales == 29_188_608
    assert sum(fp8["params_by_dtype"].values()) - sum(base["params_by_dtype"].values()) == scales
    assert fp8["base_model"] == base["id"]


def test_the_70b_distill_has_llama_33_70b_shapes() -> None:
    distill, base = _load("deepseek-ai/DeepSeek-R1-Distill-Llama-70B"), _load("meta-llama/Llama-3.3-70B-Instruct")
    assert distill["index_total_size"] == 2 * dense_params(base["config"])


def test_the_planner_reads_them_and_a_public_log_agrees() -> None:
    """Qwen2.5-1.5B-Instruct on an L4 in Triton's vLLM backend (benchmarks/data/collected-startup-logs-3.jsonl,
    the author's rounded figures): weights ~2.89 GiB; 1,543,714,304 x 2 B = 2.875 GiB."""
    from vllmkit.arch import read_arch
    from vllmkit.hub.catalog import find_entry

    for model_id in PART4_IDS + PART4_OTHER_IDS:
        found = find_entry(model_id)
        assert found is not None and found.id == model_id
        text = found.config.get("text_config") or found.config  # vision-language configs nest the LM
        assert read_arch(found.config).num_hidden_layers == text["num_hidden_layers"]
    assert abs(_load("Qwen/Qwen2.5-1.5B-Instruct")["weights_bytes"] / 2**30 - 2.89) < 0.02


def test_the_2507_refreshes_keep_the_shapes_and_raise_the_context() -> None:
    """Qwen's 2507 model cards: the same architecture as Qwen3-30B-A3B / 235B-A22B with a native
    262,144-token context (the originals: 40,960)."""
    for new, old in (("Qwen/Qwen3-30B-A3B-Instruct-2507", "Qwen/Qwen3-30B-A3B"),
                     ("Qwen/Qwen3-235B-A22B-Instruct-2507", "Qwen/Qwen3-235B-A22B")):
        a, b = _load(new)["config"], _load(old)["config"]
        assert a["max_position_embeddings"] == 262144 and b["max_position_embeddings"] == 40960
        for key in ("hidden_size", "num_hidden_layers", "num_experts", "num_experts_per_tok",
                    "moe_intermediate_size", "num_key_value_heads", "head_dim", "vocab_size"):
            assert a[key] == b[key], key
        assert _load(new)["weights_bytes"] == pytest.approx(_load(old)["weights_bytes"], rel=0.001)


def rope_cache_bytes_by_hand(config: dict[str, Any]) -> int:
    """What one rank holds of vLLM's RoPE cos/sin caches after loading (not in the checkpoint, in "Model loading
    took"), written from vLLM 0.32's rotary_embedding classes for the configs the catalog tests plan:
    rows x rotary width x 2 B (the model dtype; base.py cache.to(dtype)), where rows are max_position_embeddings
    (default / llama3), x factor (linear), original x factor (yarn, deepseek_yarn), x 4 with an mrope_section
    (mrope.py positions_factor); the rotary width is head_dim x partial_rotary_factor (or MiniMax's rotary_dim,
    or MLA's qk_rope_head_dim); DeepSeek's yarn cache stays float32 (4 B) on CUDA."""
    cfg = config.get("text_config") or config
    rope = cfg.get("rope_scaling") or cfg.get("rope_parameters") or {}
    head = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    kind = rope.get("rope_type") or rope.get("type") or "default"
    if "kv_lora_rank" in cfg:
        width, item = cfg["qk_rope_head_dim"], (4 if kind in ("yarn", "deepseek_yarn") else 2)
    else:
        width = int(head * rope.get("partial_rotary_factor", cfg.get("partial_rotary_factor", 1.0)))
        width = cfg.get("rotary_dim", width) if "partial_rotary_factor" not in rope else width
        item = 2
    rows = cfg["max_position_embeddings"]
    if "mrope_section" in rope:
        rows *= 4
    elif kind == "linear":
        rows = int(rows * rope["factor"])
    elif kind in ("yarn", "deepseek_yarn"):
        rows = rope["original_max_position_embeddings"] * int(rope["factor"])
    return rows * width * item
