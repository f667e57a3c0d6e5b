"""Data checks for the catalog entries of part 10 (e): mistralai/Mistral-7B-Instruct-v0.1 and -v0.2,
mistralai/Codestral-22B-v0.1, mistralai/Ministral-8B-Instruct-2410, nvidia/Llama-3.1-Nemotron-70B-Instruct-HF,
google/gemma-2b-it and ibm-granite/granite-3.0-8b-instruct (all BF16).

As in parts 1-9 the figures are not trusted because they are written down: every entry's parameter count is
re-derived here from its config's tensor shapes with the formula written out below (Gemma 1 through part 9's
formula), and must equal params_by_dtype's total and a count published independently of the entry where one was
found. The planner's per-GPU weights must be the checkpoint's bytes (split over TP) plus vLLM's RoPE cos/sin cache
(part 4's rope_cache_bytes_by_hand). One public vLLM startup line for a Mistral-7B-Instruct v0.2 checkpoint is a
further check.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from tests.unit.catalog._catalog_checks import (
    GIB,
    SAFETENSORS_ITEMSIZE,
    assert_entry_basics,
    assert_weights_add_up,
    split_bytes,
)
from tests.unit.catalog._catalog_checks import load_entry as _load
from tests.unit.catalog._catalog_checks import plan_catalog as _plan
from tests.unit.catalog.test_catalog_data_part4 import dense_params, rope_cache_bytes_by_hand
from tests.unit.catalog.test_catalog_data_part9_a import gemma_params

MISTRAL_V01 = "mistralai/Mistral-7B-Instruct-v0.1"
MISTRAL_V02 = "mistralai/Mistral-7B-Instruct-v0.2"
CODESTRAL = "mistralai/Codestral-22B-v0.1"
MINISTRAL = "mistralai/Ministral-8B-Instruct-2410"
NEMOTRON = "nvidia/Llama-3.1-Nemotron-70B-Instruct-HF"
NEMOTRON_FP8 = "neuralmagic/Llama-3.1-Nemotron-70B-Instruct-HF-FP8-dynamic"
GEMMA_2B_IT = "google/gemma-2b-it"
GRANITE_30_8B = "ibm-granite/granite-3.0-8b-instruct"

IDS: tuple[str, ...] = (MISTRAL_V01, MISTRAL_V02, CODESTRAL, MINISTRAL, NEMOTRON, GEMMA_2B_IT, GRANITE_30_8B)
# configs rebuilt from several copies rather than transcribed from one copy of the repository's config.json
REBUILT_IDS = frozenset({MISTRAL_V02, CODESTRAL, GRANITE_30_8B})
# counts not published for the repository itself: derived from a shape-identical sibling's published count
DERIVED_COUNT_IDS = frozenset({NEMOTRON, GRANITE_30_8B})

# published parameter counts, independent of these entries (sources in each entry's params_source)
MISTRAL_7B_COUNT = 7_241_732_096  # GGUF general.parameter_count of Mistral 7B; 'Total Parameters' of -Instruct-v0.2
PUBLISHED: dict[str, int] = {
    MISTRAL_V01: MISTRAL_7B_COUNT,
    MISTRAL_V02: MISTRAL_7B_COUNT,
    CODESTRAL: 22_247_282_688,  # PEFT printout of a LoRA on Codestral-22B-v0.1: frozen base parameters
    MINISTRAL: 8_019_808_256,  # HF Hub safetensors.total
    GEMMA_2B_IT: 2_506_172_416,  # keras-hub gemma_2b_en / gemma_instruct_2b_en 'params'
}
LLAMA_70B_SIBLING = "meta-llama/Llama-3.3-70B-Instruct"  # published 70,553,706,496 (catalog part 1)
LLAMA31_70B_INDEX_TOTAL = 141_107_412_992  # model.safetensors.index.json total_size of meta-llama/Llama-3.1-70B
GRANITE_31_8B_SIBLING = "ibm-granite/granite-3.1-8b-instruct"
GRANITE_30_8B_TREE_GB = (4.97, 4.99, 4.97, 1.41)  # HF tree, four shards, rounded to 10 MB
MISTRAL_V02_INDEX_TOTAL = 14_483_464_192  # model.safetensors.index.json metadata.total_size (secondary)

# (model, TP) -> what the plan is checked at; the 70B BF16 needs more than one H100 (131.42 GiB of tensors)
PLANNED_TP: tuple[tuple[str, int], ...] = (
    (MISTRAL_V01, 1), (MISTRAL_V02, 1), (CODESTRAL, 1), (MINISTRAL, 1), (GEMMA_2B_IT, 1), (GRANITE_30_8B, 1),
    (NEMOTRON, 2), (NEMOTRON, 4), (NEMOTRON, 8),
)

# A public vLLM 0.9.0.1 start (A10G, --max-model-len 8192) of the JumpStart artifact huggingface-llm-mistral-7b-instruct
# (three shards, config rope_theta 1e6, i.e. the v0.2 release): 'Model loading took 13.4967 GiB and 736.469833 seconds'
# (find_string/read_file id 59672764378, a lab write-up; no public URL was found for it).
MISTRAL_V02_LOGGED_GIB = 13.4967


# --------------------------------------------------------------------------- shape formula


def decoder_params(cfg: dict[str, Any]) -> int:
    """Mistral (MistralForCausalLM), Llama (LlamaForCausalLM) and Granite (GraniteForCausalLM) decoders: token
    embedding, plus an lm_head of the same shape unless tied; per layer q (heads x head_dim rows) and o, k and v
    (kv heads x head_dim rows each), no attention or MLP biases, a SwiGLU MLP of three hidden x intermediate
    matrices and two RMSNorm weights; a final RMSNorm. head_dim is the config's, else hidden / heads."""
    arch = cfg["architectures"][0]
    assert arch in ("MistralForCausalLM", "LlamaForCausalLM", "GraniteForCausalLM")
    assert not cfg.get("attention_bias", False) and not cfg.get("mlp_bias", False)
    h, inter, layers = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    hd = cfg.get("head_dim") or h // cfg["num_attention_heads"]
    q, kv = cfg["num_attention_heads"] * hd, cfg["num_key_value_heads"] * hd
    per_layer = h * q + 2 * h * kv + q * h + 3 * h * inter + 2 * h
    embeddings = cfg["vocab_size"] * h * (1 if cfg.get("tie_word_embeddings", False) else 2)
    return embeddings + layers * per_layer + h


def shape_params(cfg: dict[str, Any]) -> int:
    if cfg["architectures"] == ["GemmaForCausalLM"]:
        return gemma_params(cfg)
    return decoder_params(cfg)


# --------------------------------------------------------------------------- keys, sources, bytes


@pytest.mark.parametrize("model_id", IDS)
def test_keys_sources_and_weights_arithmetic(model_id: str) -> None:
    entry = _load(model_id)
    assert_entry_basics(entry, model_id)
    assert entry["base_model"] == model_id
    assert entry["variant"] == "bf16"
    assert entry["config"].get("quantization_config") is None
    assert entry["config"]["torch_dtype"] == "bfloat16"
    assert_weights_add_up(entry)
    assert set(entry["params_by_dtype"]) <= set(SAFETENSORS_ITEMSIZE)
    assert list(entry["params_by_dtype"]) == ["BF16"]  # one 16-bit dtype for every tensor


@pytest.mark.parametrize("model_id", IDS)
def test_a_rebuilt_config_or_a_derived_count_says_so(model_id: str) -> None:
    entry = _load(model_id)
    if model_id in REBUILT_IDS:
        assert entry["config_source"].startswith("REBUILT") and "not verbatim" in entry["config_source"]
    else:
        assert "REBUILT" not in entry["config_source"]
        assert entry["config_source"].startswith(("Transcribed from", "TRANSCRIPTION"))
    assert entry["params_source"].startswith("DERIVED") == (model_id in DERIVED_COUNT_IDS)


# --------------------------------------------------------------------------- counts from the shapes


@pytest.mark.parametrize("model_id", IDS)
def test_the_count_follows_from_the_config_shapes(model_id: str) -> None:
    """The shape formula on the entry's own config gives params_by_dtype's total and the published count."""
    entry = _load(model_id)
    total = sum(entry["params_by_dtype"].values())
    assert shape_params(entry["config"]) == total
    if model_id in PUBLISHED:
        assert total == PUBLISHED[model_id]
    assert entry["weights_bytes"] == 2 * total


def test_the_formula_matches_part4s_dense_formula() -> None:
    """On the Mistral / Llama / Granite configs the formula written here and part 4's agree."""
    for model_id in IDS:
        c = _load(model_id)["config"]
        if c["architectures"] != ["GemmaForCausalLM"]:
            assert decoder_params(c) == dense_params(c), model_id


def test_the_mistral_7b_count_by_hand() -> None:
    """Embeddings and lm_head 2 x 32,000 x 4,096 = 262,144,000; a layer: q, o 2 x 4,096^2 = 33,554,432, k, v
    2 x 4,096 x 1,024 = 8,388,608, MLP 3 x 4,096 x 14,336 = 176,160,768, two norms 8,192 -> 218,112,000; x 32 +
    final norm 4,096 = 7,241,732,096 for both v0.1 and v0.2."""
    per_layer = 33_554_432 + 8_388_608 + 176_160_768 + 8_192
    assert per_layer == 218_112_000
    assert 262_144_000 + 32 * per_layer + 4_096 == MISTRAL_7B_COUNT
    for model_id in (MISTRAL_V01, MISTRAL_V02):
        assert decoder_params(_load(model_id)["config"]) == MISTRAL_7B_COUNT


def test_the_codestral_count_by_hand() -> None:
    """Embeddings and lm_head 2 x 32,768 x 6,144 = 402,653,184; a layer: q, o 2 x 6,144^2 = 75,497,472, k, v
    2 x 6,144 x 1,024 = 12,582,912, MLP 3 x 6,144 x 16,384 = 301,989,888, norms 12,288 -> 390,082,560; x 56 +
    6,144 = 22,247,282,688. The published printout: 190,840,832 trainable r=32 LoRA parameters (56 layers x 32 x
    (q 12,288 + k 7,168 + v 7,168 + o 12,288 + gate 22,528 + up 22,528 + down 22,528)) beside the frozen base."""
    c = _load(CODESTRAL)["config"]
    per_layer = 75_497_472 + 12_582_912 + 301_989_888 + 12_288
    assert per_layer == 390_082_560
    assert 402_653_184 + c["num_hidden_layers"] * per_layer + 6_144 == decoder_params(c) == PUBLISHED[CODESTRAL]
    h, inter, kv = c["hidden_size"], c["intermediate_size"], c["num_key_value_heads"] * 128
    lora = c["num_hidden_layers"] * 32 * (2 * (h + h) + 2 * (h + kv) + 3 * (h + inter))
    assert lora == 190_840_832


def test_the_ministral_count_by_hand() -> None:
    """Embeddings and lm_head 2 x 131,072 x 4,096 = 1,073,741,824; a layer: 33,554,432 + 8,388,608 + MLP
    3 x 4,096 x 12,288 = 150,994,944 + norms 8,192 = 192,946,176; x 36 + 4,096 = 8,019,808,256 (HF count)."""
    per_layer = 33_554_432 + 8_388_608 + 150_994_944 + 8_192
    assert per_layer == 192_946_176
    assert 1_073_741_824 + 36 * per_layer + 4_096 == PUBLISHED[MINISTRAL]
    assert decoder_params(_load(MINISTRAL)["config"]) == PUBLISHED[MINISTRAL]


def test_the_gemma_2b_count_by_hand() -> None:
    """Tied embedding 256,000 x 2,048 = 524,288,000; a layer: q, o 2 x 2,048 x 2,048 + k, v 2 x 2,048 x 256 (one
    KV head of 256) = 9,437,184, MLP 3 x 2,048 x 16,384 = 100,663,296, norms 4,096 -> 110,104,576; x 18 + 2,048 =
    2,506,172,416. Untied it would be 524,288,000 more: the published count pins the tying."""
    c = _load(GEMMA_2B_IT)["config"]
    per_layer = 9_437_184 + 100_663_296 + 4_096
    assert per_layer == 110_104_576
    assert 524_288_000 + 18 * per_layer + 2_048 == gemma_params(c) == PUBLISHED[GEMMA_2B_IT]
    assert gemma_params(c) + c["vocab_size"] * c["hidden_size"] != PUBLISHED[GEMMA_2B_IT]
    assert (c["num_key_value_heads"], c["head_dim"], c["num_attention_heads"]) == (1, 256, 8)


def test_the_nemotron_count_is_the_published_llama_70b_count() -> None:
    """No count of the Nemotron repository was found; it keeps Llama-3.1-70B-Instruct's shapes, so the published
    Llama-3.x-70B count (70,553,706,496) and the Llama-3.1-70B index total (2 B each) follow from its config."""
    c = _load(NEMOTRON)["config"]
    sibling = _load(LLAMA_70B_SIBLING)
    published = sum(sibling["params_by_dtype"].values())
    assert decoder_params(c) == published == 70_553_706_496
    assert 2 * published == LLAMA31_70B_INDEX_TOTAL == _load(NEMOTRON)["weights_bytes"]
    for key in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "num_key_value_heads", "vocab_size", "tie_word_embeddings", "rope_theta", "rope_scaling",
                "max_position_embeddings"):
        assert c[key] == sibling["config"][key], key


def test_the_nemotron_fp8_entry_is_this_checkpoint_quantized() -> None:
    """The FP8-dynamic derivative already in the catalog names this id as its base_model and has its shapes."""
    fp8 = _load(NEMOTRON_FP8)
    assert fp8["base_model"] == NEMOTRON
    base = _load(NEMOTRON)["config"]
    for key in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "num_key_value_heads", "vocab_size", "rope_scaling", "max_position_embeddings"):
        assert fp8["config"][key] == base[key], key


def test_granite_30_8b_is_granite_31_8b_with_the_4k_context() -> None:
    """Granite 3.0 8B has the 3.1 8B shapes and vocabulary (so its derived count), a 4,096-token context; the HF
    tree's four shards (16.34 GB rounded) hold 2 B per parameter."""
    a, b = _load(GRANITE_30_8B), _load(GRANITE_31_8B_SIBLING)
    for key in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "num_key_value_heads", "vocab_size", "tie_word_embeddings", "architectures",
                "attention_multiplier", "embedding_multiplier", "logits_scaling", "residual_multiplier"):
        assert a["config"][key] == b["config"][key], key
    assert (a["config"]["max_position_embeddings"], b["config"]["max_position_embeddings"]) == (4096, 131072)
    assert a["params_by_dtype"] == b["params_by_dtype"] == {"BF16": 8_170_848_256}
    assert abs(a["weights_bytes"] / 1e9 - sum(GRANITE_30_8B_TREE_GB)) < 0.02


def test_the_v02_index_total_is_two_bytes_per_parameter() -> None:
    entry = _load(MISTRAL_V02)
    assert entry["weights_bytes_kind"] == "index_total_size"
    assert entry["index_total_size"] == entry["weights_bytes"] == MISTRAL_V02_INDEX_TOTAL == 2 * MISTRAL_7B_COUNT
    assert split_bytes(entry["params_by_dtype"]) == MISTRAL_V02_INDEX_TOTAL


@pytest.mark.parametrize("model_id", IDS)
def test_a_wrong_shape_would_fail(model_id: str) -> None:
    """The comparison is sensitive: one changed shape key moves the derived count off the recorded one."""
    entry = _load(model_id)
    total = sum(entry["params_by_dtype"].values())
    for key, delta in (("intermediate_size", 128), ("num_hidden_layers", 1), ("vocab_size", 64),
                       ("num_key_value_heads", 1), ("hidden_size", 128)):
        bad = copy.deepcopy(entry["config"])
        bad[key] += delta
        assert shape_params(bad) != total, key


# --------------------------------------------------------------------------- attention pattern as recorded


def test_sliding_windows_as_recorded_and_read() -> None:
    """Mistral 7B v0.1: a 4,096-token window in every layer, rope_theta 1e4; v0.2: no window, rope_theta 1e6.
    Ministral-8B-2410's HF config declares one 32,768 window (= max_position_embeddings, so never exceeded) and
    no per-layer pattern; the reader takes exactly that."""
    from vllmkit.arch import read_arch
    from vllmkit.hub.catalog import find_entry

    expected = {MISTRAL_V01: (4096, 10000.0), MISTRAL_V02: (None, 1000000.0), MINISTRAL: (32768, 100000000.0),
                CODESTRAL: (None, 1000000.0)}
    for model_id, (window, theta) in expected.items():
        c = _load(model_id)["config"]
        assert (c["sliding_window"], c["rope_theta"]) == (window, theta), model_id
        found = find_entry(model_id)
        assert found is not None and found.id == model_id
        assert read_arch(found.config).sliding_window == window, model_id
    ministral = _load(MINISTRAL)["config"]
    assert ministral["sliding_window"] == ministral["max_position_embeddings"]
    assert "layer_types" not in ministral


# --------------------------------------------------------------------------- the planner


@pytest.mark.parametrize("model_id", IDS)
def test_the_planner_finds_and_reads_them(model_id: str) -> None:
    from vllmkit.arch import read_arch
    from vllmkit.hub.catalog import entry_to_metadata, find_entry
    from vllmkit.plan.variants import variant_label

    found = find_entry(model_id)
    assert found is not None and found.id == model_id
    arch = read_arch(found.config)
    assert arch.num_hidden_layers == found.config["num_hidden_layers"]
    assert entry_to_metadata(found).tensor_bytes == found.weights_bytes
    assert variant_label(entry_to_metadata(found), arch) == "bf16"


@pytest.mark.parametrize(("model_id", "tp"), PLANNED_TP)
def test_planner_weights_are_the_checkpoint_share_plus_the_rope_cache(model_id: str, tp: int) -> None:
    """Per GPU: the checkpoint bytes / TP (embedding, lm_head and every layer split; a Llama / Mistral / Gemma /
    Granite decoder keeps no layer weight whole) plus the RoPE cos/sin cache every rank holds whole. Exact at
    TP=1; at TP>1 the integer division per rank is allowed, 1 % at most."""
    entry = _load(model_id)
    plan = _plan(model_id, tp)
    assert plan.model.id == model_id
    assert plan.fits, (model_id, tp)
    assert plan.parallel.tensor_parallel_size == tp and plan.parallel.pipeline_parallel_size == 1
    rope = rope_cache_bytes_by_hand(entry["config"])
    if tp == 1:
        assert plan.memory.weights_bytes == entry["weights_bytes"] + rope
    else:
        assert plan.memory.weights_bytes == pytest.approx(entry["weights_bytes"] / tp + rope, rel=0.01)
        assert abs((plan.memory.weights_bytes - rope) * tp - entry["weights_bytes"]) <= 2 * tp * (
            entry["config"]["num_hidden_layers"] + 1)


def test_the_rope_caches_by_hand() -> None:
    """max_position_embeddings x rotary width x 2 B: 32,768 x 128 x 2 = 8 MiB (Mistral 7B, Codestral, Ministral),
    131,072 x 128 x 2 = 32 MiB (Nemotron, llama3 scaling keeps the rows), 8,192 x 256 x 2 = 4 MiB (Gemma 2B),
    4,096 x 128 x 2 = 1 MiB (Granite 3.0)."""
    expected = {MISTRAL_V01: 8 << 20, MISTRAL_V02: 8 << 20, CODESTRAL: 8 << 20, MINISTRAL: 8 << 20,
                NEMOTRON: 32 << 20, GEMMA_2B_IT: 4 << 20, GRANITE_30_8B: 1 << 20}
    for model_id, rope in expected.items():
        assert rope_cache_bytes_by_hand(_load(model_id)["config"]) == rope, model_id


def test_nemotron_bf16_does_not_fit_one_h100() -> None:
    """131.45 GiB of weights at TP=1 exceed an H100; TP=2 (65.7 GiB each) fits."""
    one = _plan(NEMOTRON, 1)
    assert not one.fits
    assert one.memory.weights_bytes == LLAMA31_70B_INDEX_TOTAL + rope_cache_bytes_by_hand(_load(NEMOTRON)["config"])


def test_without_a_tp_the_nemotron_plan_picks_the_fp8_sibling() -> None:
    """Recorded behaviour, not a data check: with no TP given the planner serves the fitting FP8-dynamic variant
    of the same base_model (72,669,806,592 B, TP=2) rather than the BF16 checkpoint at TP=2 or 4."""
    plan = _plan(NEMOTRON, None)
    assert plan.model.id == NEMOTRON_FP8
    fp8 = _load(NEMOTRON_FP8)
    tp = plan.parallel.tensor_parallel_size
    assert plan.memory.weights_bytes == pytest.approx(
        fp8["weights_bytes"] / tp + rope_cache_bytes_by_hand(fp8["config"]), rel=0.01)


def test_mistral_v02_matches_a_public_vllm_load_line() -> None:
    """vLLM 0.9.0.1 logged 13.4967 GiB for a three-shard Mistral-7B-Instruct (rope_theta 1e6) at max_model_len
    8192: the planner's 14,483,464,192 + 8,388,608 B = 13.4964 GiB."""
    plan = _plan(MISTRAL_V02, 1, max_model_len=8192)
    assert plan.memory.weights_bytes / GIB == pytest.approx(MISTRAL_V02_LOGGED_GIB, rel=0.01)
    assert abs(plan.memory.weights_bytes / GIB - MISTRAL_V02_LOGGED_GIB) < 0.001
