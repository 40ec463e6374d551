"""Fixtures shared by every app's tests: the demo world, its users, API clients."""

import os

import pytest
from django.conf import settings as django_settings
from django.test import override_settings
from rest_framework.test import APIClient

from core import clock, gdpconfig

# The suite's cache lifetimes and background work, set as a site would set them: every process
# sees its own and the others' changes at once, and housekeeping runs in the caller's thread, so
# that a test reads straight. Tests marked `production_lifetimes` run with the production values
# (the settings' defaults), which they prove as bounds. Servers a test starts get the same values
# through the environment (suite_environment).
SUITE_SETTINGS = {
    "TASKQUEUE_VIEW_REFRESH_SECONDS": 0.0,
    "GDPCONFIG_REFRESH_SECONDS": 0.0,
    "API_TOKEN_CACHE_SECONDS": 0.0,
    "TOPOLOGY_CACHE_SECONDS": 0.0,
    "HOUSEKEEPING_IN_BACKGROUND": False,
}
# Production's values are the settings' defaults, not what this process read: a worker process
# of the suite inherits SUITE_SETTINGS in its environment.
PRODUCTION_SETTINGS = {name: django_settings.LIFETIME_DEFAULTS[name] for name in SUITE_SETTINGS}


def suite_environment() -> dict[str, str]:
    """SUITE_SETTINGS as the environment variables the settings read (for servers and hosts a
    test starts in other processes)."""
    return {k: str(int(v)) if isinstance(v, bool) else str(v) for k, v in SUITE_SETTINGS.items()}


# Processes a test starts (servers, spawned workers) read their settings from the environment.
os.environ.update(suite_environment())


@pytest.fixture(scope="session", autouse=True)
def _suite_settings_everywhere():
    """For the whole session: module-scoped fixtures (a shared world) read them too."""
    with override_settings(**SUITE_SETTINGS):
        yield


@pytest.fixture(autouse=True)
def _suite_settings(request, _suite_settings_everywhere):
    if request.node.get_closest_marker("production_lifetimes") is not None:
        settings = request.getfixturevalue("settings")
        for name, value in PRODUCTION_SETTINGS.items():
            setattr(settings, name, value)


@pytest.fixture(autouse=True)
def _fresh_process_state(_suite_settings):
    """Each test starts with no cached parameter values and the real clock."""
    from matcher import dispatcher, topology
    from pilots import registry as pilot_registry

    gdpconfig.invalidate()
    dispatcher.invalidate_cache()
    pilot_registry.forget_all()
    topology.invalidate()
    clock.reset()
    yield
    gdpconfig.invalidate()
    clock.reset()
    # A test that ran housekeeping in the background ends with its thread and connection.
    from matcher.services.housekeeping import housekeeper

    housekeeper.stop()


@pytest.fixture
def world(db):
    from simulation import demo

    return demo.create_world()


@pytest.fixture
def users(world):
    from shares.models import User

    return {u.username: u for u in User.objects.all()}


@pytest.fixture
def panda(world):
    """The demo world with PanDA's demo topology and global shares, for task brokerage."""
    from brokerage.models import GlobalShare
    from brokerage.topology_import import import_topology
    from simulation import panda_demo as demo

    import_topology(demo.topology())
    for name, target in demo.GLOBAL_SHARES:
        GlobalShare.objects.create(name=name, target_pct=target)


@pytest.fixture
def api():
    """api(user) -> an APIClient authenticated as that user (None: anonymous)."""

    def make(user=None):
        client = APIClient()
        if user is not None:
            client.force_authenticate(user)
        return client

    return make


@pytest.fixture
def submit(users):
    """submit(username, **fields) -> the stored Job, through the service layer."""
    from api.matcher.serializers import JobSubmitSerializer, SubmissionContext
    from matcher import services

    def make(username="alice", **fields):
        user = users[username]
        fields.setdefault("cpu_time", 1000)
        s = JobSubmitSerializer(data=fields, context={"submission": SubmissionContext(user)})
        s.is_valid(raise_exception=True)
        [job] = services.submit_jobs(user, [s.validated_data])
        return job

    return make
