from django.db import connection
from django.test.utils import CaptureQueriesContext

from web.monitoring import held_back


def _ce(found, name):
    [row] = [r for r in found.ces if r.ce == name]
    return row


def _tq(found, tq_id):
    [row] = [r for r in found.taskqueues if r.task_queue == tq_id]
    return row


def test_waiting_jobs_are_counted_by_the_first_failing_rule_at_each_ce(users, submit):
    gpu = [submit("alice", tags=["GPU"]) for _ in range(3)]  # only ce01-htc offers GPU
    pic = [submit("alice", sites=["LCG.PIC.es"]) for _ in range(2)]

    found = held_back.summary(users["alice"])

    assert found.waiting == 5 and found.held == 0
    assert _ce(found, "ce01-htc.cr.cnaf.infn.it").counts == {"matches": 3, "Site": 2}
    assert _ce(found, "ce07.pic.es").counts == {"matches": 2, "Tag": 3}
    assert _ce(found, "ce504.cern.ch").counts == {"Site": 2, "Tag": 3}
    example = _ce(found, "ce504.cern.ch").examples["Tag"]
    assert (example.task_queue, example.job, example.jobs) == (
        gpu[0].task_queue_id,
        gpu[0].pk,
        3,
    )
    assert found.outcomes[0] == "matches" and {"Site", "Tag"} <= set(found.outcomes)
    row = _tq(found, pic[0].task_queue_id)
    assert (row.jobs, row.matching_ces, row.example_job) == (2, 1, pic[0].pk)
    assert row.rules == {"Site": len(found.ces) - 1}


def test_a_taskqueue_no_active_ce_matches_is_held_back_with_the_reason(users, submit):
    submit("alice")
    nowhere = [submit("alice", tags=["NoSuchTag"]) for _ in range(4)]

    found = held_back.summary(users["alice"])

    assert found.held == 4 and found.held_by_rule == {"Tag": 4}
    first = found.taskqueues[0]  # the held back ones come first
    assert first.task_queue == nowhere[0].task_queue_id and first.matching_ces == 0
    assert "NoSuchTag" in first.shortfall
    assert all(row.counts.get("Tag", 0) == 4 for row in found.ces)


def test_another_users_waiting_jobs_are_never_counted_for_a_non_staff_user(users, submit):
    submit("alice", tags=["GPU"])
    submit("bob", tags=["GPU"])
    submit("bob", tags=["NoSuchTag"])

    alice = held_back.summary(users["alice"])
    staff = held_back.summary(users["admin"])

    assert (alice.waiting, alice.held, alice.taskqueue_count) == (1, 0, 1)
    assert (staff.waiting, staff.held) == (3, 1)
    assert _ce(staff, "ce01-htc.cr.cnaf.infn.it").counts["matches"] == 2


def test_the_summary_is_per_taskqueue_so_many_jobs_cost_no_more_queries(users, submit):
    submit("alice", tags=["GPU"])
    submit("alice", tags=["NoSuchTag"])
    held_back.summary(users["alice"])  # the process reads each TaskQueue's definition once
    with CaptureQueriesContext(connection) as few:
        held_back.summary(users["alice"])
    for _ in range(20):
        submit("alice", tags=["GPU"])
    with CaptureQueriesContext(connection) as many:
        found = held_back.summary(users["alice"])
    # her groups, the counts per TaskQueue, the CEs, the names and example jobs
    assert len(many) == len(few) <= 4
    assert _ce(found, "ce01-htc.cr.cnaf.infn.it").counts["matches"] == 21


def test_the_page_and_the_api_show_the_same_numbers(users, submit, page, api):
    submit("alice", tags=["GPU"])
    submit("alice", tags=["NoSuchTag"])
    body = api(users["alice"]).get("/api/v1/monitoring/held-back/").json()
    html = page(users["alice"], "/monitoring/held/")

    assert html.status_code == 200
    found = html.context["summary"]
    assert (body["waiting"], body["held"]) == (found.waiting, found.held) == (2, 1)
    assert body["outcomes"] == found.outcomes
    for row, ce in zip(found.ces, body["ces"], strict=True):
        assert ce["counts"] == row.counts
    assert [t["task_queue"] for t in body["taskqueues"]] == [t.task_queue for t in found.taskqueues]
    assert b"NoSuchTag" in html.content


def test_a_taskqueue_definition_is_read_once_and_a_new_taskqueue_is_read_when_it_appears(
    users, submit
):
    submit("alice", tags=["GPU"])
    held_back.summary(users["alice"])
    with CaptureQueriesContext(connection) as again:
        held_back.summary(users["alice"])
    new = submit("alice", tags=["NoSuchTag"])
    with CaptureQueriesContext(connection) as grown:
        found = held_back.summary(users["alice"])

    assert not any('"matcher_taskqueue"."sites"' in q["sql"] for q in again.captured_queries)
    assert len(grown) == len(again) + 1  # the new TaskQueue's definition, and only its own
    assert found.held == 1 and _tq(found, new.task_queue_id).matching_ces == 0


def test_a_ce_that_changes_what_it_offers_changes_the_summary_at_once(users, submit):
    from matcher.models import ComputingElement

    gpu = submit("alice", tags=["GPU"])
    before = held_back.summary(users["alice"])
    ce = ComputingElement.objects.get(name="ce504.cern.ch")
    ce.tags = [*ce.tags, "GPU"]
    ce.save(update_fields=["tags"])

    after = held_back.summary(users["alice"])

    assert _ce(before, "ce504.cern.ch").counts == {"Tag": 1}
    assert _ce(after, "ce504.cern.ch").counts == {"matches": 1}
    assert (
        _tq(after, gpu.task_queue_id).matching_ces
        == _tq(before, gpu.task_queue_id).matching_ces + 1
    )


def test_a_renamed_owner_is_shown_under_the_new_name(users, submit):
    job = submit("alice", tags=["NoSuchTag"])
    held_back.summary(users["admin"])
    alice = users["alice"]
    alice.username = "alice2"
    alice.save(update_fields=["username"])

    row = _tq(held_back.summary(users["admin"]), job.task_queue_id)

    assert (row.owner, row.group) == ("alice2", job.owner_group.name)
