"""`manage.py diracx_credentials USER [--output PATH]`: the credentials file DiracX's command line
reads (DIRACX_CREDENTIALS_PATH), holding USER's API token (api/diracx/identity.py)."""

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from api.diracx import identity


class Command(BaseCommand):
    help = (
        "Write the credentials file DiracX's command line (`dirac`) reads, holding USER's API "
        "token: then set DIRACX_URL to this server and DIRACX_CREDENTIALS_PATH to the file."
    )

    def add_arguments(self, parser):
        parser.add_argument("user", help="the user's name")
        parser.add_argument(
            "--output",
            type=Path,
            help="where to write it (default: DIRACX_CREDENTIALS_PATH, else "
            "~/.cache/diracx/credentials.json, where `dirac` looks)",
        )

    def handle(self, *args, user, output, **options):
        try:
            who = get_user_model().objects.get(username=user)
        except get_user_model().DoesNotExist:
            raise CommandError(f"no user named {user!r}") from None
        if not who.is_active:
            raise CommandError(f"{user} is not active: its token would be refused")
        content, created = identity.credentials(who)
        path = output or identity.default_credentials_path()
        try:
            identity.write_credentials(content, path)
        except OSError as exc:
            raise CommandError(f"cannot write {path}: {exc}") from None
        made = " (a new API token)" if created else ""
        self.stdout.write(f"Wrote {user}'s DiracX credentials{made} to {path}")
