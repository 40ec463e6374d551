"""Every list page but the jobs' (tests/test_job_list_tools.py) works the same way, through
web.core.listing: each sortable column sorts the page, the API's list and its export alike, the
other way round exactly reversed (ties broken by id in the same direction, NULLs in one place);
search finds a row by its natural key; a time range, a bad page size and the CSV and JSON
exports behave as on the jobs list; and what a user may not see is never exported."""

import csv
import io
import json
import re
from datetime import timedelta

import pytest

from brokerage.models import BrokerageRun, Task
from classads.models import JobAd, SiteAd
from core import clock
from core.models import CycleRun
from pilots.models import Pilot
from timeouts.models import TimeoutAction

LISTS = {
    # name: (page, API list, row link pattern on the page, natural key searched)
    "taskqueues": ("/taskqueues/", "/api/v1/task-queues/", r'href="/taskqueues/(\d+)/"'),
    "pilots": ("/pilots/", "/api/v1/pilots/", r'href="/pilots/(\d+)/"'),
    "tasks": ("/brokerage/tasks/", "/api/v1/tasks/", r'<td><a href="/brokerage/tasks/(\d+)/"'),
    "site_ads": ("/classads/", "/api/v1/classads/sites/", r'href="/classads/sites/(\d+)/"'),
    "job_ads": ("/classads/jobs/", "/api/v1/classads/jobs/", r'href="/classads/jobs/(\d+)/"'),
    "cycles": ("/config/cycles/", "/api/v1/cycles/", None),
    "decisions": (
        "/brokerage/decisions/",
        "/api/v1/brokerage-runs/",
        r'<td><a href="/brokerage/tasks/\d+/\?run=(\d+)"',
    ),
    "timeout_actions": ("/brokerage/timeouts/actions/", "/api/v1/timeout-actions/", None),
}


def body(response) -> str:
    return b"".join(response.streaming_content).decode()


def as_text(value) -> str:
    """A JSON export's value as the CSV export writes it."""
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return json.dumps(value, separators=(",", ":"))
    return value if isinstance(value, str) else str(value)


def exported_ids(response) -> list[int]:
    return [int(r["id"]) for r in csv.DictReader(io.StringIO(body(response)))]


@pytest.fixture
def rows(users, submit):
    """A few rows of every list, whose columns differ, tie and are sometimes NULL."""
    now = clock.now()
    alice, carol, admin = users["alice"], users["carol"], users["admin"]
    jobs = [
        submit(["alice", "bob"][i % 2], cpu_time=cpu, user_priority=i)
        for i, cpu in enumerate((100, 5000, 50_000, 100, 5000))
    ]
    for i in range(5):
        at = now - timedelta(hours=3 * i)
        Pilot.objects.create(
            reference=f"https://ce{i % 2}.example/p{i}", task_queue_id=i % 3 + 1,
            owner_dn=admin.dn or "/CN=admin", owner_group="lhcb_pilot", private=i % 2 == 0,
            submit_pool=["Simulated", "DIRAC"][i % 2], site=f"LCG.S{i % 3}.ch", ce=f"ce{i % 2}",
            status=["Submitted", "Running", "Done"][i % 3], submitted=at, status_changed=at,
            jobs_done=i % 3, credential_user=alice if i < 3 else None,
        )  # fmt: skip
        task = Task.objects.create(
            name=f"task-{'ab'[i % 2]}{i}", owner=[alice, carol][i % 2],
            owner_group=[alice, carol][i % 2].grid_groups.first(), status="running",
            priority=500 + 100 * (i % 2), processing_type=["simul", "reco"][i % 2],
            created=at, modified=at,
        )  # fmt: skip
        SiteAd.objects.create(
            name=f"site-{4 - i}", text="[]", sequence=i if i % 2 else None,
            cur_matches=i % 2 or None, max_matches=2, want_ad_revaluate=i % 2 == 0,
            site=f"LCG.S{i % 2}.ch", advertised=at, created=at,
        )  # fmt: skip
        JobAd.objects.create(
            owner=[alice, carol][i % 2], owner_group=[alice, carol][i % 2].grid_groups.first(),
            name=f"ad{i % 3}", is_dag=i == 1, setup="LHCb-Production", text="[]", digest="d",
            status=["idle", "matched"][i % 2], rank=0.5 * i if i % 2 else None,
            site_ad_name=f"site-{i % 2}", created=at,
        )  # fmt: skip
        BrokerageRun.objects.create(
            task=task, kind=["task", "job"][i % 2], at=at, outcome=["assigned", "pending"][i % 2],
            chosen=[f"Q{i}"], message=f"m{i % 2}",
        )  # fmt: skip
        TimeoutAction.objects.create(
            at=at, rule=["heartbeat", "holding"][i % 2], job=jobs[i], from_status="running",
            to_status=["failed", "closed"][i % 2], queue=f"Q{i % 3}", reason="silent",
        )  # fmt: skip
        CycleRun.objects.create(
            kind=["director", "timeouts"][i % 2], started=at, finished=at,
            status="success", host=f"h{i % 2}", real_seconds=0.1 * (i % 3) if i != 2 else None,
        )  # fmt: skip


def sort_keys(name: str) -> list[str]:
    from web.brokerage.filters import BrokerageRunFilterSet, TaskFilterSet
    from web.classads.filters import JobAdFilterSet, SiteAdFilterSet
    from web.core.cycle_filters import CycleRunFilterSet
    from web.matcher.filters import TaskQueueFilterSet
    from web.pilots.filters import PilotFilterSet
    from web.timeouts.filters import TimeoutActionFilterSet

    filterset = {
        "taskqueues": TaskQueueFilterSet,
        "pilots": PilotFilterSet,
        "tasks": TaskFilterSet,
        "site_ads": SiteAdFilterSet,
        "job_ads": JobAdFilterSet,
        "cycles": CycleRunFilterSet,
        "decisions": BrokerageRunFilterSet,
        "timeout_actions": TimeoutActionFilterSet,
    }[name]
    return sorted(filterset.base_filters["ordering"].param_map)


CASES = [(name, key) for name in LISTS for key in sort_keys(name)]


def api_ids(client, url, params) -> list[int]:
    r = client.get(url, {**params, "page_size": 2})
    assert r.status_code == 200, r.data
    ids = [o["id"] for o in r.data["results"]]
    while r.data["next"]:
        r = client.get(r.data["next"])
        ids += [o["id"] for o in r.data["results"]]
    return ids


@pytest.mark.parametrize(("name", "key"), CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_each_column_sorts_the_page_the_api_and_the_export_alike_and_reverses_exactly(
    client, api, users, rows, name, key
):
    page, url, link = LISTS[name]
    admin = api(users["admin"])
    client.force_login(users["admin"])
    ascending = exported_ids(admin.get(url + "export/", {"ordering": key, "format": "csv"}))
    descending = exported_ids(
        admin.get(url + "export/", {"ordering": f"-{key}"}, HTTP_ACCEPT="text/csv")
    )
    assert len(ascending) >= 3 and descending == ascending[::-1]
    assert api_ids(admin, url, {"ordering": key}) == ascending
    r = client.get(page, {"ordering": f"-{key}", "page_size": 500})
    assert r.status_code == 200
    assert f'aria-sort="descending"><a class="sort" data-sort="{key}"' in r.content.decode() or (
        f'data-sort="{key}"' not in r.content.decode()  # a sort key without a column header
    )
    if link:
        assert [int(i) for i in re.findall(link, r.content.decode())] == descending
    assert exported_ids(client.get(page, {"ordering": f"-{key}", "format": "csv"})) == descending


@pytest.mark.parametrize(
    ("name", "search", "expected"),
    [
        ("pilots", "ce1.example", lambda: Pilot.objects.filter(reference__contains="ce1.example")),
        ("tasks", "task-b", lambda: Task.objects.filter(name__startswith="task-b")),
        ("site_ads", "site-3", lambda: SiteAd.objects.filter(name="site-3")),
        ("job_ads", "AD2", lambda: JobAd.objects.filter(name="ad2")),
        ("cycles", "timeouts", lambda: CycleRun.objects.filter(kind="timeouts")),
        ("decisions", "TASK-A", lambda: BrokerageRun.objects.filter(task__name__contains="task-a")),
        ("timeout_actions", "Q2", lambda: TimeoutAction.objects.filter(queue="Q2")),
    ],
)
def test_search_finds_rows_by_their_natural_key_or_id(
    client, api, users, rows, name, search, expected
):
    page, url, _ = LISTS[name]
    client.force_login(users["admin"])
    want = sorted(expected().values_list("pk", flat=True))
    assert want
    assert sorted(exported_ids(client.get(page, {"q": search, "format": "csv"}))) == want
    found = api(users["admin"]).get(url, {"q": search}).data["results"]
    assert sorted(o["id"] for o in found) == want
    # a number is the row's id (a timeout action's: its job's)
    one = want[-1]
    number = TimeoutAction.objects.get(pk=one).job_id if name == "timeout_actions" else one
    assert one in exported_ids(client.get(page, {"q": number, "format": "csv"}))


@pytest.mark.parametrize("name", sorted(LISTS))
def test_each_list_takes_a_time_range_a_bounded_page_size_and_exports_csv_as_json(
    client, api, users, rows, name
):
    page, url, _ = LISTS[name]
    client.force_login(users["admin"])
    everything = exported_ids(client.get(page, {"format": "csv"}))
    day = exported_ids(client.get(page, {"period": "day", "format": "csv"}))
    assert set(day) <= set(everything)
    until = (clock.now() - timedelta(hours=5)).isoformat()
    older = exported_ids(client.get(page, {"until": until, "format": "csv"}))
    if name != "taskqueues":  # the TaskQueues are all new
        assert older and set(older) < set(everything)
    assert client.get(page, {"page_size": 1000}).status_code == 400
    assert client.get(page, {"page_size": 25}).status_code == 200
    as_csv = list(csv.DictReader(io.StringIO(body(client.get(page, {"format": "csv"})))))
    as_json = json.loads(body(api(users["admin"]).get(url + "export/")))
    assert as_csv == [{k: as_text(v) for k, v in o.items()} for o in as_json]


@pytest.mark.parametrize(
    ("name", "owner_field"), [("tasks", "owner"), ("job_ads", "owner"), ("taskqueues", "owner")]
)
def test_an_export_holds_only_what_its_reader_may_see(client, api, users, rows, name, owner_field):
    page, url, _ = LISTS[name]
    client.force_login(users["alice"])
    rows_csv = list(csv.DictReader(io.StringIO(body(client.get(page, {"format": "csv"})))))
    rows_api = json.loads(body(api(users["alice"]).get(url + "export/")))
    assert rows_csv and {r[owner_field] for r in rows_csv} == {"alice"}
    assert {r[owner_field] for r in rows_api} == {"alice"}


@pytest.mark.parametrize(
    ("name", "model", "rule"),
    [
        ("decisions", BrokerageRun, lambda user: {"task__in": Task.objects.visible_to(user)}),
        ("timeout_actions", TimeoutAction, lambda user: {"job__owner": user}),
    ],
)
def test_decisions_and_timeout_actions_export_only_those_on_what_the_reader_may_see(
    client, api, users, rows, name, model, rule
):
    page, url, _ = LISTS[name]
    alice = users["alice"]
    client.force_login(alice)
    want = sorted(model.objects.filter(**rule(alice)).values_list("pk", flat=True))
    assert 0 < len(want) < model.objects.count()
    assert sorted(exported_ids(client.get(page, {"format": "csv"}))) == want
    exported = json.loads(body(api(alice).get(url + "export/")))
    assert sorted(o["id"] for o in exported) == want


def test_a_user_exports_only_the_pilots_of_their_credential(client, users, rows):
    client.force_login(users["alice"])
    ids = exported_ids(client.get("/pilots/", {"format": "csv"}))
    assert sorted(ids) == sorted(
        Pilot.objects.visible_to(users["alice"]).values_list("pk", flat=True)
    )
    assert len(ids) < Pilot.objects.count()
