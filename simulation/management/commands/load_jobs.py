from django.core.management.base import BaseCommand, CommandError

from core.progress import ProgressBar
from matcher.bulk import LoadError, load_jobs
from matcher.taskqueue_priorities import recompute_priorities
from simulation.demo import EXAMPLE_USER


class Command(BaseCommand):
    help = "Insert N activated jobs with their TaskQueues (COPY), for scale work."

    def add_arguments(self, parser):
        parser.add_argument("n", type=int, help="how many jobs")
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--batch-size", type=int, default=50_000)
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, n, seed, batch_size, no_progress, **options):
        if n < 1:
            raise CommandError("N must be a positive number of jobs")
        if batch_size < 1:
            raise CommandError("--batch-size must be positive")
        bar = None if no_progress else ProgressBar("loading jobs", stream=self.stderr)
        try:
            # The user guide's hand-started pilot finds the example job, not one of these.
            result = load_jobs(
                n, seed=seed, batch_size=batch_size, progress=bar, exclude_owners=[EXAMPLE_USER]
            )
        except LoadError as exc:
            raise CommandError(str(exc)) from None
        recompute_priorities()
        self.stdout.write(
            f"loaded {result.jobs:,} jobs into {result.taskqueues} TaskQueues in "
            f"{result.seconds:.1f} s ({result.rows_per_s:,.0f} jobs/s)"
        )
