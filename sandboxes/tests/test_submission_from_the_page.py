"""The Submit a job page takes what the API takes: an environment, input sandbox files with
the form's fields, and a pasted JDL with the files its InputSandbox names; a refused file or
line is shown next to its field and nothing is stored."""

import pytest

from core import gdpconfig
from matcher.models import Job
from sandboxes.models import SandboxFile
from sandboxes.tests.conftest import nothing_stored, stored_files, upload

pytestmark = pytest.mark.django_db

FIELDS = {"owner_group": "lhcb_user", "cpu_time": 60, "user_priority": 1}


def test_the_form_submits_a_payload_with_its_environment_and_input_files(
    client, users, sandbox_root
):
    client.force_login(users["alice"])
    r = client.post(
        "/jobs/submit/",
        {
            **FIELDS,
            "executable": "/bin/sh",
            "arguments": "run.sh 'two words'",
            "environment": "MODE=fast\nEMPTY=\n\nPATHS=a=b\n",
            "input_sandbox": [upload("run.sh", b"echo hi\n"), upload("data.txt", b"42\n")],
        },
    )
    assert r.status_code == 302, r.content.decode()[-2000:]
    job = Job.objects.get()
    assert job.arguments == ["run.sh", "two words"]
    assert job.environment == {"MODE": "fast", "EMPTY": "", "PATHS": "a=b"}
    names = sorted(SandboxFile.objects.filter(job=job).values_list("name", flat=True))
    assert names == ["data.txt", "run.sh"] and len(stored_files(sandbox_root)) == 2
    page = client.get(r.url).content.decode()
    assert "<code>run.sh</code>" in page and "<code>data.txt</code>" in page


def test_the_jdl_form_takes_the_files_its_input_sandbox_names(client, users, sandbox_root):
    client.force_login(users["alice"])
    jdl = 'Executable = "/bin/sh"; Arguments = "run.sh"; InputSandbox = {"run.sh"}; CPUTime = 60;'
    r = client.post("/jobs/submit/", {"jdl": jdl, "jdl-input_sandbox": [upload("run.sh")]})
    assert r.status_code == 302, r.content.decode()[-2000:]
    job = Job.objects.get()
    assert (job.executable, job.jdl) == ("/bin/sh", jdl)
    assert SandboxFile.objects.get(job=job).name == "run.sh"


def test_a_jdl_naming_a_file_not_uploaded_is_refused(client, users, sandbox_root):
    client.force_login(users["alice"])
    jdl = 'Executable = "/bin/sh"; InputSandbox = {"run.sh", "data.txt"}; CPUTime = 60;'
    r = client.post("/jobs/submit/", {"jdl": jdl, "jdl-input_sandbox": [upload("run.sh")]})
    assert r.status_code == 200
    assert "InputSandbox: names files not uploaded: data.txt" in r.content.decode()
    assert nothing_stored(sandbox_root)


def test_input_files_over_the_limit_are_refused_next_to_the_field(client, users, sandbox_root):
    gdpconfig.set_value("MaxInputSandboxBytes", 1024)
    client.force_login(users["alice"])
    r = client.post(
        "/jobs/submit/",
        {**FIELDS, "executable": "/bin/true", "input_sandbox": [upload("big.bin", b"x" * 2048)]},
    )
    assert r.status_code == 200
    assert "2048 bytes; at most 1024 (the MaxInputSandboxBytes parameter)" in r.content.decode()
    assert nothing_stored(sandbox_root)


@pytest.mark.parametrize(
    ("environment", "shown"),
    [("no equals sign", "Line 1 is not NAME=value."), ("1BAD=x", "is not a variable name")],
)
def test_a_bad_environment_line_is_named_and_nothing_is_stored(
    client, users, sandbox_root, environment, shown
):
    client.force_login(users["alice"])
    r = client.post(
        "/jobs/submit/", {**FIELDS, "executable": "/bin/true", "environment": environment}
    )
    assert r.status_code == 200 and shown in r.content.decode()
    assert nothing_stored(sandbox_root)
