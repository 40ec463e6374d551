"""What operators of DIRAC and BigPanDA rely on, on the pages: the jobs list's counts per state,
the header's quick search, the site mask page, a task's states over time and retry chains, and
/healthz's verdict on Home."""

import pytest
from django.db import transaction

from brokerage import lifecycle
from brokerage.models import TaskJob
from brokerage.services.submission import submit_task
from core import clock
from matcher import services
from matcher.models import ComputingElement, Job, Site, SiteMaskChange
from pilots.models import Pilot, PilotStatus
from shares.models import GridGroup
from web.brokerage import task_page
from web.matcher import facets
from web.matcher.facets import status_facets


@pytest.fixture
def jobs(world, users, submit):
    """alice: 3 jobs (one killed); bob: 2; erin: 2 in lhcb_mc, a JobSharing group carol is in."""
    made = {name: [submit(name, name=f"{name}-{i}") for i in range(n)]
            for name, n in (("alice", 3), ("bob", 2))}  # fmt: skip
    made["erin"] = [submit("erin", owner_group="lhcb_mc", name=f"erin-{i}") for i in range(2)]
    services.kill_job(made["alice"][0].pk, users["alice"])
    return made


def facets_of(client, query=""):
    response = client.get("/jobs/" + query)
    assert response.status_code == 200
    return {f.state or "all": (f.count, f.url, f.on) for f in response.context["facets"]}


def test_the_jobs_list_counts_each_state_and_each_count_filters_the_list(client, users, jobs):
    client.force_login(users["alice"])
    facets = facets_of(client)
    assert {k: v[0] for k, v in facets.items()} == {"all": 3, "activated": 2, "cancelled": 1}
    _count, url, on = facets["cancelled"]
    assert url == "?status=cancelled" and not on and facets["all"][2]
    page = client.get("/jobs/" + url)
    assert [j.pk for j in page.context["page"].rows] == [jobs["alice"][0].pk]
    assert facets_of(client, url)["cancelled"][2]  # the chosen state is marked


def test_the_counts_keep_the_other_filters_and_the_users_visibility(client, users, jobs):
    client.force_login(users["alice"])
    narrowed = facets_of(client, "?q=alice-2&ordering=-id&page=2")
    assert {k: v[0] for k, v in narrowed.items()} == {"all": 1, "activated": 1}
    assert narrowed["activated"][1] == "?q=alice-2&ordering=-id&status=activated"
    client.force_login(users["carol"])  # erin's lhcb_mc jobs (JobSharing), none of alice's
    assert facets_of(client)["all"][0] == 2
    client.force_login(users["admin"])
    assert facets_of(client)["all"][0] == 7


def test_bad_filters_give_no_counts_but_the_errors(rf, users, jobs):
    request = rf.get("/jobs/", {"task_queue": "x"})
    assert status_facets(request.GET, Job.objects.visible_to(users["alice"])) == ([], 0)


def test_over_the_scan_limit_the_counts_are_of_the_newest_jobs_and_say_so(
    client, users, jobs, monkeypatch
):
    monkeypatch.setattr(facets, "FACET_SCAN", 2)
    client.force_login(users["alice"])
    page = client.get("/jobs/?created_after=2000-01-01T00:00Z")  # a filter the rollup lacks
    counted = {f.state or "all": f.count for f in page.context["facets"]}
    assert counted == {"all": 2, "activated": 2}  # alice-1 and alice-2, not the killed alice-0
    assert b"counted over the newest 2 jobs" in page.content
    assert b'id="facets-scanned"' not in client.get("/jobs/?q=alice-2").content


def test_with_no_filter_but_owner_group_and_placement_the_counts_are_every_visible_jobs(
    client, users, jobs, monkeypatch
):
    monkeypatch.setattr(facets, "FACET_SCAN", 2)  # the rollup's counts are not a scan: no limit

    def counted(query=""):
        page = client.get("/jobs/" + query)
        assert b'id="facets-scanned"' not in page.content
        return {f.state or "all": f.count for f in page.context["facets"]}

    client.force_login(users["alice"])
    assert counted() == {"all": 3, "activated": 2, "cancelled": 1}
    assert counted("?owner=alice&ordering=name") == {"all": 3, "activated": 2, "cancelled": 1}
    assert counted("?owner=bob") == {"all": 0}  # bob's jobs are not hers to see
    assert counted("?placed=none&group=lhcb_user") == {"all": 3, "activated": 2, "cancelled": 1}
    assert counted("?owner=nobody") == {"all": 0}
    client.force_login(users["carol"])  # erin's lhcb_mc jobs (JobSharing), none of alice's
    assert counted() == {"all": 2, "activated": 2}
    assert counted("?group=lhcb_mc") == {"all": 2, "activated": 2}
    client.force_login(users["admin"])
    assert counted() == {"all": 7, "activated": 6, "cancelled": 1}
    assert counted("?owner=bob") == {"all": 2, "activated": 2}
    assert counted("?group=lhcb_mc&owner=erin") == {"all": 2, "activated": 2}
    # The counts follow a move at once, folded or not; and they equal the job table's.
    services.kill_job(jobs["bob"][0].pk, users["admin"])
    assert counted("?owner=bob") == {"all": 2, "activated": 1, "cancelled": 1}
    table = Job.objects.filter(owner__username="bob").values_list("status", flat=True)
    assert sorted(table) == ["activated", "cancelled"]


@pytest.fixture
def pilot(world, users):
    now = clock.now()
    return Pilot.objects.create(
        reference="https://ce503.cern.ch:9619/4242.0", task_queue_id=1, submit_pool="gLite",
        owner_dn=users["alice"].dn, owner_group="lhcb_user", site="LCG.CERN.ch", ce="ce503.cern.ch",
        status=PilotStatus.RUNNING, submitted=now, status_changed=now,
        credential_user=users["alice"],
    )  # fmt: skip


def test_the_quick_search_goes_straight_to_a_job_a_pilot_or_a_user(client, users, jobs, pilot):
    client.force_login(users["alice"])
    job = jobs["alice"][1]
    assert client.get("/search/", {"q": f" {job.pk} "}).url == f"/jobs/{job.pk}/"
    assert client.get("/search/", {"q": pilot.reference}).url == f"/pilots/{pilot.pk}/"
    assert client.get("/search/", {"q": "ALICE"}).url == "/shares/users/alice/"


def test_the_quick_search_finds_nothing_it_may_not_show_and_says_so(client, users, jobs):
    client.force_login(users["alice"])
    for text in (str(jobs["bob"][0].pk), "bob", "no-such-thing"):
        page = client.get("/search/", {"q": text})
        assert page.status_code == 200 and b'id="search-nothing"' in page.content, text
    assert client.get("/search/", {"q": "x" * 300}).status_code == 400


def test_a_reference_two_pilots_share_lists_both_to_choose_from(client, users, pilot):
    twin = Pilot.objects.get(pk=pilot.pk)
    twin.pk, twin.credential_user = None, users["pilot"]
    twin.save()
    client.force_login(users["admin"])
    page = client.get("/search/", {"q": pilot.reference})
    assert page.status_code == 200 and b"2 matches" in page.content
    assert [h[2] for h in page.context["hits"]] == [f"/pilots/{twin.pk}/", f"/pilots/{pilot.pk}/"]


def _mc():
    return GridGroup.objects.get(name="lhcb_mc")


def test_staff_ban_a_site_with_a_reason_after_confirming_and_see_it_in_the_history(
    client, users, world
):
    site = Site.objects.get(name="LCG.CERN.ch")
    form = {"target": f"site:{site.pk}", "action": "ban", "reason": "GGUS 1234"}
    client.force_login(users["alice"])
    assert client.post("/sites/mask/", form).status_code == 403
    assert client.get("/sites/mask/").status_code == 200  # the mask is for everyone to read
    client.force_login(users["admin"])
    asked = client.post("/sites/mask/", form)
    assert b'id="confirm"' in asked.content and b"Ban the site LCG.CERN.ch" in asked.content
    site.refresh_from_db()
    assert site.status == "active"
    done = client.post("/sites/mask/", {**form, "confirm": "yes"})
    assert done.status_code == 302
    site.refresh_from_db()
    assert site.status == "banned"
    page = client.get("/sites/mask/").content.decode()
    assert "GGUS 1234" in page and ">admin<" in page


def test_a_ban_without_a_reason_is_refused_naming_the_field(client, users, world):
    ce = ComputingElement.objects.first()
    client.force_login(users["admin"])
    page = client.post(
        "/sites/mask/", {"target": f"ce:{ce.pk}", "action": "ban", "reason": "", "confirm": "yes"}
    )
    assert page.status_code == 400 and "reason" in page.context["form"].errors
    allow = client.post(
        "/sites/mask/", {"target": f"ce:{ce.pk}", "action": "allow", "reason": "up"}
    )
    assert allow.status_code == 400 and "target" in allow.context["form"].errors
    assert not SiteMaskChange.objects.exists()


@pytest.fixture
def retried_task(world, users):
    """erin's task of 3 jobs: one killed, then retried twice (original → retry → retry)."""
    task = submit_task(users["erin"], {"name": "mc.simul", "owner_group": _mc(), "n_jobs": 3}, [])
    first = TaskJob.objects.filter(task=task).order_by("job_id").first().job_id
    services.kill_job(first, users["erin"])
    chain = [first]
    for _ in range(2):
        with transaction.atomic():
            chain.append(lifecycle.reassign([chain[-1]], 5, retried_by="erin")[chain[-1]][0])
    return task, chain


def test_a_task_page_shows_its_jobs_states_over_time_and_its_retry_chains(
    client, users, retried_task
):
    task, chain = retried_task
    series, cut = task_page.states_over_time(task.pk)
    assert not cut and series["defined"][1][-1] == 4 and series["cancelled"][1][-1] == 1
    chains, n = task_page.retry_chains(task.pk)
    assert n == 1 and [link.job_id for link in chains[0]] == chain
    assert [link.attempt for link in chains[0]] == [1, 2, 3]
    client.force_login(users["erin"])
    page = client.get(f"/brokerage/tasks/{task.pk}/").content.decode()
    assert 'id="task-states-chart"' in page
    assert f"job {chain[0]}</a>" in page and " → " in page


def test_a_retried_jobs_page_links_the_job_it_retries_and_its_own_retry(
    client, users, retried_task
):
    _task, chain = retried_task
    client.force_login(users["erin"])
    middle = client.get(f"/jobs/{chain[1]}/").content.decode()
    assert f'href="/jobs/{chain[0]}/" id="retry-of"' in middle
    assert f'href="/jobs/{chain[2]}/" id="retried-as"' in middle
    first = client.get(f"/jobs/{chain[0]}/").content.decode()
    assert 'id="retry-of"' not in first and f'href="/jobs/{chain[1]}/" id="retried-as"' in first


def test_home_shows_the_verdict_healthz_gives(client, users, world):
    client.force_login(users["alice"])
    healthz = client.get("/healthz")
    page = client.get("/").content.decode()
    assert 'id="health-verdict"' in page
    assert f"/healthz answers {healthz.status_code}" in page


def test_the_quick_search_refuses_a_nul_or_an_over_long_text_naming_q(client, users, world):
    client.force_login(users["alice"])
    nul = client.get("/search/", {"q": "alice\x00"})
    assert nul.status_code == 400 and "q: no NUL character." in nul.content.decode()
    long = client.get("/search/", {"q": "9" * 500})
    assert long.status_code == 400 and "q: at most" in long.content.decode()
