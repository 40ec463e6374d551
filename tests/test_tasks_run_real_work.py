"""Tasks that run real work: a task carries a payload as a job does (executable, arguments with
prun's %RNDM:N, environment, input files, output files); its jobs carry it, numbered, and go to
the real pilots' queues; a physicist follows it through the API, the pages and `gridwms task`
(docs/user-guide.md, Tasks that run real work)."""

from __future__ import annotations

import random

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from brokerage.models import PandaQueue, Storage, Task, TaskJob
from brokerage.services.analysis import analysis_brokerage
from core import clock
from matcher.models import Job, Site
from sandboxes.models import SandboxFile
from simulation.demo import LOCAL_SITE, local_worker_node

REAL_QUEUE = "LOCAL_REAL_PILOTS"


def real_pilots_queue(url: str = "http://127.0.0.1:8000") -> PandaQueue:
    """The local worker node (real pilot processes) and a PanDA queue at its CE, with room
    for outputs (the brokerage's storage check) and a pilot seen lately (its no_pilot check)."""
    ce = local_worker_node(url)
    site = Site.objects.get(name=LOCAL_SITE)
    disk = Storage.objects.create(name="LOCAL_DISK", site=site, space_free=1000, space_total=1000)
    return PandaQueue.objects.create(
        name=REAL_QUEUE,
        site=site,
        computing_element=ce,
        queue_type=PandaQueue.Type.UNIFIED,
        output_storage=disk,
        last_pilot=clock.now(),
    )


def payload_task(**fields) -> dict:
    return {
        "kind": "analysis",
        "name": "user.alice.echo",
        "owner_group": "lhcb_user",
        "n_jobs": 3,
        "job_cpu_time": 60,
        "executable": "/bin/sh",
        "arguments": ["-c", "echo part %RNDM:1 > out_%RNDM:1.txt"],
        "environment": {"SEED": "%RNDM:100"},
        "output_sandbox": ["out_%RNDM:1.txt"],
        **fields,
    }


@pytest.fixture
def alice(api, users):
    return api(users["alice"])


@pytest.fixture
def real_queue(panda):
    return real_pilots_queue()


def _jobs(task_id: int) -> list[Job]:
    ids = TaskJob.objects.filter(task_id=task_id).values("job_id")
    return list(Job.objects.filter(pk__in=ids).order_by("pk"))


def test_a_tasks_jobs_carry_its_payload_numbered_and_go_to_the_real_pilots(alice, real_queue):
    answer = alice.post("/api/v1/tasks/", payload_task(), format="json")
    assert answer.status_code == 201, answer.content
    task = Task.objects.get(pk=answer.json()["id"])
    assert (task.executable, task.site) == ("/bin/sh", REAL_QUEUE)
    jobs = _jobs(task.pk)
    assert [j.arguments[1] for j in jobs] == [f"echo part {n} > out_{n}.txt" for n in (1, 2, 3)]
    assert [j.environment for j in jobs] == [{"SEED": str(n)} for n in (100, 101, 102)]
    assert [j.output_sandbox for j in jobs] == [[f"out_{n}.txt"] for n in (1, 2, 3)]
    assert all("payload" in j.tags and j.submit_pools == ["Local"] for j in jobs)

    analysis_brokerage(rng=random.Random(1), task_ids=[task.pk])
    placed = _jobs(task.pk)
    assert {(j.status, tuple(j.sites)) for j in placed} == {("activated", (LOCAL_SITE,))}


def test_a_tasks_input_files_are_given_to_each_of_its_jobs(alice, real_queue):
    import json

    task = payload_task(arguments=["run.sh", "%RNDM:0"], n_jobs=2)
    del task["job_cpu_time"]
    body = {
        "task": json.dumps(task),
        "input_sandbox": [SimpleUploadedFile("run.sh", b"echo hi\n")],
    }
    answer = alice.post("/api/v1/tasks/", body, format="multipart")
    assert answer.status_code == 201, answer.content
    assert answer.json()["input_sandbox"] == [{"name": "run.sh", "size": 8}]
    # No CPU time given: one the local pilots' first CPU segment covers.
    assert answer.json()["job_cpu_time"] == 300
    jobs = _jobs(answer.json()["id"])
    files = SandboxFile.objects.filter(job__in=jobs, kind="input")
    assert sorted((f.job_id, f.name, f.size) for f in files) == [(j.pk, "run.sh", 8) for j in jobs]
    assert [j.arguments for j in jobs] == [["run.sh", "0"], ["run.sh", "1"]]

    # Killed and retried: each new attempt is given the input files again.
    task_id = answer.json()["id"]
    assert alice.post(f"/api/v1/tasks/{task_id}/kill/").status_code == 200
    assert alice.post(f"/api/v1/tasks/{task_id}/retry/").status_code == 200
    retries = TaskJob.objects.filter(task_id=task_id, reassigned=False).values("job_id")
    copies = SandboxFile.objects.filter(job__in=retries, kind="input")
    assert (
        sorted((f.name, f.size, f.file.read()) for f in copies) == [("run.sh", 8, b"echo hi\n")] * 2
    )


@pytest.mark.parametrize(
    "fields, field, says",
    [
        ({"arguments": ["%RNDM"]}, "arguments", "%RNDM:N"),
        ({"arguments": ["%RNDM:x"]}, "arguments", "%RNDM:N"),
        ({"environment": {"SEED": "%RNDM"}}, "environment", "the value of SEED"),
        ({"environment": {"1BAD": "x"}}, "environment", "not a variable name"),
        ({"output_sandbox": ["../out.txt"]}, "output_sandbox", "'..'"),
        ({"arguments": "echo"}, "arguments", "list of strings"),
        ({"executable": "", "arguments": ["x"]}, "arguments", "goes with an executable"),
        ({"executable": "a\nb"}, "executable", "line break"),
    ],
)
def test_a_bad_payload_is_refused_naming_its_field(alice, real_queue, fields, field, says):
    answer = alice.post("/api/v1/tasks/", payload_task(**fields), format="json")
    assert answer.status_code == 400, answer.content
    assert list(answer.json()) == [field]
    assert says in answer.json()[field][0]
    assert not Task.objects.exists()


def test_a_task_with_a_payload_and_no_real_pilots_queue_is_refused_naming_the_executable(
    alice, panda
):
    answer = alice.post("/api/v1/tasks/", payload_task(), format="json")
    assert answer.status_code == 400
    assert "no PanDA queue is served by real pilots" in answer.json()["executable"][0]
    assert not Task.objects.exists() and not Job.objects.exists()


def test_input_files_without_an_executable_are_refused(alice, real_queue):
    import json

    task = payload_task(executable="", arguments=[], environment={}, output_sandbox=[])
    body = {"task": json.dumps(task), "input_sandbox": [SimpleUploadedFile("a.txt", b"x")]}
    answer = alice.post("/api/v1/tasks/", body, format="multipart")
    assert answer.status_code == 400
    assert "input_sandbox" in answer.json()
    body = {"task": "[1]", "input_sandbox": [SimpleUploadedFile("a.txt", b"x")]}
    assert "task" in alice.post("/api/v1/tasks/", body, format="multipart").json()
    assert not Task.objects.exists() and not SandboxFile.objects.exists()  # nothing half-written


def test_kill_cancels_a_tasks_jobs_and_ends_it_and_retry_runs_them_again(alice, real_queue):
    task_id = alice.post("/api/v1/tasks/", payload_task(n_jobs=2), format="json").json()["id"]
    assert alice.post(f"/api/v1/tasks/{task_id}/retry/").status_code == 409  # not ended

    killed = alice.post(f"/api/v1/tasks/{task_id}/kill/")
    assert killed.status_code == 200, killed.content
    assert killed.json()["status"] == "failed"
    assert killed.json()["status_reason"].startswith("killed by alice; every job ended: 2 ")
    assert {j.status for j in _jobs(task_id)} == {"cancelled"}
    again = alice.post(f"/api/v1/tasks/{task_id}/kill/")
    assert again.status_code == 409 and "has ended" in again.json()["detail"]

    retried = alice.post(f"/api/v1/tasks/{task_id}/retry/")
    assert retried.status_code == 200, retried.content
    assert retried.json()["status"] == "ready"
    current = TaskJob.objects.filter(task_id=task_id, reassigned=False).select_related("job")
    assert sorted((tj.attempt, tj.job.status) for tj in current) == [(2, "defined")] * 2
    assert sorted(tj.job.arguments[1] for tj in current) == [
        "echo part 1 > out_1.txt",
        "echo part 2 > out_2.txt",
    ]
    assert all("payload" in tj.job.tags for tj in current)


def test_only_those_who_may_act_on_a_task_kill_it(api, users, alice, real_queue):
    task_id = alice.post("/api/v1/tasks/", payload_task(n_jobs=1), format="json").json()["id"]
    assert api(users["bob"]).post(f"/api/v1/tasks/{task_id}/kill/").status_code == 404
    assert Task.objects.get(pk=task_id).status == "ready"


def test_the_task_page_shows_its_payload_and_its_outputs_links(client, users, alice, real_queue):
    task_id = alice.post("/api/v1/tasks/", payload_task(n_jobs=1), format="json").json()["id"]
    [job] = _jobs(task_id)
    SandboxFile.objects.create(
        job=job, kind="output", name="out_1.txt", size=7, sha256="0" * 64, file="x/y",
        complete=True, created=job.created,
    )  # fmt: skip
    client.force_login(users["alice"])
    page = client.get(f"/brokerage/tasks/{task_id}/").content.decode()
    assert 'id="task-payload"' in page and "<code>/bin/sh</code>" in page
    assert "<code>echo part %RNDM:1 &gt; out_%RNDM:1.txt</code>" in page
    assert f'href="/api/v1/jobs/{job.pk}/sandbox/out_1.txt" download>out_1.txt</a>' in page
    assert alice.get(f"/api/v1/tasks/{task_id}/outputs/").json() == [
        {
            "job": job.pk,
            "kind": "output",
            "name": "out_1.txt",
            "size": 7,
            "url": f"/api/v1/jobs/{job.pk}/sandbox/out_1.txt",
        }
    ]


def test_the_submit_page_takes_a_payload_with_its_input_files(client, users, real_queue):
    client.force_login(users["alice"])
    form = {
        "kind": "analysis",
        "name": "user.alice.form",
        "owner_group": "lhcb_user",
        "processing_type": "simul",
        "core_count": 1,
        "ram_count": 1000,
        "cpu_time": 10,
        "n_jobs": 2,
        "n_events_per_job": 10,
        "job_cpu_time": 60,
        "executable": "/bin/sh",
        "arguments": "run.sh\n%RNDM:5",
        "environment": "MODE=fast",
        "output_sandbox": "out_%RNDM:5.txt, log.txt",
        "input_sandbox": [SimpleUploadedFile("run.sh", b"echo hi\n")],
    }
    answer = client.post("/brokerage/tasks/submit/", form)
    assert answer.status_code == 302, answer.content.decode()[-2000:]
    task = Task.objects.get(name="user.alice.form")
    assert (task.arguments, task.environment) == (["run.sh", "%RNDM:5"], {"MODE": "fast"})
    assert [j.output_sandbox for j in _jobs(task.pk)] == [
        ["out_5.txt", "log.txt"],
        ["out_6.txt", "log.txt"],
    ]
    assert SandboxFile.objects.filter(job__in=_jobs(task.pk), name="run.sh").count() == 2

    refused = client.post("/brokerage/tasks/submit/", {**form, "arguments": "%RNDM", "name": "x"})
    assert refused.status_code == 200
    assert "%RNDM:N" in refused.content.decode()
    assert not Task.objects.filter(name="x").exists()


def test_rndm_reads_its_base_plus_the_jobs_number_and_a_malformed_one_is_named():
    from brokerage.services.submission import _names_within, numbered, sequence_problem

    assert [numbered("seed=%RNDM:100 part %RNDM:1", n) for n in (0, 2)] == [
        "seed=100 part 1",
        "seed=102 part 3",
    ]
    assert numbered("100%", 3) == "100%" and sequence_problem("100%") is None
    assert sequence_problem("%RNDM:5 %RNDM") and sequence_problem("%RNDM:")
    assert _names_within(["AAA", "BBB", "CCC"], 8) == "AAA,BBB"  # never a cut name
