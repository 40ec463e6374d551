"""The pilots' match at the WSGI level: the common case without Django's middleware and DRF.

`POST /api/v1/match/` is most of a grid's requests, and profiling it under gunicorn showed the
framework around the matcher costing as much as the matcher: the middleware chain, DRF's
request, negotiation and response objects. This wrapper answers the common case itself, with the
same parts the DRF view uses (the cached token authentication, the orjson parser, the resource
description serializer, the pilot's resolution and claim, the same JSON out, the same headers),
and hands every other request to Django untouched. A body in the plain form every pilot sends
(`plain_description`) is read without the serializer, into the very data it would validate:
DRF's field-by-field validation was a quarter of the request's Python.
Django answers:
- another path or method, no `Authorization: Token`, not JSON, no Content-Length or one over
  REQUEST_MAX_BYTES (the request size limit's setting);
- a request that a middleware of Django's chain would answer before the view: the short path
  asks Django's own (SecurityMiddleware's SSL redirect, CommonMiddleware's host and user-agent
  checks, Django's host validation), built from the same settings, rather than copies of them;
- an unknown token, a body that does not parse, a resource description that does not validate
  (or anything failing before the matcher runs): the body is put back and Django's view
  answers, so that every 4xx (and such a 500) comes from one place.
Only once the matcher has run (a job may be claimed) does this answer alone: 200 with the job,
204, or, if the matcher raised, a logged 500 as Django's handler would give (503 with
Retry-After, as Django's, when the database refused or lost the connection). Its security
headers are those SecurityMiddleware and XFrameOptionsMiddleware put on a response, for a
secure request and a plain one. Like Django's handler, it reads the settings when it is built.
tests/test_match_fast_path_parity.py holds both paths to the same answers.
"""

from __future__ import annotations

import io
import logging
import time

import orjson
from django.conf import settings
from django.core import signals
from django.core.handlers.wsgi import WSGIRequest
from django.http import HttpResponse
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.middleware.security import SecurityMiddleware
from django.utils.module_loading import import_string

from api.core.authentication import CachedTokenAuthentication
from api.core.codec import OrjsonParser
from api.matcher.resources import (
    MatchedJobSerializer,
    ResourceDescriptionSerializer,
    resource_of,
)
from core import gdpconfig, metrics
from core.db import connection_failure
from matcher import matching, topology
from pilots import registry as pilot_registry
from web.core.error_pages import MESSAGES, UNAVAILABLE, retry_after

PATH = "/api/v1/match/"
ROUTE = "api/v1/match/"
log = logging.getLogger("django.request")


# Of Django's middleware, those that may answer a match before the view (a redirect to https or
# to www., a 400 for a host not allowed, a 403 for a user agent refused), and those that add
# headers to every answer. The rest of the chain leaves a pilot's match as the view answers it.
GATES = (SecurityMiddleware, CommonMiddleware)
HEADERS = (SecurityMiddleware, XFrameOptionsMiddleware)
VIEW_HEADERS = [("Allow", "POST, OPTIONS")]  # the DRF view's own


def _through(request):  # the rest of the chain, for middleware asked one question at a time
    return None


def _host(request):
    request.get_host()  # DisallowedHost: ALLOWED_HOSTS, X-Forwarded-Host if trusted


class PilotMatchPath:
    def __init__(self, django_app):
        self.django = django_app
        self.authentication = CachedTokenAuthentication()
        self.parser = OrjsonParser()
        chain = [import_string(path) for path in settings.MIDDLEWARE]
        self._gates = [cls(_through).process_request for cls in chain if issubclass(cls, GATES)]
        if not any(issubclass(cls, CommonMiddleware) for cls in chain):
            # Django checks the host when asked (CommonMiddleware asks on every request):
            # without it, the short path still asks, and hands a refused host over.
            self._gates.insert(0, _host)
        answering = [cls(_through) for cls in reversed(chain) if issubclass(cls, HEADERS)]
        self._headers = {secure: _headers(answering, secure) for secure in (False, True)}

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO") != PATH or environ.get("REQUEST_METHOD") != "POST":
            return self.django(environ, start_response)
        key, raw, secure = self._common_case(environ)
        if key is None:
            return self.django(environ, start_response)
        started = time.perf_counter()
        signals.request_started.send(sender=PilotMatchPath, environ=environ)
        answer = self._match(key, raw)
        if answer is None:  # not the common case after all: Django answers, same body
            environ["wsgi.input"] = io.BytesIO(raw)
            return self.django(environ, start_response)
        status, body = answer
        headers = list(self._headers[secure])
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

    def _common_case(self, environ) -> tuple[str | None, bytes, bool]:
        """The token, the body and whether the request came over TLS, or (None, b"", False)
        when Django must see the request as it is."""
        refused = None, b"", False
        auth = environ.get("HTTP_AUTHORIZATION", "")
        content_type = environ.get("CONTENT_TYPE", "").split(";")
        if not auth.startswith("Token ") or content_type[0].strip() != "application/json":
            return refused
        if any("charset" in p and "utf-8" not in p.lower() for p in content_type[1:]):
            return refused
        try:
            length = int(environ.get("CONTENT_LENGTH") or "")
        except ValueError:
            return refused
        if not 0 < length <= settings.REQUEST_MAX_BYTES:
            return refused
        parts = auth.split()
        if len(parts) != 2:
            return refused
        try:
            request = WSGIRequest(environ)
            if any(gate(request) is not None for gate in self._gates):
                return refused
            secure = request.is_secure()
        except Exception:  # DisallowedHost, PermissionDenied...: Django answers as it would
            return refused
        raw = environ["wsgi.input"].read(length)
        if len(raw) != length:  # a short body: Django says so
            environ["wsgi.input"] = io.BytesIO(raw)
            return refused
        return parts[1], raw, secure

    def _match(self, key: str, raw: bytes):
        """(status, body) once the matcher ran; None when Django must answer (before it did)."""
        try:
            user, _ = self.authentication.authenticate_credentials(key)
            attrs = plain_description(raw)
            if attrs is None:  # not in the plain form: the serializer says what it is
                body = ResourceDescriptionSerializer(
                    data=self.parser.parse(io.BytesIO(raw)), context={"claim": True}
                )
                if not body.is_valid():
                    return None
                attrs = body.validated_data
            resource = resource_of(attrs, user)
            reference = attrs.get("pilot_reference", "")
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


# The resource description in its plain form: each string as DRF's CharField returns it (ASCII,
# no NUL, no surrounding blanks, within its max_length), the CPU time a JSON integer, the tags a
# list of such strings, the platform one or a list; no owner_dn or owner_group (a private pilot
# named by a generic credential looks them up). Such a body validates to itself, so that
# `plain_description` gives exactly ResourceDescriptionSerializer's validated data without it;
# any other body, valid or not, goes to the serializer (tests/test_match_plain_description.py).
_TEXT = {"site": 128, "grid_ce": 128, "setup": 64, "pilot_type": 32, "pilot_reference": 255}
_KNOWN = frozenset((*_TEXT, "cpu_time", "platform", "tag"))
MAX_TAGS = 200


def _plain(value, limit: int = 1 << 30, blank: bool = False) -> bool:
    return (
        type(value) is str
        and len(value) <= limit
        and value.isascii()
        and "\x00" not in value
        and value.strip() == value
        and (blank or value != "")
    )


def plain_description(raw: bytes) -> dict | None:
    """The validated data of a match request's body in the plain form (above), the site and
    CE checked against the topology as the serializer checks them; None for any other body."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if type(data) is not dict or not data.keys() <= _KNOWN:
        return None
    for name, limit in _TEXT.items():
        if name in data and not _plain(data[name], limit, blank=name == "pilot_reference"):
            return None
    if "site" not in data or type(data.get("cpu_time")) is not int or data["cpu_time"] < 0:
        return None
    attrs = dict(data)
    if "platform" in data:
        platform = data["platform"]
        platform = [platform] if type(platform) is str else platform
        if type(platform) is not list or not all(_plain(p) for p in platform):
            return None
        attrs["platform"] = list(platform)
    tags = data.get("tag", [])
    if type(tags) is not list or len(tags) > MAX_TAGS or not all(_plain(t, 128) for t in tags):
        return None
    attrs["tag"] = list(tags)
    # ResourceDescriptionSerializer.validate_site and validate, for a claim.
    site, ce = attrs["site"], attrs.get("grid_ce")
    if not matching.is_any(site) and not topology.site_exists(site):
        return None
    if ce and not matching.is_any(ce):
        ce_site = topology.site_of_ce(ce)
        if ce_site is None:
            return None
        if matching.is_any(site):
            attrs["site"] = ce_site
        elif ce_site != site:
            return None
    if matching.is_any(attrs["site"]):
        return None
    attrs.setdefault("setup", gdpconfig.get("DefaultSetup"))
    return attrs


def _headers(middleware, secure: bool) -> list[tuple[str, str]]:
    """The headers of an answer to a match: the view's, then what Django's middleware adds on
    the way out (in the chain's order back), for a request over TLS or not."""
    request = WSGIRequest(
        {
            "REQUEST_METHOD": "POST",
            "PATH_INFO": PATH,
            "wsgi.input": io.BytesIO(),
            "wsgi.url_scheme": "https" if secure else "http",
        }
    )
    response = HttpResponse()
    del response["Content-Type"]  # the answer's own, when it has a body
    for each in middleware:
        response = each.process_response(request, response)
    return [*VIEW_HEADERS, *response.items()]
