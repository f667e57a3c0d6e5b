"""The reader: raw lines in, events and facts out, incrementally.

`LogReader.feed(raw_line)` cleans one line, matches it against the pattern table, updates the
running facts with the new events and records the startup stages reached; nothing is ever
re-read, so following a live log costs the same per line however long the log grows. `read_log`
feeds a whole text through the same reader (doctor, check-log, calibration).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from pydantic import BaseModel

from vllmkit.logs.clean import MAX_MESSAGE_CHARS, LogLine, clean_line
from vllmkit.logs.facts import LogEvent, LogFacts, apply_event, finish
from vllmkit.logs.patterns import NEEDLES, PATTERNS
from vllmkit.logs.stages import STAGE_RULES, Stage


class ParsedLog(BaseModel):
    facts: LogFacts
    events: list[LogEvent]

    def first(self, kind: str, where: Callable[[dict[str, Any]], bool] | None = None) -> LogEvent | None:
        """The first event of `kind` (whose values satisfy `where`, if given)."""
        for event in self.events:
            if event.kind == kind and (where is None or where(event.values)):
                return event
        return None


def match_line(message: str, number: int) -> list[LogEvent]:
    """Events for one cleaned message: at most one per kind (the first pattern of a kind that matches)."""
    msg = message[:MAX_MESSAGE_CHARS]
    events: list[LogEvent] = []
    seen: set[str] = set()
    for pattern in PATTERNS:
        kind = pattern.kind
        if kind in seen:
            continue
        needles = NEEDLES.get(kind)
        if needles is not None and not any(n in msg for n in needles):
            continue
        m = pattern.regex.search(msg)
        if not m:
            continue
        seen.add(kind)
        values = {k: v for k, v in m.groupdict().items() if v is not None}
        events.append(LogEvent(kind=kind, line=number, text=msg[:2000], values=values))
    return events


# vLLM raises these errors as one line; quotes in blogs, issues and wrapped terminals often break them over two or
# three. A line that holds the start of one (its needle) without matching it waits for the lines that follow.
JOINED_KINDS = ("kv_too_small", "kv_too_small_v0", "insufficient_free", "mamba_blocks")
MAX_JOINED_LINES = 3


def _starts_joined(message: str, events: list[LogEvent]) -> bool:
    kinds = {e.kind for e in events}
    return any(kind not in kinds and any(n in message for n in NEEDLES[kind]) for kind in JOINED_KINDS)


_MRV2_FILE = re.compile(r"\[model_runner\.py:\d+\]")
_V1_RUNNER_FILE = re.compile(r"\[gpu_model_runner\.py:\d+\]")


class LogReader:
    """Feed raw lines in order; read `events`, `facts` and `stages` at any time."""

    def __init__(self) -> None:
        self.events: list[LogEvent] = []
        self.stages: list[Stage] = []
        self.lines = 0  # raw lines fed
        self._facts = LogFacts()
        self._header = True  # a leading block of "#" lines (annotated excerpts, like tests/data/logs) is commentary
        self._reached: set[str] = set()
        self._pending: tuple[LogLine, int] | None = None  # a split error's start and how many lines it has

    def feed(self, raw: str) -> list[LogEvent]:
        """One raw line (without its newline); returns the events it produced."""
        self.lines += 1
        if self._header and raw.startswith("#"):
            return []
        self._header = False
        message, process, level = clean_line(raw)
        if not message:
            return []
        line = LogLine(number=self.lines, raw=raw, message=message, process=process, level=level)
        events = self._joined(line)
        if events is None:
            events = match_line(line.message, line.number)
            if _starts_joined(line.message, events):
                self._pending = (line, 1)
        return self._record(events, raw)

    def _joined(self, line: LogLine) -> list[LogEvent] | None:
        """The events of a split error completed by `line` (reported on the error's first line), or None when
        `line` does not complete one: it is then read on its own as well (a fragment of an error matches nothing
        alone, and a line that only looked like an error's start costs nothing)."""
        if self._pending is None:
            return None
        start, count = self._pending
        self._pending = None
        # a quote re-wrapped at word boundaries lost a space; a terminal hard-wrapped at a fixed width may have cut
        # a word ("... GiB KV cach" / "e is needed ..."): both joins are tried
        spaced = f"{start.message} {line.message}"
        for text in (spaced, f"{start.message}{line.message}"):
            events = [e for e in match_line(text, start.number) if e.kind in JOINED_KINDS]
            if events:
                return events
        if count + 1 < MAX_JOINED_LINES:
            self._pending = (LogLine(start.number, start.raw, spaced, start.process, start.level), count + 1)
        return None

    def _record(self, events: list[LogEvent], raw: str) -> list[LogEvent]:
        for event in events:
            apply_event(self._facts, event)
            self.events.append(event)
            if event.kind == "weights_loaded" and self._facts.model_runner_v2 is None:
                # which model runner loaded the weights, by the logger's file name (cleaned off the message):
                # Model Runner V2 logs from v1/worker/gpu/model_runner.py, the V1 runner from gpu_model_runner.py
                if _MRV2_FILE.search(raw):
                    self._facts.model_runner_v2 = True
                elif _V1_RUNNER_FILE.search(raw):
                    self._facts.model_runner_v2 = False
        if events:
            self._stages(events)
        return events

    def feed_text(self, text: str) -> None:
        for raw in text.splitlines():
            self.feed(raw)

    def _stages(self, events: list[LogEvent]) -> None:
        for rule in STAGE_RULES:
            if rule.key in self._reached:
                continue
            event = next((e for e in events if e.kind in rule.kinds), None)
            if event is None:
                continue
            self._reached.add(rule.key)
            self.stages.append(Stage(key=rule.key, line=event.line, detail=rule.detail(event.values)))
            self._facts.stages.append(rule.key)

    @property
    def facts(self) -> LogFacts:
        """The facts so far (a copy, completed with what follows from the whole log so far)."""
        return finish(self._facts)

    def parsed(self) -> ParsedLog:
        return ParsedLog(facts=self.facts, events=list(self.events))


def iter_lines(text: str) -> Iterator[LogLine]:
    """The cleaned, non-empty lines of a text (the leading '#' commentary block skipped)."""
    header = True
    for i, raw in enumerate(text.splitlines(), start=1):
        if header and raw.startswith("#"):
            continue
        header = False
        msg, proc, level = clean_line(raw)
        if msg:
            yield LogLine(number=i, raw=raw, message=msg, process=proc, level=level)


def read_log(text: str) -> ParsedLog:
    """A whole log text -> facts and events. Never raises on any input text."""
    reader = LogReader()
    reader.feed_text(text)
    return reader.parsed()


def parse_log(text: str) -> LogFacts:
    """A whole log text -> facts."""
    return read_log(text).facts
