"""--quantization bitsandbytes on a 16-bit checkpoint: vLLM quantizes every linear layer at load to NF4
(vllm/model_executor/model_loader/bitsandbytes_loader.py, 0.18.0: quantize_4bit(compress_statistics=True,
quant_type="nf4"), bitsandbytes' blocks of 64): half a byte a weight, one 8-bit absmax per 64 weights and
one float32 per 256 absmax blocks. Embeddings and the LM head stay 16-bit."""

from __future__ import annotations

from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan

ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}
GIB = 1 << 30


def _plan(**kw):
    return build_plan(PlanRequest(model="Qwen/Qwen2.5-3B-Instruct", source="catalog", gpu="rtx-4060",
                                  vllm_version="0.18.0", tensor_parallel_size=1, max_model_len=4096,
                                  gpu_memory_utilization=0.8, enforce_eager=True, **kw), ENV)


def test_in_flight_nf4_weights_match_a_public_start() -> None:
    """A public vLLM 0.18.0 start (cldr-steven-matison.github.io, 2026-03-28, RTX 4060 under WSL2) of
    Qwen/Qwen2.5-3B-Instruct with --quantization bitsandbytes printed "Model loading took 2.07 GiB"."""
    plan = _plan(quantization="bitsandbytes")
    assert abs(plan.memory.weights_bytes / GIB - 2.07) / 2.07 < 0.08
    chosen = [a for a in plan.alternatives if a.chosen]
    assert [a.precision for a in chosen] == ["bitsandbytes"]


def test_hand_worked_nf4_bytes() -> None:
    """Qwen2.5-3B (config: hidden 2048, MLP 11008, 36 layers, 16 heads / 2 KV heads of 128, vocabulary
    151,936, tied embeddings): 36 x (2 x 2048^2 + 2 x 2048 x 256 + 3 x 2048 x 11008) = 2,774,532,096 linear
    weights at 0.5 + 1/64 + 4/16384 B, and 151,936 x 2048 embedding rows at 2 B (the tied head is the same
    tensor). Biases and norms (~0.3 M parameters) and the rope cache stay 16-bit / float32."""
    linear = 36 * (2 * 2048 * 2048 + 2 * 2048 * 256 + 3 * 2048 * 11008)
    assert linear == 2_774_532_096
    expected = linear * (0.5 + 1 / 64 + 4 / 16384) + 151_936 * 2048 * 2
    got = _plan(quantization="bitsandbytes").memory.weights_bytes
    assert abs(got - expected) / expected < 0.005
    assert _plan().memory.weights_bytes > 2.8 * got  # the 16-bit checkpoint, not quantized


def test_a_prequantized_checkpoint_is_not_quantized_again() -> None:
    """An online method applies only to a 16-bit checkpoint: --quantization fp8 on Qwen2.5-3B halves its
    linear layers, while bitsandbytes takes them to about a quarter."""
    fp8 = _plan(quantization="fp8").memory.weights_bytes
    nf4 = _plan(quantization="bitsandbytes").memory.weights_bytes
    assert nf4 < fp8 < _plan().memory.weights_bytes


def test_the_serve_line_names_the_loader_where_vllm_needs_it() -> None:
    """EngineArgs in the 0.6.6, 0.7.3, 0.8.0 and 0.8.1 wheels raise "BitsAndBytes quantization and QLoRA adapter
    only support 'bitsandbytes' load format, but got auto"; from 0.8.2 create_load_config sets it itself."""
    from vllmkit.launch.command import attach_serve_command

    def line(version: str) -> list[str]:
        req = PlanRequest(model="Qwen/Qwen2.5-3B-Instruct", source="catalog", gpu="rtx-4060", vllm_version=version,
                          quantization="bitsandbytes")
        return attach_serve_command(build_plan(req, ENV), req).serve_command

    for old in ("0.6.6", "0.7.3", "0.8.1"):
        argv = line(old)
        assert argv[argv.index("--load-format") + 1] == "bitsandbytes"
    for new in ("0.8.2", "0.19.0", "0.27.1"):
        assert "--load-format" not in line(new) and "bitsandbytes" in line(new)


def test_releases_without_bitsandbytes_refuse_it() -> None:
    """The 0.28.0 wheel's QuantizationMethods no longer lists "bitsandbytes" (0.27.0's does): the flag is
    refused before planning (exit 2, a fix), and a bitsandbytes checkpoint gets a warning."""
    import pytest

    from vllmkit.errors import UsageError

    with pytest.raises(UsageError) as exc:
        build_plan(PlanRequest(model="Qwen/Qwen2.5-3B-Instruct", source="catalog", gpu="rtx-4060",
                               vllm_version="0.28.0", quantization="bitsandbytes"), ENV)
    assert exc.value.code == "quantization-removed" and "0.27" in exc.value.hint
    ok = build_plan(PlanRequest(model="Qwen/Qwen2.5-3B-Instruct", source="catalog", gpu="rtx-4060",
                                vllm_version="0.27.1", quantization="bitsandbytes"), ENV)
    assert ok.memory.weights_bytes < 2.2 * GIB


def test_a_bitsandbytes_checkpoint_on_a_release_without_it_is_warned(tmp_path) -> None:
    import json

    from tests.unit.plan.test_float32_checkpoint import _write_model

    _write_model(tmp_path / "m", "BF16", "bfloat16")
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "bitsandbytes", "load_in_4bit": True,
                                     "bnb_4bit_quant_type": "nf4"}
    (tmp_path / "m" / "config.json").write_text(json.dumps(config))

    def warnings(version: str) -> list[str]:
        req = PlanRequest(model=str(tmp_path / "m"), source="local", gpu="h100", tensor_parallel_size=1,
                          vllm_version=version)
        return build_plan(req, ENV).warnings

    assert any("removed in 0.28.0" in w for w in warnings("0.28.0"))
    assert not any("bitsandbytes" in w for w in warnings("0.27.1"))


def test_dtype_float32_does_not_widen_the_nf4_weights() -> None:
    """--dtype float32 doubles a 16-bit checkpoint's loaded bytes; the in-flight NF4 layers stay 4-bit (only
    the unquantized embeddings would follow the dtype), so the plan must not double the quantized total."""
    nf4 = _plan(quantization="bitsandbytes").memory.weights_bytes
    assert _plan(quantization="bitsandbytes", dtype="float32").memory.weights_bytes < 1.5 * nf4
