"""Value conversions for log text (never raise) and the structured parts of vLLM's lines: the engine
config line (VllmConfig.__str__ in vllm/config/vllm.py; V0 LLMEngine.__init__ in engine/llm_engine.py),
the "non-default args: {...}" dict repr (vllm/entrypoints/utils.py log_non_default_args) and the
argparse Namespace repr of old api_server logs.

GiB values are printed by vLLM's format_gib (2 decimals), so byte values derived from them carry that
rounding (+-5 MiB).
"""

from __future__ import annotations

import ast
import re
from typing import Any

from vllmkit.units import GIB, MIB

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


# config-line keys we read (VllmConfig.__str__ in config/vllm.py; V0 LLMEngine.__init__ in engine/llm_engine.py)
CONFIG_KEYS = (
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


def config_value(config: str, key: str) -> str | None:
    m = re.search(rf"(?:^|[\s,(]){re.escape(key)}=('(?:[^'\\]|\\.)*'|\"[^\"]*\"|[^,\s)]*)", config)
    if not m:
        return None
    value = m.group(1)
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    return value


def parse_config_line(config: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for key in CONFIG_KEYS:
        value = config_value(config, key)
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


def dtype_name(value: str | None) -> str | None:
    if not value:
        return None
    return value.removeprefix("torch.")


def none_if_null(value: str | None) -> str | None:
    if value is None or value in ("None", "null", "auto?"):
        return None
    return value
