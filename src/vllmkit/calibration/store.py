"""The local calibration store: measured non-KV memory terms from real vLLM startups.

One JSON object per line in `<data dir>/calibrations.jsonl`, where the data dir is
`$VLLMKIT_DATA_DIR`, else `$XDG_DATA_HOME/vllmkit`, else `~/.local/share/vllmkit` — always taken from
the environment mapping the caller passes (never read at import time).

Safety:
- concurrent writers (several `vllmkit serve` / `check-log --record` processes) serialise on an
  exclusive `fcntl.flock` of the sibling file `calibrations.jsonl.lock` and do read-modify-write;
- every write goes to a temporary file in the same folder, is fsync'ed, then `os.replace`d over the
  store (atomic on POSIX), so a writer killed at any instant leaves either the old or the new store,
  never a torn one; stale temporary files of killed writers are removed by the next writer;
- readers take no lock (they always see one complete version of the file) and skip lines that do
  not validate (hand edits), so a damaged line can never break `vllmkit plan`.

Lookup rule (`lookup_terms`), documented in `vllmkit calibration --help` too:
1. candidates: same GPU profile name and same architecture family (model_type) — both required —
   and the same vLLM major.minor (accounting changes between minor releases; see engine/versions.py);
2. a term is taken from a record only when the inputs it depends on match the plan's:
   non_torch <- TP, PP (NCCL / all-reduce buffers); activation <- max_num_batched_tokens, TP, PP
   (profile-run peak per rank); cudagraph <- TP, PP, and neither side eager (graph pool per rank);
   cpu_non_kv <- max_num_batched_tokens, TP, PP, eager (worker RSS after warm-up/compile).
   A record whose non-KV memory was measured as one lump (no split in the log) is used only when all
   four inputs match, and then for all its terms at once;
3. among the candidates, the one giving the most terms wins; ties go to the same full vLLM version
   (x.y.z) over the same minor, then fewer differing inputs, then the same model, then the newest.
Terms not calibrated stay estimated.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import json
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from vllmkit.dirs import user_dir
from vllmkit.engine.versions import parse_version
from vllmkit.errors import UsageError
from vllmkit.estimate.memory import MemoryTerm
from vllmkit.files import FileProblem, read_text
from vllmkit.units import GIB

STORE_NAME = "calibrations.jsonl"
SCHEMA_VERSION = 1
LOCK_TIMEOUT_S = 30.0
TERM_NAMES = ("non_torch", "activation", "cudagraph", "cpu_non_kv")
# the plan inputs each measured term depends on (module docstring, rule 2)
TERM_INPUTS: dict[str, tuple[str, ...]] = {
    "non_torch": ("tp", "pp"),
    "activation": ("max_num_batched_tokens", "tp", "pp"),
    "cudagraph": ("tp", "pp", "enforce_eager"),
    "cpu_non_kv": ("max_num_batched_tokens", "tp", "pp", "enforce_eager"),
}
INPUT_NAMES = ("max_num_batched_tokens", "tp", "pp", "enforce_eager")
TIB = 1 << 40

# Physical bounds on what a record may claim (docs/limits.md). A record is a measurement of one
# device, so no term can exceed that device's memory: the record's own total_bytes when it has one,
# else the largest device there is. The largest GPUs ship 288 GB (AMD MI355X, NVIDIA B300, vendor
# data sheets); 512 GiB leaves room for the next generation. The CPU build measures host memory:
# 64 TiB is above the largest single x86 servers (32 sockets x 2 TiB).
MAX_GPU_MEMORY_BYTES = 512 * GIB
MAX_HOST_MEMORY_BYTES = 64 * TIB
MAX_PARALLEL = 4096  # TP, PP: above any deployment (DeepSeek-V3 serving uses hundreds of GPUs)
MAX_BATCHED_TOKENS = 1 << 24  # vLLM's own scheduler budget is an int32; real values are <= 1M
MAX_TEXT = 512  # characters of a name (GPU, family, model)
MAX_IMPORT_BYTES = 64 << 20  # an export is ~1 KB per record: 64 MiB is ~60,000 records


class CalibrationRecord(BaseModel):
    """One measured startup. `terms` are bytes per GPU (tightest rank) as vLLM accounted them."""

    model_config = ConfigDict(extra="ignore")

    schema_version: int = SCHEMA_VERSION
    record_id: str = Field(pattern=r"^[0-9a-f]{8,64}$")
    recorded_at: str = Field(max_length=64)  # ISO 8601 with UTC offset
    # key
    gpu: str = Field(min_length=1, max_length=MAX_TEXT)  # GPU profile name (`vllmkit gpus`), "cpu" for the CPU build
    vllm_version: str = Field(max_length=64)
    family: str = Field(min_length=1, max_length=MAX_TEXT)  # config.json model_type
    max_num_batched_tokens: int = Field(gt=0, le=MAX_BATCHED_TOKENS)
    tp: int = Field(ge=1, le=MAX_PARALLEL)
    pp: int = Field(ge=1, le=MAX_PARALLEL)
    enforce_eager: bool
    # measurements
    terms: dict[str, int]
    lump: bool = False  # non-KV memory measured as one sum (attributed to non_torch)
    notes: dict[str, str] = Field(default_factory=dict)
    # context (shown by `calibration list`, not used for matching except `model` as a tie-break)
    model: str = Field(default="", max_length=MAX_TEXT)
    gpu_display_name: str | None = Field(default=None, max_length=MAX_TEXT)
    device: Literal["cuda", "rocm", "cpu"] = "cuda"
    weights_bytes: int | None = Field(default=None, ge=0)
    total_bytes: int | None = Field(default=None, gt=0)
    requested_bytes: int | None = Field(default=None, ge=0)
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1)
    available_kv_bytes: int | None = None  # may be negative: vLLM logs it so when nothing is left
    source: str = Field(default="", max_length=4 * MAX_TEXT)  # "check-log <file>" / "serve run <run id>" / ...
    log_sha256: str | None = None

    @field_validator("vllm_version")
    @classmethod
    def _version(cls, value: str) -> str:
        parse_version(value)  # ValueError -> ValidationError
        return value

    @field_validator("terms")
    @classmethod
    def _terms(cls, value: dict[str, int]) -> dict[str, int]:
        unknown = sorted(set(value) - set(TERM_NAMES))
        if unknown:
            raise ValueError(f"unknown terms {unknown}; known: {list(TERM_NAMES)}")
        if not value:
            raise ValueError("a calibration needs at least one term")
        for name, size in value.items():
            if size < 0:
                raise ValueError(f"term {name} is negative ({size})")
        return value

    @model_validator(mode="after")
    def _physical(self) -> CalibrationRecord:
        """No measured quantity larger than the device it was measured on (docs/limits.md)."""
        device_max = MAX_HOST_MEMORY_BYTES if self.device == "cpu" else MAX_GPU_MEMORY_BYTES
        if self.total_bytes is not None and self.total_bytes > device_max:
            raise ValueError(f"total_bytes {self.total_bytes / GIB:,.1f} GiB is more than any "
                             f"{'host' if self.device == 'cpu' else 'GPU'} has ({device_max / GIB:,.0f} GiB)")
        bound = self.total_bytes or device_max
        where = "the device's total_bytes" if self.total_bytes else "any device's memory"
        sizes = {f"terms.{k}": v for k, v in self.terms.items()}
        sizes.update({k: getattr(self, k) for k in ("weights_bytes", "requested_bytes", "available_kv_bytes")})
        for name, size in sizes.items():
            if size is not None and abs(size) > bound:
                raise ValueError(f"{name} ({size / GIB:,.1f} GiB) is larger than {where} ({bound / GIB:,.1f} GiB)")
        gpu_terms = sum(self.terms.get(k, 0) for k in ("non_torch", "activation", "cudagraph"))
        if gpu_terms + (self.weights_bytes or 0) > bound:
            raise ValueError(f"weights + non-KV terms ({(gpu_terms + (self.weights_bytes or 0)) / GIB:,.1f} GiB) "
                             f"are larger than {where} ({bound / GIB:,.1f} GiB)")
        return self

    @property
    def date(self) -> str:
        return self.recorded_at[:10]

    def inputs(self) -> dict[str, int | bool]:
        return {"max_num_batched_tokens": self.max_num_batched_tokens, "tp": self.tp, "pp": self.pp,
                "enforce_eager": self.enforce_eager}


def make_record_id(fields: Mapping[str, object]) -> str:
    """Content hash of what was measured and under which key: recording the same log twice (or
    importing a file twice) yields the same id, which is how the store de-duplicates."""
    keys = ("gpu", "vllm_version", "family", "model", "max_num_batched_tokens", "tp", "pp", "enforce_eager",
            "terms", "lump", "log_sha256")
    canonical = json.dumps({k: fields.get(k) for k in keys}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:20]


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).astimezone().isoformat(timespec="seconds")


# ----------------------------------------------------------------------------- location


def data_dir(env: Mapping[str, str]) -> Path:
    """$VLLMKIT_DATA_DIR, else $XDG_DATA_HOME/vllmkit, else ~/.local/share/vllmkit (XDG default)."""
    return user_dir("data", env)

def store_path(env: Mapping[str, str]) -> Path:
    return data_dir(env) / STORE_NAME


# ----------------------------------------------------------------------------- reading


def parse_lines(text: str) -> tuple[list[CalibrationRecord], list[tuple[int, str]]]:
    """(valid records, [(line number, why) for lines that did not validate])."""
    records: list[CalibrationRecord] = []
    bad: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(CalibrationRecord.model_validate_json(line))
        except ValidationError as exc:
            bad.append((number, _first_error(exc)))
    return records, bad


def load_records(path: Path) -> tuple[list[CalibrationRecord], list[tuple[int, str]]]:
    """All valid records of the store (empty when it does not exist) and the skipped lines."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return [], []
    except OSError as exc:
        raise UsageError(f"cannot read the calibration store {path}: {exc.strerror}",
                         "check its permissions, or point VLLMKIT_DATA_DIR elsewhere",
                         code="calibration-store") from None
    return parse_lines(text)


_CACHE: dict[Path, tuple[tuple[int, int, int], list[CalibrationRecord]]] = {}


def _cached_records(path: Path) -> list[CalibrationRecord]:
    """load_records for lookups, reused while the file is unchanged (plan asks once per candidate)."""
    try:
        st = path.stat()
    except OSError:
        return []
    stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
    hit = _CACHE.get(path)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    records, _ = load_records(path)
    _CACHE[path] = (stamp, records)
    return records


# ----------------------------------------------------------------------------- writing


@contextlib.contextmanager
def locked(path: Path, timeout_s: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Exclusive inter-process lock for read-modify-write of the store (released by the kernel
    when the holder dies, so a killed writer never blocks the next one)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise UsageError(f"cannot write the calibration store in {path.parent}: {exc.strerror}",
                         "set VLLMKIT_DATA_DIR to a writable folder", code="calibration-store") from None
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise UsageError(f"the calibration store {path} stayed locked for {timeout_s:.0f} s",
                                     "another vllmkit process is writing it; retry", code="calibration-locked") from None
                time.sleep(0.02)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def _remove_stale_temps(path: Path) -> None:
    """Temporary files left by writers that were killed (only called while holding the lock, so
    none of them can belong to a live writer)."""
    for stale in path.parent.glob(f".{path.name}.*.tmp"):
        with contextlib.suppress(OSError):
            stale.unlink()


def _write_atomic(path: Path, records: Iterable[CalibrationRecord], what: str = "the calibration store") -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    data = "".join(r.model_dump_json(exclude_none=False) + "\n" for r in records).encode("utf-8")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        with contextlib.suppress(OSError):  # make the rename itself durable
            dir_fd = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise UsageError(f"cannot write {what} {path}: {exc.strerror}",
                         "choose a writable path (the store: set VLLMKIT_DATA_DIR)", code="calibration-store") from None


def update(path: Path, change: Callable[[list[CalibrationRecord]], list[CalibrationRecord]]) -> list[CalibrationRecord]:
    """Locked read-modify-write; returns the records written."""
    with locked(path):
        _remove_stale_temps(path)
        current, _ = load_records(path)
        new = change(list(current))
        _write_atomic(path, new)
        return new


def add_records(path: Path, records: Iterable[CalibrationRecord]) -> tuple[int, int]:
    """Append records not already stored (by record_id). Returns (added, duplicates)."""
    incoming = list(records)
    counts = [0, 0]

    def change(current: list[CalibrationRecord]) -> list[CalibrationRecord]:
        seen = {r.record_id for r in current}
        for rec in incoming:
            if rec.record_id in seen:
                counts[1] += 1
                continue
            seen.add(rec.record_id)
            current.append(rec)
            counts[0] += 1
        return current

    update(path, change)
    return counts[0], counts[1]


def remove_records(path: Path, predicate: Callable[[CalibrationRecord], bool]) -> int:
    """Remove the records for which predicate is true; returns how many. Lines that did not
    validate are dropped too when anything is rewritten."""
    if not path.exists():
        return 0
    removed = [0]

    def change(current: list[CalibrationRecord]) -> list[CalibrationRecord]:
        keep = [r for r in current if not predicate(r)]
        removed[0] = len(current) - len(keep)
        return keep

    update(path, change)
    return removed[0]


def export_records(file: Path, records: Iterable[CalibrationRecord]) -> None:
    """Write records as JSON lines (the store's own format), atomically."""
    _write_atomic(file, records, what="the export file")


def read_import_file(file: Path) -> list[CalibrationRecord]:
    """Records of an export file (JSON lines, or one JSON array). All or nothing: any invalid
    record raises UsageError naming its line, and nothing is imported."""
    try:
        text = read_text(file, max_bytes=MAX_IMPORT_BYTES)
    except FileProblem as exc:
        code = {"missing": "file-not-found", "too-large": "file-too-large"}.get(exc.kind, "file-unreadable")
        message = {"missing": f"no such file: {file}"}.get(exc.kind, exc.message)
        message += "; not a calibration export" if exc.kind == "too-large" else ""
        raise UsageError(message, "pass a file written by `vllmkit calibration export`", code=code) from None
    if text.lstrip().startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{file} is not valid JSON: {exc.msg} (line {exc.lineno})",
                             "nothing was imported; export the file again", code="invalid-calibration") from None
        except RecursionError:
            raise UsageError(f"{file} nests JSON deeper than Python can read", "nothing was imported; "
                             "a calibration export is one flat list of records", code="invalid-calibration") from None
        if not isinstance(items, list):
            raise UsageError(f"{file} is not a list of records", "nothing was imported", code="invalid-calibration")
        out = []
        for index, item in enumerate(items, start=1):
            try:
                out.append(CalibrationRecord.model_validate(item))
            except ValidationError as exc:
                raise UsageError(f"{file}: record {index} is invalid ({_first_error(exc)})",
                                 "nothing was imported; fix or remove that record", code="invalid-calibration") from None
        return out
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append(CalibrationRecord.model_validate_json(line))
        except ValidationError as exc:
            raise UsageError(f"{file} line {number} is not a valid calibration record ({_first_error(exc)})",
                             "nothing was imported; fix or remove that line", code="invalid-calibration") from None
    return out


def _first_error(exc: ValidationError) -> str:
    errors = exc.errors()
    if not errors:
        return str(exc)
    where = ".".join(str(p) for p in errors[0].get("loc", ()))
    return f"{where + ': ' if where else ''}{errors[0].get('msg', 'invalid')}"


# ----------------------------------------------------------------------------- lookup


def _inputs_match(record: CalibrationRecord, want: Mapping[str, int | bool], names: Iterable[str]) -> bool:
    have = record.inputs()
    return all(have[n] == want[n] for n in names)


def usable_terms(record: CalibrationRecord, want: Mapping[str, int | bool]) -> list[str]:
    """Terms of `record` that apply to a plan with inputs `want` (module docstring, rule 2)."""
    if record.lump:
        return sorted(record.terms) if _inputs_match(record, want, INPUT_NAMES) else []
    out = []
    for name in record.terms:
        if not _inputs_match(record, want, TERM_INPUTS[name]):
            continue
        if name == "cudagraph" and want["enforce_eager"]:
            continue
        out.append(name)
    return sorted(out)


def choose_record(records: Iterable[CalibrationRecord], *, gpu: str, vllm_version: str, family: str,
                  want: Mapping[str, int | bool], model: str | None = None
                  ) -> tuple[CalibrationRecord, list[str]] | None:
    try:
        version = parse_version(vllm_version)
    except ValueError:
        return None
    best: tuple[tuple, CalibrationRecord, list[str]] | None = None
    for rec in records:
        if rec.gpu.lower() != gpu.lower() or rec.family.lower() != family.lower():
            continue
        try:
            rec_version = parse_version(rec.vllm_version)
        except ValueError:
            continue
        if rec_version[:2] != version[:2]:
            continue
        terms = usable_terms(rec, want)
        if not terms:
            continue
        differing = sum(1 for n in INPUT_NAMES if rec.inputs()[n] != want[n])
        rank = (
            -len(terms),
            0 if rec_version == version else 1,
            differing,
            0 if model and rec.model == model else 1,
            _neg_time(rec.recorded_at),
        )
        if best is None or rank < best[0]:
            best = (rank, rec, terms)
    return None if best is None else (best[1], best[2])


def _neg_time(stamp: str) -> float:
    try:
        return -dt.datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return 0.0


def provenance(record: CalibrationRecord, terms: list[str]) -> str:
    where = record.gpu_display_name or record.gpu
    text = (f"calibrated from {record.date} run of {record.model or record.family} on {where}, "
            f"vLLM {record.vllm_version} (record id {record.record_id[:12]})")
    if record.lump:
        text += "; non-KV memory measured as one lump"
    text += "; terms: " + ", ".join(terms)
    return text


def lookup_terms(
    *,
    gpu: str,
    vllm_version: str,
    family: str,
    max_num_batched_tokens: int,
    tp: int,
    pp: int,
    enforce_eager: bool,
    env: Mapping[str, str],
    model: str | None = None,
    device_bytes: int | None = None,
) -> tuple[dict[str, MemoryTerm], str | None]:
    """The closest calibration's terms (source "calibrated") and its provenance, or ({}, None).

    Keys: "non_torch", "activation", "cudagraph" (GPU), "cpu_non_kv" (CPU build: the worker's RSS
    besides the KV cache, weights included) and, next to it, "cpu_runtime" (that RSS minus the
    recorded model's weights, for a different model of the same family). Never raises: a missing,
    unreadable or damaged store means no calibration."""
    try:
        records = _cached_records(store_path(env))
    except Exception:  # the planner must work whatever the store holds
        return {}, None
    want: dict[str, int | bool] = {"max_num_batched_tokens": max_num_batched_tokens, "tp": tp, "pp": pp,
                                   "enforce_eager": enforce_eager}
    if device_bytes:
        # a record claiming more than this device has cannot describe it (hand edit, other profile)
        records = [r for r in records if max(r.terms.values(), default=0) <= device_bytes]
    chosen = choose_record(records, gpu=gpu, vllm_version=vllm_version, family=family, want=want, model=model)
    if chosen is None:
        return {}, None
    record, names = chosen
    label = f"measured {record.date} on {record.model or record.family} (record {record.record_id[:12]})"
    out: dict[str, MemoryTerm] = {}
    for name in names:
        note = record.notes.get(name)
        out[name] = MemoryTerm(bytes=record.terms[name], source="calibrated",
                               note=f"{label}{': ' + note if note else ''}")
    if "cpu_non_kv" in out and record.weights_bytes is not None:
        out["cpu_runtime"] = MemoryTerm(bytes=max(record.terms["cpu_non_kv"] - record.weights_bytes, 0),
                                        source="calibrated", note=f"{label}: worker RSS minus the model's weights")
    return out, provenance(record, names)
