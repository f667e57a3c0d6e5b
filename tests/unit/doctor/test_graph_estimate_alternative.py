"""`vllmkit doctor --log` on a KV cache too small for --max-model-len where vLLM charged its CUDA-graph estimate to
the KV budget (0.20+): fewer sequences, fewer graphs. The log lines are vLLM's own (v1/worker/gpu_model_runner.py
profile_cudagraph_memory: "Estimated CUDA graph memory: %.2f GiB total"; v1/core/kv_cache_utils.py's ValueError);
the evidence for the effect is a public start (collected-startup-logs-59: Qwen3.8-27B-FP8 on an L40S, vLLM 0.26.0,
0.93 GiB more KV at --max-num-seqs 16 than at 256)."""

from __future__ import annotations

from vllmkit.doctor.diagnose import diagnose_log
from vllmkit.logs import parse_log

KV_ERROR = ("(EngineCore pid=7) ERROR 09-05 10:02:11 [core.py:708] ValueError: To serve at least one request with "
            "the model's max seq len (131072), 8.18 GiB KV cache is needed, which is larger than the available KV cache "
            "memory (7.04 GiB). Based on the available memory, the estimated maximum model length is 112896. Try "
            "increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n")
ESTIMATE = ("(EngineCore pid=7) INFO 09-05 10:02:10 [gpu_model_runner.py:6475] Estimated CUDA graph memory: 1.11 GiB "
            "total\n")


def _log(version: str, args: str = "{'max_model_len': 131072}") -> str:
    return (f"(APIServer pid=1) INFO 09-05 10:00:00 [api_server.py:1351] vLLM API server version {version}\n"
            f"(APIServer pid=1) INFO 09-05 10:00:00 [utils.py:233] non-default args: {args}\n" + ESTIMATE + KV_ERROR)


def _alternative(log: str):
    d = next(x for x in diagnose_log(log).diagnoses if x.code == "kv-cache-too-small")
    return next((a for a in d.alternatives if a.flags[:1] == ["--max-num-seqs"]), None)


def test_the_estimate_line_is_read() -> None:
    assert parse_log(ESTIMATE).graph_estimate_bytes == round(1.11 * (1 << 30))


def test_a_charged_graph_estimate_offers_fewer_sequences() -> None:
    alt = _alternative(_log("0.26.0"))
    assert alt is not None and alt.flags == ["--max-num-seqs", "64"]
    assert "1.11 GiB" in alt.effect and "vLLM's default --max-num-seqs" in alt.effect


def test_not_where_the_release_only_prints_it_or_the_sequences_are_few() -> None:
    assert _alternative(_log("0.19.1")) is None  # 0.19 prints the estimate without charging it
    assert _alternative(_log("0.26.0", "{'max_model_len': 131072, 'max_num_seqs': 32}")) is None
    assert _alternative(_log("0.26.0").replace(ESTIMATE, "")) is None
