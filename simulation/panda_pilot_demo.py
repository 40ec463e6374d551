"""The demo's PanDA pool (`make run`): PanDA's own pilot (pilots.panda_pilots) runs real jobs at
the local worker node's PanDA queue (panda_demo.LOCAL_QUEUE). A job that names the pool goes to
it: the director starts one real PanDA pilot per waiting job, on demand, which claims it through
getJob, runs it and reports it; its log tarball is kept with the job's outputs. The demo waits
one such job at the start (alice's, once), so that the pool has work to show."""

from __future__ import annotations

from core import gdpconfig
from matcher import services
from matcher.models import Job
from shares.models import User

POOL = "PanDA"
JOB_NAME = "hello-from-pandas-pilot"
JOB = {
    "name": JOB_NAME,
    "executable": "/bin/sh",
    "arguments": ["-c", 'echo "hello from PanDA\'s pilot on $(uname -n)"'],
    "cpu_time": 60,
    "submit_pools": [POOL],
}
OWNER = "alice"


def add_pool() -> None:
    """The PanDA pool among the submit pools, its backend PanDA's pilot (added when missing)."""
    pools = gdpconfig.get("SubmitPools")
    if POOL not in pools:
        gdpconfig.set_value("SubmitPools", [*pools, POOL], comment="the demo's PanDA pool")
    backends = gdpconfig.get("SubmitPoolBackends")
    if POOL not in backends:
        gdpconfig.set_value(
            "SubmitPoolBackends", {**backends, POOL: "panda"}, comment="the demo's PanDA pool"
        )


def first_job() -> int | None:
    """Alice's job for the PanDA pool, submitted once (None: she is not in this world)."""
    user = User.objects.filter(username=OWNER).first()
    if user is None:
        return None
    found = Job.objects.filter(owner=user, name=JOB_NAME).values_list("pk", flat=True).first()
    if found is not None:
        return found
    spec = {
        "owner_group": user.grid_groups.order_by("name").first(),
        "setup": gdpconfig.get("DefaultSetup"),
        **JOB,
    }
    [job] = services.submit_jobs(user, [spec])
    return job.pk


def set_up() -> int | None:
    """The pool, then its first job; its id."""
    add_pool()
    return first_job()
