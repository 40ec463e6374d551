"""Recount the job-count rollups from the job table (matcher/services/rollups.py): after a
repair, or a load that wrote jobs without the mover."""

import json

from django.core.management.base import BaseCommand

from matcher.services import rollups


class Command(BaseCommand):
    help = "Recount the jobs per (owner, group, site, state) from the job table; fold first."

    def add_arguments(self, parser):
        parser.add_argument(
            "--fold-only", action="store_true", help="only fold the deltas into the totals"
        )

    def handle(self, *args, fold_only=False, **options):
        if fold_only:
            self.stdout.write(json.dumps({"folded": rollups.fold()}))
            return
        self.stdout.write(json.dumps(rollups.rebuild()))
