"""The one reader of vLLM's output (a leaf room: stdlib and pydantic only).

- clean.py     raw line -> (message, process, level): ANSI, docker/CI/rank/process prefixes, logger header
- patterns.py  the pattern table: event kind, regex, vLLM source and format string, versions that print it
- values.py    guarded number conversions; engine config line, "non-default args" dict, Namespace repr
- facts.py     LogFacts (pydantic) built event by event
- stages.py    which events mark each startup stage (serve's live phases)
- reader.py    LogReader (incremental: feed lines, keep state) and read_log / parse_log for whole texts
- command.py   a `vllm serve ...` command quoted in a log

Used by doctor (diagnoses), calibration (measure, check-log), launch (serve's live phases and failure
facts) and plan (alternatives for a failed start).
"""

from __future__ import annotations

from vllmkit.logs.clean import LogLine, clean_line, strip_ansi
from vllmkit.logs.command import CommandLine, parse_command
from vllmkit.logs.facts import LogEvent, LogFacts
from vllmkit.logs.patterns import NEEDLES, PATTERNS, Pattern
from vllmkit.logs.reader import LogReader, ParsedLog, iter_lines, match_line, parse_log, read_log
from vllmkit.logs.stages import STAGE_KEYS, Stage
from vllmkit.logs.values import GIB, parse_config_line, parse_python_dict

MAX_LOG_BYTES = 64 << 20  # of a longer log one end is read (doctor: the end, check-log: the start)

__all__ = [
    "GIB",
    "MAX_LOG_BYTES",
    "NEEDLES",
    "PATTERNS",
    "STAGE_KEYS",
    "CommandLine",
    "LogEvent",
    "LogFacts",
    "LogLine",
    "LogReader",
    "ParsedLog",
    "Pattern",
    "Stage",
    "clean_line",
    "iter_lines",
    "match_line",
    "parse_command",
    "parse_config_line",
    "parse_log",
    "parse_python_dict",
    "read_log",
    "strip_ansi",
]
