"""Who a DiracX client is: the server's OpenID discovery document, the user's DIRAC identity
(GET /api/auth/userinfo), and the credentials file DiracX's clients read.

gridwms has no OAuth device flow: a user's credential is its API token, written into the file
DiracX's clients read (`manage.py diracx_credentials`), which they send as
`Authorization: Bearer <key>` (api.core.authentication.BearerAuthentication). The token does not
expire, so the file says it lasts ten years and its client never asks to refresh it.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from django.conf import settings
from rest_framework.authtoken.models import Token

# DIRAC's security properties: every user has NormalUser, staff JobAdministrator (they see and
# act on every job), and a group's own (JobSharing, GenericPilot, ProductionManagement).
NORMAL_USER = "NormalUser"
JOB_ADMINISTRATOR = "JobAdministrator"
CREDENTIALS_LIFETIME = 10 * 365 * 24 * 3600


def openid_configuration(base: str) -> dict:
    """The discovery document DiracX's clients read before every command (`base`: the server's
    URL, ending in /). Only `token_endpoint` is used by them, and only to refresh an expiring
    token, which a gridwms credential is not."""
    return {
        "issuer": base,
        "token_endpoint": f"{base}api/auth/token",
        "userinfo_endpoint": f"{base}api/auth/userinfo",
        "authorization_endpoint": f"{base}api/auth/authorize",
        "device_authorization_endpoint": f"{base}api/auth/device",
        "revocation_endpoint": f"{base}api/auth/revoke",
        "jwks_uri": f"{base}.well-known/jwks.json",
        "grant_types_supported": [],
        "scopes_supported": ["vo", "group", "property"],
        "response_types_supported": [],
        "token_endpoint_auth_signing_alg_values_supported": [],
        "token_endpoint_auth_methods_supported": [],
        "code_challenge_methods_supported": [],
    }


def dirac_group(user):
    """The user's DIRAC group: its only one, or the first by name when it has several (a JDL
    then names its OwnerGroup, as the native submission requires); None without a group."""
    return user.grid_groups.order_by("name").first()


def userinfo(user) -> dict:
    group = dirac_group(user)
    properties = {NORMAL_USER, *(group.properties if group else ())}
    if user.is_staff:
        properties.add(JOB_ADMINISTRATOR)
    return {
        "sub": str(user.pk),
        "vo": settings.GRID_VO,
        "dirac_group": group.name if group else "",
        "policies": {},
        "properties": sorted(properties),
        "preferred_username": user.get_username(),
    }


def credentials(user) -> tuple[dict, bool]:
    """The credentials file's content for `user` (its API token, made if it had none), and
    whether the token was made now."""
    token, created = Token.objects.get_or_create(user=user)
    return {
        "access_token": token.key,
        # DiracX's clients refresh only a token that expires within five minutes: never this.
        "refresh_token": "",
        "expires_on": int(time.time()) + CREDENTIALS_LIFETIME,
    }, created


def default_credentials_path() -> Path:
    """Where DiracX's clients look: DIRACX_CREDENTIALS_PATH, else ~/.cache/diracx/."""
    given = os.environ.get("DIRACX_CREDENTIALS_PATH")
    return Path(given) if given else Path.home() / ".cache" / "diracx" / "credentials.json"


def write_credentials(content: dict, path: Path) -> None:
    """Write the file readable by its owner only (it holds the user's key), replacing any."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(content, out)
    os.chmod(path, 0o600)
