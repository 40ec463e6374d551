"""Fixtures shared by every app's tests: the demo world, its users, API clients."""

import pytest
from rest_framework.test import APIClient

from config import clock, gdpconfig


@pytest.fixture(autouse=True)
def _fresh_process_state():
    """Each test starts with no cached parameter values and the real clock."""
    from matcher import dispatcher, topology
    from pilots import registry as pilot_registry

    gdpconfig.invalidate()
    dispatcher.invalidate_cache()
    pilot_registry.forget_all()
    topology._snapshot["at"] = None
    topology._groups.clear()
    clock.reset()
    yield
    gdpconfig.invalidate()
    clock.reset()


@pytest.fixture
def world(db):
    from matcher import demo

    return demo.create_world()


@pytest.fixture
def users(world):
    from shares.models import User

    return {u.username: u for u in User.objects.all()}


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
    from matcher import services
    from matcher.api.serializers import JobSubmitSerializer, SubmissionContext

    def make(username="alice", **fields):
        user = users[username]
        fields.setdefault("cpu_time", 1000)
        s = JobSubmitSerializer(data=fields, context={"submission": SubmissionContext(user)})
        s.is_valid(raise_exception=True)
        [job] = services.submit_jobs(user, [s.validated_data])
        return job

    return make
