from django.core.management.base import BaseCommand

from core.progress import ProgressBar
from matcher import bulk
from matcher.models import Job
from matcher.taskqueue_priorities import recompute_priorities
from simulation import demo


class Command(BaseCommand):
    help = "Create the demo world (sites, CEs, groups, users, admin) and waiting jobs."

    def add_arguments(self, parser):
        parser.add_argument("--jobs", type=int, default=3000, help="jobs to add (default 3000)")
        parser.add_argument(
            "--pilots",
            type=int,
            default=1,
            help="1: run a first director cycle and start its pilots (default); 0: no pilots",
        )
        parser.add_argument(
            "--if-empty", action="store_true", help="do nothing when the database has a world"
        )
        parser.add_argument(
            "--local-url",
            default="",
            help="also add the local worker node, whose real pilots reach the server here "
            "(e.g. http://127.0.0.1:8000): jobs with an executable run on this machine",
        )

    def handle(self, jobs, if_empty, pilots, local_url, **options):
        if if_empty and not demo.world_is_empty():
            self.stdout.write("The database already holds a world; the demo is not loaded again.")
        else:
            self._load(jobs, pilots)
        if local_url:  # also for a world loaded before: the URL follows the server's
            ce = demo.local_worker_node(local_url)
            self.stdout.write(f"Jobs with an executable run here: CE {ce.name}, {local_url}.")

    def _load(self, jobs, pilots):
        world = demo.create_world()
        demo.limit_job_slots()
        if jobs > 0 and not Job.objects.exists():
            result = bulk.load_jobs(
                jobs,
                seed=2026,
                batch_size=1000,
                progress=ProgressBar("demo jobs", self.stderr),
                # The simulator's jobs: the work waiting at the start asks for what the work
                # that arrives later asks for, and runs as long (docs/user-guide.md, The demo
                # world).
                templates=demo.job_templates(2026),
                cpu_times=demo.CPU_TIMES,
            )
            example = demo.example_job()
            recompute_priorities()
            self.stdout.write(f"{result.jobs} jobs waiting in {result.taskqueues} TaskQueues.")
            self.stdout.write(
                f"Job {example} of {demo.EXAMPLE_USER} waits for a pilot started by hand "
                "(docs/user-guide.md, Matching)."
            )
            if pilots:
                started = demo.first_pilots()
                self.stdout.write(f"A first director cycle sent pilots; {started} jobs run.")
        self.stdout.write(
            f"Demo world: {world['sites']} sites, {world['groups']} groups, {world['users']} users."
        )
        self.stdout.write(
            self.style.SUCCESS(
                f"Log in as admin / {demo.ADMIN_PASSWORD} (staff), or alice, bob, carol, dave, "
                f"erin / {demo.USER_PASSWORD}."
            )
        )
