"""`--cpu-offload-gb` (round 36): weights kept in host memory, and the decode time their reads over PCIe cost.

Memory, from vLLM's source: the offloader wraps each decoder layer and moves its parameters to pinned host memory,
whole parameters in order, until the GiB are reached (0.32 model_executor/offloader/uva.py; before,
models/utils.py maybe_offload_to_cpu), so a rank holds its weights less that many bytes, at most its decoder layers.
Checked against a public log that set nothing here: TheBuccaneer/vllm-offload-profiles, vLLM 0.17.1, one RTX 3090,
Llama-3.1-8B at 0.86 with `cpu_offload_gb: 12.0`: "Model loading took 2.91 GiB", "Available KV cache memory:
16.79 GiB" (data/provenance/gpu_memory_configuration/fixd_llama_gmem086_offload12.log; collected-startup-logs-36).

Speed: the offloaded weights are read over PCIe in every forward pass. The read rate (plan/performance.py
UVA_READ_FRACTION) was set on the same study's Llama-3.1-8B runs; its Qwen2.5-7B runs are the check here
(data/derived/baseline/qwen/runs_summary.csv, median over five runs of the median TPOT, 256 in / 64 out, 20
prompts at 4 concurrent requests).
"""

from __future__ import annotations

import json

import pytest

from tests.clirun import invoke
from vllmkit.estimate.perf import GpuPerf, ModelPerf, make_step_fn, step_cost
from vllmkit.plan.models import PlanRequest
from vllmkit.plan.performance import PCIE4_X16_BYTES_S, UVA_READ_FRACTION, gpu_perf
from vllmkit.plan.service import build_plan

ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}
GIB = 1 << 30


def _plan(model: str, offload: float | None, **kw):  # type: ignore[no-untyped-def]
    base = dict(model=model, source="catalog", gpu="rtx-3090", vllm_version="0.17.1", max_model_len=8192,
                gpu_memory_utilization=0.86, cpu_offload_gb=offload)
    base.update(kw)
    return build_plan(PlanRequest(**base), ENV)


def test_offloaded_weights_leave_the_gpu_and_the_kv_cache_takes_their_place() -> None:
    off = _plan("meta-llama/Llama-3.1-8B-Instruct", 12, compile_cache="warm")
    on = _plan("meta-llama/Llama-3.1-8B-Instruct", None, compile_cache="warm")
    assert on.memory.weights_bytes - off.memory.weights_bytes == 12 * GIB == off.memory.cpu_offload_bytes
    assert off.memory.kv_cache_bytes - on.memory.kv_cache_bytes == 12 * GIB
    # the log: 2.91 GiB loaded (vLLM moved whole parameters, 12.08 GiB), 16.79 GiB of KV cache
    assert off.memory.weights_bytes / GIB == pytest.approx(2.91, abs=0.1)
    assert off.memory.kv_cache_bytes / GIB == pytest.approx(16.79, rel=0.01)
    assert "--cpu-offload-gb" in off.memory.notes["weights"]
    assert off.settings.cpu_offload_gb == 12


def test_no_more_than_the_decoder_layers_can_go() -> None:
    # Qwen2.5-7B: 28 layers of 3,584 x (3,584 + 2 x 512 + 3,584) (attention, with biases) + 3 x 3,584 x 18,944
    # (MLP) + two norms; the embeddings and the LM head (152,064 x 3,584 each) stay
    plan = _plan("Qwen/Qwen2.5-7B-Instruct", 16)
    attn = 3584 * (3584 + 2 * 512) + (3584 + 2 * 512) + 3584 * 3584
    layer = attn + 3 * 3584 * 18944 + 2 * 3584
    assert plan.memory.cpu_offload_bytes == pytest.approx(28 * layer * 2, rel=0.01)
    assert plan.memory.cpu_offload_bytes < 16 * GIB
    assert plan.memory.weights_bytes == pytest.approx(2 * 152064 * 3584 * 2, rel=0.01)


@pytest.mark.parametrize(("offload", "measured_ms"), [(2, 277.7), (4, 539.3), (8, 1015.8), (12, 1484.9)])
def test_decode_slows_to_the_host_read_rate_on_runs_not_used_to_set_it(offload: int, measured_ms: float) -> None:
    r = invoke(["plan", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "rtx-3090", "--source", "catalog", "--vllm-version",
                "0.17.1", "--gpu-memory-utilization", "0.9", "--max-model-len", "8192", "--input-len", "256",
                "--output-len", "64", "--concurrency", "4", "--cpu-offload-gb", str(offload), "--json"])
    assert r.exit_code == 0, r.output
    tpot = json.loads(r.stdout)["data"]["performance"]["tpot_ms"]["mean"]
    assert tpot == pytest.approx(measured_ms, rel=0.15)


def test_the_read_rate_by_host_link() -> None:
    from vllmkit.hardware.profiles import load_profiles, resolve_gpu

    profiles = load_profiles(include_user_config=False)
    rate = {n: gpu_perf(resolve_gpu(n, profiles=profiles)).host_link_bytes_s for n in ("rtx-3090", "h100-sxm", "gb10")}
    assert rate["rtx-3090"] == pytest.approx(9.42e9, rel=1e-3)  # 0.30 of PCIe 4.0 x16's 31.5 GB/s
    assert PCIE4_X16_BYTES_S == pytest.approx(31.5e9, rel=1e-3) and UVA_READ_FRACTION == pytest.approx(0.299, abs=1e-3)
    assert rate["h100-sxm"] == pytest.approx(2 * rate["rtx-3090"])  # PCIe 5.0
    assert rate["gb10"] == gpu_perf(resolve_gpu("gb10", profiles=profiles)).bandwidth_bytes_s  # unified memory


def test_step_cost_and_the_simulators_closure_agree_with_host_reads() -> None:
    gpu = GpuPerf("x", "nvidia", "ampere", 936e9, {"bf16": 71.0}, 32e9, "pcie", host_link_bytes_s=9.42e9)
    from vllmkit.plan.performance import FITTED_EFFICIENCY

    model = ModelPerf(tp=1, pp=1, layers=32, hidden_size=4096, dense_bytes=int(3e9), active_params=8e9,
                      host_bytes=12 * GIB)
    fn = make_step_fn(model, gpu, FITTED_EFFICIENCY)
    for decode, ctx, prefill in ((1, 300, 0), (4, 2000, 0), (0, 0, 512), (3, 900, 256)):
        direct = step_cost(model, gpu, FITTED_EFFICIENCY, decode=decode, context_sum=ctx, prefill_tokens=prefill)
        assert fn(decode, ctx, prefill, 0.0)[0] == pytest.approx(direct.seconds, rel=1e-9)
    assert fn.decode_only(4)(2000)[0] == pytest.approx(fn(4, 2000, 0, 0.0)[0], rel=1e-12)  # type: ignore[attr-defined]
    # 12 GiB at 9.42 GB/s: 1.368 s a step on top of the GPU's own work
    alone = step_cost(ModelPerf(tp=1, pp=1, layers=32, hidden_size=4096, dense_bytes=int(3e9), active_params=8e9),
                      gpu, FITTED_EFFICIENCY, decode=1, context_sum=300)
    with_host = step_cost(model, gpu, FITTED_EFFICIENCY, decode=1, context_sum=300)
    assert with_host.seconds - alone.seconds == pytest.approx(12 * GIB / 9.42e9, rel=1e-6)


def test_serve_line_and_refusals() -> None:
    r = invoke(["plan", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "rtx-3090", "--source", "catalog",
                "--cpu-offload-gb", "12", "--json"])
    assert r.exit_code == 0, r.output
    line = json.loads(r.stdout)["data"]["serve_command"]
    assert line[line.index("--cpu-offload-gb") + 1] == "12"
    bad = invoke(["plan", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "rtx-3090", "--source", "catalog",
                  "--cpu-offload-gb", "-1"])
    assert bad.exit_code == 2 and "--cpu-offload-gb must be" in bad.output and "Traceback" not in bad.output
    cpu = invoke(["plan", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "cpu", "--source", "catalog",
                  "--cpu-offload-gb", "4"])
    assert cpu.exit_code == 2 and "CPU backend has no GPU" in cpu.output


def test_check_log_reads_the_offload_from_the_logs_arguments() -> None:
    from vllmkit.logs import parse_log

    # the non-default args line of the study's log (fixd_llama_gmem086_offload12.log)
    f = parse_log("(APIServer pid=55655) INFO 07-26 11:05:19 [utils.py:238] non-default args: {'model_tag': "
                  "'meta-llama/Llama-3.1-8B-Instruct', 'model': 'meta-llama/Llama-3.1-8B-Instruct', 'max_model_len': "
                  "8192, 'gpu_memory_utilization': 0.86, 'cpu_offload_gb': 12.0}\n")
    assert f.cpu_offload_gb == 12.0 and f.gpu_memory_utilization == 0.86


def test_offloaded_experts_cross_the_link_only_when_a_batch_routes_to_them() -> None:
    # 8 of 128 experts per token (Qwen3-30B-A3B-like): one token reads 1/16 of the host-resident experts, 64 tokens
    # 1 - (120/128)^64 = 98.4 %; the dense share crosses every step
    gpu = GpuPerf("x", "nvidia", "ada", 1008e9, {"bf16": 165.0}, 32e9, "pcie", host_link_bytes_s=10e9)
    m = ModelPerf(tp=1, pp=1, layers=48, hidden_size=2048, dense_bytes=int(1e9), expert_bytes=int(4e9),
                  num_experts=128, experts_per_token=8, active_params=3e9, host_bytes=9e9, host_expert_bytes=8e9)
    assert m.host_seconds(gpu, 1) == pytest.approx((1e9 + 8e9 / 16) / 10e9)
    assert m.host_seconds(gpu, 64) == pytest.approx((1e9 + 8e9 * (1 - (120 / 128) ** 64)) / 10e9)
    assert m.host_seconds(gpu, 0) == pytest.approx(1e9 / 10e9)
    from vllmkit.plan.performance import FITTED_EFFICIENCY

    fn = make_step_fn(m, gpu, FITTED_EFFICIENCY)
    for decode in (1, 8, 64):
        direct = step_cost(m, gpu, FITTED_EFFICIENCY, decode=decode, context_sum=decode * 500)
        assert fn(decode, decode * 500, 0, 0.0)[0] == pytest.approx(direct.seconds, rel=1e-9)
        assert fn.decode_only(decode)(decode * 500)[0] == pytest.approx(direct.seconds, rel=1e-9)  # type: ignore[attr-defined]
