"""Cleaning one raw line of vLLM output into (message, process, level).

Prefixes removed, in any stacking order: ANSI colour codes (vllm/logging_utils/formatter.py
ColoredFormatter), docker-compose prefixes ("vllm-1  | "), CI timestamps ("[2025-03-10T15:07:20Z] "),
buildkite pipes ("| "), torch rank prefixes ("[rank0]: "), process prefixes ("(EngineCore_DP0 pid=164) ",
"(Worker_TP0 pid=611) ", "(APIServer pid=1) ", "(VllmWorkerProcess pid=1786) ",
"(VllmWorker rank=0 pid=85) ", "(RayWorkerWrapper pid=5280, ip=…) ") and the logger header of
vllm/logger.py _FORMAT ("INFO 01-23 15:49:08 [gpu_model_runner.py:2653] "; V0 "INFO 01-13 11:35:21
model_runner.py:1099] "; dateless "INFO [model_runner.py:329] "); then Ray's de-duplication suffix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]")
# "vllm-1  | ..." (docker compose) - only when followed by something that looks like vLLM output
COMPOSE_RE = re.compile(r"^[\w.\-]+\s+\|\s(?=.*(?:INFO|WARNING|ERROR|DEBUG|CRITICAL|\(\w+.*pid=|Traceback|\w+Error))")
RANK_RE = re.compile(r"^\[rank\d+\]:\s?")
# CI / log collectors: "[2025-03-10T15:07:20Z] ", "2025-03-10T15:07:20.123Z ", buildkite "  | "
TIMESTAMP_RE = re.compile(r"^(?:\[\d{4}-\d{2}-\d{2}[T ][\d:.,]+Z?\]|\d{4}-\d{2}-\d{2}T[\d:.,]+Z?)\s+")
PIPE_RE = re.compile(r"^\|\s")
# Ray de-duplicates worker lines: "... [repeated 30x across cluster]" (vllm#15598)
RAY_REPEAT_RE = re.compile(r"\s*\[repeated \d+x across cluster\]\s*$")
# "(EngineCore_DP0 pid=164) ", "(VllmWorker rank=0 pid=85) ", "(RayWorkerWrapper pid=5280, ip=10.0.0.1) "
PROC_RE = re.compile(r"^\((?P<proc>[A-Za-z_][\w\-]*(?:\s+rank=\d+)?)\s+pid=(?P<pid>\d+)(?:,\s*ip=[^)]*)?\)\s*")
# "INFO 01-23 15:49:08 [file.py:123] ", "INFO 01-13 11:35:21 file.py:99] ", "INFO [file.py:1] ",
# "WARNING 03-20 23:26:06 [core.py:340] "; the date part is optional (some builds / blogs drop it).
HEADER_RE = re.compile(
    r"^(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+"
    r"(?:\d{2}-\d{2}\s+\d{2}:\d{2}:\d{2}(?:\.\d+)?\s+)?"
    r"(?:\[?[\w./\-]+\.py:\d+\]\s?)?"
)
MAX_MESSAGE_CHARS = 20000  # pathological lines: only their head is matched


@dataclass(frozen=True)
class LogLine:
    number: int  # 1-based line number in the input
    raw: str
    message: str  # cleaned text
    process: str | None
    level: str | None


def strip_ansi(text: str) -> str:
    return ANSI_RE.sub("", text)


def clean_line(raw: str) -> tuple[str, str | None, str | None]:
    """Return (message, process, level) for one raw log line."""
    line = strip_ansi(raw).replace("\r", "").rstrip()
    line = COMPOSE_RE.sub("", line, count=1)
    process: str | None = None
    level: str | None = None
    for _ in range(4):  # prefixes can stack: "[rank0]: (Worker pid=1) ERROR ..."
        before = line
        line = line.lstrip()
        line = TIMESTAMP_RE.sub("", line, count=1)
        line = PIPE_RE.sub("", line, count=1)
        line = RANK_RE.sub("", line, count=1)
        m = PROC_RE.match(line)
        if m:
            process = process or m.group("proc")
            line = line[m.end() :]
        m = HEADER_RE.match(line)
        if m:
            level = level or m.group("level").replace("WARN", "WARNING").replace("WARNINGING", "WARNING")
            line = line[m.end() :]
        if line == before:
            break
    line = RAY_REPEAT_RE.sub("", line)
    return line.strip(), process, level
