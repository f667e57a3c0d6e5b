"""Why a start failed, as `serve` reports it.

The cause and fix come from whoever the caller hands in as the `Diagnoser` (the CLI passes the
doctor's diagnosis, so launch does not depend on the doctor). Without one, serve still says what the
log reader saw: the first exception and vLLM's own estimate of the longest context that fits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from pydantic import BaseModel, Field

from vllmkit.logs import LogFacts


class StartFailure(BaseModel):
    code: str
    title: str
    evidence: str = ""
    fix: str = ""
    suggested_flags: list[str] = Field(default_factory=list)
    alternatives: list[str] = Field(default_factory=list)  # "flags: effect"
    estimated_max_model_len: int | None = None
    source: str = "doctor"  # doctor | log


class AlternativeLike(Protocol):
    flags: list[str]
    effect: str


class DiagnosisLike(Protocol):
    """What launch reads of a diagnosis (doctor.diagnose.Diagnosis has these fields)."""

    code: str
    severity: str
    title: str
    evidence: str
    fix: str
    suggested_flags: list[str]
    details: dict[str, Any]

    @property
    def alternatives(self) -> Sequence[AlternativeLike]: ...


# log text -> diagnoses (errors first); the CLI passes the doctor's
Diagnoser = Callable[[str], Sequence[DiagnosisLike]]


def _alternative(alt: AlternativeLike) -> str:
    flags = " ".join(str(f) for f in alt.flags)
    return f"{flags}: {alt.effect}" if flags and alt.effect else (flags or alt.effect)


def start_failures(log_text: str, facts: LogFacts, diagnose: Diagnoser | None) -> list[StartFailure]:
    """Errors only (warnings/info are not the cause); the reader's facts fill vLLM's estimate."""
    found: list[StartFailure] = []
    if diagnose is not None:
        for d in diagnose(log_text):
            if d.severity != "error":
                continue
            details: Mapping[str, Any] = d.details or {}
            est = details.get("estimated_max_model_len")
            found.append(
                StartFailure(
                    code=d.code,
                    title=d.title,
                    evidence=d.evidence or "",
                    fix=d.fix or "",
                    suggested_flags=list(d.suggested_flags),
                    alternatives=[_alternative(a) for a in d.alternatives],
                    estimated_max_model_len=est if isinstance(est, int) else facts.estimated_max_model_len,
                )
            )
    if not found:
        found.append(
            StartFailure(
                code="startup-failed",
                title="vLLM exited during startup",
                evidence=(facts.last_error or "")[:1000],
                fix="read the log (`vllmkit doctor --log`) for the first error",
                estimated_max_model_len=facts.estimated_max_model_len,
                source="log",
            )
        )
    return found
