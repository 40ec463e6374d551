"""The pilots' match at the WSGI level: the common case without Django's middleware and DRF.

`POST /api/v1/match/` is most of a grid's requests, and profiling it under gunicorn showed the
framework around the matcher costing as much as the matcher: the middleware chain, DRF's
request, negotiation and response objects. This wrapper answers the common case itself, with the
same parts the DRF view uses (the cached token authentication, the orjson parser, the resource
description serializer, the pilot's resolution and claim, the same JSON out, the same headers),
and hands every other request to Django untouched:
- another path or method, no `Authorization: Token`, not JSON, no Content-Length or one over
  REQUEST_MAX_BYTES, a Host not in ALLOWED_HOSTS, plain HTTP where SECURE_SSL_REDIRECT wants TLS;
- an unknown token, a body that does not parse, a resource description that does not validate
  (or anything failing before the matcher runs): the body is put back and Django's view
  answers, so that every 4xx (and such a 500) comes from one place.
Only once the matcher has run (a job may be claimed) does this answer alone: 200 with the job,
204, or, if the matcher raised, a logged 500 as Django's handler would give (503 with
Retry-After, as Django's, when the database refused or lost the connection).
"""

from __future__ import annotations

import io
import logging
import time

import orjson
from django.conf import settings
from django.core import signals
from django.http.request import split_domain_port, validate_host

from api.core.authentication import CachedTokenAuthentication
from api.core.codec import OrjsonParser
from api.matcher.resources import MatchedJobSerializer, ResourceDescriptionSerializer
from core import metrics
from pilots import registry as pilot_registry
from web.core.error_pages import MESSAGES, UNAVAILABLE, connection_failure, retry_after

PATH = "/api/v1/match/"
ROUTE = "api/v1/match/"
log = logging.getLogger("django.request")


class PilotMatchPath:
    def __init__(self, django_app):
        self.django = django_app
        self.authentication = CachedTokenAuthentication()
        self.parser = OrjsonParser()
        self._headers = [
            ("X-Frame-Options", "DENY"),
            ("Allow", "POST, OPTIONS"),
        ]
        if settings.SECURE_CONTENT_TYPE_NOSNIFF:
            self._headers.append(("X-Content-Type-Options", "nosniff"))
        if settings.SECURE_REFERRER_POLICY:
            self._headers.append(("Referrer-Policy", settings.SECURE_REFERRER_POLICY))
        if settings.SECURE_CROSS_ORIGIN_OPENER_POLICY:
            coop = settings.SECURE_CROSS_ORIGIN_OPENER_POLICY
            self._headers.append(("Cross-Origin-Opener-Policy", coop))
        self._hsts = []
        if settings.SECURE_HSTS_SECONDS:
            value = f"max-age={settings.SECURE_HSTS_SECONDS}"
            if settings.SECURE_HSTS_INCLUDE_SUBDOMAINS:
                value += "; includeSubDomains"
            if settings.SECURE_HSTS_PRELOAD:
                value += "; preload"
            self._hsts = [("Strict-Transport-Security", value)]

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO") != PATH or environ.get("REQUEST_METHOD") != "POST":
            return self.django(environ, start_response)
        key, raw = self._common_case(environ)
        if key is None:
            return self.django(environ, start_response)
        started = time.perf_counter()
        signals.request_started.send(sender=PilotMatchPath, environ=environ)
        answer = self._match(key, raw)
        if answer is None:  # not the common case after all: Django answers, same body
            environ["wsgi.input"] = io.BytesIO(raw)
            return self.django(environ, start_response)
        status, body = answer
        headers = [*self._headers, *(self._hsts if self._secure(environ) else [])]
        if status.startswith("503"):
            headers.append(("Retry-After", retry_after()))
        if body:
            headers += [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
        start_response(status, headers)
        metrics.observe_request("POST", ROUTE, int(status[:3]), time.perf_counter() - started)
        # The body is complete: the request ends now, as Django's handler ends it on close().
        # (A plain list: servers such as granian send it in one write.)
        signals.request_finished.send(sender=PilotMatchPath)
        return [body]

    def _common_case(self, environ) -> tuple[str | None, bytes]:
        """The token and the body, or (None, b"") when Django must see the request as it is."""
        auth = environ.get("HTTP_AUTHORIZATION", "")
        content_type = environ.get("CONTENT_TYPE", "").split(";")
        if not auth.startswith("Token ") or content_type[0].strip() != "application/json":
            return None, b""
        if any("charset" in p and "utf-8" not in p.lower() for p in content_type[1:]):
            return None, b""
        try:
            length = int(environ.get("CONTENT_LENGTH") or "")
        except ValueError:
            return None, b""
        if not 0 < length <= settings.REQUEST_MAX_BYTES:
            return None, b""
        host = environ.get("HTTP_HOST") or environ.get("SERVER_NAME", "")
        allowed = settings.ALLOWED_HOSTS
        if settings.DEBUG and not allowed:
            allowed = [".localhost", "127.0.0.1", "[::1]"]
        if not validate_host(split_domain_port(host)[0], allowed):
            return None, b""
        if settings.SECURE_SSL_REDIRECT and not self._secure(environ):
            return None, b""
        parts = auth.split()
        if len(parts) != 2:
            return None, b""
        raw = environ["wsgi.input"].read(length)
        if len(raw) != length:  # a short body: Django says so
            environ["wsgi.input"] = io.BytesIO(raw)
            return None, b""
        return parts[1], raw

    def _secure(self, environ) -> bool:
        header = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
        if header:
            return environ.get(header[0], "").split(",")[0].strip() == header[1]
        return environ.get("wsgi.url_scheme") == "https"

    def _match(self, key: str, raw: bytes):
        """(status, body) once the matcher ran; None when Django must answer (before it did)."""
        try:
            user, _ = self.authentication.authenticate_credentials(key)
            data = self.parser.parse(io.BytesIO(raw))
            body = ResourceDescriptionSerializer(data=data, context={"claim": True})
            if not body.is_valid():
                return None
            resource = body.resource(user)
            reference = body.validated_data.get("pilot_reference", "")
            claimant = pilot_registry.resolve_pilot(user, reference, resource)
        except Exception:  # a 4xx, or a failure Django's handler logs and answers: nothing done
            return None
        try:
            started = time.perf_counter()
            found = pilot_registry.claim(resource, claimant)
            metrics.observe_match(time.perf_counter() - started, claimed=found is not None)
        except Exception as exc:
            if connection_failure(exc):  # the database refused or lost it: the pilot asks again
                log.error(
                    "Service Unavailable: %s", PATH, exc_info=True, extra={"status_code": 503}
                )
                return "503 Service Unavailable", orjson.dumps({"detail": UNAVAILABLE})
            log.exception("Internal Server Error: %s", PATH, extra={"status_code": 500})
            return "500 Internal Server Error", orjson.dumps({"detail": MESSAGES[500]})
        if found is None:
            return "204 No Content", b""
        return "200 OK", orjson.dumps(MatchedJobSerializer.describe(found))
