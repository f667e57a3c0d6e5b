"""The `vllm serve` command for a plan: argv + environment. Pure: no files, no clock, no env reads.

Rules (issue "vllmkit serve and vllmkit smoke", item 1):
- the model is the local folder for local models, else the hub id (+ --revision when pinned);
- --served-model-name when it differs from what vLLM would report (a local folder's basename);
- --host/--port always (vLLM's own default host binds every interface);
- --tensor/--pipeline-parallel-size when > 1; --distributed-executor-backend ray across nodes;
- --max-model-len, --max-num-seqs, --max-num-batched-tokens always (the plan's activation and
  sampler terms were computed for exactly these), --gpu-memory-utilization on GPUs unless
  --kv-cache-memory-bytes is set (vLLM then skips the utilization budget, v1/worker/gpu_worker.py);
- --kv-cache-dtype when not auto; --dtype / --quantization only when they differ from what the
  checkpoint declares (vLLM reads those from config.json itself);
- --trust-remote-code only when config.json has auto_map;
- --enable-auto-tool-choice --tool-call-parser X / --reasoning-parser Y from the plan's features
  block (model-family presets, launch/presets.py) unless --no-tools / --no-reasoning;
- --api-key: the real key in `argv`, `***` in `redacted_argv` (the supervisor moves it to the
  child's VLLM_API_KEY environment so it never shows in `ps`);
- env: VLLM_USE_MODELSCOPE=True for ModelScope models, VLLM_ROCM_USE_AITER=1 on MI300-class GPUs,
  device visibility (CUDA_VISIBLE_DEVICES, or HIP_VISIBLE_DEVICES on ROCm).
"""

from __future__ import annotations

import ipaddress
import re
import shlex
from pathlib import PurePath

from pydantic import BaseModel, Field

from vllmkit.engine.flags import Flag, KnownFlags, check_flags
from vllmkit.engine.launcher import uses_positional_model
from vllmkit.launch.presets import feature_flags, plan_features
from vllmkit.plan.models import PlanRequest, PlanResult

REDACTED = "***"
SECRET_FLAGS = ("--api-key", "--hf-token")
SECRET_ENV = ("VLLM_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "MODELSCOPE_API_TOKEN")
DEFAULT_LAUNCHER = ("vllm", "serve")

# AITER kernels target gfx942 (MI300X/MI300A/MI308X/MI325X) and gfx950 (MI350X/MI355X); vLLM keeps
# them off unless VLLM_ROCM_USE_AITER=1 (vllm/envs.py, "VLLM_ROCM_USE_AITER", default False).
_AITER_GPUS = ("mi300", "mi308", "mi325", "mi350", "mi355")

_DTYPE_ALIASES = {
    "bf16": "bfloat16",
    "fp16": "float16",
    "half": "float16",
    "float": "float32",
    "fp32": "float32",
}


class ServeEndpoint(BaseModel):
    """How one `vllm serve` is reached and named: serving concerns, not planning inputs (a
    PlanRequest holds only what changes the plan's numbers, so a saved plan serves anywhere)."""

    host: str = "127.0.0.1"
    port: int = 8000
    api_key: str | None = None  # never serialised in clear: the command redacts it, runs store a key file
    served_model_name: str | None = None
    generation_config_vllm: bool = False  # --generation-config vllm (drop the model's sampling defaults)


class ServeCommand(BaseModel):
    argv: list[str]
    env: dict[str, str] = Field(default_factory=dict)
    redacted_argv: list[str]
    redacted_env: dict[str, str] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)

    def shell(self, *, multiline: bool = True) -> str:
        """The redacted command as a copy-paste shell line (env assignments first)."""
        return format_shell(self.redacted_argv, self.redacted_env, multiline=multiline)


_HOSTNAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$")
MAX_HEALTH_TIMEOUT_S = 7 * 86_400.0


def check_serve_flags(host: str | None, port: int | None, health_timeout_s: float | None) -> None:
    """UsageError (exit 2) for a bind address, port or health timeout vLLM / the OS would refuse
    (uvicorn binds host:port; a port is 1-65535, a host an IP address or an RFC 1123 name)."""
    from vllmkit.errors import UsageError

    if port is not None and not 1 <= port <= 65535:
        raise UsageError(f"--port {port} is not a TCP port", "use a port from 1 to 65535 (default 8000)", code="bad-port")
    if host is not None:
        try:
            ipaddress.ip_address(host.strip("[]"))
        except ValueError:
            if not _HOSTNAME.match(host):
                raise UsageError(f"--host {host!r} is neither an IP address nor a host name",
                                 "use an address to bind, e.g. 127.0.0.1 or 0.0.0.0", code="bad-host") from None
    if health_timeout_s is not None and not 0 < health_timeout_s <= MAX_HEALTH_TIMEOUT_S:  # NaN fails too
        raise UsageError(f"--health-timeout {health_timeout_s} is not a positive number of seconds",
                         "e.g. --health-timeout 600 (at most a week)", code="bad-health-timeout")


def is_loopback(host: str) -> bool:
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def normalize_dtype(dtype: str | None) -> str | None:
    if dtype is None:
        return None
    d = dtype.lower().replace("torch.", "")
    return _DTYPE_ALIASES.get(d, d)


def _quant_family(method: str | None) -> str | None:
    # vLLM upgrades awq -> awq_marlin and gptq -> gptq_marlin by itself when the GPU supports it
    # (model_executor/layers/quantization/*_marlin.py override_quantization_method).
    return None if method is None else method.lower().removesuffix("_marlin")


def model_ref(plan: PlanResult) -> str:
    """What vLLM is told to load: the local folder, else the hub id."""
    if plan.model.source == "local" and plan.model.path:
        return plan.model.path
    return plan.model.id


def served_model_name(plan: PlanResult, endpoint: ServeEndpoint | None = None) -> str:
    """The name clients use: explicit, else a local folder's basename, else the hub id."""
    if endpoint is not None and endpoint.served_model_name:
        return endpoint.served_model_name
    if plan.model.source == "local" and plan.model.path:
        return PurePath(plan.model.path).name or plan.model.path
    return plan.model.id


def is_aiter_gpu(plan: PlanResult) -> bool:
    name = (plan.gpu.name + " " + plan.gpu.display_name).lower().replace(" ", "").replace("-", "")
    return plan.device == "rocm" and any(tag in name for tag in _AITER_GPUS)


def serve_flags(
    plan: PlanResult,
    req: PlanRequest,
    endpoint: ServeEndpoint | None = None,
    *,
    host: str | None = None,
    port: int | None = None,
    include_api_key: bool = True,
    executor_backend: str | None = None,
) -> list[Flag]:
    """All `vllm serve` flags for the plan (not the model argument)."""
    s = plan.settings
    ep = endpoint or ServeEndpoint()
    flags: list[Flag] = []

    def add(name: str, value: object = None) -> None:
        flags.append(Flag(name=name, value=None if value is None else str(value)))

    revision = req.revision or plan.model.revision
    if revision and plan.model.source != "local" and revision != "main":
        add("--revision", revision)
    served = served_model_name(plan, ep)
    if served != model_ref(plan):
        add("--served-model-name", served)
    add("--host", host if host is not None else ep.host)
    add("--port", port if port is not None else ep.port)
    if plan.parallel.tensor_parallel_size > 1:
        add("--tensor-parallel-size", plan.parallel.tensor_parallel_size)
    if plan.parallel.pipeline_parallel_size > 1:
        add("--pipeline-parallel-size", plan.parallel.pipeline_parallel_size)
    backend = executor_backend or ("ray" if plan.parallel.nodes > 1 else None)
    if backend:
        add("--distributed-executor-backend", backend)
    add("--max-model-len", s.max_model_len)
    if s.kv_cache_memory_bytes is not None:
        add("--kv-cache-memory-bytes", s.kv_cache_memory_bytes)
    elif plan.device != "cpu" and not (s.extensible_kv_cache and req.gpu_memory_utilization is None):
        # (vLLM 0.34's extensible KV cache resolves an unset utilization to 1.0 and, where it falls back to the
        # profiling estimate at start, to 0.92: the line leaves it unset as the plan does)
        add("--gpu-memory-utilization", format(s.gpu_memory_utilization, "g"))
    add("--max-num-seqs", s.max_num_seqs)
    add("--max-num-batched-tokens", s.max_num_batched_tokens)
    if req.block_size is not None:
        add("--block-size", req.block_size)
    if s.kv_cache_dtype and s.kv_cache_dtype != "auto":
        add("--kv-cache-dtype", s.kv_cache_dtype)
    dtype = normalize_dtype(s.dtype)
    # float32 always goes on the line: vLLM's "auto" serves even a float32 checkpoint in 16-bit
    if dtype and dtype != "auto" and (dtype == normalize_dtype("float32") or dtype != normalize_dtype(plan.model.dtype)):
        add("--dtype", dtype)
    if s.quantization and _quant_family(s.quantization) != _quant_family(plan.model.quantization):
        add("--quantization", s.quantization)
        from vllmkit.engine.versions import rules_for

        if s.quantization == "bitsandbytes" and not rules_for(plan.vllm_version).bnb_load_format_auto:
            add("--load-format", "bitsandbytes")  # before 0.8.2 vLLM refuses the bitsandbytes method without it
    if plan.model.trust_remote_code:
        add("--trust-remote-code")
    if s.enforce_eager:
        add("--enforce-eager")
    if req.enable_prefix_caching is True:
        add("--enable-prefix-caching")
    elif req.enable_prefix_caching is False:
        add("--no-enable-prefix-caching")
    if ep.generation_config_vllm:
        add("--generation-config", "vllm")
    # serving features (issue 14): the model family's tool-call / reasoning parsers
    flags += feature_flags(plan, req)
    if include_api_key and ep.api_key:
        add("--api-key", ep.api_key)
    _feature_flags(req, add, plan.vllm_version)
    return flags


# what --language-model-only means to a release without the flag (engine/versions.py: from 0.17): every
# multimodal limit 0, which also leaves the tower out from 0.15
TEXT_ONLY_LIMITS = {"image": 0, "video": 0}


def text_only_fallback(req: PlanRequest, vllm_version: str | None) -> bool:
    """--language-model-only asked for a release that does not have the flag."""
    from vllmkit.engine.versions import rules_for

    return bool(req.language_model_only and vllm_version and not rules_for(vllm_version).language_model_only_flag)


def _feature_flags(req: PlanRequest, add, vllm_version: str | None = None) -> None:
    """issue 13: multimodal limits, LoRA, speculative decoding, data / expert parallel."""
    import json

    if text_only_fallback(req, vllm_version):
        add("--limit-mm-per-prompt", json.dumps({**(req.limit_mm_per_prompt or {}), **TEXT_ONLY_LIMITS},
                                                separators=(",", ":"), sort_keys=True))
    elif req.language_model_only:
        add("--language-model-only")
    elif req.limit_mm_per_prompt is not None:
        limits = {**req.limit_mm_per_prompt, **(req.limit_mm_options or {})}
        add("--limit-mm-per-prompt", json.dumps(limits, separators=(",", ":"), sort_keys=True))
    if req.enable_lora:
        add("--enable-lora")
        if req.max_loras is not None:
            add("--max-loras", req.max_loras)
        if req.max_lora_rank is not None:
            add("--max-lora-rank", req.max_lora_rank)
        if req.max_cpu_loras is not None:
            add("--max-cpu-loras", req.max_cpu_loras)
    if req.speculative_config:
        add("--speculative-config", json.dumps(req.speculative_config, separators=(",", ":"), sort_keys=True))
    if req.data_parallel_size and req.data_parallel_size > 1:
        add("--data-parallel-size", req.data_parallel_size)
    if req.enable_expert_parallel:
        add("--enable-expert-parallel")
    if req.mamba_ssm_cache_dtype is not None:
        add("--mamba-ssm-cache-dtype", req.mamba_ssm_cache_dtype)
    if req.cpu_offload_gb:
        add("--cpu-offload-gb", f"{req.cpu_offload_gb:g}")
    if req.enable_extensible_kv_cache is not None:
        add("--enable-extensible-kv-cache" if req.enable_extensible_kv_cache else "--no-enable-extensible-kv-cache")
    if req.async_scheduling is not None:
        add("--async-scheduling" if req.async_scheduling else "--no-async-scheduling")


def serve_env(plan: PlanResult, *, visible_devices: list[int] | None = None) -> dict[str, str]:
    env: dict[str, str] = {}
    if plan.model.source == "modelscope":
        # vllm/envs.py VLLM_USE_MODELSCOPE: load models (and tokenizers) from ModelScope, not HF.
        env["VLLM_USE_MODELSCOPE"] = "True"
    if is_aiter_gpu(plan):
        env["VLLM_ROCM_USE_AITER"] = "1"
    if visible_devices is not None:
        ids = ",".join(str(i) for i in visible_devices)
        if plan.device == "rocm":
            # HIP_VISIBLE_DEVICES is the ROCm spelling; vLLM's platforms/rocm.py raises when it
            # disagrees with an inherited CUDA_VISIBLE_DEVICES, so both are set to the same list.
            env["HIP_VISIBLE_DEVICES"] = ids
            env["CUDA_VISIBLE_DEVICES"] = ids
        elif plan.device == "cuda":
            env["CUDA_VISIBLE_DEVICES"] = ids
    return env


def parse_extra_args(tokens: list[str], known: KnownFlags | None) -> list[Flag]:
    """User pass-through args ("--foo", "bar", "--baz=1") -> flags. A token after a flag is its
    value when the parser says the flag takes one (or, unchecked, when it does not start with '-')."""
    out: list[Flag] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if not tok.startswith("-"):
            out.append(Flag(name=tok))  # stray positional: kept as is, check_flags will drop it
            i += 1
            continue
        if "=" in tok:
            name, value = tok.split("=", 1)
            out.append(Flag(name=name, value=value))
            i += 1
            continue
        takes = known.options.get(tok) if known is not None else None
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if nxt is not None and (takes is True or (takes is None and not nxt.startswith("-"))):
            out.append(Flag(name=tok, value=nxt))
            i += 2
        else:
            out.append(Flag(name=tok))
            i += 1
    return out


def build_serve_command(
    plan: PlanResult,
    req: PlanRequest,
    endpoint: ServeEndpoint | None = None,
    *,
    launcher: list[str] | None = None,
    known: KnownFlags | None = None,
    visible_devices: list[int] | None = None,
    extra_args: list[str] | None = None,
) -> ServeCommand:
    """argv + env that serve `plan`. `launcher` is the prefix (default `vllm serve`; the module form
    `python -m vllm.entrypoints.openai.api_server` takes the model as --model). With `known`, every
    flag is checked against the installed vLLM's parser (renamed / moved to env / dropped)."""
    prefix = list(launcher) if launcher else list(DEFAULT_LAUNCHER)
    flags = serve_flags(plan, req, endpoint) + parse_extra_args(extra_args or [], known)
    env = serve_env(plan, visible_devices=visible_devices)
    warnings: list[str] = []
    if known is not None:
        checked = check_flags(flags, known, device=plan.device)
        flags, warnings = checked.flags, checked.warnings
        env.update(checked.env)
    model = model_ref(plan)
    argv = prefix + ([model] if uses_positional_model(prefix) else ["--model", model])
    for flag in flags:
        argv += flag.argv()
    return ServeCommand(
        argv=argv,
        env=env,
        redacted_argv=redact_argv(argv),
        redacted_env=redact_env(env),
        warnings=warnings,
    )


def redact_argv(argv: list[str]) -> list[str]:
    """Secrets in argv -> ***, for `--api-key KEY` and `--api-key=KEY` forms."""
    out: list[str] = []
    hide_next = False
    for tok in argv:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        name, eq, _ = tok.partition("=")
        if name in SECRET_FLAGS:
            if eq:
                out.append(f"{name}={REDACTED}")
            else:
                out.append(tok)
                hide_next = True
            continue
        out.append(tok)
    return out


def redact_env(env: dict[str, str]) -> dict[str, str]:
    return {k: (REDACTED if k in SECRET_ENV and v else v) for k, v in env.items()}


def redact_text(text: str, secrets: list[str]) -> str:
    """Replace each secret value wherever it appears (log lines, error messages)."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    return text


# characters a terminal would act on (output.safe_text lists why); inside '...' a shell keeps them
# literally, but printing the line would send them to the terminal
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def shell_quote(token: str) -> str:
    """shlex.quote, except that a token holding control characters is written in bash's ANSI-C
    form ($'...' with \\xHH / \\uHHHH escapes): the same bytes reach the program, and none of them
    reaches the terminal the line is printed on. Our scripts and printed lines are bash."""
    if not _CONTROL.search(token):
        return shlex.quote(token)
    out = []
    for ch in token:
        code = ord(ch)
        if ch in ("\\", "'"):
            out.append("\\" + ch)
        elif _CONTROL.match(ch):
            out.append(f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}")
        else:
            out.append(ch)
    return "$'" + "".join(out) + "'"


def shell_join(argv: list[str]) -> str:
    return " ".join(shell_quote(tok) for tok in argv)


def format_shell(argv: list[str], env: dict[str, str] | None = None, *, multiline: bool = True) -> str:
    """`K=V ... prog args` quoted for bash (shell_quote); one flag per line when multiline."""
    head = [f"{k}={shell_quote(v)}" for k, v in (env or {}).items()]
    if not multiline:
        return " ".join([*head, shell_join(argv)])
    # first line: env + program up to the first flag
    first: list[str] = []
    i = 0
    while i < len(argv) and not argv[i].startswith("--"):
        first.append(shell_quote(argv[i]))
        i += 1
    lines = [" ".join([*head, *first])]
    while i < len(argv):
        part = [shell_quote(argv[i])]
        i += 1
        while i < len(argv) and not argv[i].startswith("--"):
            part.append(shell_quote(argv[i]))
            i += 1
        lines.append("  " + " ".join(part))
    return " \\\n".join(lines)


def secure_launch(cmd: ServeCommand) -> tuple[list[str], dict[str, str]]:
    """argv/env for actually starting the child: the API key moves from argv (world-readable in
    /proc/PID/cmdline) to VLLM_API_KEY, which vLLM reads when --api-key is absent
    (vllm/entrypoints/serve/middleware/register.py in 0.32)."""
    argv: list[str] = []
    env = dict(cmd.env)
    skip = False
    for i, tok in enumerate(cmd.argv):
        if skip:
            skip = False
            continue
        name, eq, value = tok.partition("=")
        if name == "--api-key":
            env["VLLM_API_KEY"] = value if eq else (cmd.argv[i + 1] if i + 1 < len(cmd.argv) else "")
            skip = not eq
            continue
        argv.append(tok)
    return argv, env


def attach_serve_command(plan: PlanResult, req: PlanRequest, endpoint: ServeEndpoint | None = None) -> PlanResult:
    """Fill the plan's `serve_command` / `serve_env` (the `vllm serve` line people copy, API key
    redacted). The planner does not build commands; launch does. The serving-features block
    (issue 14: model-family parsers, prefix caching, chunked prefill) is attached first: it
    decides the parser flags."""
    if plan.features is None:
        plan.features = plan_features(plan, req, generation_config_vllm=bool(endpoint and endpoint.generation_config_vllm))
        plan.warnings += [w for w in plan.features.warnings if w not in plan.warnings]
    cmd = build_serve_command(plan, req, endpoint)
    if text_only_fallback(req, plan.vllm_version):
        note = (f"vLLM {plan.vllm_version} has no --language-model-only (from 0.17): the serve line sets every "
                "multimodal limit to 0 instead")
        if note not in plan.warnings:
            plan.warnings.append(note)
    plan.serve_command = list(cmd.redacted_argv)
    plan.serve_env = dict(cmd.env)
    return plan
