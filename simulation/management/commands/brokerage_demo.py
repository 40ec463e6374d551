from django.core.management.base import BaseCommand

from brokerage.models import Dataset, GlobalShare, PandaQueue, Task
from brokerage.services.submission import submit_task
from brokerage.topology_import import import_topology
from core.cycles import run_cycle
from matcher.models import ComputingElement
from shares.models import GridGroup, User
from simulation import panda_demo as demo
from simulation import panda_pilot_demo


class Command(BaseCommand):
    help = "Load the demo PanDA topology and a few production tasks, then broker them once."

    def add_arguments(self, parser):
        parser.add_argument(
            "--if-empty", action="store_true", help="do nothing when PanDA queues exist"
        )

    def handle(self, if_empty, **options):
        if if_empty and PandaQueue.objects.exists():
            self.stdout.write("The PanDA topology is already loaded.")
            self.local_queue()  # also into a topology loaded before
            return
        counts = import_topology(demo.topology())
        self.stdout.write(", ".join(f"{n} {k}" for k, n in counts.items() if n))
        self.local_queue()
        for name, target in demo.GLOBAL_SHARES:
            GlobalShare.objects.get_or_create(name=name, defaults={"target_pct": target})
        if not Task.objects.exists():
            owner = User.objects.get(username=demo.DEMO_TASKS_OWNER[0])
            group = GridGroup.objects.get(name=demo.DEMO_TASKS_OWNER[1])
            for spec in demo.DEMO_TASKS:
                spec = dict(spec)
                inputs = [(Dataset.objects.get(name=n), True) for n in spec.pop("inputs", [])]
                submit_task(owner, {"owner_group": group, **spec}, inputs)
            alice = User.objects.get(username="alice")
            user_group = GridGroup.objects.get(name="lhcb_user")
            for spec in demo.DEMO_ANALYSIS_TASKS:
                spec = dict(spec)
                inputs = [(Dataset.objects.get(name=n), True) for n in spec.pop("inputs", [])]
                submit_task(alice, {"owner_group": user_group, **spec}, inputs)
            for kind in ("task_brokerage", "job_brokerage", "analysis_brokerage"):
                run = run_cycle(kind)
                self.stdout.write(f"{kind}: {run.status} {run.counts}")

    def local_queue(self):
        """The local worker node's queue, once its CE is there (`demo --local-url`)."""
        if not ComputingElement.objects.filter(name=demo.LOCAL_CE).exists():
            return
        if not PandaQueue.objects.filter(name=demo.LOCAL_QUEUE).exists():
            import_topology(demo.local_topology())
            self.stdout.write(f"Tasks that run real work go to PanDA queue {demo.LOCAL_QUEUE}.")
        job = panda_pilot_demo.set_up()
        if job is not None:
            self.stdout.write(f"Job {job} is for PanDA's own pilot (submit pool PanDA).")
