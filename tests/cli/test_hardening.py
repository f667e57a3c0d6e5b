"""Issue 10 through the CLI: what a new user passes wrong, and what hostile files make us print.

Each test names the behaviour that was wrong before: a TP size vLLM refuses planned as FITS, an
unquoted serve line, absurd imported calibrations, raw escape sequences from the calibration store,
an unreadable folder exiting 1, doctor --log on a folder / empty / binary file. The flag validators
get a hypothesis property: any value gives a documented exit code and one error line, never a crash.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tests.clirun import invoke

from vllmkit.calibration.store import CalibrationRecord, add_records, make_record_id, store_path

GIB = 1 << 30
REPO = Path(__file__).resolve().parents[2]
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
OFFLINE = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}


def run(*args: str, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return invoke(list(args), env=env)


# -- 1. tensor-parallel sizes vLLM refuses -----------------------------------------------------------


def test_tp3_is_refused_with_the_rules_and_the_valid_sizes() -> None:
    res = run("plan", "Qwen/Qwen3-8B", "--gpu", "h100", "-tp", "3", "--source", "catalog", env=OFFLINE)
    assert res.exit_code == 2, res.output
    assert "attention heads (32) are not divisible by 3" in res.stderr
    assert "hint: valid TP sizes up to 8: 1, 2, 4, 8" in res.stderr
    doc = json.loads(run("plan", "Qwen/Qwen3-8B", "--gpu", "h100", "-tp", "3", "--source", "catalog", "--json",
                         env=OFFLINE).stdout)
    assert doc["exit_code"] == 2 and doc["errors"][0]["code"] == "invalid-tensor-parallel-size"


@pytest.mark.parametrize(("value", "hint"), [
    ("80", "write --gpu-memory 80GiB"),        # a bare number is bytes (as vLLM's byte flags read it)
    ("23.54", "write --gpu-memory 23.54GiB"),  # the torch total a log prints, pasted without its unit
    ("512MiB", "with a unit, e.g. 48GiB"),     # a unit, but no GPU vLLM runs on is this small
])
def test_gpu_memory_smaller_than_any_gpu_is_refused(value: str, hint: str) -> None:
    # before: planned as a 0.00 GiB GPU ("DOES NOT FIT", exit 3) instead of naming the missing unit
    res = run("plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--gpu-memory", value, "--source", "catalog", env=OFFLINE)
    assert res.exit_code == 2, res.output
    assert res.stderr.count("error:") == 1 and "less than any GPU" in res.stderr
    assert hint in res.stderr
    doc = json.loads(run("plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--gpu-memory", value, "--source", "catalog",
                         "--json", env=OFFLINE).stdout)
    assert doc["exit_code"] == 2 and doc["errors"][0]["code"] == "bad-memory"
    ok = run("plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--gpu-memory", "1GiB", "--source", "catalog", env=OFFLINE)
    assert ok.exit_code == 3 and "less than any GPU" not in ok.output  # the floor itself is accepted


@pytest.mark.parametrize(("flags", "code", "words"), [
    # vllm/config/lora.py MaxLoRARanks (0.32): vLLM's parser refuses any other rank
    (["--enable-lora", "--max-lora-rank", "7"], 2, "vLLM does not take --max-lora-rank 7"),
    # more memory held by others than the GPU has (was planned as "free memory -20.81/79.19 GiB")
    (["--gpu-memory-in-use", "100GiB"], 2, "is not less than the 79.19 GiB"),
    # vLLM allocates --kv-cache-memory-bytes whole; 10 TiB on an 80 GB card was planned as FITS
    (["--kv-cache-memory-bytes", "10TiB"], 3, "allocating the KV cache runs out of memory"),
])
def test_values_vllm_cannot_run_are_refused(flags: list[str], code: int, words: str) -> None:
    res = run("plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--source", "catalog", *flags, env=OFFLINE)
    assert res.exit_code == code, res.output
    assert words in res.stderr and res.stderr.count("error:") == 1 and "Traceback" not in res.output


def test_tp_above_gpu_count_is_refused() -> None:
    res = run("plan", "Qwen/Qwen3-8B", "--gpu", "h100", "-tp", "16", "--gpu-count", "8", "--source", "catalog",
              env=OFFLINE)
    assert res.exit_code == 2 and "needs 16 GPUs, more than --gpu-count 8" in res.stderr


# -- 3. the printed serve line is shell-quoted -----------------------------------------------------


def test_printed_serve_line_survives_copy_paste(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    folder = tmp_path / "my model $(touch pwned) it's"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "vocab_size": 256, "max_position_embeddings": 2048}))
    res = run("plan", str(folder), "--gpu", "h100", env=OFFLINE)
    assert res.exit_code == 0, res.output
    line = res.stdout.split("vllm serve command:\n", 1)[1].strip()
    argv = json.loads(run("plan", str(folder), "--gpu", "h100", "--json", env=OFFLINE).stdout)["data"]["serve_command"]
    # paste the line into bash with `vllm` defined to print its arguments
    out = subprocess.run(["bash", "-c", 'vllm() { printf "%s\\0" vllm "$@"; }\n' + line],
                         capture_output=True, check=True, cwd=tmp_path).stdout.decode()
    assert out.split("\0")[:-1] == argv
    assert str(folder) in argv
    assert not marker.exists()


# -- 4. calibration import bounds ---------------------------------------------------------------------


def _record(**over: object) -> dict:
    fields: dict = {"gpu": "h100-sxm", "vllm_version": "0.32.0", "family": "llama", "model": "m",
                    "max_num_batched_tokens": 8192, "tp": 1, "pp": 1, "enforce_eager": False,
                    "terms": {"non_torch": GIB}, "lump": False, "log_sha256": None}
    fields.update(over)
    return {"record_id": make_record_id(fields), "recorded_at": "2026-11-29T10:00:00+00:00", **fields}


@pytest.mark.parametrize(("record", "words"), [
    (_record(terms={"non_torch": 931 * GIB}), "larger than any device's memory"),
    (_record(terms={"activation": 90 * GIB}, total_bytes=80 * GIB), "larger than the device's total_bytes"),
    (_record(weights_bytes=70 * GIB, terms={"non_torch": 20 * GIB}, total_bytes=80 * GIB), "weights + non-KV"),
    (_record(tp=10**6), "tp"),
    (_record(gpu_memory_utilization=7.0), "gpu_memory_utilization"),
])
def test_import_refuses_physically_impossible_records(tmp_path: Path, record: dict, words: str) -> None:
    file = tmp_path / "in.jsonl"
    file.write_text(json.dumps(record) + "\n")
    res = run("calibration", "import", str(file))
    assert res.exit_code == 2, res.output
    assert words in res.stderr and "nothing was imported" in res.stderr


def test_import_of_deeply_nested_json_is_a_usage_error(tmp_path: Path) -> None:
    for text in ("[" * 100_000 + "]" * 100_000, '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"):
        file = tmp_path / "deep.json"
        file.write_text(text)
        res = run("calibration", "import", str(file))
        assert res.exit_code == 2, res.output
        assert "unexpected" not in res.stderr


def test_plan_ignores_a_stored_record_larger_than_the_gpu(tmp_path: Path) -> None:
    """A record hand-added to the store (no import check) claiming 200 GiB of activation on an 80 GB
    H100 must not turn every plan into "does not fit"."""
    env = {"VLLMKIT_DATA_DIR": str(tmp_path / "d"), "HF_HUB_OFFLINE": "1"}
    fields = {"gpu": "h100-sxm", "vllm_version": "0.32.0", "family": "qwen3", "model": "Qwen/Qwen3-8B",
              "max_num_batched_tokens": 8192, "tp": 1, "pp": 1, "enforce_eager": False,
              "terms": {"non_torch": 1 * GIB, "activation": 200 * GIB}, "lump": False, "log_sha256": None}
    record = CalibrationRecord.model_construct(record_id=make_record_id(fields), recorded_at="2026-11-29T10:00:00+00:00",
                                               schema_version=1, notes={}, device="cuda", source="hand edit",
                                               gpu_display_name=None, weights_bytes=None, total_bytes=None,
                                               requested_bytes=None, gpu_memory_utilization=None,
                                               available_kv_bytes=None, **fields)
    path = store_path(env)
    path.parent.mkdir(parents=True)
    path.write_text(record.model_dump_json() + "\n")
    doc = json.loads(run("plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--source", "catalog", "--vllm-version", "0.32.0",
                         "--json", env=env).stdout)
    assert doc["exit_code"] == 0 and doc["data"]["fits"] is True
    assert doc["data"]["memory"]["sources"]["activation"] != "calibrated"


# -- 5. nothing imported reaches the terminal raw -----------------------------------------------------


def test_calibration_list_escapes_imported_strings(tmp_path: Path) -> None:
    hostile = "\x1b[2J\x1b]0;owned\x07\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\ [/] [link=http://x]y"
    records = [CalibrationRecord.model_validate(_record(model=hostile, family="llama\x9b31m", gpu="h100\r-sxm"))]
    add_records(store_path(dict(os.environ)), records)
    res = run("calibration", "list")
    assert res.exit_code == 0, res.output
    assert not CONTROL.search(res.stdout.replace("\n", ""))
    assert "\\x1b[2J" in res.stdout and "\\x9b" in res.stdout and "\\x0d" in res.stdout
    assert "[link=http://x]" in res.stdout  # markup shown, not interpreted


# -- 7. unreadable folders and non-logs --------------------------------------------------------------


def _without_dac_override() -> list[str]:
    """A prefix that makes root obey file permissions (drops CAP_DAC_OVERRIDE / CAP_DAC_READ_SEARCH)."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: file permissions cannot be enforced")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


def test_unreadable_model_folder_exits_4(tmp_path: Path) -> None:
    folder = tmp_path / "locked"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    folder.chmod(0)
    try:
        env = {**os.environ, "PYTHONPATH": str(REPO / "src"), **OFFLINE}
        proc = subprocess.run([*_without_dac_override(), sys.executable, "-m", "vllmkit", "plan", str(folder),
                               "--gpu", "h100"], capture_output=True, text=True, env=env, timeout=120)
    finally:
        folder.chmod(0o755)
    assert proc.returncode == 4, proc.stderr
    assert "Permission denied" in proc.stderr and "unexpected" not in proc.stderr


@pytest.mark.parametrize(("content", "words"), [
    (None, "is a folder, not a log file"),
    (b"", "is empty"),
    (bytes(range(256)) * 40, "is binary data"),
    (b"hello\nthis is a shopping list\n", "is not a vLLM log"),
])
def test_doctor_log_refuses_what_is_not_a_vllm_log(tmp_path: Path, content: bytes | None, words: str) -> None:
    target = tmp_path / "thing"
    if content is None:
        target.mkdir()
    else:
        target.write_bytes(content)
    res = run("doctor", "--log", str(target))
    assert res.exit_code == 2, res.output
    assert words in res.stderr
    assert "no problems recognised" not in res.stdout


# -- flag validators: every value gets a documented answer ---------------------------------------------

INT_TEXT = st.one_of(st.integers(min_value=-(2**70), max_value=2**70).map(str),
                     st.sampled_from(["0", "-1", "1e3", "nan", "", " ", "3.5", "0x10", "99999999999999999999999"]))
SIZE_TEXT = st.sampled_from(["48GiB", "0", "-1GiB", "1e400", "nan", "inf", "16EiB", "1.5TB", "GiB", "12 GiB", "x",
                             "99999999999999999999999999GiB", "1b"])
LEN_TEXT = st.sampled_from(["auto", "-1", "0", "1e400", "nan", "inf", "32k", "32K", "1M", "-5k", "k", "1e9",
                            "99999999999999999999999999", "4096.7"])
FLAGS = st.dictionaries(
    st.sampled_from(["-tp", "-pp", "--gpu-count", "--max-num-seqs", "--max-num-batched-tokens", "--block-size",
                     "--max-model-len", "--gpu-memory-utilization", "--gpu-memory", "--kv-cache-memory-bytes",
                     "--min-concurrency", "--kv-cache-dtype", "--device"]),
    st.just(""), max_size=4,
).flatmap(lambda keys: st.fixed_dictionaries({k: (
    LEN_TEXT if k == "--max-model-len"
    else SIZE_TEXT if k in ("--gpu-memory", "--kv-cache-memory-bytes")
    else st.sampled_from(["0.9", "0", "-0.5", "1.0000001", "nan", "inf", "1e-300", "x"]) if k in (
        "--gpu-memory-utilization", "--min-concurrency")
    else st.sampled_from(["auto", "fp8", "bogus", "\x1b[2J"]) if k == "--kv-cache-dtype"
    else st.sampled_from(["cuda", "cpu", "tpu", "\x1b]0;x\x07"]) if k == "--device"
    else INT_TEXT) for k in keys}))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(FLAGS)
@example({"--max-model-len": "1e400"})  # was an OverflowError (exit 1)
@example({"--gpu-memory-utilization": "nan"})
def test_any_flag_value_gets_a_documented_exit_code(flags: dict[str, str]) -> None:
    args = ["plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--source", "catalog"]
    for flag, value in flags.items():
        args += [flag, value]
    res = run(*args, env=OFFLINE)
    assert res.exit_code in (0, 2, 3, 4, 5), (args, res.output, res.exception)
    assert "unexpected error" not in res.stderr and "Traceback" not in res.output
    assert not CONTROL.search(res.stderr.replace("\n", "")), res.stderr


LOG_LINE = st.sampled_from([
    "INFO 11-29 21:13:24 [gpu_worker.py:1] Available KV cache memory: {x} GiB",
    "(EngineCore pid=1) INFO 11-29 21:13:24 [core.py:1] Model loading took 1.5 GiB {x}",
    "ERROR 11-29 21:13:24 [core.py:1] torch.OutOfMemoryError: CUDA out of memory. {x}",
    "(APIServer pid=1) INFO 11-29 21:13:24 [api_server.py:1] non-default args: {{'model': '{x}'}}",
    "ValueError: {x}",
])
HOSTILE_BIT = st.one_of(st.text(max_size=12), st.sampled_from(
    ["\x1b[2J", "\x1b]0;owned\x07", "\x1b]8;;http://evil.example/\x1b\\x\x1b]8;;\x1b\\", "\x9b1m", "\r", "\u202e",
     "[/]", "[link=http://x]y"]))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                    HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(LOG_LINE, HOSTILE_BIT), min_size=1, max_size=6))
def test_doctor_prints_hostile_log_text_escaped(tmp_path: Path, lines: list[tuple[str, str]]) -> None:
    log = tmp_path / "vllm.log"
    log.write_text("\n".join(t.format(x=x) for t, x in lines) + "\n", encoding="utf-8", errors="surrogatepass")
    res = run("doctor", "--log", str(log))
    assert res.exit_code in (0, 2, 3), res.output
    assert not CONTROL.search(res.stdout.replace("\n", "") + res.stderr.replace("\n", "")), res.output


SERVE_FLAGS = st.fixed_dictionaries({}, optional={
    "--port": st.one_of(st.integers(min_value=-(2**40), max_value=2**40).map(str), st.sampled_from(["0", "65535", "x"])),
    "--host": st.sampled_from(["127.0.0.1", "0.0.0.0", "::1", "[::1]", "my-host.local", "bad host", "\x1b[2J", "-",
                               "a" * 300, "$(touch x)"]),
    "--health-timeout": st.sampled_from(["600", "0", "-1", "nan", "inf", "1e400", "x"]),
    "--devices": st.sampled_from(["0,1", "", "-1", "x", "0,,1"]),
})


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SERVE_FLAGS)
def test_any_serve_flag_value_gets_a_documented_exit_code(flags: dict[str, str]) -> None:
    """`serve --dry-run` (nothing started): a port, host, timeout or device list the OS or vLLM would
    refuse is a usage error (exit 2), never a crash nor a printed command that cannot run."""
    args = ["serve", "Qwen/Qwen3-8B", "--gpu", "h100", "--source", "catalog", "--dry-run"]
    for flag, value in flags.items():
        args += [flag, value]
    res = run(*args, env=OFFLINE)
    assert res.exit_code in (0, 2), (args, res.output)
    assert "unexpected error" not in res.stderr
    assert not CONTROL.search(res.output.replace("\n", ""))
    if res.exit_code == 0:
        port = flags.get("--port")
        assert port is None or 1 <= int(port) <= 65535


def test_a_huge_gpu_count_with_a_tp_size_answers_at_once() -> None:
    """-tp 3 with --gpu-count 10**12: the hint lists the TP sizes the model accepts up to the GPU count; it
    used to try every size up to the count (hypothesis found the hang). Qwen3-8B's 32 heads bound the list."""
    res = run("plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--source", "catalog", "-tp", "3", "--gpu-count",
              str(10**12), env=OFFLINE)
    assert res.exit_code == 2
    assert "1, 2, 4, 8, 16, 32" in res.stderr.replace("\n", " ")


# -- files that never end: a device named where a file is expected ---------------------------------


@pytest.mark.parametrize("argv", [
    ["calibration", "import", "/dev/zero"],   # read into memory until the process was killed
    ["check-log", "/dev/urandom"],             # read forever
    ["doctor", "--log", "/dev/zero"],
    ["bench", "http://127.0.0.1:9", "--prompts", "/dev/zero"],
    ["smoke", "http://127.0.0.1:9", "--api-key-file", "/dev/zero"],
])
def test_a_device_is_refused_in_one_line(argv: list[str]) -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero on this system")
    res = run(*argv, env=OFFLINE)
    assert res.exit_code == 2, res.output
    assert "is a device, not a" in res.stderr or "a device, not a log file" in res.stderr
    assert res.stderr.count("error:") == 1 and "Traceback" not in res.output


def test_an_oversized_import_is_refused_before_reading(tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    with big.open("wb") as fh:  # sparse: 65 MiB that take no disk
        fh.truncate(65 << 20)
    res = run("calibration", "import", str(big))
    assert res.exit_code == 2 and "is larger than 64 MiB; not a calibration export" in res.stderr
