from django.core.management.base import BaseCommand
from django.utils import timezone
from django_q.models import Schedule

from core.cycles import CYCLES
from core.schedules import SCHEDULES


class Command(BaseCommand):
    help = "Create or update the django-q2 schedules of every cycle (idempotent)."

    def handle(self, **options):
        for kind, minutes in SCHEDULES.items():
            if kind not in CYCLES:
                self.stderr.write(f"skipping {kind}: no such cycle")
                continue
            defaults = {
                "func": "core.tasks.run",
                "args": repr(kind),
                "schedule_type": Schedule.MINUTES,
                "minutes": minutes,
                "repeats": -1,
            }
            # An existing schedule keeps its next run: every host runs this when it starts
            # (`manage.py deploy`), and a restart must not make every cycle run again at once.
            _, created = Schedule.objects.update_or_create(
                name=f"cycle:{kind}",
                defaults=defaults,
                # django-q2 schedules on the wall clock, never the simulated one.
                create_defaults={**defaults, "next_run": timezone.now()},
            )
            self.stdout.write(
                f"{'created' if created else 'updated'} cycle:{kind} every {minutes} min"
            )
