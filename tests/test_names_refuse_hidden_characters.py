"""A job's or task's name refuses control characters (a CR/LF would split the subject of its
e-mail notice): a 400 naming `name` through every way in (JSON, JDL, the Submit pages' forms),
nothing stored; names in any script still pass. (Sandbox file names:
sandboxes/tests/test_file_names_refuse_hidden_characters.py.)"""

import pytest

from brokerage.models import Task
from matcher.models import Job
from sandboxes.tests.conftest import JOB

pytestmark = pytest.mark.django_db

CONTROL = ["two\r\nlines", "line\nfeed", "tab\there", "bell\x07", "del\x7f", "c1\x85c1"]
PAGE_FIELDS = {"owner_group": "lhcb_user", "cpu_time": 60, "user_priority": 1}
TASK = {"name": "user.t", "owner_group": "lhcb_user", "kind": "analysis", "n_jobs": 1}
TASK_FORM = {
    "kind": "analysis",
    "owner_group": "lhcb_user",
    "processing_type": "simul",
    "core_count": 1,
    "ram_count": 1000,
    "cpu_time": 10,
    "n_jobs": 1,
    "n_events_per_job": 10,
}


# --- job names ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", CONTROL)
def test_a_job_name_with_a_control_character_is_a_400_naming_name(api, users, name):
    r = api(users["alice"]).post("/api/v1/jobs/", {**JOB, "name": name}, format="json")
    assert r.status_code == 400, r.content
    assert list(r.json()) == ["name"]
    assert "control character" in r.json()["name"][0]
    assert not Job.objects.exists()


def test_a_jdl_job_name_with_a_line_break_is_a_400_naming_it(api, users):
    jdl = 'JobName = "two\r\nlines"; Executable = "/bin/true"; CPUTime = 100;'
    r = api(users["alice"]).post("/api/v1/jobs/", jdl, content_type="text/plain")
    assert r.status_code == 400, r.content
    assert r.json() == {"name": ["Must not hold a control character (U+000D)."]}
    assert not Job.objects.exists()


def test_the_submit_page_shows_a_job_name_with_a_line_break_refused_next_to_it(client, users):
    client.force_login(users["alice"])
    r = client.post("/jobs/submit/", {**PAGE_FIELDS, "name": "two\r\nlines"})
    assert r.status_code == 200
    assert "control character" in " ".join(r.context["form"].errors["name"])
    assert not Job.objects.exists()


@pytest.mark.parametrize("name", ["run 7 – ünïcødé ✓", "LHCb/MC 2026 (retry #2)", "名前"])
def test_job_names_in_any_script_are_still_taken(api, users, name):
    r = api(users["alice"]).post("/api/v1/jobs/", {**JOB, "name": name}, format="json")
    assert r.status_code == 201, r.content
    assert Job.objects.get().name == name


# --- task names ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", CONTROL[:3])
def test_a_task_name_with_a_control_character_is_a_400_naming_name(panda, api, users, name):
    r = api(users["alice"]).post("/api/v1/tasks/", {**TASK, "name": name}, format="json")
    assert r.status_code == 400, r.content
    assert list(r.json()) == ["name"]
    assert not Task.objects.exists()
    ok = api(users["alice"]).post("/api/v1/tasks/", {**TASK, "name": "tâche ✓"}, format="json")
    assert ok.status_code == 201, ok.content


def test_the_submit_a_task_page_shows_a_name_with_a_line_break_refused(panda, client, users):
    client.force_login(users["alice"])
    r = client.post("/brokerage/tasks/submit/", {**TASK_FORM, "name": "two\r\nlines"})
    assert r.status_code == 200
    assert "control character" in r.content.decode()
    assert not Task.objects.exists()
