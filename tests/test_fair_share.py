"""Fair share end to end: priorities in the database, group changes with history, the usage
history, the correctors, the shares page and API."""

from datetime import timedelta

import pytest

from core import clock, gdpconfig
from core.cycles import run_cycle
from matcher.models import Job, TaskQueue
from matcher.services import groups
from matcher.taskqueue_priorities import recompute_priorities
from shares import services
from shares.models import CorrectionRecord, GridGroup, GroupChange, UsageSample, UsageTick


@pytest.fixture
def grid(submit, django_capture_on_commit_callbacks):
    """alice and bob (lhcb_user), erin (lhcb_mc), dave (lhcb_data) with waiting jobs."""
    with django_capture_on_commit_callbacks(execute=True):
        return {
            "a1": submit("alice", cpu_time=100, user_priority=3),
            "a2": submit("alice", cpu_time=100000, user_priority=1),
            "b1": submit("bob", cpu_time=100, user_priority=5),
            "e1": submit("erin", cpu_time=100, user_priority=2),
            "d1": submit("dave", cpu_time=100, user_priority=1),
        }


def prio(job):
    return TaskQueue.objects.get(pk=job.task_queue_id).priority


def test_a_new_taskqueue_gets_its_priority_from_the_shares_at_once(grid):
    assert prio(grid["a1"]) == pytest.approx(5000 * 3 / 4)
    assert prio(grid["a2"]) == pytest.approx(5000 * 1 / 4)
    assert prio(grid["b1"]) == pytest.approx(5000)
    assert prio(grid["e1"]) == pytest.approx(300)
    assert prio(grid["d1"]) == pytest.approx(40000)


def test_a_jobshare_change_is_recorded_recomputed_and_revertible(
    grid, api, users, django_capture_on_commit_callbacks
):
    mc = GridGroup.objects.get(name="lhcb_mc")
    with django_capture_on_commit_callbacks(execute=True):
        r = api(users["admin"]).patch(f"/api/v1/groups/{mc.pk}/", {"job_share": 600}, format="json")
    assert r.status_code == 200
    assert prio(grid["e1"]) == pytest.approx(600)
    change = GroupChange.objects.get(group=mc)
    assert (change.field, change.old, change.new, change.changed_by) == (
        "job_share",
        300.0,
        600.0,
        users["admin"],
    )
    r = api(users["alice"]).get(f"/api/v1/groups/{mc.pk}/changes/")
    assert r.data[0]["old"] == 300.0 and r.data[0]["new"] == 600.0
    with django_capture_on_commit_callbacks(execute=True):
        groups.revert_change(change, users["admin"])
    assert prio(grid["e1"]) == pytest.approx(300)
    assert GroupChange.objects.count() == 2


def test_a_negative_jobshare_is_refused_and_nothing_is_recorded(grid, api, users):
    mc = GridGroup.objects.get(name="lhcb_mc")
    r = api(users["admin"]).patch(f"/api/v1/groups/{mc.pk}/", {"job_share": -5}, format="json")
    assert r.status_code == 400 and "job_share" in r.data
    assert not GroupChange.objects.exists()
    with pytest.raises(services.ShareError):
        groups.update_group(mc, {"job_share": -1})


def test_consolidation_sum_weighs_by_jobs_and_avg_by_average_priority(grid, submit):
    submit("alice", cpu_time=100, user_priority=3)
    submit("alice", cpu_time=100, user_priority=3)  # a1's TaskQueue: 3 jobs, sum 9, avg 3
    recompute_priorities()
    assert prio(grid["a1"]) == pytest.approx(5000 * 9 / 10)
    gdpconfig.set_value("PRIORITY_CONSOLIDATION", "avg")
    recompute_priorities()
    assert prio(grid["a1"]) == pytest.approx(5000 * 3 / 4)
    assert prio(grid["a2"]) == pytest.approx(5000 * 1 / 4)


def _running(job_ids):
    Job.objects.filter(pk__in=job_ids).update(status="running")


def test_the_sampler_records_running_jobs_per_group_and_user(grid):
    _running([grid["a1"].pk, grid["b1"].pk, grid["d1"].pk])
    run = run_cycle("usage_sampling")
    assert run.status == "success" and run.counts["running"] == 3
    tick = UsageTick.objects.get()
    got = {
        (s.group.name, s.user.username if s.user else None): s.running for s in tick.samples.all()
    }
    assert got == {
        ("lhcb_user", "alice"): 1,
        ("lhcb_user", "bob"): 1,
        ("lhcb_user", None): 2,
        ("lhcb_data", "dave"): 1,
        ("lhcb_data", None): 1,
    }


def test_old_samples_are_thinned_to_hourly_averages(users):
    user = GridGroup.objects.get(name="lhcb_user")
    start = clock.now().replace(minute=0, second=0, microsecond=0) - timedelta(days=2)
    for minute in range(60):
        services.record_usage(
            [(user.pk, users["alice"].pk, 10 if minute < 30 else 20)],
            at=start + timedelta(minutes=minute),
        )
    assert UsageTick.objects.count() == 60
    services.thin_usage()
    tick = UsageTick.objects.get()
    assert tick.minutes == 60 and tick.at == start
    assert UsageSample.objects.get(tick=tick, user=None).running == pytest.approx(15)
    avg = services.average_usage(3 * 86400)
    assert avg[(user.pk, None)] == pytest.approx(15)


def test_samples_older_than_the_history_are_deleted(world):
    services.record_usage([], at=clock.now() - timedelta(days=30))
    services.thin_usage()
    assert not UsageTick.objects.exists()


def test_the_corrector_lowers_an_over_served_group_within_bounds(grid, users):
    gdpconfig.set_value("EnableSharesCorrection", True)
    user_g = GridGroup.objects.get(name="lhcb_user")
    mc = GridGroup.objects.get(name="lhcb_mc")
    data = GridGroup.objects.get(name="lhcb_data")
    now = clock.now()
    for minute in range(30):  # lhcb_mc ran as much as lhcb_data, with 0.6 % of the share
        services.record_usage(
            [
                (mc.pk, users["erin"].pk, 50),
                (data.pk, users["dave"].pk, 50),
                (user_g.pk, users["alice"].pk, 1),
            ],
            at=now - timedelta(minutes=minute),
        )
    run = run_cycle("priorities")
    assert run.status == "success" and run.counts["corrected_entities"] > 0
    factor = CorrectionRecord.objects.get(group=mc, user=None).factor
    assert 1 / 3 <= factor < 1
    assert factor == pytest.approx(0.8 * 0.5 + 0.2 * 0.2)  # both slices clamped, week and hour
    # bob did not run, alice did: between lhcb_user's users bob is boosted, alice held back.
    bob = CorrectionRecord.objects.get(group=user_g, user=users["bob"]).factor
    alice = CorrectionRecord.objects.get(group=user_g, user=users["alice"]).factor
    assert bob > 1 > alice
    assert prio(grid["e1"]) == pytest.approx(300 * factor)


def test_with_correction_off_no_factor_applies(grid, users):
    mc = GridGroup.objects.get(name="lhcb_mc")
    services.record_usage([(mc.pk, users["erin"].pk, 50)])
    run_cycle("priorities")
    assert not CorrectionRecord.objects.exists()
    assert prio(grid["e1"]) == pytest.approx(300)


def test_a_corrector_for_a_jobsharing_group_is_refused(api, users, world):
    config = {
        "mcInstance": {
            "Group": "lhcb_mc",
            "MaxGlobalCorrectionFactor": 3,
            "HourSlice": {"TimeSpan": 3600, "Weight": 1, "MaxCorrection": 2},
        }
    }
    r = api(users["admin"]).patch("/api/v1/config/WMSHistory/", {"value": config}, format="json")
    assert r.status_code == 400 and "JobSharing" in str(r.data["value"])
    config["mcInstance"]["Group"] = "nosuch"
    r = api(users["admin"]).patch("/api/v1/config/WMSHistory/", {"value": config}, format="json")
    assert r.status_code == 400 and "unknown group" in str(r.data["value"])


def test_the_shares_api_reports_expected_and_achieved_shares(grid, api, users):
    _running([grid["d1"].pk])
    run_cycle("usage_sampling")
    r = api(users["alice"]).get("/api/v1/shares/")
    assert r.status_code == 200
    rows = {g["group"]: g for g in r.data["groups"]}
    assert rows["lhcb_data"]["achieved"] == pytest.approx(1.0)
    assert rows["lhcb_user"]["expected"] == pytest.approx(10000 / 50300)
    assert [u["user"] for u in rows["lhcb_user"]["users"]] == ["alice", "bob"]
    assert r.data["wmshistory"]["GroupsInstance"]["MaxGlobalCorrectionFactor"] == 3


def test_the_shares_page_shows_groups_users_and_charts(grid, client, users):
    _running([grid["d1"].pk])
    run_cycle("usage_sampling")
    client.force_login(users["admin"])
    html = client.get("/shares/").content.decode()
    assert 'data-group="lhcb_mc"' in html and 'data-user="alice"' in html
    assert '<a href="/shares/users/alice/">alice</a>' in html  # staff open each user's page
    assert "plotly-graph-div" in html  # the expected-vs-achieved chart drew from the samples


def test_staff_edit_a_jobshare_on_the_shares_page(
    grid, client, users, django_capture_on_commit_callbacks
):
    mc = GridGroup.objects.get(name="lhcb_mc")
    client.force_login(users["admin"])
    page = client.get("/shares/").content.decode()
    # The page draws one form per group, its fields named with the group's prefix.
    assert f'name="g{mc.pk}-job_share"' in page and f'name="g{mc.pk}-comment"' in page
    with django_capture_on_commit_callbacks(execute=True):
        r = client.post(
            f"/shares/groups/{mc.pk}/",
            {
                f"g{mc.pk}-job_share": "450",
                f"g{mc.pk}-job_sharing": "on",
                f"g{mc.pk}-comment": "more MC",
            },
        )
    assert r.status_code == 302
    mc.refresh_from_db()
    assert mc.job_share == 450 and GroupChange.objects.get().comment == "more MC"
    assert prio(grid["e1"]) == pytest.approx(450)
    client.force_login(users["alice"])
    assert client.post(f"/shares/groups/{mc.pk}/", {"job_share": "1"}).status_code == 403


def test_emptying_share_correctors_to_start_removes_the_corrections(grid, users):
    gdpconfig.set_value("EnableSharesCorrection", True)
    data = GridGroup.objects.get(name="lhcb_data")
    services.record_usage([(data.pk, users["dave"].pk, 100)])
    run_cycle("priorities")
    assert prio(grid["d1"]) != pytest.approx(40000)
    gdpconfig.set_value("ShareCorrectorsToStart", [])
    run_cycle("priorities")
    assert prio(grid["d1"]) == pytest.approx(40000)
    recompute_priorities()  # as a TaskQueue appearing would: still no stale factor
    assert prio(grid["d1"]) == pytest.approx(40000)


@pytest.mark.django_db(transaction=True)
def test_a_failing_recompute_after_commit_neither_fails_nor_repeats_a_submission(
    users, monkeypatch
):
    from django.db import OperationalError

    import matcher.taskqueue_priorities

    def broken(*args, **kwargs):
        raise OperationalError("database is locked")

    monkeypatch.setattr(matcher.taskqueue_priorities, "recompute_priorities", broken)
    from api.matcher.serializers import JobSubmitSerializer, SubmissionContext
    from matcher import services

    s = JobSubmitSerializer(
        data={"cpu_time": 100}, context={"submission": SubmissionContext(users["alice"])}
    )
    s.is_valid(raise_exception=True)
    jobs = services.submit_jobs(users["alice"], [s.validated_data])
    assert len(jobs) == 1 and Job.objects.count() == 1
