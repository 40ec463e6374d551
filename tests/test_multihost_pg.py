"""Two hosts, one PostgreSQL, started as production starts them (`scripts/serve.sh`: gunicorn and
the django-q2 cluster), each a process group on its own port and, where the machine allows it,
in its own network namespace (tests/_hosts.py).

Jobs arrive through both hosts and HTTP pilots ask both; the cycles run from the schedules, on
both clusters. A table lock holds one cycle (usage sampling) mid-run on whichever host claimed
it; a second request for that cycle, taken by a cluster meanwhile, is recorded skipped; then
that host is killed outright (SIGKILL to its process group) while jobs and pilots keep coming.
The other host carries on: it runs the dead host's cycle at its next interval (the advisory
lock died with the dead host's connection, so its claimed run is marked abandoned), and no job
is lost or given twice. Skipped without PostgreSQL. About two minutes: the clusters' scheduler
looks at the schedules every 30 s, and the cycles run every minute.
"""

from __future__ import annotations

import http.client
import itertools
import json
import threading
import time
import warnings
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection, connections, transaction
from django.utils import timezone

from core.schedules import SCHEDULES
from tests._hosts import Host, Network
from tests._invariants import assert_job_invariants

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(720),
]

PILOTS = 6
RESOURCE = {"site": "LCG.CERN.ch", "cpu_time": 172800, "platform": ["any"], "tag": ["any"]}


@pytest.fixture
def hosts(world, tmp_path):
    db = connection.settings_dict
    network = Network(2, (db["HOST"] or "127.0.0.1", int(db["PORT"] or 5432)))
    started: list[Host] = []
    try:
        places = network.setup()
        mode = network.reason or "each host in its own network namespace, over a veth pair"
        print(f"multi-host test: {mode}")
        if network.reason:
            warnings.warn(network.reason, stacklevel=1)
        for name, place in zip(("host-a", "host-b"), places, strict=True):
            host = Host(name, place, db["NAME"], tmp_path)
            host.start()
            started.append(host)
        for host in started:
            host.wait_serving(180)
        yield started
    finally:
        for host in started:
            host.stop()
        network.teardown()


def _token(user) -> str:
    from rest_framework.authtoken.models import Token

    return Token.objects.get_or_create(user=user)[0].key


def _wait_for(what: str, probe, timeout: float, hosts):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.5)
    logs = "\n".join(f"--- {h.name}\n{h.tail(25)}" for h in hosts)
    raise AssertionError(f"waited {timeout:.0f} s for {what}\n{logs}")


class Traffic:
    """A user submitting lists of jobs and HTTP pilots asking for jobs, spread over the hosts,
    each request to the next host in turn; a host that stopped answering is skipped over."""

    def __init__(self, hosts, user_token: str, pilot_token: str):
        self.hosts, self.user_token, self.pilot_token = hosts, user_token, pilot_token
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.submitted: list[int] = []
        self.claims: list[tuple[str, int, str]] = []  # (pilot, job, host)
        self.unanswered: Counter = Counter()  # host -> requests that got no answer
        self.errors: list[str] = []  # a wrong answer ends its thread and fails the test
        self.threads = [threading.Thread(target=self._guard, args=(self._submit,), daemon=True)]
        self.threads += [
            threading.Thread(target=self._guard, args=(self._pilot, f"http-pilot-{i}"), daemon=True)
            for i in range(PILOTS)
        ]

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(30)

    def _guard(self, fn, *args):
        try:
            fn(*args)
        except Exception as exc:
            with self.lock:
                self.errors.append(f"{fn.__name__}{args}: {exc!r}")

    def _post(self, conns: dict, host, path: str, body, token: str):
        conn = conns.get(host.name)
        if conn is None:
            conn = conns[host.name] = http.client.HTTPConnection(
                host.place.address, host.place.port, timeout=15
            )
        try:
            conn.request(
                "POST",
                path,
                json.dumps(body),
                {"Content-Type": "application/json", "Authorization": f"Token {token}"},
            )
            response = conn.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException):
            conn.close()
            conns.pop(host.name, None)
            with self.lock:
                self.unanswered[host.name] += 1
            time.sleep(0.1)
            return None, None
        return response.status, (json.loads(data) if data.strip() else None)

    def _submit(self):
        conns: dict = {}
        for host in itertools.cycle(self.hosts):
            if self.stop.is_set():
                break
            jobs = [{"cpu_time": 3600, "name": f"via {host.name}"}] * 20
            status, body = self._post(conns, host, "/api/v1/jobs/", jobs, self.user_token)
            if status == 201:
                with self.lock:
                    self.submitted += [j["id"] for j in body]
            elif status is not None:
                raise AssertionError(f"submission to {host.name}: {status} {body}")
            time.sleep(0.3)

    def _pilot(self, name: str):
        conns: dict = {}
        for host in itertools.cycle(self.hosts):
            if self.stop.is_set():
                break
            body = {**RESOURCE, "pilot_reference": name}
            status, job = self._post(conns, host, "/api/v1/match/", body, self.pilot_token)
            if status == 200:
                with self.lock:
                    self.claims.append((name, job["id"], host.name))
            elif status == 204:
                time.sleep(0.2)
            elif status is not None:
                raise AssertionError(f"match at {host.name}: {status} {job}")


class TableLock(threading.Thread):
    """Holds LOCK TABLE … IN EXCLUSIVE MODE (reads go on, writes wait) until released: the
    cycle that writes the table stops mid-run, holding its claim."""

    def __init__(self, table: str):
        super().__init__(daemon=True)
        self.table = table
        self.held, self.release = threading.Event(), threading.Event()

    def run(self):
        try:
            with transaction.atomic(), connection.cursor() as cur:
                cur.execute(f'LOCK TABLE "{self.table}" IN EXCLUSIVE MODE')
                self.held.set()
                self.release.wait(300)
        finally:
            connections.close_all()


def _hold_usage_sampling_mid_run(hosts, traffic: Traffic):
    """The first scheduler to look fires every cycle; usage sampling stops at the table lock
    on whichever host took it. Asked again meanwhile (as an operator would), a cluster records
    that request skipped. Returns the held run, its host and the other host."""
    from django_q.tasks import async_task

    from core.models import CycleRun

    held = _wait_for(
        "a usage sampling run held mid-way",
        lambda: CycleRun.objects.filter(kind="usage_sampling", status="running").first(),
        150,
        hosts,
    )
    [victim] = [h for h in hosts if held.host.startswith(f"{h.name}/")]
    [survivor] = [h for h in hosts if h is not victim]
    async_task("core.tasks.run", "usage_sampling")
    _wait_for(
        "the second request for the held cycle, skipped",
        lambda: CycleRun.objects.filter(kind="usage_sampling", status="skipped").exists(),
        60,
        hosts,
    )
    _wait_for(
        "claims through both hosts",
        lambda: {h for _, _, h in traffic.claims} == {"host-a", "host-b"},
        60,
        hosts,
    )
    # Which cluster's worker takes a queued cycle is a race; under load one can take several
    # in a row, so wait (a few schedule rounds at most) until each has taken one.
    _wait_for(
        "cycles taken by both clusters",
        lambda: _cluster_names(CycleRun.objects.all()) == {"host-a", "host-b"},
        180,
        hosts,
    )
    return held, victim, survivor


def _cluster_names(runs) -> set[str]:
    return {host.split("/")[0] for host in runs.values_list("host", flat=True)}


def _wait_for_the_survivor_to_carry_on(survivor: Host, victim: Host, dead_at) -> None:
    """It runs the dead host's cycle at its next interval, and every other one-minute cycle."""
    from core.models import CycleRun

    _wait_for(
        f"{survivor.name} running usage sampling after {victim.name} died",
        lambda: CycleRun.objects.filter(
            kind="usage_sampling",
            status="success",
            host__startswith=f"{survivor.name}/",
            started__gt=dead_at,
        ).exists(),
        150,
        [survivor],
    )
    every_minute = {k for k, m in SCHEDULES.items() if m == 1}
    _wait_for(
        f"every one-minute cycle run by {survivor.name} after the kill",
        lambda: (
            every_minute
            <= set(
                CycleRun.objects.filter(host__startswith=f"{survivor.name}/", started__gt=dead_at)
                .exclude(status="skipped")
                .values_list("kind", flat=True)
            )
        ),
        60,
        [survivor],
    )


def test_two_hosts_share_jobs_and_cycles_and_a_host_killed_mid_cycle_loses_nothing(
    hosts, users, monkeypatch
):
    from django_q.conf import Conf

    from core.models import CycleRun
    from shares.models import UsageTick

    # The clusters sign their queue with the installation's SECRET_KEY: the test signs as they do.
    monkeypatch.setattr(Conf, "SECRET_KEY", hosts[0].env["SECRET_KEY"])
    lock = TableLock(UsageTick._meta.db_table)
    lock.start()
    assert lock.held.wait(30)
    try:
        with Traffic(hosts, _token(users["alice"]), _token(users["pilot"])) as traffic:
            held, victim, survivor = _hold_usage_sampling_mid_run(hosts, traffic)
            killed_at = timezone.now()
            victim.kill()
            dead_at = timezone.now()
            with traffic.lock:
                at_kill = (len(traffic.submitted), len(traffic.claims))
            lock.release.set()
            _wait_for_the_survivor_to_carry_on(survivor, victim, dead_at)
        survivor.stop()
    finally:
        lock.release.set()
        lock.join(30)

    _report(traffic, victim, killed_at)
    assert not traffic.errors, traffic.errors
    held.refresh_from_db()
    assert held.status == "abandoned" and "died" in held.error
    # The dead run wrote nothing: one usage sample per successful run.
    assert UsageTick.objects.count() == (
        CycleRun.objects.filter(kind="usage_sampling", status="success").count()
    )
    # Users and pilots carried on through the survivor.
    assert len(traffic.submitted) > at_kill[0] and len(traffic.claims) > at_kill[1]
    assert {h for _, _, h in traffic.claims[at_kill[1] :]} == {survivor.name}
    _assert_no_job_lost_or_given_twice(traffic)
    _assert_cycles_ran_once_per_interval_never_two_at_a_time(victim, survivor, killed_at, dead_at)


def _report(traffic: Traffic, victim: Host, killed_at) -> None:
    from core.models import CycleRun

    runs = Counter(
        (r.split("/")[0], s, "before" if t < killed_at else "after")
        for r, s, t in CycleRun.objects.values_list("host", "status", "started")
    )
    print(
        json.dumps(
            {
                "killed": victim.name,
                "submitted": len(traffic.submitted),
                "claims_per_host": Counter(h for _, _, h in traffic.claims),
                "unanswered": traffic.unanswered,
                "cycle_runs": {" ".join(k): n for k, n in sorted(runs.items())},
            }
        )
    )


def _assert_no_job_lost_or_given_twice(traffic: Traffic) -> None:
    from matcher import services
    from matcher.models import Job, JobStatus, JobStatusHistory, TaskQueueJob

    jobs = [job for _, job, _ in traffic.claims]
    assert len(jobs) == len(set(jobs)), "a job went to two pilots"
    assert {h for _, _, h in traffic.claims} == {"host-a", "host-b"}
    refs = dict(Job.objects.filter(pk__in=jobs).values_list("pk", "pilot_reference"))
    assert all(refs[job] == pilot for pilot, job, _ in traffic.claims)
    # A claim whose answer died with the host is in the database, for that pilot only.
    to_pilots = set(
        Job.objects.filter(pilot_reference__startswith="http-pilot-").values_list("pk", flat=True)
    )
    assert set(jobs) <= to_pilots
    assert len(to_pilots - set(jobs)) <= sum(traffic.unanswered.values())
    # Every accepted submission is stored; every job left its TaskQueue at most once.
    assert set(traffic.submitted) <= set(Job.objects.values_list("pk", flat=True))
    sends = Counter(
        JobStatusHistory.objects.filter(
            from_status=JobStatus.ACTIVATED, to_status=JobStatus.SENT
        ).values_list("job_id", flat=True)
    )
    assert set(sends.values()) <= {1}
    waiting = set(Job.objects.filter(status=JobStatus.ACTIVATED).values_list("pk", flat=True))
    members = Counter(TaskQueueJob.objects.values_list("job_id", flat=True))
    assert set(members) == waiting and set(members.values()) <= {1}
    assert_job_invariants()
    assert services.repair_counts() == 0, "TaskQueue counts disagree with their jobs"


def _assert_cycles_ran_once_per_interval_never_two_at_a_time(victim, survivor, killed_at, dead_at):
    from core.models import CycleRun

    runs = list(
        CycleRun.objects.exclude(status="skipped").order_by("kind", "started", "id").values()
    )
    # Skipped runs count: the cluster took the cycle from the shared queue and looked.
    before = _cluster_names(CycleRun.objects.filter(started__lt=killed_at))
    assert before == {victim.name, survivor.name}, "both clusters ran cycles"
    after = {r["host"].split("/")[0] for r in runs if r["started"] > dead_at}
    assert after == {survivor.name}
    for kind, group in itertools.groupby(runs, key=lambda r: r["kind"]):
        group = list(group)
        interval = timedelta(minutes=SCHEDULES[kind])
        for a, b in itertools.pairwise(group):
            assert a["finished"] is not None and a["finished"] <= b["started"], (
                f"two runs of {kind} at once: {a} and {b}"
            )
            # The scheduler looks every 30 s: a run comes up to that late, never twice.
            assert b["started"] - a["started"] >= interval / 3, f"{kind} ran twice: {a}, {b}"
    # The survivor found the dead host's run still under way and skipped, as often as its
    # scheduler looked before that run was declared abandoned (every 30 s: once or more).
    skipped = list(CycleRun.objects.filter(kind="usage_sampling", status="skipped"))
    assert skipped and all("under way" in run.error for run in skipped), [
        run.error for run in skipped
    ]
    # Whatever else the dead host left running was taken over the same way.
    for run in CycleRun.objects.filter(host__startswith=f"{victim.name}/", status="running"):
        assert not CycleRun.objects.filter(kind=run.kind, started__gt=run.started).exists()
