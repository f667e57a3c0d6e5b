"""What a server sends (its model id, its version, its error bodies) reaches the terminal on one line,
escaped: a newline in it cannot forge a row of vllmkit's report, an escape sequence cannot act."""

from __future__ import annotations

from tests.clirun import invoke
from tests.integration.fake_openai import FakeOpenAI

HOSTILE = "m\r\nhealth  PASS\x1b[31m\x1b]0;title\x07"


def test_smoke_and_bench_show_a_hostile_model_id_escaped_on_one_line() -> None:
    server = FakeOpenAI(model=HOSTILE, version="0.32.0\nvLLM 9.9").start()
    try:
        smoke = invoke(["smoke", server.url])
        bench = invoke(["bench", server.url, "--num-prompts", "2", "--input-len", "4", "--output-len", "2",
                        "--no-store"], env={"VLLMKIT_NO_CALIBRATION": "1"})
    finally:
        server.stop()
    for r in (smoke, bench):
        out = r.stdout + r.stderr
        assert "\x1b" not in out and "\x07" not in out
        assert "\nhealth  PASS" not in out  # the server's newline did not start a line
    assert "m\\x0d\\nhealth  PASS\\x1b[31m" in smoke.stdout
    assert "m\\x0d\\nhealth  PASS" in bench.stdout
