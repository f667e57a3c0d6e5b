"""Hardware room: GPU profiles (profiles.py) and local GPU detection (detect.py)."""

from __future__ import annotations

from vllmkit.hardware.profiles import (
    DEFAULT_FOR_SHORT_NAME,
    PROFILES_DIR_ENV,
    GpuProfile,
    Interconnect,
    Supports,
    cpu_profile,
    custom_profile,
    load_profiles,
    normalize_gpu_name,
    parse_memory,
    profile_dirs_from_env,
    resolve_gpu,
    user_config_dir,
)

__all__ = [
    "DEFAULT_FOR_SHORT_NAME",
    "PROFILES_DIR_ENV",
    "GpuProfile",
    "Interconnect",
    "Supports",
    "cpu_profile",
    "custom_profile",
    "load_profiles",
    "normalize_gpu_name",
    "parse_memory",
    "profile_dirs_from_env",
    "resolve_gpu",
    "user_config_dir",
]
