"""`vllmkit calibration list|clear|export|import` (CliRunner, isolated data dir)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.clirun import invoke

from vllmkit.calibration.store import CalibrationRecord, add_records, make_record_id, store_path

MIB = 1 << 20


def rec(**over) -> CalibrationRecord:
    fields = {"gpu": "h100-sxm", "vllm_version": "0.32.0", "family": "llama", "model": "meta-llama/Llama-3.1-8B-Instruct",
              "max_num_batched_tokens": 8192, "tp": 1, "pp": 1, "enforce_eager": False,
              "terms": {"non_torch": 400 * MIB}, "lump": False, "log_sha256": None}
    fields.update(over)
    return CalibrationRecord(record_id=make_record_id(fields), recorded_at="2026-11-29T10:00:00+00:00",
                             source="check-log test.log", **fields)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    values = {"VLLMKIT_DATA_DIR": str(tmp_path / "data")}
    monkeypatch.setenv("VLLMKIT_DATA_DIR", values["VLLMKIT_DATA_DIR"])
    return values


def run(*args: str):
    return invoke(list(args))


def data(result) -> dict:
    assert result.stdout, result.stderr
    doc = json.loads(result.stdout)
    assert doc["command"].startswith("calibration ")
    return doc


def seed(env: dict[str, str], *records: CalibrationRecord) -> Path:
    path = store_path(env)
    add_records(path, records)
    return path


def test_list_empty_and_filled(env) -> None:
    doc = data(run("calibration", "list", "--json"))
    assert doc["exit_code"] == 0 and doc["data"]["records"] == []
    assert doc["data"]["store"] == str(Path(env["VLLMKIT_DATA_DIR"]) / "calibrations.jsonl")
    assert "no calibrations" in run("calibration", "list").stdout
    a, b = rec(), rec(family="qwen3", gpu="a100-80gb-sxm")
    seed(env, a, b)
    listed = data(run("calibration", "list", "--json"))["data"]["records"]
    assert [r["record_id"] for r in listed] == [a.record_id, b.record_id]
    assert [r["record_id"] for r in data(run("calibration", "list", "--family", "qwen3", "--json"))["data"]["records"]] \
        == [b.record_id]
    human = run("calibration", "list").stdout
    assert a.record_id[:12] in human and "non_torch 0.39 GiB" in human  # 400 MiB = 0.39 GiB


def test_list_reports_damaged_lines(env) -> None:
    path = seed(env, rec())
    with path.open("a") as fh:
        fh.write("{broken\n")
    res = run("calibration", "list")
    assert res.exit_code == 0 and "warning: 1 line(s)" in res.stderr
    assert data(run("calibration", "list", "--json"))["data"]["invalid_lines"] == [2]


def test_export_clear_import_round_trip(env, tmp_path: Path) -> None:
    a, b = rec(), rec(tp=2)
    seed(env, a, b)
    out = tmp_path / "team.jsonl"
    doc = data(run("calibration", "export", str(out), "--json"))
    assert doc["data"]["exported"] == 2
    assert [json.loads(line)["record_id"] for line in out.read_text().splitlines()] == [a.record_id, b.record_id]
    assert run("calibration", "export", str(out)).exit_code == 2  # exists: needs --force

    cleared = data(run("calibration", "clear", "--yes", "--json"))
    assert cleared["data"]["removed"] == 2
    assert data(run("calibration", "list", "--json"))["data"]["records"] == []

    imported = data(run("calibration", "import", str(out), "--json"))["data"]
    assert (imported["read"], imported["added"], imported["duplicates"]) == (2, 2, 0)
    again = data(run("calibration", "import", str(out), "--json"))["data"]
    assert (again["added"], again["duplicates"]) == (0, 2)  # merge de-duplicates by record id
    assert len(data(run("calibration", "list", "--json"))["data"]["records"]) == 2


def test_import_merges_with_existing_records(env, tmp_path: Path) -> None:
    mine, theirs = rec(), rec(family="qwen3")
    seed(env, mine)
    f = tmp_path / "theirs.jsonl"
    f.write_text(theirs.model_dump_json() + "\n" + mine.model_dump_json() + "\n")
    result = data(run("calibration", "import", str(f), "--json"))["data"]
    assert (result["added"], result["duplicates"]) == (1, 1)
    assert {r["family"] for r in data(run("calibration", "list", "--json"))["data"]["records"]} == {"llama", "qwen3"}


def test_import_rejects_invalid_files_and_imports_nothing(env, tmp_path: Path) -> None:
    good = rec()
    bad = json.loads(rec(family="qwen3").model_dump_json())
    bad["terms"] = {"non_torch": -5}
    f = tmp_path / "bad.jsonl"
    f.write_text(good.model_dump_json() + "\n" + json.dumps(bad) + "\n")
    res = run("calibration", "import", str(f))
    assert res.exit_code == 2
    assert res.stderr.startswith(f"error: {f} line 2 is not a valid calibration record") and "hint:" in res.stderr
    assert data(run("calibration", "list", "--json"))["data"]["records"] == []
    missing = data(run("calibration", "import", str(tmp_path / "none.jsonl"), "--json"))
    assert missing["exit_code"] == 2 and missing["errors"][0]["code"] == "file-not-found"


def test_clear_needs_yes_when_not_interactive(env) -> None:
    seed(env, rec())
    res = run("calibration", "clear")
    assert res.exit_code == 2 and "--yes" in res.stderr
    assert len(data(run("calibration", "list", "--json"))["data"]["records"]) == 1


def test_clear_selected_records(env) -> None:
    a, b, c = rec(), rec(tp=2), rec(gpu="a100-80gb-sxm")
    seed(env, a, b, c)
    assert data(run("calibration", "clear", a.record_id[:8], "--yes", "--json"))["data"]["removed"] == 1
    assert data(run("calibration", "clear", "--gpu", "a100-80gb-sxm", "--yes", "--json"))["data"]["removed"] == 1
    assert [r["record_id"] for r in data(run("calibration", "list", "--json"))["data"]["records"]] == [b.record_id]
    unknown = run("calibration", "clear", "ffffffff", "--yes")
    assert unknown.exit_code == 2 and "no calibration with id" in unknown.stderr


def test_unwritable_store_is_a_clean_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("VLLMKIT_DATA_DIR", str(blocker / "sub"))  # a path below a file
    f = tmp_path / "in.jsonl"
    f.write_text(rec().model_dump_json() + "\n")
    res = run("calibration", "import", str(f))
    assert res.exit_code == 2 and res.stderr.startswith("error: cannot write the calibration store")
    assert "Traceback" not in res.stderr + res.stdout
