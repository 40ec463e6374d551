"""Kills and reschedules of one job released at the same moment, on
PostgreSQL, each client a thread with its own database connection: 15 jobs that pilots took
and reported running, finished or failed (5 each); on each, 4 kills and 4 reschedules by staff
through the API, released together by a barrier. Every answer is 200 or a 409 refusal, never a
5xx, and no job is left cancelled in a TaskQueue: memberships and per-priority counts agree
with the activated jobs (tests/_invariants.py). Skipped without PostgreSQL."""

import json
import threading
from collections import Counter

import pytest
from django.db import connection
from rest_framework.test import APIClient

from tests._invariants import assert_job_invariants

pytestmark = pytest.mark.django_db(transaction=True)

SITE = "LCG.CERN.ch"
PER_STATE = 5
# What each job's pilot reports after claiming it, to leave it in the state named.
REPORTS = {
    "running": ["running"],
    "finished": ["running", "finished"],
    "failed": ["running", "failed"],
}
ACTIONS = ["kill"] * 4 + ["reschedule"] * 4


def _client(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _jobs_in_states(users) -> dict[int, str]:
    """{job: state}: alice's jobs, each claimed by a pilot of its own and reported into its
    state, as pilots do."""
    alice, pilot = _client(users["alice"]), _client(users["pilot"])
    states = [state for state in REPORTS for _ in range(PER_STATE)]
    spec = {"cpu_time": 100, "sites": [SITE]}
    r = alice.post("/api/v1/jobs/", [spec] * len(states), format="json")
    assert r.status_code == 201, r.data
    out = {}
    for i, state in enumerate(states):
        reference = f"race-pilot-{i}"
        registered = pilot.post("/api/v1/pilots/", {"reference": reference, "site": SITE})
        assert registered.status_code == 201, registered.data
        body = {"site": SITE, "cpu_time": 86400, "pilot_reference": reference}
        m = pilot.post("/api/v1/match/", body, format="json")
        assert m.status_code == 200, m.content
        job = m.data["id"]
        for to in REPORTS[state]:
            report = {"status": to, "pilot_reference": reference}
            r = pilot.post(f"/api/v1/jobs/{job}/status/", report, format="json")
            assert r.status_code == 200, r.data
        out[job] = state
    return out


def _race(staff, jobs: list[int]) -> list[tuple[int, str, int | None, object]]:
    """Per job, every action of ACTIONS released at once, one thread (one connection) per
    action; [(job, action, status code or None, answer or exception)]. The threads take turns
    at the actions, so that kills do not always come first."""
    barrier = threading.Barrier(len(ACTIONS))
    answers, lock = [], threading.Lock()

    def client(i):
        api = _client(staff)
        try:
            for n, job in enumerate(jobs):
                action = ACTIONS[(i + n) % len(ACTIONS)]
                barrier.wait(60)
                try:
                    r = api.post(f"/api/v1/jobs/{job}/{action}/")
                    answer = (job, action, r.status_code, r.data)
                except Exception as exc:  # a 500, raised by the test client
                    answer = (job, action, None, repr(exc))
                with lock:
                    answers.append(answer)
        finally:
            connection.close()  # this thread's own connection

    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(ACTIONS))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not any(t.is_alive() for t in threads), "a client never finished"
    return answers


def test_kills_and_reschedules_of_one_job_at_once_answer_200_or_409_and_leave_no_cancelled_job_in_a_taskqueue(  # noqa: E501
    users,
):
    from matcher.models import Job, JobStatus

    states = _jobs_in_states(users)
    answers = _race(users["admin"], sorted(states))
    tally = Counter(f"{states[j]} {a} {code}" for j, a, code, _ in answers)
    print(json.dumps({"answers": dict(sorted(tally.items()))}))
    assert len(answers) == len(states) * len(ACTIONS)
    unexpected = [a for a in answers if a[2] not in (200, 409)]
    assert not unexpected, unexpected
    assert_job_invariants()

    now = dict(Job.objects.filter(pk__in=states).values_list("pk", "status"))
    kills = Counter(j for j, a, code, _ in answers if a == "kill" and code == 200)
    for job, state in states.items():
        assert kills[job] <= 1, f"job {job} was killed {kills[job]} times"
        if state == "finished":  # final: nothing may move it
            assert now[job] == JobStatus.FINISHED and job not in kills
        elif state == "running":  # a kill always gets it, before or after a reschedule
            assert now[job] == JobStatus.CANCELLED and kills[job] == 1
        else:  # failed: killed once rescheduled, or rescheduled after every kill was refused
            assert now[job] in (JobStatus.CANCELLED, JobStatus.ACTIVATED)
