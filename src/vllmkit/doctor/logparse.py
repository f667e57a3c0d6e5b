"""vLLM log text -> events (matched lines) and facts.

Covers the startup/shutdown output of vLLM 0.6 … 0.33, V0 and V1 engines. Lines are first cleaned:
ANSI colour codes, docker-compose prefixes ("vllm-1  | "), torch rank prefixes ("[rank0]: "),
process prefixes ("(EngineCore_DP0 pid=164) ", "(Worker_TP0 pid=611) ", "(APIServer pid=1) ",
"(VllmWorkerProcess pid=1786) ", "(VllmWorker rank=0 pid=85) ", "(RayWorkerWrapper pid=5280, ip=…) ")
and the logger header ("INFO 01-23 15:49:08 [gpu_model_runner.py:2653] ", V0 "INFO 01-13 11:35:21
model_runner.py:1099] ", dateless "INFO [model_runner.py:329] ").

The message formats are those of vLLM's own source (format strings quoted next to each pattern;
file paths are vLLM 0.32/0.33 unless noted) and of the public logs in
shared/truth/public-startup-logs.jsonl. GiB values are printed by vLLM's format_gib (2 decimals),
so byte facts derived from them carry that rounding (±5 MiB).

The parser never raises on any input: every number conversion is guarded.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

GIB = 1 << 30
MIB = 1 << 20

# --- line cleaning -----------------------------------------------------------------------------

ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]")
# "vllm-1  | ..." (docker compose) - only when followed by something that looks like vLLM output
COMPOSE_RE = re.compile(r"^[\w.\-]+\s+\|\s(?=.*(?:INFO|WARNING|ERROR|DEBUG|CRITICAL|\(\w+.*pid=|Traceback|\w+Error))")
RANK_RE = re.compile(r"^\[rank\d+\]:\s?")
# CI / log collectors: "[2025-03-10T15:07:20Z] ", "2025-03-10T15:07:20.123Z ", buildkite "  | "
TIMESTAMP_RE = re.compile(r"^(?:\[\d{4}-\d{2}-\d{2}[T ][\d:.,]+Z?\]|\d{4}-\d{2}-\d{2}T[\d:.,]+Z?)\s+")
PIPE_RE = re.compile(r"^\|\s")
# Ray de-duplicates worker lines: "... [repeated 30x across cluster]" (vllm#15598)
RAY_REPEAT_RE = re.compile(r"\s*\[repeated \d+x across cluster\]\s*$")
# "(EngineCore_DP0 pid=164) ", "(VllmWorker rank=0 pid=85) ", "(RayWorkerWrapper pid=5280, ip=10.0.0.1) "
PROC_RE = re.compile(r"^\((?P<proc>[A-Za-z_][\w\-]*(?:\s+rank=\d+)?)\s+pid=(?P<pid>\d+)(?:,\s*ip=[^)]*)?\)\s*")
# "INFO 01-23 15:49:08 [file.py:123] ", "INFO 01-13 11:35:21 file.py:99] ", "INFO [file.py:1] ",
# "WARNING 03-20 23:26:06 [core.py:340] "; the date part is optional (some builds / blogs drop it).
HEADER_RE = re.compile(
    r"^(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+"
    r"(?:\d{2}-\d{2}\s+\d{2}:\d{2}:\d{2}(?:\.\d+)?\s+)?"
    r"(?:\[?[\w./\-]+\.py:\d+\]\s?)?"
)

Level = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]


@dataclass(frozen=True)
class LogLine:
    number: int  # 1-based line number in the input
    raw: str
    message: str  # cleaned text
    process: str | None
    level: str | None


def strip_ansi(text: str) -> str:
    return ANSI_RE.sub("", text)


def clean_line(raw: str) -> tuple[str, str | None, str | None]:
    """Return (message, process, level) for one raw log line."""
    line = strip_ansi(raw).replace("\r", "").rstrip()
    line = COMPOSE_RE.sub("", line, count=1)
    process: str | None = None
    level: str | None = None
    for _ in range(4):  # prefixes can stack: "[rank0]: (Worker pid=1) ERROR ..."
        before = line
        line = line.lstrip()
        line = TIMESTAMP_RE.sub("", line, count=1)
        line = PIPE_RE.sub("", line, count=1)
        line = RANK_RE.sub("", line, count=1)
        m = PROC_RE.match(line)
        if m:
            process = process or m.group("proc")
            line = line[m.end() :]
        m = HEADER_RE.match(line)
        if m:
            level = level or m.group("level").replace("WARN", "WARNING").replace("WARNINGING", "WARNING")
            line = line[m.end() :]
        if line == before:
            break
    line = RAY_REPEAT_RE.sub("", line)
    return line.strip(), process, level


def iter_lines(text: str) -> Iterator[LogLine]:
    header = True  # a leading block of "#" lines (annotated excerpts, like tests/data/logs) is commentary
    for i, raw in enumerate(text.splitlines(), start=1):
        if header and raw.startswith("#"):
            continue
        header = False
        msg, proc, level = clean_line(raw)
        if msg:
            yield LogLine(number=i, raw=raw, message=msg, process=proc, level=level)


# --- conversions (never raise) -----------------------------------------------------------------


def to_int(s: str | None) -> int | None:
    if s is None:
        return None
    try:
        return int(s.replace(",", "").replace("_", "").strip())
    except (ValueError, AttributeError):
        return None


def to_float(s: str | None) -> float | None:
    if s is None:
        return None
    try:
        value = float(s.replace(",", "").strip())
    except (ValueError, AttributeError):
        return None
    return value if value == value and value not in (float("inf"), float("-inf")) else None


def gib_to_bytes(s: str | None) -> int | None:
    value = to_float(s)
    return None if value is None else round(value * GIB)


def size_to_bytes(value: str | None, unit: str | None) -> int | None:
    number = to_float(value)
    if number is None:
        return None
    scale = {"B": 1, "KIB": 1 << 10, "KB": 1 << 10, "MIB": MIB, "MB": MIB, "GIB": GIB, "GB": GIB, "TIB": 1 << 40}
    return round(number * scale.get((unit or "GiB").upper(), GIB))


def to_bool(s: str | None) -> bool | None:
    if s is None:
        return None
    v = s.strip().strip("'\"").lower()
    if v in ("true", "1", "yes"):
        return True
    if v in ("false", "0", "no"):
        return False
    return None


# --- facts ---------------------------------------------------------------------------------------


class LogFacts(BaseModel):
    """What a vLLM log says about the run. None = the log did not show it."""

    vllm_version: str | None = None
    engine: Literal["V0", "V1"] | None = None
    platform: str | None = None  # "cuda", "rocm", "cpu", ... ("Automatically detected platform X.")
    kv_pool: str | None = None  # "GPU" / "CPU" / "XPU" from the capacity line
    gpu_name: str | None = None
    gpu_total_bytes: int | None = None
    gpu_free_bytes_at_start: int | None = None
    model: str | None = None
    served_model_name: str | None = None
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    data_parallel_size: int | None = None
    max_model_len: int | None = None
    dtype: str | None = None
    quantization: str | None = None
    kv_cache_dtype: str | None = None
    enforce_eager: bool | None = None
    enable_prefix_caching: bool | None = None
    trust_remote_code: bool | None = None
    gpu_memory_utilization: float | None = None
    kv_cache_memory_bytes_requested: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    block_size: int | None = None
    port: int | None = None
    attention_backend: str | None = None
    architecture: str | None = None
    weights_bytes: int | None = None
    weights_load_seconds: float | None = None
    non_torch_bytes: int | None = None
    peak_activation_bytes: int | None = None
    available_kv_bytes: int | None = None
    kv_cache_tokens: int | None = None
    num_gpu_blocks: int | None = None
    max_concurrency: float | None = None
    concurrency_tokens_per_request: int | None = None
    graph_memory_bytes: int | None = None
    graph_capture_seconds: float | None = None
    init_engine_seconds: float | None = None
    auto_fit_max_model_len: int | None = None
    # from the "not enough KV cache" errors
    kv_needed_bytes: int | None = None
    estimated_max_model_len: int | None = None
    v0_max_kv_tokens: int | None = None
    non_default_args: dict[str, Any] = Field(default_factory=dict)
    generation_config_overrides: dict[str, Any] | None = None
    server_started: bool = False
    engine_failed: bool = False
    last_error: str | None = None


class LogEvent(BaseModel):
    kind: str
    line: int
    text: str
    values: dict[str, Any] = Field(default_factory=dict)


class ParsedLog(BaseModel):
    facts: LogFacts
    events: list[LogEvent]


# --- patterns ------------------------------------------------------------------------------------
# Each pattern: (event kind, compiled regex). Group names become event values.


def _p(rx: str) -> re.Pattern[str]:
    return re.compile(rx)


NUM = r"[\d,]+"
FLT = r"[\d.]+"

PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    # v1/engine/core.py: "Initializing a V1 LLM engine (v%s) with config: %s";
    # V0 (<=0.8) "Initializing an LLM engine (v0.6.4.post1) with config: ..." / "Initializing a V0 LLM engine (v0.8.2) ..."
    ("engine_config", _p(r"Initializing an? (?:(?P<engine>V[01]) )?LLM engine \(v(?P<version>[^)\s]+)\) with config:\s*(?P<config>.*)")),
    # entrypoints/openai/api_server.py: "vLLM API server version %s" (<=0.10); "vLLM server version %s, serving model %s"
    ("server_version", _p(r"vLLM (?:API )?server version (?P<version>[\w.+\-]+)")),
    # >= 0.2x start-up banner (api_utils.py): "▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.32.0"
    ("banner_version", _p(r"[█▀▄]\s+version (?P<version>\d+\.\d+[\w.+\-]*)\s*$")),
    # entrypoints/utils.py: "non-default args: %s" (a Python dict repr)
    ("non_default_args", _p(r"non-default args: (?P<args>\{.*\})")),
    # <= 0.10 api_server: "args: Namespace(host=None, port=8000, ..., model='x', max_model_len=4096, ...)" (all args)
    ("namespace_args", _p(r"^args: Namespace\((?P<ns>.*)\)\s*$")),
    ("platform", _p(r"Automatically detected platform (?P<platform>[\w\-]+)\.?")),
    # config/model.py (0.2x+): "Resolved architecture: LlamaForCausalLM"
    ("architecture", _p(r"Resolved architecture: (?P<arch>\w+)")),
    # CPU backend (v1/worker/cpu_worker.py): "Explicitly set (X/T) GiB for KV cache on node N."
    ("cpu_kv_set", _p(rf"(?:Explicitly|Auto) set \((?P<gib>{FLT})/(?P<total>{FLT})\) GiB for KV cache")),
    # utils/system_utils.py: "Found ulimit of %s and failed to automatically increase with error %s. ..."
    ("ulimit_low", _p(r"Found ulimit of (?P<limit>\d+) and failed to automatically increase")),
    # config/model.py "Using max model len %s"
    ("using_max_model_len", _p(r"Using max model len (?P<len>\d+)")),
    ("auto_fit", _p(r"Auto-fit max_model_len: reduced from (?P<from>\d+) to (?P<to>\d+)")),
    # "Using FLASH_ATTN backend." / "Using Flash Attention backend on V1 engine." / "Using XFormers backend."
    ("attention_backend", _p(r"^Using (?P<backend>(?!.*\b(?:ViT|vit|MLA prefill)\b)[\w .\-]+?) (?:attention )?backend(?: on V1 engine)?\.?$")),
    # v1/worker/gpu_model_runner.py: "Model loading took %s GiB memory and %.6f seconds" (0.11: "%.4f GiB and ...")
    ("weights_loaded", _p(rf"Model loading took (?P<gib>{FLT}) GiB(?: memory)? and (?P<secs>{FLT}) seconds")),
    ("weights_loaded", _p(rf"Model loading took (?P<gib>{FLT}) GiB")),
    # V1 0.8-0.10: "Model loading took %.4f GB and %.6f seconds" (GiB-valued, like V0; vllm#14574)
    ("weights_loaded", _p(rf"Model loading took (?P<gib>{FLT}) GB(?: and (?P<secs>{FLT}) seconds)?")),
    # V0 worker/model_runner.py: "Loading model weights took %.4f GB" (GiB-valued despite the unit)
    ("weights_loaded", _p(rf"Loading model weights took (?P<gib>{FLT}) GB")),
    # v1/worker/gpu_worker.py: "Available KV cache memory: %s GiB"
    ("available_kv", _p(rf"Available KV cache memory: (?P<gib>-?{FLT}) GiB")),
    # V0 (0.7/0.8): "model weights take 4.03GiB; non_torch_memory takes 1.39GiB; PyTorch activation peak
    # memory takes 0.32GiB; the rest of the memory reserved for KV Cache is 65.65GiB."
    ("v0_memory_split", _p(
        rf"model weights take (?P<weights>{FLT})GiB; non_torch_memory takes (?P<non_torch>-?{FLT})GiB; "
        rf"PyTorch activation peak memory takes (?P<peak>{FLT})GiB; the rest of the memory reserved for KV Cache is (?P<kv>-?{FLT})GiB"
    )),
    # V0 (0.7/0.8): "the current vLLM instance can use total_gpu_memory (79.33GiB) x gpu_memory_utilization (0.90) = 71.39GiB"
    ("v0_budget", _p(rf"total_gpu_memory \((?P<total>{FLT})GiB\) x gpu_memory_utilization \((?P<util>{FLT})\)")),
    # V0 0.6.4: "Memory profiling results: total_gpu_memory=47.74GiB initial_memory_usage=... non_torch_memory=4.09GiB
    #            kv_cache_size=0.39GiB gpu_memory_utilization=0.95"
    ("v0_profile_results", _p(
        rf"Memory profiling results: total_gpu_memory=(?P<total>{FLT})GiB.*?non_torch_memory=(?P<non_torch>-?{FLT})GiB\s+"
        rf"kv_cache_size=(?P<kv>-?{FLT})GiB\s+gpu_memory_utilization=(?P<util>{FLT})"
    )),
    # 0.33 v1/worker/gpu_worker.py (after capture): "Free memory on device (F/T GiB) on startup. Desired GPU memory
    # utilization is (u, R GiB). Actual usage is X GiB for consumed memory (weights + non-torch), Y GiB for peak
    # activation, and Z GiB for CUDAGraph memory. ..."
    ("memory_summary", _p(
        rf"Free memory on device \((?P<free>{FLT})/(?P<total>{FLT}) GiB\) on startup\. Desired GPU memory utilization is "
        rf"\((?P<util>{FLT}), (?P<req>{FLT}) GiB\)\. Actual usage is (?P<consumed>{FLT}) GiB for consumed memory.*?"
        rf"(?P<peak>{FLT}) GiB for peak activation, and (?P<graphs>{FLT}) GiB for CUDAGraph memory"
    )),
    # v1/core/kv_cache_utils.py >=0.28: "%s KV cache size: %s tokens, Maximum concurrency for %s tokens per request: %.2fx"
    ("kv_capacity", _p(
        rf"(?P<pool>[A-Z]+(?: \+ host)?) KV cache size: (?P<tokens>{NUM}) tokens, Maximum concurrency for (?P<per_req>{NUM}) "
        rf"tokens per request: (?P<x>{FLT})x"
    )),
    # <=0.27: two lines, "GPU KV cache size: %s tokens" then "Maximum concurrency for %s tokens per request: %.2fx"
    ("kv_tokens", _p(rf"(?P<pool>[A-Z]+) KV cache size: (?P<tokens>{NUM}) tokens$")),
    ("max_concurrency", _p(rf"^Maximum concurrency for (?P<per_req>{NUM}) tokens per request: (?P<x>{FLT})x")),
    # V0 executor_base.py / gpu_executor.py: "# GPU blocks: 5691, # CPU blocks: 2048" / "# cuda blocks: 307335, ..."
    # V1 early (0.7): "# GPU blocks: 1381"; APIServer: "... num_gpu_blocks is: 52510"
    ("gpu_blocks", _p(rf"# (?:GPU|cuda|CUDA|npu|xpu) blocks: (?P<blocks>{NUM})")),
    ("gpu_blocks", _p(rf"num_gpu_blocks is: (?P<blocks>{NUM})")),
    # CPU backend: "Explicitly set (X/T) GiB for KV cache on node N." - not needed for facts.
    # gpu_model_runner.py: "Graph capturing finished in %.0f secs, took %.2f GiB"
    ("graph_captured", _p(rf"Graph capturing finished in (?P<secs>{FLT}) secs?(?:, took (?P<gib>-?{FLT}) GiB)?")),
    ("init_engine", _p(rf"init engine \(profile, create kv cache, warmup model\) took (?P<secs>{FLT})")),
    ("cudagraphs_off", _p(r"Cudagraph is disabled under eager mode|CUDA graph is disabled|cudagraph_mode.*NONE.*enforce_eager|Disabling cudagraphs? ")),
    # uvicorn / api server
    ("server_started", _p(r"Application startup complete|Uvicorn running on|Starting vLLM API server(?: \d+)? on|Starting vLLM server on")),
    ("listen", _p(r"(?:Starting vLLM (?:API )?server(?: \d+)? on|Uvicorn running on) https?://[^\s:]+:(?P<port>\d+)")),
    # --- failures ---
    # kv_cache_utils.py (V1): "To serve at least one request with the model's max seq len (L), (X GiB KV cache is needed,
    # which is larger than the available KV cache memory (Y GiB). Based on the available memory, the estimated maximum
    # model length is N. ..." - "models's" up to 0.21.
    ("kv_too_small", _p(
        rf"To serve at least one request with the models?'s max seq len \((?P<len>\d+)\),? \((?P<needed>{FLT}) GiB KV cache is needed, "
        rf"which is larger than the available KV cache memory \((?P<avail>-?{FLT}) GiB\)\.?"
        rf"(?:\s*Based on the available memory,\s*the estimated maximum model length is (?P<est>\d+))?"
    )),
    # V0 (and V1 <=0.7): "The model's max seq len (8192) is larger than the maximum number of tokens that can be stored in KV cache (1280)."
    ("kv_too_small_v0", _p(r"The models?'s max seq len \((?P<len>\d+)\) is larger than the maximum number of tokens that can be stored in KV cache \((?P<tokens>\d+)\)")),
    ("no_kv_memory", _p(r"No available memory for the cache blocks")),
    # v1/worker/utils.py: "Free memory on device cuda:0 (F/T GiB) on startup is less than desired GPU memory utilization (u, R GiB)."
    ("insufficient_free", _p(
        rf"Free memory on device(?: (?P<device>[\w:]+))? \((?P<free>{FLT})/(?P<total>{FLT}) GiB\) on startup is less than "
        rf"(?:desired GPU memory utilization |the engine's budget[^(]*)\((?P<util>{FLT}), (?P<req>{FLT}) GiB\)"
    )),
    # CPU backend (v1/worker/cpu_worker.py, 0.32): "Available memory on node 0 (10.71/13.59 GiB) on startup is less
    # than desired CPU memory utilization (0.92, 12.5 GiB). ..." (seen here when other servers held the RAM) and
    # "... on kv cache allocation is less than requested memory for kv (X[/R] GiB)."
    ("insufficient_free", _p(
        rf"Available memory on node (?P<node>\d+) \((?P<free>{FLT})/(?P<total>{FLT}) GiB\) on startup is less than "
        rf"desired CPU memory utilization \((?P<util>{FLT}), (?P<req>{FLT}) GiB\)"
    )),
    ("insufficient_free", _p(
        rf"Available memory on node (?P<node>\d+) \((?P<free>{FLT})/(?P<total>{FLT}) GiB\) on kv cache allocation is "
        rf"less than requested memory for kv \((?P<req>{FLT})"
    )),
    # torch: "CUDA out of memory. Tried to allocate 1.96 GiB. GPU 0 has a total capacity of 79.19 GiB of which ..."
    ("oom", _p(
        rf"(?P<api>CUDA|HIP|XPU) out of memory\.?(?: Tried to allocate (?P<alloc>{FLT}) ?(?P<unit>[GMK]i?B))?"
        rf"(?:.*?GPU (?P<gpu>\d+) has a total capacity of (?P<total>{FLT}) ?(?P<tunit>[GMK]i?B) of which (?P<free>{FLT}) ?(?P<funit>[GMK]i?B) is free)?"
    )),
    ("oom", _p(r"torch\.(?:cuda\.)?OutOfMemoryError|OutOfMemoryError: (?:CUDA|HIP)|(?:CUDA|HIP) error: out of memory")),
    ("oom_other_process", _p(rf"Process (?P<pid>\d+) has (?P<used>{FLT}) ?(?P<unit>[GMK]i?B) memory in use")),
    # 0.33 gpu_model_runner.py: "Failed to load model - not enough GPU memory. ..."
    ("oom_load", _p(r"Failed to load model - not enough GPU memory")),
    ("tp_not_divisible", _p(r"Total number of attention heads \((?P<heads>\d+)\) must be divisible by tensor parallel size \((?P<tp>\d+)\)")),
    # other divisibility checks printed by vLLM / models
    ("tp_not_divisible", _p(r"(?P<what>[\w ]+?) \((?P<heads>\d+)\) (?:is not|must be) divisible by (?:the )?tensor[ _]parallel[ _]size \((?P<tp>\d+)\)")),
    # config/model.py: "User-specified max_model_len (L) is greater than the derived max_model_len (key=D or
    # model_max_length=M in model's config.json)."
    ("max_len_exceeds_native", _p(
        r"User-specified max_model_len \((?P<len>\d+)\) is greater than the derived max_model_len "
        r"\((?P<key>\w+)=(?P<derived>[\d.]+) or model_max_length=(?P<mml>\w+) in model's config\.json\)"
    )),
    # config/vllm.py: "The quantization method {q} is not supported for the current GPU. Minimum capability: {m}.
    # Current capability: {c}."
    ("quant_unsupported", _p(
        r"The quantization method (?P<method>[\w\-]+) is not supported for the current GPU\. Minimum capability: (?P<min>\d+)\. "
        r"Current capability: (?P<cap>\d+)"
    )),
    # compressed-tensors / quark: RuntimeError: ('Quantization scheme is not supported for ', 'the current GPU. Min
    # capability: 80. ', 'Current capability: 75.')  (rh-aiservices-bu/rhoai-maas-guide#53)
    ("quant_unsupported", _p(
        r"Quantization scheme is not supported for\W+the current GPU\.?(?:\W+Min(?:imum)? capability: (?P<min>\d+)\.?\W+"
        r"Current capability: (?P<cap>\d+))?"
    )),
    # config loading: "... consider setting `trust_remote_code=True` ..." (vLLM) and transformers' custom-code errors
    ("trust_remote_code", _p(
        r"consider setting `trust_remote_code=True`|Please pass the argument `trust_remote_code=True`|"
        r"requires you to execute the (?:configuration|tokenizer|modeling) file in that repo|"
        r"contains custom code which must be executed|set `trust_remote_code=True`"
    )),
    # model_executor/models/registry.py: "Model architectures {archs} are not supported for now."
    ("unsupported_arch", _p(r"Model architectures? (?P<archs>\[[^\]]*\]) (?:are|is) not supported for now")),
    ("unsupported_arch", _p(r"Cannot find model module\. '(?P<arch>\w+)' is not a registered model")),
    # uvicorn / asyncio: "[Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already in use"
    ("port_in_use", _p(r"\[Errno (?:98|48|10048)\] error while attempting to bind on address \('(?P<host>[^']*)', (?P<port>\d+)\)")),
    ("port_in_use", _p(r"OSError: \[Errno 98\] Address already in use|Address already in use")),
    # chat template (transformers >= 4.44): vLLM returns HTTP 400 with this text
    ("chat_template_missing", _p(r"default chat template is no longer allowed|must provide a chat template if the tokenizer does not define one|Cannot use chat template functions because tokenizer\.chat_template is not set")),
    # config/model.py: "Default vLLM sampling parameters have been overridden by %s: `%s`. ... `--generation-config vllm`."
    # 0.7-0.10: "Default sampling parameters have been overridden by the model's Hugging Face generation config ..."
    ("generation_config_override", _p(r"Default (?:vLLM )?sampling parameters have been overridden by (?P<src>[^:]+?)(?::\s*`(?P<params>\{.*?\})`)?\.(?:\s|$)")),
    ("generation_config_override", _p(r"Using default (?:chat )?sampling params from model: (?P<params>\{.*\})")),
    # NCCL / shared memory (issues vllm#1710, #6574, #18831, MiniMax-01#42)
    ("shm_error", _p(r"Error while (?:creating|attaching to) shared memory segment (?P<seg>/dev/shm/\S*)|ncclShmOpen|/dev/shm[^\n]*No space left on device|Bus error")),
    ("nccl_error", _p(r"NCCL error|ncclSystemError|ncclUnhandledCudaError|ncclInternalError|ncclInvalidUsage|DistBackendError|NCCL WARN")),
    # CUDA torch on a machine without an NVIDIA driver (e.g. AMD): torch "Found no NVIDIA driver on your system";
    # vLLM "Failed to infer device type" / "No platform detected, vLLM is running on UnspecifiedPlatform"
    ("no_nvidia_driver", _p(r"Found no NVIDIA driver on your system|libcuda\.so(?:\.1)?: cannot open shared object file|NVIDIA driver on your system is too old")),
    ("no_platform", _p(r"Failed to infer device type|No platform detected, vLLM is running on UnspecifiedPlatform")),
    ("amd_hint", _p(r"\b(?:amdgpu|ROCm|rocm|gfx9\d\d|gfx1\d{3}|MI300X?|MI250X?|MI325X|HIP_VISIBLE_DEVICES|Instinct)\b")),
    ("engine_failed", _p(r"Engine core initialization failed|EngineCore failed to start|RuntimeError: Engine process failed to start|EngineDeadError")),
    ("gpu_name", _p(r"^GPU \d+: (?P<name>(?:NVIDIA|AMD|Tesla|Quadro|GeForce|Radeon)[^(\n]*?)(?: \(UUID:.*)?$")),
    # exception summary lines: "ValueError: ...", "RuntimeError: ..."
    ("exception", _p(r"^(?:[\w.]+\.)?(?P<type>[A-Z]\w*(?:Error|Exception))(?::\s*(?P<msg>.*))?$")),
]

# A literal each pattern needs (any of): checked with `in` before the regex runs, which keeps
# long logs (100k+ lines of request logging) fast. Every kind in PATTERNS has an entry (tested).
NEEDLES: dict[str, tuple[str, ...]] = {
    "engine_config": ("LLM engine",),
    "server_version": ("server version",),
    "banner_version": ("version",),
    "non_default_args": ("non-default args",),
    "namespace_args": ("Namespace(",),
    "platform": ("detected platform",),
    "architecture": ("Resolved architecture",),
    "cpu_kv_set": ("for KV cache",),
    "ulimit_low": ("Found ulimit",),
    "using_max_model_len": ("Using max model len",),
    "auto_fit": ("Auto-fit",),
    "attention_backend": ("backend",),
    "weights_loaded": ("took",),
    "available_kv": ("Available KV cache memory",),
    "v0_memory_split": ("model weights take",),
    "v0_budget": ("total_gpu_memory (",),
    "v0_profile_results": ("Memory profiling results",),
    "memory_summary": ("on startup. Desired",),
    "kv_capacity": ("KV cache size",),
    "kv_tokens": ("KV cache size",),
    "max_concurrency": ("Maximum concurrency",),
    "gpu_blocks": ("blocks",),
    "graph_captured": ("Graph capturing",),
    "init_engine": ("init engine",),
    "cudagraphs_off": ("Cudagraph", "CUDA graph", "cudagraph"),
    "server_started": ("Application startup", "Uvicorn running", "Starting vLLM"),
    "listen": ("Starting vLLM", "Uvicorn running"),
    "kv_too_small": ("To serve at least one request",),
    "kv_too_small_v0": ("max seq len",),
    "no_kv_memory": ("No available memory for the cache blocks",),
    "insufficient_free": ("Free memory on device", "Available memory on node"),
    "oom": ("out of memory", "OutOfMemoryError"),
    "oom_other_process": ("memory in use",),
    "oom_load": ("Failed to load model",),
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
    "no_nvidia_driver": ("NVIDIA driver", "libcuda"),
    "no_platform": ("infer device type", "No platform detected"),
    "amd_hint": ("amdgpu", "ROCm", "rocm", "gfx", "MI3", "MI2", "HIP_VISIBLE", "Instinct"),
    "engine_failed": ("initialization failed", "failed to start", "EngineDeadError"),
    "gpu_name": ("GPU ",),
    "exception": ("Error", "Exception"),
}

# config-line keys we read (VllmConfig.__str__ in config/vllm.py; V0 LLMEngine.__init__ in engine/llm_engine.py)
_CONFIG_KEYS = (
    "model",
    "served_model_name",
    "dtype",
    "max_seq_len",
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "data_parallel_size",
    "quantization",
    "enforce_eager",
    "kv_cache_dtype",
    "trust_remote_code",
    "enable_prefix_caching",
    "device_config",
)


def _config_value(config: str, key: str) -> str | None:
    m = re.search(rf"(?:^|[\s,(]){re.escape(key)}=('(?:[^'\\]|\\.)*'|\"[^\"]*\"|[^,\s)]*)", config)
    if not m:
        return None
    value = m.group(1)
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    return value


def parse_config_line(config: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for key in _CONFIG_KEYS:
        value = _config_value(config, key)
        if value is not None and value not in ("...", ""):
            out[key] = value
    return out


def parse_python_dict(text: str) -> dict[str, Any]:
    """A dict repr as logged by vLLM ("non-default args: {...}"); tolerant of non-literal values."""
    try:
        value = ast.literal_eval(text)
        if isinstance(value, dict):
            return {str(k): v for k, v in value.items()}
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    out: dict[str, Any] = {}
    for m in re.finditer(r"'(\w+)':\s*('(?:[^'\\]|\\.)*'|[\w.+\-]+)", text):
        raw = m.group(2)
        try:
            out[m.group(1)] = ast.literal_eval(raw)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            out[m.group(1)] = raw
    return out


def _dtype_name(value: str | None) -> str | None:
    if not value:
        return None
    return value.removeprefix("torch.")


def _none_if_null(value: str | None) -> str | None:
    if value is None or value in ("None", "null", "auto?"):
        return None
    return value


# --- event extraction --------------------------------------------------------------------------


def extract_events(text: str) -> list[LogEvent]:
    events: list[LogEvent] = []
    for line in iter_lines(text):
        msg = line.message
        if len(msg) > 20000:  # pathological lines: only look at the head
            msg = msg[:20000]
        seen: set[str] = set()
        for kind, rx in PATTERNS:
            if kind in seen:
                continue
            needles = NEEDLES.get(kind)
            if needles is not None and not any(n in msg for n in needles):
                continue
            m = rx.search(msg)
            if not m:
                continue
            seen.add(kind)
            values = {k: v for k, v in m.groupdict().items() if v is not None}
            events.append(LogEvent(kind=kind, line=line.number, text=msg[:2000], values=values))
    return events


# --- facts from events -------------------------------------------------------------------------

_Setter = Callable[[LogFacts, LogEvent], None]


def _engine_config(f: LogFacts, e: LogEvent) -> None:
    """The engine-config line holds the resolved values: they override what the argument lines said
    (e.g. dtype 'auto' in the args becomes torch.bfloat16 here)."""
    v = e.values
    f.vllm_version = f.vllm_version or v.get("version")
    engine = v.get("engine")
    f.engine = f.engine or (engine if engine in ("V0", "V1") else "V0")  # "Initializing an LLM engine" = V0
    cfg = parse_config_line(v.get("config", ""))
    f.model = cfg.get("model") or f.model
    f.served_model_name = _none_if_null(cfg.get("served_model_name")) or f.served_model_name
    f.dtype = _dtype_name(cfg.get("dtype")) or f.dtype
    f.max_model_len = to_int(cfg.get("max_seq_len")) or f.max_model_len
    f.tensor_parallel_size = to_int(cfg.get("tensor_parallel_size")) or f.tensor_parallel_size
    f.pipeline_parallel_size = to_int(cfg.get("pipeline_parallel_size")) or f.pipeline_parallel_size
    f.data_parallel_size = to_int(cfg.get("data_parallel_size")) or f.data_parallel_size
    if "quantization" in cfg:
        f.quantization = _none_if_null(cfg["quantization"])
    f.kv_cache_dtype = _none_if_null(cfg.get("kv_cache_dtype")) or f.kv_cache_dtype
    for field in ("enforce_eager", "trust_remote_code", "enable_prefix_caching"):
        value = to_bool(cfg.get(field))
        if value is not None:
            setattr(f, field, value)
    device = cfg.get("device_config")
    if device and not f.platform:
        f.platform = device.split(":")[0]


_ARG_FIELDS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "max_model_len": ("max_model_len", int),
    "tensor_parallel_size": ("tensor_parallel_size", int),
    "pipeline_parallel_size": ("pipeline_parallel_size", int),
    "data_parallel_size": ("data_parallel_size", int),
    "gpu_memory_utilization": ("gpu_memory_utilization", float),
    "kv_cache_memory_bytes": ("kv_cache_memory_bytes_requested", int),
    "max_num_seqs": ("max_num_seqs", int),
    "max_num_batched_tokens": ("max_num_batched_tokens", int),
    "block_size": ("block_size", int),
    "port": ("port", int),
    "dtype": ("dtype", str),
    "quantization": ("quantization", str),
    "kv_cache_dtype": ("kv_cache_dtype", str),
    "enforce_eager": ("enforce_eager", bool),
    "trust_remote_code": ("trust_remote_code", bool),
    "enable_prefix_caching": ("enable_prefix_caching", bool),
}


def _non_default_args(f: LogFacts, e: LogEvent) -> None:
    args = parse_python_dict(e.values.get("args", ""))
    f.non_default_args.update(args)
    _apply_args(f, args)


def _apply_args(f: LogFacts, args: dict[str, Any]) -> None:
    for key, (field, conv) in _ARG_FIELDS.items():
        if key not in args or args[key] is None:
            continue
        try:
            value = conv(args[key])
        except (TypeError, ValueError, OverflowError):
            continue
        if getattr(f, field) is None:
            setattr(f, field, value)
    model = args.get("model") or args.get("model_tag")
    if isinstance(model, str) and not f.model:
        f.model = model


def parse_namespace(text: str) -> dict[str, Any]:
    """The argparse Namespace repr of old api_server logs -> the keys we know (values that are not None)."""
    out: dict[str, Any] = {}
    for key in (*_ARG_FIELDS, "model"):
        raw = _config_value(text, key)
        if raw is None or raw == "None":
            continue
        try:
            out[key] = ast.literal_eval(raw)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            out[key] = raw
    return out


def _namespace_args(f: LogFacts, e: LogEvent) -> None:
    args = parse_namespace(e.values.get("ns", ""))
    _apply_args(f, args)


def _weights(f: LogFacts, e: LogEvent) -> None:
    f.weights_bytes = gib_to_bytes(e.values.get("gib"))
    f.weights_load_seconds = to_float(e.values.get("secs")) or f.weights_load_seconds


def _available_kv(f: LogFacts, e: LogEvent) -> None:
    f.available_kv_bytes = gib_to_bytes(e.values.get("gib"))


def _v0_split(f: LogFacts, e: LogEvent) -> None:
    v = e.values
    f.weights_bytes = f.weights_bytes or gib_to_bytes(v.get("weights"))
    f.non_torch_bytes = gib_to_bytes(v.get("non_torch"))
    f.peak_activation_bytes = gib_to_bytes(v.get("peak"))
    f.available_kv_bytes = gib_to_bytes(v.get("kv"))
    f.engine = f.engine or "V0"


def _v0_budget(f: LogFacts, e: LogEvent) -> None:
    f.gpu_total_bytes = gib_to_bytes(e.values.get("total"))
    f.gpu_memory_utilization = to_float(e.values.get("util"))


def _v0_profile(f: LogFacts, e: LogEvent) -> None:
    v = e.values
    f.gpu_total_bytes = gib_to_bytes(v.get("total"))
    f.non_torch_bytes = gib_to_bytes(v.get("non_torch"))
    f.available_kv_bytes = gib_to_bytes(v.get("kv"))
    f.gpu_memory_utilization = to_float(v.get("util"))
    f.engine = f.engine or "V0"


def _memory_summary(f: LogFacts, e: LogEvent) -> None:
    v = e.values
    f.gpu_free_bytes_at_start = gib_to_bytes(v.get("free"))
    f.gpu_total_bytes = gib_to_bytes(v.get("total"))
    f.gpu_memory_utilization = to_float(v.get("util")) or f.gpu_memory_utilization
    f.peak_activation_bytes = gib_to_bytes(v.get("peak"))
    f.graph_memory_bytes = f.graph_memory_bytes if f.graph_memory_bytes is not None else gib_to_bytes(v.get("graphs"))


def _kv_capacity(f: LogFacts, e: LogEvent) -> None:
    v = e.values
    f.kv_pool = v.get("pool", "").split(" ")[0] or f.kv_pool
    f.kv_cache_tokens = to_int(v.get("tokens"))
    if "per_req" in v:
        f.concurrency_tokens_per_request = to_int(v.get("per_req"))
        f.max_concurrency = to_float(v.get("x"))
        f.max_model_len = f.max_model_len or f.concurrency_tokens_per_request


def _max_concurrency(f: LogFacts, e: LogEvent) -> None:
    f.concurrency_tokens_per_request = to_int(e.values.get("per_req"))
    f.max_concurrency = to_float(e.values.get("x"))
    f.max_model_len = f.max_model_len or f.concurrency_tokens_per_request


def _graphs(f: LogFacts, e: LogEvent) -> None:
    f.graph_capture_seconds = to_float(e.values.get("secs"))
    if "gib" in e.values:
        f.graph_memory_bytes = gib_to_bytes(e.values.get("gib"))


def _kv_too_small(f: LogFacts, e: LogEvent) -> None:
    v = e.values
    f.max_model_len = to_int(v.get("len")) or f.max_model_len
    f.kv_needed_bytes = gib_to_bytes(v.get("needed"))
    f.available_kv_bytes = f.available_kv_bytes if f.available_kv_bytes is not None else gib_to_bytes(v.get("avail"))
    f.estimated_max_model_len = to_int(v.get("est"))


def _kv_too_small_v0(f: LogFacts, e: LogEvent) -> None:
    f.max_model_len = to_int(e.values.get("len")) or f.max_model_len
    f.v0_max_kv_tokens = to_int(e.values.get("tokens"))


def _insufficient_free(f: LogFacts, e: LogEvent) -> None:
    v = e.values
    if "node" in v:  # CPU backend: host memory, not a GPU
        f.platform = f.platform or "cpu"
        f.gpu_memory_utilization = to_float(v.get("util")) or f.gpu_memory_utilization
        return
    f.gpu_free_bytes_at_start = gib_to_bytes(v.get("free"))
    f.gpu_total_bytes = gib_to_bytes(v.get("total"))
    f.gpu_memory_utilization = to_float(v.get("util")) or f.gpu_memory_utilization


def _oom(f: LogFacts, e: LogEvent) -> None:
    if "total" in e.values and f.gpu_total_bytes is None:
        f.gpu_total_bytes = size_to_bytes(e.values.get("total"), e.values.get("tunit"))


def _gen_override(f: LogFacts, e: LogEvent) -> None:
    params = e.values.get("params")
    f.generation_config_overrides = parse_python_dict(params) if params else (f.generation_config_overrides or {})


_GENERIC_ERRORS = re.compile(r"Engine core initialization failed|Engine process failed to start|EngineDeadError|SystemExit")


def _exception(f: LogFacts, e: LogEvent) -> None:
    """Keep the first specific exception: later ones are usually the engine-died wrappers."""
    msg = e.values.get("msg")
    etype = e.values.get("type", "")
    text = f"{etype}: {msg}" if msg else etype
    if f.last_error is None or (_GENERIC_ERRORS.search(f.last_error) and not _GENERIC_ERRORS.search(text)):
        f.last_error = text[:1000]


def _cpu_kv(f: LogFacts, e: LogEvent) -> None:
    if f.available_kv_bytes is None:
        f.available_kv_bytes = gib_to_bytes(e.values.get("gib"))


def _set(field: str, key: str, conv: Callable[[str | None], Any]) -> _Setter:
    def setter(f: LogFacts, e: LogEvent) -> None:
        value = conv(e.values.get(key))
        if value is not None:
            setattr(f, field, value)

    return setter


def _first(field: str, key: str, conv: Callable[[str | None], Any]) -> _Setter:
    def setter(f: LogFacts, e: LogEvent) -> None:
        if getattr(f, field) is None:
            value = conv(e.values.get(key))
            if value is not None:
                setattr(f, field, value)

    return setter


def _flag(field: str) -> _Setter:
    def setter(f: LogFacts, e: LogEvent) -> None:
        setattr(f, field, True)

    return setter


def _cudagraphs_off(f: LogFacts, e: LogEvent) -> None:
    if f.enforce_eager is None:
        f.enforce_eager = True


def _identity(s: str | None) -> str | None:
    return s.strip() if s else None


SETTERS: dict[str, _Setter] = {
    "engine_config": _engine_config,
    "server_version": _first("vllm_version", "version", _identity),
    "banner_version": _first("vllm_version", "version", _identity),
    "non_default_args": _non_default_args,
    "namespace_args": _namespace_args,
    "platform": _first("platform", "platform", lambda s: s.lower() if s else None),
    "using_max_model_len": _first("max_model_len", "len", to_int),
    "auto_fit": _set("auto_fit_max_model_len", "to", to_int),
    "attention_backend": _first("attention_backend", "backend", _identity),
    "weights_loaded": _weights,
    "available_kv": _available_kv,
    "v0_memory_split": _v0_split,
    "v0_budget": _v0_budget,
    "v0_profile_results": _v0_profile,
    "memory_summary": _memory_summary,
    "kv_capacity": _kv_capacity,
    "kv_tokens": _kv_capacity,
    "max_concurrency": _max_concurrency,
    "gpu_blocks": _set("num_gpu_blocks", "blocks", to_int),
    "graph_captured": _graphs,
    "init_engine": _set("init_engine_seconds", "secs", to_float),
    "server_started": _flag("server_started"),
    "listen": _first("port", "port", to_int),
    "kv_too_small": _kv_too_small,
    "kv_too_small_v0": _kv_too_small_v0,
    "insufficient_free": _insufficient_free,
    "oom": _oom,
    "generation_config_override": _gen_override,
    "engine_failed": _flag("engine_failed"),
    "gpu_name": _first("gpu_name", "name", _identity),
    "exception": _exception,
    "architecture": _first("architecture", "arch", _identity),
    "cpu_kv_set": _cpu_kv,
    "cudagraphs_off": _cudagraphs_off,
}


def facts_from_events(events: list[LogEvent]) -> LogFacts:
    facts = LogFacts()
    for event in events:
        setter = SETTERS.get(event.kind)
        if setter is None:
            continue
        try:
            setter(facts, event)
        except (ValueError, TypeError, AttributeError, OverflowError):
            continue  # a malformed value never breaks the rest of the log
    if facts.kv_cache_memory_bytes_requested is not None:
        # --kv-cache-memory-bytes is used as is, without profiling (v1/worker/gpu_worker.py
        # determine_available_memory; reference §1), and it is exact where the log's GiB are rounded.
        facts.available_kv_bytes = facts.kv_cache_memory_bytes_requested
    if facts.engine is None and facts.vllm_version is not None:
        facts.engine = _engine_from_version(facts.vllm_version)
    if facts.engine is None and facts.kv_pool is not None:
        facts.engine = "V1"
    return facts


def _engine_from_version(version: str) -> Literal["V0", "V1"] | None:
    """V1 is the default engine from 0.8.0 and the only one from 0.11.0 (seed 000; vLLM release notes)."""
    m = re.match(r"(\d+)\.(\d+)", version)
    if not m:
        return None
    major, minor = int(m.group(1)), int(m.group(2))
    if major > 0 or minor >= 11:
        return "V1"
    return None


def parse_events(text: str) -> ParsedLog:
    events = extract_events(text)
    return ParsedLog(facts=facts_from_events(events), events=events)


def parse_log(text: str) -> LogFacts:
    """Log text -> facts (what `check-log` reuses). Never raises on any input text."""
    return parse_events(text).facts
