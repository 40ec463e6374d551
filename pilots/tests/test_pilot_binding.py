"""A claim is bound to the pilot that makes it: a pilot is its credential's
(references are unique per credential), the match binds the job to the caller's own pilot, and
only that credential reports on the job. With the pilots' inputs checked: registration names a
known site and a CE of it, a heartbeat only on a job a pilot holds, no NUL in a description."""

import random

import pytest

from core import clock, gdpconfig
from core.cycles import run_cycle
from matcher.models import Job, JobStatus
from pilots.models import Pilot
from simulation import simulated_ce

MATCH = "/api/v1/match/"
CERN = {"site": "LCG.CERN.ch", "grid_ce": "ce503.cern.ch", "cpu_time": 86400}


@pytest.fixture
def as_user(api, users):
    return lambda name: api(users[name])


def register(client, reference, **fields):
    body = {"reference": reference, "site": "LCG.CERN.ch", **fields}
    return client.post("/api/v1/pilots/", body, format="json")


def report(client, job_id, reference, status="running"):
    body = {"status": status, "pilot_reference": reference}
    return client.post(f"/api/v1/jobs/{job_id}/status/", body, format="json")


def beat(client, job_id, reference):
    body = {"pilot_reference": reference}
    return client.post(f"/api/v1/jobs/{job_id}/heartbeat/", body, format="json")


def test_the_generic_pilot_cannot_hand_bobs_job_to_a_pilot_of_daves_nor_dave_report_on_it(
    as_user, submit
):
    daves = register(as_user("dave"), "d-1")
    assert daves.status_code == 201
    job = submit("bob", cpu_time=100, sites=["LCG.CERN.ch"])
    matched = as_user("pilot").post(MATCH, {**CERN, "pilot_reference": "d-1"}, format="json")
    assert matched.status_code == 200 and matched.data["id"] == job.pk
    job.refresh_from_db()
    # The job went to the generic credential's own "d-1", not to dave's.
    assert job.pilot_id != daves.data["id"]
    assert job.pilot.credential_user.username == "pilot"

    assert report(as_user("dave"), job.pk, "d-1").status_code == 403
    assert beat(as_user("dave"), job.pk, "d-1").status_code == 403
    job.refresh_from_db()
    assert job.status == JobStatus.SENT and job.heartbeat is None
    assert report(as_user("pilot"), job.pk, "d-1").status_code == 200


def test_an_unregistered_reference_becomes_the_claiming_credentials_pilot_and_no_one_elses(
    as_user, submit
):
    job = submit("alice", cpu_time=100, sites=["LCG.CERN.ch"])
    matched = as_user("pilot").post(MATCH, {**CERN, "pilot_reference": "new-1"}, format="json")
    assert matched.status_code == 200 and matched.data["pilot_reference"] == "new-1"
    created = Pilot.objects.get(reference="new-1")
    assert created.credential_user.username == "pilot"
    assert (created.site, created.ce) == ("LCG.CERN.ch", "ce503.cern.ch")
    assert Job.objects.get(pk=job.pk).pilot_id == created.pk

    # Registering the reference afterwards gives dave a pilot of his own, not this one's job.
    late = register(as_user("dave"), "new-1")
    assert late.status_code == 201 and late.data["id"] != created.pk
    for name in ("dave", "alice", "admin"):  # the job's owner and staff included
        assert report(as_user(name), job.pk, "new-1").status_code == 403, name
        assert beat(as_user(name), job.pk, "new-1").status_code == 403, name
    assert Job.objects.get(pk=job.pk).status == JobStatus.SENT
    assert report(as_user("pilot"), job.pk, "new-1").status_code == 200


def test_a_squatted_reference_gives_the_squatter_no_rights_over_the_real_pilots_jobs(
    as_user, submit
):
    squatted = register(as_user("dave"), "htcondor://ce503/77")
    real = register(as_user("pilot"), "htcondor://ce503/77", ce="ce503.cern.ch")
    assert (squatted.status_code, real.status_code) == (201, 201)
    assert squatted.data["id"] != real.data["id"]
    job = submit("alice", cpu_time=100, sites=["LCG.CERN.ch"])
    body = {**CERN, "pilot_reference": "htcondor://ce503/77"}
    assert as_user("pilot").post(MATCH, body, format="json").data["id"] == job.pk
    assert Job.objects.get(pk=job.pk).pilot_id == real.data["id"]

    assert report(as_user("dave"), job.pk, "htcondor://ce503/77").status_code == 403
    assert beat(as_user("dave"), job.pk, "htcondor://ce503/77").status_code == 403
    assert report(as_user("pilot"), job.pk, "htcondor://ce503/77").status_code == 200
    # Dave's own pilot is his to report on, the real one is not.
    assert as_user("dave").get(f"/api/v1/pilots/{real.data['id']}/").status_code == 404


def test_a_claim_without_reference_answers_a_new_pilots_reference_usable_for_reports(
    as_user, submit
):
    job = submit("alice", cpu_time=100, sites=["LCG.CERN.ch"])
    matched = as_user("pilot").post(MATCH, CERN, format="json")
    assert matched.status_code == 200 and matched.data["id"] == job.pk
    reference = matched.data["pilot_reference"]
    assert reference.startswith("auto-")
    pilot = Pilot.objects.get(reference=reference)
    assert pilot.credential_user.username == "pilot"
    assert Job.objects.get(pk=job.pk).pilot_id == pilot.pk
    assert report(as_user("alice"), job.pk, reference).status_code == 403
    assert report(as_user("pilot"), job.pk, reference).status_code == 200
    assert beat(as_user("pilot"), job.pk, reference).status_code == 204


def test_a_claim_without_reference_that_gets_nothing_leaves_no_pilot_behind(as_user, world):
    pilots_before = Pilot.objects.count()
    assert as_user("pilot").post(MATCH, CERN, format="json").status_code == 204
    assert Pilot.objects.count() == pilots_before


def test_the_same_reference_matched_twice_is_one_pilot_holding_both_jobs(as_user, submit):
    jobs = {submit("alice", cpu_time=100, sites=["LCG.CERN.ch"]).pk for _ in range(2)}
    body = {**CERN, "pilot_reference": "twice"}
    got = {as_user("pilot").post(MATCH, body, format="json").data["id"] for _ in range(2)}
    assert got == jobs
    [pilot] = Pilot.objects.filter(reference="twice")
    assert set(Job.objects.filter(pilot=pilot).values_list("pk", flat=True)) == jobs


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"site": "LCG.NOWHERE.xx"}, "site"),
        ({"ce": "ce.nowhere.org"}, "ce"),
        ({"ce": "ce07.pic.es"}, "ce"),  # a CE of LCG.PIC.es, not of CERN
    ],
)
def test_registration_at_an_unknown_site_or_ce_answers_400_naming_the_field(
    as_user, world, fields, named
):
    r = register(as_user("pilot"), "r-1", **fields)
    assert r.status_code == 400 and named in r.data, r.data
    assert not Pilot.objects.filter(reference="r-1").exists()


def test_registration_at_a_ce_of_the_site_is_taken_and_repeated_it_finds_the_same_pilot(
    as_user, world
):
    first = register(as_user("pilot"), "r-2", ce="ce504.cern.ch")
    again = register(as_user("pilot"), "r-2", ce="ce504.cern.ch")
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.data["id"] == again.data["id"] and first.data["ce"] == "ce504.cern.ch"


def test_a_heartbeat_on_a_finished_job_answers_409_and_leaves_its_heartbeat(as_user, submit):
    job = submit("alice", cpu_time=100, sites=["LCG.CERN.ch"])
    pilot = as_user("pilot")
    assert register(pilot, "hb-1").status_code == 201
    assert pilot.post(MATCH, {**CERN, "pilot_reference": "hb-1"}, format="json").status_code == 200
    assert report(pilot, job.pk, "hb-1").status_code == 200
    assert beat(pilot, job.pk, "hb-1").status_code == 204
    assert report(pilot, job.pk, "hb-1", "finished").status_code == 200
    last = Job.objects.get(pk=job.pk).heartbeat
    clock.advance(600)
    r = beat(pilot, job.pk, "hb-1")
    assert r.status_code == 409 and "finished" in r.data["detail"]
    assert Job.objects.get(pk=job.pk).heartbeat == last


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("platform", "x86_64\x00-el9"),
        ("platform", ["x86_64-el9", "\x00"]),
        ("tag", ["16GB\x00"]),
        ("setup", "LHCb-\x00"),
        ("grid_ce", "ce503.cern.ch\x00"),
        ("pilot_reference", "p\x00"),
    ],
)
def test_a_nul_in_the_resource_description_answers_400_naming_the_field_and_claims_nothing(
    as_user, submit, field, value
):
    job = submit("alice", cpu_time=100, sites=["LCG.CERN.ch"])
    pilots_before = Pilot.objects.count()
    r = as_user("pilot").post(MATCH, {**CERN, field: value}, format="json")
    assert r.status_code == 400 and field in r.data, (r.status_code, getattr(r, "data", None))
    assert Job.objects.get(pk=job.pk).status == JobStatus.ACTIVATED
    assert Pilot.objects.count() == pilots_before


def test_the_simulated_ces_pilots_claim_their_jobs_for_themselves(submit):
    for _ in range(4):
        submit("alice", cpu_time=100, sites=["LCG.CERN.ch"])
    gdpconfig.set_value("PrivatePilotFraction", 0.0)
    gdpconfig.set_value(
        "SimulatedPilotSeconds",
        {"Submitted": 30, "Scheduled": 60, "Aborted": 0.0, "JobFailed": 0.0, "CPUScale": 0.5},
    )
    run_cycle("director")
    rng = random.Random(4)
    for _ in range(8):
        clock.advance(61)
        simulated_ce.simulated_ce_cycle(rng=rng)
    ran = list(Job.objects.exclude(pilot=None).select_related("pilot"))
    assert ran
    assert all(j.pilot.reference == j.pilot_reference for j in ran)
    assert sum(Pilot.objects.values_list("jobs_done", flat=True)) == len(
        [j for j in ran if j.status == JobStatus.FINISHED]
    )
