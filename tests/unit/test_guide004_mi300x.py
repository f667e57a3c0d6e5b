"""The MI300X deployment guide's worked example (shared/seeds/004, published 2026-10-13), as a test
built from its published numbers only.

Setting (guide §3, §7.2): one AMD Instinct MI300X (gfx942, 192 GB), vLLM 0.28.0 (ROCm build),
Qwen3.x-27B-FP8 (Qwen3.5-27B architecture: 64 layers = 16 x (3 gated-delta-net + 1 full attention),
vision tower; config in tests/data/guide004/config.json, from the Qwen3.5/3.6-27B model cards),
--max-model-len 131072, --gpu-memory-utilization 0.90, --max-num-seqs 64.
Published: weights ~29.4 GiB; "Available KV cache memory: 131.7 GiB"; "GPU KV cache size:
2,073,046 tokens"; "Maximum concurrency ... 131072 ...: 15.83x"; encoder cache of 16384 tokens.

The checkpoint's config omits `layer_types`; planning it as all full attention gave 4.36x.

The checkpoint also holds one MTP layer (text_config.mtp_num_hidden_layers = 1) that vLLM does not load
without MTP speculation (vllm 0.28.0 model_executor/models/qwen3_5.py, Qwen3_5ForConditionalGeneration.
load_weights: AutoWeightsLoader(self, skip_prefixes=["mtp."])); the planner subtracts it.

On ROCm vLLM pads every FP8 linear weight whose rows are a multiple of 512 bytes by 256 bytes a row
(quantization/utils/fp8_utils.py _maybe_pad_fp8_weight, VLLM_ROCM_FP8_PADDING=1 by default): that is
why the loaded weights (29.4 GiB) exceed the checkpoint files less the MTP layer (~28.4 GiB).
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan

GIB = 1 << 30
DATA = Path(__file__).resolve().parent.parent / "data" / "guide004"
PUBLISHED = {"weights_gib": 29.4, "kv_gib": 131.7, "tokens": 2_073_046, "concurrency": 15.83, "encoder_budget": 16384}
ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}


# The MTP block of this checkpoint from the config's shapes, FP8 as the other linears (block 128x128,
# F32 scales) with BF16 norms: fc (h -> 2h), gated q (2 x 24 x 256), k/v (4 x 256), o, gate/up/down
# (17408), five h-wide norms and the q/k norms. 424,829,184 B = 0.40 GiB.
MTP_LINEARS = [(5120, 10240), (12288, 5120), (1024, 5120), (1024, 5120), (5120, 6144), (17408, 5120),
               (17408, 5120), (5120, 17408)]
MTP_BYTES = (sum(o * i for o, i in MTP_LINEARS) + 4 * sum(-(-o // 128) * -(-i // 128) for o, i in MTP_LINEARS)
             + 2 * (5 * 5120 + 2 * 256))
# The guide's own file total for the checkpoint (§5.2 table, ModelScope .safetensors sizes / 1e9)
GUIDE_FILES_BYTES = int(30.9e9)


def _sparse_checkpoint(d: Path, n: int) -> Path:
    shutil.copy(DATA / "config.json", d / "config.json")
    header = json.dumps({"weights": {"dtype": "U8", "shape": [n], "data_offsets": [0, n]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(d / "model.safetensors", "wb") as fh:
        fh.write(struct.pack("<Q", len(header)) + header)
        fh.truncate(8 + len(header) + n)
    return d


# The ROCm FP8 row padding of this model at TP=1, worked by hand from the config: every decoder linear
# has K (hidden 5120, q heads 24 x 256 = 6144, intermediate 17408) a multiple of 512, so each grows by
# its rows x 256 B. Full-attention layer: qkv 2 x 6144 (gated q) + 2 x 1024 = 14336, o 5120, gate_up
# 34816, down 5120. Gated-delta-net layer: in_proj_qkvz 2 x 2048 + 2 x 6144 = 16384, in_proj_ba 96,
# out_proj 5120, gate_up 34816, down 5120. 16 full + 48 GDN layers.
PAD_TP1 = 256 * (16 * (14336 + 5120 + 34816 + 5120) + 48 * (16384 + 96 + 5120 + 34816 + 5120))


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """config.json + one sparse safetensors file (no real bytes written) as large as the checkpoint's
    files per the guide (30.9 GB, §5.2)."""
    return _sparse_checkpoint(tmp_path_factory.mktemp("guide004"), GUIDE_FILES_BYTES)


def _req(model_dir: Path, **extra) -> PlanRequest:
    return PlanRequest(model=str(model_dir), source="local", gpu="mi300x", vllm_version="0.28.0",
                       max_model_len=131072, gpu_memory_utilization=0.90, max_num_seqs=64, **extra)


def _close(pred: float, meas: float, tol: float = 0.01) -> bool:
    return abs(pred - meas) / meas <= tol


def test_tokens_and_concurrency_from_the_published_kv_budget(model_dir: Path) -> None:
    """KV maths only: hybrid grouping, page unification and the concurrency formula, on the KV
    budget the guide's log printed."""
    plan = build_plan(_req(model_dir, kv_cache_memory_bytes=int(PUBLISHED["kv_gib"] * GIB)), ENV)
    assert _close(plan.kv_cache.tokens, PUBLISHED["tokens"])
    assert _close(plan.kv_cache.max_concurrency, PUBLISHED["concurrency"])
    kinds = sorted((g.kind, g.layers) for g in plan.kv_cache.groups)
    assert kinds == [("full", 16), ("mamba", 16), ("mamba", 16), ("mamba", 16)]


def test_weights_and_encoder_budget(model_dir: Path) -> None:
    plan = build_plan(_req(model_dir), ENV)
    # the MTP block is read from text_config and not counted (sized as an average layer, not by shape)
    assert _close(plan.memory.weights_bytes / GIB, PUBLISHED["weights_gib"])
    assert plan.memory.weights_bytes < PUBLISHED["weights_gib"] * GIB + MTP_BYTES / 2
    note = plan.memory.notes.get("encoder", "")
    assert f"budget {PUBLISHED['encoder_budget']} tokens" in note  # guide §4.1: 16384-token encoder cache
    assert plan.memory.encoder_bytes > 0


def test_text_only_drops_the_encoder_term(model_dir: Path) -> None:
    with_mm = build_plan(_req(model_dir), ENV)
    text = build_plan(_req(model_dir, limit_mm_per_prompt={"image": 0, "video": 0}), ENV)
    lm_only = build_plan(_req(model_dir, language_model_only=True), ENV)
    assert text.memory.encoder_bytes == 0 and lm_only.memory.encoder_bytes == 0
    assert text.memory.kv_cache_bytes > with_mm.memory.kv_cache_bytes


def test_available_kv_within_6_percent(model_dir: Path) -> None:
    plan = build_plan(_req(model_dir), ENV)
    assert _close(plan.memory.kv_cache_bytes / GIB, PUBLISHED["kv_gib"], 0.06)


def test_available_kv_tokens_and_concurrency_within_1_percent(model_dir: Path) -> None:
    """The whole budget, nothing fed from the log: non-KV memory of this run is 11.7 GiB (172.8 requested
    - 29.4 - 131.7). The planner's terms: activations of the 16384-token profile run, non-torch, the
    encoder output, the graph estimate's long-context GDN warm-up (vllm#50780) and, on ROCm, the 4 MiB
    each captured hipGraph pins (ROCm/pytorch#2286) that vLLM's graph estimate charges for the 18 capture
    sizes after the first: 18 x 65 pieces + 10 full decode graphs = 4.6 GiB. Without that last term the
    KV came out 4.3 % high."""
    plan = build_plan(_req(model_dir), ENV)
    assert _close(plan.memory.kv_cache_bytes / GIB, PUBLISHED["kv_gib"])
    assert _close(plan.kv_cache.tokens, PUBLISHED["tokens"])
    assert _close(plan.kv_cache.max_concurrency, PUBLISHED["concurrency"])
    assert "hipGraphs" in plan.memory.notes["cudagraph"]


def test_text_only_does_not_load_the_vision_tower(model_dir: Path) -> None:
    full = build_plan(_req(model_dir), ENV)
    lm_only = build_plan(_req(model_dir, language_model_only=True), ENV)
    dropped = (full.memory.weights_bytes - lm_only.memory.weights_bytes) / 1e9
    # ~0.46 B bf16 parameters: public FP8 re-quantizations list the Qwen3.5-27B visual encoder at 0.9 GB
    assert 0.8 < dropped < 1.0


def test_rocm_fp8_padding_is_what_separates_the_files_from_the_loaded_weights(model_dir: Path) -> None:
    padded = build_plan(_req(model_dir), ENV)
    plain = build_plan(_req(model_dir), {**ENV, "VLLM_ROCM_FP8_PADDING": "0"})
    assert padded.memory.weights_bytes - plain.memory.weights_bytes == PAD_TP1
    # without the padding the files less the MTP layer fall 3.5 % short of what vLLM loaded
    assert not _close(plain.memory.weights_bytes / GIB, PUBLISHED["weights_gib"], 0.03)
    assert "ROCm FP8 row padding" in padded.memory.notes["weights"]
