"""Prepare a host's database before it serves: migrate, then create the cycles' schedules.

Several hosts may start at once against one PostgreSQL: a session advisory lock makes them
take turns (the second finds nothing left to migrate), so `make serve` is the same command on
every host.
"""

from django.core.management import call_command
from django.core.management.base import BaseCommand

from core import db

LOCK_KEY = db.advisory_key("gridwms-deploy")


class Command(BaseCommand):
    help = "Migrate (one host at a time) and create or update the cycles' schedules."

    def add_arguments(self, parser):
        parser.add_argument(
            "--no-schedules", action="store_true", help="migrate only, leave the schedules"
        )

    def handle(self, **options):
        # Waits while another host deploys.
        with db.advisory_lock(LOCK_KEY):
            call_command("migrate", interactive=False, verbosity=options["verbosity"] - 1)
            if not options["no_schedules"]:
                call_command("setup_schedules", verbosity=options["verbosity"])
