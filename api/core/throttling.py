"""The API's per-user rate: a user's requests per minute, ApiUserRatePerMinute (gdpconfig, read
on every request, so an operator's change applies within seconds), counted in the database by
core/throttling.py so that the limit holds across processes and hosts. The pilots' routes are
not counted: a pilot's match, registration, reports, heartbeats and sandboxes must never wait
for a user's browsing (and the match's common case does not go through DRF at all:
api/pilots/wsgi.py)."""

from __future__ import annotations

from rest_framework.throttling import BaseThrottle

from core import gdpconfig
from core.throttling import API_USER, count

# The pilots' own calls, by route name: the user rate never holds a pilot up.
PILOT_ROUTES = frozenset(
    {
        "match-list",
        "pilot-list",
        "pilot-status",
        "job-report-status",
        "job-heartbeat",
        "job-input",
        "job-output",
    }
)


class ApiUserRateThrottle(BaseThrottle):
    """ApiUserRatePerMinute per signed-in user, pilots' routes aside; 429 with Retry-After."""

    def allow_request(self, request, view) -> bool:
        self.left = None
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return True  # refused as unauthenticated anyway, where it needs to be
        rate = gdpconfig.get("ApiUserRatePerMinute")
        if not rate:
            return True
        match = request.resolver_match
        if match is not None and match.url_name in PILOT_ROUTES:
            return True
        n, left = count([(API_USER, str(user.pk))], 60)[API_USER]
        if n > rate:
            self.left = left
            return False
        return True

    def wait(self):
        return self.left
