"""`Authorization: Bearer`: an API token's key, or a token this server signed, names its user;
anything else is refused with a 401 that says why."""

import jwt
import pytest
from django.test import override_settings
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from api.core import tokens

pytestmark = pytest.mark.django_db


def _get(header: str, path: str = "/api/v1/jobs/"):
    return APIClient().get(path, HTTP_AUTHORIZATION=header)


def test_an_api_token_key_sent_as_bearer_names_its_user(users, submit):
    submit("alice")
    key = Token.objects.get_or_create(user=users["alice"])[0].key
    response = _get(f"Bearer {key}")
    assert response.status_code == 200
    assert {row["owner"] for row in response.json()["results"]} == {"alice"}


def test_a_signed_token_names_its_user_and_carries_the_claims_pandas_client_reads(users):
    token = tokens.issue(users["alice"])
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["preferred_username"] == "alice"
    assert claims["groups"] == sorted(users["alice"].grid_groups.values_list("name", flat=True))
    assert claims["exp"] > claims["iat"]
    assert _get(f"Bearer {token}").status_code == 200


def test_an_expired_signed_token_is_refused_saying_it_expired(users):
    token = tokens.issue(users["alice"], lifetime_seconds=-10)
    response = _get(f"Bearer {token}")
    assert response.status_code == 401
    assert "expired" in str(response.json())


def test_a_token_signed_with_another_key_is_refused(users):
    good = jwt.decode(tokens.issue(users["alice"]), options={"verify_signature": False})
    forged = jwt.encode(good, "not-the-servers-key-but-just-as-long-as-one-0123", algorithm="HS256")
    assert _get(f"Bearer {forged}").status_code == 401


def test_an_unsigned_token_is_refused(users):
    claims = jwt.decode(tokens.issue(users["alice"]), options={"verify_signature": False})
    unsigned = jwt.encode(claims, None, algorithm="none")
    assert _get(f"Bearer {unsigned}").status_code == 401


def test_a_token_of_a_deactivated_user_is_refused(users):
    token = tokens.issue(users["alice"])
    users["alice"].is_active = False
    users["alice"].save()
    assert _get(f"Bearer {token}").status_code == 401


def test_a_token_from_another_issuer_is_refused(users):
    token = tokens.issue(users["alice"])
    with override_settings(JWT_ISSUER="another-grid"):
        assert _get(f"Bearer {token}").status_code == 401


def test_an_unknown_bearer_key_is_refused():
    assert _get("Bearer no-such-key").status_code == 401
    assert _get("Bearer a.b.c").status_code == 401
