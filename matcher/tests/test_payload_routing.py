"""PayloadTags and PayloadSubmitPools: where simulated pilots share the grid with real ones, a
job with an executable is routed to the real ones at submission; a job without one, or a grid
with the parameters empty (the default), is left as it is."""

import pytest

from core import gdpconfig

pytestmark = pytest.mark.django_db


def _submit(api, users, **job):
    answer = api(users["alice"]).post("/api/v1/jobs/", {"cpu_time": 60, **job}, format="json")
    assert answer.status_code == 201, answer.content
    return api(users["alice"]).get(f"/api/v1/jobs/{answer.json()['id']}/").json()


def test_by_default_a_job_with_an_executable_keeps_its_own_requirements(api, users):
    job = _submit(api, users, executable="/bin/echo")
    assert (job["tags"], job["submit_pools"]) == ([], [])


def test_a_job_with_an_executable_gains_the_payload_tags_and_pools(api, users):
    gdpconfig.set_value("PayloadTags", ["payload"])
    gdpconfig.set_value("PayloadSubmitPools", ["Local"])
    job = _submit(api, users, executable="/bin/echo", tags=["GPU"])
    assert (job["tags"], job["submit_pools"]) == (["GPU", "payload"], ["Local"])


def test_a_job_naming_its_pools_keeps_them(api, users):
    gdpconfig.set_value("PayloadSubmitPools", ["Local"])
    job = _submit(api, users, executable="/bin/echo", submit_pools=["gLite"])
    assert job["submit_pools"] == ["gLite"]


def test_a_job_without_an_executable_is_not_routed(api, users):
    gdpconfig.set_value("PayloadTags", ["payload"])
    gdpconfig.set_value("PayloadSubmitPools", ["Local"])
    job = _submit(api, users)
    assert (job["tags"], job["submit_pools"]) == ([], [])


def test_a_routed_job_is_taken_only_by_a_pilot_offering_the_tag(api, users):
    gdpconfig.set_value("PayloadTags", ["payload"])
    job = _submit(api, users, executable="/bin/echo")
    pilot = api(users["pilot"])
    resource = {"site": "LCG.CERN.ch", "grid_ce": "ce504.cern.ch", "cpu_time": 86400}
    assert pilot.post("/api/v1/match/", resource, format="json").status_code == 204
    answer = pilot.post("/api/v1/match/", {**resource, "tag": ["payload"]}, format="json")
    assert (answer.status_code, answer.json()["id"]) == (200, job["id"])
