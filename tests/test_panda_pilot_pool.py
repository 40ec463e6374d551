"""The director's "panda" submit pools start PanDA's own pilot: on `make run`, the demo's PanDA
pool sends a real PanDA pilot (`manage.py panda_pilot`) to the local worker node's PanDA queue
for the job waiting there, which ends finished with its log tarball among its outputs."""

import time

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client

from core import gdpconfig
from core.cycles import run_cycle
from matcher.models import Job
from pilots import panda_launch, panda_pilots
from pilots.models import PandaLogReport, Pilot
from sandboxes import services as sandboxes
from tests._databases import url_of

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not (panda_launch.PILOT_DIR / "pilot.py").exists(),
        reason="PanDA's pilot is installed by scripts/install_clients.sh",
    ),
]


def _wait_for(predicate, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.5)
    return False


def test_the_demos_panda_pool_sends_a_real_panda_pilot_that_runs_its_job(
    live_server, users, monkeypatch
):
    from brokerage.topology_import import import_topology
    from simulation import panda_demo, panda_pilot_demo
    from simulation.demo import local_worker_node

    local_worker_node(live_server.url)
    import_topology(panda_demo.local_topology())
    job_id = panda_pilot_demo.set_up()
    assert panda_pilot_demo.set_up() == job_id  # once
    gdpconfig.set_value("PrivatePilotFraction", 0.0)
    gdpconfig.set_value("LocalPilotMaxSeconds", 600)  # covers the job's 500 s CPU segment
    # The launcher the director starts reads this test's database and sandboxes.
    monkeypatch.setenv("DATABASE_URL", url_of(connection.settings_dict["NAME"]))
    monkeypatch.setenv("SANDBOX_ROOT", str(settings.SANDBOX_ROOT))
    monkeypatch.setenv("LOCAL_PILOT_LOG_DIR", str(settings.LOCAL_PILOT_LOG_DIR))
    run = run_cycle("director")
    assert run.status == "success", run.error
    pilot = Pilot.objects.get(grid_type=panda_pilots.GRID_TYPE)
    assert (pilot.ce, pilot.submit_pool) == ("localhost", panda_pilot_demo.POOL)
    assert _wait_for(lambda: Job.objects.get(pk=job_id).status == "finished", 90), Job.objects.get(
        pk=job_id
    ).status_reason
    assert Job.objects.get(pk=job_id).pilot_id == pilot.pk
    assert _wait_for(
        lambda: PandaLogReport.objects.filter(job_id=job_id, outcome=panda_pilots.STORED).exists(),
        60,
    )
    report = PandaLogReport.objects.get(job_id=job_id)
    assert sandboxes.output_file(job_id, report.name).size == report.size
    stdout = sandboxes.stream_file(job_id, "stdout")
    assert "hello from PanDA's pilot" in sandboxes.read_text(stdout)
    assert _wait_for(lambda: Pilot.objects.get(pk=pilot.pk).status == "Done", 30)
    # Staff read the pilot's own output on its page.
    staff = Client()
    staff.force_login(users["admin"])
    page = staff.get(f"/pilots/{pilot.pk}/")
    assert page.status_code == 200 and "pilot has finished" in page.content.decode()
