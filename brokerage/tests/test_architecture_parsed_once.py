"""A task's architecture is parsed once, when it is submitted, and stored on the Task: the job
checks and the pages read the stored form, never the text; a bad architecture is still a 400
naming the field; a database created before this keeps working (the migration fills the
tasks stored without a parsed form)."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from brokerage import analysis, architecture, production
from brokerage.models import GlobalShare, Task
from brokerage.tests.factories import context, queue, task
from brokerage.topology_import import import_topology
from core import clock
from shares.models import GridGroup, User
from simulation import panda_demo as demo

URL = "/api/v1/tasks/"
GPU = "#&nvidia:model=.*A100.*:vram>=40960"
NO_GPU = {"architectures": [{"type": "cpu", "arch": ["x86_64"], "vendor": ["any"]}]}


@pytest.fixture
def panda(world):
    import_topology(demo.topology())
    for name, target in demo.GLOBAL_SHARES:
        GlobalShare.objects.create(name=name, target_pct=target)


@pytest.fixture
def parses(monkeypatch):
    """Every call of architecture.parse, by its text."""
    calls = []
    real = architecture.parse

    def counting(text):
        calls.append(text)
        return real(text)

    monkeypatch.setattr(architecture, "parse", counting)
    return calls


def test_a_submitted_architecture_is_parsed_once_and_stored(panda, api, users, parses):
    body = {"name": "gpu.t", "owner_group": "lhcb_mc", "n_jobs": 2, "architecture": GPU}
    r = api(users["erin"]).post(URL, body, format="json")
    assert r.status_code == 201, r.content
    assert parses == [GPU]
    stored = Task.objects.get(pk=r.data["id"]).architecture_spec
    assert stored == architecture.parse(GPU) and stored["gpu_spec"]["vendor"] == "nvidia"
    assert r.data["architecture_spec"] == stored


def test_a_task_without_an_architecture_stores_the_empty_one(panda, api, users, parses):
    r = api(users["erin"]).post(URL, {"name": "t", "owner_group": "lhcb_mc"}, format="json")
    assert r.status_code == 201, r.content
    assert Task.objects.get(pk=r.data["id"]).architecture_spec == architecture.empty()
    assert Task().architecture_spec == architecture.empty()  # the model's default
    assert parses == []


def test_a_bad_architecture_is_still_a_400_naming_the_field(panda, api, users):
    body = {"name": "t", "owner_group": "lhcb_mc", "architecture": "#&nvidia:vram>>40"}
    r = api(users["erin"]).post(URL, body, format="json")
    assert r.status_code == 400 and "architecture" in r.data, r.data
    assert "not a version number" in str(r.data["architecture"])
    assert not Task.objects.exists()


def test_a_client_cannot_give_the_parsed_form_itself(panda, api, users):
    body = {"name": "t", "owner_group": "lhcb_mc", "architecture_spec": {"gpu_spec": None}}
    r = api(users["erin"]).post(URL, body, format="json")
    assert r.status_code == 400 and "architecture_spec" in r.data, r.data


def test_the_brokers_read_the_stored_form_and_never_parse(monkeypatch):
    from brokerage.tests.test_analysis_brokerage import actx

    def refuse(text):
        raise AssertionError(f"parsed {text!r} again")

    monkeypatch.setattr(architecture, "parse", refuse)
    # The text asks for nothing; the stored form asks for a GPU, which the queue has not.
    spec = architecture.empty()
    spec["gpu_spec"] = {"vendor": "nvidia"}
    t = task(architecture="", architecture_spec=spec)
    [c] = production.broker_jobs(t, [queue(software=NO_GPU)], context()).candidates
    assert c.removed_by == "software" and "GPU" in str(c.values)
    q = queue("ANALY_Q", software=NO_GPU, queue_type="analysis")
    decision, persistent, _ = analysis.broker_analysis(t, [q], actx(), False)
    assert persistent and decision.candidates[0].removed_by == "software"


# --- a database created before the architecture was stored for every task ----------------------

BEFORE = [("brokerage", "0009_timeoutaction_moved_to_timeouts")]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    if targets is None:
        targets = executor.loader.graph.leaf_nodes()
    return executor.migrate(targets)


@pytest.fixture
def before_the_change(transactional_db):
    try:
        yield _migrate(BEFORE).apps
    finally:
        _migrate(None)


def test_the_migration_parses_the_tasks_stored_without_a_parsed_form(before_the_change):
    from simulation import demo as matcher_demo

    matcher_demo.create_world()
    owner = User.objects.get(username="erin")
    group = GridGroup.objects.get(name="lhcb_mc")
    old = before_the_change.get_model("brokerage", "Task")
    common = {"owner_id": owner.pk, "owner_group_id": group.pk, "setup": "Production"}
    now = clock.now()
    bulk = old.objects.create(
        name="bulk", status="ready", created=now, modified=now, architecture=GPU, **common
    )
    plain = old.objects.create(name="plain", status="ready", created=now, modified=now, **common)
    kept = {"sw_platform": "x", "base_platform": "", "cpu_specs": [], "gpu_spec": None}
    submitted = old.objects.create(
        name="submitted",
        status="ready",
        created=now,
        modified=now,
        architecture="x86_64-el9-gcc13-opt",
        architecture_spec=kept,
        **common,
    )
    assert old.objects.get(pk=bulk.pk).architecture_spec == {}

    _migrate(None)

    assert Task.objects.get(pk=bulk.pk).architecture_spec == architecture.parse(GPU)
    assert Task.objects.get(pk=plain.pk).architecture_spec == architecture.empty()
    assert Task.objects.get(pk=submitted.pk).architecture_spec == kept  # left as stored
