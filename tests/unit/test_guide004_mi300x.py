"""The MI300X deployment guide's worked example (shared/seeds/004, published 2026-10-13), as a test
built from its published numbers only.

Setting (guide §3, §7.2): one AMD Instinct MI300X (gfx942, 192 GB), vLLM 0.28.0 (ROCm build),
Qwen3.x-27B-FP8 (Qwen3.5-27B architecture: 64 layers = 16 x (3 gated-delta-net + 1 full attention),
vision tower; config in tests/data/guide004/config.json, from the Qwen3.5/3.6-27B model cards),
--max-model-len 131072, --gpu-memory-utilization 0.90, --max-num-seqs 64.
Published: weights ~29.4 GiB; "Available KV cache memory: 131.7 GiB"; "GPU KV cache size:
2,073,046 tokens"; "Maximum concurrency ... 131072 ...: 15.83x"; encoder cache of 16384 tokens.

The checkpoint's config omits `layer_types`; planning it as all full attention gave 4.36x.
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


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """config.json + one sparse safetensors file whose header declares the loaded weight bytes
    the guide reports (29.4 GiB); no real bytes are written."""
    d = tmp_path_factory.mktemp("guide004")
    shutil.copy(DATA / "config.json", d / "config.json")
    n = int(PUBLISHED["weights_gib"] * GIB)
    header = json.dumps({"weights": {"dtype": "U8", "shape": [n], "data_offsets": [0, n]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(d / "model.safetensors", "wb") as fh:
        fh.write(struct.pack("<Q", len(header)) + header)
        fh.truncate(8 + len(header) + n)
    return d


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
    assert _close(plan.memory.weights_bytes / GIB, PUBLISHED["weights_gib"])
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


@pytest.mark.xfail(strict=True, reason=(
    "non-KV memory of this run is 11.7 GiB (172.8 requested - 29.4 - 131.7); vLLM 0.28's profile logic "
    "attributes only ~0.2 GiB of it to the vision encoder (one 16384-token image through the ViT; the GDN "
    "core is skipped in the profile run), the rest is unexplained without the log's breakdown "
    "(likely ROCm piecewise graph memory, vllm#19579)"))
def test_available_kv_within_1_percent(model_dir: Path) -> None:
    plan = build_plan(_req(model_dir), ENV)
    assert _close(plan.memory.kv_cache_bytes / GIB, PUBLISHED["kv_gib"])


def test_text_only_does_not_load_the_vision_tower_from_0_28(model_dir: Path) -> None:
    full = build_plan(_req(model_dir), ENV)
    lm_only = build_plan(_req(model_dir, language_model_only=True), ENV)
    dropped = (full.memory.weights_bytes - lm_only.memory.weights_bytes) / 1e9
    # ~0.46 B bf16 parameters: public FP8 re-quantizations list the Qwen3.5-27B visual encoder at 0.9 GB
    assert 0.8 < dropped < 1.0
