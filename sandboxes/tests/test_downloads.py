"""The user's side: a job's outputs listed and downloaded, and its log, by those who may see
the job (owner, their JobSharing group, staff; others 404), as attachments never served as
HTML."""

import json

import pytest

from sandboxes.tests.conftest import JOB, upload

pytestmark = pytest.mark.django_db


def _ended_job(api, users, pilot, owner="alice", group=None, exit_code=0) -> int:
    job = {"executable": "/bin/sh", **JOB, **({"owner_group": group} if group else {})}
    r = api(users[owner]).post("/api/v1/jobs/", {"job": json.dumps(job)}, format="multipart")
    assert r.status_code == 201, r.content
    job_id = r.json()["id"]
    assert pilot.take()["id"] == job_id
    pilot.report(job_id, "running")
    r = pilot.upload(
        job_id,
        stdout=upload("std.out", b"one\ntwo\nthree\n"),
        stderr=upload("std.err", b"oops\n"),
        output=[upload("page.html", b"<script>alert(1)</script>"), upload("t.bin", b"\0\1")],
    )
    assert r.status_code == 200, r.content
    pilot.report(job_id, "finished", exit_code=exit_code)
    return job_id


def _text(response) -> bytes:
    assert response.status_code == 200, response
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    return b"".join(response.streaming_content)


def test_the_owner_lists_and_downloads_the_outputs_as_attachments(api, users, pilot):
    job_id = _ended_job(api, users, pilot)
    client = api(users["alice"])
    listed = client.get(f"/api/v1/jobs/{job_id}/sandbox/").json()
    assert [(f["name"], f["kind"]) for f in listed] == [
        ("std.out", "stdout"),
        ("std.err", "stderr"),
        ("page.html", "output"),
        ("t.bin", "output"),
    ]
    for entry in listed:
        got = client.get(entry["url"])
        assert got.status_code == 200, entry
        assert got["Content-Disposition"].startswith("attachment")
        assert got["X-Content-Type-Options"] == "nosniff"
        assert "html" not in got["Content-Type"]
    page = client.get(f"/api/v1/jobs/{job_id}/sandbox/page.html")
    assert page["Content-Type"] == "application/octet-stream"
    assert b"".join(page.streaming_content) == b"<script>alert(1)</script>"
    out = client.get(f"/api/v1/jobs/{job_id}/sandbox/std.out")
    assert out["Content-Type"].startswith("text/plain")


def test_the_log_is_the_stored_stream_whole_or_its_tail(api, users, pilot):
    job_id = _ended_job(api, users, pilot)
    client = api(users["alice"])
    assert _text(client.get(f"/api/v1/jobs/{job_id}/log/")) == b"one\ntwo\nthree\n"
    assert _text(client.get(f"/api/v1/jobs/{job_id}/log/?tail=2")) == b"two\nthree\n"
    assert _text(client.get(f"/api/v1/jobs/{job_id}/log/?tail=9")) == b"one\ntwo\nthree\n"
    assert _text(client.get(f"/api/v1/jobs/{job_id}/log/?tail=0")) == b""
    assert _text(client.get(f"/api/v1/jobs/{job_id}/log/?stream=stderr")) == b"oops\n"
    bad = client.get(f"/api/v1/jobs/{job_id}/log/?stream=both")
    assert bad.status_code == 400 and "stream" in bad.json()
    assert client.get(f"/api/v1/jobs/{job_id}/log/?tail=-1").json().keys() == {"tail"}


@pytest.mark.parametrize(
    "path", ["sandbox/", "sandbox/std.out", "sandbox/t.bin", "log/", "log/?stream=stderr"]
)
def test_another_user_gets_404_for_every_file_of_the_job(api, users, pilot, path):
    job_id = _ended_job(api, users, pilot)
    assert api(users["bob"]).get(f"/api/v1/jobs/{job_id}/{path}").status_code == 404
    assert api(users["admin"]).get(f"/api/v1/jobs/{job_id}/{path}").status_code == 200
    assert api().get(f"/api/v1/jobs/{job_id}/{path}").status_code == 401


def test_the_owners_jobsharing_group_sees_the_files(api, users, pilot):
    job_id = _ended_job(api, users, pilot, owner="carol", group="lhcb_mc")
    assert api(users["erin"]).get(f"/api/v1/jobs/{job_id}/sandbox/std.out").status_code == 200


def test_an_unknown_file_is_404(api, users, pilot):
    job_id = _ended_job(api, users, pilot)
    got = api(users["alice"]).get(f"/api/v1/jobs/{job_id}/sandbox/nothing.txt")
    assert got.status_code == 404


class _CountingReads:
    """The storage's files, counting the bytes read from them."""

    def __init__(self, storage, monkeypatch):
        self.read, opened = 0, storage.open

        counter = self

        class Counted:
            def __init__(self, raw):
                self.raw = raw

            def __getattr__(self, name):
                return getattr(self.raw, name)

            def read(self, *args):
                data = self.raw.read(*args)
                counter.read += len(data)
                return data

        def open_counted(name, mode="rb"):
            handle = opened(name, mode)
            handle.file = Counted(handle.file)
            return handle

        monkeypatch.setattr(storage, "open", open_counted)


def test_a_tail_of_a_large_stdout_reads_only_its_end_and_the_whole_log_streams(
    api, users, pilot, monkeypatch
):
    from sandboxes import services

    line = b"%07d the payload says something fairly long on each of its lines\n"
    big = b"".join(line % n for n in range(300_000))  # 21 MB
    assert len(big) > 20_000_000
    job = {"executable": "/bin/sh", **JOB}
    r = api(users["alice"]).post("/api/v1/jobs/", {"job": json.dumps(job)}, format="multipart")
    job_id = r.json()["id"]
    assert pilot.take()["id"] == job_id
    pilot.report(job_id, "running")
    assert pilot.upload(job_id, stdout=upload("std.out", big)).status_code == 200
    pilot.report(job_id, "finished", exit_code=0)
    client = api(users["alice"])

    reads = _CountingReads(services.storage(), monkeypatch)
    tail = _text(client.get(f"/api/v1/jobs/{job_id}/log/", {"tail": 3}))
    assert tail == b"".join(line % n for n in (299_997, 299_998, 299_999))
    assert reads.read <= 2 * services.CHUNK  # the end of the file, not 21 MB

    reads.read = 0
    whole = client.get(f"/api/v1/jobs/{job_id}/log/")
    assert whole.streaming and reads.read == 0  # nothing read before it is sent
    chunks = list(whole.streaming_content)
    assert b"".join(chunks) == big
    assert max(len(c) for c in chunks) <= services.CHUNK
