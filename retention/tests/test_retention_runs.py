"""How a retention run goes: bounded batches, a time budget, the export first, idempotence,
and the cycle as operators see it (schedule, command, Cycles page)."""

from __future__ import annotations

import json
import re

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core import gdpconfig
from core.cycles import run_cycle
from retention.services import ExportError, run_retention


def test_a_run_deletes_in_batches_of_at_most_RetentionBatchSize_rows(killed, age, ages):
    from matcher.models import Job

    ages(jobs=1)
    gdpconfig.set_value("RetentionBatchSize", 10)
    ids = killed(35)
    age(2)

    with CaptureQueriesContext(connection) as queries:
        tally = run_retention()

    assert not Job.objects.filter(pk__in=ids).exists()
    assert (tally.deleted["jobs"], len(tally.batch_seconds), tally.largest_batch) == (35, 4, 10)
    # Each batch locks at most 10 jobs and deletes exactly those it locked.
    picks = [
        q["sql"]
        for q in queries
        if q["sql"].startswith('SELECT "matcher_job"."id" AS') and '"status" IN' in q["sql"]
    ]
    assert len(picks) == 4 and all(re.search(r"LIMIT 10\b", sql) for sql in picks)
    deletes = [q["sql"] for q in queries if q["sql"].startswith('DELETE FROM "matcher_job" ')]
    assert len(deletes) == 4, "one DELETE of jobs per batch"


def test_a_run_out_of_time_stops_and_the_next_run_goes_on(killed, age, ages):
    from matcher.models import Job

    ages(jobs=1)
    ids = killed(3)
    age(2)

    tally = run_retention(max_seconds=0)
    assert tally.more and Job.objects.filter(pk__in=ids).count() == 3

    tally = run_retention()
    assert not tally.more and not Job.objects.filter(pk__in=ids).exists()


def _export(tmp_path):
    gdpconfig.set_value("RetentionExport", True)
    gdpconfig.set_value("RetentionExportDirectory", str(tmp_path))


def _lines(paths) -> list[dict]:
    return [json.loads(line) for p in paths for line in open(p, encoding="utf-8")]


def test_the_export_holds_each_deleted_job_with_its_history(tmp_path, killed, submit, age, ages):
    from matcher.models import JobStatusHistory

    _export(tmp_path)
    ages(jobs=7, pilots=0, cycle_runs=0)
    gdpconfig.set_value("RetentionBatchSize", 2)
    gone = killed(3, "bob")
    history = {
        j: list(
            JobStatusHistory.objects.filter(job_id=j)
            .order_by("at", "id")
            .values_list("from_status", "to_status", "reason")
        )
        for j in gone
    }
    waiting = submit("alice")
    age(8)

    tally = run_retention()

    [path] = tally.exported_to
    assert path.startswith(str(tmp_path / "jobs" / "jobs-"))
    rows = _lines(tally.exported_to)
    assert [r["id"] for r in rows] == gone, "every deleted job once, none that stayed"
    for row in rows:
        assert row["kind"] == "jobs" and row["status"] == "cancelled"
        assert row["owner_id"] and row["cpu_time"] == 1000 and row["task_id"] is None
        assert [(h["from_status"], h["to_status"], h["reason"]) for h in row["history"]] == (
            history[row["id"]]
        )
    assert waiting.pk not in {r["id"] for r in rows}


def test_an_export_that_cannot_be_written_deletes_nothing(tmp_path, killed, age, ages):
    from matcher.models import Job

    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the export directory should be")
    _export(blocker)
    ages(jobs=1)
    ids = killed(2)
    age(2)

    with pytest.raises(ExportError, match="cannot write the jobs export"):
        run_retention()
    assert Job.objects.filter(pk__in=ids).count() == 2

    run = run_cycle("retention")
    assert run.status == "failed" and "cannot write the jobs export" in run.error
    assert Job.objects.filter(pk__in=ids).count() == 2


def test_a_second_run_deletes_and_exports_nothing(tmp_path, killed, age, ages):
    from matcher.models import Job

    _export(tmp_path)
    ages(jobs=1, cycle_runs=0)
    killed(4)
    kept = killed(1)
    Job.objects.filter(pk__in=kept).update(status="activated")  # not final any more
    age(2)

    first = run_retention()
    second = run_retention()

    assert first.deleted["jobs"] == 4 and len(first.exported_to) == 1
    assert set(second.deleted.values()) == {0} and second.exported_to == []
    assert Job.objects.filter(pk__in=kept).exists()
    assert len(list(tmp_path.rglob("*.jsonl"))) == 1


def test_the_export_directory_must_be_an_absolute_path(api, users):
    r = api(users["admin"]).patch(
        "/api/v1/config/RetentionExportDirectory/", {"value": "exports/here"}, format="json"
    )
    assert r.status_code == 400 and "absolute path" in str(r.data["value"])


def test_the_retention_cycle_is_scheduled_run_by_the_operators_command_and_on_the_cycles_page(
    client, users, killed, age, ages, capsys
):
    from django_q.models import Schedule

    call_command("setup_schedules")
    assert "cycle:retention every 10 min" in capsys.readouterr().out
    schedule = Schedule.objects.get(name="cycle:retention")
    assert (schedule.func, schedule.args) == ("core.tasks.run", "'retention'")

    ages(jobs=1)
    killed(2)
    age(2)
    call_command("run_cycle", "retention")
    out = capsys.readouterr().out
    assert out.startswith("retention: success") and "'jobs': 2" in out

    client.force_login(users["admin"])
    page = client.get("/config/cycles/?kind=retention").content.decode()
    assert "retention" in page and "<dt>jobs</dt><dd>2</dd>" in page
