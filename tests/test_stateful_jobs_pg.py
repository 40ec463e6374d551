"""Users, pilots and staff at random through the API, on PostgreSQL (a hypothesis rule-based
state machine): submissions by three users (two of them in JobSharing
groups, one of which a fourth user shares), pilots of three credentials (the generic one,
staff's, a user's private one) registering and claiming, with or without a reference
(references are per credential: the same one names another pilot for another credential);
their reports and heartbeats, some made by a credential or with a reference that did not claim
the job; kills and reschedules by owners, group members, strangers and staff; staff (and not
staff) editing the shared group's JobShare and JobSharing, and gdpconfig.

After every step: no answer was a 5xx; each job has one state; a job in a state a pilot holds
is bound to the one pilot whose claim was answered, of the credential that made it; memberships
and per-priority counts agree with the activated jobs (tests/_invariants.py); a report or a
heartbeat by anyone but the claiming pilot was refused, and changed nothing.

Each example runs in a savepoint rolled back at its end, so every example starts from the demo
world. Bounded: 20 examples of up to 40 steps, derandomised."""

import json
import re
from collections import Counter

import pytest
from django.db import transaction
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    multiple,
    rule,
    run_state_machine_as_test,
)
from rest_framework.test import APIClient

from tests._invariants import assert_job_invariants

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(600)]

SITE = "LCG.CERN.ch"
SHARED = "lhcb_mc"  # JobSharing: carol acts on erin's jobs while the staff leave it so
SUBMITTERS = {"alice": "lhcb_user", "erin": SHARED, "dave": "lhcb_data"}
ACTORS = ["alice", "bob", "carol", "erin", "admin"]
# The generic pilot credential, staff's own pilots (generic too), dave's private pilots (which
# take dave's jobs).
PILOT_CREDENTIALS = ["pilot", "admin", "dave"]
REPORTERS = [*PILOT_CREDENTIALS, "alice"]
# Who reports on a job a pilot holds: that pilot (mostly, so that jobs move on); another
# credential presenting its reference; its credential with another reference; anyone.
POSES = ["holder", "holder", "holder", "holder's reference", "holder's credential", "anyone"]
REFERENCES = ["p-0", "p-1", "p-2"]
REPORTS = ["starting", "running", "holding", "transferring", "finished", "failed"]
MACHINE_SETTINGS = settings(
    max_examples=20,
    stateful_step_count=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)


def _reset_process_caches():
    """What this process remembers of the database (rolled back between examples)."""
    from core import gdpconfig
    from matcher import dispatcher, topology
    from pilots import registry as pilot_registry

    gdpconfig.invalidate()
    dispatcher.invalidate_cache()
    topology._snapshot["at"] = None
    topology._groups.clear()
    pilot_registry.forget_all()


TALLY: Counter = Counter()  # answers by request and status code, printed at the end


class JobsMachine(RuleBasedStateMachine):
    users: dict = {}  # username -> User, set by the test
    clients: dict = {}  # username -> APIClient presenting that user's token

    jobs = Bundle("jobs")

    def __init__(self):
        super().__init__()
        _reset_process_caches()
        from matcher import dispatcher

        dispatcher._rng.seed(19)  # the matcher's draws, as hypothesis's: the same on a replay
        self._example = transaction.atomic()
        self._example.__enter__()
        self.claims: dict[int, tuple[str, str]] = {}  # job -> (credential, reference) holding it

    def teardown(self):
        transaction.set_rollback(True)
        self._example.__exit__(None, None, None)
        _reset_process_caches()

    def call(self, who: str, method: str, path: str, body=None):
        r = getattr(self.clients[who], method)(path, body, format="json")
        assert r.status_code < 500, f"{who}: {method.upper()} {path} {body} -> {r.status_code}"
        TALLY[f"{who} {method.upper()} {re.sub(r'/[0-9]+/', '/{id}/', path)} {r.status_code}"] += 1
        return r

    @staticmethod
    def job(pk: int):
        from matcher.models import Job

        return Job.objects.select_related("owner_group").get(pk=pk)

    # --- users --------------------------------------------------------------------------------

    @rule(
        target=jobs,
        who=st.sampled_from(sorted(SUBMITTERS)),
        n=st.integers(1, 2),
        priority=st.integers(0, 3),
    )
    def submit(self, who, n, priority):
        spec = {
            "cpu_time": 100,
            "sites": [SITE],
            "owner_group": SUBMITTERS[who],
            "user_priority": priority,
        }
        r = self.call(who, "post", "/api/v1/jobs/", [spec] * n)
        assert r.status_code == 201, r.data
        return multiple(*[j["id"] for j in r.data])

    @rule(job=jobs, who=st.sampled_from(ACTORS), action=st.sampled_from(["kill", "reschedule"]))
    def act(self, job, who, action):
        from core import gdpconfig
        from matcher import lifecycle

        before, user = self.job(job), self.users[who]
        may = (
            user.is_staff
            or before.owner_id == user.pk
            or (
                before.owner_group.job_sharing
                and user.grid_groups.filter(pk=before.owner_group_id).exists()
            )
        )
        refusal = lifecycle.refusal(action, before.status, user.is_staff)
        if refusal is None and action == "reschedule":
            if before.reschedule_count >= gdpconfig.get("MaxRescheduling"):
                refusal = "MaxRescheduling reached"
        r = self.call(who, "post", f"/api/v1/jobs/{job}/{action}/")
        after = self.job(job)
        if not may:  # not even visible to them
            assert r.status_code == 404, (who, action, before.status, r.data)
        elif refusal is not None:
            assert r.status_code == 409, (who, action, before.status, r.data)
            detail = r.data["detail"]
            assert detail.startswith(f"job {job} cannot be") or "MaxRescheduling" in detail
        else:
            assert r.status_code == 200, (who, action, before.status, r.data)
            if action == "kill":
                assert after.status == "cancelled"
            else:
                assert after.status == "activated" and after.pilot_id is None
                self.claims.pop(job, None)  # the claim was revoked
        if r.status_code != 200:
            assert (after.status, after.status_changed) == (before.status, before.status_changed)

    # --- pilots -------------------------------------------------------------------------------

    @rule(
        who=st.sampled_from(PILOT_CREDENTIALS),
        reference=st.sampled_from([*REFERENCES, ""]),
        register=st.booleans(),
    )
    def claim(self, who, reference, register):
        if reference and register:
            r = self.call(who, "post", "/api/v1/pilots/", {"reference": reference, "site": SITE})
            assert r.status_code in (200, 201), r.data
        body = {"site": SITE, "cpu_time": 86400}
        if reference:
            body["pilot_reference"] = reference
        r = self.call(who, "post", "/api/v1/match/", body)
        assert r.status_code in (200, 204), r.data
        if r.status_code == 204:
            return
        job, told = r.data["id"], r.data["pilot_reference"]
        if reference:
            assert told == reference
        else:
            assert told, "a pilot that named no reference is told the one made for it"
        claimed = self.job(job)
        assert claimed.status == "sent" and claimed.pilot is not None
        assert (claimed.pilot.credential_user.username, claimed.pilot.reference) == (who, told)
        self.claims[job] = (who, told)

    def _as_pilot(self, data, job):
        """(job, credential, reference) for a report: mostly on a job a pilot holds, as that
        pilot, or with its reference presented by another credential, or by that credential
        with another reference; else anyone, with any reference, on any job. (Every draw is
        the same whatever the state, which the matcher's choices make: hypothesis replays.)"""
        claimed = data.draw(st.integers(0, 3), label="on a claimed job (1-3)")
        index = data.draw(st.integers(0, 99), label="which claimed job")
        pose = data.draw(st.sampled_from(POSES), label="pose")
        who = data.draw(st.sampled_from(REPORTERS), label="credential")
        reference = data.draw(st.sampled_from(REFERENCES), label="reference")
        if self.claims and claimed:
            job = sorted(self.claims)[index % len(self.claims)]
        holder = self.claims.get(job)
        if holder is not None and pose == "holder":
            who, reference = holder
        elif holder is not None and pose == "holder's reference":
            if who == holder[0]:
                who = REPORTERS[(REPORTERS.index(who) + 1) % len(REPORTERS)]
            reference = holder[1]
        elif holder is not None and pose == "holder's credential":
            if reference == holder[1]:
                reference = REFERENCES[(REFERENCES.index(reference) + 1) % len(REFERENCES)]
            who = holder[0]
        return job, who, reference, holder == (who, reference)

    @rule(job=jobs, to=st.sampled_from(REPORTS), data=st.data())
    def report(self, job, to, data):
        from pilots.services import JOB_TRANSITIONS

        job, who, reference, holds = self._as_pilot(data, job)
        before = self.job(job)
        body = {"status": to, "pilot_reference": reference}
        r = self.call(who, "post", f"/api/v1/jobs/{job}/status/", body)
        after = self.job(job)
        if not holds:
            assert r.status_code == 403, (who, reference, self.claims.get(job), r.data)
            assert (after.status, after.heartbeat) == (before.status, before.heartbeat)
        elif to in JOB_TRANSITIONS.get(before.status, ()):
            assert r.status_code == 200, r.data
            assert after.status == to
        else:
            assert r.status_code == 409, r.data
            assert after.status == before.status

    @rule(job=jobs, data=st.data())
    def heartbeat(self, job, data):
        job, who, reference, holds = self._as_pilot(data, job)
        before = self.job(job)
        r = self.call(who, "post", f"/api/v1/jobs/{job}/heartbeat/", {"pilot_reference": reference})
        after = self.job(job)
        if holds and r.status_code == 200:
            # A job killed while its pilot held it: the answer carries the kill command.
            assert r.data == {"commands": ["kill"]}, r.data
            assert after.status == "cancelled" and after.kill_requested, after.status
        elif holds:
            assert r.status_code in (204, 409), r.data
        else:
            assert r.status_code == 403, (who, reference, self.claims.get(job), r.data)
            assert after.heartbeat == before.heartbeat

    # --- staff --------------------------------------------------------------------------------

    @rule(
        who=st.sampled_from(["admin", "carol"]),
        sharing=st.booleans(),
        share=st.floats(0, 1e6, allow_nan=False, allow_infinity=False),
    )
    def edit_group(self, who, sharing, share):
        from shares.models import GridGroup

        group = GridGroup.objects.get(name=SHARED)
        body = {"job_sharing": sharing, "job_share": share, "comment": "stateful test"}
        r = self.call(who, "patch", f"/api/v1/groups/{group.pk}/", body)
        assert r.status_code == (200 if who == "admin" else 403), r.data

    @rule(
        who=st.sampled_from(["admin", "erin"]),
        change=st.one_of(
            st.tuples(st.just("MaxRescheduling"), st.integers(0, 3)),
            st.tuples(st.just("MatchDrawMode"), st.sampled_from(["proportional", "dirac"])),
        ),
    )
    def edit_gdpconfig(self, who, change):
        name, value = change
        r = self.call(who, "patch", f"/api/v1/config/{name}/", {"value": value})
        assert r.status_code == (200 if who == "admin" else 403), r.data

    # --- after every step ---------------------------------------------------------------------

    @invariant()
    def jobs_taskqueues_and_claims_agree(self):
        from matcher import lifecycle
        from matcher.models import Job

        assert_job_invariants()
        held = Job.objects.filter(status__in=lifecycle.CLAIMED_STATES).select_related(
            "pilot__credential_user"
        )
        for job in held:
            assert job.pilot is not None, f"job {job.pk} is {job.status} with no pilot"
            bound = (job.pilot.credential_user.username, job.pilot.reference)
            assert bound == self.claims.get(job.pk), (
                f"job {job.pk} is bound to {bound}, the claim answered {self.claims.get(job.pk)}"
            )


def test_random_sequences_of_user_pilot_and_staff_requests_keep_every_job_invariant(users):
    from rest_framework.authtoken.models import Token

    clients = {}
    for name in {*SUBMITTERS, *ACTORS, *PILOT_CREDENTIALS, *REPORTERS}:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get(user=users[name]).key}")
        clients[name] = client
    JobsMachine.users, JobsMachine.clients = users, clients
    TALLY.clear()
    run_state_machine_as_test(JobsMachine, settings=MACHINE_SETTINGS)
    print(json.dumps({"answers": dict(sorted(TALLY.items()))}, indent=1))
