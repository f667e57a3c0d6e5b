"""GPU profiles: what a GPU offers to vLLM, loaded from YAML, and name resolution.

Profiles ship in the top-level `profiles/gpus/*.yaml` (package data `vllmkit/profiles/gpus`).
Users add or override profiles with YAML files in their own folders (see `load_profiles`).

`memory_bytes` is the total memory *as torch reports it* (`torch.cuda.mem_get_info()[1]`,
which vLLM logs as `total_gpu_memory` / the `T` in "Free memory on device (F/T GiB)"). It is
smaller than the nominal size and than nvidia-smi's "Total": e.g. H100 SXM nvidia-smi says
81559 MiB but torch reports 81090 MiB (79.19 GiB) — the driver keeps the rest. Every profile
cites where its figure came from in `memory_source`.

This module reads files only when asked (no env access at import). Settings such as
`$VLLMKIT_PROFILES_DIR` are passed in by the caller; `profile_dirs_from_env` turns an
environment mapping into the folder list.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from vllmkit.dirs import user_dir
from vllmkit.errors import HardwareError, UsageError

Vendor = Literal["nvidia", "amd", "cpu"]
Runtime = Literal["cuda", "rocm", "cpu"]
Fp8Format = Literal["e4m3fn", "e4m3fnuz"]


#: Environment variable holding extra profile folders (os.pathsep-separated). Read by the
#: caller when a command starts, never here at import time.
PROFILES_DIR_ENV = "VLLMKIT_PROFILES_DIR"

_PACKAGE = "vllmkit"
_PACKAGED_FOLDER = ("profiles", "gpus")


USER_MEMORY_SOURCE = "user-supplied (--gpu-memory)"  # memory_source of a --gpu-memory profile


class Interconnect(BaseModel):
    """GPU-to-GPU link as the vendor quotes it (total bidirectional GB/s per GPU)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    bandwidth_gbps: float | None = Field(default=None, ge=0)


class Supports(BaseModel):
    """Precisions and kernels the GPU runs natively.

    - fp8: native FP8 tensor cores (NVIDIA sm >= 8.9, AMD gfx942+ and RDNA 4). vLLM can still load FP8
      checkpoints weight-only (Marlin W8A16) on older GPUs; that is not native FP8.
    - fp8_format: e4m3fn (NVIDIA, AMD gfx950/OCP) or e4m3fnuz (AMD gfx942: MI300X/MI325X);
      vLLM picks it in platforms/rocm.py `fp8_dtype()` ("gfx94" -> float8_e4m3fnuz).
    - int4_marlin: Marlin W4A16 kernels (awq_marlin / gptq_marlin) — CUDA sm >= 8.0.
    - fp4: native 4-bit float (Blackwell nvfp4 / mxfp4, MI355X mxfp4).
    - quantization_methods: vLLM `--quantization` names known to run on this GPU.
    """

    model_config = ConfigDict(extra="forbid")

    bf16: bool
    fp16: bool = True
    fp8: bool
    fp8_format: Fp8Format | None = None
    int8: bool = False
    int4_marlin: bool = False
    fp4: bool = False
    fp4_formats: list[str] = Field(default_factory=list)
    quantization_methods: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _formats_follow_flags(self) -> Supports:
        if self.fp8 and self.fp8_format is None:
            raise ValueError("fp8_format is required when fp8 is true")
        if not self.fp8 and self.fp8_format is not None:
            raise ValueError("fp8_format must be null when fp8 is false")
        if self.fp4 and not self.fp4_formats:
            raise ValueError("fp4_formats is required when fp4 is true")
        return self


class GpuProfile(BaseModel):
    """One GPU model (or the host CPU) as seen by vLLM."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$", description="slug, e.g. h100-sxm")
    display_name: str
    product_names: list[str] = Field(
        default_factory=list, description="exact nvidia-smi / rocm-smi / torch device names"
    )
    aliases: list[str] = Field(default_factory=list)
    vendor: Vendor
    architecture: str = Field(description="sm_90 / gfx942 / cpu")
    compute_capability: str | None = Field(default=None, pattern=r"^\d+\.\d+$")
    gfx_target: str | None = Field(default=None, pattern=r"^gfx[0-9a-f]+$")
    memory_bytes: int | None = Field(
        default=None, gt=0, description="total memory as torch reports it; null only for cpu"
    )
    memory_source: str = Field(min_length=1)
    memory_bandwidth_gbps: float | None = Field(default=None, gt=0)
    tflops_bf16: float | None = Field(default=None, gt=0)
    tflops_fp16: float | None = Field(default=None, gt=0)
    tflops_fp8: float | None = Field(default=None, gt=0)
    tflops_int8: float | None = Field(default=None, gt=0)
    tflops_fp4: float | None = Field(default=None, gt=0)
    interconnect: Interconnect | None = None
    gpus_per_node: int = Field(default=1, ge=1)
    # NVML reports the device's memory (nvmlDeviceGetMemoryInfo). Not on unified-memory GB10, where vLLM's
    # get_batch_defaults catches the error and takes the small-GPU defaults (2048 batched tokens, 256 seqs)
    nvml_memory_info: bool = True
    # CPU and GPU share one physical memory (GB10, Jetson): the total is all of system RAM, vLLM measures free
    # memory system-wide there (vllm/utils/mem_utils.py MemorySnapshot.measure, psutil's available memory on an
    # integrated GPU), and weights kept "in host memory" sit in the same memory
    unified_memory: bool = False
    supports: Supports
    specs_source: str | None = None
    notes: str | None = None

    @model_validator(mode="after")
    def _vendor_fields(self) -> GpuProfile:
        if self.vendor == "nvidia":
            if self.compute_capability is None:
                raise ValueError("compute_capability is required for vendor nvidia")
            expected = "sm_" + self.compute_capability.replace(".", "")
            if self.architecture != expected:
                raise ValueError(
                    f"architecture {self.architecture!r} does not match compute_capability "
                    f"{self.compute_capability!r} (expected {expected!r})"
                )
        elif self.vendor == "amd":
            if self.gfx_target is None:
                raise ValueError("gfx_target is required for vendor amd")
            if self.architecture != self.gfx_target:
                raise ValueError(
                    f"architecture {self.architecture!r} must equal gfx_target {self.gfx_target!r}"
                )
        if self.memory_bytes is None and self.vendor != "cpu":
            raise ValueError("memory_bytes is required (only the cpu profile takes it at run time)")
        return self

    @property
    def runtime(self) -> Runtime:
        return {"nvidia": "cuda", "amd": "rocm", "cpu": "cpu"}[self.vendor]  # type: ignore[return-value]

    @property
    def capability(self) -> float | None:
        """Compute capability as a number (9.0); None off CUDA."""
        return float(self.compute_capability) if self.compute_capability else None

    @property
    def sm(self) -> int | None:
        """Compute capability as vLLM's int (9.0 -> 90); None off CUDA."""
        if self.compute_capability is None:
            return None
        major, minor = self.compute_capability.split(".")
        return int(major) * 10 + int(minor)

    @property
    def link_kind(self) -> str:
        """How the GPUs of a node reach each other: "pcie", "xgmi" (AMD's links), "nvlink" (NVLink / NVSwitch), or
        "none" (no interconnect given)."""
        name = (self.interconnect.name if self.interconnect else "").lower()
        if "pcie" in name:
            return "pcie"
        if self.vendor == "amd":
            return "xgmi"
        return "nvlink" if self.interconnect else "none"

    @property
    def fp8_supported(self) -> bool:
        """Native FP8 compute (what the precision recommendation needs)."""
        return self.supports.fp8

    @property
    def marlin_supported(self) -> bool:
        """Marlin INT4 (awq_marlin / gptq_marlin): CUDA only."""
        return self.runtime == "cuda" and self.supports.int4_marlin

    @property
    def memory_source_tag(self) -> str:
        """The plan's source tag for `memory_bytes`: `given` (--gpu-memory), `derived` (from another SKU's
        reading or nvidia-smi's MiB), `estimated` (a nominal size), else `measured` (a torch or vLLM reading
        of this SKU, host RAM at run time)."""
        text = self.memory_source.strip().lower()
        if text.startswith(USER_MEMORY_SOURCE.lower()):
            return "given"
        if text.startswith(("derived", "taken equal", "nvidia-smi")):
            return "derived"
        if text.startswith("nominal"):
            return "estimated"
        return "measured"

    def with_memory(self, memory_bytes: int, memory_source: str) -> GpuProfile:
        """Same GPU with another memory size (MIG slice, --gpu-memory, host RAM)."""
        return self.model_copy(update={"memory_bytes": memory_bytes, "memory_source": memory_source})


# --------------------------------------------------------------------------- loading


def user_config_dir(env: Mapping[str, str] | None = None) -> Path:
    """~/.config/vllmkit/profiles, honouring XDG_CONFIG_HOME."""
    return user_dir("config", os.environ if env is None else env) / "profiles"

def profile_dirs_from_env(env: Mapping[str, str]) -> list[Path]:
    """Folders named by $VLLMKIT_PROFILES_DIR (os.pathsep-separated), for the caller to pass on."""
    raw = env.get(PROFILES_DIR_ENV, "")
    return [Path(part).expanduser() for part in raw.split(os.pathsep) if part.strip()]


def _entries_from_document(doc: Any, source: str) -> list[dict[str, Any]]:
    """A profile file holds `gpus: [...]`, a bare list, or one profile mapping."""
    if doc is None:
        return []
    if isinstance(doc, dict) and "gpus" in doc:
        doc = doc["gpus"]
    elif isinstance(doc, dict):
        doc = [doc]
    if not isinstance(doc, list):
        raise HardwareError(
            f"{source}: expected a list of GPU profiles under 'gpus'",
            "see `vllmkit gpus --json` for the fields a profile takes",
            code="bad-profile",
        )
    for index, entry in enumerate(doc):
        if not isinstance(entry, dict):
            raise HardwareError(
                f"{source}: profile #{index + 1} is not a mapping",
                "each profile is a mapping with at least name, vendor, memory_bytes, memory_source",
                code="bad-profile",
            )
    return doc


# libyaml's loader when PyYAML was built with it: the packaged profiles load ~10x faster (every command)
_SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _parse_yaml(text: str, source: str) -> list[dict[str, Any]]:
    try:
        doc = yaml.load(text, Loader=_SAFE_LOADER)  # a safe loader (C or Python)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise HardwareError(
            f"{source}: not valid YAML{where}: {getattr(exc, 'problem', None) or exc}",
            "fix the file or move it out of the profiles folder",
            code="bad-profile",
        ) from None
    return _entries_from_document(doc, source)


def _validation_message(exc: ValidationError, shown: int = 3) -> str:
    parts = []
    for error in exc.errors()[:shown]:
        loc = ".".join(str(part) for part in error["loc"]) or "(profile)"
        parts.append(f"field '{loc}': {error['msg']}")
    more = exc.error_count() - shown
    return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")


def _build_profile(
    entry: dict[str, Any], source: str, index: int, known: Mapping[str, GpuProfile]
) -> GpuProfile:
    label = f"profile #{index + 1}" + (f" ({entry['name']})" if isinstance(entry.get("name"), str) else "")
    data = dict(entry)
    base_name = data.pop("extends", None)
    if base_name is not None:
        base = known.get(str(base_name))
        if base is None:
            raise HardwareError(
                f"{source}: {label}: field 'extends': unknown profile '{base_name}'",
                "extends must name a profile loaded before this file (a packaged one, e.g. h100-sxm)",
                code="bad-profile",
            )
        merged = base.model_dump()
        if data.get("name", base.name) != base.name:
            # A new GPU derived from the base must not take over the base's names.
            merged["aliases"] = []
            merged["product_names"] = []
        for key, value in data.items():
            if key in ("supports", "interconnect") and isinstance(value, dict) and merged.get(key):
                merged[key] = {**merged[key], **value}
            else:
                merged[key] = value
        data = merged
    try:
        return GpuProfile.model_validate(data)
    except ValidationError as exc:
        raise HardwareError(
            f"{source}: {label}: {_validation_message(exc)}",
            "fix the profile (see `vllmkit gpus NAME --json` for a complete example)",
            code="bad-profile",
        ) from None


@functools.lru_cache(maxsize=1)
def _packaged_entries() -> tuple[tuple[str, tuple[dict[str, Any], ...]], ...]:
    folder = resources.files(_PACKAGE).joinpath(*_PACKAGED_FOLDER)
    files = sorted((f for f in folder.iterdir() if f.name.endswith((".yaml", ".yml"))), key=lambda f: f.name)
    out = []
    for item in files:
        source = f"packaged profiles/gpus/{item.name}"
        out.append((source, tuple(_parse_yaml(item.read_text(encoding="utf-8"), source))))
    return tuple(out)


def _user_files(folder: Path) -> list[Path]:
    """YAML files directly in `folder` and in `folder/gpus` (same layout as the package)."""
    found: list[Path] = []
    for candidate in (folder, folder / "gpus"):
        if candidate.is_dir():
            found.extend(
                sorted(p for p in candidate.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
            )
    return found


def _merge(profiles: dict[str, GpuProfile], entries: Iterable[dict[str, Any]], source: str) -> None:
    for index, entry in enumerate(entries):
        profile = _build_profile(entry, source, index, profiles)
        profiles[profile.name] = profile  # same name: the later source overrides


def load_profiles(
    extra_dirs: Sequence[Path] = (),
    *,
    include_user_config: bool = True,
    env: Mapping[str, str] | None = None,
) -> list[GpuProfile]:
    """All GPU profiles: packaged, then ~/.config/vllmkit/profiles, then each of `extra_dirs`.

    A later profile with the same `name` replaces the earlier one, so the caller's folders
    (`--profiles-dir`, `$VLLMKIT_PROFILES_DIR` via `profile_dirs_from_env`) win over the user
    config folder, which wins over the packaged files. A user entry may say `extends: h100-sxm`
    to start from a loaded profile and change only some fields. Missing folders are skipped; a
    malformed file raises HardwareError naming the file and the field.
    """
    profiles: dict[str, GpuProfile] = {}
    for source, entries in _packaged_entries():
        _merge(profiles, entries, source)
    folders: list[Path] = []
    if include_user_config:
        folders.append(user_config_dir(env))
    folders.extend(Path(d).expanduser() for d in extra_dirs)
    for folder in folders:
        for path in _user_files(folder):
            try:
                text = path.read_text(encoding="utf-8")
            except OSError as exc:
                raise HardwareError(
                    f"{path}: cannot read profile file: {exc.strerror or exc}",
                    "check the file's permissions or remove it",
                    code="bad-profile",
                ) from None
            _merge(profiles, _parse_yaml(text, str(path)), str(path))
    # Stable sort: NVIDIA, AMD, then CPU; file order within a vendor.
    return sorted(profiles.values(), key=lambda p: _VENDOR_ORDER[p.vendor])


_VENDOR_ORDER = {"nvidia": 0, "amd": 1, "cpu": 2}


# --------------------------------------------------------------------------- resolution

# Words that nvidia-smi / rocm-smi / marketing names add around the model: dropped so that
# "NVIDIA GeForce RTX 4090", "GeForce RTX 4090" and "rtx4090" are the same key.
_NOISE_TOKENS = frozenset({"nvidia", "amd", "geforce", "tesla", "instinct", "gpu", "graphics"})

# Documented defaults for ambiguous short names. They are also listed as aliases on the
# profiles in the YAML; this table is the one place that says which variant a bare family
# name means (the most common cloud variant; the smaller-memory one where both are common).
DEFAULT_FOR_SHORT_NAME: dict[str, str] = {
    "h100": "h100-sxm",
    "h200": "h200",
    "a100": "a100-80gb-sxm",
    "a100-80gb": "a100-80gb-sxm",
    "a100-40gb": "a100-40gb-sxm",
    "a800": "a800-80gb-sxm",
    "v100": "v100-sxm2-16gb",
    "v100-16gb": "v100-sxm2-16gb",
    "v100-32gb": "v100-sxm2-32gb",
    "rtx-pro-6000": "rtx-pro-6000-server",
    "mi250": "mi250x",
    "gh200": "gh200",
}


def normalize_gpu_name(text: str) -> str:
    """Case- and punctuation-insensitive key: 'NVIDIA H100 80GB HBM3' -> 'h10080gbhbm3'."""
    tokens = re.split(r"[^a-z0-9]+", text.lower())
    return "".join(t for t in tokens if t and t not in _NOISE_TOKENS)


def _keys(profile: GpuProfile) -> list[str]:
    names = [profile.name, profile.display_name, *profile.product_names, *profile.aliases]
    return [k for k in (normalize_gpu_name(n) for n in names) if k]


def _suggestion_keys(profile: GpuProfile) -> list[str]:
    shorts = [normalize_gpu_name(s) for s, target in DEFAULT_FOR_SHORT_NAME.items() if target == profile.name]
    return _keys(profile) + shorts


def name_index(profiles: Sequence[GpuProfile]) -> dict[str, GpuProfile]:
    """normalized key -> profile; later profiles win on clashes (user files come last)."""
    index: dict[str, GpuProfile] = {}
    for profile in profiles:
        for key in _keys(profile):
            index[key] = profile
    by_name = {p.name: p for p in profiles}
    for short, target in DEFAULT_FOR_SHORT_NAME.items():
        if target in by_name:
            index.setdefault(normalize_gpu_name(short), by_name[target])
    return index


def closest_names(query: str, profiles: Sequence[GpuProfile], n: int = 3) -> list[str]:
    """The n profile names whose keys look most like `query` (for error hints)."""
    key = normalize_gpu_name(query) or query.lower()
    scored: list[tuple[float, str]] = []
    for profile in profiles:
        best = max(
            (difflib.SequenceMatcher(None, key, k).ratio() + (0.5 if k.startswith(key) else 0.0))
            for k in _suggestion_keys(profile)
        )
        scored.append((best, profile.name))
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [name for _, name in scored[:n]]


def resolve_gpu(
    name: str,
    *,
    profiles: Sequence[GpuProfile] | None = None,
    extra_dirs: Sequence[Path] = (),
) -> GpuProfile:
    """Find a profile by slug, display name, nvidia-smi/rocm-smi product name or alias.

    Matching ignores case, punctuation and vendor words ("NVIDIA", "GeForce", "AMD Instinct").
    Bare family names pick the documented default (DEFAULT_FOR_SHORT_NAME: "h100" -> h100-sxm,
    "a100" -> a100-80gb-sxm). Unknown names raise HardwareError (exit 5) with the closest names.
    """
    if profiles is None:
        profiles = load_profiles(extra_dirs)
    key = normalize_gpu_name(name)
    found = name_index(profiles).get(key) if key else None
    if found is not None:
        return found
    suggestions = ", ".join(closest_names(name, profiles))
    raise HardwareError(
        f"unknown GPU '{name}'",
        f"closest: {suggestions}; `vllmkit gpus` lists all profiles; "
        "pass --gpu-memory 48GiB for an unlisted GPU",
        code="unknown-gpu",
    )


# --------------------------------------------------------------------------- memory sizes

_UNITS: dict[str, int] = {
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
# Single-letter suffixes follow vLLM's human_readable_int (vllm/utils/argparse_utils.py):
# lowercase k/m/g/t are decimal, uppercase K/M/G/T binary.
_LETTER_UNITS: dict[str, int] = {
    "k": 10**3,
    "m": 10**6,
    "g": 10**9,
    "t": 10**12,
    "K": 2**10,
    "M": 2**20,
    "G": 2**30,
    "T": 2**40,
}
_MEMORY_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")


def parse_memory(text: str) -> int:
    """'48GiB', '48 GiB', '80GB' (decimal), '81920MiB', '85899345920', '24G' -> bytes.

    GiB/MiB/KiB/TiB are binary, GB/MB/KB/TB decimal (case-insensitive); one-letter suffixes
    follow vLLM (G = GiB, g = 10**9). Fractions are rounded to the nearest byte.
    Anything else raises UsageError.
    """
    match = _MEMORY_RE.match(text or "")
    if not match:
        raise _bad_memory(text)
    number, unit = match.groups()
    if unit == "":
        multiplier = 1
    elif unit in _LETTER_UNITS:
        multiplier = _LETTER_UNITS[unit]
    elif unit.lower() in _UNITS:
        multiplier = _UNITS[unit.lower()]
    else:
        raise _bad_memory(text)
    try:
        value = (Decimal(number) * multiplier).to_integral_value()
    except InvalidOperation:
        raise _bad_memory(text) from None
    if value <= 0:
        raise _bad_memory(text)
    return int(value)


def _bad_memory(text: str) -> UsageError:
    return UsageError(
        f"cannot read memory size '{text}'",
        "write a number with a unit, e.g. 48GiB, 80GB (decimal), 81920MiB, or plain bytes",
        code="bad-memory",
    )


# --------------------------------------------------------------------------- builders


def custom_profile(
    memory_bytes: int,
    vendor: Vendor = "nvidia",
    name: str = "custom",
    *,
    base: GpuProfile | None = None,
) -> GpuProfile:
    """A profile for `--gpu-memory` on an unlisted GPU.

    With `base` (the user also named a GPU) the capabilities are the base's and only the
    memory changes. Without it the capabilities are the conservative ones: BF16 yes, no
    native FP8, no Marlin — pass `--gpu NAME` too to inherit a real GPU's kernels.
    """
    source = USER_MEMORY_SOURCE
    if memory_bytes <= 0:
        raise UsageError("GPU memory must be positive", "e.g. --gpu-memory 48GiB", code="bad-memory")
    if base is not None:
        return base.with_memory(memory_bytes, source)
    arch = {"nvidia": ("sm_80", "8.0", None), "amd": ("gfx90a", None, "gfx90a"), "cpu": ("cpu", None, None)}
    architecture, capability, gfx = arch[vendor]
    return GpuProfile(
        name=name,
        display_name=f"Custom {vendor.upper() if vendor != 'cpu' else 'CPU'} ({name})",
        vendor=vendor,
        architecture=architecture,
        compute_capability=capability,
        gfx_target=gfx,
        memory_bytes=memory_bytes,
        memory_source=source,
        gpus_per_node=8 if vendor != "cpu" else 1,
        supports=Supports(bf16=True, fp8=False, int4_marlin=False),
        notes="capabilities unknown: assumed BF16 only (no native FP8, no Marlin)",
    )


def cpu_profile(memory_bytes: int, *, profiles: Sequence[GpuProfile] | None = None) -> GpuProfile:
    """The `cpu` profile with the host RAM the caller measured (bytes)."""
    if memory_bytes <= 0:
        raise UsageError("host memory must be positive", code="bad-memory")
    pool = profiles if profiles is not None else load_profiles(include_user_config=False)
    template = next((p for p in pool if p.name == "cpu"), None)
    if template is None:
        raise HardwareError("no 'cpu' profile is loaded", "reinstall vllmkit (packaged profiles missing)")
    return template.with_memory(memory_bytes, "host RAM, measured at run time")


_VENDORS = ("nvidia", "amd", "cpu")


def profile_data(profile: GpuProfile) -> dict[str, Any]:
    """JSON view of a profile: every field, plus the runtime it implies."""
    data = profile.model_dump(mode="json")
    data["runtime"] = profile.runtime
    return data


def list_gpus(
    name: str | None,
    vendor: str | None,
    profiles_dirs: list[Path],
    env: dict[str, str],
) -> dict[str, Any]:
    if vendor is not None and vendor not in _VENDORS:
        raise UsageError(
            f"unknown vendor '{vendor}'", f"use one of: {', '.join(_VENDORS)}", code="bad-vendor"
        )
    for folder in profiles_dirs:  # named on the command line: a typo must not silently list the defaults
        if not folder.is_dir():
            raise UsageError(f"--profiles-dir {str(folder)!r} is not a folder",
                             "give a folder of *.yaml GPU profiles (see `vllmkit gpus NAME --json` for the fields)",
                             code="bad-profiles-dir")
    extra_dirs = [*profile_dirs_from_env(env), *profiles_dirs]
    profiles = load_profiles(extra_dirs, env=env)
    if name is not None:
        return {"query": name, "gpus": [profile_data(resolve_gpu(name, profiles=profiles))]}
    chosen = [p for p in profiles if vendor is None or p.vendor == vendor]
    return {"gpus": [profile_data(p) for p in chosen]}
