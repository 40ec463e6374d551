"""Signed bearer tokens (JWT, HS256) for the clients that expect one: PanDA's client reads a
token's claims (`name`, `preferred_username`, `groups`, `exp`) before it sends it, and every
client sends it back as `Authorization: Bearer <token>`.

A token names its user and expires; it is signed with JWT_SIGNING_KEY (SECRET_KEY unless set)
and verified on every request: signature, issuer, audience and expiry. Nothing is stored, so a
token cannot be revoked before it expires: deactivating its user refuses it at once.
"""

from __future__ import annotations

import time

import jwt
from django.conf import settings
from django.contrib.auth import get_user_model

ALGORITHM = "HS256"
AUDIENCE = "gridwms"


class InvalidToken(Exception):
    """The token is not one this server signed, or it expired: the message says which."""


def _key() -> str:
    return settings.JWT_SIGNING_KEY or settings.SECRET_KEY


def looks_like_jwt(value: str) -> bool:
    return value.count(".") == 2


def issue(user, lifetime_seconds: int | None = None, vo: str = "") -> str:
    """A signed token for `user`: its groups are the user's GridGroups' names."""
    now = int(time.time())
    lifetime = lifetime_seconds or settings.JWT_LIFETIME_SECONDS
    groups = sorted(user.grid_groups.values_list("name", flat=True))
    claims = {
        "iss": settings.JWT_ISSUER,
        "aud": AUDIENCE,
        "sub": str(user.pk),
        "name": user.get_full_name() or user.get_username(),
        "preferred_username": user.get_username(),
        "groups": groups,
        "vo": vo or settings.GRID_VO,
        "iat": now,
        "exp": now + lifetime,
    }
    return jwt.encode(claims, _key(), algorithm=ALGORITHM)


def verify(token: str) -> dict:
    try:
        return jwt.decode(
            token,
            _key(),
            algorithms=[ALGORITHM],
            audience=AUDIENCE,
            issuer=settings.JWT_ISSUER,
            options={"require": ["exp", "sub", "iss", "aud"]},
        )
    except jwt.ExpiredSignatureError as e:
        raise InvalidToken("the token has expired") from e
    except jwt.PyJWTError as e:
        raise InvalidToken(f"the token is not valid: {e}") from e


def user_of(claims: dict):
    try:
        return get_user_model().objects.get(pk=int(claims["sub"]))
    except (ValueError, get_user_model().DoesNotExist) as e:
        raise InvalidToken("the token's user does not exist") from e
