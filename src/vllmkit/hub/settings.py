"""Hub settings, read from an environment mapping when a command runs (never at import time).

Variables honoured, with the meaning their own ecosystems give them:
- Hugging Face (huggingface_hub/constants.py): HF_ENDPOINT, HF_TOKEN / HUGGING_FACE_HUB_TOKEN
  (else the token file HF_TOKEN_PATH or $HF_HOME/token), HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE,
  HF_HOME (default $XDG_CACHE_HOME/huggingface), HF_HUB_CACHE / HUGGINGFACE_HUB_CACHE.
- ModelScope (modelscope_hub/config.py): MODELSCOPE_ENDPOINT (MODELSCOPE_DOMAIN deprecated),
  MODELSCOPE_API_TOKEN, MODELSCOPE_CACHE (default ~/.cache/modelscope).
- vLLM (vllm/envs.py, 0.32): VLLM_USE_MODELSCOPE, true when "1" or "true" (case-insensitive).
- vllmkit: VLLMKIT_CACHE_DIR (default $XDG_CACHE_HOME/vllmkit), VLLMKIT_HUB_TIMEOUT (seconds to
  connect and for each read, default 10), VLLMKIT_HUB_DEADLINE (seconds for one whole request,
  headers to last byte, default 3 x the timeout; a trickling hub fails then and is not retried),
  VLLMKIT_HUB_RETRIES (retries after the first try, default 2), VLLMKIT_HUB_BACKOFF (first retry
  wait in seconds, doubled each retry, default 0.5). See docs/limits.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from vllmkit.dirs import user_dir

HF_DEFAULT_ENDPOINT = "https://huggingface.co"
MS_DEFAULT_ENDPOINT = "https://www.modelscope.cn"


def env_true(value: str | None) -> bool:
    """huggingface_hub.constants._is_true: 1/ON/YES/TRUE, case-insensitive."""
    return (value or "").strip().upper() in {"1", "ON", "YES", "TRUE"}


def vllm_use_modelscope(env: Mapping[str, str]) -> bool:
    # vllm/envs.py (0.32): os.environ.get("VLLM_USE_MODELSCOPE", "False").strip().lower() in ("1", "true")
    return env.get("VLLM_USE_MODELSCOPE", "False").strip().lower() in ("1", "true")


def _home(env: Mapping[str, str]) -> Path:
    return Path(env["HOME"]) if env.get("HOME") else Path.home()


def _expand(value: str, env: Mapping[str, str]) -> Path:
    if value.startswith("~"):
        return _home(env) / value[1:].lstrip("/")
    return Path(value)


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    try:
        value = float(env.get(name, ""))
    except ValueError:
        return default
    return value if value >= 0 else default


def _read_token_file(path: Path) -> str | None:
    try:
        token = path.read_text().strip()
    except OSError:
        return None
    return token or None


@dataclass(frozen=True)
class HubSettings:
    hf_endpoint: str
    hf_token: str | None
    hf_token_origin: str | None  # which variable/file the token came from, for messages
    hf_offline: bool
    hf_home: Path
    hf_hub_cache: Path
    ms_endpoint: str
    ms_token: str | None
    ms_cache: Path
    use_modelscope: bool
    cache_dir: Path  # vllmkit's own metadata cache
    timeout_s: float
    retries: int
    backoff_s: float
    deadline_s: float = 30.0  # one whole request; see the module docstring

    def deadline(self) -> float:
        """The monotonic instant by which a request started now must be complete."""
        import time

        return time.monotonic() + self.deadline_s

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, cache_dir: Path | None = None) -> HubSettings:
        env = os.environ if env is None else env
        home = _home(env)
        xdg_cache = _expand(env["XDG_CACHE_HOME"], env) if env.get("XDG_CACHE_HOME") else home / ".cache"
        hf_home = _expand(env["HF_HOME"], env) if env.get("HF_HOME") else xdg_cache / "huggingface"
        hub_cache_env = env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE")
        hf_hub_cache = _expand(hub_cache_env, env) if hub_cache_env else hf_home / "hub"

        token, origin = None, None
        for var in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
            if env.get(var, "").strip():
                token, origin = env[var].strip(), var
                break
        if token is None:
            token_path = _expand(env["HF_TOKEN_PATH"], env) if env.get("HF_TOKEN_PATH") else hf_home / "token"
            token = _read_token_file(token_path)
            origin = str(token_path) if token else None

        ms_endpoint = (env.get("MODELSCOPE_ENDPOINT") or env.get("MODELSCOPE_DOMAIN") or MS_DEFAULT_ENDPOINT).strip()
        if not ms_endpoint.lower().startswith(("http://", "https://")):
            ms_endpoint = "https://" + ms_endpoint
        ms_cache = _expand(env["MODELSCOPE_CACHE"], env) if env.get("MODELSCOPE_CACHE") else xdg_cache / "modelscope"

        if cache_dir is None:
            cache_dir = user_dir("cache", env)
        timeout_s = min(_float(env, "VLLMKIT_HUB_TIMEOUT", 10.0) or 10.0, 3600.0)
        return cls(
            hf_endpoint=(env.get("HF_ENDPOINT") or HF_DEFAULT_ENDPOINT).strip().rstrip("/"),
            hf_token=token,
            hf_token_origin=origin,
            hf_offline=env_true(env.get("HF_HUB_OFFLINE")) or env_true(env.get("TRANSFORMERS_OFFLINE")),
            hf_home=hf_home,
            hf_hub_cache=hf_hub_cache,
            ms_endpoint=ms_endpoint.rstrip("/"),
            ms_token=(env.get("MODELSCOPE_API_TOKEN") or "").strip() or None,
            ms_cache=ms_cache,
            use_modelscope=vllm_use_modelscope(env),
            cache_dir=cache_dir,
            timeout_s=timeout_s,
            deadline_s=_float(env, "VLLMKIT_HUB_DEADLINE", 3 * timeout_s) or 3 * timeout_s,
            retries=min(int(_float(env, "VLLMKIT_HUB_RETRIES", 2)), 10),
            backoff_s=min(_float(env, "VLLMKIT_HUB_BACKOFF", 0.5), 60.0),
        )
