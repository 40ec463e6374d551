from django.core.management.base import BaseCommand, CommandError

from core.cycles import CYCLES, run_cycle


class Command(BaseCommand):
    help = "Run one background cycle once, now (the same code the schedule runs)."

    def add_arguments(self, parser):
        parser.add_argument("kind", nargs="?", help="the cycle; leave out to list them")

    def handle(self, kind, **options):
        if not kind:
            for name in sorted(CYCLES):
                self.stdout.write(name)
            return
        if kind not in CYCLES:
            raise CommandError(f"unknown cycle {kind!r}; known: {', '.join(sorted(CYCLES))}")
        run = run_cycle(kind)
        self.stdout.write(f"{run.kind}: {run.status} {run.counts} {run.error}".rstrip())
        if run.status == "failed":
            raise CommandError(run.error)
