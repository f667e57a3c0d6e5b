"""Checks of the parallelism the user asked for, with vLLM's own rules, before anything is planned.

vLLM refuses a tensor-parallel size when (vllm 0.32.0 wheel):
- the attention heads are not divisible by it: `ModelConfig.verify_with_parallel_config`
  (vllm/config/model.py) raises "Total number of attention heads (H) must be divisible by tensor
  parallel size (TP)";
- the KV heads can neither be split nor replicated: `QKVParallelLinear.__init__`
  (vllm/model_executor/layers/linear.py) divides the KV heads by TP when TP < KV heads, else
  replicates them TP / KV heads times; both go through `divide`, which asserts divisibility
  (vllm/distributed/utils.py ensure_divisibility). So TP must divide KV heads, or KV heads divide TP;
- the padded vocabulary cannot be split: `VocabParallelEmbedding` pads the vocabulary to a multiple
  of 64 (DEFAULT_VOCAB_PADDING_SIZE, vllm/model_executor/layers/vocab_parallel_embedding.py) and
  divides it by TP with the same `divide`;
- recurrent (mamba2 / gated delta net) heads are sharded per rank the same way
  (vllm/model_executor/layers/mamba/mamba_mixer2.py, `divide(num_heads, tp_size)`).
MLA models have one latent KV "head" that every rank holds, so only the query heads count.
"""

from __future__ import annotations

from vllmkit.arch.model import ModelArch
from vllmkit.engine.versions import parse_version
from vllmkit.errors import UsageError
from vllmkit.estimate.specs import PACKED_KV_DTYPES, nvfp4_kv_refusal

VOCAB_PADDING = 64  # vllm DEFAULT_VOCAB_PADDING_SIZE


def _padded_vocab(vocab_size: int) -> int:
    return -(-vocab_size // VOCAB_PADDING) * VOCAB_PADDING


def tp_problems(arch: ModelArch, tp: int) -> list[str]:
    """Why vLLM would refuse `tp` for this model (empty when it accepts it)."""
    out: list[str] = []
    heads = arch.num_attention_heads
    if heads % tp:
        out.append(f"attention heads ({heads}) are not divisible by {tp}")
    if arch.mla is None:
        kv = arch.num_kv_heads
        if kv and kv % tp and tp % kv:
            out.append(f"KV heads ({kv}) are neither divisible by {tp} nor a divisor of it (no split, no replication)")
    padded = _padded_vocab(arch.vocab_size)
    if arch.vocab_size and padded % tp:
        out.append(f"the vocabulary ({arch.vocab_size}, padded to {padded}) is not divisible by {tp}")
    if arch.mamba is not None:
        m_heads = arch.mamba.num_heads or arch.mamba.num_v_heads
        if m_heads and m_heads % tp:
            out.append(f"recurrent-state heads ({m_heads}) are not divisible by {tp}")
    return out


def accepted_tp_sizes(arch: ModelArch, limit: int) -> list[int]:
    """Every TP size from 1 to `limit` that vLLM accepts for this model (not only powers of two). None can
    exceed the attention heads (they must divide by TP), so a huge --gpu-count is not walked through."""
    top = min(max(limit, 1), max(arch.num_attention_heads, 1))
    return [tp for tp in range(1, top + 1) if not tp_problems(arch, tp)]


def validate_parallelism(arch: ModelArch, *, tp: int | None, pp: int | None, gpu_count: int | None,
                         gpus_per_node: int, device: str) -> None:
    """UsageError (exit 2) for a --tensor-parallel-size vLLM would refuse, or more GPUs than
    --gpu-count allows. Nothing to check when the planner chooses the parallelism itself."""
    if tp is None and pp is None:
        return
    tp_size, pp_size = tp or 1, pp or 1
    if device == "cpu" and tp_size * pp_size > 1:
        # the CPU backend's TP / PP ranks are processes sharing one host's memory (one per NUMA node); the
        # planner models that host as one device, so a split of it would be planned as if it were more memory
        raise UsageError(
            f"--tensor-parallel-size {tp_size} x --pipeline-parallel-size {pp_size} on the CPU backend is not planned: "
            "its ranks share one host's memory, which the plan already counts whole",
            "leave out --tensor-parallel-size / --pipeline-parallel-size with --gpu cpu and pass them to vLLM with "
            "--vllm-arg when serving",
            code="cpu-parallelism",
        )
    if gpu_count is not None and tp_size * pp_size > gpu_count:
        raise UsageError(
            f"--tensor-parallel-size {tp_size} x --pipeline-parallel-size {pp_size} needs {tp_size * pp_size} GPUs, "
            f"more than --gpu-count {gpu_count}",
            f"use TP x PP <= {gpu_count} (TP sizes this model accepts: "
            f"{_list(accepted_tp_sizes(arch, gpu_count))})",
            code="too-many-gpus",
        )
    if pp_size > arch.num_hidden_layers:
        raise UsageError(
            f"--pipeline-parallel-size {pp_size} is larger than the model's {arch.num_hidden_layers} layers",
            f"use --pipeline-parallel-size {arch.num_hidden_layers} or less",
            code="invalid-pipeline-parallel-size",
        )
    problems = tp_problems(arch, tp_size)
    if problems:
        limit = gpu_count or max(gpus_per_node, 8 if device != "cpu" else 1)
        raise UsageError(
            f"vLLM refuses --tensor-parallel-size {tp_size} for this model: {'; '.join(problems)}",
            f"valid TP sizes up to {limit}: {_list(accepted_tp_sizes(arch, limit))}",
            code="invalid-tensor-parallel-size",
        )


def _list(sizes: list[int]) -> str:
    return ", ".join(str(s) for s in sizes) or "none"


__all__ = ["accepted_tp_sizes", "tp_problems", "validate_parallelism"]


def validate_kv_cache_dtype(kv_cache_dtype: str, *, version: str, vendor: str, arch: ModelArch,
                            compute_capability: float | None = None) -> None:
    """UsageError (exit 2) for a packed --kv-cache-dtype (estimate/specs.py PACKED_KV_DTYPES) the release, the
    platform or the model cannot take, as vLLM refuses it:
    - the release predates it (vllm/config/cache.py CacheDType: pydantic rejects the value);
    - the CPU backend takes auto and fp8 only (v1/attention/backends/cpu_attn.py supported_kv_cache_dtypes, 0.32);
    - NVFP4 runs on FlashInfer, a CUDA backend (flashinfer.py; ROCm's ROCM_ATTN / TRITON_ATTN list no nvfp4), and
      only on the GPUs its kernels cover (estimate/specs.py nvfp4_kv_refusal);
    - an MLA model's latent cache has its own layouts (fp8_ds_mla / nvfp4_ds_mla), not sized here."""
    first = PACKED_KV_DTYPES.get(kv_cache_dtype)
    if first is None:
        return
    since = ".".join(map(str, first))
    release = parse_version(version)
    if release < first:
        raise UsageError(f"vLLM {version} does not run --kv-cache-dtype {kv_cache_dtype} (first in {since})",
                         f"plan for vLLM {since} or newer (--vllm-version {since}), or use --kv-cache-dtype fp8",
                         code="kv-cache-dtype-version")
    if vendor == "cpu":
        raise UsageError(f"vLLM's CPU backend has no --kv-cache-dtype {kv_cache_dtype} (it takes auto and fp8)",
                         "use --kv-cache-dtype fp8 on the CPU backend", code="kv-cache-dtype-platform")
    if kv_cache_dtype.startswith("nvfp4") and vendor != "nvidia":
        raise UsageError(f"--kv-cache-dtype {kv_cache_dtype} runs on FlashInfer, an NVIDIA-only attention backend",
                         "on AMD use --kv-cache-dtype fp8 or int8_per_token_head (Triton attention)",
                         code="kv-cache-dtype-platform")
    if arch.mla is not None:
        raise UsageError(f"vllmkit does not size --kv-cache-dtype {kv_cache_dtype} for an MLA model's latent cache",
                         "use --kv-cache-dtype fp8 (or auto) to plan this model", code="kv-cache-dtype-mla")
    if (vendor == "nvidia" and kv_cache_dtype == "fp8_per_token_head" and compute_capability is not None
            and compute_capability < 8.9):
        # 0.32 v1/attention/backends/triton_attn.py TritonAttentionImpl: "FP8 KV cache is not supported by the Triton
        # attention backend on ... native FP8 (fp8e4nv) requires SM89+" -- the only backend of per-token-head caches
        raise UsageError(f"--kv-cache-dtype fp8_per_token_head needs native FP8 (compute capability 8.9+); this GPU "
                         f"is {compute_capability:g} and vLLM's Triton attention refuses it",
                         "use --kv-cache-dtype int8_per_token_head (the same bytes) on this GPU",
                         code="kv-cache-dtype-platform")
    if vendor == "nvidia" and (why := nvfp4_kv_refusal(kv_cache_dtype, release, compute_capability,
                                                      arch.head_dim)):
        raise UsageError(f"vLLM {version} has no attention backend for --kv-cache-dtype {kv_cache_dtype} here: {why}",
                         "use --kv-cache-dtype fp8 on this GPU", code="kv-cache-dtype-platform")
