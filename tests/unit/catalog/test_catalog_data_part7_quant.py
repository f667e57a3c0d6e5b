"""Data checks for the prequantized checkpoints of part 7: RedHatAI/Qwen3-14B-NVFP4 and
RedHatAI/Qwen3-30B-A3B-NVFP4 (compressed-tensors NVFP4), TheBloke/Mistral-7B-Instruct-v0.2-GPTQ
(AutoGPTQ 4-bit g128) and llava-hf/llava-v1.6-mistral-7b-hf (float16 LLaVA-NeXT).

None of these repositories' config.json or index was found, so every config is REBUILT and every
weight figure is derived from the config's shapes and the checkpoint format. The tests do not trust
those figures: they re-derive each one with the arithmetic written out below and compare it with a
figure published independently of it (the unquantized sibling's published parameter count, a vLLM
"Model loading took" line for the same repository, a published model-size table, the published CLIP
ViT-L/14-336 count), so a wrong shape in a config or a wrong packing rule fails.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.catalog._catalog_checks import GIB, assert_entry_basics, assert_weights_add_up
from tests.unit.catalog._catalog_checks import load_entry as _load
from tests.unit.catalog._catalog_checks import split_bytes as _bytes

NVFP4_IDS = ("RedHatAI/Qwen3-14B-NVFP4", "RedHatAI/Qwen3-30B-A3B-NVFP4")
GPTQ_ID = "TheBloke/Mistral-7B-Instruct-v0.2-GPTQ"
LLAVA_ID = "llava-hf/llava-v1.6-mistral-7b-hf"
PART7_IDS: tuple[str, ...] = (*NVFP4_IDS, GPTQ_ID, LLAVA_ID)

# NVFP4 packs two 4-bit values in a U8 byte; part 4's table has no U8 (no packed entry before this part)

# published figures, each independent of the entries checked here (sources in the entries)
QWEN3_14B_PARAMS = 29_536_614_400 // 2  # Qwen/Qwen3-14B index total_size / 2 B (all BF16)
QWEN3_30B_A3B_PARAMS = 30_532_122_624  # Qwen/Qwen3-30B-A3B published total_parameters
MISTRAL_V03_PARAMS = 7_248_023_552  # mistralai/Mistral-7B-Instruct-v0.3 HF safetensors total (vocab 32,768)
CLIP_L14_336_PARAMS = 303_507_456  # CLIP ViT-L/14-336 vision model, "verified equal to the HF snapshot"
LLAVA_PROJECTOR_PARAMS = 20_979_712  # LLaVA 1.5/1.6 two-layer MLP projector 1,024 -> 4,096 -> 4,096
VLLM_QWEN3_30B_A3B_NVFP4_GIB = 16.8589  # vLLM 0.12.0, vllm-project/vllm#30855, this repository
VLLM_QWEN3_14B_NVFP4_GIB = 9.97  # vLLM 0.23.0 on an RTX 5070 Ti (blog table, /work/shared/truth)
TABLE_QWEN3_14B_NVFP4_GB = 10.5  # model-size table listing RedHatAI/Qwen3-14B-NVFP4 at "10.5 GB"
VLLM_MISTRAL_GPTQ_GIB = 3.8844  # vLLM 0.11.0 on a DGX Spark loading this repository


# --------------------------------------------------------------------------- keys, sources, bytes


@pytest.mark.parametrize("model_id", PART7_IDS)
def test_keys_sources_and_weights_arithmetic(model_id: str) -> None:
    entry = _load(model_id)
    assert_entry_basics(entry, model_id)
    assert entry["variant"] in ("nvfp4", "gptq-int4", "fp16")
    unquantized = entry["variant"] == "fp16"
    assert (entry["base_model"] == entry["id"]) == unquantized
    assert (entry["config"].get("quantization_config") is None) == unquantized
    # nothing here was found verbatim: every config says it was rebuilt
    assert entry["config_source"].startswith("REBUILT") and "not verbatim" in entry["config_source"]
    assert entry["weights_bytes_kind"] == "params_x_dtype"
    assert_weights_add_up(entry)


# --------------------------------------------------------------------------- NVFP4 (compressed-tensors)


def nvfp4_split(config: dict[str, Any], base_params: int) -> tuple[dict[str, int], int, int]:
    """(dtype split, quantized weight elements, quantized Linears) of a compressed-tensors NVFP4 W4A4
    Qwen3 / Qwen3-MoE checkpoint whose Linears in every decoder layer are quantized (router gates and
    lm_head ignored). Each quantized Linear of E = out x in weights stores
      weight_packed        U8       [out, in/2]   -> E / 2 bytes (two E2M1 values a byte)
      weight_scale         F8_E4M3  [out, in/16]  -> E / 16 (one scale per 16 values)
      weight_global_scale  F32      [1]
      input_global_scale   F32      [1]           (W4A4; a W4A16 checkpoint has no input scale)
    Everything else (embeddings, lm_head, norms, router gates) stays BF16: the base count minus E."""
    h, layers, hd = config["hidden_size"], config["num_hidden_layers"], config["head_dim"]
    q, kv = config["num_attention_heads"] * hd, config["num_key_value_heads"] * hd
    attention = 2 * h * q + 2 * h * kv  # q_proj, o_proj; k_proj, v_proj
    if "num_experts" in config:
        experts = config["num_experts"]
        mlp = experts * 3 * h * config["moe_intermediate_size"]  # gate/up/down of every expert
        linears = 4 + 3 * experts
    else:
        mlp = 3 * h * config["intermediate_size"]
        linears = 7
    elements = layers * (attention + mlp)
    assert elements % 16 == 0
    split = {"BF16": base_params - elements, "F32": 2 * layers * linears,
             "F8_E4M3": elements // 16, "U8": elements // 2}
    return split, elements, layers * linears


def test_nvfp4_scheme_is_what_the_planner_reads() -> None:
    from vllmkit.arch import read_arch

    for model_id in NVFP4_IDS:
        q = _load(model_id)["config"]["quantization_config"]
        assert q["quant_method"] == "compressed-tensors" and q["format"] == "nvfp4-pack-quantized"
        group = q["config_groups"]["group_0"]
        for side in ("weights", "input_activations"):  # W4A4: FP4 weights and FP4 activations
            assert (group[side]["num_bits"], group[side]["type"], group[side]["group_size"]) == (4, "float", 16)
            assert group[side]["strategy"] == "tensor_group"
        assert "lm_head" in q["ignore"]
        facts = read_arch(_load(model_id)["config"]).quantization
        assert facts is not None
        assert (facts.method, facts.bits, facts.group_size) == ("compressed-tensors", 4, 16)
        assert facts.kv_cache_scheme is None  # kv_cache_scheme null: --kv-cache-dtype auto stays 16-bit


def test_qwen3_14b_nvfp4_bytes_follow_from_the_shapes() -> None:
    """Qwen3-14B: a layer's Linears hold q 5,120 x 5,120 + k, v 5,120 x 1,024 each + o 5,120 x 5,120 +
    gate/up/down 3 x 5,120 x 17,408 = 330,301,440 weights; x 40 = 13,212,057,600 in 280 Linears.
    U8 = 6,606,028,800, F8_E4M3 = 825,753,600, F32 = 560; BF16 = 14,768,307,200 (the BF16 release's
    published count) - 13,212,057,600 = 1,556,249,600 (embed + lm_head 2 x 151,936 x 5,120 =
    1,555,824,640, 40 x (2 x 5,120 + 2 x 128) norms = 419,840, final norm 5,120).
    Bytes 6,606,028,800 + 825,753,600 + 2,240 + 3,112,499,200 = 10,544,283,840 = 10.54 GB, the
    published table's "10.5 GB"; vLLM 0.23 reported 9.97 GiB loaded, within 2% of 9.82 GiB."""
    entry = _load("RedHatAI/Qwen3-14B-NVFP4")
    base = _load("Qwen/Qwen3-14B")
    config = entry["config"]
    assert {k: v for k, v in config.items() if k != "quantization_config"} == base["config"]
    assert base["params_by_dtype"] == {"BF16": QWEN3_14B_PARAMS}
    split, elements, linears = nvfp4_split(config, QWEN3_14B_PARAMS)
    assert (elements, linears) == (13_212_057_600, 280)
    embed = 2 * config["vocab_size"] * config["hidden_size"]
    norms = config["num_hidden_layers"] * (2 * config["hidden_size"] + 2 * config["head_dim"]) + config["hidden_size"]
    assert split["BF16"] == embed + norms == 1_556_249_600  # the rest really is embeddings and norms
    assert entry["params_by_dtype"] == split
    assert entry["weights_bytes"] == _bytes(split) == 10_544_283_840
    assert round(entry["weights_bytes"] / 1e9, 1) == TABLE_QWEN3_14B_NVFP4_GB
    assert entry["weights_bytes"] / GIB == pytest.approx(VLLM_QWEN3_14B_NVFP4_GIB, rel=0.02)
    assert entry["base_model"] == base["id"]


def test_qwen3_30b_a3b_nvfp4_bytes_follow_from_the_shapes() -> None:
    """Qwen3-30B-A3B: a layer's attention q/o 2 x 2,048 x 4,096 + k/v 2 x 2,048 x 512 = 18,874,368 and
    128 experts x 3 x 2,048 x 768 = 603,979,776 weights; x 48 = 29,896,998,912 in 48 x 388 = 18,624
    Linears. U8 = 14,948,499,456, F8_E4M3 = 1,868,562,432, F32 = 37,248; BF16 = 30,532,122,624 (the
    BF16 release's published count) - 29,896,998,912 = 635,123,712 (embed + lm_head 622,329,856, router
    gates 48 x 128 x 2,048 = 12,582,912, norms 210,944). Bytes 18,087,458,304 = 16.845 GiB; vLLM 0.12.0
    loading this repository logged 16.8589 GiB (0.08% more). With the attention left in BF16 it would
    be 18.06 GiB, with the router gates in NVFP4 16.83 GiB (0.03 GiB off, twice the 0.014 of this split)."""
    entry = _load("RedHatAI/Qwen3-30B-A3B-NVFP4")
    base = _load("Qwen/Qwen3-30B-A3B")
    config = entry["config"]
    assert {k: v for k, v in config.items() if k != "quantization_config"} == base["config"]
    assert base["params_by_dtype"] == {"BF16": QWEN3_30B_A3B_PARAMS}
    split, elements, linears = nvfp4_split(config, QWEN3_30B_A3B_PARAMS)
    assert (elements, linears) == (29_896_998_912, 18_624)
    h, layers = config["hidden_size"], config["num_hidden_layers"]
    gates = layers * config["num_experts"] * h
    norms = layers * (2 * h + 2 * config["head_dim"]) + h
    assert split["BF16"] == 2 * config["vocab_size"] * h + gates + norms == 635_123_712
    assert entry["params_by_dtype"] == split
    assert entry["weights_bytes"] == _bytes(split) == 18_087_458_304
    logged = VLLM_QWEN3_30B_A3B_NVFP4_GIB * GIB
    assert entry["weights_bytes"] == pytest.approx(logged, rel=0.002)
    # the alternatives the log rules out
    hd = config["head_dim"]
    attention = layers * (2 * h * config["num_attention_heads"] * hd + 2 * h * config["num_key_value_heads"] * hd)
    attention_bf16 = entry["weights_bytes"] + attention * 2 - attention // 2 - attention // 16
    gates_nvfp4 = entry["weights_bytes"] - gates * 2 + gates // 2 + gates // 16
    assert abs(attention_bf16 - logged) > 0.05 * logged
    assert abs(gates_nvfp4 - logged) > abs(entry["weights_bytes"] - logged)
    assert config["quantization_config"]["ignore"] == ["lm_head"] + [f"model.layers.{i}.mlp.gate" for i in range(layers)]


# --------------------------------------------------------------------------- GPTQ


def gptq_split(config: dict[str, Any]) -> tuple[dict[str, int], int]:
    """(dtype split, unquantized parameter count) of an AutoGPTQ 4-bit checkpoint of a Llama/Mistral
    decoder. Each Linear in -> out stores qweight I32 [in/8, out] (eight 4-bit values an int32),
    qzeros I32 [in/g, out/8], scales F16 [in/g, out] and g_idx I32 [in]; embeddings, lm_head and
    norms stay F16."""
    bits, g = config["quantization_config"]["bits"], config["quantization_config"]["group_size"]
    per_int = 32 // bits
    h, inter, layers = config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]
    hd = h // config["num_attention_heads"]
    q, kv = config["num_attention_heads"] * hd, config["num_key_value_heads"] * hd
    linears = [(h, q), (h, kv), (h, kv), (q, h), (h, inter), (h, inter), (inter, h)]  # (in, out)
    qweight = layers * sum(i // per_int * o for i, o in linears)
    qzeros = layers * sum(i // g * (o // per_int) for i, o in linears)
    scales = layers * sum(i // g * o for i, o in linears)
    g_idx = layers * sum(i for i, _ in linears)
    rest = 2 * config["vocab_size"] * h + layers * 2 * h + h
    unquantized = rest + layers * sum(i * o for i, o in linears)
    return {"F16": rest + scales, "I32": qweight + qzeros + g_idx}, unquantized


def test_mistral_gptq_bytes_follow_from_the_shapes() -> None:
    """Mistral-7B (32 layers, 4,096 hidden, 14,336 MLP, 8 KV heads): 218,103,808 weights a layer in
    7 Linears, 6,979,321,856 in all -> qweight 872,415,232, qzeros 6,815,744, g_idx 32 x 38,912 =
    1,245,184 (I32); scales 54,525,952 (F16); embeddings + lm_head 2 x 32,000 x 4,096 and norms
    262,410,240 (F16). Unquantized that is 7,241,732,096 = the published v0.3 total 7,248,023,552
    minus v0.3's 2 x 768 x 4,096 extra vocabulary rows. Bytes 880,476,160 x 4 + 316,936,192 x 2 =
    4,155,777,024 = 3.870 GiB; vLLM 0.11 logged 3.8844 GiB loading this repository (0.4% more)."""
    entry = _load(GPTQ_ID)
    config = entry["config"]
    split, unquantized = gptq_split(config)
    assert unquantized == MISTRAL_V03_PARAMS - 2 * (32_768 - config["vocab_size"]) * config["hidden_size"]
    assert unquantized == 7_241_732_096
    assert entry["params_by_dtype"] == split == {"F16": 316_936_192, "I32": 880_476_160}
    assert entry["weights_bytes"] == 4_155_777_024
    assert entry["weights_bytes"] == pytest.approx(VLLM_MISTRAL_GPTQ_GIB * GIB, rel=0.005)
    # the same shapes at 8 bits or group 32 are far from the log
    for q in ({"bits": 8, "group_size": 128}, {"bits": 4, "group_size": 32}):
        other = {**config, "quantization_config": {**config["quantization_config"], **q}}
        assert abs(_bytes(gptq_split(other)[0]) - VLLM_MISTRAL_GPTQ_GIB * GIB) > 0.03 * VLLM_MISTRAL_GPTQ_GIB * GIB
    # Mistral v0.2 architecture: v0.3's shapes with the 32,000-token vocabulary, no sliding window
    v03 = _load("mistralai/Mistral-7B-Instruct-v0.3")["config"]
    for key in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "num_key_value_heads", "rope_theta", "max_position_embeddings"):
        assert config[key] == v03[key], key
    assert config["sliding_window"] is None and config["vocab_size"] == 32_000


# --------------------------------------------------------------------------- LLaVA-NeXT


def clip_vision_params(v: dict[str, Any]) -> int:
    """CLIPVisionModel: class embedding (h), patch conv 3 x p x p x h without bias, position embeddings
    ((image/p)^2 + 1) x h, pre-layernorm (2h); per layer q/k/v/o with biases 4 (h^2 + h), MLP fc1/fc2
    with biases 2 h i + i + h, two layernorms 4h; post-layernorm (2h)."""
    h, i, p = v["hidden_size"], v["intermediate_size"], v["patch_size"]
    positions = (v["image_size"] // p) ** 2 + 1
    layer = 4 * (h * h + h) + 2 * h * i + i + h + 4 * h
    return h + 3 * p * p * h + positions * h + 2 * h + v["num_hidden_layers"] * layer + 2 * h


def test_llava_next_mistral_count_follows_from_the_config() -> None:
    """Vision: CLIP ViT-L/14-336 = 1,024 + 602,112 + 577 x 1,024 + 2,048 + 24 x 12,596,224 + 2,048 =
    303,507,456, the published count. Projector 1,024 x 4,096 + 4,096 + 4,096 x 4,096 + 4,096 =
    20,979,712, the published count. Language model: Mistral v0.2 with 32,064 rows (32,000 + <image> +
    <pad>, padded to 64) = 7,248,023,552 - 2 x 704 x 4,096 = 7,242,256,384. image_newline 4,096.
    Total 7,566,747,648 x 2 B (float16) = 15,133,495,296."""
    entry = _load(LLAVA_ID)
    config = entry["config"]
    text, vision = config["text_config"], config["vision_config"]
    assert clip_vision_params(vision) == CLIP_L14_336_PARAMS
    h_v, h_t = vision["hidden_size"], text["hidden_size"]
    projector = h_v * h_t + h_t + h_t * h_t + h_t
    assert projector == LLAVA_PROJECTOR_PARAMS
    assert text["vocab_size"] == config["vocab_size"] == 32_064 == -(-(32_000 + 2) // 64) * 64
    lm = gptq_split({**text, "quantization_config": {"bits": 4, "group_size": 128}})[1]
    assert lm == MISTRAL_V03_PARAMS - 2 * (32_768 - 32_064) * h_t == 7_242_256_384
    total = lm + CLIP_L14_336_PARAMS + LLAVA_PROJECTOR_PARAMS + h_t
    assert entry["params_by_dtype"] == {"F16": total} == {"F16": 7_566_747_648}
    assert entry["weights_bytes"] == 2 * total == 15_133_495_296
    # the text model is the GPTQ entry's base architecture, with the two added tokens
    gptq = _load(GPTQ_ID)["config"]
    for key in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_key_value_heads", "rope_theta"):
        assert text[key] == gptq[key], key


# --------------------------------------------------------------------------- what the planner sees


def test_the_planner_finds_and_reads_them() -> None:
    from vllmkit.arch import read_arch
    from vllmkit.hub.catalog import catalog_siblings, entry_to_metadata, find_entry

    for model_id in PART7_IDS:
        found = find_entry(model_id)
        assert found is not None and found.id == model_id
        arch = read_arch(found.config)
        text = found.config.get("text_config") or found.config
        assert arch.num_hidden_layers == text["num_hidden_layers"]
        assert entry_to_metadata(found).tensor_bytes == found.weights_bytes
    assert read_arch(_load(LLAVA_ID)["config"]).dtype == "float16"  # the root torch_dtype, as vLLM reads it
    gptq = read_arch(_load(GPTQ_ID)["config"]).quantization
    assert gptq is not None and (gptq.method, gptq.bits, gptq.group_size) == ("gptq", 4, 128)
    # the NVFP4 releases are listed as variants of their BF16 bases
    for base, quant in (("Qwen/Qwen3-14B", NVFP4_IDS[0]), ("Qwen/Qwen3-30B-A3B", NVFP4_IDS[1])):
        assert quant in {e.id for e in catalog_siblings(base)}
