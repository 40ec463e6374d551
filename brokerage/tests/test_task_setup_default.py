"""A task's Setup has one source, the DefaultSetup parameter: a task saved without one (a
bench, a script, the admin) gets the grid's Setup, not a model default of its own."""

from brokerage.models import Task
from core import clock, gdpconfig


def make_task(users) -> Task:
    now = clock.now()
    return Task.objects.create(
        name="t",
        owner=users["erin"],
        owner_group=users["erin"].grid_groups.get(),
        status="ready",
        created=now,
        modified=now,
    )


def test_a_task_saved_without_a_setup_gets_the_grids_setup(users):
    task = make_task(users)
    task.refresh_from_db()
    assert task.setup == gdpconfig.get("DefaultSetup") == "LHCb-Production"


def test_a_task_saved_without_a_setup_follows_a_change_of_default_setup(users):
    gdpconfig.set_value("DefaultSetup", "LHCb-Certification")
    assert make_task(users).setup == "LHCb-Certification"


def test_an_unsaved_task_names_no_setup_of_its_own():
    # Blank means the DefaultSetup parameter; building a Task reads no database.
    assert Task(name="probe").setup == ""
