"""A user's page: their jobs by state, tasks, share standing, analysis caps and recent
failures, each linking where it comes from; their own or, for staff, anyone's."""

import pytest

from matcher import services
from matcher.models import Job
from matcher.services import rollups

pytestmark = pytest.mark.django_db


def _fail(job: Job, reason: str) -> None:
    services.kill_job(job.pk, job.owner)  # a final state the user can reach
    Job.objects.filter(pk=job.pk).update(status="failed", status_reason=reason)
    rollups.rebuild()  # a state written past the mover: recount the job counts the page reads


def test_a_user_sees_their_jobs_by_state_and_recent_failures(client, users, submit):
    waiting = [submit("alice") for _ in range(3)]
    _fail(waiting[0], "exit code 3")
    submit("bob")
    client.force_login(users["alice"])
    page = client.get("/shares/users/alice/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'href="/jobs/?owner=alice&amp;status=activated">activated</a></td><td>2<' in html
    assert 'href="/jobs/?owner=alice&amp;status=failed">failed</a></td><td>1<' in html
    assert "<td>all</td><td>3</td>" in html
    assert f'href="/jobs/{waiting[0].pk}/">{waiting[0].pk}</a>' in html
    assert "exit code 3" in html


def test_the_page_shows_the_share_standing_and_analysis_caps(client, users, submit):
    submit("alice")
    client.force_login(users["alice"])
    html = client.get("/shares/users/alice/").content.decode()
    assert 'id="user-standing"' in html and 'data-group="lhcb_user"' in html
    assert 'id="user-caps"' in html and "running jobs" in html
    assert 'id="user-tasks"' in html and "No tasks." in html


def test_another_user_cannot_open_ones_page_but_staff_can(client, users, submit):
    submit("alice")
    client.force_login(users["bob"])
    assert client.get("/shares/users/alice/").status_code == 404
    assert client.get("/shares/users/nobody/").status_code == 404
    client.force_login(users["admin"])
    html = client.get("/shares/users/alice/").content.decode()
    assert 'href="/jobs/?owner=alice&amp;status=activated">activated</a></td><td>1<' in html


def test_the_header_and_the_job_page_link_to_the_users_page(client, users, submit):
    job = submit("alice")
    client.force_login(users["alice"])
    html = client.get(f"/jobs/{job.pk}/").content.decode()
    assert 'id="who-page"' in html and 'href="/shares/users/alice/"' in html
