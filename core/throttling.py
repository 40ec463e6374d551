"""Throttling: failed logins by account and by address, and API requests per user.

Production runs several worker processes, maybe on several hosts: a count kept in a process (the
default cache is per-process memory) would let an attacker multiply the attempts by the number
of processes. Every count is a row of ThrottleWindow, moved by one atomic upsert that also
starts a new window once the old one is over, on the database's clock (one clock for all
hosts).

Logins (the token endpoint, the login page, the admin's login): each attempt is counted against
its user name and its client address before the password is checked; past a limit the attempt
answers 429 with Retry-After without looking at the password (the right one included, so a
refusal tells nothing), until the window that began at the first failure ends. A success gives
the attempt back: the account's count is cleared (a user who mistyped starts afresh) and the
address's lowered by one (users behind one address who log in are not counted against it).
The address is REMOTE_ADDR: no setting names a trusted proxy, and a header a client sets is not
evidence of where it is.

API requests: a user's requests per minute, counted here under API_USER by the API's throttle
(api/core/throttling.py).
"""

from __future__ import annotations

import math

from django.contrib.auth import authenticate as django_authenticate
from django.db import connection
from django.db.models import F

from core import gdpconfig
from core.models import ThrottleWindow

ACCOUNT = "auth-account"
ADDRESS = "auth-address"
API_USER = "api-user"
KEY_LENGTH = ThrottleWindow._meta.get_field("key").max_length

_TABLE = ThrottleWindow._meta.db_table
# One statement per attempt, whatever the number of keys: a row's window restarts (count 1) when
# it is over, else its count goes up by one; both CASEs read the row as it was.
_COUNT = f"""
INSERT INTO {_TABLE} AS w (scope, key, started, count)
VALUES {{values}}
ON CONFLICT (scope, key) DO UPDATE SET
    count = CASE WHEN w.started > clock_timestamp() - %(window)s * interval '1 second'
                 THEN w.count + 1 ELSE 1 END,
    started = CASE WHEN w.started > clock_timestamp() - %(window)s * interval '1 second'
                   THEN w.started ELSE clock_timestamp() END
RETURNING w.scope, w.count,
          EXTRACT(EPOCH FROM w.started + %(window)s * interval '1 second' - clock_timestamp())
"""


class LoginsRefused(Exception):
    """Too many failed logins for this account or from this address, for `seconds` more."""

    def __init__(self, seconds: int):
        super().__init__(f"too many failed logins: try again in {seconds} s")
        self.seconds = seconds

    @property
    def message(self) -> str:
        minutes = math.ceil(self.seconds / 60)
        wait = f"{self.seconds} seconds" if self.seconds < 120 else f"{minutes} minutes"
        return (
            f"Too many failed logins for this user name or from this address: try again in {wait}."
        )


def count(keys: list[tuple[str, str]], window: int) -> dict[str, tuple[int, int]]:
    """Count one request against each (scope, key): {scope: (count in the window, seconds until
    the window ends)}."""
    values = ", ".join(f"(%(s{i})s, %(k{i})s, clock_timestamp(), 1)" for i in range(len(keys)))
    params: dict = {"window": window}
    for i, (scope, key) in enumerate(keys):
        params[f"s{i}"] = scope
        params[f"k{i}"] = key[:KEY_LENGTH]  # longer names exist nowhere: sharing a row is fine
    with connection.cursor() as cur:
        cur.execute(_COUNT.format(values=values), params)
        rows = cur.fetchall()
    return {scope: (n, max(1, math.ceil(left))) for scope, n, left in rows}


def client_address(request) -> str:
    return request.META.get("REMOTE_ADDR") or "unknown"


def authenticate(request, username: str, password: str):
    """The user these credentials name, or None; LoginsRefused past a limit (the password is
    then not checked). Every door that takes a password comes through here."""
    per_account = gdpconfig.get("AuthFailuresPerAccount")
    per_address = gdpconfig.get("AuthFailuresPerAddress")
    window = gdpconfig.get("AuthFailureWindowSeconds")
    address = client_address(request)
    keys = [(ACCOUNT, username)] if per_account else []
    keys += [(ADDRESS, address)] if per_address else []
    if keys:
        counts = count(keys, window)
        limits = {ACCOUNT: per_account, ADDRESS: per_address}
        waits = [left for scope, (n, left) in counts.items() if n > limits[scope]]
        if waits:
            raise LoginsRefused(max(waits))
        if any(n == 1 for n, _ in counts.values()):
            _forget_old(window)
    user = django_authenticate(request, username=username, password=password)
    if user is not None and keys:
        # The attempt was not a failure: give it back.
        ThrottleWindow.objects.filter(scope=ACCOUNT, key=username[:KEY_LENGTH]).delete()
        ThrottleWindow.objects.filter(scope=ADDRESS, key=address, count__gt=0).update(
            count=F("count") - 1
        )
    return user


def _forget_old(window: int) -> None:
    """Windows long over, so that user names tried once do not pile up (run when a window
    starts: at most as often as new names or addresses appear)."""
    with connection.cursor() as cur:
        cur.execute(
            f"DELETE FROM {_TABLE} WHERE scope IN (%s, %s) "
            "AND started < clock_timestamp() - %s * interval '1 second'",
            [ACCOUNT, ADDRESS, window],
        )
