"""ModelScope source, through its documented REST API with `requests`.

Endpoints (the same ones the modelscope client calls, modelscope_hub/_legacy_api.py and
_openapi.py, modelscope 1.40 / modelscope-hub 0.5):
- file list with sizes: GET {endpoint}/api/v1/models/{id}/repo/files?Revision=master&Recursive=True
  -> {"Code": 200, "Success": true, "Data": {"Files": [{"Path", "Name", "Size", "Type"}]}}
- one file (Range supported): GET {endpoint}/api/v1/models/{id}/repo?Revision=...&FilePath=...
- search: GET {endpoint}/openapi/v1/models?search=...&owner=...&page_size=...
  -> {"success": true, "data": {"models": [{"id": "org/name", ...}], "total_count": ...}}

Why not the client library: its HubApi reads MODELSCOPE_ENDPOINT / MODELSCOPE_API_TOKEN from the
process environment when constructed and retries inside, while we need per-command settings,
bounded retries, request counting and ranged reads of a few bytes. Settings honoured:
MODELSCOPE_ENDPOINT (MODELSCOPE_DOMAIN), MODELSCOPE_API_TOKEN (sent as Bearer and as the
m_session_id cookie, as the client does), MODELSCOPE_CACHE (read offline).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import requests
import urllib3

from vllmkit.hub.base import FileInfo, ModelMetadata
from vllmkit.hub.errors import (
    MAX_JSON_BODY_BYTES,
    Failure,
    HubBodyTooLarge,
    HubContext,
    HubDeadlineExceeded,
    HubUnreachableError,
    read_capped,
    retry_after_seconds,
    retrying,
)
from vllmkit.hub.offline import close_names, ms_offline_metadata
from vllmkit.hub.remote import build_metadata
from vllmkit.hub.settings import HubSettings

DEFAULT_REVISION = "master"  # ModelScope's default branch
MAX_SMALL_FILE_BYTES = 64 * 1024 * 1024


class _StatusError(Exception):
    def __init__(self, status: int, retry_after: float | None = None, detail: str = "") -> None:
        super().__init__(f"HTTP {status} {detail}".strip())
        self.status = status
        self.retry_after = retry_after
        self.detail = detail


class _ApiError(Exception):
    """HTTP 200 with {"Success": false, "Code": ..., "Message": ...}."""

    def __init__(self, code: Any, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def classify(exc: BaseException) -> Failure | None:
    if isinstance(exc, HubDeadlineExceeded):
        return Failure("too_slow", detail=str(exc))
    if isinstance(exc, HubBodyTooLarge):
        return Failure("bad_response", detail=str(exc))
    if isinstance(exc, RecursionError):
        return Failure("bad_response", detail="JSON nested too deeply")
    if isinstance(exc, _StatusError):
        status = exc.status
        if status in (401, 403):
            return Failure("gated", status=status)
        if status == 404:
            return Failure("not_found", status=status)
        if status == 429:
            return Failure("rate_limited", status=status, retry_after=exc.retry_after)
        if status >= 500:
            return Failure("server", status=status)
        return Failure("http", status=status, detail=exc.detail)
    if isinstance(exc, _ApiError):
        text = f"{exc.code} {exc.message}".lower()
        if any(k in text for k in ("not exist", "not found", "不存在", "404")):
            return Failure("not_found", detail=exc.message)
        if any(k in text for k in ("permission", "unauthor", "forbidden", "401", "403", "无权限")):
            return Failure("gated", detail=exc.message)
        return Failure("bad_response", detail=f"API error {exc.code}: {exc.message}"[:200])
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return Failure("unreachable", detail="connection timed out")
    if isinstance(exc, requests.exceptions.Timeout):
        return Failure("timeout")
    if isinstance(exc, (requests.exceptions.ConnectionError, requests.exceptions.InvalidURL,
                        requests.exceptions.MissingSchema)):
        return Failure("unreachable", detail=str(exc).splitlines()[0][:200])
    if isinstance(exc, requests.exceptions.ChunkedEncodingError):
        return Failure("server", detail="connection broken")
    if isinstance(exc, (ValueError, TypeError, KeyError, AttributeError)):
        return Failure("bad_response", detail=f"{type(exc).__name__}: {str(exc)[:200]}")
    return None


class _MsRepo:
    def __init__(self, settings: HubSettings, repo_id: str, revision: str | None, session: requests.Session) -> None:
        self.settings = settings
        self.repo_id = repo_id
        self.revision = revision
        self.session = session
        self.ctx = HubContext(
            hub="ModelScope",
            endpoint=settings.ms_endpoint,
            repo_id=repo_id,
            revision=revision,
            token_var="MODELSCOPE_API_TOKEN",
            token_origin="MODELSCOPE_API_TOKEN" if settings.ms_token else None,
            mirror_hint="set MODELSCOPE_ENDPOINT to a mirror",
        )

    @property
    def _rev(self) -> str:
        return self.revision or DEFAULT_REVISION

    def _retry(self, call: Any, what: str, suggest: Any = None) -> Any:
        return retrying(call, classify, settings=self.settings, ctx=self.ctx, what=what, suggest=suggest)

    def list_files(self) -> tuple[list[FileInfo], str | None]:
        url = f"{self.settings.ms_endpoint}/api/v1/models/{self.repo_id}/repo/files"
        params = {"Revision": self._rev, "Recursive": "True"}

        def call() -> Any:
            return _data(_get_json(self.session, url, params=params, settings=self.settings))

        data = self._retry(call, "file list", suggest=lambda: suggest_ids(self.settings, self.repo_id, self.session))
        entries = data.get("Files") if isinstance(data, dict) else data
        if not isinstance(entries, list):
            raise self._bad("file list", "no Files list in the response")
        files: list[FileInfo] = []
        for entry in entries:
            if not isinstance(entry, dict) or entry.get("Type") == "tree":
                continue
            path = entry.get("Path") or entry.get("Name")
            size = entry.get("Size")
            if not isinstance(path, str) or (size is not None and (not isinstance(size, int) or size < 0)):
                raise self._bad("file list", f"malformed entry {str(entry)[:80]}")
            files.append(FileInfo(name=path, size=size))
        return files, None

    def _bad(self, what: str, detail: str) -> Exception:
        from vllmkit.hub.errors import to_error

        return to_error(Failure("bad_response", detail=detail), self.ctx, what=what)

    def file_url(self, path: str) -> str:
        return (
            f"{self.settings.ms_endpoint}/api/v1/models/{self.repo_id}/repo"
            f"?Revision={quote(self._rev, safe='')}&FilePath={quote(path, safe='')}"
        )

    def get_small(self, path: str) -> bytes:
        def call() -> bytes:
            return _get_bytes(self.session, self.file_url(path), {}, limit=MAX_SMALL_FILE_BYTES,
                              settings=self.settings)

        return self._retry(call, path)

    def read_range(self, path: str, start: int, length: int) -> bytes:
        headers = {"Range": f"bytes={start}-{start + length - 1}", "Accept-Encoding": "identity"}

        def call() -> bytes:
            return _get_bytes(self.session, self.file_url(path), headers, limit=length,
                              settings=self.settings, skip=start)

        return self._retry(call, f"the header of {path}")


def _data(body: Any) -> Any:
    if not isinstance(body, dict):
        raise ValueError("response is not a JSON object")
    success = body.get("Success", body.get("success"))
    if success is False:
        raise _ApiError(body.get("Code", body.get("code")), str(body.get("Message", body.get("message", "")))[:200])
    return body.get("Data", body.get("data"))


def make_session(settings: HubSettings) -> requests.Session:
    session = requests.Session()
    session.trust_env = True  # proxies from HTTPS_PROXY etc., like the modelscope client
    session.headers["User-Agent"] = "vllmkit"
    if settings.ms_token:
        session.headers["Authorization"] = f"Bearer {settings.ms_token}"
        host = requests.utils.urlparse(settings.ms_endpoint).hostname or ""
        session.cookies.set("m_session_id", settings.ms_token, domain=host, path="/")
    return session


def _raise_for_status(response: requests.Response) -> None:
    if response.status_code >= 400:
        raise _StatusError(response.status_code, retry_after_seconds(response.headers.get("Retry-After")))


def _get_json(session: requests.Session, url: str, *, params: dict[str, Any] | None = None,
              settings: HubSettings) -> Any:
    """GET a JSON answer: streamed, so that an error page is never read (the status says enough),
    a body is capped at MAX_JSON_BODY_BYTES and the whole request has a deadline."""
    deadline = time.monotonic() + settings.deadline_s
    with session.get(url, params=params, timeout=settings.timeout_s, stream=True) as response:
        _raise_for_status(response)
        body = _read_until(response, limit=MAX_JSON_BODY_BYTES, deadline=deadline, truncate=False)
    return json.loads(body)


def _read_until(response: requests.Response, *, limit: int, deadline: float, truncate: bool) -> bytes:
    """read_capped over a requests body, read with urllib3's read1 (one system call per read):
    requests' iter_content(n) blocks until n bytes have arrived, so a hub sending one byte per
    second would never trip the read timeout nor give read_capped a chance to check the deadline."""
    return read_capped(_chunks(response), limit=limit, deadline=deadline, truncate=truncate)


def _chunks(response: requests.Response) -> Iterator[bytes]:
    raw = response.raw
    while True:
        try:
            data = raw.read1(65536, decode_content=True)
        except urllib3.exceptions.ReadTimeoutError:
            raise requests.exceptions.ReadTimeout("read timed out") from None
        except urllib3.exceptions.DecodeError as exc:
            raise ValueError(f"undecodable body: {exc}") from None
        except (urllib3.exceptions.ProtocolError, OSError):
            raise requests.exceptions.ChunkedEncodingError("connection broken") from None
        if not data:
            return
        yield data


def _get_bytes(session: requests.Session, url: str, headers: dict[str, str], *, limit: int,
               settings: HubSettings, skip: int = 0) -> bytes:
    deadline = time.monotonic() + settings.deadline_s
    with session.get(url, headers=headers, timeout=settings.timeout_s, stream=True) as response:
        _raise_for_status(response)
        if response.status_code != 206:
            limit += skip
        else:
            skip = 0
        buf = _read_until(response, limit=limit, deadline=deadline, truncate=True)
    return buf[skip:limit]


def search_models(settings: HubSettings, query: str, *, owner: str | None = None, limit: int = 100,
                  session: requests.Session | None = None) -> list[str]:
    session = session or make_session(settings)
    params: dict[str, Any] = {"search": query, "page_number": 1, "page_size": min(limit, 100)}
    if owner:
        params["owner"] = owner
    data = _data(_get_json(session, f"{settings.ms_endpoint}/openapi/v1/models", params=params, settings=settings))
    items = data.get("models") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ValueError("model search did not return a list")
    return [str(i["id"]) for i in items if isinstance(i, dict) and isinstance(i.get("id"), str)]


def suggest_ids(settings: HubSettings, repo_id: str, session: requests.Session | None = None) -> list[str]:
    name = repo_id.split("/")[-1]
    query = name.rsplit("-", 1)[0] if "-" in name else name
    return close_names(repo_id, search_models(settings, query, limit=50, session=session))


class ModelScopeSource:
    name = "modelscope"

    def __init__(self, settings: HubSettings | None = None) -> None:
        self.settings = settings or HubSettings.from_env()

    def fetch(self, model_id: str, revision: str | None = None, *, refresh: bool = False) -> ModelMetadata:
        with make_session(self.settings) as session:
            repo = _MsRepo(self.settings, model_id, revision, session)
            try:
                return build_metadata(repo, source="modelscope", repo_id=model_id, revision=revision)
            except HubUnreachableError:
                cached = ms_offline_metadata(self.settings, model_id, revision)
                if cached is None:
                    raise
                return cached
