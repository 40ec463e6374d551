"""The user guide's pilot example, run as written against the demo world: its pilot registers with
the example user's credential and takes a job meant for it (tester's test job), never a real
user's job, while thousands of other jobs wait and the demo's own pilots run."""

import json
import re
from pathlib import Path

from rest_framework.test import APIClient

from matcher import bulk
from matcher.models import Job, JobStatus
from pilots.models import Pilot
from simulation import demo
from simulation import demo as pilot_demo

USER_GUIDE = Path(__file__).resolve().parents[1] / "docs" / "user-guide.md"
CURL = re.compile(
    r"curl -s -X POST http://127\.0\.0\.1:8000(?P<path>\S+) \\\s*"
    r"-H \"Authorization: Token \$(?P<who>\w+)\".*?-d '(?P<body>.*?)'",
    re.DOTALL,
)
LOGIN = re.compile(r"(?P<var>\w+)=\$\(curl -s -X POST -d username=(?P<user>\w+) -d password=(\w+)")


def user_guide_section(title: str) -> str:
    text = USER_GUIDE.read_text()
    start = text.index(f"## {title}")
    return text[start : text.index("\n## ", start + 1)]


def test_the_user_guides_pilot_takes_the_job_meant_for_it_and_reports_on_it(transactional_db):
    demo.create_world()
    bulk.load_jobs(300, seed=5, batch_size=100, exclude_owners=[demo.EXAMPLE_USER])
    example = demo.example_job()
    pilot_demo.first_pilots()
    section = user_guide_section("Matching")

    tokens = {}
    for m in LOGIN.finditer(section):
        r = APIClient().post("/api/v1/auth/token/", {"username": m["user"], "password": m.group(3)})
        assert r.status_code == 200, r.content
        tokens[m["var"]] = r.data["token"]
    assert list(tokens) == ["TESTER"]

    calls = [(m["path"], m["who"], json.loads(m["body"])) for m in CURL.finditer(section)]
    assert [path for path, *_ in calls] == [
        "/api/v1/jobs/",
        "/api/v1/pilots/",
        "/api/v1/match/",
        "/api/v1/jobs/$JOB/status/",
    ]
    answers = []
    for path, who, body in calls:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {tokens[who]}")
        if "$JOB" in path:
            path = path.replace("$JOB", str(answers[2].data["id"]))
        answers.append(client.post(path, body, format="json"))
    submitted, registered, matched, reported = answers

    assert submitted.status_code == 201
    assert any("only a pilot started by hand" in w for w in submitted.data["warnings"])
    assert registered.status_code == 201 and registered.data["reference"] == "readme/ce503/1"
    assert matched.status_code == 200, matched.content
    assert matched.data["owner"] == demo.EXAMPLE_USER
    assert matched.data["id"] in {example, submitted.data["id"]}
    assert reported.status_code == 200 and reported.data["status"] == JobStatus.RUNNING
    assert matched.data["pilot_reference"] == "readme/ce503/1"
    job = Job.objects.get(pk=matched.data["id"])
    assert job.pilot_reference == "readme/ce503/1"
    assert job.pilot_id == registered.data["id"]  # the claim is bound to the registered pilot
    assert Pilot.objects.get(reference="readme/ce503/1").credential_user.username == "tester"
    # Nobody else's job went to the user guide's pilot.
    assert not Job.objects.filter(pilot_reference="readme/ce503/1").exclude(pk=job.pk).exists()


def test_the_directors_pilots_leave_the_example_job_to_the_hand_started_pilot(transactional_db):
    demo.create_world()
    bulk.load_jobs(120, seed=5, batch_size=100, exclude_owners=[demo.EXAMPLE_USER])
    example = demo.example_job()
    for _ in range(2):  # director cycles, and the simulated CEs' pilots asking for jobs
        pilot_demo.first_pilots()
    ran = Job.objects.filter(status__in=(JobStatus.RUNNING, JobStatus.FINISHED, JobStatus.FAILED))
    assert ran.count() > 60  # the director's pilots took the other users' jobs
    assert Job.objects.get(pk=example).status == JobStatus.ACTIVATED
    assert not Pilot.objects.filter(owner_dn__endswith=f"CN={demo.EXAMPLE_USER}").exists()
