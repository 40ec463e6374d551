"""The site mask: staff ban a site or a CE with a reason and allow it again; the history keeps
who, when and why; the director sends a banned place no pilot and the brokerage places no job
there."""

import random

import pytest
from django.core.exceptions import ValidationError

from brokerage.models import BrokerageRun, Task
from brokerage.services.production import job_brokerage, task_brokerage
from brokerage.topology_import import import_topology
from core import gdpconfig
from core.cycles import run_cycle
from matcher import dispatcher, site_mask
from matcher.models import ComputingElement, Site, SiteMaskChange
from pilots.models import Pilot
from simulation import panda_demo

CERN = "LCG.CERN.ch"


def _ban(site, users, ce=None, reason="downtime GGUS 1234"):
    return site_mask.change_mask(
        "ban", site_id=site.pk, ce_id=ce.pk if ce else None, reason=reason, by=users["admin"]
    )


def test_banning_a_site_records_who_when_and_why_and_allowing_it_again_too(world, users):
    site = Site.objects.get(name=CERN)
    ban = _ban(site, users)
    site.refresh_from_db()
    assert site.status == "banned"
    assert (ban.action, ban.from_status, ban.by, ban.reason) == (
        "ban", "active", users["admin"], "downtime GGUS 1234"
    )  # fmt: skip
    site_mask.change_mask("allow", site_id=site.pk, ce_id=None, reason="back", by=users["admin"])
    site.refresh_from_db()
    assert site.status == "active"
    assert [c.action for c in SiteMaskChange.objects.filter(site=site)] == ["allow", "ban"]


def test_a_ban_without_a_reason_or_twice_is_refused_naming_the_field(world, users):
    site = Site.objects.get(name=CERN)
    with pytest.raises(ValidationError) as no_reason:
        _ban(site, users, reason="  ")
    assert "reason" in no_reason.value.message_dict
    _ban(site, users)
    with pytest.raises(ValidationError) as twice:
        _ban(site, users)
    assert "target" in twice.value.message_dict
    assert SiteMaskChange.objects.count() == 1


def test_the_director_sends_no_pilot_to_a_banned_site_or_ce(world, users, submit):
    gdpconfig.set_value("PrivatePilotFraction", 0.0)
    site = Site.objects.get(name=CERN)
    ces = list(site.computing_elements.all())
    assert len(ces) >= 2
    _ban(site, users, ce=ces[0])
    assert ces[0].name not in {ce.name for ce in dispatcher.active_ces()}
    _ban(site, users)
    assert CERN not in {ce.site.name for ce in dispatcher.active_ces()}
    for _ in range(4):
        submit("alice", cpu_time=100, sites=[CERN])
    run_cycle("director")
    assert not Pilot.objects.filter(site=CERN).exists()
    site_mask.change_mask("allow", site_id=site.pk, ce_id=None, reason="up", by=users["admin"])
    run_cycle("director")
    sent = set(Pilot.objects.filter(site=CERN).values_list("ce", flat=True))
    assert sent and ces[0].name not in sent  # the CE's own ban still holds


def test_the_brokerage_places_no_job_at_a_queue_of_a_banned_site(world, users, api):
    import_topology(panda_demo.topology())
    erin = api(users["erin"])
    body = {"name": "t", "owner_group": "lhcb_mc", "n_jobs": 3, "n_events_per_job": 100}
    task = Task.objects.get(pk=erin.post("/api/v1/tasks/", body, format="json").data["id"])
    _ban(Site.objects.get(name=CERN), users)
    task_brokerage(rng=random.Random(1))
    job_brokerage(rng=random.Random(1))
    run = BrokerageRun.objects.filter(task=task, kind="job").first()
    assert run is not None
    removed = {c["name"]: c.get("removed_by") for c in run.candidates}
    cern_queues = [n for n in removed if n.startswith("CERN")]
    assert cern_queues and all(removed[n] == "site_mask" for n in cern_queues)
    assert not any(n.startswith("CERN") for n in run.chosen)


def test_a_ce_ban_is_undone_only_by_allow_and_a_draining_ce_stays_draining(world, users):
    ce = ComputingElement.objects.filter(site__name=CERN).first()
    ComputingElement.objects.filter(pk=ce.pk).update(status="draining")
    with pytest.raises(ValidationError) as not_banned:
        site_mask.change_mask("allow", site_id=ce.site_id, ce_id=ce.pk, reason="x", by=None)
    assert "target" in not_banned.value.message_dict
    _ban(ce.site, users, ce=ce)
    ce.refresh_from_db()
    assert ce.status == "banned"
    assert SiteMaskChange.objects.get().from_status == "draining"


def test_a_pilot_already_at_a_banned_site_or_ce_gets_no_job_until_it_is_allowed(
    world, users, submit, api
):
    site = Site.objects.get(name=CERN)
    ce = site.computing_elements.order_by("name").first()
    submit("alice", cpu_time=100)
    pilot = api(users["pilot"])
    resource = {"site": CERN, "grid_ce": ce.name, "cpu_time": 86400}
    _ban(site, users, ce=ce)
    assert pilot.post("/api/v1/match/", resource, format="json").status_code == 204
    site_mask.change_mask("allow", site_id=site.pk, ce_id=ce.pk, reason="up", by=users["admin"])
    _ban(site, users)
    assert pilot.post("/api/v1/match/", resource, format="json").status_code == 204
    site_mask.change_mask("allow", site_id=site.pk, ce_id=None, reason="up", by=users["admin"])
    assert pilot.post("/api/v1/match/", resource, format="json").status_code == 200
