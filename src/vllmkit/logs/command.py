"""A `vllm serve ...` command quoted in a log (a launch script, an issue, a README): its model and the
flags the planner needs. Fills gaps only; the engine's own lines win over it.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from pydantic import BaseModel, Field

# a command line quoted in the log / issue: "vllm serve MODEL --flag ..." or "... api_server --model MODEL ..."
COMMAND_RE = re.compile(r"(?:^|[\s$#>])(?:vllm serve|vllm\.entrypoints\.openai\.api_server|-m vllm\.entrypoints\.\S+)\s+(?P<rest>.+)$")


class CommandLine(BaseModel):
    """Flags from a `vllm serve ...` line quoted in the log (fills gaps only; the engine's own lines win)."""

    model: str | None = None
    flags: dict[str, Any] = Field(default_factory=dict)


_FLAG_NAMES = {
    "tensor-parallel-size": ("tensor_parallel_size", int), "tp": ("tensor_parallel_size", int),
    "pipeline-parallel-size": ("pipeline_parallel_size", int), "pp": ("pipeline_parallel_size", int),
    "max-model-len": ("max_model_len", str), "gpu-memory-utilization": ("gpu_memory_utilization", float),
    "kv-cache-dtype": ("kv_cache_dtype", str), "quantization": ("quantization", str), "q": ("quantization", str),
    "dtype": ("dtype", str), "max-num-batched-tokens": ("max_num_batched_tokens", int),
    "max-num-seqs": ("max_num_seqs", int), "block-size": ("block_size", int),
    "kv-cache-memory-bytes": ("kv_cache_memory_bytes", str), "kv-cache-memory": ("kv_cache_memory_bytes", str),
    "enforce-eager": ("enforce_eager", bool), "model": ("model", str),
}


def parse_command(text: str) -> CommandLine:
    out = CommandLine()
    for line in text.splitlines():
        m = COMMAND_RE.search(line.strip())
        if not m:
            continue
        try:
            tokens = shlex.split(m.group("rest"), comments=False)
        except ValueError:
            tokens = m.group("rest").split()
        i = 0
        while i < len(tokens):
            tok = tokens[i]
            if tok.startswith("-"):
                name, _, inline = tok.lstrip("-").partition("=")
                key = _FLAG_NAMES.get(name.replace("_", "-"))
                if key is None:
                    i += 1
                    continue
                field, conv = key
                if conv is bool:
                    out.flags.setdefault(field, True)
                    i += 1
                    continue
                value = inline if inline else (tokens[i + 1] if i + 1 < len(tokens) else None)
                i += 1 if inline else 2
                if value is None:
                    continue
                try:
                    converted = conv(value)
                except ValueError:
                    continue
                if field == "model":
                    out.model = out.model or str(converted)
                else:
                    out.flags.setdefault(field, converted)
            else:
                # the positional model (vllm serve MODEL); bare numbers are values of flags we skip
                if out.model is None and tok not in ("\\",) and not re.fullmatch(r"[\d.]+", tok):
                    out.model = tok
                i += 1
        if out.model or out.flags:
            break
    return out
