"""ModelScope source: the official hub client (modelscope-hub's HubApi) for what it offers, `requests`
for the bytes it does not.

- file list with sizes: HubApi.list_repo_files (GET {endpoint}/api/v1/models/{id}/repo/files?Revision=
  &Recursive=True); the client also walks listings the server truncates at 3,000 entries and retries a
  spurious 403 / 429 / 5xx itself (4 attempts, 1-2-4 s backoff, honouring Retry-After).
- search ("did you mean", quantized siblings): HubApi.list_repos("model", search=, owner=)
  (GET {endpoint}/openapi/v1/models).
- file bytes: GET {endpoint}/api/v1/models/{id}/repo?Revision=...&FilePath=... with `requests`, because
  the client only downloads whole files into its cache while we read config files and a few KiB of each
  safetensors header (Range requests).

Settings are per command, never from this process's environment: HubApi gets the endpoint
(MODELSCOPE_ENDPOINT / MODELSCOPE_DOMAIN) and the token (MODELSCOPE_API_TOKEN, sent by the client as
Bearer and the m_session_id cookie; "" = anonymous, so a credential stored by `modelscope login` is not
picked up behind the caller's back) as constructor arguments. The `modelscope` package itself is not
used: importing it imports torch (5-11 s here), while modelscope-hub (its hub half, which it depends on)
imports in ~2 s, and only when a ModelScope model is resolved.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import requests
import urllib3

from vllmkit.hub.base import FileInfo, ModelMetadata
from vllmkit.hub.errors import (
    Failure,
    HubContext,
    HubUnreachableError,
    read_capped,
    retry_after_seconds,
    retrying,
    within_deadline,
)
from vllmkit.hub.offline import close_names, ms_offline_metadata
from vllmkit.hub.remote import build_metadata
from vllmkit.hub.settings import HubSettings

if TYPE_CHECKING:
    from modelscope_hub import HubApi

DEFAULT_REVISION = "master"  # ModelScope's default branch
MAX_SMALL_FILE_BYTES = 64 * 1024 * 1024
USER_AGENT = "vllmkit"


def hub_api(settings: HubSettings) -> HubApi:
    """A HubApi for this command's settings (imported lazily: ~2 s, only for ModelScope models)."""
    from modelscope_hub import HubApi

    return HubApi(endpoint=settings.ms_endpoint, token=settings.ms_token or "", user_agent=USER_AGENT)


@contextlib.contextmanager
def _quiet_client() -> Iterator[None]:
    """The client logs its retries to stderr; our errors say what happened, once, escaped."""
    logger = logging.getLogger("modelscope_hub")
    level = logger.level
    logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        logger.setLevel(level)


def _sdk_failure(exc: BaseException) -> Failure | None:
    """modelscope_hub.errors -> our failure kinds (None when it is not one of the client's errors)."""
    from modelscope_hub import errors as ms

    if isinstance(exc, (ms.AuthenticationError, ms.PermissionDeniedError)):
        return Failure("gated", status=exc.status_code)
    if isinstance(exc, ms.NotExistError):
        return Failure("not_found", status=exc.status_code)
    if isinstance(exc, ms.RateLimitError):
        return Failure("rate_limited", status=exc.status_code, retry_after=getattr(exc, "retry_after", None))
    if isinstance(exc, ms.ServerError):
        return Failure("server", status=exc.status_code)
    if isinstance(exc, ms.RequestTimeoutError):
        return Failure("timeout")
    if isinstance(exc, ms.NetworkError):
        return Failure("unreachable", detail="connection failed")  # the client's text names its internal pool
    if isinstance(exc, ms.APIError):
        if exc.status_code is not None and exc.status_code >= 500:
            return Failure("server", status=exc.status_code)
        return Failure("http", status=exc.status_code, detail=str(exc).splitlines()[0][:200])
    if isinstance(exc, ms.HubError):
        return Failure("bad_response", detail=f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
    return None


class _StatusError(Exception):
    def __init__(self, status: int, retry_after: float | None = None, detail: str = "") -> None:
        super().__init__(f"HTTP {status} {detail}".strip())
        self.status = status
        self.retry_after = retry_after
        self.detail = detail


def classify(exc: BaseException) -> Failure | None:
    if type(exc).__module__.startswith("modelscope_hub"):
        return _sdk_failure(exc)
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
    def __init__(self, settings: HubSettings, repo_id: str, revision: str | None, session: requests.Session,
                 api: HubApi | None = None) -> None:
        self.settings = settings
        self.repo_id = repo_id
        self.revision = revision
        self.session = session
        self.api = api if api is not None else hub_api(settings)
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
        def call() -> Any:
            def listing() -> Any:
                with _quiet_client():
                    return self.api.list_repo_files(self.repo_id, "model", revision=self._rev, recursive=True)

            # the client's own timeouts apply per read and it retries by itself: the listing as a whole
            # gets one request deadline per try we would have made
            return within_deadline(listing, self.settings.deadline_s * (1 + self.settings.retries))

        # the client retries listings itself: no second layer of retries around it
        once = dataclasses.replace(self.settings, retries=0)
        entries = retrying(call, classify, settings=once, ctx=self.ctx, what="file list",
                           suggest=lambda: suggest_ids(self.settings, self.repo_id, api=self.api))
        files: list[FileInfo] = []
        for entry in entries:
            if getattr(entry, "type", "blob") == "tree":
                continue
            path, size = getattr(entry, "path", None), getattr(entry, "size", None)
            if not isinstance(path, str) or not path or not isinstance(size, int) or size < 0:
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


def _get_bytes(session: requests.Session, url: str, headers: dict[str, str], *, limit: int,
               settings: HubSettings, skip: int = 0) -> bytes:
    deadline = time.monotonic() + settings.deadline_s
    with session.get(url, headers=headers, timeout=settings.timeout_s, stream=True) as response:
        _raise_for_status(response)  # an error page is never read: its status says enough
        if response.status_code != 206:
            limit += skip
        else:
            skip = 0
        buf = read_capped(_chunks(response), limit=limit, deadline=deadline, truncate=True)
    return buf[skip:limit]


def _chunks(response: requests.Response) -> Iterator[bytes]:
    """The body read with urllib3's read1 (one system call per read): requests' iter_content(n)
    blocks until n bytes have arrived, so a hub sending one byte per second would never trip the
    read timeout nor let read_capped check the request's deadline."""
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


def search_models(settings: HubSettings, query: str, *, owner: str | None = None, limit: int = 100,
                  api: HubApi | None = None) -> list[str]:
    api = api if api is not None else hub_api(settings)
    with _quiet_client():
        page = api.list_repos("model", search=query, owner=owner, page_number=1, page_size=min(limit, 100))
    return [str(r.repo_id) for r in page.items if isinstance(getattr(r, "repo_id", None), str)]


def suggest_ids(settings: HubSettings, repo_id: str, api: HubApi | None = None) -> list[str]:
    name = repo_id.split("/")[-1]
    query = name.rsplit("-", 1)[0] if "-" in name else name
    return close_names(repo_id, search_models(settings, query, limit=50, api=api))


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
