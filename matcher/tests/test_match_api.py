import random

import pytest

from matcher import dispatcher
from matcher.matching import Resource
from matcher.models import Job, JobStatus, TaskQueue, TaskQueueJob, TaskQueuePriorityCount

URL = "/api/v1/match/"
CERN = {"site": "LCG.CERN.ch", "grid_ce": "ce503.cern.ch", "cpu_time": 86400}


@pytest.fixture
def pilot(api, users):
    """The generic pilot credential (group lhcb_pilot has GenericPilot)."""
    return api(users["pilot"])


def test_a_generic_pilot_gets_one_job_which_moves_to_sent_with_pilot_site_and_ce(pilot, submit):
    job = submit("alice", cpu_time=100, sites=["LCG.CERN.ch"], user_priority=4)
    r = pilot.post(URL, {**CERN, "pilot_reference": "htcondor://ce503/123"}, format="json")
    assert r.status_code == 200, r.content
    assert r.data["id"] == job.pk and r.data["task_queue"] == job.task_queue_id
    assert (r.data["owner"], r.data["owner_group"], r.data["user_priority"]) == (
        "alice",
        "lhcb_user",
        4,
    )
    assert r.data["requirements"]["sites"] == ["LCG.CERN.ch"]
    job.refresh_from_db()
    assert job.status == JobStatus.SENT
    assert (job.site, job.grid_ce, job.pilot_reference) == (
        "LCG.CERN.ch",
        "ce503.cern.ch",
        "htcondor://ce503/123",
    )
    assert [h.to_status for h in job.history.all()] == ["activated", "sent"]
    assert not TaskQueueJob.objects.filter(job=job).exists()
    assert not TaskQueue.objects.filter(pk=job.task_queue_id).exists()  # its last job left


def test_nothing_that_fits_answers_204_and_claims_nothing(pilot, submit):
    job = submit("alice", cpu_time=100, sites=["LCG.PIC.es"])
    r = pilot.post(URL, CERN, format="json")
    assert r.status_code == 204
    job.refresh_from_db()
    assert job.status == JobStatus.ACTIVATED


def test_each_job_goes_to_exactly_one_pilot(pilot, submit):
    ids = {submit("alice", cpu_time=100).pk for _ in range(5)}
    got = [pilot.post(URL, CERN, format="json") for _ in range(7)]
    claimed = [r.data["id"] for r in got if r.status_code == 200]
    assert sorted(claimed) == sorted(ids)
    assert [r.status_code for r in got[5:]] == [204, 204]


BAD = [
    ({**CERN, "cpu_time": -1}, "cpu_time"),
    ({**CERN, "cpu_time": "86400"}, "cpu_time"),
    ({"site": "LCG.CERN.ch"}, "cpu_time"),
    ({**CERN, "colour": "blue"}, "colour"),
    ({**CERN, "site": "LCG.Nowhere.xx"}, "site"),
    ({**CERN, "grid_ce": "ce.nowhere"}, "grid_ce"),
    ({**CERN, "grid_ce": "ce07.pic.es"}, "grid_ce"),
    ({**CERN, "tag": "GPU"}, "tag"),
    ({**CERN, "platform": 5}, "platform"),
    ({**CERN, "owner_group": "no_such"}, "owner_group"),
]


@pytest.mark.parametrize(("body", "field"), BAD, ids=[f for _, f in BAD])
def test_a_bad_resource_description_answers_400_naming_the_field(pilot, submit, body, field):
    submit("alice", cpu_time=100)
    r = pilot.post(URL, body, format="json")
    assert r.status_code == 400 and field in r.data, r.data
    assert Job.objects.filter(status=JobStatus.ACTIVATED).count() == 1


def test_a_private_pilot_takes_only_its_owners_jobs(api, users, submit):
    submit("bob", cpu_time=100)
    mine = submit("alice", cpu_time=100)
    alice_pilot = api(users["alice"])
    r = alice_pilot.post(URL, CERN, format="json")
    assert r.status_code == 200 and r.data["id"] == mine.pk
    assert alice_pilot.post(URL, CERN, format="json").status_code == 204  # bob's is not hers


def test_a_private_pilot_of_a_jobsharing_group_takes_any_members_job(api, users, submit):
    job = submit("erin", cpu_time=100)  # lhcb_mc has JobSharing
    r = api(users["carol"]).post(URL, {**CERN, "owner_group": "lhcb_mc"}, format="json")
    assert r.status_code == 200 and r.data["id"] == job.pk


def test_a_private_pilot_cannot_claim_another_dn(api, users, submit):
    submit("bob", cpu_time=100)
    r = api(users["alice"]).post(URL, {**CERN, "owner_dn": users["bob"].dn}, format="json")
    assert r.status_code == 400 and "owner_dn" in r.data


def test_a_generic_pilot_does_not_take_a_taskqueue_that_wants_private_pilots(
    pilot, api, users, submit
):
    job = submit("alice", cpu_time=100, pilot_types=["private"])
    assert pilot.post(URL, {**CERN, "pilot_type": "generic"}, format="json").status_code == 204
    r = api(users["alice"]).post(URL, {**CERN, "pilot_type": "private"}, format="json")
    assert r.status_code == 200 and r.data["id"] == job.pk


def test_the_highest_cpu_segment_goes_first(pilot, submit):
    from core import gdpconfig

    gdpconfig.set_value("MatchCPUSegmentPrecedence", True)  # the seed's rule (the default)
    submit("alice", cpu_time=100)  # segment 500
    long_job = submit("bob", cpu_time=40000)  # segment 50000
    r = pilot.post(URL, CERN, format="json")
    assert r.data["id"] == long_job.pk
    short = pilot.post(URL, {**CERN, "cpu_time": 4000}, format="json")
    assert short.status_code == 200 and short.data["cpu_time"] == 100


def test_the_job_comes_from_the_ten_lowest_ids_at_the_winning_priority(users, submit):
    from core import gdpconfig

    gdpconfig.set_value("MaxRescheduling", 100)
    jobs = [submit("alice", cpu_time=100, user_priority=5) for _ in range(25)]
    low = submit("alice", cpu_time=100, user_priority=1)
    resource = Resource(site="LCG.CERN.ch", setup="any", cpu_time=1000)
    rng = random.Random(5)
    seen = set()
    for _ in range(8):
        m = dispatcher.match_job(resource, "p", rng=rng, mode="dirac")
        seen.add(m.job.id)
        # the remaining jobs are put back so that every draw sees the same TaskQueue
        from matcher import services

        services.reschedule_job(m.job.id, users["admin"])
    ten_lowest = {j.pk for j in jobs[:10]}
    assert seen <= ten_lowest | {low.pk}
    assert len(seen & ten_lowest) >= 3  # chosen at random among the ten, not always the first


def test_counts_follow_submissions_kills_and_matches(pilot, users, submit):
    from matcher import services

    a = submit("alice", cpu_time=100, user_priority=2)
    submit("alice", cpu_time=100, user_priority=2)
    submit("alice", cpu_time=100, user_priority=7)
    tq = a.task_queue_id

    def counts():
        return dict(
            TaskQueuePriorityCount.objects.filter(task_queue_id=tq, jobs__gt=0).values_list(
                "user_priority", "jobs"
            )
        )

    assert counts() == {2: 2, 7: 1}
    services.kill_job(a.pk, users["alice"])
    assert counts() == {2: 1, 7: 1}
    pilot.post(URL, CERN, format="json")
    assert sum(counts().values()) == 1


def test_staff_see_what_a_pilot_would_run_with_probabilities(api, users, submit):
    submit("alice", cpu_time=100)
    submit("bob", cpu_time=100, sites=["LCG.CERN.ch"])
    submit("dave", cpu_time=100, sites=["LCG.PIC.es"])
    r = api(users["admin"]).post("/api/v1/task-queues/matching/", CERN, format="json")
    assert r.status_code == 200
    assert {row["owner"] for row in r.data} == {"alice", "bob"}
    assert sum(row["probability"] for row in r.data) == pytest.approx(1.0)
    assert (
        api(users["alice"]).post("/api/v1/task-queues/matching/", CERN, format="json").status_code
        == 403
    )


def test_the_analysis_names_the_first_failing_rule_per_ce(api, users, submit):
    job = submit("alice", cpu_time=40000, sites=["LCG.CERN.ch"], tags=["16GB"])
    r = api(users["alice"]).get(f"/api/v1/jobs/{job.pk}/analysis/")
    assert r.status_code == 200 and r.data["waiting"]
    rows = {row["ce"]: row for row in r.data["ces"]}
    assert rows["ce503.cern.ch"]["matches"]  # 172800 s >= segment 50000, offers 16GB
    assert rows["ce504.cern.ch"]["rule"] == "Tag"  # long enough, but no 16GB tag
    assert rows["ce07.pic.es"]["rule"] == "Site"
    assert "LCG.PIC.es not in Sites {LCG.CERN.ch}" in rows["ce07.pic.es"]["detail"]
    assert r.data["matching_ces"] == 1


def test_the_analysis_of_a_job_no_longer_waiting_says_so(api, users, submit, pilot):
    job = submit("alice", cpu_time=100)
    pilot.post(URL, CERN, format="json")
    r = api(users["alice"]).get(f"/api/v1/jobs/{job.pk}/analysis/")
    assert r.data["waiting"] is False and r.data["status"] == "sent"


def test_the_match_page_lists_matching_taskqueues_with_their_probabilities(client, users, submit):
    submit("alice", cpu_time=100, sites=["LCG.CERN.ch"])
    submit("bob", cpu_time=100, sites=["LCG.PIC.es"])
    client.force_login(users["admin"])
    r = client.get("/taskqueues/match/", {"site": "LCG.CERN.ch", "cpu_time": 1000})
    assert r.status_code == 200
    assert [row["tq"].owner_name for row in r.context["rows"]] == ["alice"]
    assert r.context["rows"][0]["probability"] == pytest.approx(1.0)


def test_the_match_page_shows_a_bad_field_next_to_it(client, users):
    client.force_login(users["admin"])
    r = client.get("/taskqueues/match/", {"site": "LCG.CERN.ch", "cpu_time": -3})
    assert r.context["rows"] is None
    assert "cpu_time" in r.context["form"].errors


def test_the_match_page_is_for_staff(client, users):
    client.force_login(users["alice"])
    assert client.get("/taskqueues/match/").status_code == 403


def test_the_job_page_explains_why_a_job_is_not_running(client, users, submit):
    job = submit("alice", cpu_time=100, sites=["LCG.PIC.es"])
    client.force_login(users["alice"])
    html = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "Why is it not running yet?" in html
    assert "LCG.CERN.ch not in Sites {LCG.PIC.es}" in html


def test_the_readme_pilot_example_gets_a_job(client, submit):
    job = submit("alice", cpu_time=3600, sites=["LCG.CERN.ch"], tags=["16GB"])
    r = client.post("/api/v1/auth/token/", {"username": "pilot", "password": "gridwms"})
    body = (
        '{"site": "LCG.CERN.ch", "grid_ce": "ce503.cern.ch", "cpu_time": 172800,'
        ' "platform": ["x86_64-el9"], "tag": ["MultiProcessor", "16GB"],'
        ' "pilot_reference": "ce503/1"}'
    )
    r = client.post(
        URL,
        data=body,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {r.json()['token']}",
    )
    assert r.status_code == 200 and r.json()["id"] == job.pk


def test_a_generic_pilot_saying_any_or_private_still_gets_no_private_only_job(pilot, submit):
    submit("alice", cpu_time=100, pilot_types=["private"])
    for pilot_type in ("any", "private"):
        r = pilot.post(URL, {**CERN, "pilot_type": pilot_type}, format="json")
        assert r.status_code == 204


def test_a_pilot_cannot_escape_banned_sites_with_site_any(pilot, submit):
    job = submit("alice", cpu_time=100, banned_sites=["LCG.CERN.ch"])
    r = pilot.post(URL, {**CERN, "site": "any"}, format="json")
    assert r.status_code == 204  # the CE places the pilot at CERN, which the job bans
    r = pilot.post(URL, {"site": "any", "cpu_time": 86400}, format="json")
    assert r.status_code == 400 and "site" in r.data
    job.refresh_from_db()
    assert job.status == "activated"


@pytest.mark.parametrize("path", ["/api/v1/jobs/abc/kill/", "/api/v1/jobs/1e3/reschedule/"])
def test_a_job_action_on_a_non_numeric_id_answers_404(api, users, path):
    assert api(users["alice"]).post(path).status_code == 404


def test_the_matcher_sees_priorities_move_inside_one_entity(users, submit):
    from matcher.taskqueue_priorities import recompute_priorities

    a = submit("alice", cpu_time=100)
    b = submit("alice", cpu_time=100, tags=["GPU"])
    recompute_priorities()
    before = {t.id: t.priority for t in dispatcher.taskqueue_definitions()}
    assert before[a.task_queue_id] == pytest.approx(before[b.task_queue_id])
    for _ in range(9):
        submit("alice", cpu_time=100, tags=["GPU"])
    recompute_priorities()  # alice's share is the same; it moves between her TaskQueues
    after = {t.id: t.priority for t in dispatcher.taskqueue_definitions()}
    assert after[b.task_queue_id] == pytest.approx(10 * after[a.task_queue_id])
