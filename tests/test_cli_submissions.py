"""`gridwms submit` as a physicist uses it: a command N times over with its number, cores and
memory, and the group each submission is recorded as (status, kill, reschedule of all of it),
run as a real process against a live server (tests/test_cli.py's harness)."""

from __future__ import annotations

import json

import pytest

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


def _group_line(stderr: str) -> str:
    [line] = [line for line in stderr.splitlines() if "group " in line]
    return line


# --- N jobs from one description -----------------------------------------------------------------


def test_a_command_submitted_n_times_gets_its_number_in_its_arguments_and_name(alice):
    out = alice("submit", "--count", "3", "--site", "LCG.CERN.ch", "--",
                "/bin/sh", "run.sh", "{n}", "--out", "out-{n}.txt")  # fmt: skip
    assert out.returncode == 0, out.stderr
    ids = [int(line) for line in out.stdout.split()]
    jobs = [Job.objects.get(pk=pk) for pk in ids]
    assert [j.arguments for j in jobs] == [
        ["run.sh", str(n), "--out", f"out-{n}.txt"] for n in range(3)
    ]
    assert [j.name for j in jobs] == ["sh-0", "sh-1", "sh-2"]
    assert {(j.executable, j.cpu_time, tuple(j.sites)) for j in jobs} == {
        ("/bin/sh", 3600, ("LCG.CERN.ch",))
    }
    assert "group 1 (3 jobs)" in _group_line(out.stderr)


def test_a_json_job_repeated_from_a_first_number_replaces_n_in_every_text(alice):
    job = {**WAITING_JOB, "name": "scan-{n}", "executable": "run", "environment": {"SEED": "{n}"}}
    alice.write("job.json", json.dumps(job))
    out = alice("submit", "job.json", "--count", "2", "--first", "5")
    assert out.returncode == 0, out.stderr
    jobs = [Job.objects.get(pk=int(pk)) for pk in out.stdout.split()]
    assert [(j.name, j.environment) for j in jobs] == [
        ("scan-5", {"SEED": "5"}),
        ("scan-6", {"SEED": "6"}),
    ]


def test_cores_and_memory_are_asked_for_as_the_tags_ces_offer(alice):
    [job_id] = alice.submit(WAITING_JOB, "--cores", "4", "--memory", "16")
    tags = Job.objects.get(pk=job_id).tags
    assert set(tags) == {"MultiProcessor", "4Processors", "16GB"}
    out = alice("submit", "job.json", "--cores", "1", "--memory", "512")
    assert out.returncode == 0
    [job_id] = map(int, out.stdout.split())
    assert Job.objects.get(pk=job_id).tags == ["512GB"]
    assert "warning" in out.stderr and "512GB" in out.stderr


def test_input_files_go_with_each_of_the_n_jobs(alice):
    alice.write("run.sh", "echo $1\n")
    out = alice("submit", "--count", "2", "--sandbox", "run.sh", "--", "/bin/sh", "run.sh", "{n}")
    assert out.returncode == 0, out.stderr
    ids = out.stdout.split()
    shown = json.loads(alice("status", *ids, "--json").stdout)
    assert [job["input_sandbox"] for job in shown] == [[{"name": "run.sh", "size": 8}]] * 2
    assert [job["arguments"] for job in shown] == [["run.sh", "0"], ["run.sh", "1"]]


def test_a_jdl_or_a_list_refuses_what_it_cannot_take_and_nothing_is_stored(alice):
    alice.write("job.jdl", 'Executable = "/bin/echo";\nCPUTime = 100;\n')
    out = alice("submit", "job.jdl", "--cores", "4")
    assert out.returncode == 2 and "--cores" in out.stderr and "JDL" in out.stderr
    alice.write("jobs.json", json.dumps([WAITING_JOB, WAITING_JOB]))
    out = alice("submit", "jobs.json", "--count", "2")
    assert out.returncode == 2 and "not a list" in out.stderr
    assert alice("submit").returncode == 2
    assert not Job.objects.exists()


# --- groups --------------------------------------------------------------------------------------


def test_status_of_the_last_group_counts_its_jobs_by_state_then_lists_them(alice):
    alice.submit(WAITING_JOB)
    ids = alice.submit([{"name": f"g-{i}", **WAITING_JOB} for i in range(3)])
    assert alice("kill", str(ids[0])).returncode == 0
    out = alice("status", "--group")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "group 2: 3 jobs, submitted just now: 2 activated, 1 cancelled"
    assert [line.split()[0] for line in lines[2:]] == [str(i) for i in ids]
    brief = alice("status", "--group", "1", "--brief")
    assert brief.stdout.splitlines() == ["group 1: 1 job, submitted just now: 1 activated"]


def test_a_large_group_is_read_from_the_users_own_jobs_whatever_came_after(alice, submit):
    ids = alice.submit([{"name": f"big-{i}", **WAITING_JOB} for i in range(25)])
    submit("bob", name="bobs", cpu_time=100)
    later = alice.submit(WAITING_JOB)
    out = alice("status", "--group", "1", "--json")
    assert out.returncode == 0, out.stderr
    assert [job["id"] for job in json.loads(out.stdout)] == ids
    Job.objects.filter(pk=ids[3]).delete()  # purged meanwhile
    out = alice("status", "--group", "1", "--brief")
    assert out.returncode == 2
    assert "24 activated, 1 not found" in out.stdout and str(ids[3]) in out.stderr
    assert later[0] not in ids


def test_kill_of_a_group_kills_its_live_jobs_and_leaves_the_ended_ones_alone(alice):
    ids = alice.submit([WAITING_JOB] * 3)
    assert alice("kill", str(ids[1])).returncode == 0
    out = alice("kill", "--group")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "2 of 3 jobs of group 1 killed; left alone: 1 cancelled"
    assert set(Job.objects.values_list("status", flat=True)) == {"cancelled"}


def test_reschedule_of_a_group_sends_back_its_failed_jobs_only(alice, users):
    ids = alice.submit([WAITING_JOB] * 2)
    pilot = Pilot(users)
    taken = pilot.take()["id"]
    pilot.run(taken, b"", exit_code=1)
    out = alice("reschedule", "--group", "1")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1 of 2 jobs of group 1 rescheduled; left alone: 1 activated"
    assert {Job.objects.get(pk=pk).status for pk in ids} == {"activated"}
    assert Job.objects.get(pk=taken).reschedule_count == 1


def test_groups_are_listed_and_one_of_another_server_is_refused(alice):
    alice.submit(WAITING_JOB)
    out = alice("submit", "--count", "2", "--site", "LCG.CERN.ch", "--", "/bin/true")
    assert out.returncode == 0, out.stderr
    listed = alice("groups").stdout.splitlines()
    assert [line.split()[0] for line in listed] == ["1", "2"]
    assert "/bin/true x2" in listed[1] and "2 jobs" in listed[1]
    record = alice.home / "alice.groups" / "2.json"
    other = {**json.loads(record.read_text()), "url": "http://elsewhere.example:8000"}
    record.write_text(json.dumps(other))
    out = alice("status", "--group", "2")
    assert out.returncode == 2 and "elsewhere.example" in out.stderr
    out = alice("status", "--group")  # the last one of this server: group 1
    assert out.stdout.startswith("group 1: 1 job")
    assert alice("status", "--group", "9").returncode == 2
