"""GET /healthz, GET /metrics, and JSON log lines."""

import json
import logging
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import override_settings
from django.utils import timezone
from django_q.models import Schedule
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.authtoken.models import Token

from core import clock
from core.models import CycleRun

ROOT = Path(__file__).resolve().parents[2]
CERN = {"site": "LCG.CERN.ch", "grid_ce": "ce503.cern.ch", "cpu_time": 86400}


@pytest.fixture
def scheduled(db):
    call_command("setup_schedules", stdout=open(os.devnull, "w"))


def ran(kind, status="success", minutes_ago=0.0, seconds=None):
    at = clock.now() - timedelta(minutes=minutes_ago)
    return CycleRun.objects.create(
        kind=kind, status=status, started=at, finished=at, real_seconds=seconds
    )


# --- /healthz ---------------------------------------------------------------------------------


def test_healthz_answers_200_with_every_check_when_the_cluster_keeps_the_schedules(
    admin_client, scheduled
):
    ran("director", minutes_ago=0.5)
    response = admin_client.get("/healthz")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["status"] == "ok" and body["failing"] == []
    assert body["database"]["ok"] and body["migrations"]["ok"] and body["cluster"]["ok"]
    assert body["cycles"]["director"]["last_success_age_s"] == pytest.approx(30, abs=5)
    assert body["cycles"]["director"]["interval_s"] == 60
    assert body["cycles"]["priorities"]["pending"] is True  # not run yet: healthy while pending


def test_healthz_answers_503_naming_the_cluster_when_no_scheduler_advances_the_schedules(
    admin_client, scheduled
):
    Schedule.objects.update(next_run=timezone.now() - timedelta(minutes=10))
    response = admin_client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unhealthy"
    assert "cluster" in body["failing"]
    assert body["cluster"]["overdue_s"] >= 600


def test_healthz_answers_503_naming_a_cycle_whose_last_success_is_older_than_two_intervals(
    admin_client, scheduled
):
    ran("director", minutes_ago=4)  # every minute: stale after 2 minutes and a grace minute
    ran("priorities", minutes_ago=3)  # every 2 minutes: still within 5
    body = admin_client.get("/healthz").json()
    assert body["failing"] == ["cycle:director"]
    assert body["cycles"]["priorities"]["ok"] is True


def test_healthz_names_a_cycle_that_has_only_failed(admin_client, scheduled):
    ran("negotiator", status="failed")
    response = admin_client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["failing"] == ["cycle:negotiator"]
    assert response.json()["cycles"]["negotiator"]["last_status"] == "failed"


def test_an_anonymous_caller_of_healthz_gets_the_status_and_the_names_of_what_fails_only(
    client, scheduled, django_user_model
):
    ran("director", minutes_ago=4)
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json() == {"status": "unhealthy", "failing": ["cycle:director"]}
    client.force_login(django_user_model.objects.create_user("alice"))  # not staff: the same
    assert client.get("/healthz").json() == {"status": "unhealthy", "failing": ["cycle:director"]}
    ran("director")
    assert client.get("/healthz").json() == {"status": "ok", "failing": []}


def test_staff_with_a_token_get_healthzs_cycle_table(client, scheduled, django_user_model):
    ran("director", minutes_ago=4)
    staff = django_user_model.objects.create_user("operator", is_staff=True)
    token = Token.objects.create(user=staff).key
    body = client.get("/healthz", HTTP_AUTHORIZATION=f"Token {token}").json()
    assert body["failing"] == ["cycle:director"]
    assert body["cycles"]["director"]["ok"] is False
    assert body["cycles"]["director"]["last_success_age_s"] == pytest.approx(240, abs=5)
    assert body["database"]["ok"] and body["cluster"]["ok"]


def test_healthz_needs_schedules(admin_client, db):
    response = admin_client.get("/healthz")
    assert response.status_code == 503
    assert "cluster" in response.json()["failing"]
    assert "setup_schedules" in response.json()["cluster"]["error"]


class _Unreachable:
    """A connection whose server is down, as psycopg reports it: host and address included."""

    def cursor(self):
        from django.db import OperationalError

        raise OperationalError(
            'connection failed: connection to server at "10.9.8.7", port 5432 failed: '
            "Connection refused\n\tIs the server running on that host?"
        )


def test_healthz_answers_503_naming_the_database_when_it_is_unreachable(
    client, scheduled, monkeypatch, caplog
):
    from web.core import health

    monkeypatch.setattr(health, "connection", _Unreachable())
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body == {"status": "unhealthy", "failing": ["database"]}
    # Anyone may ask: the server's address and the driver's text are logged, not answered.
    assert "10.9.8.7" not in response.content.decode()
    assert "10.9.8.7" in caplog.text


def test_healthz_shows_staff_why_the_database_is_unreachable(client, users, scheduled, monkeypatch):
    from web.core import health

    monkeypatch.setattr(health, "connection", _Unreachable())
    client.force_login(users["admin"])
    body = client.get("/healthz").json()
    assert body["database"]["error"] == "database unreachable"
    assert "10.9.8.7" in body["database"]["detail"]
    client.force_login(users["alice"])
    assert client.get("/healthz").json() == {"status": "unhealthy", "failing": ["database"]}


def _unapplied(monkeypatch):
    from django.db.migrations import Migration
    from django.db.migrations.executor import MigrationExecutor

    from web.core import health

    monkeypatch.setattr(health, "_migrated", False)
    monkeypatch.setattr(
        MigrationExecutor,
        "migration_plan",
        lambda self, targets: [(Migration("0999_not_yet", "matcher"), False)],
    )


def test_healthz_answers_503_naming_the_migrations_left_to_apply(
    admin_client, scheduled, monkeypatch
):
    _unapplied(monkeypatch)
    response = admin_client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["failing"] == ["migrations"]
    assert body["migrations"] == {"ok": False, "unapplied": ["matcher.0999_not_yet"]}


def test_healthz_before_migrate_answers_503_naming_the_migrations_not_500(client, db, monkeypatch):
    from django.db import ProgrammingError

    from web.core import health

    _unapplied(monkeypatch)

    def no_table(now):
        raise ProgrammingError('relation "django_q_schedule" does not exist')

    monkeypatch.setattr(health, "check_cluster", no_table)
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["failing"] == ["migrations", "cluster"]


# --- /metrics ---------------------------------------------------------------------------------


def scrape(client, user, types=None) -> dict:
    token = Token.objects.get_or_create(user=user)[0].key
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Token {token}")
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        if types is not None:
            types[family.name] = family.type
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def test_metrics_count_claims_and_empty_matches_and_time_them(client, api, users, submit):
    before = scrape(client, users["admin"])
    submit("alice", cpu_time=100, sites=["LCG.CERN.ch"])
    pilot = api(users["pilot"])
    assert pilot.post("/api/v1/match/", CERN, format="json").status_code == 200
    assert pilot.post("/api/v1/match/", CERN, format="json").status_code == 204
    after = scrape(client, users["admin"])

    def delta(name, **labels):
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0) - before.get(key, 0)

    assert delta("gridwms_matches_total", result="claimed") == 1
    assert delta("gridwms_matches_total", result="empty") == 1
    assert delta("gridwms_match_duration_seconds_count") == 2
    assert delta("gridwms_match_duration_seconds_bucket", le="+Inf") == 2


def test_metrics_time_requests_by_route_pattern(client, api, users):
    api(users["alice"]).get("/api/v1/jobs/")
    samples = scrape(client, users["admin"])
    routes = {
        labels: v
        for (name, labels), v in samples.items()
        if name == "gridwms_http_request_duration_seconds_count"
    }
    key = (("method", "GET"), ("route", "api/v1/jobs/"), ("status", "200"))
    assert routes.get(key, 0) >= 1, sorted(routes)


def test_metrics_report_the_installations_state_from_the_database(client, users, submit):
    submit("alice", cpu_time=100)
    submit("bob", cpu_time=200)
    ran("director", seconds=1.0)
    ran("director", minutes_ago=1, seconds=3.0)
    ran("director", minutes_ago=25 * 60, seconds=100.0)  # outside the 24-hour window
    ran("director", status="failed")
    samples = scrape(client, users["admin"])
    from matcher.models import Job, TaskQueue
    from pilots.models import Pilot

    assert samples[("gridwms_waiting_jobs", ())] == Job.objects.filter(status="activated").count()
    assert samples[("gridwms_taskqueues", ())] == TaskQueue.objects.count()
    for status in set(Pilot.objects.values_list("status", flat=True)):
        expected = Pilot.objects.filter(status=status).count()
        assert samples[("gridwms_pilots", (("status", status),))] == expected
    director = (("kind", "director"), ("status", "success"))
    assert samples[("gridwms_cycle_runs_recent", (("kind", "director"), ("status", "failed")))] == 1
    assert samples[("gridwms_cycle_runs_recent", director)] == 2  # not the one of 25 hours ago
    assert samples[("gridwms_cycle_recent_mean_duration_seconds", director)] == 2.0
    assert samples[("gridwms_cycle_recent_max_duration_seconds", director)] == 3.0
    assert samples[("gridwms_cycle_last_success_age_seconds", (("kind", "director"),))] < 60
    assert samples[("gridwms_cycle_interval_seconds", (("kind", "timeouts"),))] == 300


def test_cycle_run_figures_are_gauges_as_retention_deleting_old_runs_makes_them_go_down(
    client, users
):
    for minutes_ago in (0, 30 * 60):
        ran("director", minutes_ago=minutes_ago, seconds=1.0)
    types = {}
    before = scrape(client, users["admin"], types)
    CycleRun.objects.filter(started__lt=clock.now() - timedelta(days=1)).delete()  # retention
    after = scrape(client, users["admin"])
    key = ("gridwms_cycle_runs_recent", (("kind", "director"), ("status", "success")))
    assert before[key] == after[key] == 1  # the window never held the deleted run
    cycle_families = {name: t for name, t in types.items() if name.startswith("gridwms_cycle_")}
    assert set(cycle_families.values()) == {"gauge"}, cycle_families
    assert not [n for n, _ in before if n.startswith("gridwms_cycle_") and n.endswith("_total")]


def test_metrics_are_for_staff_tokens_and_listed_addresses_only(client, users):
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics")["WWW-Authenticate"] == "Token"
    token = Token.objects.get_or_create(user=users["alice"])[0].key
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Token {token}").status_code == 403
    assert client.get("/metrics", HTTP_AUTHORIZATION="Token not-a-token").status_code == 401
    with override_settings(METRICS_ALLOWED_ADDRESSES=["10.1.0.0/16"]):
        assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
        assert client.get("/metrics", REMOTE_ADDR="10.2.0.1").status_code == 401


def test_metrics_of_several_processes_are_summed(tmp_path):
    """prometheus_client's multiprocess mode, as gunicorn's workers use it: two processes
    count claims; a third, scraping, sees both."""
    env = {
        **os.environ,
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "gridwms.settings",
    }
    count = (
        "from core.metrics import observe_match;"
        "observe_match(0.004, True); observe_match(0.2, False)"
    )
    for _ in range(2):
        subprocess.run([sys.executable, "-c", count], cwd=ROOT, env=env, check=True, timeout=60)
    read = (
        "from core.metrics import process_registry;"
        "from prometheus_client import generate_latest;"
        "print(generate_latest(process_registry()).decode())"
    )
    out = subprocess.run(
        [sys.executable, "-c", read],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=60,
        capture_output=True,
        text=True,
    ).stdout
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(out)
        for s in f.samples
    }
    assert samples[("gridwms_matches_total", (("result", "claimed"),))] == 2
    assert samples[("gridwms_matches_total", (("result", "empty"),))] == 2
    assert samples[("gridwms_match_duration_seconds_bucket", (("le", "0.005"),))] == 2


# --- logs -------------------------------------------------------------------------------------


def test_log_format_json_makes_one_json_object_per_event(monkeypatch):
    from core.logs import JsonFormatter, logging_config

    monkeypatch.setenv("LOG_FORMAT", "json")
    assert logging_config("INFO")["formatters"]["gridwms"] == {"()": JsonFormatter}
    monkeypatch.setenv("LOG_FORMAT", "text")
    assert "format" in logging_config("INFO")["formatters"]["gridwms"]

    try:
        raise ValueError("a broken site description")
    except ValueError:
        record = logging.getLogger("core.cycles").makeRecord(
            "core.cycles",
            logging.ERROR,
            __file__,
            1,
            "cycle %s failed",
            ("director",),
            sys.exc_info(),
            extra={"kind": "director"},
        )
    line = JsonFormatter().format(record)
    assert "\n" not in line
    event = json.loads(line)
    assert event["level"] == "ERROR" and event["logger"] == "core.cycles"
    assert event["message"] == "cycle director failed" and event["kind"] == "director"
    assert "ValueError: a broken site description" in event["exc"]
    assert event["time"].endswith("+00:00")
