"""The API token cache with production's lifetime (API_TOKEN_CACHE_SECONDS, 5 s): a token deleted
by another process is refused by this one within that bound; by the process that deleted it, at
once."""

import pytest
from django.db import connection
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from api.core import authentication

pytestmark = [pytest.mark.django_db, pytest.mark.production_lifetimes]


def _status(key: str) -> int:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client.get("/api/v1/jobs/").status_code


@pytest.fixture
def clock(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(authentication.time, "monotonic", lambda: now[0])
    authentication.forget()
    yield now
    authentication.forget()


def test_a_token_deleted_elsewhere_is_refused_within_five_seconds(users, clock):
    key = Token.objects.get_or_create(user=users["alice"])[0].key
    assert _status(key) == 200
    with connection.cursor() as cur:  # another process: no signal reaches this one
        cur.execute(f"DELETE FROM {Token._meta.db_table} WHERE key = %s", [key])
    clock[0] += 4.9
    assert _status(key) == 200  # trusted for the cache's lifetime
    clock[0] += 0.2
    assert _status(key) == 401


def test_a_token_deleted_by_this_process_is_refused_at_once(users, clock):
    token = Token.objects.get_or_create(user=users["bob"])[0]
    assert _status(token.key) == 200
    token.delete()
    assert _status(token.key) == 401
