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
    """The first `vllm serve ...` line's model and flags; where there is none, a command written as a list —
    JSON / docker-compose (`["vllm", "serve", "MODEL", "--tensor-parallel-size", "4"]`, `"--max-model-len=1000",`)
    or Kubernetes args (`- --tensor-parallel-size=2`, `- "4"` after a flag)."""
    out = CommandLine()
    for line in text.splitlines():
        m = COMMAND_RE.search(line.strip())
        if not m:
            continue
        try:
            tokens = shlex.split(m.group("rest"), comments=False)
        except ValueError:
            tokens = m.group("rest").split()
        _read_tokens(tokens, out, positional_model=True)
        if out.model or out.flags:
            return out
    for tokens in _argv_lists(text):
        _read_tokens(tokens, out, positional_model=False)
        if out.model or out.flags:
            break
    return out


_QUOTED_ITEM_RE = re.compile(r'"([^"\n]*)"')
_YAML_ITEM_RE = re.compile(r"^\s*-\s+[\"']?([^\"'\s]+)[\"']?\s*$")


def _argv_lists(text: str) -> list[list[str]]:
    """Commands written as lists: a line of quoted items with a `--flag` among them, or YAML items that are flags
    or the value after a flag. The item after "serve" is the model."""
    lists: list[list[str]] = []
    for line in text.splitlines():
        items = _QUOTED_ITEM_RE.findall(line)
        if any(item.startswith("--") for item in items):
            after = items.index("serve") + 1 if "serve" in items[:-1] else None
            if after is not None and not items[after].startswith("-"):
                items.insert(after, "--model")
            lists.append(items)
    yaml: list[str] = []
    wants_value = False
    for line in text.splitlines():
        m = _YAML_ITEM_RE.match(line)
        item = m.group(1) if m else None
        if item is not None and (item.startswith("--") or wants_value):
            yaml.append(item)
            wants_value = item.startswith("--") and "=" not in item
        else:
            wants_value = False
    if yaml:
        lists.append(yaml)
    return lists


def _read_tokens(tokens: list[str], out: CommandLine, *, positional_model: bool) -> None:
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
            if positional_model and out.model is None and tok not in ("\\",) and not re.fullmatch(r"[\d.]+", tok):
                out.model = tok
            i += 1
