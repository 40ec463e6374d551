"""Pilots, their history, credentials and the director's decisions moved from matcher to pilots
(state only, the tables keep their names): a database migrated before the move keeps every row,
a job still points at the pilot that claimed it, and the models' content types and permissions
follow.

Each test migrates the test database back to before the move, writes through the historical
matcher models, migrates forward to the latest and reads through pilots.models; the database is
left at the latest migrations whatever happens.
"""

from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType

from matcher.models import Job
from pilots.models import Credential, DirectorDecision, Pilot, PilotStatusHistory
from shares.models import GridGroup, User
from simulation import demo
from tests._migrations import historical_apps, migrate

BEFORE_THE_MOVE = [("matcher", "0008_pilots_per_credential_and_job_pilot"), ("pilots", None)]
MOVED = {
    "pilot": Pilot,
    "pilotstatushistory": PilotStatusHistory,
    "credential": Credential,
    "directordecision": DirectorDecision,
}
AT = datetime(2026, 11, 23, 12, 34, 56, 789012, tzinfo=UTC)


@pytest.fixture
def before_the_move(transactional_db):
    """The historical apps of a database at matcher 0008 (the pilots still in matcher), holding
    the demo world written at the latest migrations (its pilots' credentials in today's table)."""
    demo.create_world()
    yield from historical_apps(BEFORE_THE_MOVE)


def _values(model, pk) -> dict:
    return {
        f.attname: getattr(model.objects.get(pk=pk), f.attname) for f in model._meta.concrete_fields
    }


def _write_before_the_move(apps, alice) -> dict[str, list[int]]:
    old = {name: apps.get_model("matcher", name) for name in MOVED}
    group = alice.grid_groups.first()
    credential = old["credential"].objects.create(
        dn="/CN=alice-renewed", group_id=group.pk, expires=AT + timedelta(days=30)
    )
    pilots = [
        old["pilot"].objects.create(
            reference=f"https://ce.example/{n}",
            task_queue_id=7 + n,
            owner_dn=alice.dn,
            owner_group=group.name,
            private=bool(n),
            broker="director",
            grid_type="Simulated",
            submit_pool="Simulated",
            requirements="[ Requirements = true; ]",
            site="LCG.CERN.ch",
            ce="ce1.cern.ch",
            status=status,
            submitted=AT,
            status_changed=AT + timedelta(minutes=n),
            next_event=None if n else AT + timedelta(hours=1),
            director_run=41,
            credential_user_id=alice.pk,
            jobs_done=n,
        )
        for n, status in enumerate(("Submitted", "Running"))
    ]
    history = old["pilotstatushistory"].objects.create(
        pilot_id=pilots[1].pk, at=AT, from_status="Scheduled", to_status="Running", reason="up"
    )
    decision = old["directordecision"].objects.create(
        cycle_run=41,
        at=AT,
        task_queue_id=7,
        priority=2.5,
        jobs=12,
        cpu_time=3600,
        lam=1.25,
        drawn=2,
        cap=5,
        waiting_pilots=1,
        submitted=2,
        submit_pool="Simulated",
        private=False,
        skipped="",
    )
    return {
        "pilot": [p.pk for p in pilots],
        "pilotstatushistory": [history.pk],
        "credential": [credential.pk],
        "directordecision": [decision.pk],
    }


def test_pilots_written_before_the_move_are_read_after_it_with_every_value_and_link_kept(
    before_the_move,
):
    alice = User.objects.get(username="alice")
    # Written through the historical model: today's job has columns added since.
    job = before_the_move.get_model("matcher", "job").objects.create(
        owner_id=alice.pk,
        owner_group_id=alice.grid_groups.first().pk,
        setup="Production",
        cpu_time=1000,
        status="finished",
        created=AT,
        status_changed=AT,
    )
    written = _write_before_the_move(before_the_move, alice)
    old_pilot = before_the_move.get_model("matcher", "pilot")
    before_the_move.get_model("matcher", "job").objects.filter(pk=job.pk).update(
        pilot_id=written["pilot"][1]
    )
    old_models = {name: before_the_move.get_model("matcher", name) for name in MOVED}
    expected = {
        name: [_values(old_models[name], pk) for pk in pks] for name, pks in written.items()
    }
    assert old_pilot._meta.db_table == "matcher_pilot"

    migrate(None)

    for name, model in MOVED.items():
        assert model._meta.db_table == f"pilots_{name}"  # renamed since (pilots 0003)
        now = [_values(model, pk) for pk in written[name]]
        # Every value written then, as it was; columns added since (a pilot's worker node) hold
        # their defaults.
        kept = [{k: row[k] for k in was} for row, was in zip(now, expected[name], strict=True)]
        assert kept == expected[name], name
    assert [(p.hostname, p.node) for p in Pilot.objects.filter(pk__in=written["pilot"])] == [
        ("", {}),
        ("", {}),
    ]
    claimed = Job.objects.get(pk=job.pk).pilot
    assert claimed.pk == written["pilot"][1] and claimed.status == "Running"
    assert list(claimed.history.values_list("to_status", flat=True)) == ["Running"]
    assert Credential.objects.get(pk=written["credential"][0]).group == alice.grid_groups.first()
    # The next pilot the director writes takes the next id, after the rows kept.
    new = Pilot.objects.create(
        reference="https://ce.example/next",
        task_queue_id=9,
        owner_dn=alice.dn,
        owner_group=GridGroup.objects.first().name,
        submit_pool="Simulated",
        status="Submitted",
        submitted=AT,
        status_changed=AT,
    )
    assert new.pk > max(written["pilot"])


def test_the_permissions_on_the_moved_models_follow_them_to_pilots(before_the_move):
    before = {}
    for name in MOVED:
        content_type = ContentType.objects.get(app_label="matcher", model=name)
        before[name] = (
            content_type.pk,
            set(Permission.objects.filter(content_type=content_type).values_list("pk", "codename")),
        )
        assert f"view_{name}" in {codename for _pk, codename in before[name][1]}

    migrate(None)

    for name, model in MOVED.items():
        assert not ContentType.objects.filter(app_label="matcher", model=name).exists()
        moved = ContentType.objects.get_for_model(model)
        assert (moved.pk, moved.app_label) == (before[name][0], "pilots")
        permissions = Permission.objects.filter(content_type=moved)
        assert set(permissions.values_list("pk", "codename")) == before[name][1]
