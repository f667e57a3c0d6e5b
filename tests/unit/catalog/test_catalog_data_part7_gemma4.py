"""Data checks for the four Gemma 4 entries (gemma-4-E2B-it, E4B-it, 26B-A4B-it, 31B-it).

Their configs were rebuilt (see each config_source), so the tests do not trust them because they are written
down: the published parameter count (the HF API's safetensors count, recorded as params_by_dtype) is re-derived
exactly from the config's tensor shapes with the arithmetic written out below, so a wrong head count, width,
layer pattern or flag fails. The per-module formulas are those of transformers' modeling_gemma4.py (checked
module by module against a tiny Gemma 4 built from scaled-down copies of the four configs, last test), with two
facts about the checkpoints that the published counts pin down exactly:

- the KV-shared layers of E2B / E4B (the last num_kv_shared_layers) still ship k_proj, v_proj and k_norm: the
  checkpoint keeps them although neither transformers (`_keys_to_ignore_on_load_unexpected`) nor vLLM
  (`_gemma4_layer_weights_mapper`) loads them. Without them E2B misses by 18,880,512 and E4B by 55,055,616;
- the HF count (huggingface.js `computeNumOfParamsByDtypeSingleFile`, which skips every tensor whose
  `shape.length === 0`, find_string id 7024134566) leaves out the rank-0 clip bounds (input_min / input_max /
  output_min / output_max) of the clipped linears in the E2B / E4B vision and audio towers (928 scalars), but
  counts the shape-[1] `layer_scalar` of every decoder layer and the [hidden] `std_bias` / `std_scale` of the
  26B / 31B vision tower (persistent buffers, in the files: the 31B index total_size is exactly 2 x the count).

The planner facts of /work/scratch/gemma4/ARCH.md (layer pattern, KV sharing, k_eq_v, bidirectional vision
attention, vision output length) are asserted from the configs as well, since several of them (which layers are
full attention, num_kv_shared_layers) move the parameter count little or not at all.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from tests.unit.catalog._catalog_checks import assert_entry_basics, assert_weights_add_up
from tests.unit.catalog._catalog_checks import load_entry as _load

# (model id, HF API safetensors count: BF16 only), as ARCH.md's table and each entry's params_source give them
PUBLISHED: tuple[tuple[str, int], ...] = (
    ("google/gemma-4-E2B-it", 5_123_178_051),
    ("google/gemma-4-E4B-it", 7_996_156_490),
    ("google/gemma-4-26B-A4B-it", 25_805_936_206),
    ("google/gemma-4-31B-it", 31_273_088_876),
)
IDS = tuple(model_id for model_id, _ in PUBLISHED)


# --------------------------------------------------------------------------- the shape formulas


def full_layers(t: dict[str, Any]) -> list[int]:
    return [i for i, kind in enumerate(t["layer_types"]) if kind == "full_attention"]


def first_kv_shared_layer(t: dict[str, Any]) -> int:
    """transformers / vLLM: layers >= num_hidden_layers - num_kv_shared_layers reuse an earlier layer's KV."""
    return t["num_hidden_layers"] - t["num_kv_shared_layers"]


def layer_attention_shape(t: dict[str, Any], i: int) -> tuple[int, int]:
    """(head_dim, KV heads) of layer i as Gemma4TextConfig.__post_init__ resolves them: full-attention layers
    take global_head_dim, and num_global_key_value_heads only when attention_k_eq_v is set (E2B / E4B full
    layers keep num_key_value_heads); sliding layers keep head_dim / num_key_value_heads."""
    if t["layer_types"][i] == "sliding_attention":
        return t["head_dim"], t["num_key_value_heads"]
    kv = t["num_global_key_value_heads"] if t["attention_k_eq_v"] else None
    return t["global_head_dim"], kv if kv is not None else t["num_key_value_heads"]


def text_params(t: dict[str, Any]) -> dict[str, int]:
    """The language model, tensor by tensor (tied lm_head: the embedding is stored once).

    Model: embed_tokens [vocab, H]; final norm [H]; with per-layer embeddings (hidden_size_per_layer_input P > 0)
    embed_tokens_per_layer [vocab_size_per_layer_input, L*P], per_layer_model_projection [L*P, H] and
    per_layer_projection_norm [P].
    Layer i (head_dim d, KV heads k from layer_attention_shape, Q heads n): q_proj [n*d, H], q_norm [d],
    o_proj [H, n*d], k_proj [k*d, H], k_norm [d], v_proj [k*d, H] except on full layers with attention_k_eq_v
    (K doubles as V); four RMSNorms [H] (input, post-attention, pre- and post-feedforward); layer_scalar [1];
    MLP gate/up/down 3 x H x I, I doubled on KV-shared layers when use_double_wide_mlp; with PLE
    per_layer_input_gate [P, H], per_layer_projection [H, P], post_per_layer_input_norm [H]; with the MoE block
    router.proj [E, H], router.scale [H], router.per_expert_scale [E], experts.gate_up_proj [E, 2M, H],
    experts.down_proj [E, H, M] and three more norms [H] (post_feedforward_layernorm_1/_2,
    pre_feedforward_layernorm_2). The v_norm has no weight.
    "kv_shared_unused" is the part of "layers" that KV-shared layers ship but nobody loads (k_proj, v_proj,
    k_norm); "layer_scalar" the [1]-shaped buffers."""
    h, n_layers, heads = t["hidden_size"], t["num_hidden_layers"], t["num_attention_heads"]
    p = t["hidden_size_per_layer_input"] or 0
    shared_from = first_kv_shared_layer(t)
    layers = kv_shared_unused = 0
    for i in range(n_layers):
        d, k = layer_attention_shape(t, i)
        q_and_o = 2 * h * heads * d + d
        kv = h * k * d + d + (0 if t["attention_k_eq_v"] and t["layer_types"][i] == "full_attention" else h * k * d)
        inter = t["intermediate_size"] * (2 if t["use_double_wide_mlp"] and i >= shared_from else 1)
        mlp = 3 * h * inter
        ple = 2 * h * p + h if p else 0
        moe = 0
        if t["enable_moe_block"]:
            e, m = t["num_experts"], t["moe_intermediate_size"]
            moe = e * h + h + e + e * 2 * m * h + e * h * m + 3 * h
        layers += q_and_o + kv + 4 * h + 1 + mlp + ple + moe
        if i >= shared_from:
            kv_shared_unused += kv
    embed = t["vocab_size"] * h
    ple_model = t["vocab_size_per_layer_input"] * n_layers * p + h * n_layers * p + p if p else 0
    return {
        "embed": embed,
        "ple": ple_model,
        "layers": layers,
        "norm": h,
        "total": embed + ple_model + layers + h,
        "kv_shared_unused": kv_shared_unused,
        "layer_scalar": n_layers,
    }


def vision_params(v: dict[str, Any]) -> dict[str, int]:
    """gemma4_vision: patch_embedder.input_proj [H, 3 * patch^2], position_embedding_table [2, positions, H];
    per layer q/k/v/o (H <-> heads * head_dim, KV heads for k and v), q_norm / k_norm [head_dim], MLP gate/up/down
    3 x H x I, four RMSNorms [H]; std_bias / std_scale [H] each when standardize. The pooler has no weights.
    With use_clipped_linears each of the 7 linears per layer has 4 rank-0 clip bounds ("clip_scalars")."""
    h, hd, inter = v["hidden_size"], v["head_dim"], v["intermediate_size"]
    q, kv = v["num_attention_heads"] * hd, v["num_key_value_heads"] * hd
    patch = 3 * v["patch_size"] ** 2 * h + 2 * v["position_embedding_size"] * h
    layer = h * q + 2 * h * kv + q * h + 2 * hd + 3 * h * inter + 4 * h
    std = 2 * h if v["standardize"] else 0
    return {
        "total": patch + v["num_hidden_layers"] * layer + std,
        "clip_scalars": 7 * 4 * v["num_hidden_layers"] if v["use_clipped_linears"] else 0,
    }


def audio_params(a: dict[str, Any]) -> dict[str, int]:
    """gemma4_audio (conformer): subsample_conv_projection = conv [c0, 1, 3, 3] + LayerNorm [c0] (no bias),
    conv [c1, c0, 3, 3] + LayerNorm [c1], input_proj_linear [H, (c0 // 4) * c1]; per layer two macaron
    feed-forwards (H -> 4H -> H + pre/post norms [H]), attention q/k/v/post [H, H] + relative_k_proj [H, H] +
    per_dim_scale [H / heads], light conv (linear_start [2H, H], linear_end [H, H], depthwise_conv1d [H, 1, kernel],
    pre_layer_norm / conv_norm [H]) and norm_pre_attn / norm_post_attn / norm_out [H]; output_proj
    [out, H] + bias [out]. 10 clipped linears per layer (4 feed-forward, q/k/v/post, linear_start / linear_end),
    4 rank-0 bounds each."""
    h, c0, c1 = a["hidden_size"], *a["subsampling_conv_channels"]
    subsample = c0 * 9 + c0 + c1 * c0 * 9 + c1 + (c0 // 4) * c1 * h
    ffw = 2 * (h * 4 * h + 4 * h * h + 2 * h)
    attention = 5 * h * h + h // a["num_attention_heads"]
    light_conv = 2 * h * h + h * h + h * a["conv_kernel_size"] + 2 * h
    layer = ffw + attention + light_conv + 3 * h
    out = a["output_proj_dims"]
    return {
        "total": subsample + a["num_hidden_layers"] * layer + out * h + out,
        "clip_scalars": 10 * 4 * a["num_hidden_layers"] if a["use_clipped_linears"] else 0,
    }


def gemma4_params(config: dict[str, Any]) -> dict[str, int]:
    """The whole checkpoint as the HF count sees it: language model + vision tower + embed_vision (projection
    [text H, vision H], its pre-norm has no weight) + audio tower + embed_audio ([text H, output_proj_dims]) when
    audio_config is set. "rank0" are the clip bounds the HF count skips."""
    t, v, a = config["text_config"], config["vision_config"], config.get("audio_config")
    assert config["tie_word_embeddings"] is True and t["tie_word_embeddings"] is True
    text, vision = text_params(t), vision_params(v)
    audio = audio_params(a) if a is not None else {"total": 0, "clip_scalars": 0}
    embed_vision = v["hidden_size"] * t["hidden_size"]
    embed_audio = a["output_proj_dims"] * t["hidden_size"] if a is not None else 0
    return {
        "text": text["total"],
        "vision": vision["total"],
        "embed_vision": embed_vision,
        "audio": audio["total"],
        "embed_audio": embed_audio,
        "total": text["total"] + vision["total"] + embed_vision + audio["total"] + embed_audio,
        "kv_shared_unused": text["kv_shared_unused"],
        "layer_scalar": text["layer_scalar"],
        "rank0": vision["clip_scalars"] + audio["clip_scalars"],
    }


# --------------------------------------------------------------------------- keys, sources, weights


@pytest.mark.parametrize("model_id", IDS)
def test_keys_sources_and_weights_arithmetic(model_id: str) -> None:
    entry = _load(model_id)
    assert_entry_basics(entry, model_id)
    assert entry["base_model"] == model_id
    assert entry["variant"] == "bf16" and entry["config"]["dtype"] == "bfloat16"
    assert entry["config"].get("quantization_config") is None
    assert entry["config"]["architectures"] == ["Gemma4ForConditionalGeneration"]
    assert entry["config"]["model_type"] == "gemma4" and entry["config"]["text_config"]["model_type"] == "gemma4_text"
    assert_weights_add_up(entry)
    assert set(entry["params_by_dtype"]) == {"BF16"}
    assert "REBUILT" in entry["config_source"] and "not verbatim" in entry["config_source"]
    if entry["index_total_size"] is not None:  # 26B / 31B: the index byte total is 2 x the BF16 count
        assert entry["weights_bytes_kind"] == "index_total_size"
        assert entry["index_total_size"] == 2 * entry["params_by_dtype"]["BF16"]
    else:  # E2B / E4B: one model.safetensors, no index
        assert entry["weights_bytes_kind"] == "params_x_dtype"


# --------------------------------------------------------------------------- the count from the shapes


@pytest.mark.parametrize(("model_id", "published"), PUBLISHED)
def test_published_counts_follow_from_the_config_shapes(model_id: str, published: int) -> None:
    """Exact for all four: the recorded count is the published one and the shapes give it to the parameter."""
    entry = _load(model_id)
    assert sum(entry["params_by_dtype"].values()) == published
    assert gemma4_params(entry["config"])["total"] == published


def test_the_e2b_count_by_hand() -> None:
    """E2B (H 1536, 35 layers, 8 Q heads, 1 KV head, sliding d 256 / full d 512, PLE 256, shared from layer 15):
    embed_tokens 262,144 x 1,536 = 402,653,184; PLE table 262,144 x 8,960 = 2,348,810,240 + projection
    1,536 x 8,960 = 13,762,560 + norm 256. A sliding layer without its MLP: q and o 2 x 1,536 x 2,048 + q_norm 256,
    k and v 2 x 1,536 x 256 + k_norm 256, four norms 6,144, layer_scalar 1, PLE gate / projection 2 x 1,536 x 256
    + norm 1,536 = 7,872,513; a full layer: q and o 2 x 1,536 x 4,096 + 512, k and v 2 x 1,536 x 512 + 512, the
    rest as before = 14,950,913; MLP 3 x 1,536 x 6,144 = 28,311,552 on the 15 unshared layers, twice that on the
    20 shared ones: 28 x 7,872,513 + 7 x 14,950,913 + 15 x 28,311,552 + 20 x 56,623,104 = 1,882,222,115;
    + final norm 1,536: 4,647,449,891 for the language model (18,880,512 of it the shared layers' unused
    k/v/k_norm, 35 the layer scalars). Vision 16 layers of width 768: 167,364,608 + embed_vision 768 x 1,536 =
    1,179,648; audio 12 conformer layers of width 1,024: 304,824,608 + embed_audio 1,536 x 1,536 = 2,359,296.
    Total 5,123,178,051, the HF count (transformers' own named parameters: 5,104,297,504)."""
    config = _load("google/gemma-4-E2B-it")["config"]
    text = text_params(config["text_config"])
    assert (text["embed"], text["ple"], text["layers"], text["norm"]) == (
        402_653_184,
        2_348_810_240 + 13_762_560 + 256,
        28 * 7_872_513 + 7 * 14_950_913 + 15 * 28_311_552 + 20 * 56_623_104,
        1_536,
    )
    assert text["layers"] == 1_882_222_115
    parts = gemma4_params(config)
    assert (parts["text"], parts["vision"], parts["embed_vision"], parts["audio"], parts["embed_audio"]) == (
        4_647_449_891,
        167_364_608,
        1_179_648,
        304_824_608,
        2_359_296,
    )
    assert (parts["kv_shared_unused"], parts["layer_scalar"], parts["rank0"]) == (18_880_512, 35, 928)
    assert parts["total"] - parts["kv_shared_unused"] - parts["layer_scalar"] == 5_104_297_504


@pytest.mark.parametrize(
    ("model_id", "text", "vision", "audio", "kv_shared_unused"),
    [
        ("google/gemma-4-E2B-it", 4_647_449_891, 167_364_608 + 1_179_648, 304_824_608 + 2_359_296, 18_880_512),
        ("google/gemma-4-E4B-it", 7_518_069_034, 167_364_608 + 1_966_080, 304_824_608 + 3_932_160, 55_055_616),
        ("google/gemma-4-26B-A4B-it", 25_233_141_790, 569_550_384 + 3_244_032, 0, 0),
        ("google/gemma-4-31B-it", 30_697_345_340, 569_550_384 + 6_193_152, 0, 0),
    ],
)
def test_component_split(model_id: str, text: int, vision: int, audio: int, kv_shared_unused: int) -> None:
    """Language model / vision tower + embed_vision / audio tower + embed_audio, and the KV-shared layers'
    k_proj + v_proj + k_norm that the published count needs: E2B 16 sliding x (2 x 1,536 x 256 + 256) + 4 full
    x (2 x 1,536 x 512 + 512) = 18,880,512; E4B 15 x (2 x 2,560 x 512 + 256) + 3 x (2 x 2,560 x 1,024 + 512) =
    55,055,616. Without them the count falls short by exactly that (and the rank-0 clip bounds, 928 on both,
    would not close the gap: the HF count does not see them)."""
    entry = _load(model_id)
    parts = gemma4_params(entry["config"])
    assert (parts["text"], parts["vision"] + parts["embed_vision"], parts["audio"] + parts["embed_audio"]) == (
        text,
        vision,
        audio,
    )
    assert parts["kv_shared_unused"] == kv_shared_unused
    published = sum(entry["params_by_dtype"].values())
    assert published - (parts["total"] - kv_shared_unused) == kv_shared_unused
    assert parts["rank0"] == (928 if entry["config"].get("audio_config") else 0)


def test_the_26b_index_total_parameters_counts_the_tied_head_and_no_buffers() -> None:
    """The 26B index's metadata.total_parameters (26,544,131,376, quoted in the entry's notes) is a second,
    independent figure: transformers' named parameters with the tied lm_head counted again and without the
    persistent buffers (30 layer_scalar, std_bias / std_scale 2 x 1,152): 25,805,936,206 - 2,334
    + 262,144 x 2,816 (738,197,504)."""
    entry = _load("google/gemma-4-26B-A4B-it")
    config = entry["config"]
    t, parts = config["text_config"], gemma4_params(config)
    buffers = parts["layer_scalar"] + 2 * config["vision_config"]["hidden_size"]
    assert buffers == 2_334
    assert parts["total"] - buffers + t["vocab_size"] * t["hidden_size"] == 26_544_131_376
    assert "26,544,131,376" in entry["notes"]


def test_the_extracted_31b_vision_tower() -> None:
    """A vision tower extracted from 31B-it counts 569,550,384 (ARCH.md, rnagabh/gemma4-vision-encoder): patch
    input_proj 768 x 1,152 + positions 2 x 10,240 x 1,152 + 27 x (q/k/v/o 4 x 1,152 x 1,152 + q/k norms 144
    + MLP 3 x 1,152 x 4,304 + norms 4,608) + std_bias / std_scale 2,304."""
    config = _load("google/gemma-4-31B-it")["config"]
    assert vision_params(config["vision_config"])["total"] == 569_550_384
    assert _load("google/gemma-4-26B-A4B-it")["config"]["vision_config"] == config["vision_config"]


def test_the_tech_report_sizes() -> None:
    """ARCH.md's computed PLE figures exactly (table [262,144, L x 256], projection [L x 256, H]), and Gemma 4 report
    Table 1's rounded ones within 1 %: audio 305M (E2B, E4B); embedder 400M / 670M / 740M / 1,410M (vocab x H);
    per-layer embeddings 2,340M / 2,820M (the table). (The report's 150M / 550M vision towers are rounded further:
    the shapes give 167M, of which the position table is 15.7M, and 570M.)"""
    for model_id, table, projection in (
        ("google/gemma-4-E2B-it", 2_348_810_240, 13_762_560),
        ("google/gemma-4-E4B-it", 2_818_572_288, 27_525_120),
    ):
        t = _load(model_id)["config"]["text_config"]
        width = t["num_hidden_layers"] * t["hidden_size_per_layer_input"]
        assert (t["vocab_size_per_layer_input"] * width, width * t["hidden_size"]) == (table, projection)
        assert text_params(t)["ple"] == table + projection + t["hidden_size_per_layer_input"]
        assert table == pytest.approx(2_340e6 if "E2B" in model_id else 2_820e6, rel=0.01)
        assert audio_params(_load(model_id)["config"]["audio_config"])["total"] == pytest.approx(305e6, rel=0.01)
    for model_id, embed in zip(IDS, (400e6, 670e6, 740e6, 1_410e6), strict=True):
        assert text_params(_load(model_id)["config"]["text_config"])["embed"] == pytest.approx(embed, rel=0.01)


def test_the_e4b_local_header_count_adds_exactly_the_rank0_clip_bounds() -> None:
    """The E4B notes quote a local safetensors-header count of 7,996,157,418, 928 above the HF figure: a count
    that gives rank-0 tensors one element each sees the 928 clip bounds (16 vision layers x 7 linears x 4 +
    12 audio layers x 10 linears x 4) that the HF count skips, and nothing else."""
    entry = _load("google/gemma-4-E4B-it")
    assert "7,996,157,418" in entry["notes"]
    parts = gemma4_params(entry["config"])
    assert parts["rank0"] == 16 * 7 * 4 + 12 * 10 * 4 == 928
    assert parts["total"] + parts["rank0"] == 7_996_157_418


# a value each entry's count depends on, changed: the count must no longer match
MUTATIONS: tuple[tuple[str, str, Any], ...] = (
    ("text_config", "hidden_size", lambda x: x + 128),
    ("text_config", "intermediate_size", lambda x: x + 64),
    ("text_config", "num_attention_heads", lambda x: x + 1),
    ("text_config", "num_key_value_heads", lambda x: x + 1),
    ("text_config", "head_dim", lambda x: x * 2),
    ("text_config", "global_head_dim", lambda x: x // 2),
    ("text_config", "num_hidden_layers", None),  # with layer_types one shorter
    ("text_config", "attention_k_eq_v", lambda x: not x),
    ("text_config", "vocab_size", lambda x: x + 1),
    ("vision_config", "hidden_size", lambda x: x + 64),
    ("vision_config", "intermediate_size", lambda x: x + 64),
    ("vision_config", "num_hidden_layers", lambda x: x + 1),
    ("vision_config", "standardize", lambda x: not x),
    ("vision_config", "position_embedding_size", lambda x: x * 2),
)


@pytest.mark.parametrize("model_id", IDS)
def test_a_wrong_config_value_breaks_the_count(model_id: str) -> None:
    """Every shape-bearing field moves the count off the published one, so the exact match above is not an
    accident of fields that do not enter it. Fields that do not change the count for a given entry are named:
    use_double_wide_mlp and num_kv_shared_layers matter for E2B only (E4B has no double-wide MLP, the
    shared layers keep their k/v tensors), the PLE and MoE fields only where enabled; the tests below pin
    those values directly."""
    entry = _load(model_id)
    config, published = entry["config"], sum(entry["params_by_dtype"].values())
    t = config["text_config"]
    mutations = list(MUTATIONS)
    if t["num_global_key_value_heads"] is not None:
        mutations.append(("text_config", "num_global_key_value_heads", lambda x: x + 1))
    if t["hidden_size_per_layer_input"]:
        mutations += [
            ("text_config", "hidden_size_per_layer_input", lambda x: x * 2),
            ("text_config", "vocab_size_per_layer_input", lambda x: x + 1),
        ]
    if t["use_double_wide_mlp"]:
        mutations += [
            ("text_config", "use_double_wide_mlp", lambda x: not x),
            ("text_config", "num_kv_shared_layers", lambda x: x - 1),
        ]
    if t["enable_moe_block"]:
        mutations += [
            ("text_config", "num_experts", lambda x: x + 1),
            ("text_config", "moe_intermediate_size", lambda x: x + 64),
            ("text_config", "enable_moe_block", lambda x: not x),
        ]
    if config.get("audio_config") is not None:
        mutations += [
            ("audio_config", "hidden_size", lambda x: x + 64),
            ("audio_config", "num_hidden_layers", lambda x: x + 1),
            ("audio_config", "output_proj_dims", lambda x: x + 64),
        ]
    # a sliding layer made full (the pattern shifted by one) changes head_dim and KV heads on two layers
    shifted = copy.deepcopy(config)
    shifted["text_config"]["layer_types"] = [*shifted["text_config"]["layer_types"][1:], "full_attention"]
    assert gemma4_params(shifted)["total"] != published
    for section, key, change in mutations:
        wrong = copy.deepcopy(config)
        if change is None:
            wrong[section][key] -= 1
            wrong[section]["layer_types"] = wrong[section]["layer_types"][1:]
        else:
            wrong[section][key] = change(wrong[section][key])
        assert gemma4_params(wrong)["total"] != published, (section, key)
    assert gemma4_params(config)["total"] == published


# --------------------------------------------------------------------------- the planner's config facts (ARCH.md)

# model: (layers, hidden, Q heads, MLP intermediate, window, full layers, (sliding d, KV), (full d, KV),
#         k_eq_v, num_kv_shared_layers, KV source layers of the shared (sliding, full), cache-owning
#         (sliding, full), KV bytes per token BF16 (sliding, full), PLE (P, vocab), max positions, bidirectional)
FACTS: dict[str, tuple[Any, ...]] = {
    "google/gemma-4-E2B-it": (35, 1536, 8, 6144, 512, [4, 9, 14, 19, 24, 29, 34], (256, 1), (512, 1),
                              False, 20, (13, 14), (12, 3), (12_288, 6_144), (256, 262_144), 131_072, None),
    "google/gemma-4-E4B-it": (42, 2560, 8, 10240, 512, [5, 11, 17, 23, 29, 35, 41], (256, 2), (512, 2),
                              False, 18, (22, 23), (20, 4), (40_960, 16_384), (256, 262_144), 131_072, None),
    "google/gemma-4-26B-A4B-it": (30, 2816, 16, 2112, 1024, [5, 11, 17, 23, 29], (256, 8), (512, 2),
                                  True, 0, None, (25, 5), (204_800, 20_480), (0, 262_144), 262_144, "vision"),
    "google/gemma-4-31B-it": (60, 5376, 32, 21504, 1024, list(range(5, 60, 6)), (256, 16), (512, 4),
                              True, 0, None, (50, 10), (819_200, 81_920), (0, 262_144), 262_144, "vision"),
}


@pytest.mark.parametrize("model_id", IDS)
def test_the_attention_layout_the_planner_relies_on(model_id: str) -> None:
    """Layer pattern (full attention every 5th layer on E2B, every 6th on the others, the last layer full),
    per-layer head_dim / KV heads, KV sharing (a shared layer reads the last unshared layer of its type) and the
    KV bytes per token they give (K + V, 2 bytes, on the layers that own a cache; k_eq_v layers still cache V)."""
    (n_layers, hidden, heads, inter, window, full, sliding_shape, full_shape, k_eq_v, shared, sources, owning,
     kv_bytes, ple, positions, bidirectional) = FACTS[model_id]
    t = _load(model_id)["config"]["text_config"]
    assert (t["num_hidden_layers"], t["hidden_size"], t["num_attention_heads"]) == (n_layers, hidden, heads)
    assert (t["intermediate_size"], t["sliding_window"]) == (inter, window)
    assert len(t["layer_types"]) == n_layers and set(t["layer_types"]) == {"sliding_attention", "full_attention"}
    assert full_layers(t) == full and full[-1] == n_layers - 1
    every = 5 if model_id.endswith("E2B-it") else 6
    assert full == [i for i in range(n_layers) if i % every == every - 1]
    sliding = [i for i in range(n_layers) if i not in full]
    assert {layer_attention_shape(t, i) for i in sliding} == {sliding_shape}
    assert {layer_attention_shape(t, i) for i in full} == {full_shape}
    assert t["attention_k_eq_v"] is k_eq_v
    assert t["num_kv_shared_layers"] == shared
    first_shared = first_kv_shared_layer(t)
    unshared = range(first_shared)
    if sources is not None:
        assert tuple(max(i for i in unshared if t["layer_types"][i] == kind)
                     for kind in ("sliding_attention", "full_attention")) == sources
    owning_sliding = sum(1 for i in unshared if t["layer_types"][i] == "sliding_attention")
    owning_full = sum(1 for i in unshared if t["layer_types"][i] == "full_attention")
    assert (owning_sliding, owning_full) == owning
    per_token = tuple(n * 2 * kv * d * 2 for n, (d, kv) in zip(owning, (sliding_shape, full_shape), strict=True))
    assert per_token == kv_bytes
    assert (t["hidden_size_per_layer_input"], t["vocab_size_per_layer_input"]) == ple
    assert t["max_position_embeddings"] == positions
    assert t["use_bidirectional_attention"] == bidirectional
    assert t["vocab_size"] == 262_144 and t["final_logit_softcapping"] == 30.0
    assert t["hidden_activation"] == "gelu_pytorch_tanh"
    assert t["rope_parameters"] == {
        "full_attention": {"partial_rotary_factor": 0.25, "rope_theta": 1_000_000.0, "rope_type": "proportional"},
        "sliding_attention": {"rope_theta": 10_000.0, "rope_type": "default"},
    }


@pytest.mark.parametrize("model_id", IDS)
def test_the_mlp_moe_and_tower_facts(model_id: str) -> None:
    """E2B's shared layers run a double-wide MLP; 26B-A4B has 128 experts (top 8, width 704) on every layer,
    switched on for both readers (transformers: enable_moe_block, vLLM: num_experts not None); the vision
    tower gives 280 soft tokens per image on all four; only E2B / E4B carry the audio tower."""
    config = _load(model_id)["config"]
    t, v, a = config["text_config"], config["vision_config"], config.get("audio_config")
    assert t["use_double_wide_mlp"] is (model_id == "google/gemma-4-E2B-it")
    moe = model_id == "google/gemma-4-26B-A4B-it"
    assert t["enable_moe_block"] is moe and (t["num_experts"] is not None) is moe
    if moe:
        assert (t["num_experts"], t["top_k_experts"], t["moe_intermediate_size"]) == (128, 8, 704)
    assert v["model_type"] == "gemma4_vision"
    assert v["default_output_length"] == 280 == config["vision_soft_tokens_per_image"]
    small = model_id in ("google/gemma-4-E2B-it", "google/gemma-4-E4B-it")
    vision_shape = (16, 768, 12, 64, 3072) if small else (27, 1152, 16, 72, 4304)
    assert (v["num_hidden_layers"], v["hidden_size"], v["num_attention_heads"], v["head_dim"],
            v["intermediate_size"]) == vision_shape
    assert v["standardize"] is not small and v["use_clipped_linears"] is small
    assert (a is not None) is small
    if a is not None:
        assert a["model_type"] == "gemma4_audio"
        assert (a["num_hidden_layers"], a["hidden_size"], a["num_attention_heads"], a["output_proj_dims"]) == (
            12, 1024, 8, 1536)


# --------------------------------------------------------------------------- the formulas against transformers


def _tiny(config: dict[str, Any]) -> dict[str, Any]:
    """A scaled-down copy with the same flags, layer pattern and KV sharing: every width shrunk, so that
    transformers can build it quickly."""
    c = copy.deepcopy(config)
    t = c["text_config"]
    t.update(hidden_size=64, intermediate_size=48, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
             global_head_dim=32, vocab_size=128, vocab_size_per_layer_input=96)
    if t["hidden_size_per_layer_input"]:
        t["hidden_size_per_layer_input"] = 8
    if t["num_global_key_value_heads"] is not None:
        t["num_global_key_value_heads"] = 1
    if t["enable_moe_block"]:
        t.update(num_experts=4, top_k_experts=2, moe_intermediate_size=24)
    c["vision_config"].update(hidden_size=32, intermediate_size=40, num_attention_heads=2, num_key_value_heads=2,
                              head_dim=16, global_head_dim=16, num_hidden_layers=2, position_embedding_size=20)
    if c.get("audio_config") is not None:
        c["audio_config"].update(hidden_size=32, num_attention_heads=2, num_hidden_layers=2, output_proj_dims=24,
                                 subsampling_conv_channels=[8, 4])
    return c


@pytest.mark.parametrize("model_id", IDS)
def test_the_formulas_match_the_modules_transformers_builds(model_id: str) -> None:
    """Per module (language model, vision tower, audio tower, the two embedders) the formula equals the
    state_dict of transformers' Gemma4ForConditionalGeneration built from a scaled-down copy of the config:
    all tensors of rank >= 1 (what the HF count sees) except the tied lm_head, plus the KV-shared layers' k_proj /
    v_proj / k_norm, which transformers does not build but the checkpoints ship. The rank-0 tensors are the clip
    bounds."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = _tiny(_load(model_id)["config"])
    with torch.device("meta"):
        model = transformers.Gemma4ForConditionalGeneration(transformers.Gemma4Config.from_dict(config))
    counts: dict[str, int] = {}
    rank0 = 0
    for name, tensor in model.state_dict().items():
        if name == "lm_head.weight":
            continue
        if tensor.dim() == 0:
            rank0 += 1
            continue
        module = name.split(".")[1]
        counts[module] = counts.get(module, 0) + tensor.numel()
    parts = gemma4_params(config)
    assert counts.pop("language_model") + parts["kv_shared_unused"] == parts["text"]
    assert counts.pop("vision_tower") == parts["vision"]
    assert counts.pop("embed_vision") == parts["embed_vision"]
    assert counts.pop("audio_tower", 0) == parts["audio"]
    assert counts.pop("embed_audio", 0) == parts["embed_audio"]
    assert counts == {}
    assert rank0 == parts["rank0"]
