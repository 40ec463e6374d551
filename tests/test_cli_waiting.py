"""`gridwms wait`, `why`, the why in `status`, times as elapsed time, `whoami`, `logout` and
every command's help, run as a real process against a live server (tests/test_cli.py's
harness)."""

from __future__ import annotations

import datetime
import json

import pytest

from core import clock
from gridwms.cli import build_parser
from gridwms.cli.show import SERVER_CLOCK, SIMULATED_CLOCK, stamp, when
from matcher.models import Job
from tests.test_cli import WAITING_JOB, Gridwms, Pilot

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def gridwms(tmp_path, live_server, users):
    return Gridwms(tmp_path, live_server.url)


@pytest.fixture
def alice(gridwms):
    gridwms.login("alice")
    return gridwms


NO_CE_HAS_IT = {**WAITING_JOB, "sites": [], "tags": ["NoSuchTag"]}


# --- wait ----------------------------------------------------------------------------------------


def test_wait_exits_0_once_every_job_of_the_group_finished(alice, users):
    ids = alice.submit([WAITING_JOB] * 2)
    waiting = alice.popen("wait", "--group", "--interval", "0.2")
    pilot = Pilot(users)
    for _ in ids:
        pilot.run(pilot.take()["id"], b"done\n")
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, err
    lines = out.splitlines()
    assert sorted(lines[:2]) == sorted(f"job {i} finished" for i in ids)
    assert lines[2] == "2 jobs of group 1 ended: 2 finished"


def test_wait_exits_3_when_a_job_ended_other_than_finished(alice, users):
    ids = alice.submit([WAITING_JOB] * 2)
    pilot = Pilot(users)
    pilot.run(pilot.take()["id"], b"", exit_code=2)
    assert alice("kill", "--group").returncode == 0
    out = alice("wait", *map(str, ids), "--interval", "0.1")
    assert out.returncode == 3, out.stderr
    assert "exit code 2" in out.stdout
    assert out.stdout.splitlines()[-1] == "2 jobs ended: 1 failed, 1 cancelled"


def test_wait_exits_4_at_its_timeout_saying_what_still_waits(alice):
    [job_id] = alice.submit(WAITING_JOB)
    out = alice("wait", str(job_id), "--timeout", "1", "--interval", "0.2")
    assert out.returncode == 4
    assert "1 of 1 jobs still not ended after 1 s (1 activated)" in out.stderr
    assert alice("wait", "--timeout", "soon", str(job_id)).returncode == 2


def test_wait_for_a_job_not_yours_exits_2_before_waiting(alice, submit):
    bobs = submit("bob", cpu_time=100)
    out = alice("wait", str(bobs.pk), "--timeout", "30")
    assert out.returncode == 2 and str(bobs.pk) in out.stderr


# --- why -----------------------------------------------------------------------------------------


def test_why_names_the_rule_that_keeps_every_ce_from_a_job_and_status_says_it(alice):
    [job_id] = alice.submit(NO_CE_HAS_IT)
    out = alice("why", str(job_id))
    assert out.returncode == 0, out.stderr
    assert "it waits in TaskQueue" in out.stdout
    assert "active CEs can take it:" in out.stdout and "None of the" in out.stdout
    assert "Tag," in out.stdout and "NoSuchTag" in out.stdout
    assert "warning:" in out.stdout
    row = alice("status", str(job_id)).stdout.splitlines()[1]
    assert "no CE can take it: Tag: resource lacks tags" in row


def test_why_of_a_job_some_ces_can_take_says_it_waits_for_their_pilots(alice):
    [job_id] = alice.submit(WAITING_JOB)
    out = alice("why", str(job_id))
    assert out.returncode == 0, out.stderr
    assert "active CEs can take it (ce" in out.stdout and "The others cannot:" in out.stdout
    assert "Site," in out.stdout
    assert "and 1 waiting job." in out.stdout  # its TaskQueue's
    [job] = json.loads(alice("status", str(job_id), "--json").stdout)
    if "waited_seconds" in job:  # a server that counts real seconds
        assert "It has waited " in out.stdout and "for a pilot (real time)." in out.stdout
    row = alice("status", str(job_id)).stdout.splitlines()[1]
    assert "waits for a pilot:" in row


def test_why_of_an_ended_job_gives_its_reason_and_its_last_changes(alice, submit):
    [job_id] = alice.submit(WAITING_JOB)
    alice("kill", str(job_id))
    out = alice("why", str(job_id))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"job {job_id}: it is cancelled")
    assert "activated -> cancelled" in out.stdout and "just now" in out.stdout
    bobs = submit("bob", cpu_time=100)
    refused = alice("why", str(bobs.pk))
    assert refused.returncode == 2 and f"job {bobs.pk}:" in refused.stderr


# --- times ---------------------------------------------------------------------------------------


def test_times_are_elapsed_real_time_and_a_clock_ahead_is_labelled_never_future():
    now = datetime.datetime(2026, 11, 28, 12, 0, tzinfo=datetime.UTC)
    assert when((now - datetime.timedelta(minutes=3, seconds=20)).isoformat(), now) == "3 min ago"
    assert when((now - datetime.timedelta(hours=5)).isoformat(), now) == "5 h ago"
    assert when((now + datetime.timedelta(seconds=20)).isoformat(), now) == "just now"
    ahead = when((now + datetime.timedelta(hours=2)).isoformat(), now)
    assert ahead.endswith(SERVER_CLOCK) and "in " not in ahead and "ago" not in ahead


def test_the_servers_wall_clock_times_are_shown_elapsed_and_simulated_ones_labelled():
    now = datetime.datetime.now(datetime.UTC)
    simulated = (now + datetime.timedelta(days=3)).isoformat()
    real = (now - datetime.timedelta(minutes=7, seconds=5)).isoformat()
    job = {"status_changed": simulated, "status_changed_real": real, "clock": "simulated"}
    assert stamp(job, "status_changed") == "7 min ago"
    paused = {**job, "status_changed_real": None}
    assert stamp(paused, "status_changed").endswith(SIMULATED_CLOCK)
    older_server = {"status_changed": real}
    assert stamp(older_server, "status_changed") == "7 min ago"
    assert stamp({"status_changed": real, "clock": "simulated"}, "status_changed").endswith(
        SIMULATED_CLOCK
    )


def test_a_server_clock_ahead_of_the_users_never_shows_a_time_in_the_future(alice):
    [job_id] = alice.submit(WAITING_JOB)
    assert "just now" in alice("status", str(job_id)).stdout
    clock.advance(7200)  # the live server runs in this process: its clock is now ahead
    Job.objects.filter(pk=job_id).update(status_changed=clock.now())
    row = alice("status", str(job_id)).stdout.splitlines()[1]
    assert " in " not in row
    [job] = json.loads(alice("status", str(job_id), "--json").stdout)
    if "status_changed_real" in job:  # the server tells the wall-clock moment: it was just now
        assert row.endswith("just now")
    else:  # only its own clock's time: shown as that, labelled
        assert row.endswith(SERVER_CLOCK)


# --- who, logout, help ---------------------------------------------------------------------------


def test_whoami_names_the_user_the_groups_and_the_server(alice):
    out = alice("whoami")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"alice at {alice.url}\n")
    assert "groups: " in out.stdout and str(alice.config("alice")) in out.stdout
    me = json.loads(alice("whoami", "--json").stdout)
    assert (me["username"], me["url"]) == ("alice", alice.url)


def test_logout_forgets_the_token_and_then_commands_ask_to_log_in(alice):
    out = alice("logout")
    assert out.returncode == 0 and "logged out" in out.stdout
    stored = json.loads(alice.config("alice").read_text())
    assert "token" not in stored and stored["url"] == alice.url
    again = alice("whoami")
    assert again.returncode == 2 and "gridwms login" in again.stderr
    assert "not logged in" in alice("logout").stdout


def test_every_command_shows_an_example_in_its_help(gridwms):
    [commands] = [a for a in build_parser()._actions if a.dest == "command"]
    assert {"wait", "why", "whoami", "logout", "groups"} <= set(commands.choices)
    for name in commands.choices:
        out = gridwms(name, "--help", user=None)
        assert out.returncode == 0, out.stderr
        example = out.stdout.split("example:\n", 1)[1]
        assert f"gridwms {name}" in example
