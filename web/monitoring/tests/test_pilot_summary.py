from datetime import timedelta

from core import clock
from pilots.models import Pilot
from web.monitoring import pilot_summary


def _pilot(user, site, ce, status, jobs=0):
    now = clock.now() - timedelta(minutes=5)
    return Pilot.objects.create(
        reference=f"{user.username}-{Pilot.objects.count()}",
        task_queue_id=1,
        owner_dn=user.dn,
        owner_group="lhcb_user",
        submit_pool="gLite",
        site=site,
        ce=ce,
        status=status,
        submitted=now,
        status_changed=now,
        credential_user=user,
        jobs_done=jobs,
    )


def _world(users):
    alice = users["alice"]
    _pilot(alice, "LCG.CERN.ch", "ce503.cern.ch", "Done", jobs=2)
    _pilot(alice, "LCG.CERN.ch", "ce503.cern.ch", "Done")
    _pilot(alice, "LCG.CERN.ch", "ce503.cern.ch", "Failed")
    _pilot(alice, "LCG.CERN.ch", "ce503.cern.ch", "Running", jobs=1)
    _pilot(alice, "LCG.CERN.ch", "ce504.cern.ch", "Submitted")
    _pilot(alice, "LCG.PIC.es", "ce07.pic.es", "Aborted")
    _pilot(users["bob"], "LCG.CERN.ch", "ce503.cern.ch", "Done", jobs=5)


def _counts(row):
    return {s: c.count for s, c in zip(pilot_summary.STATES, row.cells, strict=True) if c.count}


def test_pilots_are_counted_per_site_ce_and_state_with_jobs_per_pilot_and_efficiency(users):
    _world(users)
    found = pilot_summary.summary(users["alice"])

    [cern, pic] = found.sites
    assert cern.site == "LCG.CERN.ch" and [c.ce for c in cern.ces] == [
        "ce503.cern.ch",
        "ce504.cern.ch",
    ]
    ce503 = cern.ces[0]
    assert _counts(ce503) == {"Running": 1, "Done": 2, "Failed": 1}
    assert (ce503.total.count, ce503.jobs, ce503.ended, ce503.ended_with_job) == (4, 3, 3, 1)
    assert ce503.pilots_per_job == 4 / 3
    assert ce503.efficiency == 1 / 3
    assert _counts(cern) == {"Submitted": 1, "Running": 1, "Done": 2, "Failed": 1}
    assert cern.efficiency == 1 / 3 and cern.pilots_per_job == 5 / 3
    assert _counts(pic) == {"Aborted": 1} and pic.efficiency == 0.0
    assert pic.pilots_per_job is None  # ran no job
    assert found.total.total.count == 6 and found.total.ended == 4


def test_each_number_links_to_the_pilots_list_filtered_by_site_ce_and_status(users):
    _world(users)
    found = pilot_summary.summary(users["alice"])
    ce503 = found.sites[0].ces[0]
    done = ce503.cells[pilot_summary.STATES.index("Done")]
    assert done.url == "/pilots/?site=LCG.CERN.ch&ce=ce503.cern.ch&status=Done"
    assert found.sites[0].total.url == "/pilots/?site=LCG.CERN.ch"


def test_another_users_pilots_are_never_counted_for_a_non_staff_user(users):
    _world(users)
    alice = pilot_summary.summary(users["alice"])
    bob = pilot_summary.summary(users["bob"])
    staff = pilot_summary.summary(users["admin"])

    assert alice.total.total.count == 6 and alice.total.jobs == 3
    assert bob.total.total.count == 1 and bob.total.jobs == 5
    assert staff.total.total.count == 7 and staff.total.jobs == 8


def test_the_page_and_the_api_show_the_same_numbers(users, page, api):
    _world(users)
    body = api(users["alice"]).get("/api/v1/monitoring/pilot-summary/").json()
    html = page(users["alice"], "/monitoring/pilots/")

    assert html.status_code == 200
    found = html.context["summary"]
    assert body["total"]["total"] == found.total.total.count == 6
    [cern, _pic] = body["sites"]
    assert cern["ces"][0]["counts"]["Done"] == 2 and cern["ces"][0]["efficiency"] == 1 / 3
    assert body["states"] == pilot_summary.STATES
    link = b'href="/pilots/?site=LCG.CERN.ch&amp;ce=ce503.cern.ch&amp;status=Done">2</a>'
    assert link in html.content
