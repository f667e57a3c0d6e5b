"""Hugging Face Hub source, through huggingface_hub (its HTTP client, URLs and error classes).

Requests per model (no cache): 1 model_info (files with sizes, `?blobs=true`), 1 GET per small
file present (config.json, index, generation_config.json, tokenizer_config.json), and 1 range read
per safetensors shard (see remote.py for the range policy).

Why not hf_hub_download for the small files: it sends HEAD + GET per file and retries 5xx with its
own long backoff; a single GET through the same client keeps the request count and the retry
budget under our control (VLLMKIT_HUB_RETRIES / VLLMKIT_HUB_TIMEOUT) and writes nothing into the
user's HF cache. HF_HOME is still honoured: for the token file, and offline (HF_HUB_OFFLINE=1 or
no connection) a complete snapshot in the HF cache is read like a local folder.

huggingface_hub reads HF_ENDPOINT, HF_TOKEN and HF_HUB_OFFLINE into `constants` at import time, so
we pass endpoint and token explicitly on every call, computed from the env mapping of the command.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any
from urllib.parse import quote

import httpx2
from huggingface_hub import hf_hub_url
from huggingface_hub.errors import (
    DisabledRepoError,
    EntryNotFoundError,
    GatedRepoError,
    HfHubHTTPError,
    OfflineModeIsEnabled,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.hf_api import ModelInfo
from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

from vllmkit.errors import ModelSourceError
from vllmkit.hub.base import FileInfo, ModelMetadata
from vllmkit.hub.errors import (
    MAX_ERROR_BODY_BYTES,
    MAX_JSON_BODY_BYTES,
    Failure,
    HubContext,
    HubUnreachableError,
    read_capped,
    retry_after_seconds,
    retrying,
    to_error,
)
from vllmkit.hub.offline import close_names, hf_offline_metadata
from vllmkit.hub.remote import build_metadata
from vllmkit.hub.settings import HubSettings

MAX_SMALL_FILE_BYTES = 64 * 1024 * 1024  # a config/index above this is not a config
_COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")


def classify(exc: BaseException) -> Failure | None:
    """huggingface_hub / httpx2 exceptions -> Failure. Order matters: subclasses first."""
    if isinstance(exc, OfflineModeIsEnabled):
        return Failure("offline", detail="HF_HUB_OFFLINE is set")
    if isinstance(exc, GatedRepoError):
        return Failure("gated", status=_status(exc))
    if isinstance(exc, RevisionNotFoundError):
        return Failure("revision_not_found", status=_status(exc))
    if isinstance(exc, EntryNotFoundError):
        return Failure("entry_not_found", status=_status(exc) if isinstance(exc, HfHubHTTPError) else None)
    if isinstance(exc, RepositoryNotFoundError):
        return Failure("not_found", status=_status(exc))
    if isinstance(exc, DisabledRepoError):
        return Failure("http", status=_status(exc), detail="the repository is disabled")
    if isinstance(exc, HfHubHTTPError):
        return _from_status(_status(exc), exc.response)
    if isinstance(exc, httpx2.HTTPStatusError):
        return _from_status(exc.response.status_code, exc.response)
    if isinstance(exc, httpx2.ConnectTimeout):
        return Failure("unreachable", detail="connection timed out")
    if isinstance(exc, httpx2.TimeoutException):
        return Failure("timeout")
    if isinstance(exc, (httpx2.ConnectError, httpx2.UnsupportedProtocol)):
        return Failure("unreachable", detail=_short(exc))
    if isinstance(exc, (httpx2.RemoteProtocolError, httpx2.ReadError, httpx2.WriteError)):
        return Failure("server", detail=_short(exc))
    if isinstance(exc, (ValueError, TypeError, KeyError, AttributeError)):
        # r.json() on a broken body, or a payload of the wrong shape in ModelInfo(**data)
        return Failure("bad_response", detail=f"{type(exc).__name__}: {_short(exc)}")
    return None


def _status(exc: HfHubHTTPError) -> int | None:
    response = getattr(exc, "response", None)
    return getattr(response, "status_code", None)


def _from_status(status: int | None, response: Any) -> Failure:
    if status in (401, 403):
        return Failure("gated", status=status)
    if status == 404:
        return Failure("not_found", status=status)
    if status == 429:
        headers = getattr(response, "headers", {}) or {}
        return Failure("rate_limited", status=status, retry_after=retry_after_seconds(headers.get("Retry-After")))
    if status is not None and status >= 500:
        return Failure("server", status=status)
    return Failure("http", status=status)


def _short(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


def _context(settings: HubSettings, repo_id: str, revision: str | None) -> HubContext:
    return HubContext(
        hub="Hugging Face",
        endpoint=settings.hf_endpoint,
        repo_id=repo_id,
        revision=revision,
        token_var="HF_TOKEN",
        token_origin=settings.hf_token_origin,
        mirror_hint="set HF_ENDPOINT to a mirror (e.g. https://hf-mirror.com)",
    )


class _HfRepo:
    """RemoteRepo for one Hugging Face repository at one revision."""

    def __init__(self, settings: HubSettings, repo_id: str, revision: str | None) -> None:
        self.settings = settings
        self.repo_id = repo_id
        self.revision = revision
        self.commit: str | None = None
        self.ctx = _context(settings, repo_id, revision)

    def _retry(self, call: Any, what: str, suggest: Any = None) -> Any:
        return retrying(call, classify, settings=self.settings, ctx=self.ctx, what=what, suggest=suggest)

    def _headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        return build_hf_headers(token=self.settings.hf_token or False, library_name="vllmkit", headers=extra)

    def list_files(self) -> tuple[list[FileInfo], str | None]:
        # the request HfApi.model_info(files_metadata=True) sends (huggingface_hub hf_api.py), streamed
        # here so that an error page or a hostile answer is capped and the whole request has a deadline
        url = f"{self.settings.hf_endpoint}/api/models/{self.repo_id}"
        if self.revision is not None:
            url += f"/revision/{quote(self.revision, safe='')}"

        def call() -> Any:
            body = _get_bytes(url, self._headers(), limit=MAX_JSON_BODY_BYTES, timeout=self.settings.timeout_s,
                              deadline_s=self.settings.deadline_s, params={"blobs": True}, cap_error=True)
            data = json.loads(body)
            if not isinstance(data, dict):
                raise ValueError("model info is not a JSON object")
            return ModelInfo(**data)

        info = self._retry(call, "model info", suggest=lambda: suggest_ids(self.settings, self.repo_id))
        siblings = info.siblings
        if siblings is None:
            raise to_error(Failure("bad_response", detail="no file list (siblings)"), self.ctx, what="model info")
        files = [FileInfo(name=s.rfilename, size=s.size) for s in siblings]
        self.commit = info.sha if isinstance(info.sha, str) and _COMMIT_RE.match(info.sha) else None
        return files, self.commit

    def file_url(self, path: str) -> str:
        # pin to the commit model_info reported, so every file comes from the same snapshot
        return hf_hub_url(self.repo_id, path, revision=self.commit or self.revision, endpoint=self.settings.hf_endpoint)

    def get_small(self, path: str) -> bytes:
        def call() -> bytes:
            return _get_bytes(self.file_url(path), self._headers(), limit=MAX_SMALL_FILE_BYTES,
                              timeout=self.settings.timeout_s, deadline_s=self.settings.deadline_s)

        return self._retry(call, path)

    def read_range(self, path: str, start: int, length: int) -> bytes:
        headers = self._headers({"Range": f"bytes={start}-{start + length - 1}", "Accept-Encoding": "identity"})

        def call() -> bytes:
            return _get_bytes(self.file_url(path), headers, limit=length, timeout=self.settings.timeout_s,
                              deadline_s=self.settings.deadline_s, skip=start)

        return self._retry(call, f"the header of {path}")


def _get_bytes(url: str, headers: dict[str, str], *, limit: int, timeout: float, deadline_s: float,
               skip: int = 0, params: dict[str, Any] | None = None, cap_error: bool = False) -> bytes:
    """GET at most `limit` bytes, then close: a server that ignores Range (200 instead of 206)
    still costs only the bytes we wanted. `skip` is the range start, dropped from a 200 body.
    An error answer is read only up to MAX_ERROR_BODY_BYTES (enough for the hub's error code and
    message); the whole request must finish within `deadline_s`. With `cap_error` a body above
    `limit` raises HubBodyTooLarge instead of being cut."""
    deadline = time.monotonic() + deadline_s
    with get_session().stream("GET", url, headers=headers, timeout=timeout, params=params) as response:
        if response.status_code >= 400:
            body = read_capped(response.iter_bytes(), limit=MAX_ERROR_BODY_BYTES, deadline=deadline, truncate=True)
            hf_raise_for_status(_capped_response(response, body))
        if cap_error:
            return read_capped(response.iter_bytes(), limit=limit, deadline=deadline)
        if response.status_code != 206:
            limit += skip  # full body from byte 0: read through the range, then drop the prefix
        else:
            skip = 0
        buf = read_capped(response.iter_bytes(), limit=limit, deadline=deadline, truncate=True)
    return buf[skip:limit]


def _capped_response(response: httpx2.Response, body: bytes) -> httpx2.Response:
    """The error answer with only the bytes we read, for huggingface_hub's error classification
    (it reads X-Error-Code / X-Error-Message and the JSON body's "error")."""
    headers = [(k, v) for k, v in response.headers.multi_items()
               if k.lower() not in ("content-length", "content-encoding", "transfer-encoding")]
    return httpx2.Response(response.status_code, headers=headers, content=body, request=response.request)


def suggest_ids(settings: HubSettings, repo_id: str) -> list[str]:
    """Close names for a model that was not found (one search request, best effort)."""
    name = repo_id.split("/")[-1]
    query = name.rsplit("-", 1)[0] if "-" in name else name
    found = search_models(settings, query, limit=50)
    return close_names(repo_id, found)


def search_models(settings: HubSettings, query: str, *, author: str | None = None, limit: int = 100) -> list[str]:
    """Model ids matching `query` (GET /api/models?search=...), most downloaded first.

    A direct GET through huggingface_hub's session: HfApi.list_models takes no timeout."""
    params: dict[str, Any] = {"search": query, "sort": "downloads", "direction": -1, "limit": limit}
    if author:
        params["author"] = author
    headers = build_hf_headers(token=settings.hf_token or False, library_name="vllmkit")
    body = _get_bytes(f"{settings.hf_endpoint}/api/models", headers, limit=MAX_JSON_BODY_BYTES,
                      timeout=settings.timeout_s, deadline_s=settings.deadline_s, params=params, cap_error=True)
    items = json.loads(body)
    if not isinstance(items, list):
        raise ValueError("model search did not return a list")
    return [str(i.get("id") or i.get("modelId")) for i in items if isinstance(i, dict) and (i.get("id") or i.get("modelId"))]


def offline_error(settings: HubSettings, repo_id: str, revision: str | None) -> ModelSourceError:
    """The error for HF_HUB_OFFLINE when no cache holds the model (no huggingface_hub call)."""
    ctx = _context(settings, repo_id, revision)
    return to_error(Failure("offline", detail="HF_HUB_OFFLINE is set"), ctx, what="model info")


class HfSource:
    """The Hugging Face Hub (or a mirror through HF_ENDPOINT)."""

    name = "hf"

    def __init__(self, settings: HubSettings | None = None) -> None:
        self.settings = settings or HubSettings.from_env()

    def fetch(self, model_id: str, revision: str | None = None, *, refresh: bool = False) -> ModelMetadata:
        if self.settings.hf_offline:
            cached = hf_offline_metadata(self.settings, model_id, revision)
            if cached is None:
                raise offline_error(self.settings, model_id, revision)
            return cached
        repo = _HfRepo(self.settings, model_id, revision)
        try:
            return build_metadata(repo, source="hf", repo_id=model_id, revision=revision)
        except HubUnreachableError:
            cached = hf_offline_metadata(self.settings, model_id, revision)
            if cached is None:
                raise
            return cached
