"""HTTP between the pilot and gridwms, standard library only (urllib).

Every call is retried with a growing pause (0.5 s, 1 s, 2 s, ...) on a 5xx answer or a lost
connection; a 4xx answer is returned to the caller at once. Answers are `(status, body)` with
the JSON body decoded (`{"detail": text}` when it is not JSON).

Uploads are multipart/form-data built by hand and streamed from disk: the body's length is
computed from the files' sizes up front (no chunked encoding, which WSGI servers may refuse)
and the files are read in chunks while the request is sent.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

CHUNK = 64 * 1024
RETRYABLE = (urllib.error.URLError, TimeoutError, ConnectionError)

Answer = tuple[int, dict]


def _decode(raw: bytes) -> dict:
    if not raw:
        return {}
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {"detail": raw.decode(errors="replace")[:500]}
    return body if isinstance(body, dict) else {"detail": body}


@dataclass(frozen=True)
class FilePart:
    """A file part of a multipart body: form field `field`, its `filename`, read from `path`."""

    field: str
    filename: str
    path: str


def _quoted(value: str) -> str:
    """A quoted-string for a Content-Disposition parameter (backslash escapes, no newline)."""
    value = value.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + value.replace("\r", "%0D").replace("\n", "%0A") + '"'


class Multipart:
    """A multipart/form-data body of text fields and files, streamed from disk.

    The files' sizes are taken when the body is built; `length` is the exact Content-Length.
    A file that shrank before it is sent is an error (the upload is then retried or given up);
    one that grew is sent as it was when measured."""

    def __init__(self, fields: list[tuple[str, str]], files: list[FilePart]):
        self.boundary = f"gridwms-{uuid.uuid4().hex}"
        self.content_type = f"multipart/form-data; boundary={self.boundary}"
        self._fields = [(self._head(name), value.encode()) for name, value in fields]
        self._files = [
            (self._head(f.field, f.filename), f.path, os.path.getsize(f.path)) for f in files
        ]
        self._end = f"--{self.boundary}--\r\n".encode()
        self.length = (
            sum(len(head) + len(value) + 2 for head, value in self._fields)
            + sum(len(head) + size + 2 for head, _, size in self._files)
            + len(self._end)
        )

    def _head(self, name: str, filename: str | None = None) -> bytes:
        disposition = f"form-data; name={_quoted(name)}"
        lines = [f"--{self.boundary}"]
        if filename is None:
            lines.append(f"Content-Disposition: {disposition}")
        else:
            lines.append(f"Content-Disposition: {disposition}; filename={_quoted(filename)}")
            lines.append("Content-Type: application/octet-stream")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8", errors="replace")

    def chunks(self) -> Iterator[bytes]:
        """The body, piece by piece; each call starts over (a retry sends it again)."""
        for head, value in self._fields:
            yield head + value + b"\r\n"
        for head, path, size in self._files:
            yield head
            yield from _read_exactly(path, size)
            yield b"\r\n"
        yield self._end


def _read_exactly(path: str, size: int) -> Iterator[bytes]:
    left = size
    with open(path, "rb") as f:
        while left > 0:
            chunk = f.read(min(CHUNK, left))
            if not chunk:
                raise OSError(f"{path} shrank while it was being uploaded")
            left -= len(chunk)
            yield chunk


class Client:
    """gridwms's API as the pilot sees it: `url` is the server's root, paths start /api/v1/."""

    def __init__(self, url: str, token: str, timeout: float = 30.0, pause: float = 0.5):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.pause = pause

    def post(self, path: str, body: dict, attempts: int = 4) -> Answer:
        """POST a JSON body."""
        data = json.dumps(body).encode()
        return self._retried(
            lambda: self._send(path, "POST", data, {"Content-Type": "application/json"}),
            attempts,
        )

    def download(self, path: str, dest: str, attempts: int = 4) -> Answer:
        """GET a file into `dest` (written only on a 200; rewritten on each attempt)."""

        def once() -> Answer:
            request = self._request(path, "GET", None, {"Accept": "application/octet-stream"})
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    with open(dest, "wb") as out:
                        shutil.copyfileobj(response, out, CHUNK)
                    return response.status, {}
            except urllib.error.HTTPError as exc:
                return exc.code, _decode(exc.read())

        return self._retried(once, attempts)

    def post_multipart(
        self, path: str, fields: list[tuple[str, str]], files: list[FilePart], attempts: int = 4
    ) -> Answer:
        """POST a multipart/form-data body, the files streamed from disk."""

        def once() -> Answer:
            body = Multipart(fields, files)
            headers = {"Content-Type": body.content_type, "Content-Length": str(body.length)}
            return self._send(path, "POST", body.chunks(), headers)

        return self._retried(once, attempts)

    def _retried(self, once: Callable[[], Answer], attempts: int) -> Answer:
        status, answer = 599, {}
        for attempt in range(attempts):
            try:
                status, answer = once()
            except RETRYABLE:
                if attempt == attempts - 1:
                    raise
                status, answer = 599, {}
            if status < 500 or attempt == attempts - 1:
                return status, answer
            time.sleep(self.pause * 2**attempt)
        return status, answer

    def _request(self, path: str, method: str, data, headers: dict) -> urllib.request.Request:
        return urllib.request.Request(
            f"{self.url}{path}",
            data=data,
            method=method,
            headers={
                "Authorization": f"Token {self.token}",
                "Accept": "application/json",
                **headers,
            },
        )

    def _send(self, path: str, method: str, data, headers: dict) -> Answer:
        request = self._request(path, method, data, headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return response.status, _decode(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, _decode(exc.read())
