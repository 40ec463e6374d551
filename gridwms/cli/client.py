"""The command line's side of the API: stored credentials, requests, errors as one line,
streamed multipart bodies. Standard library only."""

from __future__ import annotations

import http.client
import json
import os
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

VERSION = "0.1.0"
DEFAULT_URL = "http://127.0.0.1:8000"
API_PREFIX = "/api/v1"
CHUNK = 64 * 1024
EXIT_SERVER, EXIT_USAGE = 1, 2


class CliError(Exception):
    """A one-line message for the user, the exit status it ends with and, for an answer of
    the server, its HTTP status."""

    def __init__(self, message: str, code: int = EXIT_USAGE, status: int | None = None):
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status


# --- credentials ---------------------------------------------------------------------------------


def config_path() -> Path:
    if os.environ.get("GRIDWMS_CONFIG"):
        return Path(os.environ["GRIDWMS_CONFIG"]).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "gridwms" / "credentials.json"


def load_credentials() -> dict[str, Any]:
    path = config_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise CliError(f"cannot read {path}: {exc}; run `gridwms login` again") from None
    return data if isinstance(data, dict) else {}


def save_credentials(data: dict[str, Any]) -> Path:
    """Written whole or not at all, readable by its owner only (0600, in a 0700 directory)."""
    path = config_path()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def normalise_url(url: str) -> str:
    url = url.strip().rstrip("/")
    if url.endswith(API_PREFIX):
        url = url[: -len(API_PREFIX)]
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CliError(f"not a server URL: {url!r} (e.g. {DEFAULT_URL})")
    return url


def connect() -> Client:
    """A client for the server that GRIDWMS_URL or the stored credentials name. A stored token
    goes only to the server that issued it."""
    stored = load_credentials()
    url = normalise_url(os.environ.get("GRIDWMS_URL") or stored.get("url") or DEFAULT_URL)
    token = os.environ.get("GRIDWMS_TOKEN")
    if not token and stored.get("url") and normalise_url(str(stored["url"])) == url:
        token = stored.get("token")
    if not token:
        raise CliError(f"not logged in to {url}: run `gridwms login` (or set GRIDWMS_TOKEN)")
    return Client(url, str(token))


# --- requests ------------------------------------------------------------------------------------


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    # A redirect would carry the token wherever it points: it is reported instead.
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)
_LOST = (TimeoutError, ConnectionError, http.client.HTTPException)


class Client:
    def __init__(self, url: str, token: str | None = None, timeout: float = 60.0):
        self.base = url
        self.token = token
        self.timeout = timeout

    def url(self, path: str, query: dict[str, Any] | None = None) -> str:
        """`path` is under /api/v1, unless it is a whole URL of this server."""
        url = path if path.startswith(self.base + "/") else f"{self.base}{API_PREFIX}{path}"
        if query:
            pairs = [(k, v) for k, v in query.items() if v not in (None, "", [])]
            url += "?" + urllib.parse.urlencode(pairs, doseq=True)
        return url

    def open(self, method: str, path: str, *, query=None, body=None, headers=None):
        """The response (to read, then close), or CliError for a refusal or a failure."""
        request = urllib.request.Request(self.url(path, query), data=body, method=method)
        request.add_header("Accept", "application/json, text/plain;q=0.9, */*;q=0.5")
        request.add_header("User-Agent", f"gridwms-cli/{VERSION}")
        if self.token:
            request.add_header("Authorization", f"Token {self.token}")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            return _OPENER.open(request, timeout=self.timeout)
        except urllib.error.HTTPError as exc:
            with exc:
                raise http_error(exc.code, exc.headers, exc.read()) from None
        except urllib.error.URLError as exc:
            raise CliError(f"cannot reach {self.base}: {exc.reason}", EXIT_SERVER) from None
        except (*_LOST, OSError) as exc:
            raise CliError(f"connection to {self.base} failed: {exc}", EXIT_SERVER) from None

    def chunks(self, response) -> Iterator[bytes]:
        """The body of an open response, in chunks (a connection lost meanwhile: CliError)."""
        try:
            while chunk := response.read(CHUNK):
                yield chunk
        except _LOST as exc:
            raise CliError(f"connection to {self.base} lost: {exc}", EXIT_SERVER) from None

    def call(self, method: str, path: str, payload: Any = None, *, query=None, **kw) -> Any:
        """A request whose answer is JSON (None: an empty answer)."""
        if payload is not None:
            kw["body"] = json.dumps(payload).encode()
            kw["headers"] = {"Content-Type": "application/json", **kw.get("headers", {})}
        with self.open(method, path, query=query, **kw) as response:
            raw = b"".join(self.chunks(response))
        if not raw.strip():
            return None
        try:
            return json.loads(raw)
        except ValueError:
            raise CliError(f"{self.base} answered something other than JSON", EXIT_SERVER) from None

    def pages(self, path: str, query: dict[str, Any]) -> Iterator[dict]:
        """Every row of a paginated list, following `next` (its query only, on this server)."""
        answer = self.call("GET", path, query=query)
        while True:
            if isinstance(answer, list):
                yield from answer
                return
            yield from (answer or {}).get("results", [])
            following = (answer or {}).get("next")
            if not following:
                return
            cursor = urllib.parse.parse_qs(urllib.parse.urlsplit(following).query)
            answer = self.call("GET", path, query=cursor)


def http_error(status: int, headers, raw: bytes) -> CliError:
    code = EXIT_USAGE if 400 <= status < 500 else EXIT_SERVER
    headers = headers or {}
    detail = describe_body(headers.get("Content-Type", ""), raw)
    if status == 401:
        message = f"not logged in, or the token was refused: run `gridwms login` ({detail})"
    elif status == 429 or status >= 500:
        after = headers.get("Retry-After")
        message = f"server error {status}: {detail}" + (f"; retry after {after} s" if after else "")
    elif 300 <= status < 400:
        message = f"the server redirects to {headers.get('Location', '?')}: log in with that URL"
    else:
        message = detail
    return CliError(message, code, status)


def describe_body(content_type: str, raw: bytes) -> str:
    if "json" in content_type:
        try:
            return "; ".join(describe_errors(json.loads(raw))) or "(no detail)"
        except ValueError:
            pass
    if "html" in content_type:
        return "(an HTML page)"
    lines = raw.decode("utf-8", "replace").strip().splitlines()
    return lines[0][:200] if lines else "(no detail)"


def describe_errors(value: Any, where: str = "") -> list[str]:
    """DRF's errors as `field: message`: {"arguments": ["..."]}, a list of jobs or a list
    field by position ({"1": {"cpu_time": [...]}} or [{}, {"cpu_time": [...]}] ->
    `[1].cpu_time: ...`; {"sites": {"0": [...]}} -> `sites[0]: ...`), {"detail": "..."}."""
    if isinstance(value, dict):
        out = []
        for key, sub in value.items():
            if key in ("detail", "non_field_errors"):
                name = where
            elif str(key).isdigit():  # a position in a list
                name = f"{where}[{key}]"
            else:
                name = f"{where}.{key}" if where else str(key)
            out += describe_errors(sub, name)
        return out
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        out = []
        for i, sub in enumerate(value):
            out += describe_errors(sub, f"{where}[{i}]")
        return out
    text = " ".join(str(v) for v in value) if isinstance(value, list) else str(value)
    if not text:
        return []
    return [f"{where}: {text}" if where else text]


# --- multipart bodies ----------------------------------------------------------------------------


class Multipart:
    """multipart/form-data, streamed: fields, and files read in chunks while they are sent;
    its length is known in advance (no chunked encoding, which WSGI servers may refuse)."""

    def __init__(self):
        self.boundary = f"gridwms-{uuid.uuid4().hex}"
        self.parts: list[tuple[bytes, bytes | Path, int]] = []

    @property
    def headers(self) -> dict[str, str]:
        return {
            "Content-Type": f"multipart/form-data; boundary={self.boundary}",
            "Content-Length": str(len(self)),
        }

    def field(self, name: str, value: str) -> None:
        head = f'--{self.boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'
        data = value.encode()
        self.parts.append((head.encode(), data, len(data)))

    def file(self, name: str, path: Path, filename: str) -> None:
        """`filename` is sent as UTF-8 with quotes escaped as HTML entities, which Django
        unescapes (so `&`, `"` and `'` arrive intact). No CR, LF or NUL: the caller checks."""
        quoted = filename.replace("&", "&amp;").replace('"', "&quot;")
        head = (
            f"--{self.boundary}\r\n"
            f'Content-Disposition: form-data; name="{name}"; filename="{quoted}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        )
        self.parts.append((head.encode(), path, path.stat().st_size))

    def __len__(self) -> int:
        ending = len(f"--{self.boundary}--\r\n")
        return sum(len(head) + size + 2 for head, _, size in self.parts) + ending

    def __iter__(self) -> Iterator[bytes]:
        for head, content, size in self.parts:
            yield head
            if isinstance(content, bytes):
                yield content
            else:
                yield from _file_chunks(content, size)
            yield b"\r\n"
        yield f"--{self.boundary}--\r\n".encode()


def _file_chunks(path: Path, size: int) -> Iterator[bytes]:
    with path.open("rb") as f:
        left = size
        while left:
            chunk = f.read(min(CHUNK, left))
            if not chunk:
                raise CliError(f"{path} shrank while it was being sent")
            left -= len(chunk)
            yield chunk
