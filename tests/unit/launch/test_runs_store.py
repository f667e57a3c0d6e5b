"""The run record is written by more than one writer at once: a foreground `vllmkit serve` saves it when
its server ends while `vllmkit stop` (another process, or a thread in tests) saves it after stopping
that server. Each save must stay atomic and never fail because the other writer moved its temp file."""

from __future__ import annotations

import threading
from pathlib import Path

from vllmkit.launch import runs


def _record(folder: Path) -> runs.RunRecord:
    return runs.RunRecord(run_id="r1", folder=str(folder), started_at=runs.now_iso(), model="m",
                          served_model_name="m", device="cuda", host="127.0.0.1", port=8000,
                          url="http://127.0.0.1:8000", argv=[], env={}, launcher="module", detached=False,
                          health_timeout_s=60.0, pid=4242)


def test_concurrent_saves_never_fail_and_leave_a_whole_record(tmp_path: Path) -> None:
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def writer(status: str) -> None:
        record = _record(tmp_path)
        record.status = status  # type: ignore[assignment]
        start.wait()
        try:
            for _ in range(300):
                runs.save(record)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(s,)) for s in ("stopped", "running")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    loaded = runs.load(tmp_path)
    assert loaded is not None and loaded.status in ("stopped", "running")
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
