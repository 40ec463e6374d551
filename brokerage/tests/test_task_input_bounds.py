"""A task's inputs, as a client submits them (the API and the Submit a task form): the fields
that steer brokerage or fairness (priority, gshare, task_class) are set by staff; a parent is
the caller's own task or their JobSharing group's, any other id looks like none; every other
parameter is bounded. Each refusal is a 400 naming the field, and nothing is stored."""

import pytest

from brokerage.models import Task
from matcher.models import Job

URL = "/api/v1/tasks/"
FORM = "/brokerage/tasks/submit/"
ANALYSIS = {"name": "user.t", "owner_group": "lhcb_user", "kind": "analysis", "n_jobs": 2}
PRODUCTION = {"name": "mc.t", "owner_group": "lhcb_mc", "n_jobs": 2}
# The Submit a task form as a user's browser posts it (no priority: the form offers none).
TASK_FORM = {
    "kind": "analysis",
    "name": "form.t",
    "owner_group": "lhcb_user",
    "processing_type": "simul",
    "core_count": 1,
    "ram_count": 1000,
    "cpu_time": 10,
    "n_jobs": 1,
    "n_events_per_job": 10,
}


def post(api, user, body):
    return api(user).post(URL, body, format="json")


def nothing_stored(before: int = 0) -> bool:
    return Task.objects.count() == before and Job.objects.count() == 2 * before


# --- fields set by staff ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        {"task_class": "S"},
        {"gshare": "Express Analysis"},
        {"gshare": "no such share"},
        {"priority": 100_000},
        {"priority": 500},
    ],
    ids=["class-S", "gshare", "unknown-gshare", "priority-100000", "priority-500"],
)
def test_a_users_task_giving_a_field_staff_set_is_refused_naming_it(panda, api, users, fields):
    r = post(api, users["alice"], {**ANALYSIS, **fields})
    assert r.status_code == 400, r.content
    [field] = fields
    assert "set by staff" in str(r.data[field][0])
    assert nothing_stored()


def test_a_users_analysis_task_gets_the_systems_share_class_and_priority(panda, api, users):
    r = post(api, users["alice"], ANALYSIS)
    assert r.status_code == 201, r.content
    task = Task.objects.get()
    # User Analysis: the share whose throttle analysis tasks are subject to.
    assert (task.gshare, task.task_class, task.priority) == ("User Analysis", "A", 500)


def test_staff_set_priority_gshare_and_class_checked_against_the_known_shares(panda, api, users):
    admin = users["admin"]
    r = post(api, admin, {**ANALYSIS, "gshare": "Express Analysis", "task_class": "S"})
    assert r.status_code == 201, r.content
    r = post(api, admin, {**ANALYSIS, "priority": 900})
    assert r.status_code == 201, r.content
    got = set(Task.objects.values_list("gshare", "task_class", "priority"))
    assert got == {("Express Analysis", "S", 500), ("User Analysis", "A", 900)}
    for bad, field in [
        ({"gshare": "no such share"}, "gshare"),
        ({"priority": 100_000}, "priority"),
        ({"priority": -1}, "priority"),
        ({"task_class": "Z"}, "task_class"),
    ]:
        r = post(api, admin, {**ANALYSIS, **bad})
        assert r.status_code == 400 and field in r.data, (bad, r.data)
    assert Task.objects.count() == 2


# --- the parent ---------------------------------------------------------------------------------


def test_a_parent_is_the_callers_own_task_or_a_jobsharing_groups(panda, api, users):
    alice_task = post(api, users["alice"], ANALYSIS).data["id"]
    r = post(api, users["alice"], {**ANALYSIS, "parent": alice_task})
    assert r.status_code == 201 and Task.objects.get(pk=r.data["id"]).parent_id == alice_task
    # carol's lhcb_mc task: erin shares it through lhcb_mc's JobSharing.
    carol_task = post(api, users["carol"], PRODUCTION).data["id"]
    r = post(api, users["erin"], {**PRODUCTION, "parent": carol_task})
    assert r.status_code == 201, r.content


def test_someone_elses_parent_is_refused_as_if_it_did_not_exist(panda, api, users):
    alice_task = post(api, users["alice"], ANALYSIS).data["id"]
    missing = Task.objects.order_by("-pk").first().pk + 1000
    answers = []
    for parent in (alice_task, missing, 10**30, True, "abc", 1.5):
        r = post(api, users["bob"], {**ANALYSIS, "parent": parent})
        assert r.status_code == 400, (parent, r.content)
        answers.append(r.data["parent"])
    # The same answer for another user's task and for an id that does not exist.
    assert all(a == ["no such task"] for a in answers), answers
    assert nothing_stored(1)


# --- bounds -------------------------------------------------------------------------------------

BAD = [
    ({"out_disk_count": -1}, "out_disk_count"),
    ({"work_disk_count": -1}, "work_disk_count"),
    ({"t1_weight": -(10**6)}, "t1_weight"),
    ({"t1_weight": -2}, "t1_weight"),
    ({"t1_weight": 10**6}, "t1_weight"),
    ({"io_intensity": -1}, "io_intensity"),
    ({"disk_io": -1}, "disk_io"),
    ({"core_count": 0}, "core_count"),
    ({"core_count": 100_000}, "core_count"),
    ({"core_count": 8, "max_core_count": 4}, "max_core_count"),
    ({"cpu_time": 1e308}, "cpu_time"),
    ({"cpu_time": -1}, "cpu_time"),
    ({"ram_count": 10**9}, "ram_count"),
    ({"walltime": 10**9}, "walltime"),
    ({"n_events_per_job": 0}, "n_events_per_job"),
    ({"job_cpu_time": 0}, "job_cpu_time"),
    ({"architecture": "@@@!!"}, "architecture"),
    ({"architecture": "x86_64!!"}, "architecture"),
    ({"architecture": "#x86_64-in tel"}, "architecture"),
    ({"architecture": "&(nvidia"}, "architecture"),
    ({"site": "NOPE,ZZZ"}, "site"),
    ({"site": "CERN-PROD_*"}, "site"),
    ({"included_site": "NOPE*"}, "included_site"),
    ({"included_site": "*A*N*A*LY*"}, "included_site"),  # a costly regexp search
    ({"excluded_site": "ANALY_(CERN"}, "excluded_site"),
    ({"scout": "yes"}, "scout"),
    ({"scout": 1}, "scout"),
    ({"merge": "on"}, "merge"),
    ({"working_group": "lhcb_data"}, "working_group"),
]


@pytest.mark.parametrize(
    ("fields", "field"), BAD, ids=[f"{f}={v}" for (d, f) in BAD for v in [d[f]]]
)
def test_an_out_of_bounds_task_input_is_refused_naming_the_field(panda, api, users, fields, field):
    r = post(api, users["erin"], {**PRODUCTION, **fields})
    assert r.status_code == 400, r.content
    assert field in r.data, r.data
    assert nothing_stored()


def test_the_inputs_in_their_documented_range_are_taken(panda, api, users):
    body = {
        **PRODUCTION,
        "t1_weight": -1,  # the seed's "t1Weight=-1": the nucleus's queues only
        "core_count": 8,
        "max_core_count": 8,
        "cpu_time": 250.0,
        "io_intensity": 0,
        "out_disk_count": 0,
        "architecture": "x86_64-el9-gcc13-opt@el9+docker://atlas/athena:25.0#x86_64-intel",
        "site": "CERN-PROD_MCORE,PIC_MCORE",
        "scout": True,
        "working_group": "lhcb_mc",
    }
    r = post(api, users["erin"], body)
    assert r.status_code == 201, r.content
    r = post(api, users["alice"], {**ANALYSIS, "included_site": "ANALY_*", "excluded_site": "X*"})
    assert r.status_code == 400 and "excluded_site" in r.data  # X* matches no queue
    r = post(api, users["alice"], {**ANALYSIS, "included_site": "ANALY_*", "scout": False})
    assert r.status_code == 201, r.content


# --- the web form ---------------------------------------------------------------------------


def test_the_form_offers_the_staff_fields_to_staff_only(panda, client, users):
    client.force_login(users["alice"])
    page = client.get(FORM).content.decode()
    assert 'name="priority"' not in page and 'name="gshare"' not in page
    client.force_login(users["admin"])
    page = client.get(FORM).content.decode()
    assert 'name="priority"' in page and 'name="task_class"' in page
    assert '<option value="Express Analysis">' in page


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"priority": 100_000}, "priority: set by staff"),
        ({"task_class": "S"}, "task_class: set by staff"),
        ({"gshare": "Express Analysis"}, "gshare: set by staff"),
        ({"core_count": 0}, "greater than or equal to 1"),
        ({"cpu_time": "1e308"}, "less than or equal to"),
        ({"architecture": "@@@!!"}, "base_platform"),
    ],
)
def test_the_form_refuses_a_users_staff_field_or_bad_input_naming_it(
    panda, client, users, fields, words
):
    client.force_login(users["alice"])
    r = client.post(FORM, {**TASK_FORM, **fields})
    assert r.status_code == 200
    assert words in r.content.decode()
    assert nothing_stored()


def test_staff_set_the_gshare_and_class_through_the_form(panda, client, users):
    client.force_login(users["admin"])
    form = {**TASK_FORM, "priority": 900, "gshare": "Express Analysis", "task_class": "S"}
    r = client.post(FORM, form)
    assert r.status_code == 302, r.content.decode()[:2000]
    task = Task.objects.get()
    assert (task.gshare, task.task_class, task.priority) == ("Express Analysis", "S", 900)
