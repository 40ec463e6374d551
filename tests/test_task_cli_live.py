"""The issue's acceptance, end to end: a physicist submits a small task with a payload through
`gridwms task`, brokerage places its jobs at the real pilots' queue, real pilot processes run them,
and the task ends `done` with its outputs, which `gridwms task show` lists and `gridwms get`
downloads; `gridwms task kill` and `retry` act on a task, and a bad one is refused naming its
field."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time

import pytest
from rest_framework.authtoken.models import Token

from brokerage.models import Task
from brokerage.services.analysis import analysis_brokerage
from core.cycles import run_cycle
from simulation.demo import LOCAL_CE, LOCAL_SITE
from tests.test_cli import ROOT, Gridwms
from tests.test_tasks_run_real_work import REAL_QUEUE, real_pilots_queue

pytestmark = pytest.mark.django_db(transaction=True)

RUN_SH = 'echo "part $1" > "out_$1.txt"; echo "job $1 done"\n'


@pytest.fixture
def alice(tmp_path, live_server, users, panda):
    real_pilots_queue(live_server.url)
    cli = Gridwms(tmp_path, live_server.url)
    cli.login("alice")
    return cli


def _real_pilot(url: str, token: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "pilot", "--url", url, "--token", token,
         "--site", LOCAL_SITE, "--ce", LOCAL_CE, "--tag", "payload", "--heartbeat", "1",
         "--max-seconds", "600", "--max-jobs", "5"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip


def _show(alice, task_id: int) -> dict:
    out = alice("task", "show", str(task_id), "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_task_with_a_payload_runs_on_real_pilots_to_done_with_its_outputs(alice, users):
    alice.write("run.sh", RUN_SH)
    out = alice("task", "submit", "--name", "user.alice.parts", "--group", "lhcb_user",
                "--jobs", "2", "--cpu-time", "60", "--sandbox", "run.sh",
                "--output", "out_%RNDM:1.txt", "--", "/bin/sh", "run.sh", "%RNDM:1")  # fmt: skip
    assert out.returncode == 0, out.stderr
    task_id = int(out.stdout)
    task = _show(alice, task_id)
    assert (task["status"], task["site"], task["input_sandbox"]) == (
        "ready",
        REAL_QUEUE,
        [{"name": "run.sh", "size": len(RUN_SH)}],
    )
    assert analysis_brokerage(rng=random.Random(1), task_ids=[task_id])["jobs"] == 2

    token = Token.objects.get(user=users["pilot"]).key
    deadline = time.monotonic() + 60
    while _show(alice, task_id)["job_counts"] != {"finished": 2}:
        assert time.monotonic() < deadline, _show(alice, task_id)
        time.sleep(1.1)  # a new TaskQueue reaches the match view within a second
        _real_pilot(alice.url, token)
    assert run_cycle("task_completion").status == "success"

    task = _show(alice, task_id)
    assert task["status"] == "done"
    outputs = {(f["name"], f["kind"]) for f in task["outputs"]}
    assert {("out_1.txt", "output"), ("out_2.txt", "output"), ("std.out", "stdout")} <= outputs
    shown = alice("task", "show", str(task_id))
    assert "status   done" in shown.stdout and "runs     /bin/sh run.sh %RNDM:1" in shown.stdout
    assert "out_2.txt" in shown.stdout
    listed = alice("task", "list", "--status", "running,done")
    assert f"{task_id}" in listed.stdout and "2 finished" in listed.stdout
    assert str(task_id) not in alice("task", "list", "--status", "failed").stdout
    job = next(f["job"] for f in task["outputs"] if f["name"] == "out_2.txt")
    assert alice("get", str(job)).returncode == 0
    assert (alice.cwd / f"job_{job}" / "out_2.txt").read_text() == "part 2\n"
    assert (alice.cwd / f"job_{job}" / "std.out").read_text() == "job 2 done\n"


def test_task_kill_and_retry_through_the_command_and_a_bad_task_named_by_field(alice):
    out = alice("task", "submit", "--name", "user.alice.k", "--group", "lhcb_user",
                "--jobs", "2", "--", "/bin/echo", "%RNDM")  # fmt: skip
    assert out.returncode == 2 and "arguments" in out.stderr and "%RNDM:N" in out.stderr
    out = alice("task", "submit", "--name", "user.alice.k", "--group", "lhcb_user",
                "--jobs", "2", "--", "/bin/echo", "%RNDM:0")  # fmt: skip
    task_id = int(out.stdout)
    retried = alice("task", "retry", str(task_id))
    assert retried.returncode == 2 and "only a task that ended" in retried.stderr
    killed = alice("task", "kill", str(task_id))
    assert killed.returncode == 0, killed.stderr
    assert killed.stdout.startswith(f"task {task_id} failed: killed by alice")
    retried = alice("task", "retry", str(task_id))
    assert retried.returncode == 0 and "retried by alice: 2 jobs" in retried.stdout
    assert Task.objects.get(pk=task_id).status == "ready"
    assert alice("task", "show", "999999").returncode == 2
