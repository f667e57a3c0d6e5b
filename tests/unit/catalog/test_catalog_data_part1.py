"""Data checks for the offline catalog entries of part 1 (Llama, Mistral, Gemma, Phi, gpt-oss, Granite,
GLM, Nemotron, Jamba families).

Each entry is a snapshot of public metadata (see the ``*_source`` fields). These tests do not trust the
numbers to be right because they are written down; they check that the numbers that can be derived from
each other agree, using arithmetic written out here (parameter counts from the config shapes, file sizes
vs the index total, HF dtype counts vs the index total, vLLM's own "weights took" line).
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.catalog._catalog_checks import (
    GIB,
    ITEMSIZE,
    assert_config_has_what_an_architecture_reader_needs,
    assert_every_value_has_its_source,
    assert_files_exceed_the_index_total_by_headers_only,
    assert_keys_and_types,
    assert_weights_kind_points_at_a_present_figure,
    path_for,
)
from tests.unit.catalog._catalog_checks import load_entry as _load

PART1_IDS: tuple[str, ...] = (
    "meta-llama/Llama-3.1-8B-Instruct",
    "meta-llama/Llama-3.1-70B-Instruct",
    "meta-llama/Llama-3.1-405B-Instruct",
    "meta-llama/Llama-3.3-70B-Instruct",
    "meta-llama/Meta-Llama-3-8B",
    "meta-llama/Llama-4-Scout-17B-16E-Instruct",
    "mistralai/Mistral-7B-Instruct-v0.3",
    "mistralai/Mixtral-8x7B-Instruct-v0.1",
    "google/gemma-3-12b-it",
    "google/gemma-3-27b-it",
    "google/gemma-2-9b-it",
    "microsoft/phi-4",
    "microsoft/Phi-3-mini-4k-instruct",
    "openai/gpt-oss-20b",
    "openai/gpt-oss-120b",
    "ibm-granite/granite-4.0-micro",
    "ibm-granite/granite-4.0-h-small",
    "zai-org/GLM-4.5-Air",
    "nvidia/NVIDIA-Nemotron-Nano-9B-v2",
    "ai21labs/AI21-Jamba-Mini-1.7",
)

# Keys a published config may omit because transformers fills a class default; each with the reason.
# Gemma 3 multimodal configs publish a text_config without vocab_size: Gemma3TextConfig default is 262208.
DEFAULTED_KEYS = {"gemma3_text": {"vocab_size"}}


@pytest.fixture(scope="module", params=PART1_IDS)
def entry(request: pytest.FixtureRequest) -> dict[str, Any]:
    return _load(request.param)


# --------------------------------------------------------------------------- shape and types


def test_every_part1_file_exists() -> None:
    missing = [m for m in PART1_IDS if not path_for(m).is_file()]
    assert not missing


def test_keys_and_types(entry: dict[str, Any]) -> None:
    assert_keys_and_types(entry)


def test_every_figure_has_a_source(entry: dict[str, Any]) -> None:
    assert_every_value_has_its_source(entry)


def test_config_has_what_an_architecture_reader_needs(entry: dict[str, Any]) -> None:
    assert_config_has_what_an_architecture_reader_needs(entry, DEFAULTED_KEYS)


def test_weights_kind_matches_the_figure_it_names(entry: dict[str, Any]) -> None:
    # part 1's params_x_dtype figures of gemma-2-9b, granite-4.0-h-small, Nemotron-Nano-9B-v2 and Jamba come
    # from a published total count with no dtype split recorded
    assert_weights_kind_points_at_a_present_figure(entry, split_required=False)


# --------------------------------------------------------------------------- cross-checks between figures


def test_files_exceed_the_index_total_by_headers_only(entry: dict[str, Any]) -> None:
    if entry["files"] is None or entry["index_total_size"] is None:
        pytest.skip("files or index total not recorded")
    assert_files_exceed_the_index_total_by_headers_only(entry)


def _bytes_from_params(entry: dict[str, Any]) -> int:
    params = entry["params_by_dtype"]
    if entry["variant"] == "mxfp4":
        # HF counts a packed MXFP4 *_blocks byte as 2 parameters (two FP4 values) and a *_scales byte as 1
        # (one E8M0 scale per 32 values = per 16 block bytes). With B block bytes: U8 = 2B + B/16 = 33B/16,
        # and the stored bytes are B + B/16 = 17B/16 = U8 * 17/33.
        u8 = params["U8"]
        assert (u8 * 17) % 33 == 0
        return 2 * params["BF16"] + u8 * 17 // 33
    return sum(ITEMSIZE[dtype] * count for dtype, count in params.items())


def test_dtype_counts_reproduce_the_index_total(entry: dict[str, Any]) -> None:
    if entry["params_by_dtype"] is None or entry["index_total_size"] is None:
        pytest.skip("dtype counts or index total not recorded")
    assert _bytes_from_params(entry) == pytest.approx(entry["index_total_size"], rel=1e-3)


def test_params_x_dtype_weights_follow_from_the_dtype_counts(entry: dict[str, Any]) -> None:
    if entry["weights_bytes_kind"] != "params_x_dtype" or entry["params_by_dtype"] is None:
        pytest.skip("weights not derived from recorded dtype counts")
    assert entry["weights_bytes"] == _bytes_from_params(entry)


def test_gpt_oss_exact_byte_arithmetic() -> None:
    # Written out from the HF dtype counts (alain-ai-learning-platform HF API captures):
    # 20b: 2 * 1,804,459,584 + 19,707,494,400 * 17 / 33 = 3,608,919,168 + 10,152,345,600 = 13,761,264,768
    # 120b: 2 * 2,167,371,072 + 118,244,966,400 * 17 / 33 = 4,334,742,144 + 60,914,073,600 = 65,248,815,744
    assert _load("openai/gpt-oss-20b")["index_total_size"] == 3_608_919_168 + 10_152_345_600
    assert _load("openai/gpt-oss-120b")["index_total_size"] == 4_334_742_144 + 60_914_073_600


# --------------------------------------------------------------------------- parameter counts from config shapes


def _dense_or_moe_decoder_params(config: dict[str, Any]) -> int:
    """Parameters of a Llama-style decoder (GQA attention, gated MLP or Mixtral MoE, RMSNorm), from its config.

    Per layer: q and o (hidden x heads*head_dim), k and v (hidden x kv_heads*head_dim), gated MLP
    3 * hidden * intermediate (times the expert count plus a router for Mixtral), two norms. Plus the
    embedding, the final norm and an untied lm_head.
    """
    hidden = config["hidden_size"]
    heads = config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads", heads)
    head_dim = config.get("head_dim") or hidden // heads
    attention = 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim
    mlp = 3 * hidden * config["intermediate_size"]
    experts = config.get("num_local_experts", 0)
    if experts:
        mlp = experts * mlp + experts * hidden
    per_layer = attention + mlp + 2 * hidden
    embeddings = config["vocab_size"] * hidden * (1 if config.get("tie_word_embeddings") else 2)
    return config["num_hidden_layers"] * per_layer + embeddings + hidden


@pytest.mark.parametrize(
    "model_id",
    [
        "meta-llama/Llama-3.1-8B-Instruct",
        "meta-llama/Llama-3.1-70B-Instruct",
        "meta-llama/Llama-3.1-405B-Instruct",
        "meta-llama/Llama-3.3-70B-Instruct",
        "meta-llama/Meta-Llama-3-8B",
        "mistralai/Mistral-7B-Instruct-v0.3",
        "mistralai/Mixtral-8x7B-Instruct-v0.1",
        "microsoft/phi-4",
        "microsoft/Phi-3-mini-4k-instruct",
    ],
)
def test_published_param_count_matches_config_shapes(model_id: str) -> None:
    entry = _load(model_id)
    # The dtype counts come from the Hub; the shapes from config.json: two independent records.
    assert sum(entry["params_by_dtype"].values()) == _dense_or_moe_decoder_params(entry["config"])


def test_granite_micro_count_implies_tied_embeddings() -> None:
    entry = _load("ibm-granite/granite-4.0-micro")
    config = entry["config"]
    # 40 layers x (attention 2*2560*2560 + 2*2560*512 = 15,728,640; shared MLP 3*2560*8192 = 62,914,560;
    # two norms 5,120) + tied embedding 100,352*2560 = 256,901,120 + final norm 2,560 = 3,402,836,480.
    assert _dense_or_moe_decoder_params(
        {**config, "intermediate_size": config["shared_intermediate_size"]}
    ) == (40 * (15_728_640 + 62_914_560 + 5_120) + 256_901_120 + 2_560)
    assert entry["params_by_dtype"] == {"BF16": 3_402_836_480}
    # Cross-check against a real vLLM 0.11 log of the same checkpoint with online FP8 (linears 1 byte,
    # embedding and norms 2 bytes): "Model loading took 3.4244 GiB" (IBM CodeEngine tutorial).
    fp8_bytes = 40 * (15_728_640 + 62_914_560) + 2 * (256_901_120 + 40 * 5_120 + 2_560)
    assert fp8_bytes / GIB == pytest.approx(3.4244, rel=0.01)


def test_glm45_air_weights_are_the_full_checkpoint_with_the_mtp_layer() -> None:
    entry = _load("zai-org/GLM-4.5-Air")
    config = entry["config"]
    hidden, vocab = config["hidden_size"], config["vocab_size"]
    q = config["num_attention_heads"] * config["head_dim"]
    kv = config["num_key_value_heads"] * config["head_dim"]
    attention = hidden * q + q + 2 * (hidden * kv + kv) + q * hidden  # q/k/v carry biases (attention_bias)
    experts = config["n_routed_experts"] * 3 * hidden * config["moe_intermediate_size"]
    shared = config["n_shared_experts"] * 3 * hidden * config["moe_intermediate_size"]
    router = (
        config["n_routed_experts"] * hidden + config["n_routed_experts"]
    )  # gate + e_score_correction_bias
    moe_layer = attention + experts + shared + router + 2 * hidden
    dense_layer = attention + 3 * hidden * config["intermediate_size"] + 2 * hidden
    main = 2 * vocab * hidden + dense_layer + (config["num_hidden_layers"] - 1) * moe_layer + hidden
    # The MTP layer: one MoE layer + enorm, hnorm, eh_proj (2h -> h), shared_head.norm, and its own copies of
    # embed_tokens and shared_head.head.
    mtp = moe_layer + 2 * hidden + 2 * hidden * hidden + hidden + 2 * vocab * hidden
    assert main == 106_852_251_264
    assert main + mtp == 110_468_824_832  # the Hub's safetensors.total (debaditc/kvfit registry)
    # catalog policy: the whole repository; the planner drops the MTP layer vLLM does not load
    assert entry["weights_bytes"] == 2 * (main + mtp)


def test_llama3_8b_weights_match_the_vllm_log() -> None:
    # github.com/vllm-project/vllm/issues/12330: "Loading model weights took 14.9595 GB" (V0 prints GiB values).
    entry = _load("meta-llama/Meta-Llama-3-8B")
    assert entry["weights_bytes"] / GIB == pytest.approx(14.9595, rel=0.01)


def test_same_tensor_layout_gives_the_same_bytes() -> None:
    # Llama 3 / 3.1 8B share shapes; 3.1 and 3.3 70B share shapes.
    assert (
        _load("meta-llama/Meta-Llama-3-8B")["weights_bytes"]
        == _load("meta-llama/Llama-3.1-8B-Instruct")["weights_bytes"]
    )
    assert (
        _load("meta-llama/Llama-3.3-70B-Instruct")["weights_bytes"]
        == _load("meta-llama/Llama-3.1-70B-Instruct")["weights_bytes"]
    )
