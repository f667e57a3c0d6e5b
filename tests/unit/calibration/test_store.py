"""The calibration store: location, de-duplication, the lookup rule, and safety under concurrent and
killed writers (real processes, real SIGKILL)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from vllmkit.calibration.store import (
    CalibrationRecord,
    add_records,
    data_dir,
    load_records,
    lookup_terms,
    make_record_id,
    read_import_file,
    remove_records,
    store_path,
)
from vllmkit.errors import UsageError

GIB = 1 << 30
MIB = 1 << 20
REPO = Path(__file__).resolve().parents[3]


def rec(**over) -> CalibrationRecord:
    fields = {
        "gpu": "h100-sxm", "vllm_version": "0.32.0", "family": "llama", "model": "meta-llama/Llama-3.1-8B-Instruct",
        "max_num_batched_tokens": 8192, "tp": 1, "pp": 1, "enforce_eager": False,
        "terms": {"non_torch": 400 * MIB, "activation": 2 * GIB, "cudagraph": 300 * MIB}, "lump": False,
        "log_sha256": None,
    }
    recorded_at = over.pop("recorded_at", "2026-11-29T10:00:00+00:00")
    fields.update(over)
    return CalibrationRecord(record_id=make_record_id(fields), recorded_at=recorded_at, **fields)


def env_for(tmp_path: Path) -> dict[str, str]:
    return {"VLLMKIT_DATA_DIR": str(tmp_path / "data")}


def lookup(env, **over):
    args = {"gpu": "h100-sxm", "vllm_version": "0.32.0", "family": "llama", "max_num_batched_tokens": 8192,
            "tp": 1, "pp": 1, "enforce_eager": False}
    args.update(over)
    return lookup_terms(env=env, **args)


# ----------------------------------------------------------------------------- location


def test_data_dir_precedence(tmp_path: Path) -> None:
    assert data_dir({"VLLMKIT_DATA_DIR": "/a", "XDG_DATA_HOME": "/b", "HOME": "/c"}) == Path("/a")
    assert data_dir({"XDG_DATA_HOME": "/b", "HOME": "/c"}) == Path("/b/vllmkit")
    assert data_dir({"HOME": "/c"}) == Path("/c/.local/share/vllmkit")
    assert store_path({"VLLMKIT_DATA_DIR": "/a"}) == Path("/a/calibrations.jsonl")


def test_env_is_read_per_call_not_at_import(tmp_path: Path) -> None:
    one, two = {"VLLMKIT_DATA_DIR": str(tmp_path / "one")}, {"VLLMKIT_DATA_DIR": str(tmp_path / "two")}
    add_records(store_path(one), [rec()])
    assert lookup(one)[1] is not None
    assert lookup(two) == ({}, None)


# ----------------------------------------------------------------------------- basic store


def test_add_deduplicates_by_record_id(tmp_path: Path) -> None:
    path = store_path(env_for(tmp_path))
    a, b = rec(), rec(tp=2)
    assert add_records(path, [a, b]) == (2, 0)
    assert add_records(path, [a]) == (0, 1)
    records, bad = load_records(path)
    assert [r.record_id for r in records] == [a.record_id, b.record_id] and bad == []


def test_record_id_is_content_hash_not_time(tmp_path: Path) -> None:
    assert rec(recorded_at="2026-01-01T00:00:00+00:00").record_id == rec().record_id
    assert rec(terms={"non_torch": 1}).record_id != rec().record_id


def test_remove_records(tmp_path: Path) -> None:
    path = store_path(env_for(tmp_path))
    add_records(path, [rec(), rec(tp=2), rec(family="qwen3")])
    assert remove_records(path, lambda r: r.family == "llama") == 2
    assert [r.family for r in load_records(path)[0]] == ["qwen3"]


def test_invalid_lines_are_skipped_and_never_break_lookup(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    path = store_path(env)
    path.parent.mkdir(parents=True)
    good = rec()
    path.write_text("not json\n" + good.model_dump_json() + "\n" + json.dumps({"record_id": "zz"}) + "\n{\"trunc")
    records, bad = load_records(path)
    assert [r.record_id for r in records] == [good.record_id]
    assert [n for n, _ in bad] == [1, 3, 4]
    assert lookup(env)[1] is not None


def test_lookup_on_missing_or_unreadable_store_is_empty(tmp_path: Path) -> None:
    assert lookup(env_for(tmp_path)) == ({}, None)
    env = env_for(tmp_path)
    store_path(env).mkdir(parents=True)  # a folder where the file should be
    assert lookup(env) == ({}, None)


def test_negative_or_unknown_terms_are_rejected() -> None:
    with pytest.raises(ValueError):
        rec(terms={"non_torch": -1})
    with pytest.raises(ValueError):
        rec(terms={"weights": 1})
    with pytest.raises(ValueError):
        rec(terms={})


def test_import_file_is_all_or_nothing(tmp_path: Path) -> None:
    f = tmp_path / "in.jsonl"
    f.write_text(rec().model_dump_json() + "\n" + '{"record_id": "abc"}\n')
    with pytest.raises(UsageError, match="line 2"):
        read_import_file(f)
    f.write_text(json.dumps([json.loads(rec().model_dump_json())]))
    assert len(read_import_file(f)) == 1


# ----------------------------------------------------------------------------- lookup rule


def test_lookup_returns_calibrated_terms_with_provenance(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    r = rec(gpu_display_name="NVIDIA H100 SXM5 80GB")
    add_records(store_path(env), [r])
    terms, prov = lookup(env)
    assert {k: (t.bytes, t.source) for k, t in terms.items()} == {
        "non_torch": (400 * MIB, "calibrated"), "activation": (2 * GIB, "calibrated"),
        "cudagraph": (300 * MIB, "calibrated")}
    assert prov is not None
    assert prov.startswith("calibrated from 2026-11-29 run of meta-llama/Llama-3.1-8B-Instruct on NVIDIA H100 SXM5 80GB, "
                           "vLLM 0.32.0 (record id " + r.record_id[:12] + ")")


# (description, stored record overrides, lookup overrides, expected term names or None)
RULE_CASES = [
    ("other gpu never matches", {"gpu": "a100-80gb-sxm"}, {}, None),
    ("other family never matches", {"family": "qwen3"}, {}, None),
    ("gpu/family match ignores case", {"family": "Llama"}, {}, ["activation", "cudagraph", "non_torch"]),
    ("same minor, other patch is used", {"vllm_version": "0.32.1"}, {}, ["activation", "cudagraph", "non_torch"]),
    ("other minor is not used", {"vllm_version": "0.31.0"}, {}, None),
    ("other mnbt: activation dropped", {"max_num_batched_tokens": 2048}, {}, ["cudagraph", "non_torch"]),
    ("other TP: every GPU term dropped", {"tp": 2}, {}, None),
    ("eager record: no cudagraph term", {"enforce_eager": True, "terms": {"non_torch": 1, "activation": 2}}, {},
     ["activation", "non_torch"]),
    ("eager plan: cudagraph not used", {}, {"enforce_eager": True}, ["activation", "non_torch"]),
    ("lump used only on a full input match", {"lump": True, "max_num_batched_tokens": 2048}, {}, None),
    ("lump on full match gives all its terms", {"lump": True}, {}, ["activation", "cudagraph", "non_torch"]),
]


@pytest.mark.parametrize(("stored", "asked", "expected"), [c[1:] for c in RULE_CASES], ids=[c[0] for c in RULE_CASES])
def test_lookup_rule(tmp_path: Path, stored: dict, asked: dict, expected: list[str] | None) -> None:
    env = env_for(tmp_path)
    add_records(store_path(env), [rec(**stored)])
    terms, prov = lookup(env, **asked)
    if expected is None:
        assert (terms, prov) == ({}, None)
    else:
        assert sorted(terms) == expected and prov is not None


def test_lookup_prefers_more_terms_then_same_version_then_model_then_newest(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    path = store_path(env)
    other_mnbt = rec(max_num_batched_tokens=2048, terms={"non_torch": 1, "activation": 1, "cudagraph": 1})
    patch = rec(vllm_version="0.32.1", terms={"non_torch": 2, "activation": 2, "cudagraph": 2})
    add_records(path, [other_mnbt, patch])
    assert lookup(env)[0]["non_torch"].bytes == 2  # 3 usable terms beat 2, despite the patch version
    same_version_old = rec(terms={"non_torch": 3, "activation": 3, "cudagraph": 3}, recorded_at="2026-01-01T00:00:00+00:00")
    add_records(path, [same_version_old])
    assert lookup(env)[0]["non_torch"].bytes == 3  # same x.y.z beats a newer same-minor record
    newer = rec(terms={"non_torch": 4, "activation": 4, "cudagraph": 4}, recorded_at="2026-12-01T00:00:00+00:00",
                model="meta-llama/Llama-3.1-70B-Instruct")
    add_records(path, [newer])
    assert lookup(env)[0]["non_torch"].bytes == 4  # newest wins among equals
    assert lookup(env, model="meta-llama/Llama-3.1-8B-Instruct")[0]["non_torch"].bytes == 3  # same model wins


def test_cpu_terms_include_runtime_without_weights(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    add_records(store_path(env), [rec(gpu="cpu", device="cpu", max_num_batched_tokens=2048,
                                      terms={"cpu_non_kv": 900 * MIB}, weights_bytes=100 * MIB)])
    terms, _ = lookup(env, gpu="cpu", max_num_batched_tokens=2048)
    assert terms["cpu_non_kv"].bytes == 900 * MIB
    assert terms["cpu_runtime"].bytes == 800 * MIB  # 900 MiB RSS - 100 MiB weights


# ----------------------------------------------------------------------------- concurrency and crashes

WRITER = textwrap.dedent("""
    import os, sys, time
    from vllmkit.calibration.store import CalibrationRecord, add_records, make_record_id
    from pathlib import Path
    path, tag, count, pad = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    if pad:
        # a slow disk: at most 64 KiB per write() call, 2 ms each, so SIGKILL lands inside the write
        real_write = os.write
        def slow_write(fd, data):
            time.sleep(0.002)
            return real_write(fd, bytes(data[:65536]))
        os.write = slow_write
    i = 0
    while count < 0 or i < count:
        fields = dict(gpu="h100-sxm", vllm_version="0.32.0", family="llama", model=f"{tag}-{i}",
                      max_num_batched_tokens=8192, tp=1, pp=1, enforce_eager=False, terms={"non_torch": i},
                      lump=False, log_sha256=None)
        r = CalibrationRecord(record_id=make_record_id(fields), recorded_at="2026-11-29T00:00:00+00:00",
                              notes={"pad": "x" * pad}, **fields)
        add_records(path, [r])
        print(i, flush=True)
        i += 1
""")


def _writer(path: Path, tag: str, count: int, pad: int = 0) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    return subprocess.Popen([sys.executable, "-c", WRITER, str(path), tag, str(count), str(pad)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_two_processes_writing_concurrently_keep_every_record(tmp_path: Path) -> None:
    path = store_path(env_for(tmp_path))
    procs = [_writer(path, "a", 40), _writer(path, "b", 40)]
    for p in procs:
        _out, err = p.communicate(timeout=240)
        assert p.returncode == 0, err
    records, bad = load_records(path)
    assert bad == []
    assert sorted(r.model for r in records) == sorted([f"a-{i}" for i in range(40)] + [f"b-{i}" for i in range(40)])
    # every line is one whole record
    assert len(path.read_text().splitlines()) == 80


def test_writer_killed_mid_write_leaves_a_valid_store(tmp_path: Path) -> None:
    path = store_path(env_for(tmp_path))
    previous = 0
    killed_inside_a_write = 0
    for round_no in range(5):
        # ~1 MB records written through a slow write(): the kill lands while the new store is half written
        proc = _writer(path, f"r{round_no}", -1, pad=1_000_000)
        assert proc.stdout is not None
        proc.stdout.readline()  # at least one record of this round was written
        time.sleep(0.03 + 0.05 * round_no)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        killed_inside_a_write += bool(list(path.parent.glob(".calibrations.jsonl.*.tmp")))
        records, bad = load_records(path)
        assert bad == [], f"torn store after kill {round_no}: {bad}"
        assert len(records) > previous
        assert all(line.endswith("}") for line in path.read_text().splitlines())
        previous = len(records)
    assert killed_inside_a_write >= 1  # the scenario really happened (a half-written temp file was left)
    # the next writer cleans up what killed writers left and appends normally
    add_records(path, [rec()])
    assert len(load_records(path)[0]) == previous + 1
    assert list(path.parent.glob(".calibrations.jsonl.*.tmp")) == []
