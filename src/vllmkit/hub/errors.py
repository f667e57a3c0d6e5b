"""Hub failures as our own errors (exit 4, one-line cause + fix), and the bounded retry loop.

Each source classifies its client library's exceptions into a `Failure`; this module decides
whether to retry (timeouts, HTTP 429 and 5xx; connection refusals are not retried: the hub is
unreachable and `auto` falls back to the catalog) and turns the last failure into a message.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal, TypeVar

from vllmkit.errors import ModelSourceError
from vllmkit.hub.settings import HubSettings

T = TypeVar("T")

FailureKind = Literal[
    "not_found", "revision_not_found", "entry_not_found", "gated", "rate_limited", "server",
    "timeout", "too_slow", "unreachable", "offline", "bad_response", "http",
]

# Longest Retry-After we sleep through; a longer one is reported instead of waited out.
MAX_RETRY_AFTER_S = 10.0
# What a hostile or broken hub can make us read (docs/limits.md): an error page is only looked at
# for the hub's error code and message, so 64 KiB of it is plenty; a JSON answer (model info of a
# repository with thousands of files is ~2 MB) is capped at 32 MiB.
MAX_ERROR_BODY_BYTES = 64 * 1024
MAX_JSON_BODY_BYTES = 32 * 1024 * 1024


class HubDeadlineExceeded(Exception):
    """The hub kept the connection alive but did not finish the answer in time (a trickle)."""


class HubBodyTooLarge(Exception):
    """An answer larger than we ever need."""


def within_deadline(call: Callable[[], T], deadline_s: float) -> T:
    """Run a client library's call (which retries and reads bodies on its own terms) in a worker
    thread and give up after `deadline_s`: the command then fails with HubDeadlineExceeded instead of
    waiting for a hub that trickles. The abandoned daemon thread ends with the process."""
    import threading

    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # handed to the caller's thread
            outcome["error"] = exc

    worker = threading.Thread(target=run, name="vllmkit-hub-call", daemon=True)
    worker.start()
    worker.join(deadline_s)
    if worker.is_alive():
        raise HubDeadlineExceeded(f"{deadline_s:g} s")
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]


def read_capped(chunks: Iterable[bytes], *, limit: int, deadline: float | None, truncate: bool = False) -> bytes:
    """Join a streamed body, stopping at `limit` bytes (or raising HubBodyTooLarge unless
    `truncate`) and raising HubDeadlineExceeded once the monotonic `deadline` has passed. Each read
    itself is bounded by the client's read timeout, so the overshoot is at most one timeout."""
    buf = bytearray()
    for chunk in chunks:
        buf.extend(chunk)
        if truncate and len(buf) >= limit:
            return bytes(buf[:limit])
        if len(buf) > limit:
            raise HubBodyTooLarge(f"answer larger than {limit // (1 << 20) or 1} MiB")
        if deadline is not None and time.monotonic() > deadline:
            raise HubDeadlineExceeded("the request's deadline (VLLMKIT_HUB_DEADLINE)")
    return bytes(buf)


class HubUnreachableError(ModelSourceError):
    """No connection to the hub (offline mode, DNS, refused, connect timeout): `auto` may fall back."""

    code = "hub-unreachable"


@dataclass
class Failure:
    kind: FailureKind
    status: int | None = None
    detail: str = ""
    retry_after: float | None = None

    @property
    def retryable(self) -> bool:
        return self.kind in ("timeout", "rate_limited", "server")


@dataclass(frozen=True)
class HubContext:
    hub: str  # "Hugging Face" | "ModelScope"
    endpoint: str
    repo_id: str
    revision: str | None
    token_var: str  # "HF_TOKEN" | "MODELSCOPE_API_TOKEN"
    token_origin: str | None  # where the token in use came from, None when anonymous
    mirror_hint: str  # e.g. "set HF_ENDPOINT to a mirror"


def limit_failure(exc: BaseException) -> Failure | None:
    """Our own bounds on what a hub can make us do (docs/limits.md), the same for every hub client."""
    if isinstance(exc, HubDeadlineExceeded):
        return Failure("too_slow", detail=str(exc))
    if isinstance(exc, HubBodyTooLarge):
        return Failure("bad_response", detail=str(exc))
    if isinstance(exc, RecursionError):
        return Failure("bad_response", detail="JSON nested too deeply")
    return None


def retrying(call: Callable[[], T], classify: Callable[[BaseException], Failure | None], *,
             settings: HubSettings, ctx: HubContext, what: str,
             suggest: Callable[[], list[str]] | None = None) -> T:
    """Run `call`, retrying transient failures with exponential backoff (bounded). `classify` maps the
    hub client's own exceptions; our limits (limit_failure) are classified here for every hub."""
    attempt = 0
    while True:
        try:
            return call()
        except ModelSourceError:
            raise
        except Exception as exc:
            failure = limit_failure(exc) or classify(exc)
            if failure is None:
                raise
            attempt += 1
            if failure.retryable and attempt <= settings.retries:
                wait = settings.backoff_s * (2 ** (attempt - 1))
                if failure.retry_after is not None:
                    if failure.retry_after > MAX_RETRY_AFTER_S:
                        raise to_error(failure, ctx, what=what, tries=attempt) from None
                    wait = max(wait, failure.retry_after)
                time.sleep(wait)
                continue
            raise to_error(failure, ctx, what=what, tries=attempt, suggest=suggest) from None


def _where(ctx: HubContext) -> str:
    rev = f"@{ctx.revision}" if ctx.revision else ""
    return f"{ctx.repo_id}{rev}"


def to_error(failure: Failure, ctx: HubContext, *, what: str, tries: int = 1,
             suggest: Callable[[], list[str]] | None = None) -> ModelSourceError:
    status = f" (HTTP {failure.status})" if failure.status else ""
    hub = f"{ctx.hub} ({ctx.endpoint})"
    kind = failure.kind
    if kind == "not_found":
        names = _safe_suggest(suggest)
        did_you_mean = f"did you mean {', '.join(names)}? " if names else ""
        private = "" if ctx.token_origin else f"if it is private, set {ctx.token_var}; "
        return ModelSourceError(
            f"model {ctx.repo_id} not found on {hub}{status}",
            f"{did_you_mean}{private}check the id (org/name, case-sensitive) or pass a local folder",
            code="model-not-found",
        )
    if kind == "revision_not_found":
        return ModelSourceError(
            f"revision {ctx.revision!r} of {ctx.repo_id} not found on {hub}{status}",
            "check the branch, tag or commit (--revision or id@revision)",
            code="revision-not-found",
        )
    if kind == "entry_not_found":
        return ModelSourceError(
            f"{what} is missing from {_where(ctx)} on {hub}{status}",
            "the repository lacks a file vLLM needs; pick another revision or repository",
            code="file-not-found",
        )
    if kind == "gated":
        if ctx.token_origin:
            hint = (f"the token from {ctx.token_origin} has no access: request access / accept the licence on "
                    f"the model page, or set {ctx.token_var} to a token that has it")
        else:
            hint = (f"set {ctx.token_var} to an access token (and accept the model's licence on its page); "
                    "the model is gated or private")
        return ModelSourceError(f"access to {ctx.repo_id} on {hub} was refused{status}", hint, code="model-gated")
    if kind == "rate_limited":
        wait = f"wait {failure.retry_after:.0f}s and " if failure.retry_after else "wait a minute and "
        auth = "" if ctx.token_origin else f"; set {ctx.token_var} (signed-in requests get a higher limit)"
        return ModelSourceError(
            f"{hub} rate-limited the request for {what} of {_where(ctx)}{status} after {tries} tries",
            f"{wait}retry{auth}, or {ctx.mirror_hint}",
            code="rate-limited",
        )
    if kind == "server":
        return ModelSourceError(
            f"{hub} failed with a server error{status} for {what} of {_where(ctx)} after {tries} tries",
            f"the hub is having trouble: retry later, {ctx.mirror_hint}, or use --source catalog / a local folder",
            code="hub-server-error",
        )
    if kind == "too_slow":
        return ModelSourceError(
            f"{hub} sent {what} of {_where(ctx)} too slowly: no complete answer within {failure.detail}",
            f"check the network or proxy, raise VLLMKIT_HUB_DEADLINE (seconds per request), or {ctx.mirror_hint}",
            code="hub-timeout",
        )
    if kind == "timeout":
        return ModelSourceError(
            f"{hub} did not answer in time for {what} of {_where(ctx)} ({tries} tries)",
            f"check the network or proxy, raise VLLMKIT_HUB_TIMEOUT (seconds), or {ctx.mirror_hint}",
            code="hub-timeout",
        )
    if kind in ("unreachable", "offline"):
        detail = f": {failure.detail}" if failure.detail else ""
        hint = (
            "unset HF_HUB_OFFLINE to go online, or pass a local folder / --source catalog"
            if kind == "offline"
            else f"check the network or proxy, {ctx.mirror_hint}, or pass a local folder / --source catalog"
        )
        return HubUnreachableError(f"cannot reach {hub}{detail}", hint)
    if kind == "bad_response":
        return ModelSourceError(
            f"{hub} returned malformed data for {what} of {_where(ctx)}: {failure.detail}",
            f"the hub or mirror returned something unexpected: retry later, or {ctx.mirror_hint}",
            code="bad-response",
        )
    return ModelSourceError(
        f"{hub} failed for {what} of {_where(ctx)}{status}: {failure.detail}".rstrip(": "),
        "retry later or use a local folder",
        code="hub-error",
    )


def _safe_suggest(suggest: Callable[[], list[str]] | None) -> list[str]:
    if suggest is None:
        return []
    try:
        return suggest()[:3]
    except Exception:  # suggestions are best effort; never mask the real error
        return []


def retry_after_seconds(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date: treat as unknown
