"""Run one real PanDA pilot against this server and ingest its log when it exits
(pilots.panda_pilots.run_pilot): what the "panda" submit pools start, and what an operator runs
by hand to try a PanDA queue."""

from django.core.management.base import BaseCommand

from pilots import panda_pilots


class Command(BaseCommand):
    help = "Run PanDA's pilot (panda-pilot) for one job of a PanDA queue, then ingest its log."

    def add_arguments(self, parser):
        parser.add_argument("--url", required=True, help="this server, e.g. http://127.0.0.1:8000")
        parser.add_argument("--token", required=True, help="the pilot's API token")
        parser.add_argument("--queue", required=True, help="the PanDA queue (--queue of the pilot)")
        parser.add_argument("--reference", default="", help="its pilot record's reference")
        parser.add_argument("--lifetime", type=int, default=600, help="seconds (its --lifetime)")
        parser.add_argument("--heartbeat", type=int, default=30, help="seconds between updates")

    def handle(self, url, token, queue, reference, lifetime, heartbeat, **options):
        run = panda_pilots.run_pilot(
            url,
            token,
            queue,
            reference=reference,
            lifetime=lifetime,
            # Past its lifetime and the time it takes to wrap up, the launcher stops it.
            timeout=lifetime + 600,
            heartbeat=heartbeat,
        )
        self.stdout.write(f"PanDA pilot {run.reference} exited with code {run.exit_code}")
        for job_id, outcome in run.logs.items():
            self.stdout.write(f"job {job_id}: log {outcome}")
