"""Token authentication that remembers a key for a few seconds.

A pilot presents its token on every request; looking it up is a query joining the token and its
user, a third of a match request's cost in Python. Like the sites and CEs of the pilots' hot
path (matcher.topology), the answer is kept per process for API_TOKEN_CACHE_SECONDS (5 s): a
token deleted or a user deactivated elsewhere is refused by every process within that time, and
at once by the process that made the change.
"""

from __future__ import annotations

import threading
import time

from django.conf import settings
from django.db.models.signals import post_delete, post_save
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from api.core import tokens

LIMIT = 10_000
_lock = threading.Lock()
_known: dict[str, tuple[float, object, object]] = {}


class CachedTokenAuthentication(TokenAuthentication):
    def authenticate_credentials(self, key):
        now = time.monotonic()
        ttl = settings.API_TOKEN_CACHE_SECONDS
        with _lock:
            hit = _known.get(key)
        if hit is not None and now - hit[0] < ttl:
            # Shared by the process's requests: views read request.user, never write it.
            return hit[1], hit[2]
        user, token = super().authenticate_credentials(key)
        if ttl > 0:
            with _lock:
                if len(_known) >= LIMIT:
                    _known.clear()
                _known[key] = (now, user, token)
        return user, token


class BearerAuthentication(CachedTokenAuthentication):
    """`Authorization: Bearer <credential>`, the header DiracX's and PanDA's clients send: an
    API token's key (the same key `Token` takes, cached the same way) or a token this server
    signed (api.core.tokens), verified on every request."""

    keyword = "Bearer"

    def authenticate_credentials(self, key):
        if not tokens.looks_like_jwt(key):
            return super().authenticate_credentials(key)
        try:
            user = tokens.user_of(tokens.verify(key))
        except tokens.InvalidToken as e:
            raise exceptions.AuthenticationFailed(str(e)) from e
        if not user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        return user, key


def forget(**kwargs) -> None:
    with _lock:
        _known.clear()


def connect_signals() -> None:
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    post_save.connect(forget, sender=get_user_model(), dispatch_uid="token-cache-user")
    post_delete.connect(forget, sender=Token, dispatch_uid="token-cache-token")
    post_delete.connect(forget, sender=get_user_model(), dispatch_uid="token-cache-user-del")
