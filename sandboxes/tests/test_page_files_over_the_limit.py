"""The Submit a job page with input files over the limit, however big the request: the page
comes back with what was typed and the refusal next to its file field (MaxInputSandboxBytes
named), never a bare 413, and nothing is stored."""

import re

import pytest

from core import gdpconfig
from matcher.models import Job
from sandboxes.tests.conftest import nothing_stored, upload

pytestmark = pytest.mark.django_db

FIELDS = {"owner_group": "lhcb_user", "cpu_time": 60, "user_priority": 1}


def error_after(page: str, field_id: str) -> str:
    """The first error shown after the field's input, before the next field or the form's end."""
    block = re.search(rf'id="{field_id}".*?(?=<div class="field|</form>)', page, re.S)
    assert block, page[-3000:]
    found = re.search(r'<div class="error">([^<]*)</div>', block[0])
    return found[1] if found else ""


@pytest.mark.parametrize("upload_limit", [None, 4096], ids=["under", "over UPLOAD_MAX_BYTES"])
def test_files_over_the_limit_come_back_next_to_the_file_field_with_what_was_typed(
    client, users, sandbox_root, settings, upload_limit
):
    gdpconfig.set_value("MaxInputSandboxBytes", 1024)
    if upload_limit:  # the body is over what is ever read: the files are read through, dropped
        settings.UPLOAD_MAX_BYTES = upload_limit
    client.force_login(users["alice"])
    r = client.post(
        "/jobs/submit/",
        {**FIELDS, "name": "my-typed-name", "executable": "/bin/true",
         "input_sandbox": [upload("big.bin", b"x" * 9000)]},
    )  # fmt: skip
    assert r.status_code == 200
    page = r.content.decode()
    assert error_after(page, "id_input_sandbox") == (
        "9000 bytes; at most 1024 (the MaxInputSandboxBytes parameter)"
    )
    assert 'value="my-typed-name"' in page and 'value="/bin/true"' in page
    assert not Job.objects.exists() and nothing_stored(sandbox_root)


def test_a_jdl_with_files_over_every_limit_comes_back_with_the_refusal_by_its_files(
    client, users, sandbox_root, settings
):
    gdpconfig.set_value("MaxInputSandboxBytes", 1024)
    settings.UPLOAD_MAX_BYTES = 4096
    client.force_login(users["alice"])
    jdl = 'Executable = "/bin/sh"; InputSandbox = {"big.bin"}; CPUTime = 60;'
    r = client.post(
        "/jobs/submit/", {"jdl": jdl, "jdl-input_sandbox": [upload("big.bin", b"x" * 9000)]}
    )

    assert r.status_code == 200
    page = r.content.decode()
    assert error_after(page, "id_jdl-input_sandbox") == (
        "9000 bytes; at most 1024 (the MaxInputSandboxBytes parameter)"
    )
    assert "InputSandbox = {&quot;big.bin&quot;}" in page  # the JDL as typed
    assert not Job.objects.exists() and nothing_stored(sandbox_root)
