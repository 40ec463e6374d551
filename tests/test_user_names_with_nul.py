"""A user's name holding a NUL character (which no name can hold: PostgreSQL text cannot) is a
user that does not exist, answered 404 by the pages that look a user up by name, never a 500
from the database refusing the lookup."""

import pytest
from django.test import Client

from shares.models import User


@pytest.fixture
def staff_client(db):
    client = Client(raise_request_exception=False)
    client.force_login(User.objects.create_user("ops", password="x", is_staff=True))
    return client


def test_a_user_page_named_with_a_nul_is_not_found(staff_client):
    response = staff_client.get("/shares/users/al%00ice/")
    assert response.status_code == 404


def test_the_analysis_standing_of_a_user_named_with_a_nul_is_not_found(staff_client):
    response = staff_client.get("/brokerage/analysis/?user=al%00ice")
    assert response.status_code == 404
