"""The pattern table: every vLLM line the reader recognises, with the source that prints it.

Each `Pattern` names the event kind it produces, the regex (group names become the event's values),
the vLLM source location and format string (paths are vLLM 0.32/0.33 unless noted) and the versions
known to print it. Several patterns may share a kind (format changes across versions): on one line
the first pattern of a kind that matches wins. Formats were checked against vLLM's source and the
public logs in tests/data/logs (each file's header names its origin).

`NEEDLES` holds, per kind, literals a matching line must contain (any of them): a cheap `in` test
before the regex runs, which keeps logs with 100k+ lines of request logging fast.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

NUM = r"[\d,]+"
FLT = r"[\d.]+"


@dataclass
class Pattern:
    kind: str
    rx: str
    source: str  # vLLM file: format string
    versions: str  # vLLM versions known to print it

    @functools.cached_property
    def regex(self) -> re.Pattern[str]:
        """Compiled on first use: importing the table costs nothing for commands that read no log."""
        return re.compile(self.rx)


def _p(kind: str, rx: str, source: str, versions: str) -> Pattern:
    return Pattern(kind=kind, rx=rx, source=source, versions=versions)


PATTERNS: tuple[Pattern, ...] = (
    # --- identity and settings ---------------------------------------------------------------
    _p("engine_config",
       r"Initializing an? (?:(?P<engine>V[01]) )?LLM engine \(v(?P<version>[^)\s]+)\) with config:\s*(?P<config>.*)",
       "v1/engine/core.py: 'Initializing a V1 LLM engine (v%s) with config: %s'; V0 engine/llm_engine.py: "
       "'Initializing an LLM engine (v%s) with config: ...'", "V0 0.6-0.10 ('an LLM engine', 'a V0 LLM engine'), V1 0.8+"),
    _p("server_version", r"vLLM (?:API )?server version (?P<version>[\w.+\-]+)",
       "entrypoints/openai/api_server.py: 'vLLM API server version %s' / 'vLLM server version %s, serving model %s'",
       "0.6+"),
    _p("banner_version", r"[█▀▄]\s+version (?P<version>\d+\.\d+[\w.+\-]*)\s*$",
       "entrypoints/utils.py start-up banner: '▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.32.0'", "0.2x+"),
    _p("non_default_args", r"non-default args: (?P<args>\{.*\})",
       "entrypoints/utils.py log_non_default_args: 'non-default args: %s' (a Python dict repr)", "0.9+"),
    _p("namespace_args", r"^args: Namespace\((?P<ns>.*)\)\s*$",
       "entrypoints/openai/api_server.py: 'args: %s' (the whole argparse Namespace)", "<=0.10"),
    _p("platform", r"Automatically detected platform (?P<platform>[\w\-]+)\.?",
       "platforms/__init__.py: 'Automatically detected platform %s.'", "0.7+"),
    _p("architecture", r"Resolved architecture: (?P<arch>\w+)",
       "config/model.py: 'Resolved architecture: %s'", "0.2x+"),
    _p("using_max_model_len", r"Using max model len (?P<len>\d+)",
       "config/model.py: 'Using max model len %s'", "0.6+"),
    _p("auto_fit", r"Auto-fit max_model_len: reduced from (?P<from>\d+) to (?P<to>\d+)",
       "v1/core/kv_cache_utils.py: 'Auto-fit max_model_len: reduced from %d to %d ...'", "0.3x (--max-model-len auto)"),
    _p("attention_backend",
       r"^Using (?P<backend>(?!.*\b(?:ViT|vit|MLA prefill)\b)[\w .\-]+?) (?:attention )?backend(?: on V1 engine)?\.?$",
       "platforms/cuda.py get_attn_backend_cls: 'Using %s backend.' / 'Using Flash Attention backend on V1 engine.'",
       "0.6+"),
    _p("sampler_flashinfer", r"Using FlashInfer for top-p & top-k sampling",
       "v1/sample/ops/topk_topp_sampler.py TopKTopPSampler.__init__: 'Using FlashInfer for top-p & top-k sampling.'",
       "0.8+ (0.8-0.11.0 whenever FlashInfer imports; 0.11.1+ only with VLLM_USE_FLASHINFER_SAMPLER=1)"),
    _p("model_runner_v2", r"Using V2 Model Runner",
       "v1/worker/gpu_worker.py init_device: 'Using V2 Model Runner' (info_once)", "0.20+ (default for some models from 0.22)"),
    _p("compile_cache_loaded",
       r"(?P<warm>Directly load) (?:AOT compilation from path|the compiled graph\(s\) for)",
       "compilation/decorators.py: 'Directly load AOT compilation from path %s' (0.2x+); compilation/backends.py: "
       "'Directly load the compiled graph(s) for %s from the cache, took %.3f s' (0.8+): a restart that loads "
       "the compile cache, whose profile holds no compile memory (estimate/memory.py COMPILE_SHARE)", "0.8+"),
    _p("compile_cold",
       r"(?P<cold>Compiling a graph) for (?:dynamic shape|compile range)",
       "compilation/backends.py: 'Compiling a graph for dynamic shape takes %.2f s' / 'Compiling a graph for "
       "compile range %s takes %.2f s': a first start, torch.compile compiles inside the memory profile", "0.8+"),
    _p("sampler_native",
       r"(?:FlashInfer is not available|FlashInfer is available, but it is not enabled|"
       r"FlashInfer version >= 0\.2\.3 required)\. Falling back",
       "v1/sample/ops/topk_topp_sampler.py TopKTopPSampler.__init__ (0.9.0.1): 'FlashInfer is not available. Falling "
       "back to the PyTorch-native implementation of top-p & top-k sampling. ...' / 'FlashInfer is available, but it "
       "is not enabled. Falling back ...' (VLLM_USE_FLASHINFER_SAMPLER=0) / 'FlashInfer version >= 0.2.3 required. "
       "Falling back to default sampling implementation.'", "0.8-0.11.0"),
    _p("gpu_name", r"^GPU \d+: (?P<name>(?:NVIDIA|AMD|Tesla|Quadro|GeForce|Radeon)[^(\n]*?)(?: \(UUID:.*)?$",
       "nvidia-smi -L / collect_env output pasted into a log: 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: ...)'", "any"),
    # --- memory and capacity -----------------------------------------------------------------
    _p("cpu_kv_set",
       rf"(?P<how>Explicitly|Auto) set \((?P<gib>{FLT})/(?P<total>{FLT})\) GiB for KV cache"
       rf"(?: on node \d+, with (?P<req>{FLT}) GiB requested memory for the worker\. (?P<consumed>{FLT}) GiB memory "
       rf"was consumed by non-kv usages)?",
       "v1/worker/cpu_worker.py determine_available_memory: 'Explicitly set (%s/%s) GiB for KV cache on node %d.' / "
       "'Auto set (%s/%s) GiB for KV cache on node %d, with %s GiB requested memory for the worker. %s GiB memory "
       "was consumed by non-kv usages.'", "CPU build 0.30+"),
    _p("weights_loaded", rf"Model loading took (?P<gib>{FLT}) GiB(?: memory)? and (?P<secs>{FLT}) seconds",
       "v1/worker/gpu_model_runner.py: 'Model loading took %s GiB memory and %.6f seconds'", "0.11+ ('%.4f GiB and' in 0.11)"),
    _p("weights_loaded", rf"Model loading took (?P<gib>{FLT}) GiB",
       "v1/worker/gpu_model_runner.py (same line, other endings)", "0.11+"),
    _p("weights_loaded", rf"Model loading took (?P<gib>{FLT}) GB(?: and (?P<secs>{FLT}) seconds)?",
       "v1/worker/gpu_model_runner.py: 'Model loading took %.4f GB and %.6f seconds' (GiB-valued; vllm#14574)",
       "V1 0.8-0.10"),
    _p("weights_loaded", rf"Loading model weights took (?P<gib>{FLT}) GB",
       "worker/model_runner.py: 'Loading model weights took %.4f GB' (GiB-valued despite the unit)", "V0 0.6-0.8"),
    _p("weights_load_time", rf"Loading weights took (?P<secs>{FLT}) seconds",
       "model_executor/model_loader/default_loader.py: 'Loading weights took %.2f seconds'", "0.9+"),
    _p("available_kv", rf"Available KV cache memory: (?P<gib>-?{FLT}) GiB",
       "v1/worker/gpu_worker.py determine_available_memory: 'Available KV cache memory: %s GiB'", "V1 0.8+ (GPU)"),
    _p("kv_reserved", rf"reserved (?P<gib>{FLT}) GiB memory for KV Cache as specified by kv_cache_memory_bytes",
       "v1/worker/gpu_worker.py: '... reserved %s GiB memory for KV Cache as specified by kv_cache_memory_bytes "
       "config ...'", "0.11+ (GPU, --kv-cache-memory-bytes)"),
    _p("v0_memory_split",
       rf"model weights take (?P<weights>{FLT})GiB; non_torch_memory takes (?P<non_torch>-?{FLT})GiB; "
       rf"PyTorch activation peak memory takes (?P<peak>{FLT})GiB; the rest of the memory reserved for KV Cache is "
       rf"(?P<kv>-?{FLT})GiB",
       "worker/worker.py determine_num_available_blocks: 'model weights take %.2fGiB; non_torch_memory takes "
       "%.2fGiB; PyTorch activation peak memory takes %.2fGiB; the rest of the memory reserved for KV Cache is "
       "%.2fGiB.'", "V0 0.7-0.10"),
    _p("v0_budget",
       rf"total_gpu_memory \((?P<total>{FLT})GiB\) x gpu_memory_utilization \((?P<util>{FLT})\)(?: = (?P<req>{FLT})GiB)?",
       "worker/worker.py: 'the current vLLM instance can use total_gpu_memory (%.2fGiB) x gpu_memory_utilization "
       "(%.2f) = %.2fGiB'", "V0 0.7-0.10"),
    _p("v0_profile_results",
       rf"Memory profiling results: total_gpu_memory=(?P<total>{FLT})GiB(?:.*?peak_torch_memory=(?P<peak_torch>{FLT})GiB)?"
       rf".*?non_torch_memory=(?P<non_torch>-?{FLT})GiB\s+kv_cache_size=(?P<kv>-?{FLT})GiB\s+"
       rf"gpu_memory_utilization=(?P<util>{FLT})",
       "worker/worker.py: 'Memory profiling results: total_gpu_memory=%.2fGiB initial_memory_usage=%.2fGiB "
       "peak_torch_memory=%.2fGiB memory_usage_post_profile=%.2fGiB non_torch_memory=%.2fGiB kv_cache_size=%.2fGiB "
       "gpu_memory_utilization=%.2f'", "V0 0.6.4-0.6.6"),
    _p("v1_profile",
       rf"Memory profiling takes {FLT} seconds\.? Total non KV cache memory: (?P<non_kv>{FLT}) ?GiB; torch peak memory "
       rf"increase: (?P<peak>{FLT}) ?GiB; (?:non-torch forward increase memory: (?P<non_torch>-?{FLT}) ?GiB|"
       rf"total consumed \(from mem_get_info\): (?P<consumed>{FLT}) ?GiB); weights memory: (?P<weights>{FLT}) ?GiB",
       "utils/mem_utils.py MemoryProfilingResult.__repr__ logged by v1/worker/gpu_worker.py: 'Memory profiling "
       "takes %.2f seconds. Total non KV cache memory: %.2fGiB; torch peak memory increase: %.2fGiB; non-torch "
       "forward increase memory: %.2fGiB; weights memory: %.2fGiB.' (newer: 'total consumed (from mem_get_info)')",
       "V1 0.8-0.1x"),
    _p("extensible_kv_disabled", r"Disabling the extensible KV cache",
       "v1/executor/abstract.py (0.34): 'Disabling the extensible KV cache: %s. The KV cache will be sized from "
       "profiling estimates instead of measured memory.'", "V1 0.34+"),
    _p("memory_summary",
       rf"Free memory on device \((?P<free>{FLT})/(?P<total>{FLT}) GiB\) on startup\. Desired GPU memory utilization is "
       rf"\((?P<util>{FLT}), (?P<req>{FLT}) GiB\)\. Actual usage is (?P<consumed>{FLT}) GiB for consumed memory.*?"
       rf"(?P<peak>{FLT}) GiB for peak activation, and (?P<graphs>{FLT}) GiB for CUDAGraph memory"
       rf"(?:\.(?:.*?Current kv cache memory in use is (?P<kv>{FLT}) GiB)?)?",
       "v1/worker/gpu_worker.py compile_or_warm_up_model: 'Free memory on device (%s/%s GiB) on startup. Desired "
       "GPU memory utilization is (%s, %s GiB). Actual usage is %s GiB for consumed memory (weights + non-torch), "
       "%s GiB for peak activation, and %s GiB for CUDAGraph memory. ... Current kv cache memory in use is %s GiB.'",
       "0.32+ (GPU)"),
    _p("cudagraph_estimate", rf"CUDA graph pool memory: (?P<actual>{FLT}) GiB \(actual\), (?P<est>{FLT}) GiB \(estimated\)",
       "v1/worker/gpu_worker.py: 'CUDA graph pool memory: %s GiB (actual), %s GiB (estimated), difference: ...'",
       "0.2x+ (GPU)"),
    _p("cudagraph_profiled", rf"Estimated CUDA graph memory: (?P<gib>{FLT}) GiB(?: total)?",
       "v1/worker/gpu_model_runner.py profile_cudagraph_memory: 'Estimated CUDA graph memory: %.2f GiB total' "
       "(taken off the KV budget from 0.20; printed, not taken, in 0.19)", "0.19+ (GPU)"),
    _p("kv_capacity",
       rf"(?P<pool>[A-Z]+(?: \+ host)?) KV cache size: (?P<tokens>{NUM}) tokens, Maximum concurrency for "
       rf"(?P<per_req>{NUM}) tokens per request: (?P<x>{FLT})x",
       "v1/core/kv_cache_utils.py: '%s KV cache size: %s tokens, Maximum concurrency for %s tokens per request: "
       "%.2fx'", "0.28+"),
    _p("kv_tokens", rf"(?P<pool>[A-Z]+) KV cache size: (?P<tokens>{NUM}) tokens$",
       "v1/core/kv_cache_utils.py: 'GPU KV cache size: %s tokens'", "V1 0.8-0.27"),
    # anywhere in a line but after "tokens, " (0.28+'s one-line report above): quotes run log lines together
    _p("max_concurrency", rf"(?<!tokens, )Maximum concurrency for (?P<per_req>{NUM}) tokens per request: (?P<x>{FLT})x",
       "v1/core/kv_cache_utils.py: 'Maximum concurrency for %s tokens per request: %.2fx'", "V1 0.8-0.27; V0 0.6-0.10"),
    # negative in 0.1.x, which sized the cache without a check (vllm#184: '# GPU blocks: -1', then the cache
    # tensor fails: 'Trying to create tensor with negative dimension -1')
    _p("gpu_blocks", rf"# (?:GPU|cuda|CUDA|npu|xpu) blocks: (?P<blocks>-?{NUM})",
       "executor/executor_base.py: '# %s blocks: %d, # CPU blocks: %d'; early V1: '# GPU blocks: %d'; "
       "0.1.x llm_engine.py the same line", "V0 0.1-0.10, V1 0.7"),
    _p("gpu_blocks", rf"num_gpu_blocks is: (?P<blocks>{NUM})",
       "v1/engine/core.py (APIServer side): '... num_gpu_blocks is: %d'", "V1 0.8+"),
    _p("graph_captured", rf"Graph capturing finished in (?P<secs>{FLT}) secs?(?:, took (?P<gib>-?{FLT}) GiB)?",
       "v1/worker/gpu_model_runner.py capture_model: 'Graph capturing finished in %.0f secs, took %.2f GiB'",
       "0.6+ (the GiB part 0.8+)"),
    _p("init_engine", rf"init engine \(profile, create kv cache, warmup model\) took (?P<secs>{FLT})",
       "v1/engine/core.py: 'init engine (profile, create kv cache, warmup model) took %.2f seconds'", "V1 0.8+"),
    _p("cudagraphs_off",
       r"Cudagraph is disabled under eager mode|CUDA graph is disabled|cudagraph_mode.*NONE.*enforce_eager|"
       r"Disabling cudagraphs? ",
       "config/compilation.py / platforms: 'Cudagraph is disabled under eager mode'", "0.6+"),
    # --- startup phases (markers only) -------------------------------------------------------
    _p("download", r"Fetching (?P<files>\d+) files|Downloading |Using model weights format",
       "huggingface_hub snapshot_download ('Fetching %d files'); model_loader/weight_utils.py: 'Using model weights "
       "format %s'", "any"),
    _p("weights_loading", r"Starting to load model|Loading safetensors checkpoint shards|Loading weights took",
       "v1/worker/gpu_model_runner.py: 'Starting to load model %s...'; weight_utils.py tqdm: 'Loading safetensors "
       "checkpoint shards'", "0.6+"),
    _p("profiling", r"Memory profiling takes|Warming up model|Initial profiling/warmup run",
       "v1/worker/gpu_worker.py / cpu_worker.py profiling and warm-up lines", "V1 0.8+"),
    _p("graph_capture_start", r"(?i)Capturing (?:CUDA graphs?|cudagraphs|the model for CUDA graphs)",
       "v1/worker/gpu_model_runner.py tqdm: 'Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)'; V0 "
       "worker/model_runner.py: 'Capturing the model for CUDA graphs. ...'", "0.6+"),
    _p("server_started",
       r"Starting vLLM (?:API )?server (?:\d+ )?on (?P<url>\S+)|Uvicorn running on (?P<uvicorn_url>\S+)|"
       r"Application startup complete|Starting vLLM API server(?: \d+)? on|Starting vLLM server on",
       "entrypoints/openai/api_server.py: 'Starting vLLM API server %d on %s'; uvicorn: 'Uvicorn running on %s', "
       "'Application startup complete.'", "0.6+"),
    _p("listen", r"(?:Starting vLLM (?:API )?server(?: \d+)? on|Uvicorn running on) https?://[^\s:]+:(?P<port>\d+)",
       "entrypoints/openai/api_server.py / uvicorn (the same lines)", "0.6+"),
    # --- failures ------------------------------------------------------------------------------
    # the "(" before the GiB figure is vLLM's own typo; quotes in blogs and issues often drop it
    _p("kv_too_small",
       rf"To serve at least one request with the models?'s max seq len \((?P<len>\d+)\),? \(?(?P<needed>{FLT}) GiB KV "
       rf"cache is needed, which is larger than the available KV cache memory \((?P<avail>-?{FLT}) GiB\)\.?"
       rf"(?:\s*Based on the available memory,\s*the estimated maximum model length is (?P<est>\d+))?",
       "v1/core/kv_cache_utils.py check_enough_kv_cache_memory: 'To serve at least one request with the models's "
       "max seq len (%d), (%.2f GiB KV cache is needed, which is larger than the available KV cache memory (%.2f "
       "GiB). Based on the available memory, the estimated maximum model length is %d. ...'",
       "V1 0.8+ (\"models's\" up to 0.21)"),
    # the same error's last sentence on a line of its own (a quote that wraps it)
    _p("kv_estimated_len", r"the estimated maximum model length is (?P<est>\d+)",
       "v1/core/kv_cache_utils.py check_enough_kv_cache_memory (estimated_msg)", "V1 0.8+"),
    _p("kv_too_small_v0",
       r"The models?'s max seq len \((?P<len>\d+)\) is larger than the maximum number of tokens that can be stored "
       r"in KV cache \((?P<tokens>\d+)\)",
       "worker/worker.py raise_if_cache_size_invalid: \"The model's max seq len (%d) is larger than the maximum "
       "number of tokens that can be stored in KV cache (%d). ...\"", "V0 0.6-0.10, V1 <=0.7"),
    # the same error cut right after its first figure (an issue title, an excerpt ending "[...]"): only V0's
    # raise_if_cache_size_invalid starts "ValueError: The model's max seq len (N)", so the failure is known, not the
    # count
    _p("kv_too_small_v0_cut",
       r"ValueError: The models?'s max seq len \((?P<len>\d+)\)\s*(?:\[\.\.\.\]|\.\.\.|\u2026|$)",
       "worker/worker.py raise_if_cache_size_invalid (the message's first words)", "V0 0.6-0.10, V1 <=0.7"),
    _p("mamba_blocks",
       r"max_num_seqs \((?P<seqs>\d+)\) exceeds available Mamba cache blocks \((?P<blocks>\d+)\)",
       "config/compilation.py (0.32; the check came with vllm#34094): 'max_num_seqs (%d) exceeds available Mamba "
       "cache blocks (%d). Each decode sequence requires one Mamba cache block, so CUDA graph capture cannot "
       "proceed. Please lower max_num_seqs to at most %d or increase gpu_memory_utilization.'",
       "V1 0.19+ (hybrid Mamba / linear-attention models under full CUDA graphs)"),
    _p("no_kv_memory", r"No available memory for the cache blocks",
       "worker/worker.py / v1/core/kv_cache_utils.py: 'No available memory for the cache blocks. ...'", "0.6+"),
    _p("insufficient_free",
       rf"Free memory on device(?: (?P<device>[\w:]+))? \((?P<free>{FLT})/(?P<total>{FLT}) GiB\) on startup is less than "
       rf"(?:desired GPU memory utilization |the engine's budget[^(]*)\((?P<util>{FLT}), (?P<req>{FLT}) GiB\)",
       "v1/worker/utils.py request_memory: 'Free memory on device %s (%.2f/%.2f GiB) on startup is less than desired "
       "GPU memory utilization (%.2f, %.2f GiB). ...'", "V1 0.9+"),
    _p("insufficient_free",
       rf"Available memory on node (?P<node>\d+) \((?P<free>{FLT})/(?P<total>{FLT}) GiB\) on startup is less than "
       rf"desired CPU memory utilization \((?P<util>{FLT}), (?P<req>{FLT}) GiB\)",
       "v1/worker/cpu_worker.py: 'Available memory on node %d (%.2f/%.2f GiB) on startup is less than desired CPU "
       "memory utilization (%.2f, %.2f GiB). ...'", "CPU build 0.32"),
    _p("insufficient_free",
       rf"Available memory on node (?P<node>\d+) \((?P<free>{FLT})/(?P<total>{FLT}) GiB\) on kv cache allocation is "
       rf"less than requested memory for kv \((?P<req>{FLT})",
       "v1/worker/cpu_worker.py: '... on kv cache allocation is less than requested memory for kv (%s GiB).'",
       "CPU build 0.32"),
    _p("oom",
       rf"(?P<api>CUDA|HIP|XPU) out of memory\.?(?: Tried to allocate (?P<alloc>{FLT}) ?(?P<unit>[GMK]i?B))?"
       rf"(?:.*?GPU (?P<gpu>\d+) has a total capacity of (?P<total>{FLT}) ?(?P<tunit>[GMK]i?B) of which (?P<free>{FLT}) "
       rf"?(?P<funit>[GMK]i?B) is free)?",
       "torch: 'CUDA out of memory. Tried to allocate %s. GPU %d has a total capacity of %s of which %s is free.'",
       "any"),
    # the same message quoted without its head ("... Tried to allocate 136.00 MiB. GPU 0 has a total capacity of
    # 22.36 GiB of which 120.88 MiB is free", vllm#57475): torch prints this sentence only when it runs out of memory
    _p("oom",
       rf"Tried to allocate (?P<alloc>{FLT}) ?(?P<unit>[GMK]i?B)\. GPU (?P<gpu>\d+) has a total capacity of "
       rf"(?P<total>{FLT}) ?(?P<tunit>[GMK]i?B)(?: of which (?P<free>{FLT}) ?(?P<funit>[GMK]i?B) is free)?",
       "torch: '... Tried to allocate %s. GPU %d has a total capacity of %s of which %s is free.' (head cut)",
       "any"),
    _p("oom", r"torch\.(?:cuda\.)?OutOfMemoryError|OutOfMemoryError: (?:CUDA|HIP)|(?:CUDA|HIP) error: out of memory",
       "torch: torch.OutOfMemoryError / 'CUDA error: out of memory'", "any"),
    _p("oom_other_process", rf"Process (?P<pid>\d+) has (?P<used>{FLT}) ?(?P<unit>[GMK]i?B) memory in use",
       "torch OOM message: 'Process %d has %s memory in use.'", "any"),
    # FlashInfer's b12x NVFP4 fused-MoE kernels for SM12x GPUs (vLLM --moe-backend flashinfer_b12x) allocate a static
    # and a dynamic workspace of their own when the layer is built or first run, outside what vLLM's memory profile
    # sees (vllm#47982: "allocate_sm120_static_workspace, bringing total PyTorch allocation to ~30.47 GiB" on an RTX
    # 5090; vllm#49476: an OOM inside profile_run, and 11.47 GiB less KV than --moe-backend marlin on an RTX PRO 6000)
    _p("b12x_moe_workspace", r"B12xMoEWrapper|allocate_sm120_\w*workspace",
       "flashinfer fused_moe/cute_dsl/b12x_moe.py: B12xMoEWrapper._allocate_buffers -> allocate_sm120_moe_workspace "
       "(traceback frames)", "0.24+ with --moe-backend flashinfer_b12x"),
    _p("oom_load", r"Failed to load model - not enough GPU memory",
       "v1/worker/gpu_model_runner.py load_model: 'Failed to load model - not enough GPU memory. ...'", "0.33+"),
    _p("tp_not_divisible",
       r"Total number of attention heads \((?P<heads>\d+)\) must be divisible by tensor parallel size \((?P<tp>\d+)\)",
       "config/model.py verify_with_parallel_config: 'Total number of attention heads (%d) must be divisible by "
       "tensor parallel size (%d).'", "0.6+"),
    _p("tp_not_divisible",
       r"(?P<what>[\w ]+?) \((?P<heads>\d+)\) (?:is not|must be) divisible by (?:the )?tensor[ _]parallel[ _]size "
       r"\((?P<tp>\d+)\)",
       "other divisibility checks in model code ('... (%d) is not divisible by tensor parallel size (%d)')", "any"),
    _p("max_len_exceeds_native",
       r"User-specified max_model_len \((?P<len>\d+)\) is greater than the derived max_model_len "
       r"\((?P<key>\w+)=(?P<derived>[\d.]+) or model_max_length=(?P<mml>\w+) in model's config\.json\)",
       "config/model.py _get_and_verify_max_len: 'User-specified max_model_len (%d) is greater than the derived "
       "max_model_len (%s=%s or model_max_length=%s in model's config.json). ...'", "0.6+"),
    _p("quant_unsupported",
       r"The quantization method (?P<method>[\w\-]+) is not supported for the current GPU\. Minimum capability: "
       r"(?P<min>\d+)\. Current capability: (?P<cap>\d+)",
       "config/vllm.py _get_quantization_config: 'The quantization method %s is not supported for the current GPU. "
       "Minimum capability: %d. Current capability: %d.'", "0.6+"),
    _p("quant_unsupported",
       r"Quantization scheme is not supported for\W+the current GPU\.?(?:\W+Min(?:imum)? capability: (?P<min>\d+)\.?\W+"
       r"Current capability: (?P<cap>\d+))?",
       "compressed_tensors.py: RuntimeError(('Quantization scheme is not supported for ', 'the current GPU. Min "
       "capability: %d. ', 'Current capability: %d.')) (rh-aiservices-bu/rhoai-maas-guide#53)", "0.6+"),
    _p("trust_remote_code",
       r"consider setting `trust_remote_code=True`|Please pass the argument `trust_remote_code=True`|"
       r"requires you to execute the (?:configuration|tokenizer|modeling) file in that repo|"
       r"contains custom code which must be executed|set `trust_remote_code=True`",
       "transformers/dynamic_module_utils.py and vLLM's config loading ('... consider setting "
       "`trust_remote_code=True` ...')", "any"),
    _p("unsupported_arch", r"Model architectures? (?P<archs>\[[^\]]*\]) (?:are|is) not supported for now",
       "model_executor/models/registry.py: 'Model architectures %s are not supported for now. ...'", "0.6+"),
    _p("unsupported_arch", r"Cannot find model module\. '(?P<arch>\w+)' is not a registered model",
       "model_executor/models/registry.py: \"Cannot find model module. '%s' is not a registered model ...\"", "0.6+"),
    _p("port_in_use",
       r"\[Errno (?:98|48|10048)\] error while attempting to bind on address \('(?P<host>[^']*)', (?P<port>\d+)\)",
       "asyncio / uvicorn: \"[Errno 98] error while attempting to bind on address ('%s', %d): address already in "
       "use\"", "any"),
    _p("port_in_use", r"OSError: \[Errno 98\] Address already in use|Address already in use",
       "socket.bind: 'OSError: [Errno 98] Address already in use'", "any"),
    _p("chat_template_missing",
       r"default chat template is no longer allowed|must provide a chat template if the tokenizer does not define one|"
       r"Cannot use chat template functions because tokenizer\.chat_template is not set",
       "transformers >= 4.44 apply_chat_template, returned by vLLM as HTTP 400", "any"),
    _p("generation_config_override",
       r"Default (?:vLLM )?sampling parameters have been overridden by (?P<src>[^:]+?)(?::\s*`(?P<params>\{.*?\})`)?\.(?:\s|$)",
       "config/model.py get_diff_sampling_param: 'Default vLLM sampling parameters have been overridden by %s: `%s`. "
       "...`--generation-config vllm`.'", "0.7+ (0.7-0.10: 'Default sampling parameters ...')"),
    _p("generation_config_override", r"Using default (?:chat )?sampling params from model: (?P<params>\{.*\})",
       "entrypoints/openai/serving_*.py: 'Using default sampling params from model: %s'", "0.7+"),
    _p("shm_error",
       r"Error while (?:creating|attaching to) shared memory segment (?P<seg>/dev/shm/\S*)|ncclShmOpen|"
       r"/dev/shm[^\n]*No space left on device|Bus error",
       "NCCL shared-memory transport (vllm#1710, #6574, #18831, MiniMax-01#42)", "any"),
    _p("nccl_error",
       r"NCCL error|ncclSystemError|ncclUnhandledCudaError|ncclInternalError|ncclInvalidUsage|DistBackendError|"
       r"NCCL WARN", "torch.distributed / NCCL", "any"),
    _p("bf16_unsupported",
       r"Bfloat16 is only supported on GPUs with compute capability of at least 8\.0\. Your (?P<gpu>.+?) GPU "
       r"(?:has compute capability (?P<cap>\d+\.\d+)|does not have a compute capability)",
       "platforms/cuda.py check_if_supports_dtype (0.32; worker/worker.py _check_if_gpu_supports_dtype in 0.2-0.6): "
       "'Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your %s GPU has compute "
       "capability %s. You can use float16 instead ... --dtype=half.' (vllm#946, #1157)", "any"),
    _p("gpu_too_old", r"GPUs with compute capability below (?P<min>\d+\.\d+) are not supported",
       "worker/worker.py (0.2): 'GPUs with compute capability below 7.0 are not supported.' (vllm#1284)", "0.2"),
    _p("torch_arch_unsupported",
       r"(?P<gpu>\S.*?) with CUDA capability sm_(?P<cap>\d+) is not compatible with the current PyTorch installation",
       "torch/cuda/__init__.py _check_capability (UserWarning): '%s with CUDA capability sm_%d is not compatible "
       "with the current PyTorch installation.' (chatdoc-com/OCRFlux#70, vllm#21633)", "any"),
    _p("torch_arch_list", r"The current PyTorch install supports CUDA capabilities (?P<archs>sm_\w+(?: sm_\w+)*)",
       "torch/cuda/__init__.py: 'The current PyTorch install supports CUDA capabilities %s.'", "any"),
    _p("no_kernel_image", r"no kernel image is available for execution on the device",
       "CUDA runtime error cudaErrorNoKernelImageForDevice, raised by torch or vLLM's own kernels "
       "('CUDA error: no kernel image is available for execution on the device'; vllm#16901, #18995)", "any"),
    _p("hub_gated", r"Cannot access gated repo for url (?P<url>https?://\S+?)\.?$",
       "huggingface_hub/utils/_http.py hf_raise_for_status, GatedRepoError: '%d Client Error. Cannot access gated "
       "repo for url %s.'", "any"),
    _p("hub_gated",
       r"Access to model (?P<repo>[\w.\-]+/[\w.\-]+) is restricted(?P<unlisted> and you are not in the authorized list)?",
       "the Hub's message that GatedRepoError carries: 'Access to model %s is restricted. You must have access to it "
       "and be authenticated to access it. Please log in.' / '... is restricted and you are not in the authorized "
       "list. Visit %s to ask for access.'", "any"),
    _p("hub_gated", r"Repo model (?P<repo>[\w.\-]+/[\w.\-]+) is gated\. You must be authenticated",
       "huggingface_hub < 0.23 GatedRepoError: 'Repo model %s is gated. You must be authenticated to access it.'", "any"),
    _p("model_not_found", r"Invalid repository ID or local directory specified: '(?P<model>[^']*)'",
       "transformers_utils/config.py get_config (0.7+): \"Invalid repository ID or local directory specified: '%s'. "
       "Please verify ...\"", "0.7+"),
    _p("model_not_found",
       r"Repo id must be in the form 'repo_name' or 'namespace/repo_name': '(?P<model>[^']*)'",
       "huggingface_hub/utils/_validators.py validate_repo_id, HFValidationError: a --model that is neither an "
       "existing folder nor a repo id (seen from vLLM 0.32's get_model_path on this machine)", "any"),
    _p("model_not_found", r"Repository Not Found for url: (?P<url>https?://\S+?)\.?$",
       "huggingface_hub/utils/_http.py hf_raise_for_status, RepositoryNotFoundError: 'Repository Not Found for url: "
       "%s.'", "any"),
    _p("model_not_found",
       r"(?P<model>\S+) is not a local folder and is not a valid model identifier listed on 'https://huggingface\.co/models'",
       "transformers/utils/hub.py cached_file: \"%s is not a local folder and is not a valid model identifier listed "
       "on 'https://huggingface.co/models'\"", "any"),
    _p("hub_unreachable",
       r"We couldn't connect to '(?P<endpoint>[^']+)' to load (?:the files|this file)|"
       r"Cannot find (?:the requested files in the disk cache|an appropriate cached snapshot folder[^.]*) and "
       r"outgoing traffic has been disabled|"
       r"Failed to resolve \\?'(?P<host>[\w.\-]*(?:huggingface\.co|hf-mirror\.com|modelscope\.cn))\\?'|"
       r"HTTPSConnectionPool\(host=\\?'(?P<pool_host>[\w.\-]*(?:huggingface\.co|hf-mirror\.com|modelscope\.cn))"
       r"\\?', port=\d+\): Max retries exceeded",
       "transformers/utils/hub.py cached_files: \"We couldn't connect to '%s' to load the files, and couldn't find "
       "them in the cached files.\"; huggingface_hub/file_download.py LocalEntryNotFoundError: 'Cannot find the "
       "requested files in the disk cache and outgoing traffic has been disabled ...'; urllib3 connection errors",
       "any"),
    _p("memory_profiling_error",
       r"Error in memory profiling\. Initial free memory (?P<init>[\d.]+)(?: GiB)?, current free memory "
       r"(?P<now>[\d.]+)",
       "v1/worker/gpu_worker.py determine_available_memory: 'Error in memory profiling. Initial free memory %s GiB, "
       "current free memory %s GiB. This happens when other processes sharing the same container release GPU memory "
       "while vLLM is profiling during initialization. ...' (0.32; 0.8-0.9: '... when the GPU memory was not properly "
       "cleaned up before initializing the vLLM instance.')", "V1 0.8+"),
    _p("quant_mismatch",
       r"Quantization method specified in the model config \((?P<config>[\w\-]+)\) does not match the "
       r"quantization method specified in the `?quantization`? argument \((?P<arg>[\w\-]+)\)",
       "config/model.py _verify_quantization: 'Quantization method specified in the model config (%s) does not match "
       "the quantization method specified in the `quantization` argument (%s).'", "0.2+"),
    _p("quant_unknown", r"Unknown quantization method: (?P<method>[\w\-]+)\. Must be one of (?P<known>\[.*?\])",
       "config/model.py _verify_quantization: 'Unknown quantization method: %s. Must be one of %s.'", "0.2+"),
    _p("prompt_too_long",
       r"(?:This model's )?maximum context length is (?P<max>\d+) tokens\. However, (?:you requested (?P<req>\d+) "
       r"tokens(?: \((?P<prompt>\d+) in the messages, (?P<completion>\d+) in the completion\))?|your (?:prompt "
       r"contains|request has) (?:at least )?(?P<prompt2>\d+) input tokens)",
       "entrypoints/openai serving (0.4-0.10: 'This model's maximum context length is %d tokens. However, you "
       "requested %d tokens (%d in the messages, %d in the completion). ...'; renderers/params.py in 0.32: '... "
       "However, your prompt contains %d input tokens ...'), returned as HTTP 400", "any"),
    _p("prompt_too_long",
       r"The decoder prompt \(length (?P<prompt2>\d+)\) is longer than the maximum model length of (?P<max>\d+)",
       "v1/engine/processor.py _validate_model_input: 'The decoder prompt (length %d) is longer than the maximum "
       "model length of %d. ...'", "V1 0.8+"),
    _p("no_nvidia_driver",
       r"Found no NVIDIA driver on your system|libcuda\.so(?:\.1)?: cannot open shared object file|"
       r"NVIDIA driver on your system is too old", "torch/cuda/__init__.py _lazy_init", "any"),
    _p("no_platform", r"Failed to infer device type|No platform detected, vLLM is running on UnspecifiedPlatform",
       "platforms/__init__.py / engine/arg_utils.py", "0.7+"),
    _p("amd_hint", r"\b(?:amdgpu|ROCm|rocm|gfx9\d\d|gfx1\d{3}|MI300X?|MI250X?|MI325X|HIP_VISIBLE_DEVICES|Instinct)\b",
       "any AMD/ROCm mention (device names, HIP variables)", "any"),
    _p("ulimit_low", r"Found ulimit of (?P<limit>\d+) and failed to automatically increase",
       "utils/system_utils.py set_ulimit: 'Found ulimit of %s and failed to automatically increase with error %s. "
       "...'", "0.6+"),
    _p("engine_failed",
       r"Engine core initialization failed|EngineCore failed to start|RuntimeError: Engine process failed to start|"
       r"EngineDeadError|WorkerProc failed to start|WorkerProc hit an exception",
       "v1/engine/core_client.py / v1/engine/utils.py; v1/executor/multiproc_executor.py 'WorkerProc failed to start.' "
       "and, for an exception in a call the engine made to a worker (loading, profiling, graph capture), "
       "worker_busy_loop's 'WorkerProc hit an exception.'",
       "V1 0.8+"),
    # or the rest of one a terminal wrapped inside its path ('.../v1/worker' + '/gpu_worker.py", line 425, in ...')
    _p("traceback_frame", r'(?:File "[^"]*|^[\w./-]*\.py)", line \d+, in (?P<func>\w+)',
       "Python traceback frame: 'File \"/x/vllm/v1/worker/gpu_model_runner.py\", line 2653, in capture_model'", "any"),
    _p("exception", r"^(?:[\w.]+\.)?(?P<type>[A-Z]\w*(?:Error|Exception))(?::\s*(?P<msg>.*))?$",
       "Python traceback summary line: 'ValueError: ...'", "any"),
)

NEEDLES: dict[str, tuple[str, ...]] = {
    "engine_config": ("LLM engine",),
    "server_version": ("server version",),
    "banner_version": ("version",),
    "non_default_args": ("non-default args",),
    "namespace_args": ("Namespace(",),
    "platform": ("detected platform",),
    "architecture": ("Resolved architecture",),
    "using_max_model_len": ("Using max model len",),
    "auto_fit": ("Auto-fit",),
    "attention_backend": ("backend",),
    "sampler_flashinfer": ("top-p & top-k sampling",),
    "sampler_native": ("Falling back",),
    "compile_cache_loaded": ("Directly load",),
    "model_runner_v2": ("V2 Model Runner",),
    "compile_cold": ("Compiling a graph for",),
    "gpu_name": ("GPU ",),
    "cpu_kv_set": ("for KV cache",),
    "weights_loaded": ("took",),
    "weights_load_time": ("Loading weights took",),
    "available_kv": ("Available KV cache memory",),
    "kv_reserved": ("as specified by kv_cache_memory_bytes",),
    "v0_memory_split": ("model weights take",),
    "v0_budget": ("total_gpu_memory (",),
    "v0_profile_results": ("Memory profiling results",),
    "v1_profile": ("Total non KV cache memory",),
    "memory_summary": ("on startup. Desired",),
    "extensible_kv_disabled": ("extensible KV cache",),
    "cudagraph_estimate": ("CUDA graph pool memory",),
    "cudagraph_profiled": ("Estimated CUDA graph memory",),
    "kv_capacity": ("KV cache size",),
    "kv_tokens": ("KV cache size",),
    "max_concurrency": ("Maximum concurrency",),
    "gpu_blocks": ("blocks",),
    "graph_captured": ("Graph capturing",),
    "init_engine": ("init engine",),
    "cudagraphs_off": ("Cudagraph", "CUDA graph", "cudagraph"),
    "download": ("Fetching", "Downloading ", "Using model weights format"),
    "weights_loading": ("Starting to load model", "Loading safetensors checkpoint shards", "Loading weights took"),
    "profiling": ("Memory profiling takes", "Warming up model", "Initial profiling/warmup run"),
    "graph_capture_start": ("apturing", "APTURING"),
    "server_started": ("Application startup", "Uvicorn running", "Starting vLLM"),
    "listen": ("Starting vLLM", "Uvicorn running"),
    "kv_too_small": ("To serve at least one request",),
    "kv_estimated_len": ("estimated maximum model length",),
    "kv_too_small_v0": ("max seq len",),
    "kv_too_small_v0_cut": ("ValueError: The model",),
    "mamba_blocks": ("Mamba cache blocks",),
    "no_kv_memory": ("No available memory for the cache blocks",),
    "insufficient_free": ("Free memory on device", "Available memory on node"),
    "oom": ("out of memory", "OutOfMemoryError", "has a total capacity of"),
    "oom_other_process": ("memory in use",),
    "oom_load": ("Failed to load model",),
    "b12x_moe_workspace": ("B12xMoEWrapper", "allocate_sm120"),
    "tp_not_divisible": ("divisible",),
    "max_len_exceeds_native": ("User-specified max_model_len",),
    "quant_unsupported": ("not supported for",),
    "trust_remote_code": ("trust_remote_code", "configuration file", "tokenizer file", "modeling file", "custom code"),
    "unsupported_arch": ("not supported for now", "Cannot find model module"),
    "port_in_use": ("Errno", "ddress already in use"),
    "chat_template_missing": ("chat template", "chat_template"),
    "generation_config_override": ("sampling param",),
    "shm_error": ("shared memory segment", "ncclShmOpen", "/dev/shm", "Bus error"),
    "nccl_error": ("NCCL", "nccl", "DistBackendError"),
    "bf16_unsupported": ("Bfloat16 is only supported",),
    "gpu_too_old": ("compute capability below",),
    "torch_arch_unsupported": ("is not compatible with the current PyTorch",),
    "torch_arch_list": ("PyTorch install supports CUDA capabilities",),
    "no_kernel_image": ("no kernel image",),
    "hub_gated": ("gated", "is restricted"),
    "model_not_found": ("Invalid repository ID", "Repository Not Found", "is not a valid model identifier",
                        "Repo id must be in the form"),
    "hub_unreachable": ("couldn't connect to", "outgoing traffic has been disabled", "Failed to resolve",
                        "Max retries exceeded"),
    "memory_profiling_error": ("Error in memory profiling",),
    "quant_mismatch": ("does not match the quantization method",),
    "quant_unknown": ("Unknown quantization method",),
    "prompt_too_long": ("maximum context length is", "is longer than the maximum model length"),
    "no_nvidia_driver": ("NVIDIA driver", "libcuda"),
    "no_platform": ("infer device type", "No platform detected"),
    "amd_hint": ("amdgpu", "ROCm", "rocm", "gfx", "MI3", "MI2", "HIP_VISIBLE", "Instinct"),
    "ulimit_low": ("Found ulimit",),
    "engine_failed": ("initialization failed", "failed to start", "EngineDeadError", "WorkerProc hit an exception"),
    "traceback_frame": ('File "', '.py", line '),
    "exception": ("Error", "Exception"),
}

KINDS: frozenset[str] = frozenset(p.kind for p in PATTERNS)
