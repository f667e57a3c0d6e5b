"""Version rules and the multimodal encoder term (issue 13), with the source of every expected value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllmkit.arch import LayerKind, read_arch
from vllmkit.engine.versions import engine_is_v1, rules_for, v0_batch_defaults, v1_oracle, version_warning
from vllmkit.estimate.memory import default_capture_sizes, estimate_cudagraph, rocm_hipgraph_pinned
from vllmkit.estimate.multimodal import encoder_extra_bytes, encoder_profile, vit_bytes_per_patch
from vllmkit.hub.catalog import find_entry
from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan

ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}
GIB = 1 << 30
GUIDE = json.loads((Path(__file__).resolve().parents[2] / "data" / "guide004" / "config.json").read_text())


# --- V0 engine (0.6.4 wheel: engine/arg_utils.py create_engine_config, config.py SchedulerConfig) ----

@pytest.mark.parametrize(
    ("max_len", "mm", "sliding", "expected"),
    [
        (8192, False, False, (8192, 256, False)),  # chunked prefill off: max(max_model_len, 2048)
        (1024, False, False, (2048, 256, False)),
        (131072, False, False, (512, 256, True)),  # > 32K text model on CUDA: chunked, 512 tokens
        (131072, False, True, (131072, 256, False)),  # sliding window keeps it off
        (4096, True, False, (5120, 256, False)),  # multimodal: at least 5120
    ],
)
def test_v0_batch_defaults(max_len: int, mm: bool, sliding: bool, expected: tuple[int, int, bool]) -> None:
    assert v0_batch_defaults(max_len, is_multimodal=mm, sliding_window=sliding, device="cuda") == expected


def test_v0_long_context_profiles_512_tokens_like_the_public_log() -> None:
    # vllm#13061 (V0, 0.7.x, R1-Distill-Qwen-14B at 131072 on 2x4090): "PyTorch activation peak memory
    # takes 0.19GiB" - only a 512-token profile run is that small for a 5120-wide model
    assert v0_batch_defaults(131072, is_multimodal=False, sliding_window=False, device="cuda")[0] == 512


def test_v0_long_context_chunked_prefill_from_0_5_3() -> None:
    """The 0.5.0.post1, 0.5.1 and 0.5.2 wheels declare `enable_chunked_prefill: bool = False` and never
    change it; 0.5.3.post1 is the first with the > 32K default: before it a 128K model profiles (and
    schedules) its whole context in one step."""
    for version, expected in (("0.5.2", 131072), ("0.5.3", 512)):
        plan = build_plan(PlanRequest(model="meta-llama/Llama-3.1-8B-Instruct", source="catalog", gpu="h100",
                                      vllm_version=version), ENV)
        assert plan.settings.max_num_batched_tokens == expected, version


def test_v0_long_context_chunked_prefill_on_rocm_too() -> None:
    """0.6.3.post1 engine/arg_utils.py: the > 32K default asks `device_config.device_type == "cuda"`, and
    DeviceConfig sets "cuda" for every `current_platform.is_cuda_alike()` platform, ROCm included: an
    MI300X plan of a 128K model gets chunked prefill and the 512-token profile, as an H100 plan does."""
    for gpu in ("mi300x", "h100"):
        plan = build_plan(PlanRequest(model="meta-llama/Llama-3.1-8B-Instruct", source="catalog", gpu=gpu,
                                      vllm_version="0.6.3"), ENV)
        assert plan.settings.max_num_batched_tokens == 512, gpu


def test_v0_without_chunked_prefill_runs_prompts_in_steps_of_their_own() -> None:
    """V0 (0.6.3.post1 core/scheduler.py `_schedule_default`): with chunked prefill off (the default up to
    32K of context) waiting prompts are scheduled first, and no decode runs in a step that has prefills
    ("Don't schedule decodes if prefills are scheduled"); V1 and V0 with chunked prefill mix them."""
    from vllmkit.hardware.profiles import resolve_gpu
    from vllmkit.hub.catalog import entry_to_metadata
    from vllmkit.plan.candidates import engine_settings, prepare_candidate
    from vllmkit.plan.evaluate import at_length
    from vllmkit.plan.performance import candidate_perf
    from vllmkit.plan.variants import make_variant

    def limits(version: str, max_len: int):
        rules = rules_for(version)
        variant = make_variant(entry_to_metadata(find_entry("meta-llama/Llama-3.1-8B-Instruct")), rules)
        profile = resolve_gpu("a100-80gb-sxm")
        req = PlanRequest(model="meta-llama/Llama-3.1-8B-Instruct", gpu="a100-80gb-sxm", max_model_len=max_len)
        settings = engine_settings(req, profile, rules, "auto", variant.arch, 1, 1, None)
        ev = at_length(prepare_candidate(variant, 1, 1, settings, rules), max_len)
        return candidate_perf(variant.arch, ev, settings, variant.label, profile, vllm_version=version).limits

    v0_short = limits("0.6.3", 8192)
    assert not v0_short.chunked_prefill and not v0_short.mixed_batches
    assert v0_short.max_num_batched_tokens == 8192
    v0_long = limits("0.6.3", 131072)
    assert v0_long.chunked_prefill and v0_long.mixed_batches and v0_long.max_num_batched_tokens == 512
    v1 = limits("0.10.1", 8192)
    assert v1.chunked_prefill and v1.mixed_batches


def test_engine_selection() -> None:
    assert not engine_is_v1(rules_for("0.7.3"), {})
    assert engine_is_v1(rules_for("0.8.0"), {})
    assert not engine_is_v1(rules_for("0.9.2"), {"VLLM_USE_V1": "0"})  # V0 still selectable
    # V0 stays selectable through 0.10.2 (its worker/ and V0 LLMEngine are in the wheel); 0.11.0's
    # vllm/engine/llm_engine.py is V1's LLMEngine
    assert not engine_is_v1(rules_for("0.10.2"), {"VLLM_USE_V1": "0"})
    assert engine_is_v1(rules_for("0.11.0"), {"VLLM_USE_V1": "0"})  # V0 removed


def test_v0_plan_has_no_cuda_graph_term_and_sizes_profile_from_max_model_len() -> None:
    plan = build_plan(PlanRequest(model="meta-llama/Llama-3.1-8B-Instruct", source="catalog", gpu="a100-80gb-sxm",
                                  vllm_version="0.6.4", max_model_len=8192), ENV)
    assert plan.memory.cudagraph_bytes == 0
    assert plan.settings.max_num_batched_tokens == 8192 and plan.settings.max_num_seqs == 256


# V0 non-torch memory: vllm/worker/worker.py (0.7.2 and 0.8.2 wheels, identical) sizes the KV cache with
# utils.memory_profiling from the baseline snapshot init_device takes after the CUDA context exists, so
# the logged non_torch_memory is only what grew after it; 0.6.4 subtracts torch memory from the whole
# device's use, CUDA context included. Expected values: the non_torch_memory each public log prints, planned on
# the GPU it ran on (PCIe here; NVLink groups: tests/unit/estimate/test_v0_nccl_non_torch.py).
@pytest.mark.parametrize(
    ("version", "gpu", "tp", "pp", "logged_gib", "source"),
    [
        ("0.7.2", "t4", 1, 1, 0.01, "Colab T4 log, Qwen2.5-1.5B (collected-startup-logs-6)"),
        ("0.6.5", "a100-40gb-sxm", 1, 1, 0.10, "vllm#12330, A100-40GB, Llama-3-8B"),
        ("0.7.2", "rtx-4090", 2, 1, 0.25, "vllm#13061, 2 x RTX 4090, R1-Distill-Qwen-14B"),
        ("0.7.3", "l40s", 8, 4, 0.28, "vllm#15598, 32 x L40S, DeepSeek-R1"),
        ("0.6.4", "rtx-3090", 1, 1, 0.35, "vllm#10517, RTX 3090: initial_memory_usage 15.34 GiB - 14.99 GiB of weights"),
    ],
)
def test_v0_non_torch_memory_is_what_the_public_logs_print(version: str, gpu: str, tp: int, pp: int,
                                                           logged_gib: float, source: str) -> None:
    plan = build_plan(PlanRequest(model="meta-llama/Llama-3.1-8B-Instruct", source="catalog", gpu=gpu,
                                  vllm_version=version, max_model_len=8192, tensor_parallel_size=tp,
                                  pipeline_parallel_size=pp), ENV)
    assert abs(plan.memory.non_torch_bytes / GIB - logged_gib) <= 0.06, source


def test_v0_available_kv_matches_the_rtx3090_log() -> None:
    # vllm#10517 (0.6.4.post1, RTX 3090, Llama-3.1-8B-Instruct, util 0.90): "total_gpu_memory=23.58GiB ...
    # kv_cache_size=3.81GiB" at --max-model-len 20000 and 2.89 GiB at 29000 (which then fails: 23,648
    # tokens < 29,000). The V1-fitted constant (1.12 GiB of context and forward-pass share) put both
    # about 0.9 GiB low.
    for max_len, logged, starts in ((20000, 3.81, True), (29000, 2.89, False)):
        plan = build_plan(PlanRequest(model="meta-llama/Llama-3.1-8B-Instruct", source="catalog", gpu="rtx-3090",
                                      gpu_memory=int(23.58 * GIB), vllm_version="0.6.4", max_model_len=max_len,
                                      gpu_memory_utilization=0.9, tensor_parallel_size=1), ENV)
        assert abs(plan.memory.kv_cache_bytes / GIB - logged) / logged < 0.10
        assert plan.fits is starts


def test_vllm_use_v1_0_on_0_8_runs_the_v0_worker() -> None:
    # 0.8.x with VLLM_USE_V1=0: the V0 worker measures from its baseline (no context, no other processes),
    # while the V1 worker of 0.8.0 - 0.9.0 charges the whole device (engine/versions.py)
    def non_torch(env: dict[str, str]) -> float:
        req = PlanRequest(model="meta-llama/Llama-3.1-8B-Instruct", source="catalog", gpu="a100-80gb-sxm",
                          vllm_version="0.8.5", max_model_len=8192, gpu_memory_in_use=4 * GIB)
        return build_plan(req, env).memory.non_torch_bytes / GIB

    assert non_torch({**ENV, "VLLM_USE_V1": "0"}) < 0.1
    assert non_torch(ENV) > 1.0


# --- text-only serving of a VLM: which releases leave the tower out, and which limits make it text-only ---

def _weights(model: str, version: str, **kw: object) -> int:
    req = PlanRequest(model=model, source="catalog", gpu="h100", vllm_version=version, max_model_len=8192,
                      tensor_parallel_size=1, **kw)
    return build_plan(req, ENV).memory.weights_bytes


@pytest.mark.parametrize(
    ("model", "version", "skipped"),
    [
        # _mark_tower_model: in the 0.15.0 wheel's models/interfaces.py (gemma3_mm.py uses it), not in 0.14.0
        ("google/gemma-3-12b-it", "0.14.0", False),
        ("google/gemma-3-12b-it", "0.15.0", True),
        # Qwen2.5-VL's own __init__ sets self.visual = None at zero image and video limits (0.13.0 wheel)
        ("Qwen/Qwen2.5-VL-7B-Instruct", "0.13.0", True),
        ("Qwen/Qwen2.5-VL-7B-Instruct", "0.12.0", False),  # older releases not checked: kept
        ("Qwen/Qwen3-VL-8B-Instruct", "0.13.0", True),  # qwen3_vl.py, the same "self.visual = None"
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "0.13.0", True),  # mllama4.py "self.vision_model = None"
    ],
)
def test_which_releases_leave_the_vision_tower_out(model: str, version: str, skipped: bool) -> None:
    full = _weights(model, version)
    text = _weights(model, version, limit_mm_per_prompt={"image": 0, "video": 0})
    assert (text < full) is skipped


def test_a_zero_image_limit_keeps_the_tower_of_a_video_model() -> None:
    # vLLM 0.32 qwen2_vl.py get_supported_mm_limits: image and video; config/multimodal.py: an unspecified
    # modality is limited to 999, and _mark_tower_model({"image", "video"}) skips the tower only when both are 0
    full = _weights("Qwen/Qwen2.5-VL-7B-Instruct", "0.28.0")
    assert _weights("Qwen/Qwen2.5-VL-7B-Instruct", "0.28.0", limit_mm_per_prompt={"image": 0}) == full
    assert _weights("Qwen/Qwen2.5-VL-7B-Instruct", "0.28.0", limit_mm_per_prompt={"image": 0, "video": 0}) < full
    # Gemma-3 takes images only (gemma3_mm.py): an image limit of 0 is text-only
    assert (_weights("google/gemma-3-12b-it", "0.28.0", limit_mm_per_prompt={"image": 0})
            < _weights("google/gemma-3-12b-it", "0.28.0"))


def test_text_only_gemma4_e2b_leaves_both_towers_out_like_the_public_l4_log() -> None:
    # A Gemma-4 E2B report on vLLM 0.21.0 with --language-model-only on an L4 (collected-startup-logs-6:
    # "Model loading took 8.89 GiB memory"); the full towers load 9.80 GiB on a T4 with 0.28 / 0.29 (same
    # file). The audio tower (gemma4_mm.py _mark_tower_model(vllm_config, "audio")) is 304,824,608 parameters
    # plus the 1,536 x 1,536 embed_audio: the model card's 305M (tests/unit/catalog part7_gemma4)
    from tests.unit.catalog.test_catalog_data_part7_gemma4 import _load, audio_params

    config = _load("google/gemma-4-E2B-it")["config"]
    arch = read_arch(config)
    expected = audio_params(config["audio_config"])["total"] + config["audio_config"]["output_proj_dims"] * 1536
    assert arch.audio_tower_params == expected == 307_183_904
    req = PlanRequest(model="google/gemma-4-E2B-it", source="catalog", gpu="l4", vllm_version="0.21.0",
                      max_model_len=8192, gpu_memory_utilization=0.9, enforce_eager=True, language_model_only=True)
    text_only = build_plan(req, ENV).memory.weights_bytes / GIB
    assert abs(text_only - 8.89) / 8.89 < 0.015
    audio_off = build_plan(req.model_copy(update={"language_model_only": False,
                                                  "limit_mm_per_prompt": {"audio": 0}}), ENV).memory.weights_bytes
    full = build_plan(req.model_copy(update={"language_model_only": False}), ENV).memory.weights_bytes
    assert full - audio_off == 2 * expected


def test_language_model_only_before_the_flag_existed() -> None:
    # --language-model-only is in the 0.17.0 wheel's engine/arg_utils.py, not in 0.16.0: an older vLLM
    # exits at argument parsing, so the serve line carries zero limits instead
    from vllmkit.launch.command import attach_serve_command

    def plan_for(version: str):
        req = PlanRequest(model="Qwen/Qwen2.5-VL-7B-Instruct", source="catalog", gpu="h100", vllm_version=version,
                          max_model_len=8192, language_model_only=True)
        return attach_serve_command(build_plan(req, ENV), req)

    old, new = plan_for("0.16.0"), plan_for("0.17.0")
    assert "--language-model-only" not in old.serve_command
    i = old.serve_command.index("--limit-mm-per-prompt")
    assert json.loads(old.serve_command[i + 1]) == {"image": 0, "video": 0}
    assert any("no --language-model-only" in w for w in old.warnings)
    assert "--language-model-only" in new.serve_command and "--limit-mm-per-prompt" not in new.serve_command
    assert old.memory.weights_bytes == new.memory.weights_bytes  # both leave the tower out (>= 0.15)


# --- version table ----------------------------------------------------------------------------

def test_version_outside_known_table_warns() -> None:
    assert version_warning("0.40.0") is not None
    assert version_warning("0.5.0") is not None
    assert version_warning("0.28.1") is None
    plan = build_plan(PlanRequest(model="Qwen/Qwen3-8B", source="catalog", gpu="h100", vllm_version="0.99.0"), ENV)
    assert any("outside the releases" in w for w in plan.warnings)


def test_rocm_counts_cuda_graphs_only_from_0_24() -> None:
    # vllm#47366 / #48453: the reservation guard became is_cuda_alike() after v0.23.1rc1
    def graphs(gpu: str, version: str) -> int:
        req = PlanRequest(model="Qwen/Qwen3-8B", source="catalog", gpu=gpu, vllm_version=version, max_model_len=8192)
        # the V1 model runner's budget (Model Runner V2, the default for Qwen3 from 0.22, estimates no graphs
        # before 0.29: tests/unit/engine/test_model_runner_v2.py)
        return build_plan(req, {**ENV, "VLLM_USE_V2_MODEL_RUNNER": "0"}).memory.cudagraph_bytes

    assert graphs("mi300x", "0.23.0") == 0
    assert graphs("mi300x", "0.28.0") > 0
    assert graphs("h100", "0.23.0") > 0


def test_default_capture_sizes_follow_vllm() -> None:
    # vllm 0.32 config/vllm.py _set_cudagraph_sizes docstring: 1, 2, 4, multiples of 8 below 256, then of
    # 16 up to min(2 x max_num_seqs, 512): 3 + 31 + 17 = 51 sizes for the default 256 sequences
    assert len(default_capture_sizes(256, 8192)) == 51 and default_capture_sizes(256, 8192)[-1] == 512
    # the guide's --max-num-seqs 64: up to 128 -> 1, 2, 4, 8 ... 128 = 3 + 16
    assert default_capture_sizes(64, 16384) == [1, 2, 4, *range(8, 129, 8)]
    # never above max_num_batched_tokens
    assert default_capture_sizes(256, 100)[-1] == 96


def test_rocm_charges_the_memory_each_hipgraph_pins() -> None:
    # guide setting: 19 PIECEWISE sizes x 65 pieces (64 attention / GDN layers split the graph) and 11 FULL
    # decode sizes (<= 64 sequences); every size after the first at 4 MiB a graph (ROCm/pytorch#2286):
    # 18 x 65 + 10 = 1180 graphs = 4720 MiB
    term = rocm_hipgraph_pinned(pieces=65, max_num_seqs=64, max_num_batched_tokens=16384)
    assert term.bytes == 1180 * 4 * (1 << 20)

    def graphs(gpu: str) -> int:
        req = PlanRequest(model="Qwen/Qwen3-8B", source="catalog", gpu=gpu, vllm_version="0.28.0",
                          max_model_len=8192, max_num_seqs=64)
        return build_plan(req, {**ENV, "VLLM_USE_V2_MODEL_RUNNER": "0"}).memory.cudagraph_bytes  # the V1 runner

    # Qwen3-8B: 36 attention layers -> 37 pieces; 18 x 37 + 10 = 676 graphs on top of the ROCm graph pool term
    assert graphs("mi300x") - estimate_cudagraph(36).bytes == 676 * 4 * (1 << 20)


def test_deepseek_full_kv_before_mla_cache() -> None:
    cfg = find_entry("deepseek-ai/DeepSeek-V2-Lite").config
    old = read_arch(cfg, mla_cache=rules_for("0.6.4").mla_cache)
    new = read_arch(cfg, mla_cache=rules_for("0.7.1").mla_cache)
    # 0.6.4: Attention(num_local_heads, 256, num_kv_heads=num_local_heads); V2-Lite has 16 heads
    assert old.mla is None and old.head_dim == 256 and old.num_kv_heads == 16
    assert LayerKind.MLA not in old.layer_kinds
    # 0.7.1+: one latent of kv_lora_rank 512 + rope 64
    assert new.mla is not None and new.head_dim == 576 and new.num_kv_heads == 1


# --- multimodal encoder term (vllm 0.28 encoder_cache_manager.py / encoder_budget.py) -----------

def test_guide_encoder_budget_is_16384_tokens_one_image() -> None:
    v = read_arch(GUIDE).vision
    assert v is not None
    # Qwen3.5 processor longest_edge 16777216 px / (16 px patch * merge 2)^2 = 16384 tokens per image
    assert v.max_tokens_per_item == 16384 and v.patches_per_token == 4
    p = encoder_profile(v, max_num_batched_tokens=16384, max_num_seqs=64, max_model_len=131072)
    assert (p.budget_tokens, p.items, p.patches) == (16384, 1, 65536)  # guide: 16384-token encoder cache
    # embeddings held during the LM dummy run: 16384 tokens x 5120 x 2 B
    assert p.embeddings_bytes == 16384 * 5120 * 2


def test_vit_bytes_per_patch_hand_worked() -> None:
    v = read_arch(GUIDE).vision
    assert v is not None
    # H=1152, I=4304: MLP half 3H + 2I = 12064 > attention half 9H = 10368; carried: pixels 3*2*16*16 = 1536 + H
    assert vit_bytes_per_patch(v) == (12064 + 1536 + 1152) * 2
    # TP=2 halves the column-parallel outputs: 3H + 2I/2 = 7760 vs 3H + 3H = 6912
    assert vit_bytes_per_patch(v, 2) == (7760 + 1536 + 1152) * 2


def test_gemma3_many_small_images_fill_the_budget() -> None:
    v = read_arch(find_entry("google/gemma-3-27b-it").config).vision
    assert v is not None and v.max_tokens_per_item == 256  # mm_tokens_per_image
    p = encoder_profile(v, max_num_batched_tokens=8192, max_num_seqs=256, max_model_len=8192)
    assert p.items == 8192 // 256 and p.patches == 32 * 4096  # 896/14 = 64 -> 4096 SigLIP patches each
    one = encoder_profile(v, max_num_batched_tokens=8192, max_num_seqs=256, max_model_len=8192, limit_per_prompt=1)
    assert one.items == 32  # per prompt 1, but 256 sequences per batch: the encoder budget still binds


def test_zero_limit_skips_the_encoder() -> None:
    v = read_arch(GUIDE).vision
    assert v is not None
    p = encoder_profile(v, max_num_batched_tokens=8192, max_num_seqs=64, max_model_len=8192, limit_per_prompt=0)
    assert p.skipped and encoder_extra_bytes(p, 0) == 0


def test_no_chunked_prefill_limits_items_by_batched_tokens() -> None:
    v = read_arch(find_entry("google/gemma-3-27b-it").config).vision
    assert v is not None
    p = encoder_profile(v, max_num_batched_tokens=1024, max_num_seqs=256, max_model_len=1024,
                        limit_per_prompt=1, chunked_prefill=False)
    # budget max(1024, 256) // 256 = 4 items; decoder side min(256, 1024 // 256) * 1 = 4
    assert p.items == 4


@pytest.mark.parametrize(("version", "vendor", "cc", "pp", "ray", "v1"), [
    # compute capability < 8.0 falls back to V0 from 0.8.0 to 0.10.1 (EngineArgs._is_v1_supported_oracle,
    # "Need at least Ampere for now (FA support required)"; the check is gone in 0.10.2's arg_utils.py)
    ("0.8.2", "nvidia", 7.5, 1, False, False),   # a T4 (collected-startup-logs-15: V0 lines)
    ("0.8.5", "nvidia", 7.0, 1, False, False),   # a V100 (collected-startup-logs-24: V0 lines)
    ("0.10.1", "nvidia", 7.5, 1, False, False),
    ("0.10.2", "nvidia", 7.5, 1, False, True),
    ("0.8.5", "nvidia", 8.0, 1, False, True),
    # ROCm is off V1 by default in 0.8.x ("Non-CUDA is supported on V1, but off by default for now")
    ("0.8.5", "amd", None, 1, False, False),     # a Radeon Pro VII (collected-startup-logs-23: V0 lines)
    ("0.9.0", "amd", None, 1, False, True),
    # pipeline parallelism: V0 in 0.8.0 - 0.8.2; from 0.8.3 V1 only with the Ray executor, from 0.9.1 any
    ("0.8.2", "nvidia", 8.9, 4, True, False),    # vllm#15598's 0.8.0 - 0.8.2 log: V0
    ("0.8.3", "nvidia", 8.0, 2, False, False),   # llm-k8s's 2-node Llama-3.3-70B (collected-startup-logs-24): V0
    ("0.8.3", "nvidia", 8.0, 2, True, True),
    ("0.9.1", "nvidia", 8.0, 2, False, True),
])
def test_v1_oracle_falls_back_to_v0(version, vendor, cc, pp, ray, v1) -> None:
    rules = rules_for(version)
    assert engine_is_v1(rules, {}, vendor=vendor, compute_capability=cc, pipeline_parallel=pp, ray_executor=ray) is v1
    # VLLM_USE_V1=1 keeps V1 where the check is experimental (_warn_or_fallback: ROCm in 0.8.x, PP in 0.8.0 -
    # 0.8.2); where it is unsupported (_raise_or_fallback: compute capability < 8.0, PP without Ray from 0.8.3)
    # vLLM raises "VLLM_USE_V1=1 is not supported with ..." instead of starting
    if not v1:
        forced = v1_oracle(rules, {"VLLM_USE_V1": "1"}, vendor=vendor, compute_capability=cc, pipeline_parallel=pp,
                           ray_executor=ray)
        experimental = vendor == "amd" or (version == "0.8.2" and pp > 1)
        assert forced.v1 is experimental
        assert (forced.refused is None) is experimental
