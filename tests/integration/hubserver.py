"""A stand-in for the Hugging Face Hub and ModelScope on 127.0.0.1, for the real client code.

Hugging Face subset (what huggingface_hub calls for us):
- GET /api/models?search=&author=&limit=&sort=            model search (list of {"id", ...})
- GET /api/models/{repo}[/revision/{rev}][?blobs=true]    model info; siblings get sizes with blobs
- HEAD/GET /{repo}/resolve/{rev}/{path}                   small files: 200 + ETag, X-Repo-Commit;
                                                         LFS files (*.safetensors, *.gguf): 302 to
                                                         the CDN origin with X-Linked-Size / X-Linked-Etag
- GET /cdn/{repo}/{rev}/{path}                            file bytes, Range -> 206 + Content-Range
Errors as the real Hub sends them: unknown repo 401 + X-Error-Code: RepoNotFound, gated 401/403 +
GatedRepo, unknown revision 404 + RevisionNotFound, missing file 404 + EntryNotFound.

ModelScope subset:
- GET /api/v1/models/{repo}/repo/files?Revision=&Recursive=  {"Code", "Success", "Data": {"Files"}}
- GET /api/v1/models/{repo}/repo?Revision=&FilePath=         file bytes with Range
- GET /openapi/v1/models?search=&owner=&page_size=           {"success", "data": {"models": [...]}}

Every request is recorded (repo, file, Range, status, body bytes, bytes past the safetensors
header) so tests can count what a plan cost.

Hostile behaviours (issue 10: what a misbehaving hub or mirror can make the client do), per repo:
- huge_error: every answer is HTTP 500 with a body of `huge_bytes` (default 300 MiB), generated
  while it is sent, so the server holds none of it; body_bytes records what was really written
  before the client hung up.
- trickle: HTTP 200 whose body arrives one byte every `slow_s` seconds (never a read timeout).
- huge_json: HTTP 200 model info / file list of `huge_bytes` of valid-looking JSON.
- deep_json: HTTP 200 model info / file list nested 200,000 levels deep.
- hostile_text: error texts (X-Error-Message, ModelScope "Message") holding terminal escapes.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

from tests.integration.repos import COMMIT_V2, Repo

LFS_SUFFIXES = (".safetensors", ".gguf", ".bin")


@dataclass
class Record:
    method: str
    path: str
    api: str  # hf-info | hf-search | hf-resolve | cdn | ms-files | ms-file | ms-search | unknown
    repo: str | None
    file: str | None
    range: str | None
    status: int
    body_bytes: int = 0
    weight_bytes: int = 0  # bytes served at or past the safetensors data start
    auth: str | None = None
    generation: int = 0  # which clear() period the request arrived in



def _data_start(blob: bytes) -> int | None:
    if len(blob) < 8:
        return None
    start = 8 + struct.unpack("<Q", blob[:8])[0]
    return start if start <= len(blob) else None


def _parse_range(value: str | None, size: int) -> tuple[int, int] | str | None:
    """(start, end_exclusive), None for no Range, "bad" for unsatisfiable."""
    if not value:
        return None
    match = re.fullmatch(r"bytes=(\d*)-(\d*)", value.strip())
    if not match or (not match.group(1) and not match.group(2)):
        return "bad"
    if match.group(1):
        start = int(match.group(1))
        end = int(match.group(2)) + 1 if match.group(2) else size
    else:
        start, end = max(0, size - int(match.group(2))), size
    end = min(end, size)
    if start >= size or start >= end:
        return "bad"
    return start, end


class HubServer:
    def __init__(self, repos: dict[str, Repo]) -> None:
        self.repos = repos
        self.records: list[Record] = []
        self._lock = threading.Lock()
        self._served: dict[str, int] = {}  # per-repo request counter (flaky repos)
        # bumped by clear(): a slow answer to an earlier test's request is not logged in the next test
        self._generation = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
                pass

            def do_GET(self) -> None:
                server._handle(self, "GET")

            def do_HEAD(self) -> None:
                server._handle(self, "HEAD")

        # The hub, and a second origin for LFS bytes: the real Hub redirects LFS files to a CDN on
        # another host, where clients stop following on HEAD and drop the Authorization header.
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.cdn_httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        for httpd in (self.httpd, self.cdn_httpd):
            httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.cdn_url = f"http://127.0.0.1:{self.cdn_httpd.server_address[1]}"
        self._threads = [
            threading.Thread(target=httpd.serve_forever, daemon=True) for httpd in (self.httpd, self.cdn_httpd)
        ]

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> HubServer:
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        for httpd in (self.httpd, self.cdn_httpd):
            httpd.shutdown()
            httpd.server_close()

    def clear(self) -> None:
        with self._lock:
            self.records.clear()
            self._served.clear()
            self._generation += 1

    # -- queries for tests -----------------------------------------------------------------
    def requests(self, repo: str | None = None) -> list[Record]:
        with self._lock:
            return [r for r in self.records if repo is None or r.repo == repo]

    def byte_reads(self, repo: str, file: str) -> list[Record]:
        """Responses that carried bytes of `file` (the CDN answer, or ModelScope's file GET)."""
        return [
            r for r in self.requests(repo) if r.file == file and r.api in ("cdn", "ms-file") and r.method == "GET"
            and r.status in (200, 206)
        ]

    # -- plumbing --------------------------------------------------------------------------
    def _record(self, rec: Record) -> None:
        with self._lock:
            if rec.generation == self._generation:
                self.records.append(rec)

    def _send(self, h: BaseHTTPRequestHandler, method: str, rec: Record, status: int, body: bytes = b"",
              headers: dict[str, str] | None = None) -> None:
        rec.status = status
        rec.body_bytes = 0 if method == "HEAD" else len(body)
        self._record(rec)
        try:
            h.send_response(status)
            for key, value in (headers or {}).items():
                h.send_header(key, value)
            h.send_header("Content-Length", str(len(body)))
            h.end_headers()
            if method != "HEAD" and body:
                h.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout tests)

    def _stream(self, h: BaseHTTPRequestHandler, method: str, rec: Record, status: int, total: int,
                head: bytes = b"", fill: bytes = b"x", *, delay_s: float = 0.0, chunk: int = 65536,
                headers: dict[str, str] | None = None) -> None:
        """Send `total` bytes (`head`, then `fill` repeated) as they are generated, `chunk` bytes at a
        time with `delay_s` between chunks; stop when the client goes away. rec.body_bytes is what
        was written."""
        rec.status = status
        self._record(rec)
        try:
            h.send_response(status)
            for key, value in (headers or {}).items():
                h.send_header(key, value)
            h.send_header("Content-Length", str(total))
            h.end_headers()
            if method == "HEAD":
                return
            sent = 0
            block = fill * (chunk // max(len(fill), 1) + 1)
            while sent < total:
                piece = head[sent:sent + chunk] if sent < len(head) else b""
                if not piece:
                    piece = block[: min(chunk, total - sent)]
                h.wfile.write(piece)
                h.wfile.flush()
                sent += len(piece)
                with self._lock:
                    rec.body_bytes = sent
                if delay_s:
                    time.sleep(delay_s)
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass  # the client stopped reading: what we want from it
        finally:
            h.close_connection = True

    def _json(self, h: BaseHTTPRequestHandler, method: str, rec: Record, status: int, doc: Any,
              headers: dict[str, str] | None = None) -> None:
        self._send(h, method, rec, status, json.dumps(doc).encode(),
                   {"Content-Type": "application/json", **(headers or {})})

    def _handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        parts = urlsplit(h.path)
        path, query = parts.path, {k: v[-1] for k, v in parse_qs(parts.query).items()}
        rec = Record(method=method, path=h.path, api="unknown", repo=None, file=None,
                     range=h.headers.get("Range"), status=0, auth=h.headers.get("Authorization"),
                     generation=self._generation)
        if path == "/api/models":
            rec.api = "hf-search"
            return self._hf_search(h, method, rec, query)
        if path.startswith("/api/models/"):
            rec.api = "hf-info"
            return self._hf_info(h, method, rec, path[len("/api/models/"):], query)
        if path == "/openapi/v1/models":
            rec.api = "ms-search"
            return self._ms_search(h, method, rec, query)
        if path.startswith("/api/v1/models/"):
            return self._ms(h, method, rec, path[len("/api/v1/models/"):], query)
        if path.startswith("/cdn/"):
            rec.api = "cdn"
            repo_q, rev, file_q = path[len("/cdn/"):].split("/", 2)
            rec.repo, rec.file = unquote(repo_q), unquote(file_q)
            repo = self.repos[rec.repo]
            files = self._files(repo, unquote(rev))
            return self._bytes(h, method, rec, files[rec.file], {}, honour_range=repo.behaviour != "norange")
        if "/resolve/" in path:
            rec.api = "hf-resolve"
            return self._hf_resolve(h, method, rec, path)
        self._send(h, method, rec, 404, b"no route")

    # -- shared behaviours -----------------------------------------------------------------
    def _files(self, repo: Repo, rev: str) -> dict[str, bytes] | None:
        if rev in ("main", "master", repo.sha):
            return repo.files
        if rev in repo.branches:
            return repo.branches[rev]
        if rev == COMMIT_V2 and "v2" in repo.branches:
            return repo.branches["v2"]
        return None

    def _sha_of(self, repo: Repo, rev: str) -> str:
        return COMMIT_V2 if rev in ("v2", COMMIT_V2) else repo.sha

    def _behaviour(self, h: BaseHTTPRequestHandler, method: str, rec: Record, repo: Repo, hub: str) -> bool:
        """Apply the repo's failure mode; True when a response was already sent."""
        with self._lock:
            self._served[repo.id] = self._served.get(repo.id, 0) + 1
            served = self._served[repo.id]
        if repo.behaviour == "gated":
            auth = h.headers.get("Authorization")
            if auth == f"Bearer {repo.token}":
                return False
            status = 401 if auth is None else 403
            if hub == "hf":
                self._json(h, method, rec, status, {"error": "Access to model is restricted."},
                           {"X-Error-Code": "GatedRepo", "X-Error-Message": "Access to model is restricted."})
            else:
                self._json(h, method, rec, status, {"Code": status, "Success": False, "Message": "no permission"})
            return True
        if repo.behaviour == "rate_limited":
            self._json(h, method, rec, 429, {"error": "rate limited"}, {"Retry-After": "0"})
            return True
        if repo.behaviour == "server_error":
            self._send(h, method, rec, 500, b"Internal Server Error")
            return True
        if repo.behaviour == "flaky" and served <= repo.fail_first:
            self._send(h, method, rec, 503, b"Service Unavailable")
            return True
        if repo.behaviour == "slow":
            time.sleep(repo.slow_s)
        if repo.behaviour == "huge_error":
            self._stream(h, method, rec, 500, repo.huge_bytes, b"<html>Internal Server Error", b"x")
            return True
        if repo.behaviour == "trickle":
            self._stream(h, method, rec, 200, 4096, b'{"id": "', b"x", delay_s=repo.slow_s, chunk=1,
                         headers={"Content-Type": "application/json"})
            return True
        if repo.behaviour == "hostile_text":
            text = "no access \x1b]0;owned\x07\x1b[2J\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\ \u202etxt.exe"
            if hub == "hf":
                # an HTTP header cannot carry raw control bytes safely; the JSON body can
                self._json(h, method, rec, 400, {"error": text})
            else:
                self._json(h, method, rec, 200, {"Code": 10010205999, "Success": False, "Message": text})
            return True
        if rec.api in ("hf-info", "ms-files") and repo.behaviour == "huge_json":
            self._stream(h, method, rec, 200, repo.huge_bytes, b'{"id": "' + repo.id.encode() + b'", "pad": "', b"x",
                         headers={"Content-Type": "application/json"})
            return True
        if rec.api in ("hf-info", "ms-files") and repo.behaviour == "deep_json":
            depth = 200_000
            self._send(h, method, rec, 200, b"[" * depth + b"]" * depth, {"Content-Type": "application/json"})
            return True
        return False

    def _bytes(self, h: BaseHTTPRequestHandler, method: str, rec: Record, blob: bytes,
               headers: dict[str, str], *, honour_range: bool = True) -> None:
        span = _parse_range(h.headers.get("Range") if honour_range else None, len(blob))
        etag = '"' + hashlib.sha256(blob).hexdigest() + '"'
        base = {"Accept-Ranges": "bytes", "ETag": etag, "Content-Type": "application/octet-stream", **headers}
        if span == "bad":
            self._send(h, method, rec, 416, b"", {**base, "Content-Range": f"bytes */{len(blob)}"})
            return
        start, end = (0, len(blob)) if span is None else span  # type: ignore[misc]
        body = blob[start:end]
        if rec.file and rec.file.endswith(".safetensors") and method == "GET":
            ds = _data_start(blob)
            if ds is not None:
                rec.weight_bytes = max(0, end - max(start, ds))
        if span is None:
            self._send(h, method, rec, 200, body, base)
        else:
            self._send(h, method, rec, 206, body, {**base, "Content-Range": f"bytes {start}-{end - 1}/{len(blob)}"})

    # -- Hugging Face ----------------------------------------------------------------------
    def _hf_search(self, h: BaseHTTPRequestHandler, method: str, rec: Record, query: dict[str, str]) -> None:
        text = query.get("search", "").lower()
        author = query.get("author")
        hits = [r for r in self.repos.values() if text in r.id.lower() and (author is None or r.id.split("/")[0] == author)]
        hits.sort(key=lambda r: -r.downloads)
        limit = int(query.get("limit", "1000"))
        self._json(h, method, rec, 200, [{"id": r.id, "modelId": r.id, "downloads": r.downloads} for r in hits[:limit]])

    def _hf_info(self, h: BaseHTTPRequestHandler, method: str, rec: Record, rest: str, query: dict[str, str]) -> None:
        repo_id, rev = ([*rest.split("/revision/", 1), "main"])[:2]
        rev = unquote(rev)
        rec.repo = repo_id
        repo = self.repos.get(repo_id)
        if repo is None:
            self._json(h, method, rec, 401, {"error": "Repository not found"},
                       {"X-Error-Code": "RepoNotFound", "X-Error-Message": "Repository not found"})
            return
        if self._behaviour(h, method, rec, repo, "hf"):
            return
        if repo.behaviour == "malformed":
            self._send(h, method, rec, 200, b'{"id": "' + repo.id.encode() + b'", "siblings": [{"rfilen',
                       {"Content-Type": "application/json"})
            return
        files = self._files(repo, rev)
        if files is None:
            self._json(h, method, rec, 404, {"error": "Invalid rev id"}, {"X-Error-Code": "RevisionNotFound"})
            return
        blobs = query.get("blobs", "").lower() == "true"
        siblings = []
        for name, blob in files.items():
            entry: dict[str, Any] = {"rfilename": name}
            if blobs:
                entry["size"] = len(blob)
                entry["blobId"] = hashlib.sha1(blob).hexdigest()
                if name.endswith(LFS_SUFFIXES):
                    entry["lfs"] = {"sha256": hashlib.sha256(blob).hexdigest(), "size": len(blob), "pointerSize": 134}
            siblings.append(entry)
        self._json(h, method, rec, 200, {
            "_id": hashlib.md5(repo.id.encode()).hexdigest()[:24], "id": repo.id, "modelId": repo.id,
            "sha": self._sha_of(repo, rev), "private": False, "gated": repo.behaviour == "gated" and "auto",
            "downloads": repo.downloads, "likes": 0, "tags": [], "siblings": siblings,
        })

    def _hf_resolve(self, h: BaseHTTPRequestHandler, method: str, rec: Record, path: str) -> None:
        repo_part, rest = path.lstrip("/").split("/resolve/", 1)
        rev_q, file_q = rest.split("/", 1)
        repo_id, rev, file = unquote(repo_part), unquote(rev_q), unquote(file_q)
        rec.repo, rec.file = repo_id, file
        repo = self.repos.get(repo_id)
        if repo is None:
            self._json(h, method, rec, 401, {"error": "Repository not found"}, {"X-Error-Code": "RepoNotFound"})
            return
        if self._behaviour(h, method, rec, repo, "hf"):
            return
        files = self._files(repo, rev)
        if files is None:
            self._json(h, method, rec, 404, {"error": "Invalid rev id"}, {"X-Error-Code": "RevisionNotFound"})
            return
        if file not in files:
            self._json(h, method, rec, 404, {"error": "Entry not found"}, {"X-Error-Code": "EntryNotFound"})
            return
        blob = files[file]
        commit = {"X-Repo-Commit": self._sha_of(repo, rev)}
        if file.endswith(LFS_SUFFIXES):
            sha = hashlib.sha256(blob).hexdigest()
            location = f"{self.cdn_url}/cdn/{quote(repo_id, safe='')}/{quote(rev, safe='')}/{quote(file, safe='')}"
            self._send(h, method, rec, 302, b"", {
                **commit, "Location": location, "X-Linked-Size": str(len(blob)), "X-Linked-Etag": f'"{sha}"',
                "ETag": f'"{hashlib.sha1(blob).hexdigest()}"',
            })
            return
        self._bytes(h, method, rec, blob, {**commit, "ETag": f'"{hashlib.sha1(blob).hexdigest()}"'})

    # -- ModelScope ------------------------------------------------------------------------
    def _ms_search(self, h: BaseHTTPRequestHandler, method: str, rec: Record, query: dict[str, str]) -> None:
        text = query.get("search", "").lower()
        owner = query.get("owner")
        hits = [r for r in self.repos.values() if text in r.id.lower() and (owner is None or r.id.split("/")[0] == owner)]
        hits.sort(key=lambda r: -r.downloads)
        size = int(query.get("page_size", "10"))
        self._json(h, method, rec, 200, {"success": True, "data": {
            "models": [{"id": r.id, "downloads": r.downloads} for r in hits[:size]],
            "total_count": len(hits), "page_number": 1, "page_size": size}})

    def _ms(self, h: BaseHTTPRequestHandler, method: str, rec: Record, rest: str, query: dict[str, str]) -> None:
        if rest.endswith("/repo/files"):
            rec.api, repo_id = "ms-files", rest[: -len("/repo/files")]  # (set before _behaviour)
        elif rest.endswith("/repo"):
            rec.api, repo_id = "ms-file", rest[: -len("/repo")]
        else:
            self._send(h, method, rec, 404, b"no route")
            return
        rec.repo = repo_id
        repo = self.repos.get(repo_id)
        if repo is None:
            self._json(h, method, rec, 404, {"Code": 10010205001, "Success": False, "Message": "model not exist"})
            return
        if self._behaviour(h, method, rec, repo, "ms"):
            return
        files = self._files(repo, query.get("Revision", "master"))
        if files is None:
            self._json(h, method, rec, 404, {"Code": 404, "Success": False, "Message": "revision not exist"})
            return
        if rec.api == "ms-files":
            if repo.behaviour == "malformed":
                self._send(h, method, rec, 200, b'{"Code": 200, "Data": {"Files": [', {"Content-Type": "application/json"})
                return
            entries = [{"Name": n.rsplit("/", 1)[-1], "Path": n, "Size": len(b), "Type": "blob",
                        "Sha256": hashlib.sha256(b).hexdigest()} for n, b in files.items()]
            dirs = sorted({n.rsplit("/", 1)[0] for n in files if "/" in n})
            entries += [{"Name": d, "Path": d, "Size": 0, "Type": "tree"} for d in dirs]
            self._json(h, method, rec, 200, {"Code": 200, "Success": True, "Message": "success",
                                             "Data": {"Files": entries}})
            return
        rec.file = query.get("FilePath", "")
        if rec.file not in files:
            self._json(h, method, rec, 404, {"Code": 404, "Success": False, "Message": "file not exist"})
            return
        self._bytes(h, method, rec, files[rec.file], {}, honour_range=repo.behaviour != "norange")
