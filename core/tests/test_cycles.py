from datetime import timedelta

import pytest

from core import clock, cycles
from core.models import CycleRun


@pytest.fixture
def registered():
    calls = []

    @cycles.cycle("test_ok")
    def ok():
        calls.append(1)
        return {"done": len(calls)}

    @cycles.cycle("test_boom")
    def boom():
        raise RuntimeError("broken site description")

    yield calls
    cycles.CYCLES.pop("test_ok")
    cycles.CYCLES.pop("test_boom")


def test_a_cycle_run_is_recorded_with_its_counts(db, registered):
    run = cycles.run_cycle("test_ok")
    assert run.status == "success" and run.counts == {"done": 1}
    assert run.finished is not None and run.duration_s >= 0


def test_a_cycle_lasts_real_seconds_however_fast_the_simulated_clock_runs(
    db, registered, monkeypatch
):
    """4.5 real seconds at 60x are 270 simulated ones: the duration shown is the real one."""
    real = [1000.0]
    monkeypatch.setattr(cycles.time, "monotonic", lambda: real[0])

    @cycles.cycle("test_slow")
    def slow():
        real[0] += 4.5
        clock.advance(270)
        return {}

    try:
        run = cycles.run_cycle("test_slow")
    finally:
        cycles.CYCLES.pop("test_slow")
    run.refresh_from_db()
    assert (run.finished - run.started).total_seconds() == pytest.approx(270, abs=1)
    assert run.duration_s == pytest.approx(4.5)


def test_a_failing_cycle_is_recorded_as_failed_with_its_error(db, registered):
    run = cycles.run_cycle("test_boom")
    assert run.status == "failed"
    assert "broken site description" in run.error


def test_a_fresh_running_row_whose_advisory_lock_nobody_holds_is_recognised_dead(db, registered):
    other = CycleRun.objects.create(kind="test_ok", started=clock.now())
    run = cycles.run_cycle("test_ok")
    other.refresh_from_db()
    # Nobody holds the advisory lock, so the row's process is gone.
    assert (run.status, other.status, registered) == ("success", "abandoned", [1])


def test_a_run_left_running_by_a_dead_process_is_abandoned_and_the_next_run_proceeds(
    db, registered
):
    dead = CycleRun.objects.create(kind="test_ok", started=clock.now() - timedelta(hours=2))
    run = cycles.run_cycle("test_ok")
    assert run.status == "success" and registered == [1]
    dead.refresh_from_db()
    assert dead.status == "abandoned"


def test_at_most_one_run_of_a_kind_can_be_running(db):
    from django.db import IntegrityError, transaction

    CycleRun.objects.create(kind="k", started=clock.now())
    with pytest.raises(IntegrityError), transaction.atomic():
        CycleRun.objects.create(kind="k", started=clock.now())


def test_the_run_cycle_command_lists_and_runs_cycles(db, capsys):
    from django.core.management import call_command

    call_command("run_cycle")
    assert "taskqueue_cleanup" in capsys.readouterr().out
    call_command("run_cycle", "taskqueue_cleanup")
    assert CycleRun.objects.get(kind="taskqueue_cleanup").status == "success"


def test_setup_schedules_is_idempotent(db):
    from django.core.management import call_command
    from django_q.models import Schedule

    call_command("setup_schedules")
    call_command("setup_schedules")
    assert Schedule.objects.filter(name="cycle:taskqueue_cleanup").count() == 1


def test_a_host_starting_again_keeps_each_schedules_next_run_and_updates_its_interval(db):
    """Every host runs setup_schedules when it starts (manage.py deploy): a restart must not
    make every cycle come due at once."""
    from django.core.management import call_command
    from django_q.models import Schedule

    call_command("setup_schedules")
    first = Schedule.objects.get(name="cycle:priorities")
    Schedule.objects.filter(pk=first.pk).update(minutes=7)
    clock.advance(45)
    call_command("setup_schedules")
    again = Schedule.objects.get(name="cycle:priorities")
    assert again.next_run == first.next_run
    assert again.minutes == 2


def test_new_schedules_come_due_on_the_wall_clock_even_with_the_simulated_clock_hours_ahead(db):
    from django.core.management import call_command
    from django.utils import timezone
    from django_q.models import Schedule

    clock.advance(6 * 3600)  # the simulated clock runs ahead of the wall clock
    assert (clock.now() - timezone.now()).total_seconds() > 5 * 3600
    call_command("setup_schedules")
    next_run = Schedule.objects.get(name="cycle:priorities").next_run
    assert abs((next_run - timezone.now()).total_seconds()) < 60


def test_a_cycle_run_records_the_host_and_process_that_ran_it_and_the_cycles_page_shows_it(
    db, registered, settings, client, django_user_model
):
    import os

    settings.NODE_NAME = "worker-7"
    run = cycles.run_cycle("test_ok")
    assert run.host == f"worker-7/{os.getpid()}"
    client.force_login(django_user_model.objects.create(username="op", is_staff=True))
    assert f"worker-7/{os.getpid()}" in client.get("/config/cycles/").content.decode()
