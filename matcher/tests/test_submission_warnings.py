"""A job that can never run is accepted (as DIRAC accepts it) but its submitter is told: the
submission answers `warnings` naming the requirement no active CE offers, and the job page
shows them. One Setup for the grid: the DefaultSetup parameter."""

import pytest

from core import gdpconfig
from matcher.models import ComputingElement, Job, JobStatus

URL = "/api/v1/jobs/"


@pytest.mark.parametrize(
    ("fields", "warning"),
    [
        ({"platforms": ["x86-64-el9"]}, "no active CE offers platform x86-64-el9"),
        ({"tags": ["4Procesors"]}, "no active CE offers tag 4Procesors"),
        ({"tags": ["GPU", "16GB"]}, "no active CE offers tags 16GB, GPU together"),
        ({"cpu_time": 400_000}, "is over every active CE's CPU time limit (the largest is"),
        (
            {"sites": ["LCG.CERN.ch"], "banned_sites": ["LCG.CERN.ch"]},
            "site LCG.CERN.ch is both in Sites and in BannedSites",
        ),
        ({"submit_pools": ["gridPool"]}, "SubmitPools gridPool: no such submit pool"),
        ({"setup": "Production"}, "Setup Production is not this grid's Setup (LHCb-Production"),
        (
            {"sites": ["LCG.CNAF.it"], "grid_ces": ["ce503.cern.ch"]},
            "GridCEs ce503.cern.ch: none is an active CE at its allowed sites",
        ),
    ],
)
def test_a_job_no_ce_can_take_is_stored_and_the_answer_warns_naming_why(
    api, users, world, fields, warning
):
    body = {"cpu_time": 3600, **fields}
    r = api(users["alice"]).post(URL, body, format="json")
    assert r.status_code == 201, r.data
    assert any(warning in w for w in r.data["warnings"]), r.data["warnings"]
    assert Job.objects.get(pk=r.data["id"]).status == JobStatus.ACTIVATED


def test_a_job_some_ce_can_take_gets_no_warning(api, users, world):
    body = {"cpu_time": 3600, "sites": ["LCG.CERN.ch"], "tags": ["4Processors"]}
    r = api(users["alice"]).post(URL, body, format="json")
    assert r.status_code == 201 and r.data["warnings"] == []


def test_a_ce_leaving_turns_a_job_unrunnable_and_its_page_and_api_say_so(api, users, world, client):
    r = api(users["alice"]).post(URL, {"cpu_time": 100, "tags": ["GPU"]}, format="json")
    job_id = r.data["id"]
    assert r.data["warnings"] == []
    ComputingElement.objects.filter(tags__icontains='"GPU"').update(status="draining")
    detail = api(users["alice"]).get(f"{URL}{job_id}/").data
    assert detail["warnings"] == ["no active CE offers tag GPU"]
    client.force_login(users["alice"])
    page = client.get(f"/jobs/{job_id}/").content.decode()
    assert 'id="job-warnings"' in page and "no active CE offers tag GPU" in page


def test_each_job_of_a_list_gets_its_own_warnings(api, users, world):
    body = [{"cpu_time": 100}, {"cpu_time": 100, "platforms": ["sparc"]}]
    r = api(users["alice"]).post(URL, body, format="json")
    assert r.status_code == 201
    assert r.data[0]["warnings"] == []
    assert r.data[1]["warnings"][0].startswith("no active CE offers platform sparc")


def test_the_web_form_warns_on_the_job_page_it_lands_on(client, users, world):
    client.force_login(users["alice"])
    form = {"owner_group": "lhcb_user", "cpu_time": 100, "user_priority": 1, "tags": "4Procesors"}
    r = client.post("/jobs/submit/", form, follow=True)
    page = r.content.decode()
    assert "submitted." in page
    assert 'id="job-warnings"' in page and "no active CE offers tag 4Procesors" in page


def test_one_setup_for_the_grid_the_default_setup_parameter(api, users, world, client):
    """The form names the grid's Setup with its value; jobs from the API, the form, tasks and
    the simulator all get it when they name none."""
    from brokerage import services as brokerage_services
    from simulation import services as simulation

    gdpconfig.set_value("DefaultSetup", "LHCb-Certification")
    client.force_login(users["alice"])
    page = client.get("/jobs/submit/").content.decode()
    assert "LHCb-Certification, the grid&#x27;s Setup (the DefaultSetup parameter)" in page
    assert "DefaultSetup." not in page  # no bare parameter name as if it were a value
    r = api(users["alice"]).post(URL, {"cpu_time": 100}, format="json")
    assert Job.objects.get(pk=r.data["id"]).setup == "LHCb-Certification"
    task = brokerage_services.submit_task(
        users["erin"], {"owner_group": users["erin"].grid_groups.get(), "name": "t"}, []
    )
    assert task.setup == "LHCb-Certification"
    assert {j.setup for j in Job.objects.filter(name__startswith="t.")} == {"LHCb-Certification"}
    import random

    simulation.arrive_jobs(random.Random(1), 5)
    assert set(Job.objects.filter(name="sim").values_list("setup", flat=True)) == {
        "LHCb-Certification"
    }
