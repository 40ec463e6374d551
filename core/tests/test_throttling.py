"""Failed logins are throttled by account and by address, on the token endpoint and the login
page alike (429 with Retry-After), and the API's per-user rate is the operator's to set."""

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from core.models import ThrottleWindow

TOKEN = "/api/v1/auth/token/"
PASSWORD = "right-password-1"
CERN = {"site": "LCG.CERN.ch", "grid_ce": "ce503.cern.ch", "cpu_time": 86400}


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", password=PASSWORD)


def token_attempt(password, username="alice", address="10.1.2.3"):
    return APIClient(REMOTE_ADDR=address).post(
        TOKEN, {"username": username, "password": password}, format="json"
    )


def end_the_windows():
    ThrottleWindow.objects.update(started="2000-01-01T00:00:00Z")


def test_a_wrong_password_on_the_token_endpoint_answers_401_with_a_detail(alice):
    r = token_attempt("wrong")
    assert r.status_code == 401
    assert "user name and password" in r.json()["detail"]
    assert r["WWW-Authenticate"] == "Token"
    assert token_attempt(PASSWORD).json()["token"] == Token.objects.get(user=alice).key


def test_a_token_request_without_a_password_answers_400_naming_the_field(alice):
    r = APIClient().post(TOKEN, {"username": "alice"}, format="json")
    assert r.status_code == 400
    assert list(r.json()) == ["password"]


def test_thirty_wrong_passwords_on_the_token_endpoint_end_in_429_with_retry_after(alice):
    statuses = [token_attempt(f"guess-{i}").status_code for i in range(30)]
    assert statuses[:10] == [401] * 10  # AuthFailuresPerAccount, 10 by default
    assert statuses[10:] == [429] * 20
    refused = token_attempt(PASSWORD)  # the right password too: a refusal tells nothing
    assert refused.status_code == 429
    assert 800 < int(refused["Retry-After"]) <= 900  # AuthFailureWindowSeconds, 900
    assert "Too many failed logins" in refused.json()["detail"]
    # From another address too: the account is what is being guessed.
    assert token_attempt(PASSWORD, address="10.9.9.9").status_code == 429
    end_the_windows()
    assert token_attempt(PASSWORD).status_code == 200


def test_a_successful_login_clears_the_accounts_failures(alice):
    assert {token_attempt(f"typo-{i}").status_code for i in range(9)} == {401}
    assert token_attempt(PASSWORD).status_code == 200
    assert {token_attempt(f"typo-{i}").status_code for i in range(10)} == {401}
    assert token_attempt("one-too-many").status_code == 429


def test_one_address_trying_many_user_names_is_refused_with_429(alice):
    statuses = [token_attempt("x", username=f"user{i}").status_code for i in range(55)]
    assert statuses[:50] == [401] * 50  # AuthFailuresPerAddress, 50 by default
    assert set(statuses[50:]) == {429}
    assert token_attempt(PASSWORD).status_code == 429  # from that address, any account
    assert token_attempt(PASSWORD, address="10.7.7.7").status_code == 200


def test_an_operator_may_turn_the_account_limit_off(alice):
    from core import gdpconfig

    gdpconfig.set_value("AuthFailuresPerAccount", 0)
    assert {token_attempt(f"guess-{i}").status_code for i in range(15)} == {401}


def test_thirty_wrong_passwords_on_the_login_page_end_in_429_with_a_clear_message(alice):
    browser = Client(REMOTE_ADDR="10.1.2.3")
    answers = [
        browser.post("/login/", {"username": "alice", "password": f"guess-{i}"}) for i in range(30)
    ]
    assert [r.status_code for r in answers[:10]] == [200] * 10
    assert "did not match" in answers[0].content.decode()
    refused = answers[-1]
    assert refused.status_code == 429
    assert 800 < int(refused["Retry-After"]) <= 900
    page = refused.content.decode()
    assert "Too many failed logins for this user name or from this address" in page
    assert "try again in 15 minutes" in page
    r = browser.post("/login/", {"username": "alice", "password": PASSWORD})
    assert r.status_code == 429 and "_auth_user_id" not in browser.session
    end_the_windows()
    r = browser.post("/login/", {"username": "alice", "password": PASSWORD})
    assert r.status_code == 302 and browser.session["_auth_user_id"] == str(alice.pk)


def test_the_token_endpoint_and_the_login_page_count_failures_together(alice):
    browser = Client(REMOTE_ADDR="10.1.2.3")
    for i in range(10):
        browser.post("/login/", {"username": "alice", "password": f"guess-{i}"})
    assert token_attempt(PASSWORD).status_code == 429


def test_the_admin_login_refuses_a_guessed_account_too(alice):
    browser = Client(REMOTE_ADDR="10.1.2.3")
    for i in range(10):
        token_attempt(f"guess-{i}")
    r = browser.post("/admin/login/", {"username": "alice", "password": PASSWORD})
    assert "Too many failed logins" in r.content.decode()
    assert "_auth_user_id" not in browser.session


# --- the API's per-user rate -------------------------------------------------------------------


def token_client(user):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def test_the_operator_setting_ApiUserRatePerMinute_decides_when_a_users_calls_answer_429(
    django_user_model,
):
    admin = django_user_model.objects.create_superuser("root", password=PASSWORD)
    alice = django_user_model.objects.create_user("alice", password=PASSWORD)
    bob = django_user_model.objects.create_user("bob", password=PASSWORD)
    operator, client = token_client(admin), token_client(alice)
    assert {client.get("/api/v1/config/").status_code for _ in range(8)} == {200}  # 1200/min

    r = operator.patch("/api/v1/config/ApiUserRatePerMinute/", {"value": 10}, format="json")
    assert r.status_code == 200 and r.json()["value"] == 10
    # alice's window holds her 8 calls: two more, then 429 until the minute is over.
    assert [client.get("/api/v1/config/").status_code for _ in range(3)] == [200, 200, 429]
    refused = client.get("/api/v1/config/")
    assert refused.status_code == 429 and 1 <= int(refused["Retry-After"]) <= 60
    assert token_client(bob).get("/api/v1/config/").status_code == 200  # per user

    operator.patch("/api/v1/config/ApiUserRatePerMinute/", {"value": 100}, format="json")
    assert client.get("/api/v1/config/").status_code == 200


def test_a_pilots_matches_and_heartbeats_are_not_counted_against_the_user_rate(
    world, users, submit
):
    from core import gdpconfig

    gdpconfig.set_value("ApiUserRatePerMinute", 2)
    submit("alice", cpu_time=100, sites=["LCG.CERN.ch"])
    pilot = token_client(users["pilot"])
    answers = [
        pilot.post("/api/v1/match/", {**CERN, "pilot_reference": f"p-{i}"}, format="json")
        for i in range(4)
    ]
    assert answers[0].status_code == 200 and {r.status_code for r in answers[1:]} <= {200, 204}
    job = answers[0].json()["id"]
    beats = [
        pilot.post(f"/api/v1/jobs/{job}/heartbeat/", {"pilot_reference": "p-0"}, format="json")
        for _ in range(4)
    ]
    assert {r.status_code for r in beats} == {204}
    # The same credential browsing the API is a user like any other.
    assert [pilot.get("/api/v1/jobs/").status_code for _ in range(3)] == [200, 200, 429]


def test_an_anonymous_api_call_is_told_to_authenticate_not_throttled(db):
    from core import gdpconfig

    gdpconfig.set_value("ApiUserRatePerMinute", 1)
    assert {APIClient().get("/api/v1/jobs/").status_code for _ in range(3)} == {401}


def test_counting_a_window_that_is_over_starts_a_new_one(alice):
    from core import throttling

    throttling.count([("api-user", "7")], 60)
    assert throttling.count([("api-user", "7")], 60)["api-user"][0] == 2
    ThrottleWindow.objects.update(started="2000-01-01T00:00:00Z")
    n, left = throttling.count([("api-user", "7")], 60)["api-user"]
    assert n == 1 and 59 <= left <= 60


def test_failures_from_windows_long_over_are_forgotten(alice):
    token_attempt("wrong", username="someone-once")
    ThrottleWindow.objects.filter(key="someone-once").update(
        started=ThrottleWindow.objects.get(key="someone-once").started - timedelta(hours=1)
    )
    token_attempt("wrong", username="someone-new")  # a new window: the old are cleared
    assert not ThrottleWindow.objects.filter(key="someone-once").exists()
    assert ThrottleWindow.objects.filter(key="someone-new").exists()


@pytest.mark.django_db(transaction=True)
def test_concurrent_wrong_passwords_from_several_workers_get_exactly_the_accounts_allowance(
    django_user_model,
):
    """Each thread has its own database connection, as each worker process has: the count is
    the database's, so running attempts side by side wins no extra ones."""
    from django.db import connections

    django_user_model.objects.create_user("alice", password=PASSWORD)
    start = threading.Barrier(8)

    def attempts(worker):
        try:
            start.wait()
            return [token_attempt(f"guess-{worker}-{i}").status_code for i in range(4)]
        finally:
            connections.close_all()

    with ThreadPoolExecutor(8) as pool:
        statuses = [s for worker in pool.map(attempts, range(8)) for s in worker]
    assert sorted(statuses) == [401] * 10 + [429] * 22
