"""Print a signed token (JWT) for a user, for PanDA's client: `PANDA_AUTH=oidc` with
`PANDA_AUTH_ID_TOKEN=<token>` (docs/user-guide.md, PanDA's client). The client reads the
token's claims (name, preferred_username, groups) and sends it as `Authorization: Bearer`; the
server verifies it on every request (api/core/tokens.py)."""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from api.core import tokens

MAX_LIFETIME = 366 * 24 * 3600  # a year: a token cannot be revoked before it expires


class Command(BaseCommand):
    help = "Print a signed token for USER (PanDA's client: PANDA_AUTH_ID_TOKEN)."

    def add_arguments(self, parser):
        parser.add_argument("user", metavar="USER", help="the user's name")
        parser.add_argument(
            "--lifetime",
            type=int,
            default=None,
            metavar="SECONDS",
            help=f"how long it is valid (default: JWT_LIFETIME_SECONDS, "
            f"{settings.JWT_LIFETIME_SECONDS} s; at most {MAX_LIFETIME})",
        )

    def handle(self, user, lifetime, **options):
        if lifetime is not None and not 1 <= lifetime <= MAX_LIFETIME:
            raise CommandError(f"--lifetime: between 1 and {MAX_LIFETIME} seconds, not {lifetime}")
        if "\x00" in user:
            raise CommandError("USER: must not hold a NUL")
        try:
            account = get_user_model().objects.get_by_natural_key(user)
        except get_user_model().DoesNotExist:
            raise CommandError(f"USER: no user named {user!r}") from None
        if not account.is_active:
            raise CommandError(f"USER: {user} is not active: its token would be refused")
        self.stdout.write(tokens.issue(account, lifetime_seconds=lifetime))
